/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_alloc.c - the allocator layer over real device handles: module
 * selection and refusal, the extent index, each module under long seeded
 * random alloc/free/commit/reopen sequences checked against a reference
 * model, the reserve and ENOSPC, the zone limits, persistence, recovery of a
 * zoned state after writes past the checkpoint, and corrupted state blocks.
 */
#include "testutil.h"

#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc/alloc.h"
#include "alloc/extent_index.h"
#include "dev/dev.h"
#include "dev/fault.h"
#include "util/smr.h"

#define BS 4096ULL
#define ZSZ (1 * SMR_MIB)
#define NZONES 32

static const uint8_t uuid[16] = { 0x5a, 0x11, 0x0c, 1, 2, 3, 4, 5,
				  6, 7, 8, 9, 10, 11, 12, 13 };

/* ------------------------------------------------------------------------
 * Devices
 * ------------------------------------------------------------------------ */

static struct smr_dev *zloop_dev_p(const char *tag,
				   const struct smr_zloop_params *p,
				   char *path, size_t len)
{
	struct smr_dev *dev = NULL;
	const char *dir = smr_test_tmpdir(tag);

	snprintf(path, len, "%s/z", dir);
	SMR_ASSERT_OK(smr_zloop_create(path, p));
	SMR_ASSERT_OK(smr_dev_open(path, NULL, &dev));
	CU_ASSERT_FATAL(dev != NULL);
	return dev;
}

static struct smr_dev *zloop_dev(const char *tag, uint32_t max_open,
				 uint32_t max_active, char *path, size_t len)
{
	struct smr_zloop_params p = {
		.capacity = NZONES * ZSZ,
		.zone_size = ZSZ,
		.max_open = max_open,
		.max_active = max_active,
		.block_size = BS,
	};

	return zloop_dev_p(tag, &p, path, len);
}

/* The zloop_dev shape with its first two zones conventional. */
/* All zones but the last conventional. */
static struct smr_dev *cnv_dev(const char *tag, char *path, size_t len)
{
	struct smr_zloop_params p = {
		.capacity = NZONES * ZSZ,
		.zone_size = ZSZ,
		.nr_cnv = NZONES - 1,
		.block_size = BS,
	};

	return zloop_dev_p(tag, &p, path, len);
}

/* A stream opens the sequential zone of a cnv_dev() before any of the
 * conventional ones (whose writes write-behind does not queue): fill it,
 * so that the stream's next zone is conventional. */
static void fill_seq_zone(struct smr_alloc *a, struct smr_dev *dev,
			  uint8_t *buf)
{
	struct smr_extent e[4];

	CU_ASSERT_EQUAL_FATAL(smr_alloc_write(a, buf, ZSZ, NULL,
					      SMR_STREAM_HOT, e, 4), 1);
	CU_ASSERT_EQUAL(smr_dev_zone_no(dev, e[0].off), NZONES - 1);
	SMR_ASSERT_OK(smr_alloc_settle(a, e[0].off, e[0].len));
}

static struct smr_dev *file_dev(const char *tag, uint64_t size, char *path,
				size_t len)
{
	struct smr_dev *dev = NULL;
	int fd;

	snprintf(path, len, "%s/f.img", smr_test_tmpdir(tag));
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_FATAL(ftruncate(fd, (off_t)size) == 0);
	close(fd);
	SMR_ASSERT_OK(smr_dev_open(path, NULL, &dev));
	return dev;
}

/* ------------------------------------------------------------------------
 * Selection and refusal
 * ------------------------------------------------------------------------ */

static void test_select(void)
{
	struct smr_dev_info hm = { .zoned = true, .nr_zones = 8 };
	struct smr_dev_info ha = { .zoned = true, .host_aware = true };
	struct smr_dev_info rot = { .rotational = true };
	struct smr_dev_info ssd = { 0 };
	const struct smr_alloc_ops *ops = NULL;
	char why[200];

	SMR_ASSERT_OK(smr_alloc_select(&hm, NULL, &ops, why, sizeof(why)));
	CU_ASSERT_PTR_EQUAL(ops, &smr_zoned_ops);
	SMR_ASSERT_OK(smr_alloc_select(&ha, NULL, &ops, why, sizeof(why)));
	CU_ASSERT_PTR_EQUAL(ops, &smr_zoned_ops);
	SMR_ASSERT_OK(smr_alloc_select(&rot, NULL, &ops, why, sizeof(why)));
	CU_ASSERT_PTR_EQUAL(ops, &smr_rot_ops);
	SMR_ASSERT_OK(smr_alloc_select(&ssd, NULL, &ops, why, sizeof(why)));
	CU_ASSERT_PTR_EQUAL(ops, &smr_flash_ops);

	/* A name overrides, unless the module cannot serve the device. */
	SMR_ASSERT_OK(smr_alloc_select(&ssd, "rotational", &ops, why,
				       sizeof(why)));
	CU_ASSERT_PTR_EQUAL(ops, &smr_rot_ops);
	SMR_ASSERT_OK(smr_alloc_select(&rot, "flash", &ops, why, sizeof(why)));
	CU_ASSERT_PTR_EQUAL(ops, &smr_flash_ops);
	SMR_ASSERT_RC(smr_alloc_select(&hm, "rotational", &ops, why,
				       sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "random writes are refused"));
	SMR_ASSERT_RC(smr_alloc_select(&ha, "flash", &ops, why, sizeof(why)),
		      -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "random writes are refused"));
	SMR_ASSERT_RC(smr_alloc_select(&ssd, "zoned", &ops, why, sizeof(why)),
		      -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "not a zoned device"));
	SMR_ASSERT_RC(smr_alloc_select(&ssd, "nosuch", &ops, why, sizeof(why)),
		      -ENOENT);
	CU_ASSERT_PTR_EQUAL(smr_alloc_find("flash"), &smr_flash_ops);
	CU_ASSERT_PTR_NULL(smr_alloc_find("ext4"));
}

static void test_select_real(void)
{
	char zp[512], fp[512], why[200];
	struct smr_dev *zd = zloop_dev("alloc-selz", 0, 0, zp, sizeof(zp));
	struct smr_dev *fd = file_dev("alloc-self", 8 * SMR_MIB, fp,
				      sizeof(fp));
	const struct smr_alloc_ops *ops = NULL;
	struct smr_alloc *a = NULL;

	SMR_ASSERT_OK(smr_alloc_select(smr_dev_info(zd), NULL, &ops, why,
				       sizeof(why)));
	CU_ASSERT_PTR_EQUAL(ops, &smr_zoned_ops);
	SMR_ASSERT_OK(smr_alloc_select(smr_dev_info(fd), NULL, &ops, why,
				       sizeof(why)));
	CU_ASSERT_PTR_EQUAL(ops, &smr_flash_ops); /* a file is not spinning */
	SMR_ASSERT_RC(smr_alloc_select(smr_dev_info(zd), "rotational", &ops,
				       why, sizeof(why)), -EINVAL);
	SMR_ASSERT_RC(smr_alloc_select(smr_dev_info(zd), "flash", &ops, why,
				       sizeof(why)), -EINVAL);
	/* On a zoned device the managed range starts at a zone boundary. */
	SMR_ASSERT_RC(smr_alloc_open(&smr_zoned_ops, zd, BS, uuid, NULL, &a),
		      -EINVAL);
	/* Opening the module anyway is refused too. */
	SMR_ASSERT_RC(smr_alloc_open(&smr_zoned_ops, fd, 0, uuid, NULL, &a),
		      -EINVAL);
	CU_ASSERT_PTR_NULL(a);
	smr_dev_close(zd);
	smr_dev_close(fd);
}

/* ------------------------------------------------------------------------
 * The extent index against a bitmap
 * ------------------------------------------------------------------------ */

static void test_extent_index(void)
{
	enum { N = 2048 };
	static uint8_t map[N];
	struct smr_xidx x;
	uint64_t seed = 42, bytes = 0;

	smr_xidx_init(&x);
	memset(map, 0, sizeof(map));
	for (int step = 0; step < 20000; step++) {
		uint64_t off = smr_test_rand(&seed) % N;
		uint64_t len = 1 + smr_test_rand(&seed) % 16;
		bool any = false, all = true;
		struct smr_extent e;
		int rc;

		if (off + len > N)
			len = N - off;
		for (uint64_t i = off; i < off + len; i++) {
			any |= map[i];
			all &= map[i] != 0;
		}
		if (smr_test_rand(&seed) & 1) {
			rc = smr_xidx_insert(&x, off, len);
			CU_ASSERT_EQUAL(rc, any ? -EEXIST : 0);
			if (!rc) {
				memset(map + off, 1, len);
				bytes += len;
			}
		} else {
			/* Inside one extent = all set and no gap. */
			rc = smr_xidx_remove(&x, off, len);
			CU_ASSERT_EQUAL(rc == 0, all);
			if (!rc) {
				memset(map + off, 0, len);
				bytes -= len;
			}
		}
		CU_ASSERT_EQUAL(smr_xidx_overlaps(&x, off, len),
				memchr(map + off, 1, len) != NULL);
		CU_ASSERT_EQUAL(x.bytes, bytes);
		if (step % 500 == 0) {
			/* Walk: extents are maximal runs of the bitmap. */
			uint64_t at = 0, runs = 0, longest = 0, cur = 0;

			for (int i = 0; i <= N; i++) {
				if (i < N && map[i]) {
					cur++;
					continue;
				}
				if (cur)
					runs++;
				longest = SMR_MAX(longest, cur);
				cur = 0;
			}
			CU_ASSERT_EQUAL(x.nr, runs);
			while (!smr_xidx_next(&x, at, &e)) {
				CU_ASSERT(map[e.off] &&
					  (e.off == 0 || !map[e.off - 1]));
				CU_ASSERT(e.off + e.len == N ||
					  !map[e.off + e.len]);
				at = e.off + e.len;
			}
			if (runs) {
				SMR_ASSERT_OK(smr_xidx_largest(&x, &e));
				CU_ASSERT_EQUAL(e.len, longest);
				SMR_ASSERT_OK(smr_xidx_best_fit(&x, 1, 0, &e));
				CU_ASSERT(e.len >= 1);
			}
			CU_ASSERT_EQUAL(smr_xidx_best_fit(&x, longest + 1, 0,
							  &e), -ENOENT);
		}
	}
	smr_xidx_destroy(&x);
	CU_ASSERT_EQUAL(x.nr, 0);
}

/*
 * The test links with --wrap=calloc: while calloc_fails is set, the
 * allocator's own calls of calloc (the extent index's nodes) fail.
 */
static bool calloc_fails;
void *__real_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size)
{
	return calloc_fails ? NULL : __real_calloc(n, size);
}

/* Every other block free, in an index of its own. */
static void xidx_every_other(struct smr_xidx *x, uint64_t first, uint64_t n)
{
	smr_xidx_init(x);
	for (uint64_t i = 0; i < n; i++)
		SMR_ASSERT_OK(smr_xidx_insert(x, first + 2 * i, 1));
}

/* Extents just taken out go back without memory, and a move never needs
 * any: an ENOMEM there would lose them or hold them twice. */
static void test_extent_index_nomem(void)
{
	struct smr_xidx x, y;
	uint64_t bytes, nr;

	xidx_every_other(&x, 0, 100);
	SMR_ASSERT_OK(smr_xidx_insert(&x, 1000, 50));
	bytes = x.bytes;
	nr = x.nr;
	/* Whole extents, a head, a tail and a middle (which splits). */
	for (uint64_t i = 0; i < 20; i++)
		SMR_ASSERT_OK(smr_xidx_remove(&x, 4 * i, 1));
	SMR_ASSERT_OK(smr_xidx_remove(&x, 1000, 5));
	SMR_ASSERT_OK(smr_xidx_remove(&x, 1045, 5));
	SMR_ASSERT_OK(smr_xidx_remove(&x, 1020, 5));
	calloc_fails = true;
	SMR_ASSERT_OK(smr_xidx_insert(&x, 1020, 5));
	for (uint64_t i = 0; i < 20; i++)
		SMR_ASSERT_OK(smr_xidx_insert(&x, 4 * i, 1));
	SMR_ASSERT_OK(smr_xidx_insert(&x, 1045, 5));
	SMR_ASSERT_OK(smr_xidx_insert(&x, 1000, 5));
	CU_ASSERT_EQUAL(x.bytes, bytes);
	CU_ASSERT_EQUAL(x.nr, nr);
	/* Into an index that holds the blocks between (all merge), and
	 * into one that holds none of their neighbours. */
	calloc_fails = false;
	xidx_every_other(&y, 1, 99);
	calloc_fails = true;
	SMR_ASSERT_OK(smr_xidx_move(&y, &x));
	CU_ASSERT_EQUAL(x.nr, 0);
	CU_ASSERT_EQUAL(y.bytes, bytes + 99);
	CU_ASSERT_EQUAL(y.nr, 2);
	SMR_ASSERT_OK(smr_xidx_move(&x, &y));
	CU_ASSERT_EQUAL(x.bytes, bytes + 99);
	CU_ASSERT_EQUAL(y.nr, 0);
	calloc_fails = false;
	smr_xidx_destroy(&y); /* its spare nodes */
	xidx_every_other(&y, 3000, 10);
	SMR_ASSERT_RC(smr_xidx_move(&x, &y), 0);
	CU_ASSERT_EQUAL(x.nr, 12);
	SMR_ASSERT_OK(smr_xidx_insert(&y, 0, 1));
	SMR_ASSERT_RC(smr_xidx_move(&x, &y), -EEXIST);
	CU_ASSERT_EQUAL(y.nr, 1); /* what overlaps stays where it was */
	smr_xidx_destroy(&x);
	smr_xidx_destroy(&y);
}

/* ------------------------------------------------------------------------
 * The reference model: extents the allocator handed out and the test still
 * holds (live), freed since the last commit (pending), freed before it
 * (committing). Nothing handed out may overlap any of them.
 * ------------------------------------------------------------------------ */

struct model {
	struct smr_extent *live;
	unsigned int nlive;
	struct smr_extent *dead; /* pending and committing */
	uint64_t *dead_gen;      /* commits seen since the free */
	unsigned int ndead;
	unsigned int cap;
	uint64_t live_bytes;
};

static void model_init(struct model *m, unsigned int cap)
{
	memset(m, 0, sizeof(*m));
	m->cap = cap;
	m->live = calloc(cap, sizeof(*m->live));
	m->dead = calloc(cap, sizeof(*m->dead));
	m->dead_gen = calloc(cap, sizeof(*m->dead_gen));
}

static void model_fini(struct model *m)
{
	free(m->live);
	free(m->dead);
	free(m->dead_gen);
}

static bool overlap(const struct smr_extent *a, const struct smr_extent *b)
{
	return a->off < b->off + b->len && b->off < a->off + a->len;
}

/* Count an overlap of @e with anything the model holds. */
static int model_overlaps(const struct model *m, const struct smr_extent *e)
{
	int n = 0;

	for (unsigned int i = 0; i < m->nlive; i++)
		n += overlap(e, &m->live[i]);
	for (unsigned int i = 0; i < m->ndead; i++)
		n += overlap(e, &m->dead[i]);
	return n;
}

static void model_add(struct model *m, const struct smr_extent *e)
{
	CU_ASSERT_FATAL(m->nlive < m->cap);
	m->live[m->nlive++] = *e;
	m->live_bytes += e->len;
}

/* Move live extent @i to the dead list. */
static struct smr_extent model_kill(struct model *m, unsigned int i)
{
	struct smr_extent e = m->live[i];

	m->live[i] = m->live[--m->nlive];
	m->live_bytes -= e.len;
	CU_ASSERT_FATAL(m->ndead < m->cap);
	m->dead[m->ndead] = e;
	m->dead_gen[m->ndead++] = 0;
	return e;
}

static void model_commit(struct model *m)
{
	for (unsigned int i = 0; i < m->ndead; i++)
		m->dead_gen[i]++;
}

/* committed(): what a commit saw freed is free now. */
static void model_committed(struct model *m)
{
	for (unsigned int i = 0; i < m->ndead;) {
		if (m->dead_gen[i]) {
			m->dead[i] = m->dead[--m->ndead];
			m->dead_gen[i] = m->dead_gen[m->ndead];
		} else {
			i++;
		}
	}
}

static uint64_t model_zone_live(const struct model *m, uint64_t zs,
				uint64_t ze)
{
	uint64_t sum = 0;

	for (unsigned int i = 0; i < m->nlive; i++) {
		uint64_t s = SMR_MAX(zs, m->live[i].off);
		uint64_t e = SMR_MIN(ze, m->live[i].off + m->live[i].len);

		if (s < e)
			sum += e - s;
	}
	return sum;
}

/* ------------------------------------------------------------------------
 * The random workload, for any module
 * ------------------------------------------------------------------------ */

struct run {
	const struct smr_alloc_ops *ops;
	struct smr_dev *dev;
	const char *path;
	struct smr_alloc *a;
	struct model m;
	struct smr_alloc_ref ref;
	uint64_t data_start;
	uint64_t gen;
	uint64_t seed;
	uint8_t *buf;
	uint32_t max_active;
	unsigned int enospc, cleaned, reopened, failures;
};

static void check_space(struct run *r)
{
	struct smr_space sp;
	uint64_t state = r->ref.len, used, size;

	smr_alloc_space(r->a, &sp);
	if (sp.capacity != sp.used + sp.free + sp.reclaimable + sp.reserved ||
	    sp.used != r->m.live_bytes + state) {
		if (r->failures++ < 5)
			fprintf(stderr, "%s: space cap %" PRIu64 " used %" PRIu64
				" free %" PRIu64 " recl %" PRIu64 " res %" PRIu64
				"; model live %" PRIu64 " state %" PRIu64 "\n",
				r->ops->name, sp.capacity, sp.used, sp.free,
				sp.reclaimable, sp.reserved, r->m.live_bytes,
				state);
	}
	CU_ASSERT_EQUAL(sp.capacity,
			sp.used + sp.free + sp.reclaimable + sp.reserved);
	CU_ASSERT_EQUAL(sp.used, r->m.live_bytes + state);
	/* The constant-time figures every write asks for are the same. */
	smr_alloc_usage(r->a, 0, &used, &size);
	CU_ASSERT_EQUAL(used, sp.used);
	CU_ASSERT_EQUAL(size, sp.capacity - SMR_MIN(sp.overhead, sp.capacity));
	if (r->max_active)
		CU_ASSERT(smr_dev_nr_active(r->dev) <= r->max_active);
}

/* Per-zone live bytes: the model's, plus at most the state's blocks. */
static void check_zone_live(struct run *r)
{
	const struct smr_dev_info *info = smr_dev_info(r->dev);
	uint64_t total = 0;

	if (!info->zoned)
		return;
	for (uint32_t z = 0; z < info->nr_zones; z++) {
		uint64_t zs = smr_dev_zone_start(r->dev, z);

		if (zs < r->data_start) {
			CU_ASSERT_EQUAL(smr_alloc_zone_live(r->a, z), -EINVAL);
			continue;
		}
		{
		uint64_t want = model_zone_live(&r->m, zs,
						zs + smr_dev_zone_len(r->dev, z));
		int64_t live = smr_alloc_zone_live(r->a, z);

		CU_ASSERT(live >= (int64_t)want &&
			  live <= (int64_t)(want + r->ref.len));
		total += (uint64_t)live;
		}
	}
	CU_ASSERT_EQUAL(total, r->m.live_bytes + r->ref.len);
}

/* Write @e where the allocator put it; on a zoned device it must be
 * exactly at the write pointer of its zone. */
static void write_ext(struct run *r, const struct smr_extent *e)
{
	const struct smr_dev_info *info = smr_dev_info(r->dev);
	uint64_t at = 0;

	while (at < e->len) {
		uint64_t off = e->off + at, n = e->len - at;

		CU_ASSERT(off >= r->data_start);
		if (info->zoned) {
			uint32_t z = smr_dev_zone_no(r->dev, off);
			uint64_t zend = smr_dev_zone_start(r->dev, z) +
					smr_dev_zone_cap(r->dev, z);

			if (smr_dev_zone_type(r->dev, z) != SMR_ZONE_TYPE_CNV)
				CU_ASSERT_EQUAL(smr_dev_zone_wp(r->dev, z),
						off);
			/* No extent crosses a zone's writable end. */
			CU_ASSERT(e->off + e->len <= zend);
			n = SMR_MIN(n, zend - off);
		}
		n = SMR_MIN(n, 64 * BS);
		memset(r->buf, (int)(off / BS), n);
		SMR_ASSERT_OK(smr_dev_write(r->dev, r->buf, n, off));
		at += n;
	}
}

static int do_alloc(struct run *r, enum smr_stream s, uint64_t len,
		    const struct smr_alloc_hint *hint)
{
	struct smr_extent ext[4];
	int n = smr_alloc_extent(r->a, len, hint, s, ext, 4);

	if (n < 0)
		return n;
	CU_ASSERT(n >= 1 && n <= 4);
	for (int i = 0; i < n; i++) {
		CU_ASSERT(ext[i].len > 0 && ext[i].len % BS == 0);
		CU_ASSERT_EQUAL(model_overlaps(&r->m, &ext[i]), 0);
		write_ext(r, &ext[i]);
		model_add(&r->m, &ext[i]);
	}
	return n;
}

static void do_commit(struct run *r, bool durable)
{
	SMR_ASSERT_OK(smr_alloc_commit(r->a, ++r->gen, &r->ref));
	CU_ASSERT_EQUAL(r->ref.gen, r->gen);
	model_commit(&r->m);
	if (durable) {
		SMR_ASSERT_OK(smr_dev_flush(r->dev));
		SMR_ASSERT_OK(smr_alloc_committed(r->a));
		model_committed(&r->m);
	}
}

/* Commit, close, reopen from the ref: the same space and zone usage. */
static void do_reopen(struct run *r)
{
	const struct smr_dev_info *info = smr_dev_info(r->dev);
	struct smr_space before, after;
	int64_t *zl = calloc(info->nr_zones + 1, sizeof(*zl));

	do_commit(r, true);
	smr_alloc_space(r->a, &before);
	for (uint32_t z = 0; z < info->nr_zones; z++)
		zl[z] = smr_alloc_zone_live(r->a, z);
	smr_alloc_close(r->a);
	r->a = NULL;
	SMR_ASSERT_OK(smr_dev_close(r->dev));
	SMR_ASSERT_OK(smr_dev_open(r->path, NULL, &r->dev));
	SMR_ASSERT_OK(smr_alloc_open(r->ops, r->dev, r->data_start, uuid,
				     &r->ref, &r->a));
	CU_ASSERT_FATAL(r->a != NULL);
	smr_alloc_space(r->a, &after);
	CU_ASSERT(!memcmp(&before, &after, sizeof(before)));
	info = smr_dev_info(r->dev);
	for (uint32_t z = 0; z < info->nr_zones; z++)
		CU_ASSERT_EQUAL(smr_alloc_zone_live(r->a, z), zl[z]);
	free(zl);
	r->reopened++;
}

/* Move the live data out of a zone the allocator picks, as the cleaner
 * would: relocate, free, commit. -ENOENT if nothing is worth cleaning. */
static int do_clean(struct run *r, enum smr_gc_policy pol)
{
	uint32_t z;
	uint64_t zs, ze;
	int rc = smr_alloc_gc_pick(r->a, pol, &z);

	if (rc)
		return rc;
	zs = smr_dev_zone_start(r->dev, z);
	ze = zs + smr_dev_zone_len(r->dev, z);
	CU_ASSERT(smr_alloc_zone_live(r->a, z) > 0);
	for (unsigned int i = 0; i < r->m.nlive;) {
		struct smr_extent e = r->m.live[i];

		if (e.off >= ze || e.off + e.len <= zs) {
			i++;
			continue;
		}
		rc = do_alloc(r, SMR_STREAM_RELOC, e.len, NULL);
		if (rc < 0)
			return rc;
		model_kill(&r->m, i);
		SMR_ASSERT_OK(smr_alloc_free(r->a, e.off, e.len));
	}
	do_commit(r, true);
	r->cleaned++;
	return 0;
}

static void random_run(struct run *r, unsigned int steps)
{
	bool zoned = smr_dev_info(r->dev)->zoned;

	r->buf = smr_dev_buf_alloc(64 * BS);
	model_init(&r->m, 100000);
	for (unsigned int step = 0; step < steps; step++) {
		uint64_t dice = smr_test_rand(&r->seed) % 100;
		/* Data streams mostly, metadata now and then; relocation is
		 * what do_clean() writes. */
		enum smr_stream s = (enum smr_stream)(1 + smr_test_rand(&r->seed) %
							  2);
		uint64_t len = BS * (1 + smr_test_rand(&r->seed) % 24);
		struct smr_alloc_hint hint = { 0 };
		int rc;

		if (smr_test_rand(&r->seed) % 16 == 0)
			s = SMR_STREAM_META;
		if (zoned) {
			/* Clean before the data streams run dry, as the
			 * cleaner does: below two zones of free space. */
			struct smr_space sp;

			smr_alloc_space(r->a, &sp);
			if (sp.free < 2 * ZSZ &&
			    !do_clean(r, step & 1 ? SMR_GC_GREEDY :
					 SMR_GC_COST_BENEFIT))
				continue;
		}
		if (dice < 55) {
			if (smr_test_rand(&r->seed) % 4 == 0 && r->m.nlive) {
				struct smr_extent *l = &r->m.live[
					smr_test_rand(&r->seed) % r->m.nlive];

				hint.near = l->off + l->len;
				hint.contiguous = smr_test_rand(&r->seed) & 1;
			}
			rc = do_alloc(r, s, len, &hint);
			if (rc == -ENOSPC) {
				r->enospc++;
				/* Make room: clean (zoned) or free half. */
				if (zoned &&
				    do_clean(r, step & 1 ? SMR_GC_GREEDY :
						SMR_GC_COST_BENEFIT) == 0)
					continue;
				for (unsigned int k = r->m.nlive / 2; k--;) {
					struct smr_extent e = model_kill(
						&r->m, (unsigned int)(smr_test_rand(
							&r->seed) % r->m.nlive));

					SMR_ASSERT_OK(smr_alloc_free(
						r->a, e.off, e.len));
				}
				do_commit(r, true);
			} else {
				CU_ASSERT(rc > 0);
			}
		} else if (dice < 90 && r->m.nlive) {
			unsigned int i = (unsigned int)(smr_test_rand(&r->seed) %
							r->m.nlive);
			struct smr_extent e = model_kill(&r->m, i);

			SMR_ASSERT_OK(smr_alloc_free(r->a, e.off, e.len));
			/* A second free of the same range is refused. */
			if (dice % 8 == 0 && !zoned)
				SMR_ASSERT_RC(smr_alloc_free(r->a, e.off, e.len),
					      -EINVAL);
		} else if (dice < 97) {
			do_commit(r, dice % 2);
		} else if (dice < 98 && zoned) {
			do_clean(r, SMR_GC_COST_BENEFIT);
		} else {
			do_reopen(r);
		}
		check_space(r);
		if (step % 64 == 0)
			check_zone_live(r);
	}
	do_reopen(r);
	check_space(r);
	check_zone_live(r);
	model_fini(&r->m);
	smr_dev_buf_free(r->buf);
}

static void run_module(const struct smr_alloc_ops *ops, struct smr_dev *dev,
		       const char *path, uint32_t max_active,
		       uint64_t data_start, uint64_t seed)
{
	struct run r = {
		.ops = ops,
		.dev = dev,
		.path = path,
		.seed = seed,
		.data_start = data_start,
		.max_active = max_active,
	};

	SMR_ASSERT_OK(smr_alloc_open(ops, dev, data_start, uuid, NULL, &r.a));
	CU_ASSERT_FATAL(r.a != NULL);
	random_run(&r, 4000);
	if (r.failures)
		fprintf(stderr, "%s (max active %u): %u failures\n", ops->name,
			max_active, r.failures);
	/* The run is long enough to fill the device and come back: by
	 * running out (extent modules) or by cleaning in time (zoned). */
	CU_ASSERT(r.reopened > 1);
	if (!smr_dev_info(r.dev)->zoned) {
		CU_ASSERT(r.enospc > 0);
	} else {
		struct smr_alloc_stats st;

		CU_ASSERT(r.cleaned > 0);
		smr_alloc_stats(r.a, &st);
		CU_ASSERT(st.zones_reset > 0);
	}
	smr_alloc_close(r.a);
	smr_dev_close(r.dev);
}

static void test_zoned_random(void)
{
	static const uint32_t limits[] = { 0, 6, 4, 3, 2, 1 };

	for (unsigned int i = 0; i < SMR_ARRAY_SIZE(limits); i++) {
		char path[512];
		struct smr_dev *dev = zloop_dev("alloc-zr", limits[i],
						limits[i], path, sizeof(path));

		run_module(&smr_zoned_ops, dev, path, limits[i], 0, 1000 + i);
	}
}

/* Zone capacity below zone size, conventional zones managed or left to
 * the caller below data_start, 512-byte blocks. */
static void test_zoned_geometry(void)
{
	static const struct {
		uint64_t cap;
		uint32_t nr_cnv;
		uint32_t skip; /* zones below data_start */
		uint32_t limit;
		uint32_t bs;
	} cases[] = {
		{ ZSZ * 3 / 4, 0, 0, 4, BS },
		{ ZSZ, 2, 0, 5, BS },
		{ ZSZ / 2, 2, 2, 4, BS },
		{ ZSZ, 1, 2, 5, BS }, /* one sequential zone below: one less */
		{ ZSZ, 0, 0, 6, 512 },
	};

	for (unsigned int i = 0; i < SMR_ARRAY_SIZE(cases); i++) {
		struct smr_zloop_params p = {
			.capacity = NZONES * ZSZ,
			.zone_size = ZSZ,
			.zone_cap = cases[i].cap,
			.nr_cnv = cases[i].nr_cnv,
			.max_open = cases[i].limit,
			.max_active = cases[i].limit,
			.block_size = cases[i].bs,
		};
		char path[512];
		struct smr_dev *dev = zloop_dev_p("alloc-zg", &p, path,
						  sizeof(path));

		run_module(&smr_zoned_ops, dev, path, cases[i].limit,
			   cases[i].skip * ZSZ, 2000 + i);
	}
}

/* A write that fails at the device: the zone is given up, not reused. */
static void test_zoned_write_failed(void)
{
	char path[512];
	struct smr_dev *dev = zloop_dev("alloc-zw", 0, 4, path, sizeof(path));
	struct smr_alloc *a = NULL;
	struct smr_extent e[4];
	struct smr_space sp;
	uint8_t *buf = smr_dev_buf_alloc(16 * BS);
	uint32_t z;
	int n;

	SMR_ASSERT_OK(smr_alloc_open(&smr_zoned_ops, dev, 0, uuid, NULL, &a));
	CU_ASSERT_FATAL(a != NULL);
	CU_ASSERT_EQUAL(smr_alloc_write(a, buf, 4 * BS, NULL, SMR_STREAM_HOT,
					e, 4), 1);
	z = smr_dev_zone_no(dev, e[0].off);
	/* Someone writes behind the allocator's back: its next extent is no
	 * longer at the write pointer, and the device refuses it. */
	SMR_ASSERT_OK(smr_dev_write(dev, buf, BS, e[0].off + e[0].len));
	n = smr_alloc_write(a, buf, 4 * BS, NULL, SMR_STREAM_HOT, e, 4);
	CU_ASSERT(n == -EIO || n == -EREMOTEIO);
	/* The zone was finished and keeps only the first 4 live blocks. */
	CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, z), SMR_ZONE_COND_FULL);
	CU_ASSERT_EQUAL(smr_alloc_zone_live(a, z), 4 * BS);
	smr_alloc_space(a, &sp);
	CU_ASSERT_EQUAL(sp.used, 4 * BS);
	CU_ASSERT_EQUAL(sp.capacity,
			sp.used + sp.free + sp.reclaimable + sp.reserved);
	/* The stream goes on in another zone. */
	CU_ASSERT_EQUAL(smr_alloc_write(a, buf, 4 * BS, NULL, SMR_STREAM_HOT,
					e, 4), 1);
	CU_ASSERT_NOT_EQUAL(smr_dev_zone_no(dev, e[0].off), z);
	CU_ASSERT(smr_dev_nr_active(dev) <= 4);
	smr_dev_buf_free(buf);
	smr_alloc_close(a);
	smr_dev_close(dev);
}

/* A conventional zone has no write pointer to say it was reset: the state
 * written by the commit whose completion resets it records it free, so a
 * reopen finds it free, not dead until one more commit. */
static void test_zoned_cnv_reset(void)
{
	char path[512];
	struct smr_dev *dev = cnv_dev("alloc-cr", path, sizeof(path));
	struct smr_alloc *a = NULL;
	struct smr_alloc_ref ref;
	struct smr_space before, after;
	struct smr_extent e[4];
	uint8_t *buf = smr_dev_buf_alloc(ZSZ);
	uint32_t z;

	SMR_ASSERT_OK(smr_alloc_open(&smr_zoned_ops, dev, 0, uuid, NULL, &a));
	CU_ASSERT_FATAL(a != NULL);
	fill_seq_zone(a, dev, buf);
	CU_ASSERT_EQUAL_FATAL(smr_alloc_write(a, buf, ZSZ, NULL,
					      SMR_STREAM_HOT, e, 4), 1);
	z = smr_dev_zone_no(dev, e[0].off);
	CU_ASSERT_EQUAL_FATAL(smr_dev_zone_type(dev, z), SMR_ZONE_TYPE_CNV);
	SMR_ASSERT_OK(smr_alloc_free(a, e[0].off, e[0].len));
	/* Dead as of commit 1, reset once commit 2 is durable. */
	for (uint64_t gen = 1; gen <= 2; gen++) {
		SMR_ASSERT_OK(smr_alloc_commit(a, gen, &ref));
		SMR_ASSERT_OK(smr_dev_flush(dev));
		SMR_ASSERT_OK(smr_alloc_committed(a));
	}
	smr_alloc_space(a, &before);
	smr_alloc_close(a);
	a = NULL;
	SMR_ASSERT_OK(smr_alloc_open(&smr_zoned_ops, dev, 0, uuid, &ref, &a));
	CU_ASSERT_FATAL(a != NULL);
	smr_alloc_space(a, &after);
	if (after.free != before.free)
		fprintf(stderr, "free %llu before the reopen, %llu after\n",
			(unsigned long long)before.free,
			(unsigned long long)after.free);
	CU_ASSERT(!memcmp(&before, &after, sizeof(before)));
	smr_dev_buf_free(buf);
	smr_alloc_close(a);
	smr_dev_close(dev);
}

/* An fsync log replay claims what was written after the checkpoint. When
 * that fills the conventional zone a stream had open, the zone is full:
 * the next allocation goes elsewhere and is never empty. */
static void test_zoned_cnv_claim(void)
{
	char path[512];
	struct smr_dev *dev = cnv_dev("alloc-cc", path, sizeof(path));
	struct smr_alloc *a = NULL;
	struct smr_alloc_ref ref;
	struct smr_extent e[4];
	uint8_t *buf = smr_dev_buf_alloc(ZSZ);
	uint32_t z;

	SMR_ASSERT_OK(smr_alloc_open(&smr_zoned_ops, dev, 0, uuid, NULL, &a));
	CU_ASSERT_FATAL(a != NULL);
	fill_seq_zone(a, dev, buf);
	CU_ASSERT_EQUAL_FATAL(smr_alloc_write(a, buf, ZSZ / 2, NULL,
					      SMR_STREAM_HOT, e, 4), 1);
	z = smr_dev_zone_no(dev, e[0].off);
	CU_ASSERT_EQUAL_FATAL(smr_dev_zone_type(dev, z), SMR_ZONE_TYPE_CNV);
	SMR_ASSERT_OK(smr_alloc_settle(a, e[0].off, e[0].len));
	SMR_ASSERT_OK(smr_alloc_commit(a, 1, &ref));
	SMR_ASSERT_OK(smr_dev_flush(dev));
	SMR_ASSERT_OK(smr_alloc_committed(a));
	/* The rest of the zone, written after the checkpoint. */
	CU_ASSERT_EQUAL_FATAL(smr_alloc_write(a, buf, ZSZ / 2, NULL,
					      SMR_STREAM_HOT, e + 1, 3), 1);
	CU_ASSERT_EQUAL(e[1].off, e[0].off + ZSZ / 2);
	smr_alloc_close(a);
	a = NULL;
	SMR_ASSERT_OK(smr_alloc_open(&smr_zoned_ops, dev, 0, uuid, &ref, &a));
	CU_ASSERT_FATAL(a != NULL);
	SMR_ASSERT_OK(smr_alloc_claim(a, e[1].off, e[1].len));
	CU_ASSERT_EQUAL_FATAL(smr_alloc_write(a, buf, BS, NULL,
					      SMR_STREAM_HOT, e + 2, 2), 1);
	CU_ASSERT_EQUAL(e[2].len, BS);
	CU_ASSERT_NOT_EQUAL(smr_dev_zone_no(dev, e[2].off), z);
	smr_dev_buf_free(buf);
	smr_alloc_close(a);
	smr_dev_close(dev);
}

/* Commit @gen and return the unsettled set it saw, sorted, in @x. */
static size_t commit_unsettled(struct smr_alloc *a, uint64_t gen,
			       struct smr_extent *x, size_t max)
{
	struct smr_alloc_ref ref;
	size_t n;

	SMR_ASSERT_OK(smr_alloc_commit(a, gen, &ref));
	SMR_ASSERT_OK(smr_alloc_committed(a));
	n = smr_alloc_unsettled_at_commit(a, x, max);
	for (size_t i = 1; i < SMR_MIN(n, max); i++)
		for (size_t j = i; j && x[j - 1].off > x[j].off; j--) {
			struct smr_extent t = x[j];

			x[j] = x[j - 1];
			x[j - 1] = t;
		}
	return n;
}

/* Written data is unsettled until settled or freed, in whole or in part,
 * and a commit reports the set as it was then. */
static void test_unsettled(void)
{
	char path[512];
	struct smr_dev *dev = zloop_dev("alloc-us", 0, 4, path, sizeof(path));
	struct smr_alloc *a = NULL;
	struct smr_extent e0, e1, x[8];
	uint8_t *buf = smr_dev_buf_alloc(8 * BS);

	SMR_ASSERT_OK(smr_alloc_open(&smr_zoned_ops, dev, 0, uuid, NULL, &a));
	CU_ASSERT_FATAL(a != NULL);
	CU_ASSERT_EQUAL(commit_unsettled(a, 1, x, 8), 0);
	CU_ASSERT_EQUAL(smr_alloc_write(a, buf, 8 * BS, NULL, SMR_STREAM_HOT,
					&e0, 1), 1);
	CU_ASSERT_EQUAL(smr_alloc_write(a, buf, 4 * BS, NULL, SMR_STREAM_COLD,
					&e1, 1), 1);
	CU_ASSERT_EQUAL_FATAL(commit_unsettled(a, 2, x, 8), 2);
	CU_ASSERT(x[0].len + x[1].len == 12 * BS);
	/* Settling the middle of one splits it; the other goes whole. */
	SMR_ASSERT_OK(smr_alloc_settle(a, e0.off + 2 * BS, 3 * BS));
	SMR_ASSERT_OK(smr_alloc_settle(a, e1.off, e1.len));
	/* Settled twice, or never written: no error, no change. */
	SMR_ASSERT_OK(smr_alloc_settle(a, e1.off, e1.len));
	CU_ASSERT_EQUAL_FATAL(commit_unsettled(a, 3, x, 8), 2);
	CU_ASSERT_EQUAL(x[0].off, e0.off);
	CU_ASSERT_EQUAL(x[0].len, 2 * BS);
	CU_ASSERT_EQUAL(x[1].off, e0.off + 5 * BS);
	CU_ASSERT_EQUAL(x[1].len, 3 * BS);
	/* The set as the last commit saw it, whatever happens after. */
	SMR_ASSERT_OK(smr_alloc_free(a, e0.off, 2 * BS));
	CU_ASSERT_EQUAL(smr_alloc_unsettled_at_commit(a, x, 8), 2);
	CU_ASSERT_EQUAL_FATAL(commit_unsettled(a, 4, x, 8), 1);
	CU_ASSERT_EQUAL(x[0].off, e0.off + 5 * BS);
	/* A range over settled and unsettled parts alike. */
	SMR_ASSERT_OK(smr_alloc_settle(a, e0.off, e0.len));
	CU_ASSERT_EQUAL(commit_unsettled(a, 5, x, 8), 0);
	smr_dev_buf_free(buf);
	smr_alloc_close(a);
	smr_dev_close(dev);
}

static void test_rot_random(void)
{
	char path[512];
	struct smr_dev *dev = file_dev("alloc-rr", 16 * SMR_MIB, path,
				       sizeof(path));

	run_module(&smr_rot_ops, dev, path, 0, 0, 7);
}

static void test_flash_random(void)
{
	char path[512];
	struct smr_dev *dev = file_dev("alloc-fr", 16 * SMR_MIB, path,
				       sizeof(path));

	run_module(&smr_flash_ops, dev, path, 0, 0, 11);
}

/* ------------------------------------------------------------------------
 * Targeted cases
 * ------------------------------------------------------------------------ */

/* Streams: one zone each with 4 active zones or more, shared below. */
static void test_zoned_streams(void)
{
	static const struct {
		uint32_t limit;
		uint8_t share[SMR_STREAM_NR];
	} cases[] = {
		{ 0, { 0, 1, 2, 3 } }, { 4, { 0, 1, 2, 3 } },
		{ 3, { 0, 1, 2, 2 } }, { 2, { 0, 1, 1, 1 } },
		{ 1, { 0, 0, 0, 0 } },
	};

	for (unsigned int c = 0; c < SMR_ARRAY_SIZE(cases); c++) {
		char path[512];
		struct smr_dev *dev = zloop_dev("alloc-zs", cases[c].limit,
						cases[c].limit, path,
						sizeof(path));
		struct smr_alloc *a = NULL;
		uint32_t zone[SMR_STREAM_NR];
		uint8_t *buf = smr_dev_buf_alloc(BS);

		SMR_ASSERT_OK(smr_alloc_open(&smr_zoned_ops, dev, 0, uuid, NULL,
					     &a));
		CU_ASSERT_FATAL(a != NULL);
		CU_ASSERT(!memcmp(a->stream_share, cases[c].share,
				  SMR_STREAM_NR));
		for (int s = 0; s < SMR_STREAM_NR; s++) {
			struct smr_extent e;

			CU_ASSERT_EQUAL(smr_alloc_write(a, buf, BS, NULL,
							(enum smr_stream)s,
							&e, 1), 1);
			zone[s] = smr_dev_zone_no(dev, e.off);
			CU_ASSERT_PTR_EQUAL(smr_alloc_stream_lock(a, s),
				&a->stream_lock[cases[c].share[s]]);
		}
		for (int s = 0; s < SMR_STREAM_NR; s++)
			for (int t = 0; t < SMR_STREAM_NR; t++)
				CU_ASSERT_EQUAL(zone[s] == zone[t],
						cases[c].share[s] ==
							cases[c].share[t]);
		if (cases[c].limit)
			CU_ASSERT(smr_dev_nr_active(dev) <= cases[c].limit);
		smr_dev_buf_free(buf);
		smr_alloc_close(a);
		smr_dev_close(dev);
	}
}

/* Data streams stop at the reserve; metadata can still go on. */
static void test_zoned_enospc(void)
{
	char path[512];
	struct smr_dev *dev = zloop_dev("alloc-ze", 0, 6, path, sizeof(path));
	struct smr_alloc *a = NULL;
	struct smr_extent e[4];
	struct smr_space sp;
	uint64_t got = 0;
	int n;

	SMR_ASSERT_OK(smr_alloc_open(&smr_zoned_ops, dev, 0, uuid, NULL, &a));
	CU_ASSERT_FATAL(a != NULL);
	smr_alloc_space(a, &sp);
	CU_ASSERT_EQUAL(sp.capacity, NZONES * ZSZ);
	CU_ASSERT_EQUAL(sp.reserved, 3 * ZSZ);
	CU_ASSERT_EQUAL(sp.free, (NZONES - 3) * ZSZ);
	while ((n = smr_alloc_extent(a, 96 * BS, NULL, SMR_STREAM_HOT, e, 4)) >
	       0)
		for (int i = 0; i < n; i++)
			got += e[i].len;
	CU_ASSERT_EQUAL(n, -ENOSPC);
	/* Not before the reserve: every zone but the reserve was filled. */
	CU_ASSERT_EQUAL(got, (NZONES - 3) * ZSZ);
	CU_ASSERT_EQUAL(smr_alloc_extent(a, BS, NULL, SMR_STREAM_COLD, e, 4),
			-ENOSPC);
	smr_alloc_space(a, &sp);
	CU_ASSERT_EQUAL(sp.free, 0);
	CU_ASSERT_EQUAL(sp.reserved, 3 * ZSZ);
	CU_ASSERT_EQUAL(sp.used, got);
	/* The reserve is for metadata and the cleaner. */
	CU_ASSERT_EQUAL(smr_alloc_extent(a, BS, NULL, SMR_STREAM_META, e, 4),
			1);
	CU_ASSERT_EQUAL(smr_alloc_extent(a, BS, NULL, SMR_STREAM_RELOC, e, 4),
			1);
	/* What they left in their zones is not free for data either. */
	smr_alloc_space(a, &sp);
	CU_ASSERT_EQUAL(sp.free, 0);
	CU_ASSERT_EQUAL(sp.reserved, 1 * ZSZ + 2 * (ZSZ - BS));
	/* Relocation leaves the last free zone to the commit: it fills its
	 * zone and stops. */
	CU_ASSERT_EQUAL(smr_alloc_extent(a, ZSZ, NULL, SMR_STREAM_RELOC, e, 4),
			1);
	CU_ASSERT_EQUAL(e[0].len, ZSZ - BS);
	CU_ASSERT_EQUAL(smr_alloc_extent(a, BS, NULL, SMR_STREAM_RELOC, e, 4),
			-ENOSPC);
	/* The commit's nodes may take it, short of room for the allocator's
	 * state at its end. */
	n = smr_alloc_extent(a, 2 * ZSZ, NULL, SMR_STREAM_META, e, 4);
	CU_ASSERT_EQUAL_FATAL(n, 2);
	CU_ASSERT_EQUAL(e[0].len, ZSZ - BS);
	got = e[1].len;
	CU_ASSERT(got < ZSZ && got >= ZSZ / 2);
	CU_ASSERT_EQUAL(smr_alloc_extent(a, ZSZ, NULL, SMR_STREAM_META, e, 4),
			-ENOSPC);
	smr_alloc_space(a, &sp);
	CU_ASSERT_EQUAL(sp.reserved, ZSZ - got);
	smr_alloc_close(a);
	smr_dev_close(dev);
}

/* A data stream that cannot open a zone goes on in the other data
 * stream's open zone: what statfs counts free is what writers get. */
static void test_zoned_data_fallback(void)
{
	char path[512];
	struct smr_dev *dev = zloop_dev("alloc-zf", 0, 6, path, sizeof(path));
	struct smr_alloc *a = NULL;
	uint8_t *buf = smr_dev_buf_alloc(64 * BS);
	struct smr_extent e[4];
	struct smr_space sp;
	uint64_t got = BS;
	uint32_t cold_zone;
	bool in_cold = false;
	int n;

	SMR_ASSERT_OK(smr_alloc_open(&smr_zoned_ops, dev, 0, uuid, NULL, &a));
	CU_ASSERT_FATAL(a != NULL && buf != NULL);
	/* The cold stream opens a zone and writes one block of it. */
	CU_ASSERT_EQUAL(smr_alloc_write(a, buf, BS, NULL, SMR_STREAM_COLD, e,
					4), 1);
	cold_zone = smr_dev_zone_no(dev, e[0].off);
	while ((n = smr_alloc_write(a, buf, 64 * BS, NULL, SMR_STREAM_HOT, e,
				    4)) > 0) {
		for (int i = 0; i < n; i++) {
			got += e[i].len;
			in_cold |= smr_dev_zone_no(dev, e[i].off) == cold_zone;
		}
	}
	CU_ASSERT_EQUAL(n, -ENOSPC);
	/* Everything but the reserve, the cold zone's tail included. */
	CU_ASSERT(in_cold);
	CU_ASSERT_EQUAL(got, (NZONES - 3) * ZSZ);
	smr_alloc_space(a, &sp);
	CU_ASSERT_EQUAL(sp.free, 0);
	CU_ASSERT_EQUAL(sp.reserved, 3 * ZSZ);
	smr_dev_buf_free(buf);
	smr_alloc_close(a);
	smr_dev_close(dev);
}

static void xmod_enospc(const struct smr_alloc_ops *ops, const char *tag)
{
	char path[512];
	struct smr_dev *dev = file_dev(tag, 8 * SMR_MIB, path, sizeof(path));
	struct smr_alloc *a = NULL;
	struct smr_extent e[4], first = { 0, 0 };
	struct smr_space sp, sp0;
	uint64_t got = 0;
	int n;

	SMR_ASSERT_OK(smr_alloc_open(ops, dev, 0, uuid, NULL, &a));
	CU_ASSERT_FATAL(a != NULL);
	smr_alloc_space(a, &sp0);
	CU_ASSERT(sp0.reserved > 0);
	while ((n = smr_alloc_extent(a, 40 * BS, NULL, SMR_STREAM_COLD, e,
				     4)) > 0) {
		if (!first.len)
			first = e[0];
		for (int i = 0; i < n; i++)
			got += e[i].len;
	}
	CU_ASSERT_EQUAL(n, -ENOSPC);
	CU_ASSERT_EQUAL(got, sp0.free);
	smr_alloc_space(a, &sp);
	CU_ASSERT_EQUAL(sp.free, 0);
	CU_ASSERT_EQUAL(sp.reserved, sp0.reserved);
	/* A freed extent is not handed out again before the commit after
	 * the one that freed it is durable. */
	SMR_ASSERT_OK(smr_alloc_free(a, first.off, first.len));
	CU_ASSERT_EQUAL(smr_alloc_extent(a, BS, NULL, SMR_STREAM_HOT, e, 4),
			-ENOSPC);
	smr_alloc_space(a, &sp);
	CU_ASSERT_EQUAL(sp.reclaimable, first.len);
	/* Ranges outside the device or misaligned are refused. */
	SMR_ASSERT_RC(smr_alloc_free(a, 8 * SMR_MIB, BS), -EINVAL);
	SMR_ASSERT_RC(smr_alloc_free(a, 16 * SMR_MIB, BS), -EINVAL);
	SMR_ASSERT_RC(smr_alloc_free(a, first.off + 1, BS), -EINVAL);
	SMR_ASSERT_RC(smr_alloc_free(a, first.off, 0), -EINVAL);
	CU_ASSERT_EQUAL(sp.capacity,
			sp.used + sp.free + sp.reclaimable + sp.reserved);
	/* The commit's state comes out of the reserve. */
	{
		struct smr_alloc_ref ref;

		SMR_ASSERT_OK(smr_alloc_commit(a, 1, &ref));
		CU_ASSERT_EQUAL(smr_alloc_extent(a, BS, NULL, SMR_STREAM_HOT,
						 e, 4), -ENOSPC);
		SMR_ASSERT_OK(smr_alloc_committed(a));
		/* The checkpoint before it may still use the extent. */
		CU_ASSERT_EQUAL(smr_alloc_extent(a, BS, NULL, SMR_STREAM_HOT,
						 e, 4), -ENOSPC);
		smr_alloc_space(a, &sp);
		CU_ASSERT_EQUAL(sp.capacity, sp.used + sp.free +
					     sp.reclaimable + sp.reserved);
		SMR_ASSERT_OK(smr_alloc_commit(a, 2, &ref));
		SMR_ASSERT_OK(smr_alloc_committed(a));
	}
	/* Now it is: what data can have again lies in the freed extent. */
	{
		bool reused = false;

		while (smr_alloc_extent(a, BS, NULL, SMR_STREAM_HOT, e, 1) > 0)
			reused |= e[0].off >= first.off &&
				  e[0].off < first.off + first.len;
		CU_ASSERT(reused);
	}
	smr_alloc_close(a);
	smr_dev_close(dev);
}

static void test_xmod_enospc(void)
{
	xmod_enospc(&smr_rot_ops, "alloc-re");
	xmod_enospc(&smr_flash_ops, "alloc-fe");
}

/*
 * Data freed a block at a time cuts the free space into holes shorter than
 * a node. Data must stop while the reserve is still there in whole nodes,
 * but not before it has the holes, and metadata (hint->unit) must get only
 * whole nodes, the reserve's worth.
 */
static void xmod_meta_unit(const struct smr_alloc_ops *ops, const char *tag)
{
	const uint32_t unit = 16384;
	char path[512];
	struct smr_dev *dev = file_dev(tag, 8 * SMR_MIB, path, sizeof(path));
	struct smr_alloc *a = NULL;
	struct smr_alloc_hint meta = { .unit = unit };
	struct smr_alloc_ref ref;
	struct smr_extent e[16];
	struct smr_alloc_stats st;
	struct smr_space sp0, sp1, sp2;
	uint64_t *blk, nb = 0, got = 0;
	int n;

	blk = calloc(8 * SMR_MIB / BS, sizeof(*blk));
	CU_ASSERT_FATAL(blk != NULL);
	SMR_ASSERT_OK(smr_alloc_open(ops, dev, 0, uuid, NULL, &a));
	CU_ASSERT_FATAL(a != NULL);
	smr_alloc_set_meta_unit(a, unit);
	smr_alloc_space(a, &sp0);
	while (smr_alloc_extent(a, BS, NULL, SMR_STREAM_COLD, e, 1) == 1)
		blk[nb++] = e[0].off;
	CU_ASSERT(nb > 1000);
	for (uint64_t i = 0; i < nb; i += 2)
		SMR_ASSERT_OK(smr_alloc_free(a, blk[i], BS));
	for (uint64_t g = 1; g <= 2; g++) {
		SMR_ASSERT_OK(smr_alloc_commit(a, g, &ref));
		SMR_ASSERT_OK(smr_alloc_committed(a));
	}
	/* Metadata that the module placed in holes goes back and takes whole
	 * nodes instead. With no memory to put the holes back, nothing may be
	 * lost: the free space goes down by what was handed out, and not by
	 * more. (Flash takes what follows its cursor: the free tail is taken
	 * and given back, so that the cursor wraps to the holes.) */
	n = smr_alloc_extent(a, 8 * SMR_MIB, NULL, SMR_STREAM_META, e, 1);
	CU_ASSERT_EQUAL(n, 1);
	if (n == 1)
		SMR_ASSERT_OK(smr_alloc_free(a, e[0].off, e[0].len));
	for (uint64_t g = 3; g <= 4; g++) {
		SMR_ASSERT_OK(smr_alloc_commit(a, g, &ref));
		SMR_ASSERT_OK(smr_alloc_committed(a));
	}
	smr_alloc_space(a, &sp1);
	calloc_fails = true;
	n = smr_alloc_extent(a, unit, &meta, SMR_STREAM_META, e, 16);
	calloc_fails = false;
	CU_ASSERT_EQUAL(n, 1);
	if (n == 1) {
		CU_ASSERT_EQUAL(e[0].len, unit);
		smr_alloc_space(a, &sp2);
		CU_ASSERT_EQUAL(sp1.free + sp1.reserved,
				sp2.free + sp2.reserved + unit);
	}
	/* Data may have more, but not the reserve's whole nodes. */
	while (smr_alloc_extent(a, 2 * BS, NULL, SMR_STREAM_HOT, e, 4) > 0)
		;
	/* It has had the holes, though: what the module still counts free
	 * beyond the reserve (statfs's free) is at most the slack of a split
	 * unit on either side. */
	smr_alloc_space(a, &sp1);
	CU_ASSERT(sp1.free <= 2 * unit);
	smr_alloc_stats(a, &st);
	while ((n = smr_alloc_extent(a, 4 * unit, &meta, SMR_STREAM_META, e,
				     16)) > 0) {
		for (int i = 0; i < n; i++) {
			CU_ASSERT(e[i].len >= unit && e[i].len % unit == 0);
			got += e[i].len;
		}
	}
	CU_ASSERT_EQUAL(n, -ENOSPC);
	/* All of the reserve but what the two states took from it. */
	CU_ASSERT(got + st.bytes_allocated[SMR_STREAM_META] >= sp0.reserved);
	free(blk);
	smr_alloc_close(a);
	smr_dev_close(dev);
}

static void test_xmod_meta_unit(void)
{
	xmod_meta_unit(&smr_rot_ops, "alloc-ru");
	xmod_meta_unit(&smr_flash_ops, "alloc-fu");
}

/* Rotational: at the hint, else best fit; flash: next fit. */
static void test_placement(void)
{
	char path[512];
	struct smr_dev *dev = file_dev("alloc-pl", 8 * SMR_MIB, path,
				       sizeof(path));
	struct smr_alloc_hint h = { .near = 0 };
	struct smr_alloc *a = NULL;
	struct smr_extent e[8], held[8];
	struct smr_alloc_ref ref;

	SMR_ASSERT_OK(smr_alloc_open(&smr_rot_ops, dev, 0, uuid, NULL, &a));
	CU_ASSERT_FATAL(a != NULL);
	/* Carve holes of 8, 2 and 4 blocks between held extents. */
	for (int i = 0; i < 6; i++) {
		static const uint64_t sz[6] = { 8, 1, 2, 1, 4, 1 };

		CU_ASSERT_EQUAL(smr_alloc_extent(a, sz[i] * BS, &h,
						 SMR_STREAM_HOT, &held[i], 1),
				1);
		h.near = held[i].off + held[i].len;
		if (i)
			CU_ASSERT_EQUAL(held[i].off,
					held[i - 1].off + held[i - 1].len);
	}
	SMR_ASSERT_OK(smr_alloc_free(a, held[0].off, held[0].len));
	SMR_ASSERT_OK(smr_alloc_free(a, held[2].off, held[2].len));
	SMR_ASSERT_OK(smr_alloc_free(a, held[4].off, held[4].len));
	for (uint64_t g = 1; g <= 2; g++) {
		SMR_ASSERT_OK(smr_alloc_commit(a, g, &ref));
		SMR_ASSERT_OK(smr_alloc_committed(a));
	}
	/* 3 blocks: best fit is the 4-block hole. */
	CU_ASSERT_EQUAL(smr_alloc_extent(a, 3 * BS, NULL, SMR_STREAM_HOT, e,
					 1), 1);
	CU_ASSERT_EQUAL(e[0].off, held[4].off);
	/* 2 blocks exactly at a hint inside the 8-block hole. */
	h.near = held[0].off + 2 * BS;
	CU_ASSERT_EQUAL(smr_alloc_extent(a, 2 * BS, &h, SMR_STREAM_HOT, e, 1),
			1);
	CU_ASSERT_EQUAL(e[0].off, held[0].off + 2 * BS);
	smr_alloc_close(a);

	/* Flash hands out in address order, wrapping. */
	SMR_ASSERT_OK(smr_alloc_open(&smr_flash_ops, dev, 0, uuid, NULL, &a));
	CU_ASSERT_FATAL(a != NULL);
	CU_ASSERT_EQUAL(smr_alloc_extent(a, BS, NULL, SMR_STREAM_HOT, &e[0],
					 1), 1);
	CU_ASSERT_EQUAL(smr_alloc_extent(a, BS, NULL, SMR_STREAM_HOT, &e[1],
					 1), 1);
	CU_ASSERT_EQUAL(e[0].off, 0);
	CU_ASSERT_EQUAL(e[1].off, BS);
	smr_alloc_close(a);
	smr_dev_close(dev);
}

/* A contiguous request that does not fit a short tail retires the zone,
 * which is finished once its writes have landed; a split is taken when
 * contiguity is not asked for. */
static void test_zoned_retire(void)
{
	char path[512];
	struct smr_dev *dev = zloop_dev("alloc-zt", 0, 6, path, sizeof(path));
	struct smr_alloc_hint contig = { .contiguous = true };
	struct smr_alloc *a = NULL;
	struct smr_alloc_stats st;
	struct smr_extent e[4];
	uint8_t *buf = smr_dev_buf_alloc(ZSZ);
	uint32_t z;

	SMR_ASSERT_OK(smr_alloc_open(&smr_zoned_ops, dev, 0, uuid, NULL, &a));
	CU_ASSERT_FATAL(a != NULL);
	CU_ASSERT_EQUAL(smr_alloc_write(a, buf, ZSZ - 6 * BS, NULL,
					SMR_STREAM_HOT, e, 4), 1);
	z = smr_dev_zone_no(dev, e[0].off);
	CU_ASSERT_EQUAL(smr_alloc_write(a, buf, 10 * BS, &contig,
					SMR_STREAM_HOT, e, 4), 1);
	CU_ASSERT_EQUAL(e[0].len, 10 * BS);
	CU_ASSERT_NOT_EQUAL(smr_dev_zone_no(dev, e[0].off), z);
	/* The next allocation finishes the retired zone. */
	CU_ASSERT_EQUAL(smr_alloc_write(a, buf, BS, NULL, SMR_STREAM_HOT, e,
					4), 1);
	CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, z), SMR_ZONE_COND_FULL);
	smr_alloc_stats(a, &st);
	CU_ASSERT_EQUAL(st.zones_finished, 1);
	CU_ASSERT_EQUAL(smr_alloc_zone_live(a, z), ZSZ - 6 * BS);

	/* Without the hint, the tail is used and the request split. */
	CU_ASSERT_EQUAL(smr_alloc_write(a, buf, ZSZ - 4 * BS, NULL,
					SMR_STREAM_COLD, e, 4), 1);
	z = smr_dev_zone_no(dev, e[0].off);
	/* Two extents, even if the next zone follows: an extent never
	 * crosses a zone, since no write may. */
	CU_ASSERT(smr_alloc_write(a, buf, 10 * BS, NULL, SMR_STREAM_COLD, e,
				  4) == 2);
	CU_ASSERT_EQUAL(e[0].off, smr_dev_zone_start(dev, z) + ZSZ - 4 * BS);
	CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, z), SMR_ZONE_COND_FULL);
	smr_dev_buf_free(buf);
	smr_alloc_close(a);
	smr_dev_close(dev);
}

/* Flash: freed space is discarded once the commit after the freeing one is
 * durable (until then the checkpoint before may still use it). */
static void test_flash_discard(void)
{
	char path[512];
	struct smr_dev *dev = file_dev("alloc-fd", 8 * SMR_MIB, path,
				       sizeof(path));
	struct smr_alloc *a = NULL;
	struct smr_alloc_ref ref;
	struct smr_extent e;
	struct stat st0, st1, st2;
	uint8_t *buf = smr_dev_buf_alloc(SMR_MIB);

	memset(buf, 0xab, SMR_MIB);
	SMR_ASSERT_OK(smr_alloc_open(&smr_flash_ops, dev, 0, uuid, NULL, &a));
	CU_ASSERT_FATAL(a != NULL);
	CU_ASSERT_EQUAL(smr_alloc_write(a, buf, SMR_MIB, NULL, SMR_STREAM_HOT,
					&e, 1), 1);
	SMR_ASSERT_OK(smr_dev_flush(dev));
	CU_ASSERT_FATAL(stat(path, &st0) == 0);
	SMR_ASSERT_OK(smr_alloc_free(a, e.off, e.len));
	SMR_ASSERT_OK(smr_alloc_commit(a, 1, &ref));
	CU_ASSERT_FATAL(stat(path, &st1) == 0);
	SMR_ASSERT_OK(smr_alloc_committed(a));
	SMR_ASSERT_OK(smr_alloc_commit(a, 2, &ref));
	CU_ASSERT_FATAL(stat(path, &st1) == 0);
	SMR_ASSERT_OK(smr_alloc_committed(a));
	CU_ASSERT_FATAL(stat(path, &st2) == 0);
	if (smr_dev_info(dev)->discard) {
		/* Not before the next commit is durable; then the hole. */
		CU_ASSERT(st1.st_blocks >= st0.st_blocks);
		CU_ASSERT(st2.st_blocks + (blkcnt_t)(SMR_MIB / 512 / 2) <=
			  st1.st_blocks);
	}
	smr_dev_buf_free(buf);
	smr_alloc_close(a);
	smr_dev_close(dev);
}

/*
 * Writes a full zone of @stream and commits @commits times after it; the
 * zone's number in *@zno.
 */
static void gc_fill_zone(struct smr_alloc *a, struct smr_dev *dev,
			 uint8_t *buf, enum smr_stream stream,
			 unsigned int commits, uint64_t *gen, uint32_t *zno)
{
	struct smr_alloc_ref ref;
	struct smr_extent e[2];

	CU_ASSERT_EQUAL_FATAL(smr_alloc_write(a, buf, ZSZ, NULL, stream, e, 2),
			      1);
	*zno = smr_dev_zone_no(dev, e[0].off);
	for (unsigned int i = 0; i < commits; i++)
		SMR_ASSERT_OK(smr_alloc_commit(a, ++*gen, &ref));
}

/*
 * When the data zones decay at one rate (live fraction exp(-r * age), as
 * under uniform overwrites), a zone's age says nothing its live bytes do
 * not, and cost-benefit picks what greedy picks: here a zone that was
 * lucky (emptier than the oldest, though younger), which the square root
 * of the age alone passed over for the oldest. Once zones that decay
 * faster join them, the age counts again.
 */
static void test_zoned_gc_pick_one_rate(void)
{
	char path[512];
	struct smr_dev *dev = zloop_dev("alloc-zr", 0, 0, path, sizeof(path));
	struct smr_alloc *a = NULL;
	struct smr_alloc_ref ref;
	uint8_t *buf = smr_dev_buf_alloc(ZSZ);
	uint64_t gen = 0, blocks = ZSZ / BS;
	/* Blocks of 256 live: exp(-0.035 * age) at ages 24, 22, ..., 2,
	 * but for the fifth, the lucky one (146 at its age). */
	static const uint64_t live[12] = { 111, 119, 127, 136, 104, 157,
					   168, 180, 193, 208, 223, 239 };
	uint32_t zno[16], greedy = 0, cb = 0;
	unsigned int i;

	SMR_ASSERT_OK(smr_alloc_open(&smr_zoned_ops, dev, 0, uuid, NULL, &a));
	CU_ASSERT_FATAL(a != NULL);
	/* Twelve zones two commits apart, the oldest first. */
	for (i = 0; i < 12; i++)
		gc_fill_zone(a, dev, buf, SMR_STREAM_COLD, 2, &gen, &zno[i]);
	for (i = 0; i < 12; i++)
		SMR_ASSERT_OK(smr_alloc_free(a, smr_dev_zone_start(dev, zno[i]),
					     (blocks - live[i]) * BS));
	SMR_ASSERT_OK(smr_alloc_commit(a, ++gen, &ref));
	SMR_ASSERT_OK(smr_alloc_committed(a));
	SMR_ASSERT_OK(smr_alloc_gc_pick(a, SMR_GC_GREEDY, &greedy));
	SMR_ASSERT_OK(smr_alloc_gc_pick(a, SMR_GC_COST_BENEFIT, &cb));
	CU_ASSERT_EQUAL(greedy, zno[4]);
	CU_ASSERT_EQUAL(cb, zno[4]);

	/* Four young zones, emptier than any: two rates now. Greedy takes
	 * a young one, cost-benefit the oldest. */
	for (i = 12; i < 16; i++)
		gc_fill_zone(a, dev, buf, SMR_STREAM_HOT, 2, &gen, &zno[i]);
	for (i = 12; i < 16; i++)
		SMR_ASSERT_OK(smr_alloc_free(a, smr_dev_zone_start(dev, zno[i]),
					     (blocks - 90) * BS));
	SMR_ASSERT_OK(smr_alloc_commit(a, ++gen, &ref));
	SMR_ASSERT_OK(smr_alloc_committed(a));
	SMR_ASSERT_OK(smr_alloc_gc_pick(a, SMR_GC_GREEDY, &greedy));
	SMR_ASSERT_OK(smr_alloc_gc_pick(a, SMR_GC_COST_BENEFIT, &cb));
	CU_ASSERT(greedy >= zno[12]);
	CU_ASSERT_EQUAL(cb, zno[0]);
	smr_alloc_close(a);
	smr_dev_buf_free(buf);
	smr_dev_close(dev);
}

/* Greedy takes the fewest live bytes; cost-benefit prefers an old zone to
 * a young one that is a little emptier. */
static void test_zoned_gc_pick(void)
{
	char path[512], fpath[512];
	struct smr_dev *dev = zloop_dev("alloc-zg", 0, 0, path, sizeof(path));
	struct smr_dev *fdev = file_dev("alloc-fg", 8 * SMR_MIB, fpath,
					sizeof(fpath));
	struct smr_alloc *a = NULL;
	struct smr_alloc_ref ref;
	struct smr_extent e[2];
	uint8_t *buf = smr_dev_buf_alloc(ZSZ);
	uint64_t gen = 0;
	uint32_t old_z, young_z, pick = 0;
	struct smr_gc_victim v[4];

	SMR_ASSERT_OK(smr_alloc_open(&smr_zoned_ops, dev, 0, uuid, NULL, &a));
	CU_ASSERT_FATAL(a != NULL);
	SMR_ASSERT_RC(smr_alloc_gc_pick(a, SMR_GC_GREEDY, &pick), -ENOENT);
	/* An old zone, half live. */
	CU_ASSERT_EQUAL(smr_alloc_write(a, buf, ZSZ, NULL, SMR_STREAM_COLD, e,
					2), 1);
	old_z = smr_dev_zone_no(dev, e[0].off);
	SMR_ASSERT_OK(smr_alloc_free(a, e[0].off, ZSZ / 2));
	for (int i = 0; i < 20; i++)
		SMR_ASSERT_OK(smr_alloc_commit(a, ++gen, &ref));
	/* A young zone, a quarter live. */
	CU_ASSERT_EQUAL(smr_alloc_write(a, buf, ZSZ, NULL, SMR_STREAM_HOT, e,
					2), 1);
	young_z = smr_dev_zone_no(dev, e[0].off);
	SMR_ASSERT_OK(smr_alloc_free(a, e[0].off, ZSZ / 4 * 3));
	SMR_ASSERT_OK(smr_alloc_commit(a, ++gen, &ref));
	SMR_ASSERT_OK(smr_alloc_committed(a));

	CU_ASSERT_EQUAL(smr_alloc_zone_live(a, old_z), ZSZ / 2);
	CU_ASSERT_EQUAL(smr_alloc_zone_live(a, young_z), ZSZ / 4);
	SMR_ASSERT_OK(smr_alloc_gc_pick(a, SMR_GC_GREEDY, &pick));
	CU_ASSERT_EQUAL(pick, young_z);
	SMR_ASSERT_OK(smr_alloc_gc_pick(a, SMR_GC_COST_BENEFIT, &pick));
	CU_ASSERT_EQUAL(pick, old_z);
	/* Both at once, best first, with what the cleaner needs to know. */
	SMR_ASSERT_RC(smr_alloc_gc_pick_n(a, SMR_GC_GREEDY, v, 4), 2);
	CU_ASSERT_EQUAL(v[0].zno, young_z);
	CU_ASSERT_EQUAL(v[0].live, ZSZ / 4);
	CU_ASSERT_EQUAL(v[0].stream, SMR_STREAM_HOT);
	CU_ASSERT_EQUAL(v[1].zno, old_z);
	CU_ASSERT_EQUAL(v[1].stream, SMR_STREAM_COLD);
	SMR_ASSERT_RC(smr_alloc_gc_pick_n(a, SMR_GC_COST_BENEFIT, v, 1), 1);
	CU_ASSERT_EQUAL(v[0].zno, old_z);
	CU_ASSERT_EQUAL(v[0].cap, ZSZ);
	/* Data the cleaner moves into the cold stream counts as relocated. */
	{
		struct smr_alloc_hint h = { .reloc = true };
		struct smr_alloc_stats s0, s1;

		smr_alloc_stats(a, &s0);
		CU_ASSERT_EQUAL(smr_alloc_write(a, buf, 4 * BS, &h,
						SMR_STREAM_COLD, e, 2), 1);
		smr_alloc_stats(a, &s1);
		CU_ASSERT_EQUAL(s1.bytes_allocated[SMR_STREAM_RELOC] -
				s0.bytes_allocated[SMR_STREAM_RELOC], 4 * BS);
		CU_ASSERT_EQUAL(s1.bytes_allocated[SMR_STREAM_COLD],
				s0.bytes_allocated[SMR_STREAM_COLD]);
		SMR_ASSERT_OK(smr_alloc_free(a, e[0].off, 4 * BS));
	}
	/* The ages survive a reopen. */
	smr_alloc_close(a);
	SMR_ASSERT_OK(smr_alloc_open(&smr_zoned_ops, dev, 0, uuid, &ref, &a));
	CU_ASSERT_FATAL(a != NULL);
	SMR_ASSERT_OK(smr_alloc_gc_pick(a, SMR_GC_COST_BENEFIT, &pick));
	CU_ASSERT_EQUAL(pick, old_z);
	CU_ASSERT_EQUAL(smr_alloc_zone_live(a, NZONES), -EINVAL);
	smr_alloc_close(a);

	/* Modules without zones have nothing to clean. */
	SMR_ASSERT_OK(smr_alloc_open(&smr_flash_ops, fdev, 0, uuid, NULL, &a));
	CU_ASSERT_FATAL(a != NULL);
	SMR_ASSERT_RC(smr_alloc_gc_pick(a, SMR_GC_GREEDY, &pick), -EOPNOTSUPP);
	SMR_ASSERT_RC(smr_alloc_gc_pick_n(a, SMR_GC_GREEDY, v, 4),
		      -EOPNOTSUPP);
	CU_ASSERT_EQUAL(smr_alloc_zone_live(a, 0), -EOPNOTSUPP);
	smr_alloc_close(a);
	smr_dev_buf_free(buf);
	smr_dev_close(dev);
	smr_dev_close(fdev);
}

/* On a device of 512-byte blocks a zone's tail can be shorter than a state
 * block: the state pads it and goes on in the next zone. */
static void test_zoned_state_tail(void)
{
	struct smr_zloop_params p = {
		.capacity = 16 * 64 * SMR_KIB,
		.zone_size = 64 * SMR_KIB,
		.max_open = 1,
		.max_active = 1,
		.block_size = 512,
	};
	char path[512];
	struct smr_dev *dev = zloop_dev_p("alloc-zt", &p, path, sizeof(path));
	struct smr_alloc *a = NULL;
	struct smr_alloc_ref ref;
	struct smr_extent e[4];
	struct smr_space before, after;
	uint8_t *buf = smr_dev_buf_alloc(64 * SMR_KIB);
	uint32_t z;

	SMR_ASSERT_OK(smr_alloc_open(&smr_zoned_ops, dev, 0, uuid, NULL, &a));
	CU_ASSERT_FATAL(a != NULL);
	/* One zone for everything: leave it 3 blocks. */
	CU_ASSERT_EQUAL(smr_alloc_write(a, buf, 64 * SMR_KIB - 1536, NULL,
					SMR_STREAM_HOT, e, 4), 1);
	z = smr_dev_zone_no(dev, e[0].off);
	SMR_ASSERT_OK(smr_alloc_commit(a, 1, &ref));
	CU_ASSERT_EQUAL(ref.len, 1536 + 4096);
	CU_ASSERT_NOT_EQUAL(smr_dev_zone_no(dev, ref.off), z);
	CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, z), SMR_ZONE_COND_FULL);
	SMR_ASSERT_OK(smr_alloc_committed(a));
	smr_alloc_space(a, &before);
	CU_ASSERT_EQUAL(before.used, 64 * SMR_KIB - 1536 + ref.len);
	smr_alloc_close(a);
	a = NULL;
	SMR_ASSERT_OK(smr_alloc_open(&smr_zoned_ops, dev, 0, uuid, &ref, &a));
	CU_ASSERT_FATAL(a != NULL);
	smr_alloc_space(a, &after);
	CU_ASSERT(!memcmp(&before, &after, sizeof(before)));
	/* And the next state replaces it. */
	SMR_ASSERT_OK(smr_alloc_commit(a, 2, &ref));
	SMR_ASSERT_OK(smr_alloc_committed(a));
	smr_alloc_space(a, &after);
	CU_ASSERT_EQUAL(after.used, 64 * SMR_KIB - 1536 + ref.len);
	smr_dev_buf_free(buf);
	smr_alloc_close(a);
	smr_dev_close(dev);
}

/* Threads writing through smr_alloc_write() at once, two of them on one
 * stream: every write lands at its write pointer (none fails), and the
 * bytes add up. */
struct writer {
	struct smr_alloc *a;
	enum smr_stream stream;
	uint64_t seed;
	uint64_t bytes;
	int errors;
};

static void *writer_run(void *arg)
{
	struct writer *w = arg;
	uint8_t *buf = smr_dev_buf_alloc(16 * BS);
	struct smr_extent e[4];

	/* About 2.7 MiB a thread: the device never runs short, whichever
	 * thread takes a zone first. */
	for (int i = 0; i < 80; i++) {
		uint64_t len = BS * (1 + smr_test_rand(&w->seed) % 16);
		int n = smr_alloc_write(w->a, buf, len, NULL, w->stream, e, 4);

		if (n < 1) {
			w->errors++;
			continue;
		}
		for (int k = 0; k < n; k++) {
			/* Give every other extent back at once. */
			if (smr_test_rand(&w->seed) & 1)
				w->errors += smr_alloc_free(w->a, e[k].off,
							    e[k].len) != 0;
			else
				w->bytes += e[k].len;
		}
	}
	smr_dev_buf_free(buf);
	return NULL;
}

static void test_zoned_threads(void)
{
	static const enum smr_stream streams[] = {
		SMR_STREAM_META, SMR_STREAM_HOT, SMR_STREAM_HOT,
		SMR_STREAM_COLD, SMR_STREAM_RELOC,
	};
	struct writer w[SMR_ARRAY_SIZE(streams)];
	pthread_t th[SMR_ARRAY_SIZE(streams)];
	char path[512];
	struct smr_dev *dev = zloop_dev("alloc-th", 4, 4, path, sizeof(path));
	struct smr_alloc *a = NULL;
	struct smr_space sp;
	uint64_t bytes = 0;

	SMR_ASSERT_OK(smr_alloc_open(&smr_zoned_ops, dev, 0, uuid, NULL, &a));
	CU_ASSERT_FATAL(a != NULL);
	for (unsigned int i = 0; i < SMR_ARRAY_SIZE(streams); i++) {
		w[i] = (struct writer){ .a = a, .stream = streams[i],
					.seed = 77 + i };
		CU_ASSERT_FATAL(pthread_create(&th[i], NULL, writer_run,
					       &w[i]) == 0);
	}
	for (unsigned int i = 0; i < SMR_ARRAY_SIZE(streams); i++) {
		pthread_join(th[i], NULL);
		CU_ASSERT_EQUAL(w[i].errors, 0);
		bytes += w[i].bytes;
	}
	smr_alloc_space(a, &sp);
	CU_ASSERT_EQUAL(sp.used, bytes);
	CU_ASSERT_EQUAL(sp.capacity,
			sp.used + sp.free + sp.reclaimable + sp.reserved);
	CU_ASSERT(smr_dev_nr_active(dev) <= 4);
	smr_alloc_close(a);
	smr_dev_close(dev);
}

/* Data written after the checkpoint is dead; the pointer does not go
 * back; a zone the state had free but that was written is all dead. */
static void test_zoned_recover(void)
{
	char path[512];
	struct smr_dev *dev = zloop_dev("alloc-zc", 0, 0, path, sizeof(path));
	struct smr_alloc *a = NULL;
	struct smr_alloc_ref ref;
	struct smr_extent e[4];
	uint8_t *buf = smr_dev_buf_alloc(ZSZ);
	uint32_t hz, nz;
	int64_t live_hz;
	int n;

	SMR_ASSERT_OK(smr_alloc_open(&smr_zoned_ops, dev, 0, uuid, NULL, &a));
	CU_ASSERT_FATAL(a != NULL);
	CU_ASSERT_EQUAL(smr_alloc_write(a, buf, 16 * BS, NULL, SMR_STREAM_HOT,
					e, 4), 1);
	hz = smr_dev_zone_no(dev, e[0].off);
	SMR_ASSERT_OK(smr_alloc_commit(a, 1, &ref));
	live_hz = smr_alloc_zone_live(a, hz);
	CU_ASSERT_EQUAL(live_hz, 16 * BS);
	/* After the checkpoint: fill the hot zone and spill into another. */
	n = smr_alloc_write(a, buf, ZSZ, NULL, SMR_STREAM_HOT, e, 4);
	CU_ASSERT_EQUAL(n, 2);
	nz = smr_dev_zone_no(dev, e[1].off);
	CU_ASSERT_NOT_EQUAL(nz, hz);
	smr_alloc_close(a); /* a crash: no commit */
	smr_dev_close(dev);

	SMR_ASSERT_OK(smr_dev_open(path, NULL, &dev));
	SMR_ASSERT_OK(smr_alloc_open(&smr_zoned_ops, dev, 0, uuid, &ref, &a));
	CU_ASSERT_FATAL(a != NULL);
	CU_ASSERT_EQUAL(smr_alloc_zone_live(a, hz), live_hz);
	CU_ASSERT_EQUAL(smr_alloc_zone_live(a, nz), 0);
	/* Opening writes nothing (it may be a read-only open): the
	 * spilled-into zone is finished by the first commit, not now. */
	CU_ASSERT_NOT_EQUAL(smr_dev_zone_cond(dev, nz), SMR_ZONE_COND_FULL);
	/* New allocations land at the write pointers. */
	n = smr_alloc_write(a, buf, 8 * BS, NULL, SMR_STREAM_HOT, e, 4);
	CU_ASSERT(n >= 1);
	/* The dead zone comes back after the next durable commit. */
	SMR_ASSERT_OK(smr_alloc_commit(a, 2, &ref));
	SMR_ASSERT_OK(smr_alloc_committed(a));
	CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, nz), SMR_ZONE_COND_EMPTY);
	smr_dev_buf_free(buf);
	smr_alloc_close(a);
	smr_dev_close(dev);
}

/* A zone is reset only once the commit after the one that saw it dead is
 * durable: until then the checkpoint before the newest may use it. */
static void test_zoned_deferred_reset(void)
{
	char path[512];
	struct smr_dev *dev = zloop_dev("alloc-zd", 0, 0, path, sizeof(path));
	struct smr_alloc *a = NULL;
	struct smr_alloc_ref ref;
	struct smr_extent e[2];
	uint8_t *buf = smr_dev_buf_alloc(ZSZ);
	uint32_t z;

	SMR_ASSERT_OK(smr_alloc_open(&smr_zoned_ops, dev, 0, uuid, NULL, &a));
	CU_ASSERT_FATAL(a != NULL);
	CU_ASSERT_EQUAL(smr_alloc_write(a, buf, ZSZ, NULL, SMR_STREAM_COLD, e,
					2), 1);
	z = smr_dev_zone_no(dev, e[0].off);
	CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, z), SMR_ZONE_COND_FULL);
	SMR_ASSERT_OK(smr_alloc_free(a, e[0].off, e[0].len));
	SMR_ASSERT_OK(smr_alloc_committed(a)); /* no commit yet */
	CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, z), SMR_ZONE_COND_FULL);
	SMR_ASSERT_OK(smr_alloc_commit(a, 1, &ref));
	CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, z), SMR_ZONE_COND_FULL);
	SMR_ASSERT_OK(smr_alloc_committed(a));
	CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, z), SMR_ZONE_COND_FULL);
	SMR_ASSERT_OK(smr_alloc_commit(a, 2, &ref));
	CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, z), SMR_ZONE_COND_FULL);
	SMR_ASSERT_OK(smr_alloc_committed(a));
	CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, z), SMR_ZONE_COND_EMPTY);
	smr_dev_buf_free(buf);
	smr_alloc_close(a);
	smr_dev_close(dev);
}

/* ------------------------------------------------------------------------
 * Power cuts: a cut at every write of a workload; the last durable state
 * must open, agree with what was live when it was committed, and go on
 * writing at the write pointers.
 * ------------------------------------------------------------------------ */

struct cut_result {
	struct smr_alloc_ref ref; /* last durable commit, zeroed if none */
	uint64_t live;            /* model live bytes at that commit */
	uint64_t writes;          /* writes the fault device saw */
};

static void cut_workload(const struct smr_alloc_ops *ops, struct smr_dev *dev,
			 struct smr_fault *f, struct cut_result *res)
{
	struct smr_extent held[64], e[4];
	struct smr_alloc *a = NULL;
	struct smr_fault_stats fst;
	struct smr_alloc_ref ref;
	uint8_t *buf = smr_dev_buf_alloc(64 * BS);
	uint64_t seed = 99, live = 0;
	unsigned int nheld = 0;

	memset(res, 0, sizeof(*res));
	SMR_ASSERT_OK(smr_alloc_open(ops, dev, 0, uuid, NULL, &a));
	CU_ASSERT_FATAL(a != NULL);
	for (uint64_t gen = 1; gen <= 8; gen++) {
		for (int k = 0; k < 5; k++) {
			enum smr_stream s = (enum smr_stream)(smr_test_rand(
				&seed) % 3);
			uint64_t len = BS * (1 + smr_test_rand(&seed) % 40);
			int n = smr_alloc_write(a, buf, len, NULL, s, e, 4);

			CU_ASSERT(n >= 1);
			for (int i = 0; i < n && nheld < 64; i++) {
				held[nheld++] = e[i];
				live += e[i].len;
			}
			if (nheld > 8 && smr_test_rand(&seed) % 2) {
				unsigned int j = (unsigned int)(smr_test_rand(
					&seed) % nheld);

				SMR_ASSERT_OK(smr_alloc_free(a, held[j].off,
							     held[j].len));
				live -= held[j].len;
				held[j] = held[--nheld];
			}
		}
		SMR_ASSERT_OK(smr_alloc_commit(a, gen, &ref));
		SMR_ASSERT_OK(smr_dev_flush(dev));
		if (!smr_fault_is_cut(f)) {
			res->ref = ref;
			res->live = live;
		}
		SMR_ASSERT_OK(smr_alloc_committed(a));
	}
	smr_fault_stats(f, &fst);
	res->writes = fst.writes;
	smr_alloc_close(a);
	smr_dev_buf_free(buf);
}

/* Run the workload with the power cut after @after writes (0: no cut) on
 * a new zoned loop directory at @path; then, if cut, mount what is left. */
static void cut_once(const struct smr_alloc_ops *ops, const char *path,
		     const struct smr_zloop_params *p, uint64_t after,
		     struct cut_result *res)
{
	struct smr_fault_rule rule = { .what = SMR_FAULT_DROP_WRITES,
				       .after = after };
	struct smr_dev *lower = NULL, *dev = NULL;
	struct smr_fault *f = NULL;
	struct smr_alloc *a = NULL;
	struct smr_space sp;
	struct smr_extent e[4];
	uint8_t *buf;
	uint64_t total = 0;

	if (ops == &smr_zoned_ops) {
		SMR_ASSERT_OK(smr_zloop_create(path, p));
	} else {
		int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);

		CU_ASSERT_FATAL(fd >= 0);
		CU_ASSERT(ftruncate(fd, (off_t)p->capacity) == 0);
		close(fd);
	}
	SMR_ASSERT_OK(smr_dev_open(path, NULL, &lower));
	CU_ASSERT_FATAL(lower != NULL);
	SMR_ASSERT_OK(smr_fault_open(lower, &f, &dev));
	CU_ASSERT_FATAL(dev != NULL);
	if (after)
		SMR_ASSERT_OK(smr_fault_arm(f, &rule));
	cut_workload(ops, dev, f, res);
	smr_dev_close(dev);
	smr_fault_free(f);
	smr_dev_close(lower);
	if (!after)
		return;

	/* Mount what the cut left, from the last durable state. */
	SMR_ASSERT_OK(smr_dev_open(path, NULL, &dev));
	CU_ASSERT_FATAL(dev != NULL);
	SMR_ASSERT_OK(smr_alloc_open(ops, dev, 0, uuid, &res->ref, &a));
	CU_ASSERT_FATAL(a != NULL);
	smr_alloc_space(a, &sp);
	CU_ASSERT_EQUAL(sp.capacity,
			sp.used + sp.free + sp.reclaimable + sp.reserved);
	for (uint32_t z = 0; z < smr_dev_info(dev)->nr_zones; z++)
		total += (uint64_t)smr_alloc_zone_live(a, z);
	if (ops != &smr_zoned_ops)
		total = sp.used;
	CU_ASSERT_EQUAL(total, res->live + res->ref.len);
	CU_ASSERT_EQUAL(sp.used, total);
	/* Every stream goes on at its write pointer. */
	buf = smr_dev_buf_alloc(8 * BS);
	for (int s = 0; s < SMR_STREAM_NR; s++)
		CU_ASSERT(smr_alloc_write(a, buf, 8 * BS, NULL,
					  (enum smr_stream)s, e, 4) >= 1);
	SMR_ASSERT_OK(smr_alloc_commit(a, 100, &res->ref));
	SMR_ASSERT_OK(smr_alloc_committed(a));
	if (ops == &smr_zoned_ops)
		CU_ASSERT(smr_dev_nr_active(dev) <= p->max_active);
	smr_dev_buf_free(buf);
	smr_alloc_close(a);
	smr_dev_close(dev);
}

static void power_cut(const struct smr_alloc_ops *ops)
{
	struct smr_zloop_params p = {
		.capacity = 16 * ZSZ,
		.zone_size = ZSZ / 4,
		.max_open = 4,
		.max_active = 4,
		.block_size = BS,
	};
	const char *base = smr_test_tmpdir("alloc-pc");
	struct cut_result full, res;
	char path[512];
	uint64_t after;

	snprintf(path, sizeof(path), "%s/full", base);
	cut_once(ops, path, &p, 0, &full);
	CU_ASSERT(full.writes > 20);
	for (after = 1; after <= full.writes; after++) {
		snprintf(path, sizeof(path), "%s/cut%" PRIu64, base, after);
		cut_once(ops, path, &p, after, &res);
		smr_test_rmtree(path);
	}
}

static void test_zoned_power_cut(void)
{
	power_cut(&smr_zoned_ops);
}

static void test_xmod_power_cut(void)
{
	power_cut(&smr_rot_ops);
	power_cut(&smr_flash_ops);
}

/* ------------------------------------------------------------------------
 * Corrupted state
 * ------------------------------------------------------------------------ */

static void flip_bits(const char *file, uint64_t off, uint8_t mask)
{
	int fd = open(file, O_RDWR);
	uint8_t b = 0;

	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT(pread(fd, &b, 1, (off_t)off) == 1);
	b ^= mask;
	CU_ASSERT(pwrite(fd, &b, 1, (off_t)off) == 1);
	close(fd);
}

static void corrupt_case(const struct smr_alloc_ops *ops, bool zoned)
{
	char path[512], file[600];
	struct smr_dev *dev = zoned ? zloop_dev("alloc-cz", 0, 0, path,
						sizeof(path)) :
				      file_dev("alloc-cf", 8 * SMR_MIB, path,
					       sizeof(path));
	struct smr_alloc *a = NULL;
	struct smr_alloc_ref ref, bad;
	struct smr_extent e[2];
	uint8_t *buf = smr_dev_buf_alloc(BS);
	uint64_t foff;

	SMR_ASSERT_OK(smr_alloc_open(ops, dev, 0, uuid, NULL, &a));
	CU_ASSERT_FATAL(a != NULL);
	CU_ASSERT_EQUAL(smr_alloc_write(a, buf, BS, NULL, SMR_STREAM_HOT, e, 2),
			1);
	SMR_ASSERT_OK(smr_alloc_commit(a, 5, &ref));
	smr_alloc_close(a);
	a = NULL;

	/* Intact: opens. A foreign UUID, a stale generation, a wrong
	 * checksum in the reference: refused. */
	SMR_ASSERT_OK(smr_alloc_open(ops, dev, 0, uuid, &ref, &a));
	smr_alloc_close(a);
	a = NULL;
	{
		uint8_t other[16] = { 9 };

		SMR_ASSERT_RC(smr_alloc_open(ops, dev, 0, other, &ref, &a),
			      -SMR_EFSCORRUPTED);
	}
	bad = ref;
	bad.gen = 4;
	SMR_ASSERT_RC(smr_alloc_open(ops, dev, 0, uuid, &bad, &a),
		      -SMR_EFSCORRUPTED);
	bad = ref;
	bad.csum ^= 1;
	SMR_ASSERT_RC(smr_alloc_open(ops, dev, 0, uuid, &bad, &a),
		      -SMR_EFSBADCRC);
	bad = ref;
	bad.off += BS;
	CU_ASSERT(smr_alloc_open(ops, dev, 0, uuid, &bad, &a) < 0);
	CU_ASSERT_PTR_NULL(a);
	/* rotational and flash read each other's state (alloc= switches). */
	if (!zoned) {
		SMR_ASSERT_OK(smr_alloc_open(ops == &smr_rot_ops ?
						     &smr_flash_ops :
						     &smr_rot_ops,
					     dev, 0, uuid, &ref, &a));
		smr_alloc_close(a);
		a = NULL;
	}

	/* A flipped byte in the state block on the medium. */
	smr_dev_close(dev);
	if (zoned) {
		uint32_t z = (uint32_t)(ref.off / ZSZ);

		snprintf(file, sizeof(file), "%s/seq-%06u", path, z);
		foff = ref.off - (uint64_t)z * ZSZ;
	} else {
		snprintf(file, sizeof(file), "%s", path);
		foff = ref.off;
	}
	/* One flipped bit in a state block on the medium: put back from
	 * the block's checksum (and the whole state's checked again). */
	flip_bits(file, foff + 700, 0x40);
	SMR_ASSERT_OK(smr_dev_open(path, NULL, &dev));
	SMR_ASSERT_OK(smr_alloc_open(ops, dev, 0, uuid, &ref, &a));
	if (a) {
		CU_ASSERT_TRUE(a->state_restored);
		smr_alloc_close(a);
		a = NULL;
	}
	/* Two are not. */
	flip_bits(file, foff + 700, 0x01);
	SMR_ASSERT_RC(smr_alloc_open(ops, dev, 0, uuid, &ref, &a),
		      -SMR_EFSBADCRC);
	CU_ASSERT_PTR_NULL(a);
	smr_dev_buf_free(buf);
	smr_dev_close(dev);
}

static void test_corrupt(void)
{
	corrupt_case(&smr_zoned_ops, true);
	corrupt_case(&smr_rot_ops, false);
	corrupt_case(&smr_flash_ops, false);
}

static const struct smr_test select_tests[] = {
	{ "select", test_select },
	{ "select_real", test_select_real },
	{ "extent_index", test_extent_index },
	{ "extent_index_nomem", test_extent_index_nomem },
	{ NULL, NULL },
};

static const struct smr_test zoned_tests[] = {
	{ "zoned_streams", test_zoned_streams },
	{ "zoned_enospc", test_zoned_enospc },
	{ "zoned_data_fallback", test_zoned_data_fallback },
	{ "zoned_deferred_reset", test_zoned_deferred_reset },
	{ "zoned_recover", test_zoned_recover },
	{ "zoned_write_failed", test_zoned_write_failed },
	{ "zoned_cnv_reset", test_zoned_cnv_reset },
	{ "zoned_cnv_claim", test_zoned_cnv_claim },
	{ "unsettled", test_unsettled },
	{ "zoned_retire", test_zoned_retire },
	{ "zoned_gc_pick", test_zoned_gc_pick },
	{ "zoned_gc_pick_one_rate", test_zoned_gc_pick_one_rate },
	{ "zoned_state_tail", test_zoned_state_tail },
	{ "zoned_threads", test_zoned_threads },
	{ "zoned_power_cut", test_zoned_power_cut },
	{ "zoned_random", test_zoned_random },
	{ "zoned_geometry", test_zoned_geometry },
	{ NULL, NULL },
};

static const struct smr_test xmod_tests[] = {
	{ "xmod_enospc", test_xmod_enospc },
	{ "xmod_meta_unit", test_xmod_meta_unit },
	{ "placement", test_placement },
	{ "flash_discard", test_flash_discard },
	{ "xmod_power_cut", test_xmod_power_cut },
	{ "rot_random", test_rot_random },
	{ "flash_random", test_flash_random },
	{ NULL, NULL },
};

static const struct smr_test state_tests[] = {
	{ "corrupt", test_corrupt },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	static const struct smr_suite suites[] = {
		{ "alloc_select", select_tests },
		{ "alloc_zoned", zoned_tests },
		{ "alloc_extent", xmod_tests },
		{ "alloc_state", state_tests },
		{ NULL, NULL },
	};

	smr_log_set_level(SMR_LOG_ERR + 0);
	if (getenv("SMR_TEST_VERBOSE"))
		smr_log_set_level(SMR_LOG_DEBUG);
	return smr_test_main(argc, argv, suites);
}
