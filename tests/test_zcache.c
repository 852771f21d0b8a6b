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

/* ------------------------------------------------------------------------
 * Random walk of the state machine, checked against the rules and the
 * invariants after every step.
 * ------------------------------------------------------------------------ */

struct zc_copy {
	uint64_t zs[16];
	uint32_t lru[16];
	uint32_t lru_len, nr_open, nr_active;
};

static void zc_save(const struct smr_zcache *zc, struct zc_copy *c)
{
	memset(c, 0, sizeof(*c));
	memcpy(c->zs, zc->zs, zc->nr_zones * sizeof(c->zs[0]));
	if (zc->lru)
		memcpy(c->lru, zc->lru, zc->lru_len * sizeof(c->lru[0]));
	c->lru_len = zc->lru_len;
	c->nr_open = zc->nr_open;
	c->nr_active = zc->nr_active;
}

static bool zc_same(const struct smr_zcache *zc, const struct zc_copy *c)
{
	struct zc_copy now;

	zc_save(zc, &now);
	return !memcmp(&now, c, sizeof(now));
}

/* The invariants of a cache at rest; returns a reason or NULL. */
static const char *zc_invariants(const struct smr_zcache *zc)
{
	uint32_t open = 0, active = 0, imp = 0;

	for (uint32_t z = 0; z < zc->nr_zones; z++) {
		uint64_t w = zc->zs[z];
		uint32_t wpb = (uint32_t)(w & SMR_ZC_WP_MASK);
		uint32_t capb = (uint32_t)(smr_zc_region_of(zc, z)->zone_cap >>
					   zc->block_shift);
		uint8_t c = smr_zc_word_cond(w);

		if (w & SMR_ZC_BUSY)
			return "busy at rest";
		if (c == SMR_ZONE_COND_FULL && wpb != capb)
			return "full but wp below capacity";
		if (c == SMR_ZONE_COND_EMPTY && wpb)
			return "empty but wp moved";
		if (c != SMR_ZONE_COND_FULL && wpb >= capb)
			return "wp at capacity but not full";
		if (c == SMR_ZONE_COND_CLOSED && !wpb)
			return "closed with nothing written";
		if (c == SMR_ZONE_COND_IMP_OPEN && !wpb)
			return "implicitly open with nothing written";
		if (c == SMR_ZONE_COND_IMP_OPEN)
			imp++;
		if (c == SMR_ZONE_COND_IMP_OPEN || c == SMR_ZONE_COND_EXP_OPEN)
			open++;
		if (c == SMR_ZONE_COND_IMP_OPEN ||
		    c == SMR_ZONE_COND_EXP_OPEN || c == SMR_ZONE_COND_CLOSED)
			active++;
	}
	if (open != zc->nr_open || active != zc->nr_active)
		return "counters differ from the zones";
	if (zc->max_open && open > zc->max_open)
		return "more open zones than max open";
	if (zc->max_active && active > zc->max_active)
		return "more active zones than max active";
	if (zc->max_open) {
		if (zc->lru_len != imp)
			return "LRU does not hold every implicitly open zone";
		for (uint32_t i = 0; i < zc->lru_len; i++) {
			if (smr_zc_word_cond(zc->zs[zc->lru[i]]) !=
			    SMR_ZONE_COND_IMP_OPEN)
				return "LRU holds a zone not implicitly open";
			for (uint32_t j = 0; j < i; j++)
				if (zc->lru[j] == zc->lru[i])
					return "LRU holds a zone twice";
		}
	}
	return NULL;
}

static void random_walk(uint32_t max_open, uint32_t max_active, uint64_t seed)
{
	const uint32_t nz = 12;
	struct smr_zcache *zc = small(nz, max_open, max_active);
	unsigned int ok_writes = 0, refused = 0, undone = 0;

	for (int step = 0; step < 20000; step++) {
		uint32_t z = (uint32_t)(smr_test_rand(&seed) % nz);
		unsigned int what = (unsigned int)(smr_test_rand(&seed) % 10);
		uint64_t w = zc->zs[z];
		uint8_t cond = smr_zc_word_cond(w);
		uint64_t wp = smr_zc_wp(zc, z), start = smr_zc_start(zc, z);
		uint64_t end = start + SMR_MIB;
		struct zc_copy before;
		struct smr_zc_undo u;
		const char *why;
		int rc;

		zc_save(zc, &before);
		if (what < 6) {
			/* A write: mostly at the write pointer, sometimes
			 * elsewhere, sometimes across the capacity. */
			uint64_t len = 4096 * (1 + smr_test_rand(&seed) % 64);
			uint64_t off = wp;
			bool fail_io = smr_test_rand(&seed) % 8 == 0;

			if (what == 5)
				off = start + 4096 * (smr_test_rand(&seed) % 256);
			if (off + len > end && smr_test_rand(&seed) % 2)
				len = end - off;
			rc = smr_zc_write_prep(zc, z, off, len, true, &u);
			if (cond == SMR_ZONE_COND_FULL || off != wp ||
			    off + len > end) {
				CU_ASSERT_EQUAL(rc, -EIO);
			}
			if (rc) {
				CU_ASSERT_EQUAL(rc, -EIO);
				CU_ASSERT(zc_same(zc, &before));
				refused++;
			} else {
				smr_zc_write_done(zc, z, len, !fail_io, &u);
				if (fail_io) {
					CU_ASSERT(zc_same(zc, &before));
					undone++;
				} else {
					CU_ASSERT_EQUAL(smr_zc_wp(zc, z),
							wp + len);
					CU_ASSERT_EQUAL(
						smr_zc_word_cond(zc->zs[z]),
						wp + len == end ?
							SMR_ZONE_COND_FULL :
						cond == SMR_ZONE_COND_EXP_OPEN ?
							SMR_ZONE_COND_EXP_OPEN :
							SMR_ZONE_COND_IMP_OPEN);
					ok_writes++;
				}
			}
		} else {
			static const enum smr_zc_op ops[] = {
				SMR_ZC_OP_OPEN, SMR_ZC_OP_CLOSE,
				SMR_ZC_OP_FINISH, SMR_ZC_OP_RESET,
			};
			enum smr_zc_op op = ops[what - 6];
			bool fail_io = smr_test_rand(&seed) % 8 == 0;

			rc = smr_zc_op_prep(zc, op, z, &u);
			if (op == SMR_ZC_OP_CLOSE &&
			    (cond == SMR_ZONE_COND_EMPTY ||
			     cond == SMR_ZONE_COND_FULL)) {
				CU_ASSERT_EQUAL(rc, -EIO);
			}
			if (op == SMR_ZC_OP_OPEN && cond == SMR_ZONE_COND_FULL) {
				CU_ASSERT_EQUAL(rc, -EIO);
			}
			if (rc == 0) {
				uint8_t now;

				smr_zc_op_done(zc, op, z, !fail_io, &u);
				now = smr_zc_word_cond(zc->zs[z]);
				if (fail_io) {
					CU_ASSERT(zc_same(zc, &before));
				} else if (op == SMR_ZC_OP_RESET) {
					CU_ASSERT_EQUAL(smr_zc_wp(zc, z), start);
					CU_ASSERT_EQUAL(now, SMR_ZONE_COND_EMPTY);
				} else if (op == SMR_ZC_OP_FINISH) {
					CU_ASSERT_EQUAL(now, SMR_ZONE_COND_FULL);
				} else if (op == SMR_ZC_OP_OPEN) {
					CU_ASSERT_EQUAL(now,
							SMR_ZONE_COND_EXP_OPEN);
				} else {
					CU_ASSERT(now == SMR_ZONE_COND_CLOSED ||
						  now == SMR_ZONE_COND_EMPTY);
				}
			} else {
				CU_ASSERT(zc_same(zc, &before));
			}
		}
		why = zc_invariants(zc);
		if (why) {
			fprintf(stderr, "step %d: %s\n", step, why);
			CU_FAIL("zone cache invariant broken");
			break;
		}
	}
	/* The walk must have exercised all three outcomes. */
	CU_ASSERT(ok_writes > 1000);
	CU_ASSERT(refused > 1000);
	CU_ASSERT(undone > 100);
	smr_zc_free(zc);
}

static void test_random_walk(void)
{
	random_walk(0, 0, 1);
	random_walk(3, 0, 2);
	random_walk(0, 4, 3);
	random_walk(2, 5, 4);
	random_walk(4, 4, 5);
}

static const struct smr_test zcache_tests[] = {
	{ "smr_26tb", test_smr_26tb },
	{ "bad_report", test_bad_report },
	{ "regions", test_regions },
	{ "state_machine", test_state_machine },
	{ "random_walk", test_random_walk },
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
