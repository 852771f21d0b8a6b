/* SPDX-License-Identifier: GPL-2.0-or-later */
/* stats.c - the engine's figures passed up to the FUSE adapter (ns.h). */
#include "namespace/ns_priv.h"

int smr_ns_fsstat(struct smr_ns *ns, struct smr_cow_fsstat *st,
		  uint64_t *nr_inodes)
{
	smr_cow_fsstat(ns->cow, st);
	if (nr_inodes) {
		pthread_mutex_lock(&ns->lock);
		*nr_inodes = ns->nr_inodes;
		pthread_mutex_unlock(&ns->lock);
	}
	return 0;
}

int smr_ns_zstat(struct smr_ns *ns, uint32_t first, uint32_t n,
		 struct smr_cow_zstat *out)
{
	return smr_cow_zstat(ns->cow, first, n, out);
}
