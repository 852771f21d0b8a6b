/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * zoned.c - the allocator for host-managed and host-aware zoned devices.
 *
 * Space is handed out only at allocation pointers: each managed zone has
 * one (ap, bytes from the zone start), which runs ahead of the device's
 * write pointer by what was handed out and not yet written. Callers write
 * in allocation order (alloc.h, "Write order"), so every extent lands at the
 * write pointer.
 *
 * Streams and zones. Each stream has its own open zone (its "slot"), so
 * that hot data, cold data, metadata and relocated data never share a zone
 * and zones die whole. The allocator never holds more zones open than the
 * device allows: the budget is the smaller of max_open and max_active, less
 * one for the caller's checkpoint log when there are sequential zones below
 * data_start. With a budget of 4 or more every stream has its own zone;
 * below that, streams share (3: relocation writes into the cold zone;
 * 2: all data in one zone, metadata in the other; 1: everything in one).
 * Shared streams also share a lock (a->stream_share).
 *
 * A zone's life: FREE (empty) -> OPEN (a slot allocates from it) -> FULL
 * (ap reached the capacity, or it was finished) -> reset -> FREE. A zone
 * whose tail is too short for a contiguous request is RETIRING: no longer a
 * slot's, finished as soon as its write pointer has caught up with ap.
 *
 * Live bytes are exact: alloc adds, free subtracts. A FULL zone with no live
 * byte is reset only by the committed() of the commit *after* the one that
 * saw it dead: until that one is durable, the checkpoint before the newest
 * (which open falls back to if the newest is damaged) may still reference
 * the zone's data, or hold its allocator state there.
 *
 * The reserve: data streams (hot, cold) cannot open a zone when only
 * `reserve` free zones are left; relocation can, down to the last free
 * zone, which is the commit's: a commit is what gives dead space back, so
 * it must always find room. Metadata may open that last zone for the
 * nodes, and then leaves room for the allocator's own state at its end.
 */
#include "alloc/alloc_int.h"

#include <endian.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ZS_FREE 0
#define ZS_OPEN 1
#define ZS_FULL 2
#define ZS_RETIRING 3
#define ZS_BAD 4 /* offline or read-only: not managed */

#define NO_SLOT UINT32_MAX
#define NOT_DEAD UINT64_MAX
#define RESERVE_ZONES 3
#define CLEAN_SLACK_ZONES 2 /* zoned_overhead */
#define CLEAN_SLACK_PART 32

/* One managed zone. */
struct zz {
	uint64_t start;
	uint64_t len;
	uint64_t cap;
	uint64_t ap;      /* allocated bytes from start; ap >= device wp */
	uint64_t live;    /* live bytes; live <= ap */
	uint64_t age_gen; /* generation of the last allocation */
	uint8_t state;    /* ZS_* */
	uint8_t stream;   /* last stream that allocated, SMR_ALLOC_NO_STREAM */
	bool cnv;         /* conventional zone: our ap is the write pointer */
	uint64_t dead_gen; /* the commit that found it full and dead, NOT_DEAD
			    * if none: reset once a later commit is durable */
	bool reset_failed; /* the last reset failed (logged once) */
	bool kept;         /* counted empty but still in use (logged once) */
};

/* The module's state. Protected by a->lock. */
struct zoned {
	uint32_t first;                  /* first managed zone number */
	uint32_t nz;                     /* managed zones */
	struct zz *z;
	uint64_t *freemap;               /* bit per free zone */
	uint32_t nfree;
	uint64_t live;                   /* the sum of the zones' live bytes */
	uint64_t capacity;               /* of the zones that are not bad */
	uint32_t reserve;                /* free zones data cannot take */
	uint32_t budget;                 /* zones we may hold open */
	uint32_t nopen;                  /* OPEN + RETIRING */
	uint32_t nretiring;              /* RETIRING */
	uint32_t slot[SMR_STREAM_NR];    /* open zone (index) per slot */
	uint64_t bs;
	uint64_t gen;                    /* generation being built */
	uint64_t finish_thresh;          /* retire a zone with less left */
	bool state_alloc;                /* commit is allocating its state */
	uint64_t state_bytes;            /* size of one persisted state */
	struct smr_extent state_ext[SMR_ALLOC_STATE_MAX_EXT];
	unsigned int state_nr;
	struct smr_alloc_stats st;
};

static bool is_data(enum smr_stream s)
{
	return s == SMR_STREAM_HOT || s == SMR_STREAM_COLD;
}

/* Every change of a zone's live bytes goes through here, so that their
 * sum (zoned_used) needs no walk over the zones. */
static void live_set(struct zoned *m, struct zz *z, uint64_t live)
{
	m->live = m->live - z->live + live;
	z->live = live;
}

static void free_set(struct zoned *m, uint32_t i)
{
	m->freemap[i / 64] |= 1ULL << (i % 64);
	m->nfree++;
}

static void free_clear(struct zoned *m, uint32_t i)
{
	m->freemap[i / 64] &= ~(1ULL << (i % 64));
	m->nfree--;
}

/* First free zone at or after @from, wrapping; UINT32_MAX if none. */
static uint32_t free_find(const struct zoned *m, uint32_t from)
{
	uint32_t words = SMR_DIV_ROUND_UP(m->nz, 64);

	for (uint32_t k = 0; k <= words; k++) {
		uint32_t w = (from / 64 + k) % words;
		uint64_t bits = m->freemap[w];

		if (k == 0)
			bits &= ~0ULL << (from % 64);
		if (bits)
			return w * 64 + (uint32_t)__builtin_ctzll(bits);
	}
	return UINT32_MAX;
}

/*
 * The free zone to open next: the first at or after @from, wrapping, but a
 * sequential one before any conventional one. On a zoned block device the
 * writes into a sequential zone are queued and gathered (write-behind,
 * dev.h), those into a conventional zone go out one by one and are waited
 * for.
 */
static uint32_t free_pick(const struct zoned *m, uint32_t from)
{
	uint32_t first = free_find(m, from), i = first;

	while (i != UINT32_MAX && m->z[i].cnv) {
		i = free_find(m, (i + 1) % m->nz);
		if (i == first)
			break;
	}
	return i;
}

static uint64_t dev_wp(struct smr_alloc *a, struct zoned *m, uint32_t i)
{
	struct zz *z = &m->z[i];

	if (z->cnv)
		return z->ap;
	return smr_dev_zone_wp(a->dev, m->first + i) - z->start;
}

static int zone_finish(struct smr_alloc *a, struct zoned *m, uint32_t i)
{
	struct zz *z = &m->z[i];
	int rc = 0;

	if (!z->cnv && dev_wp(a, m, i) < z->cap) {
		rc = smr_dev_zone_finish(a->dev, m->first + i);
		if (rc)
			smr_err("alloc: finishing zone %u: %s", m->first + i,
				strerror(-rc));
		else
			m->st.zones_finished++;
	}
	return rc;
}

/* Finish the retiring zones whose writes have all landed. */
static void finish_retired(struct smr_alloc *a, struct zoned *m)
{
	for (uint32_t i = 0; i < m->nz && m->nretiring; i++) {
		struct zz *z = &m->z[i];

		if (z->state != ZS_RETIRING || dev_wp(a, m, i) != z->ap)
			continue;
		if (zone_finish(a, m, i))
			continue;
		z->state = ZS_FULL;
		m->nopen--;
		m->nretiring--;
	}
}

/*
 * A zone holds data we do not know about (written behind our back, or after
 * the last checkpoint): all of it is dead. Finish it if partly written, so
 * that it does not hold an active zone. While the filesystem is being opened
 * nothing may be written yet (the open may be read-only, or a probe that
 * must leave the device as it found it), so there the zone only retires: it
 * counts as open until the first allocation or commit finishes it.
 */
static void zone_adopt_dead(struct smr_alloc *a, struct zoned *m, uint32_t i,
			    uint64_t wp, bool at_open)
{
	struct zz *z = &m->z[i];

	z->ap = wp;
	live_set(m, z, SMR_MIN(z->live, wp));
	z->state = ZS_FULL;
	if (wp >= z->cap || z->cnv)
		return;
	if (at_open) {
		z->state = ZS_RETIRING;
		m->nretiring++;
		m->nopen++;
		return;
	}
	zone_finish(a, m, i);
}

static void set_slots(struct smr_alloc *a, struct zoned *m)
{
	static const uint8_t share[5][SMR_STREAM_NR] = {
		{ 0, 0, 0, 0 }, /* unused */
		{ 0, 0, 0, 0 }, /* 1 zone: everything together */
		{ 0, 1, 1, 1 }, /* 2: metadata apart from data */
		{ 0, 1, 2, 2 }, /* 3: relocated data is cold */
		{ 0, 1, 2, 3 },
	};
	uint32_t k = SMR_MIN(m->budget, 4U);

	memcpy(a->stream_share, share[k], SMR_STREAM_NR);
}

/*
 * The free zones data cannot take. Cleaning needs a zone for its copies,
 * one for the nodes it makes dirty and the last for the allocator's state:
 * fewer, and a full device could not clean itself, whatever it had to
 * clean. Only a device too small to spare them (under 6 zones) has less.
 *
 * And as many zones more as the live metadata fills, up to a quarter of
 * the zones: a pass that moves data written in small pieces rewrites
 * about every node of their extent maps (each moved extent is in another
 * leaf), and only room for several zones' copies at once shares those
 * rewrites among them. Without it, on 64 zones of 16 MiB filled to 82%
 * of the size and overwritten in random 4 KiB writes, each pass moved one
 * zone, wrote as much metadata as it won and more, and within seconds a
 * commit found no room: the filesystem turned read-only. Recounted at
 * each commit; the size statfs reports shrinks as the metadata grows.
 */
static void reserve_update(struct zoned *m)
{
	uint32_t base = m->nz >= 2 * RESERVE_ZONES ? RESERVE_ZONES : m->nz / 4;
	uint64_t meta = 0, zcap = m->nz ? m->z[m->nz - 1].cap : 0;
	uint32_t extra;

	for (uint32_t i = 0; i < m->nz; i++)
		if (m->z[i].stream == SMR_STREAM_META)
			meta += m->z[i].live;
	extra = zcap ? (uint32_t)SMR_DIV_ROUND_UP(meta, zcap) : 0;
	m->reserve = SMR_MAX(base, SMR_MIN(base + extra, m->nz / 4));
}

/* Geometry, budget and an all-free table. */
static int zoned_setup(struct smr_alloc *a, struct zoned *m)
{
	const struct smr_dev_info *info = a->info;
	uint32_t limit = UINT32_MAX, outside = 0;

	m->first = a->data_start ? smr_dev_zone_no(a->dev, a->data_start) : 0;
	if (m->first >= info->nr_zones)
		return -EINVAL;
	m->nz = info->nr_zones - m->first;
	m->bs = info->block_size;
	m->gen = 1;
	for (int s = 0; s < SMR_STREAM_NR; s++)
		m->slot[s] = NO_SLOT;
	m->z = calloc(m->nz, sizeof(*m->z));
	m->freemap = calloc(SMR_DIV_ROUND_UP(m->nz, 64), sizeof(uint64_t));
	if (!m->z || !m->freemap)
		return -ENOMEM;

	if (info->max_open)
		limit = info->max_open;
	if (info->max_active)
		limit = SMR_MIN(limit, info->max_active);
	for (uint32_t i = 0; i < m->first; i++)
		if (smr_dev_zone_type(a->dev, i) != SMR_ZONE_TYPE_CNV)
			outside = 1;
	if (limit != UINT32_MAX && limit <= outside) {
		smr_err("alloc: zoned: the device allows %u open zones, none "
			"left for data", limit);
		return -EINVAL;
	}
	m->budget = limit == UINT32_MAX ? UINT32_MAX : limit - outside;
	reserve_update(m);
	set_slots(a, m);

	for (uint32_t i = 0; i < m->nz; i++) {
		struct smr_zone zn;
		struct zz *z = &m->z[i];

		smr_dev_zone(a->dev, m->first + i, &zn);
		z->start = zn.start;
		z->len = zn.len;
		z->cap = zn.cap;
		z->cnv = smr_zone_is_cnv(&zn);
		z->stream = SMR_ALLOC_NO_STREAM;
		z->dead_gen = NOT_DEAD;
		if (zn.cond == SMR_ZONE_COND_OFFLINE ||
		    zn.cond == SMR_ZONE_COND_READONLY) {
			z->state = ZS_BAD;
			continue;
		}
		z->state = ZS_FREE;
		free_set(m, i);
		m->capacity += z->cap;
	}
	m->state_bytes = smr_state_bytes(sizeof(struct smr_alloc_zone_d),
					 m->nz);
	if (m->nz && m->z[0].cap)
		m->finish_thresh = SMR_MAX(m->bs, SMR_MIN(m->z[0].cap / 16,
							   SMR_MIB));
	return 0;
}

/* Fresh filesystem: zones should be empty; any data in them is dead. */
static void zoned_fresh(struct smr_alloc *a, struct zoned *m)
{
	for (uint32_t i = 0; i < m->nz; i++) {
		struct zz *z = &m->z[i];
		uint64_t wp;

		if (z->state != ZS_FREE || z->cnv)
			continue;
		wp = dev_wp(a, m, i);
		if (!wp)
			continue;
		free_clear(m, i);
		zone_adopt_dead(a, m, i, wp, false);
		z->dead_gen = 0; /* nothing of this filesystem */
	}
}

/*
 * The state is lost (a->rebuild, fsck): the write pointers say which zones
 * hold data, and every written byte counts as live until smr_alloc_check()
 * lowers each counter to what the trees reference, so that no zone with
 * referenced data can be reset meanwhile. A conventional zone has no write
 * pointer: all of it may hold data. Writes nothing (partly written zones
 * retire and are finished by the first allocation or commit).
 */
static void zoned_rebuild(struct smr_alloc *a, struct zoned *m)
{
	if (a->keep_stats)
		m->st = *a->keep_stats;
	for (uint32_t i = 0; i < m->nz; i++) {
		struct zz *z = &m->z[i];
		uint64_t wp;

		if (z->state != ZS_FREE)
			continue;
		wp = z->cnv ? z->cap : dev_wp(a, m, i);
		if (!wp)
			continue;
		free_clear(m, i);
		live_set(m, z, wp);
		zone_adopt_dead(a, m, i, wp, true);
	}
}

/* Zone index of @off, or UINT32_MAX. */
static uint32_t zone_of(struct smr_alloc *a, struct zoned *m, uint64_t off)
{
	uint32_t zno = smr_dev_zone_no(a->dev, off);

	if (zno == UINT32_MAX || zno < m->first || zno - m->first >= m->nz)
		return UINT32_MAX;
	return zno - m->first;
}

/*
 * The bytes of a->unwritten (smr_alloc_open_cut) in each managed zone, in
 * *@by (NULL when there are none): the state counts them live, the device
 * never got them.
 */
static int unwritten_by_zone(struct smr_alloc *a, struct zoned *m,
			     uint64_t **by)
{
	*by = NULL;
	if (!a->nr_unwritten)
		return 0;
	*by = calloc(m->nz, sizeof(**by));
	if (!*by)
		return -ENOMEM;
	for (size_t k = 0; k < a->nr_unwritten; k++) {
		uint64_t off = a->unwritten[k].off;
		uint64_t end = off + a->unwritten[k].len;

		while (off < end) {
			uint32_t i = zone_of(a, m, off);
			uint64_t piece;

			if (i == UINT32_MAX)
				break;
			piece = SMR_MIN(end, m->z[i].start + m->z[i].len) - off;
			(*by)[i] += piece;
			off += piece;
		}
	}
	return 0;
}

static int zoned_load(struct smr_alloc *a, struct zoned *m,
		      const struct smr_alloc_ref *ref)
{
	struct smr_state_sum sum;
	struct smr_alloc_zone_d *ents = NULL;
	uint64_t *unw = NULL;
	uint64_t n = 0;
	int rc;

	rc = smr_state_read(a, SMR_ALLOC_MOD_ZONED, ref, sizeof(*ents), &sum,
			    (void **)&ents, &n, m->state_ext, &m->state_nr);
	if (rc)
		return rc;
	if (n != m->nz) {
		rc = smr_corrupt(ref->off, "allocator state: zone count");
		goto out;
	}
	m->st = sum.stats;
	a->user_bytes = sum.user_bytes;
	m->gen = ref->gen + 1;
	rc = unwritten_by_zone(a, m, &unw);
	if (rc)
		goto out;

	for (uint32_t i = 0; i < m->nz; i++) {
		const struct smr_alloc_zone_d *d = &ents[i];
		struct zz *z = &m->z[i];
		uint64_t ap = (uint64_t)le32toh(d->ap_blocks) * m->bs;
		uint64_t live = (uint64_t)le32toh(d->live_blocks) * m->bs;
		uint8_t fl = d->flags;
		uint64_t wp;

		if (live > ap || ap > z->cap || (fl & ~SMR_ALLOC_ZF_ALL) ||
		    d->pad || d->reserved) {
			char why[80];

			snprintf(why, sizeof(why),
				 "allocator state: bad entry of zone %u",
				 m->first + i);
			rc = smr_corrupt(ref->off, why);
			goto out;
		}
		if (z->state == ZS_BAD)
			continue;
		z->age_gen = le64toh(d->age_gen);
		z->stream = d->stream;
		if (unw)
			live -= SMR_MIN(live, unw[i]);
		live_set(m, z, live);
		/* Trust the device: data after the checkpoint is dead, and a
		 * write pointer never goes back. Bytes handed out but never
		 * written cannot be live. */
		wp = z->cnv ? ap : dev_wp(a, m, i);
		if (z->live > wp) {
			smr_debug("alloc: zone %u: %" PRIu64 " live bytes "
				  "were never written", m->first + i,
				  z->live - wp);
			live_set(m, z, wp);
		}
		if (wp == 0 && !(z->cnv && (fl & SMR_ALLOC_ZF_FULL))) {
			continue; /* stays FREE */
		}
		free_clear(m, i);
		z->ap = wp;
		if (wp == z->cap) {
			z->state = ZS_FULL;
		} else if (z->cnv && (fl & SMR_ALLOC_ZF_FULL)) {
			z->state = ZS_FULL;
		} else if (!(fl & SMR_ALLOC_ZF_OPEN) || ap == 0) {
			zone_adopt_dead(a, m, i, wp, true);
		} else {
			z->state = ZS_OPEN; /* reattached below or finished */
		}
	}
	/* Give each slot back its zone; finish open zones nobody owns. */
	for (int s = 0; s < SMR_STREAM_NR; s++) {
		uint32_t zno = sum.slot_zone[s], i;

		if (zno == SMR_ALLOC_NO_ZONE || zno < m->first ||
		    zno - m->first >= m->nz)
			continue;
		i = zno - m->first;
		if (m->z[i].state != ZS_OPEN || a->stream_share[s] != s ||
		    m->nopen >= m->budget || m->slot[s] != NO_SLOT)
			continue;
		m->slot[s] = i;
		m->nopen++;
	}
	for (uint32_t i = 0; i < m->nz; i++) {
		bool owned = false;

		if (m->z[i].state != ZS_OPEN)
			continue;
		for (int s = 0; s < SMR_STREAM_NR; s++)
			owned |= m->slot[s] == i;
		if (!owned)
			zone_adopt_dead(a, m, i, m->z[i].ap, true);
	}
	/* Its dead zones go once the next commit is durable (those still
	 * retiring once that commit has finished them): the checkpoint read
	 * may be the newest, whose predecessor may use them. */
	for (uint32_t i = 0; i < m->nz; i++)
		if ((m->z[i].state == ZS_FULL ||
		     m->z[i].state == ZS_RETIRING) && !m->z[i].live)
			m->z[i].dead_gen = ref->gen;
out:
	free(unw);
	free(ents);
	return rc;
}

static void zoned_fini(struct smr_alloc *a)
{
	struct zoned *m = a->priv;

	if (!m)
		return;
	free(m->z);
	free(m->freemap);
	free(m);
	a->priv = NULL;
}

static int zoned_init(struct smr_alloc *a, const struct smr_alloc_ref *ref)
{
	struct zoned *m = calloc(1, sizeof(*m));
	int rc;

	if (!m)
		return -ENOMEM;
	a->priv = m;
	if (!a->info->zoned) {
		rc = -EINVAL;
		goto out_fini;
	}
	rc = zoned_setup(a, m);
	if (rc)
		goto out_fini;
	if (ref)
		rc = zoned_load(a, m, ref);
	else if (a->rebuild)
		zoned_rebuild(a, m);
	else
		zoned_fresh(a, m);
	if (rc)
		goto out_fini;
	reserve_update(m);
	return 0;

out_fini:
	zoned_fini(a);
	return rc;
}

static int zoned_probe(const struct smr_dev_info *info, char *why,
		       size_t len)
{
	if (!info->zoned) {
		snprintf(why, len, "not a zoned device: no zones to manage");
		return 0;
	}
	snprintf(why, len, "%s zoned device: appending at write pointers",
		 info->host_aware ? "host-aware (driven as host-managed)" :
				    "host-managed");
	return 100;
}

/* Give slot @slot a free zone for @stream. */
static int open_zone(struct smr_alloc *a, struct zoned *m, uint32_t slot,
		     enum smr_stream stream, const struct smr_alloc_hint *hint)
{
	/* Data stops at the reserve; relocation leaves the last free zone
	 * to the commit, so that a commit (which is what frees space) can
	 * always be written: its nodes may take that zone, which then keeps
	 * room for the allocator's state at its end (zoned_alloc). */
	uint32_t need = is_data(stream) ? m->reserve + 1 :
			stream == SMR_STREAM_RELOC && m->reserve ? 2 : 1;
	uint32_t from = 0, i;

	if (m->nopen >= m->budget && m->nretiring)
		finish_retired(a, m);
	if (m->nopen >= m->budget)
		return -ENOSPC;
	if (hint && hint->near >= a->data_start &&
	    hint->near < a->info->capacity)
		from = smr_dev_zone_no(a->dev, hint->near) - m->first;
	for (;;) {
		uint64_t wp;

		if (m->nfree < need)
			return -ENOSPC;
		i = free_pick(m, from);
		if (i == UINT32_MAX)
			return -ENOSPC;
		free_clear(m, i);
		wp = dev_wp(a, m, i);
		if (!wp)
			break;
		/* Written behind our back: dead data, skip the zone. */
		smr_warn("alloc: free zone %u has a write pointer at +%" PRIu64,
			 m->first + i, wp);
		zone_adopt_dead(a, m, i, wp, false);
	}
	m->z[i].state = ZS_OPEN;
	m->z[i].ap = 0;
	live_set(m, &m->z[i], 0);
	m->z[i].dead_gen = NOT_DEAD;
	m->slot[slot] = i;
	m->nopen++;
	return 0;
}

/* Open (or retiring) zone @i is no longer allocated from. */
static void zone_unslot(struct zoned *m, uint32_t i)
{
	for (int s = 0; s < SMR_STREAM_NR; s++)
		if (m->slot[s] == i)
			m->slot[s] = NO_SLOT;
	m->nopen--;
}

/* Open zone @i has no room left: it leaves its slot, full. */
static void zone_filled(struct zoned *m, uint32_t i)
{
	m->z[i].state = ZS_FULL;
	zone_unslot(m, i);
}

static int zoned_alloc(struct smr_alloc *a, uint64_t len,
		       const struct smr_alloc_hint *hint,
		       enum smr_stream stream, struct smr_extent *ext,
		       unsigned int max_ext)
{
	struct zoned *m = a->priv;
	uint64_t done = 0;
	unsigned int n = 0;
	uint32_t slot;
	int rc;

	if (!len || len % m->bs || !max_ext ||
	    (unsigned int)stream >= SMR_STREAM_NR)
		return -EINVAL;
	slot = a->stream_share[stream];
	if (m->nretiring)
		finish_retired(a, m);
	while (done < len && n < max_ext) {
		uint32_t i = m->slot[slot];
		uint64_t take, off, left;
		struct zz *z;

		if (i == NO_SLOT) {
			rc = open_zone(a, m, slot, stream, hint);
			if (rc) {
				if (n)
					break;
				return rc;
			}
			i = m->slot[slot];
		}
		z = &m->z[i];
		left = z->cap - z->ap;
		/* A contiguous request that does not fit a short tail: retire
		 * the zone rather than split, if a zone is to spare. */
		if (hint && hint->contiguous && left < len - done &&
		    left < m->finish_thresh && z->ap &&
		    m->nopen < m->budget && m->nfree > m->reserve) {
			z->state = ZS_RETIRING;
			m->nretiring++;
			m->slot[slot] = NO_SLOT;
			continue;
		}
		/* No free zone left: keep room for the next state in the
		 * metadata zone, or no commit could ever give space back. */
		if (!m->nfree && !m->state_alloc &&
		    slot == a->stream_share[SMR_STREAM_META]) {
			if (left <= m->state_bytes) {
				if (n)
					break;
				return -ENOSPC;
			}
			left -= m->state_bytes;
		}
		take = SMR_MIN(len - done, left);
		off = z->start + z->ap;
		/* One extent per zone: no write may cross a zone. */
		ext[n].off = off;
		ext[n].len = take;
		n++;
		z->ap += take;
		live_set(m, z, z->live + take);
		z->age_gen = m->gen;
		z->stream = (uint8_t)stream;
		done += take;
		if (z->ap == z->cap)
			zone_filled(m, i); /* by the device with the last write */
	}
	m->st.bytes_allocated[hint && hint->reloc ? SMR_STREAM_RELOC :
			      stream] += done;
	m->st.nr_allocs++;
	return (int)n;
}

#define LIVE_CHECK 0
#define LIVE_SUB 1
#define LIVE_ADD 2

/* Walk [off, off + len) zone by zone: check that every piece is allocated
 * and has that many live bytes (LIVE_CHECK), or take them off (LIVE_SUB),
 * or put them back (LIVE_ADD). */
static int walk_live(struct smr_alloc *a, struct zoned *m, uint64_t off,
		     uint64_t len, int op)
{
	uint64_t end = off + len;

	while (off < end) {
		uint32_t i = zone_of(a, m, off);
		struct zz *z;
		uint64_t piece;

		if (i == UINT32_MAX)
			return -EINVAL;
		z = &m->z[i];
		piece = SMR_MIN(end, z->start + z->len) - off;
		if (op == LIVE_ADD)
			live_set(m, z, z->live + piece);
		else if (z->state == ZS_FREE || z->state == ZS_BAD ||
			 off + piece > z->start + z->ap || piece > z->live)
			return -EINVAL;
		else if (op == LIVE_SUB)
			live_set(m, z, z->live - piece);
		off += piece;
	}
	return 0;
}

static int zoned_free(struct smr_alloc *a, uint64_t off, uint64_t len)
{
	struct zoned *m = a->priv;
	int rc;

	if (!len || off % m->bs || len % m->bs || off < a->data_start ||
	    off >= a->info->capacity || len > a->info->capacity - off)
		return -EINVAL;
	rc = walk_live(a, m, off, len, LIVE_CHECK);
	if (rc) {
		smr_err("alloc: freeing %" PRIu64 "+%" PRIu64
			" that is not allocated", off, len);
		return rc;
	}
	walk_live(a, m, off, len, LIVE_SUB);
	m->st.bytes_freed += len;
	return 0;
}

/*
 * Data written after the state's commit, referenced again by a replayed
 * fsync log: init counted it dead (past the recorded allocation pointer,
 * below the write pointer); it is live.
 */
static int zoned_claim(struct smr_alloc *a, uint64_t off, uint64_t len)
{
	struct zoned *m = a->priv;
	uint64_t pos = off, end = off + len;

	if (!len || off % m->bs || len % m->bs || off < a->data_start ||
	    off >= a->info->capacity || len > a->info->capacity - off)
		return -EINVAL;
	/* Check every piece before changing any. */
	while (pos < end) {
		uint32_t i = zone_of(a, m, pos);
		struct zz *z;
		uint64_t piece;

		if (i == UINT32_MAX)
			return -EINVAL;
		z = &m->z[i];
		piece = SMR_MIN(end, z->start + z->len) - pos;
		if (z->state == ZS_BAD || pos + piece > z->start + z->cap ||
		    (!z->cnv && (z->state == ZS_FREE ||
				 pos + piece > z->start + z->ap)) ||
		    z->live + piece > z->cap) {
			smr_err("alloc: claiming %" PRIu64 "+%" PRIu64
				" that zone %u cannot hold", off, len,
				m->first + i);
			return -EINVAL;
		}
		pos += piece;
	}
	for (pos = off; pos < end;) {
		struct zz *z = &m->z[zone_of(a, m, pos)];
		uint64_t piece = SMR_MIN(end, z->start + z->len) - pos;

		if (z->cnv && z->state == ZS_FREE) {
			free_clear(m, (uint32_t)(z - m->z));
			z->state = ZS_FULL;
		}
		if (z->cnv) {
			z->ap = SMR_MAX(z->ap, pos + piece - z->start);
			/* Claimed to its end, a zone that was open would
			 * otherwise hand out empty extents at its end. */
			if (z->ap == z->cap && z->state == ZS_OPEN)
				zone_filled(m, (uint32_t)(z - m->z));
		}
		live_set(m, z, z->live + piece);
		z->dead_gen = NOT_DEAD;
		pos += piece;
	}
	return 0;
}

static void zoned_write_failed(struct smr_alloc *a, uint64_t off,
			       uint64_t len)
{
	struct zoned *m = a->priv;
	uint64_t end = off + len;

	while (off < end) {
		uint32_t i = zone_of(a, m, off);
		struct zz *z;
		uint64_t piece, wp;

		if (i == UINT32_MAX)
			return;
		z = &m->z[i];
		piece = SMR_MIN(end, z->start + z->len) - off;
		live_set(m, z, z->live - SMR_MIN(piece, z->live));
		off += piece;
		if (z->state == ZS_FREE || z->state == ZS_BAD)
			continue;
		/* The zone's ap is no longer where its write pointer will
		 * be: stop allocating from it. */
		if (z->state == ZS_OPEN || z->state == ZS_RETIRING) {
			zone_unslot(m, i);
			if (z->state == ZS_RETIRING)
				m->nretiring--;
		}
		wp = dev_wp(a, m, i);
		if (!z->cnv && wp == 0 && z->live == 0) {
			z->state = ZS_FREE;
			z->ap = 0;
			z->dead_gen = NOT_DEAD;
			free_set(m, i);
			continue;
		}
		z->state = ZS_FULL;
		if (!z->cnv && wp < z->cap)
			zone_finish(a, m, i);
	}
}

static void zone_to_disk(const struct zz *z, uint64_t bs, bool open,
			 struct smr_alloc_zone_d *d)
{
	memset(d, 0, sizeof(*d));
	d->age_gen = htole64(z->age_gen);
	d->live_blocks = htole32((uint32_t)(z->live / bs));
	d->ap_blocks = htole32((uint32_t)(z->ap / bs));
	d->stream = z->stream;
	if (z->state == ZS_FULL || z->state == ZS_RETIRING)
		d->flags = SMR_ALLOC_ZF_FULL;
	else if (open)
		d->flags = SMR_ALLOC_ZF_OPEN;
}

/*
 * Will the committed() of commit @gen reset conventional zone @i? Such a
 * zone is recorded free: a conventional zone has no write pointer to tell
 * a later open that it was reset, and its reset in memory would otherwise
 * reach the device only with the next state, so that a filesystem opened
 * in between found it dead rather than free. It died at an earlier
 * commit, so neither this checkpoint nor the one before it references it.
 */
static bool reset_due(struct smr_alloc *a, const struct zoned *m, uint32_t i,
		      uint64_t gen)
{
	const struct zz *z = &m->z[i];

	return z->cnv && z->state == ZS_FULL && !z->live && z->dead_gen < gen &&
	       !(a->in_use && a->in_use(a->in_use_arg, z->start,
					z->start + z->cap));
}

static int zoned_commit(struct smr_alloc *a, uint64_t gen,
			struct smr_alloc_ref *ref)
{
	struct zoned *m = a->priv;
	struct smr_extent ext[SMR_ALLOC_STATE_MAX_EXT];
	struct smr_alloc_zone_d *ents;
	struct smr_state_sum sum;
	int nr, rc;

	ents = calloc(m->nz, sizeof(*ents));
	if (!ents)
		return -ENOMEM;
	m->gen = gen;
	m->state_alloc = true;
	nr = smr_state_alloc(a, smr_state_bytes(sizeof(*ents), m->nz), ext);
	m->state_alloc = false;
	if (nr < 0) {
		rc = nr;
		goto out_free;
	}
	/* The old state is dead in the new one. */
	for (unsigned int k = 0; k < m->state_nr; k++)
		walk_live(a, m, m->state_ext[k].off, m->state_ext[k].len,
			  LIVE_SUB);

	reserve_update(m);
	smr_state_sum_init(a, &sum);
	sum.reserve_zones = m->reserve;
	for (int s = 0; s < SMR_STREAM_NR; s++)
		if (m->slot[s] != NO_SLOT)
			sum.slot_zone[s] = m->first + m->slot[s];
	for (uint32_t i = 0; i < m->nz; i++) {
		static const struct zz empty = {
			.stream = SMR_ALLOC_NO_STREAM };

		zone_to_disk(reset_due(a, m, i, gen) ? &empty : &m->z[i], m->bs,
			     m->z[i].state == ZS_OPEN, &ents[i]);
	}
	sum.stats = m->st;
	rc = smr_state_write(a, SMR_ALLOC_MOD_ZONED, gen, &sum, ents,
			     sizeof(*ents), m->nz, ext, (unsigned int)nr, ref);
	if (rc) {
		for (unsigned int k = 0; k < m->state_nr; k++)
			walk_live(a, m, m->state_ext[k].off,
				  m->state_ext[k].len, LIVE_ADD);
		smr_state_unalloc(a, ext, (unsigned int)nr);
		goto out_free;
	}
	memcpy(m->state_ext, ext, sizeof(ext[0]) * (unsigned int)nr);
	m->state_nr = (unsigned int)nr;
	for (uint32_t i = 0; i < m->nz; i++)
		if (m->z[i].state == ZS_FULL && !m->z[i].live &&
		    m->z[i].dead_gen == NOT_DEAD)
			m->z[i].dead_gen = gen;
	m->gen = gen + 1;
out_free:
	free(ents);
	return rc;
}

/*
 * Reset the zones the durable checkpoint no longer references. A reset that
 * fails is not an error of the commit (that is durable already): the zone
 * stays full and dead, holding nothing anyone needs, and is tried again
 * after each commit.
 */
static int zoned_committed(struct smr_alloc *a)
{
	struct zoned *m = a->priv;
	uint64_t durable = m->gen - 1; /* the commit just made durable */

	if (m->nretiring)
		finish_retired(a, m);
	for (uint32_t i = 0; i < m->nz; i++) {
		struct zz *z = &m->z[i];

		/* Dead as of an older commit only: the one before the
		 * durable checkpoint may use what died in the last. */
		if (z->dead_gen >= durable || z->state != ZS_FULL || z->live)
			continue;
		/* The counter says empty; if the layer above still names
		 * data here the counter is wrong, and a reset would lose
		 * it. Kept full (and dead) until a repair. */
		if (a->in_use && a->in_use(a->in_use_arg, z->start,
					   z->start + z->cap)) {
			if (!z->kept)
				smr_err("alloc: zone %u counts no live byte "
					"but holds referenced data: not reset "
					"(fsck.smrfs -y rebuilds the counters)",
					m->first + i);
			z->kept = true;
			continue;
		}
		z->kept = false;
		if (!z->cnv) {
			int r;

			smr_failpoint("commit.before_reset");
			r = smr_dev_zone_reset(a->dev, m->first + i);
			if (r) {
				if (!z->reset_failed)
					smr_warn("alloc: resetting zone %u: %s; "
						 "trying again after each commit",
						 m->first + i, strerror(-r));
				z->reset_failed = true;
				continue;
			}
			if (z->reset_failed)
				smr_info("alloc: zone %u reset", m->first + i);
			z->reset_failed = false;
		}
		z->state = ZS_FREE;
		z->ap = 0;
		z->age_gen = 0;
		z->stream = SMR_ALLOC_NO_STREAM;
		z->dead_gen = NOT_DEAD;
		free_set(m, i);
		m->st.zones_reset++;
	}
	return 0;
}

/* Bytes of the sorted extents @x[*@k...] inside [@zs, @ze); moves *@k past
 * those that end there. */
static uint64_t freed_in(const struct smr_extent *x, size_t n, size_t *k,
			 uint64_t zs, uint64_t ze)
{
	uint64_t b = 0;

	while (*k < n && x[*k].off + x[*k].len <= zs)
		(*k)++;
	for (size_t j = *k; j < n && x[j].off < ze; j++) {
		b += SMR_MIN(x[j].off + x[j].len, ze) - SMR_MAX(x[j].off, zs);
		if (x[j].off + x[j].len <= ze)
			*k = j + 1;
	}
	return b;
}

/*
 * What users cannot fill and keep overwriting (struct smr_space): the
 * reserve; a zone for each stream data never writes (metadata and
 * relocation keep an open zone each, whose tail is theirs); and dead space
 * spread over the full zones, which the cleaner needs to win zones back
 * at all: CLEAN_SLACK_ZONES zones, or a CLEAN_SLACK_PART-th of the
 * capacity if that is more. A device too small for that (a handful of
 * zones) gives half of what the rest leaves. The same whatever the state
 * of the zones, so that the size statfs reports stays put, but for the
 * reserve's zones for metadata (reserve_update).
 *
 * Measured with tests/fs/space_honest.sh (zones of 4 and 16 MiB, filled
 * to the size, then uniform random overwrites): with no slack, writes
 * fail with ENOSPC within a device size; with one zone they keep going
 * at a write amplification of 3.5 to 7.3, with two at 3.0 to 4.8.
 */
static uint64_t zoned_overhead(struct smr_alloc *a, const struct zoned *m,
			       const bool *data_slot, uint64_t capacity)
{
	uint64_t zcap = m->nz ? m->z[m->nz - 1].cap : 0, fixed, rest;
	uint32_t zones = m->reserve;

	for (int s = 0; s < SMR_STREAM_NR; s++)
		if (a->stream_share[s] == s && !data_slot[s])
			zones++;
	fixed = zones * zcap;
	rest = capacity > fixed ? capacity - fixed : 0;
	return SMR_MIN(capacity,
		       fixed + SMR_MAX(SMR_MIN(CLEAN_SLACK_ZONES * zcap,
					       rest / 2),
				       capacity / CLEAN_SLACK_PART));
}

/* Which slots data streams write to. */
static void data_slots(struct smr_alloc *a, bool *data_slot)
{
	for (int s = 0; s < SMR_STREAM_NR; s++)
		data_slot[s] = false;
	for (int s = 0; s < SMR_STREAM_NR; s++)
		if (is_data((enum smr_stream)s))
			data_slot[a->stream_share[s]] = true;
}

static void zoned_usage(struct smr_alloc *a, uint64_t *used, uint64_t *size)
{
	struct zoned *m = a->priv;
	bool data_slot[SMR_STREAM_NR];

	data_slots(a, data_slot);
	*used = m->live;
	*size = m->capacity - zoned_overhead(a, m, data_slot, m->capacity);
}

static void zoned_space_freeing(struct smr_alloc *a,
				const struct smr_extent *x, size_t n,
				struct smr_space *sp)
{
	struct zoned *m = a->priv;
	size_t k = 0;
	uint32_t reserved = 0;
	bool data_slot[SMR_STREAM_NR];
	uint64_t mixed = 0, zcap = m->nz ? m->z[m->nz - 1].cap : 0;

	/* What is left in an open zone is free only if a data stream writes
	 * there; metadata's and relocation's zones are part of the reserve. */
	data_slots(a, data_slot);
	memset(sp, 0, sizeof(*sp));
	for (uint32_t i = 0; i < m->nz; i++) {
		const struct zz *z = &m->z[i];
		uint64_t zs = smr_dev_zone_start(a->dev, m->first + i);
		uint64_t live = z->live;
		bool data = false;

		if (n && z->state != ZS_FREE && z->state != ZS_BAD) {
			/* Not inside SMR_MIN: it would run twice. */
			uint64_t freed = freed_in(x, n, &k, zs, zs + z->cap);

			live -= SMR_MIN(live, freed);
		}
		switch (z->state) {
		case ZS_BAD:
			continue;
		case ZS_FREE:
			if (reserved < m->reserve) {
				sp->reserved += z->cap;
				reserved++;
			} else {
				sp->free += z->cap;
			}
			break;
		case ZS_OPEN:
			for (int s = 0; s < SMR_STREAM_NR; s++)
				data |= m->slot[s] == i && data_slot[s];
			sp->used += live;
			sp->reclaimable += z->ap - live;
			if (data)
				sp->free += z->cap - z->ap;
			else
				sp->reserved += z->cap - z->ap;
			break;
		default: /* FULL, RETIRING: the tail is unwritable */
			sp->used += live;
			sp->reclaimable += z->cap - live;
			/* User data the cleaner would copy to relocation
			 * (what it moves from its own and the cold stream's
			 * zones goes to the cold stream, nodes go to the
			 * metadata stream: their tails are accounted). */
			if (live && live < z->cap && z->stream == SMR_STREAM_HOT)
				mixed += live;
			break;
		}
		sp->capacity += z->cap;
	}
	/* Getting the dead bytes of zones that still hold live user data
	 * back means copying that to the relocation stream, whose last zone
	 * is then left part empty, and relocation's zones are the cleaner's:
	 * that tail is not reclaimable for data, it is reserved. */
	if (mixed && zcap) {
		uint32_t r = m->slot[a->stream_share[SMR_STREAM_RELOC]];
		uint64_t room = r == NO_SLOT ? 0 : m->z[r].cap - m->z[r].ap;
		uint64_t tail = mixed <= room ? 0 :
				(zcap - (mixed - room) % zcap) % zcap;

		tail = SMR_MIN(tail, sp->reclaimable);
		sp->reclaimable -= tail;
		sp->reserved += tail;
	}
	sp->overhead = zoned_overhead(a, m, data_slot, sp->capacity);
	sp->reserve_taken = (uint64_t)(m->reserve - reserved) * zcap;
}

static void zoned_space(struct smr_alloc *a, struct smr_space *sp)
{
	zoned_space_freeing(a, NULL, 0, sp);
}

/* What cost-benefit makes of the ages at one pick: see gc_age_weigh(). */
struct gc_age {
	double power; /* of a data zone's age; metadata zones take 1/2 */
	double mean;  /* mean age + 1 of the full data zones, the unit of age */
};

static uint64_t zone_age(const struct zoned *m, const struct zz *z)
{
	return m->gen - SMR_MIN(z->age_gen, m->gen);
}

/*
 * How much age counts. Cost-benefit weighs the age (its square root) as a
 * sign that a zone's data is stable: cold data lies in old zones, and is
 * worth moving while its zone is fuller than a hot zone that will empty on
 * its own. That holds when zones decay at different rates. When the data
 * zones all decay at one rate (uniform overwrites), age says only what the
 * live fraction says already (older is emptier), and weighing it made
 * cost-benefit move older, fuller zones than greedy, which is the best
 * there is. Which case holds shows in the full data zones: with one rate,
 * ln(1/u) grows with the age along a line, and their correlation is high
 * (0.8 to 0.95 in bench_wa under uniform writes); under hot/cold writes it
 * is near zero or below (-0.3 to 0.2). So the age keeps its square root
 * while the correlation is at most 1/2 and fades to nothing at 1.
 * Metadata zones keep it whatever the data does: nodes are rewritten by
 * every commit that touches them and their zones empty fast on their own;
 * cleaning them greedily wrote a third more metadata (docs/design/cleaner.md).
 * The age is counted in units of the mean age of the data zones, so that
 * the two kinds of zone compare as before when both have the square root.
 */
static void gc_age_weigh(const struct zoned *m, struct gc_age *ga)
{
	double sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0, n = 0;
	double vx, vy, rho;

	ga->power = 0.5;
	ga->mean = 1;
	for (uint32_t i = 0; i < m->nz; i++) {
		const struct zz *z = &m->z[i];
		double x, y;

		if (z->state != ZS_FULL || !z->live || z->live == z->cap ||
		    z->stream == SMR_STREAM_META)
			continue;
		x = (double)zone_age(m, z);
		y = log((double)z->cap / (double)z->live);
		sx += x;
		sy += y;
		sxx += x * x;
		syy += y * y;
		sxy += x * y;
		n++;
	}
	/* Too few zones to tell a rate from chance. */
	if (n < 8)
		return;
	ga->mean = sx / n + 1;
	vx = n * sxx - sx * sx;
	vy = n * syy - sy * sy;
	if (vx <= 0 || vy <= 0)
		return;
	rho = (n * sxy - sx * sy) / sqrt(vx * vy);
	ga->power = 0.5 * SMR_MAX(0.0, SMR_MIN(1.0, 2 * (1 - rho)));
}

static double gc_score(const struct zoned *m, const struct zz *z,
		       enum smr_gc_policy policy, const struct gc_age *ga)
{
	double u = (double)z->live / (double)z->cap, age;

	if (policy == SMR_GC_GREEDY)
		return 1.0 - u;
	/* The square root at most: under uniform writes, before the power
	 * depended on them, the plain age made cost-benefit move a tenth
	 * more than greedy (docs/design/cleaner.md). */
	age = pow(((double)zone_age(m, z) + 1) / ga->mean,
		  z->stream == SMR_STREAM_META ? 0.5 : ga->power);
	return (1.0 - u) * age / (1.0 + u);
}

/* The best @max victims by @policy, best first, in @v; returns how many.
 * Kept sorted by insertion: @max is a handful. */
static int zoned_gc_pick_n(struct smr_alloc *a, enum smr_gc_policy policy,
			   struct smr_gc_victim *v, unsigned int max)
{
	struct zoned *m = a->priv;
	double best[SMR_GC_PICK_MAX];
	struct gc_age ga = { .power = 0.5, .mean = 1 };
	unsigned int n = 0;

	max = SMR_MIN(max, (unsigned int)SMR_GC_PICK_MAX);
	if (policy != SMR_GC_GREEDY)
		gc_age_weigh(m, &ga);
	for (uint32_t i = 0; i < m->nz && max; i++) {
		const struct zz *z = &m->z[i];
		unsigned int k;
		double score;

		/* Zones with no live byte come back by commit alone. */
		if (z->state != ZS_FULL || !z->live || z->live == z->cap)
			continue;
		score = gc_score(m, z, policy, &ga);
		if (n == max && score <= best[n - 1])
			continue;
		k = n < max ? n++ : n - 1;
		for (; k > 0 && best[k - 1] < score; k--) {
			best[k] = best[k - 1];
			v[k] = v[k - 1];
		}
		best[k] = score;
		v[k].zno = m->first + i;
		v[k].stream = z->stream;
		v[k].live = z->live;
		v[k].cap = z->cap;
	}
	return (int)n;
}

static int zoned_gc_pick(struct smr_alloc *a, enum smr_gc_policy policy,
			 uint32_t *zno)
{
	struct smr_gc_victim v;

	if (!zoned_gc_pick_n(a, policy, &v, 1))
		return -ENOENT;
	*zno = v.zno;
	return 0;
}

static int64_t zoned_zone_live(struct smr_alloc *a, uint32_t zno)
{
	struct zoned *m = a->priv;

	if (zno < m->first || zno - m->first >= m->nz)
		return -EINVAL;
	return (int64_t)m->z[zno - m->first].live;
}

static void zoned_stats(struct smr_alloc *a, struct smr_alloc_stats *st)
{
	struct zoned *m = a->priv;

	*st = m->st;
}

const struct smr_alloc_ops smr_zoned_ops = {
	.name = "zoned",
	.probe = zoned_probe,
	.init = zoned_init,
	.fini = zoned_fini,
	.alloc = zoned_alloc,
	.free = zoned_free,
	.write_failed = zoned_write_failed,
	.commit = zoned_commit,
	.committed = zoned_committed,
	.space = zoned_space,
	.space_freeing = zoned_space_freeing,
	.gc_pick = zoned_gc_pick,
	.zone_live = zoned_zone_live,
	.stats = zoned_stats,
	.gc_pick_n = zoned_gc_pick_n,
	.claim = zoned_claim,
	.usage = zoned_usage,
};
