/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_clean.c - the cleaner over the real engine and namespace on small
 * zoned loop directories (no FUSE): the reverse map, relocation of a zone,
 * a move dropped because its data changed meanwhile, fill / delete / refill
 * until the device is full, a metamorphic run with the cleaner forced after
 * every operation, and power cuts during cleaning.
 */
#include "testutil.h"

#include <dirent.h>
#include <endian.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cow/cow_priv.h"
#include "dev/dev.h"
#include "dev/fault.h"
#include "namespace/ns.h"
#include "namespace/ns_priv.h"

#define ROOT SMR_NS_ROOT
#define ZONE (2 * SMR_MIB)
#define NZONES 40
#define FSZ (128 * SMR_KIB)
#define BS 4096
#define MAXF 1024

static const struct smr_ns_cred cr = { .uid = 0 };

struct fx {
	char path[4096];
	struct smr_dev *dev;
	struct smr_cow *cow;
	struct smr_ns *ns;
};

static void fx_open(struct fx *f)
{
	struct smr_cow_opts o = { .gc_off = true };

	SMR_ASSERT_OK(smr_dev_open(f->path, NULL, &f->dev));
	SMR_ASSERT_OK(smr_cow_open(f->dev, &o, &f->cow));
	SMR_ASSERT_OK(smr_ns_open(f->cow, NULL, &f->ns));
}

static void fx_close(struct fx *f)
{
	smr_ns_close(f->ns);
	SMR_ASSERT_OK(smr_cow_close(f->cow));
	SMR_ASSERT_OK(smr_dev_close(f->dev));
	f->ns = NULL;
	f->cow = NULL;
	f->dev = NULL;
}

/* Open the engine on a formatted f->path and make the namespace. */
static void fx_open_mkfs(struct fx *f)
{
	struct smr_cow_opts o = { .gc_off = true };

	SMR_ASSERT_OK(smr_dev_open(f->path, NULL, &f->dev));
	SMR_ASSERT_OK(smr_cow_open(f->dev, &o, &f->cow));
	SMR_ASSERT_OK(smr_ns_mkfs(f->cow, &cr));
	SMR_ASSERT_OK(smr_ns_open(f->cow, NULL, &f->ns));
}

/* A fresh filesystem on a zoned loop directory with @nr_cnv conventional
 * zones. */
static void fx_new_cnv(struct fx *f, const char *tag, uint32_t nr_cnv)
{
	static unsigned int n;
	struct smr_zloop_params p = {
		.capacity = NZONES * ZONE,
		.zone_size = ZONE,
		.nr_cnv = nr_cnv,
	};

	snprintf(f->path, sizeof(f->path), "%s/z%u", smr_test_tmpdir(tag),
		 n++);
	SMR_ASSERT_OK(smr_zloop_create(f->path, &p));
	SMR_ASSERT_OK(smr_dev_open(f->path, NULL, &f->dev));
	SMR_ASSERT_OK(smr_cow_format(f->dev, NULL, NULL));
	SMR_ASSERT_OK(smr_dev_close(f->dev));
	fx_open_mkfs(f);
}

static void fx_new(struct fx *f, const char *tag)
{
	fx_new_cnv(f, tag, 2);
}

static void pattern(uint8_t *buf, size_t len, uint64_t seed)
{
	uint64_t s = seed * 0x9e3779b97f4a7c15ULL + 1;

	for (size_t i = 0; i < len; i += 8) {
		uint64_t v = smr_test_rand(&s);

		memcpy(buf + i, &v, SMR_MIN((size_t)8, len - i));
	}
}

static uint64_t mkfile(struct fx *f, const char *name)
{
	struct smr_ns_attr a;

	SMR_ASSERT_OK(smr_ns_create(f->ns, &cr, ROOT, name, S_IFREG | 0644,
				    &a));
	smr_ns_release(f->ns, a.ino);
	return a.ino;
}

static int write_file(struct fx *f, uint64_t ino, uint64_t off,
		      const uint8_t *buf, size_t len)
{
	ssize_t n = smr_ns_write(f->ns, &cr, ino, off, buf, len);

	if (n < 0)
		return (int)n;
	return (size_t)n == len ? 0 : -ENOSPC;
}

static bool file_is(struct fx *f, uint64_t ino, uint64_t seed, size_t len)
{
	uint8_t *want = malloc(len), *got = malloc(len);
	bool ok;

	pattern(want, len, seed);
	ok = smr_ns_read(f->ns, ino, 0, len, got) == (ssize_t)len &&
	     !memcmp(want, got, len);
	free(want);
	free(got);
	return ok;
}

struct ext_list {
	struct smr_data_extent *x;
	size_t n, cap;
};

static int collect_ext(void *arg, uint64_t ino, uint64_t foff, uint64_t dev,
		       uint64_t len)
{
	struct ext_list *l = arg;

	(void)ino;
	(void)foff;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 256;
		void *x = realloc(l->x, cap * sizeof(*l->x));

		if (!x)
			return -ENOMEM;
		l->x = x;
		l->cap = cap;
	}
	l->x[l->n].off = dev;
	l->x[l->n].len = len;
	l->n++;
	return 0;
}

/* Every audit there is: trees, namespace, and the space accounting
 * (every referenced block against the allocator, nothing leaked). */
static void audit(struct fx *f)
{
	struct smr_cow_space_check r;
	struct ext_list l = { 0 };
	uint64_t problems = 0;

	SMR_ASSERT_OK(smr_cow_check(f->cow));
	SMR_ASSERT_OK(smr_ns_check(f->ns, &problems));
	CU_ASSERT_EQUAL(problems, 0);
	SMR_ASSERT_OK(smr_ns_for_each_extent(f->ns, collect_ext, &l));
	SMR_ASSERT_OK(smr_cow_check_space(f->cow, l.x, l.n, false, &r));
	CU_ASSERT_EQUAL(r.problems, 0);
	CU_ASSERT_EQUAL(r.leaked, 0);
	free(l.x);
}

/* What the reverse map holds: its entries, and the bytes they name. */
struct rmap_tally {
	uint64_t bytes;
	unsigned int items;
};

static int rmap_add(void *arg, const struct smr_key *k, const void *v,
		    size_t len)
{
	struct rmap_tally *r = arg;
	struct smr_rmap_d d;

	(void)k;
	if (len != sizeof(d))
		return -EINVAL;
	memcpy(&d, v, sizeof(d));
	r->bytes += le64toh(d.len);
	r->items++;
	return 0;
}

static struct rmap_tally rmap_tally(struct fx *f)
{
	struct smr_key a = { 0, 0, 0 }, b = { UINT64_MAX, 0xff, UINT64_MAX };
	struct rmap_tally r = { 0 };

	SMR_ASSERT_OK(smr_bt_iterate(f->cow, SMR_TREE_RMAP, &a, &b, rmap_add,
				     &r));
	return r;
}

static uint64_t rmap_bytes(struct fx *f)
{
	return rmap_tally(f).bytes;
}

static int ext_sum(void *arg, uint64_t ino, uint64_t foff, uint64_t dev,
		   uint64_t len)
{
	(void)ino;
	(void)foff;
	(void)dev;
	*(uint64_t *)arg += len;
	return 0;
}

static uint64_t mapped_bytes(struct fx *f)
{
	uint64_t sum = 0;

	SMR_ASSERT_OK(smr_ns_for_each_extent(f->ns, ext_sum, &sum));
	return sum;
}

/* ------------------------------------------------------------------------
 * Clean one zone by hand
 * ------------------------------------------------------------------------ */

static void test_clean_zone(void)
{
	struct smr_cow_gc_stats st0, st1;
	uint8_t *buf = malloc(FSZ);
	uint64_t ino[24];
	struct fx f;
	uint32_t zno;
	char name[32];
	int rc;

	fx_new(&f, "zone");
	for (int i = 0; i < 24; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		ino[i] = mkfile(&f, name);
		pattern(buf, FSZ, (uint64_t)i);
		SMR_ASSERT_OK(write_file(&f, ino[i], 0, buf, FSZ));
	}
	/* Overwrite a block in the middle of every other file, and half of
	 * every fourth: extents get split and trimmed. */
	for (int i = 0; i < 24; i += 2) {
		pattern(buf, FSZ, (uint64_t)i + 100);
		SMR_ASSERT_OK(write_file(&f, ino[i], 0, buf, FSZ));
	}
	/* The second commit hands the first one's frees to the allocator. */
	SMR_ASSERT_OK(smr_ns_sync(f.ns));
	SMR_ASSERT_OK(smr_cow_commit_forced(f.cow));
	CU_ASSERT_EQUAL(rmap_bytes(&f), mapped_bytes(&f));

	rc = smr_alloc_gc_pick(f.cow->alloc, SMR_GC_GREEDY, &zno);
	SMR_ASSERT_OK(rc);
	CU_ASSERT(smr_alloc_zone_live(f.cow->alloc, zno) > 0);
	SMR_ASSERT_OK(smr_cow_clean_zone(f.cow, zno));
	CU_ASSERT_EQUAL(smr_alloc_zone_live(f.cow->alloc, zno), 0);
	CU_ASSERT_EQUAL(smr_dev_zone_cond(f.dev, zno), SMR_ZONE_COND_EMPTY);
	CU_ASSERT_EQUAL(rmap_bytes(&f), mapped_bytes(&f));
	for (int i = 0; i < 24; i++)
		CU_ASSERT(file_is(&f, ino[i], i % 2 ? (uint64_t)i :
					 (uint64_t)i + 100, FSZ));
	audit(&f);
	smr_cow_gc_stats(f.cow, &st0);
	CU_ASSERT(st0.user_bytes >= 36 * FSZ);
	CU_ASSERT(st0.reloc_bytes > 0);
	CU_ASSERT(st0.zones_reset > 0);
	CU_ASSERT_EQUAL(st0.gc_zones, 1);
	fx_close(&f);

	/* And after a remount, figures included. */
	fx_open(&f);
	smr_cow_gc_stats(f.cow, &st1);
	CU_ASSERT_EQUAL(st1.user_bytes, st0.user_bytes);
	CU_ASSERT_EQUAL(st1.reloc_bytes, st0.reloc_bytes);
	CU_ASSERT(st1.device_bytes >= st0.device_bytes);
	CU_ASSERT(st1.zones_reset >= st0.zones_reset);
	CU_ASSERT_EQUAL(st1.gc_zones, 1);
	CU_ASSERT_EQUAL(st1.gc_runs, st0.gc_runs);
	CU_ASSERT(st1.gc_usecs > 0);
	CU_ASSERT(st1.gc_usecs <= st0.gc_usecs);
	for (int i = 0; i < 24; i++)
		CU_ASSERT(file_is(&f, ino[i], i % 2 ? (uint64_t)i :
					 (uint64_t)i + 100, FSZ));
	audit(&f);
	/* Clean every zone worth cleaning: still the same files. */
	rc = smr_cow_clean(f.cow, SMR_COW_GC_COST_BENEFIT, NZONES);
	CU_ASSERT(rc >= 0);
	for (int i = 0; i < 24; i++)
		CU_ASSERT(file_is(&f, ino[i], i % 2 ? (uint64_t)i :
					 (uint64_t)i + 100, FSZ));
	audit(&f);
	fx_close(&f);
	free(buf);
}

/* ------------------------------------------------------------------------
 * Files written in small pieces stay in few pieces
 * ------------------------------------------------------------------------ */

static unsigned int rmap_items(struct fx *f)
{
	return rmap_tally(f).items;
}

struct ino_ext {
	uint64_t ino, dev;
	unsigned int n;
};

static int ino_ext(void *arg, uint64_t ino, uint64_t foff, uint64_t dev,
		   uint64_t len)
{
	struct ino_ext *w = arg;

	(void)foff;
	(void)len;
	if (ino == w->ino) {
		w->n++;
		w->dev = dev;
	}
	return 0;
}

/*
 * A file appended a block at a time: the blocks of one commit get one
 * reverse-map entry, not one each, and the copies of blocks written
 * across commits are merged again into items as the cleaner moves them,
 * or the map would grow by an item per block and the cleaner move them
 * one by one.
 */
static void test_small_writes(void)
{
	uint8_t *buf = malloc(64 * BS), *filler;
	struct ino_ext w = { 0 };
	uint64_t one, each;
	unsigned int before;
	struct fx f;

	fx_new(&f, "small");
	one = mkfile(&f, "one");
	each = mkfile(&f, "each");
	pattern(buf, 64 * BS, 1);
	SMR_ASSERT_OK(smr_cow_commit_forced(f.cow));
	before = rmap_items(&f);
	for (int i = 0; i < 64; i++)
		SMR_ASSERT_OK(write_file(&f, one, (uint64_t)i * BS,
					 buf + i * BS, BS));
	SMR_ASSERT_OK(smr_cow_commit_forced(f.cow));
	/* One run, in one zone or across two. */
	CU_ASSERT(rmap_items(&f) - before <= 2);
	before = rmap_items(&f);
	for (int i = 0; i < 64; i++) {
		SMR_ASSERT_OK(write_file(&f, each, (uint64_t)i * BS,
					 buf + i * BS, BS));
		SMR_ASSERT_OK(smr_cow_commit_forced(f.cow));
	}
	CU_ASSERT(rmap_items(&f) - before >= 64);
	/* Items of 32 blocks, whatever the commits. */
	w.ino = each;
	/* The zone is cleaned only once it is full. */
	filler = malloc(ZONE);
	CU_ASSERT_FATAL(filler != NULL);
	pattern(filler, ZONE, 2);
	SMR_ASSERT_OK(write_file(&f, mkfile(&f, "filler"), 0, filler, ZONE));
	free(filler);
	SMR_ASSERT_OK(smr_ns_for_each_extent(f.ns, ino_ext, &w));
	CU_ASSERT(w.n <= 3);
	SMR_ASSERT_OK(smr_cow_clean_zone(f.cow,
					 smr_dev_zone_no(f.dev, w.dev)));
	SMR_ASSERT_OK(smr_cow_commit_forced(f.cow));
	w.n = 0;
	SMR_ASSERT_OK(smr_ns_for_each_extent(f.ns, ino_ext, &w));
	CU_ASSERT(w.n <= 3);
	CU_ASSERT(file_is(&f, one, 1, 64 * BS));
	CU_ASSERT(file_is(&f, each, 1, 64 * BS));
	audit(&f);
	fx_close(&f);
	free(buf);
}

/* ------------------------------------------------------------------------
 * A block that changes while it is moved is not moved
 * ------------------------------------------------------------------------ */

struct racer {
	struct fx *f;
	int calls, moved, dropped;
};

static struct racer racer;


/*
 * An empty tree's root leaf in the zone cleaned: it has no key to find it
 * by, and the tree's type refuses any item a put could dirty it with (the
 * reverse map's takes only extent keys); it moves all the same. Without
 * conventional zones, so that the nodes lie in sequential ones; the
 * namespace changes, writing no data, until the zone of the empty reverse
 * map's root is full.
 */
static void test_empty_root(void)
{
	uint8_t *buf = malloc(FSZ);
	struct smr_ns_attr a;
	uint32_t zno;
	struct fx f;
	char name[32];
	int i;

	fx_new_cnv(&f, "emptyroot", 0);
	pattern(buf, FSZ, 7);
	SMR_ASSERT_OK(write_file(&f, mkfile(&f, "f"), 0, buf, FSZ));
	SMR_ASSERT_OK(smr_ns_sync(f.ns));
	SMR_ASSERT_OK(smr_ns_unlink(f.ns, &cr, ROOT, "f"));
	SMR_ASSERT_OK(smr_ns_sync(f.ns));
	CU_ASSERT(f.cow->trees[SMR_TREE_RMAP].addr != 0);
	CU_ASSERT_EQUAL(f.cow->trees[SMR_TREE_RMAP].nr_items, 0);
	zno = (uint32_t)(f.cow->trees[SMR_TREE_RMAP].addr / ZONE);
	for (i = 0; i < 4096 && smr_dev_zone_cond(f.dev, zno) !=
					SMR_ZONE_COND_FULL; i++) {
		snprintf(name, sizeof(name), "d%d", i);
		SMR_ASSERT_OK(smr_ns_mkdir(f.ns, &cr, ROOT, name, 0755, &a));
		smr_ns_release(f.ns, a.ino);
		SMR_ASSERT_OK(smr_ns_sync(f.ns));
	}
	CU_ASSERT_EQUAL(smr_dev_zone_cond(f.dev, zno), SMR_ZONE_COND_FULL);
	CU_ASSERT_EQUAL(f.cow->trees[SMR_TREE_RMAP].addr / ZONE, zno);
	SMR_ASSERT_OK(smr_cow_clean_zone(f.cow, zno));
	CU_ASSERT(f.cow->trees[SMR_TREE_RMAP].addr / ZONE != zno);
	CU_ASSERT_EQUAL(smr_alloc_zone_live(f.cow->alloc, zno), 0);
	CU_ASSERT_EQUAL(smr_dev_zone_cond(f.dev, zno), SMR_ZONE_COND_EMPTY);
	audit(&f);
	fx_close(&f);
	free(buf);
}

/* The hook the namespace registered, with a write to the same range
 * slipped in between the copy and the repointing. */
static int racing_hook(void *arg, const struct smr_key *owner,
		       uint64_t old_off, uint64_t new_off, uint64_t len)
{
	struct racer *r = &racer;
	uint8_t *buf = malloc(len);
	int rc;

	(void)arg;
	if (r->calls++ % 2 == 0) {
		pattern(buf, len, owner->objid * 1000 + owner->offset);
		CU_ASSERT_EQUAL(smr_ns_write(r->f->ns, &cr, owner->objid,
					     owner->offset, buf, len),
				(ssize_t)len);
	}
	free(buf);
	rc = ns_relocate_hook(r->f->ns, owner, old_off, new_off, len);
	if (rc == 1)
		r->moved++;
	else if (rc == 0)
		r->dropped++;
	return rc;
}

static void test_stale_move(void)
{
	uint8_t *buf = malloc(FSZ), *want = malloc(FSZ), *got = malloc(FSZ);
	uint64_t ino[16];
	struct fx f;
	char name[32];
	int rc;

	fx_new(&f, "stale");
	for (int i = 0; i < 16; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		ino[i] = mkfile(&f, name);
		pattern(buf, FSZ, (uint64_t)i);
		SMR_ASSERT_OK(write_file(&f, ino[i], 0, buf, FSZ));
	}
	for (int i = 0; i < 16; i += 2)
		SMR_ASSERT_OK(smr_ns_unlink(f.ns, &cr, ROOT,
					    (snprintf(name, sizeof(name), "f%d",
						      i), name)));
	SMR_ASSERT_OK(smr_ns_sync(f.ns));
	SMR_ASSERT_OK(smr_cow_commit_forced(f.cow));
	memset(&racer, 0, sizeof(racer));
	racer.f = &f;
	smr_cow_set_relocate_hook(f.cow, racing_hook, NULL);
	rc = smr_cow_clean(f.cow, SMR_COW_GC_GREEDY, 4);
	CU_ASSERT(rc >= 0);
	CU_ASSERT(racer.dropped > 0);
	CU_ASSERT(racer.moved > 0);
	smr_cow_set_relocate_hook(f.cow, ns_relocate_hook, f.ns);
	/* Each file holds what was written last, moved or not. */
	for (int i = 1; i < 16; i += 2) {
		pattern(want, FSZ, (uint64_t)i);
		CU_ASSERT_EQUAL(smr_ns_read(f.ns, ino[i], 0, FSZ, got),
				(ssize_t)FSZ);
		/* The racing writes replaced whole reverse-map pieces: find
		 * them by comparing block by block against either source. */
		for (uint64_t b = 0; b < FSZ; b += 4096) {
			bool old = !memcmp(want + b, got + b, 4096);

			if (!old) {
				/* Must be a racing write's pattern for some
				 * piece starting at or before b. */
				bool found = false;

				for (uint64_t s = 0; s <= b && !found;
				     s += 4096) {
					pattern(buf, FSZ - s,
						ino[i] * 1000 + s);
					found = !memcmp(buf + (b - s), got + b,
							4096);
				}
				CU_ASSERT(found);
			}
		}
	}
	audit(&f);
	CU_ASSERT_EQUAL(rmap_bytes(&f), mapped_bytes(&f));
	fx_close(&f);
	free(buf);
	free(want);
	free(got);
}

/* ------------------------------------------------------------------------
 * Fill to ENOSPC, delete half, fill again
 * ------------------------------------------------------------------------ */

struct model {
	uint64_t ino[MAXF];
	uint64_t seed[MAXF];
	char name[MAXF][32];
	bool live[MAXF];
	int n;
};

/* Write files until the device is full; returns the bytes written. */
static uint64_t fill(struct fx *f, struct model *m, uint8_t *buf,
		     uint64_t round)
{
	uint64_t bytes = 0;
	char name[32];

	while (m->n < MAXF) {
		int i = m->n;
		int rc;

		snprintf(name, sizeof(name), "r%llu-%d",
			 (unsigned long long)round, i);
		snprintf(m->name[i], sizeof(m->name[i]), "%s", name);
		m->ino[i] = mkfile(f, name);
		m->seed[i] = round * 100000 + (uint64_t)i;
		pattern(buf, FSZ, m->seed[i]);
		rc = write_file(f, m->ino[i], 0, buf, FSZ);
		m->n++;
		if (rc) {
			CU_ASSERT_EQUAL(rc, -ENOSPC);
			/* What did not fit goes. */
			SMR_ASSERT_OK(smr_ns_unlink(f->ns, &cr, ROOT, name));
			m->live[i] = false;
			break;
		}
		m->live[i] = true;
		bytes += FSZ;
	}
	return bytes;
}

static void test_fill_delete(void)
{
	uint8_t *buf = malloc(FSZ);
	struct model *m = calloc(1, sizeof(*m));
	uint64_t first = 0, freed = 0;
	struct fx f;

	fx_new(&f, "fill");
	for (uint64_t round = 0; round < 6; round++) {
		uint64_t got = fill(&f, m, buf, round);
		if (getenv("SMR_TEST_VERBOSE"))
			printf("round %llu: %llu bytes written, %llu freed\n",
			       (unsigned long long)round,
			       (unsigned long long)got,
			       (unsigned long long)freed);

		if (round == 0) {
			first = got;
			/* Most of the device is usable. */
			CU_ASSERT(got > (NZONES - 12) * ZONE / 2);
		} else {
			/* Space came back: the refill takes what was
			 * deleted, less at most two zones. */
			CU_ASSERT(got + 2 * ZONE >= freed);
		}
		for (int i = 0; i < m->n; i++)
			if (m->live[i])
				CU_ASSERT(file_is(&f, m->ino[i], m->seed[i],
						  FSZ));
		SMR_ASSERT_OK(smr_ns_sync(f.ns));
		audit(&f);
		CU_ASSERT_EQUAL(rmap_bytes(&f), mapped_bytes(&f));
		/* Delete every other live file. */
		freed = 0;
		for (int i = 0, k = 0; i < m->n; i++) {
			if (!m->live[i] || k++ % 2)
				continue;
			SMR_ASSERT_OK(smr_ns_unlink(f.ns, &cr, ROOT,
						    m->name[i]));
			m->live[i] = false;
			freed += FSZ;
		}
		SMR_ASSERT_OK(smr_ns_sync(f.ns));
		/* The model keeps only live files, renumbered. */
		{
			int j = 0;

			for (int i = 0; i < m->n; i++) {
				if (!m->live[i])
					continue;
				m->ino[j] = m->ino[i];
				m->seed[j] = m->seed[i];
				memcpy(m->name[j], m->name[i],
				       sizeof(m->name[j]));
				m->live[j] = true;
				j++;
			}
			m->n = j;
		}
		fx_close(&f);
		fx_open(&f);
	}
	CU_ASSERT(first > 0);
	for (int i = 0; i < m->n; i++)
		CU_ASSERT(file_is(&f, m->ino[i], m->seed[i], FSZ));
	audit(&f);
	fx_close(&f);
	free(m);
	free(buf);
}

/* ------------------------------------------------------------------------
 * Metamorphic: cleaning after every operation changes nothing visible
 * ------------------------------------------------------------------------ */

#define META_FILES 12
#define META_OPS 300

/* With @bg, the background thread may be in the middle of a pass, with
 * copies taken but not yet referenced: the audits wait for a quiet
 * engine (after the remount). */
static void meta_run(struct fx *f, bool clean, bool bg, uint8_t *out)
{
	uint64_t s = 42, ino[META_FILES];
	uint8_t *buf = malloc(FSZ);
	char name[32];

	for (int i = 0; i < META_FILES; i++) {
		snprintf(name, sizeof(name), "m%d", i);
		ino[i] = mkfile(f, name);
		pattern(buf, FSZ, (uint64_t)i);
		SMR_ASSERT_OK(write_file(f, ino[i], 0, buf, FSZ));
	}
	for (int op = 0; op < META_OPS; op++) {
		int i = (int)(smr_test_rand(&s) % META_FILES);
		uint64_t off = (smr_test_rand(&s) % (FSZ / 4096)) * 4096;
		uint64_t len = SMR_MIN(FSZ - off,
				       (1 + smr_test_rand(&s) % 8) * 4096);
		uint64_t unaligned = smr_test_rand(&s) % 3 == 0 ? 100 : 0;

		pattern(buf, len, (uint64_t)op + 7);
		if (off + len > FSZ || len <= unaligned)
			continue;
		SMR_ASSERT_OK(write_file(f, ino[i], off + unaligned, buf,
					 len - unaligned));
		if (op % 10 == 0)
			SMR_ASSERT_OK(smr_ns_sync(f->ns));
		if (clean)
			CU_ASSERT(smr_cow_clean(f->cow, SMR_COW_GC_GREEDY, 1)
				  >= 0);
	}
	for (int i = 0; i < META_FILES; i++)
		CU_ASSERT_EQUAL(smr_ns_read(f->ns, ino[i], 0, FSZ,
					    out + (size_t)i * FSZ),
				(ssize_t)FSZ);
	SMR_ASSERT_OK(smr_ns_sync(f->ns));
	if (!bg) {
		audit(f);
		CU_ASSERT_EQUAL(rmap_bytes(f), mapped_bytes(f));
	}
	free(buf);
}

static void test_metamorphic(void)
{
	uint8_t *a = malloc(META_FILES * FSZ), *b = malloc(META_FILES * FSZ);
	struct smr_cow_gc_stats st;
	struct fx f;

	fx_new(&f, "meta");
	meta_run(&f, false, false, a);
	fx_close(&f);
	fx_new(&f, "meta");
	meta_run(&f, true, false, b);
	smr_cow_gc_stats(f.cow, &st);
	CU_ASSERT(st.gc_zones > 0);
	CU_ASSERT(st.reloc_bytes > 0);
	CU_ASSERT(st.device_bytes > st.user_bytes);
	fx_close(&f);
	CU_ASSERT(!memcmp(a, b, META_FILES * FSZ));
	free(a);
	free(b);
}


/* ------------------------------------------------------------------------
 * Power cut at every write of a cleaning pass
 * ------------------------------------------------------------------------ */

/* Copy the files of directory @from into the existing directory @to. */
static void copy_dir(const char *from, const char *to)
{
	static uint8_t buf[1 << 16];
	DIR *d = opendir(from);
	struct dirent *de;

	CU_ASSERT_FATAL(d != NULL);
	while ((de = readdir(d))) {
		char a[4400], b[4400];
		int in, out;
		ssize_t n;

		if (de->d_name[0] == '.')
			continue;
		snprintf(a, sizeof(a), "%s/%s", from, de->d_name);
		snprintf(b, sizeof(b), "%s/%s", to, de->d_name);
		in = open(a, O_RDONLY);
		out = open(b, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		CU_ASSERT_FATAL(in >= 0 && out >= 0);
		while ((n = read(in, buf, sizeof(buf))) > 0)
			CU_ASSERT_EQUAL_FATAL(write(out, buf, (size_t)n), n);
		close(in);
		close(out);
	}
	closedir(d);
}

#define PC_FILES 24

/* One cleaning pass on a copy of @tmpl, the power cut after @k writes
 * (UINT64_MAX: never); returns the writes the pass made. Then reopen and
 * check that nothing was lost. */
static uint64_t pc_run(const char *tmpl, const char *work, uint64_t k,
		       bool tear, const uint64_t *ino)
{
	struct smr_fault_rule rule = {
		.what = tear ? SMR_FAULT_TEAR_WRITE : SMR_FAULT_DROP_WRITES,
		.after = k, .tear_bytes = 4096 };
	struct smr_cow_opts o = { .gc_off = true };
	struct smr_fault_stats st;
	struct smr_dev *lower, *fdev;
	struct smr_fault *flt;
	struct smr_cow *c;
	struct smr_ns *ns;
	struct fx f;

	copy_dir(tmpl, work);
	SMR_ASSERT_OK(smr_dev_open(work, NULL, &lower));
	SMR_ASSERT_OK(smr_fault_open(lower, &flt, &fdev));
	SMR_ASSERT_OK(smr_cow_open(fdev, &o, &c));
	SMR_ASSERT_OK(smr_ns_open(c, NULL, &ns));
	if (k != UINT64_MAX)
		SMR_ASSERT_OK(smr_fault_arm(flt, &rule));
	smr_fault_stats(flt, &st);
	{
		uint64_t before = st.writes;
		int rc = smr_cow_clean(c, SMR_COW_GC_GREEDY, 2);

		/* Without a cut the pass empties zones. */
		if (k == UINT64_MAX)
			CU_ASSERT(rc > 0);
		smr_fault_stats(flt, &st);
		st.writes -= before;
	}
	smr_ns_close(ns);
	smr_cow_close(c); /* its commit may be lost to the cut */
	smr_dev_close(fdev);
	smr_fault_free(flt);
	smr_dev_close(lower);

	/* Recovery: everything there, every audit clean. */
	snprintf(f.path, sizeof(f.path), "%s", work);
	fx_open(&f);
	for (int i = 1; i < PC_FILES; i += 2)
		CU_ASSERT(file_is(&f, ino[i], (uint64_t)i, FSZ));
	audit(&f);
	CU_ASSERT_EQUAL(rmap_bytes(&f), mapped_bytes(&f));
	fx_close(&f);
	return st.writes;
}

static void test_power_cut(void)
{
	uint8_t *buf = malloc(FSZ);
	uint64_t ino[PC_FILES], total, step;
	char tmpl[4200], work[4200], name[32];
	struct fx f;

	fx_new(&f, "pc");
	for (int i = 0; i < PC_FILES; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		ino[i] = mkfile(&f, name);
		pattern(buf, FSZ, (uint64_t)i);
		SMR_ASSERT_OK(write_file(&f, ino[i], 0, buf, FSZ));
	}
	for (int i = 0; i < PC_FILES; i += 2) {
		snprintf(name, sizeof(name), "f%d", i);
		SMR_ASSERT_OK(smr_ns_unlink(f.ns, &cr, ROOT, name));
	}
	SMR_ASSERT_OK(smr_ns_sync(f.ns));
	fx_close(&f);
	snprintf(tmpl, sizeof(tmpl), "%s", f.path);
	snprintf(work, sizeof(work), "%s-work", f.path);
	CU_ASSERT_FATAL(mkdir(work, 0755) == 0);

	total = pc_run(tmpl, work, UINT64_MAX, false, ino);
	CU_ASSERT(total > 2);
	if (getenv("SMR_TEST_VERBOSE"))
		printf("a cleaning pass makes %llu writes\n",
		       (unsigned long long)total);
	step = total <= 60 ? 1 : total / 60 + 1;
	for (uint64_t k = 0; k < total; k += step)
		pc_run(tmpl, work, k, k % 2, ino);
	free(buf);
}

/* A fresh filesystem @name opened with the cleaner's options of @o. */
static void fx_new_opts(struct fx *f, const char *name,
			const struct smr_cow_opts *o)
{
	fx_new(f, name);
	fx_close(f);
	SMR_ASSERT_OK(smr_dev_open(f->path, NULL, &f->dev));
	SMR_ASSERT_OK(smr_cow_open(f->dev, o, &f->cow));
	SMR_ASSERT_OK(smr_ns_open(f->cow, NULL, &f->ns));
}

/* Files f0..f(n-1) of FSZ bytes, f<i> of pattern i, their inodes in @ino;
 * three zones' worth for n = 48. */
static void write_files(struct fx *f, int n, uint64_t *ino)
{
	uint8_t *buf = malloc(FSZ);
	char name[32];

	CU_ASSERT_FATAL(buf != NULL);
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		ino[i] = mkfile(f, name);
		pattern(buf, FSZ, (uint64_t)i);
		SMR_ASSERT_OK(write_file(f, ino[i], 0, buf, FSZ));
	}
	free(buf);
}

/* ------------------------------------------------------------------------
 * The background thread cleaning while files are written
 * ------------------------------------------------------------------------ */

static void test_background(void)
{
	struct smr_cow_opts o = { .gc_low = NZONES, .gc_high = NZONES + 1,
				  .gc_policy = SMR_COW_GC_COST_BENEFIT };
	uint8_t *a = malloc(META_FILES * FSZ), *b = malloc(META_FILES * FSZ);
	uint64_t ino[META_FILES];
	char name[32];
	struct fx f;

	/* The same workload as the metamorphic test, with the thread told to
	 * clean all the time: it races every write; the files must end as
	 * without it. */
	fx_new(&f, "bgref");
	meta_run(&f, false, false, a);
	fx_close(&f);
	fx_new_opts(&f, "bg", &o);
	meta_run(&f, false, true, b);
	CU_ASSERT(!memcmp(a, b, META_FILES * FSZ));
	{
		struct smr_cow_gc_stats st;

		/* The writes woke the thread (it has no timer). */
		smr_cow_gc_stats(f.cow, &st);
		CU_ASSERT(st.gc_runs > 0);
		if (getenv("SMR_TEST_VERBOSE"))
			printf("background: %llu passes, %llu zones "
			       "emptied\n",
			       (unsigned long long)st.gc_runs,
			       (unsigned long long)st.gc_zones);
	}
	fx_close(&f);
	/* And after a remount. */
	fx_open(&f);
	for (int i = 0; i < META_FILES; i++) {
		struct smr_ns_attr at;

		snprintf(name, sizeof(name), "m%d", i);
		SMR_ASSERT_OK(smr_ns_lookup(f.ns, ROOT, name, &at));
		ino[i] = at.ino;
		CU_ASSERT_EQUAL(smr_ns_read(f.ns, ino[i], 0, FSZ,
					    b + (size_t)i * FSZ),
				(ssize_t)FSZ);
	}
	CU_ASSERT(!memcmp(a, b, META_FILES * FSZ));
	audit(&f);
	CU_ASSERT_EQUAL(rmap_bytes(&f), mapped_bytes(&f));
	fx_close(&f);
	free(a);
	free(b);
}

/* ------------------------------------------------------------------------
 * A background pass runs only when it wins enough
 * ------------------------------------------------------------------------ */

static void test_auto_min_win(void)
{
	struct smr_cow_opts o = { .gc_off = true, .gc_low = NZONES,
				  .gc_high = NZONES + 1,
				  .gc_policy = SMR_COW_GC_GREEDY };
	const int per_zone = (int)(ZONE / FSZ);
	struct smr_cow_gc_stats st0, st1;
	uint64_t ino[48];
	char name[32];
	struct fx f;
	int rc;

	fx_new_opts(&f, "minwin", &o);
	write_files(&f, 48, ino);
	/* One file in 16 of a full zone dies: too little for a pass. */
	SMR_ASSERT_OK(smr_ns_unlink(f.ns, &cr, ROOT, "f0"));
	SMR_ASSERT_OK(smr_ns_sync(f.ns));
	SMR_ASSERT_OK(smr_cow_commit_forced(f.cow));
	smr_cow_gc_stats(f.cow, &st0);
	rc = smr_cow_clean_auto(f.cow);
	CU_ASSERT_EQUAL(rc, 0);
	smr_cow_gc_stats(f.cow, &st1);
	CU_ASSERT_EQUAL(st1.gc_runs, st0.gc_runs);
	/* A third of the zone: worth it. */
	for (int i = 1; i < per_zone / 3 + 1; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		SMR_ASSERT_OK(smr_ns_unlink(f.ns, &cr, ROOT, name));
	}
	SMR_ASSERT_OK(smr_ns_sync(f.ns));
	SMR_ASSERT_OK(smr_cow_commit_forced(f.cow));
	rc = smr_cow_clean_auto(f.cow);
	CU_ASSERT(rc >= 1);
	smr_cow_gc_stats(f.cow, &st1);
	CU_ASSERT(st1.gc_zones > st0.gc_zones);
	for (int i = per_zone / 3 + 1; i < 48; i++)
		CU_ASSERT(file_is(&f, ino[i], (uint64_t)i, FSZ));
	audit(&f);
	fx_close(&f);
}

/* ------------------------------------------------------------------------
 * A remount's cleaner options (smr_cow_set_gc)
 * ------------------------------------------------------------------------ */

static void test_set_gc(void)
{
	/* As the daemon mounts with gc=off. */
	struct smr_cow_opts o = { .gc_off = true, .gc_need_only = true };
	const int per_zone = (int)(ZONE / FSZ);
	struct smr_cow_gc_stats st0, st1;
	uint64_t ino[48];
	char name[32];
	struct fx f;

	fx_new_opts(&f, "setgc", &o);
	write_files(&f, 48, ino);
	for (int i = 0; i < per_zone / 2; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		SMR_ASSERT_OK(smr_ns_unlink(f.ns, &cr, ROOT, name));
	}
	SMR_ASSERT_OK(smr_ns_sync(f.ns));
	SMR_ASSERT_OK(smr_cow_commit_forced(f.cow));
	smr_cow_gc_stats(f.cow, &st0);
	/* Only when needed: zones are free, so nothing is cleaned. */
	CU_ASSERT_EQUAL(smr_cow_clean_auto(f.cow), 0);
	/* Refused, and nothing changes: watermarks the device cannot have,
	 * a high one not above the low one, a policy that is none. */
	SMR_ASSERT_RC(smr_cow_set_gc(f.cow, SMR_COW_GC_GREEDY, NZONES, 0),
		      -EINVAL);
	SMR_ASSERT_RC(smr_cow_set_gc(f.cow, SMR_COW_GC_GREEDY, 2, NZONES),
		      -EINVAL);
	SMR_ASSERT_RC(smr_cow_set_gc(f.cow, SMR_COW_GC_GREEDY, 5, 5), -EINVAL);
	SMR_ASSERT_RC(smr_cow_set_gc(f.cow, 7, 0, 0), -EINVAL);
	CU_ASSERT_EQUAL(smr_cow_clean_auto(f.cow), 0);
	/* Watermarks alone keep cleaning to need only. */
	SMR_ASSERT_OK(smr_cow_set_gc(f.cow, SMR_COW_GC_KEEP, NZONES - 2,
				     NZONES - 1));
	CU_ASSERT_EQUAL(smr_cow_clean_auto(f.cow), 0);
	/* gc_high at or below the new low one, counting the one set. */
	SMR_ASSERT_RC(smr_cow_set_gc(f.cow, SMR_COW_GC_KEEP, NZONES - 1, 0),
		      -EINVAL);
	/* A policy: the pass cleans ahead of need, up to the watermarks. */
	SMR_ASSERT_OK(smr_cow_set_gc(f.cow, SMR_COW_GC_GREEDY, 0, 0));
	CU_ASSERT(smr_cow_clean_auto(f.cow) >= 1);
	smr_cow_gc_stats(f.cow, &st1);
	CU_ASSERT(st1.gc_zones > st0.gc_zones);
	/* And gc=off again. */
	SMR_ASSERT_OK(smr_cow_set_gc(f.cow, SMR_COW_GC_NEED_ONLY, 0, 0));
	CU_ASSERT_EQUAL(smr_cow_clean_auto(f.cow), 0);
	for (int i = per_zone / 2; i < 48; i++)
		CU_ASSERT(file_is(&f, ino[i], (uint64_t)i, FSZ));
	audit(&f);
	fx_close(&f);
}

/* ------------------------------------------------------------------------
 * Unaligned writes clean too when the device is full
 * ------------------------------------------------------------------------ */

static void test_unaligned_full(void)
{
	uint8_t *buf = malloc(FSZ);
	struct model *m = calloc(1, sizeof(*m));
	uint64_t freed = 0, got = 0;
	struct fx f;

	fx_new(&f, "unal");
	fill(&f, m, buf, 0);
	for (int i = 0; i < m->n; i += 2) {
		if (!m->live[i])
			continue;
		SMR_ASSERT_OK(smr_ns_unlink(f.ns, &cr, ROOT, m->name[i]));
		m->live[i] = false;
		freed += FSZ;
	}
	SMR_ASSERT_OK(smr_ns_sync(f.ns));
	/* Refill with writes that start and end inside a block: they go
	 * through the path that holds the namespace lock. */
	for (int i = 0; i < MAXF; i++) {
		char name[32];
		uint64_t ino;
		ssize_t n;

		snprintf(name, sizeof(name), "u%d", i);
		ino = mkfile(&f, name);
		pattern(buf, FSZ, 777 + (uint64_t)i);
		n = smr_ns_write(f.ns, &cr, ino, 100, buf, FSZ - 200);
		if (n != (ssize_t)(FSZ - 200)) {
			CU_ASSERT(n == -ENOSPC || (n >= 0 &&
						   n < (ssize_t)(FSZ - 200)));
			break;
		}
		got += FSZ;
	}
	CU_ASSERT(got + 2 * ZONE >= freed);
	for (int i = 0; i < m->n; i++)
		if (m->live[i])
			CU_ASSERT(file_is(&f, m->ino[i], m->seed[i], FSZ));
	SMR_ASSERT_OK(smr_ns_sync(f.ns));
	audit(&f);
	fx_close(&f);
	fx_open(&f);
	audit(&f);
	fx_close(&f);
	free(m);
	free(buf);
}

/* Where file @ino's block at @foff lies on the device. */
struct ext_at {
	uint64_t ino, foff, dev;
};

static int find_ext(void *arg, uint64_t ino, uint64_t foff, uint64_t dev,
		    uint64_t len)
{
	struct ext_at *w = arg;

	if (ino == w->ino && foff <= w->foff && w->foff < foff + len)
		w->dev = dev + (w->foff - foff);
	return 0;
}

/*
 * A zone whose last blocks a writer has taken but not yet written is full
 * to the allocator and still open on the device: the cleaner cannot clean
 * it yet. When it is the best victim, the cleaner cleans the next best
 * rather than giving up (a writer out of space would get ENOSPC while
 * other zones were worth cleaning).
 */
static void test_busy_victim(void)
{
	uint8_t *buf = malloc(5 * ZONE), *zeros;
	struct ext_at w = { .foff = 0 };
	struct smr_alloc_hint hint = { .contiguous = true };
	struct smr_extent x;
	uint64_t zs, wp, tail, first;
	uint32_t z, pick;
	struct fx f;

	fx_new(&f, "busy");
	w.ino = mkfile(&f, "x");
	pattern(buf, 5 * ZONE, 1);
	SMR_ASSERT_OK(write_file(&f, w.ino, 0, buf, 5 * ZONE));
	SMR_ASSERT_OK(smr_ns_for_each_extent(f.ns, find_ext, &w));
	first = w.dev;
	/* The same first 256 KiB three times: the open zone they go to
	 * holds one live copy and two dead ones. */
	for (int i = 0; i < 3; i++)
		SMR_ASSERT_OK(write_file(&f, w.ino, 0, buf, 256 * SMR_KIB));
	SMR_ASSERT_OK(smr_ns_sync(f.ns));
	SMR_ASSERT_OK(smr_cow_commit_forced(f.cow));
	SMR_ASSERT_OK(smr_ns_for_each_extent(f.ns, find_ext, &w));
	z = smr_dev_zone_no(f.dev, w.dev);
	zs = smr_dev_zone_start(f.dev, z);
	wp = smr_dev_zone_wp(f.dev, z);
	CU_ASSERT_FATAL(wp > zs && wp < zs + smr_dev_zone_cap(f.dev, z));
	tail = zs + smr_dev_zone_cap(f.dev, z) - wp;

	/* A writer takes the rest of that zone and has not written it. */
	CU_ASSERT_FATAL(smr_alloc_extent(f.cow->alloc, tail, &hint,
					 SMR_STREAM_HOT, &x, 1) == 1);
	CU_ASSERT_FATAL(x.off == wp && x.len == tail);
	SMR_ASSERT_OK(smr_alloc_gc_pick(f.cow->alloc, SMR_GC_GREEDY, &pick));
	CU_ASSERT_EQUAL(pick, z);
	CU_ASSERT_NOT_EQUAL(smr_dev_zone_cond(f.dev, z), SMR_ZONE_COND_FULL);

	/* The next best, the zone of the file's first copy, is cleaned. */
	CU_ASSERT_EQUAL(smr_cow_clean(f.cow, SMR_COW_GC_GREEDY, 1), 1);
	CU_ASSERT_EQUAL(smr_dev_zone_cond(f.dev, smr_dev_zone_no(f.dev, first)),
			SMR_ZONE_COND_EMPTY);

	/* The writer writes its blocks and lets them go. */
	zeros = calloc(1, tail);
	CU_ASSERT_FATAL(zeros != NULL);
	SMR_ASSERT_OK(smr_dev_write(f.dev, zeros, tail, x.off));
	SMR_ASSERT_OK(smr_alloc_free(f.cow->alloc, x.off, x.len));
	free(zeros);
	SMR_ASSERT_OK(smr_cow_commit_forced(f.cow));
	CU_ASSERT(file_is(&f, w.ino, 1, 5 * ZONE));
	audit(&f);
	fx_close(&f);
	free(buf);
}

/*
 * On a device that needs no cleaning (a regular file: the flash module), a
 * write that meets ENOSPC right after a delete gets the space by committing,
 * without the caller syncing first.
 */
static void test_file_refill(void)
{
	enum { CHUNK = 1024 * 1024 };
	uint8_t *buf = malloc(CHUNK);
	uint64_t a, b, filled = 0, refilled = 0;
	struct fx f;
	int fd;

	snprintf(f.path, sizeof(f.path), "%s/img", smr_test_tmpdir("frefill"));
	fd = open(f.path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_FATAL(ftruncate(fd, 64 * SMR_MIB) == 0);
	close(fd);
	SMR_ASSERT_OK(smr_dev_open(f.path, NULL, &f.dev));
	SMR_ASSERT_OK(smr_cow_format(f.dev, NULL, NULL));
	SMR_ASSERT_OK(smr_dev_close(f.dev));
	fx_open_mkfs(&f);

	a = mkfile(&f, "a");
	pattern(buf, CHUNK, 1);
	while (write_file(&f, a, filled, buf, CHUNK) == 0)
		filled += CHUNK;
	CU_ASSERT(filled >= 32 * SMR_MIB);
	SMR_ASSERT_OK(smr_ns_unlink(f.ns, &cr, ROOT, "a"));
	/* No sync: the write path has to get the space back itself. */
	b = mkfile(&f, "b");
	while (refilled < filled && write_file(&f, b, refilled, buf, CHUNK) == 0)
		refilled += CHUNK;
	CU_ASSERT_EQUAL(refilled, filled);
	SMR_ASSERT_OK(smr_ns_sync(f.ns));
	audit(&f);
	fx_close(&f);
	free(buf);
}

static const struct smr_test tests[] = {
	{ "clean_zone", test_clean_zone },
	{ "small_writes", test_small_writes },
	{ "empty_root", test_empty_root },
	{ "file_refill", test_file_refill },
	{ "stale_move", test_stale_move },
	{ "fill_delete_refill", test_fill_delete },
	{ "metamorphic", test_metamorphic },
	{ "power_cut", test_power_cut },
	{ "background", test_background },
	{ "auto_min_win", test_auto_min_win },
	{ "set_gc", test_set_gc },
	{ "unaligned_full", test_unaligned_full },
	{ "busy_victim", test_busy_victim },
	{ NULL, NULL },
};

static const struct smr_suite suites[] = {
	{ "clean", tests },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	return smr_test_main(argc, argv, suites);
}
