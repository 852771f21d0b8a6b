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
 * Sections: common block header; superblock, checkpoints and B-tree nodes
 * (cow); allocator state (alloc, ondisk_alloc.h); namespace items (ondisk_ns.h).
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
#define SMR_MAGIC_SB SMR_MAGIC('S', 'M', 'R', 'S')    /* superblock */
#define SMR_MAGIC_CKPT SMR_MAGIC('S', 'C', 'K', 'P')  /* checkpoint */
#define SMR_MAGIC_NODE SMR_MAGIC('S', 'N', 'O', 'D')  /* B-tree node */
#define SMR_MAGIC_LOG SMR_MAGIC('S', 'L', 'O', 'G')   /* fsync log piece */

/* Owners of blocks that are not in a tree. B-tree nodes are owned by their
 * tree's id (1 .. SMR_CKPT_MAX_ROOTS). */
#define SMR_OWNER_ALLOC 0xfffffffffffffff0ULL /* allocator state */
#define SMR_OWNER_SB 0xfffffffffffffff1ULL    /* superblock */
#define SMR_OWNER_CKPT 0xfffffffffffffff2ULL  /* checkpoint */
#define SMR_OWNER_LOG 0xfffffffffffffff3ULL   /* fsync log piece */

/* ========================================================================
 * Superblock (cow)
 *
 * One 4096-byte block, written at format time only, in several copies (see
 * docs/FORMAT.md, "Checkpoint placement"). It says what the filesystem is
 * and where its checkpoints are; it never changes after mkfs, so a torn
 * superblock write can only happen during mkfs.
 * ======================================================================== */
#define SMR_SB_SIZE 4096
#define SMR_FORMAT_MAJOR 1
#define SMR_FORMAT_MINOR 1

/*
 * Feature bits.
 * PREV_CKPT (format 1.1): every checkpoint names the one it follows
 * (prev_gen), and space a commit frees stays untouched until the next
 * commit is durable, so that the previous checkpoint, its trees and its
 * allocator state survive a damaged newest one; rotational and flash
 * states list that space apart (nr_cooling). A 1.0 reader cannot read
 * either, hence incompatible.
 */
#define SMR_FEAT_INCOMPAT_PREV_CKPT (1ULL << 0)
/*
 * LOG: fsync may write log records (struct smr_dlog pieces) in the
 * checkpoint slots or log zones after the newest checkpoint; a reader that
 * does not replay them would lose what they made durable.
 */
#define SMR_FEAT_INCOMPAT_LOG (1ULL << 1)
/*
 * LOG_FREES: a log record's frees are the data freed since the record
 * before it (or the base), and a replay releases those of every record it
 * applies; without the bit they are all since the base, and the last
 * record's list is the whole of it. A reader that took only the last
 * record's would count the earlier ones' space used for good.
 */
#define SMR_FEAT_INCOMPAT_LOG_FREES (1ULL << 2)
/*
 * BIG_RING: the checkpoint ring (area and cnv schemes) may hold up to 252
 * slots, the bytes from 64 KiB to 4 MiB; builds before it made at most 16
 * on regular files and 64 in a conventional zone 0, and would refuse the
 * layout with a less telling message. The superblock's ckpt_nr_slots says
 * how many there are.
 */
#define SMR_FEAT_INCOMPAT_BIG_RING (1ULL << 3)
/*
 * USER_BYTES: the allocator state counts the bytes users wrote
 * (smr_alloc_state_head.user_bytes); without it that field is zero, and
 * the bytes written to the data streams stand for them (a write of part of
 * a block counts the whole block). A reader that wants the field zero
 * would refuse the state as damaged.
 */
#define SMR_FEAT_INCOMPAT_USER_BYTES (1ULL << 4)

#define SMR_FEAT_COMPAT_SUPP 0ULL
#define SMR_FEAT_RO_COMPAT_SUPP 0ULL
#define SMR_FEAT_INCOMPAT_SUPP \
	(SMR_FEAT_INCOMPAT_PREV_CKPT | SMR_FEAT_INCOMPAT_LOG | \
	 SMR_FEAT_INCOMPAT_LOG_FREES | SMR_FEAT_INCOMPAT_BIG_RING | \
	 SMR_FEAT_INCOMPAT_USER_BYTES)

/* Where the checkpoints are (sb_ckpt_scheme). */
#define SMR_CKPT_AREA 1    /* fixed area of slots at the start (not zoned) */
#define SMR_CKPT_CNV 2     /* slots in the first (conventional) zone */
#define SMR_CKPT_ZONELOG 3 /* two sequential zones used as a log */

struct smr_dsb {
	struct smr_blk_hdr hdr;      /* SMR_MAGIC_SB, owner SMR_OWNER_SB */
	__le16 format_major;
	__le16 format_minor;
	__le32 block_size;           /* device logical block size */
	__le32 node_size;            /* B-tree node bytes */
	__le32 ckpt_size;            /* checkpoint record bytes */
	__le64 features_compat;
	__le64 features_ro_compat;
	__le64 features_incompat;
	__le64 capacity;             /* device bytes */
	__le64 zone_size;            /* bytes of zone 0; 0 if not zoned */
	__le64 zone_cap;             /* writable bytes of zone 0 */
	__le32 nr_zones;             /* 0 if not zoned */
	__le32 nr_cnv_zones;
	__le64 data_start;           /* first byte the allocator manages */
	__le32 ckpt_scheme;          /* SMR_CKPT_* */
	__le32 ckpt_nr_slots;        /* AREA/CNV: slots; ZONELOG: 2 zones */
	__le64 ckpt_start;           /* AREA/CNV: first slot; ZONELOG: zone 0 */
	__le64 ckpt_len;             /* AREA/CNV: slot bytes; ZONELOG: zone */
	char alloc[16];              /* allocator module, NUL padded */
	char label[64];              /* NUL padded */
	__le64 ctime;                /* seconds since the epoch at mkfs */
	uint8_t reserved[SMR_SB_SIZE - 256];
};
SMR_ONDISK_SIZE(struct smr_dsb, SMR_SB_SIZE);
SMR_ONDISK_OFFSET(struct smr_dsb, format_major, 64);
SMR_ONDISK_OFFSET(struct smr_dsb, format_minor, 66);
SMR_ONDISK_OFFSET(struct smr_dsb, block_size, 68);
SMR_ONDISK_OFFSET(struct smr_dsb, node_size, 72);
SMR_ONDISK_OFFSET(struct smr_dsb, ckpt_size, 76);
SMR_ONDISK_OFFSET(struct smr_dsb, features_compat, 80);
SMR_ONDISK_OFFSET(struct smr_dsb, features_ro_compat, 88);
SMR_ONDISK_OFFSET(struct smr_dsb, features_incompat, 96);
SMR_ONDISK_OFFSET(struct smr_dsb, capacity, 104);
SMR_ONDISK_OFFSET(struct smr_dsb, zone_size, 112);
SMR_ONDISK_OFFSET(struct smr_dsb, zone_cap, 120);
SMR_ONDISK_OFFSET(struct smr_dsb, nr_zones, 128);
SMR_ONDISK_OFFSET(struct smr_dsb, nr_cnv_zones, 132);
SMR_ONDISK_OFFSET(struct smr_dsb, data_start, 136);
SMR_ONDISK_OFFSET(struct smr_dsb, ckpt_scheme, 144);
SMR_ONDISK_OFFSET(struct smr_dsb, ckpt_nr_slots, 148);
SMR_ONDISK_OFFSET(struct smr_dsb, ckpt_start, 152);
SMR_ONDISK_OFFSET(struct smr_dsb, ckpt_len, 160);
SMR_ONDISK_OFFSET(struct smr_dsb, alloc, 168);
SMR_ONDISK_OFFSET(struct smr_dsb, label, 184);
SMR_ONDISK_OFFSET(struct smr_dsb, ctime, 248);
SMR_ONDISK_OFFSET(struct smr_dsb, reserved, 256);

/* ========================================================================
 * Checkpoint (cow)
 *
 * A record of SMR_CKPT_SIZE bytes: this fixed part, then nr_pending
 * struct smr_dextent, then zeros to the end. The newest checkpoint that
 * verifies is the filesystem's state.
 * ======================================================================== */
#define SMR_CKPT_SIZE 16384
#define SMR_CKPT_MAX_ROOTS 8

/* A tree's root as the checkpoint names it. tree 0 = unused slot. */
struct smr_droot {
	__le64 tree;     /* tree id, SMR_TREE_* */
	__le64 addr;     /* root node; 0 = empty tree */
	__le64 gen;      /* generation in the root node's header */
	__le64 nr_items; /* items in the tree */
	__le16 level;    /* root node's level */
	uint8_t pad[6];  /* zero */
};
SMR_ONDISK_SIZE(struct smr_droot, 40);
SMR_ONDISK_OFFSET(struct smr_droot, addr, 8);
SMR_ONDISK_OFFSET(struct smr_droot, gen, 16);
SMR_ONDISK_OFFSET(struct smr_droot, nr_items, 24);
SMR_ONDISK_OFFSET(struct smr_droot, level, 32);
SMR_ONDISK_OFFSET(struct smr_droot, pad, 34);

struct smr_dextent {
	__le64 off;
	__le64 len;
};
SMR_ONDISK_SIZE(struct smr_dextent, 16);

struct smr_dckpt {
	struct smr_blk_hdr hdr;   /* SMR_MAGIC_CKPT, owner SMR_OWNER_CKPT */
	__le64 alloc_off;         /* allocator state (struct smr_alloc_ref) */
	__le64 alloc_len;
	__le64 alloc_csum;
	__le64 alloc_gen;
	__le64 nr_nodes;          /* nodes written since mkfs (statistics) */
	__le32 nr_roots;          /* used entries of roots[] */
	__le32 nr_pending;        /* extents after this structure */
	__le64 prev_gen;          /* the checkpoint this one follows; 0 none */
	__le64 reserved0;         /* zero */
	struct smr_droot roots[SMR_CKPT_MAX_ROOTS];
	__le64 gc_runs;           /* zones the cleaner tried since mkfs */
	__le64 gc_zones;          /* zones it emptied since mkfs */
	__le64 gc_usecs;          /* time it took since mkfs, microseconds */
	uint8_t reserved1[40];    /* zero */
	/* struct smr_dextent pending[nr_pending] follows. */
};
SMR_ONDISK_SIZE(struct smr_dckpt, 512);
SMR_ONDISK_OFFSET(struct smr_dckpt, alloc_off, 64);
SMR_ONDISK_OFFSET(struct smr_dckpt, alloc_len, 72);
SMR_ONDISK_OFFSET(struct smr_dckpt, alloc_csum, 80);
SMR_ONDISK_OFFSET(struct smr_dckpt, alloc_gen, 88);
SMR_ONDISK_OFFSET(struct smr_dckpt, nr_nodes, 96);
SMR_ONDISK_OFFSET(struct smr_dckpt, nr_roots, 104);
SMR_ONDISK_OFFSET(struct smr_dckpt, nr_pending, 108);
SMR_ONDISK_OFFSET(struct smr_dckpt, prev_gen, 112);
SMR_ONDISK_OFFSET(struct smr_dckpt, reserved0, 120);
SMR_ONDISK_OFFSET(struct smr_dckpt, roots, 128);
SMR_ONDISK_OFFSET(struct smr_dckpt, gc_runs, 448);
SMR_ONDISK_OFFSET(struct smr_dckpt, gc_zones, 456);
SMR_ONDISK_OFFSET(struct smr_dckpt, gc_usecs, 464);
SMR_ONDISK_OFFSET(struct smr_dckpt, reserved1, 472);
#define SMR_CKPT_MAX_PENDING \
	((SMR_CKPT_SIZE - sizeof(struct smr_dckpt)) / sizeof(struct smr_dextent))

/* ========================================================================
 * fsync log (cow)
 *
 * A log record is the change of the trees since the newest checkpoint (or
 * the record before it), written by fsync instead of a commit. It is cut
 * into pieces of SMR_CKPT_SIZE bytes, each in a place a checkpoint could be
 * (a ring slot or a log zone record), each self-describing: this header,
 * then up to SMR_LOG_PIECE_ROOM bytes of the record's payload, then zeros.
 * hdr.gen is the generation of the checkpoint the record follows. The
 * payload is a struct smr_dlog_head, the claims, the frees, then the items
 * (docs/FORMAT.md, "fsync log").
 * ======================================================================== */
struct smr_dlog {
	struct smr_blk_hdr hdr;   /* SMR_MAGIC_LOG, owner SMR_OWNER_LOG,
				   * gen = the base checkpoint's */
	__le64 seq;               /* record number after the base, from 1 */
	__le32 piece;             /* this piece, 0 .. nr_pieces - 1 */
	__le32 nr_pieces;         /* pieces of the record */
	__le32 len;               /* payload bytes in this piece */
	__le32 reserved0;         /* zero */
	__le64 total;             /* payload bytes of the whole record */
	uint8_t reserved1[32];    /* zero */
	/* payload bytes follow */
};
SMR_ONDISK_SIZE(struct smr_dlog, 128);
SMR_ONDISK_OFFSET(struct smr_dlog, seq, 64);
SMR_ONDISK_OFFSET(struct smr_dlog, piece, 72);
SMR_ONDISK_OFFSET(struct smr_dlog, nr_pieces, 76);
SMR_ONDISK_OFFSET(struct smr_dlog, len, 80);
SMR_ONDISK_OFFSET(struct smr_dlog, reserved0, 84);
SMR_ONDISK_OFFSET(struct smr_dlog, total, 88);
SMR_ONDISK_OFFSET(struct smr_dlog, reserved1, 96);
#define SMR_LOG_PIECE_ROOM (SMR_CKPT_SIZE - sizeof(struct smr_dlog))
#define SMR_LOG_MAX_PIECES 8

struct smr_dlog_head {
	__le32 nr_claims;  /* struct smr_dlog_claim that follow */
	__le32 nr_frees;   /* then struct smr_dextent */
	__le32 nr_items;   /* then items: struct smr_dlog_item + value */
	__le32 reserved;   /* zero */
};
SMR_ONDISK_SIZE(struct smr_dlog_head, 16);

/* Data written since the base that the record's trees reference. */
struct smr_dlog_claim {
	__le64 off;          /* device byte offset */
	__le64 len;          /* bytes, whole blocks */
	__le64 csum;         /* XXH3-64 (seed 0) of the bytes */
	__le64 owner_objid;  /* reverse-map owner (flags & OWNED) */
	__le64 owner_offset;
	uint8_t owner_type;
	uint8_t flags;       /* SMR_LOG_CLAIM_OWNED */
	uint8_t pad[6];      /* zero */
};
SMR_ONDISK_SIZE(struct smr_dlog_claim, 48);
SMR_ONDISK_OFFSET(struct smr_dlog_claim, owner_type, 40);
#define SMR_LOG_CLAIM_OWNED 0x01

/* An item of the FS tree as it is after the record (or deleted). */
struct smr_dlog_item {
	__le64 objid;
	__le64 offset;
	uint8_t type;
	uint8_t op;          /* SMR_LOG_OP_PUT, SMR_LOG_OP_DELETE */
	__le16 len;          /* value bytes that follow (0 for a delete) */
	__le32 reserved;     /* zero */
	/* value, then zeros to a multiple of 8 bytes */
};
SMR_ONDISK_SIZE(struct smr_dlog_item, 24);
SMR_ONDISK_OFFSET(struct smr_dlog_item, type, 16);
SMR_ONDISK_OFFSET(struct smr_dlog_item, len, 18);
#define SMR_LOG_OP_PUT 1
#define SMR_LOG_OP_DELETE 2

/* ========================================================================
 * B-tree nodes (cow)
 *
 * A node of sb.node_size bytes: struct smr_dnode, then nritems entries.
 * Leaf (level 0): struct smr_ditem entries growing up from byte 96, their
 * values packed down from the end of the node in slot order (item 0's value
 * ends at the node's end, item i's ends where item i-1's starts); data_off
 * is the lowest value byte. Internal node: struct smr_dkptr entries, each
 * the first key of a child, the child's address and the generation in the
 * child's header. Keys strictly increase within a node.
 * ======================================================================== */
#define SMR_NODE_MIN_SIZE 16384
#define SMR_NODE_MAX_SIZE 65536
#define SMR_BT_MAX_LEVEL 8

struct smr_dnode {
	struct smr_blk_hdr hdr;  /* SMR_MAGIC_NODE, owner = tree id */
	__le32 nritems;
	__le32 data_off;         /* leaf: first value byte; internal: 0 */
	__le64 reserved[3];      /* zero */
};
SMR_ONDISK_SIZE(struct smr_dnode, 96);
SMR_ONDISK_OFFSET(struct smr_dnode, nritems, 64);
SMR_ONDISK_OFFSET(struct smr_dnode, data_off, 68);
SMR_ONDISK_OFFSET(struct smr_dnode, reserved, 72);

struct smr_ditem {
	__le64 objid;
	__le64 offset;
	uint8_t type;
	uint8_t pad;     /* zero */
	__le16 size;     /* value bytes */
	__le32 valoff;   /* value's byte offset in the node */
};
SMR_ONDISK_SIZE(struct smr_ditem, 24);
SMR_ONDISK_OFFSET(struct smr_ditem, offset, 8);
SMR_ONDISK_OFFSET(struct smr_ditem, type, 16);
SMR_ONDISK_OFFSET(struct smr_ditem, pad, 17);
SMR_ONDISK_OFFSET(struct smr_ditem, size, 18);
SMR_ONDISK_OFFSET(struct smr_ditem, valoff, 20);

struct smr_dkptr {
	__le64 objid;
	__le64 offset;
	uint8_t type;
	uint8_t pad[7];  /* zero */
	__le64 addr;     /* child node */
	__le64 gen;      /* generation in the child's header */
};
SMR_ONDISK_SIZE(struct smr_dkptr, 40);
SMR_ONDISK_OFFSET(struct smr_dkptr, offset, 8);
SMR_ONDISK_OFFSET(struct smr_dkptr, type, 16);
SMR_ONDISK_OFFSET(struct smr_dkptr, pad, 17);
SMR_ONDISK_OFFSET(struct smr_dkptr, addr, 24);
SMR_ONDISK_OFFSET(struct smr_dkptr, gen, 32);

#include "format/ondisk_alloc.h"
#include "format/ondisk_ns.h"
#include "format/ondisk_rmap.h"

#endif /* SMR_FORMAT_ONDISK_H */
