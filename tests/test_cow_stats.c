/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_cow_stats.c - the figures of smrfsctl stat and zones
 * (smr_cow_fsstat, smr_cow_zstat) on a zoned loop directory and a file:
 * they follow the data written, freed and committed, agree with the
 * device's zones and with each other, and page through the zones.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cow/cow.h"
#include "cowtest.h"
#include "dev/dev.h"
#include "testutil.h"

#define ZONE (4 * SMR_MIB)
#define NR_ZONES 24
#define NR_CNV 2

static int make_fs(const char *path, struct smr_dev **devp,
		   struct smr_cow **cp)
{
	struct smr_format_opts fo = { .label = "figures" };
	struct smr_cow_opts co = { .commit_secs = 3600 };
	int rc;

	rc = smr_dev_open(path, NULL, devp);
	if (rc)
		return rc;
	rc = smr_cow_format(*devp, &fo, NULL);
	if (!rc)
		rc = smr_test_cow_open(*devp, &co, cp);
	if (rc) {
		smr_dev_close(*devp);
		*devp = NULL;
	}
	return rc;
}

static const char *make_zloop(void)
{
	static char path[512];
	struct smr_zloop_params p = {
		.capacity = NR_ZONES * ZONE,
		.zone_size = ZONE,
		.nr_cnv = NR_CNV,
		.max_open = 8,
	};

	snprintf(path, sizeof(path), "%s/zl", smr_test_tmpdir("stats"));
	SMR_ASSERT_OK(smr_zloop_create(path, &p));
	return path;
}

/* Sum of live bytes over the zones the allocator manages. */
/* Settle @n extents of data as if an item referenced them. */
static void settle(struct smr_cow *c, const struct smr_data_extent *ext, int n)
{
	struct smr_txn *t;

	SMR_ASSERT_OK(smr_txn_begin(c, &t));
	for (int i = 0; i < n; i++)
		SMR_ASSERT_OK(smr_cow_data_settle(t, ext[i].off, ext[i].len));
	smr_txn_end(t);
}

static int64_t zones_live(struct smr_cow *c, uint32_t nr, uint32_t *full)
{
	struct smr_cow_zstat z[5];
	int64_t live = 0;
	uint32_t first = 0;
	int n;

	*full = 0;
	/* Five at a time, as the daemon pages them. */
	while ((n = smr_cow_zstat(c, first, 5, z)) > 0) {
		for (int i = 0; i < n; i++) {
			if (z[i].flags & SMR_COW_ZONE_META) {
				CU_ASSERT_EQUAL(z[i].live, -1);
				continue;
			}
			CU_ASSERT(z[i].live >= 0);
			CU_ASSERT((uint64_t)z[i].live <= z[i].written);
			CU_ASSERT(z[i].written <= z[i].cap);
			CU_ASSERT_EQUAL(z[i].len, ZONE);
			CU_ASSERT_EQUAL(z[i].start, (uint64_t)(first + i) * ZONE);
			if (z[i].cond == SMR_ZONE_COND_FULL)
				(*full)++;
			live += z[i].live;
		}
		first += (uint32_t)n;
	}
	CU_ASSERT_EQUAL(n, 0);
	CU_ASSERT_EQUAL(first, nr);
	return live;
}

static void test_zoned(void)
{
	const size_t len = 10 * SMR_MIB;
	struct smr_cow_fsstat s0, s1, s2;
	struct smr_data_extent ext[16];
	struct smr_cow_zstat z;
	struct smr_dev *dev;
	struct smr_cow *c;
	struct smr_txn *t;
	uint64_t data = 0;
	uint32_t full;
	void *buf;
	int n;

	SMR_ASSERT_OK(make_fs(make_zloop(), &dev, &c));
	if (!c)
		return;
	smr_cow_fsstat(c, &s0);
	CU_ASSERT_STRING_EQUAL(s0.dev_kind, "zloop");
	CU_ASSERT_STRING_EQUAL(s0.backend, "zloop");
	CU_ASSERT_STRING_EQUAL(s0.info.alloc, "zoned");
	CU_ASSERT_STRING_EQUAL(s0.info.label, "figures");
	CU_ASSERT(s0.zoned);
	CU_ASSERT_EQUAL(s0.nr_zones, NR_ZONES);
	CU_ASSERT_EQUAL(s0.nr_cnv_zones, NR_CNV);
	CU_ASSERT_EQUAL(s0.max_open, 8);
	CU_ASSERT_EQUAL(s0.zone_size, ZONE);
	CU_ASSERT(s0.zones_meta >= 1);
	CU_ASSERT_EQUAL(s0.zones_meta * (uint64_t)ZONE, s0.info.data_start);
	CU_ASSERT(s0.zones_free + s0.zones_meta + s0.zones_full <= NR_ZONES);
	CU_ASSERT_EQUAL(s0.space.used + s0.space.free + s0.space.reclaimable +
				s0.space.reserved,
			s0.space.capacity);
	CU_ASSERT_EQUAL(s0.bytes_allocated[1], 0);

	/* 10 MiB of hot data: two and a half zones. */
	buf = smr_cow_buf_alloc(len);
	CU_ASSERT_FATAL(buf != NULL);
	memset(buf, 0x5a, len);
	n = smr_cow_data_write(c, SMR_DATA_HOT, 0, buf, len, ext, 16);
	CU_ASSERT(n >= 1);
	settle(c, ext, n);
	/* What users asked for is the layer above's to say. */
	smr_cow_count_user(c, len - 100);
	for (int i = 0; i < n; i++)
		data += ext[i].len;
	CU_ASSERT_EQUAL(data, len);
	/* Nothing in the trees changed: force the checkpoint. */
	SMR_ASSERT_OK(smr_cow_commit_forced(c));

	smr_cow_fsstat(c, &s1);
	CU_ASSERT_EQUAL(s1.bytes_allocated[1], len);
	/* The cleaner's figures: all of it user data, nothing relocated. */
	CU_ASSERT(s1.has_gc);
	CU_ASSERT_EQUAL(s1.user_bytes, len - 100);
	CU_ASSERT(s1.device_bytes > len);
	CU_ASSERT_EQUAL(s1.reloc_bytes, 0);
	CU_ASSERT(s1.space.used >= s0.space.used + len);
	CU_ASSERT(s1.zones_free <= s0.zones_free - 3);
	CU_ASSERT(s1.zones_full >= 2);
	CU_ASSERT(s1.info.gen > s0.info.gen);
	CU_ASSERT(s1.commits > s0.commits);
	/* The zones' live bytes add up to what the allocator calls used. */
	CU_ASSERT_EQUAL((uint64_t)zones_live(c, NR_ZONES, &full),
			s1.space.used);
	CU_ASSERT_EQUAL(full, s1.zones_full);

	/* Free it: dead at the next commit, given back at the one after. */
	SMR_ASSERT_OK(smr_txn_begin(c, &t));
	for (int i = 0; i < n; i++)
		SMR_ASSERT_OK(smr_cow_data_free(t, ext[i].off, ext[i].len));
	smr_txn_end(t);
	SMR_ASSERT_OK(smr_cow_commit(c));
	SMR_ASSERT_OK(smr_cow_commit_forced(c));
	smr_cow_fsstat(c, &s2);
	CU_ASSERT(s2.space.used + len <= s1.space.used + SMR_MIB);
	CU_ASSERT_EQUAL(s2.bytes_freed - s1.bytes_freed >= len, 1);
	CU_ASSERT_EQUAL((uint64_t)zones_live(c, NR_ZONES, &full),
			s2.space.used);

	/* Bounds. */
	SMR_ASSERT_RC(smr_cow_zstat(c, NR_ZONES, 1, &z), 0);
	SMR_ASSERT_RC(smr_cow_zstat(c, NR_ZONES + 1, 1, &z), -EINVAL);
	SMR_ASSERT_RC(smr_cow_zstat(c, NR_ZONES - 1, 8, &z), 1);

	smr_cow_buf_free(buf);
	SMR_ASSERT_OK(smr_cow_close(c));
	SMR_ASSERT_OK(smr_dev_close(dev));
}

/* Read-only reopen: the same figures, from the checkpoint. */
static void test_reopen(void)
{
	struct smr_cow_opts ro = { .read_only = true };
	struct smr_dev_opts dro = { .read_only = true };
	struct smr_cow_fsstat a, b;
	struct smr_data_extent ext[4];
	const char *path = make_zloop();
	struct smr_dev *dev;
	struct smr_cow *c;
	void *buf;
	int n;

	SMR_ASSERT_OK(make_fs(path, &dev, &c));
	if (!c)
		return;
	buf = smr_cow_buf_alloc(SMR_MIB);
	CU_ASSERT_FATAL(buf != NULL);
	n = smr_cow_data_write(c, SMR_DATA_COLD, 0, buf, SMR_MIB, ext, 4);
	CU_ASSERT(n >= 1);
	settle(c, ext, n);
	smr_cow_count_user(c, SMR_MIB - 1);
	smr_cow_buf_free(buf);
	SMR_ASSERT_OK(smr_cow_commit_forced(c));
	smr_cow_fsstat(c, &a);
	SMR_ASSERT_OK(smr_cow_close(c));
	SMR_ASSERT_OK(smr_dev_close(dev));

	SMR_ASSERT_OK(smr_dev_open(path, &dro, &dev));
	SMR_ASSERT_OK(smr_test_cow_open(dev, &ro, &c));
	smr_cow_fsstat(c, &b);
	CU_ASSERT(b.read_only);
	CU_ASSERT_EQUAL(b.bytes_allocated[2], SMR_MIB);
	CU_ASSERT_EQUAL(b.user_bytes, SMR_MIB - 1);
	CU_ASSERT_EQUAL(b.space.used, a.space.used);
	CU_ASSERT_EQUAL(b.zones_free, a.zones_free);
	CU_ASSERT_EQUAL(b.info.gen, a.info.gen);
	CU_ASSERT_EQUAL(memcmp(b.info.uuid, a.info.uuid, 16), 0);
	SMR_ASSERT_OK(smr_cow_close(c));
	SMR_ASSERT_OK(smr_dev_close(dev));
}

/* A file has no zones: the figures say so, the zone list refuses. */
static void test_file(void)
{
	char path[512];
	struct smr_cow_fsstat st;
	struct smr_cow_zstat z;
	struct smr_dev *dev;
	struct smr_cow *c;
	int fd;

	snprintf(path, sizeof(path), "%s/img", smr_test_tmpdir("stats-file"));
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_FATAL(ftruncate(fd, 64 * SMR_MIB) == 0);
	close(fd);
	SMR_ASSERT_OK(make_fs(path, &dev, &c));
	if (!c)
		return;
	smr_cow_fsstat(c, &st);
	CU_ASSERT_STRING_EQUAL(st.dev_kind, "file");
	CU_ASSERT(!st.zoned);
	CU_ASSERT_EQUAL(st.nr_zones, 0);
	CU_ASSERT_EQUAL(st.zones_free, 0);
	CU_ASSERT(strcmp(st.info.alloc, "zoned") != 0);
	CU_ASSERT(st.space.capacity > 0);
	SMR_ASSERT_RC(smr_cow_zstat(c, 0, 1, &z), -EOPNOTSUPP);
	SMR_ASSERT_OK(smr_cow_close(c));
	SMR_ASSERT_OK(smr_dev_close(dev));
}

static const struct smr_test tests[] = {
	{ "zoned", test_zoned },
	{ "reopen", test_reopen },
	{ "file", test_file },
	{ NULL, NULL },
};

static const struct smr_suite suites[] = {
	{ "cow_stats", tests },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	return smr_test_main(argc, argv, suites);
}
