/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cow_priv.h - the COW engine's internals, shared by the files of src/cow/
 * and by its white-box tests. Nothing above src/cow/ includes this.
 *
 * Structure:
 *   bt.c     the B+tree over node images, the node cache, search, insert,
 *            delete with merge/rebalance, cursors;
 *   txn.c    transactions, the commit (write-out of dirty nodes, then the
 *            store's checkpoint), group commit and the timer thread;
 *   store_dev.c  the store over a device and an allocator: superblocks,
 *            checkpoint placement, format and open;
 *   store_mem.c  a store in memory, for tests of the tree alone;
 *   cow.c    the public entry points of cow.h.
 *
 * The store is the seam between the tree and the disk: the tree asks it to
 * read a node, to hand out addresses for the nodes of a commit, to write
 * them, to free old blocks and to make a checkpoint durable.
 */
#ifndef SMR_COW_COW_PRIV_H
#define SMR_COW_COW_PRIV_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "alloc/alloc.h"
#include "cow/cow.h"
#include "dev/dev.h"
#include "format/node.h"
#include "format/sb.h"

/* Addresses of nodes not yet written carry this bit: they name the node in
 * the cache until the commit gives it a device address. */
#define SMR_TMP_ADDR (1ULL << 63)

/* The root of a tree whose checkpoint was rebuilt without one that reads
 * back whole (smr_ckpt_from_scan): no node is there, every read of it
 * fails as damage, and fsck's salvage rebuilds the tree from its leaves.
 * Never written: the salvage replaces it before any commit. */
#define SMR_ROOT_LOST (SMR_TMP_ADDR - 65536)

/* Trees are numbered 1 .. SMR_CKPT_MAX_ROOTS. */
#define SMR_COW_MAX_TREE SMR_CKPT_MAX_ROOTS
/* Entries of a checkpoint's released list kept for data in flight (written,
 * not yet referenced: smr_cow_data_settle); the rest is for what the
 * transaction released. */
#define SMR_CKPT_UNSETTLED_ROOM 128

/* smr_cow_fs_changes() counts by object in this many slots. */
#define SMR_COW_FS_CHANGE_SLOTS 64

static inline uint32_t smr_cow_fs_slot(uint64_t objid)
{
	return (uint32_t)(objid % SMR_COW_FS_CHANGE_SLOTS);
}

struct smr_cow;

/*
 * The node store. Every op returns 0 or a negative errno. Called with the
 * engine lock held exclusive (read: shared or exclusive).
 */
struct smr_store_ops {
	const char *name;
	/* Fill c->sb (at least uuid and node_size) and the newest valid
	 * checkpoint; a fresh store gives ck->gen == 0. */
	int (*load)(struct smr_cow *c, struct smr_ckpt *ck);
	/* Read @len bytes at device offset @addr. */
	int (*read)(struct smr_cow *c, uint64_t addr, void *buf, size_t len);
	/* Hand out addresses for @n nodes of c->sb.node_size bytes, in the
	 * order they must be written. Must be followed by meta_write (or by
	 * meta_abort after a failure) before anything else uses the store. */
	int (*meta_alloc)(struct smr_cow *c, uint32_t n, uint64_t *addrs);
	/* Write the nodes (ios in the order of the addresses handed out). */
	int (*meta_write)(struct smr_cow *c, struct smr_io *ios, uint32_t n);
	/* Release what meta_alloc holds after a failure; a no-op when
	 * nothing is held. */
	void (*meta_abort)(struct smr_cow *c);
	/* The blocks are no longer referenced as of the next checkpoint. */
	int (*free)(struct smr_cow *c, uint64_t off, uint64_t len);
	/* Persist the allocator, write @ck (alloc fields filled here), flush,
	 * and tell the allocator it is durable. Fails only if @ck may not be
	 * durable: an error after that is logged, not returned, since the
	 * engine must then take the new generation as committed. */
	int (*checkpoint)(struct smr_cow *c, struct smr_ckpt *ck);
	/* Release the store (the device is the caller's). */
	void (*close)(struct smr_cow *c);
	/* Write the fsync log record @payload (@len bytes, sequence number
	 * @seq after the newest checkpoint) as @nr pieces after the newest
	 * checkpoint or record, and flush. 0, 1 when there is no room for
	 * it (the caller commits instead; nothing written), or an error.
	 * May be NULL: no log. */
	int (*log_write)(struct smr_cow *c, const uint8_t *payload, size_t len,
			 uint64_t seq, uint32_t nr);
	/* Call @fn for every block of the written part of the managed area
	 * that verifies as a node of @tree (header, checksum and structure;
	 * any generation, referenced or not), in address order, until @fn
	 * returns non-zero (returned). For fsck's rebuild of a tree whose
	 * interior nodes are lost. May be NULL: the store cannot be
	 * scanned. 0, @fn's value, -ENOMEM, read errors. */
	int (*scan_nodes)(struct smr_cow *c, uint32_t tree,
			  int (*fn)(void *arg, uint64_t addr, const void *node),
			  void *arg);
};

extern const struct smr_store_ops smr_store_dev_ops;
extern const struct smr_store_ops smr_store_mem_ops;

/* A cached node. The image in buf is the on-disk node; its header's address,
 * generation and checksum are set when it is written. */
struct smr_node {
	uint64_t addr;           /* device address, or SMR_TMP_ADDR | n */
	uint64_t gen;            /* generation it was (or will be) written in */
	uint32_t tree;
	uint16_t level;
	bool dirty;              /* created in the running transaction */
	int pin;                 /* paths holding it; protected by cache_lock */
	struct smr_node *hnext;  /* hash chain; cache_lock */
	struct smr_node *prev, *next; /* LRU (clean) or dirty list; cache_lock */
	uint8_t *buf;
	struct smr_slab *slab;   /* the slab buf is carved from (bt.c) */
};

struct smr_path {
	struct smr_node *n[SMR_BT_MAX_LEVEL];
	int slot[SMR_BT_MAX_LEVEL];
	int top;                 /* level of the root; -1 = empty tree */
};

/*
 * A leaf a search found lately, with the path to it (not pinned) and the
 * keys it holds: [lo, hi), lo_inf and hi_inf for no bound. It stands for a
 * descent only while the cow's bt_shape is still @shape (bt.c, "Fingers").
 */
struct smr_finger {
	uint64_t shape;          /* 0: none */
	struct smr_path path;
	struct smr_nkey lo, hi;
	bool lo_inf, hi_inf;
};

/* Fingers a tree keeps: a write searches two leaves of the FS tree, its
 * inode's and its extent's. */
#define SMR_BT_FINGERS 2

struct smr_tree {
	uint32_t id;
	uint64_t addr;           /* root; 0 = empty tree */
	uint64_t gen;
	uint16_t level;
	uint64_t nr_items;
	struct smr_finger finger[SMR_BT_FINGERS]; /* cache_lock */
	unsigned int finger_next;                 /* cache_lock */
	/* Nodes of it read with one bit flipped, put back from their
	 * checksums (node_load): their images on the device are still
	 * damaged, and fsck's salvage rewrites the tree. Atomic. */
	uint32_t restored;
};

/* A growable list of extents (pending frees). */
struct smr_xlist {
	struct smr_extent *x;
	size_t n, cap;
	uint64_t bytes; /* the sum of the extents' lengths */
};

struct smr_nlist {
	struct smr_node head;    /* sentinel: head.next is the oldest */
	size_t n;                /* cache_lock to change; atomics to read
				  * without it */
};

struct smr_cow_stats {
	uint64_t node_reads;     /* nodes read from the store (cache misses) */
	uint64_t nodes_written;
	uint64_t commits;
	uint64_t evictions;
	uint64_t log_records;    /* fsync log records written */
	uint64_t node_bytes;     /* node memory mapped now, the free buffers
				  * of its slabs too; cache_lock */
};

/* Slots of smr_cow.log_recent (a power of two). */
#define SMR_LOG_RECENT 16

/* Data written while the fsync log gathers (log.c). */
struct smr_log_w {
	uint64_t off, len;
	uint64_t csum;           /* XXH3-64, seed 0, of the bytes written */
	struct smr_key owner;    /* reverse-map owner of the first byte */
	bool owned;
	bool settled;            /* referenced since the last record */
};

struct smr_log_op;

/* One piece of a record as found on the device (store_dev.c, log.c). */
struct smr_log_piece {
	uint64_t addr, gen, seq, total;
	uint32_t piece, nr_pieces, len;
};

struct smr_cow {
	const struct smr_store_ops *sops;
	void *store;             /* the store's private state */
	struct smr_sb sb;
	uint32_t ns;             /* node size */
	struct smr_cow_opts opts;
	size_t cache_bytes;
	/* The allocator's reserve as the newest commit left it, plus one;
	 * 0 until worked out again after a commit (smr_cow_reserve()), and
	 * what had been taken of it (valid while reserve1 is not 0).
	 * __atomic loads and stores. */
	uint64_t reserve1, reserve_taken;

	/* Device-backed stores only. */
	struct smr_dev *dev;
	const struct smr_dev_info *info;
	struct smr_alloc *alloc;
	char alloc_why[160];

	/*
	 * Lock order: commit_lock, then txn_lock (released before lock), then
	 * lock, then cache_lock; the allocator's mutex after any of them.
	 */
	pthread_rwlock_t lock;   /* the trees and everything below */
	/* Held shared by readers of data outside the layer above's lock
	 * (smr_cow_read_pin), exclusive while a commit makes freed space
	 * reusable (smr_alloc_committed); prefers the writer, so that a
	 * stream of reads cannot hold a commit off. Taken after lock. */
	pthread_rwlock_t reuse_lock;
	struct smr_tree trees[SMR_COW_MAX_TREE + 1]; /* index = id */
	/* The registered tree types (smr_cow_tree_register); set under
	 * lock exclusive, read with lock held. */
	const struct smr_tree_type *types[SMR_COW_MAX_TREE + 1];
	uint64_t gen;            /* newest durable checkpoint; lock */
	uint64_t skipped_gen;    /* smr_cow_info.skipped_gen; set at open */
	bool ckpt_rebuilt;       /* smr_cow_info.ckpt_rebuilt; set at open */
	uint64_t gen_floor;      /* highest generation of a valid record on
				  * disk at open: the next commit goes above
				  * it, even after a fallback; lock */
	uint64_t nr_nodes;       /* nodes written since mkfs; lock */
	/* A scan of all the written space (sd_scan_nodes): bytes read and
	 * to read, for opts.scan_progress; total 0 outside one. */
	uint64_t scan_done, scan_total;
	bool changed;            /* something to commit; lock */
	/* smr_cow_fs_changes, by object: atomics, under lock exclusive;
	 * a cache line each, as writers of different files bump their own */
	struct {
		uint64_t n;
	} __attribute__((aligned(64))) fs_changes[SMR_COW_FS_CHANGE_SLOTS];
	struct smr_xlist free_cur;  /* released in the running txn; lock */
	struct smr_xlist free_prev; /* released by the newest checkpoint,
				     * not yet given to the allocator; lock */
	/* Extents it released whose data was in flight and did not all
	 * reach the device, whole (free_prev has what did): their
	 * reverse-map entries go at the open. Set at open. */
	struct smr_xlist cut;
	struct smr_alloc_ref alloc_ref; /* the newest checkpoint's allocator
					 * state (fsck reads it again); lock */
	uint8_t *scratch[2];     /* node-size buffers for splits; lock excl. */

	pthread_mutex_t cache_lock;
	struct smr_node **hash;  /* cache_lock */
	size_t hash_size, nr_cached; /* cache_lock */
	struct smr_nlist lru;    /* clean nodes; cache_lock */
	struct smr_nlist dirty;  /* dirty nodes; cache_lock */
	struct smr_slab *slabs;  /* slabs of node buffers with a free one
				  * (bt.c); cache_lock */
	struct smr_slab *empty_slab; /* the one all free kept; cache_lock */
	uint64_t next_tmp;       /* lock excl. */
	/* Moves with every change of the trees' shape: a node added, dropped,
	 * copied, evicted or given its address, an internal node's entries,
	 * a root; not with an item's change in a leaf (bt.c, "Fingers").
	 * Changed with atomics (under lock exclusive, or cache_lock for an
	 * eviction), read under cache_lock. */
	uint64_t bt_shape;

	pthread_mutex_t txn_lock;
	pthread_cond_t txn_cond;
	unsigned int nr_handles; /* txn_lock */
	bool committing;         /* txn_lock */
	bool read_only;          /* txn_lock to change (atomic store); read
				  * anywhere with cow_read_only() */
	int error;               /* the failed commit's error; txn_lock */
	bool ro_asked;           /* read-only by smr_cow_set_read_only();
				  * txn_lock */

	pthread_mutex_t commit_lock; /* one commit at a time */

	pthread_t timer;
	bool timer_running;
	bool timer_stop;         /* txn_lock */
	bool commit_asked;       /* txn_lock: the timer thread commits at
				  * once (dirty bound, nested begin) */
	pthread_cond_t timer_cond;

	struct smr_cow_stats stats; /* updated with atomics */

	/*
	 * The fsync log (log.c). log_on is set at open and constant after:
	 * opts.fsync_log on a read-write device store whose format has the
	 * log. The rest is protected by lock (exclusive to change) unless
	 * said otherwise.
	 */
	bool log_on;
	bool log_broken;         /* atomics: no record until the next commit */
	bool log_base_ok;        /* this engine wrote the newest checkpoint */
	uint64_t log_seq;        /* records written after it */
	uint64_t log_change;     /* changes counted since open */
	uint64_t log_durable;    /* of them, durable (commit_lock) */
	struct smr_log_op *log_ops;  /* FS tree changes since the last record */
	size_t log_nops, log_capops;
	uint8_t *log_vals;       /* their values */
	size_t log_nvals, log_capvals;
	size_t log_order;        /* order of the next change in log_ops */
	/* By a hash of the key: 1 + the index in log_ops of a key changed
	 * lately, 0 for none. A change of that key again takes its entry
	 * (each write puts its inode), so that a record sorts fewer. */
	uint32_t log_recent[SMR_LOG_RECENT];
	struct smr_xlist log_frees;  /* data freed since the checkpoint, or
				      * with log_frees_delta since the last
				      * record */
	bool log_frees_delta;    /* the format's LOG_FREES; set at open */
	pthread_mutex_t log_lock;    /* log_w; taken after lock */
	struct smr_log_w *log_w;     /* data written, not yet recorded */
	size_t log_nw, log_capw;
	size_t log_nunsettled;   /* of log_w, not settled (log_lock) */
	uint8_t **log_found;     /* records found at open (payloads), in */
	size_t *log_found_len;   /* order; freed once replayed */
	uint32_t log_nfound;
	uint32_t log_replayed;   /* records replayed at open */
	uint32_t log_pending;    /* records found, not replayed (read-only) */

	/* The cleaner (clean.c). */
	smr_cow_relocate_fn reloc_fn; /* set once by the layer above */
	void *reloc_arg;
	pthread_mutex_t clean_lock;   /* one cleaning pass at a time; taken
				       * before commit_lock */
	struct smr_cow_gc_stats gc;   /* gc_runs, gc_zones, gc_usecs: added
				       * to under clean_lock with atomics,
				       * read with atomics (the commit) */
	struct smr_cow_gc_stats gc_saved; /* the figures of the newest
				       * checkpoint; commit_lock */
	bool gc_active;               /* clean_lock: below gc_low, and not
				       * yet above gc_high since */
	bool gc_running;              /* the background thread exists; set
				       * by the opening and closing thread,
				       * read by any committer (atomic) */
	bool gc_stop;                 /* txn_lock */
	bool gc_wake;                 /* txn_lock: a writer saw free zones
				       * below gc_low */
	uint64_t gc_kick_bytes;       /* written by users and commits;
				       * atomics */
	pthread_t gc_thread;
	pthread_cond_t gc_cond;       /* with txn_lock: wake the thread */

	/*
	 * Reverse-map entries of data written since the last commit that are
	 * not in the tree yet (clean.c, "Pending entries"): a random
	 * overwrite frees most of what the writes before it put, and an
	 * entry freed before the commit never costs a tree change. Disjoint
	 * from the tree's entries (they describe space the allocator just
	 * handed out). Put in the tree by the commit and before anything
	 * reads the tree. lock exclusive; rp_count read with atomics.
	 */
	struct smr_rmap_pend *rp;     /* entries; unused ones have len 0 */
	uint32_t *rp_hash;            /* chain heads by 64 KiB chunk */
	uint32_t rp_n, rp_cap;        /* entries used at least once, room */
	uint32_t rp_free;             /* chain of unused entries */
	uint32_t rp_count;            /* entries in use */
};

struct smr_txn {
	struct smr_cow *c;
	bool counted; /* in the thread's count of handles held on c */
};

/* bt.c */
int smr_cache_init(struct smr_cow *c);
void smr_cache_fini(struct smr_cow *c);
int smr_bt_load_roots(struct smr_cow *c, const struct smr_ckpt *ck);
int smr_bt_lookup_locked(struct smr_cow *c, uint32_t tree,
			 const struct smr_nkey *key, void *val, size_t *len);
int smr_bt_modify_locked(struct smr_cow *c, uint32_t tree,
			 const struct smr_nkey *key, const void *val,
			 size_t len, int mode);
int smr_bt_delete_locked(struct smr_cow *c, uint32_t tree,
			 const struct smr_nkey *key);
int smr_bt_step_locked(struct smr_cow *c, uint32_t tree,
		       const struct smr_nkey *from, bool forward,
		       struct smr_nkey *found, void *val, size_t *len);
/* Up to @n items from the one smr_bt_step_locked() finds on, in the
 * direction of the step, into found[i], val[i] and len[i] (each as for
 * lookup; @val and @len may be NULL for keys only): the number found (at
 * least 1), -ENOENT for none, or an error. */
int smr_bt_step_n_locked(struct smr_cow *c, uint32_t tree,
			 const struct smr_nkey *from, bool forward,
			 unsigned int n, struct smr_nkey *found, void **val,
			 size_t *len);
int smr_bt_iterate_locked(struct smr_cow *c, uint32_t tree,
			  const struct smr_nkey *from,
			  const struct smr_nkey *to, smr_bt_iter_fn fn,
			  void *arg);
/* Write every dirty node (commit step 1); fills the roots of @ck. */
int smr_bt_write_dirty(struct smr_cow *c, uint64_t gen, struct smr_ckpt *ck);
void smr_cache_shrink(struct smr_cow *c);
size_t smr_cache_dirty_bytes(struct smr_cow *c);
int smr_xlist_add(struct smr_xlist *l, uint64_t off, uint64_t len);
/* Empty @l, keeping its memory. */
void smr_xlist_clear(struct smr_xlist *l);
/* Check the tree's structure (keys, counts, levels) and every item against
 * its type by walking all of it; 0, -SMR_EFSCORRUPTED, or -EINVAL for a
 * tree with a root but no type. Counts items into *@nr_items. */
int smr_bt_check(struct smr_cow *c, uint32_t tree, uint64_t *nr_items);

/*
 * Rebuild @tree from the items that can be read (fsck's salvage): nodes
 * that fail verification are dropped with everything below them (each
 * logged with the key range lost), the readable old nodes are released,
 * and the kept items are inserted into a new tree in the running state.
 * The dropped blocks stay allocated for the space audit to find. Sets
 * *@kept and *@bad_nodes. Items the tree's type refuses are dropped too.
 * Unless the type is derived (rebuilt from other trees), the key ranges
 * of damaged roots and interior nodes are filled from the tree's leaves
 * that the store's scan_nodes finds (if it has one), and a tree of which
 * no item can be read even so is left as it is and -SMR_EFSCORRUPTED returned:
 * replacing it with an empty tree would lose everything for good.
 * Exclusive lock held. -EINVAL (no type), -ENOMEM, insert errors.
 */
int smr_bt_salvage_locked(struct smr_cow *c, uint32_t tree, uint64_t *kept,
			  uint64_t *bad_nodes);
int smr_bt_height(struct smr_cow *c, uint32_t tree);
/*
 * The invariant, checked: every node reachable from the roots is reachable
 * once, no two nodes overlap, and no live node is among the blocks released
 * (pending). Runs smr_bt_check on every tree too. Engine lock held (shared
 * is enough). 0, -ENOMEM or -SMR_EFSCORRUPTED (logged).
 */
int smr_cow_audit_locked(struct smr_cow *c);
/* smr_cow_audit_locked() that counts every problem in *@problems and goes
 * on, and the non-root nodes under a quarter full in *@underfull
 * (smr_cow_check_all). */
int smr_cow_audit_count_locked(struct smr_cow *c, uint64_t *problems,
			       uint64_t *underfull);
/* The address of every node reachable from the roots, unsorted, in a
 * malloc'd array (fsck's space audit). With opts.skip_damaged a node that
 * does not verify is left out with everything below it, as the salvage
 * leaves it. Engine lock held. 0, -ENOMEM or a node's read error. */
int smr_bt_node_addrs_locked(struct smr_cow *c, uint64_t **addrs, size_t *n);

/*
 * The cleaner: if the node of @tree at @level whose first key is @first is
 * the one at @addr (it is live), make it and its path dirty so that the next
 * commit writes it elsewhere. Returns 1 if it was live, 0 if not, or an
 * error. Exclusive lock held.
 */
int smr_bt_relocate_node_locked(struct smr_cow *c, uint32_t tree,
				uint16_t level, const struct smr_nkey *first,
				uint64_t addr);

/* Give an empty tree an empty root leaf (format). */
int smr_bt_create_locked(struct smr_cow *c, uint32_t tree);

/* store_dev.c: the one check that a superblock describes @dev. */
int smr_cow_validate_geometry(const struct smr_sb *sb, struct smr_dev *dev);

/*
 * A superblock for @dev when neither copy verifies. mkfs alone writes it,
 * so all but four fields are what mkfs writes for this device today: the
 * geometry, the checkpoint places, the format and features. The UUID is
 * the newest valid checkpoint record's, found in those places (*@gen, its
 * generation), else @uuid if not NULL (smr_cow_find_uuid; *@gen 0); the
 * allocator is the device's default; the label and the time of mkfs are
 * lost (empty, 0). Returns 0, -EINVAL when no place holds a valid record
 * and @uuid is NULL (nothing says the device is smrfs), -ENOMEM, or the
 * device's error.
 */
int smr_cow_sb_rebuild(struct smr_dev *dev, struct smr_sb *sb,
		       uint64_t *gen, const uint8_t *uuid);

#define SMR_BT_INSERT 0
#define SMR_BT_UPDATE 1
#define SMR_BT_PUT 2

/* The error of a block that does not verify (or breaks a rule of the
 * check): damage, not a failure to read. */
static inline bool cow_damage(int rc)
{
	return rc == -SMR_EFSCORRUPTED || rc == -SMR_EFSBADCRC;
}

/* Is the engine read-only? Threads test it under the tree lock, which a
 * failing commit or cleaner does not hold when it sets it (under txn_lock):
 * an atomic load, paired with the release store of cow_set_read_only(). */
static inline bool cow_read_only(struct smr_cow *c)
{
	return __atomic_load_n(&c->read_only, __ATOMIC_ACQUIRE);
}

/* With txn_lock held (or before any other thread runs). */
static inline void cow_set_read_only(struct smr_cow *c, bool ro)
{
	__atomic_store_n(&c->read_only, ro, __ATOMIC_RELEASE);
}

/* The type of @tree, or NULL (engine lock held). */
static inline const struct smr_tree_type *smr_tree_type_of(struct smr_cow *c,
							    uint32_t tree)
{
	return tree >= 1 && tree <= SMR_COW_MAX_TREE ? c->types[tree] : NULL;
}

/* smr_tree_key_str and smr_tree_name with the engine lock held. */
const char *smr_tree_key_str_locked(struct smr_cow *c, uint32_t tree,
				    const struct smr_nkey *key, char *buf,
				    size_t len);
const char *smr_tree_name_locked(struct smr_cow *c, uint32_t tree, char *buf,
				 size_t len);

/* ckpt_scan.c */
/*
 * fsck only (opts.rebuild_ckpt), when no checkpoint record verifies: fill
 * *@ck with the roots of the trees found by the store's scan_nodes (for
 * each tree the newest top node whose tree reads back whole, else the
 * newest top node, for the salvage) and the generation of the newest node
 * found. Nothing else: no allocator state (the caller rebuilds it from the
 * device), no pending extents, no figures. c->ns must be set. 0,
 * -SMR_EFSCORRUPTED when no node is found, -ENOMEM, -EIO, -EOPNOTSUPP
 * (a store that cannot scan).
 */
int smr_ckpt_from_scan(struct smr_cow *c, struct smr_ckpt *ck);

/* clean.c */
/* Describe the reverse-map tree to the engine (at open). */
int smr_rmap_register(struct smr_cow *c);
/* Take the reverse-map entries of [@off, @off + @len) out (trimming those
 * that straddle it). Exclusive lock held. */
/* Call @fn for every block of [@from, @to) that is a node of @tree (of
 * any tree if 0): its header and checksum checked, quietly, as most blocks
 * of a zone are data; its structure is not. Read a chunk at a time. */
typedef int (*smr_node_scan_fn)(void *arg, uint64_t addr, const void *node,
				uint32_t tree);
int smr_scan_nodes_range(struct smr_cow *c, uint32_t tree, uint64_t from,
			 uint64_t to, smr_node_scan_fn fn, void *arg);
int smr_rmap_trim_locked(struct smr_cow *c, uint64_t off, uint64_t len);
/* Let the allocator ask the reverse map before it resets a zone counted
 * empty (smr_alloc_set_in_use). */
void smr_rmap_guard(struct smr_cow *c);
int smr_cow_gc_start(struct smr_cow *c);
void smr_cow_gc_stop(struct smr_cow *c);
/* @len more bytes were written (data, or a commit's nodes): wake the
 * cleaner if free zones fell below its low watermark. No lock held. */
void smr_cow_gc_kick(struct smr_cow *c, uint64_t len);

/* clean.c: a reverse-map entry for [@off, @off + @len) (log replay). */
int smr_rmap_put_locked(struct smr_cow *c, uint64_t off, uint64_t len,
			const struct smr_key *owner);
/* clean.c: put the pending reverse-map entries in the tree (exclusive
 * lock held): the commit does before it writes the nodes. A failure turns
 * the engine read-only (the map would miss live data). */
int smr_rmap_flush_locked(struct smr_cow *c);
/* The same for a reader of the reverse-map tree (@tree; any other tree
 * returns at once), no lock held. */
int smr_rmap_sync(struct smr_cow *c, uint32_t tree);
/* clean.c: free the pending entries (teardown). */
void smr_rmap_pend_fini(struct smr_cow *c);

/* store_dev.c: the allocator's reserve as the newest commit left it, and
 * in *@taken (if not NULL) what had been taken of it (cached; the engine
 * must have an allocator). */
uint64_t smr_cow_reserve(struct smr_cow *c, uint64_t *taken);

/* store_dev.c: smr_cow_data_write without telling the fsync log; @held as
 * smr_cow_data_write_owned's. */
int smr_cow_data_write_raw(struct smr_cow *c, enum smr_data_temp temp,
			   uint64_t near, const void *buf, uint64_t len,
			   struct smr_data_extent *ext, unsigned int max,
			   const struct smr_cow_held *held);

/* log.c */
extern const struct smr_blk_ops smr_log_ops;
/* Verify a log piece read at @addr and decode its header: 0 or
 * -SMR_EFSCORRUPTED (not logged: a scan meets many blocks that are not). */
int smr_log_piece_decode(const void *blk, uint64_t addr, const uint8_t *uuid,
			 struct smr_log_piece *p);
/* Check the structure of a record's payload (@len bytes at @p) as replay
 * does before it trusts it: the head, then @nr_claims claims and
 * @nr_frees frees, then @nr_items items, each inside it and ending at its
 * end. 0 with the counts, or -SMR_EFSCORRUPTED. For the fuzz target. */
int smr_log_payload_parse(const uint8_t *p, size_t len, uint32_t *nr_claims,
			  uint32_t *nr_frees, uint32_t *nr_items);
/* Seal the @nr pieces of a record of @total payload bytes into @out for
 * the addresses @addr. */
int smr_log_seal(struct smr_cow *c, const uint8_t *payload, size_t total,
		 uint64_t seq, uint8_t *out, const uint64_t *addr, uint32_t nr);
/* An FS tree change (lock exclusive). */
void smr_log_change_locked(struct smr_cow *c, uint32_t tree,
			   const struct smr_nkey *key, const void *val,
			   size_t len, bool del);
/* Data written, settled, freed (the last with lock exclusive). */
void smr_log_written(struct smr_cow *c, const struct smr_data_extent *ext,
		     int n, const void *buf, const struct smr_key *owner);
void smr_log_settle(struct smr_cow *c, uint64_t off, uint64_t len);
int smr_log_free_locked(struct smr_cow *c, uint64_t off, uint64_t len);
/* Something the log cannot express happened: commit at the next fsync. */
void smr_log_break(struct smr_cow *c, const char *why);
/* A commit is durable (lock exclusive). */
void smr_log_committed_locked(struct smr_cow *c);
/* Write a record of what changed (frozen: lock exclusive, no handle).
 * 0, 1 when a commit must do instead, or a write error. */
int smr_log_record_locked(struct smr_cow *c);
/* Verify and apply the @n records found at open, in order; the caller
 * commits. 0 (records whose data does not verify are ignored with those
 * after them), or an error. */
int smr_log_replay(struct smr_cow *c, uint8_t **recs, const size_t *lens,
		   uint32_t n);
void smr_log_fini(struct smr_cow *c);

/* txn.c */
int smr_cow_setup(struct smr_cow *c);  /* locks, cache, roots, timer */
void smr_cow_teardown(struct smr_cow *c);
int smr_cow_commit_now(struct smr_cow *c);

/*
 * Commit until what is released now can be reused: the first commit writes
 * the trees without it, the second hands it to the allocator, which reuses
 * it (or resets its zone) once a third is durable, since the checkpoint
 * before the newest must stay intact (docs/design/cow.md). 0 or the
 * first commit error.
 */
int smr_cow_commit_release(struct smr_cow *c);
int smr_cow_start_timer(struct smr_cow *c);

/*
 * Open an engine over a store (store_mem.c for tests; the device store is
 * opened by smr_cow_open). @store is the store's state, owned by the caller
 * for the memory store.
 */
int smr_cow_open_store(const struct smr_store_ops *ops, void *store,
		       const struct smr_cow_opts *o, struct smr_cow **cp);

/* Memory store (tests). */
struct smr_memstore;
struct smr_memstore *smr_memstore_new(uint32_t node_size);
void smr_memstore_free(struct smr_memstore *ms);
/* Fail every write after @n more writes (negative = never). */
void smr_memstore_fail_after(struct smr_memstore *ms, long n);

/* Evict every clean node nobody holds (tests: cold-cache lookups). */
void smr_cow_drop_cache(struct smr_cow *c);

/* Engine statistics, for tests and tools. */
void smr_cow_get_stats(struct smr_cow *c, struct smr_cow_stats *st);

#endif /* SMR_COW_COW_PRIV_H */
