/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * alloc_int.h - what the allocator modules share inside src/alloc: reading
 * and writing the persisted state (state.c) and the body of the two
 * extent-based modules, rotational and flash (extent_mod.c). Not part of the
 * layer's interface.
 */
#ifndef SMR_ALLOC_ALLOC_INT_H
#define SMR_ALLOC_ALLOC_INT_H

#include "alloc/alloc.h"
#include "alloc/extent_index.h"
#include "format/ondisk.h"

/* ------------------------------------------------------------------------
 * Persisted state (state.c)
 * ------------------------------------------------------------------------ */

/* The in-core form of struct smr_alloc_state_head. */
struct smr_state_sum {
	uint64_t data_start;
	uint64_t capacity;
	uint32_t block_size;
	uint32_t nr_zones;
	uint32_t reserve_zones;
	uint32_t slot_zone[SMR_STREAM_NR];
	struct smr_alloc_stats stats; /* but user_bytes: below */
	uint64_t user_bytes; /* smr_alloc.user_bytes */
	uint64_t cursor;
	uint64_t nr_cooling; /* the last entries: freed by this commit */
};

/* Fill the fields of @sum that describe the device of @a. */
void smr_state_sum_init(struct smr_alloc *a, struct smr_state_sum *sum);

/* Bytes of state needed for @n entries of @entry_size bytes. */
uint64_t smr_state_bytes(size_t entry_size, uint64_t n);

/*
 * Allocate @bytes for the state from the META stream through a->ops->alloc
 * (a->lock held), as at most SMR_ALLOC_STATE_MAX_EXT extents. Returns the
 * number of extents, or -ENOSPC (what was taken is given back).
 */
int smr_state_alloc(struct smr_alloc *a, uint64_t bytes,
		    struct smr_extent *ext);

/*
 * Give back state extents that were allocated but not (or not fully)
 * written: write_failed where the module has it, then free.
 */
void smr_state_unalloc(struct smr_alloc *a, const struct smr_extent *ext,
		       unsigned int nr);

/*
 * Serialise @n entries (already in on-disk form) with the summary @sum into
 * the extents @ext (as many bytes as smr_state_bytes() asked for, or more),
 * seal every block, write them in order and fill *@ref. Returns 0,
 * -ENOMEM, -EIO (or the device's error), -SMR_EFSCORRUPTED if a block fails
 * its own verifier (a bug).
 */
int smr_state_write(struct smr_alloc *a, uint32_t module, uint64_t gen,
		    const struct smr_state_sum *sum, const void *entries,
		    size_t entry_size, uint64_t n, const struct smr_extent *ext,
		    unsigned int nr_ext, struct smr_alloc_ref *ref);

/*
 * Read and verify the state @ref names: every block's header and structure,
 * the module, the entry size, the whole-state checksum, and that the summary
 * matches the device. On success *@entries is a malloc'd array of *@n
 * entries in on-disk form, and @ext/@nr_ext the extents the state occupies.
 * Returns 0, -ENOMEM, the device's error, -SMR_EFSBADCRC (a checksum),
 * -SMR_EFSCORRUPTED (anything else wrong in the blocks), -EINVAL (a valid
 * state of another device or geometry). Each failure is logged.
 */
int smr_state_read(struct smr_alloc *a, uint32_t module,
		   const struct smr_alloc_ref *ref, size_t entry_size,
		   struct smr_state_sum *sum, void **entries, uint64_t *n,
		   struct smr_extent *ext, unsigned int *nr_ext);

/* ------------------------------------------------------------------------
 * Extent-based modules (extent_mod.c): rotational and flash share all but
 * the placement policy.
 * ------------------------------------------------------------------------ */

struct smr_xmod;

/*
 * Placement policy: take up to @max_ext extents totalling at most @want
 * bytes out of m->free (want > 0 and want <= m->free.bytes on entry).
 * Returns the number of extents taken, >= 1, or -ENOMEM with nothing taken.
 */
typedef int (*smr_xmod_pick_fn)(struct smr_xmod *m, uint64_t want,
				const struct smr_alloc_hint *hint,
				struct smr_extent *ext, unsigned int max_ext);

/* The private state of rotational and flash. Protected by a->lock. */
struct smr_xmod {
	uint32_t module;       /* SMR_ALLOC_MOD_* */
	bool discard;          /* discard ranges released by committed() */
	smr_xmod_pick_fn pick; /* placement policy */
	uint64_t block_size;
	uint64_t capacity;     /* of the managed range */
	uint64_t reserve;      /* bytes only META may take, counted in
				* whole metadata units (free.ubytes) */
	uint64_t cursor;       /* flash: next-fit cursor */
	struct smr_xidx free;       /* can be handed out */
	struct smr_xidx pending;    /* freed since the last commit */
	struct smr_xidx committing; /* freed by the last commit, whose
				     * checkpoint is not yet durable */
	struct smr_xidx cooling;    /* freed by the last durable commit: the
				     * checkpoint before it still uses it,
				     * free once the next one is durable */
	struct smr_extent state_ext[SMR_ALLOC_STATE_MAX_EXT]; /* the state
							       * on disk */
	unsigned int state_nr;
	struct smr_alloc_stats st;
};

int smr_xmod_init(struct smr_alloc *a, const struct smr_alloc_ref *ref,
		  uint32_t module, bool discard, smr_xmod_pick_fn pick);
void smr_xmod_fini(struct smr_alloc *a);
int smr_xmod_alloc(struct smr_alloc *a, uint64_t len,
		   const struct smr_alloc_hint *hint, enum smr_stream stream,
		   struct smr_extent *ext, unsigned int max_ext);
int smr_xmod_free(struct smr_alloc *a, uint64_t off, uint64_t len);
int smr_xmod_claim(struct smr_alloc *a, uint64_t off, uint64_t len);
void smr_xmod_meta_unit(struct smr_alloc *a, uint32_t unit);
int smr_xmod_commit(struct smr_alloc *a, uint64_t gen,
		    struct smr_alloc_ref *ref);
int smr_xmod_committed(struct smr_alloc *a);
void smr_xmod_space(struct smr_alloc *a, struct smr_space *sp);
void smr_xmod_usage(struct smr_alloc *a, uint64_t *used, uint64_t *size);
void smr_xmod_stats(struct smr_alloc *a, struct smr_alloc_stats *st);

#endif /* SMR_ALLOC_ALLOC_INT_H */
