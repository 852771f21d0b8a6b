/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_zbd.c - the zbd backend on a real kernel zoned block device.
 *
 * The device is named by $ZONED_DEV; without it the test is skipped (exit
 * 77), which is what `make check` does on machines without zoned support.
 * tests/zoned/run-zbd-tests.sh runs it in a VM on null_blk, NVMe ZNS and
 * SCSI ZBC devices. THE DEVICE IS OVERWRITTEN.
 *
 * Every check compares the handle's zone cache with the kernel's own zone
 * report, read here with the BLKREPORTZONE ioctl (not through libzbd, so
 * that the backend is checked against an independent reading).
 */
#include "testutil.h"

#include <fcntl.h>
#include <linux/blkzoned.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "dev/dev.h"
#include "dev/fault.h"

static const char *zdev;

/* ------------------------------------------------------------------------
 * The kernel's view
 * ------------------------------------------------------------------------ */

/* Read /sys/dev/block/MAJ:MIN/queue/@attr as a number; -1 if missing. */
static long long sysfs_num(const char *attr)
{
	char path[256];
	long long v = -1;
	struct stat st;
	FILE *f;

	if (stat(zdev, &st))
		return -1;
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/queue/%s",
		 major(st.st_rdev), minor(st.st_rdev), attr);
	f = fopen(path, "re");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* The kernel's report of zone @zno (zones of equal size but maybe the
 * last), in bytes. */
static struct smr_zone kzone(struct smr_dev *dev, uint32_t zno)
{
	struct {
		struct blk_zone_report rep;
		struct blk_zone z;
	} r;
	struct smr_zone z;
	int fd = open(zdev, O_RDONLY | O_CLOEXEC);

	memset(&r, 0, sizeof(r));
	memset(&z, 0xff, sizeof(z));
	CU_ASSERT_FATAL(fd >= 0);
	r.rep.sector = smr_dev_zone_start(dev, zno) >> 9;
	r.rep.nr_zones = 1;
	CU_ASSERT_FATAL(ioctl(fd, BLKREPORTZONE, &r) == 0);
	close(fd);
	CU_ASSERT_FATAL(r.rep.nr_zones == 1);
	z.start = r.z.start << 9;
	z.len = r.z.len << 9;
	z.cap = (r.rep.flags & BLK_ZONE_REP_CAPACITY) ? r.z.capacity << 9
						      : z.len;
	z.wp = r.z.wp << 9;
	z.type = r.z.type;
	z.cond = r.z.cond;
	z.no = zno;
	return z;
}

/* The cache of @dev agrees with the kernel on zone @zno. */
static bool zone_agrees(struct smr_dev *dev, uint32_t zno)
{
	struct smr_zone c, k;
	bool ok;

	/* Writes queued behind (write-behind) reach the kernel first. */
	smr_dev_flush(dev);
	k = kzone(dev, zno);
	if (smr_dev_zone(dev, zno, &c))
		return false;
	ok = c.start == k.start && c.len == k.len && c.cap == k.cap &&
	     c.type == k.type && c.cond == k.cond;
	/* The kernel's wp of a full or conventional zone means nothing. */
	if (k.type != BLK_ZONE_TYPE_CONVENTIONAL &&
	    k.cond != BLK_ZONE_COND_FULL)
		ok = ok && c.wp == k.wp;
	if (!ok)
		fprintf(stderr,
			"zone %u: cache start %llu len %llu cap %llu wp %llu "
			"type %u cond %u; kernel start %llu len %llu cap %llu "
			"wp %llu type %u cond %u\n", zno,
			(unsigned long long)c.start, (unsigned long long)c.len,
			(unsigned long long)c.cap, (unsigned long long)c.wp,
			c.type, c.cond, (unsigned long long)k.start,
			(unsigned long long)k.len, (unsigned long long)k.cap,
			(unsigned long long)k.wp, k.type, k.cond);
	return ok;
}

/* ------------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------------ */

static struct smr_dev *open_zdev(bool unchecked)
{
	struct smr_dev_opts o = { .unchecked = unchecked };
	struct smr_dev *dev = NULL;
	int rc = smr_dev_open(zdev, &o, &dev);

	if (rc)
		smr_test_report_rc("smr_dev_open", rc, __FILE__, __LINE__);
	CU_ASSERT_FATAL(rc == 0 && dev != NULL);
	return dev;
}

/* The first sequential zone at or after @from, or UINT32_MAX. */
static uint32_t seq_zone(struct smr_dev *dev, uint32_t from)
{
	for (uint32_t z = from; z < smr_dev_info(dev)->nr_zones; z++)
		if (smr_dev_zone_type(dev, z) != SMR_ZONE_TYPE_CNV)
			return z;
	return UINT32_MAX;
}

static void *pattern(size_t len, uint64_t seed)
{
	uint8_t *b = smr_dev_buf_alloc(len);
	uint64_t s = seed * 104729 + 3;

	CU_ASSERT_FATAL(b != NULL);
	for (size_t i = 0; i < len; i += 8) {
		uint64_t v = smr_test_rand(&s);

		memcpy(b + i, &v, SMR_MIN(8, len - i));
	}
	return b;
}

static bool holds(struct smr_dev *dev, uint64_t off, size_t len, uint64_t seed)
{
	void *want = pattern(len, seed);
	void *got = smr_dev_buf_alloc(len);
	bool ok;

	CU_ASSERT_FATAL(got != NULL);
	ok = smr_dev_read(dev, got, len, off) == 0 && !memcmp(want, got, len);
	smr_dev_buf_free(want);
	smr_dev_buf_free(got);
	return ok;
}

static int put(struct smr_dev *dev, uint64_t off, size_t len, uint64_t seed)
{
	void *b = pattern(len, seed);
	int rc = smr_dev_write(dev, b, len, off);

	smr_dev_buf_free(b);
	return rc;
}

/* A zoned device's refusal of a write: EIO (NVMe, null_blk) or EREMOTEIO
 * (SCSI ZBC); with $ZONED_DEV_TYPE set, exactly the one that device gives. */
static bool is_write_refusal(int rc)
{
	const char *type = getenv("ZONED_DEV_TYPE");

	if (type && !strcmp(type, "smr"))
		return rc == -EREMOTEIO;
	if (type && *type)
		return rc == -EIO;
	return rc == -EIO || rc == -EREMOTEIO;
}

/* ------------------------------------------------------------------------
 * Tests
 * ------------------------------------------------------------------------ */

static void test_info(void)
{
	struct smr_dev *dev = open_zdev(false);
	const struct smr_dev_info *info = smr_dev_info(dev);
	const char *env;
	uint64_t bytes = 0;
	int fd;

	printf("\n    %s: %u zones (%u conventional), block %u, capacity %llu, "
	       "max open %u, max active %u, %s%s\n", zdev, info->nr_zones,
	       info->nr_cnv_zones, info->block_size,
	       (unsigned long long)info->capacity, info->max_open,
	       info->max_active, info->host_aware ? "host-aware" :
	       "host-managed", info->rotational ? ", rotational" : "");
	CU_ASSERT_STRING_EQUAL(info->backend, "zbd");
	CU_ASSERT_EQUAL(info->kind, SMR_DEV_KIND_ZBD);
	CU_ASSERT_TRUE(info->zoned);
	CU_ASSERT_FALSE(info->read_only);
	CU_ASSERT_EQUAL(info->block_size, sysfs_num("logical_block_size"));
	CU_ASSERT_EQUAL(info->nr_zones, sysfs_num("nr_zones"));
	CU_ASSERT_EQUAL(info->max_open, sysfs_num("max_open_zones"));
	CU_ASSERT_EQUAL(info->max_active, sysfs_num("max_active_zones"));
	CU_ASSERT_EQUAL(info->rotational, sysfs_num("rotational") == 1);
	fd = open(zdev, O_RDONLY | O_CLOEXEC);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(ioctl(fd, BLKGETSIZE64, &bytes), 0);
	close(fd);
	CU_ASSERT_EQUAL(info->capacity, bytes);
	/* What the VM was asked for. */
	env = getenv("ZONED_NR_ZONES");
	if (env)
		CU_ASSERT_EQUAL(info->nr_zones, strtoul(env, NULL, 10));
	env = getenv("ZONED_NR_CONV");
	if (env)
		CU_ASSERT_EQUAL(info->nr_cnv_zones, strtoul(env, NULL, 10));
	env = getenv("ZONED_ZONE_SIZE_MB");
	if (env)
		CU_ASSERT_EQUAL(smr_dev_zone_len(dev, 0),
				strtoull(env, NULL, 10) * SMR_MIB);
	env = getenv("ZONED_ZONE_CAP_MB");
	if (env && seq_zone(dev, 0) != UINT32_MAX)
		CU_ASSERT_EQUAL(smr_dev_zone_cap(dev, seq_zone(dev, 0)),
				strtoull(env, NULL, 10) * SMR_MIB);

	/* A second exclusive opener is refused. */
	{
		struct smr_dev *d2 = NULL;

		SMR_ASSERT_RC(smr_dev_open(zdev, NULL, &d2), -EBUSY);
	}
	SMR_ASSERT_OK(smr_dev_close(dev));
}

static void test_report(void)
{
	struct smr_dev *dev = open_zdev(false);
	uint32_t nr = smr_dev_info(dev)->nr_zones, z;

	SMR_ASSERT_OK(smr_dev_reset_all(dev));
	/* Leave zones in different conditions, then reopen: the cache built
	 * at open must match the kernel zone by zone. */
	z = seq_zone(dev, 0);
	CU_ASSERT_FATAL(z != UINT32_MAX);
	SMR_ASSERT_OK(put(dev, smr_dev_zone_wp(dev, z), 8192, 1));
	SMR_ASSERT_OK(smr_dev_zone_finish(dev, seq_zone(dev, z + 1)));
	SMR_ASSERT_OK(smr_dev_zone_open(dev, seq_zone(dev, z + 2)));
	SMR_ASSERT_OK(smr_dev_close(dev));

	dev = open_zdev(false);
	for (uint32_t i = 0; i < nr; i++)
		CU_ASSERT_TRUE(zone_agrees(dev, i));
	CU_ASSERT_EQUAL(smr_dev_zone_wp(dev, z), smr_dev_zone_start(dev, z) +
						 8192);
	CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, seq_zone(dev, z + 1)),
			SMR_ZONE_COND_FULL);
	CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, seq_zone(dev, z + 2)),
			SMR_ZONE_COND_EXP_OPEN);
	CU_ASSERT_EQUAL(smr_dev_zone_no(dev, smr_dev_zone_start(dev, 3) + 1),
			3);
	SMR_ASSERT_OK(smr_dev_reset_all(dev));
	for (uint32_t i = 0; i < nr; i++)
		CU_ASSERT_TRUE(zone_agrees(dev, i));
	SMR_ASSERT_OK(smr_dev_close(dev));
}

static void test_write_at_wp(void)
{
	struct smr_dev *dev = open_zdev(false);
	uint32_t z = seq_zone(dev, 0);
	uint64_t start = smr_dev_zone_start(dev, z);
	/* Then up to 1 MiB in one write, within the zone capacity. */
	size_t big = SMR_MIN(SMR_MIB, smr_dev_zone_cap(dev, z) - 65536);

	SMR_ASSERT_OK(smr_dev_zone_reset(dev, z));
	SMR_ASSERT_OK(put(dev, start, 65536, 2));
	CU_ASSERT_EQUAL(smr_dev_zone_wp(dev, z), start + 65536);
	SMR_ASSERT_OK(smr_dev_flush(dev));
	CU_ASSERT_EQUAL(kzone(dev, z).wp, start + 65536);
	CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, z), SMR_ZONE_COND_IMP_OPEN);
	SMR_ASSERT_OK(put(dev, start + 65536, big, 3));
	CU_ASSERT_TRUE(zone_agrees(dev, z));
	CU_ASSERT_TRUE(holds(dev, start, 65536, 2));
	CU_ASSERT_TRUE(holds(dev, start + 65536, big, 3));
	SMR_ASSERT_OK(smr_dev_flush(dev));
	SMR_ASSERT_OK(smr_dev_close(dev));

	/* Durable across handles. */
	dev = open_zdev(false);
	CU_ASSERT_EQUAL(smr_dev_zone_wp(dev, z), start + 65536 + big);
	CU_ASSERT_TRUE(holds(dev, start + 65536, big, 3));
	SMR_ASSERT_OK(smr_dev_zone_reset(dev, z));
	SMR_ASSERT_OK(smr_dev_close(dev));
}

static void test_out_of_order(void)
{
	struct smr_dev *dev = open_zdev(false);
	uint32_t z = seq_zone(dev, 0);
	uint64_t start = smr_dev_zone_start(dev, z);
	uint32_t bs = smr_dev_info(dev)->block_size;
	int rc;

	SMR_ASSERT_OK(smr_dev_zone_reset(dev, z));
	SMR_ASSERT_OK(put(dev, start, 4 * bs, 4));
	/* Refused by the layer before the kernel sees it. */
	SMR_ASSERT_RC(put(dev, start + 5 * bs, bs, 5), -EIO);
	SMR_ASSERT_RC(put(dev, start, bs, 5), -EIO);
	SMR_ASSERT_OK(smr_dev_close(dev));

	/* Unchecked: the kernel refuses, with its own errno. */
	dev = open_zdev(true);
	rc = put(dev, start + 5 * bs, bs, 5);
	printf("\n    write past the wp: %d (%s)", rc, strerror(-rc));
	CU_ASSERT_TRUE(is_write_refusal(rc));
	rc = put(dev, start + bs, bs, 5);
	printf(", behind the wp: %d (%s)\n    ", rc, strerror(-rc));
	CU_ASSERT_TRUE(is_write_refusal(rc));
	/* Nothing moved, and the cache still agrees with the kernel. */
	CU_ASSERT_EQUAL(smr_dev_zone_wp(dev, z), start + 4 * bs);
	CU_ASSERT_TRUE(zone_agrees(dev, z));
	CU_ASSERT_TRUE(holds(dev, start, 4 * bs, 4));
	/* The next write at the write pointer works. */
	SMR_ASSERT_OK(put(dev, start + 4 * bs, bs, 6));
	CU_ASSERT_TRUE(zone_agrees(dev, z));
	SMR_ASSERT_OK(smr_dev_zone_reset(dev, z));
	SMR_ASSERT_OK(smr_dev_close(dev));
}

static void test_reset_finish(void)
{
	struct smr_dev *dev = open_zdev(false);
	uint32_t z = seq_zone(dev, 0);
	uint64_t start = smr_dev_zone_start(dev, z);
	uint32_t bs = smr_dev_info(dev)->block_size;
	struct smr_dev *raw;
	int rc;

	SMR_ASSERT_OK(put(dev, smr_dev_zone_wp(dev, z), bs, 7));
	SMR_ASSERT_OK(smr_dev_zone_finish(dev, z));
	CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, z), SMR_ZONE_COND_FULL);
	CU_ASSERT_EQUAL(smr_dev_zone_wp(dev, z),
			start + smr_dev_zone_cap(dev, z));
	CU_ASSERT_TRUE(zone_agrees(dev, z));
	SMR_ASSERT_RC(put(dev, start + bs, bs, 8), -EIO);
	SMR_ASSERT_OK(smr_dev_close(dev));

	raw = open_zdev(true);
	rc = put(raw, start + smr_dev_zone_cap(raw, z) - bs, bs, 8);
	CU_ASSERT_TRUE(is_write_refusal(rc));
	CU_ASSERT_TRUE(zone_agrees(raw, z));

	SMR_ASSERT_OK(smr_dev_zone_reset(raw, z));
	CU_ASSERT_EQUAL(smr_dev_zone_cond(raw, z), SMR_ZONE_COND_EMPTY);
	CU_ASSERT_EQUAL(smr_dev_zone_wp(raw, z), start);
	CU_ASSERT_TRUE(zone_agrees(raw, z));
	/* Reads of an empty zone return zeros (the layer zero-fills). */
	{
		uint8_t *b = smr_dev_buf_alloc(bs);
		bool zero = true;

		SMR_ASSERT_OK(smr_dev_read(raw, b, bs, start));
		for (uint32_t i = 0; i < bs; i++)
			zero = zero && b[i] == 0;
		CU_ASSERT_TRUE(zero);
		smr_dev_buf_free(b);
	}
	/* Finishing an empty zone, then resetting the whole device. */
	SMR_ASSERT_OK(smr_dev_zone_finish(raw, z));
	CU_ASSERT_TRUE(zone_agrees(raw, z));
	SMR_ASSERT_OK(smr_dev_reset_all(raw));
	CU_ASSERT_TRUE(zone_agrees(raw, z));
	CU_ASSERT_EQUAL(smr_dev_nr_active(raw), 0);
	SMR_ASSERT_OK(smr_dev_close(raw));
}

static void test_open_close(void)
{
	struct smr_dev *dev = open_zdev(false);
	uint32_t z = seq_zone(dev, 0), z2 = seq_zone(dev, z + 1);
	uint32_t bs = smr_dev_info(dev)->block_size;

	SMR_ASSERT_OK(smr_dev_reset_all(dev));
	SMR_ASSERT_OK(smr_dev_zone_open(dev, z));
	CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, z), SMR_ZONE_COND_EXP_OPEN);
	CU_ASSERT_TRUE(zone_agrees(dev, z));
	SMR_ASSERT_OK(put(dev, smr_dev_zone_start(dev, z), bs, 9));
	CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, z), SMR_ZONE_COND_EXP_OPEN);
	SMR_ASSERT_OK(smr_dev_zone_close(dev, z));
	CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, z), SMR_ZONE_COND_CLOSED);
	CU_ASSERT_TRUE(zone_agrees(dev, z));
	CU_ASSERT_EQUAL(smr_dev_nr_open(dev), 0);
	CU_ASSERT_EQUAL(smr_dev_nr_active(dev), 1);
	/* Writing a closed zone opens it again, implicitly. */
	SMR_ASSERT_OK(put(dev, smr_dev_zone_wp(dev, z), bs, 10));
	CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, z), SMR_ZONE_COND_IMP_OPEN);
	CU_ASSERT_TRUE(zone_agrees(dev, z));
	CU_ASSERT_TRUE(holds(dev, smr_dev_zone_start(dev, z) + bs, bs, 10));
	/* Opening then closing an empty zone leaves it empty (NVMe would
	 * leave it closed: the backend resets it). */
	SMR_ASSERT_OK(smr_dev_zone_open(dev, z2));
	SMR_ASSERT_OK(smr_dev_zone_close(dev, z2));
	CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, z2), SMR_ZONE_COND_EMPTY);
	CU_ASSERT_TRUE(zone_agrees(dev, z2));
	/* A full zone cannot be opened. */
	SMR_ASSERT_OK(smr_dev_zone_finish(dev, z2));
	SMR_ASSERT_RC(smr_dev_zone_open(dev, z2), -EIO);
	CU_ASSERT_TRUE(zone_agrees(dev, z2));
	SMR_ASSERT_OK(smr_dev_reset_all(dev));
	SMR_ASSERT_OK(smr_dev_close(dev));
}

/* Open and active limits, as the device reports them. */
static void test_limits(void)
{
	struct smr_dev *dev = open_zdev(false);
	const struct smr_dev_info *info = smr_dev_info(dev);
	uint32_t bs = info->block_size, z, n;

	SMR_ASSERT_OK(smr_dev_reset_all(dev));
	if (!info->max_open && !info->max_active) {
		printf("\n    no open/active limits reported: nothing to check ");
		SMR_ASSERT_OK(smr_dev_close(dev));
		return;
	}
	if (info->max_open) {
		/* Explicitly open max_open zones; one more is refused. */
		for (n = 0, z = seq_zone(dev, 0); n < info->max_open;
		     n++, z = seq_zone(dev, z + 1)) {
			CU_ASSERT_FATAL(z != UINT32_MAX);
			SMR_ASSERT_OK(smr_dev_zone_open(dev, z));
		}
		CU_ASSERT_EQUAL(smr_dev_nr_open(dev), info->max_open);
		CU_ASSERT_FATAL(z != UINT32_MAX);
		SMR_ASSERT_RC(smr_dev_zone_open(dev, z), -EIO);
		CU_ASSERT_TRUE(zone_agrees(dev, z));
		SMR_ASSERT_OK(smr_dev_reset_all(dev));

		/* Implicit opens beyond max_open close the least recently
		 * used zone; cache and kernel agree on every zone. */
		for (n = 0, z = seq_zone(dev, 0);
		     n <= info->max_open && z != UINT32_MAX &&
		     (!info->max_active || n < info->max_active);
		     n++, z = seq_zone(dev, z + 1))
			SMR_ASSERT_OK(put(dev, smr_dev_zone_wp(dev, z), bs,
					  20 + n));
		CU_ASSERT(smr_dev_nr_open(dev) <= info->max_open);
		for (uint32_t i = 0; i < info->nr_zones; i++)
			CU_ASSERT_TRUE(zone_agrees(dev, i));
		SMR_ASSERT_OK(smr_dev_reset_all(dev));
	}
	if (info->max_active) {
		/* Make max_active zones active (written, then closed so that
		 * the open limit does not interfere); the next write into an
		 * empty zone is refused, by the layer and by the kernel. */
		struct smr_dev *raw;
		int rc;

		for (n = 0, z = seq_zone(dev, 0); n < info->max_active;
		     n++, z = seq_zone(dev, z + 1)) {
			CU_ASSERT_FATAL(z != UINT32_MAX);
			SMR_ASSERT_OK(put(dev, smr_dev_zone_wp(dev, z), bs,
					  40 + n));
			SMR_ASSERT_OK(smr_dev_zone_close(dev, z));
		}
		CU_ASSERT_EQUAL(smr_dev_nr_active(dev), info->max_active);
		CU_ASSERT_FATAL(z != UINT32_MAX);
		SMR_ASSERT_RC(put(dev, smr_dev_zone_start(dev, z), bs, 60),
			      -EIO);
		SMR_ASSERT_RC(smr_dev_zone_open(dev, z), -EIO);
		SMR_ASSERT_OK(smr_dev_close(dev));

		raw = open_zdev(true);
		rc = put(raw, smr_dev_zone_start(raw, z), bs, 60);
		/* The kernel's EOVERFLOW is reported as EIO, as dev.h says. */
		SMR_ASSERT_RC(rc, -EIO);
		for (uint32_t i = 0; i < smr_dev_info(raw)->nr_zones; i++)
			CU_ASSERT_TRUE(zone_agrees(raw, i));
		/* Finishing one frees a slot. */
		SMR_ASSERT_OK(smr_dev_zone_finish(raw, seq_zone(raw, 0)));
		SMR_ASSERT_OK(put(raw, smr_dev_zone_start(raw, z), bs, 60));
		CU_ASSERT_TRUE(zone_agrees(raw, z));
		SMR_ASSERT_OK(smr_dev_reset_all(raw));
		SMR_ASSERT_OK(smr_dev_close(raw));
		return;
	}
	SMR_ASSERT_OK(smr_dev_close(dev));
}

/* Data written through every path reads back, across handles. */
static void test_data(void)
{
	struct smr_dev *dev = open_zdev(false);
	/* A copy: the test reopens the device. */
	const struct smr_dev_info info_copy = *smr_dev_info(dev);
	const struct smr_dev_info *info = &info_copy;
	uint32_t bs = info->block_size;
	uint32_t z1 = seq_zone(dev, 0), z2 = seq_zone(dev, z1 + 1);
	uint64_t s1 = smr_dev_zone_start(dev, z1);
	uint64_t s2 = smr_dev_zone_start(dev, z2);
	struct smr_io ios[6];
	void *bufs[6];

	SMR_ASSERT_OK(smr_dev_reset_all(dev));
	/* Random writes into a conventional zone. */
	if (info->nr_cnv_zones) {
		SMR_ASSERT_OK(put(dev, 7 * 4096, 4096, 70));
		SMR_ASSERT_OK(put(dev, 3 * 4096, 8192, 71));
		SMR_ASSERT_OK(put(dev, 7 * 4096, 4096, 72));
	}
	/* A batch: three writes to each of two zones, in array order. */
	for (unsigned int i = 0; i < 6; i++) {
		bufs[i] = pattern(2 * bs, 80 + i);
		ios[i] = (struct smr_io){
			.op = SMR_IO_WRITE, .buf = bufs[i], .len = 2 * bs,
			.off = (i % 2 ? s2 : s1) + (i / 2) * 2 * bs,
		};
	}
	SMR_ASSERT_OK(smr_dev_submit(dev, ios, 6));
	for (unsigned int i = 0; i < 6; i++) {
		CU_ASSERT_EQUAL(ios[i].result, 0);
		smr_dev_buf_free(bufs[i]);
	}
	CU_ASSERT_EQUAL(smr_dev_zone_wp(dev, z1), s1 + 6 * bs);
	CU_ASSERT_TRUE(zone_agrees(dev, z1));
	CU_ASSERT_TRUE(zone_agrees(dev, z2));
	/* A write that fills the zone to its capacity. */
	SMR_ASSERT_OK(put(dev, s1 + 6 * bs, smr_dev_zone_cap(dev, z1) - 6 * bs,
			  90));
	CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, z1), SMR_ZONE_COND_FULL);
	CU_ASSERT_TRUE(zone_agrees(dev, z1));
	SMR_ASSERT_OK(smr_dev_close(dev));

	dev = open_zdev(false);
	if (info->nr_cnv_zones) {
		CU_ASSERT_TRUE(holds(dev, 3 * 4096, 8192, 71));
		CU_ASSERT_TRUE(holds(dev, 7 * 4096, 4096, 72));
	}
	for (unsigned int i = 0; i < 6; i++)
		CU_ASSERT_TRUE(holds(dev, (i % 2 ? s2 : s1) + (i / 2) * 2 * bs,
				     2 * bs, 80 + i));
	CU_ASSERT_TRUE(holds(dev, s1 + 6 * bs,
			     smr_dev_zone_cap(dev, z1) - 6 * bs, 90));
	SMR_ASSERT_OK(smr_dev_reset_all(dev));
	SMR_ASSERT_OK(smr_dev_close(dev));
}

/* Write-behind is on by default on a zoned block device: writes of two
 * zones in turn are queued, read back at once, and are where the kernel
 * says once flushed. */
static void test_write_behind(void)
{
	struct smr_dev *dev = open_zdev(false);
	uint32_t bs = smr_dev_info(dev)->block_size;
	uint32_t z1 = seq_zone(dev, 0), z2 = seq_zone(dev, z1 + 1);
	uint64_t s[2] = { smr_dev_zone_start(dev, z1),
			  smr_dev_zone_start(dev, z2) };
	struct smr_dev_wb_stats st;

	SMR_ASSERT_OK(smr_dev_reset_all(dev));
	for (unsigned int i = 0; i < 32; i++) {
		uint64_t off = s[i % 2] + (i / 2) * 16 * bs;

		SMR_ASSERT_OK(put(dev, off, 16 * bs, 100 + i));
		CU_ASSERT_EQUAL(smr_dev_zone_wp(dev, i % 2 ? z2 : z1),
				off + 16 * bs);
		CU_ASSERT_TRUE(holds(dev, off, 16 * bs, 100 + i));
	}
	smr_dev_wb_stats(dev, &st);
	CU_ASSERT_EQUAL(st.queued, 32);
	CU_ASSERT_TRUE(zone_agrees(dev, z1));
	CU_ASSERT_TRUE(zone_agrees(dev, z2));
	smr_dev_wb_stats(dev, &st);
	CU_ASSERT_EQUAL(st.bytes, 32 * 16 * (uint64_t)bs);
	CU_ASSERT_EQUAL(st.failed, 0);
	SMR_ASSERT_OK(smr_dev_reset_all(dev));
	SMR_ASSERT_OK(smr_dev_close(dev));
}

/* Buffers of any alignment: direct I/O takes them through an aligned copy,
 * one at a time and in a batch. */
static void test_misaligned(void)
{
	struct smr_dev *dev = open_zdev(false);
	uint32_t bs = smr_dev_info(dev)->block_size;
	uint32_t z = seq_zone(dev, 0);
	uint64_t s = smr_dev_zone_start(dev, z);
	uint8_t *want = pattern(4 * bs, 95);
	uint8_t *b = smr_dev_buf_alloc(8 * bs + 64);
	struct smr_io ios[2];

	CU_ASSERT_FATAL(b != NULL);
	CU_ASSERT_TRUE(smr_dev_info(dev)->direct_io);
	SMR_ASSERT_OK(smr_dev_zone_reset(dev, z));
	memcpy(b + 8, want, 2 * bs);
	SMR_ASSERT_OK(smr_dev_write(dev, b + 8, 2 * bs, s));
	memcpy(b + 4 * bs + 24, want + 2 * bs, 2 * bs);
	for (unsigned int i = 0; i < 2; i++)
		ios[i] = (struct smr_io){
			.op = SMR_IO_WRITE, .buf = b + (4 + i) * bs + 24,
			.len = bs, .off = s + (2 + i) * bs,
		};
	SMR_ASSERT_OK(smr_dev_submit(dev, ios, 2));
	CU_ASSERT_EQUAL(smr_dev_zone_wp(dev, z), s + 4 * bs);
	CU_ASSERT_TRUE(zone_agrees(dev, z));
	memset(b, 0, 8 * bs + 64);
	SMR_ASSERT_OK(smr_dev_read(dev, b + 3, 4 * bs, s));
	CU_ASSERT_EQUAL(memcmp(b + 3, want, 4 * bs), 0);
	SMR_ASSERT_OK(smr_dev_zone_reset(dev, z));
	smr_dev_buf_free(b);
	smr_dev_buf_free(want);
	SMR_ASSERT_OK(smr_dev_close(dev));
}

/* The first @n bytes of each of zones [z, z + 3), read through @dev. */
static uint8_t *zones_image(struct smr_dev *dev, uint32_t z, size_t n)
{
	uint8_t *img = smr_dev_buf_alloc(3 * n);

	CU_ASSERT_FATAL(img != NULL);
	for (uint32_t i = 0; i < 3; i++)
		SMR_ASSERT_OK(smr_dev_read(dev, img + i * n, n,
					   smr_dev_zone_start(dev, z + i)));
	return img;
}

/*
 * The fault device over a real zoned device: record a workload on three
 * sequential zones, then replay the log, whole and with random drops of the
 * unflushed writes, onto the same device reset to the starting state and
 * opened unchecked, so that the kernel alone judges the write order.
 */
static void test_fault_replay(void)
{
	struct smr_dev *dev = open_zdev(false), *fdev;
	uint32_t bs = smr_dev_info(dev)->block_size;
	uint32_t z = seq_zone(dev, 0);
	size_t n = 64 * bs;
	struct smr_fault *f;
	uint8_t *want, *got;
	uint64_t nr;

	CU_ASSERT_FATAL(z + 3 <= smr_dev_info(dev)->nr_zones &&
			seq_zone(dev, z + 2) == z + 2);
	SMR_ASSERT_OK(smr_dev_reset_all(dev));
	SMR_ASSERT_OK(smr_fault_open(dev, &f, &fdev));
	for (unsigned int i = 0; i < 24; i++) {
		uint32_t zi = z + i % 3;

		SMR_ASSERT_OK(put(fdev, smr_dev_zone_wp(fdev, zi),
				  (1 + i % 2) * bs, 200 + i));
		if (i % 7 == 6)
			SMR_ASSERT_OK(smr_dev_flush(fdev));
		if (i == 10)
			SMR_ASSERT_OK(smr_dev_zone_reset(fdev, z + 1));
	}
	nr = smr_fault_nr_records(f);
	want = zones_image(fdev, z, n);
	SMR_ASSERT_OK(smr_dev_close(fdev));
	SMR_ASSERT_OK(smr_dev_close(dev));

	for (uint64_t seed = 0; seed < 4; seed++) {
		struct smr_replay_opts o = {
			.flags = seed ? SMR_REPLAY_DROP_RANDOM : 0,
			.seed = seed,
		};

		dev = open_zdev(true);
		SMR_ASSERT_OK(smr_dev_reset_all(dev));
		SMR_ASSERT_OK(smr_fault_replay(f, nr, &o, dev));
		got = zones_image(dev, z, n);
		for (uint32_t i = 0; i < 3; i++) {
			uint64_t used = smr_dev_zone_wp(dev, z + i) -
					smr_dev_zone_start(dev, z + i);

			CU_ASSERT_TRUE(zone_agrees(dev, z + i));
			/* Whole: the same; with drops: a prefix of it. */
			CU_ASSERT_EQUAL(memcmp(got + i * n, want + i * n,
					       seed ? used : n), 0);
		}
		smr_dev_buf_free(got);
		SMR_ASSERT_OK(smr_dev_reset_all(dev));
		SMR_ASSERT_OK(smr_dev_close(dev));
	}
	smr_dev_buf_free(want);
	smr_fault_free(f);
}

/* Built without libzbd: a zoned block device is refused clearly. */
static void test_unsupported(void)
{
	struct smr_dev *dev = NULL;

	SMR_ASSERT_RC(smr_dev_open(zdev, NULL, &dev), -EOPNOTSUPP);
	CU_ASSERT_PTR_NULL(dev);
}

static const struct smr_test zbd_tests[] = {
	{ "info", test_info },
	{ "report", test_report },
	{ "write_at_wp", test_write_at_wp },
	{ "out_of_order", test_out_of_order },
	{ "reset_finish", test_reset_finish },
	{ "open_close", test_open_close },
	{ "limits", test_limits },
	{ "data", test_data },
	{ "write_behind", test_write_behind },
	{ "misaligned", test_misaligned },
	{ "fault_replay", test_fault_replay },
	{ NULL, NULL },
};
static const struct smr_test nozbd_tests[] = {
	{ "unsupported", test_unsupported },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	/* Each build runs its suite; the other one sits past the end marker,
	 * only so that both builds compile it. */
#ifdef HAVE_LIBZBD
	static const struct smr_suite suites[] = {
		{ "zbd", zbd_tests },
		{ NULL, NULL },
		{ "without libzbd", nozbd_tests },
	};
#else
	static const struct smr_suite suites[] = {
		{ "without libzbd", nozbd_tests },
		{ NULL, NULL },
		{ "zbd", zbd_tests },
	};
#endif

	zdev = getenv("ZONED_DEV");
	if (!zdev || !*zdev) {
		printf("test_zbd: skipped: ZONED_DEV does not name a zoned "
		       "block device (tests/zoned/run-zbd-tests.sh runs this "
		       "test in a VM)\n");
		return 77;
	}
	smr_log_set_level(SMR_LOG_ERR);
	return smr_test_main(argc, argv, suites);
}
