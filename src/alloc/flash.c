/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * flash.c - the allocator for SSDs, regular files and anything else that
 * takes random writes and does not care where they land.
 *
 * The cheapest correct allocation: a next-fit cursor walks the free extents
 * in address order and hands out whatever comes next, wrapping at the end.
 * Hints are ignored (an SSD's FTL remaps everything anyway). Ranges freed by
 * a durable checkpoint are discarded where the device supports it, so that
 * the FTL (or the file system under a regular file) learns they are unused.
 */
#include "alloc/alloc_int.h"

#include <stdio.h>

static int flash_probe(const struct smr_dev_info *info, char *why,
		       size_t len)
{
	if (info->zoned) {
		snprintf(why, len, "%s zoned device: random writes are refused",
			 info->host_aware ? "host-aware (driven as host-managed)" :
					    "host-managed");
		return 0;
	}
	if (info->rotational) {
		snprintf(why, len, "rotational device: scattered placement "
			 "would seek");
		return 50;
	}
	snprintf(why, len, "non-rotational device: any free space will do");
	return 100;
}

static int flash_pick(struct smr_xmod *m, uint64_t want,
		      const struct smr_alloc_hint *hint, struct smr_extent *ext,
		      unsigned int max_ext)
{
	struct smr_extent e;
	unsigned int n = 0;
	int rc;

	(void)hint;
	while (want && n < max_ext) {
		uint64_t take;

		if (smr_xidx_next(&m->free, m->cursor, &e) &&
		    smr_xidx_next(&m->free, 0, &e))
			break;
		take = SMR_MIN(e.len, want);
		rc = smr_xidx_remove(&m->free, e.off, take);
		if (rc)
			return n ? (int)n : rc;
		ext[n].off = e.off;
		ext[n].len = take;
		m->cursor = e.off + take;
		want -= take;
		n++;
	}
	return (int)n;
}

static int flash_init(struct smr_alloc *a, const struct smr_alloc_ref *ref)
{
	return smr_xmod_init(a, ref, SMR_ALLOC_MOD_FLASH, true, flash_pick);
}

const struct smr_alloc_ops smr_flash_ops = {
	.name = "flash",
	.probe = flash_probe,
	.init = flash_init,
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
