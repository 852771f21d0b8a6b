/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sb.h - in-core superblock and checkpoint, and their codecs.
 *
 * The on-disk forms are struct smr_dsb and struct smr_dckpt (ondisk.h); the
 * functions here are the only code that converts between them and these
 * in-core structures.
 */
#ifndef SMR_FORMAT_SB_H
#define SMR_FORMAT_SB_H

#include <stdint.h>

#include "format/blk.h"
#include "format/ondisk.h"

extern const struct smr_blk_ops smr_sb_ops;
extern const struct smr_blk_ops smr_ckpt_ops;

struct smr_sb {
	uint8_t uuid[16];
	uint16_t format_major;
	uint16_t format_minor;
	uint32_t block_size;
	uint32_t node_size;
	uint32_t ckpt_size;
	uint64_t features_compat;
	uint64_t features_ro_compat;
	uint64_t features_incompat;
	uint64_t capacity;
	uint64_t zone_size;
	uint64_t zone_cap;
	uint32_t nr_zones;
	uint32_t nr_cnv_zones;
	uint64_t data_start;
	uint32_t ckpt_scheme;
	uint32_t ckpt_nr_slots;
	uint64_t ckpt_start;
	uint64_t ckpt_len;
	char alloc[16];    /* NUL terminated (at most 15 bytes) */
	char label[64];    /* NUL terminated (at most 63 bytes) */
	uint64_t ctime;
};

struct smr_root {
	uint64_t tree;
	uint64_t addr;
	uint64_t gen;
	uint64_t nr_items;
	uint16_t level;
};

struct smr_ckpt {
	uint64_t gen;
	uint64_t alloc_off, alloc_len, alloc_csum, alloc_gen;
	uint64_t nr_nodes;
	uint64_t prev_gen; /* the checkpoint this one follows, 0 = none */
	uint64_t gc_runs, gc_zones, gc_usecs; /* the cleaner's, since mkfs */
	uint32_t nr_roots;
	struct smr_root roots[SMR_CKPT_MAX_ROOTS];
	uint32_t nr_pending;
	struct { uint64_t off, len; } pending[SMR_CKPT_MAX_PENDING];
};

/*
 * Encode @sb into the SMR_SB_SIZE bytes at @blk as the copy at device offset
 * @addr, sealed. Returns 0 or -SMR_EFSCORRUPTED (the verifier refused it).
 */
int smr_sb_to_disk(const struct smr_sb *sb, void *blk, uint64_t addr);

/*
 * Verify the SMR_SB_SIZE bytes at @blk read from @addr and decode them.
 * Returns 0, -EINVAL if the magic is not the superblock's (not smrfs),
 * -SMR_EFSBADCRC / -SMR_EFSCORRUPTED (logged with the failing check).
 * Feature and version checks are the caller's (they depend on the mode).
 */
int smr_sb_from_disk(const void *blk, uint64_t addr, struct smr_sb *sb);

/* Encode @ck into @size (= SMR_CKPT_SIZE) bytes at @blk for @addr, sealed.
 * 0, -EINVAL (too many roots or pending extents) or -SMR_EFSCORRUPTED. */
int smr_ckpt_to_disk(const struct smr_ckpt *ck, const uint8_t uuid[16],
		     void *blk, size_t size, uint64_t addr);

/* A checkpoint read from @addr that fails its checksum: restored if one
 * bit flipped (smr_blk_fix_bit). 0 or -SMR_EFSBADCRC. */
int smr_ckpt_fix_bit(void *blk, size_t size, uint64_t addr,
		     const uint8_t *uuid);

/* Verify and decode a checkpoint read from @addr. @uuid NULL = any.
 * 0, -SMR_EFSBADCRC or -SMR_EFSCORRUPTED (logged). */
int smr_ckpt_from_disk(const void *blk, size_t size, uint64_t addr,
		       const uint8_t *uuid, struct smr_ckpt *ck);

#endif /* SMR_FORMAT_SB_H */
