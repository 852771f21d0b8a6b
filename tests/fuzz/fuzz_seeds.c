/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_seeds.c - make the seed corpus of the fuzz targets from real small
 * filesystems: format each geometry of fuzz.h, fill it through the
 * namespace as the daemon would (directories, files with data and holes,
 * hard and symbolic links, a FIFO, xattrs small and split, an orphan), and
 * cut the targets' inputs out of the result.
 *
 *   fuzz_seeds CORPUS_DIR    (make-seeds.sh runs it)
 *
 * Writes CORPUS_DIR/TARGET/seed-*; other files there (regression inputs)
 * are left alone.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cow/cow_priv.h"
#include "dev/dev.h"
#include "format/ondisk.h"
#include "fuzz.h"
#include "namespace/ns.h"

static const char *const geom_name[FUZZ_GEOM_NR] = { "file", "zcnv", "zlog" };
static const char *corpus;

static void die(const char *what, int rc)
{
	fprintf(stderr, "fuzz_seeds: %s: %s\n", what, strerror(-rc));
	exit(1);
}

#define CHECK(expr)                          \
	do {                                 \
		int rc_ = (int)(expr);       \
		if (rc_ < 0)                 \
			die(#expr, rc_);     \
	} while (0)

static FILE *seed_open(const char *target, const char *name)
{
	char path[1024];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", corpus, target);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/seed-%s", corpus, target, name);
	f = fopen(path, "wb");
	if (!f)
		die(path, -errno);
	return f;
}

static void seed_close(FILE *f)
{
	if (fclose(f))
		die("writing a seed", -errno);
}

/* ========================================================================
 * Filling a filesystem
 * ======================================================================== */

static const struct smr_ns_cred root = { .uid = 0 };

static uint64_t mk_file(struct smr_ns *ns, uint64_t dir, const char *name,
			uint64_t off, size_t len)
{
	struct smr_ns_attr a;
	uint8_t *buf = malloc(len ? len : 1);

	if (!buf)
		die("malloc", -ENOMEM);
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(i * 7 + 1);
	CHECK(smr_ns_create(ns, &root, dir, name, S_IFREG | 0644, &a));
	if (len)
		CHECK(smr_ns_write(ns, &root, a.ino, off, buf, len));
	smr_ns_release(ns, a.ino);
	free(buf);
	return a.ino;
}

static void fill(struct smr_ns *ns, bool many)
{
	struct smr_ns_attr d, sub, o;
	char big[5000], target[3000], name[64];
	uint64_t f;

	memset(big, 'x', sizeof(big));
	memset(target, 't', sizeof(target) - 1);
	target[sizeof(target) - 1] = 0;
	CHECK(smr_ns_mkdir(ns, &root, SMR_NS_ROOT, "d", 0755, &d));
	CHECK(smr_ns_mkdir(ns, &root, d.ino, "sub", 0700, &sub));
	f = mk_file(ns, d.ino, "f", 0, 5000);
	CHECK(smr_ns_setxattr(ns, &root, f, "user.a", "x", 1, 0));
	CHECK(smr_ns_setxattr(ns, &root, f, "user.big", big, sizeof(big), 0));
	CHECK(smr_ns_link(ns, f, sub.ino, "f2", NULL));
	mk_file(ns, SMR_NS_ROOT, "small", 0, 100);
	mk_file(ns, SMR_NS_ROOT, "sparse", 1 << 20, 10);
	CHECK(smr_ns_symlink(ns, &root, SMR_NS_ROOT, "l", "d/f", NULL));
	CHECK(smr_ns_symlink(ns, &root, SMR_NS_ROOT, "ll", target, NULL));
	CHECK(smr_ns_mknod(ns, &root, SMR_NS_ROOT, "p", S_IFIFO | 0600, 0,
			   NULL));
	/* An orphan: unlinked while open, never released. */
	CHECK(smr_ns_create(ns, &root, SMR_NS_ROOT, "o", S_IFREG | 0600, &o));
	CHECK(smr_ns_write(ns, &root, o.ino, 0, big, 10));
	CHECK(smr_ns_unlink(ns, &root, SMR_NS_ROOT, "o"));
	for (int i = 0; many && i < 150; i++) {
		snprintf(name, sizeof(name), "n%03d", i);
		mk_file(ns, sub.ino, name, 0, 0);
	}
}

static const uint8_t seed_uuid[16] = "smrfs fuzz seed";

/* Format geometry @g (allocator @alloc, NULL = the default) and open the
 * engine with @log (fsync log records) and the namespace on it. */
static void open_fresh(enum fuzz_geom g, const char *alloc, bool log,
		       struct smr_dev **dev, struct smr_cow **cow,
		       struct smr_ns **ns)
{
	struct smr_format_opts fo = { .label = "seed", .uuid = seed_uuid,
				      .alloc = alloc };
	struct smr_cow_opts co = { .gc_off = true, .commit_secs = 3600,
				   .fsync_log = log };
	struct fuzz_img empty;

	fuzz_img_init(&empty, fuzz_dev_size(g));
	CHECK(fuzz_dev_write(g, &empty, NULL));
	fuzz_img_free(&empty);
	CHECK(smr_dev_open(fuzz_dev_path(g), NULL, dev));
	CHECK(smr_cow_format(*dev, &fo, NULL));
	CHECK(smr_cow_open(*dev, &co, cow));
	CHECK(smr_ns_mkfs(*cow, &root));
	CHECK(smr_ns_open(*cow, NULL, ns));
}

static void make_fs(enum fuzz_geom g, bool many, const char *alloc)
{
	struct smr_dev *dev;
	struct smr_cow *cow;
	struct smr_ns *ns;

	open_fresh(g, alloc, false, &dev, &cow, &ns);
	fill(ns, many);
	CHECK(smr_ns_sync(ns));
	smr_ns_close(ns);
	CHECK(smr_cow_close(cow));
	CHECK(smr_dev_close(dev));
}

/* ========================================================================
 * Cutting the inputs out
 * ======================================================================== */

/* The device's bytes as a sparse image, and its write pointers. */
static void read_fs(enum fuzz_geom g, struct fuzz_img *img, uint16_t *wp)
{
	struct smr_dev_opts o = { .read_only = true };
	const size_t chunk = 1 << 20;
	struct smr_dev *dev;
	uint8_t *buf = smr_dev_buf_alloc(chunk);

	if (!buf)
		die("buffer", -ENOMEM);
	fuzz_img_init(img, fuzz_dev_size(g));
	CHECK(smr_dev_open(fuzz_dev_path(g), &o, &dev));
	for (uint64_t off = 0; off < img->size; off += chunk) {
		CHECK(smr_dev_read(dev, buf, chunk, off));
		for (size_t p = 0; p < chunk; p += FUZZ_PAGE) {
			bool zero = true;

			for (size_t i = 0; i < FUZZ_PAGE && zero; i++)
				zero = !buf[p + i];
			if (!zero)
				CHECK(fuzz_img_put(img, off + p, buf + p,
						   FUZZ_PAGE));
		}
	}
	for (uint32_t z = 0; z < FUZZ_NR_ZONES; z++) {
		uint64_t w = g == FUZZ_GEOM_FILE ? 0 :
			     smr_dev_zone_wp(dev, z) - smr_dev_zone_start(dev, z);

		wp[z] = (uint16_t)(SMR_MIN(w, FUZZ_ZONE_SIZE) / FUZZ_PAGE);
	}
	smr_dev_close(dev);
	smr_dev_buf_free(buf);
}

/* Records of every page of @img in [off, off + len), at offsets less
 * @base. */
static void pack_range(FILE *f, const struct fuzz_img *img, uint64_t off,
		       uint64_t len, uint64_t base)
{
	uint8_t page[FUZZ_PAGE];

	for (size_t i = 0; i < img->nr; i++) {
		uint64_t at = img->idx[i] * FUZZ_PAGE;

		if (at < off || at >= off + len)
			continue;
		fuzz_img_get(img, at, page, sizeof(page));
		CHECK(fuzz_sparse_pack(f, page, sizeof(page), at - base));
	}
}

static void put_u64(FILE *f, uint64_t v)
{
	__le64 x = htole64(v);

	fwrite(&x, sizeof(x), 1, f);
}

static void seed_image(const char *name, enum fuzz_geom g, uint8_t flags,
		       const struct fuzz_img *img, const uint16_t *wp)
{
	FILE *f = seed_open("fuzz_image", name);

	fputc(flags, f);
	fputc(g, f);
	for (int z = 0; z < FUZZ_NR_ZONES; z++) {
		__le16 w = htole16(wp[z]);

		fwrite(&w, sizeof(w), 1, f);
	}
	pack_range(f, img, 0, img->size, 0);
	seed_close(f);
}

/* The blocks: the first superblock, the newest checkpoint and its
 * allocator state (@rot: of the rotational module, and nothing else), up
 * to @nodes B-tree nodes. */
static void seed_blocks(enum fuzz_geom g, const struct fuzz_img *img,
			unsigned int nodes, bool rot)
{
	const struct smr_dckpt *newest = NULL;
	bool sb = false;
	char name[64];
	FILE *f;

	for (size_t i = 0; i < img->nr; i++) {
		const struct smr_blk_hdr *h = (const void *)img->page[i];
		uint64_t at = img->idx[i] * FUZZ_PAGE;

		switch (le32toh(h->magic)) {
		case SMR_MAGIC_SB:
			if (sb || rot)
				break;
			sb = true;
			snprintf(name, sizeof(name), "sb-%s", geom_name[g]);
			f = seed_open("fuzz_super", name);
			fputc(0, f);
			pack_range(f, img, at, SMR_SB_SIZE, at);
			seed_close(f);
			break;
		case SMR_MAGIC_CKPT:
			if (!newest || le64toh(h->gen) > le64toh(newest->hdr.gen))
				newest = (const void *)h;
			break;
		case SMR_MAGIC_NODE:
			if (!nodes || rot)
				break;
			nodes--;
			snprintf(name, sizeof(name), "node-%s-%u", geom_name[g],
				 nodes);
			f = seed_open("fuzz_node", name);
			fputc(0, f);
			pack_range(f, img, at, le32toh(h->len), at);
			seed_close(f);
			break;
		}
	}
	if (!newest)
		die("no checkpoint in the image", -EINVAL);
	snprintf(name, sizeof(name), "ckpt-%s%s", geom_name[g],
		 rot ? "-rot" : "");
	f = seed_open("fuzz_super", name);
	fputc(FUZZ_SUPER_CKPT, f);
	for (size_t i = 0; i < img->nr; i++)
		if (img->page[i] == (const uint8_t *)newest)
			pack_range(f, img, img->idx[i] * FUZZ_PAGE,
				   SMR_CKPT_SIZE, img->idx[i] * FUZZ_PAGE);
	seed_close(f);

	{
		uint64_t off = le64toh(newest->alloc_off);
		uint8_t b0[SMR_ALLOC_STATE_BLKSZ];
		const struct smr_alloc_state_head *h =
			(const void *)(b0 + SMR_ALLOC_STATE_HEAD_OFF);

		snprintf(name, sizeof(name), "state-%s%s", geom_name[g],
			 rot ? "-rot" : "");
		f = seed_open("fuzz_alloc", name);
		fputc((uint8_t)(g << 1 | (g || rot ? 0 : FUZZ_ALLOC_FLASH)), f);
		put_u64(f, off);
		put_u64(f, le64toh(newest->alloc_len));
		put_u64(f, le64toh(newest->alloc_gen));
		put_u64(f, le64toh(newest->alloc_csum));
		fuzz_img_get(img, off, b0, sizeof(b0));
		for (uint32_t e = 0; e < le32toh(h->nr_ext) &&
				     e < SMR_ALLOC_STATE_MAX_EXT; e++)
			pack_range(f, img, le64toh(h->ext[e].off),
				   le64toh(h->ext[e].len), 0);
		seed_close(f);
	}
}

struct item_out {
	FILE *f;
};

static int seed_item(void *arg, const struct smr_key *k, const void *val,
		     size_t len)
{
	struct item_out *o = arg;
	__le16 l = htole16((uint16_t)len);

	fputc(k->type, o->f);
	put_u64(o->f, k->objid);
	put_u64(o->f, k->offset);
	fwrite(&l, sizeof(l), 1, o->f);
	fwrite(val, len, 1, o->f);
	return 0;
}

static void seed_items(enum fuzz_geom g, const char *name)
{
	struct smr_dev_opts dopts = { .read_only = true };
	struct smr_cow_opts co = { .read_only = true };
	struct smr_key from = { 0, 0, 0 };
	struct smr_key to = { UINT64_MAX, UINT8_MAX, UINT64_MAX };
	struct item_out o;
	struct smr_dev *dev;
	struct smr_cow *cow;

	CHECK(smr_dev_open(fuzz_dev_path(g), &dopts, &dev));
	CHECK(smr_cow_open(dev, &co, &cow));
	o.f = seed_open("fuzz_ns", name);
	fputc(0, o.f);
	CHECK(smr_bt_iterate(cow, SMR_TREE_FS, &from, &to, seed_item, &o));
	seed_close(o.f);
	smr_cow_close(cow);
	smr_dev_close(dev);
}

/* The fsync log's pieces in the ring of the file geometry, each as a
 * piece and as a payload seed of fuzz_log. */
static void seed_log_pieces(struct smr_dev *dev, const uint8_t *uuid)
{
	uint8_t *blk = smr_dev_buf_alloc(SMR_CKPT_SIZE);
	unsigned int nr = 0;

	if (!blk)
		die("malloc", -ENOMEM);
	/* The ring's slots after the superblocks (docs/FORMAT.md). */
	for (uint64_t off = 64 * 1024; off < 4 * 1024 * 1024;
	     off += SMR_CKPT_SIZE) {
		struct smr_log_piece pc;
		char name[64];
		__le32 l;
		FILE *f;

		CHECK(smr_dev_read(dev, blk, SMR_CKPT_SIZE, off));
		if (smr_log_piece_decode(blk, off, uuid, &pc))
			continue;
		snprintf(name, sizeof(name), "piece-%u", nr);
		f = seed_open("fuzz_log", name);
		fputc(FUZZ_F_RESEAL, f);
		CHECK(fuzz_sparse_pack(f, blk, SMR_CKPT_SIZE, 0));
		seed_close(f);
		snprintf(name, sizeof(name), "payload-%u", nr++);
		f = seed_open("fuzz_log", name);
		fputc(FUZZ_LOG_PAYLOAD, f);
		l = htole32(pc.len);
		fwrite(&l, sizeof(l), 1, f);
		CHECK(fuzz_sparse_pack(f, blk + sizeof(struct smr_dlog),
				       pc.len, 0));
		seed_close(f);
	}
	if (!nr)
		die("no fsync log record written", -ENOENT);
	smr_dev_buf_free(blk);
}

/* A filesystem of geometry @g left with two fsync log records after its
 * checkpoint (a file made and written, then removed), as a power cut
 * leaves it: a fuzz_image seed whose read-write open gathers the pieces
 * and replays them; on the file geometry, fuzz_log's seeds too. */
static void seed_log(enum fuzz_geom g)
{
	uint16_t wp[FUZZ_NR_ZONES];
	struct fuzz_img img;
	struct smr_ns_attr a;
	struct smr_dev *dev;
	struct smr_cow *cow;
	struct smr_ns *ns;
	char name[64];

	open_fresh(g, NULL, true, &dev, &cow, &ns);
	CHECK(smr_ns_sync(ns));
	mk_file(ns, SMR_NS_ROOT, "logged", 4096, 9000);
	CHECK(smr_ns_lookup(ns, SMR_NS_ROOT, "logged", &a));
	CHECK(smr_ns_fsync(ns, a.ino, false));
	CHECK(smr_ns_unlink(ns, &root, SMR_NS_ROOT, "logged"));
	CHECK(smr_ns_fsync(ns, SMR_NS_ROOT, false));
	if (g == FUZZ_GEOM_FILE)
		seed_log_pieces(dev, seed_uuid);
	smr_ns_close(ns);
	smr_cow_close_discard(cow); /* the records stay after the checkpoint */
	CHECK(smr_dev_close(dev));
	read_fs(g, &img, wp);
	snprintf(name, sizeof(name), "log-%s", geom_name[g]);
	seed_image(name, g, FUZZ_F_RESEAL | FUZZ_IMAGE_CHANGE, &img, wp);
	fuzz_img_free(&img);
}

int main(int argc, char **argv)
{
	struct fuzz_img img;
	static const uint8_t mode[FUZZ_GEOM_NR] = {
		0, FUZZ_F_RESEAL | FUZZ_IMAGE_CHANGE, FUZZ_F_RESEAL | FUZZ_IMAGE_REPAIR,
	};
	uint16_t wp[FUZZ_NR_ZONES];
	char name[64];

	if (argc != 2) {
		fprintf(stderr, "usage: fuzz_seeds CORPUS_DIR\n");
		return 2;
	}
	corpus = argv[1];
	fuzz_setup();
	for (int g = 0; g < FUZZ_GEOM_NR; g++) {
		make_fs((enum fuzz_geom)g, false, NULL);
		read_fs((enum fuzz_geom)g, &img, wp);
		/* One mode each: a check of the bytes as they are, a
		 * read-write mount, a repair. */
		snprintf(name, sizeof(name), "%s", geom_name[g]);
		seed_image(name, (enum fuzz_geom)g, mode[g], &img, wp);
		seed_blocks((enum fuzz_geom)g, &img, 2, false);
		fuzz_img_free(&img);
		if (g == FUZZ_GEOM_FILE)
			seed_items((enum fuzz_geom)g, "small");
	}
	/* The file geometry's other allocator module. */
	make_fs(FUZZ_GEOM_FILE, false, "rotational");
	read_fs(FUZZ_GEOM_FILE, &img, wp);
	seed_blocks(FUZZ_GEOM_FILE, &img, 0, true);
	fuzz_img_free(&img);
	/* Enough names for a tree of two levels. */
	make_fs(FUZZ_GEOM_ZCNV, true, NULL);
	read_fs(FUZZ_GEOM_ZCNV, &img, wp);
	seed_image("zcnv-many", FUZZ_GEOM_ZCNV, FUZZ_F_RESEAL | FUZZ_IMAGE_REPAIR, &img, wp);
	fuzz_img_free(&img);
	seed_items(FUZZ_GEOM_ZCNV, "many");
	seed_log(FUZZ_GEOM_FILE);
	seed_log(FUZZ_GEOM_ZLOG);
	return 0;
}
