/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_zloop.c - the zoned loop directory backend through the device API:
 * the zone state machine of a host-managed drive and every error it returns,
 * the directory layout, persistence across reopen, parameter checks,
 * exclusive open, preallocation ahead of the write pointers, discard.
 */
#include "testutil.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <linux/magic.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "dev/dev.h"

#define ZS (1 * SMR_MIB) /* zone size of most tests */
#define BS 4096

/* A fresh zoned loop directory with @nr zones of ZS, @cnv conventional. */
static const char *mkzloop(const char *tag, uint32_t nr, uint32_t cnv,
			   uint64_t zcap, uint32_t max_open,
			   uint32_t max_active, struct smr_zloop_params *out)
{
	static char path[4096];
	struct smr_zloop_params p = {
		.capacity = nr * ZS,
		.zone_size = ZS,
		.zone_cap = zcap,
		.nr_cnv = cnv,
		.max_open = max_open,
		.max_active = max_active,
		.block_size = BS,
	};

	snprintf(path, sizeof(path), "%s/zl", smr_test_tmpdir(tag));
	SMR_ASSERT_OK(smr_zloop_create(path, &p));
	if (out)
		*out = p;
	return path;
}

static struct smr_dev *open_dev(const char *path)
{
	struct smr_dev *dev = NULL;

	SMR_ASSERT_OK(smr_dev_open(path, NULL, &dev));
	CU_ASSERT_PTR_NOT_NULL_FATAL(dev);
	return dev;
}

static void fill(void *buf, size_t len, uint64_t seed)
{
	uint64_t *p = buf;

	for (size_t i = 0; i < len / 8; i++)
		p[i] = seed * 0x9e3779b97f4a7c15ULL + i;
}

static long long file_size(const char *dir, const char *name)
{
	char path[4200];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (stat(path, &st))
		return -1;
	return (long long)st.st_size;
}

/* Everything a failed call must leave as it was. */
struct zsnap {
	struct smr_zone z;
	uint32_t nr_open, nr_active;
};

static void snap(struct smr_dev *dev, uint32_t zno, struct zsnap *s)
{
	SMR_ASSERT_OK(smr_dev_zone(dev, zno, &s->z));
	s->nr_open = smr_dev_nr_open(dev);
	s->nr_active = smr_dev_nr_active(dev);
}

static void assert_same(struct smr_dev *dev, uint32_t zno,
			const struct zsnap *s)
{
	struct zsnap now;

	snap(dev, zno, &now);
	CU_ASSERT_EQUAL(now.z.wp, s->z.wp);
	CU_ASSERT_EQUAL(now.z.cond, s->z.cond);
	CU_ASSERT_EQUAL(now.nr_open, s->nr_open);
	CU_ASSERT_EQUAL(now.nr_active, s->nr_active);
}

/* ------------------------------------------------------------------------ */

static void test_layout_and_geometry(void)
{
	const char *dir = mkzloop("zl-layout", 8, 2, 0, 0, 0, NULL);
	const struct smr_dev_info *info;
	struct smr_dev *dev;
	struct smr_zone z;

	CU_ASSERT_EQUAL(file_size(dir, "cnv-000000"), (long long)ZS);
	CU_ASSERT_EQUAL(file_size(dir, "cnv-000001"), (long long)ZS);
	CU_ASSERT_EQUAL(file_size(dir, "seq-000002"), 0);
	CU_ASSERT_EQUAL(file_size(dir, "seq-000007"), 0);
	CU_ASSERT_EQUAL(file_size(dir, "seq-000008"), -1);
	CU_ASSERT_EQUAL(file_size(dir, "seq-000000"), -1);

	dev = open_dev(dir);
	info = smr_dev_info(dev);
	CU_ASSERT_STRING_EQUAL(info->backend, "zloop");
	CU_ASSERT_EQUAL(info->kind, SMR_DEV_KIND_ZLOOP);
	CU_ASSERT_EQUAL(info->block_size, BS);
	CU_ASSERT_EQUAL(info->capacity, 8 * ZS);
	CU_ASSERT(info->zoned);
	CU_ASSERT_EQUAL(info->nr_zones, 8);
	CU_ASSERT_EQUAL(info->nr_cnv_zones, 2);
	CU_ASSERT_EQUAL(info->max_open, 0);

	SMR_ASSERT_OK(smr_dev_zone(dev, 1, &z));
	CU_ASSERT_EQUAL(z.type, SMR_ZONE_TYPE_CNV);
	CU_ASSERT_EQUAL(z.cond, SMR_ZONE_COND_NOT_WP);
	CU_ASSERT_EQUAL(z.start, ZS);
	SMR_ASSERT_OK(smr_dev_zone(dev, 5, &z));
	CU_ASSERT_EQUAL(z.type, SMR_ZONE_TYPE_SEQ);
	CU_ASSERT_EQUAL(z.cond, SMR_ZONE_COND_EMPTY);
	CU_ASSERT_EQUAL(z.start, 5 * ZS);
	CU_ASSERT_EQUAL(z.len, ZS);
	CU_ASSERT_EQUAL(z.cap, ZS);
	CU_ASSERT_EQUAL(z.wp, 5 * ZS);
	CU_ASSERT_EQUAL(z.no, 5);
	CU_ASSERT_EQUAL(smr_dev_zone_no(dev, 5 * ZS + 4096), 5);
	CU_ASSERT_EQUAL(smr_dev_zone_no(dev, 8 * ZS), UINT32_MAX);
	SMR_ASSERT_RC(smr_dev_zone(dev, 8, &z), -EINVAL);
	SMR_ASSERT_OK(smr_dev_close(dev));
}

static void test_seq_write_read(void)
{
	const char *dir = mkzloop("zl-rw", 6, 1, 0, 0, 0, NULL);
	struct smr_dev *dev = open_dev(dir);
	uint8_t *w = smr_dev_buf_alloc(64 * 1024);
	uint8_t *r = smr_dev_buf_alloc(3 * ZS);
	uint64_t zs = 2 * ZS;

	fill(w, 64 * 1024, 1);
	SMR_ASSERT_OK(smr_dev_write(dev, w, 64 * 1024, zs));
	CU_ASSERT_EQUAL(smr_dev_zone_wp(dev, 2), zs + 64 * 1024);
	CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, 2), SMR_ZONE_COND_IMP_OPEN);
	CU_ASSERT_EQUAL(smr_dev_nr_open(dev), 1);
	CU_ASSERT_EQUAL(smr_dev_nr_active(dev), 1);
	fill(w, 64 * 1024, 2);
	SMR_ASSERT_OK(smr_dev_write(dev, w, 8192, zs + 64 * 1024));
	CU_ASSERT_EQUAL(smr_dev_zone_wp(dev, 2), zs + 72 * 1024);
	CU_ASSERT_EQUAL(file_size(dir, "seq-000002"), 72 * 1024);

	/* Read back, and past the write pointer: zeros. */
	memset(r, 0xaa, 3 * ZS);
	SMR_ASSERT_OK(smr_dev_read(dev, r, 128 * 1024, zs));
	fill(w, 64 * 1024, 1);
	CU_ASSERT_EQUAL(memcmp(r, w, 64 * 1024), 0);
	fill(w, 64 * 1024, 2);
	CU_ASSERT_EQUAL(memcmp(r + 64 * 1024, w, 8192), 0);
	for (size_t i = 72 * 1024; i < 128 * 1024; i++)
		if (r[i]) {
			CU_FAIL("byte past the write pointer is not zero");
			break;
		}

	/* A read across zones: conventional zone 0, seq zones 1 and 2. */
	memset(r, 0xaa, 3 * ZS);
	SMR_ASSERT_OK(smr_dev_read(dev, r, 3 * ZS, 0));
	fill(w, 64 * 1024, 1);
	CU_ASSERT_EQUAL(memcmp(r + 2 * ZS, w, 64 * 1024), 0);
	CU_ASSERT_EQUAL(r[ZS], 0);
	CU_ASSERT_EQUAL(r[3 * ZS - 1], 0);

	/* Conventional zone: random writes and overwrites. */
	fill(w, 8192, 3);
	SMR_ASSERT_OK(smr_dev_write(dev, w, 8192, 512 * 1024));
	SMR_ASSERT_OK(smr_dev_write(dev, w, 4096, 4096));
	SMR_ASSERT_OK(smr_dev_write(dev, w, 8192, 512 * 1024));
	SMR_ASSERT_OK(smr_dev_read(dev, r, 8192, 512 * 1024));
	CU_ASSERT_EQUAL(memcmp(r, w, 8192), 0);
	CU_ASSERT_EQUAL(file_size(dir, "cnv-000000"), (long long)ZS);

	/* Zone operations on a conventional zone. */
	SMR_ASSERT_RC(smr_dev_zone_reset(dev, 0), -EINVAL);
	SMR_ASSERT_RC(smr_dev_zone_finish(dev, 0), -EINVAL);
	SMR_ASSERT_RC(smr_dev_zone_open(dev, 0), -EINVAL);
	SMR_ASSERT_RC(smr_dev_zone_close(dev, 0), -EINVAL);
	SMR_ASSERT_RC(smr_dev_zone_reset(dev, 6), -EINVAL);

	smr_dev_buf_free(w);
	smr_dev_buf_free(r);
	SMR_ASSERT_OK(smr_dev_close(dev));
}

/* Discard: holes in the conventional zones' files; a sequential zone keeps
 * its data and write pointer (it is reset, not discarded). */
static void test_discard(void)
{
	const char *dir = mkzloop("zl-discard", 4, 2, 0, 0, 0, NULL);
	struct smr_dev *dev = open_dev(dir);
	uint8_t *w = smr_dev_buf_alloc(ZS);
	uint8_t *r = smr_dev_buf_alloc(ZS);
	struct stat st;
	char path[4200];

	CU_ASSERT_TRUE(smr_dev_info(dev)->discard);
	fill(w, ZS, 1);
	SMR_ASSERT_OK(smr_dev_write(dev, w, ZS, 0));
	SMR_ASSERT_OK(smr_dev_write(dev, w, ZS, ZS));
	SMR_ASSERT_OK(smr_dev_write(dev, w, 64 * 1024, 2 * ZS));
	SMR_ASSERT_RC(smr_dev_discard(dev, 1, BS), -EINVAL);
	/* From the middle of zone 0 to the end of the device. */
	SMR_ASSERT_OK(smr_dev_discard(dev, ZS / 2, 4 * ZS - ZS / 2));

	SMR_ASSERT_OK(smr_dev_read(dev, r, ZS, 0));
	CU_ASSERT_EQUAL(memcmp(r, w, ZS / 2), 0);
	for (size_t i = ZS / 2; i < ZS; i++)
		if (r[i]) {
			CU_FAIL("a discarded byte of zone 0 is not zero");
			break;
		}
	SMR_ASSERT_OK(smr_dev_read(dev, r, ZS, ZS));
	for (size_t i = 0; i < ZS; i++)
		if (r[i]) {
			CU_FAIL("a discarded byte of zone 1 is not zero");
			break;
		}
	/* A hole, not zeros written; the file keeps its size. */
	snprintf(path, sizeof(path), "%s/cnv-000001", dir);
	CU_ASSERT_EQUAL_FATAL(stat(path, &st), 0);
	CU_ASSERT_EQUAL(st.st_size, (off_t)ZS);
	CU_ASSERT(st.st_blocks * 512 < (blkcnt_t)ZS);
	CU_ASSERT_EQUAL(smr_dev_zone_wp(dev, 2), 2 * ZS + 64 * 1024);
	SMR_ASSERT_OK(smr_dev_read(dev, r, 64 * 1024, 2 * ZS));
	CU_ASSERT_EQUAL(memcmp(r, w, 64 * 1024), 0);

	smr_dev_buf_free(w);
	smr_dev_buf_free(r);
	SMR_ASSERT_OK(smr_dev_close(dev));
}

static void test_write_errors(void)
{
	const char *dir = mkzloop("zl-err", 4, 0, 768 * 1024, 0, 0, NULL);
	struct smr_dev *dev = open_dev(dir);
	uint8_t *w = smr_dev_buf_alloc(ZS);
	struct zsnap s;

	fill(w, ZS, 7);
	/* Not at the write pointer of an empty zone. */
	snap(dev, 1, &s);
	SMR_ASSERT_RC(smr_dev_write(dev, w, 4096, ZS + 4096), -EIO);
	assert_same(dev, 1, &s);
	CU_ASSERT_EQUAL(file_size(dir, "seq-000001"), 0);

	SMR_ASSERT_OK(smr_dev_write(dev, w, 16384, ZS));
	snap(dev, 1, &s);
	/* Ahead of and behind the write pointer. */
	SMR_ASSERT_RC(smr_dev_write(dev, w, 4096, ZS + 20480), -EIO);
	assert_same(dev, 1, &s);
	SMR_ASSERT_RC(smr_dev_write(dev, w, 4096, ZS + 8192), -EIO);
	assert_same(dev, 1, &s);
	SMR_ASSERT_RC(smr_dev_write(dev, w, 4096, ZS), -EIO);
	assert_same(dev, 1, &s);
	CU_ASSERT_EQUAL(file_size(dir, "seq-000001"), 16384);

	/* Crossing the zone capacity (768 KiB of 1 MiB). */
	SMR_ASSERT_RC(smr_dev_write(dev, w, 768 * 1024, ZS + 16384), -EIO);
	assert_same(dev, 1, &s);
	/* Crossing into the next zone. */
	SMR_ASSERT_RC(smr_dev_write(dev, w, ZS, ZS + 16384), -EIO);
	assert_same(dev, 1, &s);
	CU_ASSERT_EQUAL(file_size(dir, "seq-000001"), 16384);

	/* Up to exactly the capacity: full, no longer open. */
	SMR_ASSERT_OK(smr_dev_write(dev, w, 768 * 1024 - 16384, ZS + 16384));
	CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, 1), SMR_ZONE_COND_FULL);
	CU_ASSERT_EQUAL(smr_dev_zone_wp(dev, 1), ZS + 768 * 1024);
	CU_ASSERT_EQUAL(smr_dev_nr_open(dev), 0);
	CU_ASSERT_EQUAL(smr_dev_nr_active(dev), 0);
	CU_ASSERT_EQUAL(file_size(dir, "seq-000001"), 768 * 1024);

	/* Into a full zone. */
	snap(dev, 1, &s);
	SMR_ASSERT_RC(smr_dev_write(dev, w, 4096, ZS + 768 * 1024), -EIO);
	assert_same(dev, 1, &s);
	SMR_ASSERT_RC(smr_dev_write(dev, w, 4096, ZS), -EIO);
	assert_same(dev, 1, &s);

	/* Misaligned requests and requests past the end. */
	snap(dev, 2, &s);
	SMR_ASSERT_RC(smr_dev_write(dev, w, 4096, 2 * ZS + 512), -EINVAL);
	SMR_ASSERT_RC(smr_dev_write(dev, w, 1000, 2 * ZS), -EINVAL);
	SMR_ASSERT_RC(smr_dev_read(dev, w, 4096, 2 * ZS + 100), -EINVAL);
	SMR_ASSERT_RC(smr_dev_read(dev, w, 100, 2 * ZS), -EINVAL);
	SMR_ASSERT_RC(smr_dev_read(dev, w, 8192, 4 * ZS - 4096), -EINVAL);
	SMR_ASSERT_RC(smr_dev_write(dev, w, 4096, 4 * ZS), -EINVAL);
	assert_same(dev, 2, &s);

	/* A buffer of any alignment is taken as it is (buffered I/O). */
	SMR_ASSERT_OK(smr_dev_write(dev, w + 8, 8192, 2 * ZS));
	CU_ASSERT_EQUAL(smr_dev_zone_wp(dev, 2), 2 * ZS + 8192);
	memset(w + ZS / 2, 0, 8192 + 3);
	SMR_ASSERT_OK(smr_dev_read(dev, w + ZS / 2 + 3, 8192, 2 * ZS));
	CU_ASSERT_EQUAL(memcmp(w + ZS / 2 + 3, w + 8, 8192), 0);

	smr_dev_buf_free(w);
	SMR_ASSERT_OK(smr_dev_close(dev));
}

static void test_zone_ops(void)
{
	const char *dir = mkzloop("zl-ops", 4, 0, 768 * 1024, 0, 0, NULL);
	struct smr_dev *dev = open_dev(dir);
	uint8_t *w = smr_dev_buf_alloc(8192);
	struct zsnap s;

	/* Explicit open of an empty zone, close it again: empty. */
	SMR_ASSERT_OK(smr_dev_zone_open(dev, 0));
	CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, 0), SMR_ZONE_COND_EXP_OPEN);
	CU_ASSERT_EQUAL(smr_dev_nr_open(dev), 1);
	CU_ASSERT_EQUAL(smr_dev_nr_active(dev), 1);
	SMR_ASSERT_OK(smr_dev_zone_open(dev, 0)); /* already open */
	SMR_ASSERT_OK(smr_dev_zone_close(dev, 0));
	CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, 0), SMR_ZONE_COND_EMPTY);
	CU_ASSERT_EQUAL(smr_dev_nr_open(dev), 0);
	CU_ASSERT_EQUAL(smr_dev_nr_active(dev), 0);

	/* Closing an empty zone is refused. */
	snap(dev, 0, &s);
	SMR_ASSERT_RC(smr_dev_zone_close(dev, 0), -EIO);
	assert_same(dev, 0, &s);

	/* Written and closed: closed, still active. An explicitly opened
	 * zone stays explicitly open while written. */
	SMR_ASSERT_OK(smr_dev_write(dev, w, 8192, 0));
	SMR_ASSERT_OK(smr_dev_zone_close(dev, 0));
	CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, 0), SMR_ZONE_COND_CLOSED);
	CU_ASSERT_EQUAL(smr_dev_nr_open(dev), 0);
	CU_ASSERT_EQUAL(smr_dev_nr_active(dev), 1);
	SMR_ASSERT_OK(smr_dev_zone_close(dev, 0)); /* already closed */
	SMR_ASSERT_OK(smr_dev_write(dev, w, 4096, 8192));
	CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, 0), SMR_ZONE_COND_IMP_OPEN);
	SMR_ASSERT_OK(smr_dev_zone_open(dev, 0));
	CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, 0), SMR_ZONE_COND_EXP_OPEN);
	SMR_ASSERT_OK(smr_dev_write(dev, w, 4096, 12288));
	CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, 0), SMR_ZONE_COND_EXP_OPEN);
	CU_ASSERT_EQUAL(smr_dev_zone_wp(dev, 0), 16384);

	/* Finish: full, the file is zone-size long. */
	SMR_ASSERT_OK(smr_dev_zone_finish(dev, 0));
	CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, 0), SMR_ZONE_COND_FULL);
	CU_ASSERT_EQUAL(smr_dev_zone_wp(dev, 0), 768 * 1024);
	CU_ASSERT_EQUAL(smr_dev_nr_open(dev), 0);
	CU_ASSERT_EQUAL(smr_dev_nr_active(dev), 0);
	CU_ASSERT_EQUAL(file_size(dir, "seq-000000"), (long long)ZS);
	SMR_ASSERT_OK(smr_dev_zone_finish(dev, 0)); /* already full */
	snap(dev, 0, &s);
	SMR_ASSERT_RC(smr_dev_zone_open(dev, 0), -EIO);
	assert_same(dev, 0, &s);
	SMR_ASSERT_RC(smr_dev_zone_close(dev, 0), -EIO);
	assert_same(dev, 0, &s);

	/* Finish an empty zone. */
	SMR_ASSERT_OK(smr_dev_zone_finish(dev, 1));
	CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, 1), SMR_ZONE_COND_FULL);

	/* Reset: empty, file truncated; reset of an empty zone is fine. */
	SMR_ASSERT_OK(smr_dev_zone_reset(dev, 0));
	CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, 0), SMR_ZONE_COND_EMPTY);
	CU_ASSERT_EQUAL(smr_dev_zone_wp(dev, 0), 0);
	CU_ASSERT_EQUAL(file_size(dir, "seq-000000"), 0);
	SMR_ASSERT_OK(smr_dev_zone_reset(dev, 0));
	SMR_ASSERT_OK(smr_dev_write(dev, w, 4096, 0));
	CU_ASSERT_EQUAL(smr_dev_zone_wp(dev, 0), 4096);

	/* Reset all. */
	SMR_ASSERT_OK(smr_dev_write(dev, w, 4096, 2 * ZS));
	SMR_ASSERT_OK(smr_dev_reset_all(dev));
	for (uint32_t z = 0; z < 4; z++) {
		CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, z), SMR_ZONE_COND_EMPTY);
		CU_ASSERT_EQUAL(smr_dev_zone_wp(dev, z), z * ZS);
	}
	CU_ASSERT_EQUAL(smr_dev_nr_open(dev), 0);
	CU_ASSERT_EQUAL(smr_dev_nr_active(dev), 0);
	CU_ASSERT_EQUAL(file_size(dir, "seq-000001"), 0);

	smr_dev_buf_free(w);
	SMR_ASSERT_OK(smr_dev_close(dev));
}

static void test_open_limit_lru(void)
{
	const char *dir = mkzloop("zl-lru", 8, 0, 0, 2, 0, NULL);
	struct smr_dev *dev = open_dev(dir);
	uint8_t *w = smr_dev_buf_alloc(4096);

	CU_ASSERT_EQUAL(smr_dev_info(dev)->max_open, 2);
	SMR_ASSERT_OK(smr_dev_write(dev, w, 4096, 1 * ZS));
	SMR_ASSERT_OK(smr_dev_write(dev, w, 4096, 2 * ZS));
	CU_ASSERT_EQUAL(smr_dev_nr_open(dev), 2);
	/* A third zone: the least recently used (1) is closed. */
	SMR_ASSERT_OK(smr_dev_write(dev, w, 4096, 3 * ZS));
	CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, 1), SMR_ZONE_COND_CLOSED);
	CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, 2), SMR_ZONE_COND_IMP_OPEN);
	CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, 3), SMR_ZONE_COND_IMP_OPEN);
	CU_ASSERT_EQUAL(smr_dev_nr_open(dev), 2);
	CU_ASSERT_EQUAL(smr_dev_nr_active(dev), 3);
	/* Write 2 again: now 3 is the least recently used. */
	SMR_ASSERT_OK(smr_dev_write(dev, w, 4096, 2 * ZS + 4096));
	SMR_ASSERT_OK(smr_dev_write(dev, w, 4096, 1 * ZS + 4096));
	CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, 3), SMR_ZONE_COND_CLOSED);
	CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, 2), SMR_ZONE_COND_IMP_OPEN);
	CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, 1), SMR_ZONE_COND_IMP_OPEN);
	CU_ASSERT_EQUAL(smr_dev_zone_wp(dev, 1), ZS + 8192);

	/* Explicitly open zones are never closed implicitly: with both
	 * slots explicitly open, a third open or write is refused. */
	SMR_ASSERT_OK(smr_dev_zone_open(dev, 1));
	SMR_ASSERT_OK(smr_dev_zone_open(dev, 5)); /* closes 2 (implicit) */
	CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, 2), SMR_ZONE_COND_CLOSED);
	CU_ASSERT_EQUAL(smr_dev_nr_open(dev), 2);
	{
		struct zsnap s;

		snap(dev, 6, &s);
		SMR_ASSERT_RC(smr_dev_write(dev, w, 4096, 6 * ZS), -EIO);
		assert_same(dev, 6, &s);
		SMR_ASSERT_RC(smr_dev_zone_open(dev, 6), -EIO);
		assert_same(dev, 6, &s);
		CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, 1),
				SMR_ZONE_COND_EXP_OPEN);
		CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, 5),
				SMR_ZONE_COND_EXP_OPEN);
	}
	SMR_ASSERT_OK(smr_dev_zone_close(dev, 5));
	SMR_ASSERT_OK(smr_dev_write(dev, w, 4096, 6 * ZS));
	CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, 6), SMR_ZONE_COND_IMP_OPEN);

	smr_dev_buf_free(w);
	SMR_ASSERT_OK(smr_dev_close(dev));
}

static void test_active_limit(void)
{
	const char *dir = mkzloop("zl-act", 8, 0, 0, 0, 2, NULL);
	struct smr_dev *dev = open_dev(dir);
	uint8_t *w = smr_dev_buf_alloc(4096);
	struct zsnap s;

	SMR_ASSERT_OK(smr_dev_write(dev, w, 4096, 0));
	SMR_ASSERT_OK(smr_dev_write(dev, w, 4096, ZS));
	SMR_ASSERT_OK(smr_dev_zone_close(dev, 1));
	CU_ASSERT_EQUAL(smr_dev_nr_active(dev), 2);
	CU_ASSERT_EQUAL(smr_dev_nr_open(dev), 1);
	/* A third active zone is refused, by a write and by an open. */
	snap(dev, 2, &s);
	SMR_ASSERT_RC(smr_dev_write(dev, w, 4096, 2 * ZS), -EIO);
	assert_same(dev, 2, &s);
	SMR_ASSERT_RC(smr_dev_zone_open(dev, 2), -EIO);
	assert_same(dev, 2, &s);
	CU_ASSERT_EQUAL(file_size(dir, "seq-000002"), 0);
	/* A closed zone may be written again (it is already active). */
	SMR_ASSERT_OK(smr_dev_write(dev, w, 4096, ZS + 4096));
	/* Finishing one frees its slot. */
	SMR_ASSERT_OK(smr_dev_zone_finish(dev, 0));
	CU_ASSERT_EQUAL(smr_dev_nr_active(dev), 1);
	SMR_ASSERT_OK(smr_dev_write(dev, w, 4096, 2 * ZS));
	CU_ASSERT_EQUAL(smr_dev_nr_active(dev), 2);
	/* Resetting one too. */
	SMR_ASSERT_OK(smr_dev_zone_reset(dev, 1));
	SMR_ASSERT_OK(smr_dev_write(dev, w, 4096, 3 * ZS));

	smr_dev_buf_free(w);
	SMR_ASSERT_OK(smr_dev_close(dev));
}

static void test_persistence(void)
{
	const char *dir = mkzloop("zl-persist", 6, 1, 512 * 1024, 0, 0, NULL);
	uint8_t *w = smr_dev_buf_alloc(512 * 1024);
	uint8_t *r = smr_dev_buf_alloc(512 * 1024);
	struct smr_dev *dev = open_dev(dir);
	struct smr_zone z;

	fill(w, 512 * 1024, 11);
	SMR_ASSERT_OK(smr_dev_write(dev, w, 8192, ZS));
	SMR_ASSERT_OK(smr_dev_write(dev, w, 512 * 1024, 2 * ZS)); /* full */
	SMR_ASSERT_OK(smr_dev_zone_finish(dev, 3));
	SMR_ASSERT_OK(smr_dev_zone_open(dev, 4)); /* open, nothing written */
	SMR_ASSERT_OK(smr_dev_write(dev, w, 65536, 0));
	SMR_ASSERT_OK(smr_dev_close(dev));

	dev = open_dev(dir);
	SMR_ASSERT_OK(smr_dev_zone(dev, 1, &z));
	CU_ASSERT_EQUAL(z.wp, ZS + 8192);
	CU_ASSERT_EQUAL(z.cond, SMR_ZONE_COND_CLOSED);
	CU_ASSERT_EQUAL(z.cap, 512 * 1024);
	SMR_ASSERT_OK(smr_dev_zone(dev, 2, &z));
	CU_ASSERT_EQUAL(z.cond, SMR_ZONE_COND_FULL);
	CU_ASSERT_EQUAL(z.wp, 2 * ZS + 512 * 1024);
	SMR_ASSERT_OK(smr_dev_zone(dev, 3, &z));
	CU_ASSERT_EQUAL(z.cond, SMR_ZONE_COND_FULL);
	SMR_ASSERT_OK(smr_dev_zone(dev, 4, &z));
	CU_ASSERT_EQUAL(z.cond, SMR_ZONE_COND_EMPTY);
	CU_ASSERT_EQUAL(smr_dev_nr_open(dev), 0);
	CU_ASSERT_EQUAL(smr_dev_nr_active(dev), 1);
	SMR_ASSERT_OK(smr_dev_read(dev, r, 8192, ZS));
	CU_ASSERT_EQUAL(memcmp(r, w, 8192), 0);
	SMR_ASSERT_OK(smr_dev_read(dev, r, 512 * 1024, 2 * ZS));
	CU_ASSERT_EQUAL(memcmp(r, w, 512 * 1024), 0);
	SMR_ASSERT_OK(smr_dev_read(dev, r, 65536, 0));
	CU_ASSERT_EQUAL(memcmp(r, w, 65536), 0);
	/* Writing continues at the persisted write pointer. */
	SMR_ASSERT_RC(smr_dev_write(dev, w, 4096, ZS), -EIO);
	SMR_ASSERT_OK(smr_dev_write(dev, w, 4096, ZS + 8192));
	SMR_ASSERT_OK(smr_dev_close(dev));

	smr_dev_buf_free(w);
	smr_dev_buf_free(r);
}

static void test_params_checked(void)
{
	struct smr_zloop_params p, other;
	const char *dir = mkzloop("zl-params", 4, 1, 0, 3, 5, &p);
	struct smr_dev_opts o = { 0 };
	struct smr_dev *dev = NULL;
	char path[4200];
	int fd;

	/* Same parameters: fine; zone_cap 0 means zone size. */
	p.zone_cap = 0;
	o.zloop = &p;
	SMR_ASSERT_OK(smr_dev_open(dir, &o, &dev));
	CU_ASSERT_EQUAL(smr_dev_info(dev)->max_open, 3);
	CU_ASSERT_EQUAL(smr_dev_info(dev)->max_active, 5);
	SMR_ASSERT_OK(smr_dev_close(dev));

	/* Any other parameter: refused. */
	other = p;
	other.zone_size = 2 * ZS;
	o.zloop = &other;
	SMR_ASSERT_RC(smr_dev_open(dir, &o, &dev), -EINVAL);
	other = p;
	other.nr_cnv = 2;
	SMR_ASSERT_RC(smr_dev_open(dir, &o, &dev), -EINVAL);
	other = p;
	other.zone_cap = ZS / 2;
	SMR_ASSERT_RC(smr_dev_open(dir, &o, &dev), -EINVAL);
	other = p;
	other.max_open = 4;
	SMR_ASSERT_RC(smr_dev_open(dir, &o, &dev), -EINVAL);
	other = p;
	other.block_size = 512;
	SMR_ASSERT_RC(smr_dev_open(dir, &o, &dev), -EINVAL);
	CU_ASSERT_PTR_NULL(dev);

	/* Comments of any length are skipped. */
	snprintf(path, sizeof(path), "%s/zloop.params", dir);
	{
		FILE *f = fopen(path, "a");

		CU_ASSERT_PTR_NOT_NULL_FATAL(f);
		fputs("# ", f);
		for (int i = 0; i < 100; i++)
			fputs("a long comment ", f);
		fputs("\n", f);
		fclose(f);
	}
	SMR_ASSERT_OK(smr_dev_open(dir, NULL, &dev));
	SMR_ASSERT_OK(smr_dev_close(dev));
	dev = NULL;

	/* Creating over it is refused, as are bad parameters. */
	SMR_ASSERT_RC(smr_zloop_create(dir, &p), -EEXIST);
	other = p;
	other.zone_size = 3 * SMR_MIB; /* not a power of two */
	snprintf(path, sizeof(path), "%s/bad", smr_test_tmpdir("zl-bad"));
	SMR_ASSERT_RC(smr_zloop_create(path, &other), -EINVAL);
	other = p;
	other.zone_cap = 2 * ZS;
	SMR_ASSERT_RC(smr_zloop_create(path, &other), -EINVAL);
	other = p;
	other.capacity = ZS * 4 + 4096;
	SMR_ASSERT_RC(smr_zloop_create(path, &other), -EINVAL);
	other = p;
	other.nr_cnv = 4;
	SMR_ASSERT_RC(smr_zloop_create(path, &other), -EINVAL);

	/* A sequential zone file longer than its capacity is corruption
	 * of the layout: refused at open. */
	snprintf(path, sizeof(path), "%s/seq-000002", dir);
	fd = open(path, O_WRONLY);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(ftruncate(fd, 4096 + 100), 0);
	close(fd);
	SMR_ASSERT_RC(smr_dev_open(dir, NULL, &dev), -EINVAL);
	fd = open(path, O_WRONLY);
	CU_ASSERT_EQUAL(ftruncate(fd, 0), 0);
	close(fd);
	/* A zone file missing. */
	snprintf(path, sizeof(path), "%s/seq-000003", dir);
	CU_ASSERT_EQUAL(unlink(path), 0);
	SMR_ASSERT_RC(smr_dev_open(dir, NULL, &dev), -EINVAL);
	/* Not a zoned loop directory at all. */
	SMR_ASSERT_RC(smr_dev_open(smr_test_tmpdir("zl-empty"), NULL, &dev),
		      -EINVAL);
	SMR_ASSERT_RC(smr_dev_open(smr_test_missing("zl-missing"), NULL, &dev),
		      -ENOENT);
}

static void test_exclusive(void)
{
	const char *dir = mkzloop("zl-excl", 4, 0, 0, 0, 0, NULL);
	struct smr_dev_opts shared = { .shared = true };
	struct smr_dev_opts ro = { .read_only = true, .shared = true };
	struct smr_dev *a = open_dev(dir), *b = NULL;
	uint8_t *w = smr_dev_buf_alloc(4096);

	SMR_ASSERT_RC(smr_dev_open(dir, NULL, &b), -EBUSY);
	CU_ASSERT_PTR_NULL(b);
	SMR_ASSERT_OK(smr_dev_open(dir, &shared, &b));
	SMR_ASSERT_OK(smr_dev_close(b));
	SMR_ASSERT_OK(smr_dev_close(a));
	/* Released at close. */
	a = open_dev(dir);
	SMR_ASSERT_OK(smr_dev_close(a));

	/* A read-only handle refuses writes and zone operations. */
	SMR_ASSERT_OK(smr_dev_open(dir, &ro, &b));
	CU_ASSERT(smr_dev_info(b)->read_only);
	SMR_ASSERT_RC(smr_dev_write(b, w, 4096, 0), -EROFS);
	SMR_ASSERT_RC(smr_dev_zone_reset(b, 0), -EROFS);
	SMR_ASSERT_OK(smr_dev_read(b, w, 4096, 0));
	SMR_ASSERT_OK(smr_dev_close(b));
	smr_dev_buf_free(w);
}

static void test_submit_sync_order(void)
{
	const char *dir = mkzloop("zl-submit", 4, 0, 0, 0, 0, NULL);
	struct smr_dev *dev = open_dev(dir);
	uint8_t *w = smr_dev_buf_alloc(4 * 4096);
	struct smr_io ios[4] = {
		{ SMR_IO_WRITE, w, 4096, 0, 1 },
		{ SMR_IO_WRITE, w + 4096, 4096, 4096, 1 },
		{ SMR_IO_WRITE, w + 8192, 4096, 65536, 1 }, /* not at wp */
		{ SMR_IO_WRITE, w + 12288, 4096, 8192, 1 },
	};

	SMR_ASSERT_RC(smr_dev_submit(dev, ios, 4), -EIO);
	CU_ASSERT_EQUAL(ios[0].result, 0);
	CU_ASSERT_EQUAL(ios[1].result, 0);
	CU_ASSERT_EQUAL(ios[2].result, -EIO);
	CU_ASSERT_EQUAL(ios[3].result, -ECANCELED);
	CU_ASSERT_EQUAL(smr_dev_zone_wp(dev, 0), 8192);
	smr_dev_buf_free(w);
	SMR_ASSERT_OK(smr_dev_close(dev));
}

/* An unchecked handle lets the medium refuse: zloop refuses like the
 * kernel driver, and the cache is unchanged. */
static void test_unchecked(void)
{
	const char *dir = mkzloop("zl-unchk", 4, 0, 512 * 1024, 1, 0, NULL);
	struct smr_dev_opts o = { .unchecked = true };
	uint8_t *w = smr_dev_buf_alloc(8192);
	struct smr_dev *dev = NULL;
	struct smr_io ios[2] = {
		{ SMR_IO_WRITE, w, 4096, 2 * ZS, 1 },
		{ SMR_IO_WRITE, w, 4096, 2 * ZS + 8192, 1 },
	};
	struct zsnap s;

	SMR_ASSERT_OK(smr_dev_open(dir, &o, &dev));
	CU_ASSERT_PTR_NOT_NULL_FATAL(dev);
	SMR_ASSERT_OK(smr_dev_write(dev, w, 8192, ZS));
	snap(dev, 1, &s);
	SMR_ASSERT_RC(smr_dev_write(dev, w, 4096, ZS + 4096), -EIO);
	assert_same(dev, 1, &s);
	SMR_ASSERT_RC(smr_dev_write(dev, w, 4096, ZS + 512 * 1024), -EIO);
	assert_same(dev, 1, &s);
	CU_ASSERT_EQUAL(file_size(dir, "seq-000001"), 8192);
	SMR_ASSERT_OK(smr_dev_write(dev, w, 4096, ZS + 8192));
	CU_ASSERT_EQUAL(smr_dev_zone_wp(dev, 1), ZS + 12288);
	/* Batches too (they bypass io_uring on unchecked zloop handles). */
	SMR_ASSERT_RC(smr_dev_submit(dev, ios, 2), -EIO);
	CU_ASSERT_EQUAL(ios[0].result, 0);
	CU_ASSERT_EQUAL(ios[1].result, -EIO);
	CU_ASSERT_EQUAL(smr_dev_zone_wp(dev, 2), 2 * ZS + 4096);
	CU_ASSERT_EQUAL(file_size(dir, "seq-000002"), 4096);
	/* The open limit still closes zones implicitly. */
	CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, 1), SMR_ZONE_COND_CLOSED);
	CU_ASSERT_EQUAL(smr_dev_nr_open(dev), 1);
	SMR_ASSERT_OK(smr_dev_close(dev));
	smr_dev_buf_free(w);
}

/* 512-byte blocks: 512-byte writes at the write pointer. */
static void test_small_blocks(void)
{
	struct smr_zloop_params p = {
		.capacity = 4 * ZS, .zone_size = ZS, .nr_cnv = 1,
		.block_size = 512,
	};
	uint8_t *w = smr_dev_buf_alloc(4096), *r = smr_dev_buf_alloc(4096);
	struct smr_dev *dev = NULL;
	char path[4096];

	snprintf(path, sizeof(path), "%s/zl", smr_test_tmpdir("zl-512"));
	SMR_ASSERT_OK(smr_zloop_create(path, &p));
	SMR_ASSERT_OK(smr_dev_open(path, NULL, &dev));
	CU_ASSERT_PTR_NOT_NULL_FATAL(dev);
	CU_ASSERT_EQUAL(smr_dev_info(dev)->block_size, 512);
	fill(w, 4096, 3);
	SMR_ASSERT_OK(smr_dev_write(dev, w, 512, ZS));
	SMR_ASSERT_OK(smr_dev_write(dev, w + 512, 1024, ZS + 512));
	SMR_ASSERT_RC(smr_dev_write(dev, w, 512, ZS + 2048), -EIO);
	SMR_ASSERT_RC(smr_dev_write(dev, w, 256, ZS + 1536), -EINVAL);
	CU_ASSERT_EQUAL(smr_dev_zone_wp(dev, 1), ZS + 1536);
	CU_ASSERT_EQUAL(file_size(path, "seq-000001"), 1536);
	memset(r, 0xaa, 4096);
	SMR_ASSERT_OK(smr_dev_read(dev, r, 2048, ZS));
	CU_ASSERT_EQUAL(memcmp(r, w, 1536), 0);
	CU_ASSERT_EQUAL(r[1536], 0);
	SMR_ASSERT_OK(smr_dev_close(dev));
	/* A 512-byte write pointer survives a reopen. */
	SMR_ASSERT_OK(smr_dev_open(path, NULL, &dev));
	CU_ASSERT_EQUAL(smr_dev_zone_wp(dev, 1), ZS + 1536);
	SMR_ASSERT_OK(smr_dev_close(dev));
	smr_dev_buf_free(w);
	smr_dev_buf_free(r);
}


/* Descriptors this process has open. */
static unsigned int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	unsigned int n = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n - 3; /* ".", ".." and the directory's own */
}

/*
 * More zones than the open file limit allows descriptors: zone files are
 * opened on demand and only a bounded number stays open, also when one
 * batch writes to every zone at once (more zones than the cache holds).
 */
static void test_fd_cache(void)
{
	const uint32_t nr = 300;
	const char *dir = mkzloop("zl-fds", nr, 2, 0, 0, 0, NULL);
	struct smr_io *ios = calloc(nr, sizeof(*ios));
	uint8_t *w = smr_dev_buf_alloc(nr * BS);
	uint8_t *r = smr_dev_buf_alloc(BS);
	struct rlimit old, low;
	struct smr_dev *dev;
	unsigned int base;

	CU_ASSERT_PTR_NOT_NULL_FATAL(ios);
	SMR_ASSERT_OK(getrlimit(RLIMIT_NOFILE, &old));
	low = old;
	low.rlim_cur = 128; /* the cache keeps at most a quarter: 32 */
	SMR_ASSERT_OK(setrlimit(RLIMIT_NOFILE, &low));
	base = open_fds();
	dev = open_dev(dir);
	CU_ASSERT(open_fds() <= base + 2 + 2);

	/* One write per zone in one batch (io_uring), then one at a time. */
	for (uint32_t z = 0; z < nr; z++) {
		fill(w + z * BS, BS, z);
		ios[z] = (struct smr_io){ SMR_IO_WRITE, w + z * BS, BS,
					  (uint64_t)z * ZS, 1 };
	}
	SMR_ASSERT_OK(smr_dev_submit(dev, ios, nr));
	CU_ASSERT(open_fds() <= base + 40);
	for (uint32_t z = 0; z < nr; z++)
		SMR_ASSERT_OK(smr_dev_write(dev, w + z * BS, BS,
					    (uint64_t)z * ZS + BS));
	CU_ASSERT(open_fds() <= base + 40);
	SMR_ASSERT_OK(smr_dev_flush(dev));
	for (uint32_t z = nr; z-- > 0;) {
		SMR_ASSERT_OK(smr_dev_read(dev, r, BS,
					   (uint64_t)z * ZS + (z & 1) * BS));
		CU_ASSERT_EQUAL(memcmp(r, w + z * BS, BS), 0);
	}
	SMR_ASSERT_OK(smr_dev_zone_finish(dev, nr - 1));
	SMR_ASSERT_OK(smr_dev_zone_reset(dev, 2));
	CU_ASSERT(open_fds() <= base + 40);
	SMR_ASSERT_OK(smr_dev_close(dev));
	CU_ASSERT_EQUAL(open_fds(), base);
	CU_ASSERT_EQUAL(file_size(dir, "seq-000002"), 0);
	CU_ASSERT_EQUAL(file_size(dir, "seq-000299"), (long long)ZS);
	CU_ASSERT_EQUAL(file_size(dir, "seq-000150"), 2 * BS);

	SMR_ASSERT_OK(setrlimit(RLIMIT_NOFILE, &old));
	smr_dev_buf_free(w);
	smr_dev_buf_free(r);
	free(ios);
}

/* Bytes allocated to zone file @name (its blocks), -1 if it is missing. */
static long long file_alloc(const char *dir, const char *name)
{
	char path[4200];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (stat(path, &st))
		return -1;
	return (long long)st.st_blocks * 512;
}

/* Wait up to 5 s for @name to have at least @min bytes allocated; what it
 * has then. */
static long long wait_alloc(const char *dir, const char *name, long long min)
{
	long long a = file_alloc(dir, name);

	for (int i = 0; i < 500 && a < min; i++) {
		nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
		a = file_alloc(dir, name);
	}
	return a;
}

static struct smr_dev *open_prealloc(const char *path, int mode)
{
	struct smr_dev_opts o = { .zloop_prealloc = mode };
	struct smr_dev *dev = NULL;

	SMR_ASSERT_OK(smr_dev_open(path, &o, &dev));
	CU_ASSERT_PTR_NOT_NULL_FATAL(dev);
	return dev;
}

/* Does the file system under @dir take fallocate(FALLOC_FL_KEEP_SIZE)? */
static bool keep_size_works(const char *dir)
{
	char path[4200];
	bool ok;
	int fd;

	snprintf(path, sizeof(path), "%s/probe", dir);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0)
		return false;
	ok = fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 65536) == 0;
	close(fd);
	unlink(path);
	return ok;
}

/*
 * Zone files get their pages ahead of the write pointer, off the writer's
 * thread, without a change of size; never past the zone capacity; not for
 * small writes; not when turned off; and reset gives them back.
 */
static void test_prealloc(void)
{
	const uint64_t zs = 16 * SMR_MIB, cap = 12 * SMR_MIB;
	const long long slack = 64 * 1024; /* the file system's own blocks */
	/* Where nothing is preallocated: below what preallocation gives, with
	 * room for the file system's own speculation past the end of a file
	 * (XFS's, say). */
	const long long none = 4 * (long long)SMR_MIB;
	const size_t big = 256 * 1024;
	struct smr_zloop_params p = {
		.capacity = 4 * zs, .zone_size = zs, .zone_cap = cap,
		.block_size = BS,
	};
	char dir[4096];
	uint8_t *w = smr_dev_buf_alloc(big), *r = smr_dev_buf_alloc(big);
	struct smr_dev *dev;
	struct statfs sfs;
	long long a;

	CU_ASSERT_PTR_NOT_NULL_FATAL(w);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	snprintf(dir, sizeof(dir), "%s/zl", smr_test_tmpdir("zl-prealloc"));
	SMR_ASSERT_OK(smr_zloop_create(dir, &p));
	if (!keep_size_works(dir)) {
		printf("prealloc: skipped: no fallocate(FALLOC_FL_KEEP_SIZE) "
		       "here\n");
		goto out_free;
	}
	fill(w, big, 7);

	/* On: 8 MiB past the write pointer, the size is the write pointer. */
	dev = open_prealloc(dir, 1);
	SMR_ASSERT_OK(smr_dev_write(dev, w, big, zs));
	a = wait_alloc(dir, "seq-000001", (long long)(big + 8 * SMR_MIB));
	CU_ASSERT(a >= (long long)(big + 8 * SMR_MIB));
	CU_ASSERT(a <= (long long)(big + 8 * SMR_MIB) + slack);
	CU_ASSERT_EQUAL(file_size(dir, "seq-000001"), (long long)big);
	CU_ASSERT_EQUAL(smr_dev_zone_wp(dev, 1), zs + big);
	/* The data reads back. */
	SMR_ASSERT_OK(smr_dev_read(dev, r, big, zs));
	CU_ASSERT_EQUAL(memcmp(r, w, big), 0);

	/* Near the capacity: never past it. */
	for (uint64_t off = big; off < 10 * SMR_MIB; off += big)
		SMR_ASSERT_OK(smr_dev_write(dev, w, big, zs + off));
	a = wait_alloc(dir, "seq-000001", (long long)cap);
	CU_ASSERT(a >= (long long)cap);
	CU_ASSERT(a <= (long long)cap + slack);
	CU_ASSERT_EQUAL(file_size(dir, "seq-000001"), 10 * (long long)SMR_MIB);

	/* Small writes start nothing. */
	SMR_ASSERT_OK(smr_dev_write(dev, w, BS, 2 * zs));
	nanosleep(&(struct timespec){ 0, 200 * 1000 * 1000 }, NULL);
	CU_ASSERT(file_alloc(dir, "seq-000002") < none);

	/* Reset gives it all back, and it stays given back. */
	SMR_ASSERT_OK(smr_dev_zone_reset(dev, 1));
	CU_ASSERT_EQUAL(file_size(dir, "seq-000001"), 0);
	nanosleep(&(struct timespec){ 0, 200 * 1000 * 1000 }, NULL);
	CU_ASSERT(file_alloc(dir, "seq-000001") < none);

	/* A zone with pages past its write pointer reopens as it was
	 * written; finish makes it zone-size long. */
	SMR_ASSERT_OK(smr_dev_write(dev, w, big, 3 * zs));
	a = wait_alloc(dir, "seq-000003", (long long)(big + 8 * SMR_MIB));
	CU_ASSERT(a >= (long long)(big + 8 * SMR_MIB));
	SMR_ASSERT_OK(smr_dev_close(dev));
	dev = open_prealloc(dir, -1);
	CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, 3), SMR_ZONE_COND_CLOSED);
	CU_ASSERT_EQUAL(smr_dev_zone_wp(dev, 3), 3 * zs + big);
	SMR_ASSERT_OK(smr_dev_zone_finish(dev, 3));
	CU_ASSERT_EQUAL(file_size(dir, "seq-000003"), (long long)zs);

	/* Off: nothing past what is written. */
	SMR_ASSERT_OK(smr_dev_write(dev, w, big, zs));
	nanosleep(&(struct timespec){ 0, 200 * 1000 * 1000 }, NULL);
	CU_ASSERT(file_alloc(dir, "seq-000001") < (long long)big + none);
	SMR_ASSERT_OK(smr_dev_close(dev));

	/* The default: on where the directory is on tmpfs, else off. */
	dev = open_dev(dir);
	SMR_ASSERT_OK(smr_dev_write(dev, w, big, zs + big));
	SMR_ASSERT_OK(statfs(dir, &sfs));
	if (sfs.f_type == TMPFS_MAGIC) {
		a = wait_alloc(dir, "seq-000001",
			       (long long)(2 * big + 8 * SMR_MIB));
		CU_ASSERT(a >= (long long)(2 * big + 8 * SMR_MIB));
	} else {
		nanosleep(&(struct timespec){ 0, 200 * 1000 * 1000 }, NULL);
		CU_ASSERT(file_alloc(dir, "seq-000001") <
			  (long long)(2 * big) + none);
	}
	SMR_ASSERT_OK(smr_dev_close(dev));
out_free:
	smr_dev_buf_free(w);
	smr_dev_buf_free(r);
}

static const struct smr_test zloop_tests[] = {
	{ "layout_and_geometry", test_layout_and_geometry },
	{ "seq_write_read", test_seq_write_read },
	{ "discard", test_discard },
	{ "write_errors", test_write_errors },
	{ "zone_ops", test_zone_ops },
	{ "open_limit_lru", test_open_limit_lru },
	{ "active_limit", test_active_limit },
	{ "persistence", test_persistence },
	{ "params_checked", test_params_checked },
	{ "exclusive", test_exclusive },
	{ "submit_order", test_submit_sync_order },
	{ "unchecked", test_unchecked },
	{ "small_blocks", test_small_blocks },
	{ "fd_cache", test_fd_cache },
	{ "prealloc", test_prealloc },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	static const struct smr_suite suites[] = {
		{ "zloop", zloop_tests },
		{ NULL, NULL },
	};

	smr_log_set_level((enum smr_log_level)(SMR_LOG_ERR - 1));
	return smr_test_main(argc, argv, suites);
}
