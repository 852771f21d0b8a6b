/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * zcache.h - the zone cache of a device handle (private to src/dev/).
 *
 * Layout. Zones are grouped into *regions*: runs of consecutive zones of one
 * size and one capacity (a drive usually has one or two). A region holds its
 * first byte, first zone number, zone count, zone size (with its shift when a
 * power of two) and zone capacity. Every zone then needs only one 64-bit
 * state word:
 *
 *   bits  0..31  write pointer, in blocks from the zone start (cap when full)
 *   bits 32..39  condition (enum smr_zone_cond)
 *   bits 40..47  type (enum smr_zone_type)
 *   bit  48      busy: a write or zone operation on it is in flight
 *
 * so the cache costs 8 bytes a zone plus the regions plus, when the device
 * has a max open limit, one 32-bit slot per open zone for the LRU list of
 * implicitly open zones. The word is read with one atomic load, so queries
 * take no lock and always see a consistent write pointer and condition.
 *
 * State changes (smr_zc_write_*, smr_zc_op_*) implement the zone model of a
 * host-managed drive and are called with the handle's zlock held; they never
 * do I/O. They are kept here, apart from dev.c, so that the state machine can
 * be tested on any geometry without a medium.
 */
#ifndef SMR_DEV_ZCACHE_H
#define SMR_DEV_ZCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dev/dev.h"

struct smr_zc_region {
	uint64_t start;    /* first byte */
	uint64_t zone_len; /* bytes */
	uint64_t zone_cap; /* bytes, <= zone_len */
	uint32_t first;    /* first zone number */
	uint32_t nr;       /* zones in the region */
	uint32_t shift;    /* log2(zone_len) if a power of two, else 0 */
};

struct smr_zcache {
	uint32_t nr_zones;
	uint32_t nr_cnv;
	uint32_t nr_regions;
	uint32_t block_shift;
	uint32_t max_open;   /* 0 = no limit */
	uint32_t max_active; /* 0 = no limit */
	uint32_t nr_open;    /* implicitly + explicitly open */
	uint32_t nr_active;  /* open + closed */
	struct smr_zc_region *regions;
	uint64_t *zs;        /* per-zone state words */
	/* Implicitly open zones, least recently written first; kept only
	 * when max_open != 0 (no limit: nothing to close). */
	uint32_t *lru;
	uint32_t lru_len;
	uint32_t lru_cap;
	uint32_t regions_cap; /* while building */
	uint32_t built;       /* zones added so far */
};

#define SMR_ZC_WP_MASK 0xffffffffULL
#define SMR_ZC_COND_SHIFT 32
#define SMR_ZC_TYPE_SHIFT 40
#define SMR_ZC_BUSY (1ULL << 48)

static inline uint64_t smr_zc_word(const struct smr_zcache *zc, uint32_t zno)
{
	return __atomic_load_n(&zc->zs[zno], __ATOMIC_ACQUIRE);
}

static inline uint8_t smr_zc_word_cond(uint64_t w)
{
	return (uint8_t)(w >> SMR_ZC_COND_SHIFT);
}

static inline uint8_t smr_zc_word_type(uint64_t w)
{
	return (uint8_t)(w >> SMR_ZC_TYPE_SHIFT);
}

/* ------------------------------------------------------------------------
 * Building
 * ------------------------------------------------------------------------ */

/*
 * Start a cache for @nr_zones zones of a device with @block_size (a power of
 * two) and the given limits. Returns 0 or -ENOMEM / -EINVAL.
 */
int smr_zc_create(uint32_t nr_zones, uint32_t block_size, uint32_t max_open,
		  uint32_t max_active, struct smr_zcache **zcp);

/*
 * Add the next zone, in order. Returns 0, or -EINVAL if it does not follow
 * the previous one, its capacity exceeds its size, its write pointer lies
 * outside [start, start + cap], a size or pointer is not block aligned, or
 * its type or condition is unknown.
 */
int smr_zc_add(struct smr_zcache *zc, const struct smr_zone *z);

/* Finish building: every zone must have been added (-EINVAL otherwise).
 * Shrinks the region array. */
int smr_zc_finish_build(struct smr_zcache *zc);

void smr_zc_free(struct smr_zcache *zc);

/* Bytes of memory used by @zc. */
size_t smr_zc_bytes(const struct smr_zcache *zc);

/* ------------------------------------------------------------------------
 * Queries (lock-free)
 * ------------------------------------------------------------------------ */

/* Zone holding byte @off, or UINT32_MAX past the end. */
uint32_t smr_zc_zone_no(const struct smr_zcache *zc, uint64_t off);
/* The region of zone @zno (must be < nr_zones). */
const struct smr_zc_region *smr_zc_region_of(const struct smr_zcache *zc,
					     uint32_t zno);
uint64_t smr_zc_start(const struct smr_zcache *zc, uint32_t zno);
/* Absolute write pointer (start + cap when full, start if conventional). */
uint64_t smr_zc_wp(const struct smr_zcache *zc, uint32_t zno);
/* Snapshot of zone @zno. */
void smr_zc_get(const struct smr_zcache *zc, uint32_t zno, struct smr_zone *z);

/* ------------------------------------------------------------------------
 * State changes: caller holds the handle's zlock. Zones are sequential and
 * @zno valid unless stated.
 * ------------------------------------------------------------------------ */

/* What a write's preparation changed, so that a failure can undo it. */
struct smr_zc_undo {
	uint8_t old_cond;
	uint32_t victim; /* zone implicitly closed to make room, or UINT32_MAX */
};

/* Result of smr_zc_write_prep() / smr_zc_op_prep() when the zone (or the
 * only zone that could be closed to make room) is busy: wait and retry. */
#define SMR_ZC_BUSY_RETRY 1

/*
 * Check a write of @len bytes at @off into sequential zone @zno and, if it
 * may proceed, open the zone implicitly (closing the least recently used
 * implicitly open zone first when max_open is reached) and mark it busy.
 * @check false skips the write pointer/capacity/limit checks (unchecked
 * handles) but still opens the zone and marks it busy.
 * Returns 0, SMR_ZC_BUSY_RETRY (zone busy, nothing changed), or -EIO: not at
 * the write pointer, crossing the capacity, zone full, or max_active reached
 * (nothing changed).
 */
int smr_zc_write_prep(struct smr_zcache *zc, uint32_t zno, uint64_t off,
		      uint64_t len, bool check, struct smr_zc_undo *undo);

/* The write prepared above is over: on success (@ok) advance the write
 * pointer by @len (full at the capacity), else undo the preparation. Clears
 * busy. */
void smr_zc_write_done(struct smr_zcache *zc, uint32_t zno, uint64_t len,
		       bool ok, const struct smr_zc_undo *undo);

/*
 * Write-behind: account a write of @len bytes at @off into sequential zone
 * @zno at the moment it is queued, before the medium has it. The zone rules
 * are checked and the write pointer advanced as smr_zc_write_prep() and a
 * successful smr_zc_write_done() would, but the zone stays busy: nothing
 * else may write it, close it or change it until smr_zc_release(). @held:
 * the zone is already busy with earlier queued writes of the caller (it is
 * then open, or full and the write is refused). Returns 0,
 * SMR_ZC_BUSY_RETRY (busy with something else, nothing changed) or -EIO as
 * smr_zc_write_prep(). @undo is scratch space.
 */
int smr_zc_write_queue(struct smr_zcache *zc, uint32_t zno, uint64_t off,
		       uint64_t len, bool held, struct smr_zc_undo *undo);

/* The queued writes of zone @zno are on the medium: clear busy. */
void smr_zc_release(struct smr_zcache *zc, uint32_t zno);

enum smr_zc_op {
	SMR_ZC_OP_RESET,
	SMR_ZC_OP_FINISH,
	SMR_ZC_OP_OPEN,
	SMR_ZC_OP_CLOSE,
};

/*
 * Check zone operation @op on @zno (any zone type). Returns 0 (proceed: the
 * zone is now busy, call smr_zc_op_done), 2 (nothing to do: reset of an
 * empty zone, finish of a full one, open of an explicitly open one, close
 * of a closed one), SMR_ZC_BUSY_RETRY, -EINVAL (conventional zone) or -EIO
 * (open of a full zone or beyond the limits, close of an empty or full
 * zone). For OPEN, when max_open is reached, the least recently used
 * implicitly open zone is closed here (recorded in @undo).
 */
#define SMR_ZC_NOOP 2
int smr_zc_op_prep(struct smr_zcache *zc, enum smr_zc_op op, uint32_t zno,
		   struct smr_zc_undo *undo);

/* Zone operation prepared above is over: apply it on success, else undo.
 * Clears busy. */
void smr_zc_op_done(struct smr_zcache *zc, enum smr_zc_op op, uint32_t zno,
		    bool ok, const struct smr_zc_undo *undo);

/*
 * Take the write pointer @rep->wp (and, if it says so, full / empty) that
 * the medium reported for zone @zno after a failure, keeping the cached
 * open/closed condition when the pointer did not move.
 */
void smr_zc_resync(struct smr_zcache *zc, uint32_t zno,
		   const struct smr_zone *rep);

#endif /* SMR_DEV_ZCACHE_H */
