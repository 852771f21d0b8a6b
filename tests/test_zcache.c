/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_zcache.c - the zone cache on its own: a 26 TB host-managed SMR
 * geometry (95,836 zones of 256 MiB, 1% conventional) reported by a
 * synthetic backend, checked zone by zone and for its memory; mixed regions;
 * the state machine without a medium.
 */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "dev/dev.h"
#include "dev/dev_priv.h"
#include "dev/zcache.h"

#define BIG_NR 95836U
#define BIG_CNV 958U
#define BIG_ZS (256 * SMR_MIB)

/* The state the synthetic drive reports for zone @zno. */
static void big_zone(uint32_t zno, struct smr_zone *z)
{
	memset(z, 0, sizeof(*z));
	z->no = zno;
	z->start = (uint64_t)zno * BIG_ZS;
	z->len = BIG_ZS;
	z->cap = BIG_ZS;
	z->wp = z->start;
	if (zno < BIG_CNV) {
		z->type = SMR_ZONE_TYPE_CNV;
		z->cond = SMR_ZONE_COND_NOT_WP;
		return;
	}
	z->type = SMR_ZONE_TYPE_SEQ;
	if (zno % 7 == 0) {
		z->cond = SMR_ZONE_COND_FULL;
		z->wp = z->start + z->cap;
	} else if (zno % 11 == 0) {
		z->cond = SMR_ZONE_COND_CLOSED;
		z->wp = z->start + (uint64_t)(zno % 1000 + 1) * 4096;
	} else if (zno % 1009 == 0) {
		z->cond = SMR_ZONE_COND_IMP_OPEN;
		z->wp = z->start + 8192;
	} else {
		z->cond = SMR_ZONE_COND_EMPTY;
	}
}

static int big_report(struct smr_dev *dev, uint32_t first, uint32_t nr,
		      struct smr_zone *zones)
{
	(void)dev;
	for (uint32_t i = 0; i < nr; i++)
		big_zone(first + i, &zones[i]);
	return 0;
}

static int no_io(struct smr_dev *dev, void *buf, size_t len, uint64_t off)
{
	(void)dev, (void)buf, (void)len, (void)off;
	return -EIO;
}

static const struct smr_dev_backend_ops big_ops = {
	.name = "synthetic",
	.read = no_io,
	.report_zones = big_report,
};

static void test_smr_26tb(void)
{
	struct smr_dev_info info = {
		.kind = SMR_DEV_KIND_ZBD,
		.block_size = 4096,
		.capacity = (uint64_t)BIG_NR * BIG_ZS,
		.zoned = true,
		.rotational = true,
		.nr_zones = BIG_NR,
		.max_open = 128,
	};
	uint32_t exp_open = 0, exp_active = 0;
	struct smr_dev *dev = NULL;
	size_t bytes;

	SMR_ASSERT_OK(smr_dev_create(&big_ops, NULL, &info, "synthetic", &dev));
	CU_ASSERT_PTR_NOT_NULL_FATAL(dev);
	CU_ASSERT_EQUAL(smr_dev_info(dev)->nr_zones, BIG_NR);
	CU_ASSERT_EQUAL(smr_dev_info(dev)->nr_cnv_zones, BIG_CNV);
	CU_ASSERT_STRING_EQUAL(smr_dev_info(dev)->backend, "synthetic");

	bytes = smr_dev_zone_cache_bytes(dev);
	fprintf(stderr, "\n  zone cache: %u zones, %zu bytes (%.2f B/zone)\n",
		BIG_NR, bytes, (double)bytes / BIG_NR);
	CU_ASSERT(bytes <= 16 * (size_t)BIG_NR + 4096);

	/* Every zone answers what the drive reported. */
	for (uint32_t zno = 0; zno < BIG_NR; zno++) {
		struct smr_zone want, got;

		big_zone(zno, &want);
		if (smr_dev_zone(dev, zno, &got) || got.start != want.start ||
		    got.len != want.len || got.cap != want.cap ||
		    got.wp != want.wp || got.type != want.type ||
		    got.cond != want.cond || got.no != zno ||
		    smr_dev_zone_no(dev, want.start) != zno ||
		    smr_dev_zone_no(dev, want.start + want.len - 1) != zno ||
		    smr_dev_zone_start(dev, zno) != want.start ||
		    smr_dev_zone_len(dev, zno) != want.len ||
		    smr_dev_zone_cap(dev, zno) != want.cap ||
		    smr_dev_zone_wp(dev, zno) != want.wp ||
		    smr_dev_zone_type(dev, zno) != want.type ||
		    smr_dev_zone_cond(dev, zno) != want.cond) {
			fprintf(stderr, "zone %u differs\n", zno);
			CU_FAIL("zone differs from the report");
			break;
		}
		if (smr_zone_is_open(&want))
			exp_open++;
		if (smr_zone_is_active(&want))
			exp_active++;
	}
	CU_ASSERT_EQUAL(smr_dev_nr_open(dev), exp_open);
	CU_ASSERT_EQUAL(smr_dev_nr_active(dev), exp_active);
	CU_ASSERT_EQUAL(smr_dev_zone_no(dev, info.capacity), UINT32_MAX);
	CU_ASSERT_EQUAL(smr_dev_zone_no(dev, UINT64_MAX), UINT32_MAX);
	CU_ASSERT_EQUAL(smr_dev_zone_wp(dev, BIG_NR), UINT64_MAX);
	SMR_ASSERT_OK(smr_dev_close(dev));
}

static int bad_report(struct smr_dev *dev, uint32_t first, uint32_t nr,
		      struct smr_zone *zones)
{
	big_report(dev, first, nr, zones);
	for (uint32_t i = 0; i < nr; i++)
		if (first + i == 5000) {
			zones[i].cond = SMR_ZONE_COND_CLOSED;
			zones[i].wp = zones[i].start + zones[i].cap + 4096;
		}
	return 0;
}

static void test_bad_report(void)
{
	static const struct smr_dev_backend_ops bad_ops = {
		.name = "bad",
		.report_zones = bad_report,
	};
	struct smr_dev_info info = {
		.block_size = 4096,
		.capacity = (uint64_t)BIG_NR * BIG_ZS,
		.zoned = true,
		.nr_zones = BIG_NR,
	};
	struct smr_dev *dev = NULL;

	/* A write pointer beyond its zone's capacity. */
	SMR_ASSERT_RC(smr_dev_create(&bad_ops, NULL, &info, "bad", &dev),
		      -EINVAL);
	CU_ASSERT_PTR_NULL(dev);
	/* A capacity that the zones do not add up to. */
	info.capacity -= BIG_ZS;
	SMR_ASSERT_RC(smr_dev_create(&big_ops, NULL, &info, "short", &dev),
		      -EINVAL);
	CU_ASSERT_PTR_NULL(dev);
}

/* Regions of different zone sizes, one not a power of two. */
static void test_regions(void)
{
	static const struct {
		uint64_t len, cap;
		uint32_t n;
		uint8_t type;
	} runs[] = {
		{ 1 * SMR_MIB, 1 * SMR_MIB, 3, SMR_ZONE_TYPE_CNV },
		{ 2 * SMR_MIB, 1 * SMR_MIB, 4, SMR_ZONE_TYPE_SEQ },
		{ 3 * SMR_MIB, 3 * SMR_MIB, 5, SMR_ZONE_TYPE_SEQ },
		{ 1 * SMR_MIB, 512 * 1024, 2, SMR_ZONE_TYPE_SEQ_PREF },
	};
	struct smr_zcache *zc;
	struct smr_zone z = { 0 }, got;
	uint32_t zno = 0;

	SMR_ASSERT_OK(smr_zc_create(14, 4096, 0, 0, &zc));
	for (size_t r = 0; r < SMR_ARRAY_SIZE(runs); r++)
		for (uint32_t i = 0; i < runs[r].n; i++) {
			z.no = zno++;
			z.len = runs[r].len;
			z.cap = runs[r].cap;
			z.type = runs[r].type;
			z.cond = z.type == SMR_ZONE_TYPE_CNV ?
					 SMR_ZONE_COND_NOT_WP :
					 SMR_ZONE_COND_EMPTY;
			z.wp = z.start;
			SMR_ASSERT_OK(smr_zc_add(zc, &z));
			z.start += z.len;
		}
	/* One too many. */
	SMR_ASSERT_RC(smr_zc_add(zc, &z), -EINVAL);
	SMR_ASSERT_OK(smr_zc_finish_build(zc));
	CU_ASSERT_EQUAL(zc->nr_regions, 4);
	CU_ASSERT_EQUAL(zc->nr_cnv, 3);

	zno = 0;
	z.start = 0;
	for (size_t r = 0; r < SMR_ARRAY_SIZE(runs); r++)
		for (uint32_t i = 0; i < runs[r].n; i++, zno++) {
			smr_zc_get(zc, zno, &got);
			CU_ASSERT_EQUAL(got.start, z.start);
			CU_ASSERT_EQUAL(got.len, runs[r].len);
			CU_ASSERT_EQUAL(got.cap, runs[r].cap);
			CU_ASSERT_EQUAL(got.type, runs[r].type);
			CU_ASSERT_EQUAL(smr_zc_zone_no(zc, z.start), zno);
			CU_ASSERT_EQUAL(smr_zc_zone_no(zc, z.start + 4096), zno);
			CU_ASSERT_EQUAL(
				smr_zc_zone_no(zc, z.start + runs[r].len - 1),
				zno);
			z.start += runs[r].len;
		}
	CU_ASSERT_EQUAL(smr_zc_zone_no(zc, z.start), UINT32_MAX);
	smr_zc_free(zc);

	/* Zones that do not follow each other are refused. */
	SMR_ASSERT_OK(smr_zc_create(2, 4096, 0, 0, &zc));
	z = (struct smr_zone){ .start = 0, .len = SMR_MIB, .cap = SMR_MIB,
			       .type = SMR_ZONE_TYPE_SEQ,
			       .cond = SMR_ZONE_COND_EMPTY };
	SMR_ASSERT_OK(smr_zc_add(zc, &z));
	z.start = 2 * SMR_MIB;
	SMR_ASSERT_RC(smr_zc_add(zc, &z), -EINVAL);
	z.start = SMR_MIB;
	z.cap = 2 * SMR_MIB; /* capacity beyond size */
	SMR_ASSERT_RC(smr_zc_add(zc, &z), -EINVAL);
	z.cap = SMR_MIB;
	z.type = 9;
	SMR_ASSERT_RC(smr_zc_add(zc, &z), -EINVAL);
	SMR_ASSERT_RC(smr_zc_finish_build(zc), -EINVAL);
	smr_zc_free(zc);
}

/* A cache of @n empty sequential 1 MiB zones. */
static struct smr_zcache *small(uint32_t n, uint32_t max_open,
				uint32_t max_active)
{
	struct smr_zcache *zc = NULL;
	struct smr_zone z = { .len = SMR_MIB, .cap = SMR_MIB,
			      .type = SMR_ZONE_TYPE_SEQ,
			      .cond = SMR_ZONE_COND_EMPTY };

	SMR_ASSERT_OK(smr_zc_create(n, 4096, max_open, max_active, &zc));
	for (uint32_t i = 0; i < n; i++) {
		z.no = i;
		z.start = i * SMR_MIB;
		z.wp = z.start;
		SMR_ASSERT_OK(smr_zc_add(zc, &z));
	}
	SMR_ASSERT_OK(smr_zc_finish_build(zc));
	return zc;
}

static int write_ok(struct smr_zcache *zc, uint32_t zno, uint64_t len)
{
	struct smr_zc_undo u;
	int rc = smr_zc_write_prep(zc, zno, smr_zc_wp(zc, zno), len, true, &u);

	if (rc == 0)
		smr_zc_write_done(zc, zno, len, true, &u);
	return rc;
}

static void test_state_machine(void)
{
	struct smr_zcache *zc = small(8, 2, 3);
	struct smr_zc_undo u, u2;

	/* A failed write is undone, including the zone it closed. */
	SMR_ASSERT_OK(write_ok(zc, 0, 4096));
	SMR_ASSERT_OK(write_ok(zc, 1, 4096));
	SMR_ASSERT_OK(smr_zc_write_prep(zc, 2, 2 * SMR_MIB, 4096, true, &u));
	CU_ASSERT_EQUAL(u.victim, 0);
	CU_ASSERT_EQUAL(smr_zc_word_cond(smr_zc_word(zc, 0)),
			SMR_ZONE_COND_CLOSED);
	/* While busy, another writer must wait. */
	SMR_ASSERT_RC(smr_zc_write_prep(zc, 2, 2 * SMR_MIB, 4096, true, &u2),
		      SMR_ZC_BUSY_RETRY);
	smr_zc_write_done(zc, 2, 4096, false, &u);
	CU_ASSERT_EQUAL(smr_zc_word_cond(smr_zc_word(zc, 2)),
			SMR_ZONE_COND_EMPTY);
	CU_ASSERT_EQUAL(smr_zc_wp(zc, 2), 2 * SMR_MIB);
	CU_ASSERT_EQUAL(smr_zc_word_cond(smr_zc_word(zc, 0)),
			SMR_ZONE_COND_IMP_OPEN);
	CU_ASSERT_EQUAL(zc->nr_open, 2);
	CU_ASSERT_EQUAL(zc->nr_active, 2);
	/* ... and the LRU order is as before: 0 is still the victim. */
	SMR_ASSERT_OK(write_ok(zc, 2, 4096));
	CU_ASSERT_EQUAL(smr_zc_word_cond(smr_zc_word(zc, 0)),
			SMR_ZONE_COND_CLOSED);
	CU_ASSERT_EQUAL(zc->nr_active, 3);
	/* Active limit 3 reached. */
	SMR_ASSERT_RC(write_ok(zc, 3, 4096), -EIO);
	CU_ASSERT_EQUAL(zc->nr_active, 3);
	/* Filling a zone frees its slots. */
	SMR_ASSERT_OK(write_ok(zc, 1, SMR_MIB - 4096));
	CU_ASSERT_EQUAL(smr_zc_word_cond(smr_zc_word(zc, 1)),
			SMR_ZONE_COND_FULL);
	CU_ASSERT_EQUAL(zc->nr_active, 2);
	CU_ASSERT_EQUAL(zc->nr_open, 1);
	SMR_ASSERT_OK(write_ok(zc, 3, 4096));

	/* A busy zone is never picked as the victim. */
	SMR_ASSERT_OK(smr_zc_write_prep(zc, 2, smr_zc_wp(zc, 2), 4096, true,
					&u));
	SMR_ASSERT_OK(smr_zc_write_prep(zc, 3, smr_zc_wp(zc, 3), 4096, true,
					&u2));
	SMR_ASSERT_OK(smr_zc_op_prep(zc, SMR_ZC_OP_FINISH, 0, &u));
	smr_zc_op_done(zc, SMR_ZC_OP_FINISH, 0, true, &u);
	SMR_ASSERT_RC(write_ok(zc, 4, 4096), SMR_ZC_BUSY_RETRY);
	smr_zc_write_done(zc, 2, 4096, true, &u);
	smr_zc_write_done(zc, 3, 4096, true, &u2);
	SMR_ASSERT_OK(write_ok(zc, 4, 4096));
	CU_ASSERT_EQUAL(smr_zc_word_cond(smr_zc_word(zc, 2)),
			SMR_ZONE_COND_CLOSED);

	/* Resync takes the medium's write pointer. */
	{
		struct smr_zone rep = { .wp = 5 * SMR_MIB + 8192,
					.cond = SMR_ZONE_COND_CLOSED };

		smr_zc_resync(zc, 5, &rep);
		CU_ASSERT_EQUAL(smr_zc_wp(zc, 5), 5 * SMR_MIB + 8192);
		CU_ASSERT_EQUAL(smr_zc_word_cond(smr_zc_word(zc, 5)),
				SMR_ZONE_COND_CLOSED);
	}
	smr_zc_free(zc);
}

static const struct smr_test zcache_tests[] = {
	{ "smr_26tb", test_smr_26tb },
	{ "bad_report", test_bad_report },
	{ "regions", test_regions },
	{ "state_machine", test_state_machine },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	static const struct smr_suite suites[] = {
		{ "zcache", zcache_tests },
		{ NULL, NULL },
	};

	smr_log_set_level((enum smr_log_level)(SMR_LOG_ERR - 1));
	return smr_test_main(argc, argv, suites);
}
