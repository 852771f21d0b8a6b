/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * extent_index.h - a set of disjoint, non-touching extents indexed twice:
 * by address and by (length, address). Both indexes are treaps, so every
 * operation is O(log n) expected. Used by the rotational and flash modules
 * for their free space and their deferred frees; internal to src/alloc.
 *
 * Not thread-safe: the caller holds the allocator's lock.
 */
#ifndef SMR_ALLOC_EXTENT_INDEX_H
#define SMR_ALLOC_EXTENT_INDEX_H

#include <stdbool.h>
#include <stdint.h>

#include "alloc/alloc.h"

struct smr_xnode;

struct smr_xidx {
	struct smr_xnode *root[2]; /* [0] by address, [1] by (len, address) */
	uint64_t nr;               /* extents */
	uint64_t bytes;            /* their total length */
	uint64_t unit;             /* 0, or the piece ubytes counts in */
	uint64_t ubytes;           /* their total in whole units: the sum
				    * of each length rounded down to a
				    * multiple of unit (bytes if unit is 0) */
	uint64_t seed;             /* treap priorities */
	struct smr_xnode *spare;   /* freed nodes kept for inserts */
	unsigned int nr_spare;
};

/* Freed nodes an index keeps, so that putting back up to this many
 * extents just taken out (smr_xidx_remove) needs no memory. */
#define SMR_XIDX_SPARE 64

void smr_xidx_init(struct smr_xidx *x);
/* Free every node; the index is empty afterwards. */
void smr_xidx_destroy(struct smr_xidx *x);

/*
 * Count ubytes in pieces of @unit bytes from now on (0: ubytes is bytes).
 * Walks the index once.
 */
void smr_xidx_set_unit(struct smr_xidx *x, uint64_t unit);

/*
 * Add [off, off + len), merging it with the extents it touches.
 * Returns 0, -EEXIST if it overlaps an extent already there (nothing
 * changed), -EINVAL for len 0, -ENOMEM.
 */
int smr_xidx_insert(struct smr_xidx *x, uint64_t off, uint64_t len);

/*
 * Move every extent of @from into @to, merging as insert does, without
 * allocating: it cannot fail for memory. -EEXIST if one overlaps @to (the
 * ones before it have moved, the rest stay in @from).
 */
int smr_xidx_move(struct smr_xidx *to, struct smr_xidx *from);

/*
 * Take [off, off + len) out; it must lie inside one extent, which is
 * shrunk or split. Returns 0, -ENOENT if it does not, -ENOMEM.
 */
int smr_xidx_remove(struct smr_xidx *x, uint64_t off, uint64_t len);

/* Does any extent overlap [off, off + len)? */
bool smr_xidx_overlaps(const struct smr_xidx *x, uint64_t off, uint64_t len);

/* The extent that holds byte @off: 0 and *@e, or -ENOENT. */
int smr_xidx_containing(const struct smr_xidx *x, uint64_t off,
			struct smr_extent *e);

/* The first extent starting at or after @off: 0 and *@e, or -ENOENT. */
int smr_xidx_next(const struct smr_xidx *x, uint64_t off,
		  struct smr_extent *e);

/*
 * Best fit: the shortest extent of at least @len bytes; of several of that
 * length, the one nearest to @near. 0 and *@e, or -ENOENT.
 */
int smr_xidx_best_fit(const struct smr_xidx *x, uint64_t len, uint64_t near,
		      struct smr_extent *e);

/* The longest extent (the highest address of equals): 0, or -ENOENT. */
int smr_xidx_largest(const struct smr_xidx *x, struct smr_extent *e);

#endif /* SMR_ALLOC_EXTENT_INDEX_H */
