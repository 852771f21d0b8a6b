/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * extent_mod.c - the body shared by the rotational and flash modules: free
 * space as an extent index, deferred frees, the metadata reserve, and the
 * persisted free-extent list. The modules differ only in placement (their
 * pick function) and in whether released ranges are discarded.
 *
 * Deferred frees go through three stages: smr_alloc_free() puts a range in
 * `pending`; commit() moves `pending` (and the previous state's blocks) to
 * `committing`: the checkpoint being written no longer references it.
 * committed() moves `committing` to `cooling`: that checkpoint is durable,
 * but the one before it, which open falls back to if the newest is
 * damaged, may still reference the range (its state does, and its trees'
 * released blocks). Only the next committed() moves `cooling` to `free`.
 * The state lists `cooling`'s extents after the free ones (nr_cooling), so
 * an open goes on with the same rule.
 */
#include "alloc/alloc_int.h"

#include <endian.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* The metadata reserve: 1/64 of the range, at most 64 MiB, at least the
 * state of a badly fragmented range. */
static uint64_t xmod_reserve(uint64_t capacity, uint64_t bs)
{
	uint64_t r = SMR_MIN(capacity / 64, 64 * SMR_MIB);

	r = SMR_MAX(r, 4 * (uint64_t)SMR_ALLOC_STATE_BLKSZ);
	r = SMR_MIN(r, capacity / 2);
	return SMR_ROUND_DOWN(r, bs);
}

/*
 * What users cannot fill and keep overwriting (struct smr_space): the
 * reserve, and room for overwrites, whose new blocks are taken before the
 * old ones come back two commits later: as much again as the reserve, at
 * least 2 MiB (a few of the namespace's largest writes), but no more than
 * an eighth of the range. Without that room a filesystem filled to its size
 * fails every overwrite with ENOSPC.
 */
static uint64_t xmod_overhead(const struct smr_xmod *m)
{
	uint64_t room = SMR_MIN(SMR_MAX(m->reserve, 2 * SMR_MIB),
				m->capacity / 8);

	return SMR_MIN(m->capacity,
		       m->reserve + SMR_ROUND_DOWN(room, m->block_size));
}

static int xmod_load(struct smr_alloc *a, struct smr_xmod *m,
		     const struct smr_alloc_ref *ref)
{
	struct smr_state_sum sum;
	void *ents = NULL;
	uint64_t n = 0, prev_end = 0;
	int rc;

	rc = smr_state_read(a, m->module, ref, sizeof(struct smr_alloc_ext_d),
			    &sum, &ents, &n, m->state_ext, &m->state_nr);
	if (rc)
		return rc;
	for (uint64_t i = 0; i < n; i++) {
		const struct smr_alloc_ext_d *d =
			(const struct smr_alloc_ext_d *)ents + i;
		uint64_t off = le64toh(d->off), len = le64toh(d->len);
		bool cool = i >= n - sum.nr_cooling;

		/* Each list sorted, disjoint, not touching, aligned, in
		 * range; the two lists disjoint. */
		if (i == n - sum.nr_cooling)
			prev_end = 0;
		if (!len || off % m->block_size || len % m->block_size ||
		    off < a->data_start || off >= a->info->capacity ||
		    len > a->info->capacity - off ||
		    (prev_end && off <= prev_end) ||
		    (cool && smr_xidx_overlaps(&m->free, off, len))) {
			rc = smr_corrupt(ref->off,
					 "allocator state: bad free extent");
			goto out;
		}
		rc = smr_xidx_insert(cool ? &m->cooling : &m->free, off, len);
		if (rc)
			goto out;
		prev_end = off + len;
	}
	/* The state's own blocks must not be free. */
	for (unsigned int i = 0; i < m->state_nr; i++) {
		if (smr_xidx_overlaps(&m->free, m->state_ext[i].off,
				      m->state_ext[i].len) ||
		    smr_xidx_overlaps(&m->cooling, m->state_ext[i].off,
				      m->state_ext[i].len)) {
			rc = smr_corrupt(ref->off,
					 "allocator state: its blocks are free");
			goto out;
		}
	}
	m->st = sum.stats;
	a->user_bytes = sum.user_bytes;
	m->cursor = sum.cursor;
out:
	free(ents);
	return rc;
}

int smr_xmod_init(struct smr_alloc *a, const struct smr_alloc_ref *ref,
		  uint32_t module, bool discard, smr_xmod_pick_fn pick)
{
	struct smr_xmod *m = calloc(1, sizeof(*m));
	int rc;

	if (!m)
		return -ENOMEM;
	m->module = module;
	m->discard = discard && a->info->discard;
	m->pick = pick;
	m->block_size = a->info->block_size;
	m->capacity = a->info->capacity - a->data_start;
	m->reserve = xmod_reserve(m->capacity, m->block_size);
	m->cursor = a->data_start;
	smr_xidx_init(&m->free);
	smr_xidx_init(&m->pending);
	smr_xidx_init(&m->committing);
	smr_xidx_init(&m->cooling);
	a->priv = m;

	if (!ref) {
		/* Made, or rebuilt (everything free). */
		if (a->keep_stats)
			m->st = *a->keep_stats;
		rc = m->capacity ? smr_xidx_insert(&m->free, a->data_start,
						   m->capacity) : 0;
	} else {
		rc = xmod_load(a, m, ref);
	}
	if (rc) {
		smr_xmod_fini(a);
		return rc;
	}
	return 0;
}

void smr_xmod_fini(struct smr_alloc *a)
{
	struct smr_xmod *m = a->priv;

	if (!m)
		return;
	smr_xidx_destroy(&m->free);
	smr_xidx_destroy(&m->pending);
	smr_xidx_destroy(&m->committing);
	smr_xidx_destroy(&m->cooling);
	free(m);
	a->priv = NULL;
}

/*
 * What a data stream may take out of whole metadata units: free space cut
 * into holes shorter than a unit is no use to metadata, so the reserve
 * must stay in whole units after any data allocation; one of @len bytes
 * lowers ubytes by at most @len plus a partial unit on each side of the
 * one extent it splits.
 */
static uint64_t xmod_unit_avail(const struct smr_xmod *m)
{
	const struct smr_xidx *f = &m->free;
	uint64_t keep = m->reserve;

	if (f->unit > m->block_size)
		keep += 2 * (f->unit - m->block_size);
	return f->ubytes > keep ? f->ubytes - keep : 0;
}

/*
 * What a data stream may take: free space above the reserve, of which
 * whole units only down to the reserve (xmod_unit_avail), and all of what
 * no unit holds (holes shorter than a unit, the tails of longer extents
 * past their last whole unit), which xmod_pick_spare takes without
 * touching a unit. statfs counts the holes free: they must be writable,
 * or a write gets ENOSPC while statfs offers space.
 */
static uint64_t xmod_data_avail(const struct smr_xmod *m)
{
	const struct smr_xidx *f = &m->free;
	uint64_t by = f->bytes > m->reserve ? f->bytes - m->reserve : 0;

	return SMR_MIN(by, xmod_unit_avail(m) + (f->bytes - f->ubytes));
}

/* Take [off, off + len) for ext[*n]. */
static int xmod_take(struct smr_xmod *m, uint64_t off, uint64_t len,
		     struct smr_extent *ext, unsigned int *n)
{
	int rc = smr_xidx_remove(&m->free, off, len);

	if (rc)
		return rc;
	ext[*n].off = off;
	ext[*n].len = len;
	(*n)++;
	return 0;
}

/*
 * Data when whole units are short: the free bytes no unit holds, which
 * leaves ubytes as it is. Extents shorter than a unit first, shortest
 * first, then the tails of the longer ones past their last whole unit, in
 * address order. Returns the extents taken (0 if none).
 */
static int xmod_pick_spare(struct smr_xmod *m, uint64_t want,
			   struct smr_extent *ext, unsigned int max_ext)
{
	uint64_t unit = m->free.unit, at = 0;
	struct smr_extent e;
	unsigned int n = 0;
	int rc;

	if (unit <= m->block_size)
		return 0; /* ubytes counts every free byte */
	while (want && n < max_ext &&
	       !smr_xidx_best_fit(&m->free, m->block_size, 0, &e) &&
	       e.len < unit) {
		uint64_t take = SMR_MIN(e.len, want);

		rc = xmod_take(m, e.off, take, ext, &n);
		if (rc)
			return n ? (int)n : rc;
		want -= take;
	}
	while (want && n < max_ext && !smr_xidx_next(&m->free, at, &e)) {
		uint64_t take = SMR_MIN(e.len % unit, want);

		at = e.off + e.len;
		if (!take)
			continue;
		rc = xmod_take(m, at - take, take, ext, &n);
		if (rc)
			return n ? (int)n : rc;
		want -= take;
	}
	return (int)n;
}

/* Metadata, in whole units (hint->unit) where asked: a piece shorter
 * than @unit is no node's home. One extent if one is long enough, else
 * the longest first, whatever the module's placement: data that cut the
 * free space into holes must not cut nodes and the allocator state into
 * as many pieces (a commit takes a bounded number). */
static int xmod_pick_units(struct smr_xmod *m, uint64_t want, uint64_t unit,
			   struct smr_extent *ext, unsigned int max_ext)
{
	struct smr_extent e;
	unsigned int n = 0;
	int rc;

	want = SMR_ROUND_DOWN(want, unit);
	while (want && n < max_ext) {
		uint64_t take = want;

		if (smr_xidx_best_fit(&m->free, want, 0, &e)) {
			if (smr_xidx_largest(&m->free, &e) || e.len < unit)
				break;
			take = SMR_ROUND_DOWN(e.len, unit);
		}
		rc = smr_xidx_remove(&m->free, e.off, take);
		if (rc)
			return n ? (int)n : rc;
		ext[n].off = e.off;
		ext[n].len = take;
		want -= take;
		n++;
	}
	return n ? (int)n : -ENOSPC;
}

/* Did the module's placement hand out @n extents metadata can use: whole
 * units, and all of @want in one where it asked for one extent? */
static bool xmod_fits(const struct smr_xmod *m, uint64_t want,
		      const struct smr_alloc_hint *hint,
		      const struct smr_extent *ext, int n)
{
	uint64_t unit = hint ? hint->unit : 0;

	if (hint && hint->contiguous && (n > 1 || ext[0].len < want))
		return false;
	for (int i = 0; unit > m->block_size && i < n; i++)
		if (ext[i].len % unit)
			return false;
	return true;
}

/* Give back the @n extents the module picked (and its cursor) and take
 * whole units instead. Putting back what the pick just took out needs no
 * memory (the index keeps the nodes it freed, up to SMR_XIDX_SPARE, more
 * than a pick's extents): an ENOMEM here would leave them neither free nor
 * handed out, lost until fsck. */
static int xmod_repick(struct smr_xmod *m, uint64_t want,
		       const struct smr_alloc_hint *hint,
		       struct smr_extent *ext, int n, unsigned int max_ext,
		       uint64_t cursor)
{
	int rc;

	for (int i = 0; i < n; i++) {
		rc = smr_xidx_insert(&m->free, ext[i].off, ext[i].len);
		if (rc)
			return rc;
	}
	m->cursor = cursor;
	return xmod_pick_units(m, want,
			       SMR_MAX(hint ? hint->unit : 0, m->block_size),
			       ext, max_ext);
}

/* Data that wants more than whole units can give (xmod_unit_avail): the
 * bytes no unit holds first, then units down to the reserve. */
static int xmod_alloc_short(struct smr_xmod *m, uint64_t want,
			    const struct smr_alloc_hint *hint,
			    struct smr_extent *ext, unsigned int max_ext)
{
	uint64_t units = xmod_unit_avail(m), got = 0;
	int n = xmod_pick_spare(m, want, ext, max_ext), k;

	if (n < 0)
		return n;
	for (int i = 0; i < n; i++)
		got += ext[i].len;
	if (got < want && units && (unsigned int)n < max_ext) {
		k = m->pick(m, SMR_MIN(want - got, units), hint, ext + n,
			    max_ext - (unsigned int)n);
		if (k < 0 && !n)
			return k;
		if (k > 0)
			n += k;
	}
	return n ? n : -ENOSPC;
}

int smr_xmod_alloc(struct smr_alloc *a, uint64_t len,
		   const struct smr_alloc_hint *hint, enum smr_stream stream,
		   struct smr_extent *ext, unsigned int max_ext)
{
	static const struct smr_alloc_hint none;
	struct smr_xmod *m = a->priv;
	uint64_t avail = m->free.bytes, cursor = m->cursor;
	int n;

	if (!len || len % m->block_size || !max_ext ||
	    (unsigned int)stream >= SMR_STREAM_NR ||
	    (hint && hint->unit % m->block_size))
		return -EINVAL;
	if (stream != SMR_STREAM_META)
		avail = xmod_data_avail(m);
	if (!avail)
		return -ENOSPC;
	if (stream != SMR_STREAM_META &&
	    !(hint && hint->unit > m->block_size) &&
	    SMR_MIN(len, avail) > xmod_unit_avail(m)) {
		n = xmod_alloc_short(m, SMR_MIN(len, avail), hint ? hint : &none,
				     ext, max_ext);
	} else {
		n = m->pick(m, SMR_MIN(len, avail), hint ? hint : &none, ext,
			    max_ext);
		if (n > 0 && (stream == SMR_STREAM_META ||
			      (hint && hint->unit > m->block_size)) &&
		    !xmod_fits(m, SMR_MIN(len, avail), hint, ext, n))
			n = xmod_repick(m, SMR_MIN(len, avail), hint, ext, n,
					max_ext, cursor);
	}
	if (n < 0)
		return n;
	for (int i = 0; i < n; i++)
		m->st.bytes_allocated[stream] += ext[i].len;
	m->st.nr_allocs++;
	return n;
}

int smr_xmod_free(struct smr_alloc *a, uint64_t off, uint64_t len)
{
	struct smr_xmod *m = a->priv;
	int rc;

	if (!len || off % m->block_size || len % m->block_size ||
	    off < a->data_start || off >= a->info->capacity ||
	    len > a->info->capacity - off)
		return -EINVAL;
	if (smr_xidx_overlaps(&m->free, off, len) ||
	    smr_xidx_overlaps(&m->pending, off, len) ||
	    smr_xidx_overlaps(&m->committing, off, len) ||
	    smr_xidx_overlaps(&m->cooling, off, len)) {
		smr_err("alloc: freeing %" PRIu64 "+%" PRIu64
			" that is already free", off, len);
		return -EINVAL;
	}
	rc = smr_xidx_insert(&m->pending, off, len);
	if (rc)
		return rc;
	m->st.bytes_freed += len;
	return 0;
}

int smr_xmod_claim(struct smr_alloc *a, uint64_t off, uint64_t len)
{
	struct smr_xmod *m = a->priv;
	struct smr_extent e;

	if (!len || off % m->block_size || len % m->block_size ||
	    off < a->data_start || off >= a->info->capacity ||
	    len > a->info->capacity - off)
		return -EINVAL;
	/* Written after the state was taken: it was free then. */
	if (smr_xidx_containing(&m->free, off, &e) ||
	    off + len > e.off + e.len) {
		smr_err("alloc: claiming %" PRIu64 "+%" PRIu64
			" that is not free", off, len);
		return -EINVAL;
	}
	return smr_xidx_remove(&m->free, off, len);
}

/*
 * The reserve is counted in pieces of whole nodes, and long enough that
 * the state, which a commit writes in at most SMR_ALLOC_STATE_MAX_EXT
 * extents taken longest first, fits in the reserve's 16th: the state of
 * the worst free list (every other block free) is 1/512 of the range, the
 * reserve 1/64 of it (up to 4 GiB).
 */
void smr_xmod_meta_unit(struct smr_alloc *a, uint32_t unit)
{
	struct smr_xmod *m = a->priv;
	uint64_t piece = 0;

	if (unit) {
		piece = SMR_ROUND_UP(m->reserve / 16, unit);
		piece = SMR_MAX(piece, unit);
	}
	if (m->free.unit != piece)
		smr_xidx_set_unit(&m->free, piece);
}

/* Move every extent of @from into @to; @from ends empty. */
static int xidx_move(struct smr_xidx *to, struct smr_xidx *from)
{
	if (!to->nr) {
		struct smr_xidx t = *to;
		uint64_t fu = from->unit;

		/* Swap the extents; each index keeps its unit. */
		*to = *from;
		*from = t;
		if (to->unit != t.unit)
			smr_xidx_set_unit(to, t.unit);
		if (from->unit != fu)
			smr_xidx_set_unit(from, fu);
		return 0;
	}
	/* Node by node, without memory: an ENOMEM half-way would leave some
	 * extents in both (and hand them out twice once free). */
	return smr_xidx_move(to, from);
}

static int xidx_add_all(struct smr_xidx *to, const struct smr_xidx *from)
{
	struct smr_extent e;
	uint64_t at = 0;
	int rc;

	while (!smr_xidx_next(from, at, &e)) {
		rc = smr_xidx_insert(to, e.off, e.len);
		if (rc)
			return rc;
		at = e.off + e.len;
	}
	return 0;
}

int smr_xmod_commit(struct smr_alloc *a, uint64_t gen,
		    struct smr_alloc_ref *ref)
{
	struct smr_xmod *m = a->priv;
	struct smr_extent ext[SMR_ALLOC_STATE_MAX_EXT], e;
	struct smr_alloc_ext_d *ents = NULL;
	struct smr_state_sum sum;
	struct smr_xidx img, cool;
	uint64_t n, at, i = 0;
	int nr, rc;

	/* Allocating the state may split a free extent per extent taken. */
	n = m->free.nr + m->pending.nr + m->committing.nr + m->cooling.nr +
	    m->state_nr + SMR_ALLOC_STATE_MAX_EXT;
	nr = smr_state_alloc(a, smr_state_bytes(sizeof(*ents), n), ext);
	if (nr < 0)
		return nr;

	/* The image: all that is free once this checkpoint is durable
	 * (what the last durable commit freed included), then what this
	 * commit frees, free once the next one is. */
	smr_xidx_init(&img);
	smr_xidx_init(&cool);
	rc = xidx_add_all(&img, &m->free);
	if (!rc)
		rc = xidx_add_all(&img, &m->cooling);
	if (!rc)
		rc = xidx_add_all(&cool, &m->pending);
	if (!rc)
		rc = xidx_add_all(&cool, &m->committing);
	for (unsigned int k = 0; !rc && k < m->state_nr; k++)
		rc = smr_xidx_insert(&cool, m->state_ext[k].off,
				     m->state_ext[k].len);
	if (rc == -EEXIST)
		rc = smr_corrupt(a->data_start,
				 "alloc: free lists overlap at commit");
	if (rc)
		goto out_undo;
	ents = calloc(img.nr + cool.nr + 1, sizeof(*ents));
	if (!ents) {
		rc = -ENOMEM;
		goto out_undo;
	}
	for (int s = 0; s < 2; s++) {
		for (at = 0; !smr_xidx_next(s ? &cool : &img, at, &e);
		     at = e.off + e.len) {
			ents[i].off = htole64(e.off);
			ents[i].len = htole64(e.len);
			i++;
		}
	}
	smr_state_sum_init(a, &sum);
	sum.stats = m->st;
	sum.cursor = m->cursor;
	sum.nr_cooling = cool.nr;
	rc = smr_state_write(a, m->module, gen, &sum, ents, sizeof(*ents), i,
			     ext, (unsigned int)nr, ref);
	if (rc)
		goto out_undo;

	/* The old state's blocks are dead once this checkpoint is. */
	rc = xidx_move(&m->committing, &m->pending);
	for (unsigned int k = 0; !rc && k < m->state_nr; k++)
		rc = smr_xidx_insert(&m->committing, m->state_ext[k].off,
				     m->state_ext[k].len);
	memcpy(m->state_ext, ext, sizeof(ext[0]) * (unsigned int)nr);
	m->state_nr = (unsigned int)nr;
	goto out;

out_undo:
	smr_state_unalloc(a, ext, (unsigned int)nr);
out:
	free(ents);
	smr_xidx_destroy(&img);
	smr_xidx_destroy(&cool);
	return rc;
}

int smr_xmod_committed(struct smr_alloc *a)
{
	struct smr_xmod *m = a->priv;
	struct smr_extent e;
	uint64_t at = 0;
	int rc;

	while (!smr_xidx_next(&m->cooling, at, &e)) {
		at = e.off + e.len;
		if (m->discard) {
			rc = smr_dev_discard(a->dev, e.off, e.len);
			if (rc && rc != -EOPNOTSUPP)
				smr_warn("alloc: discard %" PRIu64 "+%" PRIu64
					 ": %s", e.off, e.len, strerror(-rc));
		}
	}
	rc = xidx_move(&m->free, &m->cooling);
	if (!rc)
		rc = xidx_move(&m->cooling, &m->committing);
	return rc;
}

/* Freed, not yet reusable: given back by the next commits. */
static uint64_t xmod_reclaimable(const struct smr_xmod *m)
{
	return m->pending.bytes + m->committing.bytes + m->cooling.bytes;
}

void smr_xmod_usage(struct smr_alloc *a, uint64_t *used, uint64_t *size)
{
	struct smr_xmod *m = a->priv;

	*used = m->capacity - m->free.bytes - xmod_reclaimable(m);
	*size = m->capacity - xmod_overhead(m);
}

void smr_xmod_space(struct smr_alloc *a, struct smr_space *sp)
{
	struct smr_xmod *m = a->priv;

	sp->capacity = m->capacity;
	sp->reclaimable = xmod_reclaimable(m);
	sp->reserved = SMR_MIN(m->reserve, m->free.bytes);
	sp->free = m->free.bytes - sp->reserved;
	sp->overhead = xmod_overhead(m);
	sp->used = m->capacity - m->free.bytes - sp->reclaimable;
	sp->reserve_taken = 0; /* nothing but data takes space here */
}

void smr_xmod_stats(struct smr_alloc *a, struct smr_alloc_stats *st)
{
	struct smr_xmod *m = a->priv;

	*st = m->st;
}
