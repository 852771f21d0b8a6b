/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * zcache.c - the zone cache: regions of same-sized zones, one state word a
 * zone, and the zone state machine of a host-managed drive (conditions,
 * implicit open with LRU implicit close, open/active limits).
 */
#include "dev/zcache.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------
 * Small helpers
 * ------------------------------------------------------------------------ */

static bool cond_is_open(uint8_t c)
{
	return c == SMR_ZONE_COND_IMP_OPEN || c == SMR_ZONE_COND_EXP_OPEN;
}

static bool cond_is_active(uint8_t c)
{
	return cond_is_open(c) || c == SMR_ZONE_COND_CLOSED;
}

static uint64_t make_word(uint32_t wp_blocks, uint8_t cond, uint8_t type,
			  bool busy)
{
	return (uint64_t)wp_blocks | (uint64_t)cond << SMR_ZC_COND_SHIFT |
	       (uint64_t)type << SMR_ZC_TYPE_SHIFT | (busy ? SMR_ZC_BUSY : 0);
}

static void store_word(struct smr_zcache *zc, uint32_t zno, uint64_t w)
{
	__atomic_store_n(&zc->zs[zno], w, __ATOMIC_RELEASE);
}

/* The counters are read without the lock (smr_dev_nr_open). */
static void count_add(uint32_t *c, int d)
{
	__atomic_store_n(c, (uint32_t)((int)*c + d), __ATOMIC_RELAXED);
}

static uint32_t cap_blocks(const struct smr_zcache *zc, uint32_t zno)
{
	return (uint32_t)(smr_zc_region_of(zc, zno)->zone_cap >> zc->block_shift);
}

/* ------------------------------------------------------------------------
 * The LRU list of implicitly open zones (only kept when max_open != 0)
 * ------------------------------------------------------------------------ */

static void lru_remove(struct smr_zcache *zc, uint32_t zno)
{
	for (uint32_t i = 0; i < zc->lru_len; i++) {
		if (zc->lru[i] != zno)
			continue;
		memmove(&zc->lru[i], &zc->lru[i + 1],
			(zc->lru_len - i - 1) * sizeof(zc->lru[0]));
		zc->lru_len--;
		return;
	}
}

/* Append at the most recently used end (or the least, if @head). A zone
 * that does not fit (more implicitly open zones than max_open, possible
 * only on unchecked handles) is simply not tracked. */
static void lru_add(struct smr_zcache *zc, uint32_t zno, bool head)
{
	if (!zc->lru || zc->lru_len == zc->lru_cap)
		return;
	if (head) {
		memmove(&zc->lru[1], &zc->lru[0],
			zc->lru_len * sizeof(zc->lru[0]));
		zc->lru[0] = zno;
	} else {
		zc->lru[zc->lru_len] = zno;
	}
	zc->lru_len++;
}

/* Set the condition (and write pointer) of @zno, keeping the counters and
 * the LRU list right. */
static void set_state(struct smr_zcache *zc, uint32_t zno, uint32_t wp_blocks,
		      uint8_t cond, bool busy)
{
	uint64_t w = zc->zs[zno];
	uint8_t old = smr_zc_word_cond(w);

	if (cond_is_open(old))
		count_add(&zc->nr_open, -1);
	if (cond_is_active(old))
		count_add(&zc->nr_active, -1);
	if (old == SMR_ZONE_COND_IMP_OPEN && cond != SMR_ZONE_COND_IMP_OPEN)
		lru_remove(zc, zno);
	if (cond_is_open(cond))
		count_add(&zc->nr_open, 1);
	if (cond_is_active(cond))
		count_add(&zc->nr_active, 1);
	if (cond == SMR_ZONE_COND_IMP_OPEN && old != SMR_ZONE_COND_IMP_OPEN)
		lru_add(zc, zno, false);
	store_word(zc, zno, make_word(wp_blocks, cond, smr_zc_word_type(w),
				      busy));
}

static void set_busy(struct smr_zcache *zc, uint32_t zno, bool busy)
{
	uint64_t w = zc->zs[zno];

	store_word(zc, zno, busy ? w | SMR_ZC_BUSY : w & ~SMR_ZC_BUSY);
}

/* Close an implicitly open zone: closed, or empty if nothing was written. */
static void close_zone(struct smr_zcache *zc, uint32_t zno)
{
	uint64_t w = zc->zs[zno];
	uint32_t wp = (uint32_t)(w & SMR_ZC_WP_MASK);

	set_state(zc, zno, wp, wp ? SMR_ZONE_COND_CLOSED : SMR_ZONE_COND_EMPTY,
		  w & SMR_ZC_BUSY);
}

/*
 * Make room for one more open zone: when max_open is reached, close the
 * least recently used implicitly open zone that is not busy. Returns 0 (room
 * made or not needed; *victim set to the closed zone or UINT32_MAX),
 * SMR_ZC_BUSY_RETRY if every candidate is busy, -EIO if there is none (all
 * open zones are explicitly open).
 */
static int make_open_room(struct smr_zcache *zc, uint32_t *victim)
{
	*victim = UINT32_MAX;
	if (!zc->max_open || zc->nr_open < zc->max_open)
		return 0;
	for (uint32_t i = 0; i < zc->lru_len; i++) {
		uint32_t z = zc->lru[i];

		if (zc->zs[z] & SMR_ZC_BUSY)
			continue;
		close_zone(zc, z);
		*victim = z;
		return 0;
	}
	return zc->lru_len ? SMR_ZC_BUSY_RETRY : -EIO;
}

/* Put back a zone that make_open_room() closed, if nothing touched it. */
static void undo_victim(struct smr_zcache *zc, uint32_t victim)
{
	uint64_t w;
	uint8_t c;

	if (victim == UINT32_MAX)
		return;
	w = zc->zs[victim];
	c = smr_zc_word_cond(w);
	if ((w & SMR_ZC_BUSY) ||
	    (c != SMR_ZONE_COND_CLOSED && c != SMR_ZONE_COND_EMPTY))
		return;
	if (zc->max_open && zc->nr_open >= zc->max_open)
		return;
	if (c == SMR_ZONE_COND_EMPTY && zc->max_active &&
	    zc->nr_active >= zc->max_active)
		return;
	/* Back at the least recently used end, where it was taken from. */
	if (c == SMR_ZONE_COND_EMPTY)
		count_add(&zc->nr_active, 1);
	count_add(&zc->nr_open, 1);
	store_word(zc, victim, make_word((uint32_t)(w & SMR_ZC_WP_MASK),
					 SMR_ZONE_COND_IMP_OPEN,
					 smr_zc_word_type(w), false));
	lru_add(zc, victim, true);
}

/* ------------------------------------------------------------------------
 * Building
 * ------------------------------------------------------------------------ */

int smr_zc_create(uint32_t nr_zones, uint32_t block_size, uint32_t max_open,
		  uint32_t max_active, struct smr_zcache **zcp)
{
	struct smr_zcache *zc;

	*zcp = NULL;
	if (!nr_zones || !SMR_IS_POW2(block_size) || block_size < 512)
		return -EINVAL;
	zc = calloc(1, sizeof(*zc));
	if (!zc)
		return -ENOMEM;
	zc->nr_zones = nr_zones;
	zc->block_shift = (uint32_t)__builtin_ctz(block_size);
	zc->max_open = max_open;
	zc->max_active = max_active;
	zc->zs = calloc(nr_zones, sizeof(zc->zs[0]));
	if (!zc->zs)
		goto out_nomem;
	if (max_open) {
		zc->lru_cap = max_open;
		zc->lru = calloc(zc->lru_cap, sizeof(zc->lru[0]));
		if (!zc->lru)
			goto out_nomem;
	}
	*zcp = zc;
	return 0;

out_nomem:
	smr_zc_free(zc);
	return -ENOMEM;
}

void smr_zc_free(struct smr_zcache *zc)
{
	if (!zc)
		return;
	free(zc->regions);
	free(zc->zs);
	free(zc->lru);
	free(zc);
}

static bool cond_valid_seq(uint8_t c)
{
	switch (c) {
	case SMR_ZONE_COND_EMPTY:
	case SMR_ZONE_COND_IMP_OPEN:
	case SMR_ZONE_COND_EXP_OPEN:
	case SMR_ZONE_COND_CLOSED:
	case SMR_ZONE_COND_FULL:
	case SMR_ZONE_COND_READONLY:
	case SMR_ZONE_COND_OFFLINE:
		return true;
	default:
		return false;
	}
}

int smr_zc_add(struct smr_zcache *zc, const struct smr_zone *z)
{
	uint64_t bmask = (1ULL << zc->block_shift) - 1;
	struct smr_zc_region *r = zc->nr_regions ?
					  &zc->regions[zc->nr_regions - 1] :
					  NULL;
	uint64_t expect = r ? r->start + (uint64_t)r->nr * r->zone_len : 0;
	uint32_t zno = zc->built;
	uint32_t wp_blocks;
	uint8_t cond;

	if (zno >= zc->nr_zones || z->start != expect || !z->len ||
	    !z->cap || z->cap > z->len || (z->len & bmask) || (z->cap & bmask) ||
	    (z->cap >> zc->block_shift) > UINT32_MAX)
		return -EINVAL;
	if (z->type == SMR_ZONE_TYPE_CNV) {
		cond = SMR_ZONE_COND_NOT_WP;
		wp_blocks = 0;
	} else if (z->type == SMR_ZONE_TYPE_SEQ ||
		   z->type == SMR_ZONE_TYPE_SEQ_PREF) {
		cond = z->cond;
		if (!cond_valid_seq(cond))
			return -EINVAL;
		if (cond == SMR_ZONE_COND_FULL) {
			wp_blocks = (uint32_t)(z->cap >> zc->block_shift);
		} else if (cond == SMR_ZONE_COND_EMPTY) {
			wp_blocks = 0;
		} else {
			if (z->wp < z->start || z->wp > z->start + z->cap ||
			    ((z->wp - z->start) & bmask))
				return -EINVAL;
			wp_blocks = (uint32_t)((z->wp - z->start) >>
					       zc->block_shift);
		}
	} else {
		return -EINVAL;
	}

	if (!r || r->zone_len != z->len || r->zone_cap != z->cap) {
		if (zc->nr_regions == zc->regions_cap) {
			uint32_t ncap = zc->regions_cap ? zc->regions_cap * 2 : 4;
			struct smr_zc_region *n =
				realloc(zc->regions, ncap * sizeof(*n));

			if (!n)
				return -ENOMEM;
			zc->regions = n;
			zc->regions_cap = ncap;
		}
		r = &zc->regions[zc->nr_regions++];
		r->start = z->start;
		r->zone_len = z->len;
		r->zone_cap = z->cap;
		r->first = zno;
		r->nr = 0;
		r->shift = SMR_IS_POW2(z->len) ? (uint32_t)__builtin_ctzll(z->len)
					       : 0;
	}
	r->nr++;
	if (z->type == SMR_ZONE_TYPE_CNV)
		zc->nr_cnv++;

	if (cond == SMR_ZONE_COND_IMP_OPEN && zc->lru &&
	    zc->lru_len == zc->lru_cap) {
		/* The medium has more open zones than it says it allows. */
		uint32_t *n = realloc(zc->lru, (zc->lru_cap + 16) *
						       sizeof(zc->lru[0]));

		if (!n)
			return -ENOMEM;
		zc->lru = n;
		zc->lru_cap += 16;
	}
	zc->zs[zno] = make_word(0, SMR_ZONE_COND_EMPTY, z->type, false);
	zc->built++;
	if (cond == SMR_ZONE_COND_NOT_WP)
		zc->zs[zno] = make_word(0, cond, z->type, false);
	else
		set_state(zc, zno, wp_blocks, cond, false);
	return 0;
}

int smr_zc_finish_build(struct smr_zcache *zc)
{
	struct smr_zc_region *n;

	if (zc->built != zc->nr_zones)
		return -EINVAL;
	n = realloc(zc->regions, zc->nr_regions * sizeof(*n));
	if (n) {
		zc->regions = n;
		zc->regions_cap = zc->nr_regions;
	}
	return 0;
}

size_t smr_zc_bytes(const struct smr_zcache *zc)
{
	return sizeof(*zc) + (size_t)zc->regions_cap * sizeof(zc->regions[0]) +
	       (size_t)zc->nr_zones * sizeof(zc->zs[0]) +
	       (size_t)zc->lru_cap * sizeof(zc->lru[0]);
}

/* ------------------------------------------------------------------------
 * Queries
 * ------------------------------------------------------------------------ */

uint32_t smr_zc_zone_no(const struct smr_zcache *zc, uint64_t off)
{
	const struct smr_zc_region *r = zc->regions;
	uint32_t lo = 0, hi = zc->nr_regions;

	/* Last region whose start is <= off. */
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (r[mid].start <= off)
			lo = mid;
		else
			hi = mid;
	}
	r += lo;
	if (off < r->start)
		return UINT32_MAX;
	off -= r->start;
	off = r->shift ? off >> r->shift : off / r->zone_len;
	if (off >= r->nr)
		return UINT32_MAX;
	return r->first + (uint32_t)off;
}

const struct smr_zc_region *smr_zc_region_of(const struct smr_zcache *zc,
					     uint32_t zno)
{
	const struct smr_zc_region *r = zc->regions;
	uint32_t lo = 0, hi = zc->nr_regions;

	assert(zno < zc->nr_zones);
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (r[mid].first <= zno)
			lo = mid;
		else
			hi = mid;
	}
	return &r[lo];
}

uint64_t smr_zc_start(const struct smr_zcache *zc, uint32_t zno)
{
	const struct smr_zc_region *r = smr_zc_region_of(zc, zno);

	return r->start + (uint64_t)(zno - r->first) * r->zone_len;
}

uint64_t smr_zc_wp(const struct smr_zcache *zc, uint32_t zno)
{
	uint64_t w = smr_zc_word(zc, zno);

	return smr_zc_start(zc, zno) +
	       ((w & SMR_ZC_WP_MASK) << zc->block_shift);
}

void smr_zc_get(const struct smr_zcache *zc, uint32_t zno, struct smr_zone *z)
{
	const struct smr_zc_region *r = smr_zc_region_of(zc, zno);
	uint64_t w = smr_zc_word(zc, zno);

	z->start = r->start + (uint64_t)(zno - r->first) * r->zone_len;
	z->len = r->zone_len;
	z->cap = r->zone_cap;
	z->wp = z->start + ((w & SMR_ZC_WP_MASK) << zc->block_shift);
	z->no = zno;
	z->type = smr_zc_word_type(w);
	z->cond = smr_zc_word_cond(w);
}

/* ------------------------------------------------------------------------
 * Writes
 * ------------------------------------------------------------------------ */

int smr_zc_write_prep(struct smr_zcache *zc, uint32_t zno, uint64_t off,
		      uint64_t len, bool check, struct smr_zc_undo *undo)
{
	uint64_t w = zc->zs[zno];
	uint8_t cond = smr_zc_word_cond(w);
	uint32_t wpb = (uint32_t)(w & SMR_ZC_WP_MASK);
	struct smr_zone z;
	int rc;

	undo->old_cond = cond;
	undo->victim = UINT32_MAX;
	if (w & SMR_ZC_BUSY)
		return SMR_ZC_BUSY_RETRY;
	smr_zc_get(zc, zno, &z);
	if (check) {
		if (cond == SMR_ZONE_COND_FULL ||
		    cond == SMR_ZONE_COND_READONLY ||
		    cond == SMR_ZONE_COND_OFFLINE || off != z.wp ||
		    off + len > z.start + z.cap)
			return -EIO;
	}
	if (cond == SMR_ZONE_COND_EMPTY || cond == SMR_ZONE_COND_CLOSED) {
		if (check && cond == SMR_ZONE_COND_EMPTY && zc->max_active &&
		    zc->nr_active >= zc->max_active)
			return -EIO;
		rc = make_open_room(zc, &undo->victim);
		if (rc == -EIO && !check)
			rc = 0;
		if (rc)
			return rc;
		set_state(zc, zno, wpb, SMR_ZONE_COND_IMP_OPEN, true);
		return 0;
	}
	set_busy(zc, zno, true);
	return 0;
}

void smr_zc_write_done(struct smr_zcache *zc, uint32_t zno, uint64_t len,
		       bool ok, const struct smr_zc_undo *undo)
{
	uint64_t w = zc->zs[zno];
	uint32_t wpb = (uint32_t)(w & SMR_ZC_WP_MASK);
	uint32_t capb = cap_blocks(zc, zno);

	if (!ok) {
		set_state(zc, zno, wpb, undo->old_cond, false);
		undo_victim(zc, undo->victim);
		return;
	}
	wpb += (uint32_t)(len >> zc->block_shift);
	if (wpb >= capb) {
		set_state(zc, zno, capb, SMR_ZONE_COND_FULL, false);
		return;
	}
	if (undo->old_cond == SMR_ZONE_COND_IMP_OPEN) {
		/* Most recently used now (only once the write succeeded, so
		 * that a failed one leaves the order as it was). */
		lru_remove(zc, zno);
		lru_add(zc, zno, false);
	}
	set_state(zc, zno, wpb, smr_zc_word_cond(w), false);
}

int smr_zc_write_queue(struct smr_zcache *zc, uint32_t zno, uint64_t off,
		       uint64_t len, bool held, struct smr_zc_undo *undo)
{
	uint64_t w = zc->zs[zno];
	uint8_t cond = smr_zc_word_cond(w);
	struct smr_zone z;
	int rc;

	if (!held) {
		rc = smr_zc_write_prep(zc, zno, off, len, true, undo);
		if (rc)
			return rc;
	} else {
		/* Held by its own queued writes: it is open (nothing closes
		 * a busy zone) or full. */
		smr_zc_get(zc, zno, &z);
		if (!cond_is_open(cond) || off != z.wp ||
		    off + len > z.start + z.cap)
			return -EIO;
		undo->old_cond = cond;
		undo->victim = UINT32_MAX;
	}
	smr_zc_write_done(zc, zno, len, true, undo);
	set_busy(zc, zno, true);
	return 0;
}

void smr_zc_release(struct smr_zcache *zc, uint32_t zno)
{
	set_busy(zc, zno, false);
}

/* ------------------------------------------------------------------------
 * Zone operations
 * ------------------------------------------------------------------------ */

int smr_zc_op_prep(struct smr_zcache *zc, enum smr_zc_op op, uint32_t zno,
		   struct smr_zc_undo *undo)
{
	uint64_t w = zc->zs[zno];
	uint8_t cond = smr_zc_word_cond(w);
	int rc;

	undo->old_cond = cond;
	undo->victim = UINT32_MAX;
	if (smr_zc_word_type(w) == SMR_ZONE_TYPE_CNV)
		return -EINVAL;
	if (w & SMR_ZC_BUSY)
		return SMR_ZC_BUSY_RETRY;
	if (cond == SMR_ZONE_COND_READONLY || cond == SMR_ZONE_COND_OFFLINE)
		return -EIO;

	switch (op) {
	case SMR_ZC_OP_RESET:
		if (cond == SMR_ZONE_COND_EMPTY)
			return SMR_ZC_NOOP;
		break;
	case SMR_ZC_OP_FINISH:
		if (cond == SMR_ZONE_COND_FULL)
			return SMR_ZC_NOOP;
		break;
	case SMR_ZC_OP_OPEN:
		if (cond == SMR_ZONE_COND_EXP_OPEN)
			return SMR_ZC_NOOP;
		if (cond == SMR_ZONE_COND_FULL)
			return -EIO;
		if (cond == SMR_ZONE_COND_IMP_OPEN)
			break;
		if (cond == SMR_ZONE_COND_EMPTY && zc->max_active &&
		    zc->nr_active >= zc->max_active)
			return -EIO;
		rc = make_open_room(zc, &undo->victim);
		if (rc)
			return rc;
		break;
	case SMR_ZC_OP_CLOSE:
		if (cond == SMR_ZONE_COND_CLOSED)
			return SMR_ZC_NOOP;
		if (!cond_is_open(cond))
			return -EIO;
		break;
	default:
		return -EINVAL;
	}
	set_busy(zc, zno, true);
	return 0;
}

void smr_zc_op_done(struct smr_zcache *zc, enum smr_zc_op op, uint32_t zno,
		    bool ok, const struct smr_zc_undo *undo)
{
	uint64_t w = zc->zs[zno];
	uint32_t wpb = (uint32_t)(w & SMR_ZC_WP_MASK);

	if (!ok) {
		set_busy(zc, zno, false);
		undo_victim(zc, undo->victim);
		return;
	}
	switch (op) {
	case SMR_ZC_OP_RESET:
		set_state(zc, zno, 0, SMR_ZONE_COND_EMPTY, false);
		break;
	case SMR_ZC_OP_FINISH:
		set_state(zc, zno, cap_blocks(zc, zno), SMR_ZONE_COND_FULL,
			  false);
		break;
	case SMR_ZC_OP_OPEN:
		set_state(zc, zno, wpb, SMR_ZONE_COND_EXP_OPEN, false);
		break;
	case SMR_ZC_OP_CLOSE:
		set_state(zc, zno, wpb,
			  wpb ? SMR_ZONE_COND_CLOSED : SMR_ZONE_COND_EMPTY,
			  false);
		break;
	}
}

void smr_zc_resync(struct smr_zcache *zc, uint32_t zno,
		   const struct smr_zone *rep)
{
	uint64_t w = zc->zs[zno];
	uint32_t wpb = (uint32_t)(w & SMR_ZC_WP_MASK);
	uint32_t capb = cap_blocks(zc, zno);
	uint64_t start = smr_zc_start(zc, zno);
	uint8_t cond = smr_zc_word_cond(w);
	uint32_t nwpb;

	if (smr_zc_word_type(w) == SMR_ZONE_TYPE_CNV)
		return;
	if (rep->cond == SMR_ZONE_COND_FULL ||
	    rep->wp >= start + ((uint64_t)capb << zc->block_shift))
		nwpb = capb;
	else if (rep->wp <= start)
		nwpb = 0;
	else
		nwpb = (uint32_t)((rep->wp - start) >> zc->block_shift);
	if (nwpb == wpb && (nwpb != capb || cond == SMR_ZONE_COND_FULL))
		return;
	if (nwpb == capb)
		cond = SMR_ZONE_COND_FULL;
	else if (nwpb == 0)
		cond = SMR_ZONE_COND_EMPTY;
	else if (!cond_is_open(cond))
		cond = SMR_ZONE_COND_CLOSED;
	set_state(zc, zno, nwpb, cond, w & SMR_ZC_BUSY);
}
