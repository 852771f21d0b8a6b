/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rotational.c - the allocator for spinning disks without zones.
 *
 * A seek costs milliseconds, so what matters is that a file's blocks are
 * contiguous and near one another. Placement, in order:
 *  1. exactly at the hint, if the free extent holding it has room;
 *  2. best fit: the shortest free extent that holds the whole request, and
 *     of several that short, the one nearest the hint;
 *  3. when no extent is long enough (a fragmented disk), the longest
 *     extents, longest first, so that the request takes as few pieces as
 *     possible.
 * Every step is an O(log n) query of the extent index.
 */
#include "alloc/alloc_int.h"

#include <stdio.h>

static int rot_probe(const struct smr_dev_info *info, char *why, size_t len)
{
	if (info->zoned) {
		snprintf(why, len, "%s zoned device: random writes are refused",
			 info->host_aware ? "host-aware (driven as host-managed)" :
					    "host-managed");
		return 0;
	}
	if (info->rotational) {
		snprintf(why, len, "rotational device: contiguous extents near "
			 "the hint");
		return 100;
	}
	snprintf(why, len, "non-rotational device: contiguity buys little");
	return 50;
}

static int rot_take(struct smr_xmod *m, uint64_t off, uint64_t len,
		    struct smr_extent *e)
{
	int rc = smr_xidx_remove(&m->free, off, len);

	if (rc)
		return rc;
	e->off = off;
	e->len = len;
	return 0;
}

static int rot_pick(struct smr_xmod *m, uint64_t want,
		    const struct smr_alloc_hint *hint, struct smr_extent *ext,
		    unsigned int max_ext)
{
	uint64_t near = SMR_ROUND_UP(hint->near, m->block_size);
	struct smr_extent e;
	unsigned int n = 0;
	int rc;

	if (near && !smr_xidx_containing(&m->free, near, &e) &&
	    e.off + e.len - near >= want)
		return rot_take(m, near, want, ext) ?: 1;
	if (!smr_xidx_best_fit(&m->free, want, near, &e))
		return rot_take(m, e.off, want, ext) ?: 1;
	while (want && n < max_ext && !smr_xidx_largest(&m->free, &e)) {
		uint64_t take = SMR_MIN(e.len, want);

		rc = rot_take(m, e.off, take, &ext[n]);
		if (rc)
			return n ? (int)n : rc;
		want -= take;
		n++;
	}
	return (int)n;
}

static int rot_init(struct smr_alloc *a, const struct smr_alloc_ref *ref)
{
	return smr_xmod_init(a, ref, SMR_ALLOC_MOD_ROT, false, rot_pick);
}

const struct smr_alloc_ops smr_rot_ops = {
	.name = "rotational",
	.probe = rot_probe,
	.init = rot_init,
	.fini = smr_xmod_fini,
	.alloc = smr_xmod_alloc,
	.free = smr_xmod_free,
	.commit = smr_xmod_commit,
	.committed = smr_xmod_committed,
	.space = smr_xmod_space,
	.stats = smr_xmod_stats,
	.claim = smr_xmod_claim,
	.usage = smr_xmod_usage,
	.meta_unit = smr_xmod_meta_unit,
};
