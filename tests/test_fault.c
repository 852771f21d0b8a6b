/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_fault.c - the fault device over zoned loop directories and a regular
 * file: recording, failed, dropped and torn writes, failed reads and resets,
 * and replay of log prefixes (exact, with unflushed writes dropped, at random,
 * torn), checked against snapshots of the device taken while recording.
 */
#include "testutil.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dev/dev.h"
#include "dev/fault.h"

#define BS 4096ULL
#define ZONE (64 * 1024ULL) /* 16 blocks */
#define NR_ZONES 8
#define NR_CNV 2
#define CAP ((uint64_t)NR_ZONES * ZONE)

/* ------------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------------ */

/* A new path in the program's scratch directory (the tests create many
 * devices, more than smr_test_tmpdir() keeps track of). */
static char *new_path(const char *what)
{
	static const char *base;
	static unsigned int n;
	char *path;

	if (!base)
		base = smr_test_tmpdir("fault");
	CU_ASSERT_FATAL(asprintf(&path, "%s/%s-%u", base, what, n++) > 0);
	return path;
}

/* Remove a device made by new_zloop() or new_file() and free its path. */
static void drop_path(char *path)
{
	SMR_ASSERT_OK(smr_test_rmtree(path));
	free(path);
}

static char *new_zloop(void)
{
	struct smr_zloop_params p = {
		.capacity = CAP,
		.zone_size = ZONE,
		.nr_cnv = NR_CNV,
		.block_size = BS,
	};
	char *dir = new_path("zloop");
	int rc = smr_zloop_create(dir, &p);

	if (rc)
		smr_test_report_rc("smr_zloop_create", rc, __FILE__, __LINE__);
	CU_ASSERT_FATAL(rc == 0);
	return dir;
}

static char *new_file(void)
{
	char *path = new_path("file");
	int fd;

	fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0644);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_FATAL(ftruncate(fd, CAP) == 0);
	close(fd);
	return path;
}

static struct smr_dev *open_dev(const char *path)
{
	struct smr_dev *dev = NULL;
	int rc = smr_dev_open(path, NULL, &dev);

	if (rc)
		smr_test_report_rc("smr_dev_open", rc, __FILE__, __LINE__);
	CU_ASSERT_FATAL(rc == 0 && dev != NULL);
	return dev;
}

/* A buffer of @len bytes filled from @seed (never all zeros). */
static void *pattern(size_t len, uint64_t seed)
{
	uint8_t *b = smr_dev_buf_alloc(len);
	uint64_t s = seed * 7919 + 1;

	CU_ASSERT_FATAL(b != NULL);
	for (size_t i = 0; i < len; i += 8) {
		uint64_t v = smr_test_rand(&s) | 1;

		memcpy(b + i, &v, SMR_MIN(8, len - i));
	}
	return b;
}

/* The whole device content (read zone by zone), as the layers above see
 * it. */
static uint8_t *snapshot(struct smr_dev *dev)
{
	uint8_t *img = smr_dev_buf_alloc(CAP);

	CU_ASSERT_FATAL(img != NULL);
	for (uint64_t off = 0; off < CAP; off += ZONE)
		SMR_ASSERT_OK(smr_dev_read(dev, img + off, ZONE, off));
	return img;
}

static bool same_image(struct smr_dev *dev, const uint8_t *img)
{
	uint8_t *now = snapshot(dev);
	bool same = memcmp(now, img, CAP) == 0;

	if (!same) {
		for (uint64_t i = 0; i < CAP; i++)
			if (now[i] != img[i]) {
				fprintf(stderr, "first difference at %llu\n",
					(unsigned long long)i);
				break;
			}
	}
	smr_dev_buf_free(now);
	return same;
}

static uint64_t zstart(uint32_t zno)
{
	return (uint64_t)zno * ZONE;
}

/* Write @len bytes from @seed at the write pointer of sequential zone @zno
 * (or at @off in a conventional zone / unzoned device). */
static int put(struct smr_dev *dev, uint64_t off, size_t len, uint64_t seed)
{
	void *b = pattern(len, seed);
	int rc = smr_dev_write(dev, b, len, off);

	smr_dev_buf_free(b);
	return rc;
}

static int append(struct smr_dev *dev, uint32_t zno, size_t len, uint64_t seed)
{
	return put(dev, smr_dev_zone_wp(dev, zno), len, seed);
}

/* Does [off, off + len) of @dev hold the pattern of @seed? */
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

static bool zeros(struct smr_dev *dev, uint64_t off, size_t len)
{
	uint8_t *got = smr_dev_buf_alloc(len);
	bool ok = smr_dev_read(dev, got, len, off) == 0;

	for (size_t i = 0; ok && i < len; i++)
		ok = got[i] == 0;
	smr_dev_buf_free(got);
	return ok;
}

/* ------------------------------------------------------------------------
 * Recording
 * ------------------------------------------------------------------------ */

static void test_record(void)
{
	char *path = new_zloop();
	struct smr_dev *lower = open_dev(path);
	struct smr_fault *f;
	struct smr_dev *dev;
	struct smr_fault_rec r;
	void *b = pattern(2 * BS, 1);

	SMR_ASSERT_OK(smr_fault_open(lower, &f, &dev));
	CU_ASSERT_STRING_EQUAL(smr_dev_info(dev)->backend, "fault");
	CU_ASSERT_EQUAL(smr_dev_info(dev)->capacity, CAP);
	CU_ASSERT_EQUAL(smr_dev_info(dev)->nr_zones, NR_ZONES);
	CU_ASSERT_EQUAL(smr_dev_info(dev)->nr_cnv_zones, NR_CNV);

	SMR_ASSERT_OK(smr_dev_write(dev, b, BS, 3 * BS));       /* cnv 0 */
	SMR_ASSERT_OK(smr_dev_write(dev, b, 2 * BS, zstart(3))); /* seq 3 */
	SMR_ASSERT_OK(smr_dev_flush(dev));
	SMR_ASSERT_OK(smr_dev_write(dev, b, BS, zstart(3) + 2 * BS));
	SMR_ASSERT_OK(smr_dev_zone_finish(dev, 4));
	SMR_ASSERT_OK(smr_dev_zone_reset(dev, 3));
	SMR_ASSERT_OK(smr_dev_zone_open(dev, 5));
	SMR_ASSERT_OK(smr_dev_zone_close(dev, 5));
	CU_ASSERT_EQUAL(smr_fault_nr_records(f), 8);

	SMR_ASSERT_OK(smr_fault_record(f, 0, &r));
	CU_ASSERT_EQUAL(r.op, SMR_FOP_WRITE);
	CU_ASSERT_EQUAL(r.off, 3 * BS);
	CU_ASSERT_EQUAL(r.len, BS);
	CU_ASSERT_EQUAL(r.zno, 0);
	CU_ASSERT_FALSE(r.seq);
	CU_ASSERT_TRUE(r.flushed);
	CU_ASSERT_FALSE(r.torn);
	CU_ASSERT_FATAL(r.data != NULL);
	CU_ASSERT_EQUAL(memcmp(r.data, b, BS), 0);

	SMR_ASSERT_OK(smr_fault_record(f, 1, &r));
	CU_ASSERT_EQUAL(r.op, SMR_FOP_WRITE);
	CU_ASSERT_EQUAL(r.off, zstart(3));
	CU_ASSERT_EQUAL(r.len, 2 * BS);
	CU_ASSERT_EQUAL(r.zno, 3);
	CU_ASSERT_TRUE(r.seq);
	CU_ASSERT_TRUE(r.flushed);
	CU_ASSERT_EQUAL(memcmp(r.data, b, 2 * BS), 0);

	SMR_ASSERT_OK(smr_fault_record(f, 2, &r));
	CU_ASSERT_EQUAL(r.op, SMR_FOP_FLUSH);
	CU_ASSERT_PTR_NULL(r.data);

	SMR_ASSERT_OK(smr_fault_record(f, 3, &r));
	CU_ASSERT_EQUAL(r.op, SMR_FOP_WRITE);
	CU_ASSERT_EQUAL(r.off, zstart(3) + 2 * BS);
	CU_ASSERT_FALSE(r.flushed);

	SMR_ASSERT_OK(smr_fault_record(f, 4, &r));
	CU_ASSERT_EQUAL(r.op, SMR_FOP_ZONE_FINISH);
	CU_ASSERT_EQUAL(r.zno, 4);
	CU_ASSERT_EQUAL(r.off, zstart(4));
	SMR_ASSERT_OK(smr_fault_record(f, 5, &r));
	CU_ASSERT_EQUAL(r.op, SMR_FOP_ZONE_RESET);
	CU_ASSERT_EQUAL(r.zno, 3);
	SMR_ASSERT_OK(smr_fault_record(f, 6, &r));
	CU_ASSERT_EQUAL(r.op, SMR_FOP_ZONE_OPEN);
	CU_ASSERT_EQUAL(r.zno, 5);
	SMR_ASSERT_OK(smr_fault_record(f, 7, &r));
	CU_ASSERT_EQUAL(r.op, SMR_FOP_ZONE_CLOSE);
	SMR_ASSERT_RC(smr_fault_record(f, 8, &r), -ERANGE);
	CU_ASSERT_STRING_EQUAL(smr_fault_op_str(SMR_FOP_ZONE_RESET), "reset");

	/* The operations reached the lower device. */
	CU_ASSERT_EQUAL(smr_dev_zone_cond(lower, 4), SMR_ZONE_COND_FULL);
	CU_ASSERT_EQUAL(smr_dev_zone_cond(lower, 3), SMR_ZONE_COND_EMPTY);
	CU_ASSERT_EQUAL(smr_dev_zone_wp(lower, 3), zstart(3));

	/* Paused, nothing is recorded; reset empties the log. */
	smr_fault_set_recording(f, false);
	SMR_ASSERT_OK(smr_dev_write(dev, b, BS, 0));
	CU_ASSERT_EQUAL(smr_fault_nr_records(f), 8);
	CU_ASSERT(smr_fault_log_bytes(f) >= 4 * BS);
	smr_fault_set_recording(f, true);
	smr_fault_log_reset(f);
	CU_ASSERT_EQUAL(smr_fault_nr_records(f), 0);
	CU_ASSERT_EQUAL(smr_fault_log_bytes(f), 0);
	SMR_ASSERT_OK(smr_dev_write(dev, b, BS, 0));
	CU_ASSERT_EQUAL(smr_fault_nr_records(f), 1);
	CU_ASSERT_TRUE(holds(dev, 0, BS, 1));

	/* The log outlives the device; lower stays open. */
	SMR_ASSERT_OK(smr_dev_close(dev));
	CU_ASSERT_EQUAL(smr_fault_nr_records(f), 2); /* + the close's flush */
	CU_ASSERT_TRUE(holds(lower, 0, BS, 1));
	smr_fault_free(f);
	smr_dev_buf_free(b);
	SMR_ASSERT_OK(smr_dev_close(lower));
	free(path);
}

/* ------------------------------------------------------------------------
 * Faults
 * ------------------------------------------------------------------------ */

static void test_fail_writes(void)
{
	char *path = new_zloop();
	struct smr_dev *lower = open_dev(path);
	struct smr_fault_rule rule = { .what = SMR_FAULT_FAIL_WRITES,
				       .after = 2 };
	struct smr_fault_stats st;
	struct smr_fault *f;
	struct smr_dev *dev;

	SMR_ASSERT_OK(smr_fault_open(lower, &f, &dev));
	SMR_ASSERT_OK(append(dev, 3, BS, 1));
	SMR_ASSERT_OK(smr_fault_arm(f, &rule));
	SMR_ASSERT_OK(append(dev, 3, BS, 2));
	SMR_ASSERT_OK(put(dev, 0, BS, 3));
	SMR_ASSERT_RC(append(dev, 3, BS, 4), -EIO);
	SMR_ASSERT_RC(put(dev, BS, BS, 5), -EIO);
	/* Nothing of the failed writes moved a write pointer or landed. */
	CU_ASSERT_EQUAL(smr_dev_zone_wp(dev, 3), zstart(3) + 2 * BS);
	CU_ASSERT_EQUAL(smr_dev_zone_wp(lower, 3), zstart(3) + 2 * BS);
	CU_ASSERT_TRUE(zeros(lower, BS, BS));
	CU_ASSERT_EQUAL(smr_fault_nr_records(f), 3);
	/* Flushes and zone operations still work. */
	SMR_ASSERT_OK(smr_dev_flush(dev));
	SMR_ASSERT_OK(smr_dev_zone_finish(dev, 4));

	/* Another error, and re-arming restarts the count. */
	rule.error = -ENOSPC;
	rule.after = 0;
	SMR_ASSERT_OK(smr_fault_arm(f, &rule));
	SMR_ASSERT_RC(append(dev, 3, BS, 4), -ENOSPC);
	rule.error = 5;
	SMR_ASSERT_RC(smr_fault_arm(f, &rule), -EINVAL);
	rule.what = SMR_FAULT_NONE;
	SMR_ASSERT_RC(smr_fault_arm(f, &rule), -EINVAL);

	smr_fault_disarm(f);
	SMR_ASSERT_OK(append(dev, 3, BS, 4));
	CU_ASSERT_TRUE(holds(lower, zstart(3) + 2 * BS, BS, 4));
	smr_fault_stats(f, &st);
	CU_ASSERT_EQUAL(st.failed, 3);
	CU_ASSERT_EQUAL(st.writes, 7);
	CU_ASSERT_FALSE(smr_fault_is_cut(f));

	SMR_ASSERT_OK(smr_dev_close(dev));
	smr_fault_free(f);
	SMR_ASSERT_OK(smr_dev_close(lower));
	free(path);
}

static void test_drop_writes(void)
{
	char *path = new_zloop();
	struct smr_dev *lower = open_dev(path);
	struct smr_fault_rule rule = { .what = SMR_FAULT_DROP_WRITES,
				       .after = 3 };
	struct smr_fault_stats st;
	struct smr_fault *f;
	struct smr_dev *dev;

	SMR_ASSERT_OK(smr_fault_open(lower, &f, &dev));
	SMR_ASSERT_OK(smr_fault_arm(f, &rule));
	SMR_ASSERT_OK(append(dev, 2, BS, 1));
	SMR_ASSERT_OK(put(dev, 4 * BS, BS, 2));
	SMR_ASSERT_OK(append(dev, 2, 2 * BS, 3));
	CU_ASSERT_FALSE(smr_fault_is_cut(f));
	/* The power is cut here: all acknowledged, none persisted. */
	SMR_ASSERT_OK(append(dev, 2, BS, 4));
	SMR_ASSERT_OK(put(dev, 4 * BS, BS, 5));
	SMR_ASSERT_OK(append(dev, 3, 3 * BS, 6));
	SMR_ASSERT_OK(smr_dev_flush(dev));
	SMR_ASSERT_OK(smr_dev_zone_reset(dev, 2));
	CU_ASSERT_TRUE(smr_fault_is_cut(f));

	/* Through the fault device, the acknowledged state. */
	CU_ASSERT_TRUE(holds(dev, 4 * BS, BS, 5));
	CU_ASSERT_TRUE(holds(dev, zstart(3), 3 * BS, 6));
	CU_ASSERT_EQUAL(smr_dev_zone_wp(dev, 2), zstart(2));
	CU_ASSERT_TRUE(zeros(dev, zstart(2), ZONE));

	/* The lower device holds only what came before the cut. */
	CU_ASSERT_EQUAL(smr_fault_nr_records(f), 3);
	SMR_ASSERT_OK(smr_dev_close(dev));
	SMR_ASSERT_OK(smr_dev_close(lower));
	lower = open_dev(path);
	CU_ASSERT_EQUAL(smr_dev_zone_wp(lower, 2), zstart(2) + 3 * BS);
	CU_ASSERT_EQUAL(smr_dev_zone_wp(lower, 3), zstart(3));
	CU_ASSERT_TRUE(holds(lower, zstart(2), BS, 1));
	CU_ASSERT_TRUE(holds(lower, zstart(2) + BS, 2 * BS, 3));
	CU_ASSERT_TRUE(holds(lower, 4 * BS, BS, 2));
	smr_fault_stats(f, &st);
	/* Three writes and a reset; flushes after the cut do nothing. */
	CU_ASSERT_EQUAL(st.dropped, 4);
	smr_fault_free(f);
	SMR_ASSERT_OK(smr_dev_close(lower));
	free(path);
}

/* The scratch view of a device opened read-only: writable, reads see what
 * went through it, and the device below is never touched. */
static void test_scratch(void)
{
	struct smr_dev_opts ro = { .read_only = true };
	char *path = new_zloop();
	struct smr_dev *lower = open_dev(path), *dev;
	struct smr_fault *f;
	uint8_t *before;

	SMR_ASSERT_OK(append(lower, 2, 2 * BS, 1));
	SMR_ASSERT_OK(put(lower, 4 * BS, BS, 2));
	before = snapshot(lower);
	SMR_ASSERT_OK(smr_dev_close(lower));
	SMR_ASSERT_OK(smr_dev_open(path, &ro, &lower));
	SMR_ASSERT_OK(smr_fault_open_scratch(lower, &f, &dev));
	CU_ASSERT_FALSE(smr_dev_info(dev)->read_only);
	CU_ASSERT_TRUE(smr_fault_is_cut(f));
	SMR_ASSERT_OK(smr_dev_zone_reset(dev, 2));
	CU_ASSERT_TRUE(zeros(dev, zstart(2), ZONE));
	SMR_ASSERT_OK(append(dev, 2, BS, 3));
	SMR_ASSERT_OK(put(dev, 4 * BS, BS, 4));
	SMR_ASSERT_OK(smr_dev_flush(dev));
	CU_ASSERT_TRUE(holds(dev, zstart(2), BS, 3));
	CU_ASSERT_TRUE(holds(dev, 4 * BS, BS, 4));
	CU_ASSERT_EQUAL(smr_fault_nr_records(f), 0);
	SMR_ASSERT_OK(smr_dev_close(dev));
	smr_fault_free(f);
	CU_ASSERT_TRUE(same_image(lower, before));
	SMR_ASSERT_OK(smr_dev_close(lower));
	lower = open_dev(path);
	CU_ASSERT_EQUAL(smr_dev_zone_wp(lower, 2), zstart(2) + 2 * BS);
	CU_ASSERT_TRUE(same_image(lower, before));
	SMR_ASSERT_OK(smr_dev_close(lower));
	smr_dev_buf_free(before);
	drop_path(path);
}

static void test_tear_write(void)
{
	char *path = new_zloop();
	struct smr_dev *lower = open_dev(path);
	struct smr_fault_rule rule = { .what = SMR_FAULT_TEAR_WRITE,
				       .after = 1,
				       .tear_bytes = BS + 100 };
	struct smr_fault_rec r;
	struct smr_fault *f;
	struct smr_dev *dev;
	void *b = pattern(4 * BS, 2);

	SMR_ASSERT_OK(smr_fault_open(lower, &f, &dev));
	SMR_ASSERT_OK(smr_fault_arm(f, &rule));
	SMR_ASSERT_OK(append(dev, 5, BS, 1));
	SMR_ASSERT_OK(smr_dev_write(dev, b, 4 * BS, zstart(5) + BS));
	SMR_ASSERT_OK(append(dev, 5, BS, 3));
	CU_ASSERT_TRUE(smr_fault_is_cut(f));
	CU_ASSERT_EQUAL(smr_dev_zone_wp(dev, 5), zstart(5) + 6 * BS);
	CU_ASSERT_TRUE(holds(dev, zstart(5) + 5 * BS, BS, 3));

	/* The log ends with the torn part of the write. */
	CU_ASSERT_EQUAL(smr_fault_nr_records(f), 2);
	SMR_ASSERT_OK(smr_fault_record(f, 1, &r));
	CU_ASSERT_TRUE(r.torn);
	CU_ASSERT_EQUAL(r.len, BS);
	SMR_ASSERT_OK(smr_dev_close(dev));

	/* The lower device: the first write, one block of the second. */
	CU_ASSERT_EQUAL(smr_dev_zone_wp(lower, 5), zstart(5) + 2 * BS);
	CU_ASSERT_TRUE(holds(lower, zstart(5), BS, 1));
	CU_ASSERT_TRUE(holds(lower, zstart(5) + BS, BS, 2));
	CU_ASSERT_TRUE(zeros(lower, zstart(5) + 2 * BS, ZONE - 2 * BS));

	/* A tear of 0 bytes persists nothing of the write. */
	smr_fault_free(f);
	SMR_ASSERT_OK(smr_fault_open(lower, &f, &dev));
	rule.after = 0;
	rule.tear_bytes = 100;
	SMR_ASSERT_OK(smr_fault_arm(f, &rule));
	SMR_ASSERT_OK(append(dev, 5, BS, 4));
	SMR_ASSERT_OK(smr_dev_close(dev));
	CU_ASSERT_EQUAL(smr_dev_zone_wp(lower, 5), zstart(5) + 2 * BS);
	CU_ASSERT_EQUAL(smr_fault_nr_records(f), 0);

	smr_fault_free(f);
	smr_dev_buf_free(b);
	SMR_ASSERT_OK(smr_dev_close(lower));
	free(path);
}

static void test_fail_reads_resets(void)
{
	char *path = new_zloop();
	struct smr_dev *lower = open_dev(path);
	struct smr_fault_rule rule = { .what = SMR_FAULT_FAIL_READS };
	struct smr_fault *f;
	struct smr_dev *dev;
	void *b = smr_dev_buf_alloc(BS);

	SMR_ASSERT_OK(smr_fault_open(lower, &f, &dev));
	SMR_ASSERT_OK(put(dev, 0, BS, 1));
	SMR_ASSERT_OK(append(dev, 6, BS, 2));

	/* after = 0: every read fails. */
	SMR_ASSERT_OK(smr_fault_arm(f, &rule));
	SMR_ASSERT_RC(smr_dev_read(dev, b, BS, 0), -EIO);
	SMR_ASSERT_RC(smr_dev_read(dev, b, BS, zstart(6)), -EIO);
	/* after = 2 */
	rule.after = 2;
	rule.error = -EBADMSG;
	SMR_ASSERT_OK(smr_fault_arm(f, &rule));
	SMR_ASSERT_OK(smr_dev_read(dev, b, BS, 0));
	SMR_ASSERT_OK(smr_dev_read(dev, b, BS, zstart(6)));
	SMR_ASSERT_RC(smr_dev_read(dev, b, BS, 0), -EBADMSG);
	SMR_ASSERT_RC(smr_dev_read(dev, b, BS, 0), -EBADMSG);
	/* Writes are not affected. */
	SMR_ASSERT_OK(append(dev, 6, BS, 3));
	smr_fault_disarm(f);
	CU_ASSERT_TRUE(holds(dev, zstart(6) + BS, BS, 3));

	/* Failed resets leave the zone as it was. */
	rule.what = SMR_FAULT_FAIL_RESETS;
	rule.after = 1;
	rule.error = 0;
	SMR_ASSERT_OK(append(dev, 7, BS, 4));
	SMR_ASSERT_OK(smr_fault_arm(f, &rule));
	SMR_ASSERT_OK(smr_dev_zone_reset(dev, 6));
	SMR_ASSERT_RC(smr_dev_zone_reset(dev, 7), -EIO);
	CU_ASSERT_EQUAL(smr_dev_zone_wp(dev, 6), zstart(6));
	CU_ASSERT_EQUAL(smr_dev_zone_wp(dev, 7), zstart(7) + BS);
	CU_ASSERT_EQUAL(smr_dev_zone_wp(lower, 7), zstart(7) + BS);
	CU_ASSERT_TRUE(holds(dev, zstart(7), BS, 4));
	smr_fault_disarm(f);
	SMR_ASSERT_OK(smr_dev_zone_reset(dev, 7));
	CU_ASSERT_EQUAL(smr_dev_zone_wp(lower, 7), zstart(7));

	/* Failed flushes: the second fails, the writes before it stay. */
	rule.what = SMR_FAULT_FAIL_FLUSHES;
	rule.after = 1;
	rule.error = -EREMOTEIO;
	SMR_ASSERT_OK(smr_fault_arm(f, &rule));
	SMR_ASSERT_OK(smr_dev_flush(dev));
	SMR_ASSERT_OK(append(dev, 7, BS, 5));
	SMR_ASSERT_RC(smr_dev_flush(dev), -EREMOTEIO);
	CU_ASSERT_TRUE(holds(dev, zstart(7), BS, 5));
	smr_fault_disarm(f);
	SMR_ASSERT_OK(smr_dev_flush(dev));

	SMR_ASSERT_OK(smr_dev_close(dev));
	smr_fault_free(f);
	smr_dev_buf_free(b);
	SMR_ASSERT_OK(smr_dev_close(lower));
	free(path);
}

/* ------------------------------------------------------------------------
 * Replay
 * ------------------------------------------------------------------------ */

/* A recorded workload and the device image after each of its steps. */
struct workload {
	unsigned int nr;     /* steps */
	uint64_t recs[64];   /* log records after step i */
	uint8_t *img[64];    /* device image after step i */
	uint64_t flushed[64];/* records up to the last flush at step i */
};

/*
 * Run a random workload through @dev: writes in conventional zones anywhere,
 * appends to sequential zones, flushes, finishes and resets (on an unzoned
 * device: writes anywhere and flushes). Snapshot the device after every step.
 */
static void run_workload(struct smr_dev *dev, struct smr_fault *f,
			 struct workload *w, uint64_t seed)
{
	bool zoned = smr_dev_info(dev)->zoned;
	uint64_t s = seed, last_flush = 0;

	w->nr = 40;
	for (unsigned int i = 0; i < w->nr; i++) {
		uint64_t x = smr_test_rand(&s);
		unsigned int what = x % 10;
		size_t len = (1 + (x >> 8) % 3) * BS;
		uint32_t z = NR_CNV + (x >> 16) % (NR_ZONES - NR_CNV);

		if (what == 0) {
			SMR_ASSERT_OK(smr_dev_flush(dev));
			last_flush = smr_fault_nr_records(f);
		} else if (!zoned) {
			SMR_ASSERT_OK(put(dev, (x >> 24) % (CAP / BS - 3) * BS,
					  len, seed * 1000 + i));
		} else if (what <= 3) {
			/* Within one conventional zone. */
			uint64_t off = zstart((x >> 40) % NR_CNV) +
				       (x >> 24) % (ZONE / BS - 3) * BS;

			SMR_ASSERT_OK(put(dev, off, len, seed * 1000 + i));
		} else if (what == 9 && (x >> 32) % 2) {
			SMR_ASSERT_OK(smr_dev_zone_reset(dev, z));
		} else if (what == 9) {
			SMR_ASSERT_OK(smr_dev_zone_finish(dev, z));
		} else if (smr_dev_zone_wp(dev, z) + len <= zstart(z) + ZONE &&
			   smr_dev_zone_cond(dev, z) != SMR_ZONE_COND_FULL) {
			SMR_ASSERT_OK(append(dev, z, len, seed * 1000 + i));
		} else {
			SMR_ASSERT_OK(smr_dev_zone_reset(dev, z));
		}
		w->recs[i] = smr_fault_nr_records(f);
		w->flushed[i] = last_flush;
		w->img[i] = snapshot(dev);
	}
}

static void free_workload(struct workload *w)
{
	for (unsigned int i = 0; i < w->nr; i++)
		smr_dev_buf_free(w->img[i]);
}

/* Every prefix of the log replayed onto a fresh device gives the image the
 * device had at that point, write pointers included. */
static void replay_prefixes(char *(*mk)(void))
{
	char *path = mk();
	struct smr_dev *lower = open_dev(path);
	struct workload w;
	struct smr_fault *f;
	struct smr_dev *dev;
	struct smr_zone za, zb;

	SMR_ASSERT_OK(smr_fault_open(lower, &f, &dev));
	run_workload(dev, f, &w, 11);
	for (unsigned int i = 0; i < w.nr; i++) {
		char *tpath = mk();
		struct smr_dev *t = open_dev(tpath);

		SMR_ASSERT_OK(smr_fault_replay(f, w.recs[i], NULL, t));
		CU_ASSERT_TRUE(same_image(t, w.img[i]));
		if (i == w.nr - 1) {
			for (uint32_t z = 0; z < smr_dev_info(t)->nr_zones;
			     z++) {
				SMR_ASSERT_OK(smr_dev_zone(t, z, &za));
				SMR_ASSERT_OK(smr_dev_zone(dev, z, &zb));
				CU_ASSERT_EQUAL(za.wp, zb.wp);
			}
		}
		SMR_ASSERT_OK(smr_dev_close(t));
		drop_path(tpath);
	}
	/* Bad requests. */
	SMR_ASSERT_RC(smr_fault_replay(f, w.recs[w.nr - 1] + 1, NULL, lower),
		      -EINVAL);
	SMR_ASSERT_RC(smr_fault_replay(f, 0, NULL, dev), -EINVAL);

	free_workload(&w);
	SMR_ASSERT_OK(smr_dev_close(dev));
	smr_fault_free(f);
	SMR_ASSERT_OK(smr_dev_close(lower));
	free(path);
}

static void test_replay_prefix_zloop(void)
{
	replay_prefixes(new_zloop);
}

static void test_replay_prefix_file(void)
{
	replay_prefixes(new_file);
}

/* Dropping the unflushed writes gives the image at the last flush. */
static void drop_unflushed(char *(*mk)(void))
{
	char *path = mk();
	struct smr_dev *lower = open_dev(path);
	struct smr_replay_opts o = { .flags = SMR_REPLAY_DROP_UNFLUSHED };
	struct workload w;
	struct smr_fault *f;
	struct smr_dev *dev;
	unsigned int checked = 0;

	SMR_ASSERT_OK(smr_fault_open(lower, &f, &dev));
	run_workload(dev, f, &w, 23);
	for (unsigned int i = 0; i < w.nr; i++) {
		char *tpath;
		struct smr_dev *t;
		bool ops_since = false;
		unsigned int j;

		/* Find the step of the last flush; the comparison holds when
		 * only writes (no zone operation) came after it. */
		for (j = i + 1; j-- > 0;)
			if (w.recs[j] == w.flushed[i])
				break;
		for (uint64_t k = w.flushed[i]; k < w.recs[i]; k++) {
			struct smr_fault_rec r;

			SMR_ASSERT_OK(smr_fault_record(f, k, &r));
			if (r.op != SMR_FOP_WRITE)
				ops_since = true;
		}
		if (ops_since || w.flushed[i] == 0 || j > i)
			continue;
		tpath = mk();
		t = open_dev(tpath);
		SMR_ASSERT_OK(smr_fault_replay(f, w.recs[i], &o, t));
		CU_ASSERT_TRUE(same_image(t, w.img[j]));
		checked++;
		SMR_ASSERT_OK(smr_dev_close(t));
		drop_path(tpath);
	}
	CU_ASSERT(checked >= 5);
	free_workload(&w);
	SMR_ASSERT_OK(smr_dev_close(dev));
	smr_fault_free(f);
	SMR_ASSERT_OK(smr_dev_close(lower));
	free(path);
}

static void test_replay_drop_unflushed_zloop(void)
{
	drop_unflushed(new_zloop);
}

static void test_replay_drop_unflushed_file(void)
{
	drop_unflushed(new_file);
}

/*
 * Random drops and tears on a zoned device: replayed onto a fault device that
 * records what the target receives, every write to a sequential zone lands
 * exactly at that zone's write pointer, and each sequential zone holds a
 * prefix of what the full replay gives.
 */
static void test_replay_zoned_order(void)
{
	char *path = new_zloop();
	struct smr_dev *lower = open_dev(path);
	struct smr_fault *f;
	struct smr_dev *dev;
	uint64_t nr, full_wp[NR_ZONES];
	uint8_t *full;
	unsigned int dropped_some = 0;

	SMR_ASSERT_OK(smr_fault_open(lower, &f, &dev));
	/* A flushed base, then unflushed appends interleaved over 3 zones. */
	for (uint32_t z = NR_CNV; z < NR_ZONES; z++)
		SMR_ASSERT_OK(append(dev, z, BS, z));
	SMR_ASSERT_OK(smr_dev_flush(dev));
	for (unsigned int i = 0; i < 12; i++)
		SMR_ASSERT_OK(append(dev, NR_CNV + i % 3, BS * (1 + i % 2),
				     100 + i));
	SMR_ASSERT_OK(put(dev, BS, BS, 99));
	nr = smr_fault_nr_records(f);
	full = snapshot(dev);
	for (uint32_t z = 0; z < NR_ZONES; z++)
		full_wp[z] = smr_dev_zone_wp(dev, z);

	for (uint64_t seed = 1; seed <= 24; seed++) {
		struct smr_replay_opts o = { .flags = SMR_REPLAY_DROP_RANDOM,
					     .seed = seed };
		char *tpath = new_zloop();
		struct smr_dev *tl = open_dev(tpath), *t;
		struct smr_fault *tf;
		uint64_t wp[NR_ZONES];
		uint8_t *img;
		bool ok = true;

		if (seed % 2) {
			o.flags |= SMR_REPLAY_TEAR_LAST;
			o.tear_bytes = 0;
		}
		SMR_ASSERT_OK(smr_fault_open(tl, &tf, &t));
		SMR_ASSERT_OK(smr_fault_replay(f, nr, &o, t));
		for (uint32_t z = 0; z < NR_ZONES; z++)
			wp[z] = zstart(z);
		for (uint64_t i = 0; i < smr_fault_nr_records(tf); i++) {
			struct smr_fault_rec r;

			SMR_ASSERT_OK(smr_fault_record(tf, i, &r));
			if (r.op != SMR_FOP_WRITE || !r.seq)
				continue;
			if (r.off != wp[r.zno])
				ok = false;
			wp[r.zno] = r.off + r.len;
		}
		CU_ASSERT_TRUE(ok);
		img = snapshot(t);
		for (uint32_t z = NR_CNV; z < NR_ZONES; z++) {
			uint64_t used = smr_dev_zone_wp(t, z) - zstart(z);

			CU_ASSERT(used >= BS); /* the flushed base */
			CU_ASSERT(smr_dev_zone_wp(t, z) <= full_wp[z]);
			CU_ASSERT_EQUAL(memcmp(img + zstart(z),
					       full + zstart(z), used), 0);
			if (smr_dev_zone_wp(t, z) < full_wp[z])
				dropped_some++;
		}
		/* The tear of the last write (0 bytes) lost it. */
		if (seed % 2)
			CU_ASSERT_TRUE(zeros(t, BS, BS));
		smr_dev_buf_free(img);
		SMR_ASSERT_OK(smr_dev_close(t));
		smr_fault_free(tf);
		SMR_ASSERT_OK(smr_dev_close(tl));
		drop_path(tpath);
	}
	CU_ASSERT(dropped_some > 0);

	/* TEAR_LAST: needs a write last, and cannot go with DROP_UNFLUSHED. */
	{
		uint8_t *img;
		struct smr_replay_opts o = { .flags = SMR_REPLAY_TEAR_LAST |
						      SMR_REPLAY_DROP_UNFLUSHED };
		char *tpath = new_zloop();
		struct smr_dev *t = open_dev(tpath);

		SMR_ASSERT_RC(smr_fault_replay(f, nr, &o, t), -EINVAL);
		o.flags = SMR_REPLAY_TEAR_LAST;
		SMR_ASSERT_RC(smr_fault_replay(f, NR_ZONES - NR_CNV + 1, &o, t),
			      -EINVAL); /* record NR_ZONES - NR_CNV: flush */
		/* Record nr - 2 is the last append, of two blocks to zone
		 * NR_CNV + 2: torn to one block at a block boundary. */
		o.tear_bytes = BS + 1;
		SMR_ASSERT_OK(smr_fault_replay(f, nr - 1, &o, t));
		CU_ASSERT_EQUAL(smr_dev_zone_wp(t, NR_CNV + 2),
				full_wp[NR_CNV + 2] - BS);
		img = snapshot(t);
		CU_ASSERT_EQUAL(memcmp(img + zstart(NR_CNV + 2),
				       full + zstart(NR_CNV + 2),
				       full_wp[NR_CNV + 2] - BS -
					       zstart(NR_CNV + 2)), 0);
		CU_ASSERT_TRUE(zeros(t, full_wp[NR_CNV + 2] - BS, BS));
		smr_dev_buf_free(img);
		SMR_ASSERT_OK(smr_dev_close(t));
		drop_path(tpath);
	}

	smr_dev_buf_free(full);
	SMR_ASSERT_OK(smr_dev_close(dev));
	smr_fault_free(f);
	SMR_ASSERT_OK(smr_dev_close(lower));
	free(path);
}

/*
 * SMR_REPLAY_LOSE_BLOCKS, a volatile write cache: after a flushed base,
 * unflushed multi-block writes (and, on a zoned device, appends to three
 * sequential zones). Every block replayed must hold either its flushed or
 * its newest content; a sequential zone must keep a prefix of its blocks;
 * over the seeds, a multi-block write must lose an earlier block while
 * keeping a later one (on zones and files that allow it), and a sequential
 * zone must stop inside a multi-block append.
 */
static void lose_blocks(char *(*mk)(void))
{
	char *path = mk();
	struct smr_dev *lower = open_dev(path);
	bool zoned = smr_dev_info(lower)->zoned;
	uint64_t cur[NR_ZONES], base_wp[NR_ZONES], nr;
	uint32_t ends[NR_ZONES] = { 0 }; /* per zone: block counts at which an
					  * unflushed append ended */
	unsigned int holes = 0, later_kept = 0, mid_append = 0, kept = 0;
	struct smr_fault *f;
	struct smr_dev *dev;
	uint8_t *base, *full;

	SMR_ASSERT_OK(smr_fault_open(lower, &f, &dev));
	for (uint32_t z = NR_CNV; z < NR_ZONES; z++) {
		cur[z] = zstart(z);
		SMR_ASSERT_OK(put(dev, cur[z], 2 * BS, z));
		cur[z] += 2 * BS;
		base_wp[z] = cur[z];
	}
	SMR_ASSERT_OK(put(dev, 0, 4 * BS, 1));
	SMR_ASSERT_OK(smr_dev_flush(dev));
	base = snapshot(dev);
	/* Unflushed; no block is written twice. */
	SMR_ASSERT_OK(put(dev, 4 * BS, 8 * BS, 200));
	for (unsigned int i = 0; i < 6; i++) {
		uint32_t z = NR_CNV + i % 3;

		SMR_ASSERT_OK(put(dev, cur[z], (1 + i % 3) * BS, 300 + i));
		cur[z] += (1 + i % 3) * BS;
		ends[z] |= 1U << ((cur[z] - base_wp[z]) / BS);
	}
	SMR_ASSERT_OK(put(dev, ZONE + 2 * BS, 4 * BS, 201));
	SMR_ASSERT_OK(put(dev, 14 * BS, BS, 202));
	nr = smr_fault_nr_records(f);
	full = snapshot(dev);

	for (uint64_t seed = 1; seed <= 40; seed++) {
		struct smr_replay_opts o = { .flags = SMR_REPLAY_LOSE_BLOCKS,
					     .seed = seed };
		char *tpath = mk();
		struct smr_dev *t = open_dev(tpath);
		bool ok = true, lost = false;
		uint8_t *img;

		if (seed % 4 == 0) /* the last write torn: none of it */
			o.flags |= SMR_REPLAY_TEAR_LAST;
		SMR_ASSERT_OK(smr_fault_replay(f, nr, &o, t));
		img = snapshot(t);
		for (uint64_t b = 0; b < CAP / BS; b++)
			ok &= !memcmp(img + b * BS, base + b * BS, BS) ||
			      !memcmp(img + b * BS, full + b * BS, BS);
		CU_ASSERT_TRUE(ok);
		/* The 8-block write: a later block kept, an earlier lost? */
		for (uint64_t b = 4; b < 12; b++) {
			bool now = !memcmp(img + b * BS, full + b * BS, BS);

			holes += lost && now;
			lost |= !now;
		}
		if (!memcmp(img + 14 * BS, full + 14 * BS, BS)) {
			CU_ASSERT(seed % 4 != 0);
			later_kept += lost;
			kept++;
		}
		for (uint32_t z = NR_CNV; zoned && z < NR_ZONES; z++) {
			uint64_t wp = smr_dev_zone_wp(t, z);

			CU_ASSERT(wp >= base_wp[z] && wp <= cur[z]);
			CU_ASSERT_EQUAL(memcmp(img + zstart(z),
					       full + zstart(z),
					       wp - zstart(z)), 0);
			mid_append += wp > base_wp[z] &&
				      !(ends[z] & 1U << (wp - base_wp[z]) / BS);
		}
		smr_dev_buf_free(img);
		SMR_ASSERT_OK(smr_dev_close(t));
		drop_path(tpath);
	}
	CU_ASSERT(holes > 0);
	CU_ASSERT(later_kept > 0);
	CU_ASSERT(kept < 30);
	if (zoned)
		CU_ASSERT(mid_append > 0);

	/* Not together with the other ways of losing writes. */
	{
		struct smr_replay_opts o = { .flags = SMR_REPLAY_LOSE_BLOCKS |
						      SMR_REPLAY_DROP_RANDOM };
		char *tpath = mk();
		struct smr_dev *t = open_dev(tpath);

		SMR_ASSERT_RC(smr_fault_replay(f, nr, &o, t), -EINVAL);
		o.flags = SMR_REPLAY_LOSE_BLOCKS | SMR_REPLAY_DROP_UNFLUSHED;
		SMR_ASSERT_RC(smr_fault_replay(f, nr, &o, t), -EINVAL);
		SMR_ASSERT_OK(smr_dev_close(t));
		drop_path(tpath);
	}
	smr_dev_buf_free(base);
	smr_dev_buf_free(full);
	SMR_ASSERT_OK(smr_dev_close(dev));
	smr_fault_free(f);
	SMR_ASSERT_OK(smr_dev_close(lower));
	free(path);
}

static void test_replay_lose_blocks_zloop(void)
{
	lose_blocks(new_zloop);
}

static void test_replay_lose_blocks_file(void)
{
	lose_blocks(new_file);
}

/* Cut the power after every write N of a workload through the fault device
 * itself (not a replay): the lower device then holds the replay of the
 * first N writes. */
static void test_cut_every_write(void)
{
	char *path = new_zloop();
	struct smr_dev *lower = open_dev(path);
	struct smr_fault *f;
	struct smr_dev *dev;
	struct workload w;
	uint64_t nr;

	SMR_ASSERT_OK(smr_fault_open(lower, &f, &dev));
	run_workload(dev, f, &w, 37);
	nr = smr_fault_nr_records(f);
	SMR_ASSERT_OK(smr_dev_close(dev));

	for (uint64_t n = 0; n < 12; n++) {
		static const struct smr_replay_opts exact = {
			.flags = SMR_REPLAY_EXACT,
		};
		struct smr_fault_rule rule = { .what = SMR_FAULT_DROP_WRITES,
					       .after = n };
		char *p1 = new_zloop(), *p2 = new_zloop();
		struct smr_dev *d1 = open_dev(p1), *d2 = open_dev(p2), *fd1;
		struct smr_fault *f1;
		uint64_t writes = 0, upto = 0, cut = 0;
		uint8_t *img;

		/* Run the recorded log again through a fault device that cuts
		 * after write n... */
		SMR_ASSERT_OK(smr_fault_open(d1, &f1, &fd1));
		SMR_ASSERT_OK(smr_fault_arm(f1, &rule));
		SMR_ASSERT_OK(smr_fault_replay(f, nr, &exact, fd1));
		SMR_ASSERT_OK(smr_dev_close(fd1));
		/* ... and replay the prefix up to write n exactly. */
		for (uint64_t i = 0; i < nr; i++) {
			struct smr_fault_rec r;

			SMR_ASSERT_OK(smr_fault_record(f, i, &r));
			if (r.op == SMR_FOP_WRITE && writes++ == n)
				break;
			upto = i + 1;
		}
		SMR_ASSERT_OK(smr_fault_cut_prefix(f, n, &cut));
		CU_ASSERT_EQUAL(cut, upto);
		/* Zone operations after the cut are lost as well. */
		SMR_ASSERT_OK(smr_fault_replay(f, cut, NULL, d2));
		img = snapshot(d2);
		CU_ASSERT_TRUE(same_image(d1, img));
		smr_dev_buf_free(img);
		smr_fault_free(f1);
		SMR_ASSERT_OK(smr_dev_close(d1));
		SMR_ASSERT_OK(smr_dev_close(d2));
		drop_path(p1);
		drop_path(p2);
	}
	/* The whole log for all its writes; more is out of range. */
	{
		uint64_t writes = 0, cut = 0;

		for (uint64_t i = 0; i < nr; i++) {
			struct smr_fault_rec r;

			SMR_ASSERT_OK(smr_fault_record(f, i, &r));
			writes += r.op == SMR_FOP_WRITE;
		}
		/* (The close added a flush after nr.) */
		SMR_ASSERT_OK(smr_fault_cut_prefix(f, writes, &cut));
		CU_ASSERT_EQUAL(cut, smr_fault_nr_records(f));
		SMR_ASSERT_RC(smr_fault_cut_prefix(f, writes + 1, &cut),
			      -ERANGE);
	}
	free_workload(&w);
	smr_fault_free(f);
	SMR_ASSERT_OK(smr_dev_close(lower));
	free(path);
}

/* ------------------------------------------------------------------------
 * Batches, threads, discards
 * ------------------------------------------------------------------------ */

struct appender {
	struct smr_dev *dev;
	uint32_t zno;
	int rc;
};

static void *append_thread(void *arg)
{
	struct appender *a = arg;

	for (unsigned int i = 0; i < 8 && !a->rc; i++) {
		a->rc = append(a->dev, a->zno, BS, a->zno * 100 + i);
		if (!a->rc && i % 3 == 2)
			a->rc = smr_dev_flush(a->dev);
	}
	return NULL;
}

/* Batches and concurrent writers go through the fault device; the log keeps
 * each zone's writes in order and replays to the same device. */
static void test_batch_threads(void)
{
	char *path = new_zloop(), *tpath = new_zloop();
	struct smr_dev *lower = open_dev(path), *t = open_dev(tpath);
	struct appender a[NR_ZONES - NR_CNV];
	pthread_t th[NR_ZONES - NR_CNV];
	struct smr_fault *f;
	struct smr_dev *dev;
	struct smr_io ios[6];
	void *bufs[6];
	uint64_t wp[NR_ZONES];
	uint8_t *img;
	bool ordered = true;

	SMR_ASSERT_OK(smr_fault_open(lower, &f, &dev));
	for (unsigned int i = 0; i < 6; i++) {
		bufs[i] = pattern(BS, 50 + i);
		ios[i] = (struct smr_io){
			.op = SMR_IO_WRITE, .buf = bufs[i], .len = BS,
			.off = zstart(i % 2 ? 3 : 2) + (i / 2) * BS,
		};
	}
	SMR_ASSERT_OK(smr_dev_submit(dev, ios, 6));
	for (unsigned int i = 0; i < 6; i++)
		smr_dev_buf_free(bufs[i]);
	SMR_ASSERT_OK(smr_dev_zone_reset(dev, 2));
	SMR_ASSERT_OK(smr_dev_zone_reset(dev, 3));

	for (uint32_t i = 0; i < NR_ZONES - NR_CNV; i++) {
		a[i] = (struct appender){ .dev = dev, .zno = NR_CNV + i };
		CU_ASSERT_FATAL(pthread_create(&th[i], NULL, append_thread,
					       &a[i]) == 0);
	}
	for (uint32_t i = 0; i < NR_ZONES - NR_CNV; i++) {
		pthread_join(th[i], NULL);
		SMR_ASSERT_OK(a[i].rc);
		CU_ASSERT_TRUE(holds(lower, zstart(NR_CNV + i) + 7 * BS, BS,
				     (NR_CNV + i) * 100 + 7));
	}

	/* Every sequential write of the log lands at its zone's pointer. */
	for (uint32_t z = 0; z < NR_ZONES; z++)
		wp[z] = zstart(z);
	for (uint64_t i = 0; i < smr_fault_nr_records(f); i++) {
		struct smr_fault_rec r;

		SMR_ASSERT_OK(smr_fault_record(f, i, &r));
		if (r.op == SMR_FOP_ZONE_RESET)
			wp[r.zno] = zstart(r.zno);
		if (r.op != SMR_FOP_WRITE)
			continue;
		if (r.off != wp[r.zno])
			ordered = false;
		wp[r.zno] = r.off + r.len;
	}
	CU_ASSERT_TRUE(ordered);
	SMR_ASSERT_OK(smr_fault_replay(f, smr_fault_nr_records(f), NULL, t));
	img = snapshot(lower);
	CU_ASSERT_TRUE(same_image(t, img));
	smr_dev_buf_free(img);

	SMR_ASSERT_OK(smr_dev_close(dev));
	smr_fault_free(f);
	SMR_ASSERT_OK(smr_dev_close(t));
	SMR_ASSERT_OK(smr_dev_close(lower));
	drop_path(tpath);
	free(path);
}

/* Discards are recorded and replayed (regular files punch holes). */
static void test_discard(void)
{
	char *path = new_file(), *tpath = new_file();
	struct smr_dev *lower = open_dev(path), *t = open_dev(tpath);
	struct smr_fault_rec r;
	struct smr_fault *f;
	struct smr_dev *dev;
	uint8_t *img;

	if (!smr_dev_info(lower)->discard) {
		printf("\n    no discard on this file system: skipped ");
		goto out;
	}
	SMR_ASSERT_OK(smr_fault_open(lower, &f, &dev));
	SMR_ASSERT_OK(put(dev, 0, 8 * BS, 1));
	SMR_ASSERT_OK(smr_dev_discard(dev, 2 * BS, 4 * BS));
	CU_ASSERT_TRUE(zeros(dev, 2 * BS, 4 * BS));
	CU_ASSERT_EQUAL(smr_fault_nr_records(f), 2);
	SMR_ASSERT_OK(smr_fault_record(f, 1, &r));
	CU_ASSERT_EQUAL(r.op, SMR_FOP_DISCARD);
	CU_ASSERT_EQUAL(r.off, 2 * BS);
	CU_ASSERT_EQUAL(r.len, 4 * BS);
	SMR_ASSERT_OK(smr_fault_replay(f, 2, NULL, t));
	img = snapshot(lower);
	CU_ASSERT_TRUE(same_image(t, img));
	smr_dev_buf_free(img);
	SMR_ASSERT_OK(smr_dev_close(dev));
	smr_fault_free(f);
out:
	SMR_ASSERT_OK(smr_dev_close(t));
	SMR_ASSERT_OK(smr_dev_close(lower));
	drop_path(tpath);
	free(path);
}

static const struct smr_test fault_tests[] = {
	{ "record", test_record },
	{ "fail_writes", test_fail_writes },
	{ "drop_writes", test_drop_writes },
	{ "scratch", test_scratch },
	{ "tear_write", test_tear_write },
	{ "fail_reads_resets", test_fail_reads_resets },
	{ NULL, NULL },
};

static const struct smr_test replay_tests[] = {
	{ "replay_prefix_zloop", test_replay_prefix_zloop },
	{ "replay_prefix_file", test_replay_prefix_file },
	{ "replay_drop_unflushed_zloop", test_replay_drop_unflushed_zloop },
	{ "replay_drop_unflushed_file", test_replay_drop_unflushed_file },
	{ "replay_zoned_order", test_replay_zoned_order },
	{ "replay_lose_blocks_zloop", test_replay_lose_blocks_zloop },
	{ "replay_lose_blocks_file", test_replay_lose_blocks_file },
	{ "cut_every_write", test_cut_every_write },
	{ "batch_threads", test_batch_threads },
	{ "discard", test_discard },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	static const struct smr_suite suites[] = {
		{ "fault", fault_tests },
		{ "replay", replay_tests },
		{ NULL, NULL },
	};

	smr_log_set_level(SMR_LOG_ERR);
	return smr_test_main(argc, argv, suites);
}
