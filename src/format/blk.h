/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * blk.h - checksums and verification of self-describing blocks.
 *
 * Every metadata block type has a struct smr_blk_ops with its magic and a
 * structural verifier. smr_blk_verify() runs the common checks (magic, length,
 * checksum, address, UUID, and the expected generation and owner when the
 * caller knows them) and then the type's verifier; it runs on every read.
 * smr_blk_seal() fills the header's checksum and runs the verifier before
 * every write, so a bug never reaches the disk as a valid-looking block.
 */
#ifndef SMR_FORMAT_BLK_H
#define SMR_FORMAT_BLK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/ondisk.h"
#include "util/smr.h"

struct smr_blk_ops {
	const char *name; /* "btree node", "checkpoint", ... */
	uint32_t magic;
	/*
	 * Structural checks of a block whose header already verified. Returns
	 * 0, or the result of smr_corrupt(addr, "what is wrong").
	 */
	int (*verify)(const void *blk, size_t len, uint64_t addr);
};

/* What the reader expects; zero for "any" in gen and owner. */
struct smr_blk_expect {
	uint64_t addr;
	uint64_t gen;
	uint64_t owner;
	const uint8_t *uuid; /* 16 bytes; NULL = any */
};

/* The common header of a block as the block claims it, nothing verified. */
struct smr_blk_id {
	uint32_t magic;
	uint32_t len;
	uint64_t csum;
	uint64_t addr;
	uint64_t gen;
	uint64_t owner;
	uint16_t level;
	uint8_t uuid[16];
};

/*
 * Decode the common header of @blk (at least sizeof(struct smr_blk_hdr)
 * bytes) without checking anything: for code that must look at what a
 * block says it is before, or instead of, verifying it (the cleaner's scan
 * for nodes, the magic of a checkpoint slot, the generation of a damaged
 * record).
 */
void smr_blk_hdr_decode(const void *blk, struct smr_blk_id *id);

/*
 * The common checks of smr_blk_verify() (magic, length, checksum, address,
 * UUID, generation, owner, reserved bytes), without logging and without
 * the type's verifier: true if @blk could be the block of type @ops that
 * @exp describes. For scans that meet many blocks that are not.
 */
bool smr_blk_matches(const void *blk, size_t len, const struct smr_blk_ops *ops,
		     const struct smr_blk_expect *exp);

/* XXH3-64 of @len bytes at @blk with the header's csum field taken as 0. */
uint64_t smr_blk_csum(const void *blk, size_t len);

/* Fill the common header; the checksum is left for smr_blk_seal(). */
void smr_blk_hdr_init(void *blk, const struct smr_blk_ops *ops, size_t len,
		      uint64_t addr, uint64_t gen, uint64_t owner,
		      const uint8_t uuid[16], uint16_t level);

/* Run the verifier, then stamp the checksum. 0 or -SMR_EFSCORRUPTED. */
int smr_blk_seal(void *blk, size_t len, const struct smr_blk_ops *ops);

/*
 * Check a block just read: magic, length, checksum, identity, then the
 * type's verifier. Returns 0, -SMR_EFSBADCRC for a checksum mismatch, or
 * -SMR_EFSCORRUPTED for anything else; each failure is logged with the
 * block's address and the check that failed.
 */
int smr_blk_verify(const void *blk, size_t len, const struct smr_blk_ops *ops,
		   const struct smr_blk_expect *exp);

/*
 * Restore a block that fails its checksum because one bit of it flipped:
 * find the one bit whose flip back makes the whole block verify
 * (smr_blk_verify) and flip it. With a 64-bit checksum a wrong match is
 * beyond any practical chance. Costs a hash of the block per bit (about
 * a tenth of a second for 16 KiB): for a block that failed, never on
 * every read.
 * Returns 0 with @blk restored, or -SMR_EFSBADCRC with @blk as it was.
 */
int smr_blk_fix_bit(void *blk, size_t len, const struct smr_blk_ops *ops,
		    const struct smr_blk_expect *exp);

/* Plain XXH3-64 of a buffer with a seed, for data extents and blobs. */
uint64_t smr_hash64(const void *buf, size_t len, uint64_t seed);

/* As smr_blk_fix_bit() for a buffer whose smr_hash64() with @seed must be
 * @want (a data block): 0 with the one bit that explains the mismatch
 * flipped back, or -SMR_EFSBADCRC with @buf as it was. */
int smr_hash_fix_bit(void *buf, size_t len, uint64_t seed, uint64_t want);

#endif /* SMR_FORMAT_BLK_H */
