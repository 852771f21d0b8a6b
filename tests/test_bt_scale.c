/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_bt_scale.c - one tree of many items through the real engine on a
 * file-backed device: insert in key order in transactions with commits,
 * reopen, and check that a lookup reads exactly one node per level (the
 * tree's height, O(log n)) from the device when nothing is cached, and
 * that every item is there.
 *
 * SMR_TEST_ITEMS sets the number of items (default 10000000, a few
 * seconds).
 */
#include "testutil.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "cow/cow_priv.h"
#include "cowtest.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void key_of(uint64_t i, struct smr_key *k)
{
	k->objid = i / 4 + 1;
	k->type = (uint8_t)(i % 4);
	k->offset = 0;
}

struct counter {
	uint64_t n, bad;
};

static int count_fn(void *arg, const struct smr_key *key, const void *val,
		    size_t len)
{
	struct counter *x = arg;
	uint64_t v;
	struct smr_key k;

	memcpy(&v, val, sizeof(v));
	key_of(x->n, &k);
	if (len != sizeof(v) || v != x->n * 3 || smr_key_cmp(&k, key))
		x->bad++;
	x->n++;
	return 0;
}

static void test_scale(void)
{
	const char *env = getenv("SMR_TEST_ITEMS");
	uint64_t n = env ? strtoull(env, NULL, 0) : 10000000;
	const char *dir = smr_test_tmpdir("scale");
	struct smr_cow_opts o = { .commit_secs = 3600 };
	struct smr_key lo = { 0 }, hi = { UINT64_MAX, 0xff, UINT64_MAX };
	struct smr_cow_stats st0, st1;
	struct counter cnt = { 0 };
	struct smr_dev *dev;
	struct smr_cow *c;
	char path[512];
	uint64_t rs = 99, reads = 0;
	double t0, t1, t2;
	int fd, h;

	snprintf(path, sizeof(path), "%s/img", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	CU_ASSERT_FATAL(fd >= 0);
	/* Sparse; about 40 bytes of node per item, plus copies. */
	CU_ASSERT_FATAL(ftruncate(fd, (off_t)SMR_ROUND_UP(n * 80 + 256 * SMR_MIB, SMR_MIB)) == 0);
	close(fd);
	SMR_ASSERT_OK(smr_dev_open(path, NULL, &dev));
	SMR_ASSERT_OK(smr_cow_format(dev, NULL, NULL));
	SMR_ASSERT_OK(smr_test_cow_open(dev, &o, &c));
	if (!c)
		return;
	printf("\n  %" PRIu64 " items (SMR_TEST_ITEMS to change)\n", n);
	t0 = now();
	for (uint64_t i = 0; i < n;) {
		struct smr_txn *t;

		SMR_ASSERT_OK(smr_txn_begin(c, &t));
		for (uint64_t e = SMR_MIN(n, i + 10000); i < e; i++) {
			struct smr_key k;
			uint64_t v = i * 3;
			int rc;

			key_of(i, &k);
			rc = smr_bt_insert(t, SMR_TREE_FS, &k, &v, sizeof(v));
			if (rc) {
				SMR_ASSERT_OK(rc);
				i = n;
			}
		}
		smr_txn_end(t);
		if (i % 1000000 == 0)
			SMR_ASSERT_OK(smr_cow_commit(c));
	}
	SMR_ASSERT_OK(smr_cow_close(c));
	t1 = now();

	/* Reopen with a small cache; drop it before every lookup. */
	o.cache_bytes = 1 * SMR_MIB;
	SMR_ASSERT_OK(smr_test_cow_open(dev, &o, &c));
	if (!c)
		return;
	h = smr_bt_height(c, SMR_TREE_FS);
	for (int j = 0; j < 1000; j++) {
		uint64_t i = smr_test_rand(&rs) % n, v = 0;
		size_t len = sizeof(v);
		struct smr_key k;

		key_of(i, &k);
		smr_cow_drop_cache(c);
		smr_cow_get_stats(c, &st0);
		SMR_ASSERT_OK(smr_bt_lookup(c, SMR_TREE_FS, &k, &v, &len));
		smr_cow_get_stats(c, &st1);
		CU_ASSERT_EQUAL(v, i * 3);
		CU_ASSERT_EQUAL(st1.node_reads - st0.node_reads, (uint64_t)h);
		reads += st1.node_reads - st0.node_reads;
	}
	t2 = now();
	SMR_ASSERT_OK(smr_bt_iterate(c, SMR_TREE_FS, &lo, &hi, count_fn, &cnt));
	CU_ASSERT_EQUAL(cnt.n, n);
	CU_ASSERT_EQUAL(cnt.bad, 0);
	/* log_{items per internal node}(n) levels above the leaves. */
	CU_ASSERT(h >= 2 && h <= 4);
	printf("  insert+commit %.1f s (%.0f items/s); height %d; "
	       "node reads per uncached lookup %.2f; full scan %.1f s\n",
	       t1 - t0, (double)n / (t1 - t0), h, (double)reads / 1000,
	       now() - t2);
	SMR_ASSERT_OK(smr_cow_close(c));
	SMR_ASSERT_OK(smr_dev_close(dev));
}

static const struct smr_test scale_tests[] = {
	{ "scale", test_scale },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	static const struct smr_suite suites[] = {
		{ "bt_scale", scale_tests },
		{ NULL, NULL },
	};

	smr_log_set_level(SMR_LOG_ERR + 0);
	return smr_test_main(argc, argv, suites);
}
