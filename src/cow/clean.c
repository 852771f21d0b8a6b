/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * clean.c - the cleaner: the reverse map of data extents, relocation of a
 * zone's live nodes and data through the COW path, victim selection,
 * foreground cleaning on ENOSPC and the background thread.
 *
 * How a zone is cleaned (docs/design/cleaner.md has the reasoning):
 *
 *   1. nodes: every block of the zone that holds a node of ours (magic,
 *      checksum, address, UUID) is live iff descending its tree by its first
 *      key to its level reaches its address; a live node is made dirty, so
 *      the next commit writes it elsewhere;
 *   2. data: the reverse map names the owner of every extent in the zone;
 *      the cleaner copies the extent, in bounded chunks and with no engine
 *      lock held across the I/O, to the relocation stream, records the copy
 *      in the reverse map, and asks the layer above (the relocation hook) to
 *      point its item at the copy if it still points at the original;
 *   3. commit: the moved nodes and items become durable, the originals are
 *      released; a second commit hands them to the allocator, which counts
 *      the zone empty, and once a third checkpoint is durable resets the
 *      zone. Neither recoverable checkpoint then references the zone.
 */
#include "cow/cow_priv.h"

#include <endian.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Data moved per step: bounds the buffer and the time a step takes. */
#define CLEAN_CHUNK (1024 * 1024ULL)
/* Reverse-map entries taken per look at the tree. */
#define CLEAN_BATCH 64
/* Zones one cleaning call takes at most; a pass (one set of commits)
 * takes as many of them as there is room for their copies. */
#define GC_PASS_ZONES 16
/* A background pass runs only if its victims' dead bytes make up at least
 * this part of a zone: a pass pays its commits and its node writes however
 * little it wins (foreground cleaning, which a writer waits for, takes what
 * there is). */
#define GC_MIN_WIN_PART 4
/* The default low watermark: clean once no zone is free to data beyond
 * the reserve, which already holds the room a pass needs; every free zone
 * kept ahead of need is space the cleaner cannot let zones die in
 * (docs/design/cleaner.md). */
#define GC_LOW_ZONES 1
/* What the default high watermark adds to the low one plus a zone, in
 * bytes: a pass then wins enough to be worth its three commits also on
 * small zones (docs/design/cleaner.md). At least a zone, at most a
 * GC_SPAN_PART-th of them: on a small device free zones held back are
 * dearer than commits. The zone more keeps the high watermark where it
 * was when the low one was two: starting later and stopping there makes
 * fewer, larger passes. */
#define GC_SPAN_BYTES (16 * SMR_MIB)
#define GC_SPAN_PART 64
/* Zone bytes read per step of the node scan. */
#define SCAN_CHUNK (1024 * 1024ULL)

/* ========================================================================
 * The reverse map
 * ======================================================================== */

struct rmap_ent {
	uint64_t off, len;
	struct smr_key owner; /* for the byte at off */
};

static void rmap_key(uint64_t off, struct smr_nkey *k)
{
	k->objid = off;
	k->type = SMR_RMAP_T_EXTENT;
	k->offset = 0;
}

/* The engine's check: the reverse map's one item type and key form. The
 * value is rmap_decode's to judge (and the reverse-map check's to count). */
static const char *rmap_check_item(const struct smr_key *k, const void *v,
				   size_t len)
{
	(void)v;
	(void)len;
	if (k->type != SMR_RMAP_T_EXTENT)
		return "not a reverse-map item type";
	return k->offset ? "reverse-map key with an offset" : NULL;
}

static bool rmap_key_str(const struct smr_key *k, char *buf, size_t len)
{
	if (k->type != SMR_RMAP_T_EXTENT || k->offset)
		return false;
	snprintf(buf, len, "(extent at byte %" PRIu64 ")", k->objid);
	return true;
}

static const struct smr_tree_type rmap_tree_type = {
	.id = SMR_TREE_RMAP,
	.name = "rmap",
	.max_item = sizeof(struct smr_rmap_d),
	.derived = true, /* from the extent items (smr_ns_check_rmap) */
	.check_item = rmap_check_item,
	.key_str = rmap_key_str,
};

int smr_rmap_register(struct smr_cow *c)
{
	return smr_cow_tree_register(c, &rmap_tree_type);
}

static int rmap_decode(const struct smr_nkey *k, const void *v, size_t len,
		       struct rmap_ent *e)
{
	struct smr_rmap_d d;

	if (len != sizeof(d) || k->type != SMR_RMAP_T_EXTENT)
		return smr_corrupt(k->objid, "reverse map: bad item");
	memcpy(&d, v, sizeof(d));
	e->off = k->objid;
	e->len = le64toh(d.len);
	e->owner.objid = le64toh(d.owner_objid);
	e->owner.type = d.owner_type;
	e->owner.offset = le64toh(d.owner_offset);
	if (!e->len || e->off + e->len < e->off)
		return smr_corrupt(k->objid, "reverse map: bad extent");
	return 0;
}

static int rmap_put_locked(struct smr_cow *c, const struct rmap_ent *e)
{
	struct smr_rmap_d d;
	struct smr_nkey k;

	memset(&d, 0, sizeof(d));
	d.len = htole64(e->len);
	d.owner_objid = htole64(e->owner.objid);
	d.owner_type = e->owner.type;
	d.owner_offset = htole64(e->owner.offset);
	rmap_key(e->off, &k);
	return smr_bt_modify_locked(c, SMR_TREE_RMAP, &k, &d, sizeof(d),
				    SMR_BT_PUT);
}

int smr_rmap_put_locked(struct smr_cow *c, uint64_t off, uint64_t len,
			const struct smr_key *owner)
{
	struct rmap_ent e = { .off = off, .len = len, .owner = *owner };

	return rmap_put_locked(c, &e);
}

/* ------------------------------------------------------------------------
 * Pending entries
 *
 * A data write's entry waits in memory (struct smr_cow, rp_*) until the
 * commit, and a free of data written since the last commit takes it out
 * of there rather than the tree: under random overwrites most entries
 * never reach the tree, and those that do go in address order. Entries
 * are found by the 64 KiB chunk they lie in (one chunk each: an extent
 * that crosses a chunk boundary goes to the tree at once). Every reader
 * of the tree puts them in first (smr_rmap_sync, smr_rmap_flush_locked),
 * so nothing but the cost of the writes changes.
 * ------------------------------------------------------------------------ */

#define RP_SHIFT 16
#define RP_BUCKETS 8192
/* Entries held at most (48 bytes each); past it, writes go to the tree. */
#define RP_MAX 65536
#define RP_NONE UINT32_MAX

struct smr_rmap_pend {
	struct rmap_ent e;
	uint32_t next;   /* in its chain, or in rp_free */
};

static uint32_t *rp_chain(struct smr_cow *c, uint64_t chunk)
{
	return &c->rp_hash[(chunk * 0x9e3779b97f4a7c15ULL) >> 51];
}

/* Keep @e pending. 1 if it is not (crosses a chunk, or no room). */
static int rp_add(struct smr_cow *c, const struct rmap_ent *e)
{
	uint64_t chunk = e->off >> RP_SHIFT;
	uint32_t *head, i;

	_Static_assert(RP_BUCKETS == 1 << (64 - 51), "rp_chain's shift");
	if ((e->off + e->len - 1) >> RP_SHIFT != chunk)
		return 1;
	if (!c->rp_hash) {
		c->rp_hash = malloc(RP_BUCKETS * sizeof(*c->rp_hash));
		if (!c->rp_hash)
			return 1;
		memset(c->rp_hash, 0xff, RP_BUCKETS * sizeof(*c->rp_hash));
		c->rp_free = RP_NONE;
	}
	if (c->rp_free != RP_NONE) {
		i = c->rp_free;
		c->rp_free = c->rp[i].next;
	} else {
		if (c->rp_n == c->rp_cap) {
			uint32_t cap = c->rp_cap ? 2 * c->rp_cap : 1024;
			void *x;

			if (c->rp_cap >= RP_MAX)
				return 1;
			x = realloc(c->rp, cap * sizeof(*c->rp));
			if (!x)
				return 1;
			c->rp = x;
			c->rp_cap = cap;
		}
		i = c->rp_n++;
	}
	head = rp_chain(c, chunk);
	c->rp[i].e = *e;
	c->rp[i].next = *head;
	*head = i;
	__atomic_store_n(&c->rp_count, c->rp_count + 1, __ATOMIC_RELAXED);
	return 0;
}

static void rp_release(struct smr_cow *c, uint32_t i)
{
	c->rp[i].e.len = 0;
	c->rp[i].next = c->rp_free;
	c->rp_free = i;
	__atomic_store_n(&c->rp_count, c->rp_count - 1, __ATOMIC_RELAXED);
}

/*
 * Cut [@off, @end) out of the pending entries of @chunk: *@covered grows
 * by what they held. A cut from the middle of an entry leaves two; if the
 * second cannot be kept pending it goes to the tree.
 */
static int rp_cut_chunk(struct smr_cow *c, uint64_t chunk, uint64_t off,
			uint64_t end, uint64_t *covered)
{
	uint32_t *pp = rp_chain(c, chunk);

	while (*pp != RP_NONE) {
		uint32_t i = *pp;
		struct rmap_ent *e = &c->rp[i].e, right;
		uint64_t eend = e->off + e->len, os, oe;

		if (e->off >> RP_SHIFT != chunk || e->off >= end ||
		    eend <= off) {
			pp = &c->rp[i].next;
			continue;
		}
		os = SMR_MAX(e->off, off);
		oe = SMR_MIN(eend, end);
		*covered += oe - os;
		if (os == e->off && oe == eend) {
			*pp = c->rp[i].next;
			rp_release(c, i);
			continue;
		}
		if (oe < eend) {
			right = *e;
			right.off = oe;
			right.len = eend - oe;
			right.owner.offset += oe - e->off;
		}
		if (os == e->off) {
			*e = right;
		} else {
			e->len = os - e->off;
			/* rp_add may move the array: e is not used again. */
			if (oe < eend && rp_add(c, &right)) {
				int rc = rmap_put_locked(c, &right);

				if (rc)
					return rc;
			}
		}
		pp = &c->rp[i].next;
	}
	return 0;
}

/* Cut [@off, @off + @len) out of the pending entries; *@covered: the bytes
 * they held of it (the rest is the tree's to trim). */
static int rp_cut(struct smr_cow *c, uint64_t off, uint64_t len,
		  uint64_t *covered)
{
	uint64_t end = off + len;
	int rc = 0;

	*covered = 0;
	if (!c->rp_count)
		return 0;
	if (((end - 1) >> RP_SHIFT) - (off >> RP_SHIFT) >= c->rp_count) {
		/* A long range and few entries: take each that meets it
		 * (the second half of a split does not meet the range). */
		for (uint32_t i = 0; i < c->rp_n && !rc; i++) {
			const struct rmap_ent *e = &c->rp[i].e;

			if (e->len && e->off < end && e->off + e->len > off)
				rc = rp_cut_chunk(c, e->off >> RP_SHIFT, off,
						  end, covered);
		}
		return rc;
	}
	for (uint64_t ch = off >> RP_SHIFT; ch <= (end - 1) >> RP_SHIFT && !rc;
	     ch++)
		rc = rp_cut_chunk(c, ch, off, end, covered);
	return rc;
}

/* Does a pending entry meet [@start, @end)? */
static bool rp_meets(const struct smr_cow *c, uint64_t start, uint64_t end)
{
	for (uint32_t i = 0; c->rp_count && i < c->rp_n; i++) {
		const struct rmap_ent *e = &c->rp[i].e;

		if (e->len && e->off < end && e->off + e->len > start)
			return true;
	}
	return false;
}

static int rp_cmp(const void *a, const void *b)
{
	const struct rmap_ent *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

/*
 * Join the sorted entries @v[@n] that continue one another on the device
 * and in their owner, within a zone: a file written in small pieces gets
 * an entry per run rather than per write, so the map stays small and the
 * cleaner moves the run in one piece. Returns the new count.
 */
static uint32_t rp_join(struct smr_cow *c, struct rmap_ent *v, uint32_t n)
{
	uint32_t k = 0;

	for (uint32_t i = 1; i < n; i++) {
		struct rmap_ent *p = &v[k];

		if (p->off + p->len == v[i].off &&
		    p->owner.objid == v[i].owner.objid &&
		    p->owner.type == v[i].owner.type &&
		    p->owner.offset + p->len == v[i].owner.offset &&
		    smr_dev_zone_no(c->dev, p->off) ==
			    smr_dev_zone_no(c->dev, v[i].off))
			p->len += v[i].len;
		else
			v[++k] = v[i];
	}
	return n ? k + 1 : 0;
}

int smr_rmap_flush_locked(struct smr_cow *c)
{
	struct rmap_ent *v;
	uint32_t n = 0;
	int rc = 0;

	if (!c->rp_count)
		return 0;
	v = malloc(c->rp_count * sizeof(*v));
	if (!v) {
		rc = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < c->rp_n; i++)
		if (c->rp[i].e.len)
			v[n++] = c->rp[i].e;
	/* In address order: each put lands next to the one before. */
	qsort(v, n, sizeof(*v), rp_cmp);
	n = rp_join(c, v, n);
	for (uint32_t i = 0; i < n && !rc; i++)
		rc = rmap_put_locked(c, &v[i]);
	free(v);
out:
	if (rc) {
		smr_cow_set_error(c, rc, "putting reverse-map entries");
		return rc;
	}
	memset(c->rp_hash, 0xff, RP_BUCKETS * sizeof(*c->rp_hash));
	c->rp_n = 0;
	c->rp_free = RP_NONE;
	__atomic_store_n(&c->rp_count, 0, __ATOMIC_RELAXED);
	return 0;
}

int smr_rmap_sync(struct smr_cow *c, uint32_t tree)
{
	int rc;

	if (tree != SMR_TREE_RMAP ||
	    !__atomic_load_n(&c->rp_count, __ATOMIC_RELAXED))
		return 0;
	pthread_rwlock_wrlock(&c->lock);
	rc = smr_rmap_flush_locked(c);
	pthread_rwlock_unlock(&c->lock);
	return rc;
}

void smr_rmap_pend_fini(struct smr_cow *c)
{
	free(c->rp);
	free(c->rp_hash);
	c->rp = NULL;
	c->rp_hash = NULL;
	c->rp_n = c->rp_cap = c->rp_count = 0;
}

int smr_rmap_trim_locked(struct smr_cow *c, uint64_t off, uint64_t len)
{
	uint64_t end = off + len, covered;
	int rc = rp_cut(c, off, len, &covered);

	/* What was pending is all there was of it: the tree holds no entry
	 * where a pending one lies. */
	if (rc || covered == len)
		return rc;
	while (end > off) {
		struct smr_nkey from, found;
		uint8_t v[sizeof(struct smr_rmap_d)];
		size_t vlen = sizeof(v);
		struct rmap_ent e, piece;
		uint64_t eend;

		from.objid = end - 1;
		from.type = 0xff;
		from.offset = UINT64_MAX;
		rc = smr_bt_step_locked(c, SMR_TREE_RMAP, &from, false, &found,
					v, &vlen);
		if (rc == -ENOENT)
			return 0;
		if (rc)
			return rc;
		rc = rmap_decode(&found, v, vlen, &e);
		if (rc)
			return rc;
		eend = e.off + e.len;
		if (eend <= off)
			return 0;
		/* An entry that starts before the range keeps its key: its
		 * value is rewritten in place rather than deleted and put
		 * again (a random overwrite trims the middle of an entry). */
		if (e.off < off) {
			piece = e;
			piece.len = off - e.off;
			rc = rmap_put_locked(c, &piece);
		} else {
			rc = smr_bt_delete_locked(c, SMR_TREE_RMAP, &found);
		}
		if (rc)
			return rc;
		if (eend > end) {
			piece = e;
			piece.off = end;
			piece.len = eend - end;
			piece.owner.offset += end - e.off;
			rc = rmap_put_locked(c, &piece);
			if (rc)
				return rc;
		}
		if (e.off < off)
			return 0;
		end = e.off;
	}
	return 0;
}

/* ------------------------------------------------------------------------
 * fsck: the map read whole and rebuilt (the checking is the namespace's,
 * which knows what the owners are)
 * ------------------------------------------------------------------------ */

/*
 * The allocator's safety net (smr_alloc_set_in_use): does an entry of the
 * map name data in [@start, @end)? Asked at commit, c->lock held, before a
 * zone counted empty is reset. An entry names live data (entries go with
 * the data they describe, smr_cow_data_free), so a counter that reached
 * zero under one is wrong. A map that cannot be read answers yes: keeping
 * a zone loses nothing.
 */
static bool rmap_in_use(void *arg, uint64_t start, uint64_t end)
{
	struct smr_cow *c = arg;
	struct smr_nkey from, found;
	uint8_t v[sizeof(struct smr_rmap_d)];
	size_t vlen = sizeof(v);
	struct rmap_ent e;
	int rc;

	/* The last entry starting before @end: it or nothing. */
	from.objid = end - 1;
	from.type = 0xff;
	from.offset = UINT64_MAX;
	rc = smr_bt_step_locked(c, SMR_TREE_RMAP, &from, false, &found, v,
				&vlen);
	if (rp_meets(c, start, end))
		return true;
	if (rc == -ENOENT)
		return false;
	if (!rc)
		rc = rmap_decode(&found, v, vlen, &e);
	if (rc)
		return true;
	return e.off + e.len > start;
}

void smr_rmap_guard(struct smr_cow *c)
{
	if (c->alloc && c->info->zoned)
		smr_alloc_set_in_use(c->alloc, rmap_in_use, c);
}

/* Does [@off, @off + @len) lie in one extent of @l? */
static bool rmap_in_list(const struct smr_xlist *l, uint64_t off, uint64_t len)
{
	for (size_t i = 0; i < l->n; i++)
		if (off >= l->x[i].off &&
		    off + len <= l->x[i].off + l->x[i].len)
			return true;
	return false;
}

struct rmap_iter {
	struct smr_cow *c;
	smr_cow_rmap_fn fn;
	void *arg;
	uint64_t bad;
};

static int rmap_iter_item(void *arg, const struct smr_key *k, const void *v,
			  size_t len)
{
	struct rmap_iter *it = arg;
	struct smr_nkey nk = { k->objid, k->type, k->offset };
	struct smr_cow_rmap_entry ce;
	struct rmap_ent e;

	if (rmap_decode(&nk, v, len, &e)) {
		it->bad++;
		return 0;
	}
	ce.off = e.off;
	ce.len = e.len;
	ce.owner = e.owner;
	ce.released = rmap_in_list(&it->c->free_prev, e.off, e.len) ||
		      rmap_in_list(&it->c->free_cur, e.off, e.len) ||
		      rmap_in_list(&it->c->cut, e.off, e.len);
	return it->fn(it->arg, &ce);
}

int smr_cow_rmap_iterate(struct smr_cow *c, smr_cow_rmap_fn fn, void *arg,
			 uint64_t *nr_bad)
{
	struct smr_nkey from = { 0, 0, 0 };
	struct smr_nkey to = { UINT64_MAX, UINT8_MAX, UINT64_MAX };
	struct rmap_iter it = { .c = c, .fn = fn, .arg = arg };
	int rc;

	if (!c->alloc)
		return -EOPNOTSUPP;
	rc = smr_rmap_sync(c, SMR_TREE_RMAP);
	if (rc)
		return rc;
	pthread_rwlock_rdlock(&c->lock);
	rc = smr_bt_iterate_locked(c, SMR_TREE_RMAP, &from, &to,
				   rmap_iter_item, &it);
	pthread_rwlock_unlock(&c->lock);
	if (nr_bad)
		*nr_bad = it.bad;
	return rc < 0 ? rc : 0;
}

int smr_cow_rmap_rebuild(struct smr_txn *t, const struct smr_cow_rmap_entry *e,
			 size_t n)
{
	struct smr_cow *c = t->c;
	uint64_t bs = c->sb.block_size;
	int rc = 0;

	if (!c->alloc)
		return -EOPNOTSUPP;
	for (size_t i = 0; i < n; i++) {
		if (!e[i].len || e[i].off % bs || e[i].len % bs ||
		    e[i].off < c->sb.data_start ||
		    e[i].len > c->sb.capacity - e[i].off ||
		    (i && e[i - 1].off + e[i - 1].len > e[i].off))
			return -EINVAL;
	}
	pthread_rwlock_wrlock(&c->lock);
	if (cow_read_only(c)) {
		rc = -EROFS;
		goto out;
	}
	/* The pending entries too: put in, then out with the rest. */
	rc = smr_rmap_flush_locked(c);
	if (rc)
		goto out;
	/* Every item out, from the first on. */
	for (;;) {
		struct smr_nkey from = { 0, 0, 0 }, found;

		rc = smr_bt_step_locked(c, SMR_TREE_RMAP, &from, true, &found,
					NULL, NULL);
		if (rc == -ENOENT) {
			rc = 0;
			break;
		}
		if (!rc)
			rc = smr_bt_delete_locked(c, SMR_TREE_RMAP, &found);
		if (rc)
			goto out;
	}
	for (size_t i = 0; i < n && !rc; i++) {
		struct rmap_ent re = { .off = e[i].off, .len = e[i].len,
				       .owner = e[i].owner };

		rc = rmap_put_locked(c, &re);
	}
	c->changed = true;
out:
	pthread_rwlock_unlock(&c->lock);
	return rc;
}


int smr_cow_data_write_owned(struct smr_cow *c, enum smr_data_temp temp,
			     uint64_t near, const struct smr_key *owner,
			     const void *buf, uint64_t len,
			     struct smr_data_extent *ext, unsigned int max,
			     const struct smr_cow_held *held)
{
	uint64_t done = 0;
	int n, rc = 0;

	n = smr_cow_data_write_raw(c, temp, near, buf, len, ext, max, held);
	if (n <= 0)
		return n;
	pthread_rwlock_wrlock(&c->lock);
	for (int i = 0; i < n && !rc; i++) {
		struct rmap_ent e = { .off = ext[i].off, .len = ext[i].len,
				      .owner = *owner };

		e.owner.offset += done;
		if (cow_read_only(c))
			rc = -EROFS;
		else if (rp_add(c, &e))
			rc = rmap_put_locked(c, &e);
		else
			c->changed = true;
		done += ext[i].len;
	}
	if (rc) {
		/* Nothing references the data: give it back at once. */
		for (int i = 0; i < n; i++) {
			smr_rmap_trim_locked(c, ext[i].off, ext[i].len);
			smr_alloc_free(c->alloc, ext[i].off, ext[i].len);
		}
	}
	pthread_rwlock_unlock(&c->lock);
	if (rc)
		return rc;
	smr_log_written(c, ext, n, buf, owner);
	smr_cow_gc_kick(c, done);
	return n;
}

void smr_cow_set_relocate_hook(struct smr_cow *c, smr_cow_relocate_fn fn,
			       void *arg)
{
	/* Not while a pass uses the old hook. */
	pthread_mutex_lock(&c->clean_lock);
	c->reloc_fn = fn;
	c->reloc_arg = arg;
	pthread_mutex_unlock(&c->clean_lock);
}

/* ========================================================================
 * Relocation
 * ======================================================================== */

/* Give back a copy nobody references (released with the next commit). */
static int drop_copy(struct smr_cow *c, uint64_t off, uint64_t len)
{
	struct smr_txn *t;
	int rc = smr_txn_begin(c, &t);

	if (rc)
		return rc;
	rc = smr_cow_data_free(t, off, len);
	smr_txn_end(t);
	return rc;
}

/*
 * Move [@off, @off + @len) of reverse-map entry @e (at most CLEAN_CHUNK
 * bytes) to stream @dest: SMR_STREAM_RELOC, or SMR_STREAM_COLD for data
 * that already survived a cleaning (counted as relocated all the same;
 * when the cold stream cannot open a zone, the relocation stream, which
 * may use the reserve, takes it). 0 (moved or dropped), or an error.
 */
static int move_chunk(struct smr_cow *c, const struct rmap_ent *e,
		      uint64_t off, uint64_t len, enum smr_stream dest,
		      void *buf, uint64_t *moved)
{
	struct smr_alloc_hint hint = { .contiguous = true, .reloc = true };
	struct smr_extent x[16];
	uint64_t done = 0, total = 0;
	int n = 0, err = 0, rc;

	smr_log_break(c, "the cleaner moves data");
	rc = smr_dev_read(c->dev, buf, len, off);
	if (rc)
		return rc;
	/* The cold stream runs out where data streams stop (the reserve):
	 * the rest goes to the relocation stream. */
	while (total < len && n < (int)SMR_ARRAY_SIZE(x)) {
		int k = smr_alloc_write(c->alloc, (const uint8_t *)buf + total,
					len - total, &hint, dest, x + n,
					SMR_ARRAY_SIZE(x) - (unsigned int)n);

		if (k == -ENOSPC && dest != SMR_STREAM_RELOC) {
			dest = SMR_STREAM_RELOC;
			continue;
		}
		if (k < 0) {
			err = k;
			break;
		}
		for (int i = n; i < n + k; i++)
			total += x[i].len;
		n += k;
		if (dest == SMR_STREAM_RELOC)
			break;
		dest = SMR_STREAM_RELOC;
	}
	if (!n)
		return err ? err : -ENOSPC;
	/* Record the copies before anyone references them, so that a commit
	 * between here and the hook never leaves referenced data unmapped. */
	pthread_rwlock_wrlock(&c->lock);
	rc = cow_read_only(c) ? -EROFS : 0;
	for (int i = 0; i < n && !rc; i++) {
		struct rmap_ent ne = { .off = x[i].off, .len = x[i].len,
				       .owner = e->owner };

		ne.owner.offset += off - e->off + done;
		rc = rmap_put_locked(c, &ne);
		done += x[i].len;
	}
	if (rc) {
		for (int i = 0; i < n; i++) {
			smr_rmap_trim_locked(c, x[i].off, x[i].len);
			smr_alloc_free(c->alloc, x[i].off, x[i].len);
		}
	}
	pthread_rwlock_unlock(&c->lock);
	if (rc)
		return rc;

	done = 0;
	for (int i = 0; i < n; i++) {
		struct smr_key owner = e->owner;
		int r = 0;

		owner.offset += off - e->off + done;
		if (!rc)
			r = c->reloc_fn(c->reloc_arg, &owner, off + done,
					x[i].off, x[i].len);
		if (r < 0 && !rc)
			rc = r;
		if (r == 1)
			*moved += x[i].len;
		else
			drop_copy(c, x[i].off, x[i].len);
		done += x[i].len;
	}
	if (!rc && total != len)
		rc = err ? err : -ENOSPC;
	return rc;
}

/* Move the data of the zone [@zs, @ze) that the reverse map names to
 * stream @dest (see move_chunk). */
static int clean_data(struct smr_cow *c, uint64_t zs, uint64_t ze,
		      enum smr_stream dest, uint64_t *moved)
{
	struct rmap_ent *ents;
	uint64_t pos = zs;
	void *buf;
	int rc = 0;

	ents = calloc(CLEAN_BATCH, sizeof(*ents));
	buf = smr_dev_buf_alloc(CLEAN_CHUNK);
	if (!ents || !buf) {
		rc = -ENOMEM;
		goto out_free;
	}
	while (pos < ze && !rc) {
		unsigned int n = 0;

		/* Pending entries into the tree first (a victim is full, so
		 * none of its own comes after). */
		rc = smr_rmap_sync(c, SMR_TREE_RMAP);
		if (rc)
			break;
		pthread_rwlock_rdlock(&c->lock);
		while (n < CLEAN_BATCH && pos < ze) {
			struct smr_nkey from, found;
			uint8_t v[sizeof(struct smr_rmap_d)];
			size_t vlen = sizeof(v);

			rmap_key(pos, &from);
			rc = smr_bt_step_locked(c, SMR_TREE_RMAP, &from, true,
						&found, v, &vlen);
			if (rc == -ENOENT || (!rc && found.objid >= ze)) {
				rc = 0;
				pos = ze;
				break;
			}
			if (!rc)
				rc = rmap_decode(&found, v, vlen, &ents[n]);
			if (rc)
				break;
			/* The next entry by its start, not past this one's
			 * end: a stale entry (an image from before mount
			 * dropped those of data in flight) may overlap a
			 * live one, which must not be skipped. */
			pos = ents[n].off + 1;
			n++;
		}
		pthread_rwlock_unlock(&c->lock);

		for (unsigned int i = 0; i < n && !rc; i++) {
			const struct rmap_ent *e = &ents[i];

			for (uint64_t o = e->off; o < e->off + e->len && !rc;
			     o += CLEAN_CHUNK) {
				uint64_t l = SMR_MIN(CLEAN_CHUNK,
						     e->off + e->len - o);

				rc = move_chunk(c, e, o, l, dest, buf, moved);
			}
		}
	}
out_free:
	smr_dev_buf_free(buf);
	free(ents);
	return rc;
}

/* The tree of the node at @addr if @blk is one (header and checksum
 * checked, quietly: most blocks of a zone are not nodes), else 0. */
static uint32_t node_candidate(struct smr_cow *c, const uint8_t *blk,
			       uint64_t addr)
{
	static const uint8_t none[16];
	/* A superblock being rebuilt has no UUID yet: any node's
	 * (smr_cow_find_uuid). */
	struct smr_blk_expect exp = {
		.addr = addr,
		.uuid = memcmp(c->sb.uuid, none, 16) ? c->sb.uuid : NULL,
	};
	struct smr_blk_id id;

	smr_blk_hdr_decode(blk, &id);
	if (id.owner < 1 || id.owner > SMR_COW_MAX_TREE ||
	    !smr_blk_matches(blk, c->ns, &smr_node_ops, &exp))
		return 0;
	return (uint32_t)id.owner;
}

int smr_scan_nodes_range(struct smr_cow *c, uint32_t tree, uint64_t from,
			 uint64_t to, smr_node_scan_fn fn, void *arg)
{
	uint64_t bs = c->info->block_size;
	uint8_t *buf;
	int rc = 0;

	if (to < from || to - from < c->ns)
		return 0;
	buf = smr_dev_buf_alloc(SCAN_CHUNK + c->ns);
	if (!buf)
		return -ENOMEM;
	for (uint64_t cs = from; cs + c->ns <= to && !rc; cs += SCAN_CHUNK) {
		uint64_t rl = SMR_MIN(SCAN_CHUNK + c->ns, to - cs);

		rc = smr_dev_read(c->dev, buf, rl, cs);
		for (uint64_t p = 0; !rc && p < SCAN_CHUNK && p + c->ns <= rl;
		     p += bs) {
			uint32_t t = node_candidate(c, buf + p, cs + p);

			if (t && (!tree || t == tree))
				rc = fn(arg, cs + p, buf + p, t);
		}
		if (rc || !c->scan_total)
			continue;
		c->scan_done += SMR_MIN(SCAN_CHUNK, to - cs);
		if (c->opts.cancel && *c->opts.cancel)
			rc = -ECANCELED;
		else if (c->opts.scan_progress)
			c->opts.scan_progress(c->opts.scan_arg, c->scan_done,
					      c->scan_total);
	}
	smr_dev_buf_free(buf);
	return rc;
}

struct clean_scan {
	struct smr_cow *c;
	uint64_t moved;
};

/* A node found in the victim zone: dirty it if it is live. */
static int clean_node(void *arg, uint64_t addr, const void *node,
		      uint32_t tree)
{
	struct clean_scan *cs = arg;
	struct smr_cow *c = cs->c;
	uint16_t level = smr_node_level(node);
	struct smr_nkey first;
	int rc;

	if (!smr_node_nritems(node))
		return 0; /* only an empty root: see clean_nodes */
	if (level)
		smr_int_key(node, 0, &first);
	else
		smr_leaf_key(node, 0, &first);
	pthread_rwlock_wrlock(&c->lock);
	rc = cow_read_only(c) ? -EROFS :
		smr_bt_relocate_node_locked(c, tree, level, &first, addr);
	pthread_rwlock_unlock(&c->lock);
	if (rc == 1) {
		cs->moved += c->ns;
		rc = 0;
	}
	return rc;
}

/* Dirty every live node in [@zs, @ze). */
static int clean_nodes(struct smr_cow *c, uint64_t zs, uint64_t ze,
		       uint64_t *moved)
{
	struct clean_scan cs = { .c = c };
	int rc = smr_scan_nodes_range(c, 0, zs, ze, clean_node, &cs);

	*moved += cs.moved;
	/* An empty tree's root leaf has no key to descend by: any key
	 * leads to it. */
	pthread_rwlock_wrlock(&c->lock);
	for (uint32_t id = 1; id <= SMR_COW_MAX_TREE && !rc; id++) {
		struct smr_tree *t = &c->trees[id];
		struct smr_nkey k = { 0 };

		if (t->addr >= zs && t->addr < ze && !t->nr_items &&
		    !(t->addr & SMR_TMP_ADDR)) {
			rc = smr_bt_relocate_node_locked(c, id, 0, &k, t->addr);
			if (rc == 1) {
				*moved += c->ns;
				rc = 0;
			}
		}
	}
	pthread_rwlock_unlock(&c->lock);
	return rc;
}

/*
 * Move the live nodes and data of zone @zno out (data to stream @dest);
 * clean_lock held. The zone is empty only after the commits that
 * follow (clean_zones_locked). 0, -EBUSY if the zone is still being
 * written, or an error.
 */
static int move_zone_locked(struct smr_cow *c, uint32_t zno,
			    enum smr_stream dest)
{
	uint64_t zs, ze, moved = 0;
	uint8_t cond;
	int64_t live;
	int rc;

	if (!c->alloc || !c->info->zoned || zno >= c->info->nr_zones)
		return -EOPNOTSUPP;
	if (!c->reloc_fn)
		return -EOPNOTSUPP;
	if (smr_cow_is_read_only(c))
		return -EROFS;
	zs = smr_dev_zone_start(c->dev, zno);
	if (zs < c->sb.data_start)
		return -EINVAL;
	cond = smr_dev_zone_cond(c->dev, zno);
	if (cond == SMR_ZONE_COND_FULL || cond == SMR_ZONE_COND_NOT_WP)
		ze = zs + smr_dev_zone_cap(c->dev, zno);
	else if (cond == SMR_ZONE_COND_EMPTY)
		return 0;
	else
		return -EBUSY;
	__atomic_fetch_add(&c->gc.gc_runs, 1, __ATOMIC_RELAXED);
	live = smr_alloc_zone_live(c->alloc, zno);
	if (live <= 0)
		return (int)live;
	rc = clean_data(c, zs, ze, dest, &moved);
	smr_failpoint("clean.after_relocate");
	if (!rc)
		rc = clean_nodes(c, zs, ze, &moved);
	return rc;
}

/*
 * Clean the @n zones @zno[] (data of zone k to stream @dest[k]) with one
 * set of commits for all: the first makes the copies and the new
 * references durable and releases the originals; the second hands the
 * originals to the allocator; once the third is durable, no checkpoint
 * open could take references them, and the allocator resets each emptied
 * zone. clean_lock held. Running out of room for the
 * copies ends the moves, not the pass: the zones moved so far are still
 * committed. Returns the number of zones emptied, or an error.
 */
static int clean_zones_locked(struct smr_cow *c, const uint32_t *zno,
			      const enum smr_stream *dest, unsigned int n)
{
	uint64_t t0 = smr_now_ns() / 1000;
	unsigned int k, done = 0, busy = 0;
	int rc = 0, err;

	for (k = 0; k < n && !rc; k++) {
		rc = move_zone_locked(c, zno[k], dest[k]);
		if (rc == -EBUSY) {
			busy++; /* still being written: not this time */
			rc = 0;
		}
	}
	if (busy == n) {
		rc = -EBUSY;
		goto out;
	}
	if (rc && rc != -ENOSPC)
		goto out;
	err = rc;
	/* The time so far goes into the checkpoints the pass writes. */
	__atomic_fetch_add(&c->gc.gc_usecs, smr_now_ns() / 1000 - t0,
			   __ATOMIC_RELAXED);
	t0 = smr_now_ns() / 1000;
	smr_failpoint("clean.before_commit");
	/* First commit: the copies and the new references; the originals
	 * are released. Second: the originals go back to the allocator,
	 * which resets the zones once a third checkpoint is durable. */
	rc = smr_cow_commit_now(c);
	if (!rc) {
		smr_failpoint("clean.before_reset");
		rc = smr_cow_commit_now(c);
	}
	/* The third may have nothing of the trees to write: forced. */
	if (!rc)
		rc = smr_cow_commit_forced(c);
	if (rc)
		goto out;
	for (unsigned int i = 0; i < k; i++) {
		int64_t live = smr_alloc_zone_live(c->alloc, zno[i]);

		if (live < 0) {
			rc = (int)live;
			goto out;
		}
		if (!live) {
			__atomic_fetch_add(&c->gc.gc_zones, 1,
					   __ATOMIC_RELAXED);
			done++;
		}
	}
	if (!done)
		rc = err;
out:
	__atomic_fetch_add(&c->gc.gc_usecs, smr_now_ns() / 1000 - t0,
			   __ATOMIC_RELAXED);
	return rc ? rc : (int)done;
}

int smr_cow_clean_zone(struct smr_cow *c, uint32_t zno)
{
	const enum smr_stream dest = SMR_STREAM_RELOC;
	int rc;

	pthread_mutex_lock(&c->clean_lock);
	rc = clean_zones_locked(c, &zno, &dest, 1);
	pthread_mutex_unlock(&c->clean_lock);
	/* A zone that keeps live bytes: a dropped move, or data without an
	 * owner. */
	if (rc == 0 && smr_alloc_zone_live(c->alloc, zno) > 0)
		return -EAGAIN;
	return rc < 0 ? rc : 0;
}

static enum smr_gc_policy alloc_policy(enum smr_cow_gc_policy p)
{
	return p == SMR_COW_GC_GREEDY ? SMR_GC_GREEDY : SMR_GC_COST_BENEFIT;
}

/*
 * Where a victim's data goes: data written by users goes to the relocation
 * stream; data that survived a cleaning already (a zone of the relocation
 * or cold stream) has proved to be cold and goes to the cold stream, so
 * that it settles in zones of its own rather than among the merely young
 * survivors of hot zones (generations, as in generational garbage
 * collectors; Sprite LFS sorted moved blocks by age for the same reason).
 */
static enum smr_stream victim_dest(const struct smr_gc_victim *v)
{
	return v->stream == SMR_STREAM_RELOC || v->stream == SMR_STREAM_COLD ?
	       SMR_STREAM_COLD : SMR_STREAM_RELOC;
}

/* Room the copies of one pass may take: what relocation can have, less
 * the tails of the two data streams' open zones (counted free, and
 * relocation may write neither: the hot one never, the cold one not for
 * copies of user-written zones), two zones for the nodes the pass makes
 * dirty and the allocator's last zone. */
static uint64_t pass_room(struct smr_cow *c)
{
	struct smr_space sp;
	uint64_t zl = smr_dev_zone_cap(c->dev, c->info->nr_zones - 1);
	uint64_t room;

	smr_alloc_space(c->alloc, &sp);
	room = sp.free + sp.reserved;
	return room > 5 * zl ? room - 5 * zl : 0;
}

/*
 * Pick victims by @policy and clean them in passes of one set of commits: at
 * most @max_zones in all, each pass as many as the room for their copies
 * allows and no more than win @want bytes (their dead bytes). Zones that
 * keep live bytes are not picked again by this call. Returns the number of
 * zones emptied, or an error; clean_lock held.
 */
static int clean_some_locked(struct smr_cow *c, enum smr_cow_gc_policy policy,
			     unsigned int max_zones, uint64_t want,
			     uint64_t min_win)
{
	struct smr_gc_victim v[SMR_GC_PICK_MAX];
	uint32_t stuck[SMR_GC_PICK_MAX], zno[SMR_GC_PICK_MAX];
	enum smr_stream dest[SMR_GC_PICK_MAX];
	unsigned int nstuck = 0, done = 0;
	int rc = 0;

	/* Rounds are bounded: a zone that keeps live data it cannot move
	 * would otherwise be picked forever. */
	for (int round = 0; round < 3 && done < max_zones && want; round++) {
		uint64_t room = pass_room(c), need = 0, win = 0;
		unsigned int ask, n = 0;
		int got;

		ask = SMR_MIN(max_zones - done + nstuck,
			      (unsigned int)SMR_GC_PICK_MAX);
		got = smr_alloc_gc_pick_n(c->alloc, alloc_policy(policy), v,
					  ask);
		if (got <= 0) {
			rc = got;
			break;
		}
		for (int i = 0; i < got && n < max_zones - done && win < want;
		     i++) {
			bool skip = false;

			for (unsigned int j = 0; j < nstuck; j++)
				skip |= stuck[j] == v[i].zno;
			if (skip)
				continue;
			if (n && need + v[i].live > room)
				break;
			need += v[i].live;
			win += v[i].cap - v[i].live;
			zno[n] = v[i].zno;
			dest[n] = victim_dest(&v[i]);
			n++;
		}
		if (!n || win < min_win)
			break;
		rc = clean_zones_locked(c, zno, dest, n);
		if (rc == -EBUSY) {
			/* Every victim is still being written (a writer has
			 * taken its last blocks but not written them yet):
			 * the next best ones, not an error. */
			for (unsigned int i = 0; i < n &&
			     nstuck < SMR_GC_PICK_MAX; i++)
				stuck[nstuck++] = zno[i];
			rc = 0;
			continue;
		}
		if (rc < 0)
			break;
		done += (unsigned int)rc;
		want = win >= want ? 0 : want - win;
		rc = 0;
		for (unsigned int i = 0; i < n && nstuck < SMR_GC_PICK_MAX;
		     i++)
			if (smr_alloc_zone_live(c->alloc, zno[i]) > 0)
				stuck[nstuck++] = zno[i];
	}
	return rc ? rc : (int)done;
}

int smr_cow_clean(struct smr_cow *c, enum smr_cow_gc_policy policy,
		  unsigned int max_zones)
{
	int rc;

	if (!c->alloc || !c->info->zoned)
		return -EOPNOTSUPP;
	pthread_mutex_lock(&c->clean_lock);
	rc = clean_some_locked(c, policy, max_zones, UINT64_MAX, 0);
	pthread_mutex_unlock(&c->clean_lock);
	return rc;
}

/* Free zones a data stream can take now. */
static uint64_t free_zones(struct smr_cow *c)
{
	struct smr_space sp;
	uint64_t zl = smr_dev_zone_cap(c->dev, c->info->nr_zones - 1);

	smr_alloc_space(c->alloc, &sp);
	return zl ? sp.free / zl : 0;
}

int smr_cow_clean_for_space(struct smr_cow *c)
{
	uint64_t emptied = __atomic_load_n(&c->gc.gc_zones, __ATOMIC_RELAXED);
	struct smr_space sp;
	bool released;
	uint64_t before;
	int rc;

	if (!c->alloc)
		return -ENOSPC;
	/* Space freed in the running transaction or by the newest checkpoint
	 * is reusable only after the next three commits. */
	pthread_rwlock_rdlock(&c->lock);
	released = c->free_cur.n || c->free_prev.n;
	pthread_rwlock_unlock(&c->lock);
	smr_alloc_space(c->alloc, &sp);
	if (sp.reclaimable == 0 && !released)
		return -ENOSPC;
	before = sp.free;
	rc = smr_cow_commit_release(c);
	if (rc)
		return rc;
	if (!c->info->zoned) {
		/* No cleaning here: the commits were all it takes. */
		smr_alloc_space(c->alloc, &sp);
		return sp.free > before ? 0 : -ENOSPC;
	}
	/* What is free may be only the tail of the open zone, too short for
	 * the write: clean until a whole zone is free beyond it. */
	if (free_zones(c) >= 2)
		return 0;
	rc = smr_cow_clean(c, SMR_COW_GC_GREEDY, GC_PASS_ZONES);
	if (rc > 0)
		return 0;
	if (rc < 0 && rc != -ENOSPC)
		return rc;
	/* Nothing cleaned (or no room for the copies), but the commits may
	 * have given space back: on a device of few zones a second free
	 * zone may never come while the data fits, and the write may fit
	 * what came back (several writers at once each hold back a piece
	 * they have not freed yet). Nor here, but by another thread while
	 * this one waited for the cleaning lock (the background thread, or
	 * another writer out of space, which took the best victims): the
	 * zones it emptied may have gone to other writers, but the next try
	 * has the victims that are left. */
	smr_alloc_space(c->alloc, &sp);
	if (sp.free > before ||
	    __atomic_load_n(&c->gc.gc_zones, __ATOMIC_RELAXED) != emptied)
		return 0;
	return -ENOSPC;
}

void smr_cow_clean_for_meta(struct smr_cow *c)
{
	uint64_t taken;

	if (!c->alloc || !c->info->zoned || !c->reloc_fn ||
	    smr_cow_is_read_only(c))
		return;
	smr_cow_reserve(c, &taken);
	if (taken)
		(void)smr_cow_clean(c, SMR_COW_GC_GREEDY, 1);
}

/*
 * The cleaner's options, which a remount changes (smr_cow_set_gc, under
 * clean_lock) while the thread and writers read them (without): each is
 * read and written whole, and a pass that sees some old and some new ones
 * still gets a high watermark above the low one.
 */
static bool gc_need_only(const struct smr_cow *c)
{
	return __atomic_load_n(&c->opts.gc_need_only, __ATOMIC_RELAXED);
}

static unsigned int gc_low(const struct smr_cow *c)
{
	unsigned int low = __atomic_load_n(&c->opts.gc_low, __ATOMIC_RELAXED);

	if (gc_need_only(c))
		return 1;
	return low ? low : GC_LOW_ZONES;
}

static unsigned int gc_high(const struct smr_cow *c)
{
	uint64_t zl = smr_dev_zone_cap(c->dev, c->info->nr_zones - 1);
	unsigned int high = __atomic_load_n(&c->opts.gc_high, __ATOMIC_RELAXED);

	if (gc_need_only(c))
		return 1;
	if (!high && zl)
		return gc_low(c) + 1 +
		       (unsigned int)SMR_MAX(1, SMR_MIN(GC_SPAN_BYTES / zl,
						      c->info->nr_zones /
						      GC_SPAN_PART));
	return high > gc_low(c) ? high : gc_low(c) + 1;
}

/* Wake the thread for a pass (it sleeps while a pass found nothing). */
static void gc_wake(struct smr_cow *c)
{
	pthread_mutex_lock(&c->txn_lock);
	c->gc_wake = true;
	pthread_cond_signal(&c->gc_cond);
	pthread_mutex_unlock(&c->txn_lock);
}

int smr_cow_set_gc(struct smr_cow *c, int policy, unsigned int low,
		   unsigned int high)
{
	unsigned int zones = c->info->zoned ? c->info->nr_zones : UINT_MAX;

	if (policy != SMR_COW_GC_KEEP && policy != SMR_COW_GC_NEED_ONLY &&
	    policy != SMR_COW_GC_COST_BENEFIT && policy != SMR_COW_GC_GREEDY)
		return -EINVAL;
	pthread_mutex_lock(&c->clean_lock);
	if (!low)
		low = c->opts.gc_low;
	if (!high)
		high = c->opts.gc_high;
	if (low >= zones || high >= zones || (low && high && high <= low)) {
		pthread_mutex_unlock(&c->clean_lock);
		return -EINVAL;
	}
	if (policy != SMR_COW_GC_KEEP) {
		__atomic_store_n(&c->opts.gc_need_only,
				 policy == SMR_COW_GC_NEED_ONLY,
				 __ATOMIC_RELAXED);
		if (policy >= 0)
			__atomic_store_n(&c->opts.gc_policy, policy,
					 __ATOMIC_RELAXED);
	}
	__atomic_store_n(&c->opts.gc_low, low, __ATOMIC_RELAXED);
	__atomic_store_n(&c->opts.gc_high, high, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&c->clean_lock);
	/* New watermarks may call for cleaning now. */
	gc_wake(c);
	return 0;
}

int smr_cow_clean_auto(struct smr_cow *c)
{
	enum smr_cow_gc_policy pol =
		__atomic_load_n(&c->opts.gc_policy, __ATOMIC_RELAXED) ==
				SMR_COW_GC_GREEDY || gc_need_only(c) ?
			SMR_COW_GC_GREEDY :
			SMR_COW_GC_COST_BENEFIT;
	unsigned int low = gc_low(c), high = gc_high(c);
	uint64_t fz, zl;
	int rc = 0;

	if (!c->alloc || !c->info->zoned)
		return -EOPNOTSUPP;
	zl = smr_dev_zone_cap(c->dev, c->info->nr_zones - 1);
	pthread_mutex_lock(&c->clean_lock);
	fz = free_zones(c);
	if (fz < low)
		c->gc_active = true;
	else if (fz > high)
		c->gc_active = false;
	if (c->gc_active)
		/* Greedy when space runs really low: space matters more
		 * then than what cleaning will cost later. */
		rc = clean_some_locked(c, fz < low / 2 ?
					  SMR_COW_GC_GREEDY : pol,
				       GC_PASS_ZONES, (high + 1 - fz) * zl,
				       zl / GC_MIN_WIN_PART);
	pthread_mutex_unlock(&c->clean_lock);
	return rc;
}

void smr_cow_gc_stats(struct smr_cow *c, struct smr_cow_gc_stats *st)
{
	struct smr_alloc_stats as = { 0 };

	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&c->clean_lock);
	st->gc_runs = c->gc.gc_runs;
	st->gc_zones = c->gc.gc_zones;
	st->gc_usecs = c->gc.gc_usecs;
	pthread_mutex_unlock(&c->clean_lock);
	if (!c->alloc)
		return;
	smr_alloc_stats(c->alloc, &as);
	st->reloc_bytes = as.bytes_allocated[SMR_STREAM_RELOC];
	st->meta_bytes = as.bytes_allocated[SMR_STREAM_META];
	st->device_bytes = as.bytes_allocated[SMR_STREAM_HOT] +
			   as.bytes_allocated[SMR_STREAM_COLD] +
			   st->reloc_bytes + st->meta_bytes;
	st->user_bytes = c->sb.features_incompat & SMR_FEAT_INCOMPAT_USER_BYTES ?
				 as.user_bytes :
				 as.bytes_allocated[SMR_STREAM_HOT] +
					 as.bytes_allocated[SMR_STREAM_COLD];
	st->zones_reset = as.zones_reset;
}

void smr_cow_count_user(struct smr_cow *c, uint64_t bytes)
{
	if (c->alloc && (c->sb.features_incompat &
			 SMR_FEAT_INCOMPAT_USER_BYTES))
		smr_alloc_count_user(c->alloc, bytes);
}

/* ========================================================================
 * The background thread
 * ======================================================================== */

static void *gc_main(void *arg)
{
	struct smr_cow *c = arg;

	pthread_mutex_lock(&c->txn_lock);
	while (!c->gc_stop && !cow_read_only(c)) {
		int rc;

		c->gc_wake = false;
		pthread_mutex_unlock(&c->txn_lock);
		rc = smr_cow_clean_auto(c);
		pthread_mutex_lock(&c->txn_lock);
		/* Nothing to do (or nothing that can be done): sleep until a
		 * writer finds free zones below the low watermark. */
		while (rc <= 0 && !c->gc_wake && !c->gc_stop)
			pthread_cond_wait(&c->gc_cond, &c->txn_lock);
	}
	pthread_mutex_unlock(&c->txn_lock);
	return NULL;
}

/*
 * A writer or a commit took @len more bytes: every quarter of a zone
 * written, see whether free zones fell below the low watermark and wake
 * the thread if so. Counting free zones walks the allocator's zones, so it
 * is not done on every write.
 */
void smr_cow_gc_kick(struct smr_cow *c, uint64_t len)
{
	uint64_t step, before;

	/* First: an engine without the thread may have no device. */
	if (!__atomic_load_n(&c->gc_running, __ATOMIC_ACQUIRE) || !len)
		return;
	step = smr_dev_zone_cap(c->dev, c->info->nr_zones - 1) / 4;
	if (!step)
		return;
	before = __atomic_fetch_add(&c->gc_kick_bytes, len, __ATOMIC_RELAXED);
	if (before / step == (before + len) / step)
		return;
	if (free_zones(c) >= gc_low(c))
		return;
	gc_wake(c);
}

int smr_cow_gc_start(struct smr_cow *c)
{
	int rc;

	if (c->opts.read_only || c->opts.gc_off || !c->alloc ||
	    !c->info->zoned)
		return 0;
	rc = pthread_create(&c->gc_thread, NULL, gc_main, c);
	if (rc)
		return -rc;
	__atomic_store_n(&c->gc_running, true, __ATOMIC_RELEASE);
	return 0;
}

void smr_cow_gc_stop(struct smr_cow *c)
{
	if (!c->gc_running)
		return;
	pthread_mutex_lock(&c->txn_lock);
	c->gc_stop = true;
	pthread_cond_broadcast(&c->gc_cond);
	pthread_mutex_unlock(&c->txn_lock);
	pthread_join(c->gc_thread, NULL);
	__atomic_store_n(&c->gc_running, false, __ATOMIC_RELEASE);
}
