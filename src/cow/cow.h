/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cow.h - the copy-on-write engine of smrfs: B+trees of keyed items,
 * transactions, checkpoints, and the data-extent path of the layer above.
 *
 * This is the whole interface the namespace layer (src/namespace) sees: it
 * never includes alloc.h or dev.h. Items are kept in B+trees keyed by
 * (objid, type, offset), compared in that order as unsigned integers. Nodes
 * are never overwritten: a change copies the path to the root; a commit writes
 * the dirty nodes through the allocator's metadata stream, flushes, writes a
 * checkpoint record naming the new roots and the allocator state, and flushes
 * again. Mount (smr_cow_open) takes the newest checkpoint that verifies.
 *
 * Concurrency. One engine lock (a rwlock) protects the trees: lookups and
 * iteration take it shared, changes exclusive, a commit exclusive while it
 * freezes the running transaction. Every function here takes what it needs;
 * callers hold no engine lock on entry.
 *
 * Transactions. There is one running transaction at a time; changes made
 * between smr_txn_begin() and smr_txn_end() join it and become durable
 * together at the next commit. Commits happen on smr_cow_commit() (fsync,
 * sync; concurrent callers share one commit), on a timer (opts.commit_secs),
 * when dirty metadata passes a bound, and at close. A transaction handle
 * only marks that an operation is in progress, so that a commit never cuts
 * one operation in half: the commit waits for open handles to end.
 */
#ifndef SMR_COW_COW_H
#define SMR_COW_COW_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/smr.h"

struct smr_dev;
struct smr_cow;
struct smr_txn;

/* The biggest value one item may hold, in bytes. Larger things (long
 * symlink targets, big xattrs) are split over several items by the caller. */
#define SMR_COW_MAX_ITEM 3072

/* Trees the layer above may use. Other ids are the engine's own. */
enum smr_tree_id {
	SMR_TREE_FS = 1, /* the namespace: inodes, dirents, extents, xattrs */
};

struct smr_key {
	uint64_t objid;
	uint8_t type;
	uint64_t offset;
};

/* <0, 0, >0 as a is before, equal to, after b. */
int smr_key_cmp(const struct smr_key *a, const struct smr_key *b);

/*
 * A tree type: what the engine is told of a tree's items by the layer that
 * owns the tree, so that one engine serves several trees without knowing
 * what their keys mean (one ops table per tree, as XFS has per B-tree).
 * The engine uses it to bound item sizes, to check items on every change
 * and in smr_cow_check and smr_cow_check_all, to drop the items that fail
 * when a tree is salvaged, and to name trees and keys in its messages.
 *
 * Every tree the engine changes or checks has one: a change to a tree with
 * no registered type, or a check or salvage of one that holds a root, is
 * refused with -EINVAL and an error naming the tree. Lookups and iteration
 * need none.
 */
struct smr_tree_type {
	uint32_t id;             /* the tree it describes */
	const char *name;        /* for messages: "fs", "rmap" */
	size_t max_item;         /* biggest value; <= SMR_COW_MAX_ITEM */
	/*
	 * The tree's items are derived from other trees' and can be rebuilt
	 * from them (the reverse map, from the extent items): a salvage that
	 * can read none of them leaves the tree empty. Otherwise such a tree
	 * is left as it is, since an empty one would lose it all for good.
	 */
	bool derived;
	/*
	 * Whether an item can belong to the tree at all: its item type is
	 * one the tree holds, its size one that type can have. Checks of a
	 * value's contents, which a repair can act on, stay with the
	 * owner's own checker. Returns NULL or a short reason (static text).
	 * May be NULL: every item up to max_item fits.
	 */
	const char *(*check_item)(const struct smr_key *key, const void *val,
				  size_t len);
	/* Write @key readably into @buf (@len bytes, always terminated) and
	 * return true; false for a key the type cannot name, which is then
	 * printed as "(objid, type, offset)" in numbers, as it is when
	 * key_str is NULL. */
	bool (*key_str)(const struct smr_key *key, char *buf, size_t len);
};

/* Room smr_tree_key_str needs for any key. */
#define SMR_KEY_STR_MAX 96

/*
 * Describe tree @tt->id to the engine; the description must outlive it.
 * Registering the same type again is a no-op. -EINVAL for a bad id or
 * max_item, -EEXIST if another type holds the id.
 */
int smr_cow_tree_register(struct smr_cow *c, const struct smr_tree_type *tt);

/* @key of @tree as its type prints it, in @buf (SMR_KEY_STR_MAX bytes
 * suffice); returns @buf. */
const char *smr_tree_key_str(struct smr_cow *c, uint32_t tree,
			     const struct smr_key *key, char *buf, size_t len);
/* The name of @tree ("fs"; its number, "3", with no type). @buf holds the
 * number (16 bytes); returns the name. */
const char *smr_tree_name(struct smr_cow *c, uint32_t tree, char *buf,
			  size_t len);

/* ------------------------------------------------------------------------
 * Format, open, close
 * ------------------------------------------------------------------------ */

/* Zeroed = defaults. */
struct smr_format_opts {
	const char *label;       /* up to 63 bytes; NULL = none */
	const uint8_t *uuid;     /* 16 bytes; NULL = random */
	const char *alloc;       /* allocator module; NULL = chosen by device */
	/* Discard the whole device first, where it can (smr_dev_discard):
	 * what a filesystem made there before left is then gone, and the
	 * rebuild of a lost superblock cannot take its nodes for ours. */
	bool discard;
};

/* What a formatted filesystem is; filled by smr_cow_format / smr_cow_info. */
struct smr_cow_info {
	uint8_t uuid[16];
	char label[64];
	char alloc[16];          /* allocator module name */
	char alloc_why[160];     /* why it was chosen (format / open) */
	uint32_t block_size;
	uint32_t node_size;
	uint64_t capacity;       /* device bytes */
	uint64_t data_start;     /* first byte the allocator manages */
	uint64_t gen;            /* generation of the newest checkpoint */
	uint32_t format_major;
	uint32_t format_minor;
	/* Open found a newer valid checkpoint it could not use (a tree root
	 * or its allocator state damaged) and took its predecessor: the
	 * newer one's generation, else 0. */
	uint64_t skipped_gen;
	/* No checkpoint record verified, and open took one rebuilt from the
	 * trees found on the device (fsck only, rebuild_ckpt). */
	bool ckpt_rebuilt;
	uint64_t fs_items;       /* items in the FS tree (a progress total) */
	/* fsync log records after the newest checkpoint: replayed by this
	 * open, or found and left for a read-write open (a read-only one
	 * shows the checkpoint's state without them). */
	uint32_t log_replayed;
	uint32_t log_pending;
	bool log_on;             /* smr_cow_fsync may write records */
	/* The allocator state was read with a flipped bit put back: it is
	 * damaged on the device until the next commit writes a new one. */
	bool alloc_restored;
};

/*
 * Reset the device's zones and write a new, empty filesystem on it: the
 * superblocks, the (empty) trees and a first checkpoint. The device must be
 * open read-write. Fills *@info if not NULL. Errors: -EINVAL (device too
 * small, bad label, allocator refuses the device: the reason is logged),
 * -EIO, -ENOENT (unknown allocator).
 */
int smr_cow_format(struct smr_dev *dev, const struct smr_format_opts *o,
		   struct smr_cow_info *info);

/* Zeroed = defaults. */
struct smr_cow_opts {
	bool read_only;
	const char *alloc;     /* override the allocator recorded at mkfs */
	size_t cache_bytes;    /* node cache bound; 0 = 64 MiB */
	unsigned commit_secs;  /* timer commit; 0 = 5 s; the timer thread runs
				* only when not read-only; a remount
				* changes it (smr_cow_set_commit_secs) */
	/* fsck only: when no checkpoint's allocator state can be read, open
	 * the newest valid checkpoint with an allocator rebuilt from the
	 * device (smr_alloc_open_rebuild) for smr_cow_check_space to bring
	 * to what the trees reference. */
	bool rebuild_alloc;
	/* fsck only: rebuild the allocator state from the device even though
	 * the checkpoint's own reads (it is wrong: a zone counts fewer live
	 * bytes than the trees reference, smr_cow_space_check.low). The
	 * checkpoint taken is the one open would take anyway. */
	bool rebuild_alloc_always;
	/* fsck only, read-only: reads go on past a node that fails
	 * verification. smr_bt_iterate() skips the subtree under it, the
	 * space audit counts its block and nothing below it, and the checks
	 * report each such node and carry on; lookups through it still
	 * fail. So a check reports everything else it can. */
	bool skip_damaged;
	/* fsck only: opened for smr_cow_salvage(). A damaged node of the
	 * reverse map in the way of the open's own change to it (the entries
	 * of data released in flight, cow.c) does not stop the open: the
	 * salvage drops the node, and the reverse map is rebuilt from the
	 * extent items where it disagrees with them. */
	bool salvage;
	/* The cleaner (zoned devices only; see "Cleaning" below). */
	bool gc_off;           /* no background cleaning thread */
	bool gc_need_only;     /* the thread cleans only when no zone is left
				* free to data (metadata has begun to take
				* the reserve), greedily, until two are;
				* gc_policy, gc_low, gc_high are ignored */
	int gc_policy;         /* background policy, enum smr_cow_gc_policy;
				* 0 = cost-benefit */
	unsigned gc_low;       /* start below this many free zones; 0 = 1 */
	unsigned gc_high;      /* stop above this many; 0 = gc_low plus
				* one plus 16 MiB of zones, at least one,
				* at most a 64th of the zones */
	/* smr_cow_fsync writes an fsync log record where it can instead of
	 * committing (a filesystem made with the log, read-write). */
	bool fsync_log;
	/* fsck only: where neither superblock copy verifies, open with one
	 * rebuilt from the device and its checkpoint records (as
	 * smr_cow_check_super reports, docs/design/fsck.md). */
	bool rebuild_sb;
	/* fsck only, with rebuild_sb: the UUID of a superblock rebuilt where
	 * no checkpoint record verifies either (smr_cow_find_uuid). */
	const uint8_t *sb_uuid;
	/* fsck only: where no checkpoint record verifies, open with one
	 * rebuilt from the B-tree nodes on the device (smr_ckpt_from_scan)
	 * and an allocator state rebuilt from the device (as rebuild_alloc),
	 * for fsck's audit and repairs (docs/design/fsck.md). */
	bool rebuild_ckpt;
	/* Read-only: replay the fsync log records found in memory, so that
	 * what fsync made durable is seen (nothing is written; a read-write
	 * open replays them for good). Off, the state is the checkpoint's
	 * and the records are only counted (smr_cow_info.log_pending). */
	bool replay_ro;
	/* fsck only: the scans that read all the written space (the
	 * rebuilds of a superblock, a checkpoint or a tree from the nodes
	 * found) call @scan_progress with the bytes read of the bytes to
	 * read, at most once a MiB, and stop with -ECANCELED once *@cancel
	 * is set. NULL: neither. Kept by the engine until it is closed. */
	void (*scan_progress)(void *arg, uint64_t done, uint64_t total);
	void *scan_arg;
	const volatile sig_atomic_t *cancel;
};

/*
 * Open the filesystem on @dev: read the superblocks, take the newest valid
 * checkpoint, open the allocator. Errors: -EINVAL not an smrfs device
 * (no superblock magic), -EMEDIUMTYPE an smrfs superblock that describes
 * another device (capacity, block size, zones), -SMR_EFSCORRUPTED / -SMR_EFSBADCRC damaged beyond
 * the fallbacks, -EOPNOTSUPP an unknown incompatible feature, -EROFS an
 * unknown read-only-compatible feature and !read_only, plus I/O errors.
 * Every failure is logged with what was wrong.
 */
int smr_cow_open(struct smr_dev *dev, const struct smr_cow_opts *o,
		 struct smr_cow **cp);

/* Commit what is dirty (unless read-only), stop the timer, free. Returns the
 * commit's error; @c is freed in every case. */
int smr_cow_close(struct smr_cow *c);

/* Close without committing: whatever changed since the last commit is
 * dropped, and the device keeps the last checkpoint (fsck's cancelled
 * repair). @c is freed. */
void smr_cow_close_discard(struct smr_cow *c);

void smr_cow_info(struct smr_cow *c, struct smr_cow_info *info);

/* Read-only: opened so, turned so after a failed metadata write, or asked
 * to be (smr_cow_set_read_only). */
bool smr_cow_is_read_only(struct smr_cow *c);

/*
 * A remount. @ro: commit everything, then write nothing more (no commit,
 * no cleaning) until asked back; transactions and data writes get -EROFS,
 * commits and fsyncs return 0, as on an engine opened read-only. !@ro: be
 * writable again, the cleaner running as before. Returns 0 (also when
 * already so), the commit's error (the engine is then read-only by that
 * error), or -EROFS for !@ro on an engine opened read-only or turned so by
 * an error.
 */
int smr_cow_set_read_only(struct smr_cow *c, bool ro);

/* A remount's commit=: the timer commits every @secs seconds (0: 5) from
 * now on, the first time after its next wake-up. */
void smr_cow_set_commit_secs(struct smr_cow *c, unsigned int secs);

/* Turn the engine read-only after a failure of @what that left it unable to
 * keep a promise (logged once); later fsyncs and commits return @rc. */
void smr_cow_set_error(struct smr_cow *c, int rc, const char *what);

/*
 * Check the trees (fsck, tests): every node verifies and is reachable from
 * the roots exactly once, keys are ordered within and across nodes, every
 * item is one its tree's type takes, item counts match the roots, and no
 * live node is among the blocks released but not yet freed. Reads the
 * whole of every tree. Returns 0, or -SMR_EFSCORRUPTED / -SMR_EFSBADCRC
 * (the failing block is logged), -EIO, -ENOMEM, -EINVAL (a tree with a
 * root but no registered type).
 */
int smr_cow_check(struct smr_cow *c);

/*
 * smr_cow_check() that does not stop at the first problem: every tree is
 * checked, each problem logged and counted in *@problems (a node that
 * fails verification once, with nothing below it, when the engine was
 * opened with skip_damaged). *@underfull gets the non-root nodes less than
 * a quarter full: deletion keeps nodes above that, but a split that
 * appends leaves a node with one item, so they are no problem (a figure of
 * fragmentation). Returns 0 (problems or not), -EIO, -ENOMEM, -EINVAL.
 */
int smr_cow_check_all(struct smr_cow *c, uint64_t *problems,
		      uint64_t *underfull);

/*
 * Tree nodes this open has read with one flipped bit put back from their
 * checksums (each logged when read; a node read again after the cache let
 * it go counts again). Their images on the device are damaged: fsck's
 * salvage (smr_cow_salvage) rebuilds their trees, with every item.
 */
uint64_t smr_cow_nodes_restored(struct smr_cow *c);

/* ------------------------------------------------------------------------
 * Transactions
 * ------------------------------------------------------------------------ */

/* Join the running transaction. -EROFS when read-only. Handles nest; each
 * ends on the thread that began it. */
int smr_txn_begin(struct smr_cow *c, struct smr_txn **tp);
/* Leave it. The changes commit with the next commit. */
void smr_txn_end(struct smr_txn *t);

/* Make every change made so far durable. Concurrent callers share one
 * commit. Returns 0 or the commit's error (after which the engine is
 * read-only and the last good checkpoint stays the newest). */
int smr_cow_commit(struct smr_cow *c);

/*
 * fsync: make every change made so far durable, by one fsync log record
 * and one flush when the engine can (opts.fsync_log; nothing since the
 * newest checkpoint that the log cannot express; room for the record),
 * else by a commit. Concurrent callers share one record or commit. The
 * state a crash leaves is then the state after some completed
 * transaction at or after the call. Returns as smr_cow_commit.
 */
int smr_cow_fsync(struct smr_cow *c);

/* ------------------------------------------------------------------------
 * Items. Values are copied in and out. Lookups need no transaction.
 * ------------------------------------------------------------------------ */

/*
 * Find @key in @tree. On success copies up to *@len bytes of the value to
 * @val (which may be NULL to ask only the size) and sets *@len to the
 * value's full length. -ENOENT if absent.
 */
int smr_bt_lookup(struct smr_cow *c, uint32_t tree, const struct smr_key *key,
		  void *val, size_t *len);

/*
 * First item with key >= @from (smr_bt_next) or last item with key <= @from
 * (smr_bt_prev); *@found gets its key, @val/@len as for lookup. -ENOENT if
 * there is none.
 */
int smr_bt_next(struct smr_cow *c, uint32_t tree, const struct smr_key *from,
		struct smr_key *found, void *val, size_t *len);
int smr_bt_prev(struct smr_cow *c, uint32_t tree, const struct smr_key *from,
		struct smr_key *found, void *val, size_t *len);

/*
 * smr_bt_prev, and the item before the one it finds, in one search: the
 * last item with key <= @from in found[0], val[0], len[0], the one before
 * it in found[1], val[1], len[1] (each as for lookup; val[i] may be NULL,
 * len[i] may not). Returns how many were found (1 or 2), -ENOENT if none.
 * A caller that wants both the item at an offset and its neighbour before
 * (the extent a write replaces and the one it may merge into) pays for
 * one descent of the tree instead of two.
 */
int smr_bt_prev2(struct smr_cow *c, uint32_t tree, const struct smr_key *from,
		 struct smr_key found[2], void *val[2], size_t len[2]);

/*
 * Changes go through the tree's type (struct smr_tree_type): -EINVAL if
 * the tree has none or its check refuses the item, -E2BIG if @len passes
 * the type's max_item.
 */

/* Add an item: -EEXIST if the key is there. */
int smr_bt_insert(struct smr_txn *t, uint32_t tree, const struct smr_key *key,
		  const void *val, size_t len);
/* Replace an item's value (its size may change): -ENOENT if absent. */
int smr_bt_update(struct smr_txn *t, uint32_t tree, const struct smr_key *key,
		  const void *val, size_t len);
/* Insert or replace. */
int smr_bt_put(struct smr_txn *t, uint32_t tree, const struct smr_key *key,
	       const void *val, size_t len);
/* Remove an item: -ENOENT if absent. */
int smr_bt_delete(struct smr_txn *t, uint32_t tree, const struct smr_key *key);

/*
 * How many changes of the FS tree's items of object @objid have been tried
 * since open, by anyone (failed ones count too; objects may share a count,
 * and a salvage counts for all): a count unchanged since an item of the
 * object was read means the item still holds what was read, so a cache
 * above may answer for it. No lock needed.
 */
uint64_t smr_cow_fs_changes(struct smr_cow *c, uint64_t objid);

/*
 * Call @fn for each item with @from <= key <= @to, in key order, under the
 * shared lock (so @fn must not change the tree). @fn returns 0 to go on,
 * 1 to stop early, or a negative errno that is returned. @val points into
 * the node and is valid only during the call; it has no alignment, so copy
 * it before reading its fields.
 */
typedef int (*smr_bt_iter_fn)(void *arg, const struct smr_key *key,
			      const void *val, size_t len);
int smr_bt_iterate(struct smr_cow *c, uint32_t tree, const struct smr_key *from,
		   const struct smr_key *to, smr_bt_iter_fn fn, void *arg);

/* ------------------------------------------------------------------------
 * Data extents: file data lives outside the trees, in extents from the
 * allocator's data streams; the trees hold only references to them.
 * ------------------------------------------------------------------------ */

enum smr_data_temp {
	SMR_DATA_HOT = 0,
	SMR_DATA_COLD = 1,
	/* The block or two a call that gives space back must rewrite to go
	 * on (the zeroed ends of a shrinking truncate or a hole punch), when
	 * the data streams are out of space: written to the relocation
	 * stream, which may use the reserve, so that freeing space does not
	 * fail for want of it. Each such block leaves the one it replaces
	 * dead, for the cleaner to win back. */
	SMR_DATA_RESCUE = 2,
};

struct smr_data_extent {
	uint64_t off; /* device byte offset */
	uint64_t len; /* bytes, a multiple of the block size */
};

/* Buffers for data I/O: aligned for direct I/O (which copies any other
 * buffer), zero-filled. */
void *smr_cow_buf_alloc(size_t len);
/* The same, not zero-filled, for a buffer filled whole before use (a read
 * into it, or a copy of a write's data): a 1 MiB write need not clear a
 * megabyte first. Freed with smr_cow_buf_free. */
void *smr_cow_buf_alloc_uninit(size_t len);
void smr_cow_buf_free(void *buf);

/*
 * Write @len bytes (a multiple of the block size) of @buf (any buffer; one
 * from smr_cow_buf_alloc spares a copy on a device that does direct I/O) to
 * new space near @near (0 = anywhere), as at most @max extents filled in
 * @ext in order.
 * Returns the number of extents; their lengths add up to @len. -ENOSPC when
 * the data streams are out of space.
 *
 * The caller owns the space and must, in a transaction, either reference
 * it and say so with smr_cow_data_settle(), or free it with
 * smr_cow_data_free(). Until then it is "unsettled": a checkpoint taken
 * meanwhile records it as released, so that a recovery from that
 * checkpoint, where nothing references it, gets it back.
 */
int smr_cow_data_write(struct smr_cow *c, enum smr_data_temp temp,
		       uint64_t near, const void *buf, uint64_t len,
		       struct smr_data_extent *ext, unsigned int max);
/* Read @len bytes at device offset @off (within extents the caller owns). */
int smr_cow_data_read(struct smr_cow *c, uint64_t off, void *buf, uint64_t len);
/*
 * A read of data that does not hold the lock under which its caller found
 * the extent: between smr_cow_read_pin() and smr_cow_read_unpin() no space
 * is made reusable (no freed range becomes free, no zone is reset or
 * discarded; the commit that would do it waits), so an extent that was
 * referenced at the pin still holds its data, even if it is freed meanwhile.
 * Pin while the map is held, read, unpin; never wait for a commit or take
 * a lock a commit may wait on (the layer above's) while pinned.
 */
void smr_cow_read_pin(struct smr_cow *c);
void smr_cow_read_unpin(struct smr_cow *c);
/* The extent is no longer referenced once @t's transaction commits. */
int smr_cow_data_free(struct smr_txn *t, uint64_t off, uint64_t len);
/*
 * Data that smr_cow_data_write() placed is referenced from @t's transaction
 * on. Call it inside that transaction, never after its end: a commit in
 * between would record referenced data as released. 0, or -ENOMEM.
 */
int smr_cow_data_settle(struct smr_txn *t, uint64_t off, uint64_t len);

/* Space as statfs should report it, in bytes. */
struct smr_cow_space {
	uint64_t block_size;
	uint64_t capacity;    /* managed by the allocator */
	uint64_t used;
	uint64_t free;        /* available to data now */
	uint64_t reclaimable; /* comes back by commit or cleaning */
	uint64_t reserved;    /* metadata and cleaner reserve */
	uint64_t overhead;    /* of capacity, what users cannot fill and keep
			       * overwriting (the reserve, the streams' own
			       * zones, the cleaner's room): a constant */
};
void smr_cow_space(struct smr_cow *c, struct smr_cow_space *sp);

/* The size users can fill and keep overwriting, what statfs reports as
 * the filesystem's size: the capacity less the overhead. */
static inline uint64_t smr_cow_space_size(const struct smr_cow_space *sp)
{
	return sp->capacity - (sp->overhead < sp->capacity ? sp->overhead :
							      sp->capacity);
}

/*
 * How many bytes users' data may still grow by: the size statfs reports
 * (smr_cow_space_size) less the bytes in use (smr_cow_space's used), 0 if
 * they are past it. That size is what users can fill and keep
 * overwriting; beyond it the cleaner would run out of room, so writes
 * must not add more (what they replace does not count). Metadata and the
 * cleaner do not ask: they have the reserve. In constant time, for every
 * write; UINT64_MAX without an allocator (the memory store).
 */
uint64_t smr_cow_space_room(struct smr_cow *c);

/*
 * How many bytes the metadata users make without data (names, symlinks,
 * xattrs) may still grow by: smr_cow_space_room plus an eighth of the
 * allocator's reserve, so that a file can still be made (and a name
 * given) on a filesystem data has filled, but thousands of them cannot
 * take the reserve the commits need. O(zones) once a commit, else
 * constant time; UINT64_MAX without an allocator.
 */
uint64_t smr_cow_space_room_meta(struct smr_cow *c);

/* What users may still write of that size, as statfs reports it: free
 * and reclaimable space, but no more than the size less what is used. */
static inline uint64_t smr_cow_space_avail(const struct smr_cow_space *sp)
{
	uint64_t size = smr_cow_space_size(sp);
	uint64_t left = size > sp->used ? size - sp->used : 0;
	uint64_t have = sp->free + sp->reclaimable;

	return have < left ? have : left;
}

/* ------------------------------------------------------------------------
 * fsck: src/cow/check.c
 * ------------------------------------------------------------------------ */

struct smr_cow_super_check {
	uint64_t problems;    /* found, each logged */
	uint64_t fixed;       /* of them, repaired on the device */
	uint64_t unfixable;   /* of them, beyond a safe repair */
	uint32_t sb_copies, sb_bad;
	uint32_t ckpt_valid, ckpt_bad, ckpt_empty;
	uint32_t log_pieces;  /* valid fsync log pieces (any generation) */
	uint64_t newest_gen;  /* of the newest valid checkpoint, 0 if none */
	uint64_t newest_addr;
	bool no_sb;           /* neither superblock copy verifies, and no
			       * checkpoint record says the device is
			       * smrfs */
	bool sb_rebuilt;      /* neither copy verifies: the check went by a
			       * superblock rebuilt from the device, which
			       * an open with rebuild_sb takes too */
	bool log_move;        /* a copy in a checkpoint log zone is damaged:
			       * rewritten by the next commits of a
			       * read-write open (at most two, forced with
			       * smr_cow_commit_forced) */
	bool lost_commit;     /* a damaged record is newer than the newest
			       * valid one: a commit (smr_cow_commit_forced)
			       * supersedes it */
};

/*
 * Read both superblock copies and every place a checkpoint record may be,
 * as open does, and report (log) each damaged one. Damaged records of the
 * ring and damaged superblock copies outside sequential zones are problems
 * and, with @repair, are rewritten (a superblock from the good copy) or
 * cleared (a checkpoint slot); a damaged copy in a zone of the checkpoint
 * log is a problem that sets r->log_move (and, with @repair, counts as
 * fixed): the caller's two forced commits rewrite it; a damaged record in the zone log older than
 * the newest valid one is only a warning (never read, dropped when the log
 * wraps). The device must be open read-write for @repair and no engine
 * may be open on it. Where neither superblock copy verifies, the one
 * checked against is rebuilt (smr_cow_sb_rebuild) with @uuid if no record
 * gives one. Fills *@r; returns 0 (problems or not), -ENOMEM, or the
 * device's error.
 */
int smr_cow_check_super(struct smr_dev *dev, bool repair,
			const uint8_t *uuid, struct smr_cow_super_check *r);

/*
 * fsck only, where neither superblock copy nor any checkpoint record
 * verifies: the UUID of the B-tree nodes a scan of the written space finds
 * (the one field of a superblock that the device's geometry does not
 * give). Reads all of it (@o: its progress and cancel, or NULL). Of nodes
 * of several filesystems (one made over another), a zoned device's newest
 * is the one with nodes in sequential zones, which every mkfs resets. 0
 * with @uuid; -EINVAL when no node verifies (nothing says the device is
 * smrfs); -EEXIST when they are of several filesystems that cannot be
 * told apart (logged); -ECANCELED, -ENOMEM, -EIO.
 */
int smr_cow_find_uuid(struct smr_dev *dev, const struct smr_cow_opts *o,
		      uint8_t uuid[16]);

struct smr_cow_space_check {
	uint64_t problems, fixed, unfixable;
	uint64_t low;              /* of the problems, zones counting fewer
				    * live bytes than referenced: fixed by
				    * opening with rebuild_alloc_always */
	uint64_t nodes;            /* tree nodes reached */
	uint64_t zones;            /* zones compared (zoned allocator) */
	uint64_t data_bytes;       /* bytes of the data extents given */
	uint64_t bytes_referenced; /* everything referenced */
	uint64_t leaked;           /* bytes neither referenced nor free */
	uint32_t *finish;          /* without @repair: zones to finish
				    * before a repair (smr_alloc_check);
				    * malloc'd, the caller frees it */
	uint32_t nr_finish;
};

/*
 * The space audit: every block the newest checkpoint references (the
 * trees' nodes, the blocks it released that the previous one still uses,
 * the allocator's state, and the @nr_data data extents the caller's items
 * reference) is checked not to overlap another and against the allocator's
 * accounting (smr_alloc_check in alloc.h). With @repair, the allocator's
 * accounting is fixed where safe and goes out with the next commit. Fills
 * *@r; returns 0 (problems or not), -ENOMEM, -EOPNOTSUPP (no allocator:
 * the memory store), a node's read error.
 */
int smr_cow_check_space(struct smr_cow *c, const struct smr_data_extent *data,
			size_t nr_data, bool repair,
			struct smr_cow_space_check *r);

/* What smr_cow_salvage() did. */
struct smr_cow_salvage {
	uint32_t trees;     /* trees rebuilt */
	uint64_t bad_nodes; /* nodes that failed verification, dropped */
	uint64_t kept;      /* items in the rebuilt trees */
	uint64_t lost;      /* items the checkpoint counted that are gone */
	bool lost_unknown;  /* the checkpoint was rebuilt (rebuild_ckpt): it
			     * counted only the items it could read, and
			     * lost is 0 */
};

/*
 * fsck's B-tree salvage: every tree whose check (smr_bt_check) fails is
 * rebuilt from the items that can still be read, dropping each node that
 * fails verification with everything below it, and each item the tree's
 * type refuses; each dropped node is logged with the key range it held,
 * each dropped item with its key. The key range of a damaged root or
 * interior node of a tree that is not derived is filled from the tree's
 * leaves found by a scan of the device, written no later than the
 * checkpoint, the newest copy of each key unless a newer leaf shows it
 * deleted (docs/design/fsck.md). The blocks that could not be read,
 * and the data only dropped items referenced, stay allocated for the
 * space audit to give back (smr_cow_check_space with repair, which must
 * run on the result before anything else is repaired). The caller
 * commits. Fills *@r. -EROFS, -ENOMEM, -EINVAL (a tree with a root but
 * no registered type), insert errors.
 */
int smr_cow_salvage(struct smr_cow *c, struct smr_cow_salvage *r);

/*
 * One entry of the engine's reverse map of data extents (docs/FORMAT.md,
 * "Reverse map of data extents"): byte d of [off, off + len) belongs to
 * the item keyed (owner.objid, owner.type, owner.offset + d).
 */
struct smr_cow_rmap_entry {
	uint64_t off;
	uint64_t len;
	struct smr_key owner;
	/* smr_cow_rmap_iterate: the entry lies in data the newest checkpoint
	 * released (written but not yet referenced when it was taken), which
	 * a read-write open drops; expected after a crash, not a problem. */
	bool released;
};

typedef int (*smr_cow_rmap_fn)(void *arg, const struct smr_cow_rmap_entry *e);

/*
 * fsck: call @fn for every entry of the reverse map, in device order,
 * under the shared engine lock (@fn must not call the engine). An item
 * that does not decode is logged with its key, counted in *@nr_bad and
 * not passed on. @fn returns 0 to go on, 1 to stop, or a negative errno
 * that is returned. Returns 0, -EOPNOTSUPP (an engine without a reverse
 * map), -ENOMEM or a node's read error.
 */
int smr_cow_rmap_iterate(struct smr_cow *c, smr_cow_rmap_fn fn, void *arg,
			 uint64_t *nr_bad);

/*
 * fsck's repair: replace the whole reverse map, in @t's transaction, by
 * the @n entries of @e (their `released` is ignored). They must be sorted
 * by offset, not overlap, be whole blocks and lie in the managed range:
 * else -EINVAL and nothing is changed. -EROFS, -EOPNOTSUPP, -ENOMEM,
 * insert errors (after which the map may be partial: safe, since the
 * cleaner checks every move against the owner, and a new check finds it).
 */
int smr_cow_rmap_rebuild(struct smr_txn *t, const struct smr_cow_rmap_entry *e,
			 size_t n);

/* Commit even when nothing changed: a new checkpoint record (fsck, after a
 * damaged newer record or an allocator repair). -EROFS, commit errors. */
int smr_cow_commit_forced(struct smr_cow *c);

/* ------------------------------------------------------------------------
 * Cleaning (zoned devices): dead data's space comes back only when the live
 * rest of its zone is moved out and the zone is reset. docs/design/cleaner.md
 * ------------------------------------------------------------------------ */

/* Would a data write of @len bytes go out without waiting for the device
 * (smr_dev_write_quick)? A hint for a caller that holds others up while
 * it writes. True without a device (the memory store). */
bool smr_cow_data_write_quick(struct smr_cow *c, uint64_t len);

/* Told once a data write holds the space for all of its bytes, before
 * any of them is written. */
struct smr_cow_held {
	void (*fn)(void *arg);
	void *arg;
};

/*
 * As smr_cow_data_write, and record in the engine's reverse map that the
 * extents belong to @owner: byte d of the data written belongs to the item
 * keyed (owner->objid, owner->type, owner->offset + d). Only data written so
 * can be moved by the cleaner. Errors as smr_cow_data_write, and -ENOMEM.
 * @held (may be NULL): called once the space for all @len bytes is held in
 * one go, before the data goes out; not called if the space came in parts
 * or not at all. An error after it (the device's, or -ENOMEM) still
 * returns with nothing kept.
 */
int smr_cow_data_write_owned(struct smr_cow *c, enum smr_data_temp temp,
			     uint64_t near, const struct smr_key *owner,
			     const void *buf, uint64_t len,
			     struct smr_data_extent *ext, unsigned int max,
			     const struct smr_cow_held *held);

/*
 * The one call from the engine up to the layer above. The cleaner has
 * copied @len bytes of data from @old_off to @new_off; the data belongs to
 * @owner (its first byte). The hook makes the owner reference @new_off
 * instead, in a transaction of its own, and frees the old range with
 * smr_cow_data_free() in that transaction, but only if the owner still
 * references exactly @old_off for the whole range: a block changed or freed
 * meanwhile is not moved. Returns 1 if moved, 0 if not (the engine frees the
 * copy), or a negative errno. When it moves, it settles the copy
 * (smr_cow_data_settle) in its transaction. Called with no engine lock and
 * no transaction handle held.
 */
typedef int (*smr_cow_relocate_fn)(void *arg, const struct smr_key *owner,
				   uint64_t old_off, uint64_t new_off,
				   uint64_t len);
void smr_cow_set_relocate_hook(struct smr_cow *c, smr_cow_relocate_fn fn,
			       void *arg);

enum smr_cow_gc_policy {
	SMR_COW_GC_COST_BENEFIT = 0, /* (1 - u) * age / (1 + u), Sprite LFS */
	SMR_COW_GC_GREEDY = 1,       /* fewest live bytes */
};

/*
 * Clean zone @zno: move its live nodes and data out through the COW path,
 * commit twice (the old copies are freed by the second commit, after which
 * no checkpoint on disk references them), and let the allocator reset it.
 * Returns 0 when the zone was emptied, -EAGAIN if live bytes remain (data
 * that changed during the move, or data without an owner), -EBUSY if the
 * zone is still being written, -EOPNOTSUPP on a device without zones or
 * without a relocation hook, -ENOSPC, -EROFS, or an I/O error.
 * Callers hold no engine lock, no transaction handle and no lock the
 * relocation hook takes.
 */
int smr_cow_clean_zone(struct smr_cow *c, uint32_t zno);

/*
 * Pick up to @max_zones victims by @policy and clean them. Returns the
 * number of zones emptied (0: nothing worth cleaning), or an error. Same
 * calling rules as smr_cow_clean_zone.
 */
int smr_cow_clean(struct smr_cow *c, enum smr_cow_gc_policy policy,
		  unsigned int max_zones);

/*
 * A remount's cleaner options (gc=, gc_low=, gc_high=), for gc_need_only,
 * gc_policy, gc_low and gc_high of the options: @policy SMR_COW_GC_KEEP
 * keeps the policy, SMR_COW_GC_NEED_ONLY cleans only when a write needs
 * space (gc=off), and an enum smr_cow_gc_policy cleans ahead of need by
 * it; @low and @high 0 keep theirs. The thread takes them from its next
 * pass, and is woken to. Returns 0, or -EINVAL with nothing changed where
 * a watermark would reach the device's number of zones, gc_high (set)
 * would not be above gc_low, or @policy is none of these.
 */
#define SMR_COW_GC_KEEP (-1)
#define SMR_COW_GC_NEED_ONLY (-2)
int smr_cow_set_gc(struct smr_cow *c, int policy, unsigned int low,
		   unsigned int high);

/*
 * One step of background cleaning, as the engine's thread does it: when
 * fewer than gc_low zones are free (and from then on until more than
 * gc_high are), clean by the policy of the options (greedily when fewer
 * than half of gc_low are free) in passes of one set of commits, until
 * the victims' dead bytes make up for the zones missing above gc_high;
 * a pass whose victims would win less than a quarter of a zone is not
 * made. Returns the number of zones emptied (0: nothing to do or nothing
 * worth cleaning), or an error. Same calling rules as smr_cow_clean_zone.
 */
int smr_cow_clean_auto(struct smr_cow *c);

/*
 * Foreground cleaning: a data write got -ENOSPC. If dead space exists,
 * commit twice so that what was freed reaches the allocator, and on a zoned
 * device clean greedily until a data write can have a zone again. Returns 0
 * when the caller should retry, -ENOSPC when nothing could be reclaimed. Same
 * calling rules as smr_cow_clean_zone.
 */
int smr_cow_clean_for_space(struct smr_cow *c);

/*
 * Foreground cleaning before a change of metadata (names, inodes, xattrs,
 * and the extent map a data write changes):
 * once commits' nodes have started to take the free zones kept in reserve,
 * clean a zone first, so that such changes cannot outrun the cleaner until
 * a commit finds no room. A cached figure otherwise, nothing more. Same
 * calling rules as smr_cow_clean_zone.
 */
void smr_cow_clean_for_meta(struct smr_cow *c);

/* Figures since mkfs; write_amplification = device_bytes / user_bytes. */
struct smr_cow_gc_stats {
	uint64_t user_bytes;    /* written by users (smr_cow_count_user); on
				 * a filesystem made without the feature
				 * USER_BYTES, by smr_cow_data_write[_owned] */
	uint64_t device_bytes;  /* written to the device: data, metadata,
				 * relocation, allocator state */
	uint64_t reloc_bytes;   /* of which moved by the cleaner */
	uint64_t meta_bytes;    /* of which metadata and allocator state */
	uint64_t zones_reset;
	uint64_t gc_runs;       /* cleaning passes (zones attempted) */
	uint64_t gc_zones;      /* zones the cleaner emptied */
	uint64_t gc_usecs;      /* time spent cleaning, microseconds */
};
void smr_cow_gc_stats(struct smr_cow *c, struct smr_cow_gc_stats *st);
/*
 * @bytes more written by users: the layer above calls it for each write it
 * made, with the bytes its caller asked for (a write of part of a block
 * writes the whole block with smr_cow_data_write). Kept with the allocator
 * state from the next commit on; nothing on filesystems made without the
 * feature USER_BYTES. Takes no lock.
 */
void smr_cow_count_user(struct smr_cow *c, uint64_t bytes);

/* ------------------------------------------------------------------------
 * Figures for smrfsctl stat / zones: src/cow/stats.c
 * ------------------------------------------------------------------------ */

/* Everything smrfsctl stat shows, gathered in one call. */
struct smr_cow_fsstat {
	struct smr_cow_info info;
	struct smr_cow_space space;
	char dev_kind[8];        /* "zloop", "zbd", "file", "bdev" */
	char backend[8];         /* "zloop", "zbd", "file", "fault" */
	bool zoned, host_aware, rotational, read_only;
	uint32_t nr_zones;       /* 0 when not zoned */
	uint32_t nr_cnv_zones;
	uint32_t zones_meta;     /* below data_start: superblocks, checkpoints */
	uint32_t zones_free;     /* empty sequential zones the allocator manages */
	uint32_t zones_open;     /* open now (implicitly or explicitly) */
	uint32_t zones_active;   /* open or closed */
	uint32_t zones_full;
	uint32_t max_open, max_active; /* 0 = no limit */
	uint64_t zone_size;      /* of the last zone (the managed ones) */
	uint64_t zone_cap;
	/* The allocator's counters since mkfs (struct smr_alloc_stats). */
	uint64_t bytes_allocated[4]; /* meta, hot, cold, relocation streams */
	uint64_t bytes_freed;
	uint64_t nr_allocs;
	uint64_t zones_reset;
	uint64_t zones_finished;
	/* The engine's, since open. */
	uint64_t commits;
	uint64_t nodes_written;
	uint64_t log_records;    /* fsync log records written */
	/* The cleaner's figures since mkfs (smr_cow_gc_stats), where the
	 * engine has an allocator (has_gc). */
	bool has_gc;
	uint64_t user_bytes;     /* data written by the layer above */
	uint64_t device_bytes;   /* everything written: data, relocation,
				  * metadata; / user_bytes = write amp. */
	uint64_t reloc_bytes;    /* moved by the cleaner */
	uint64_t gc_zones;       /* zones the cleaner emptied */
	uint64_t gc_runs;        /* zones it tried */
	uint64_t gc_usecs;       /* time it took, microseconds */
};

/*
 * Fill *@st. Takes no engine lock for long: the zone figures come from the
 * device's zone cache, the counters from the allocator. Always succeeds;
 * an engine without a device (the memory store of the tests) reports its
 * info and space only.
 */
void smr_cow_fsstat(struct smr_cow *c, struct smr_cow_fsstat *st);

/* Bits of smr_cow_zstat.flags. */
#define SMR_COW_ZONE_META (1u << 0) /* below data_start: superblocks and
				     * checkpoints, not the allocator's */

/* One zone, as smrfsctl zones shows it. */
struct smr_cow_zstat {
	uint64_t start;   /* device byte offset */
	uint64_t len;     /* zone size */
	uint64_t cap;     /* writable bytes */
	uint64_t written; /* write pointer - start (cap for conventional) */
	int64_t live;     /* live bytes as the allocator counts them, or -1
			   * where it does not (meta zones, other modules) */
	uint8_t type;     /* enum smr_zone_type (dev.h) */
	uint8_t cond;     /* enum smr_zone_cond (dev.h) */
	uint8_t flags;    /* SMR_COW_ZONE_* */
};

/*
 * Fill @out with up to @n zones starting at zone @first. Returns the
 * number filled (0 when @first is the number of zones), -EINVAL when
 * @first is beyond it, -EOPNOTSUPP when the device is not zoned or the
 * engine has no device.
 */
int smr_cow_zstat(struct smr_cow *c, uint32_t first, uint32_t n,
		  struct smr_cow_zstat *out);

#endif /* SMR_COW_COW_H */
