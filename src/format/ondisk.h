/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ondisk.h - every on-disk structure of smrfs, and nothing else.
 *
 * Rules (docs/FORMAT.md is the normative text; change both in one commit):
 *  - little-endian fixed-width fields only (__le16/32/64, uint8_t arrays);
 *    no bitfields, no pointers, explicit padding and reserved bytes;
 *  - every structure's size and every field's offset is pinned below with
 *    _Static_assert, so a change that moves a byte does not compile;
 *  - logic code never touches these: it uses the in-core structures and the
 *    smr_*_from_disk() / smr_*_to_disk() codecs.
 *
 * Sections: common block header; superblock and checkpoints (cow); allocator
 * state (alloc); B-tree nodes (cow).
 */
#ifndef SMR_FORMAT_ONDISK_H
#define SMR_FORMAT_ONDISK_H

#include <linux/types.h>
#include <stddef.h>
#include <stdint.h>

#define SMR_ONDISK_SIZE(type, size) \
	_Static_assert(sizeof(type) == (size), "size of " #type)
#define SMR_ONDISK_OFFSET(type, field, off)          \
	_Static_assert(offsetof(type, field) == (off), \
		       "offset of " #type "." #field)

/* ========================================================================
 * Common block header
 *
 * Every metadata block starts with this header. The checksum is XXH3-64
 * (seed 0) over the whole block with the csum field taken as zero; since the
 * header holds the block's own address, owner, generation and the filesystem
 * UUID, a block read from the wrong place, left over from an older generation
 * or from another filesystem fails verification even though its bytes are
 * intact. Readers also check addr against where they read and, where the
 * reference says it, gen and owner against what they expected.
 * ======================================================================== */
struct smr_blk_hdr {
	__le32 magic;     /* block type, SMR_MAGIC_* */
	__le32 len;       /* bytes covered by the checksum (the block) */
	__le64 csum;      /* XXH3-64 of the block, this field zeroed */
	__le64 addr;      /* device byte offset the block was written to */
	__le64 gen;       /* generation (transaction) that wrote it */
	__le64 owner;     /* owning tree or object, SMR_OWNER_* */
	uint8_t uuid[16]; /* filesystem UUID */
	__le16 level;     /* B-tree level (0 = leaf), 0 for other blocks */
	__le16 flags;     /* per block type */
	__le32 reserved;  /* zero */
};
SMR_ONDISK_SIZE(struct smr_blk_hdr, 64);
SMR_ONDISK_OFFSET(struct smr_blk_hdr, magic, 0);
SMR_ONDISK_OFFSET(struct smr_blk_hdr, len, 4);
SMR_ONDISK_OFFSET(struct smr_blk_hdr, csum, 8);
SMR_ONDISK_OFFSET(struct smr_blk_hdr, addr, 16);
SMR_ONDISK_OFFSET(struct smr_blk_hdr, gen, 24);
SMR_ONDISK_OFFSET(struct smr_blk_hdr, owner, 32);
SMR_ONDISK_OFFSET(struct smr_blk_hdr, uuid, 40);
SMR_ONDISK_OFFSET(struct smr_blk_hdr, level, 56);
SMR_ONDISK_OFFSET(struct smr_blk_hdr, flags, 58);
SMR_ONDISK_OFFSET(struct smr_blk_hdr, reserved, 60);

/* Block magics: four ASCII bytes, read as a little-endian u32. */
#define SMR_MAGIC(a, b, c, d) \
	((uint32_t)(a) | (uint32_t)(b) << 8 | (uint32_t)(c) << 16 | \
	 (uint32_t)(d) << 24)
#define SMR_MAGIC_ALLOC SMR_MAGIC('S', 'A', 'L', 'C') /* allocator state */

/* Owners of blocks that are not in a tree. */
#define SMR_OWNER_ALLOC 0xfffffffffffffff0ULL /* allocator state */

#include "format/ondisk_alloc.h"
#include "format/ondisk_ns.h"

#endif /* SMR_FORMAT_ONDISK_H */
