/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ondisk_ns.h - on-disk layouts of the namespace layer's items (inodes,
 * directory entries, extents, xattrs). Part of ondisk.h (included from it);
 * the same rules apply.
 *
 * All namespace items live in the FS tree (SMR_TREE_FS), keyed by
 * (objid, type, offset):
 *
 *   (0,   META,     0)                       struct smr_ns_meta_d
 *   (0,   ORPHAN,   ino)                     empty: ino has nlink 0 but is open
 *   (ino, INODE,    0)                       struct smr_ns_inode_d
 *   (dir, DIRENT,   hash(name) & ~0xff | s)  struct smr_ns_dirent_d + name;
 *                                            s = collision slot 0..255
 *   (dir, DIRINDEX, seq)                     struct smr_ns_dirent_d + name;
 *                                            seq = readdir cookie
 *   (ino, XATTR,    hash(name) & ~0xffff | s << 8 | part)
 *                                            part 0: smr_ns_xattr_d + name +
 *                                            value bytes; part k: value bytes
 *   (ino, EXTENT,   file offset)             struct smr_ns_extent_d + csums
 *   (ino, SYMLINK,  part)                    target bytes, SMR_NS_SYMLINK_PART
 *                                            bytes per part
 *   (0,   TAIL,     ino << 1 | part)          file bytes of ino's tail block,
 *                                            SMR_NS_TAIL_PART per part
 *                                            (namespace version 2)
 */
#ifndef SMR_FORMAT_ONDISK_NS_H
#define SMR_FORMAT_ONDISK_NS_H

#include <stdbool.h>

/* Item types of the FS tree. */
#define SMR_NS_T_INODE 1
#define SMR_NS_T_DIRENT 2
#define SMR_NS_T_DIRINDEX 3
#define SMR_NS_T_XATTR 4
#define SMR_NS_T_EXTENT 5
#define SMR_NS_T_SYMLINK 6
#define SMR_NS_T_ORPHAN 7
#define SMR_NS_T_META 8
#define SMR_NS_T_TAIL 9

/* Object id of the namespace's own items (META, ORPHAN). */
#define SMR_NS_META_OBJID 0ULL
/* Inode number of the root directory. */
#define SMR_NS_ROOT_INO 1ULL
/* Seed of the XXH3-64 name hash of DIRENT and XATTR keys. */
#define SMR_NS_HASH_SEED 0x736d7266736e616dULL /* "smrfsnam" */
/* Collision slots of a DIRENT hash: the key's low 8 bits. */
#define SMR_NS_DIRENT_SLOTS 256
/*
 * Layout version in smr_ns_meta_d.version: what mkfs writes. Version 2
 * adds TAIL items (a file's block held in the tree); a version 1
 * namespace has none, and is mounted without making any.
 */
#define SMR_NS_VERSION 2
/* The oldest version still mounted. */
#define SMR_NS_VERSION_MIN 1
/* First readdir sequence number of a directory (1 and 2 are "." and ".."). */
#define SMR_NS_FIRST_SEQ 3
/* Bytes of symlink target per SYMLINK item. */
#define SMR_NS_SYMLINK_PART 2048
/* Most blocks one extent item covers (so that its checksums fit an item). */
#define SMR_NS_EXTENT_MAX_BLOCKS 256
/* File bytes per TAIL item. */
#define SMR_NS_TAIL_PART 2048
/*
 * The key offset of part @part of @ino's tail block. TAIL items are the
 * namespace's own (object 0), apart from every inode's items: their bytes
 * do not thin out the leaves a walk of the inodes reads, and new inodes
 * still append at the end of the tree. A block (at most the superblock's
 * 4096 bytes) takes two parts at most.
 */
#define SMR_NS_TAIL_OFFSET(ino, part) ((uint64_t)(ino) << 1 | (part))

/* (0, META, 0): namespace-wide counters. 64 bytes. */
struct smr_ns_meta_d {
	__le32 version;      /* SMR_NS_VERSION */
	__le32 reserved0;    /* zero */
	__le64 next_ino;     /* next inode number to hand out; never reused */
	__le64 next_gen;     /* next inode generation */
	__le64 nr_inodes;    /* inodes in use */
	uint8_t reserved[32];
};
SMR_ONDISK_SIZE(struct smr_ns_meta_d, 64);
SMR_ONDISK_OFFSET(struct smr_ns_meta_d, version, 0);
SMR_ONDISK_OFFSET(struct smr_ns_meta_d, next_ino, 8);
SMR_ONDISK_OFFSET(struct smr_ns_meta_d, next_gen, 16);
SMR_ONDISK_OFFSET(struct smr_ns_meta_d, nr_inodes, 24);
SMR_ONDISK_OFFSET(struct smr_ns_meta_d, reserved, 32);

/* (ino, INODE, 0). Times are nanoseconds since the epoch (signed). */
struct smr_ns_inode_d {
	__le32 mode;     /* S_IFMT type and permission bits */
	__le32 uid;
	__le32 gid;
	__le32 nlink;
	__le64 size;     /* bytes */
	__le64 bytes;    /* bytes of data extents held */
	__le64 atime;
	__le64 mtime;
	__le64 ctime;
	__le64 crtime;   /* creation time */
	__le64 rdev;     /* device number of character/block nodes */
	__le64 gen;      /* generation: seeds the data checksums */
	__le64 flags;    /* zero; reserved for inode flags */
	__le64 next_seq; /* directories: next readdir sequence number */
	__le64 parent;   /* directories: the parent directory's inode */
	__le64 tail;     /* with tail_len: file offset of the block in TAIL items */
	__le32 tail_len; /* bytes of that block held there; 0: no such block */
	uint8_t reserved[12];
};
SMR_ONDISK_SIZE(struct smr_ns_inode_d, 128);
SMR_ONDISK_OFFSET(struct smr_ns_inode_d, mode, 0);
SMR_ONDISK_OFFSET(struct smr_ns_inode_d, uid, 4);
SMR_ONDISK_OFFSET(struct smr_ns_inode_d, gid, 8);
SMR_ONDISK_OFFSET(struct smr_ns_inode_d, nlink, 12);
SMR_ONDISK_OFFSET(struct smr_ns_inode_d, size, 16);
SMR_ONDISK_OFFSET(struct smr_ns_inode_d, bytes, 24);
SMR_ONDISK_OFFSET(struct smr_ns_inode_d, atime, 32);
SMR_ONDISK_OFFSET(struct smr_ns_inode_d, mtime, 40);
SMR_ONDISK_OFFSET(struct smr_ns_inode_d, ctime, 48);
SMR_ONDISK_OFFSET(struct smr_ns_inode_d, crtime, 56);
SMR_ONDISK_OFFSET(struct smr_ns_inode_d, rdev, 64);
SMR_ONDISK_OFFSET(struct smr_ns_inode_d, gen, 72);
SMR_ONDISK_OFFSET(struct smr_ns_inode_d, flags, 80);
SMR_ONDISK_OFFSET(struct smr_ns_inode_d, next_seq, 88);
SMR_ONDISK_OFFSET(struct smr_ns_inode_d, parent, 96);
SMR_ONDISK_OFFSET(struct smr_ns_inode_d, tail, 104);
SMR_ONDISK_OFFSET(struct smr_ns_inode_d, tail_len, 112);
SMR_ONDISK_OFFSET(struct smr_ns_inode_d, reserved, 116);

/*
 * (dir, DIRENT, hash slot) and (dir, DIRINDEX, seq): one directory entry,
 * followed by name_len bytes of name (no NUL). In a DIRENT item `ref` is the
 * entry's DIRINDEX sequence number; in a DIRINDEX item it is the offset of
 * the entry's DIRENT key, so each finds the other.
 */
struct smr_ns_dirent_d {
	__le64 ino;
	__le64 ref;
	uint8_t dtype;    /* DT_* of the target */
	uint8_t reserved0;
	__le16 name_len;  /* 1..255 */
	__le32 reserved1;
	uint8_t name[];
};
SMR_ONDISK_SIZE(struct smr_ns_dirent_d, 24);
SMR_ONDISK_OFFSET(struct smr_ns_dirent_d, ino, 0);
SMR_ONDISK_OFFSET(struct smr_ns_dirent_d, ref, 8);
SMR_ONDISK_OFFSET(struct smr_ns_dirent_d, dtype, 16);
SMR_ONDISK_OFFSET(struct smr_ns_dirent_d, name_len, 18);
SMR_ONDISK_OFFSET(struct smr_ns_dirent_d, reserved1, 20);

/*
 * (ino, XATTR, part 0): the header, name_len bytes of the full name
 * ("user.x"), then the first bytes of the value; parts 1.. hold the rest of
 * the value in order, each as full as an item allows.
 */
struct smr_ns_xattr_d {
	__le16 name_len;  /* 1..255 */
	__le16 reserved0;
	__le32 value_len; /* 0..65536 */
	uint8_t name[];
};
SMR_ONDISK_SIZE(struct smr_ns_xattr_d, 8);
SMR_ONDISK_OFFSET(struct smr_ns_xattr_d, name_len, 0);
SMR_ONDISK_OFFSET(struct smr_ns_xattr_d, value_len, 4);

/*
 * (ino, EXTENT, file offset): file bytes [offset, offset + len) are at
 * device bytes [dev_off, dev_off + len). Followed by nr_csums (= len / block
 * size) XXH3-64 checksums, one per block, each seeded with
 * smr_ns_csum_seed(ino, file offset of the block, gen).
 */
struct smr_ns_extent_d {
	__le64 dev_off;
	__le64 len;       /* a multiple of the block size */
	__le64 gen;       /* the inode generation the checksums are seeded with */
	__le32 nr_csums;
	__le32 flags;     /* zero */
	__le64 csums[];
};
SMR_ONDISK_SIZE(struct smr_ns_extent_d, 32);
SMR_ONDISK_OFFSET(struct smr_ns_extent_d, dev_off, 0);
SMR_ONDISK_OFFSET(struct smr_ns_extent_d, len, 8);
SMR_ONDISK_OFFSET(struct smr_ns_extent_d, gen, 16);
SMR_ONDISK_OFFSET(struct smr_ns_extent_d, nr_csums, 24);
SMR_ONDISK_OFFSET(struct smr_ns_extent_d, flags, 28);
SMR_ONDISK_OFFSET(struct smr_ns_extent_d, csums, 32);

/*
 * (0, TAIL, SMR_NS_TAIL_OFFSET(ino, k)), k = 0, 1: the bytes
 * [tail, tail + tail_len) of a regular file whose inode names that block
 * (smr_ns_inode_d.tail, tail_len; 1 <= tail_len < block size), part k
 * holding those from tail + k * SMR_NS_TAIL_PART, SMR_NS_TAIL_PART bytes
 * but the last. A file's last partial block is kept here while small
 * writes append to it, instead of being written to the device again with
 * every write. No extent covers the block; its bytes past tail_len read
 * as zeros, and tail + tail_len <= size. The block counts as a whole
 * block in smr_ns_inode_d.bytes.
 */

/* Does an inode's tail block (@tail, @tail_len: none if 0) fit its file,
 * a @regular one of @size bytes, blocks of @bs, namespace @version? */
static inline bool smr_ns_tail_fits(bool regular, uint32_t version,
				    uint32_t bs, uint64_t size, uint64_t tail,
				    uint32_t tail_len)
{
	return !tail_len || (regular && version >= 2 && tail % bs == 0 &&
			     tail_len < bs && tail + tail_len <= size);
}

/* Is the TAIL item of @len bytes at key offset @offset the next part of
 * its inode's tail block of @tail_len bytes, @seen of them met so far? */
static inline bool smr_ns_tail_next(uint64_t offset, size_t len,
				    uint32_t seen, uint32_t tail_len)
{
	uint32_t want = tail_len - seen < SMR_NS_TAIL_PART ?
				tail_len - seen : SMR_NS_TAIL_PART;

	return seen < tail_len && seen == (offset & 1) * SMR_NS_TAIL_PART &&
	       len == want;
}

#endif /* SMR_FORMAT_ONDISK_NS_H */
