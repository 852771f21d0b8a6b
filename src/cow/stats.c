/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stats.c - the figures smrfsctl stat and zones show: the engine's info and
 * space, the device's zones and the allocator's counters, gathered without
 * holding the engine lock (the zone cache answers from memory; the
 * allocator takes its own mutex per call).
 */
#include "cow/cow_priv.h"

#include <stdio.h>
#include <string.h>

static const char *kind_name(enum smr_dev_kind kind)
{
	switch (kind) {
	case SMR_DEV_KIND_ZLOOP: return "zloop";
	case SMR_DEV_KIND_ZBD: return "zbd";
	case SMR_DEV_KIND_FILE: return "file";
	case SMR_DEV_KIND_BDEV: return "bdev";
	default: return "unknown";
	}
}

/* Count the zones by condition; the managed ones are those at or after
 * data_start. */
static void fsstat_zones(struct smr_cow *c, struct smr_cow_fsstat *st)
{
	const struct smr_dev_info *info = c->info;

	st->nr_zones = info->nr_zones;
	st->nr_cnv_zones = info->nr_cnv_zones;
	st->max_open = info->max_open;
	st->max_active = info->max_active;
	st->zones_open = smr_dev_nr_open(c->dev);
	st->zones_active = smr_dev_nr_active(c->dev);
	for (uint32_t zno = 0; zno < info->nr_zones; zno++) {
		struct smr_zone z;

		if (smr_dev_zone(c->dev, zno, &z))
			continue;
		if (z.start + z.len <= c->sb.data_start) {
			st->zones_meta++;
			continue;
		}
		st->zone_size = z.len;
		st->zone_cap = z.cap;
		if (smr_zone_is_cnv(&z))
			continue;
		if (smr_zone_is_empty(&z))
			st->zones_free++;
		else if (smr_zone_is_full(&z))
			st->zones_full++;
	}
}

void smr_cow_fsstat(struct smr_cow *c, struct smr_cow_fsstat *st)
{
	struct smr_cow_stats es;

	memset(st, 0, sizeof(*st));
	smr_cow_info(c, &st->info);
	smr_cow_space(c, &st->space);
	st->read_only = smr_cow_is_read_only(c);
	smr_cow_get_stats(c, &es);
	st->commits = es.commits;
	st->nodes_written = es.nodes_written;
	st->log_records = es.log_records;
	if (!c->dev)
		return;

	snprintf(st->dev_kind, sizeof(st->dev_kind), "%s",
		 kind_name(c->info->kind));
	snprintf(st->backend, sizeof(st->backend), "%s", c->info->backend);
	st->zoned = c->info->zoned;
	st->host_aware = c->info->host_aware;
	st->rotational = c->info->rotational;
	if (c->info->zoned)
		fsstat_zones(c, st);

	if (c->alloc) {
		struct smr_alloc_stats as;

		_Static_assert(SMR_STREAM_NR == 4,
			       "smr_cow_fsstat.bytes_allocated has 4 streams");
		smr_alloc_stats(c->alloc, &as);
		for (int i = 0; i < SMR_STREAM_NR; i++)
			st->bytes_allocated[i] = as.bytes_allocated[i];
		st->bytes_freed = as.bytes_freed;
		st->nr_allocs = as.nr_allocs;
		st->zones_reset = as.zones_reset;
		st->zones_finished = as.zones_finished;
	}
	if (c->alloc) {
		struct smr_cow_gc_stats gs;

		smr_cow_gc_stats(c, &gs);
		st->has_gc = true;
		st->user_bytes = gs.user_bytes;
		st->device_bytes = gs.device_bytes;
		st->reloc_bytes = gs.reloc_bytes;
		st->gc_zones = gs.gc_zones;
		st->gc_runs = gs.gc_runs;
		st->gc_usecs = gs.gc_usecs;
	}
}

int smr_cow_zstat(struct smr_cow *c, uint32_t first, uint32_t n,
		  struct smr_cow_zstat *out)
{
	uint32_t nr, i;

	if (!c->dev || !c->info->zoned)
		return -EOPNOTSUPP;
	nr = c->info->nr_zones;
	if (first > nr)
		return -EINVAL;
	n = SMR_MIN(n, nr - first);
	for (i = 0; i < n; i++) {
		struct smr_cow_zstat *o = &out[i];
		struct smr_zone z;
		int64_t live = -1;

		memset(o, 0, sizeof(*o));
		smr_dev_zone(c->dev, first + i, &z);
		o->start = z.start;
		o->len = z.len;
		o->cap = z.cap;
		o->written = smr_zone_is_cnv(&z) ? z.cap : z.wp - z.start;
		o->type = z.type;
		o->cond = z.cond;
		if (z.start + z.len <= c->sb.data_start)
			o->flags |= SMR_COW_ZONE_META;
		else if (c->alloc)
			live = smr_alloc_zone_live(c->alloc, first + i);
		o->live = live < 0 ? -1 : live;
	}
	return (int)i;
}
