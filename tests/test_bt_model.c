/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_bt_model.c - the B+tree against a reference model.
 *
 * Random inserts, updates, puts, deletes, lookups, next/prev and range
 * iterations run on the tree (over the in-memory node store) and on a
 * reference map; every result is compared, and the whole tree is compared
 * and its structure checked at intervals, after commits and after
 * close/reopen. Phases alternate between growing and shrinking the tree, so
 * splits, merges, rebalancing and root changes all happen. A small node
 * cache makes most lookups go to the store.
 *
 * SMR_TEST_OPS sets the number of operations (default 1000000, about 20
 * seconds; a smaller count for a quick run).
 */
#include "testutil.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cow/cow_priv.h"
#include "cowtest.h"

#define DOMAIN 60000 /* key ids */

/* An engine over the in-memory store @ms, its FS tree typed for tests. */
static int open_mem(struct smr_memstore *ms, const struct smr_cow_opts *o,
		    struct smr_cow **cp)
{
	return smr_test_typed(smr_cow_open_store(&smr_store_mem_ops, ms, o, cp),
			      cp);
}

struct ref {
	uint8_t *present;
	uint16_t *len;
	uint32_t *seed;
	uint64_t nr;
};

/* Key ids map to keys in the same order. */
static void id_key(uint32_t id, struct smr_key *k)
{
	k->objid = 1000 + id / 16;
	k->type = (uint8_t)(1 + (id / 4) % 4);
	k->offset = (uint64_t)(id % 4) * 4096;
}

static int64_t key_id(const struct smr_key *k)
{
	if (k->objid < 1000 || k->type < 1 || k->type > 4 ||
	    k->offset % 4096 || k->offset / 4096 > 3)
		return -1;
	return (int64_t)((k->objid - 1000) * 16 + (uint64_t)(k->type - 1) * 4 +
			 k->offset / 4096);
}

static void fill_val(uint8_t *v, uint32_t len, uint32_t seed)
{
	uint64_t s = seed * 0x9e3779b97f4a7c15ULL + 1;

	for (uint32_t i = 0; i < len; i++) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		v[i] = (uint8_t)s;
	}
}

static uint32_t pick_len(uint64_t *rs)
{
	uint64_t r = smr_test_rand(rs) % 100;

	if (r < 70)
		return (uint32_t)(smr_test_rand(rs) % 48);
	if (r < 95)
		return (uint32_t)(smr_test_rand(rs) % 400);
	return (uint32_t)(smr_test_rand(rs) % (SMR_COW_MAX_ITEM + 1));
}

static bool check_val(const struct ref *r, uint32_t id, const uint8_t *v,
		      size_t len)
{
	uint8_t want[SMR_COW_MAX_ITEM];

	if (len != r->len[id])
		return false;
	fill_val(want, r->len[id], r->seed[id]);
	return memcmp(want, v, len) == 0;
}

struct cmp_ctx {
	const struct ref *r;
	int64_t next;   /* next id expected to be visited */
	int64_t last;   /* inclusive upper bound */
	uint64_t seen;
	bool bad;
};

static int cmp_fn(void *arg, const struct smr_key *key, const void *val,
		  size_t len)
{
	struct cmp_ctx *x = arg;
	int64_t id = key_id(key);

	while (x->next <= x->last && !x->r->present[x->next])
		x->next++;
	if (id < 0 || id != x->next || !check_val(x->r, (uint32_t)id, val, len)) {
		fprintf(stderr, "iterate: got id %" PRId64 " want %" PRId64 "\n",
			id, x->next);
		x->bad = true;
		return -EINVAL;
	}
	x->next++;
	x->seen++;
	return 0;
}

static void compare_range(struct smr_cow *c, const struct ref *r, uint32_t lo,
			  uint32_t hi)
{
	struct cmp_ctx x = { .r = r, .next = lo, .last = hi };
	struct smr_key from, to;

	id_key(lo, &from);
	id_key(hi, &to);
	SMR_ASSERT_OK(smr_bt_iterate(c, SMR_TREE_FS, &from, &to, cmp_fn, &x));
	while (x.next <= x.last && !r->present[x.next])
		x.next++;
	CU_ASSERT_FALSE(x.bad);
	CU_ASSERT(x.next > x.last);
}

static void compare_all(struct smr_cow *c, const struct ref *r)
{
	uint64_t n = 0;

	compare_range(c, r, 0, DOMAIN - 1);
	pthread_rwlock_rdlock(&c->lock);
	SMR_ASSERT_OK(smr_bt_check(c, SMR_TREE_FS, &n));
	SMR_ASSERT_OK(smr_cow_audit_locked(c));
	pthread_rwlock_unlock(&c->lock);
	CU_ASSERT_EQUAL(n, r->nr);
}

static int64_t ref_next(const struct ref *r, int64_t id, int dir)
{
	while (id >= 0 && id < DOMAIN && !r->present[id])
		id += dir;
	return id >= 0 && id < DOMAIN ? id : -1;
}

static unsigned long env_ops(unsigned long def)
{
	const char *s = getenv("SMR_TEST_OPS");

	return s ? strtoul(s, NULL, 0) : def;
}

/* Where the model test's engine lives: the memory store, or a zoned loop
 * directory through the device store. */
struct backend {
	struct smr_memstore *ms;
	char path[512];
	struct smr_dev *dev;
};

static int be_open(struct backend *be, const struct smr_cow_opts *o,
		   struct smr_cow **cp)
{
	int rc;

	if (be->ms)
		return open_mem(be->ms, o, cp);
	rc = smr_dev_open(be->path, NULL, &be->dev);
	if (!rc)
		rc = smr_test_cow_open(be->dev, o, cp);
	return rc;
}

static int be_close(struct backend *be, struct smr_cow *c)
{
	int rc = smr_cow_close(c);

	if (be->dev)
		smr_dev_close(be->dev);
	be->dev = NULL;
	return rc;
}

static void run_model(struct backend *be, unsigned long nops);

static void test_model(void)
{
	struct backend be = { .ms = smr_memstore_new(16384) };

	run_model(&be, env_ops(1000000));
	smr_memstore_free(be.ms);
}

/* The same through the device store on a zoned loop directory (fewer
 * operations: every commit goes to the device). */
static void test_model_zloop(void)
{
	struct smr_zloop_params p = { .capacity = 256 * SMR_MIB,
				      .zone_size = 4 * SMR_MIB };
	struct backend be = { 0 };
	struct smr_dev *dev;

	snprintf(be.path, sizeof(be.path), "%s/zl", smr_test_tmpdir("model"));
	SMR_ASSERT_OK(smr_zloop_create(be.path, &p));
	SMR_ASSERT_OK(smr_dev_open(be.path, NULL, &dev));
	SMR_ASSERT_OK(smr_cow_format(dev, NULL, NULL));
	smr_dev_close(dev);
	run_model(&be, env_ops(1000000) / 5);
}

static void run_model(struct backend *be, unsigned long nops)
{
	unsigned long fails = 0;
	struct smr_cow_opts o = { .cache_bytes = 2 * SMR_MIB,
				  .commit_secs = 3600 };
	struct ref r = { 0 };
	struct smr_cow *c = NULL;
	struct smr_cow_stats st;
	uint64_t rs = 0x1234567;
	uint8_t *val = malloc(SMR_COW_MAX_ITEM), *got = malloc(SMR_COW_MAX_ITEM);
	uint8_t *val2 = malloc(SMR_COW_MAX_ITEM);
	int height_max = 0;

	printf("\n  model test: %lu operations (SMR_TEST_OPS to change)\n", nops);
	r.present = calloc(DOMAIN, 1);
	r.len = calloc(DOMAIN, sizeof(*r.len));
	r.seed = calloc(DOMAIN, sizeof(*r.seed));
	SMR_ASSERT_OK(be_open(be, &o, &c));
	for (unsigned long i = 0; i < nops && c; i++) {
		/* Grow for 40000 ops, then shrink for 40000. */
		bool grow = (i / 40000) % 2 == 0;
		uint32_t id = (uint32_t)(smr_test_rand(&rs) % DOMAIN);
		uint32_t op = (uint32_t)(smr_test_rand(&rs) % 100);
		struct smr_key k, f;
		struct smr_txn *t;
		size_t len;
		int rc, want;

		id_key(id, &k);
		if (op < (grow ? 35u : 10u)) { /* insert */
			uint32_t l = pick_len(&rs), seed = (uint32_t)i;

			fill_val(val, l, seed);
			SMR_ASSERT_OK(smr_txn_begin(c, &t));
			rc = smr_bt_insert(t, SMR_TREE_FS, &k, val, l);
			smr_txn_end(t);
			want = r.present[id] ? -EEXIST : 0;
			if (!want) {
				r.present[id] = 1;
				r.len[id] = (uint16_t)l;
				r.seed[id] = seed;
				r.nr++;
			}
		} else if (op < 50) { /* update or put */
			uint32_t l = pick_len(&rs), seed = (uint32_t)i;
			bool put = op & 1;

			fill_val(val, l, seed);
			SMR_ASSERT_OK(smr_txn_begin(c, &t));
			rc = put ? smr_bt_put(t, SMR_TREE_FS, &k, val, l) :
				   smr_bt_update(t, SMR_TREE_FS, &k, val, l);
			smr_txn_end(t);
			want = !put && !r.present[id] ? -ENOENT : 0;
			if (!want) {
				r.nr += !r.present[id];
				r.present[id] = 1;
				r.len[id] = (uint16_t)l;
				r.seed[id] = seed;
			}
		} else if (op < (grow ? 60u : 85u)) { /* delete */
			SMR_ASSERT_OK(smr_txn_begin(c, &t));
			rc = smr_bt_delete(t, SMR_TREE_FS, &k);
			smr_txn_end(t);
			want = r.present[id] ? 0 : -ENOENT;
			if (!want) {
				r.present[id] = 0;
				r.nr--;
			}
		} else if (op < 90) { /* lookup */
			len = SMR_COW_MAX_ITEM;
			rc = smr_bt_lookup(c, SMR_TREE_FS, &k, got, &len);
			want = r.present[id] ? 0 : -ENOENT;
			if (!rc && !check_val(&r, id, got, len))
				rc = -EBADMSG;
		} else if (op < 97) { /* next / prev */
			int dir = op < 94 ? 1 : -1;
			int64_t e = ref_next(&r, id, dir);

			len = SMR_COW_MAX_ITEM;
			rc = dir > 0 ? smr_bt_next(c, SMR_TREE_FS, &k, &f, got, &len) :
				       smr_bt_prev(c, SMR_TREE_FS, &k, &f, got, &len);
			want = e < 0 ? -ENOENT : 0;
			if (!rc && (key_id(&f) != e ||
				    !check_val(&r, (uint32_t)e, got, len)))
				rc = -EBADMSG;
			/* prev2: the same, and the item before it. */
			if (dir < 0 && rc == want) {
				int64_t e2 = e < 0 ? -1 : ref_next(&r, e - 1, -1);
				struct smr_key f2[2];
				void *v2[2] = { got, val2 };
				size_t l2[2] = { SMR_COW_MAX_ITEM,
						 SMR_COW_MAX_ITEM };
				int n = smr_bt_prev2(c, SMR_TREE_FS, &k, f2, v2,
						     l2);

				if (n != (e < 0 ? -ENOENT : e2 < 0 ? 1 : 2) ||
				    (n > 0 && (key_id(&f2[0]) != e ||
					       !check_val(&r, (uint32_t)e, got,
							  l2[0]))) ||
				    (n > 1 && (key_id(&f2[1]) != e2 ||
					       !check_val(&r, (uint32_t)e2,
							  val2, l2[1]))))
					rc = -EBADMSG;
			}
		} else { /* a short range */
			uint32_t hi = SMR_MIN(id + 200, DOMAIN - 1);

			compare_range(c, &r, id, hi);
			rc = want = 0;
		}
		if (rc != want) {
			if (fails++ < 10)
				fprintf(stderr, "op %lu (kind %u, id %u): rc %d, want %d\n",
					i, op, id, rc, want);
			CU_ASSERT_EQUAL(rc, want);
		}
		if (i % 5000 == 4999)
			SMR_ASSERT_OK(smr_cow_commit(c));
		if (i % 20000 == 19999) {
			int h = smr_bt_height(c, SMR_TREE_FS);

			height_max = SMR_MAX(height_max, h);
			compare_all(c, &r);
		}
		if (i % 50000 == 49999) {
			SMR_ASSERT_OK(be_close(be, c));
			c = NULL;
			SMR_ASSERT_OK(be_open(be, &o, &c));
			if (c)
				compare_all(c, &r);
		}
	}
	if (c) {
		compare_all(c, &r);
		smr_cow_get_stats(c, &st);
		printf("  items now %" PRIu64 ", max height %d, node reads %" PRIu64
		       ", nodes written %" PRIu64 ", commits %" PRIu64 "\n",
		       r.nr, height_max, st.node_reads, st.nodes_written,
		       st.commits);
		CU_ASSERT(height_max >= 2);
		SMR_ASSERT_OK(be_close(be, c));
	}
	SMR_ASSERT_OK(be_open(be, &o, &c));
	if (c) {
		compare_all(c, &r);
		SMR_ASSERT_OK(be_close(be, c));
	}
	free(r.present);
	free(r.len);
	free(r.seed);
	free(val);
	free(got);
	free(val2);
}

/* Sequential then reverse inserts of many small items, then deleting all:
 * the tree grows to several levels and shrinks back to an empty root. */
static void test_grow_shrink(void)
{
	struct smr_cow_opts o = { .commit_secs = 3600 };
	struct smr_memstore *ms = smr_memstore_new(16384);
	struct smr_cow *c = NULL;
	struct smr_txn *t;
	const uint64_t n = 200000;
	uint64_t items;
	int h;

	SMR_ASSERT_OK(open_mem(ms, &o, &c));
	if (!c)
		return;
	SMR_ASSERT_OK(smr_txn_begin(c, &t));
	for (uint64_t i = 0; i < n; i++) {
		struct smr_key k = { .objid = i % 2 ? n - i : i, .type = 1 };

		SMR_ASSERT_OK(smr_bt_insert(t, SMR_TREE_FS, &k, &i, sizeof(i)));
	}
	smr_txn_end(t);
	h = smr_bt_height(c, SMR_TREE_FS);
	CU_ASSERT(h >= 3);
	SMR_ASSERT_OK(smr_cow_commit(c));
	pthread_rwlock_rdlock(&c->lock);
	SMR_ASSERT_OK(smr_bt_check(c, SMR_TREE_FS, &items));
	pthread_rwlock_unlock(&c->lock);
	CU_ASSERT_EQUAL(items, n);
	SMR_ASSERT_OK(smr_txn_begin(c, &t));
	for (uint64_t i = 0; i < n; i++) {
		struct smr_key k = { .objid = (i * 7919) % n, .type = 1 };

		if (k.objid == 0 && i)
			continue;
		SMR_ASSERT_OK(smr_bt_delete(t, SMR_TREE_FS, &k));
	}
	smr_txn_end(t);
	CU_ASSERT_EQUAL(smr_bt_height(c, SMR_TREE_FS), 1);
	pthread_rwlock_rdlock(&c->lock);
	SMR_ASSERT_OK(smr_bt_check(c, SMR_TREE_FS, &items));
	pthread_rwlock_unlock(&c->lock);
	CU_ASSERT_EQUAL(items, 0);
	SMR_ASSERT_OK(smr_cow_close(c));
	smr_memstore_free(ms);
}

/*
 * A search remembers the leaf it found (bt.c, "Fingers") and the next one
 * for a key of that leaf starts there. A split moves keys out of the leaf:
 * a search must then find them in their new leaf, and one that trusted the
 * leaf found before the split would miss them. Likewise for the leaves a
 * merge empties, and for keys put at a leaf's low end.
 */
static void test_fingers(void)
{
	struct smr_cow_opts o = { .commit_secs = 3600 };
	struct smr_memstore *ms = smr_memstore_new(16384);
	struct smr_cow *c = NULL;
	struct smr_txn *t;
	uint8_t val[200] = { 0 };
	const uint64_t n = 2000, step = 100;
	size_t len;

	SMR_ASSERT_OK(open_mem(ms, &o, &c));
	if (!c)
		return;
	SMR_ASSERT_OK(smr_txn_begin(c, &t));
	for (uint64_t i = 0; i < n; i++) {
		struct smr_key k = { .objid = i * step, .type = 1 };

		SMR_ASSERT_OK(smr_bt_insert(t, SMR_TREE_FS, &k, val, sizeof(val)));
	}
	smr_txn_end(t);
	CU_ASSERT(smr_bt_height(c, SMR_TREE_FS) >= 2);
	/* Each round: a search lands in the leaf of key base, then keys
	 * around it go in (splitting that leaf) and out again (merging
	 * leaves), each found right after its change. */
	for (uint64_t base = step; base < n * step; base += 97 * step) {
		struct smr_key k = { .objid = base, .type = 1 };

		len = sizeof(val);
		SMR_ASSERT_OK(smr_bt_lookup(c, SMR_TREE_FS, &k, val, &len));
		SMR_ASSERT_OK(smr_txn_begin(c, &t));
		for (uint64_t j = 1; j < step; j++) {
			k.objid = base + j;
			SMR_ASSERT_OK(smr_bt_insert(t, SMR_TREE_FS, &k, val,
						    sizeof(val)));
			len = sizeof(val);
			SMR_ASSERT_OK(smr_bt_lookup(c, SMR_TREE_FS, &k, val,
						    &len));
			k.objid = base - step + j;
			len = sizeof(val);
			SMR_ASSERT_RC(smr_bt_lookup(c, SMR_TREE_FS, &k, val,
						    &len), -ENOENT);
		}
		for (uint64_t j = 1; j < step; j++) {
			k.objid = base + j;
			SMR_ASSERT_OK(smr_bt_delete(t, SMR_TREE_FS, &k));
			len = sizeof(val);
			SMR_ASSERT_RC(smr_bt_lookup(c, SMR_TREE_FS, &k, val,
						    &len), -ENOENT);
			k.objid = base + step;
			len = sizeof(val);
			if (base + step < n * step)
				SMR_ASSERT_OK(smr_bt_lookup(c, SMR_TREE_FS, &k,
							    val, &len));
		}
		smr_txn_end(t);
	}
	/* Every key of the first set is where a full search finds it. */
	for (uint64_t i = 0; i < n; i++) {
		struct smr_key k = { .objid = i * step, .type = 1 };

		len = sizeof(val);
		SMR_ASSERT_OK(smr_bt_lookup(c, SMR_TREE_FS, &k, val, &len));
	}
	SMR_ASSERT_OK(smr_cow_close(c));
	smr_memstore_free(ms);
}

/* A failed write turns the engine read-only and keeps the last commit. */
static void test_write_failure(void)
{
	struct smr_cow_opts o = { .commit_secs = 3600 };
	struct smr_memstore *ms = smr_memstore_new(16384);
	struct smr_cow *c = NULL;
	struct smr_txn *t;
	struct smr_key k = { .objid = 1, .type = 1 };
	uint64_t v = 1;
	size_t len = sizeof(v);

	SMR_ASSERT_OK(open_mem(ms, &o, &c));
	if (!c)
		return;
	SMR_ASSERT_OK(smr_txn_begin(c, &t));
	SMR_ASSERT_OK(smr_bt_insert(t, SMR_TREE_FS, &k, &v, sizeof(v)));
	smr_txn_end(t);
	SMR_ASSERT_OK(smr_cow_commit(c));
	v = 2;
	SMR_ASSERT_OK(smr_txn_begin(c, &t));
	SMR_ASSERT_OK(smr_bt_update(t, SMR_TREE_FS, &k, &v, sizeof(v)));
	smr_txn_end(t);
	smr_memstore_fail_after(ms, 0);
	SMR_ASSERT_RC(smr_cow_commit(c), -EIO);
	CU_ASSERT_TRUE(smr_cow_is_read_only(c));
	SMR_ASSERT_RC(smr_txn_begin(c, &t), -EROFS);
	smr_cow_close(c);
	smr_memstore_fail_after(ms, -1);
	SMR_ASSERT_OK(open_mem(ms, &o, &c));
	if (!c)
		return;
	SMR_ASSERT_OK(smr_bt_lookup(c, SMR_TREE_FS, &k, &v, &len));
	CU_ASSERT_EQUAL(v, 1);
	SMR_ASSERT_OK(smr_cow_close(c));
	smr_memstore_free(ms);
}

static void test_limits(void)
{
	struct smr_cow_opts o = { .commit_secs = 3600 };
	struct smr_memstore *ms = smr_memstore_new(16384);
	struct smr_cow *c = NULL;
	struct smr_txn *t;
	struct smr_key k = { .objid = 5 };
	static uint8_t big[SMR_COW_MAX_ITEM + 1];

	SMR_ASSERT_OK(open_mem(ms, &o, &c));
	if (!c)
		return;
	SMR_ASSERT_OK(smr_txn_begin(c, &t));
	SMR_ASSERT_RC(smr_bt_insert(t, SMR_TREE_FS, &k, big, sizeof(big)), -E2BIG);
	SMR_ASSERT_RC(smr_bt_delete(t, SMR_TREE_FS, &k), -ENOENT);
	SMR_ASSERT_RC(smr_bt_update(t, SMR_TREE_FS, &k, big, 1), -ENOENT);
	SMR_ASSERT_RC(smr_bt_insert(t, 0, &k, big, 1), -EINVAL);
	/* Many maximum-size items: each leaf holds only a few. */
	for (uint64_t i = 0; i < 200; i++) {
		k.objid = i;
		big[0] = (uint8_t)i;
		SMR_ASSERT_OK(smr_bt_insert(t, SMR_TREE_FS, &k, big,
					    SMR_COW_MAX_ITEM));
	}
	smr_txn_end(t);
	SMR_ASSERT_RC(smr_bt_lookup(c, SMR_TREE_FS, &k, NULL, NULL), 0);
	SMR_ASSERT_OK(smr_cow_close(c));
	smr_memstore_free(ms);
}

/*
 * Tree types. Without one, a tree is neither changed nor checked. With one,
 * it bounds item sizes and refuses the items it does not hold on every
 * change, smr_bt_check and smr_cow_check_all find such items already in the
 * tree, the salvage drops them, and messages name the tree and its keys.
 * Items of the wrong kind are put in under a type that takes anything, and
 * the stricter type is registered after a reopen, as when the tree was
 * damaged or written by something else.
 */
#define TT_BAD_TYPE 7

static const char *tt_check(const struct smr_key *k, const void *v,
			    size_t len)
{
	(void)v;
	(void)len;
	return k->type == TT_BAD_TYPE ? "type 7 is not held here" : NULL;
}

static bool tt_key_str(const struct smr_key *k, char *buf, size_t len)
{
	if (k->type == TT_BAD_TYPE)
		return false;
	snprintf(buf, len, "<item %" PRIu64 ">", k->objid);
	return true;
}

static const struct smr_tree_type tt_type = {
	.id = SMR_TREE_FS, .name = "test", .max_item = 64,
	.check_item = tt_check, .key_str = tt_key_str,
};

/* No type registered for the FS tree: refused, and said so. */
static void tree_type_none(struct smr_cow *c)
{
	struct smr_tree_type bad = tt_type;
	struct smr_key k = { .objid = 5, .type = 1, .offset = 2 };
	char buf[SMR_KEY_STR_MAX];
	uint8_t val[8] = { 0 };
	struct smr_txn *t;

	SMR_ASSERT_OK(smr_txn_begin(c, &t));
	SMR_ASSERT_RC(smr_bt_insert(t, SMR_TREE_FS, &k, val, 8), -EINVAL);
	SMR_ASSERT_RC(smr_bt_delete(t, SMR_TREE_FS, &k), -EINVAL);
	smr_txn_end(t);
	/* Lookups need no type; names are numbers. */
	SMR_ASSERT_RC(smr_bt_lookup(c, SMR_TREE_FS, &k, NULL, NULL), -ENOENT);
	CU_ASSERT_STRING_EQUAL(smr_tree_key_str(c, SMR_TREE_FS, &k, buf,
						sizeof(buf)), "(5, 1, 2)");
	CU_ASSERT_STRING_EQUAL(smr_tree_name(c, SMR_TREE_FS, buf, sizeof(buf)),
			       "1");
	/* The reverse map's type is the engine's own; ids, names and sizes
	 * are checked. */
	CU_ASSERT_STRING_EQUAL(smr_tree_name(c, SMR_TREE_RMAP, buf,
					     sizeof(buf)), "rmap");
	SMR_ASSERT_RC(smr_cow_tree_register(c, &(struct smr_tree_type){
				      .id = SMR_TREE_RMAP, .name = "x",
				      .max_item = 8 }), -EEXIST);
	bad.max_item = SMR_COW_MAX_ITEM + 1;
	SMR_ASSERT_RC(smr_cow_tree_register(c, &bad), -EINVAL);
	bad = tt_type;
	bad.id = 0;
	SMR_ASSERT_RC(smr_cow_tree_register(c, &bad), -EINVAL);
	bad.id = 99;
	SMR_ASSERT_RC(smr_cow_tree_register(c, &bad), -EINVAL);
	bad = tt_type;
	bad.name = NULL;
	SMR_ASSERT_RC(smr_cow_tree_register(c, &bad), -EINVAL);
}

static void test_tree_type(void)
{
	struct smr_memstore *ms = smr_memstore_new(16384);
	struct smr_cow_opts o = { .commit_secs = 3600 };
	uint64_t items, problems, underfull;
	uint8_t val[100] = { 9 };
	struct smr_cow_salvage sv;
	struct smr_cow *c = NULL;
	struct smr_txn *t;
	struct smr_key k;
	char buf[SMR_KEY_STR_MAX];

	SMR_ASSERT_OK(smr_cow_open_store(&smr_store_mem_ops, ms, &o, &c));
	if (!c)
		return;
	tree_type_none(c);
	/* Items the test type below refuses, under one that takes them. */
	SMR_ASSERT_OK(smr_test_register_fs(c));
	SMR_ASSERT_RC(smr_cow_tree_register(c, &tt_type), -EEXIST);
	SMR_ASSERT_OK(smr_txn_begin(c, &t));
	for (uint64_t i = 0; i < 300; i++) {
		k = (struct smr_key){ .objid = i, .type = i == 100 ?
							  TT_BAD_TYPE : 1 };
		SMR_ASSERT_OK(smr_bt_insert(t, SMR_TREE_FS, &k, val,
					    i == 200 ? 100 : 8));
	}
	smr_txn_end(t);
	SMR_ASSERT_OK(smr_cow_check(c));
	SMR_ASSERT_OK(smr_cow_commit(c));
	SMR_ASSERT_OK(smr_cow_close(c));

	c = NULL;
	SMR_ASSERT_OK(smr_cow_open_store(&smr_store_mem_ops, ms, &o, &c));
	if (!c)
		return;
	/* A tree that has a root but no type is not checked. */
	pthread_rwlock_rdlock(&c->lock);
	SMR_ASSERT_RC(smr_bt_check(c, SMR_TREE_FS, &items), -EINVAL);
	pthread_rwlock_unlock(&c->lock);
	SMR_ASSERT_RC(smr_cow_check(c), -EINVAL);
	SMR_ASSERT_RC(smr_cow_check_all(c, &problems, &underfull), -EINVAL);
	SMR_ASSERT_RC(smr_cow_salvage(c, &sv), -EINVAL);
	SMR_ASSERT_OK(smr_cow_tree_register(c, &tt_type));
	SMR_ASSERT_OK(smr_cow_tree_register(c, &tt_type));
	k = (struct smr_key){ .objid = 5, .type = 1, .offset = 2 };
	CU_ASSERT_STRING_EQUAL(smr_tree_key_str(c, SMR_TREE_FS, &k, buf,
						sizeof(buf)), "<item 5>");
	k.type = TT_BAD_TYPE;
	CU_ASSERT_STRING_EQUAL(smr_tree_key_str(c, SMR_TREE_FS, &k, buf,
						sizeof(buf)), "(5, 7, 2)");
	CU_ASSERT_STRING_EQUAL(smr_tree_name(c, SMR_TREE_FS, buf, sizeof(buf)),
			       "test");
	/* On every change. */
	SMR_ASSERT_OK(smr_txn_begin(c, &t));
	k = (struct smr_key){ .objid = 1000, .type = TT_BAD_TYPE };
	SMR_ASSERT_RC(smr_bt_insert(t, SMR_TREE_FS, &k, val, 8), -EINVAL);
	k.type = 1;
	SMR_ASSERT_RC(smr_bt_insert(t, SMR_TREE_FS, &k, val, 65), -E2BIG);
	SMR_ASSERT_OK(smr_bt_insert(t, SMR_TREE_FS, &k, val, 64));
	smr_txn_end(t);
	/* In the checks, and in the salvage that follows them. */
	pthread_rwlock_rdlock(&c->lock);
	SMR_ASSERT_RC(smr_bt_check(c, SMR_TREE_FS, &items), -SMR_EFSCORRUPTED);
	pthread_rwlock_unlock(&c->lock);
	SMR_ASSERT_RC(smr_cow_check(c), -SMR_EFSCORRUPTED);
	SMR_ASSERT_OK(smr_cow_check_all(c, &problems, &underfull));
	CU_ASSERT(problems >= 1);
	SMR_ASSERT_OK(smr_cow_salvage(c, &sv));
	CU_ASSERT_EQUAL(sv.trees, 1);
	CU_ASSERT_EQUAL(sv.kept, 299);
	CU_ASSERT_EQUAL(sv.lost, 2);
	CU_ASSERT_EQUAL(sv.bad_nodes, 0);
	SMR_ASSERT_OK(smr_cow_check(c));
	pthread_rwlock_rdlock(&c->lock);
	SMR_ASSERT_OK(smr_bt_check(c, SMR_TREE_FS, &items));
	pthread_rwlock_unlock(&c->lock);
	CU_ASSERT_EQUAL(items, 299);
	k = (struct smr_key){ .objid = 100, .type = TT_BAD_TYPE };
	SMR_ASSERT_RC(smr_bt_lookup(c, SMR_TREE_FS, &k, NULL, NULL), -ENOENT);
	k = (struct smr_key){ .objid = 200, .type = 1 };
	SMR_ASSERT_RC(smr_bt_lookup(c, SMR_TREE_FS, &k, NULL, NULL), -ENOENT);
	k = (struct smr_key){ .objid = 201, .type = 1 };
	SMR_ASSERT_OK(smr_bt_lookup(c, SMR_TREE_FS, &k, NULL, NULL));
	SMR_ASSERT_OK(smr_cow_close(c));
	smr_memstore_free(ms);
}

/* Close @c, reopen the store and check that the tree is sound and holds
 * @want items; frees the store. */
static void close_reopen_count(struct smr_cow *c, struct smr_memstore *ms,
			       const struct smr_cow_opts *o, uint64_t want)
{
	uint64_t items = 0;

	SMR_ASSERT_OK(smr_cow_close(c));
	c = NULL;
	SMR_ASSERT_OK(open_mem(ms, o, &c));
	if (c) {
		pthread_rwlock_rdlock(&c->lock);
		SMR_ASSERT_OK(smr_bt_check(c, SMR_TREE_FS, &items));
		pthread_rwlock_unlock(&c->lock);
		CU_ASSERT_EQUAL(items, want);
		SMR_ASSERT_OK(smr_cow_close(c));
	}
	smr_memstore_free(ms);
}

/* One transaction of 100 inserts of random keys. */
static void insert_random(struct smr_cow *c, uint64_t *rs, const uint8_t *val,
			  size_t len)
{
	struct smr_txn *t;

	SMR_ASSERT_OK(smr_txn_begin(c, &t));
	for (int i = 0; i < 100; i++) {
		struct smr_key k = { .objid = smr_test_rand(rs) };

		SMR_ASSERT_OK(smr_bt_insert(t, SMR_TREE_FS, &k, val, len));
	}
	smr_txn_end(t);
}

/*
 * Keys put in ascending order split by appending: the new right node gets
 * the one new entry, at every level. When the root splits so, the new
 * right internal node has one child, a leaf of one item. Deleting that
 * item left the leaf empty under its parent, with no sibling to merge
 * with: a tree the check (and fsck) calls corrupt.
 */
static void test_only_child(void)
{
	struct smr_cow_opts o = { .commit_secs = 3600 };
	struct smr_memstore *ms = smr_memstore_new(16384);
	struct smr_cow *c = NULL;
	struct smr_txn *t;
	uint8_t val[400] = { 7 };
	uint64_t items, i;
	int h = 1;

	SMR_ASSERT_OK(open_mem(ms, &o, &c));
	if (!c)
		return;
	SMR_ASSERT_OK(smr_txn_begin(c, &t));
	for (i = 0; h < 3 && i < 1000000; i++) {
		struct smr_key k = { .objid = 1000 + i, .type = 1 };

		SMR_ASSERT_OK(smr_bt_insert(t, SMR_TREE_FS, &k, val,
					    sizeof(val)));
		h = smr_bt_height(c, SMR_TREE_FS);
	}
	CU_ASSERT_EQUAL(h, 3);
	{
		struct smr_key k = { .objid = 1000 + i - 1, .type = 1 };

		SMR_ASSERT_OK(smr_bt_delete(t, SMR_TREE_FS, &k));
	}
	smr_txn_end(t);
	pthread_rwlock_rdlock(&c->lock);
	SMR_ASSERT_OK(smr_bt_check(c, SMR_TREE_FS, &items));
	pthread_rwlock_unlock(&c->lock);
	CU_ASSERT_EQUAL(items, i - 1);
	SMR_ASSERT_OK(smr_cow_commit(c));
	close_reopen_count(c, ms, &o, i - 1);
}

/* Dirty nodes pass half the cache: the next transaction commits first, and
 * clean nodes are evicted to stay within the bound. */
static void test_dirty_bound(void)
{
	struct smr_cow_opts o = { .commit_secs = 3600, .cache_bytes = SMR_MIB };
	struct smr_memstore *ms = smr_memstore_new(16384);
	struct smr_cow *c = NULL;
	struct smr_cow_stats st;
	uint64_t rs = 5;
	uint8_t val[40] = { 1, 2, 3 };
	size_t most = 0;

	SMR_ASSERT_OK(open_mem(ms, &o, &c));
	if (!c)
		return;
	for (int j = 0; j < 500; j++) {
		insert_random(c, &rs, val, sizeof(val));
		most = SMR_MAX(most, smr_cache_dirty_bytes(c));
	}
	smr_cow_get_stats(c, &st);
	CU_ASSERT(st.commits > 0);
	CU_ASSERT(st.evictions > 0);
	/* At most the bound plus what one transaction dirties. */
	CU_ASSERT(most <= SMR_MIB / 2 + 200 * 16384);
	close_reopen_count(c, ms, &o, 50000);
}

/*
 * Node memory follows the nodes held: during a run of transactions on a
 * small cache, no more than the cache, what the commits' dirty nodes add
 * and a slab of buffers; once the cache is emptied, all but a slab goes
 * back to the system.
 */
static void test_node_memory(void)
{
	struct smr_cow_opts o = { .commit_secs = 3600, .cache_bytes = SMR_MIB };
	struct smr_memstore *ms = smr_memstore_new(16384);
	struct smr_cow *c = NULL;
	struct smr_cow_stats st;
	uint64_t rs = 9, most = 0;
	uint8_t val[40] = { 4, 5, 6 };

	SMR_ASSERT_OK(open_mem(ms, &o, &c));
	if (!c)
		return;
	for (int j = 0; j < 300; j++) {
		insert_random(c, &rs, val, sizeof(val));
		smr_cow_get_stats(c, &st);
		most = SMR_MAX(most, st.node_bytes);
	}
	smr_cow_get_stats(c, &st);
	CU_ASSERT(st.evictions > 0);
	CU_ASSERT(most >= SMR_MIB / 2);
	CU_ASSERT(most <= SMR_MIB + 200 * 16384 + 16 * 16384);
	SMR_ASSERT_OK(smr_cow_commit(c));
	smr_cow_drop_cache(c);
	smr_cow_get_stats(c, &st);
	CU_ASSERT(st.node_bytes <= 16 * 16384);
	close_reopen_count(c, ms, &o, 30000);
}

/*
 * The same bound with four writers whose handles overlap, so that no
 * transaction begins while none is open: each writer's first handle stays
 * open while it takes a second (nested, as the namespace does) for the
 * inserts. The bound holds all the same, give or take what the open
 * transactions dirty between two commits; the timer never fires.
 */
#define DB_WRITERS 4
#define DB_TXNS 800
#define DB_ITEMS 8
#define DB_VAL 200

/* Handles the writers hold open (test side: the engine's count is private). */
static int db_open;

struct dbw {
	struct smr_cow *c;
	uint64_t rs;
	size_t most;
	int rc;
};

static void *dbw_main(void *arg)
{
	struct dbw *w = arg;
	uint8_t val[DB_VAL] = { 4, 5, 6 };

	for (int j = 0; j < DB_TXNS && !w->rc; j++) {
		struct smr_txn *outer, *t = NULL;

		w->rc = smr_txn_begin(w->c, &outer);
		if (w->rc)
			break;
		__atomic_add_fetch(&db_open, 1, __ATOMIC_SEQ_CST);
		w->rc = smr_txn_begin(w->c, &t);
		for (int i = 0; i < DB_ITEMS && !w->rc; i++) {
			struct smr_key k = { .objid = smr_test_rand(&w->rs) };

			w->rc = smr_bt_insert(t, SMR_TREE_FS, &k, val,
					      sizeof(val));
		}
		if (t)
			smr_txn_end(t);
		w->most = SMR_MAX(w->most, smr_cache_dirty_bytes(w->c));
		/* Hand over: end only once another writer holds a handle, or
		 * after a moment (a commit waiting for this one lets none begin). */
		for (int i = 0; i < 40 &&
		     __atomic_load_n(&db_open, __ATOMIC_SEQ_CST) < 2; i++)
			usleep(10);
		__atomic_sub_fetch(&db_open, 1, __ATOMIC_SEQ_CST);
		smr_txn_end(outer);
	}
	return NULL;
}

static void test_dirty_bound_writers(void)
{
	struct smr_cow_opts o = { .commit_secs = 3600, .cache_bytes = SMR_MIB };
	struct smr_memstore *ms = smr_memstore_new(16384);
	struct dbw w[DB_WRITERS];
	pthread_t th[DB_WRITERS];
	struct smr_cow *c = NULL;
	struct smr_cow_stats st;
	size_t most = 0;

	SMR_ASSERT_OK(open_mem(ms, &o, &c));
	if (!c)
		return;
	for (int i = 0; i < DB_WRITERS; i++) {
		w[i] = (struct dbw){ .c = c, .rs = 11 + (uint64_t)i };
		CU_ASSERT_FATAL(pthread_create(&th[i], NULL, dbw_main,
					       &w[i]) == 0);
	}
	for (int i = 0; i < DB_WRITERS; i++) {
		pthread_join(th[i], NULL);
		SMR_ASSERT_OK(w[i].rc);
		most = SMR_MAX(most, w[i].most);
	}
	smr_cow_get_stats(c, &st);
	printf("\n  %d writers, overlapping handles: at most %zu KiB dirty "
	       "(bound 512 KiB), %" PRIu64 " commits\n", DB_WRITERS,
	       most / 1024, st.commits);
	CU_ASSERT(st.commits > 0);
	/* The bound, plus what the writers' open transactions dirty while a
	 * commit waits for them (each changes at most DB_ITEMS leaves and
	 * their paths). Without the commit at begin it reached 7 MiB. */
	CU_ASSERT(most <= SMR_MIB / 2 + DB_WRITERS * DB_ITEMS * 3 * 16384);
	close_reopen_count(c, ms, &o,
			   (uint64_t)DB_WRITERS * DB_TXNS * DB_ITEMS);
}

/* Writers, readers and commits at once: readers only ever see whole,
 * well-formed items; at the end the tree holds exactly what each writer
 * last did. */
struct cthread {
	struct smr_cow *c;
	int id;
	bool writer;
	uint64_t last[2000]; /* writer: value per key, 0 = absent */
	int fails;
};

static void *conc_main(void *arg)
{
	struct cthread *x = arg;
	uint64_t rs = 77 + (uint64_t)x->id;

	for (int j = 0; j < 20000; j++) {
		uint64_t i = smr_test_rand(&rs) % 2000;
		struct smr_key k = { .objid = i, .type = 1,
				     .offset = (uint64_t)(x->id % 2) };
		uint64_t v[8];
		size_t len = sizeof(v);
		struct smr_txn *t;
		int rc;

		if (x->writer) {
			if (smr_txn_begin(x->c, &t)) {
				x->fails++;
				break;
			}
			if (smr_test_rand(&rs) % 3) {
				for (int w = 0; w < 8; w++)
					v[w] = i * 100000 + (uint64_t)j;
				rc = smr_bt_put(t, SMR_TREE_FS, &k, v,
						sizeof(uint64_t) * (1 + j % 8));
				x->last[i] = rc ? x->last[i] : (uint64_t)j + 1;
			} else {
				rc = smr_bt_delete(t, SMR_TREE_FS, &k);
				if (rc == -ENOENT && !x->last[i])
					rc = 0;
				x->last[i] = 0;
			}
			smr_txn_end(t);
			if (rc && !x->fails)
				fprintf(stderr, "writer %d: rc %d at op %d\n", x->id, rc, j);
			x->fails += rc != 0;
			if (j % 997 == 0) {
				rc = smr_cow_commit(x->c);
				if (rc)
					fprintf(stderr, "writer %d: commit rc %d\n", x->id, rc);
				x->fails += rc != 0;
			}
			continue;
		}
		rc = smr_bt_lookup(x->c, SMR_TREE_FS, &k, v, &len);
		if (rc == 0) {
			/* Whole items only: every word the same. */
			if (len % 8 || !len || v[0] / 100000 != i) {
				fprintf(stderr, "reader %d: len %zu v0 %llu key %llu\n",
					x->id, len, (unsigned long long)v[0],
					(unsigned long long)i);
				x->fails++;
			}
			for (size_t w = 1; w < len / 8; w++)
				x->fails += v[w] != v[0];
		} else if (rc != -ENOENT) {
			if (!x->fails)
				fprintf(stderr, "reader %d: lookup rc %d\n", x->id, rc);
			x->fails++;
		}
	}
	return NULL;
}

static void test_concurrent(void)
{
	struct smr_cow_opts o = { .commit_secs = 1, .cache_bytes = SMR_MIB };
	struct smr_memstore *ms = smr_memstore_new(16384);
	static struct cthread th[4];
	pthread_t tid[4];
	struct smr_cow *c = NULL;

	SMR_ASSERT_OK(open_mem(ms, &o, &c));
	if (!c)
		return;
	for (int i = 0; i < 4; i++) {
		memset(&th[i], 0, sizeof(th[i]));
		th[i].c = c;
		th[i].id = i;
		th[i].writer = i < 2;
		pthread_create(&tid[i], NULL, conc_main, &th[i]);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(tid[i], NULL);
		CU_ASSERT_EQUAL(th[i].fails, 0);
	}
	SMR_ASSERT_OK(smr_cow_close(c));
	SMR_ASSERT_OK(open_mem(ms, &o, &c));
	if (!c)
		return;
	for (int w = 0; w < 2; w++)
		for (uint64_t i = 0; i < 2000; i++) {
			struct smr_key k = { .objid = i, .type = 1,
					     .offset = (uint64_t)w };
			uint64_t v[8];
			size_t len = sizeof(v);
			int rc = smr_bt_lookup(c, SMR_TREE_FS, &k, v, &len);

			if (th[w].last[i]) {
				CU_ASSERT_EQUAL(rc, 0);
				CU_ASSERT_EQUAL(v[0], i * 100000 + th[w].last[i] - 1);
			} else {
				CU_ASSERT_EQUAL(rc, -ENOENT);
			}
		}
	pthread_rwlock_rdlock(&c->lock);
	SMR_ASSERT_OK(smr_cow_audit_locked(c));
	pthread_rwlock_unlock(&c->lock);
	SMR_ASSERT_OK(smr_cow_close(c));
	smr_memstore_free(ms);
}

static const struct smr_test model_tests[] = {
	{ "limits", test_limits },
	{ "write_failure", test_write_failure },
	{ "grow_shrink", test_grow_shrink },
	{ "only_child", test_only_child },
	{ "fingers", test_fingers },
	{ "dirty_bound", test_dirty_bound },
	{ "dirty_bound_writers", test_dirty_bound_writers },
	{ "node_memory", test_node_memory },
	{ "tree_type", test_tree_type },
	{ "concurrent", test_concurrent },
	{ "model", test_model },
	{ "model_zloop", test_model_zloop },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	static const struct smr_suite suites[] = {
		{ "bt_model", model_tests },
		{ NULL, NULL },
	};

	smr_log_set_level(SMR_LOG_ERR + 0);
	return smr_test_main(argc, argv, suites);
}
