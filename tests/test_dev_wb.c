/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_dev_wb.c - write-behind (smr_dev_set_write_behind): a queued write
 * moves the write pointer at once and reads back at once; writes, zone
 * operations, flush and close wait for what is queued; the cap on queued
 * bytes holds; open zone limits behave as without it; a queued write that
 * fails surfaces at every later flush. Run on zoned loop directories (the
 * io_uring path) and on the fault device stacked on one (the path of a
 * backend without io_target, and a place to inject errors).
 */
#include "testutil.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dev/dev.h"
#include "dev/dev_int.h"
#include "dev/fault.h"

#define ZS SMR_MIB
#define NZ 8
#define NCNV 1
#define BLK 4096

static struct smr_dev *mkdev(const char *tag, uint32_t max_open,
			     uint32_t max_active, char *path, size_t plen)
{
	struct smr_zloop_params p = {
		.capacity = NZ * ZS,
		.zone_size = ZS,
		.nr_cnv = NCNV,
		.max_open = max_open,
		.max_active = max_active,
		.block_size = BLK,
	};
	struct smr_dev *dev = NULL;

	snprintf(path, plen, "%s/zl", smr_test_tmpdir(tag));
	SMR_ASSERT_OK(smr_zloop_create(path, &p));
	SMR_ASSERT_OK(smr_dev_open(path, NULL, &dev));
	CU_ASSERT_PTR_NOT_NULL_FATAL(dev);
	return dev;
}

static void fill(uint8_t *buf, size_t len, uint64_t seed)
{
	for (size_t i = 0; i < len; i += 8) {
		uint64_t v = seed * 0x9e3779b97f4a7c15ULL + i;

		memcpy(buf + i, &v, 8);
	}
}

/* [off, off+len) of @dev reads as @want. */
static bool reads_as(struct smr_dev *dev, const uint8_t *want, size_t len,
		     uint64_t off)
{
	uint8_t *got = malloc(len);
	bool ok;

	CU_ASSERT_PTR_NOT_NULL_FATAL(got);
	ok = smr_dev_read(dev, got, len, off) == 0 &&
	     memcmp(got, want, len) == 0;
	free(got);
	return ok;
}

/* Queued writes: the write pointer moves at queueing, a read right after a
 * write sees it, the zone rules hold at queueing, a reset and a
 * synchronous batch wait for the queue, close writes it all. */
static void test_queue(void)
{
	const uint64_t z0 = NCNV * ZS, z1 = z0 + ZS;
	uint8_t *model = calloc(1, NZ * ZS), *buf = malloc(ZS);
	struct smr_dev_wb_stats st;
	struct smr_dev *dev;
	struct smr_io ios[2];
	char path[4096];

	CU_ASSERT_PTR_NOT_NULL_FATAL(model);
	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	dev = mkdev("wb-queue", 0, 0, path, sizeof(path));
	/* Off by default on a buffered backend, whose writes go to the page
	 * cache and do not wait. */
	smr_dev_wb_stats(dev, &st);
	CU_ASSERT_EQUAL(st.queued, 0);
	CU_ASSERT(smr_dev_write_quick(dev, ZS));
	SMR_ASSERT_OK(smr_dev_set_write_behind(dev, 256 * 1024));
	/* Nothing queued: any write goes in at once, even past the cap. */
	CU_ASSERT(smr_dev_write_quick(dev, BLK));
	CU_ASSERT(smr_dev_write_quick(dev, ZS));

	for (unsigned int i = 0; i < 48; i++) {
		uint64_t z = i % 2 ? z1 : z0;
		uint64_t off = z + (i / 2) * 4 * BLK;

		fill(model + off, 4 * BLK, i + 1);
		/* The caller's buffer is reused at once: the queue has its
		 * own copy. */
		memcpy(buf, model + off, 4 * BLK);
		SMR_ASSERT_OK(smr_dev_write(dev, buf, 4 * BLK, off));
		memset(buf, 0xee, 4 * BLK);
		CU_ASSERT_EQUAL(smr_dev_zone_wp(dev, smr_dev_zone_no(dev, z)),
				off + 4 * BLK);
		CU_ASSERT(reads_as(dev, model + off, 4 * BLK, off));
	}
	/* Not at the write pointer: refused when queued, nothing queued. */
	SMR_ASSERT_RC(smr_dev_write(dev, buf, BLK, z0), -EIO);
	/* A read across the write pointer: the queued part, then zeros. */
	CU_ASSERT(reads_as(dev, model + z0, ZS, z0));

	/* A batch writes behind the queued writes of its zone. */
	fill(model + z0 + 24 * 4 * BLK, 2 * BLK, 99);
	SMR_ASSERT_OK(smr_dev_write(dev, model + z0 + 24 * 4 * BLK, BLK,
				    z0 + 24 * 4 * BLK));
	ios[0] = (struct smr_io){ .op = SMR_IO_WRITE,
				  .buf = model + z0 + 24 * 4 * BLK + BLK,
				  .len = BLK, .off = z0 + 24 * 4 * BLK + BLK };
	ios[1] = (struct smr_io){ .op = SMR_IO_READ, .buf = buf, .len = BLK,
				  .off = z1 };
	SMR_ASSERT_OK(smr_dev_submit(dev, ios, 2));
	CU_ASSERT(memcmp(buf, model + z1, BLK) == 0);

	/* A reset waits for the zone's queue; the zone reads as zeros. */
	fill(buf, ZS / 2, 7);
	SMR_ASSERT_OK(smr_dev_write(dev, buf, ZS / 2, z1 + 24 * 4 * BLK));
	SMR_ASSERT_OK(smr_dev_zone_reset(dev, smr_dev_zone_no(dev, z1)));
	CU_ASSERT_EQUAL(smr_dev_zone_wp(dev, smr_dev_zone_no(dev, z1)), z1);
	memset(model + z1, 0, ZS);
	CU_ASSERT(reads_as(dev, model + z1, ZS, z1));

	/* Fill a zone to its end through the queue: full at once. */
	fill(model + z1, ZS, 11);
	for (unsigned int i = 0; i < 4; i++)
		SMR_ASSERT_OK(smr_dev_write(dev, model + z1 + i * ZS / 4,
					    ZS / 4, z1 + i * ZS / 4));
	CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, smr_dev_zone_no(dev, z1)),
			SMR_ZONE_COND_FULL);

	smr_dev_wb_stats(dev, &st);
	CU_ASSERT_EQUAL(st.queued, 48 + 1 + 1 + 4);
	CU_ASSERT(st.issued >= 1 && st.issued <= st.queued);
	/* The cap, or one write larger than it queued alone. */
	CU_ASSERT(st.peak_bytes <= ZS / 2);
	CU_ASSERT_EQUAL(st.failed, 0);
	SMR_ASSERT_OK(smr_dev_flush(dev));
	smr_dev_wb_stats(dev, &st);
	CU_ASSERT_EQUAL(st.bytes, 48 * 4 * BLK + BLK + ZS / 2 + ZS);
	SMR_ASSERT_OK(smr_dev_close(dev));

	/* Everything is on the medium: a new handle without write-behind
	 * finds the same write pointers and bytes. */
	SMR_ASSERT_OK(smr_dev_open(path, NULL, &dev));
	CU_ASSERT_EQUAL(smr_dev_zone_wp(dev, smr_dev_zone_no(dev, z0)),
			z0 + 24 * 4 * BLK + 2 * BLK);
	CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, smr_dev_zone_no(dev, z1)),
			SMR_ZONE_COND_FULL);
	CU_ASSERT(reads_as(dev, model, NZ * ZS, 0));
	SMR_ASSERT_OK(smr_dev_close(dev));
	free(model);
	free(buf);
}

/* With max open and max active zones, filling zones one after the other
 * through the queue never breaks a limit, as without write-behind. */
static void test_limits(void)
{
	uint8_t *model = calloc(1, NZ * ZS);
	struct smr_dev *dev;
	char path[4096];

	CU_ASSERT_PTR_NOT_NULL_FATAL(model);
	dev = mkdev("wb-limits", 2, 2, path, sizeof(path));
	SMR_ASSERT_OK(smr_dev_set_write_behind(dev, 4 * ZS));
	fill(model, NZ * ZS, 5);
	/* Two zones written in turn, the next two opened as each fills. */
	for (unsigned int step = 0; step < 16; step++) {
		for (unsigned int k = 0; k < 2; k++) {
			uint64_t z = (NCNV + (step / 8) * 2 + k) * ZS;
			uint64_t off = z + (step % 8) * (ZS / 8);

			SMR_ASSERT_OK(smr_dev_write(dev, model + off, ZS / 8,
						    off));
			CU_ASSERT(smr_dev_nr_open(dev) <= 2);
			CU_ASSERT(smr_dev_nr_active(dev) <= 2);
		}
	}
	/* A third zone beyond max active while two are open: refused when
	 * queued, as a synchronous write would be. */
	SMR_ASSERT_OK(smr_dev_write(dev, model + 5 * ZS, BLK, 5 * ZS));
	SMR_ASSERT_OK(smr_dev_write(dev, model + 6 * ZS, BLK, 6 * ZS));
	SMR_ASSERT_RC(smr_dev_write(dev, model + 7 * ZS, BLK, 7 * ZS), -EIO);
	SMR_ASSERT_OK(smr_dev_flush(dev));
	memset(model + 5 * ZS + BLK, 0, ZS - BLK);
	memset(model + 6 * ZS + BLK, 0, 2 * ZS - BLK);
	memset(model, 0, ZS);
	CU_ASSERT(reads_as(dev, model, NZ * ZS, 0));
	SMR_ASSERT_OK(smr_dev_close(dev));
	free(model);
}

/* A queued write that fails: the call that queued it returned 0; every
 * flush after it returns the error, later writes are refused, the zone's
 * write pointer is the medium's again. The fault device has no io_target,
 * so its queue is written by the handle's thread. */
static void test_error_at_flush(void)
{
	struct smr_fault_rule rule = { .what = SMR_FAULT_FAIL_WRITES,
				       .after = 3 };
	const uint64_t z0 = NCNV * ZS;
	uint8_t *buf = malloc(ZS);
	struct smr_dev_wb_stats st;
	struct smr_dev *lower, *dev;
	struct smr_fault *f;
	char path[4096];
	int rc;

	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	fill(buf, ZS, 3);
	lower = mkdev("wb-error", 0, 0, path, sizeof(path));
	SMR_ASSERT_OK(smr_fault_open(lower, &f, &dev));
	SMR_ASSERT_OK(smr_dev_set_write_behind(dev, ZS));
	/* Written before the rule: fine. */
	SMR_ASSERT_OK(smr_dev_write(dev, buf, 2 * BLK, z0));
	SMR_ASSERT_OK(smr_dev_flush(dev));
	SMR_ASSERT_OK(smr_fault_arm(f, &rule));
	/* The fourth write fails on the medium, later ones were queued
	 * behind it; each call itself succeeds or sees the error already. */
	for (unsigned int i = 0; i < 8; i++) {
		rc = smr_dev_write(dev, buf + (2 + i) * BLK, BLK,
				   z0 + (2 + i) * BLK);
		CU_ASSERT(rc == 0 || rc == -EIO);
	}
	SMR_ASSERT_RC(smr_dev_flush(dev), -EIO);
	SMR_ASSERT_RC(smr_dev_flush(dev), -EIO);
	smr_dev_wb_stats(dev, &st);
	CU_ASSERT(st.failed >= 1);
	/* The zone holds what reached the medium: the first writes only. */
	CU_ASSERT_EQUAL(smr_dev_zone_wp(dev, smr_dev_zone_no(dev, z0)),
			z0 + 5 * BLK);
	SMR_ASSERT_RC(smr_dev_write(dev, buf, BLK, z0 + 5 * BLK), -EIO);
	CU_ASSERT(reads_as(dev, buf, 5 * BLK, z0));
	SMR_ASSERT_RC(smr_dev_close(dev), -EIO);
	smr_fault_free(f);
	SMR_ASSERT_OK(smr_dev_close(lower));
	free(buf);
}

static uint64_t ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)(t.tv_sec - t0->tv_sec) * 1000 +
	       (uint64_t)((t.tv_nsec - t0->tv_nsec) / 1000000);
}

/* Small writes are gathered: a zone's queue goes out by itself once its
 * oldest write is old enough, once it holds the gathering bytes, and at
 * once when something waits for it (a read of the range, a zone reset, a
 * flush). Past the first part the gathering time is far longer than any
 * wait the test allows, so a wait that did not hurry the queue fails. */
static void test_gather(void)
{
	const uint64_t z0 = NCNV * ZS, z1 = z0 + ZS;
	const unsigned int run = SMR_DEV_WB_GATHER_BYTES / BLK;
	const uint64_t slow_ms = 20000;
	const struct timespec ms20 = { .tv_nsec = 20000000 };
	uint8_t *buf = malloc(ZS);
	struct smr_dev_wb_stats st;
	struct timespec t0;
	struct smr_dev *dev;
	char path[4096];
	uint64_t n = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	fill(buf, ZS, 23);
	dev = mkdev("wb-gather", 0, 0, path, sizeof(path));
	SMR_ASSERT_OK(smr_dev_set_write_behind(dev, 4 * ZS));

	clock_gettime(CLOCK_MONOTONIC, &t0);
	SMR_ASSERT_OK(smr_dev_write(dev, buf, BLK, z0));
	n++;
	do {
		nanosleep(&ms20, NULL);
		smr_dev_wb_stats(dev, &st);
	} while (st.bytes < BLK && ms_since(&t0) < slow_ms);
	CU_ASSERT_EQUAL(st.issued, 1);
	CU_ASSERT_EQUAL(st.bytes, BLK);
	CU_ASSERT(ms_since(&t0) >= SMR_DEV_WB_GATHER_MS);

	smr_dev_wb_gather(dev, SMR_DEV_WB_GATHER_BYTES, 2 * slow_ms);
	for (; n < run; n++)
		SMR_ASSERT_OK(smr_dev_write(dev, buf + n * BLK, BLK,
					    z0 + n * BLK));
	nanosleep(&ms20, NULL);
	smr_dev_wb_stats(dev, &st);
	CU_ASSERT_EQUAL(st.issued, 1);
	SMR_ASSERT_OK(smr_dev_write(dev, buf + n * BLK, BLK, z0 + n * BLK));
	n++;
	smr_dev_wb_stats(dev, &st);
	CU_ASSERT_EQUAL(st.issued, 2);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	SMR_ASSERT_OK(smr_dev_write(dev, buf + n * BLK, BLK, z0 + n * BLK));
	n++;
	CU_ASSERT(reads_as(dev, buf, n * BLK, z0));
	SMR_ASSERT_OK(smr_dev_write(dev, buf, BLK, z1));
	SMR_ASSERT_OK(smr_dev_zone_reset(dev, smr_dev_zone_no(dev, z1)));
	SMR_ASSERT_OK(smr_dev_write(dev, buf + n * BLK, BLK, z0 + n * BLK));
	n++;
	SMR_ASSERT_OK(smr_dev_flush(dev));
	CU_ASSERT(ms_since(&t0) < slow_ms / 2);
	smr_dev_wb_stats(dev, &st);
	CU_ASSERT_EQUAL(st.queued, n + 1);
	CU_ASSERT_EQUAL(st.bytes, (n + 1) * BLK);
	SMR_ASSERT_OK(smr_dev_close(dev));

	SMR_ASSERT_OK(smr_dev_open(path, NULL, &dev));
	CU_ASSERT_EQUAL(smr_dev_zone_wp(dev, smr_dev_zone_no(dev, z0)),
			z0 + n * BLK);
	CU_ASSERT_EQUAL(smr_dev_zone_wp(dev, smr_dev_zone_no(dev, z1)), z1);
	CU_ASSERT(reads_as(dev, buf, n * BLK, z0));
	SMR_ASSERT_OK(smr_dev_close(dev));
	free(buf);
}

/* Several threads, each filling its own zone through a small cap. */
struct twork {
	struct smr_dev *dev;
	uint64_t zone;
	uint8_t *model;
	int rc;
};

static void *twriter(void *arg)
{
	struct twork *w = arg;

	for (uint64_t off = 0; off < ZS && !w->rc; off += 8 * BLK)
		w->rc = smr_dev_write(w->dev, w->model + w->zone + off,
				      8 * BLK, w->zone + off);
	return NULL;
}

static void test_threads(void)
{
	uint8_t *model = calloc(1, NZ * ZS);
	struct twork w[4];
	pthread_t t[4];
	struct smr_dev_wb_stats st;
	struct smr_dev *dev;
	char path[4096];

	CU_ASSERT_PTR_NOT_NULL_FATAL(model);
	fill(model + NCNV * ZS, 4 * ZS, 17);
	dev = mkdev("wb-threads", 0, 0, path, sizeof(path));
	SMR_ASSERT_OK(smr_dev_set_write_behind(dev, 64 * 1024));
	for (unsigned int i = 0; i < 4; i++) {
		w[i] = (struct twork){ .dev = dev, .zone = (NCNV + i) * ZS,
				       .model = model };
		CU_ASSERT_FATAL(pthread_create(&t[i], NULL, twriter, &w[i]) ==
				0);
	}
	for (unsigned int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		SMR_ASSERT_OK(w[i].rc);
	}
	smr_dev_wb_stats(dev, &st);
	CU_ASSERT(st.peak_bytes <= 64 * 1024);
	CU_ASSERT_EQUAL(st.queued, 4 * ZS / (8 * BLK));
	/* Turning it off waits for the queue. */
	SMR_ASSERT_OK(smr_dev_set_write_behind(dev, 0));
	smr_dev_wb_stats(dev, &st);
	CU_ASSERT_EQUAL(st.queued, 0);
	CU_ASSERT(reads_as(dev, model, NZ * ZS, 0));
	SMR_ASSERT_OK(smr_dev_close(dev));
	free(model);
}

static const struct smr_test wb_tests[] = {
	{ "queue", test_queue },
	{ "limits", test_limits },
	{ "error_at_flush", test_error_at_flush },
	{ "threads", test_threads },
	{ "gather", test_gather },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	static const struct smr_suite suites[] = {
		{ "dev_wb", wb_tests },
		{ NULL, NULL },
	};

	smr_log_set_level((enum smr_log_level)(SMR_LOG_ERR - 1));
	return smr_test_main(argc, argv, suites);
}
