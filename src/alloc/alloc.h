/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * alloc.h - the block allocation layer of smrfs.
 *
 * The layers above ask for space with a hint ("near X", "contiguous") and a
 * stream (metadata, hot data, cold data, relocation) and never assume where it
 * lands; only the allocator knows the device. Each module is one file with one
 * const ops table (smr_zoned_ops, smr_rot_ops, smr_flash_ops), chosen at
 * mkfs/mount by device type through smr_alloc_select().
 *
 * The managed range. The allocator owns [data_start, capacity) of the device;
 * everything below data_start (superblocks, checkpoint zones) belongs to the
 * caller. On a zoned device data_start is a zone boundary.
 *
 * Write order. Extents handed out from one stream of a zoned allocator lie at
 * the zones' allocation pointers, which run ahead of the device's write
 * pointers: the caller must write them in the order they were handed out,
 * each in full, before the stream is used again by anyone else. smr_alloc_write()
 * does allocate-and-write under the stream's lock for callers that do not
 * batch; a caller that batches (the COW commit) holds the stream for itself.
 * A write that fails must be reported with smr_alloc_write_failed().
 * When a stream's extents continue in a new zone, the new zone's first write
 * must be issued only after the old zone's last one completed: written at
 * once, both zones would be active, one more than the allocator counted.
 * On a device with fewer active zones than streams, several streams share
 * one zone and therefore one lock: "holding a stream" means holding
 * smr_alloc_stream_lock(a, stream), never a->stream_lock[stream] directly
 * (META's lock is always stream_lock[SMR_STREAM_META]).
 *
 * Freeing is deferred. smr_alloc_free() marks an extent dead in the *next*
 * checkpoint: the space is not handed out again (rotational, flash) and its
 * zone is not reset (zoned) until smr_alloc_committed() says that checkpoint
 * is durable, because the previous checkpoint still references it.
 *
 * Persistence. smr_alloc_commit() writes the allocator's state (self-describing
 * checksummed blocks through the metadata stream) and returns a reference that
 * the caller stores in its checkpoint, atomically with its trees; the next
 * smr_alloc_open() is given that reference. The state is sized by zones or by
 * free extents, never by files, so mount time does not grow with the data.
 *
 * Locking. Each handle has one mutex, taken by the smr_alloc_* wrappers around
 * every op; ops are called with it held and must not call back into the
 * wrappers. smr_alloc_write() additionally holds the stream's lock across the
 * device write (lock order: stream lock, then the handle's mutex).
 */
#ifndef SMR_ALLOC_ALLOC_H
#define SMR_ALLOC_ALLOC_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dev/dev.h"

struct smr_alloc;

enum smr_stream {
	SMR_STREAM_META = 0,  /* B-tree nodes, checkpoints' satellites */
	SMR_STREAM_HOT = 1,   /* data likely to be overwritten soon */
	SMR_STREAM_COLD = 2,  /* data likely to stay */
	SMR_STREAM_RELOC = 3, /* what the cleaner moves */
	SMR_STREAM_NR
};

const char *smr_stream_str(enum smr_stream s);

/* A run of bytes on the device. off and len are multiples of the block
 * size. An extent handed out by a zoned device's allocator never crosses a
 * zone boundary, even where two zones follow each other. */
struct smr_extent {
	uint64_t off;
	uint64_t len;
};

/* Zeroed = no preference. */
struct smr_alloc_hint {
	uint64_t near;   /* a device offset to allocate at or after, 0 = none */
	bool contiguous; /* prefer one extent to nearness */
	bool reloc;      /* the cleaner moves this data into a data stream:
			  * count it as relocated (the stream's rules on the
			  * reserve still apply) */
	uint32_t unit;   /* 0, or every extent a whole number of @unit
			  * bytes (B-tree nodes): rotational and flash hand
			  * out no shorter piece; zoned ignores it (a zone's
			  * tail shorter than a unit is the caller's to pad) */
	/* smr_alloc_write() only: called once the space for all @len
	 * bytes is held in the stream asked for, before any of it is
	 * written (with the stream's lock held); not called if it could
	 * not all be had there at once. */
	void (*held)(void *arg);
	void *held_arg;
};

/*
 * Space, in bytes, of the managed range:
 *   capacity == used + free + reclaimable + reserved
 * used:        live bytes (referenced by the trees after the next commit)
 * free:        can be handed out to data streams now
 * reclaimable: dead bytes that come back after a commit (pending frees) or
 *              after cleaning (dead bytes in zones not yet reset, and the
 *              unwritable tail of finished zones)
 * reserved:    kept for metadata and the cleaner; data streams cannot have it
 * overhead:    not a part of the above but a constant of the geometry: what
 *              users cannot fill and keep overwriting (the reserve, the open
 *              zones of the streams data never writes, and the dead space
 *              cleaning needs to win zones back); statfs leaves it out of
 *              the size it reports, as f2fs leaves out its overprovisioning
 * reserve_taken: not a part of the above either: of the free zones kept in
 *              reserve, what metadata or the cleaner has taken (zoned; 0
 *              where there is no such reserve). Past 0, changes of metadata
 *              alone are outrunning the cleaner.
 */
struct smr_space {
	uint64_t capacity;
	uint64_t used;
	uint64_t free;
	uint64_t reclaimable;
	uint64_t reserved;
	uint64_t overhead;
	uint64_t reserve_taken;
};

/* Counters since the filesystem was made (persisted with the state). */
struct smr_alloc_stats {
	uint64_t bytes_allocated[SMR_STREAM_NR];
	uint64_t bytes_freed;
	uint64_t nr_allocs;
	uint64_t zones_reset;
	uint64_t zones_finished;
	uint64_t user_bytes; /* smr_alloc_count_user(); the modules leave it */
};

enum smr_gc_policy {
	SMR_GC_GREEDY = 0,       /* fewest live bytes */
	SMR_GC_COST_BENEFIT = 1, /* (1 - u) * age^p / (1 + u), after
				  * Sprite LFS; p = 1/2, less for data
				  * zones that decay at one rate */
};

/* A zone worth cleaning, as gc_pick_n names it; at most SMR_GC_PICK_MAX
 * at once. */
#define SMR_GC_PICK_MAX 32
struct smr_gc_victim {
	uint32_t zno;
	uint8_t stream; /* the stream that last wrote it, SMR_ALLOC_NO_STREAM */
	uint64_t live;  /* live bytes */
	uint64_t cap;   /* zone capacity */
};

/* Where a persisted allocator state lies; stored in the caller's checkpoint.
 * A zeroed ref means "no state yet" (fresh filesystem). */
struct smr_alloc_ref {
	uint64_t off;  /* first block */
	uint64_t len;  /* bytes */
	uint64_t csum; /* checksum of the whole state, checked at open */
	uint64_t gen;  /* generation it was written in */
};

/*
 * struct smr_alloc_ops - one allocator module.
 *
 * Every op is called with a->lock held. Errors are negative errnos. Ops
 * marked "may be NULL" have the default given.
 */
struct smr_alloc_ops {
	/* Module name, as in -o alloc=NAME and in the superblock. */
	const char *name;

	/*
	 * Can this module serve @info, and how well? Returns a positive score
	 * (higher is better; the best module for a device kind scores 100),
	 * or 0 if it cannot, with the reason written to @why (e.g. "host-managed
	 * zoned device: random writes are refused"). Called without a->lock
	 * (there is no handle yet). Must not be NULL.
	 */
	int (*probe)(const struct smr_dev_info *info, char *why, size_t whylen);

	/*
	 * Set up a->priv. @ref NULL: a fresh filesystem (mkfs), everything in
	 * the managed range is free (a zoned module resets nothing: the caller
	 * has reset the zones); or, with a->rebuild set, a filesystem whose
	 * state is lost (see smr_alloc_open_rebuild()). Otherwise read the
	 * state @ref points to and
	 * reconcile it with the device: a zoned module trusts the device's
	 * write pointers (data written after the last checkpoint is dead and
	 * a write pointer never goes back). Errors: -ENOMEM, -EIO,
	 * -SMR_EFSCORRUPTED / -SMR_EFSBADCRC for a bad state, -EINVAL when the
	 * state does not match the device or the module cannot serve it.
	 * Must not be NULL.
	 */
	int (*init)(struct smr_alloc *a, const struct smr_alloc_ref *ref);

	/* Free a->priv. Persists nothing. Must not be NULL. */
	void (*fini)(struct smr_alloc *a);

	/*
	 * Hand out up to @len bytes (a multiple of the block size) for @stream
	 * as at most @max_ext extents in @ext, honouring @hint where it can.
	 * Returns the number of extents filled (>= 1); their total may be
	 * less than @len (the caller asks again for the rest). -ENOSPC when
	 * nothing is left for this stream (data streams cannot use the
	 * reserve; on a zoned device metadata and relocation cannot take the
	 * last free zone, which is kept for the allocator's own state),
	 * -EINVAL for a bad length. Must not be NULL.
	 */
	int (*alloc)(struct smr_alloc *a, uint64_t len,
		     const struct smr_alloc_hint *hint, enum smr_stream stream,
		     struct smr_extent *ext, unsigned int max_ext);

	/*
	 * @len bytes at @off are no longer referenced as of the next commit.
	 * -EINVAL if the range was not allocated (a double free), as far as
	 * the module can tell: rotational and flash refuse any overlap with
	 * free or pending space; zoned refuses a range past a zone's
	 * allocation pointer or larger than its live bytes. Must not be NULL.
	 */
	int (*free)(struct smr_alloc *a, uint64_t off, uint64_t len);

	/*
	 * A write to an extent handed out by alloc failed: bring the module's
	 * view of that zone back in line with the device (a zoned module
	 * re-reads the write pointer and may finish the zone). May be NULL
	 * (nothing to do).
	 */
	void (*write_failed)(struct smr_alloc *a, uint64_t off, uint64_t len);

	/*
	 * Persist the state as of now, counting every pending free as done,
	 * in generation @gen, through the metadata stream; fill *@ref. The
	 * previous state's blocks become a pending free. The caller holds the
	 * META stream (smr_alloc_stream_lock) and has written every extent
	 * META handed out before, since the state is appended behind them; it
	 * flushes the device before it writes the checkpoint holding *@ref.
	 * Errors: -ENOSPC (no room for the state even in the reserve),
	 * -ENOMEM, the device's write error. On error nothing changed but
	 * the statistics. Must not be NULL.
	 */
	int (*commit)(struct smr_alloc *a, uint64_t gen,
		      struct smr_alloc_ref *ref);

	/*
	 * The checkpoint holding the last commit's ref is durable: pending
	 * frees become free; a zoned module may now reset zones left with no
	 * live byte. May be NULL.
	 */
	int (*committed)(struct smr_alloc *a);

	/* Fill *@sp. Must not be NULL. */
	void (*space)(struct smr_alloc *a, struct smr_space *sp);

	/*
	 * As space, as if the @n allocated extents @x (sorted by offset, not
	 * overlapping) had been freed: what the layer above has released
	 * and will free with its next commits. May be NULL: their bytes then
	 * move from used to reclaimable.
	 */
	void (*space_freeing)(struct smr_alloc *a, const struct smr_extent *x,
			      size_t n, struct smr_space *sp);

	/*
	 * Pick a zone to clean by @policy: one that holds dead bytes, is not
	 * open for writing and not reserved. Returns 0 with *@zno set,
	 * -ENOENT if no zone is worth cleaning. May be NULL (the module does
	 * not need cleaning: the default answers -EOPNOTSUPP).
	 */
	int (*gc_pick)(struct smr_alloc *a, enum smr_gc_policy policy,
		       uint32_t *zno);

	/* Live bytes in zone @zno (for the cleaner and fsck). May be NULL
	 * (non-zoned modules: -EOPNOTSUPP). */
	int64_t (*zone_live)(struct smr_alloc *a, uint32_t zno);

	/* Fill *@st. May be NULL (all zero). */
	void (*stats)(struct smr_alloc *a, struct smr_alloc_stats *st);

	/*
	 * As gc_pick, for up to @max victims at once, best first: fills @v
	 * and returns how many (0: no zone is worth cleaning). May be NULL
	 * (the default answers -EOPNOTSUPP).
	 */
	int (*gc_pick_n)(struct smr_alloc *a, enum smr_gc_policy policy,
			 struct smr_gc_victim *v, unsigned int max);

	/*
	 * Replay of an fsync log at open: @len bytes at @off were written
	 * after the commit whose state init read, and are referenced again:
	 * count them live. zoned: the range lies below the zone's write
	 * pointer (dead as init left it) and its zone is not free; a
	 * conventional zone's allocation pointer moves past it. rotational,
	 * flash: the range lies inside one free extent and leaves the free
	 * space. -EINVAL when it cannot be claimed (nothing changed). May
	 * be NULL: the module cannot replay a log (-EOPNOTSUPP).
	 */
	int (*claim)(struct smr_alloc *a, uint64_t off, uint64_t len);

	/*
	 * Fill *@used with space's used and *@size with its capacity less
	 * its overhead, in constant time: asked before every write that
	 * adds data. May be NULL (taken from space, which may walk every
	 * zone).
	 */
	void (*usage)(struct smr_alloc *a, uint64_t *used, uint64_t *size);

	/*
	 * Metadata is allocated in pieces of @unit bytes (the node size, a
	 * multiple of the block size; hint->unit): keep the reserve in
	 * pieces that long, so that free space cut into shorter holes by
	 * data does not leave metadata without room while data can still
	 * be refused. Called after init, before anything is allocated, and
	 * again whenever the unit changes. May be NULL: the module keeps its
	 * reserve its own way (zoned: whole zones).
	 */
	void (*meta_unit)(struct smr_alloc *a, uint32_t unit);
};

extern const struct smr_alloc_ops smr_zoned_ops;
extern const struct smr_alloc_ops smr_rot_ops;
extern const struct smr_alloc_ops smr_flash_ops;

/* The handle. Fields are read-only for users; ops may use all of them. */
struct smr_alloc {
	const struct smr_alloc_ops *ops;
	struct smr_dev *dev;
	const struct smr_dev_info *info; /* smr_dev_info(dev) */
	uint64_t data_start;             /* managed range: [data_start, capacity) */
	uint8_t fs_uuid[16];             /* stamped into the state's blocks */
	pthread_mutex_t lock;            /* protects everything the ops touch */
	pthread_mutex_t stream_lock[SMR_STREAM_NR]; /* see "Write order" */
	void *priv;                      /* the module's; protected by lock */
	/* The stream whose lock and open zone each stream uses: identity
	 * unless the device has too few active zones (set by init, constant
	 * afterwards). */
	uint8_t stream_share[SMR_STREAM_NR];
	/* Opened by smr_alloc_open_rebuild(): init has no state to read and
	 * rebuilds from the device (constant after init), its counters
	 * from keep_stats if not NULL (set during init only). */
	bool rebuild;
	const struct smr_alloc_stats *keep_stats;
	/* Bytes the state being loaded counts used that never reached the
	 * device (smr_alloc_open_cut; set during init only). */
	const struct smr_extent *unwritten;
	size_t nr_unwritten;
	/* init read the state with a flipped bit put back (smr_state_read):
	 * the state on the device stays damaged until a commit writes the
	 * next one (set during init only). */
	bool state_restored;
	/* Data smr_alloc_write() placed that the layer above has not yet
	 * settled, and that set as the newest commit saw it (see "Unsettled
	 * data" below); the ops never touch them. Protected by lock. */
	struct smr_extent_set {
		struct smr_extent *x;
		size_t n, cap;
	} unsettled, unsettled_at_commit;
	/* The part of unsettled that the cleaner wrote (hint->reloc): copies
	 * of data still counted live where it was, so not counted again by
	 * smr_alloc_space_freeing(). */
	struct smr_extent_set unsettled_reloc;
	/* Asked before a zone whose counter says it holds no live byte is
	 * reset or reused (see smr_alloc_set_in_use()); NULL = not asked.
	 * Set once before the first commit. */
	bool (*in_use)(void *arg, uint64_t start, uint64_t end);
	void *in_use_arg;
	/* Bytes the layer above says its users wrote (smr_alloc_count_user),
	 * persisted with the state; read and added to atomically. */
	uint64_t user_bytes;
};

/* The registry of modules, in the order of preference for ties. */
extern const struct smr_alloc_ops *const smr_alloc_modules[];
const struct smr_alloc_ops *smr_alloc_find(const char *name);

/*
 * Choose the module for a device: @name NULL picks the best-scoring module
 * (zoned device -> zoned, rotational -> rotational, anything else -> flash);
 * a name forces that module. Returns 0 with *@ops set and a sentence saying
 * why in @why; -ENOENT for an unknown name; -EINVAL when the module cannot
 * serve the device (@why says why).
 */
int smr_alloc_select(const struct smr_dev_info *info, const char *name,
		     const struct smr_alloc_ops **ops, char *why, size_t whylen);

/*
 * Open an allocator over @dev managing [data_start, capacity). @ref as for
 * ops->init (NULL or a zeroed ref: a fresh filesystem). Returns 0 with a
 * handle in *@ap, -EINVAL for a data_start that is not block-aligned (or
 * not a zone boundary on a zoned device) or not below the capacity,
 * -ENOMEM, or the init's error.
 */
int smr_alloc_open(const struct smr_alloc_ops *ops, struct smr_dev *dev,
		   uint64_t data_start, const uint8_t fs_uuid[16],
		   const struct smr_alloc_ref *ref, struct smr_alloc **ap);

/*
 * smr_alloc_open() for a state whose commit came while data was being
 * written, the power then going before all of it reached the device: the
 * @n extents @unw, in sequential zones past their write pointers, count as
 * used in the state and were never written; they are not live (zoned).
 */
int smr_alloc_open_cut(const struct smr_alloc_ops *ops, struct smr_dev *dev,
		       uint64_t data_start, const uint8_t fs_uuid[16],
		       const struct smr_alloc_ref *ref,
		       const struct smr_extent *unw, size_t n,
		       struct smr_alloc **ap);

/*
 * Open an allocator over a filesystem whose persisted state is lost, for
 * fsck's repair: the accounting is rebuilt from the device alone and
 * errs on the side of keeping space, for smr_alloc_check() with repair to
 * bring it to exactly what the trees reference before anything is
 * allocated. rotational, flash: everything free (the audit takes out the
 * referenced extents). zoned: each zone's state from its write pointer
 * (empty: free; written: full, and finished by the first allocation or
 * commit if partly written; a conventional zone: full), and every written
 * byte counted live, so that no zone can be reset until the audit has
 * lowered its counter to the recount. The open writes nothing. The
 * counters since mkfs go on from @keep (the state being replaced, if it
 * could be read), else from zero. Arguments and errors as smr_alloc_open()
 * with a NULL @ref.
 */
int smr_alloc_open_rebuild(const struct smr_alloc_ops *ops,
			   struct smr_dev *dev, uint64_t data_start,
			   const uint8_t fs_uuid[16],
			   const struct smr_alloc_stats *keep,
			   struct smr_alloc **ap);
void smr_alloc_close(struct smr_alloc *a);

/* The lock that serialises the writes of @stream (see "Write order"). */
pthread_mutex_t *smr_alloc_stream_lock(struct smr_alloc *a,
				       enum smr_stream stream);

/* Wrappers that take a->lock around the op. */
int smr_alloc_extent(struct smr_alloc *a, uint64_t len,
		     const struct smr_alloc_hint *hint, enum smr_stream stream,
		     struct smr_extent *ext, unsigned int max_ext);
int smr_alloc_free(struct smr_alloc *a, uint64_t off, uint64_t len);
int smr_alloc_claim(struct smr_alloc *a, uint64_t off, uint64_t len);
void smr_alloc_set_meta_unit(struct smr_alloc *a, uint32_t unit);
void smr_alloc_write_failed(struct smr_alloc *a, uint64_t off, uint64_t len);
int smr_alloc_commit(struct smr_alloc *a, uint64_t gen,
		     struct smr_alloc_ref *ref);
int smr_alloc_committed(struct smr_alloc *a);
void smr_alloc_space(struct smr_alloc *a, struct smr_space *sp);
/* smr_alloc_space as if @x were freed (see space_freeing), and with the
 * cleaner's copies not yet settled as free too; sorts @x. */
void smr_alloc_space_freeing(struct smr_alloc *a, struct smr_extent *x,
			     size_t n, struct smr_space *sp);
int smr_alloc_gc_pick(struct smr_alloc *a, enum smr_gc_policy policy,
		      uint32_t *zno);
int smr_alloc_gc_pick_n(struct smr_alloc *a, enum smr_gc_policy policy,
			struct smr_gc_victim *v, unsigned int max);
int64_t smr_alloc_zone_live(struct smr_alloc *a, uint32_t zno);

/*
 * The bytes in use and the size users may fill, in constant time for
 * zoned, rotational and flash: *@used as smr_alloc_space_freeing() counts
 * it with @freeing bytes released by the layer above (the cleaner's
 * copies not yet settled are left out too), *@size as smr_space's
 * capacity less its overhead.
 */
void smr_alloc_usage(struct smr_alloc *a, uint64_t freeing, uint64_t *used,
		     uint64_t *size);

/*
 * A safety net under the live-byte counters: before a zone that counts no
 * live byte is reset (or, conventional, reused), @fn is asked whether
 * anything still names data in [start, end); if it answers true the
 * counter is wrong, the zone is kept full and an error logged once
 * (fsck.smrfs rebuilds the counters). Called from smr_alloc_committed(),
 * a->lock held; @fn must not call the allocator. zoned only (the other
 * modules reset nothing); NULL = no check.
 */
void smr_alloc_set_in_use(struct smr_alloc *a,
			  bool (*fn)(void *arg, uint64_t start, uint64_t end),
			  void *arg);
void smr_alloc_stats(struct smr_alloc *a, struct smr_alloc_stats *st);
/*
 * Add @bytes to the count of bytes users wrote, which the state keeps
 * (struct smr_alloc_state_head, user_bytes): the layer above knows how many
 * of the bytes it wrote were its users' (a write of part of a block writes
 * the whole block). Takes no lock. Only on a filesystem with the format
 * feature USER_BYTES: older readers want the field zero.
 */
void smr_alloc_count_user(struct smr_alloc *a, uint64_t bytes);

/*
 * Allocate space for @len bytes of @buf in @stream and write them there,
 * holding the stream's lock so that writes land in allocation order. @buf
 * may have any alignment (the device copies it if it must). On success returns
 * the number of extents (<= @max_ext) that now hold the data, in order; if
 * the data needs more than @max_ext extents, or the stream runs out of
 * space part way, -ENOSPC is not returned but only the bytes that fit are
 * written: the caller checks the extents' total. -ENOSPC when not one byte
 * could be had, -EINVAL for a bad length or @max_ext 0. A data stream (hot,
 * cold) that cannot open a zone goes on in the other data stream's open
 * zone, under that stream's lock, if the two have zones of their own: both
 * tails count as free space. On a write error
 * the failed extents are reported with write_failed, the written ones are
 * freed, and the error is returned: the caller owns nothing.
 */
int smr_alloc_write(struct smr_alloc *a, const void *buf, uint64_t len,
		    const struct smr_alloc_hint *hint, enum smr_stream stream,
		    struct smr_extent *ext, unsigned int max_ext);

/* ------------------------------------------------------------------------
 * Unsettled data
 *
 * Space that smr_alloc_write() hands out is counted as used at once, but
 * nothing references it until the layer above maps it, in a transaction
 * that may come after a commit. Such data is "unsettled" from the write
 * until smr_alloc_settle() (the reference is in the running transaction)
 * or smr_alloc_free() (it never will be). A commit's state counts it used;
 * the checkpoint records it as released, so that a recovery from that
 * checkpoint, where nothing references it, frees it. The set is taken at
 * the same instant as the state (under a->lock), and read afterwards with
 * smr_alloc_unsettled_at_commit().
 * ------------------------------------------------------------------------ */

/* The referencing transaction has it: 0, or -ENOMEM (when a range ends
 * inside an unsettled extent and the set cannot grow). A range that is not
 * unsettled is no error. */
int smr_alloc_settle(struct smr_alloc *a, uint64_t off, uint64_t len);

/* Copy up to @max extents of the set as the newest smr_alloc_commit() saw
 * it to @x; returns how many the set holds (may exceed @max). */
size_t smr_alloc_unsettled_at_commit(struct smr_alloc *a, struct smr_extent *x,
				     size_t max);

/* ------------------------------------------------------------------------
 * Audit (fsck): src/alloc/check.c
 * ------------------------------------------------------------------------ */

struct smr_alloc_check {
	uint64_t problems;         /* found (each logged, the first 100) */
	uint64_t fixed;            /* of them, repaired in memory */
	uint64_t unfixable;        /* of them, beyond a safe repair */
	uint64_t low;              /* zoned, of them: zones counting fewer
				    * live bytes than referenced; fixed only
				    * by rebuilding the state from the device
				    * (smr_alloc_open_rebuild) and checking
				    * again with @repair */
	uint64_t zones;            /* zoned: managed zones compared */
	uint64_t bytes_referenced; /* the extents given plus the state */
	uint64_t leaked;           /* rotational, flash: bytes neither
				    * referenced nor free */
	uint32_t *finish;          /* zoned, without @repair: the zones to
				    * finish before a repair (below); malloc'd,
				    * the caller frees it */
	uint32_t nr_finish;
};

/*
 * Compare the allocator's accounting with @refs, the @n extents the newest
 * checkpoint references (any order; the allocator adds its own state,
 * which it reads again from @ref through its verifiers). zoned: each
 * managed zone's live bytes equal the referenced bytes in it, and nothing
 * referenced lies past a zone's write pointer or capacity; rotational and
 * flash: nothing referenced is free or pending, and nothing else is lost
 * (neither referenced nor free). Everywhere: referenced extents do not
 * overlap and stay in the managed range. Each problem is logged with the
 * zone or extent and what a repair does.
 * With @repair, what is safe is fixed in memory (a zone's counter that is
 * too high, leaked space, referenced space marked free); the caller then
 * commits so the state is written by the normal commit path. A zone
 * counter that is too low is never raised in place (r->low without
 * @repair; unfixable with it, since the caller should have rebuilt).
 * An extent that starts below a sequential zone's write pointer and runs
 * past it read whole, the caller vouches (a verified node whose last bytes
 * are the zeros the device returns past the write pointer: a zone that
 * lost its tail): finishing the zone keeps it as it read and lets nothing
 * be written over it. Such zones are listed in r->finish without @repair,
 * for the caller to finish before it repairs; with @repair the extent is
 * unfixable (the caller should have finished the zone).
 * Fills *@r. Returns 0 (problems or not: see @r), -ENOMEM, -EOPNOTSUPP an
 * unknown module.
 */
int smr_alloc_check(struct smr_alloc *a, const struct smr_alloc_ref *ref,
		    const struct smr_extent *refs, size_t n, bool repair,
		    struct smr_alloc_check *r);

#endif /* SMR_ALLOC_ALLOC_H */
