/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * extent_index.c - disjoint extents in two treaps (by address, by length).
 *
 * Each node sits in both trees at once. A treap keeps itself balanced with
 * random priorities, needs no rotations bookkeeping beyond split and merge,
 * and gives O(log n) expected depth; the priorities come from a per-index
 * xorshift so that runs are reproducible.
 */
#include "alloc/extent_index.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct smr_xnode {
	uint64_t off;
	uint64_t len;
	uint32_t prio;
	struct smr_xnode *l[2];
	struct smr_xnode *r[2];
};

/* Keys: tree 0 (off, 0), tree 1 (len, off); compared lexicographically. */
struct xkey {
	uint64_t a;
	uint64_t b;
};

static struct xkey key_of(const struct smr_xnode *n, int w)
{
	struct xkey k;

	if (w == 0) {
		k.a = n->off;
		k.b = 0;
	} else {
		k.a = n->len;
		k.b = n->off;
	}
	return k;
}

static int key_cmp(struct xkey x, struct xkey y)
{
	if (x.a != y.a)
		return x.a < y.a ? -1 : 1;
	if (x.b != y.b)
		return x.b < y.b ? -1 : 1;
	return 0;
}

/* Split @t into nodes with key < @k (*@lo) and key >= @k (*@hi). */
static void xsplit(struct smr_xnode *t, int w, struct xkey k,
		   struct smr_xnode **lo, struct smr_xnode **hi)
{
	if (!t) {
		*lo = *hi = NULL;
		return;
	}
	if (key_cmp(key_of(t, w), k) < 0) {
		xsplit(t->r[w], w, k, &t->r[w], hi);
		*lo = t;
	} else {
		xsplit(t->l[w], w, k, lo, &t->l[w]);
		*hi = t;
	}
}

/* Join two treaps, every key of @a below every key of @b. */
static struct smr_xnode *xmerge(struct smr_xnode *a, struct smr_xnode *b,
				int w)
{
	if (!a)
		return b;
	if (!b)
		return a;
	if (a->prio >= b->prio) {
		a->r[w] = xmerge(a->r[w], b, w);
		return a;
	}
	b->l[w] = xmerge(a, b->l[w], w);
	return b;
}

static void tree_insert(struct smr_xidx *x, struct smr_xnode *n, int w)
{
	struct smr_xnode *lo, *hi;

	n->l[w] = n->r[w] = NULL;
	xsplit(x->root[w], w, key_of(n, w), &lo, &hi);
	x->root[w] = xmerge(xmerge(lo, n, w), hi, w);
}

static void tree_remove(struct smr_xidx *x, struct smr_xnode *n, int w)
{
	struct smr_xnode *lo, *mid, *hi;
	struct xkey k = key_of(n, w), k1 = k;

	k1.b++;
	xsplit(x->root[w], w, k, &lo, &mid);
	xsplit(mid, w, k1, &mid, &hi);
	/* mid is n alone: keys are unique in both trees. */
	x->root[w] = xmerge(lo, hi, w);
}

/* What an extent of @len bytes adds to ubytes. */
static uint64_t in_units(const struct smr_xidx *x, uint64_t len)
{
	return x->unit ? len - len % x->unit : len;
}

static void node_link(struct smr_xidx *x, struct smr_xnode *n)
{
	tree_insert(x, n, 0);
	tree_insert(x, n, 1);
	x->nr++;
	x->bytes += n->len;
	x->ubytes += in_units(x, n->len);
}

static void node_unlink(struct smr_xidx *x, struct smr_xnode *n)
{
	tree_remove(x, n, 0);
	tree_remove(x, n, 1);
	x->nr--;
	x->bytes -= n->len;
	x->ubytes -= in_units(x, n->len);
}

/* First node with key >= @k. */
static struct smr_xnode *lower_bound(struct smr_xnode *t, int w,
				     struct xkey k)
{
	struct smr_xnode *c = NULL;

	while (t) {
		if (key_cmp(key_of(t, w), k) >= 0) {
			c = t;
			t = t->l[w];
		} else {
			t = t->r[w];
		}
	}
	return c;
}

/* Last node with key <= @k. */
static struct smr_xnode *floor_of(struct smr_xnode *t, int w, struct xkey k)
{
	struct smr_xnode *c = NULL;

	while (t) {
		if (key_cmp(key_of(t, w), k) <= 0) {
			c = t;
			t = t->r[w];
		} else {
			t = t->l[w];
		}
	}
	return c;
}

static uint32_t next_prio(struct smr_xidx *x)
{
	uint64_t s = x->seed;

	s ^= s >> 12;
	s ^= s << 25;
	s ^= s >> 27;
	x->seed = s;
	return (uint32_t)((s * 0x2545f4914f6cdd1dULL) >> 32);
}

/*
 * Nodes that removals and merges free are kept (up to SMR_XIDX_SPARE) for
 * the next inserts: extents just taken out can always be put back without
 * memory, so an allocator that gives back a pick does not lose them to an
 * ENOMEM (they would be neither free nor used until fsck).
 */
static struct smr_xnode *node_new(struct smr_xidx *x)
{
	struct smr_xnode *n = x->spare;

	if (n) {
		x->spare = n->l[0];
		x->nr_spare--;
		memset(n, 0, sizeof(*n));
	} else {
		n = calloc(1, sizeof(*n));
	}
	if (n)
		n->prio = next_prio(x);
	return n;
}

static void node_put(struct smr_xidx *x, struct smr_xnode *n)
{
	if (x->nr_spare >= SMR_XIDX_SPARE) {
		free(n);
		return;
	}
	n->l[0] = x->spare;
	x->spare = n;
	x->nr_spare++;
}

void smr_xidx_init(struct smr_xidx *x)
{
	x->root[0] = x->root[1] = NULL;
	x->nr = 0;
	x->bytes = 0;
	x->unit = 0;
	x->ubytes = 0;
	x->seed = 0x9e3779b97f4a7c15ULL;
	x->spare = NULL;
	x->nr_spare = 0;
}

static void free_tree(struct smr_xnode *t)
{
	/* Walk tree 0 only: every node is in it exactly once. */
	while (t) {
		struct smr_xnode *r = t->r[0];

		free_tree(t->l[0]);
		free(t);
		t = r;
	}
}

void smr_xidx_destroy(struct smr_xidx *x)
{
	free_tree(x->root[0]);
	x->root[0] = x->root[1] = NULL;
	x->nr = 0;
	x->bytes = 0;
	x->ubytes = 0;
	while (x->spare) {
		struct smr_xnode *n = x->spare;

		x->spare = n->l[0];
		free(n);
	}
	x->nr_spare = 0;
}

static struct smr_xnode *node_at_or_before(const struct smr_xidx *x,
					   uint64_t off)
{
	struct xkey k = { off, 0 };

	return floor_of(x->root[0], 0, k);
}

static struct smr_xnode *node_after(const struct smr_xidx *x, uint64_t off)
{
	struct xkey k = { off + 1, 0 };

	return lower_bound(x->root[0], 0, k);
}

bool smr_xidx_overlaps(const struct smr_xidx *x, uint64_t off, uint64_t len)
{
	struct smr_xnode *p = node_at_or_before(x, off);
	struct smr_xnode *n = node_after(x, off);

	if (p && p->off + p->len > off)
		return true;
	return n && n->off < off + len;
}

void smr_xidx_set_unit(struct smr_xidx *x, uint64_t unit)
{
	struct smr_extent e;
	uint64_t at = 0;

	x->unit = unit;
	x->ubytes = 0;
	while (!smr_xidx_next(x, at, &e)) {
		x->ubytes += in_units(x, e.len);
		at = e.off + e.len;
	}
}

/* Link @m, which overlaps nothing in @x, merging it with the extents it
 * touches (a node merged away is kept as a spare). */
static void node_insert(struct smr_xidx *x, struct smr_xnode *m)
{
	struct smr_xnode *p = node_at_or_before(x, m->off);
	struct smr_xnode *n = node_after(x, m->off);

	if (p && p->off + p->len == m->off) {
		node_unlink(x, p);
		p->len += m->len;
		node_put(x, m);
		m = p;
	}
	if (n && n->off == m->off + m->len) {
		node_unlink(x, n);
		m->len += n->len;
		node_put(x, n);
	}
	node_link(x, m);
}

int smr_xidx_insert(struct smr_xidx *x, uint64_t off, uint64_t len)
{
	struct smr_xnode *p, *n, *m;

	if (!len)
		return -EINVAL;
	if (smr_xidx_overlaps(x, off, len))
		return -EEXIST;
	p = node_at_or_before(x, off);
	n = node_after(x, off);
	/* An extent that touches one needs no node of its own. */
	if (p && p->off + p->len == off) {
		m = p;
	} else if (n && n->off == off + len) {
		m = n;
	} else {
		m = node_new(x);
		if (!m)
			return -ENOMEM;
		m->off = off;
		m->len = len;
		node_insert(x, m);
		return 0;
	}
	node_unlink(x, m);
	if (m == n)
		m->off = off;
	m->len += len;
	node_insert(x, m);
	return 0;
}

int smr_xidx_move(struct smr_xidx *to, struct smr_xidx *from)
{
	struct smr_xnode *n;

	while ((n = from->root[0])) {
		if (smr_xidx_overlaps(to, n->off, n->len))
			return -EEXIST;
		node_unlink(from, n);
		node_insert(to, n);
	}
	return 0;
}

int smr_xidx_remove(struct smr_xidx *x, uint64_t off, uint64_t len)
{
	struct smr_xnode *c = node_at_or_before(x, off), *tail = NULL;
	uint64_t end = off + len, cend;

	if (!len || !c || c->off + c->len < end)
		return -ENOENT;
	cend = c->off + c->len;
	if (end < cend && c->off < off) {
		tail = node_new(x);
		if (!tail)
			return -ENOMEM;
	}
	node_unlink(x, c);
	if (c->off < off) {
		c->len = off - c->off;
		node_link(x, c);
		if (tail) {
			tail->off = end;
			tail->len = cend - end;
			node_link(x, tail);
		}
	} else if (end < cend) {
		c->off = end;
		c->len = cend - end;
		node_link(x, c);
	} else {
		node_put(x, c);
	}
	return 0;
}

static void to_ext(const struct smr_xnode *n, struct smr_extent *e)
{
	e->off = n->off;
	e->len = n->len;
}

int smr_xidx_containing(const struct smr_xidx *x, uint64_t off,
			struct smr_extent *e)
{
	struct smr_xnode *p = node_at_or_before(x, off);

	if (!p || p->off + p->len <= off)
		return -ENOENT;
	to_ext(p, e);
	return 0;
}

int smr_xidx_next(const struct smr_xidx *x, uint64_t off,
		  struct smr_extent *e)
{
	struct xkey k = { off, 0 };
	struct smr_xnode *n = lower_bound(x->root[0], 0, k);

	if (!n)
		return -ENOENT;
	to_ext(n, e);
	return 0;
}

static uint64_t dist(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

int smr_xidx_best_fit(const struct smr_xidx *x, uint64_t len, uint64_t near,
		      struct smr_extent *e)
{
	struct xkey k = { len, 0 };
	struct smr_xnode *n = lower_bound(x->root[1], 1, k), *c1, *c2;

	if (!n)
		return -ENOENT;
	if (near) {
		/* Of the extents of exactly this length, the nearest. */
		k.a = n->len;
		k.b = near;
		c1 = lower_bound(x->root[1], 1, k);
		c2 = floor_of(x->root[1], 1, k);
		if (c1 && c1->len != n->len)
			c1 = NULL;
		if (c2 && c2->len != n->len)
			c2 = NULL;
		if (c1 && c2)
			n = dist(c1->off, near) <= dist(c2->off, near) ? c1 : c2;
		else if (c1 || c2)
			n = c1 ? c1 : c2;
	}
	to_ext(n, e);
	return 0;
}

int smr_xidx_largest(const struct smr_xidx *x, struct smr_extent *e)
{
	struct smr_xnode *t = x->root[1];

	if (!t)
		return -ENOENT;
	while (t->r[1])
		t = t->r[1];
	to_ext(t, e);
	return 0;
}
