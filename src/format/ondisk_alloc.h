/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ondisk_alloc.h - on-disk structures of the allocator modules' persisted
 * state. Part of ondisk.h (included from it); the same rules apply.
 *
 * The state of one allocator is a run of SMR_ALLOC_STATE_BLKSZ-byte blocks,
 * written in up to SMR_ALLOC_STATE_MAX_EXT extents that the module allocates
 * from its own metadata stream. Each extent holds as many whole blocks as
 * fit from its start; the rest of it (shorter than a block, on devices of
 * smaller blocks) is zero padding. Every block is:
 *
 *   0    struct smr_blk_hdr          magic SMR_MAGIC_ALLOC, owner
 *                                    SMR_OWNER_ALLOC, addr, gen, uuid
 *   64   struct smr_alloc_state_blk  position of the block in the state
 *   96   block 0 only: struct smr_alloc_state_head (summary, extent table)
 *   ...  entries, entry_size bytes each, up to the end of the block
 *
 * Entries are struct smr_alloc_zone_d (module zoned: one per managed zone,
 * in zone order) or struct smr_alloc_ext_d (modules rotational and flash:
 * the free extents, sorted by offset, none touching another). The caller's
 * checkpoint holds a struct smr_alloc_ref naming block 0, the extents' total
 * length, the generation and an XXH3-64 (seed 0) of the extents' bytes as
 * written, padding included.
 */
#ifndef SMR_FORMAT_ONDISK_ALLOC_H
#define SMR_FORMAT_ONDISK_ALLOC_H

/* Bytes in one state block (a multiple of every device block size). */
#define SMR_ALLOC_STATE_BLKSZ 4096
/* Extents the state may be split over (listed in block 0). */
#define SMR_ALLOC_STATE_MAX_EXT 8

/* Module identifiers stored in smr_alloc_state_blk.module. */
#define SMR_ALLOC_MOD_ZONED 1
#define SMR_ALLOC_MOD_ROT 2
#define SMR_ALLOC_MOD_FLASH 3

/* Where a block sits in the state; follows the block header. */
struct smr_alloc_state_blk {
	__le32 module;      /* SMR_ALLOC_MOD_* */
	__le32 blk_index;   /* 0 .. nr_blks - 1 */
	__le32 nr_blks;     /* blocks in the whole state */
	__le32 entry_size;  /* bytes per entry */
	__le64 first_entry; /* index of this block's first entry */
	__le32 nr_entries;  /* entries in this block */
	__le32 reserved;    /* zero */
};
SMR_ONDISK_SIZE(struct smr_alloc_state_blk, 32);
SMR_ONDISK_OFFSET(struct smr_alloc_state_blk, module, 0);
SMR_ONDISK_OFFSET(struct smr_alloc_state_blk, blk_index, 4);
SMR_ONDISK_OFFSET(struct smr_alloc_state_blk, nr_blks, 8);
SMR_ONDISK_OFFSET(struct smr_alloc_state_blk, entry_size, 12);
SMR_ONDISK_OFFSET(struct smr_alloc_state_blk, first_entry, 16);
SMR_ONDISK_OFFSET(struct smr_alloc_state_blk, nr_entries, 24);
SMR_ONDISK_OFFSET(struct smr_alloc_state_blk, reserved, 28);

/* An extent: a run of bytes on the device. */
struct smr_alloc_ext_d {
	__le64 off;
	__le64 len;
};
SMR_ONDISK_SIZE(struct smr_alloc_ext_d, 16);
SMR_ONDISK_OFFSET(struct smr_alloc_ext_d, off, 0);
SMR_ONDISK_OFFSET(struct smr_alloc_ext_d, len, 8);

/* No zone (in slot_zone[]). */
#define SMR_ALLOC_NO_ZONE 0xffffffffU

/* The summary of the state, in block 0 after its smr_alloc_state_blk. */
struct smr_alloc_state_head {
	__le64 data_start;         /* first managed byte */
	__le64 capacity;           /* device capacity */
	__le64 total_entries;      /* entries in all blocks */
	__le32 block_size;         /* device block size */
	__le32 nr_zones;           /* device zones (0: not zoned) */
	__le32 nr_ext;             /* extents in ext[] holding the state */
	__le32 reserve_zones;      /* zoned: zones kept for meta/cleaner */
	__le32 slot_zone[4];       /* zoned: open zone per stream or NO_ZONE */
	__le64 bytes_allocated[4]; /* per stream, since mkfs */
	__le64 bytes_freed;
	__le64 nr_allocs;
	__le64 zones_reset;
	__le64 zones_finished;
	__le64 cursor;             /* flash: next-fit cursor */
	__le64 nr_cooling;         /* rotational, flash: the last entries
				    * are freed by this commit; 0 zoned */
	__le64 user_bytes;         /* bytes users wrote, since mkfs (feature
				    * USER_BYTES; else zero) */
	__le64 reserved[1];        /* zero */
	struct smr_alloc_ext_d ext[SMR_ALLOC_STATE_MAX_EXT];
};
SMR_ONDISK_SIZE(struct smr_alloc_state_head, 280);
SMR_ONDISK_OFFSET(struct smr_alloc_state_head, data_start, 0);
SMR_ONDISK_OFFSET(struct smr_alloc_state_head, capacity, 8);
SMR_ONDISK_OFFSET(struct smr_alloc_state_head, total_entries, 16);
SMR_ONDISK_OFFSET(struct smr_alloc_state_head, block_size, 24);
SMR_ONDISK_OFFSET(struct smr_alloc_state_head, nr_zones, 28);
SMR_ONDISK_OFFSET(struct smr_alloc_state_head, nr_ext, 32);
SMR_ONDISK_OFFSET(struct smr_alloc_state_head, reserve_zones, 36);
SMR_ONDISK_OFFSET(struct smr_alloc_state_head, slot_zone, 40);
SMR_ONDISK_OFFSET(struct smr_alloc_state_head, bytes_allocated, 56);
SMR_ONDISK_OFFSET(struct smr_alloc_state_head, bytes_freed, 88);
SMR_ONDISK_OFFSET(struct smr_alloc_state_head, nr_allocs, 96);
SMR_ONDISK_OFFSET(struct smr_alloc_state_head, zones_reset, 104);
SMR_ONDISK_OFFSET(struct smr_alloc_state_head, zones_finished, 112);
SMR_ONDISK_OFFSET(struct smr_alloc_state_head, cursor, 120);
SMR_ONDISK_OFFSET(struct smr_alloc_state_head, nr_cooling, 128);
SMR_ONDISK_OFFSET(struct smr_alloc_state_head, user_bytes, 136);
SMR_ONDISK_OFFSET(struct smr_alloc_state_head, reserved, 144);
SMR_ONDISK_OFFSET(struct smr_alloc_state_head, ext, 152);

/* Offsets of the parts of a state block. */
#define SMR_ALLOC_STATE_BLK_OFF 64
#define SMR_ALLOC_STATE_HEAD_OFF 96
#define SMR_ALLOC_STATE_ENTRIES0_OFF 376 /* block 0 */
#define SMR_ALLOC_STATE_ENTRIES_OFF 96   /* other blocks */

/* Zone flags (smr_alloc_zone_d.flags). */
#define SMR_ALLOC_ZF_OPEN 0x01 /* a stream's open zone */
#define SMR_ALLOC_ZF_FULL 0x02 /* no more allocation until reset */
#define SMR_ALLOC_ZF_ALL 0x03

/* No stream (smr_alloc_zone_d.stream). */
#define SMR_ALLOC_NO_STREAM 0xff

/* One managed zone of the zoned module. A zone with neither flag and
 * ap_blocks 0 is free (empty). */
struct smr_alloc_zone_d {
	__le64 age_gen;     /* generation of the last allocation in it */
	__le32 live_blocks; /* live bytes / block_size */
	__le32 ap_blocks;   /* allocation pointer - zone start, in blocks */
	uint8_t stream;     /* stream that last allocated, or NO_STREAM */
	uint8_t flags;      /* SMR_ALLOC_ZF_* */
	__le16 pad;         /* zero */
	__le32 reserved;    /* zero */
};
SMR_ONDISK_SIZE(struct smr_alloc_zone_d, 24);
SMR_ONDISK_OFFSET(struct smr_alloc_zone_d, age_gen, 0);
SMR_ONDISK_OFFSET(struct smr_alloc_zone_d, live_blocks, 8);
SMR_ONDISK_OFFSET(struct smr_alloc_zone_d, ap_blocks, 12);
SMR_ONDISK_OFFSET(struct smr_alloc_zone_d, stream, 16);
SMR_ONDISK_OFFSET(struct smr_alloc_zone_d, flags, 17);
SMR_ONDISK_OFFSET(struct smr_alloc_zone_d, pad, 18);
SMR_ONDISK_OFFSET(struct smr_alloc_zone_d, reserved, 20);

_Static_assert(SMR_ALLOC_STATE_ENTRIES0_OFF ==
		       SMR_ALLOC_STATE_HEAD_OFF +
			       sizeof(struct smr_alloc_state_head),
	       "allocator state: entries of block 0 follow the summary");

#endif /* SMR_FORMAT_ONDISK_ALLOC_H */
