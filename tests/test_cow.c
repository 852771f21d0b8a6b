/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_cow.c - the COW engine on real devices: format and open on a plain
 * file, a zoned loop directory with conventional zones and one without;
 * checkpoint rings and logs that wrap; corruption of nodes, checkpoints and
 * superblocks; misdirected and stale node writes; feature and geometry checks; group commit and the timer;
 * power loss at every write through the fault device.
 */
#include "testutil.h"

#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cow/cow_priv.h"
#include "cowtest.h"
#include "dev/fault.h"

#define ZONE (1 * SMR_MIB)
#define NR_ZONES 96
#define FILE_SIZE (96 * SMR_MIB)

/* K_ZLOOP_CAP: no conventional zones, zone capacity below zone size (as on
 * ZNS), 512-byte blocks. */
/* K_ZLOOP_LIMIT: no conventional zones and at most 4 active zones, so that
 * a commit whose nodes cross into a new zone must finish the old one first. */
enum kind { K_FILE, K_ZLOOP_CNV, K_ZLOOP_SEQ, K_ZLOOP_CAP, K_ZLOOP_LIMIT, K_NR };
static const char *const kind_name[K_NR] = { "file", "zloop+cnv", "zloop",
					     "zloop-cap", "zloop-limit" };

/* A fresh device of @kind under a new scratch directory; returns its path
 * (static storage, one per kind). */
static const char *make_dev(enum kind k, const char *tag)
{
	static char paths[K_NR][512];
	const char *dir = smr_test_tmpdir(tag);

	if (k == K_FILE) {
		int fd;

		snprintf(paths[k], sizeof(paths[k]), "%s/img", dir);
		fd = open(paths[k], O_RDWR | O_CREAT | O_TRUNC, 0644);
		CU_ASSERT_FATAL(fd >= 0);
		CU_ASSERT_FATAL(ftruncate(fd, (off_t)FILE_SIZE) == 0);
		close(fd);
	} else {
		struct smr_zloop_params p = {
			.capacity = NR_ZONES * ZONE, .zone_size = ZONE,
			.nr_cnv = k == K_ZLOOP_CNV ? 4 : 0,
			.zone_cap = k == K_ZLOOP_CAP ? 768 * SMR_KIB : 0,
			.block_size = k == K_ZLOOP_CAP ? 512 : 0,
			.max_active = k == K_ZLOOP_LIMIT ? 4 : 0,
			.max_open = k == K_ZLOOP_LIMIT ? 4 : 0,
		};

		snprintf(paths[k], sizeof(paths[k]), "%s/zl", dir);
		SMR_ASSERT_OK(smr_zloop_create(paths[k], &p));
	}
	return paths[k];
}

static int open_fs(const char *path, const struct smr_cow_opts *o,
		   struct smr_dev **devp, struct smr_cow **cp)
{
	int rc = smr_dev_open(path, NULL, devp);

	if (rc)
		return rc;
	rc = smr_test_cow_open(*devp, o, cp);
	if (rc) {
		smr_dev_close(*devp);
		*devp = NULL;
	}
	return rc;
}

static void close_fs(struct smr_dev *dev, struct smr_cow *c)
{
	SMR_ASSERT_OK(smr_cow_close(c));
	SMR_ASSERT_OK(smr_dev_close(dev));
}

static int format_path(const char *path, struct smr_cow_info *info)
{
	static const uint8_t uuid[16] = { 0xc0, 0x11, 1, 2, 3, 4, 5, 6, 7, 8 };
	struct smr_format_opts fo = { .label = "test", .uuid = uuid };
	struct smr_dev *dev;
	int rc = smr_dev_open(path, NULL, &dev);

	if (rc)
		return rc;
	rc = smr_cow_format(dev, &fo, info);
	smr_dev_close(dev);
	return rc;
}

/* The value of key i in version v. */
static uint32_t val_len(uint64_t i, uint64_t v)
{
	return (uint32_t)((i * 7 + v * 13) % 300);
}

static void make_val(uint8_t *b, uint64_t i, uint64_t v)
{
	uint32_t n = val_len(i, v);

	for (uint32_t j = 0; j < n; j++)
		b[j] = (uint8_t)(i * 31 + v * 17 + j);
}

static void key_of(uint64_t i, struct smr_key *k)
{
	k->objid = 100 + i / 3;
	k->type = (uint8_t)(i % 3);
	k->offset = i * 11;
}

/* Model: version per key, 0 = absent. */
struct model {
	uint64_t n;
	uint64_t *ver;
};

static void model_apply(struct smr_cow *c, struct model *m, uint64_t i,
			uint64_t v)
{
	uint8_t buf[512];
	struct smr_key k;
	struct smr_txn *t;

	key_of(i, &k);
	SMR_ASSERT_OK(smr_txn_begin(c, &t));
	if (v) {
		make_val(buf, i, v);
		SMR_ASSERT_OK(smr_bt_put(t, SMR_TREE_FS, &k, buf, val_len(i, v)));
	} else if (m->ver[i]) {
		SMR_ASSERT_OK(smr_bt_delete(t, SMR_TREE_FS, &k));
	}
	smr_txn_end(t);
	m->ver[i] = v;
}

struct walk {
	const struct model *m;
	uint64_t next, bad, seen;
};

static int walk_fn(void *arg, const struct smr_key *key, const void *val,
		   size_t len)
{
	struct walk *w = arg;
	uint8_t want[512];
	struct smr_key k;

	while (w->next < w->m->n && !w->m->ver[w->next])
		w->next++;
	if (w->next >= w->m->n) {
		w->bad++;
		return 1;
	}
	key_of(w->next, &k);
	make_val(want, w->next, w->m->ver[w->next]);
	if (smr_key_cmp(&k, key) || len != val_len(w->next, w->m->ver[w->next]) ||
	    memcmp(want, val, len))
		w->bad++;
	w->next++;
	w->seen++;
	return 0;
}

/* The tree holds exactly the model. Returns true if so. */
static bool model_equal(struct smr_cow *c, const struct model *m)
{
	struct walk w = { .m = m };
	struct smr_key lo = { 0 }, hi = { UINT64_MAX, 0xff, UINT64_MAX };
	uint64_t want = 0, items = 0;
	int rc;

	for (uint64_t i = 0; i < m->n; i++)
		want += m->ver[i] != 0;
	rc = smr_bt_iterate(c, SMR_TREE_FS, &lo, &hi, walk_fn, &w);
	if (rc || w.bad || w.seen != want)
		return false;
	pthread_rwlock_rdlock(&c->lock);
	rc = smr_bt_check(c, SMR_TREE_FS, &items);
	if (!rc)
		rc = smr_cow_audit_locked(c);
	pthread_rwlock_unlock(&c->lock);
	return !rc && items == want;
}

/* ------------------------------------------------------------------------
 * Format, open, many commits, reopen
 * ------------------------------------------------------------------------ */

/* One block of data in each temperature, left allocated (settled as if
 * something referenced it). */
static void write_data_blocks(struct smr_cow *c, uint32_t bs)
{
	void *buf = smr_cow_buf_alloc(bs);
	struct smr_data_extent ext[2];
	struct smr_txn *t;

	CU_ASSERT_FATAL(buf != NULL);
	memset(buf, 0x5a, bs);
	CU_ASSERT_EQUAL(smr_cow_data_write(c, SMR_DATA_HOT, 0, buf, bs, &ext[0], 1), 1);
	CU_ASSERT_EQUAL(smr_cow_data_write(c, SMR_DATA_COLD, 0, buf, bs, &ext[1], 1), 1);
	smr_cow_buf_free(buf);
	SMR_ASSERT_OK(smr_txn_begin(c, &t));
	for (int i = 0; i < 2; i++)
		SMR_ASSERT_OK(smr_cow_data_settle(t, ext[i].off, ext[i].len));
	smr_txn_end(t);
}

static void roundtrip(enum kind k)
{
	const char *path = make_dev(k, kind_name[k]);
	struct smr_cow_opts o = { .commit_secs = 3600 };
	struct smr_cow_info info, info2;
	struct smr_cow_space sp;
	struct model m = { .n = 4000 };
	struct smr_dev *dev;
	struct smr_cow *c;
	uint64_t rs = 42 + k;

	m.ver = calloc(m.n, sizeof(*m.ver));
	SMR_ASSERT_OK(format_path(path, &info));
	CU_ASSERT_STRING_EQUAL(info.label, "test");
	CU_ASSERT_EQUAL(info.gen, 1);
	CU_ASSERT_EQUAL(info.node_size, SMR_NODE_MIN_SIZE);
	CU_ASSERT_STRING_EQUAL(info.alloc, k == K_FILE ? "flash" : "zoned");
	SMR_ASSERT_OK(open_fs(path, &o, &dev, &c));
	if (!c)
		return;
	smr_cow_info(c, &info2);
	CU_ASSERT_EQUAL(info2.gen, 1);
	CU_ASSERT_EQUAL(memcmp(info.uuid, info2.uuid, 16), 0);
	CU_ASSERT_TRUE(model_equal(c, &m));
	/* 200 commits: wraps the slot ring and moves the zone log over. */
	for (int round = 0; round < 200; round++) {
		/* Keep the data streams' zones active too, so that a commit
		 * crossing zones meets the active-zone limit. */
		if (k == K_ZLOOP_LIMIT && round % 4 == 0)
			write_data_blocks(c, info.block_size);
		for (int j = 0; j < 40; j++) {
			uint64_t i = smr_test_rand(&rs) % m.n;
			uint64_t v = smr_test_rand(&rs) % 4 ? round * 100 + j + 1 : 0;

			model_apply(c, &m, i, v);
		}
		SMR_ASSERT_OK(smr_cow_commit(c));
		if (round % 50 == 49) {
			close_fs(dev, c);
			SMR_ASSERT_OK(open_fs(path, &o, &dev, &c));
			if (!c)
				return;
			CU_ASSERT_TRUE(model_equal(c, &m));
		}
	}
	smr_cow_info(c, &info2);
	CU_ASSERT(info2.gen > 200);
	smr_cow_space(c, &sp);
	CU_ASSERT(sp.capacity > 0 && sp.used > 0);
	CU_ASSERT(sp.used + sp.free + sp.reclaimable + sp.reserved == sp.capacity);
	CU_ASSERT_TRUE(model_equal(c, &m));
	SMR_ASSERT_OK(smr_cow_check(c));
	close_fs(dev, c);
	/* Read-only open sees the same and writes nothing. */
	o.read_only = true;
	SMR_ASSERT_OK(open_fs(path, &o, &dev, &c));
	if (c) {
		struct smr_txn *t;

		CU_ASSERT_TRUE(model_equal(c, &m));
		SMR_ASSERT_RC(smr_txn_begin(c, &t), -EROFS);
		close_fs(dev, c);
	}
	free(m.ver);
}

/*
 * A read-only open writes nothing, even when a zone holds data the last
 * checkpoint does not know about (written behind the filesystem's back or
 * after the checkpoint): the allocator must not finish that zone until the
 * filesystem is writable. A writable open then does.
 */
static void test_read_only_writes_nothing(void)
{
	const char *path = make_dev(K_ZLOOP_SEQ, "ro-zone");
	struct smr_cow_opts o = { .commit_secs = 3600, .read_only = true };
	uint32_t zno = NR_ZONES - 2;
	struct smr_cow_info info;
	struct smr_dev *dev;
	struct smr_cow *c;
	uint64_t start, wp;
	void *buf;

	SMR_ASSERT_OK(format_path(path, &info));
	SMR_ASSERT_OK(smr_dev_open(path, NULL, &dev));
	start = smr_dev_zone_start(dev, zno);
	buf = smr_dev_buf_alloc(3 * 4096);
	CU_ASSERT_FATAL(buf != NULL);
	SMR_ASSERT_OK(smr_dev_write(dev, buf, 3 * 4096, start));
	smr_dev_buf_free(buf);
	SMR_ASSERT_OK(smr_dev_close(dev));

	SMR_ASSERT_OK(open_fs(path, &o, &dev, &c));
	if (!c)
		return;
	wp = smr_dev_zone_wp(dev, zno);
	CU_ASSERT_EQUAL(wp, start + 3 * 4096);
	close_fs(dev, c);
	SMR_ASSERT_OK(smr_dev_open(path, NULL, &dev));
	CU_ASSERT_EQUAL(smr_dev_zone_wp(dev, zno), start + 3 * 4096);
	SMR_ASSERT_OK(smr_dev_close(dev));

	/* Writable: the first commit finishes the zone of dead data. */
	o.read_only = false;
	SMR_ASSERT_OK(open_fs(path, &o, &dev, &c));
	if (!c)
		return;
	{
		struct smr_key k = { .objid = 7, .type = 1 };
		struct smr_txn *t;

		SMR_ASSERT_OK(smr_txn_begin(c, &t));
		SMR_ASSERT_OK(smr_bt_put(t, SMR_TREE_FS, &k, "x", 1));
		smr_txn_end(t);
	}
	SMR_ASSERT_OK(smr_cow_commit(c));
	CU_ASSERT_NOT_EQUAL(smr_dev_zone_wp(dev, zno), start + 3 * 4096);
	close_fs(dev, c);
}

/*
 * A remount to read-only (smr_cow_set_read_only): what changed is committed
 * first, then nothing is written (transactions get -EROFS, commits and
 * fsyncs return 0 and take no generation, no write pointer moves).
 * Writable again, changes commit as before; an engine opened read-only
 * cannot be made writable.
 */
static void test_remount_read_only(void)
{
	const char *path = make_dev(K_ZLOOP_SEQ, "remount");
	struct smr_cow_opts o = { .commit_secs = 3600 };
	struct smr_key k = { .objid = 7, .type = 1 };
	struct smr_cow_info before, ro, after;
	uint64_t wp[NR_ZONES];
	struct smr_dev *dev;
	struct smr_cow *c;
	struct smr_txn *t;
	char v;

	SMR_ASSERT_OK(format_path(path, &before));
	SMR_ASSERT_OK(open_fs(path, &o, &dev, &c));
	if (!c)
		return;
	SMR_ASSERT_OK(smr_txn_begin(c, &t));
	SMR_ASSERT_OK(smr_bt_put(t, SMR_TREE_FS, &k, "x", 1));
	smr_txn_end(t);
	smr_cow_info(c, &before);
	SMR_ASSERT_OK(smr_cow_set_read_only(c, true));
	CU_ASSERT_TRUE(smr_cow_is_read_only(c));
	smr_cow_info(c, &ro);
	CU_ASSERT(ro.gen > before.gen);
	for (uint32_t z = 0; z < NR_ZONES; z++)
		wp[z] = smr_dev_zone_wp(dev, z);
	SMR_ASSERT_RC(smr_txn_begin(c, &t), -EROFS);
	SMR_ASSERT_OK(smr_cow_commit(c));
	SMR_ASSERT_OK(smr_cow_fsync(c));
	SMR_ASSERT_OK(smr_cow_set_read_only(c, true));
	smr_cow_info(c, &after);
	CU_ASSERT_EQUAL(after.gen, ro.gen);
	for (uint32_t z = 0; z < NR_ZONES; z++)
		CU_ASSERT_EQUAL(smr_dev_zone_wp(dev, z), wp[z]);

	SMR_ASSERT_OK(smr_cow_set_read_only(c, false));
	SMR_ASSERT_OK(smr_cow_set_read_only(c, false));
	CU_ASSERT_FALSE(smr_cow_is_read_only(c));
	k.offset = 1;
	SMR_ASSERT_OK(smr_txn_begin(c, &t));
	SMR_ASSERT_OK(smr_bt_put(t, SMR_TREE_FS, &k, "y", 1));
	smr_txn_end(t);
	SMR_ASSERT_OK(smr_cow_commit(c));
	smr_cow_info(c, &after);
	CU_ASSERT(after.gen > ro.gen);
	close_fs(dev, c);

	o.read_only = true;
	SMR_ASSERT_OK(open_fs(path, &o, &dev, &c));
	if (!c)
		return;
	for (k.offset = 0; k.offset < 2; k.offset++) {
		size_t len = 1;

		SMR_ASSERT_OK(smr_bt_lookup(c, SMR_TREE_FS, &k, &v, &len));
		CU_ASSERT_EQUAL(v, k.offset ? 'y' : 'x');
	}
	SMR_ASSERT_RC(smr_cow_set_read_only(c, false), -EROFS);
	SMR_ASSERT_OK(smr_cow_set_read_only(c, true));
	close_fs(dev, c);
}

/* smr_cow_fs_changes() counts by object: a change of an item of one object
 * moves that object's count and not another's (in another slot); a change
 * that fails counts too. */
static void test_fs_changes_by_object(void)
{
	const char *path = make_dev(K_FILE, "fs-changes");
	struct smr_cow_opts o = { .commit_secs = 3600 };
	const struct smr_key a = { .objid = 7, .type = 1 };
	const struct smr_key b = { .objid = 8, .type = 1 };
	struct smr_cow_info info;
	struct smr_dev *dev;
	struct smr_cow *c;
	struct smr_txn *t;
	uint64_t ca, cb;

	SMR_ASSERT_OK(format_path(path, &info));
	SMR_ASSERT_OK(open_fs(path, &o, &dev, &c));
	if (!c)
		return;
	ca = smr_cow_fs_changes(c, a.objid);
	cb = smr_cow_fs_changes(c, b.objid);
	SMR_ASSERT_OK(smr_txn_begin(c, &t));
	SMR_ASSERT_OK(smr_bt_put(t, SMR_TREE_FS, &a, "x", 1));
	smr_txn_end(t);
	CU_ASSERT(smr_cow_fs_changes(c, a.objid) > ca);
	CU_ASSERT_EQUAL(smr_cow_fs_changes(c, b.objid), cb);
	ca = smr_cow_fs_changes(c, a.objid);
	SMR_ASSERT_OK(smr_txn_begin(c, &t));
	SMR_ASSERT_RC(smr_bt_delete(t, SMR_TREE_FS, &b), -ENOENT);
	smr_txn_end(t);
	CU_ASSERT(smr_cow_fs_changes(c, b.objid) > cb);
	CU_ASSERT_EQUAL(smr_cow_fs_changes(c, a.objid), ca);
	close_fs(dev, c);
}

static void test_roundtrip_file(void) { roundtrip(K_FILE); }
static void test_roundtrip_zloop_cnv(void) { roundtrip(K_ZLOOP_CNV); }
static void test_roundtrip_zloop(void) { roundtrip(K_ZLOOP_SEQ); }
static void test_roundtrip_zloop_cap(void) { roundtrip(K_ZLOOP_CAP); }
static void test_roundtrip_zloop_limit(void) { roundtrip(K_ZLOOP_LIMIT); }

/* ------------------------------------------------------------------------
 * Corruption
 * ------------------------------------------------------------------------ */

/* The file and file offset that hold device byte @off. */
static void backing(enum kind k, const char *path, uint64_t off, char *file,
		    size_t len, uint64_t *foff)
{
	if (k == K_FILE) {
		snprintf(file, len, "%s", path);
		*foff = off;
		return;
	}
	uint32_t z = (uint32_t)(off / ZONE);

	snprintf(file, len, "%s/%s-%06u", path,
		 k == K_ZLOOP_CNV && z < 4 ? "cnv" : "seq", z);
	*foff = off % ZONE;
}

/* Flip the bits of @mask in the byte at device offset @off. */
static void flip_bits(enum kind k, const char *path, uint64_t off,
		      uint8_t mask)
{
	char file[600];
	uint64_t foff;
	uint8_t b;
	int fd;

	backing(k, path, off, file, sizeof(file), &foff);
	fd = open(file, O_RDWR);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_FATAL(pread(fd, &b, 1, (off_t)foff) == 1);
	b ^= mask;
	CU_ASSERT_FATAL(pwrite(fd, &b, 1, (off_t)foff) == 1);
	close(fd);
}

static void flip_byte(enum kind k, const char *path, uint64_t off)
{
	flip_bits(k, path, off, 0x20);
}

/*
 * Opened read-only, the filesystem at @path is at generation @gen and holds
 * @m; returns the generation open skipped (info.skipped_gen), or
 * UINT64_MAX if it did not open.
 */
static uint64_t opens_at(const char *path, uint64_t gen, const struct model *m)
{
	struct smr_cow_info info = { .skipped_gen = UINT64_MAX };
	struct smr_dev *dev;
	struct smr_cow *c = NULL;

	SMR_ASSERT_OK(open_fs(path, &(struct smr_cow_opts){ .read_only = true },
			      &dev, &c));
	if (c) {
		smr_cow_info(c, &info);
		CU_ASSERT_EQUAL(info.gen, gen);
		CU_ASSERT_TRUE(model_equal(c, m));
		close_fs(dev, c);
	}
	return info.skipped_gen;
}

/*
 * One bit flipped at device offset @at, in the newest checkpoint record or
 * a root node only it references (of generation @gen, holding @m): open
 * puts it back from the checksum and takes that checkpoint, not its
 * predecessor. A second bit, flipped here, is beyond that: the caller's
 * open falls back.
 */
static void bit_restored(enum kind k, const char *path, uint64_t at,
			 uint64_t gen, const struct model *m)
{
	flip_bits(k, path, at, 0x20);
	CU_ASSERT_EQUAL(opens_at(path, gen, m), 0);
	flip_bits(k, path, at + 1, 0x01);
}

/* Offset of the newest checkpoint record on the device at @path whose
 * header says a generation below @below, and that generation in *@gen. */
static uint64_t ckpt_below(enum kind k, const char *path, uint64_t below,
			   uint64_t *gen)
{
	struct smr_dev *dev;
	uint8_t *buf = smr_dev_buf_alloc(4096);
	uint64_t best = 0, cand[256];
	uint32_t n = 0;

	*gen = 0;
	SMR_ASSERT_OK(smr_dev_open(path, NULL, &dev));
	if (k == K_ZLOOP_SEQ || k == K_ZLOOP_CAP) {
		uint64_t cap = k == K_ZLOOP_CAP ? 768 * SMR_KIB : ZONE;

		for (uint64_t z = 0; z < 2; z++)
			for (uint64_t a = z * ZONE + 4096; a + SMR_CKPT_SIZE <= z * ZONE + cap;
			     a += SMR_CKPT_SIZE)
				cand[n++] = a;
	} else {
		uint32_t slots = (uint32_t)(((k == K_FILE ? 4 * SMR_MIB : ZONE) - 65536) /
					  SMR_CKPT_SIZE);

		for (uint32_t i = 0; i < slots; i++)
			cand[n++] = 65536 + (uint64_t)i * SMR_CKPT_SIZE;
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct smr_blk_hdr *h = (const void *)buf;

		SMR_ASSERT_OK(smr_dev_read(dev, buf, 4096, cand[i]));
		if (le32toh(h->magic) == SMR_MAGIC_CKPT &&
		    le64toh(h->gen) > *gen && le64toh(h->gen) < below) {
			*gen = le64toh(h->gen);
			best = cand[i];
		}
	}
	smr_dev_buf_free(buf);
	smr_dev_close(dev);
	return best;
}

static uint64_t newest_ckpt(enum kind k, const char *path, uint64_t *gen)
{
	return ckpt_below(k, path, UINT64_MAX, gen);
}

static int copy_tree(const char *from, const char *to);

/*
 * Commit state A, then state B; rebuild the device as the power cut just
 * before B's final flush leaves it (B's checkpoint written, not yet
 * acknowledged) and damage B's checkpoint: open must come back with A, from
 * the previous checkpoint, and go on from there.
 */
static void corrupt_ckpt(enum kind k)
{
	const char *path = make_dev(k, "ckpt");
	char tmpl[600];
	struct smr_cow_opts o = { .commit_secs = 3600 };
	struct model a = { .n = 2000 }, b = { .n = 2000 };
	struct smr_dev *lower, *dev;
	struct smr_fault_rec r;
	struct smr_fault *f;
	struct smr_cow *c;
	uint64_t nrec, gen;

	snprintf(tmpl, sizeof(tmpl), "%s.tmpl", path);
	a.ver = calloc(a.n, sizeof(*a.ver));
	b.ver = calloc(b.n, sizeof(*b.ver));
	SMR_ASSERT_OK(format_path(path, NULL));
	SMR_ASSERT_OK(copy_tree(path, tmpl));
	SMR_ASSERT_OK(smr_dev_open(path, NULL, &lower));
	SMR_ASSERT_OK(smr_fault_open(lower, &f, &dev));
	SMR_ASSERT_OK(smr_test_cow_open(dev, &o, &c));
	for (uint64_t i = 0; i < a.n; i++) {
		model_apply(c, &a, i, i + 1);
		b.ver[i] = i + 1;
	}
	SMR_ASSERT_OK(smr_cow_commit(c));
	for (uint64_t i = 0; i < b.n; i += 3)
		model_apply(c, &b, i, i % 2 ? 0 : i + 7);
	SMR_ASSERT_OK(smr_cow_commit(c));
	nrec = smr_fault_nr_records(f);
	smr_fault_set_recording(f, false);
	smr_cow_close(c);
	smr_dev_close(dev);
	smr_dev_close(lower);

	/* B's checkpoint is the last checkpoint-sized write below the data
	 * area (the allocator may discard space after it). */
	while (nrec > 0) {
		SMR_ASSERT_OK(smr_fault_record(f, --nrec, &r));
		if (r.op == SMR_FOP_WRITE && r.len == SMR_CKPT_SIZE &&
		    r.off < 4 * SMR_MIB)
			break;
	}
	CU_ASSERT_FATAL(r.op == SMR_FOP_WRITE && r.len == SMR_CKPT_SIZE);
	SMR_ASSERT_OK(copy_tree(tmpl, path));
	SMR_ASSERT_OK(smr_dev_open(path, NULL, &dev));
	SMR_ASSERT_OK(smr_fault_replay(f, nrec + 1, NULL, dev));
	smr_dev_close(dev);
	smr_fault_free(f);

	/* Untouched, B is there. */
	SMR_ASSERT_OK(open_fs(path, &(struct smr_cow_opts){ .read_only = true },
			      &dev, &c));
	if (c) {
		CU_ASSERT_TRUE(model_equal(c, &b));
		close_fs(dev, c);
	}
	CU_ASSERT_EQUAL(newest_ckpt(k, path, &gen), r.off);
	bit_restored(k, path, r.off + 300, gen, &b);
	SMR_ASSERT_OK(open_fs(path, &o, &dev, &c));
	if (c) {
		struct smr_cow_info info;

		smr_cow_info(c, &info);
		CU_ASSERT_EQUAL(info.gen, gen - 1);
		CU_ASSERT_TRUE(model_equal(c, &a));
		/* And it goes on from there. */
		model_apply(c, &a, 5, 99);
		SMR_ASSERT_OK(smr_cow_commit(c));
		close_fs(dev, c);
	}
	SMR_ASSERT_OK(open_fs(path, &o, &dev, &c));
	if (c) {
		CU_ASSERT_TRUE(model_equal(c, &a));
		close_fs(dev, c);
	}
	free(a.ver);
	free(b.ver);
}

/* One bit flipped in each of the two newest checkpoint records, where
 * random damage left images with nothing readable (open took an older
 * record whose space was reused): both are put back, the newest taken. */
static void two_records(enum kind k)
{
	const char *path = make_dev(k, "tworec");
	struct smr_cow_opts o = { .commit_secs = 3600 };
	struct model m = { .n = 2000 };
	struct smr_dev *dev;
	struct smr_cow *c = NULL;
	uint64_t g1, g2, at1, at2;

	m.ver = calloc(m.n, sizeof(*m.ver));
	CU_ASSERT_FATAL(m.ver != NULL);
	SMR_ASSERT_OK(format_path(path, NULL));
	SMR_ASSERT_OK(open_fs(path, &o, &dev, &c));
	for (uint64_t g = 1; g <= 4 && c; g++) {
		for (uint64_t i = 0; i < m.n; i += 3)
			model_apply(c, &m, i, g * 10000 + i);
		SMR_ASSERT_OK(smr_cow_commit(c));
	}
	if (c)
		close_fs(dev, c);
	at1 = ckpt_below(k, path, UINT64_MAX, &g1);
	at2 = ckpt_below(k, path, g1, &g2);
	CU_ASSERT_FATAL(at1 && at2 && g2 < g1);
	flip_bits(k, path, at1 + 300, 0x20);
	flip_bits(k, path, at2 + 9000, 0x02);
	(void)opens_at(path, g1, &m);
	free(m.ver);
}

static void test_two_records_file(void) { two_records(K_FILE); }
static void test_two_records_zloop(void) { two_records(K_ZLOOP_SEQ); }

static void test_corrupt_ckpt_file(void) { corrupt_ckpt(K_FILE); }
static void test_corrupt_ckpt_zloop(void) { corrupt_ckpt(K_ZLOOP_SEQ); }
static void test_corrupt_ckpt_zloop_cnv(void) { corrupt_ckpt(K_ZLOOP_CNV); }

/*
 * The newest checkpoint damaged after it became durable, and after the
 * allocator acted on it (zones with no live byte reset, released space
 * discarded or handed out again): open must fall back to the previous
 * checkpoint with its trees and its allocator state intact, equal exactly
 * to that state, and go on from there. @what: 0 damages the checkpoint
 * record, 1 the root node of the newest tree (a node only it references).
 */
static void fallback_durable(enum kind k, int what)
{
	const char *path = make_dev(k, what ? "fbroot" : "fbckpt");
	struct smr_cow_opts o = { .commit_secs = 3600, .gc_off = true };
	struct smr_fault_rule cut = { .what = SMR_FAULT_DROP_WRITES };
	struct model cur = { .n = 3000 }, prev = { .n = 3000 };
	struct smr_dev *lower, *dev;
	struct smr_cow_space_check sc;
	struct smr_cow_info info;
	struct smr_fault *f;
	struct smr_cow *c;
	uint64_t gen = 0, rs = 11 + (uint64_t)k, root = 0;
	uint64_t dlen = 64 * SMR_KIB;
	void *buf = smr_cow_buf_alloc(dlen);

	cur.ver = calloc(cur.n, sizeof(uint64_t));
	prev.ver = calloc(prev.n, sizeof(uint64_t));
	CU_ASSERT_FATAL(buf && cur.ver && prev.ver);
	memset(buf, 0x6b, dlen);
	SMR_ASSERT_OK(format_path(path, NULL));
	SMR_ASSERT_OK(smr_dev_open(path, NULL, &lower));
	SMR_ASSERT_OK(smr_fault_open(lower, &f, &dev));
	SMR_ASSERT_OK(smr_test_cow_open(dev, &o, &c));
	/* Many generations of churn: metadata and data zones fill, die and
	 * are reset; on a file, released space is reused. */
	for (int g = 1; g <= 30 && c; g++) {
		struct smr_data_extent ext[4];
		struct smr_txn *t;
		int n;

		memcpy(prev.ver, cur.ver, cur.n * sizeof(uint64_t));
		for (int j = 0; j < 600; j++) {
			uint64_t i = smr_test_rand(&rs) % cur.n;

			model_apply(c, &cur, i, smr_test_rand(&rs) % 6 ?
						(uint64_t)g * 1000 + j + 1 : 0);
		}
		n = smr_cow_data_write(c, SMR_DATA_HOT, 0, buf, dlen, ext, 4);
		CU_ASSERT_FATAL(n >= 1);
		SMR_ASSERT_OK(smr_txn_begin(c, &t));
		for (int i = 0; i < n; i++)
			SMR_ASSERT_OK(smr_cow_data_free(t, ext[i].off, ext[i].len));
		smr_txn_end(t);
		SMR_ASSERT_OK(smr_cow_commit(c));
	}
	smr_cow_info(c, &info);
	gen = info.gen;
	root = c->trees[SMR_TREE_FS].addr;
	/* The power goes now: nothing after the last commit lands. */
	SMR_ASSERT_OK(smr_fault_arm(f, &cut));
	smr_cow_close(c);
	smr_dev_close(dev);
	smr_dev_close(lower);
	smr_fault_free(f);

	(void)opens_at(path, gen, &cur);
	if (what == 0) {
		uint64_t g2, at = newest_ckpt(k, path, &g2);

		CU_ASSERT_EQUAL(g2, gen);
		bit_restored(k, path, at + 300, gen, &cur);
	} else {
		bit_restored(k, path, root + 200, gen, &cur);
	}
	c = NULL;
	SMR_ASSERT_OK(open_fs(path, &o, &dev, &c));
	if (c) {
		smr_cow_info(c, &info);
		CU_ASSERT_EQUAL(info.gen, gen - 1);
		CU_ASSERT_TRUE(model_equal(c, &prev));
		SMR_ASSERT_OK(smr_cow_check_space(c, NULL, 0, false, &sc));
		CU_ASSERT_EQUAL(sc.problems, 0);
		/* And it goes on from there. */
		for (uint64_t i = 0; i < 200; i++)
			model_apply(c, &prev, i * 7, 999);
		SMR_ASSERT_OK(smr_cow_commit(c));
		close_fs(dev, c);
	}
	c = NULL;
	SMR_ASSERT_OK(open_fs(path, &o, &dev, &c));
	if (c) {
		smr_cow_info(c, &info);
		CU_ASSERT(info.gen > gen);
		CU_ASSERT_TRUE(model_equal(c, &prev));
		SMR_ASSERT_OK(smr_cow_check_space(c, NULL, 0, false, &sc));
		CU_ASSERT_EQUAL(sc.problems, 0);
		close_fs(dev, c);
	}
	smr_cow_buf_free(buf);
	free(cur.ver);
	free(prev.ver);
}

static void test_fallback_file(void) { fallback_durable(K_FILE, 0); }
static void test_fallback_zloop_cnv(void) { fallback_durable(K_ZLOOP_CNV, 0); }
static void test_fallback_zloop(void) { fallback_durable(K_ZLOOP_SEQ, 0); }
static void test_fallback_zloop_cap(void) { fallback_durable(K_ZLOOP_CAP, 0); }
static void test_fallback_root_file(void) { fallback_durable(K_FILE, 1); }
static void test_fallback_root_zloop_cnv(void) { fallback_durable(K_ZLOOP_CNV, 1); }
static void test_fallback_root_zloop(void) { fallback_durable(K_ZLOOP_SEQ, 1); }

/* A damaged node: reads through it fail with a checksum error and never
 * return data; the rest of the tree still reads. */
static int count_fn(void *arg, const struct smr_key *key, const void *val,
		    size_t len)
{
	(*(uint64_t *)arg)++;
	return 0;
}

static void corrupt_node(enum kind k)
{
	const char *path = make_dev(k, "node");
	struct smr_cow_opts o = { .commit_secs = 3600, .cache_bytes = 1 };
	struct model m = { .n = 20000 };
	struct smr_key lo = { 0 }, hi = { UINT64_MAX, 0xff, UINT64_MAX }, key, f;
	struct smr_dev *dev;
	struct smr_cow *c;
	uint8_t *buf = smr_dev_buf_alloc(SMR_NODE_MIN_SIZE);
	uint64_t root, leaf, cnt = 0, ok = 0, bad = 0;
	uint8_t val[512];
	size_t len;

	m.ver = calloc(m.n, sizeof(*m.ver));
	SMR_ASSERT_OK(format_path(path, NULL));
	SMR_ASSERT_OK(open_fs(path, &o, &dev, &c));
	if (!c)
		return;
	for (uint64_t i = 0; i < m.n; i++)
		model_apply(c, &m, i, 1);
	CU_ASSERT(smr_bt_height(c, SMR_TREE_FS) >= 2);
	close_fs(dev, c);
	SMR_ASSERT_OK(open_fs(path, &o, &dev, &c));
	if (!c)
		return;
	root = c->trees[SMR_TREE_FS].addr;
	SMR_ASSERT_OK(smr_dev_read(dev, buf, SMR_NODE_MIN_SIZE, root));
	CU_ASSERT_FATAL(smr_node_level(buf) >= 1);
	leaf = smr_int_addr(buf, 1);
	close_fs(dev, c);

	/* One bit of a leaf: put back from the checksum on every read. */
	flip_bits(k, path, leaf + 5000, 0x20);
	SMR_ASSERT_OK(open_fs(path, &o, &dev, &c));
	if (!c)
		return;
	CU_ASSERT_TRUE(model_equal(c, &m));
	SMR_ASSERT_OK(smr_bt_iterate(c, SMR_TREE_FS, &lo, &hi, count_fn, &cnt));
	CU_ASSERT_EQUAL(cnt, m.n);
	close_fs(dev, c);

	/* Two bits: its keys fail, the others read. */
	flip_bits(k, path, leaf + 5001, 0x01);
	cnt = 0;
	SMR_ASSERT_OK(open_fs(path, &o, &dev, &c));
	if (!c)
		return;
	for (uint64_t i = 0; i < m.n; i++) {
		int rc;

		key_of(i, &key);
		len = sizeof(val);
		rc = smr_bt_lookup(c, SMR_TREE_FS, &key, val, &len);
		if (rc == 0)
			ok++;
		else if (rc == -SMR_EFSBADCRC)
			bad++;
		else
			CU_FAIL("lookup: neither the value nor a checksum error");
	}
	CU_ASSERT(bad > 0 && ok > 0 && ok + bad == m.n);
	SMR_ASSERT_RC(smr_bt_iterate(c, SMR_TREE_FS, &lo, &hi, count_fn, &cnt),
		      -SMR_EFSBADCRC);
	CU_ASSERT(cnt < m.n);
	SMR_ASSERT_RC(smr_cow_check(c), -SMR_EFSBADCRC);
	close_fs(dev, c);

	/* The root: nothing reads, nothing crashes. */
	flip_bits(k, path, root + 100, 0x22);
	SMR_ASSERT_OK(open_fs(path, &o, &dev, &c));
	if (!c)
		return;
	key_of(0, &key);
	len = sizeof(val);
	SMR_ASSERT_RC(smr_bt_lookup(c, SMR_TREE_FS, &key, val, &len),
		      -SMR_EFSBADCRC);
	SMR_ASSERT_RC(smr_bt_next(c, SMR_TREE_FS, &key, &f, val, &len),
		      -SMR_EFSBADCRC);
	smr_cow_close(c); /* nothing to commit; may fail no more */
	smr_dev_close(dev);
	smr_dev_buf_free(buf);
	free(m.ver);
}

static void test_corrupt_node_file(void) { corrupt_node(K_FILE); }
static void test_corrupt_node_zloop(void) { corrupt_node(K_ZLOOP_SEQ); }

/* Read (@wr false) or write @len bytes at device offset @off of the device
 * at @path, behind the engine's back. */
static void raw_io(enum kind k, const char *path, void *buf, size_t len,
		   uint64_t off, bool wr)
{
	char file[600];
	uint64_t foff;
	int fd;

	backing(k, path, off, file, sizeof(file), &foff);
	fd = open(file, O_RDWR);
	CU_ASSERT_FATAL(fd >= 0);
	ssize_t done = wr ? pwrite(fd, buf, len, (off_t)foff) :
			    pread(fd, buf, len, (off_t)foff);

	close(fd);
	CU_ASSERT_FATAL(done == (ssize_t)len);
}

/* The error messages seen that name the block and the failure expected. */
static char blk_at[64];
static const char *blk_why;
static unsigned int blk_named;

static void blk_sink(enum smr_log_level level, const char *msg)
{
	(void)level;
	if (strstr(msg, blk_at) && strstr(msg, blk_why))
		blk_named++;
}

/* Open the engine at @path, look every key of @m up: each must give its
 * value in @m or fail with @err, never another value. Returns the number
 * of keys that failed; the checker must fail too when any did, and every
 * failure must be logged naming block @addr and @why. */
static uint64_t lookups_fail_with(const char *path, const struct model *m,
				  int err, uint64_t addr, const char *why)
{
	struct smr_cow_opts o = { .commit_secs = 3600, .cache_bytes = 1 };
	uint8_t val[512], want[512];
	struct smr_dev *dev;
	struct smr_cow *c;
	uint64_t bad = 0;

	snprintf(blk_at, sizeof(blk_at), "corruption at byte %" PRIu64 ": ",
		 addr);
	blk_why = why;
	blk_named = 0;
	SMR_ASSERT_OK(open_fs(path, &o, &dev, &c));
	if (!c)
		return 0;
	smr_log_set_level(SMR_LOG_ERR);
	smr_log_set_sink(blk_sink);
	for (uint64_t i = 0; i < m->n; i++) {
		struct smr_key key;
		size_t len = sizeof(val);
		int rc;

		key_of(i, &key);
		rc = smr_bt_lookup(c, SMR_TREE_FS, &key, val, &len);
		make_val(want, i, m->ver[i]);
		if (rc == err) {
			bad++;
		} else if (rc || len != val_len(i, m->ver[i]) ||
			   memcmp(val, want, len)) {
			fprintf(stderr, "key %" PRIu64 ": %s, not the value "
				"or %s\n", i, strerror(-rc), strerror(-err));
			CU_FAIL("lookup: neither the value nor the error");
		}
	}
	if (bad) {
		SMR_ASSERT_RC(smr_cow_check(c), err);
	}
	smr_log_set_sink(NULL);
	smr_log_set_level(SMR_LOG_ERR - 1);
	/* One message per failed lookup, one more from the checker. */
	CU_ASSERT(blk_named >= (bad ? bad + 1 : 0));
	smr_cow_close(c); /* nothing to commit */
	smr_dev_close(dev);
	return bad;
}

/*
 * Blocks whose bytes are intact but which are not what the reference
 * expects: a valid leaf written at the address of another (a misdirected
 * write), and an older generation of a leaf, sealed for the address its
 * parent now names (a stale block: a write lost, the old one left in
 * place). The checksum verifies in both; the address and the generation
 * in the parent's pointer must catch them: the keys under that leaf fail
 * with -EUCLEAN and a message naming the block and the check, the others
 * read, no key returns a wrong value.
 */
static void misplaced_node(enum kind k)
{
	const char *path = make_dev(k, "misplaced");
	struct smr_cow_opts o = { .commit_secs = 3600, .cache_bytes = 1 };
	struct model m = { .n = 3000 };
	struct smr_dev *dev;
	struct smr_cow *c;
	uint8_t *root = NULL, *old = NULL, *cur = NULL, *other = NULL;
	uint64_t b_old, b_new, a_new, old_gen, n;
	struct smr_blk_hdr *h;

	m.ver = calloc(m.n, sizeof(*m.ver));
	SMR_ASSERT_OK(format_path(path, NULL));
	SMR_ASSERT_OK(open_fs(path, &o, &dev, &c));
	if (!c)
		goto out;
	n = c->sb.node_size;
	root = smr_dev_buf_alloc(n);
	old = smr_dev_buf_alloc(n);
	cur = smr_dev_buf_alloc(n);
	other = smr_dev_buf_alloc(n);
	for (uint64_t i = 0; i < m.n; i++)
		model_apply(c, &m, i, 1);
	SMR_ASSERT_OK(smr_cow_commit(c));
	CU_ASSERT_FATAL(smr_bt_height(c, SMR_TREE_FS) >= 2);
	SMR_ASSERT_OK(smr_dev_read(dev, root, n, c->trees[SMR_TREE_FS].addr));
	b_old = smr_int_addr(root, 1);
	old_gen = smr_int_gen(root, 1);
	raw_io(k, path, old, n, b_old, false); /* committed: on the device */
	/* Every key rewritten: every leaf moves to a new place. */
	for (uint64_t i = 0; i < m.n; i++)
		model_apply(c, &m, i, 2);
	close_fs(dev, c);
	SMR_ASSERT_OK(open_fs(path, &o, &dev, &c));
	if (!c)
		goto out;
	SMR_ASSERT_OK(smr_dev_read(dev, root, n, c->trees[SMR_TREE_FS].addr));
	a_new = smr_int_addr(root, 0);
	b_new = smr_int_addr(root, 1);
	CU_ASSERT_FATAL(smr_int_gen(root, 1) > old_gen && b_new != b_old);
	close_fs(dev, c);
	raw_io(k, path, cur, n, b_new, false);
	raw_io(k, path, other, n, a_new, false);

	/* Stale: the old leaf, sealed as if written where the parent
	 * points now, with its old generation. */
	h = (struct smr_blk_hdr *)old;
	CU_ASSERT_EQUAL(le64toh(h->gen), old_gen);
	h->addr = htole64(b_new);
	h->csum = htole64(smr_blk_csum(old, n));
	raw_io(k, path, old, n, b_new, true);
	CU_ASSERT(lookups_fail_with(path, &m, -SMR_EFSCORRUPTED, b_new,
				    "stale: generation differs") > 0);

	/* Misdirected: the first leaf, intact, where the second should be. */
	raw_io(k, path, other, n, b_new, true);
	CU_ASSERT(lookups_fail_with(path, &m, -SMR_EFSCORRUPTED, b_new,
				    "misdirected: address in header") > 0);

	/* The right block back: every key reads. */
	raw_io(k, path, cur, n, b_new, true);
	CU_ASSERT_EQUAL(lookups_fail_with(path, &m, -SMR_EFSCORRUPTED, b_new,
					  "corruption"), 0);
out:
	smr_dev_buf_free(root);
	smr_dev_buf_free(old);
	smr_dev_buf_free(cur);
	smr_dev_buf_free(other);
	free(m.ver);
}

static void test_misplaced_node_file(void) { misplaced_node(K_FILE); }
static void test_misplaced_node_zloop(void) { misplaced_node(K_ZLOOP_SEQ); }

/* Superblock copies, features, geometry, not-smrfs. */

static void set_incompat(struct smr_sb *sb) { sb->features_incompat = 1ULL << 40; }
static void set_ro_compat(struct smr_sb *sb) { sb->features_incompat = SMR_FEAT_INCOMPAT_PREV_CKPT; sb->features_ro_compat = 1ULL << 3; }
static void set_compat(struct smr_sb *sb) { sb->features_ro_compat = 0; sb->features_compat = 1ULL << 5; }
static void set_major(struct smr_sb *sb) { sb->format_major = 2; }
static void set_capacity(struct smr_sb *sb) { sb->format_major = 1; sb->capacity += SMR_MIB; }
static void set_alloc(struct smr_sb *sb) { sb->capacity -= SMR_MIB; snprintf(sb->alloc, sizeof(sb->alloc), "zoned"); }

static void test_superblock(void)
{
	const char *path = make_dev(K_FILE, "sb");
	struct smr_cow_opts o = { .commit_secs = 3600 };
	struct smr_cow_opts ro = { .commit_secs = 3600, .read_only = true };
	struct smr_dev *dev;
	struct smr_cow *c = NULL;

	/* Not formatted: not smrfs. */
	SMR_ASSERT_RC(open_fs(path, &o, &dev, &c), -EINVAL);
	SMR_ASSERT_OK(format_path(path, NULL));
	/* The first copy damaged: the second is used. */
	flip_byte(K_FILE, path, 200);
	SMR_ASSERT_OK(open_fs(path, &o, &dev, &c));
	if (c)
		close_fs(dev, c);
	/* Both damaged: a checksum error. */
	flip_byte(K_FILE, path, SMR_SB_SIZE + 200);
	SMR_ASSERT_RC(open_fs(path, &o, &dev, &c), -SMR_EFSBADCRC);
	flip_byte(K_FILE, path, 200);
	flip_byte(K_FILE, path, SMR_SB_SIZE + 200);
	SMR_ASSERT_OK(open_fs(path, &o, &dev, &c));
	if (c)
		close_fs(dev, c);

	smr_test_rewrite_sb(path, set_incompat);
	SMR_ASSERT_RC(open_fs(path, &ro, &dev, &c), -EOPNOTSUPP);
	smr_test_rewrite_sb(path, set_ro_compat);
	SMR_ASSERT_RC(open_fs(path, &o, &dev, &c), -EROFS);
	SMR_ASSERT_OK(open_fs(path, &ro, &dev, &c));
	if (c) {
		CU_ASSERT_TRUE(smr_cow_is_read_only(c));
		close_fs(dev, c);
	}
	smr_test_rewrite_sb(path, set_compat);
	SMR_ASSERT_OK(open_fs(path, &o, &dev, &c));
	if (c)
		close_fs(dev, c);
	smr_test_rewrite_sb(path, set_major);
	SMR_ASSERT_RC(open_fs(path, &o, &dev, &c), -EOPNOTSUPP);
	/* An smrfs of another device is not "not smrfs". */
	smr_test_rewrite_sb(path, set_capacity);
	SMR_ASSERT_RC(open_fs(path, &o, &dev, &c), -EMEDIUMTYPE);
	/* The recorded allocator refuses the device, unless overridden. */
	smr_test_rewrite_sb(path, set_alloc);
	SMR_ASSERT_RC(open_fs(path, &o, &dev, &c), -EINVAL);
	o.alloc = "flash";
	SMR_ASSERT_OK(open_fs(path, &o, &dev, &c));
	if (c)
		close_fs(dev, c);
}

/* ------------------------------------------------------------------------
 * Group commit and the timer
 * ------------------------------------------------------------------------ */

/*
 * Group commit. In each round GC_THREADS callers make a change each, then
 * call smr_cow_commit at once while the test holds a transaction handle
 * open: the first caller's commit waits for that handle, the others arrive
 * while it is in progress. Once the handle ends, one commit must serve them
 * all. Then the power is cut (nothing written after the last call returned
 * reaches the device), and every caller's change must be there.
 */
#define GC_THREADS 8
#define GC_ROUNDS 10

struct gc_caller {
	struct smr_cow *c;
	pthread_barrier_t *ready;
	int id, round;
	int rc;
};

static void *gc_caller_main(void *arg)
{
	struct gc_caller *w = arg;
	struct smr_key k = { .objid = (uint64_t)w->id + 1, .type = 1,
			     .offset = (uint64_t)w->round };
	uint64_t v = (uint64_t)w->round * 100 + (uint64_t)w->id;
	struct smr_txn *t;

	w->rc = smr_txn_begin(w->c, &t);
	if (!w->rc) {
		w->rc = smr_bt_insert(t, SMR_TREE_FS, &k, &v, sizeof(v));
		smr_txn_end(t);
	}
	pthread_barrier_wait(w->ready);
	if (!w->rc)
		w->rc = smr_cow_commit(w->c);
	return NULL;
}

static void test_group_commit(void)
{
	const char *path = make_dev(K_ZLOOP_SEQ, "group");
	struct smr_cow_opts o = { .commit_secs = 3600 };
	struct smr_fault_rule cut = { .what = SMR_FAULT_DROP_WRITES };
	struct gc_caller w[GC_THREADS];
	pthread_t th[GC_THREADS];
	pthread_barrier_t ready;
	struct smr_cow_stats st0, st;
	struct smr_dev *lower, *dev;
	struct smr_fault *f;
	struct smr_cow *c;

	SMR_ASSERT_OK(format_path(path, NULL));
	SMR_ASSERT_OK(smr_dev_open(path, NULL, &lower));
	SMR_ASSERT_OK(smr_fault_open(lower, &f, &dev));
	SMR_ASSERT_OK(smr_test_cow_open(dev, &o, &c));
	CU_ASSERT_FATAL(c != NULL);
	smr_cow_get_stats(c, &st0);
	for (int r = 0; r < GC_ROUNDS; r++) {
		struct smr_txn *hold;

		SMR_ASSERT_OK(smr_txn_begin(c, &hold));
		pthread_barrier_init(&ready, NULL, GC_THREADS + 1);
		for (int i = 0; i < GC_THREADS; i++) {
			w[i] = (struct gc_caller){ .c = c, .ready = &ready,
						   .id = i, .round = r };
			CU_ASSERT_FATAL(pthread_create(&th[i], NULL,
						       gc_caller_main,
						       &w[i]) == 0);
		}
		pthread_barrier_wait(&ready);
		/* Let every caller reach smr_cow_commit, where they wait
		 * for the handle held here. */
		usleep(100000);
		smr_txn_end(hold);
		for (int i = 0; i < GC_THREADS; i++) {
			pthread_join(th[i], NULL);
			SMR_ASSERT_OK(w[i].rc);
		}
		pthread_barrier_destroy(&ready);
	}
	smr_cow_get_stats(c, &st);
	st.commits -= st0.commits;
	printf("\n  %d commit calls from %d threads in %d rounds: %" PRIu64
	       " commits\n", GC_THREADS * GC_ROUNDS, GC_THREADS, GC_ROUNDS,
	       st.commits);
	/* One commit a round serves all its callers (a caller scheduled
	 * too late for it may cost one more, rarely). Without sharing each
	 * round takes two: the second caller's commit still has the blocks
	 * the first released to hand over, only the later ones find nothing
	 * to do. */
	CU_ASSERT(st.commits >= GC_ROUNDS);
	CU_ASSERT(st.commits <= GC_ROUNDS + 3);
	/* The power goes now: what the calls made durable must be there. */
	SMR_ASSERT_OK(smr_fault_arm(f, &cut));
	smr_cow_close(c);
	smr_dev_close(dev);
	smr_dev_close(lower);
	smr_fault_free(f);
	SMR_ASSERT_OK(open_fs(path, &o, &dev, &c));
	if (!c)
		return;
	for (int id = 0; id < GC_THREADS; id++)
		for (int r = 0; r < GC_ROUNDS; r++) {
			struct smr_key k = { .objid = (uint64_t)id + 1,
					     .type = 1, .offset = (uint64_t)r };
			uint64_t v = 0;
			size_t len = sizeof(v);

			SMR_ASSERT_OK(smr_bt_lookup(c, SMR_TREE_FS, &k, &v,
						    &len));
			CU_ASSERT_EQUAL(v, (uint64_t)r * 100 + (uint64_t)id);
		}
	close_fs(dev, c);
}

static void test_timer(void)
{
	const char *path = make_dev(K_FILE, "timer");
	struct smr_cow_opts o = { .commit_secs = 1 };
	struct smr_key k = { .objid = 7 };
	struct smr_cow_info info;
	struct smr_dev *dev;
	struct smr_cow *c;
	struct smr_txn *t;

	SMR_ASSERT_OK(format_path(path, NULL));
	SMR_ASSERT_OK(open_fs(path, &o, &dev, &c));
	if (!c)
		return;
	SMR_ASSERT_OK(smr_txn_begin(c, &t));
	SMR_ASSERT_OK(smr_bt_insert(t, SMR_TREE_FS, &k, "x", 1));
	smr_txn_end(t);
	/* The timer thread commits on its own (waits for it, up to a
	 * minute: a functional check, not a timing one). */
	for (int i = 0; i < 600; i++) {
		smr_cow_info(c, &info);
		if (info.gen > 1)
			break;
		usleep(100000);
	}
	CU_ASSERT(info.gen > 1);
	close_fs(dev, c);
}

/* ------------------------------------------------------------------------
 * Data extents, several trees, failed writes
 * ------------------------------------------------------------------------ */

static void data_and_trees(enum kind k)
{
	static const struct smr_tree_type three = {
		.id = 3, .name = "three", .max_item = sizeof(uint64_t),
	};
	const char *path = make_dev(k, "data");
	struct smr_cow_opts o = { .commit_secs = 3600 };
	struct smr_data_extent ext[8];
	struct smr_cow_space sp0, sp1, sp2;
	struct smr_key key = { .objid = 3, .type = 9, .offset = 1 };
	const size_t len = 256 * SMR_KIB;
	uint8_t *buf = smr_cow_buf_alloc(len), *back = smr_cow_buf_alloc(len);
	struct smr_dev *dev;
	struct smr_cow *c;
	struct smr_txn *t;
	uint64_t total = 0, v;
	size_t vl = sizeof(v);
	int n;

	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(i * 7 + 3);
	SMR_ASSERT_OK(format_path(path, NULL));
	SMR_ASSERT_OK(open_fs(path, &o, &dev, &c));
	if (!c)
		return;
	smr_cow_space(c, &sp0);
	SMR_ASSERT_OK(smr_txn_begin(c, &t));
	n = smr_cow_data_write(c, SMR_DATA_HOT, 0, buf, len, ext, 8);
	CU_ASSERT(n >= 1 && n <= 8);
	for (int i = 0; i < n; i++) {
		CU_ASSERT(ext[i].off >= c->sb.data_start);
		SMR_ASSERT_OK(smr_cow_data_read(c, ext[i].off, back + total,
						ext[i].len));
		total += ext[i].len;
	}
	CU_ASSERT_EQUAL(total, len);
	CU_ASSERT_EQUAL(memcmp(buf, back, len), 0);
	for (int i = 0; i < n; i++)
		SMR_ASSERT_OK(smr_cow_data_settle(t, ext[i].off, ext[i].len));
	/* Trees other than the namespace's are independent. */
	v = 77;
	SMR_ASSERT_OK(smr_cow_tree_register(c, &three));
	SMR_ASSERT_OK(smr_bt_insert(t, 3, &key, &v, sizeof(v)));
	v = 88;
	SMR_ASSERT_OK(smr_bt_insert(t, SMR_TREE_FS, &key, &v, sizeof(v)));
	smr_txn_end(t);
	SMR_ASSERT_OK(smr_cow_commit(c));
	smr_cow_space(c, &sp1);
	CU_ASSERT(sp1.used >= sp0.used + len);
	close_fs(dev, c);

	SMR_ASSERT_OK(open_fs(path, &o, &dev, &c));
	if (!c)
		return;
	SMR_ASSERT_OK(smr_cow_tree_register(c, &three));
	SMR_ASSERT_OK(smr_bt_lookup(c, 3, &key, &v, &vl));
	CU_ASSERT_EQUAL(v, 77);
	SMR_ASSERT_OK(smr_bt_lookup(c, SMR_TREE_FS, &key, &v, &vl));
	CU_ASSERT_EQUAL(v, 88);
	SMR_ASSERT_RC(smr_bt_lookup(c, 2, &key, &v, &vl), -ENOENT);
	memset(back, 0, len);
	total = 0;
	for (int i = 0; i < n; i++) {
		SMR_ASSERT_OK(smr_cow_data_read(c, ext[i].off, back + total,
						ext[i].len));
		total += ext[i].len;
	}
	CU_ASSERT_EQUAL(memcmp(buf, back, len), 0);
	/* Freed data comes back once two commits have passed. */
	SMR_ASSERT_OK(smr_txn_begin(c, &t));
	for (int i = 0; i < n; i++)
		SMR_ASSERT_OK(smr_cow_data_free(t, ext[i].off, ext[i].len));
	SMR_ASSERT_OK(smr_bt_delete(t, 3, &key));
	smr_txn_end(t);
	SMR_ASSERT_OK(smr_cow_commit(c));
	SMR_ASSERT_OK(smr_cow_commit(c));
	close_fs(dev, c);
	SMR_ASSERT_OK(open_fs(path, &o, &dev, &c));
	if (!c)
		return;
	smr_cow_space(c, &sp2);
	CU_ASSERT(sp2.used + len <= sp1.used);
	SMR_ASSERT_RC(smr_bt_lookup(c, 3, &key, &v, &vl), -ENOENT);
	close_fs(dev, c);
	smr_cow_buf_free(buf);
	smr_cow_buf_free(back);
}

static void test_data_file(void) { data_and_trees(K_FILE); }
static void test_data_zloop(void) { data_and_trees(K_ZLOOP_SEQ); }

struct pin_commits {
	struct smr_cow *c;
	int rc;
	int done;
};

static void *pin_commits_run(void *arg)
{
	struct pin_commits *p = arg;

	p->rc = smr_cow_commit(p->c);
	if (!p->rc)
		p->rc = smr_cow_commit(p->c);
	__atomic_store_n(&p->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* While a read pin is held, the commits that would make freed data
 * reusable wait, and the data reads back whole. */
static void read_pin(enum kind k)
{
	const char *path = make_dev(k, "pin");
	const uint64_t len = 64 * 1024;
	uint8_t *buf = smr_cow_buf_alloc(len), *back = smr_cow_buf_alloc(len);
	struct smr_data_extent ext[8];
	struct pin_commits p = { 0 };
	struct smr_dev *dev;
	struct smr_txn *t;
	pthread_t th;
	uint64_t at = 0;
	int n;

	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(i * 5 + 1);
	SMR_ASSERT_OK(format_path(path, NULL));
	SMR_ASSERT_OK(open_fs(path, NULL, &dev, &p.c));
	if (!p.c)
		return;
	SMR_ASSERT_OK(smr_txn_begin(p.c, &t));
	n = smr_cow_data_write(p.c, SMR_DATA_HOT, 0, buf, len, ext, 8);
	CU_ASSERT_FATAL(n >= 1);
	for (int i = 0; i < n; i++)
		SMR_ASSERT_OK(smr_cow_data_settle(t, ext[i].off, ext[i].len));
	smr_txn_end(t);
	SMR_ASSERT_OK(smr_cow_commit(p.c));

	smr_cow_read_pin(p.c);
	SMR_ASSERT_OK(smr_txn_begin(p.c, &t));
	for (int i = 0; i < n; i++)
		SMR_ASSERT_OK(smr_cow_data_free(t, ext[i].off, ext[i].len));
	smr_txn_end(t);
	CU_ASSERT_FATAL(!pthread_create(&th, NULL, pin_commits_run, &p));
	usleep(100000);
	CU_ASSERT_EQUAL(__atomic_load_n(&p.done, __ATOMIC_ACQUIRE), 0);
	for (int i = 0; i < n; i++) {
		SMR_ASSERT_OK(smr_cow_data_read(p.c, ext[i].off, back + at,
						ext[i].len));
		at += ext[i].len;
	}
	CU_ASSERT_EQUAL(memcmp(buf, back, len), 0);
	smr_cow_read_unpin(p.c);
	pthread_join(th, NULL);
	CU_ASSERT_EQUAL(p.done, 1);
	SMR_ASSERT_OK(p.rc);
	close_fs(dev, p.c);
	smr_cow_buf_free(buf);
	smr_cow_buf_free(back);
}

static void test_read_pin_file(void) { read_pin(K_FILE); }
static void test_read_pin_zloop(void) { read_pin(K_ZLOOP_SEQ); }

/* A device that fails writes: the commit fails, the engine turns read-only
 * and the last good checkpoint is what the next open finds. */
/*
 * Data written, then a commit before anything references it, then the power
 * goes: the checkpoint counts the data's space as used, and nothing in it
 * references the data. Recovery must give the space back, not leak it; and
 * data settled before the commit must stay. @k: the device kind. @cut (a
 * zoned loop directory; -1: none): the power went while the data was being
 * written, and only its first @cut bytes reached the zone, whose write
 * pointer is then inside (or at the start of) the data the checkpoint lists.
 */
static void unsettled_at_crash(enum kind k, int64_t cut)
{
	const char *path = make_dev(k, "unsettled");
	struct smr_cow_opts o = { .commit_secs = 3600, .gc_off = true };
	struct smr_fault_rule drop = { .what = SMR_FAULT_DROP_WRITES };
	struct smr_data_extent ext[8], keep[8];
	struct smr_cow_space_check sc;
	struct smr_cow_space sp0, sp1;
	uint64_t len = 256 * SMR_KIB, kept = 0;
	struct smr_key owner = { .objid = 7, .type = 1, .offset = 0 };
	struct smr_key rkey = { .type = SMR_RMAP_T_EXTENT };
	void *buf = smr_cow_buf_alloc(len);
	uint8_t v[64];
	size_t vl;
	struct smr_dev *lower, *dev;
	struct smr_fault *f;
	struct smr_txn *t;
	struct smr_cow *c;
	int n, nk;

	CU_ASSERT_FATAL(buf != NULL);
	memset(buf, 0x3c, len);
	SMR_ASSERT_OK(format_path(path, NULL));
	SMR_ASSERT_OK(smr_dev_open(path, NULL, &lower));
	SMR_ASSERT_OK(smr_fault_open(lower, &f, &dev));
	SMR_ASSERT_OK(smr_test_cow_open(dev, &o, &c));
	smr_cow_space(c, &sp0);
	/* One write is settled (referenced), the other is still in flight
	 * when the checkpoint is taken. */
	nk = smr_cow_data_write(c, SMR_DATA_HOT, 0, buf, len, keep, 8);
	CU_ASSERT_FATAL(nk >= 1);
	SMR_ASSERT_OK(smr_txn_begin(c, &t));
	for (int i = 0; i < nk; i++) {
		SMR_ASSERT_OK(smr_cow_data_settle(t, keep[i].off, keep[i].len));
		kept += keep[i].len;
	}
	smr_txn_end(t);
	/* With an owner: the reverse-map entry made for it must not outlive
	 * the recovery that frees it. */
	n = smr_cow_data_write_owned(c, SMR_DATA_HOT, 0, &owner, buf, len,
				     ext, 8, NULL);
	CU_ASSERT_FATAL(n >= 1);
	SMR_ASSERT_OK(smr_cow_commit_forced(c));
	rkey.objid = ext[0].off;
	vl = sizeof(v);
	SMR_ASSERT_OK(smr_bt_lookup(c, SMR_TREE_RMAP, &rkey, v, &vl));
	SMR_ASSERT_OK(smr_fault_arm(f, &drop));
	smr_cow_close(c);
	smr_dev_close(dev);
	if (cut >= 0) {
		uint32_t zno = smr_dev_zone_no(lower, ext[0].off);
		char zf[600];

		CU_ASSERT_FATAL(n == 1 && (uint64_t)cut < ext[0].len);
		snprintf(zf, sizeof(zf), "%s/seq-%06u", path, zno);
		CU_ASSERT_FATAL(truncate(zf, (off_t)(ext[0].off + (uint64_t)cut -
					     smr_dev_zone_start(lower, zno))) == 0);
	}
	smr_dev_close(lower);
	smr_fault_free(f);

	SMR_ASSERT_OK(open_fs(path, &o, &dev, &c));
	if (!c)
		goto out;
	/* The audit: the settled data as the only reference, the rest is
	 * free or released, nothing leaked. */
	SMR_ASSERT_OK(smr_cow_check_space(c, keep, (size_t)nk, false, &sc));
	CU_ASSERT_EQUAL(sc.problems, 0);
	CU_ASSERT_EQUAL(sc.leaked, 0);
	vl = sizeof(v);
	SMR_ASSERT_RC(smr_bt_lookup(c, SMR_TREE_RMAP, &rkey, v, &vl), -ENOENT);
	if (cut > 0) {
		/* Nor the entry's part that was never written. */
		rkey.objid = ext[0].off + (uint64_t)cut;
		vl = sizeof(v);
		SMR_ASSERT_RC(smr_bt_lookup(c, SMR_TREE_RMAP, &rkey, v, &vl),
			      -ENOENT);
	}
	/* Two commits on, the in-flight space is back. */
	SMR_ASSERT_OK(smr_cow_commit_forced(c));
	SMR_ASSERT_OK(smr_cow_commit_forced(c));
	smr_cow_space(c, &sp1);
	CU_ASSERT(sp1.used >= sp0.used + kept);
	CU_ASSERT(sp1.used < sp0.used + kept + len / 2);
	close_fs(dev, c);
out:
	smr_cow_buf_free(buf);
}

static void test_unsettled_file(void) { unsettled_at_crash(K_FILE, -1); }
static void test_unsettled_zloop(void)
{
	unsettled_at_crash(K_ZLOOP_SEQ, -1);
}
static void test_unsettled_zloop_cut(void)
{
	unsettled_at_crash(K_ZLOOP_SEQ, 64 * SMR_KIB);
}
static void test_unsettled_zloop_lost(void)
{
	unsettled_at_crash(K_ZLOOP_SEQ, 0);
}

/*
 * The reverse map against a block-by-block model while data is written
 * and freed before and after commits: entries that wait in memory until
 * the commit (the whole, the front, the back and the middle of one cut
 * out, a free across several, a free across waiting and committed ones)
 * must read back as the tree would hold them, before the commit, after it
 * and after a reopen.
 */
#define RMP_BLOCKS 4096

struct rmp_model {
	uint64_t base;               /* device offset of block 0 */
	uint64_t owner[RMP_BLOCKS];  /* owner offset + 1 of each block; 0 */
	uint64_t seen[RMP_BLOCKS];
	uint64_t bad;
};

static int rmp_item(void *arg, const struct smr_key *k, const void *v,
		    size_t len)
{
	struct rmp_model *m = arg;
	struct smr_rmap_d d;

	if (len != sizeof(d)) {
		m->bad++;
		return 0;
	}
	memcpy(&d, v, sizeof(d));
	for (uint64_t b = 0; b < le64toh(d.len) / 4096; b++) {
		uint64_t i = (k->objid - m->base) / 4096 + b;

		if (k->objid < m->base || i >= RMP_BLOCKS ||
		    le64toh(d.owner_objid) != 42 || m->seen[i])
			m->bad++;
		else
			m->seen[i] = le64toh(d.owner_offset) + b * 4096 + 1;
	}
	return 0;
}

static void rmp_check(struct smr_cow *c, struct rmp_model *m)
{
	struct smr_key a = { 0, 0, 0 }, b = { UINT64_MAX, 0xff, UINT64_MAX };
	uint64_t wrong = 0;

	m->bad = 0;
	memset(m->seen, 0, sizeof(m->seen));
	SMR_ASSERT_OK(smr_bt_iterate(c, SMR_TREE_RMAP, &a, &b, rmp_item, m));
	for (size_t i = 0; i < RMP_BLOCKS; i++) {
		if (m->seen[i] != m->owner[i] && !wrong)
			fprintf(stderr, "check of %" PRIu64 ": block %zu: map %" PRIu64 ", model %"
				PRIu64 "\n", m->base, i, m->seen[i], m->owner[i]);
		wrong += m->seen[i] != m->owner[i];
	}
	CU_ASSERT_EQUAL(m->bad, 0);
	CU_ASSERT_EQUAL(wrong, 0);
}

/* Write @nblk blocks owned by (42, @foff); the model learns where. */
static void rmp_write(struct smr_cow *c, struct rmp_model *m, void *buf,
		      uint64_t foff, uint64_t nblk)
{
	struct smr_key owner = { .objid = 42, .type = 1, .offset = foff };
	struct smr_data_extent ext[8];
	uint64_t done = 0;
	struct smr_txn *t;
	int n = smr_cow_data_write_owned(c, SMR_DATA_HOT, 0, &owner, buf,
					 nblk * 4096, ext, 8, NULL);

	CU_ASSERT_FATAL(n >= 1);
	/* Referenced, as the namespace's map would. */
	SMR_ASSERT_OK(smr_txn_begin(c, &t));
	for (int i = 0; i < n; i++)
		SMR_ASSERT_OK(smr_cow_data_settle(t, ext[i].off, ext[i].len));
	smr_txn_end(t);
	for (int i = 0; i < n; i++) {
		for (uint64_t b = 0; b < ext[i].len / 4096; b++) {
			uint64_t j = (ext[i].off - m->base) / 4096 + b;

			CU_ASSERT_FATAL(ext[i].off >= m->base &&
					j < RMP_BLOCKS);
			m->owner[j] = foff + done + b * 4096 + 1;
		}
		done += ext[i].len;
	}
}

/* Free blocks [@i, @i + @n) of the model's range. */
static void rmp_free(struct smr_cow *c, struct rmp_model *m, uint64_t i,
		     uint64_t n)
{
	struct smr_txn *t;

	SMR_ASSERT_OK(smr_txn_begin(c, &t));
	SMR_ASSERT_OK(smr_cow_data_free(t, m->base + i * 4096, n * 4096));
	smr_txn_end(t);
	for (uint64_t j = i; j < i + n; j++)
		m->owner[j] = 0;
}

/* Index of the first block of the extent whose owner offset is @foff. */
static uint64_t rmp_at(const struct rmp_model *m, uint64_t foff)
{
	for (uint64_t i = 0; i < RMP_BLOCKS; i++)
		if (m->owner[i] == foff + 1)
			return i;
	CU_FAIL("no such block");
	return 0;
}

static void test_rmap_pending(void)
{
	const char *path = make_dev(K_ZLOOP_SEQ, "rmpend");
	struct smr_cow_opts o = { .commit_secs = 3600, .gc_off = true };
	struct rmp_model *m = calloc(1, sizeof(*m));
	void *buf = smr_cow_buf_alloc(64 * 4096);
	struct smr_data_extent probe;
	struct smr_dev *dev;
	struct smr_txn *t;
	struct smr_cow *c;
	uint64_t i;

	CU_ASSERT_FATAL(m && buf);
	memset(buf, 0x5a, 64 * 4096);
	SMR_ASSERT_OK(format_path(path, NULL));
	SMR_ASSERT_OK(open_fs(path, &o, &dev, &c));
	CU_ASSERT_FATAL(c != NULL);
	/* Where the hot stream writes next: the model's block 0. */
	CU_ASSERT_FATAL(smr_cow_data_write(c, SMR_DATA_HOT, 0, buf, 4096,
					   &probe, 1) == 1);
	m->base = probe.off + 4096;
	SMR_ASSERT_OK(smr_txn_begin(c, &t));
	SMR_ASSERT_OK(smr_cow_data_free(t, probe.off, probe.len));
	smr_txn_end(t);

	/* 4 KiB writes, then extents of 8 and 12 blocks (inside a 64 KiB
	 * chunk or across one: either way the map must read right). */
	for (i = 0; i < 40; i++)
		rmp_write(c, m, buf, i * 4096, 1);
	rmp_write(c, m, buf, 1000 * 4096, 8);
	rmp_write(c, m, buf, 2000 * 4096, 12);
	rmp_write(c, m, buf, 3000 * 4096, 12);
	i = rmp_at(m, 1000 * 4096);
	rmp_free(c, m, rmp_at(m, 3 * 4096), 1);     /* whole */
	rmp_free(c, m, i, 2);                      /* front */
	rmp_free(c, m, i + 7, 1);                  /* back */
	rmp_free(c, m, rmp_at(m, 2000 * 4096) + 4, 3); /* middle */
	rmp_free(c, m, rmp_at(m, 10 * 4096), 5);   /* across five */
	rmp_check(c, m);
	/* The check put everything in the tree: more waits again. */
	for (i = 100; i < 140; i++)
		rmp_write(c, m, buf, i * 4096, 1);
	rmp_free(c, m, rmp_at(m, 3000 * 4096) + 2, 8); /* middle, tree */
	rmp_free(c, m, rmp_at(m, 120 * 4096), 1);
	/* Across entries in the tree (the last two blocks of the 12) and
	 * waiting ones (the first two written after the check). */
	rmp_free(c, m, rmp_at(m, 3000 * 4096) + 10, 4);
	SMR_ASSERT_OK(smr_cow_commit_forced(c));
	rmp_check(c, m);
	for (i = 200; i < 260; i++)
		rmp_write(c, m, buf, i * 4096, 1);
	rmp_free(c, m, rmp_at(m, 130 * 4096), 1);
	rmp_free(c, m, rmp_at(m, 210 * 4096), 1);
	rmp_free(c, m, rmp_at(m, 220 * 4096), 30);
	SMR_ASSERT_OK(smr_cow_commit_forced(c));
	close_fs(dev, c);
	SMR_ASSERT_OK(open_fs(path, &o, &dev, &c));
	CU_ASSERT_FATAL(c != NULL);
	rmp_check(c, m);
	close_fs(dev, c);
	smr_cow_buf_free(buf);
	free(m);
}

static void test_failed_write(void)
{
	const char *path = make_dev(K_ZLOOP_SEQ, "failw");
	struct smr_cow_opts o = { .commit_secs = 3600 };
	struct smr_fault_rule fail = { .what = SMR_FAULT_FAIL_WRITES };
	struct model m = { .n = 500 };
	struct smr_dev *lower, *dev;
	struct smr_fault *f;
	struct smr_cow *c;
	struct smr_txn *t;

	m.ver = calloc(m.n, sizeof(*m.ver));
	SMR_ASSERT_OK(format_path(path, NULL));
	SMR_ASSERT_OK(smr_dev_open(path, NULL, &lower));
	SMR_ASSERT_OK(smr_fault_open(lower, &f, &dev));
	SMR_ASSERT_OK(smr_test_cow_open(dev, &o, &c));
	for (uint64_t i = 0; i < m.n; i++)
		model_apply(c, &m, i, 5);
	SMR_ASSERT_OK(smr_cow_commit(c));
	for (uint64_t after = 0; after < 3; after++) {
		struct model lost = { .n = m.n };

		lost.ver = calloc(m.n, sizeof(*m.ver));
		memcpy(lost.ver, m.ver, m.n * sizeof(*m.ver));
		for (uint64_t i = 0; i < m.n; i += 2)
			model_apply(c, &lost, i, 9);
		fail.after = after;
		SMR_ASSERT_OK(smr_fault_arm(f, &fail));
		CU_ASSERT(smr_cow_commit(c) < 0);
		CU_ASSERT_TRUE(smr_cow_is_read_only(c));
		SMR_ASSERT_RC(smr_txn_begin(c, &t), -EROFS);
		CU_ASSERT(smr_cow_close(c) < 0);
		smr_fault_disarm(f);
		smr_dev_close(dev);
		smr_fault_free(f);
		smr_dev_close(lower);
		free(lost.ver);
		SMR_ASSERT_OK(smr_dev_open(path, NULL, &lower));
		SMR_ASSERT_OK(smr_fault_open(lower, &f, &dev));
		SMR_ASSERT_OK(smr_test_cow_open(dev, &o, &c));
		if (!c)
			break;
		CU_ASSERT_TRUE(model_equal(c, &m));
	}
	if (c)
		SMR_ASSERT_OK(smr_cow_close(c));
	smr_dev_close(dev);
	smr_fault_free(f);
	smr_dev_close(lower);
	free(m.ver);
}

/* One item in a transaction of its own, then a commit. */
static int put_and_commit(struct smr_cow *c, uint64_t i)
{
	struct smr_key k = { .objid = 5, .type = 1, .offset = i };
	struct smr_txn *t;
	int rc = smr_txn_begin(c, &t);

	if (rc)
		return rc;
	rc = smr_bt_put(t, SMR_TREE_FS, &k, &i, sizeof(i));
	smr_txn_end(t);
	return rc ? rc : smr_cow_commit(c);
}

/* Zone resets that fail: every commit still succeeds and the engine stays
 * writable; the dead zones stay full until the device takes resets again,
 * then the next commits reset them. */
static void test_failed_reset(void)
{
	const char *path = make_dev(K_ZLOOP_SEQ, "failr");
	struct smr_cow_opts o = { .commit_secs = 3600, .gc_off = true };
	struct smr_fault_rule fail = { .what = SMR_FAULT_FAIL_RESETS };
	const size_t len = 3 * ZONE;
	uint8_t *buf = smr_cow_buf_alloc(len);
	struct smr_data_extent ext[16];
	struct smr_cow_gc_stats st0, st1;
	struct smr_fault_stats fst;
	struct smr_dev *lower, *dev;
	struct smr_fault *f;
	struct smr_cow *c;
	struct smr_txn *t;
	uint64_t i = 0;
	int n;

	CU_ASSERT_FATAL(buf != NULL);
	memset(buf, 0x5a, len);
	SMR_ASSERT_OK(format_path(path, NULL));
	SMR_ASSERT_OK(smr_dev_open(path, NULL, &lower));
	SMR_ASSERT_OK(smr_fault_open(lower, &f, &dev));
	SMR_ASSERT_OK(smr_test_cow_open(dev, &o, &c));
	n = smr_cow_data_write(c, SMR_DATA_HOT, 0, buf, len, ext, 16);
	CU_ASSERT_FATAL(n >= 1);
	SMR_ASSERT_OK(put_and_commit(c, i++));
	/* Free it all: whole zones die. */
	SMR_ASSERT_OK(smr_fault_arm(f, &fail));
	smr_cow_gc_stats(c, &st0);
	SMR_ASSERT_OK(smr_txn_begin(c, &t));
	for (int k = 0; k < n; k++)
		SMR_ASSERT_OK(smr_cow_data_free(t, ext[k].off, ext[k].len));
	smr_txn_end(t);
	for (int k = 0; k < 5; k++)
		SMR_ASSERT_OK(put_and_commit(c, i++));
	CU_ASSERT_FALSE(smr_cow_is_read_only(c));
	smr_fault_stats(f, &fst);
	CU_ASSERT(fst.failed >= 2);
	smr_cow_gc_stats(c, &st1);
	CU_ASSERT_EQUAL(st1.zones_reset, st0.zones_reset);
	/* The device takes resets again. */
	smr_fault_disarm(f);
	for (int k = 0; k < 3; k++)
		SMR_ASSERT_OK(put_and_commit(c, i++));
	smr_cow_gc_stats(c, &st1);
	CU_ASSERT(st1.zones_reset >= st0.zones_reset + 2);
	SMR_ASSERT_OK(smr_cow_close(c));
	smr_dev_close(dev);
	smr_fault_free(f);
	smr_dev_close(lower);
	/* Everything committed is there. */
	SMR_ASSERT_OK(open_fs(path, &o, &dev, &c));
	if (c) {
		for (uint64_t k = 0; k < i; k++) {
			struct smr_key key = { .objid = 5, .type = 1, .offset = k };
			uint64_t v = ~0ULL;
			size_t vl = sizeof(v);

			SMR_ASSERT_OK(smr_bt_lookup(c, SMR_TREE_FS, &key, &v, &vl));
			CU_ASSERT_EQUAL(v, k);
		}
		close_fs(dev, c);
	}
	smr_cow_buf_free(buf);
}

/* ------------------------------------------------------------------------
 * Power loss at every write
 * ------------------------------------------------------------------------ */

static int copy_tree(const char *from, const char *to)
{
	char cmd[4096];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s' && cp -r --sparse=always '%s' '%s'",
		 to, from, to);
	return system(cmd) == 0 ? 0 : -EIO;
}

#define PL_TXNS 6

/*
 * Write-cache subsets tried at each cut: SMR_TEST_POWER_SEEDS, default 3
 * (the long run: SMR_TEST_POWER_SEEDS=64 or so).
 */
static unsigned int pl_nr_seeds(void)
{
	const char *env = getenv("SMR_TEST_POWER_SEEDS");

	return env ? (unsigned int)strtoul(env, NULL, 10) : 3;
}

/* A commit that changes nothing in the end: a key put and deleted. */
static void pl_empty_commit(struct smr_cow *c, int i)
{
	struct smr_txn *t;
	struct smr_key one = { .objid = 1 };

	SMR_ASSERT_OK(smr_txn_begin(c, &t));
	SMR_ASSERT_OK(smr_bt_put(t, SMR_TREE_FS, &one, &i, sizeof(i)));
	SMR_ASSERT_OK(smr_bt_delete(t, SMR_TREE_FS, &one));
	smr_txn_end(t);
	SMR_ASSERT_OK(smr_cow_commit(c));
}

/* Room left in the first open sequential zone in [@from, @to): with
 * @from = 2, the one the metadata stream writes to (the test writes no
 * data); with [0, 2), the checkpoint log's zone on a device without
 * conventional zones. */
static uint64_t pl_room(struct smr_dev *dev, uint32_t from, uint32_t to)
{
	const struct smr_dev_info *di = smr_dev_info(dev);

	for (uint32_t z = from; z < SMR_MIN(to, di->nr_zones); z++) {
		uint64_t s = smr_dev_zone_start(dev, z);
		uint64_t wp = smr_dev_zone_wp(dev, z);
		uint64_t cap = smr_dev_zone_cap(dev, z);

		if (smr_dev_zone_type(dev, z) != SMR_ZONE_TYPE_CNV &&
		    wp > s && wp < s + cap)
			return s + cap - wp;
	}
	return 0;
}

static void power_loss(enum kind k)
{
	const char *path = make_dev(k, "power");
	char tmpl[600], target[600];
	struct smr_cow_opts o = { .commit_secs = 3600 };
	struct model states[PL_TXNS + 1], m = { .n = 600 }, scratch = { .n = 600 };
	uint64_t done_at[PL_TXNS + 1];
	struct smr_dev *lower, *dev;
	struct smr_fault *f;
	struct smr_cow *c;
	uint64_t nrec, writes = 0, rs = 7 + k, checked = 0, mismatches = 0;
	uint64_t lost_blocks = 0;
	unsigned int pl_seeds = pl_nr_seeds();
	bool log_moved = false;

	snprintf(tmpl, sizeof(tmpl), "%s.tmpl", path);
	snprintf(target, sizeof(target), "%s.target", path);
	SMR_ASSERT_OK(format_path(path, NULL));
	/* Commit 58 times (nearly round a checkpoint ring), and on a device
	 * without conventional zones until two things hold. The metadata
	 * stream is near the end of its zone, so that the first recorded
	 * commit writes its first nodes at the end of one zone and the rest,
	 * the root among them, into the next: on sequential zones the one
	 * place where a lost node can hide behind a root and a checkpoint
	 * that survived. And the checkpoint log is nearly full, so that the
	 * recorded commits move it to its other zone. */
	SMR_ASSERT_OK(open_fs(path, &o, &dev, &c));
	for (int i = 0; c; i++) {
		uint64_t room = pl_room(dev, 2, UINT32_MAX);
		bool log = k == K_ZLOOP_SEQ || k == K_ZLOOP_CAP;

		if (i >= 58 && (!log || (room >= 16 * SMR_KIB &&
					 room <= 64 * SMR_KIB &&
					 pl_room(dev, 0, 2) <= 4 * 16 * SMR_KIB)))
			break;
		if (i == 1000) {
			CU_FAIL("no commit left the streams where wanted");
			break;
		}
		pl_empty_commit(c, i);
	}
	if (c)
		close_fs(dev, c);
	SMR_ASSERT_OK(copy_tree(path, tmpl));

	/* Record: commit i's state and the log length when it returned. */
	m.ver = calloc(m.n, sizeof(*m.ver));
	scratch.ver = calloc(m.n, sizeof(*m.ver));
	SMR_ASSERT_OK(smr_dev_open(path, NULL, &lower));
	SMR_ASSERT_OK(smr_fault_open(lower, &f, &dev));
	SMR_ASSERT_OK(smr_test_cow_open(dev, &o, &c));
	states[0].n = m.n;
	states[0].ver = calloc(m.n, sizeof(uint64_t));
	done_at[0] = 0;
	for (int txn = 1; txn <= PL_TXNS && c; txn++) {
		/* Small workloads: a few changes, then fsync. */
		for (int j = 0; j < (txn == 1 ? 400 : 25); j++) {
			uint64_t i = smr_test_rand(&rs) % m.n;

			model_apply(c, &m, i, smr_test_rand(&rs) % 5 ?
					      (uint64_t)txn * 1000 + j : 0);
		}
		SMR_ASSERT_OK(smr_cow_commit(c));
		done_at[txn] = smr_fault_nr_records(f);
		states[txn].n = m.n;
		states[txn].ver = malloc(m.n * sizeof(uint64_t));
		memcpy(states[txn].ver, m.ver, m.n * sizeof(uint64_t));
	}
	/* No commit at close: the log ends with the last fsync. */
	smr_fault_set_recording(f, false);
	smr_cow_close(c);
	smr_dev_close(dev);
	for (uint64_t i = 0; i < smr_fault_nr_records(f); i++) {
		struct smr_fault_rec r;

		smr_fault_record(f, i, &r);
		writes += r.op == SMR_FOP_WRITE;
		log_moved |= r.op == SMR_FOP_ZONE_RESET && r.off < 2 * ZONE;
	}
	/* The recorded commits move the checkpoint log to its other zone. */
	if (k == K_ZLOOP_SEQ)
		CU_ASSERT_TRUE(log_moved);
	nrec = smr_fault_nr_records(f);

	for (uint64_t n = 0; n <= writes; n++) {
		/* 0: unflushed writes dropped; 1: the next write torn, the
		 * unflushed ones kept; 2 and on: the power fails right after
		 * write n, before the flush or zone operation that may follow
		 * it, and a volatile write cache loses blocks of the unflushed
		 * writes, each seed another subset, every third with write
		 * n torn too. */
		for (unsigned int mode = 0; mode < 2 + pl_seeds; mode++) {
			struct smr_replay_opts ro = { 0 };
			struct smr_fault_rec last;
			struct smr_dev *t;
			uint64_t pre;
			int lo = 0, rc;

			if (smr_fault_cut_prefix(f, n, &pre))
				break;
			if (mode >= 2) {
				if (n == 0)
					break;
				SMR_ASSERT_OK(smr_fault_cut_prefix(f, n - 1,
								   &pre));
				smr_fault_record(f, pre++, &last);
				ro.flags = SMR_REPLAY_LOSE_BLOCKS;
				/* Seed bits 1, 2, 3, ...: the first zone
				 * written since the flush loses a part, then
				 * the second, then both (fault.h). */
				ro.seed = n << 16 | (mode - 1);
				if ((mode - 2) % 3 == 2 &&
				    last.len >= 2 * 4096) {
					ro.flags |= SMR_REPLAY_TEAR_LAST;
					ro.tear_bytes = last.len / 2;
				}
			} else if (mode == 0) {
				ro.flags = SMR_REPLAY_DROP_UNFLUSHED;
			} else {
				/* The (n+1)-th write, torn halfway. */
				if (pre >= nrec)
					break;
				smr_fault_record(f, pre, &last);
				if (last.op != SMR_FOP_WRITE || last.len < 2 * 4096)
					continue;
				pre++;
				ro.flags = SMR_REPLAY_TEAR_LAST;
				ro.tear_bytes = last.len / 2;
			}
			while (lo < PL_TXNS && done_at[lo + 1] <= pre)
				lo++;
			SMR_ASSERT_OK(copy_tree(tmpl, target));
			SMR_ASSERT_OK(smr_dev_open(target, NULL, &t));
			SMR_ASSERT_OK(smr_fault_replay(f, pre, &ro, t));
			smr_dev_close(t);
			rc = open_fs(target, &o, &t, &c);
			if (rc && mismatches++ < 5)
				fprintf(stderr, "%s: cut after write %" PRIu64
					" (mode %u, %" PRIu64 " records): open: %s\n",
					kind_name[k], n, mode, pre,
					strerror(-rc));
			SMR_ASSERT_OK(rc);
			if (rc)
				continue;
			/* Exactly the last durable commit; with unflushed
			 * writes kept, possibly the one in flight. */
			bool ok = model_equal(c, &states[lo]) ||
				  (mode && lo < PL_TXNS &&
				   model_equal(c, &states[lo + 1]));

			if (!ok && mismatches++ < 5)
				fprintf(stderr, "%s: cut after write %" PRIu64
					" (mode %u, %" PRIu64 " records): not the state of commit %d\n",
					kind_name[k], n, mode, pre, lo);
			CU_ASSERT_TRUE(ok);
			/* And the filesystem goes on: one more commit
			 * (after one write-cache subset per cut, to keep
			 * the test short). */
			if (mode <= 2) {
				scratch.ver[1] = states[lo].ver[1];
				model_apply(c, &scratch, 1, 4242);
				SMR_ASSERT_OK(smr_cow_commit(c));
			}
			close_fs(t, c);
			checked++;
			lost_blocks += mode >= 2;
		}
	}
	printf("\n  %s: %" PRIu64 " writes recorded, %" PRIu64 " power cuts "
	       "checked, %" PRIu64 " of them losing blocks of the write cache\n",
	       kind_name[k], writes, checked, lost_blocks);
	if (pl_seeds)
		CU_ASSERT(lost_blocks >= writes / 2);
	CU_ASSERT(checked > writes);
	smr_fault_free(f);
	smr_dev_close(lower);
	for (int i = 0; i <= PL_TXNS; i++)
		free(states[i].ver);
	free(m.ver);
	free(scratch.ver);
}

static void test_power_loss_file(void) { power_loss(K_FILE); }
static void test_power_loss_zloop_cnv(void) { power_loss(K_ZLOOP_CNV); }
static void test_power_loss_zloop(void) { power_loss(K_ZLOOP_SEQ); }
static void test_power_loss_zloop_cap(void) { power_loss(K_ZLOOP_CAP); }

static const struct smr_test cow_tests[] = {
	{ "fs_changes_by_object", test_fs_changes_by_object },
	{ "roundtrip_file", test_roundtrip_file },
	{ "roundtrip_zloop_cnv", test_roundtrip_zloop_cnv },
	{ "roundtrip_zloop", test_roundtrip_zloop },
	{ "roundtrip_zloop_cap", test_roundtrip_zloop_cap },
	{ "roundtrip_zloop_limit", test_roundtrip_zloop_limit },
	{ "read_only_writes_nothing", test_read_only_writes_nothing },
	{ "remount_read_only", test_remount_read_only },
	{ "superblock", test_superblock },
	{ "corrupt_ckpt_file", test_corrupt_ckpt_file },
	{ "two_records_file", test_two_records_file },
	{ "two_records_zloop", test_two_records_zloop },
	{ "corrupt_ckpt_zloop", test_corrupt_ckpt_zloop },
	{ "corrupt_ckpt_zloop_cnv", test_corrupt_ckpt_zloop_cnv },
	{ "fallback_file", test_fallback_file },
	{ "fallback_zloop_cnv", test_fallback_zloop_cnv },
	{ "fallback_zloop", test_fallback_zloop },
	{ "fallback_zloop_cap", test_fallback_zloop_cap },
	{ "fallback_root_file", test_fallback_root_file },
	{ "fallback_root_zloop_cnv", test_fallback_root_zloop_cnv },
	{ "fallback_root_zloop", test_fallback_root_zloop },
	{ "corrupt_node_file", test_corrupt_node_file },
	{ "corrupt_node_zloop", test_corrupt_node_zloop },
	{ "misplaced_node_file", test_misplaced_node_file },
	{ "misplaced_node_zloop", test_misplaced_node_zloop },
	{ "data_file", test_data_file },
	{ "data_zloop", test_data_zloop },
	{ "read_pin_file", test_read_pin_file },
	{ "read_pin_zloop", test_read_pin_zloop },
	{ "unsettled_file", test_unsettled_file },
	{ "unsettled_zloop", test_unsettled_zloop },
	{ "unsettled_zloop_cut", test_unsettled_zloop_cut },
	{ "unsettled_zloop_lost", test_unsettled_zloop_lost },
	{ "rmap_pending", test_rmap_pending },
	{ "failed_write", test_failed_write },
	{ "failed_reset", test_failed_reset },
	{ "group_commit", test_group_commit },
	{ "timer", test_timer },
	{ "power_loss_file", test_power_loss_file },
	{ "power_loss_zloop_cnv", test_power_loss_zloop_cnv },
	{ "power_loss_zloop", test_power_loss_zloop },
	{ "power_loss_zloop_cap", test_power_loss_zloop_cap },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	static const struct smr_suite suites[] = {
		{ "cow", cow_tests },
		{ NULL, NULL },
	};

	smr_log_set_level(getenv("SMR_TEST_VERBOSE") ? SMR_LOG_DEBUG : SMR_LOG_ERR - 1);
	return smr_test_main(argc, argv, suites);
}
