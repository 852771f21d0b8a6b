/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * check.c - the allocator's side of fsck's space audit (smr_alloc_check).
 *
 * The caller hands over every extent the newest checkpoint references (tree
 * nodes, data extents, the blocks it released but the previous checkpoint
 * still uses); this file adds the allocator's own state, read again through
 * the same verifiers as at open, and compares the whole with the module's
 * accounting:
 *
 *   zoned:  per managed zone, the live-byte counter equals the recount, and
 *           nothing referenced lies past the zone's write pointer or
 *           capacity (a write pointer never goes back, so that would be
 *           data that was never written);
 *   rotational, flash: no referenced byte is free, pending, committing
 *           or cooling (it could be handed out again), and every byte of
 *           the managed range is one or the other (else it leaked).
 *
 * Repairs go only through what the module does anyway: a zone's counter
 * that is too high is lowered with the module's own free (space in a zone
 * comes back only when the zone is reset, which needs no live byte, so a
 * free of the right size anywhere below the allocation pointer has exactly
 * that effect); leaked space is freed; referenced space found free is taken
 * out of the free index. A counter that is too low is not raised in place:
 * the caller rebuilds the whole state from the device (every written byte
 * live, smr_alloc_open_rebuild) and checks again, which lowers it. The caller commits afterwards, so the fixed
 * state is persisted by the normal commit.
 */
#include "alloc/alloc_int.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define AC_MAX_REPORTS 100

static void ac_report(struct smr_alloc_check *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void ac_report(struct smr_alloc_check *r, const char *fmt, ...)
{
	va_list ap;

	if (r->problems++ >= AC_MAX_REPORTS)
		return;
	va_start(ap, fmt);
	smr_vlog(SMR_LOG_ERR, fmt, ap);
	va_end(ap);
}

static int ext_cmp(const void *a, const void *b)
{
	const struct smr_extent *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

/* ------------------------------------------------------------------------
 * zoned
 * ------------------------------------------------------------------------ */

static int check_zoned(struct smr_alloc *a, const struct smr_extent *v,
		       size_t n, bool repair, struct smr_alloc_check *r)
{
	struct smr_dev *dev = a->dev;
	uint32_t first = smr_dev_zone_no(dev, a->data_start);
	uint32_t nz = a->info->nr_zones;
	uint64_t *count;
	size_t i;

	if (first == UINT32_MAX)
		return -EINVAL;
	count = calloc(nz, sizeof(*count));
	if (!count)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		uint64_t off = v[i].off, end = v[i].off + v[i].len;

		while (off < end) {
			uint32_t zno = smr_dev_zone_no(dev, off);
			struct smr_zone z;
			uint64_t piece;

			if (zno == UINT32_MAX || smr_dev_zone(dev, zno, &z)) {
				ac_report(r, "extent %" PRIu64 "+%" PRIu64 " past the device's end (not repairable)",
					  v[i].off, v[i].len);
				break;
			}
			piece = SMR_MIN(end, z.start + z.len) - off;
			/* Not fixable, and no commit may follow: the next
			 * write to the zone would land on what is referenced. */
			if (off + piece > z.start + z.cap) {
				ac_report(r, "zone %u: extent %" PRIu64 "+%" PRIu64 " past the zone's capacity (not repairable)",
					  zno, v[i].off, v[i].len);
				r->unfixable++;
			} else if (smr_zone_is_seq(&z) && off + piece > z.wp &&
				   off < z.wp && !repair) {
				ac_report(r, "zone %u: extent %" PRIu64 "+%" PRIu64 " runs past the write pointer %" PRIu64 " (a repair finishes the zone first)",
					  zno, v[i].off, v[i].len, z.wp);
				if (!r->nr_finish ||
				    r->finish[r->nr_finish - 1] != zno) {
					uint32_t *f = realloc(r->finish,
							      (r->nr_finish + 1) *
							      sizeof(*f));

					if (!f) {
						free(count);
						return -ENOMEM;
					}
					r->finish = f;
					r->finish[r->nr_finish++] = zno;
				}
			} else if (smr_zone_is_seq(&z) && off + piece > z.wp) {
				ac_report(r, "zone %u: extent %" PRIu64 "+%" PRIu64 " past the write pointer %" PRIu64 " (never written; not repairable)",
					  zno, v[i].off, v[i].len, z.wp);
				r->unfixable++;
			}
			count[zno] += piece;
			off += piece;
		}
	}
	for (uint32_t zno = first; zno < nz; zno++) {
		int64_t live = a->ops->zone_live(a, zno);

		r->zones++;
		if (live < 0)
			continue; /* not managed (offline, read-only) */
		if ((uint64_t)live == count[zno])
			continue;
		if ((uint64_t)live > count[zno]) {
			ac_report(r, "zone %u: %" PRId64 " live bytes counted, %" PRIu64 " referenced (%s)",
				  zno, live, count[zno],
				  repair ? "counter lowered" : "would lower the counter");
			if (repair) {
				uint64_t start = smr_dev_zone_start(dev, zno);
				uint64_t diff = (uint64_t)live - count[zno];

				if (!a->ops->free(a, start, diff))
					r->fixed++;
			}
		} else if (!repair) {
			/* Raising the counter in place would trust the rest
			 * of the state that already went wrong once: the
			 * repair rebuilds it from the write pointers. */
			ac_report(r, "zone %u: %" PRId64 " live bytes counted, %" PRIu64 " referenced: "
				  "the zone could be reset with referenced data in it "
				  "(a repair rebuilds the allocator state from the write pointers and the trees)",
				  zno, live, count[zno]);
			r->low++;
		} else {
			ac_report(r, "zone %u: %" PRId64 " live bytes counted, %" PRIu64 " referenced "
				  "(not fixed: the allocator state was not rebuilt)",
				  zno, live, count[zno]);
			r->unfixable++;
		}
	}
	free(count);
	return 0;
}

/* ------------------------------------------------------------------------
 * rotational, flash
 * ------------------------------------------------------------------------ */

/* Take [off, off + len) out of @x wherever it is there. */
static int xidx_take(struct smr_xidx *x, uint64_t off, uint64_t len)
{
	uint64_t end = off + len;
	struct smr_extent e;
	int rc;

	while (off < end) {
		if (smr_xidx_containing(x, off, &e)) {
			if (smr_xidx_next(x, off, &e) || e.off >= end)
				return 0;
			off = e.off;
			continue;
		}
		uint64_t stop = SMR_MIN(end, e.off + e.len);

		rc = smr_xidx_remove(x, off, stop - off);
		if (rc)
			return rc;
		off = stop;
	}
	return 0;
}

/* First byte at or after @off that no extent of @x covers, up to @end. */
static uint64_t xidx_skip(const struct smr_xidx *x, uint64_t off, uint64_t end)
{
	struct smr_extent e;

	while (off < end && !smr_xidx_containing(x, off, &e))
		off = e.off + e.len;
	return SMR_MIN(off, end);
}

/* Start of the next extent of @x at or after @off, or @end. */
static uint64_t xidx_next_start(const struct smr_xidx *x, uint64_t off,
				uint64_t end)
{
	struct smr_extent e;

	if (!smr_xidx_containing(x, off, &e))
		return off;
	if (smr_xidx_next(x, off, &e))
		return end;
	return SMR_MIN(e.off, end);
}

static int check_xmod(struct smr_alloc *a, const struct smr_extent *v,
		      size_t n, bool repair, struct smr_alloc_check *r)
{
	struct smr_xmod *m = a->priv;
	struct smr_xidx *sets[4] = { &m->free, &m->pending, &m->committing,
				     &m->cooling };
	static const char *const names[4] = { "free", "pending", "committing",
					      "cooling" };
	uint64_t pos = a->data_start, cap = a->info->capacity, taken = 0;
	int rc;

	for (size_t i = 0; i < n; i++) {
		for (int s = 0; s < 4; s++) {
			if (!smr_xidx_overlaps(sets[s], v[i].off, v[i].len))
				continue;
			/* A state rebuilt from the device holds everything
			 * free: each extent is expected, and said once. */
			if (!s && a->rebuild) {
				r->problems++;
				taken++;
			} else {
				ac_report(r, "extent %" PRIu64 "+%" PRIu64
					  " is referenced but %s%s",
					  v[i].off, v[i].len, names[s],
					  s ? " (cannot be fixed before the next commit)" :
					  repair ? " (taken out of the free space)" :
						   " (would take it out of the free space)");
			}
			if (s) {
				r->unfixable++;
			} else if (repair) {
				rc = xidx_take(sets[0], v[i].off, v[i].len);
				if (rc)
					return rc;
				r->fixed++;
			}
		}
	}
	if (taken)
		smr_err("%" PRIu64 " referenced extent%s free in the allocator "
			"state rebuilt from the device (%s)", taken,
			taken == 1 ? " is" : "s are",
			repair ? "taken out of the free space" :
				 "a repair takes them out of the free space");
	/* Leaks: the managed range is referenced or in one of the sets. */
	size_t i = 0;

	while (pos < cap) {
		uint64_t next = pos;
		bool moved = true;

		while (moved) {
			moved = false;
			while (i < n && v[i].off + v[i].len <= next)
				i++;
			if (i < n && v[i].off <= next) {
				next = v[i].off + v[i].len;
				moved = true;
			}
			for (int s = 0; s < 4; s++) {
				uint64_t k = xidx_skip(sets[s], next, cap);

				if (k != next) {
					next = k;
					moved = true;
				}
			}
		}
		if (next >= cap)
			break;
		/* [next, end) is neither referenced nor known. */
		uint64_t end = cap;

		if (i < n && v[i].off < end)
			end = v[i].off;
		for (int s = 0; s < 4; s++)
			end = SMR_MIN(end, xidx_next_start(sets[s], next, cap));
		r->leaked += end - next;
		ac_report(r, "%" PRIu64 " bytes at %" PRIu64 " are neither referenced nor free%s",
			  end - next, next,
			  repair ? " (freed)" : " (would free them)");
		if (repair && !a->ops->free(a, next, end - next))
			r->fixed++;
		pos = end;
	}
	return 0;
}

int smr_alloc_check(struct smr_alloc *a, const struct smr_alloc_ref *ref,
		    const struct smr_extent *refs, size_t n, bool repair,
		    struct smr_alloc_check *r)
{
	static const struct smr_alloc_ref none;
	struct smr_state_sum sum;
	struct smr_extent sext[SMR_ALLOC_STATE_MAX_EXT], *v = NULL;
	unsigned int snr = 0;
	void *ents = NULL;
	uint64_t nents = 0;
	uint32_t module;
	size_t entry, nv = 0;
	int rc;

	memset(r, 0, sizeof(*r));
	if (a->ops == &smr_zoned_ops) {
		module = SMR_ALLOC_MOD_ZONED;
		entry = sizeof(struct smr_alloc_zone_d);
	} else if (a->ops == &smr_rot_ops || a->ops == &smr_flash_ops) {
		module = a->ops == &smr_rot_ops ? SMR_ALLOC_MOD_ROT :
						  SMR_ALLOC_MOD_FLASH;
		entry = sizeof(struct smr_alloc_ext_d);
	} else {
		return -EOPNOTSUPP;
	}
	pthread_mutex_lock(&a->lock);
	if (ref && memcmp(ref, &none, sizeof(none))) {
		rc = smr_state_read(a, module, ref, entry, &sum, &ents, &nents,
				    sext, &snr);
		free(ents);
		if (rc) {
			ac_report(r, "allocator state at %" PRIu64 " does not read back: %s",
				  ref->off, strerror(-rc));
			r->unfixable++;
			goto out_unlock;
		}
	}
	v = malloc((n + snr + 1) * sizeof(*v));
	if (!v) {
		rc = -ENOMEM;
		goto out_unlock;
	}
	/* memcpy() from NULL is undefined even for 0 bytes: fsck passes no
	 * array for a filesystem without data extents. */
	if (n)
		memcpy(v, refs, n * sizeof(*v));
	if (snr)
		memcpy(v + n, sext, snr * sizeof(*v));
	nv = n + snr;
	if (nv > 1)
		qsort(v, nv, sizeof(*v), ext_cmp);
	for (size_t i = 1; i < nv; i++)
		if (v[i - 1].off + v[i - 1].len > v[i].off) {
			ac_report(r, "referenced extents %" PRIu64 "+%" PRIu64 " and %" PRIu64 "+%" PRIu64 " overlap (not repairable)",
				  v[i - 1].off, v[i - 1].len, v[i].off,
				  v[i].len);
			r->unfixable++;
		}
	for (size_t i = 0; i < nv; i++) {
		r->bytes_referenced += v[i].len;
		if (v[i].off < a->data_start ||
		    v[i].off + v[i].len > a->info->capacity ||
		    v[i].off + v[i].len < v[i].off) {
			ac_report(r, "extent %" PRIu64 "+%" PRIu64 " outside the managed range (not repairable)",
				  v[i].off, v[i].len);
			r->unfixable++;
		}
	}
	if (module == SMR_ALLOC_MOD_ZONED)
		rc = check_zoned(a, v, nv, repair, r);
	else
		rc = check_xmod(a, v, nv, repair, r);
out_unlock:
	pthread_mutex_unlock(&a->lock);
	free(v);
	if (rc) {
		free(r->finish);
		r->finish = NULL;
		r->nr_finish = 0;
	}
	return rc;
}
