/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * file.c - file data: the extent map, reads with checksum verification,
 * copy-on-write writes, truncate, fallocate, lseek, fsync.
 *
 * A file's data is a map of EXTENT items (file offset -> device extent),
 * block-aligned and never overlapping; what no extent covers is a hole and
 * reads as zeros. Data is never overwritten: a write goes to new space from
 * the engine's hot data stream (near the device end of the extent before
 * it), the extents it replaces are cut out of the map and freed, and a write
 * that covers part of a block first reads the rest of the block
 * (read-modify-write). Invariant: the bytes of the last block past the file
 * size are zero (truncate zeroes them), so growing a file shows zeros.
 *
 * Every block carries an XXH3-64 checksum in its extent item, seeded with
 * the inode number, the block's file offset and the inode generation, so a
 * block of another file, another offset or a reused inode does not verify.
 * A mismatch is -EIO and a log line, never wrong data.
 */
#include "namespace/ns_priv.h"

#include <endian.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/blk.h"

/* Largest offset + 1 a file may reach. */
#define NS_MAX_FILE_END ((uint64_t)INT64_MAX)
/* Extents one data write may come back as. */
#define NS_WRITE_EXTS 16
/*
 * Most blocks of an extent item this code makes (the format allows
 * SMR_NS_EXTENT_MAX_BLOCKS). An overwrite inside an item rewrites the
 * checksums of both parts left of it, in the tree and in the next fsync
 * record: 2 KiB a write for items of 256 blocks, so that under random
 * writes into a file laid out in big writes a record of some 60 writes
 * outgrew the log and fsync committed instead. Items of 32 blocks make the
 * map of a file written in big writes a fifth larger.
 */
#define NS_EXT_ITEM_BLOCKS 32

struct ns_ext {
	uint64_t foff;
	uint64_t dev;
	uint64_t len;
	uint64_t gen;
	uint32_t n;
	uint64_t csums[SMR_NS_EXTENT_MAX_BLOCKS];
};

union ns_ext_buf {
	struct smr_ns_extent_d d;
	uint8_t b[sizeof(struct smr_ns_extent_d) +
		  8 * SMR_NS_EXTENT_MAX_BLOCKS];
};

/* The seed of a data block's checksum: who the block is. */
static uint64_t block_seed(uint64_t ino, uint64_t foff, uint64_t gen)
{
	__le64 id[3] = { htole64(ino), htole64(foff), htole64(gen) };

	return smr_hash64(id, sizeof(id), 0);
}

uint64_t smr_ns_block_csum(const void *blk, uint32_t bs, uint64_t ino,
			   uint64_t foff, uint64_t gen)
{
	return smr_hash64(blk, bs, block_seed(ino, foff, gen));
}

int smr_ns_block_fix_bit(void *blk, uint32_t bs, uint64_t ino, uint64_t foff,
			 uint64_t gen, uint64_t want)
{
	return smr_hash_fix_bit(blk, bs, block_seed(ino, foff, gen), want);
}

static uint64_t ns_block_csum(struct smr_ns *ns, const void *blk,
			      uint64_t ino, uint64_t foff, uint64_t gen)
{
	return smr_ns_block_csum(blk, ns->bsize, ino, foff, gen);
}

/* ========================================================================
 * Extent items
 * ======================================================================== */

static int ns_ext_decode(struct smr_ns *ns, const struct smr_key *k,
			 const union ns_ext_buf *v, size_t len,
			 struct ns_ext *e)
{
	uint32_t n;

	if (len < sizeof(v->d))
		return smr_corrupt(UINT64_MAX, "extent item too short");
	n = le32toh(v->d.nr_csums);
	e->foff = k->offset;
	e->dev = le64toh(v->d.dev_off);
	e->len = le64toh(v->d.len);
	e->gen = le64toh(v->d.gen);
	e->n = n;
	if (n == 0 || n > SMR_NS_EXTENT_MAX_BLOCKS ||
	    len != sizeof(v->d) + 8 * (size_t)n ||
	    e->len != (uint64_t)n * ns->bsize || e->foff % ns->bsize ||
	    e->foff + e->len < e->foff)
		return smr_corrupt(e->dev, "extent item inconsistent");
	for (uint32_t i = 0; i < n; i++)
		e->csums[i] = le64toh(v->d.csums[i]);
	return 0;
}

/* The item of @e in @v; returns its length. */
static size_t ns_ext_encode(const struct ns_ext *e, union ns_ext_buf *v)
{
	memset(&v->d, 0, sizeof(v->d));
	v->d.dev_off = htole64(e->dev);
	v->d.len = htole64(e->len);
	v->d.gen = htole64(e->gen);
	v->d.nr_csums = htole32(e->n);
	for (uint32_t i = 0; i < e->n; i++)
		v->d.csums[i] = htole64(e->csums[i]);
	return sizeof(v->d) + 8 * (size_t)e->n;
}

static int ns_ext_put(struct smr_ns *ns, struct smr_txn *t, uint64_t ino,
		      const struct ns_ext *e)
{
	struct smr_key k = ns_key(ino, SMR_NS_T_EXTENT, e->foff);
	union ns_ext_buf v;
	size_t len = ns_ext_encode(e, &v);

	return ns_bt_put(ns, t, &k, &v, len);
}

/* Put @e where the map holds @was now (the same key; NULL: nothing). */
static int ns_ext_put_was(struct smr_ns *ns, struct smr_txn *t, uint64_t ino,
			  const struct ns_ext *e, const union ns_ext_buf *was,
			  size_t was_len)
{
	struct smr_key k = ns_key(ino, SMR_NS_T_EXTENT, e->foff);
	union ns_ext_buf v;
	size_t len = ns_ext_encode(e, &v);

	return ns_bt_put_was(ns, t, &k, &v, len, was, was_len);
}

/*
 * The extent that covers @pos (returns 0), else the first one after it
 * (returns 1), else -ENOENT.
 */
static int ns_ext_find(struct smr_ns *ns, uint64_t ino, uint64_t pos,
		       struct ns_ext *e)
{
	struct smr_key from = ns_key(ino, SMR_NS_T_EXTENT, pos), found;
	union ns_ext_buf v;
	size_t len = sizeof(v);
	int rc;

	rc = smr_bt_prev(ns->cow, SMR_TREE_FS, &from, &found, &v, &len);
	if (rc && rc != -ENOENT)
		return rc;
	if (rc == 0 && found.objid == ino && found.type == SMR_NS_T_EXTENT) {
		rc = ns_ext_decode(ns, &found, &v, len, e);
		if (rc)
			return rc;
		if (e->foff + e->len > pos)
			return 0;
	}
	len = sizeof(v);
	rc = smr_bt_next(ns->cow, SMR_TREE_FS, &from, &found, &v, &len);
	if (rc)
		return rc;
	if (found.objid != ino || found.type != SMR_NS_T_EXTENT)
		return -ENOENT;
	rc = ns_ext_decode(ns, &found, &v, len, e);
	return rc ? rc : 1;
}

/* ========================================================================
 * Tails
 * ======================================================================== */

/*
 * A file appended to in small writes (a log, a file written a line at a
 * time) would have its last block, partial, written to new space by every
 * write: a hundred bytes appended cost a block of device writes and left
 * the block before it dead for the cleaner. Instead, a write that ends
 * inside a block at or past the end of the file (or lies within the bytes
 * the tail holds) keeps that block's bytes in TAIL items of the tree
 * (docs/FORMAT.md), where the next append changes an item; the block
 * reaches the device with the tree at the next commit or fsync record,
 * and as data once a write fills it or covers it. One block per file at most
 * (ip->tail, ip->tail_len), with no extent over it; past tail_len it
 * reads as zeros. Whatever maps data over the block, or cuts it out,
 * drops the tail (ns_punch_locked); a shrinking truncate or a zeroing
 * inside it changes the items (ns_zero_partial). Namespace version 2.
 */

/* Does [@a, @b) touch @ip's tail block? */
static bool ns_tail_within(const struct smr_ns *ns, const struct ns_inode *ip,
			   uint64_t a, uint64_t b)
{
	return ip->tail_len && ip->tail < b && ip->tail + ns->bsize > a;
}

static uint32_t ns_tail_parts(uint32_t len)
{
	return (uint32_t)SMR_DIV_ROUND_UP(len, SMR_NS_TAIL_PART);
}

/* The key of part @p of @ino's tail block. */
static struct smr_key ns_tail_key(uint64_t ino, uint32_t p)
{
	return ns_key(SMR_NS_META_OBJID, SMR_NS_T_TAIL,
		      SMR_NS_TAIL_OFFSET(ino, p));
}

_Static_assert(SMR_SB_SIZE <= 2 * SMR_NS_TAIL_PART,
	       "a tail block takes two parts at most");

/* @ip's tail block into @blk (ns->bsize bytes, zeros past tail_len). */
static int ns_tail_read(struct smr_ns *ns, const struct ns_inode *ip,
			uint8_t *blk)
{
	memset(blk, 0, ns->bsize);
	for (uint32_t p = 0; p < ns_tail_parts(ip->tail_len); p++) {
		uint64_t at = (uint64_t)p * SMR_NS_TAIL_PART;
		struct smr_key k = ns_tail_key(ip->ino, p);
		size_t want = SMR_MIN(SMR_NS_TAIL_PART, ip->tail_len - at);
		size_t len = want;
		int rc = smr_bt_lookup(ns->cow, SMR_TREE_FS, &k, blk + at,
				       &len);

		if (rc == -ENOENT || (!rc && len != want)) {
			smr_err("inode %llu: tail item at file offset %llu %s",
				(unsigned long long)ip->ino,
				(unsigned long long)(ip->tail + at),
				rc ? "missing" : "of the wrong size");
			return smr_corrupt(UINT64_MAX, "tail item");
		}
		if (rc)
			return rc;
	}
	return 0;
}

/*
 * Hold the first @len bytes of @blk as @ip's tail block at @at (a tail
 * elsewhere was dropped before); the bytes before @from are what the
 * items hold already. The caller puts the inode.
 */
static int ns_tail_put(struct smr_ns *ns, struct smr_txn *t,
		       struct ns_inode *ip, uint64_t at, const uint8_t *blk,
		       uint32_t len, uint32_t from)
{
	uint32_t had = ip->tail_len ? ns_tail_parts(ip->tail_len) : 0;
	uint32_t parts = ns_tail_parts(len);
	int rc = 0;

	for (uint32_t p = from / SMR_NS_TAIL_PART; !rc && p < parts; p++) {
		uint64_t o = (uint64_t)p * SMR_NS_TAIL_PART;
		struct smr_key k = ns_tail_key(ip->ino, p);

		rc = ns_bt_put(ns, t, &k, blk + o,
			       SMR_MIN(SMR_NS_TAIL_PART, len - o));
	}
	for (uint32_t p = parts; !rc && p < had; p++) {
		struct smr_key k = ns_tail_key(ip->ino, p);

		rc = ns_bt_delete(ns, t, &k);
	}
	if (rc)
		return rc;
	if (!ip->tail_len)
		ip->bytes += ns->bsize;
	ip->tail = at;
	ip->tail_len = len;
	return 0;
}

/* Drop @ip's tail block (its bytes go). The caller puts the inode. */
static int ns_tail_drop(struct smr_ns *ns, struct smr_txn *t,
			struct ns_inode *ip)
{
	for (uint32_t p = 0; p < ns_tail_parts(ip->tail_len); p++) {
		struct smr_key k = ns_tail_key(ip->ino, p);
		int rc = ns_bt_delete(ns, t, &k);

		if (rc)
			return rc;
	}
	ip->bytes -= SMR_MIN(ip->bytes, (uint64_t)ns->bsize);
	ip->tail = 0;
	ip->tail_len = 0;
	return 0;
}

/*
 * Cut [@a, @b) (block-aligned) out of the map: extents inside go, extents
 * across an end keep the part outside, and the device space of what was cut
 * is freed when the transaction commits; a tail block inside goes too. If
 * @left is not NULL, it is set to the extent the map keeps just before @a
 * when the cut shortened one (left->n == 0 otherwise), which saves the
 * caller a lookup.
 *
 * If @repl is not NULL (an extent of exactly [@a, @b)) and the map holds
 * one extent of exactly [@a, @b), @repl takes its item in place, which
 * moves no other item of the leaf, and *@replaced is set; otherwise the
 * caller puts @repl afterwards.
 *
 * If @at is not NULL, it is the extent that covers @a as the map holds it
 * now (the caller found it and knows nothing changed since), which saves
 * the first lookup; it is scratch space afterwards.
 *
 * The items changed here were just read, so the undo log is given what
 * they held; a key at @b inside an extent holds nothing (extents do not
 * overlap).
 */
static int ns_punch_locked(struct smr_ns *ns, struct smr_txn *t,
			   struct ns_inode *ip, uint64_t a, uint64_t b,
			   struct ns_ext *left, const struct ns_ext *repl,
			   bool *replaced, struct ns_ext *at)
{
	/* A few KiB on the stack: no allocation for every write. */
	struct ns_ext ebuf, piecebuf, *e = &ebuf, *piece = &piecebuf;
	union ns_ext_buf wasbuf, *was = &wasbuf;
	uint64_t pos = a, bs = ns->bsize;
	int rc = 0;

	if (left)
		left->n = 0;
	if (replaced)
		*replaced = false;
	if (ns_tail_within(ns, ip, a, b)) {
		rc = ns_tail_drop(ns, t, ip);
		if (rc)
			return rc;
	}
	while (pos < b) {
		uint64_t s, end, os, oe;
		struct smr_key k;
		size_t was_len;

		if (at && pos == a) {
			e = at;
			rc = 0;
		} else {
			e = &ebuf;
			rc = ns_ext_find(ns, ip->ino, pos, e);
		}
		if (rc == -ENOENT) {
			rc = 0;
			break;
		}
		if (rc < 0)
			break;
		s = e->foff;
		end = s + e->len;
		if (s >= b) {
			rc = 0;
			break;
		}
		os = SMR_MAX(s, a);
		oe = SMR_MIN(end, b);
		rc = ns_data_release(ns, t, e->dev + (os - s), oe - os);
		if (rc)
			break;
		ip->bytes -= SMR_MIN(ip->bytes, oe - os);
		was_len = ns_ext_encode(e, was);
		if (end > b) {
			uint32_t skip = (uint32_t)((b - s) / bs);

			piece->foff = b;
			piece->dev = e->dev + (b - s);
			piece->len = end - b;
			piece->gen = e->gen;
			piece->n = e->n - skip;
			memcpy(piece->csums, e->csums + skip,
			       8 * (size_t)piece->n);
			rc = ns_ext_put_was(ns, t, ip->ino, piece, NULL, 0);
			if (rc)
				break;
		}
		if (s < a) {
			e->len = a - s;
			e->n = (uint32_t)(e->len / bs);
			rc = ns_ext_put_was(ns, t, ip->ino, e, was, was_len);
			if (!rc && left)
				*left = *e;
		} else if (repl && s == a && end == b) {
			rc = ns_ext_put_was(ns, t, ip->ino, repl, was, was_len);
			*replaced = !rc;
		} else {
			k = ns_key(ip->ino, SMR_NS_T_EXTENT, s);
			rc = ns_bt_delete_was(ns, t, &k, was, was_len);
		}
		if (rc)
			break;
		pos = oe;
	}
	return rc;
}

int ns_extents_free_all_locked(struct smr_ns *ns, struct smr_txn *t,
			       struct ns_inode *ip)
{
	return ns_punch_locked(ns, t, ip, 0,
			       SMR_ROUND_DOWN(NS_MAX_FILE_END, ns->bsize), NULL,
			       NULL, NULL, NULL);
}

int ns_extents_free_part_locked(struct smr_ns *ns, struct smr_txn *t,
				struct ns_inode *ip, uint64_t part)
{
	uint64_t end = SMR_ROUND_DOWN(NS_MAX_FILE_END, ns->bsize);
	struct ns_ext e;
	int rc;

	if (ip->tail_len) {
		rc = ns_tail_drop(ns, t, ip);
		if (!rc)
			rc = ns_inode_put(ns, t, ip);
		return rc ? rc : 1;
	}
	rc = ns_ext_find(ns, ip->ino, 0, &e);
	if (rc == -ENOENT)
		return 0;
	if (rc < 0)
		return rc;
	rc = ns_punch_locked(ns, t, ip, e.foff,
			     e.foff < end - part ? e.foff + part : end, NULL,
			     NULL, NULL, &e);
	if (!rc)
		rc = ns_inode_put(ns, t, ip);
	return rc ? rc : 1;
}

/* ========================================================================
 * Reading
 * ======================================================================== */

/*
 * What holds @pos of a read of @ip that ends at @end: a hole, or the tail
 * block, is copied into @dst (which stands for @pos) at once and 0
 * returned; an extent is left in @e and 1 returned. Either way *@next is
 * where that part of the read ends. Namespace lock held.
 */
static int ns_read_find(struct smr_ns *ns, const struct ns_inode *ip,
			uint64_t pos, uint64_t end, struct ns_ext *e,
			uint8_t *dst, uint64_t *next)
{
	int rc;

	if (ns_tail_within(ns, ip, pos, pos + 1)) {
		uint8_t *blk = malloc(ns->bsize);

		if (!blk)
			return -ENOMEM;
		rc = ns_tail_read(ns, ip, blk);
		*next = SMR_MIN(end, ip->tail + ns->bsize);
		if (!rc)
			memcpy(dst, blk + (pos - ip->tail), *next - pos);
		free(blk);
		return rc;
	}
	rc = ns_ext_find(ns, ip->ino, pos, e);
	if (rc < 0 && rc != -ENOENT)
		return rc;
	if (rc != 0) {
		/* A hole up to the next extent, the tail or the end. */
		*next = rc == 1 ? SMR_MIN(e->foff, end) : end;
		if (ns_tail_within(ns, ip, pos, *next))
			*next = ip->tail;
		memset(dst, 0, *next - pos);
		return 0;
	}
	*next = SMR_MIN(end, e->foff + e->len);
	return 1;
}

/*
 * Read [@pos, @next) of extent @e into @dst, every block it touches
 * verified. Touches no namespace state: the caller holds the namespace
 * lock, or a read pin (smr_cow_read_pin) taken while it held it.
 */
static int ns_read_extent(struct smr_ns *ns, uint64_t ino,
			  const struct ns_ext *e, uint64_t pos, uint64_t next,
			  uint8_t *dst)
{
	uint64_t bs = ns->bsize;
	uint64_t b0 = (pos - e->foff) / bs;
	uint64_t b1 = SMR_DIV_ROUND_UP(next - e->foff, bs);
	uint64_t nbytes = (b1 - b0) * bs;
	uint8_t *dbuf;
	int rc;

	/* The read fills it whole (holes of a zone as zeros). */
	dbuf = smr_cow_buf_alloc_uninit(nbytes);
	if (!dbuf)
		return -ENOMEM;
	rc = smr_cow_data_read(ns->cow, e->dev + b0 * bs, dbuf, nbytes);
	if (rc) {
		smr_err("inode %llu: reading file offset %llu: %d",
			(unsigned long long)ino,
			(unsigned long long)(e->foff + b0 * bs), rc);
		smr_cow_buf_free(dbuf);
		return rc;
	}
	for (uint64_t i = b0; i < b1; i++) {
		uint64_t foff = e->foff + i * bs;

		if (ns_block_csum(ns, dbuf + (i - b0) * bs, ino, foff,
				  e->gen) == e->csums[i])
			continue;
		/* One flipped bit is put back, as the engine does for its
		 * own blocks: the data read is what was written. */
		if (!smr_ns_block_fix_bit(dbuf + (i - b0) * bs, ns->bsize, ino,
					  foff, e->gen, e->csums[i])) {
			smr_warn("inode %llu: data block at file offset %llu "
				 "(device offset %llu): one bit flipped, "
				 "restored from its checksum (writing the "
				 "block again heals it)",
				 (unsigned long long)ino,
				 (unsigned long long)foff,
				 (unsigned long long)(e->dev + i * bs));
			continue;
		}
		smr_err("inode %llu: data checksum mismatch at file offset %llu (device offset %llu)",
			(unsigned long long)ino, (unsigned long long)foff,
			(unsigned long long)(e->dev + i * bs));
		rc = -EIO;
		break;
	}
	if (!rc)
		memcpy(dst, dbuf + (pos - e->foff - b0 * bs), next - pos);
	smr_cow_buf_free(dbuf);
	return rc;
}

/* Read [@off, @off + @len) of the map into @buf: holes as zeros, every
 * block verified. No size clamping. Namespace lock held throughout. */
static int ns_read_locked(struct smr_ns *ns, const struct ns_inode *ip,
			  uint64_t off, uint64_t len, uint8_t *buf)
{
	uint64_t pos = off, end = off + len, next;
	struct ns_ext e;
	int rc = 0;

	while (pos < end && rc >= 0) {
		rc = ns_read_find(ns, ip, pos, end, &e, buf + (pos - off),
				  &next);
		if (rc == 1)
			rc = ns_read_extent(ns, ip->ino, &e, pos, next,
					    buf + (pos - off));
		pos = next;
	}
	return rc < 0 ? rc : 0;
}

/*
 * As ns_read_locked, but the device reads run without the namespace lock,
 * under a read pin, so that reads do not wait for one another and nothing
 * else waits for the device while it seeks. Called with the lock held,
 * returns with it released: the bytes read, or an error. A change that
 * lands between two extents of the read shows in the later ones, as if it
 * had come just before the read; a truncate below them ends the read
 * there, short, as the kernel's own reads end at a size that shrank.
 */
static ssize_t ns_read_unlock(struct smr_ns *ns, struct ns_inode *ip,
			      uint64_t off, uint64_t len, uint8_t *buf)
{
	uint64_t pos = off, end = off + len, next, ino = ip->ino;
	struct ns_ext e;
	int rc;

	for (;;) {
		rc = ns_read_find(ns, ip, pos, end, &e, buf + (pos - off),
				  &next);
		if (rc == 1) {
			smr_cow_read_pin(ns->cow);
			pthread_mutex_unlock(&ns->lock);
			rc = ns_read_extent(ns, ino, &e, pos, next,
					    buf + (pos - off));
			smr_cow_read_unpin(ns->cow);
			if (rc)
				return rc;
			if (next == end)
				return (ssize_t)len;
			pthread_mutex_lock(&ns->lock);
			rc = ns_inode_get(ns, ino, ip);
			if (!rc && ip->size < end)
				end = SMR_MAX(ip->size, next);
		}
		if (rc < 0 || next == end)
			break;
		pos = next;
	}
	pthread_mutex_unlock(&ns->lock);
	return rc < 0 ? rc : (ssize_t)(next - off);
}

ssize_t smr_ns_read(struct smr_ns *ns, uint64_t ino, uint64_t off,
		    size_t size, void *buf)
{
	struct ns_inode in;
	int err;

	if (off > NS_MAX_FILE_END)
		return -EINVAL;
	pthread_mutex_lock(&ns->lock);
	err = ns_inode_get(ns, ino, &in);
	if (!err && S_ISDIR(in.mode))
		err = -EISDIR;
	else if (!err && !S_ISREG(in.mode))
		err = -EINVAL;
	if (err) {
		pthread_mutex_unlock(&ns->lock);
		return err;
	}
	/* Before the read, so that the lock need not be taken again after. */
	ns_touch_atime_locked(ns, &in);
	if (off >= in.size || size == 0) {
		pthread_mutex_unlock(&ns->lock);
		return 0;
	}
	size = (size_t)SMR_MIN((uint64_t)size, in.size - off);
	return ns_read_unlock(ns, &in, off, size, buf);
}

/* ========================================================================
 * Writing
 * ======================================================================== */

/* Would @e merge into @prev (contiguous in the file and on the device,
 * and the result fits an item)? */
static bool ns_ext_merges(const struct ns_ext *prev, const struct ns_ext *e)
{
	return prev->foff + prev->len == e->foff &&
	       prev->dev + prev->len == e->dev && prev->gen == e->gen &&
	       prev->n + e->n <= NS_EXT_ITEM_BLOCKS;
}

/*
 * Put @e in the map where nothing is mapped (punched), merged into the
 * extent before it when both are contiguous on the device and the result
 * fits an item. @prev is that extent if the caller knows it (prev->n != 0),
 * else it is looked up; either way @prev is scratch space afterwards.
 */
static int ns_ext_insert(struct smr_ns *ns, struct smr_txn *t, uint64_t ino,
			 struct ns_ext *e, struct ns_ext *prev)
{
	union ns_ext_buf *was;
	size_t was_len;
	int rc;

	if (!prev->n && (e->foff < ns->bsize ||
			 ns_ext_find(ns, ino, e->foff - 1, prev) != 0))
		prev->n = 0;
	if (!prev->n || !ns_ext_merges(prev, e))
		return ns_ext_put_was(ns, t, ino, e, NULL, 0);
	was = malloc(sizeof(*was));
	if (!was)
		return -ENOMEM;
	was_len = ns_ext_encode(prev, was);
	memcpy(prev->csums + prev->n, e->csums, 8 * (size_t)e->n);
	prev->n += e->n;
	prev->len += e->len;
	rc = ns_ext_put_was(ns, t, ino, prev, was, was_len);
	free(was);
	return rc;
}

/* One piece of a write: at most SMR_NS_EXTENT_MAX_BLOCKS blocks, written
 * to new space, with the checksums of its blocks. */
struct ns_piece {
	uint64_t a, len;
	int n;
	struct smr_data_extent dx[NS_WRITE_EXTS];
	uint64_t csums[SMR_NS_EXTENT_MAX_BLOCKS];
};

/*
 * What the map holds just before file offset @a, as seen at one moment:
 * the extent that covers @a - 1 (in the caller's struct ns_ext), nothing,
 * or not known; and whether the extent that covers @a was seen (in a second
 * struct ns_ext). Both stay true while the change count of the file's
 * items in the FS tree is @chg.
 */
struct ns_before {
	int what;              /* NS_BEFORE_* */
	bool at;               /* the extent that covers @a was seen */
	uint64_t chg;          /* smr_cow_fs_changes() when it was seen */
};

enum {
	NS_BEFORE_UNKNOWN = 0,
	NS_BEFORE_NONE,        /* no extent covers @a - 1 */
	NS_BEFORE_EXT,         /* the extent in prev covers @a - 1 */
};

/* Is @k an extent item of @ino? */
static bool ns_key_is_ext(const struct smr_key *k, uint64_t ino)
{
	return k->objid == ino && k->type == SMR_NS_T_EXTENT;
}

/*
 * The device end of the extent just before file offset @a (the locality
 * hint of a write there), or 0; *@bf says what was seen, for the map: the
 * extent that covers @a - 1 in *@prev and the one that covers @a in *@at.
 * One search finds both: the last item at or before @a and the one before
 * it. An extent that covers @a either starts before it (and then covers
 * @a - 1 too, as a file offset is whole blocks) or starts at @a (and the
 * one before it is the candidate for @a - 1).
 */
static uint64_t ns_near(struct smr_ns *ns, uint64_t ino, uint64_t a,
			struct ns_ext *prev, struct ns_ext *at,
			struct ns_before *bf)
{
	struct smr_key from = ns_key(ino, SMR_NS_T_EXTENT, a), found[2];
	union ns_ext_buf v[2];
	void *val[2] = { &v[0], &v[1] };
	size_t len[2] = { sizeof(v[0]), sizeof(v[1]) };
	int rc, i = 0;

	bf->chg = smr_cow_fs_changes(ns->cow, ino);
	bf->what = NS_BEFORE_UNKNOWN;
	bf->at = false;
	rc = smr_bt_prev2(ns->cow, SMR_TREE_FS, &from, found, val, len);
	if (rc == -ENOENT)
		rc = 0;
	if (rc < 0)
		return 0;
	if (rc > 0 && ns_key_is_ext(&found[0], ino)) {
		if (ns_ext_decode(ns, &found[0], &v[0], len[0], at))
			return 0;
		bf->at = at->foff + at->len > a;
		/* It starts at @a: the extent before @a is the next one. */
		if (at->foff == a)
			i = 1;
	}
	bf->what = NS_BEFORE_NONE;
	if (a < ns->bsize || rc <= i || !ns_key_is_ext(&found[i], ino))
		return 0;
	if (ns_ext_decode(ns, &found[i], &v[i], len[i], prev)) {
		bf->what = NS_BEFORE_UNKNOWN;
		return 0;
	}
	if (prev->foff + prev->len <= a - 1)
		return 0;
	bf->what = NS_BEFORE_EXT;
	return prev->dev + prev->len;
}

/*
 * Temperature. Data that is rewritten soon should not share a zone with
 * data that stays, or every zone holds some of both and the cleaner moves
 * the staying part again and again. A file's data is taken to live about
 * as long as the file went unwritten before: an overwrite of a file that
 * was written within the last heat_window bytes of user writes (a
 * sixteenth of the capacity: with an eighth, bench_wa's hot/cold writes
 * relocated 3% more) is hot; an overwrite of one written longer ago, or
 * not since it left the table (NS_HEAT_SLOTS inodes, by inode number, kept
 * in memory only), is cold. New data (at or past the end of the file) has no
 * history and goes hot, as it always did. Takes the clock forward by @len;
 * namespace lock held.
 */
static enum smr_data_temp ns_temp_locked(struct smr_ns *ns, uint64_t ino,
					 uint64_t a, uint64_t len,
					 uint64_t size)
{
	/* Fibonacci hashing: consecutive inode numbers spread out. */
	struct ns_heat *h = &ns->heat[(ino * 0x9e3779b97f4a7c15ULL) >>
				      (64 - NS_HEAT_BITS)];
	bool recent = h->ino == ino &&
		      ns->heat_clock - h->clock < ns->heat_window;

	ns->heat_clock += len;
	h->ino = ino;
	h->clock = ns->heat_clock;
	return a >= size || recent ? SMR_DATA_HOT : SMR_DATA_COLD;
}

/*
 * How much of a write of [@a, @a + @len) (whole blocks) into @ino may go
 * ahead: what it adds (the blocks the map does not hold yet) may not take
 * users past the size statfs reports (smr_cow_space_room). What it
 * replaces comes back with its transaction, so an overwrite always goes
 * ahead. Returns the length of the longest prefix that fits, in whole
 * blocks (@len if all of it), -ENOSPC if not one block does, or the
 * error of a lookup. Namespace lock held.
 */
static int64_t ns_admit_locked(struct smr_ns *ns, uint64_t ino, uint64_t a,
			       uint64_t len)
{
	uint64_t room = smr_cow_space_room(ns->cow), pos = a, end = a + len;
	struct ns_ext e;
	int rc;

	/* A write adds at most its length: no lookup while room is ample. */
	if (len <= room)
		return (int64_t)len;
	while (pos < end) {
		uint64_t hole;

		rc = ns_ext_find(ns, ino, pos, &e);
		if (rc < 0 && rc != -ENOENT)
			return rc;
		/* [pos, hole) is not mapped; from hole on, e is (rc >= 0). */
		hole = rc == 0 ? pos : rc == 1 ? SMR_MIN(e.foff, end) : end;
		if (hole - pos > room) {
			pos += SMR_ROUND_DOWN(room, ns->bsize);
			return pos > a ? (int64_t)(pos - a) : -ENOSPC;
		}
		room -= hole - pos;
		pos = hole;
		if (pos < end && rc >= 0)
			pos = SMR_MIN(e.foff + e.len, end);
	}
	return (int64_t)len;
}

/*
 * Write [@a, @a + @len) of whole blocks from @wbuf to new space of
 * temperature @temp. Needs no namespace lock: nothing references the new
 * space until ns_piece_map_locked() maps it.
 */
static int ns_piece_write(struct smr_ns *ns, uint64_t ino, uint64_t a,
			  const uint8_t *wbuf, uint64_t len, uint64_t near,
			  enum smr_data_temp temp,
			  const struct smr_cow_held *held, struct ns_piece *pc)
{
	struct smr_key owner = ns_key(ino, SMR_NS_T_EXTENT, a);

	pc->a = a;
	pc->len = len;
	pc->n = smr_cow_data_write_owned(ns->cow, temp, near, &owner,
					 wbuf, len, pc->dx, NS_WRITE_EXTS,
					 held);
	return pc->n < 0 ? pc->n : 0;
}

/* The checksums of a piece's blocks, which @wbuf holds. */
static void ns_piece_csum(struct smr_ns *ns, uint64_t ino, uint64_t gen,
			  const uint8_t *wbuf, struct ns_piece *pc)
{
	uint64_t bs = ns->bsize;

	for (uint64_t j = 0; j < pc->len / bs; j++)
		pc->csums[j] = ns_block_csum(ns, wbuf + j * bs, ino,
					     pc->a + j * bs, gen);
}

/* A piece of ns_write_aligned() ended: mapped, given back or failed. */
static void ns_piece_end_locked(struct smr_ns *ns)
{
	ns->pieces_out--;
	ns->pieces_done++;
	if (ns->piece_waiters)
		pthread_cond_broadcast(&ns->piece_cv);
}

int ns_clean_for_space(struct smr_ns *ns, uint32_t own)
{
	uint64_t done;
	int rc;

	/* The caller's own pieces hold nothing while it cleans or waits:
	 * two writers out of space must not wait for each other. */
	pthread_mutex_lock(&ns->lock);
	ns->pieces_out -= own;
	if (own && !ns->pieces_out && ns->piece_waiters)
		pthread_cond_broadcast(&ns->piece_cv);
	pthread_mutex_unlock(&ns->lock);

	rc = smr_cow_clean_for_space(ns->cow);

	pthread_mutex_lock(&ns->lock);
	if (rc == -ENOSPC && ns->pieces_out) {
		done = ns->pieces_done;
		ns->piece_waiters++;
		while (ns->pieces_done == done && ns->pieces_out)
			pthread_cond_wait(&ns->piece_cv, &ns->lock);
		ns->piece_waiters--;
		if (ns->pieces_done != done)
			rc = 0;
	}
	ns->pieces_out += own;
	pthread_mutex_unlock(&ns->lock);
	return rc;
}

/* Give back the space of a piece that will not be mapped. */
static void ns_piece_drop(struct smr_txn *t, const struct ns_piece *pc,
			  int from)
{
	for (int i = from; i < pc->n; i++)
		smr_cow_data_free(t, pc->dx[i].off, pc->dx[i].len);
}

/*
 * Map a written piece in place of what was there. @e[1] and @e[2] hold
 * what @bf says ns_near() saw before the piece and at its start, if @bf is
 * not NULL; @e[0] is scratch space.
 */
static int ns_piece_map_locked(struct smr_ns *ns, struct smr_txn *t,
			       struct ns_inode *ip, const struct ns_piece *pc,
			       struct ns_ext *e, const struct ns_before *bf)
{
	struct ns_ext *prev = e + 1, *at = NULL;
	uint64_t bs = ns->bsize, foff = pc->a;
	uint64_t item = (uint64_t)NS_EXT_ITEM_BLOCKS * bs;
	int rc, before = NS_BEFORE_UNKNOWN;
	bool replaced;

	/* Should the call roll back, the new space goes back too. */
	for (int i = 0; i < pc->n; i++) {
		rc = ns_data_new(ns, t, pc->dx[i].off, pc->dx[i].len);
		if (rc) {
			ns_piece_drop(t, pc, i);
			return rc;
		}
	}
	/* What came before the piece, and the extent at its start, are
	 * still so if no item of the file changed since; an extent across
	 * the piece's start is the punch's to cut. */
	if (bf && bf->chg == smr_cow_fs_changes(ns->cow, ip->ino)) {
		before = bf->what;
		if (bf->at)
			at = e + 2;
	}
	if (before == NS_BEFORE_EXT && prev->foff + prev->len != pc->a)
		before = NS_BEFORE_UNKNOWN;
	if (pc->n == 1 && pc->dx[0].len <= item &&
	    before != NS_BEFORE_UNKNOWN) {
		e->foff = pc->a;
		e->dev = pc->dx[0].off;
		e->len = pc->dx[0].len;
		e->gen = ip->gen;
		e->n = (uint32_t)(e->len / bs);
		memcpy(e->csums, pc->csums, 8 * (size_t)e->n);
		if (before == NS_BEFORE_EXT && ns_ext_merges(prev, e))
			goto slow;
		/* An overwrite of one whole extent (every random overwrite
		 * once the file's extents are as small as its writes) puts
		 * the new one in the old one's item: one search instead of
		 * a delete, a lookup of the extent before and an insert;
		 * none if ns_near() found the old one. */
		rc = ns_punch_locked(ns, t, ip, pc->a, pc->a + pc->len, NULL,
				     e, &replaced, at);
		if (!rc && !replaced)
			rc = ns_ext_put_was(ns, t, ip->ino, e, NULL, 0);
		if (!rc)
			ip->bytes += e->len;
		return rc;
	}
slow:
	/* The extent the punch leaves before the piece, if it shortened one,
	 * is the first insert's neighbour. */
	rc = ns_punch_locked(ns, t, ip, pc->a, pc->a + pc->len, prev, NULL,
			     NULL, at);
	for (int i = 0; !rc && i < pc->n; i++) {
		for (uint64_t o = 0; !rc && o < pc->dx[i].len; o += e->len) {
			e->foff = foff;
			e->dev = pc->dx[i].off + o;
			e->len = SMR_MIN(pc->dx[i].len - o, item);
			e->gen = ip->gen;
			e->n = (uint32_t)(e->len / bs);
			memcpy(e->csums, pc->csums + (foff - pc->a) / bs,
			       8 * (size_t)e->n);
			if (foff == pc->a) {
				rc = ns_ext_insert(ns, t, ip->ino, e, prev);
			} else if (o) {
				/* After a full item of this piece: no merge. */
				rc = ns_ext_put_was(ns, t, ip->ino, e, NULL,
						    0);
			} else {
				prev->n = 0;
				rc = ns_ext_insert(ns, t, ip->ino, e, prev);
			}
			if (!rc) {
				ip->bytes += e->len;
				foff += e->len;
			}
		}
	}
	return rc;
}

/*
 * Write one piece [@a, @a + @len) of whole blocks from @wbuf to new space
 * and map it in place of what was there. @held (or NULL) is called once
 * the space for all of it is held (smr_cow_data_write_owned()).
 */
static int ns_write_piece(struct smr_ns *ns, struct smr_txn *t,
			  struct ns_inode *ip, uint64_t a, const uint8_t *wbuf,
			  uint64_t len, bool rescue,
			  const struct smr_cow_held *held, struct ns_ext *e)
{
	struct ns_piece *pc = malloc(sizeof(*pc));
	size_t mark = ns_undo_mark(ns);
	struct ns_inode was = *ip;
	struct ns_before bf;
	int rc;

	if (!pc)
		return -ENOMEM;
	rc = ns_piece_write(ns, ip->ino, a, wbuf, len,
			    ns_near(ns, ip->ino, a, e + 1, e + 2, &bf),
			    rescue ? SMR_DATA_RESCUE :
				     ns_temp_locked(ns, ip->ino, a, len,
						    ip->size),
			    held, pc);
	if (!rc) {
		ns_piece_csum(ns, ip->ino, ip->gen, wbuf, pc);
		rc = ns_piece_map_locked(ns, t, ip, pc, e, &bf);
		/* Earlier pieces stay; nothing of this one does. */
		if (rc && ns_undo_to(ns, t, mark)) {
			ip->bytes = was.bytes;
			ip->tail = was.tail;
			ip->tail_len = was.tail_len;
		}
	}
	free(pc);
	return rc;
}

/*
 * Write @len bytes at @off (any alignment) into the map; @rescue: to the
 * space of SMR_DATA_RESCUE. Size and times are the caller's. Returns 0, or
 * the error with nothing of the failing piece mapped (earlier pieces stay:
 * *@done says how many bytes of @buf made it). @held (or NULL) is called
 * once the space of all @len bytes is held, if one piece takes them all.
 */
static int ns_write_locked(struct smr_ns *ns, struct smr_txn *t,
			   struct ns_inode *ip, uint64_t off,
			   const uint8_t *buf, uint64_t len, bool rescue,
			   const struct smr_cow_held *held, uint64_t *done)
{
	uint64_t bs = ns->bsize, maxp = (uint64_t)SMR_NS_EXTENT_MAX_BLOCKS * bs;
	uint64_t pos = off, end = off + len;
	struct ns_ext *e;
	uint8_t *wbuf;
	int rc = 0;

	*done = 0;
	e = malloc(3 * sizeof(*e));
	/* No piece is longer than the write's blocks: a small write must not
	 * allocate and zero a whole piece's buffer. */
	wbuf = smr_cow_buf_alloc(SMR_MIN(maxp, SMR_ROUND_UP(end, bs) -
					       SMR_ROUND_DOWN(off, bs)));
	if (!e || !wbuf) {
		rc = -ENOMEM;
		goto out_free;
	}
	while (pos < end) {
		uint64_t a = SMR_ROUND_DOWN(pos, bs);
		uint64_t b = SMR_MIN(SMR_ROUND_UP(end, bs), a + maxp);
		uint64_t pend;
		/* What rescues space may take it from the reserve. */
		int64_t fit = rescue ? (int64_t)(b - a) :
				       ns_admit_locked(ns, ip->ino, a, b - a);

		if (fit < 0) {
			rc = (int)fit;
			break;
		}
		b = a + (uint64_t)fit;
		pend = SMR_MIN(end, b);

		/* Read-modify-write the partial blocks at either end. */
		if (pos != a) {
			rc = ns_read_locked(ns, ip, a, bs, wbuf);
			if (rc)
				break;
		}
		if (pend != b && (b - bs != a || pos == a)) {
			rc = ns_read_locked(ns, ip, b - bs, bs,
					    wbuf + (b - bs - a));
			if (rc)
				break;
		}
		/* Past the size is zero (defensively: the invariant says so). */
		if (ip->size < b) {
			uint64_t z = SMR_MAX(ip->size, a);

			memset(wbuf + (z - a), 0, b - z);
		}
		memcpy(wbuf + (pos - a), buf + (pos - off), pend - pos);
		rc = ns_write_piece(ns, t, ip, a, wbuf, b - a, rescue,
				    pos == off && pend == end ? held : NULL, e);
		if (rc)
			break;
		pos = pend;
		*done = pos - off;
	}
out_free:
	smr_cow_buf_free(wbuf);
	free(e);
	return rc;
}

/*
 * Does a write of @size bytes at @off end in a tail block (see "Tails")?
 * It must end inside a block, at or past the end of the file, or lie
 * within the bytes the file's tail block holds (a small file rewritten
 * in place); small writes elsewhere are rare enough to go to the device.
 * (Inode numbers never reach 2^63, where tail keys would wrap.)
 */
static bool ns_tail_takes(const struct smr_ns *ns, const struct ns_inode *ip,
			  uint64_t off, uint64_t size)
{
	uint64_t end = off + size;

	return ns->version >= 2 && end % ns->bsize && ip->ino >> 63 == 0 &&
	       (end >= ip->size ||
		(ip->tail_len && off >= ip->tail &&
		 end <= ip->tail + ip->tail_len));
}

/*
 * A write that ns_tail_takes(): the whole blocks before the one it ends
 * in go to the device as any write's, that block to TAIL items (a tail
 * elsewhere in the file is written out first: one per file). *@done as
 * for ns_write_locked.
 */
static int ns_write_tail_locked(struct smr_ns *ns, struct smr_txn *t,
				struct ns_inode *ip, uint64_t off,
				const uint8_t *buf, uint64_t len,
				uint64_t *done)
{
	uint64_t bs = ns->bsize, end = off + len;
	uint64_t at = SMR_ROUND_DOWN(end, bs), from = SMR_MAX(off, at);
	struct ns_inode was;
	size_t mark;
	uint8_t *blk;
	int rc = 0;

	*done = 0;
	if (off < at) {
		rc = ns_write_locked(ns, t, ip, off, buf, at - off, false,
				     NULL, done);
		if (rc)
			return rc;
	}
	/* The blocks before stay if the rest fails; nothing of it does. */
	mark = ns_undo_mark(ns);
	was = *ip;
	blk = malloc(2 * bs);
	if (!blk)
		return -ENOMEM;
	/* What the block holds now (bytes past the size are zeros). */
	rc = ns_read_locked(ns, ip, at, bs, blk);
	if (!rc && ip->tail_len && ip->tail != at) {
		/* Its tail elsewhere goes to the device as a whole block. */
		rc = ns_tail_read(ns, ip, blk + bs);
		if (!rc) {
			uint64_t wrote;

			rc = ns_write_locked(ns, t, ip, ip->tail, blk + bs, bs,
					     false, NULL, &wrote);
		}
	}
	/* New items take metadata space; a block the map held is freed. */
	if (!rc && !(ip->tail_len && ip->tail == at))
		rc = ns_admit_meta_locked(ns, ns_tail_parts((uint32_t)(end -
								     at)),
					  end - at);
	if (!rc && !(ip->tail_len && ip->tail == at))
		rc = ns_punch_locked(ns, t, ip, at, at + bs, NULL, NULL, NULL,
				     NULL);
	if (!rc) {
		bool had = ip->tail_len && ip->tail == at;
		/* What changes: from the write's start, or from the old
		 * end of the tail if the write leaves a gap of zeros; a
		 * write inside the tail keeps its length. */
		uint32_t first = had ? SMR_MIN((uint32_t)(from - at),
					       ip->tail_len) : 0;
		uint32_t tlen = (uint32_t)(end - at);

		if (had)
			tlen = SMR_MAX(tlen, ip->tail_len);
		memcpy(blk + (from - at), buf + (from - off), end - from);
		rc = ns_tail_put(ns, t, ip, at, blk, tlen, first);
	}
	free(blk);
	if (!rc) {
		*done = len;
	} else if (ns_undo_to(ns, t, mark)) {
		ip->bytes = was.bytes;
		ip->tail = was.tail;
		ip->tail_len = was.tail_len;
	} else {
		*done = 0; /* the caller's end undoes it all */
	}
	return rc;
}

/* An inode that may be written. */
static int ns_get_writable(struct smr_ns *ns, uint64_t ino, struct ns_inode *ip)
{
	int rc = ns_inode_get(ns, ino, ip);

	if (rc)
		return rc;
	if (S_ISDIR(ip->mode))
		return -EISDIR;
	if (!S_ISREG(ip->mode))
		return -EINVAL;
	return 0;
}

/* A write that ended at @end happened: size, times, set-id bits. */
static void ns_wrote(const struct smr_ns_cred *cr, struct ns_inode *ip,
		     uint64_t end)
{
	ip->size = SMR_MAX(ip->size, end);
	ip->mtime = ip->ctime = ns_now();
	if (cr->uid != 0) {
		ip->mode &= ~S_ISUID;
		if (ip->mode & S_IXGRP)
			ip->mode &= ~S_ISGID;
	}
}

/* How a write is answered early (smr_ns_write_ack()). */
struct ns_ack {
	struct smr_ns *ns;
	smr_ns_ack_fn fn;
	void *arg;
	size_t size; /* the write's */
	bool whole;  /* all of it or an error */
	bool done;   /* answered */
};

/* The space for all of a write answered first is held (smr_cow_held):
 * counted in answered_out from before the answer until it ends. */
static void ns_ack_held(void *arg)
{
	struct ns_ack *ak = arg;

	__atomic_add_fetch(&ak->ns->answered_out, 1, __ATOMIC_RELAXED);
	ak->fn(ak->arg, (ssize_t)ak->size);
	ak->done = true;
}

/*
 * May the write @ak answers be answered as soon as the space of its @len
 * bytes (one piece) is held? Only while it is the only write being
 * answered (with several, the woken writer takes the CPU from the thread
 * that holds the lock: ns_write_aligned()), and only if the device takes
 * the data without waiting, as the lock is kept across the device write.
 */
static bool ns_ack_first(struct smr_ns *ns, const struct ns_ack *ak,
			 uint64_t len)
{
	return ak && !ak->done &&
	       __atomic_load_n(&ns->acks_in, __ATOMIC_RELAXED) == 1 &&
	       smr_cow_data_write_quick(ns->cow, len);
}

/*
 * A write answered before its data went out failed after all: the next
 * fsync or flush of the inode reports it, as a kernel filesystem reports
 * a failed writeback (the first error of an inode stays). Should the table
 * be full, the filesystem takes the error (read-only), so that none goes
 * unreported.
 */
static void ns_werr_set_locked(struct smr_ns *ns, uint64_t ino, uint64_t off,
			       int err)
{
	uint32_t n = ns->nr_werr;

	smr_err("inode %llu: a write at file offset %llu was answered, then "
		"its data failed: %s; the next fsync or close of the file "
		"says so", (unsigned long long)ino, (unsigned long long)off,
		strerror(-err));
	for (uint32_t i = 0; i < n; i++)
		if (ns->werr[i].ino == ino)
			return;
	if (n == NS_WERR_SLOTS) {
		smr_cow_set_error(ns->cow, err, "a write already answered");
		return;
	}
	ns->werr[n].ino = ino;
	ns->werr[n].err = err;
	__atomic_store_n(&ns->nr_werr, n + 1, __ATOMIC_RELEASE);
}

/* The error ns_werr_set_locked() kept for @ino, forgotten; or 0. */
int ns_werr_take_locked(struct smr_ns *ns, uint64_t ino)
{
	uint32_t n = ns->nr_werr;

	for (uint32_t i = 0; i < n; i++) {
		if (ns->werr[i].ino == ino) {
			int err = ns->werr[i].err;

			ns->werr[i] = ns->werr[n - 1];
			__atomic_store_n(&ns->nr_werr, n - 1,
					 __ATOMIC_RELEASE);
			return err;
		}
	}
	return 0;
}

/*
 * A write of whole blocks needs no read-modify-write, so its data goes to
 * the device without the namespace lock, a piece at a time: the lock is
 * taken to find the locality hint, dropped for the data write and the
 * checksums, and taken again to map the piece. A concurrent write to the
 * same range maps after or before ours, as if the two had been serialised;
 * if the inode went away meanwhile, the piece's space is given back.
 *
 * The only write being answered, if it is one piece and the device takes
 * it without waiting, keeps the lock instead and is answered as soon as
 * its space is held, while its data goes out: every later call must see
 * it. With several, the woken writer
 * takes the CPU from the thread that holds the lock and the others queue
 * behind it (4 writers: a third fewer writes a second than answered after
 * the lock): the last piece of those is answered once its data is out,
 * and only while no other write is being answered, else by the caller
 * once mapped.
 */
static int ns_write_aligned(struct smr_ns *ns, const struct smr_ns_cred *cr,
			    uint64_t ino, uint64_t off, const uint8_t *buf,
			    uint64_t size, uint64_t *done, struct ns_ack *ak)
{
	uint64_t maxp = (uint64_t)SMR_NS_EXTENT_MAX_BLOCKS * ns->bsize;
	/* A few KiB on the stack: no allocation for every write. */
	struct ns_piece pcbuf, *pc = &pcbuf;
	struct ns_ext ebuf[3], *e = ebuf;
	struct smr_cow_held held = { .fn = ns_ack_held, .arg = ak };
	struct ns_inode in;
	struct smr_txn *t;
	int rc = 0, rc2;

	*done = 0;
	while (*done < size) {
		uint64_t a = off + *done, len = SMR_MIN(maxp, size - *done);
		/* The caller's buffer as it is: the device copies it only if
		 * it must (direct I/O), and the data is not looked at again
		 * once the checksums are taken. */
		const uint8_t *wbuf = buf + *done;
		enum smr_data_temp temp;
		uint64_t near, gen;
		struct ns_before bf;
		int64_t fit;
		bool first, last = false;

		pthread_mutex_lock(&ns->lock);
		rc = ns_get_writable(ns, ino, &in);
		fit = rc ? 0 : ns_admit_locked(ns, ino, a, len);
		if (fit < 0)
			rc = (int)fit;
		else
			len = (uint64_t)fit;
		near = rc ? 0 : ns_near(ns, ino, a, e + 1, e + 2, &bf);
		temp = rc ? SMR_DATA_HOT : ns_temp_locked(ns, ino, a, len,
							  in.size);
		gen = in.gen;
		first = !rc && len == size && ns_ack_first(ns, ak, len);
		/* Counted before it takes space: a writer out of space
		 * waits for it rather than fail. */
		if (!rc)
			ns->pieces_out++;
		if (first) {
			rc = ns_piece_write(ns, ino, a, wbuf, len, near, temp,
					    &held, pc);
			if (rc && ak->done) {
				/* Answered, and nothing of it is kept. */
				ns_werr_set_locked(ns, ino, a, rc);
				goto end_piece;
			}
			if (!ak->done) {
				/* Its space did not come at once: as any
				 * other (no space is held on failure). */
				first = false;
				pthread_mutex_unlock(&ns->lock);
			}
		} else {
			pthread_mutex_unlock(&ns->lock);
			if (rc)
				break;
			rc = ns_piece_write(ns, ino, a, wbuf, len, near, temp,
					    NULL, pc);
		}
		if (!first) {
			/* Out of space with dead space about, or with
			 * another writer's piece out: clean or wait for it,
			 * and retry (no lock is held here, which cleaning
			 * needs). */
			for (int i = 0; rc == -ENOSPC && i < NS_ENOSPC_RETRIES;
			     i++) {
				if (ns_clean_for_space(ns, 1))
					break;
				rc = ns_piece_write(ns, ino, a, wbuf, len,
						    near, temp, NULL, pc);
			}
			if (rc) {
				pthread_mutex_lock(&ns->lock);
				ns_piece_end_locked(ns);
				pthread_mutex_unlock(&ns->lock);
				break;
			}
			/* The last piece's data is on the device: answered
			 * under the lock, checksummed and mapped while the
			 * caller's next request comes. */
			last = ak && !ak->done && *done + len == size &&
			       __atomic_load_n(&ns->acks_in,
					       __ATOMIC_RELAXED) == 1;
			if (!last)
				ns_piece_csum(ns, ino, gen, wbuf, pc);
			pthread_mutex_lock(&ns->lock);
		}
		rc = ns_txn_begin(ns, &t);
		if (rc) {
			/* Read-only now: the engine keeps nothing of it. */
			goto end_piece;
		}
		rc = ns_get_writable(ns, ino, &in);
		if (rc) {
			ns_piece_drop(t, pc, 0);
		} else {
			struct ns_inode was = in;

			/* (@buf stays the caller's until the call
			 * returns.) */
			if (last) {
				ak->fn(ak->arg, (ssize_t)size);
				ak->done = true;
			}
			if (last || first)
				ns_piece_csum(ns, ino, gen, wbuf, pc);
			rc = ns_piece_map_locked(ns, t, &in, pc, e, &bf);
			if (!rc)
				ns_wrote(cr, &in, a + len);
			if (!rc && *done == 0)
				rc = ns_xattr_drop_caps_locked(ns, t, ino);
			rc2 = ns_inode_put_was(ns, t, &in, &was);
			if (!rc)
				rc = rc2;
		}
		rc = ns_txn_end(ns, t, rc);
		if (rc && ak && ak->done)
			smr_cow_set_error(ns->cow, rc,
					  "mapping a write already answered");
end_piece:
		ns_piece_end_locked(ns);
		if (first)
			__atomic_sub_fetch(&ns->answered_out, 1,
					   __ATOMIC_RELEASE);
		pthread_mutex_unlock(&ns->lock);
		if (rc)
			break;
		*done += len;
	}
	return rc;
}

static ssize_t ns_write(struct smr_ns *ns, const struct smr_ns_cred *cr,
			uint64_t ino, uint64_t off, const void *buf,
			size_t size, struct ns_ack *ak)
{
	struct smr_cow_held held = { .fn = ns_ack_held, .arg = ak };
	uint64_t bs = ns->bsize, done = 0, total = 0, blocks;
	struct ns_inode in;
	struct smr_txn *t;
	int rc, rc2, tries = 0;
	bool rolled = false, undone, first;
	size_t mark;

	if (off > NS_MAX_FILE_END || size > NS_MAX_FILE_END - off)
		return -EFBIG;
	/* A write's map changes take nodes too: once commits dig into the
	 * reserve, writers clean before they add to it, or the cleaner is
	 * left without room for its copies. */
	if (size)
		smr_cow_clean_for_meta(ns->cow);
	if (size && off % ns->bsize == 0 && size % ns->bsize == 0) {
		rc = ns_write_aligned(ns, cr, ino, off, buf, size, &done, ak);
		goto out;
	}
retry:
	done = 0;
	undone = false;
	pthread_mutex_lock(&ns->lock);
	rc = ns_get_writable(ns, ino, &in);
	if (rc || size == 0)
		goto out_unlock;
	rc = ns_txn_begin(ns, &t);
	if (rc)
		goto out_unlock;
	mark = ns_undo_mark(ns);
	/* The only write being answered, of one piece, on a device that
	 * takes it at once: answered once its space is held, as in
	 * ns_write_aligned(). */
	blocks = SMR_ROUND_UP(off + size, bs) - SMR_ROUND_DOWN(off, bs);
	if (total == 0 && ns_tail_takes(ns, &in, off, size)) {
		first = false;
		rc = ns_write_tail_locked(ns, t, &in, off, buf, size, &done);
	} else {
		first = total == 0 &&
			blocks <= (uint64_t)SMR_NS_EXTENT_MAX_BLOCKS * bs &&
			ns_ack_first(ns, ak, blocks);
		rc = ns_write_locked(ns, t, &in, off + total,
				     (const uint8_t *)buf + total,
				     size - total, false,
				     first ? &held : NULL, &done);
	}
	first = first && ak->done;
	if (rc && first) {
		/* Answered, and nothing of it is kept (one piece): the next
		 * fsync or close of the file reports it. */
		ns_werr_set_locked(ns, ino, off, rc);
		done = 0;
	}
	/*
	 * Out of space part way, the first time: roll the part back and try
	 * the whole write again once cleaned. Kept, the part would be made
	 * durable alone by the cleaning's commits, and a crash then would
	 * leave a state after no whole write (docs/design/crash.md), though
	 * the writer is told all of it went. Should the whole not fit the
	 * second time either, what fits stays and the rest follows, as a
	 * write whose new copy has no room until its old one is freed must.
	 */
	if (rc == -ENOSPC && done && !rolled && ns_undo_to(ns, t, mark)) {
		rolled = undone = true;
		done = 0;
		(void)ns_txn_end(ns, t, rc);
		goto out_unlock;
	}
	if (done) {
		ns_wrote(cr, &in, off + total + done);
		rc2 = ns_xattr_drop_caps_locked(ns, t, ino);
		if (!rc)
			rc = rc2;
	}
	rc2 = ns_inode_put(ns, t, &in);
	if (rc2) {
		rc = rc2;
		done = 0;
	}
	/* What was written before an error stays (a short write), unless
	 * the inode could not follow it: then nothing does. */
	(void)ns_txn_end(ns, t, done ? 0 : rc);
	if (first)
		__atomic_sub_fetch(&ns->answered_out, 1, __ATOMIC_RELEASE);
out_unlock:
	pthread_mutex_unlock(&ns->lock);
	total += done;
	/* Out of space with dead space about: clean (without the namespace
	 * lock and the transaction, which cleaning needs) and go on; what
	 * was rolled back is written again as far as it fits even if
	 * nothing could be cleaned. Not once answered. */
	if (rc == -ENOSPC && total < size && !(ak && ak->done) &&
	    tries++ < NS_ENOSPC_RETRIES &&
	    (!ns_clean_for_space(ns, 0) || undone))
		goto retry;
	done = total;
out:
	if (done)
		smr_cow_count_user(ns->cow, done);
	if (done && done < size && ak && ak->whole)
		return rc ? rc : -EIO;
	if (done && (rc == 0 || done < size))
		return (ssize_t)done;
	return rc;
}

ssize_t smr_ns_write(struct smr_ns *ns, const struct smr_ns_cred *cr,
		     uint64_t ino, uint64_t off, const void *buf, size_t size)
{
	return ns_write(ns, cr, ino, off, buf, size, NULL);
}

void smr_ns_write_ack(struct smr_ns *ns, const struct smr_ns_cred *cr,
		      uint64_t ino, uint64_t off, const void *buf, size_t size,
		      bool whole, smr_ns_ack_fn ack, void *arg)
{
	struct ns_ack ak = { .ns = ns, .fn = ack, .arg = arg, .size = size,
			     .whole = whole };
	ssize_t n;

	__atomic_add_fetch(&ns->acks_in, 1, __ATOMIC_RELAXED);
	n = ns_write(ns, cr, ino, off, buf, size, &ak);
	__atomic_sub_fetch(&ns->acks_in, 1, __ATOMIC_RELAXED);
	if (!ak.done)
		ack(arg, n);
}

/* ========================================================================
 * Truncate, fallocate, lseek, fsync
 * ======================================================================== */

/* Zero [@from, @to) inside @ip's tail block: its items change. */
static int ns_tail_zero(struct smr_ns *ns, struct smr_txn *t,
			struct ns_inode *ip, uint64_t from, uint64_t to)
{
	uint32_t a = (uint32_t)(from - ip->tail), b = (uint32_t)(to - ip->tail);
	uint8_t *blk;
	int rc;

	if (a >= ip->tail_len)
		return 0;
	if (a == 0 && b >= ip->tail_len)
		return ns_tail_drop(ns, t, ip);
	blk = malloc(ns->bsize);
	if (!blk)
		return -ENOMEM;
	rc = ns_tail_read(ns, ip, blk);
	if (!rc && b >= ip->tail_len) {
		/* The end goes. */
		rc = ns_tail_put(ns, t, ip, ip->tail, blk, a, a);
	} else if (!rc) {
		memset(blk + a, 0, b - a);
		rc = ns_tail_put(ns, t, ip, ip->tail, blk, ip->tail_len, a);
	}
	free(blk);
	return rc;
}

/*
 * Zero [@from, @to) inside one block, if that block holds data. The calls
 * that do it (a shrinking truncate, a punch, a zero range) give space back,
 * or at worst leave the block they replace dead: when the data streams are
 * out of space they take the block from the reserve (SMR_DATA_RESCUE)
 * rather than fail, as ext4 never fails a shrinking truncate for space.
 */
static int ns_zero_partial(struct smr_ns *ns, struct smr_txn *t,
			   struct ns_inode *ip, uint64_t from, uint64_t to)
{
	struct ns_ext e;
	uint8_t *zeros;
	uint64_t done;
	int rc;

	if (from >= to)
		return 0;
	if (ns_tail_within(ns, ip, from, to))
		return ns_tail_zero(ns, t, ip, from, to);
	rc = ns_ext_find(ns, ip->ino, from, &e);
	if (rc < 0 && rc != -ENOENT)
		return rc;
	if (rc != 0)
		return 0; /* a hole reads as zeros already */
	zeros = calloc(1, to - from);
	if (!zeros)
		return -ENOMEM;
	rc = ns_write_locked(ns, t, ip, from, zeros, to - from, false, NULL,
			     &done);
	if (rc == -ENOSPC)
		rc = ns_write_locked(ns, t, ip, from, zeros, to - from, true,
				     NULL, &done);
	free(zeros);
	return rc;
}

int ns_truncate_locked(struct smr_ns *ns, struct smr_txn *t,
		       struct ns_inode *ip, uint64_t size)
{
	uint64_t bs = ns->bsize, keep = SMR_ROUND_UP(size, bs);
	int rc;

	if (size < ip->size) {
		rc = ns_punch_locked(ns, t, ip, keep,
				     SMR_ROUND_DOWN(NS_MAX_FILE_END, bs), NULL,
				     NULL, NULL, NULL);
		if (!rc && size % bs)
			rc = ns_zero_partial(ns, t, ip, size, keep);
		if (rc)
			return rc;
	}
	ip->size = size;
	return 0;
}

/*
 * Zero [@off, @off + @len) of a regular file: the extents inside the range
 * are dropped (holes read as zeros) and the partial blocks at its ends are
 * rewritten with zeros. PUNCH_HOLE and ZERO_RANGE differ only in that the
 * latter, without KEEP_SIZE (@grow), extends the size to the range's end.
 * Past the size there is nothing to zero: the bytes after the end of the
 * last block are zero already (ns_truncate_locked).
 */
static int ns_zero_once(struct smr_ns *ns, uint64_t ino, uint64_t off,
			uint64_t len, bool grow)
{
	uint64_t bs = ns->bsize, pend, a, b;
	struct ns_inode in;
	struct smr_txn *t;
	int rc;

	pthread_mutex_lock(&ns->lock);
	rc = ns_inode_get(ns, ino, &in);
	if (rc)
		goto out_unlock;
	if (S_ISDIR(in.mode)) {
		rc = -EISDIR;
		goto out_unlock;
	}
	if (!S_ISREG(in.mode)) {
		rc = -ENODEV;
		goto out_unlock;
	}
	rc = ns_txn_begin(ns, &t);
	if (rc)
		goto out_unlock;
	pend = SMR_MIN(off + len, in.size);
	a = SMR_ROUND_UP(off, bs);
	b = SMR_ROUND_DOWN(pend, bs);
	if (off >= pend)
		goto out_times;
	/* A range that reaches the end of the file and covers the start of
	 * its last block takes that block whole: what lies past the end
	 * reads as zeros anyway, and a hole holds no space (a block of
	 * zeros would). */
	if (pend == in.size && a <= b)
		pend = b = SMR_ROUND_UP(pend, bs);
	if (a > b) {
		/* Inside one block. */
		rc = ns_zero_partial(ns, t, &in, off, pend);
	} else {
		rc = ns_zero_partial(ns, t, &in, off, a);
		if (!rc && a < b)
			rc = ns_punch_locked(ns, t, &in, a, b, NULL, NULL, NULL,
					     NULL);
		if (!rc)
			rc = ns_zero_partial(ns, t, &in, b, pend);
	}
	if (rc)
		goto out_end;
out_times:
	if (grow && off + len > in.size)
		in.size = off + len;
	in.mtime = in.ctime = ns_now();
	rc = ns_inode_put(ns, t, &in);
out_end:
	rc = ns_txn_end(ns, t, rc);
out_unlock:
	pthread_mutex_unlock(&ns->lock);
	return rc;
}

/*
 * PUNCH_HOLE|KEEP_SIZE and ZERO_RANGE (with or without KEEP_SIZE) are
 * honoured; neither needs space beyond the rewrite of two partial blocks.
 * Mode 0 and KEEP_SIZE promise that later writes into the range will not
 * fail for want of space. Every write here goes to new space
 * (copy-on-write), so blocks allocated now could not take those writes, and
 * without a reservation of free space the promise would be a lie. They get
 * -EOPNOTSUPP, as on btrfs zoned; callers fall back (glibc's
 * posix_fallocate writes the blocks, fsx skips the mode).
 */
int smr_ns_fallocate(struct smr_ns *ns, uint64_t ino, int mode, uint64_t off,
		     uint64_t len)
{
	bool grow = false;
	int rc;

	switch (mode) {
	case SMR_NS_FALLOC_PUNCH_HOLE | SMR_NS_FALLOC_KEEP_SIZE:
	case SMR_NS_FALLOC_ZERO_RANGE | SMR_NS_FALLOC_KEEP_SIZE:
		break;
	case SMR_NS_FALLOC_ZERO_RANGE:
		grow = true;
		break;
	default:
		return -EOPNOTSUPP;
	}
	if (len == 0 || off > NS_MAX_FILE_END)
		return -EINVAL;
	if (len > NS_MAX_FILE_END - off)
		return -EFBIG;
	rc = ns_zero_once(ns, ino, off, len, grow);
	/* The blocks the range starts and ends in are rewritten: out of
	 * space, clean and try again, as a write does (the call was
	 * undone). */
	for (int i = 0; rc == -ENOSPC && i < NS_ENOSPC_RETRIES; i++) {
		if (ns_clean_for_space(ns, 0))
			break;
		rc = ns_zero_once(ns, ino, off, len, grow);
	}
	return rc;
}

int smr_ns_lseek(struct smr_ns *ns, uint64_t ino, uint64_t off, int whence,
		 uint64_t *result)
{
	struct ns_inode in;
	struct ns_ext e;
	int rc;

	if (whence != SEEK_DATA && whence != SEEK_HOLE)
		return -EINVAL;
	pthread_mutex_lock(&ns->lock);
	rc = ns_inode_get(ns, ino, &in);
	if (rc)
		goto out;
	if (S_ISDIR(in.mode)) {
		rc = -EISDIR;
		goto out;
	}
	if (off >= in.size) {
		rc = -ENXIO;
		goto out;
	}
	if (whence == SEEK_DATA) {
		uint64_t data = UINT64_MAX;

		rc = ns_ext_find(ns, ino, off, &e);
		if (rc < 0 && rc != -ENOENT)
			goto out;
		if (rc >= 0)
			data = rc == 0 ? off : e.foff;
		/* The tail block is data too. */
		if (ns_tail_within(ns, &in, off, data))
			data = SMR_MAX(off, in.tail);
		rc = data < in.size ? 0 : -ENXIO;
		if (!rc)
			*result = data;
		goto out;
	}
	for (;;) {
		if (ns_tail_within(ns, &in, off, off + 1)) {
			off = in.tail + ns->bsize;
			if (off >= in.size)
				break;
			continue;
		}
		rc = ns_ext_find(ns, ino, off, &e);
		if (rc < 0 && rc != -ENOENT)
			goto out;
		if (rc != 0)
			break;
		off = e.foff + e.len;
		if (off >= in.size)
			break;
	}
	*result = SMR_MIN(off, in.size);
	rc = 0;
out:
	pthread_mutex_unlock(&ns->lock);
	return rc;
}

int smr_ns_fsync(struct smr_ns *ns, uint64_t ino, bool datasync)
{
	int werr;

	(void)datasync;
	/* A write answered early is still going out or mapping under the
	 * lock: the fsync that follows it must wait for it to end. */
	pthread_mutex_lock(&ns->lock);
	werr = ns_werr_take_locked(ns, ino);
	pthread_mutex_unlock(&ns->lock);
	/* The file is not as written: that fsync fails (the next one
	 * commits what there is). */
	if (werr)
		return werr;
	/* One log record or commit makes everything durable; the namespace
	 * lock is not held across it (it waits only for running operations
	 * to end). */
	return smr_cow_fsync(ns->cow);
}

int smr_ns_flush(struct smr_ns *ns, uint64_t ino)
{
	int werr;

	/* No write answered before its data went out is running and none
	 * failed: nothing to wait for. (An error is kept before its write
	 * stops counting.) */
	if (!__atomic_load_n(&ns->answered_out, __ATOMIC_ACQUIRE) &&
	    !__atomic_load_n(&ns->nr_werr, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&ns->lock);
	werr = ns_werr_take_locked(ns, ino);
	pthread_mutex_unlock(&ns->lock);
	return werr;
}

/* ========================================================================
 * Relocation (the engine's cleaner moved data)
 * ======================================================================== */

/*
 * The moved @piece starts where its item starts: if it continues the extent
 * before it (the cleaner's previous copy, as a rule), the item goes and the
 * extent before takes it in (returns 1), or the copies of a file written in
 * small pieces would each stay an item. 0: not merged; @prev is scratch.
 */
static int ns_reloc_merge(struct smr_ns *ns, struct smr_txn *t, uint64_t ino,
			  struct ns_ext *piece, struct ns_ext *prev)
{
	struct smr_key k = ns_key(ino, SMR_NS_T_EXTENT, piece->foff);
	int rc;

	if (piece->foff < ns->bsize)
		return 0;
	rc = ns_ext_find(ns, ino, piece->foff - 1, prev);
	if (rc)
		return rc == -ENOENT || rc == 1 ? 0 : rc;
	if (!ns_ext_merges(prev, piece))
		return 0;
	rc = ns_bt_delete(ns, t, &k);
	if (!rc)
		rc = ns_ext_insert(ns, t, ino, piece, prev);
	return rc ? rc : 1;
}

/*
 * Point [@foff, @foff + @len) of inode @ino at @new_off if all of it is
 * mapped to @old_off onwards now. 1 moved, 0 not, or an error.
 */
static int ns_relocate_locked(struct smr_ns *ns, struct smr_txn *t,
			      uint64_t ino, uint64_t foff, uint64_t old_off,
			      uint64_t new_off, uint64_t len)
{
	uint64_t bs = ns->bsize, pos, end = foff + len;
	struct ns_ext *e, *piece;
	int rc = 0;

	if (foff % bs || len % bs)
		return 0;
	e = malloc(2 * sizeof(*e));
	if (!e)
		return -ENOMEM;
	piece = e + 1;
	/* Check first: every block still where the cleaner read it. */
	for (pos = foff; pos < end;) {
		rc = ns_ext_find(ns, ino, pos, e);
		if (rc) {
			rc = rc < 0 && rc != -ENOENT ? rc : 0;
			goto out_free;
		}
		if (e->dev + (pos - e->foff) != old_off + (pos - foff)) {
			rc = 0;
			goto out_free;
		}
		pos = e->foff + e->len;
	}
	/* Then split the items at the range's ends and repoint the middle. */
	for (pos = foff; pos < end;) {
		uint64_t s, eend, ms, me;

		rc = ns_ext_find(ns, ino, pos, e);
		if (rc) {
			rc = rc > 0 ? smr_corrupt(UINT64_MAX,
				"relocation: extent vanished") : rc;
			goto out_free;
		}
		s = e->foff;
		eend = s + e->len;
		ms = SMR_MAX(s, foff);
		me = SMR_MIN(eend, end);
		if (eend > me) {
			uint32_t skip = (uint32_t)((me - s) / bs);

			piece->foff = me;
			piece->dev = e->dev + (me - s);
			piece->len = eend - me;
			piece->gen = e->gen;
			piece->n = e->n - skip;
			memcpy(piece->csums, e->csums + skip,
			       8 * (size_t)piece->n);
			rc = ns_ext_put(ns, t, ino, piece);
			if (rc)
				goto out_free;
		}
		{
			uint32_t skip = (uint32_t)((ms - s) / bs);

			piece->foff = ms;
			piece->dev = new_off + (ms - foff);
			piece->len = me - ms;
			piece->gen = e->gen;
			piece->n = (uint32_t)((me - ms) / bs);
			memmove(piece->csums, e->csums + skip,
				8 * (size_t)piece->n);
		}
		if (ms > s) {
			e->len = ms - s;
			e->n = (uint32_t)(e->len / bs);
			rc = ns_ext_put(ns, t, ino, e);
		} else {
			rc = ns_reloc_merge(ns, t, ino, piece, e);
		}
		if (rc == 0)
			rc = ns_ext_put(ns, t, ino, piece);
		if (rc < 0)
			goto out_free;
		pos = me;
	}
	/* The copy is referenced now; the original goes. */
	rc = smr_cow_data_settle(t, new_off, len);
	if (!rc)
		rc = ns_data_release(ns, t, old_off, len);
	if (!rc)
		rc = 1;
out_free:
	free(e);
	return rc;
}

int ns_relocate_hook(void *arg, const struct smr_key *owner, uint64_t old_off,
		     uint64_t new_off, uint64_t len)
{
	struct smr_ns *ns = arg;
	struct smr_txn *t;
	int rc;

	if (owner->type != SMR_NS_T_EXTENT)
		return 0;
	pthread_mutex_lock(&ns->lock);
	rc = ns_txn_begin(ns, &t);
	if (!rc) {
		rc = ns_relocate_locked(ns, t, owner->objid, owner->offset,
					old_off, new_off, len);
		rc = ns_txn_end(ns, t, rc);
	}
	pthread_mutex_unlock(&ns->lock);
	return rc;
}
