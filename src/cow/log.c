/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * log.c - the fsync log: what changed since the newest checkpoint, made
 * durable by one small record and one flush instead of a commit.
 *
 * docs/design/log.md has the reasoning; docs/FORMAT.md ("fsync log") the
 * bytes. In short: while the log is on, the engine keeps, since the last
 * commit or record,
 *
 *   - every change of the FS tree made through smr_bt_insert/update/put/
 *     delete (the items as they are now, or deleted), c->log_ops;
 *   - every data extent written (with an XXH3 of its bytes and its
 *     reverse-map owner) until it is settled and recorded, c->log_w;
 *   - every data extent freed that the replayed state will hold, since the
 *     last record (format feature LOG_FREES) or, on older filesystems,
 *     since the checkpoint, c->log_frees.
 *
 * A record holds the items, the claims (data settled since the last
 * record, with their checksums) and the frees. It is written after the
 * newest checkpoint or record and flushed once: a replay reads every claimed
 * extent back and takes the record only if all of them verify, so data and
 * record need no flush between them. A record that does not verify, and
 * every record after it, are ignored: their fsync never returned.
 *
 * Anything the log cannot express (a settle of data it did not see written,
 * a change of another tree, the cleaner, fsck's repairs, too much to log)
 * breaks it until the next commit: fsync commits then.
 */
#include "cow/cow_priv.h"

#include <endian.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Bound of what the log gathers between commits; past it, fsync commits. */
#define LOG_MAX_PAYLOAD ((size_t)SMR_LOG_MAX_PIECES * SMR_LOG_PIECE_ROOM)
#define LOG_MAX_GATHER (4 * LOG_MAX_PAYLOAD)
#define LOG_MAX_WRITTEN 2048

struct smr_log_op {
	struct smr_nkey key;
	uint8_t op;            /* SMR_LOG_OP_* */
	uint16_t len;
	size_t val;            /* offset of the value in log_vals */
	size_t order;
};

/* ========================================================================
 * The piece verifier (codec of struct smr_dlog)
 * ======================================================================== */

static int log_verify(const void *blk, size_t len, uint64_t addr)
{
	const struct smr_dlog *d = blk;
	static const uint8_t zero[32];
	uint32_t piece = le32toh(d->piece), nr = le32toh(d->nr_pieces);
	uint32_t plen = le32toh(d->len);
	uint64_t total = le64toh(d->total);

	if (len != SMR_CKPT_SIZE)
		return smr_corrupt(addr, "log piece: size");
	if (!le64toh(d->seq))
		return smr_corrupt(addr, "log piece: sequence number 0");
	if (!nr || nr > SMR_LOG_MAX_PIECES || piece >= nr)
		return smr_corrupt(addr, "log piece: piece number");
	if (plen > SMR_LOG_PIECE_ROOM || total > (uint64_t)nr * SMR_LOG_PIECE_ROOM ||
	    total < sizeof(struct smr_dlog_head))
		return smr_corrupt(addr, "log piece: payload length");
	/* Every piece of a record holds a share of its payload, and this
	 * one exactly its own: open copies each piece's len bytes to
	 * piece * SMR_LOG_PIECE_ROOM of a buffer of total bytes. */
	if (total <= (uint64_t)(nr - 1) * SMR_LOG_PIECE_ROOM ||
	    plen != SMR_MIN(total - (uint64_t)piece * SMR_LOG_PIECE_ROOM,
			    SMR_LOG_PIECE_ROOM))
		return smr_corrupt(addr, "log piece: payload length of the piece");
	if (d->reserved0 || memcmp(d->reserved1, zero, sizeof(zero)) ||
	    d->hdr.level || d->hdr.flags)
		return smr_corrupt(addr, "log piece: reserved bytes not zero");
	return 0;
}

const struct smr_blk_ops smr_log_ops = {
	.name = "fsync log piece",
	.magic = SMR_MAGIC_LOG,
	.verify = log_verify,
};

int smr_log_piece_decode(const void *blk, uint64_t addr, const uint8_t *uuid,
			 struct smr_log_piece *p)
{
	const struct smr_dlog *d = blk;
	struct smr_blk_expect exp = { .addr = addr, .owner = SMR_OWNER_LOG,
				      .uuid = uuid };

	if (!smr_blk_matches(blk, SMR_CKPT_SIZE, &smr_log_ops, &exp) ||
	    log_verify(blk, SMR_CKPT_SIZE, addr))
		return -SMR_EFSCORRUPTED;
	p->addr = addr;
	p->gen = le64toh(d->hdr.gen);
	p->seq = le64toh(d->seq);
	p->piece = le32toh(d->piece);
	p->nr_pieces = le32toh(d->nr_pieces);
	p->len = le32toh(d->len);
	p->total = le64toh(d->total);
	return 0;
}

/* ========================================================================
 * Gathering
 * ======================================================================== */

static bool log_gathering(struct smr_cow *c)
{
	return c->log_on && !__atomic_load_n(&c->log_broken, __ATOMIC_ACQUIRE);
}

static void log_drop_ops(struct smr_cow *c)
{
	free(c->log_ops);
	free(c->log_vals);
	c->log_ops = NULL;
	c->log_vals = NULL;
	c->log_nops = c->log_capops = 0;
	c->log_nvals = c->log_capvals = 0;
	c->log_order = 0;
	memset(c->log_recent, 0, sizeof(c->log_recent));
}

static uint32_t log_recent_slot(const struct smr_nkey *key)
{
	uint64_t h = (key->objid * 0x9e3779b97f4a7c15ULL) ^
		     (key->offset * 0xc2b2ae3d27d4eb4fULL) ^ key->type;

	return (uint32_t)(h >> 32) & (SMR_LOG_RECENT - 1);
}

void smr_log_break(struct smr_cow *c, const char *why)
{
	if (!c->log_on || __atomic_load_n(&c->log_broken, __ATOMIC_ACQUIRE))
		return;
	smr_debug("fsync log: %s; the next fsync commits", why);
	__atomic_store_n(&c->log_broken, true, __ATOMIC_RELEASE);
}

void smr_log_change_locked(struct smr_cow *c, uint32_t tree,
			   const struct smr_nkey *key, const void *val,
			   size_t len, bool del)
{
	struct smr_log_op *o;
	uint32_t slot, at;

	c->log_change++;
	if (!log_gathering(c))
		return;
	if (tree != SMR_TREE_FS) {
		smr_log_break(c, "a change outside the FS tree");
		return;
	}
	/* A key changed lately again: only its last change counts, so it
	 * takes that entry (its value's room if it fits) with a new order.
	 * Should the slot point at an older entry of the key (or, after a
	 * sort, at another of its entries), the new order still wins. */
	slot = log_recent_slot(key);
	at = c->log_recent[slot];
	if (at && at <= c->log_nops &&
	    !smr_nkey_cmp(&c->log_ops[at - 1].key, key) &&
	    (del || len <= c->log_ops[at - 1].len)) {
		o = &c->log_ops[at - 1];
		o->op = del ? SMR_LOG_OP_DELETE : SMR_LOG_OP_PUT;
		o->len = del ? 0 : (uint16_t)len;
		o->order = c->log_order++;
		if (!del && len)
			memcpy(c->log_vals + o->val, val, len);
		return;
	}
	if (c->log_nvals + len + sizeof(struct smr_dlog_item) * (c->log_nops + 1) >
	    LOG_MAX_GATHER) {
		smr_log_break(c, "too many changes to log");
		log_drop_ops(c);
		return;
	}
	if (c->log_nops == c->log_capops) {
		size_t cap = c->log_capops ? 2 * c->log_capops : 64;
		void *x = realloc(c->log_ops, cap * sizeof(*c->log_ops));

		if (!x)
			goto nomem;
		c->log_ops = x;
		c->log_capops = cap;
	}
	if (c->log_nvals + len > c->log_capvals) {
		size_t cap = SMR_MAX(2 * c->log_capvals, c->log_nvals + len + 4096);
		void *x = realloc(c->log_vals, cap);

		if (!x)
			goto nomem;
		c->log_vals = x;
		c->log_capvals = cap;
	}
	o = &c->log_ops[c->log_nops];
	o->key = *key;
	o->op = del ? SMR_LOG_OP_DELETE : SMR_LOG_OP_PUT;
	o->len = del ? 0 : (uint16_t)len;
	o->val = c->log_nvals;
	o->order = c->log_order++;
	c->log_recent[slot] = (uint32_t)++c->log_nops;
	if (!del && len) {
		memcpy(c->log_vals + c->log_nvals, val, len);
		c->log_nvals += len;
	}
	return;
nomem:
	smr_log_break(c, "no memory");
	log_drop_ops(c);
}

/* Extents whose hashes smr_log_written() computes before taking the lock. */
#define LOG_HASH_BATCH 16

/* Add written extent @e, of hash @csum, at byte @at of the write, to log_w
 * (log_lock held): NULL, or why the log must break. */
static const char *log_w_add(struct smr_cow *c, const struct smr_data_extent *e,
			     uint64_t csum, const struct smr_key *owner,
			     uint64_t at)
{
	struct smr_log_w *w;

	if (c->log_nw == LOG_MAX_WRITTEN)
		return "too much data in flight to log";
	if (smr_array_grow((void **)&c->log_w, &c->log_capw, c->log_nw,
			   sizeof(*c->log_w)))
		return "no memory";
	w = &c->log_w[c->log_nw++];
	memset(w, 0, sizeof(*w));
	c->log_nunsettled++;
	w->off = e->off;
	w->len = e->len;
	w->csum = csum;
	if (owner) {
		w->owned = true;
		w->owner = *owner;
		w->owner.offset += at;
	}
	return NULL;
}

void smr_log_written(struct smr_cow *c, const struct smr_data_extent *ext,
		     int n, const void *buf, const struct smr_key *owner)
{
	uint64_t csum[LOG_HASH_BATCH], done = 0;

	if (!log_gathering(c))
		return;
	for (int b = 0; b < n; b += LOG_HASH_BATCH) {
		int m = SMR_MIN(n - b, LOG_HASH_BATCH);
		const char *why = NULL;
		uint64_t o = done;

		/* The data is hashed outside the lock, which the settle
		 * and the free of data take too (every writer's). */
		for (int i = 0; i < m; i++) {
			csum[i] = smr_hash64((const uint8_t *)buf + o,
					     ext[b + i].len, 0);
			o += ext[b + i].len;
		}
		pthread_mutex_lock(&c->log_lock);
		for (int i = 0; i < m && !why; i++) {
			why = log_w_add(c, &ext[b + i], csum[i], owner, done);
			done += ext[b + i].len;
		}
		pthread_mutex_unlock(&c->log_lock);
		if (why) {
			smr_log_break(c, why);
			return;
		}
	}
}

/* Take entry @i out of log_w (log_lock held). */
static void log_w_del(struct smr_cow *c, size_t i)
{
	if (!c->log_w[i].settled)
		c->log_nunsettled--;
	c->log_w[i] = c->log_w[--c->log_nw];
}

/* The settled data is durable (in a checkpoint or a record): forget it.
 * Unsettled data stays. */
static void log_w_drop_settled(struct smr_cow *c)
{
	pthread_mutex_lock(&c->log_lock);
	for (size_t i = 0; i < c->log_nw;) {
		if (c->log_w[i].settled)
			log_w_del(c, i);
		else
			i++;
	}
	pthread_mutex_unlock(&c->log_lock);
}

void smr_log_settle(struct smr_cow *c, uint64_t off, uint64_t len)
{
	uint64_t covered = 0;

	if (!c->log_on)
		return;
	/* Newest first: what is settled was mostly written just before, at
	 * the end of log_w, which holds up to LOG_MAX_WRITTEN extents between
	 * commits when no fsync comes. The extents are disjoint (each is
	 * space allocated once), so none is left once @len is covered. With
	 * the log broken and nothing unsettled there is nothing to mark, and
	 * what the scan would decide (to break the log) is done. */
	pthread_mutex_lock(&c->log_lock);
	if (!c->log_nunsettled && !log_gathering(c)) {
		pthread_mutex_unlock(&c->log_lock);
		return;
	}
	for (size_t i = c->log_nw; i-- > 0 && covered < len;) {
		struct smr_log_w *w = &c->log_w[i];

		if (w->off >= off && w->off + w->len <= off + len) {
			if (!w->settled)
				c->log_nunsettled--;
			w->settled = true;
			covered += w->len;
		}
	}
	pthread_mutex_unlock(&c->log_lock);
	if (covered != len)
		smr_log_break(c, "settled data the log did not see written");
}

int smr_log_free_locked(struct smr_cow *c, uint64_t off, uint64_t len)
{
	uint64_t end = off + len;

	c->log_change++;
	if (!log_gathering(c))
		return 0;
	pthread_mutex_lock(&c->log_lock);
	/* Only unsettled data needs the scan; a free of settled data (an
	 * overwrite of what a checkpoint or a record holds) is the rule. */
	for (size_t i = 0; c->log_nunsettled && i < c->log_nw; i++) {
		struct smr_log_w *w = &c->log_w[i];
		bool whole;

		if (w->settled || w->off >= end || w->off + w->len <= off)
			continue;
		/* Unsettled data given back: the replayed state never held
		 * it, so there is nothing to free there. Decided under the
		 * lock: writers append to (and may move) log_w meanwhile. */
		whole = w->off == off && w->len == len;
		if (whole)
			log_w_del(c, i);
		pthread_mutex_unlock(&c->log_lock);
		if (!whole)
			smr_log_break(c, "part of unsettled data freed");
		return 0;
	}
	pthread_mutex_unlock(&c->log_lock);
	if (smr_xlist_add(&c->log_frees, off, len))
		smr_log_break(c, "no memory");
	return 0;
}

void smr_log_committed_locked(struct smr_cow *c)
{
	c->log_durable = c->log_change;
	if (!c->log_on)
		return;
	log_drop_ops(c);
	smr_xlist_clear(&c->log_frees);
	c->log_seq = 0;
	c->log_base_ok = true;
	log_w_drop_settled(c);
	__atomic_store_n(&c->log_broken, false, __ATOMIC_RELEASE);
}

void smr_log_fini(struct smr_cow *c)
{
	log_drop_ops(c);
	free(c->log_frees.x);
	free(c->log_w);
	c->log_frees.x = NULL;
	c->log_w = NULL;
	c->log_nw = c->log_capw = c->log_nunsettled = 0;
}

/* ========================================================================
 * Writing a record
 * ======================================================================== */

static int op_cmp(const void *a, const void *b)
{
	const struct smr_log_op *x = a, *y = b;

	if (x->key.objid != y->key.objid)
		return x->key.objid < y->key.objid ? -1 : 1;
	if (x->key.type != y->key.type)
		return x->key.type < y->key.type ? -1 : 1;
	if (x->key.offset != y->key.offset)
		return x->key.offset < y->key.offset ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* Append @len bytes to the payload being built; false if it is full. */
struct log_buf {
	uint8_t *p;
	size_t n, cap;
};

static bool lb_put(struct log_buf *b, const void *v, size_t len)
{
	if (b->n + len > b->cap)
		return false;
	memcpy(b->p + b->n, v, len);
	b->n += len;
	return true;
}

/*
 * Build the payload of the next record in @b: claims, frees, the last
 * change of every key. Returns 0, 1 if it does not fit, -ENOMEM.
 */
static int log_build(struct smr_cow *c, struct log_buf *b, size_t *nclaims)
{
	struct smr_dlog_head h = { 0 };
	size_t nitems = 0, at_head = b->n;
	uint32_t nc = 0;

	if (!lb_put(b, &h, sizeof(h)))
		return 1;
	for (size_t i = 0; i < c->log_nw; i++) {
		const struct smr_log_w *w = &c->log_w[i];
		struct smr_dlog_claim d = { 0 };

		if (!w->settled)
			continue;
		d.off = htole64(w->off);
		d.len = htole64(w->len);
		d.csum = htole64(w->csum);
		if (w->owned) {
			d.owner_objid = htole64(w->owner.objid);
			d.owner_offset = htole64(w->owner.offset);
			d.owner_type = w->owner.type;
			d.flags = SMR_LOG_CLAIM_OWNED;
		}
		if (!lb_put(b, &d, sizeof(d)))
			return 1;
		nc++;
	}
	for (size_t i = 0; i < c->log_frees.n; i++) {
		struct smr_dextent d = {
			.off = htole64(c->log_frees.x[i].off),
			.len = htole64(c->log_frees.x[i].len),
		};

		if (!lb_put(b, &d, sizeof(d)))
			return 1;
	}
	qsort(c->log_ops, c->log_nops, sizeof(*c->log_ops), op_cmp);
	for (size_t i = 0; i < c->log_nops; i++) {
		const struct smr_log_op *o = &c->log_ops[i];
		struct smr_dlog_item d = { 0 };
		static const uint8_t pad[8];

		/* Only the last change of a key counts. */
		if (i + 1 < c->log_nops &&
		    !smr_nkey_cmp(&o->key, &c->log_ops[i + 1].key))
			continue;
		d.objid = htole64(o->key.objid);
		d.offset = htole64(o->key.offset);
		d.type = o->key.type;
		d.op = o->op;
		d.len = htole16(o->len);
		if (!lb_put(b, &d, sizeof(d)) ||
		    !lb_put(b, c->log_vals + o->val, o->len) ||
		    !lb_put(b, pad, SMR_ROUND_UP(o->len, 8) - o->len))
			return 1;
		nitems++;
	}
	h.nr_claims = htole32(nc);
	h.nr_frees = htole32((uint32_t)c->log_frees.n);
	h.nr_items = htole32((uint32_t)nitems);
	memcpy(b->p + at_head, &h, sizeof(h));
	*nclaims = nc;
	return 0;
}

/* Cut @payload into sealed pieces in @out (nr * SMR_CKPT_SIZE bytes) for
 * the addresses @addr. 0 or -SMR_EFSCORRUPTED. */
int smr_log_seal(struct smr_cow *c, const uint8_t *payload, size_t total,
		 uint64_t seq, uint8_t *out, const uint64_t *addr,
		 uint32_t nr)
{
	for (uint32_t i = 0; i < nr; i++) {
		uint8_t *blk = out + (size_t)i * SMR_CKPT_SIZE;
		struct smr_dlog *d = (struct smr_dlog *)blk;
		size_t at = (size_t)i * SMR_LOG_PIECE_ROOM;
		size_t n = SMR_MIN(total - at, SMR_LOG_PIECE_ROOM);
		int rc;

		memset(blk, 0, SMR_CKPT_SIZE);
		smr_blk_hdr_init(blk, &smr_log_ops, SMR_CKPT_SIZE, addr[i],
				 c->gen, SMR_OWNER_LOG, c->sb.uuid, 0);
		d->seq = htole64(seq);
		d->piece = htole32(i);
		d->nr_pieces = htole32(nr);
		d->len = htole32((uint32_t)n);
		d->total = htole64(total);
		memcpy(blk + sizeof(*d), payload + at, n);
		rc = smr_blk_seal(blk, SMR_CKPT_SIZE, &smr_log_ops);
		if (rc)
			return rc;
	}
	return 0;
}

/*
 * A record puts the commit off, and the nodes dirty by then must still find
 * room: data may take all the free space meanwhile, leaving metadata only
 * the allocator's reserve. So records stop, and fsync commits, once the
 * dirty nodes would take more than a quarter of that reserve (on a small
 * or nearly full filesystem, well before the ring or the log zone fills).
 */
static bool log_commit_due(struct smr_cow *c)
{
	struct smr_space sp;

	if (!c->alloc)
		return false;
	smr_alloc_space(c->alloc, &sp);
	return 4 * (uint64_t)smr_cache_dirty_bytes(c) > sp.reserved;
}

int smr_log_record_locked(struct smr_cow *c)
{
	struct log_buf b = { 0 };
	size_t nclaims = 0;
	uint32_t nr;
	int rc;

	if (!c->log_on || !c->log_base_ok || !c->sops->log_write ||
	    __atomic_load_n(&c->log_broken, __ATOMIC_ACQUIRE) ||
	    log_commit_due(c))
		return 1;
	b.cap = LOG_MAX_PAYLOAD;
	b.p = malloc(b.cap);
	if (!b.p)
		return 1;
	pthread_mutex_lock(&c->log_lock);
	rc = log_build(c, &b, &nclaims);
	pthread_mutex_unlock(&c->log_lock);
	if (rc) {
		free(b.p);
		return 1; /* too big: commit */
	}
	nr = (uint32_t)SMR_DIV_ROUND_UP(b.n, SMR_LOG_PIECE_ROOM);
	rc = c->sops->log_write(c, b.p, b.n, c->log_seq + 1, nr);
	free(b.p);
	if (rc)
		return rc; /* 1: no room, commit; or the write's error */
	c->log_seq++;
	c->log_durable = c->log_change;
	__atomic_fetch_add(&c->stats.log_records, 1, __ATOMIC_RELAXED);
	/* The claims are in a durable record now, and so are the frees: the
	 * next record carries only what comes after (LOG_FREES). Without
	 * the feature every record carries all since the checkpoint, so a
	 * record grows with every write until fsync must commit. */
	log_w_drop_settled(c);
	log_drop_ops(c);
	if (c->log_frees_delta)
		smr_xlist_clear(&c->log_frees);
	return 0;
}

/* ========================================================================
 * Replay
 * ======================================================================== */

struct log_rec {
	const uint8_t *p;
	size_t len;
	uint32_t nc, nf, ni;
	const uint8_t *claims, *frees, *items;
};

/* Check the payload's structure. 0 or -SMR_EFSCORRUPTED. */
static int rec_parse(const uint8_t *p, size_t len, struct log_rec *r)
{
	struct smr_dlog_head h;
	size_t at = sizeof(h);

	if (len < sizeof(h))
		return -SMR_EFSCORRUPTED;
	memcpy(&h, p, sizeof(h));
	r->p = p;
	r->len = len;
	r->nc = le32toh(h.nr_claims);
	r->nf = le32toh(h.nr_frees);
	r->ni = le32toh(h.nr_items);
	if (h.reserved || (uint64_t)r->nc * sizeof(struct smr_dlog_claim) +
			 (uint64_t)r->nf * sizeof(struct smr_dextent) > len - at)
		return -SMR_EFSCORRUPTED;
	r->claims = p + at;
	at += (size_t)r->nc * sizeof(struct smr_dlog_claim);
	r->frees = p + at;
	at += (size_t)r->nf * sizeof(struct smr_dextent);
	r->items = p + at;
	for (uint32_t i = 0; i < r->ni; i++) {
		struct smr_dlog_item d;
		size_t vl;

		if (len - at < sizeof(d))
			return -SMR_EFSCORRUPTED;
		memcpy(&d, p + at, sizeof(d));
		vl = le16toh(d.len);
		if (d.reserved || (d.op != SMR_LOG_OP_PUT &&
				   d.op != SMR_LOG_OP_DELETE) ||
		    (d.op == SMR_LOG_OP_DELETE && vl) ||
		    vl > SMR_COW_MAX_ITEM ||
		    len - at - sizeof(d) < SMR_ROUND_UP(vl, 8))
			return -SMR_EFSCORRUPTED;
		at += sizeof(d) + SMR_ROUND_UP(vl, 8);
	}
	return at == len ? 0 : -SMR_EFSCORRUPTED;
}

int smr_log_payload_parse(const uint8_t *p, size_t len, uint32_t *nr_claims,
			  uint32_t *nr_frees, uint32_t *nr_items)
{
	struct log_rec r;
	int rc = rec_parse(p, len, &r);

	if (rc)
		return rc;
	*nr_claims = r.nc;
	*nr_frees = r.nf;
	*nr_items = r.ni;
	return 0;
}

static void claim_get(const struct log_rec *r, uint32_t i,
		      struct smr_dlog_claim *d)
{
	memcpy(d, r->claims + (size_t)i * sizeof(*d), sizeof(*d));
}

/* Is [@off, @off + @len) whole blocks of the data area? */
static bool rec_extent_ok(const struct smr_cow *c, uint64_t off, uint64_t len)
{
	return len && off >= c->sb.data_start && len <= c->sb.capacity &&
	       off <= c->sb.capacity - len && !(off % c->sb.block_size) &&
	       !(len % c->sb.block_size);
}

/* Does every extent @r claims or frees lie in the data area (a claim of at
 * most 64 MiB, what one write makes)? */
static bool rec_extents_ok(const struct smr_cow *c, const struct log_rec *r)
{
	for (uint32_t i = 0; i < r->nc; i++) {
		struct smr_dlog_claim d;

		claim_get(r, i, &d);
		if (!rec_extent_ok(c, le64toh(d.off), le64toh(d.len)) ||
		    le64toh(d.len) > 64 * SMR_MIB)
			return false;
	}
	for (uint32_t i = 0; i < r->nf; i++) {
		struct smr_dextent d;

		memcpy(&d, r->frees + (size_t)i * sizeof(d), sizeof(d));
		if (!rec_extent_ok(c, le64toh(d.off), le64toh(d.len)))
			return false;
	}
	return true;
}

/* Does every extent @r claims hold what it held when the record was
 * written? 0, 1 if not, or a read error. */
static int rec_verify_data(struct smr_cow *c, const struct log_rec *r)
{
	for (uint32_t i = 0; i < r->nc; i++) {
		struct smr_dlog_claim d;
		uint64_t off, len;
		void *buf;
		int rc;

		claim_get(r, i, &d);
		off = le64toh(d.off);
		len = le64toh(d.len);
		buf = smr_dev_buf_alloc(len);
		if (!buf)
			return -ENOMEM;
		rc = smr_dev_read(c->dev, buf, len, off);
		if (!rc && smr_hash64(buf, len, 0) != le64toh(d.csum))
			rc = 1;
		smr_dev_buf_free(buf);
		if (rc)
			return rc;
	}
	return 0;
}

/* Take [@off, @off + @len) out of @l; the bytes taken are added to
 * *@taken. -ENOMEM. */
static int xlist_cut(struct smr_xlist *l, uint64_t off, uint64_t len,
		     uint64_t *taken)
{
	uint64_t end = off + len;

	for (size_t i = 0; i < l->n; i++) {
		struct smr_extent *x = &l->x[i];
		uint64_t xe = x->off + x->len;

		if (xe <= off || x->off >= end)
			continue;
		*taken += SMR_MIN(xe, end) - SMR_MAX(x->off, off);
		l->bytes -= SMR_MIN(xe, end) - SMR_MAX(x->off, off);
		if (x->off < off && xe > end) {
			/* Split: the tail goes to the end of the list. */
			x->len = off - x->off;
			l->bytes -= xe - end;
			return smr_xlist_add(l, end, xe - end);
		}
		if (x->off < off) {
			x->len = off - x->off;
		} else if (xe > end) {
			x->len = xe - end;
			x->off = end;
		} else {
			l->x[i--] = l->x[--l->n];
		}
	}
	return 0;
}

/* Is any byte of [@off, @off + @len) in @l? */
static bool xlist_hits(const struct smr_xlist *l, uint64_t off, uint64_t len)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->x[i].off < off + len && off < l->x[i].off + l->x[i].len)
			return true;
	return false;
}

/*
 * Claim @d: data the record's trees reference. Data in flight when the
 * checkpoint was taken is counted used by its allocator state and listed
 * among what it released (free_prev): it only leaves that list. The rest
 * was written after the checkpoint and is claimed from the allocator.
 */
static int rec_claim(struct smr_cow *c, const struct smr_dlog_claim *d)
{
	uint64_t off = le64toh(d->off), len = le64toh(d->len), taken = 0;
	int rc;

	if (xlist_hits(&c->free_prev, off, len)) {
		rc = xlist_cut(&c->free_prev, off, len, &taken);
		if (rc)
			return rc;
		if (taken != len)
			return smr_corrupt(off, "fsync log: claim partly in flight");
	} else {
		rc = smr_alloc_claim(c->alloc, off, len);
		if (rc)
			return rc == -EINVAL ? smr_corrupt(off, "fsync log: claimed data is not free") : rc;
	}
	if (d->flags & SMR_LOG_CLAIM_OWNED) {
		struct smr_key owner = {
			.objid = le64toh(d->owner_objid),
			.type = d->owner_type,
			.offset = le64toh(d->owner_offset),
		};

		rc = smr_rmap_put_locked(c, off, len, &owner);
	}
	return rc;
}

static int rec_apply_items(struct smr_cow *c, const struct log_rec *r)
{
	const uint8_t *p = r->items;
	int rc = 0;

	for (uint32_t i = 0; i < r->ni && !rc; i++) {
		struct smr_dlog_item d;
		struct smr_nkey k;
		size_t vl;

		memcpy(&d, p, sizeof(d));
		vl = le16toh(d.len);
		k.objid = le64toh(d.objid);
		k.type = d.type;
		k.offset = le64toh(d.offset);
		if (d.op == SMR_LOG_OP_PUT) {
			rc = smr_bt_modify_locked(c, SMR_TREE_FS, &k,
						  p + sizeof(d), vl,
						  SMR_BT_PUT);
		} else {
			rc = smr_bt_delete_locked(c, SMR_TREE_FS, &k);
			if (rc == -ENOENT)
				rc = 0;
		}
		p += sizeof(d) + SMR_ROUND_UP(vl, 8);
	}
	return rc;
}

/* The FS tree's type for a replay before the layer above registered its
 * own: every item was checked when it was first made. */
static const struct smr_tree_type log_fs_type = {
	.id = SMR_TREE_FS,
	.name = "fs",
	.max_item = SMR_COW_MAX_ITEM,
};

int smr_log_replay(struct smr_cow *c, uint8_t **recs, const size_t *lens,
		   uint32_t n)
{
	struct log_rec *r;
	uint32_t good = 0;
	const struct smr_tree_type *saved;
	int rc = 0;

	if (!n)
		return 0;
	r = calloc(n, sizeof(*r));
	if (!r)
		return -ENOMEM;
	for (good = 0; good < n; good++) {
		if (rec_parse(recs[good], lens[good], &r[good]) ||
		    !rec_extents_ok(c, &r[good])) {
			smr_warn("fsync log record %u after generation %" PRIu64
				 ": bad contents; it and those after it are ignored",
				 good + 1, c->gen);
			break;
		}
		rc = rec_verify_data(c, &r[good]);
		if (rc < 0)
			goto out;
		if (rc) {
			smr_warn("fsync log record %u after generation %" PRIu64
				 ": its data did not reach the disk (its fsync "
				 "never returned); it and those after it are ignored",
				 good + 1, c->gen);
			rc = 0;
			break;
		}
	}
	if (!good)
		goto out;
	pthread_rwlock_wrlock(&c->lock);
	saved = c->types[SMR_TREE_FS];
	if (!saved)
		c->types[SMR_TREE_FS] = &log_fs_type;
	for (uint32_t i = 0; i < good && !rc; i++) {
		struct smr_dlog_claim d;

		for (uint32_t k = 0; k < r[i].nc && !rc; k++) {
			claim_get(&r[i], k, &d);
			rc = rec_claim(c, &d);
		}
		if (!rc)
			rc = rec_apply_items(c, &r[i]);
	}
	/* Each record's frees are those since the record before it
	 * (LOG_FREES); else they are cumulative: the last record's hold them
	 * all. */
	for (uint32_t i = c->log_frees_delta ? 0 : good - 1; i < good && !rc;
	     i++) {
		for (uint32_t k = 0; k < r[i].nf && !rc; k++) {
			struct smr_dextent d;
			uint64_t off, len;

			memcpy(&d, r[i].frees + (size_t)k * sizeof(d),
			       sizeof(d));
			off = le64toh(d.off);
			len = le64toh(d.len);
			rc = smr_xlist_add(&c->free_cur, off, len);
			if (!rc)
				rc = smr_rmap_trim_locked(c, off, len);
		}
	}
	c->types[SMR_TREE_FS] = saved;
	c->changed = true;
	pthread_rwlock_unlock(&c->lock);
	if (!rc) {
		c->log_replayed = good;
		smr_info("fsync log: %u record%s after generation %" PRIu64
			 " replayed", good, good == 1 ? "" : "s", c->gen);
	} else {
		smr_err("fsync log: replay failed (%s); fsck.smrfs can "
			"open the filesystem without the log", strerror(-rc));
	}
out:
	free(r);
	return rc;
}
