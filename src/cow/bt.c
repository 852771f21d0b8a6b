/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bt.c - the copy-on-write B+tree and its node cache.
 *
 * Nodes live in memory as their on-disk image (format/node.h). A node
 * written by an earlier commit is clean and never changes: to modify it, the
 * tree copies it into a new dirty node (copy-on-write), which gets a
 * temporary address (SMR_TMP_ADDR) until the commit writes it, and records
 * the old address as released. A dirty node is modified in place until the
 * commit: it has never been written, so nothing on disk refers to it.
 *
 * Keys in internal nodes: entry i's key is <= every key in child i's subtree
 * and > every key in child i-1's. A search goes to the last entry whose key
 * is <= the key searched (or entry 0). Splits set the new right node's key
 * to its first key; a new smallest key lowers the keys on the path's
 * leftmost edge (fixup_low_keys).
 *
 * Deletion keeps every non-root node at least a quarter full: an underfull
 * node is merged into a sibling when both fit in one node, otherwise items
 * are moved from the sibling so that the two hold about the same bytes. A
 * node under half full is merged too when both fit: keys that only grow
 * (inode numbers, readdir sequences) never refill the leaves that deletes
 * have half emptied, which would otherwise keep their space for good. A
 * root with one child is replaced by the child.
 *
 * Cache: a hash of address -> node; clean nodes are on an LRU list and are
 * evicted (oldest first, unless a path holds them) when the cache passes
 * c->cache_bytes; dirty nodes stay until the commit writes them.
 */
#include "cow/cow_priv.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* ========================================================================
 * Small helpers
 * ======================================================================== */

int smr_xlist_add(struct smr_xlist *l, uint64_t off, uint64_t len)
{
	if (l->n && l->x[l->n - 1].off + l->x[l->n - 1].len == off) {
		l->x[l->n - 1].len += len;
		l->bytes += len;
		return 0;
	}
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		struct smr_extent *x = realloc(l->x, cap * sizeof(*x));

		if (!x)
			return -ENOMEM;
		l->x = x;
		l->cap = cap;
	}
	l->x[l->n].off = off;
	l->x[l->n].len = len;
	l->n++;
	l->bytes += len;
	return 0;
}

void smr_xlist_clear(struct smr_xlist *l)
{
	l->n = 0;
	l->bytes = 0;
}

static void *smr_node_buf_alloc(size_t len)
{
	void *p = NULL;

	if (posix_memalign(&p, SMR_DEV_BUF_ALIGN, len))
		return NULL;
	return p;
}

/* ========================================================================
 * Node cache
 * ======================================================================== */

static void nlist_init(struct smr_nlist *l)
{
	l->head.next = l->head.prev = &l->head;
	l->n = 0;
}

static void nlist_del(struct smr_nlist *l, struct smr_node *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->prev = n->next = NULL;
	/* Changed under cache_lock; read without it (smr_cache_dirty_bytes). */
	__atomic_store_n(&l->n, l->n - 1, __ATOMIC_RELAXED);
}

static void nlist_add_tail(struct smr_nlist *l, struct smr_node *n)
{
	n->prev = l->head.prev;
	n->next = &l->head;
	l->head.prev->next = n;
	l->head.prev = n;
	__atomic_store_n(&l->n, l->n + 1, __ATOMIC_RELAXED);
}

static size_t hash_of(struct smr_cow *c, uint64_t addr)
{
	uint64_t h = addr * 0x9e3779b97f4a7c15ULL;

	return (size_t)(h >> 20) & (c->hash_size - 1);
}

int smr_cache_init(struct smr_cow *c)
{
	c->hash_size = 1 << 14;
	c->hash = calloc(c->hash_size, sizeof(*c->hash));
	if (!c->hash)
		return -ENOMEM;
	nlist_init(&c->lru);
	nlist_init(&c->dirty);
	c->scratch[0] = smr_node_buf_alloc(c->ns);
	c->scratch[1] = smr_node_buf_alloc(c->ns);
	if (!c->scratch[0] || !c->scratch[1])
		return -ENOMEM;
	c->next_tmp = 1;
	c->bt_shape = 1; /* a zeroed finger stands for nothing */
	return 0;
}

/* The trees' shape changed: every finger is void (see "Fingers"). */
static void bt_reshaped(struct smr_cow *c)
{
	__atomic_fetch_add(&c->bt_shape, 1, __ATOMIC_RELAXED);
}

/*
 * Node buffers are carved from slabs of SMR_NODE_SLAB buffers, each slab
 * mapped whole (page-aligned, so aligned for direct I/O). A new node takes a
 * free buffer of a slab already mapped before a slab is mapped, so the
 * memory mapped is at most the most nodes ever held at once plus a slab;
 * a slab whose buffers are all free is unmapped (one is kept, so that a
 * node taken and given back at a slab's edge does not map and unmap it
 * each time), so what a burst of dirty nodes took goes back after the
 * commit. posix_memalign of one node at a time cost a page more than the
 * node, for glibc's chunk header in front of the aligned buffer (a 64 MiB
 * cache of 16 KiB nodes took 80 MiB), and freeing and allocating a buffer
 * for every node a walk reads, from whichever thread's malloc arena,
 * fragmented the arenas until the daemon held several times the cache.
 */
#define SMR_NODE_SLAB 16

struct smr_slab {
	struct smr_slab *prev, *next; /* c->slabs, while one is free */
	uint8_t *mem;
	uint32_t free_mask;           /* bit i: buffer i is free */
};

#define SMR_SLAB_ALL ((uint32_t)((1ULL << SMR_NODE_SLAB) - 1))

static size_t slab_bytes(const struct smr_cow *c)
{
	return (size_t)SMR_NODE_SLAB * c->ns;
}

static void slab_unlink(struct smr_cow *c, struct smr_slab *sl)
{
	if (sl->prev)
		sl->prev->next = sl->next;
	else
		c->slabs = sl->next;
	if (sl->next)
		sl->next->prev = sl->prev;
	sl->next = sl->prev = NULL;
}

static void slab_push(struct smr_cow *c, struct smr_slab *sl)
{
	sl->prev = NULL;
	sl->next = c->slabs;
	if (c->slabs)
		c->slabs->prev = sl;
	c->slabs = sl;
}

static void slab_unmap(struct smr_cow *c, struct smr_slab *sl)
{
	munmap(sl->mem, slab_bytes(c));
	c->stats.node_bytes -= slab_bytes(c);
	free(sl);
}

/* A free buffer for @n; cache_lock held. */
static int node_buf_get_locked(struct smr_cow *c, struct smr_node *n)
{
	struct smr_slab *sl = c->slabs;
	unsigned int i;

	if (!sl) {
		sl = calloc(1, sizeof(*sl));
		if (!sl)
			return -ENOMEM;
		sl->mem = mmap(NULL, slab_bytes(c), PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (sl->mem == MAP_FAILED) {
			free(sl);
			return -ENOMEM;
		}
		sl->free_mask = SMR_SLAB_ALL;
		c->stats.node_bytes += slab_bytes(c);
		slab_push(c, sl);
	} else if (sl == c->empty_slab) {
		c->empty_slab = NULL;
	}
	i = (unsigned int)__builtin_ctz(sl->free_mask);
	sl->free_mask &= ~(1U << i);
	if (!sl->free_mask)
		slab_unlink(c, sl); /* full */
	n->buf = sl->mem + (size_t)i * c->ns;
	n->slab = sl;
	return 0;
}

/* Give back @n's buffer; cache_lock held (or no other thread left). */
static void node_buf_put_locked(struct smr_cow *c, struct smr_node *n)
{
	struct smr_slab *sl = n->slab;
	unsigned int i = (unsigned int)((size_t)(n->buf - sl->mem) / c->ns);

	if (!sl->free_mask)
		slab_push(c, sl); /* first, to be filled again first */
	sl->free_mask |= 1U << i;
	n->buf = NULL;
	n->slab = NULL;
	if (sl->free_mask != SMR_SLAB_ALL)
		return;
	if (c->empty_slab) {
		slab_unlink(c, c->empty_slab);
		slab_unmap(c, c->empty_slab);
	}
	c->empty_slab = sl;
}

static struct smr_node *node_alloc(struct smr_cow *c)
{
	struct smr_node *n = calloc(1, sizeof(*n));
	int rc;

	if (!n)
		return NULL;
	pthread_mutex_lock(&c->cache_lock);
	rc = node_buf_get_locked(c, n);
	pthread_mutex_unlock(&c->cache_lock);
	if (rc) {
		free(n);
		return NULL;
	}
	return n;
}

/* Give back a node that is in no list or hash; cache_lock held (or no
 * other thread left). */
static void node_release_locked(struct smr_cow *c, struct smr_node *n)
{
	node_buf_put_locked(c, n);
	free(n);
}

static void node_release(struct smr_cow *c, struct smr_node *n)
{
	pthread_mutex_lock(&c->cache_lock);
	node_release_locked(c, n);
	pthread_mutex_unlock(&c->cache_lock);
}

void smr_cache_fini(struct smr_cow *c)
{
	if (c->hash) {
		for (size_t i = 0; i < c->hash_size; i++) {
			struct smr_node *n = c->hash[i], *next;

			for (; n; n = next) {
				next = n->hnext;
				node_release_locked(c, n);
			}
		}
	}
	while (c->slabs) {
		struct smr_slab *sl = c->slabs;

		slab_unlink(c, sl);
		slab_unmap(c, sl);
	}
	c->empty_slab = NULL;
	free(c->hash);
	free(c->scratch[0]);
	free(c->scratch[1]);
	c->hash = NULL;
}

static void hash_grow(struct smr_cow *c)
{
	size_t old = c->hash_size, size = old * 2;
	struct smr_node **h = calloc(size, sizeof(*h)), **oh = c->hash;

	if (!h)
		return; /* keep the longer chains */
	c->hash = h;
	c->hash_size = size;
	for (size_t i = 0; i < old; i++) {
		struct smr_node *n = oh[i], *next;

		for (; n; n = next) {
			size_t b = hash_of(c, n->addr);

			next = n->hnext;
			n->hnext = h[b];
			h[b] = n;
		}
	}
	free(oh);
}

static void hash_add(struct smr_cow *c, struct smr_node *n)
{
	size_t b;

	if (c->nr_cached >= c->hash_size * 2)
		hash_grow(c);
	b = hash_of(c, n->addr);
	n->hnext = c->hash[b];
	c->hash[b] = n;
	c->nr_cached++;
	bt_reshaped(c);
}

static void hash_del(struct smr_cow *c, struct smr_node *n)
{
	struct smr_node **pp = &c->hash[hash_of(c, n->addr)];

	while (*pp && *pp != n)
		pp = &(*pp)->hnext;
	if (*pp) {
		*pp = n->hnext;
		c->nr_cached--;
	}
	n->hnext = NULL;
	bt_reshaped(c);
}

static struct smr_node *hash_find(struct smr_cow *c, uint64_t addr)
{
	struct smr_node *n = c->hash[hash_of(c, addr)];

	while (n && n->addr != addr)
		n = n->hnext;
	return n;
}

/* Evict clean unpinned nodes, oldest first, until under the bound. Called
 * with cache_lock held. */
static void cache_shrink_locked(struct smr_cow *c)
{
	struct smr_node *n = c->lru.head.next, *next;

	while (c->nr_cached * (size_t)c->ns > c->cache_bytes &&
	       n != &c->lru.head) {
		next = n->next;
		if (!n->pin) {
			nlist_del(&c->lru, n);
			hash_del(c, n);
			node_release_locked(c, n);
			__atomic_fetch_add(&c->stats.evictions, 1,
					   __ATOMIC_RELAXED);
		}
		n = next;
	}
}

void smr_cache_shrink(struct smr_cow *c)
{
	pthread_mutex_lock(&c->cache_lock);
	cache_shrink_locked(c);
	pthread_mutex_unlock(&c->cache_lock);
}

void smr_cow_drop_cache(struct smr_cow *c)
{
	size_t bound;

	pthread_mutex_lock(&c->cache_lock);
	bound = c->cache_bytes;
	c->cache_bytes = 0;
	cache_shrink_locked(c);
	c->cache_bytes = bound;
	pthread_mutex_unlock(&c->cache_lock);
}

/* A count alone: no lock (every transaction asks, to bound the dirty
 * nodes; a count a moment old bounds them as well). */
size_t smr_cache_dirty_bytes(struct smr_cow *c)
{
	return __atomic_load_n(&c->dirty.n, __ATOMIC_RELAXED) * c->ns;
}

static void node_put(struct smr_cow *c, struct smr_node *n)
{
	if (!n)
		return;
	pthread_mutex_lock(&c->cache_lock);
	n->pin--;
	pthread_mutex_unlock(&c->cache_lock);
}

/*
 * Read and verify the node at @addr (a cache miss): a new node, pinned,
 * in no list or hash yet. Called without cache_lock.
 */
static int node_load(struct smr_cow *c, uint32_t tree, uint64_t addr,
		     uint64_t gen, uint16_t level, struct smr_node **np)
{
	struct smr_node *n;
	struct smr_blk_expect exp = { .addr = addr, .gen = gen, .owner = tree,
				      .uuid = c->sb.uuid };
	int rc;

	if (addr & SMR_TMP_ADDR)
		return smr_corrupt(addr, "btree: dangling reference to an unwritten node");
	n = node_alloc(c);
	if (!n)
		return -ENOMEM;
	rc = c->sops->read(c, addr, n->buf, c->ns);
	if (rc) {
		char tb[16];

		smr_err("btree node at byte %" PRIu64 " of tree %s: read "
			"failed: %s", addr,
			smr_tree_name_locked(c, tree, tb, sizeof(tb)),
			strerror(-rc));
		goto out_free;
	}
	__atomic_fetch_add(&c->stats.node_reads, 1, __ATOMIC_RELAXED);
	rc = smr_blk_verify(n->buf, c->ns, &smr_node_ops, &exp);
	if (rc == -SMR_EFSBADCRC &&
	    !smr_blk_fix_bit(n->buf, c->ns, &smr_node_ops, &exp)) {
		char tb[16];

		smr_warn("btree node at byte %" PRIu64 " of tree %s: one bit "
			 "flipped, restored from its checksum (fsck.smrfs "
			 "rewrites it)", addr,
			 smr_tree_name_locked(c, tree, tb, sizeof(tb)));
		if (tree >= 1 && tree <= SMR_COW_MAX_TREE)
			__atomic_fetch_add(&c->trees[tree].restored, 1,
					   __ATOMIC_RELAXED);
		rc = 0;
	}
	if (rc)
		goto out_free;
	if (smr_node_level(n->buf) != level) {
		rc = smr_corrupt(addr, "btree node: level differs from the reference");
		goto out_free;
	}
	n->addr = addr;
	n->gen = gen;
	n->tree = tree;
	n->level = level;
	n->pin = 1;
	*np = n;
	return 0;

out_free:
	node_release(c, n);
	return rc;
}

/*
 * Get the node at @addr, which the reference says is at @level of @tree and
 * was written in @gen; read and verify it on a cache miss. Pinned on return.
 * Called with cache_lock held, and returns with it held; a miss drops it
 * while it reads. A search takes the lock once for its whole descent
 * rather than once a level: on a cache hit this is all a level costs.
 */
static int node_get_locked(struct smr_cow *c, uint32_t tree, uint64_t addr,
			   uint64_t gen, uint16_t level, struct smr_node **np)
{
	struct smr_node *n = hash_find(c, addr), *other;
	int rc;

	if (!n) {
		pthread_mutex_unlock(&c->cache_lock);
		rc = node_load(c, tree, addr, gen, level, &n);
		pthread_mutex_lock(&c->cache_lock);
		if (rc)
			return rc;
		other = hash_find(c, addr);
		if (!other) {
			hash_add(c, n);
			nlist_add_tail(&c->lru, n);
			cache_shrink_locked(c);
			*np = n;
			return 0;
		}
		/* Another reader loaded it meanwhile. */
		node_release_locked(c, n);
		n = other;
	}
	if (n->level != level || n->tree != tree || n->gen != gen)
		return smr_corrupt(addr, "btree node: cached node does not match its reference");
	n->pin++;
	if (!n->dirty) {
		nlist_del(&c->lru, n);
		nlist_add_tail(&c->lru, n);
	}
	*np = n;
	return 0;
}

static int node_get(struct smr_cow *c, uint32_t tree, uint64_t addr,
		    uint64_t gen, uint16_t level, struct smr_node **np)
{
	int rc;

	pthread_mutex_lock(&c->cache_lock);
	rc = node_get_locked(c, tree, addr, gen, level, np);
	pthread_mutex_unlock(&c->cache_lock);
	return rc;
}

/* A new, empty, dirty node (pinned). Exclusive lock held. */
static struct smr_node *node_new(struct smr_cow *c, uint32_t tree,
				 uint16_t level)
{
	struct smr_node *n = node_alloc(c);

	if (!n)
		return NULL;
	smr_node_init(n->buf, c->ns, level, tree);
	n->addr = SMR_TMP_ADDR | c->next_tmp++;
	n->gen = c->gen + 1;
	n->tree = tree;
	n->level = level;
	n->dirty = true;
	n->pin = 1;
	pthread_mutex_lock(&c->cache_lock);
	hash_add(c, n);
	nlist_add_tail(&c->dirty, n);
	pthread_mutex_unlock(&c->cache_lock);
	c->changed = true;
	return n;
}

/* Remove a node from the tree for good: a clean one's block is released. */
static int node_drop(struct smr_cow *c, struct smr_node *n)
{
	int rc = 0;

	if (!n->dirty)
		rc = smr_xlist_add(&c->free_cur, n->addr, c->ns);
	pthread_mutex_lock(&c->cache_lock);
	hash_del(c, n);
	nlist_del(n->dirty ? &c->dirty : &c->lru, n);
	node_release_locked(c, n);
	pthread_mutex_unlock(&c->cache_lock);
	c->changed = true;
	return rc;
}

/*
 * Copy-on-write: a dirty copy of clean node @n, which is dropped. The
 * caller's pin moves to the copy. Exclusive lock held.
 *
 * The clean node's image exists on the device; the cache needs no second
 * one. When the caller's pin is the only one, the node itself becomes the
 * copy: it takes a temporary address and moves to the dirty list, and its
 * block is released as a dropped node's is. This saves allocating, zeroing
 * and copying a node for every node a transaction touches first.
 */
static int node_cow(struct smr_cow *c, struct smr_node **np)
{
	struct smr_node *n = *np, *copy;
	int rc;

	if (n->dirty)
		return 0;
	pthread_mutex_lock(&c->cache_lock);
	if (n->pin == 1) {
		uint64_t old = n->addr;

		hash_del(c, n);
		nlist_del(&c->lru, n);
		n->addr = SMR_TMP_ADDR | c->next_tmp++;
		n->gen = c->gen + 1;
		n->dirty = true;
		hash_add(c, n);
		nlist_add_tail(&c->dirty, n);
		pthread_mutex_unlock(&c->cache_lock);
		c->changed = true;
		return smr_xlist_add(&c->free_cur, old, c->ns);
	}
	pthread_mutex_unlock(&c->cache_lock);
	copy = node_new(c, n->tree, n->level);
	if (!copy)
		return -ENOMEM;
	memcpy(copy->buf, n->buf, c->ns);
	rc = node_drop(c, n);
	*np = copy;
	return rc;
}

/* ========================================================================
 * Node primitives
 * ======================================================================== */

static uint32_t node_cap(struct smr_cow *c)
{
	return c->ns - SMR_NODE_HDR;
}

static uint32_t node_used(struct smr_cow *c, const struct smr_node *n)
{
	if (n->level)
		return smr_node_nritems(n->buf) * sizeof(struct smr_dkptr);
	return smr_leaf_used(n->buf, c->ns);
}

static void node_first_key(const struct smr_node *n, struct smr_nkey *k)
{
	if (n->level)
		smr_int_key(n->buf, 0, k);
	else
		smr_leaf_key(n->buf, 0, k);
}

static uint32_t leaf_free(struct smr_cow *c, const void *b)
{
	return smr_node_data_off(b) - SMR_NODE_HDR -
	       smr_node_nritems(b) * sizeof(struct smr_ditem);
}

/* Insert an item at slot @i of a leaf that has room for it. */
static void leaf_insert_at(struct smr_cow *c, uint8_t *b, uint32_t i,
			   const struct smr_nkey *k, const void *val,
			   uint32_t len)
{
	uint32_t n = smr_node_nritems(b), doff = smr_node_data_off(b);
	uint32_t end = i ? smr_leaf_valoff(b, i - 1) : c->ns;

	memmove(b + doff - len, b + doff, end - doff);
	for (uint32_t j = i; j < n; j++)
		smr_leaf_set_valoff(b, j, smr_leaf_valoff(b, j) - len);
	memmove(smr_leaf_item(b, i + 1), smr_leaf_item(b, i),
		(n - i) * sizeof(struct smr_ditem));
	smr_leaf_set_item(b, i, k, len, end - len);
	if (len)
		memcpy(b + end - len, val, len);
	smr_node_set_data_off(b, doff - len);
	smr_node_set_nritems(b, n + 1);
}

static void leaf_delete_at(uint8_t *b, uint32_t i)
{
	uint32_t n = smr_node_nritems(b), doff = smr_node_data_off(b);
	uint32_t sz = smr_leaf_size(b, i), vo = smr_leaf_valoff(b, i);

	memmove(b + doff + sz, b + doff, vo - doff);
	for (uint32_t j = i + 1; j < n; j++)
		smr_leaf_set_valoff(b, j, smr_leaf_valoff(b, j) + sz);
	memmove(smr_leaf_item(b, i), smr_leaf_item(b, i + 1),
		(n - i - 1) * sizeof(struct smr_ditem));
	memset(smr_leaf_item(b, n - 1), 0, sizeof(struct smr_ditem));
	memset(b + doff, 0, sz);
	smr_node_set_data_off(b, doff + sz);
	smr_node_set_nritems(b, n - 1);
}

static void int_insert_at(uint8_t *b, uint32_t i, const struct smr_nkey *k,
			  uint64_t addr, uint64_t gen)
{
	uint32_t n = smr_node_nritems(b);

	memmove(smr_int_ptr(b, i + 1), smr_int_ptr(b, i),
		(n - i) * sizeof(struct smr_dkptr));
	smr_int_set_key(b, i, k);
	smr_int_set_child(b, i, addr, gen);
	smr_node_set_nritems(b, n + 1);
}

static void int_delete_at(uint8_t *b, uint32_t i)
{
	uint32_t n = smr_node_nritems(b);

	memmove(smr_int_ptr(b, i), smr_int_ptr(b, i + 1),
		(n - i - 1) * sizeof(struct smr_dkptr));
	memset(smr_int_ptr(b, n - 1), 0, sizeof(struct smr_dkptr));
	smr_node_set_nritems(b, n - 1);
}

/* First slot whose key is >= @k; *@exact when equal. */
static uint32_t leaf_search(const void *b, const struct smr_nkey *k,
			    bool *exact)
{
	uint32_t lo = 0, hi = smr_node_nritems(b);
	struct smr_nkey m;

	*exact = false;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int cmp;

		smr_leaf_key(b, mid, &m);
		cmp = smr_nkey_cmp(&m, k);
		if (cmp == 0) {
			*exact = true;
			return mid;
		}
		if (cmp < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Last slot whose key is <= @k, or 0. */
static uint32_t int_search(const void *b, const struct smr_nkey *k)
{
	uint32_t lo = 0, hi = smr_node_nritems(b);
	struct smr_nkey m;

	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;

		smr_int_key(b, mid, &m);
		if (smr_nkey_cmp(&m, k) <= 0)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* ========================================================================
 * Redistribution: splits, merges and rebalancing all come down to laying
 * out the entries of two nodes (plus one new entry) over those two nodes.
 * ======================================================================== */

struct vent {
	struct smr_nkey key;
	const void *val;   /* leaf: value; internal: NULL */
	uint32_t size;     /* leaf: value bytes */
	uint64_t addr, gen; /* internal */
};

enum dist_mode { DIST_SPLIT, DIST_MERGE, DIST_BALANCE };

/*
 * Choose how many of the @n entries (byte sizes @sz) go to the left node: a
 * merge takes all; a split that appends at the end keeps the left node as
 * it was (sequential inserts then fill nodes); otherwise the split closest
 * to half the bytes where both sides fit. Returns -1 if nothing fits.
 */
static int dist_choose(const uint32_t *sz, int n, uint32_t cap,
		       enum dist_mode mode, int extra_at)
{
	uint64_t total = 0, pre = 0, best_d = UINT64_MAX;
	int best = -1;

	for (int i = 0; i < n; i++)
		total += sz[i];
	if (mode == DIST_MERGE)
		return total <= cap ? n : -1;
	if (mode == DIST_SPLIT && extra_at == n - 1 && total - sz[n - 1] <= cap)
		return n - 1;
	for (int k = 1; k < n; k++) {
		uint64_t d;

		pre += sz[k - 1];
		if (pre > cap)
			break;
		if (total - pre > cap)
			continue;
		d = pre * 2 > total ? pre * 2 - total : total - pre * 2;
		if (d < best_d) {
			best_d = d;
			best = k;
		}
	}
	return best;
}

/*
 * Lay out A's entries, then B's, with @extra inserted at virtual position
 * @extra_at (-1: none) over A and B. B may be a fresh empty node. Returns the
 * number of entries now in A, or a negative errno.
 */
static int redistribute(struct smr_cow *c, struct smr_node *a,
			struct smr_node *b, const struct vent *extra,
			int extra_at, enum dist_mode mode)
{
	uint32_t na = smr_node_nritems(a->buf), nb = smr_node_nritems(b->buf);
	int n = (int)(na + nb) + (extra_at >= 0), k, j = 0;
	bool leaf = a->level == 0;
	struct vent *v = malloc(sizeof(*v) * (size_t)(n ? n : 1));
	uint32_t *sz = malloc(sizeof(*sz) * (size_t)(n ? n : 1));
	uint8_t *out[2] = { c->scratch[0], c->scratch[1] };
	struct smr_node *dst[2] = { a, b };

	bt_reshaped(c);
	if (!v || !sz) {
		free(v);
		free(sz);
		return -ENOMEM;
	}
	for (int s = 0; s < 2; s++) {
		const uint8_t *buf = dst[s]->buf;
		uint32_t cnt = s ? nb : na;

		for (uint32_t i = 0; i < cnt; i++) {
			if (j == extra_at)
				v[j++] = *extra;
			if (leaf) {
				smr_leaf_key(buf, i, &v[j].key);
				v[j].size = smr_leaf_size(buf, i);
				v[j].val = buf + smr_leaf_valoff(buf, i);
			} else {
				smr_int_key(buf, i, &v[j].key);
				v[j].addr = smr_int_addr(buf, i);
				v[j].gen = smr_int_gen(buf, i);
			}
			j++;
		}
	}
	if (j == extra_at)
		v[j++] = *extra;
	for (int i = 0; i < n; i++)
		sz[i] = leaf ? v[i].size + sizeof(struct smr_ditem) :
			       sizeof(struct smr_dkptr);
	k = dist_choose(sz, n, node_cap(c), mode, extra_at);
	if (k < 0) {
		free(v);
		free(sz);
		return smr_corrupt(UINT64_MAX, "btree: entries fit in no split");
	}
	for (int s = 0; s < 2; s++) {
		int from = s ? k : 0, to = s ? n : k;

		memcpy(out[s], dst[s]->buf, SMR_NODE_HDR);
		memset(out[s] + SMR_NODE_HDR, 0, c->ns - SMR_NODE_HDR);
		smr_node_set_nritems(out[s], 0);
		smr_node_set_data_off(out[s], leaf ? c->ns : 0);
		for (int i = from; i < to; i++) {
			uint32_t at = (uint32_t)(i - from);

			if (leaf)
				leaf_insert_at(c, out[s], at, &v[i].key,
					       v[i].val, v[i].size);
			else
				int_insert_at(out[s], at, &v[i].key, v[i].addr,
					      v[i].gen);
		}
	}
	/* The values pointed into a and b: copy back only now. */
	memcpy(a->buf, out[0], c->ns);
	memcpy(b->buf, out[1], c->ns);
	free(v);
	free(sz);
	return k;
}

/* ========================================================================
 * Paths
 * ======================================================================== */

static void path_init(struct smr_path *p)
{
	memset(p, 0, sizeof(*p));
	p->top = -1;
}

/* Unpin the path's nodes, under one hold of cache_lock. */
static void path_release(struct smr_cow *c, struct smr_path *p)
{
	pthread_mutex_lock(&c->cache_lock);
	for (int l = 0; l < SMR_BT_MAX_LEVEL; l++) {
		if (p->n[l])
			p->n[l]->pin--;
		p->n[l] = NULL;
	}
	pthread_mutex_unlock(&c->cache_lock);
	p->top = -1;
}

static struct smr_tree *tree_get(struct smr_cow *c, uint32_t id)
{
	if (id < 1 || id > SMR_COW_MAX_TREE)
		return NULL;
	return &c->trees[id];
}

/* ========================================================================
 * Fingers
 *
 * A search remembers the leaf it found and the path to it (struct
 * smr_finger, a tree keeps SMR_BT_FINGERS), and the next search for a key
 * that leaf holds takes the path from there instead of walking down: the
 * searches of one write mostly land in a leaf searched just before (the
 * extent it replaces, found with the locality hint; its inode). Which leaf
 * holds a key is decided by the internal nodes alone: at each level the
 * child is the last entry whose key is <= the key, so the leaf holds keys
 * from the entry key of the lowest ancestor entered at a slot above 0 (no
 * bound if none) up to, not including, the next entry's key of the lowest
 * ancestor entered below its last slot (no bound if none).
 *
 * A finger is trusted only while c->bt_shape has not moved since it was
 * taken. Everything that changes which node is where moves it: a node
 * added to or taken out of the cache or given another address (hash_add,
 * hash_del: new nodes, copies, drops, evictions, the commit), the entries
 * of an internal node (insert_ptr, rebalance, fixup_low_keys,
 * redistribute), the roots (load, salvage). An item put, replaced or
 * deleted inside a leaf does not: the leaf slot is searched each time.
 * The finger's nodes are not pinned: one can only be freed once evicted
 * or dropped, and both move the shape first.
 * ======================================================================== */

/* A search for @key in @t from a finger: the path, pinned, in *@p (leaf
 * slot not set). cache_lock held. */
static bool finger_take(struct smr_cow *c, struct smr_tree *t,
			const struct smr_nkey *key, struct smr_path *p)
{
	uint64_t shape = __atomic_load_n(&c->bt_shape, __ATOMIC_RELAXED);

	for (int i = 0; i < SMR_BT_FINGERS; i++) {
		const struct smr_finger *f = &t->finger[i];

		if (f->shape != shape || f->path.top != t->level ||
		    f->path.n[f->path.top]->addr != t->addr)
			continue;
		if ((!f->lo_inf && smr_nkey_cmp(key, &f->lo) < 0) ||
		    (!f->hi_inf && smr_nkey_cmp(key, &f->hi) >= 0))
			continue;
		*p = f->path;
		/* The one not used longest goes next. */
		t->finger_next = (unsigned int)i + 1;
		for (int l = 0; l <= p->top; l++) {
			struct smr_node *n = p->n[l];

			n->pin++;
			if (!n->dirty) {
				nlist_del(&c->lru, n);
				nlist_add_tail(&c->lru, n);
			}
		}
		return true;
	}
	return false;
}

/* Remember the path @p a descent just took. cache_lock held. */
static void finger_keep(struct smr_cow *c, struct smr_tree *t,
			const struct smr_path *p)
{
	struct smr_finger *f = &t->finger[t->finger_next++ % SMR_BT_FINGERS];

	f->path = *p;
	f->lo_inf = f->hi_inf = true;
	for (int l = 1; l <= p->top; l++) {
		const uint8_t *b = p->n[l]->buf;
		uint32_t s = (uint32_t)p->slot[l];

		if (f->lo_inf && s > 0) {
			smr_int_key(b, s, &f->lo);
			f->lo_inf = false;
		}
		if (f->hi_inf && s + 1 < smr_node_nritems(b)) {
			smr_int_key(b, s + 1, &f->hi);
			f->hi_inf = false;
		}
	}
	f->shape = __atomic_load_n(&c->bt_shape, __ATOMIC_RELAXED);
}

/*
 * Walk from the root to the leaf where @key is or would be. Leaf slot = first
 * key >= @key. Returns 1 if found exactly, 0 if not, -ENOENT for an empty
 * tree, or an error.
 */
static int bt_search(struct smr_cow *c, struct smr_tree *t,
		     const struct smr_nkey *key, struct smr_path *p)
{
	struct smr_node *n;
	uint64_t addr = t->addr, gen = t->gen;
	bool exact = false;
	int rc;

	path_init(p);
	if (!addr)
		return -ENOENT;
	pthread_mutex_lock(&c->cache_lock);
	if (finger_take(c, t, key, p)) {
		p->slot[0] = (int)leaf_search(p->n[0]->buf, key, &exact);
		pthread_mutex_unlock(&c->cache_lock);
		return exact;
	}
	p->top = t->level;
	for (int l = t->level; l >= 0; l--) {
		rc = node_get_locked(c, t->id, addr, gen, (uint16_t)l, &n);
		if (rc)
			goto out_release;
		p->n[l] = n;
		if (l == 0) {
			p->slot[0] = (int)leaf_search(n->buf, key, &exact);
			break;
		}
		if (!smr_node_nritems(n->buf)) {
			rc = smr_corrupt(n->addr, "btree: empty internal node");
			goto out_release;
		}
		p->slot[l] = (int)int_search(n->buf, key);
		addr = smr_int_addr(n->buf, (uint32_t)p->slot[l]);
		gen = smr_int_gen(n->buf, (uint32_t)p->slot[l]);
	}
	finger_keep(c, t, p);
	pthread_mutex_unlock(&c->cache_lock);
	return exact;

out_release:
	pthread_mutex_unlock(&c->cache_lock);
	path_release(c, p);
	return rc;
}

/* Make every node of the path dirty, top down, fixing the pointers. */
static int path_cow(struct smr_cow *c, struct smr_tree *t, struct smr_path *p)
{
	int rc;

	for (int l = p->top; l >= 0; l--) {
		struct smr_node *n = p->n[l];

		if (n->dirty)
			continue;
		rc = node_cow(c, &p->n[l]);
		if (rc)
			return rc;
		n = p->n[l];
		if (l == p->top) {
			t->addr = n->addr;
			t->gen = n->gen;
		} else {
			smr_int_set_child(p->n[l + 1]->buf,
					  (uint32_t)p->slot[l + 1], n->addr,
					  n->gen);
		}
	}
	return 0;
}

/* The leaf's first key became @k: lower the keys above it (the path is
 * dirty). */
static void fixup_low_keys(struct smr_cow *c, struct smr_path *p,
			   int from_level, const struct smr_nkey *k)
{
	bt_reshaped(c);
	for (int l = from_level; l <= p->top; l++) {
		smr_int_set_key(p->n[l]->buf, (uint32_t)p->slot[l], k);
		if (p->slot[l])
			break;
	}
}

/* Insert a pointer to @child with key @k right after path slot at level
 * @l, splitting upwards as needed. */
static int insert_ptr(struct smr_cow *c, struct smr_tree *t,
		      struct smr_path *p, int l, const struct smr_nkey *k,
		      struct smr_node *child)
{
	struct smr_node *par, *q;
	struct smr_nkey fk;
	struct vent e = { .key = *k, .addr = child->addr, .gen = child->gen };
	uint32_t pos;
	int rc;

	bt_reshaped(c);

	if (l > p->top) {
		/* Grow a new root above the old one. */
		struct smr_node *old = p->n[l - 1];

		if (l >= SMR_BT_MAX_LEVEL)
			return -EFBIG;
		par = node_new(c, t->id, (uint16_t)l);
		if (!par)
			return -ENOMEM;
		node_first_key(old, &fk);
		int_insert_at(par->buf, 0, &fk, old->addr, old->gen);
		int_insert_at(par->buf, 1, k, child->addr, child->gen);
		t->addr = par->addr;
		t->gen = par->gen;
		t->level = (uint16_t)l;
		p->n[l] = par;
		p->slot[l] = 0;
		p->top = l;
		return 0;
	}
	par = p->n[l];
	pos = (uint32_t)p->slot[l] + 1;
	if (smr_node_nritems(par->buf) < smr_int_capacity(c->ns)) {
		int_insert_at(par->buf, pos, k, child->addr, child->gen);
		return 0;
	}
	q = node_new(c, t->id, (uint16_t)l);
	if (!q)
		return -ENOMEM;
	rc = redistribute(c, par, q, &e, (int)pos, DIST_SPLIT);
	if (rc >= 0) {
		node_first_key(q, &fk);
		rc = insert_ptr(c, t, p, l + 1, &fk, q);
	}
	node_put(c, q);
	return rc;
}

/* Insert an item at the path's leaf slot, splitting as needed. The path is
 * dirty. */
static int leaf_insert(struct smr_cow *c, struct smr_tree *t,
		       struct smr_path *p, const struct smr_nkey *k,
		       const void *val, uint32_t len)
{
	struct smr_node *leaf = p->n[0], *r;
	struct vent e = { .key = *k, .val = val, .size = len };
	struct smr_nkey fk;
	int slot = p->slot[0], rc;

	if (leaf_free(c, leaf->buf) >= len + sizeof(struct smr_ditem)) {
		leaf_insert_at(c, leaf->buf, (uint32_t)slot, k, val, len);
		if (slot == 0 && p->top > 0)
			fixup_low_keys(c, p, 1, k);
		return 0;
	}
	r = node_new(c, t->id, 0);
	if (!r)
		return -ENOMEM;
	rc = redistribute(c, leaf, r, &e, slot, DIST_SPLIT);
	if (rc < 0)
		goto out;
	if (slot == 0 && p->top > 0)
		fixup_low_keys(c, p, 1, k);
	node_first_key(r, &fk);
	rc = insert_ptr(c, t, p, 1, &fk, r);
out:
	node_put(c, r);
	return rc < 0 ? rc : 0;
}

/* Keep node at level @l of the path at least a quarter full, and merge it
 * into a sibling under half full when both fit in one node. */
static int rebalance(struct smr_cow *c, struct smr_tree *t, struct smr_path *p,
		     int l)
{
	struct smr_node *n = p->n[l], *par, *sib, *a, *b;
	struct smr_nkey fk;
	uint32_t pn;
	int s, sslot, aslot, rc;

	bt_reshaped(c);

	if (l == p->top) {
		/* A root with one child gives way to the child. */
		while (t->level > 0 && smr_node_nritems(n->buf) == 1) {
			struct smr_node *child;

			rc = node_get(c, t->id, smr_int_addr(n->buf, 0),
				      smr_int_gen(n->buf, 0),
				      (uint16_t)(t->level - 1), &child);
			if (rc)
				return rc;
			t->addr = child->addr;
			t->gen = child->gen;
			t->level--;
			p->n[l] = NULL;
			node_put(c, n);
			rc = node_drop(c, n);
			/* Keep the child pinned in the path's old slot. */
			node_put(c, p->n[l - 1]);
			p->n[l - 1] = child;
			p->top = --l;
			n = child;
			if (rc)
				return rc;
		}
		return 0;
	}
	if (node_used(c, n) >= node_cap(c) / 2)
		return 0;
	par = p->n[l + 1];
	s = p->slot[l + 1];
	pn = smr_node_nritems(par->buf);
	if (pn < 2) {
		/* The only child of its parent (a split that appends leaves
		 * the new right node with one entry): no sibling under the
		 * parent to merge with. An empty node must not stay (search
		 * and check refuse it): it goes, and its parent, empty then,
		 * merges with a sibling of its own a level up. A root with
		 * one child gives way to it, so the parent is not the root. */
		if (smr_node_nritems(n->buf) || l + 1 >= p->top)
			return 0;
		int_delete_at(par->buf, (uint32_t)s);
		p->n[l] = NULL;
		node_put(c, n);
		rc = node_drop(c, n);
		if (rc)
			return rc;
		return rebalance(c, t, p, l + 1);
	}
	sslot = s > 0 ? s - 1 : s + 1;
	rc = node_get(c, t->id, smr_int_addr(par->buf, (uint32_t)sslot),
		      smr_int_gen(par->buf, (uint32_t)sslot), (uint16_t)l, &sib);
	if (rc)
		return rc;
	/* At least a quarter full: merged if the two fit in one node, else
	 * left as it is. */
	if (node_used(c, n) >= node_cap(c) / 4 &&
	    node_used(c, n) + node_used(c, sib) > node_cap(c)) {
		node_put(c, sib);
		return 0;
	}
	rc = node_cow(c, &sib);
	if (rc) {
		node_put(c, sib);
		return rc;
	}
	smr_int_set_child(par->buf, (uint32_t)sslot, sib->addr, sib->gen);
	a = sslot < s ? sib : n;
	b = sslot < s ? n : sib;
	aslot = sslot < s ? sslot : s;

	if (node_used(c, a) + node_used(c, b) <= node_cap(c)) {
		rc = redistribute(c, a, b, NULL, -1, DIST_MERGE);
		if (rc < 0)
			goto out;
		int_delete_at(par->buf, (uint32_t)aslot + 1);
		if (b == n)
			p->n[l] = NULL;
		else
			sib = NULL;
		node_put(c, b);
		rc = node_drop(c, b);
		if (rc)
			goto out;
		rc = rebalance(c, t, p, l + 1);
		goto out;
	}
	rc = redistribute(c, a, b, NULL, -1, DIST_BALANCE);
	if (rc < 0)
		goto out;
	node_first_key(b, &fk);
	smr_int_set_key(par->buf, (uint32_t)aslot + 1, &fk);
	rc = 0;
out:
	node_put(c, sib);
	return rc;
}

/* ========================================================================
 * Operations (called with the engine lock held: exclusive for changes)
 * ======================================================================== */

static void copy_out(const struct smr_node *leaf, uint32_t slot, void *val,
		     size_t *len)
{
	uint32_t sz = smr_leaf_size(leaf->buf, slot);

	if (val && len)
		memcpy(val, leaf->buf + smr_leaf_valoff(leaf->buf, slot),
		       SMR_MIN(*len, sz));
	if (len)
		*len = sz;
}

int smr_bt_lookup_locked(struct smr_cow *c, uint32_t tree,
			 const struct smr_nkey *key, void *val, size_t *len)
{
	struct smr_tree *t = tree_get(c, tree);
	struct smr_path p;
	int rc;

	if (!t)
		return -EINVAL;
	rc = bt_search(c, t, key, &p);
	if (rc == 1) {
		copy_out(p.n[0], (uint32_t)p.slot[0], val, len);
		rc = 0;
	} else if (rc == 0) {
		rc = -ENOENT;
	}
	path_release(c, &p);
	return rc;
}

/* The type of @tree, for a change, check or salvage of it (@what); NULL,
 * with an error naming the tree, if it has none: the engine changes and
 * checks a tree only through its type. */
static const struct smr_tree_type *tree_type(struct smr_cow *c, uint32_t tree,
					     const char *what)
{
	const struct smr_tree_type *tt = smr_tree_type_of(c, tree);

	if (!tt)
		smr_err("tree %u has no registered type: %s refused", tree,
			what);
	return tt;
}

/* Why @tt refuses the item (@key, @val, @len); NULL if it takes it. */
static const char *item_unfit(const struct smr_tree_type *tt,
			      const struct smr_nkey *key, const void *val,
			      size_t len)
{
	struct smr_key k = { key->objid, key->type, key->offset };

	if (len > tt->max_item)
		return "item larger than its tree allows";
	return tt->check_item ? tt->check_item(&k, val, len) : NULL;
}

/* An item of object @objid in the FS tree is about to change. */
static void fs_changed(struct smr_cow *c, uint64_t objid)
{
	__atomic_fetch_add(&c->fs_changes[smr_cow_fs_slot(objid)].n, 1,
			   __ATOMIC_RELAXED);
}

int smr_bt_modify_locked(struct smr_cow *c, uint32_t tree,
			 const struct smr_nkey *key, const void *val,
			 size_t len, int mode)
{
	struct smr_tree *t = tree_get(c, tree);
	const struct smr_tree_type *tt;
	struct smr_path p;
	struct smr_node *leaf;
	uint32_t slot, old;
	int rc;

	if (!t)
		return -EINVAL;
	tt = tree_type(c, tree, "change");
	if (!tt)
		return -EINVAL;
	if (len > tt->max_item)
		return -E2BIG;
	if (item_unfit(tt, key, val, len))
		return -EINVAL;
	if (tree == SMR_TREE_FS)
		fs_changed(c, key->objid);
	if (!t->addr) {
		struct smr_node *root;

		if (mode == SMR_BT_UPDATE)
			return -ENOENT;
		root = node_new(c, t->id, 0);
		if (!root)
			return -ENOMEM;
		t->addr = root->addr;
		t->gen = root->gen;
		t->level = 0;
		node_put(c, root);
	}
	rc = bt_search(c, t, key, &p);
	if (rc < 0)
		return rc;
	if (rc == 1 && mode == SMR_BT_INSERT) {
		rc = -EEXIST;
		goto out;
	}
	if (rc == 0 && mode == SMR_BT_UPDATE) {
		rc = -ENOENT;
		goto out;
	}
	bool exact = rc == 1;

	rc = path_cow(c, t, &p);
	if (rc)
		goto out;
	c->changed = true;
	leaf = p.n[0];
	slot = (uint32_t)p.slot[0];
	if (!exact) {
		rc = leaf_insert(c, t, &p, key, val, (uint32_t)len);
		if (!rc)
			t->nr_items++;
		goto out;
	}
	old = smr_leaf_size(leaf->buf, slot);
	if (old == len) {
		memcpy(leaf->buf + smr_leaf_valoff(leaf->buf, slot), val, len);
		goto out;
	}
	/* A new size: take the item out and insert it again (which splits
	 * the leaf if it no longer fits). */
	leaf_delete_at(leaf->buf, slot);
	rc = leaf_insert(c, t, &p, key, val, (uint32_t)len);
out:
	path_release(c, &p);
	return rc;
}

int smr_bt_delete_locked(struct smr_cow *c, uint32_t tree,
			 const struct smr_nkey *key)
{
	struct smr_tree *t = tree_get(c, tree);
	struct smr_path p;
	struct smr_node *leaf;
	struct smr_nkey fk;
	int rc;

	if (!t || !tree_type(c, tree, "change"))
		return -EINVAL;
	if (tree == SMR_TREE_FS)
		fs_changed(c, key->objid);
	rc = bt_search(c, t, key, &p);
	if (rc <= 0) {
		path_release(c, &p);
		return rc == 0 ? -ENOENT : rc;
	}
	rc = path_cow(c, t, &p);
	if (rc)
		goto out;
	c->changed = true;
	leaf = p.n[0];
	leaf_delete_at(leaf->buf, (uint32_t)p.slot[0]);
	t->nr_items--;
	if (p.slot[0] == 0 && p.top > 0 && smr_node_nritems(leaf->buf)) {
		smr_leaf_key(leaf->buf, 0, &fk);
		fixup_low_keys(c, &p, 1, &fk);
	}
	rc = rebalance(c, t, &p, 0);
out:
	path_release(c, &p);
	return rc;
}

/* Move the path to the next (@fwd) or previous leaf; -ENOENT at the end. */
static int path_step_leaf(struct smr_cow *c, struct smr_tree *t,
			  struct smr_path *p, bool fwd)
{
	int l, rc;

	for (l = 1; l <= p->top; l++) {
		uint32_t n = smr_node_nritems(p->n[l]->buf);

		if (fwd && (uint32_t)p->slot[l] + 1 < n)
			break;
		if (!fwd && p->slot[l] > 0)
			break;
	}
	if (l > p->top)
		return -ENOENT;
	p->slot[l] += fwd ? 1 : -1;
	for (; l > 0; l--) {
		struct smr_node *par = p->n[l], *child;
		uint32_t s = (uint32_t)p->slot[l];

		rc = node_get(c, t->id, smr_int_addr(par->buf, s),
			      smr_int_gen(par->buf, s), (uint16_t)(l - 1),
			      &child);
		if (rc)
			return rc;
		node_put(c, p->n[l - 1]);
		p->n[l - 1] = child;
		p->slot[l - 1] = fwd ? 0 :
			(int)smr_node_nritems(child->buf) - 1;
	}
	return 0;
}

int smr_bt_step_n_locked(struct smr_cow *c, uint32_t tree,
			 const struct smr_nkey *from, bool forward,
			 unsigned int n, struct smr_nkey *found, void **val,
			 size_t *len)
{
	struct smr_tree *t = tree_get(c, tree);
	struct smr_path p;
	unsigned int got = 0;
	int rc;

	if (!t)
		return -EINVAL;
	rc = bt_search(c, t, from, &p);
	if (rc < 0)
		return rc;
	if (!forward && rc == 0)
		p.slot[0]--;
	for (rc = 0; got < n; got++) {
		if (got)
			p.slot[0] += forward ? 1 : -1;
		for (;;) {
			uint32_t nr = smr_node_nritems(p.n[0]->buf);

			if (p.slot[0] >= 0 && (uint32_t)p.slot[0] < nr)
				break;
			rc = path_step_leaf(c, t, &p, forward);
			if (rc)
				goto out;
		}
		smr_leaf_key(p.n[0]->buf, (uint32_t)p.slot[0], &found[got]);
		/* A caller that wants keys only passes no arrays. */
		copy_out(p.n[0], (uint32_t)p.slot[0], val ? val[got] : NULL,
			 len ? &len[got] : NULL);
	}
out:
	path_release(c, &p);
	if (rc == -ENOENT && got)
		rc = 0;
	return rc ? rc : (int)got;
}

int smr_bt_step_locked(struct smr_cow *c, uint32_t tree,
		       const struct smr_nkey *from, bool forward,
		       struct smr_nkey *found, void *val, size_t *len)
{
	int rc = smr_bt_step_n_locked(c, tree, from, forward, 1, found, &val,
				      len);

	return rc < 0 ? rc : 0;
}

struct iwalk {
	const struct smr_nkey *from, *to;
	smr_bt_iter_fn fn;
	void *arg;
	bool stop;
};

/* The iteration of skip_damaged: depth first, a subtree whose node does
 * not verify left out (fsck's smr_cow_check_all reports it). */
static int iter_walk(struct smr_cow *c, struct smr_tree *t, uint64_t addr,
		     uint64_t gen, uint16_t level, struct iwalk *w)
{
	struct smr_node *n;
	uint32_t cnt;
	int rc;

	rc = node_get(c, t->id, addr, gen, level, &n);
	if (cow_damage(rc))
		return 0;
	if (rc)
		return rc;
	cnt = smr_node_nritems(n->buf);
	for (uint32_t i = 0; i < cnt && !rc && !w->stop; i++) {
		struct smr_nkey k;

		if (level) {
			/* Children wholly before @from, or after @to, are
			 * not read. */
			if (i + 1 < cnt) {
				smr_int_key(n->buf, i + 1, &k);
				if (smr_nkey_cmp(&k, w->from) <= 0)
					continue;
			}
			smr_int_key(n->buf, i, &k);
			if (i && smr_nkey_cmp(&k, w->to) > 0)
				break;
			rc = iter_walk(c, t, smr_int_addr(n->buf, i),
				       smr_int_gen(n->buf, i),
				       (uint16_t)(level - 1), w);
			continue;
		}
		smr_leaf_key(n->buf, i, &k);
		if (smr_nkey_cmp(&k, w->from) < 0)
			continue;
		if (smr_nkey_cmp(&k, w->to) > 0) {
			w->stop = true;
			break;
		}
		struct smr_key uk = { k.objid, k.type, k.offset };

		rc = w->fn(w->arg, &uk, n->buf + smr_leaf_valoff(n->buf, i),
			   smr_leaf_size(n->buf, i));
		if (rc) {
			w->stop = true;
			rc = rc > 0 ? 0 : rc;
		}
	}
	node_put(c, n);
	return rc;
}

int smr_bt_iterate_locked(struct smr_cow *c, uint32_t tree,
			  const struct smr_nkey *from,
			  const struct smr_nkey *to, smr_bt_iter_fn fn,
			  void *arg)
{
	struct smr_tree *t = tree_get(c, tree);
	struct smr_path p;
	int rc;

	if (!t)
		return -EINVAL;
	if (c->opts.skip_damaged) {
		struct iwalk w = { from, to, fn, arg, false };

		return t->addr ? iter_walk(c, t, t->addr, t->gen, t->level,
					   &w) : 0;
	}
	rc = bt_search(c, t, from, &p);
	if (rc == -ENOENT)
		return 0;
	if (rc < 0)
		return rc;
	for (;;) {
		const uint8_t *b = p.n[0]->buf;
		uint32_t n = smr_node_nritems(b);
		struct smr_nkey k;
		struct smr_key uk;

		if ((uint32_t)p.slot[0] >= n) {
			rc = path_step_leaf(c, t, &p, true);
			if (rc) {
				if (rc == -ENOENT)
					rc = 0;
				break;
			}
			continue;
		}
		smr_leaf_key(b, (uint32_t)p.slot[0], &k);
		if (smr_nkey_cmp(&k, to) > 0) {
			rc = 0;
			break;
		}
		uk.objid = k.objid;
		uk.type = k.type;
		uk.offset = k.offset;
		rc = fn(arg, &uk, b + smr_leaf_valoff(b, (uint32_t)p.slot[0]),
			smr_leaf_size(b, (uint32_t)p.slot[0]));
		if (rc) {
			rc = rc > 0 ? 0 : rc;
			break;
		}
		p.slot[0]++;
	}
	path_release(c, &p);
	return rc;
}

/* ========================================================================
 * Roots, commit write-out, checks
 * ======================================================================== */

int smr_bt_load_roots(struct smr_cow *c, const struct smr_ckpt *ck)
{
	bt_reshaped(c);
	memset(c->trees, 0, sizeof(c->trees));
	for (uint32_t i = 0; i <= SMR_COW_MAX_TREE; i++)
		c->trees[i].id = i;
	for (uint32_t i = 0; i < ck->nr_roots; i++) {
		const struct smr_root *r = &ck->roots[i];
		struct smr_tree *t = tree_get(c, (uint32_t)r->tree);

		if (!t)
			return smr_corrupt(UINT64_MAX, "checkpoint: bad tree id");
		t->addr = r->addr;
		t->gen = r->gen;
		t->level = r->level;
		t->nr_items = r->nr_items;
	}
	return 0;
}

struct wctx {
	struct smr_cow *c;
	uint64_t gen;
	uint64_t *addrs;
	struct smr_io *ios;
	struct smr_node **nodes;
	uint32_t n, i;
};

/* Post-order: children get their addresses before the parent records
 * them. */
static int write_node(struct wctx *w, struct smr_node *n)
{
	struct smr_cow *c = w->c;
	int rc;

	if (n->level) {
		uint32_t cnt = smr_node_nritems(n->buf);

		for (uint32_t i = 0; i < cnt; i++) {
			uint64_t a = smr_int_addr(n->buf, i);
			struct smr_node *ch;

			if (!(a & SMR_TMP_ADDR))
				continue;
			pthread_mutex_lock(&c->cache_lock);
			ch = hash_find(c, a);
			pthread_mutex_unlock(&c->cache_lock);
			if (!ch)
				return smr_corrupt(a, "commit: dirty child missing");
			rc = write_node(w, ch);
			if (rc)
				return rc;
			smr_int_set_child(n->buf, i, ch->addr, ch->gen);
		}
	}
	if (w->i >= w->n)
		return smr_corrupt(UINT64_MAX, "commit: more dirty nodes than counted");
	pthread_mutex_lock(&c->cache_lock);
	hash_del(c, n);
	n->addr = w->addrs[w->i];
	n->gen = w->gen;
	hash_add(c, n);
	pthread_mutex_unlock(&c->cache_lock);
	smr_blk_hdr_init(n->buf, &smr_node_ops, c->ns, n->addr, n->gen, n->tree,
			 c->sb.uuid, n->level);
	rc = smr_blk_seal(n->buf, c->ns, &smr_node_ops);
	if (rc)
		return rc;
	w->ios[w->i] = (struct smr_io){ .op = SMR_IO_WRITE, .buf = n->buf,
					.len = c->ns, .off = n->addr };
	w->nodes[w->i] = n;
	w->i++;
	return 0;
}

int smr_bt_write_dirty(struct smr_cow *c, uint64_t gen, struct smr_ckpt *ck)
{
	struct wctx w = { .c = c, .gen = gen };
	int rc = 0;

	pthread_mutex_lock(&c->cache_lock);
	w.n = (uint32_t)c->dirty.n;
	pthread_mutex_unlock(&c->cache_lock);
	if (w.n) {
		w.addrs = calloc(w.n, sizeof(*w.addrs));
		w.ios = calloc(w.n, sizeof(*w.ios));
		w.nodes = calloc(w.n, sizeof(*w.nodes));
		if (!w.addrs || !w.ios || !w.nodes) {
			rc = -ENOMEM;
			goto out;
		}
		rc = c->sops->meta_alloc(c, w.n, w.addrs);
		if (rc)
			goto out;
		for (uint32_t id = 1; id <= SMR_COW_MAX_TREE && !rc; id++) {
			struct smr_tree *t = &c->trees[id];
			struct smr_node *root;

			if (!(t->addr & SMR_TMP_ADDR))
				continue;
			pthread_mutex_lock(&c->cache_lock);
			root = hash_find(c, t->addr);
			pthread_mutex_unlock(&c->cache_lock);
			if (!root) {
				rc = smr_corrupt(t->addr, "commit: dirty root missing");
				break;
			}
			rc = write_node(&w, root);
			t->addr = root->addr;
			t->gen = root->gen;
		}
		if (!rc && w.i != w.n)
			rc = smr_corrupt(UINT64_MAX, "commit: unreachable dirty nodes");
		if (rc) {
			c->sops->meta_abort(c);
			goto out;
		}
		rc = c->sops->meta_write(c, w.ios, w.n);
		if (rc)
			goto out;
		pthread_mutex_lock(&c->cache_lock);
		for (uint32_t i = 0; i < w.n; i++) {
			struct smr_node *n = w.nodes[i];

			nlist_del(&c->dirty, n);
			n->dirty = false;
			nlist_add_tail(&c->lru, n);
		}
		pthread_mutex_unlock(&c->cache_lock);
		c->nr_nodes += w.n;
		__atomic_fetch_add(&c->stats.nodes_written, w.n,
				   __ATOMIC_RELAXED);
	}
	ck->nr_roots = 0;
	for (uint32_t id = 1; id <= SMR_COW_MAX_TREE; id++) {
		struct smr_tree *t = &c->trees[id];
		struct smr_root *r;

		if (!t->addr)
			continue;
		r = &ck->roots[ck->nr_roots++];
		r->tree = id;
		r->addr = t->addr;
		r->gen = t->gen;
		r->level = t->level;
		r->nr_items = t->nr_items;
	}
	ck->nr_nodes = c->nr_nodes;
out:
	free(w.addrs);
	free(w.ios);
	free(w.nodes);
	return rc;
}

/* Why @tt refuses item @i of the leaf @buf, and its key in *@k; NULL if
 * it takes it. */
static const char *leaf_item_unfit(const struct smr_tree_type *tt,
				   const void *buf, uint32_t i,
				   struct smr_nkey *k)
{
	smr_leaf_key(buf, i, k);
	return item_unfit(tt, k, (const uint8_t *)buf + smr_leaf_valoff(buf, i),
			  smr_leaf_size(buf, i));
}

/* Leaf item @i of @buf (at @addr) against its tree's type @tt: 0, or
 * -SMR_EFSCORRUPTED naming the tree, the key and what is wrong. */
static int check_item(struct smr_cow *c, const struct smr_tree_type *tt,
		      const void *buf, uint32_t i, uint64_t addr)
{
	const char *why;
	char kb[SMR_KEY_STR_MAX], msg[224];
	struct smr_nkey k;

	why = leaf_item_unfit(tt, buf, i, &k);
	if (!why)
		return 0;
	snprintf(msg, sizeof(msg), "check: tree %s, item %s: %s", tt->name,
		 smr_tree_key_str_locked(c, tt->id, &k, kb, sizeof(kb)), why);
	return smr_corrupt(addr, msg);
}

/* What a check that goes on past problems counts (smr_cow_check_all). */
struct bt_chk {
	uint64_t problems;
	uint64_t underfull; /* non-root nodes under a quarter full */
};

/*
 * Check the subtree at @addr. With @bad NULL, stop at the first problem;
 * else count each in @bad and go on: a node that breaks a rule within
 * itself is counted and not descended, one that does not read is counted
 * by its parent (it returns the error), and its siblings are checked.
 *
 * Fill: deletion keeps a non-root node at least a quarter full (rebalance),
 * but a split that appends leaves the new right node with one item, and
 * only a deletion there fills it up; so an underfull node is counted for
 * the report, not a problem.
 */
static int check_node(struct smr_cow *c, struct smr_tree *t, uint64_t addr,
		      uint64_t gen, uint16_t level, const struct smr_nkey *lo,
		      const struct smr_nkey *hi, bool root, uint64_t *items,
		      struct bt_chk *bad)
{
	const struct smr_tree_type *tt = smr_tree_type_of(c, t->id);
	struct smr_node *n;
	struct smr_nkey k;
	uint32_t cnt;
	int rc;

	rc = node_get(c, t->id, addr, gen, level, &n);
	if (rc)
		return rc;
	cnt = smr_node_nritems(n->buf);
	if (!root && !cnt)
		rc = smr_corrupt(addr, "check: empty non-root node");
	for (uint32_t i = 0; i < cnt && !rc; i++) {
		if (level)
			smr_int_key(n->buf, i, &k);
		else
			smr_leaf_key(n->buf, i, &k);
		if ((lo && smr_nkey_cmp(&k, lo) < 0) ||
		    (hi && smr_nkey_cmp(&k, hi) >= 0)) {
			rc = smr_corrupt(addr, "check: key outside its parent's range");
			break;
		}
		if (i && level) {
			struct smr_nkey pk;

			smr_int_key(n->buf, i - 1, &pk);
			if (smr_nkey_cmp(&pk, &k) >= 0)
				rc = smr_corrupt(addr, "check: keys out of order");
		}
		if (!rc && !level)
			rc = check_item(c, tt, n->buf, i, addr);
	}
	if (!rc && !level)
		*items += cnt;
	if (!rc && bad && !root && node_used(c, n) < node_cap(c) / 4)
		bad->underfull++;
	if (rc && bad && cow_damage(rc)) {
		bad->problems++;
		node_put(c, n);
		return 0;
	}
	for (uint32_t i = 0; i < cnt && !rc && level; i++) {
		struct smr_nkey klo, khi;

		smr_int_key(n->buf, i, &klo);
		if (i + 1 < cnt)
			smr_int_key(n->buf, i + 1, &khi);
		rc = check_node(c, t, smr_int_addr(n->buf, i),
				smr_int_gen(n->buf, i), (uint16_t)(level - 1),
				i ? &klo : lo, i + 1 < cnt ? &khi : hi, false,
				items, bad);
		if (rc && bad && cow_damage(rc)) {
			bad->problems++;
			rc = 0;
		}
	}
	node_put(c, n);
	return rc;
}

static int bt_check(struct smr_cow *c, uint32_t tree, uint64_t *nr_items,
		    struct bt_chk *bad)
{
	struct smr_tree *t = tree_get(c, tree);
	uint64_t bad0 = bad ? bad->problems : 0;
	int rc;

	*nr_items = 0;
	if (!t)
		return -EINVAL;
	if (!t->addr)
		return 0;
	if (!tree_type(c, tree, "check"))
		return -EINVAL;
	rc = check_node(c, t, t->addr, t->gen, t->level, NULL, NULL, true,
			nr_items, bad);
	/* Items below a damaged node are not counted: no second problem. */
	if (!rc && *nr_items != t->nr_items && (!bad || bad->problems == bad0))
		rc = smr_corrupt(t->addr, "check: item count differs from the root's");
	return rc;
}

int smr_bt_check(struct smr_cow *c, uint32_t tree, uint64_t *nr_items)
{
	return bt_check(c, tree, nr_items, NULL);
}

struct audit {
	uint64_t *addr;
	size_t n, cap;
	bool space; /* for the space audit: a damaged node's block is left
		     * out, as the salvage leaves it */
};

static int audit_walk(struct smr_cow *c, struct smr_tree *t, uint64_t addr,
		      uint64_t gen, uint16_t level, struct audit *a)
{
	struct smr_node *n;
	int rc;

	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 1024;
		uint64_t *v = realloc(a->addr, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		a->addr = v;
		a->cap = cap;
	}
	a->addr[a->n++] = addr;
	rc = node_get(c, t->id, addr, gen, level, &n);
	/* Its block counted, nothing below it (skip_damaged); for the space
	 * audit not even its block: the salvage drops the node and leaves
	 * its block dead, and a block that does not verify may never have
	 * been written (past its zone's write pointer). */
	if (cow_damage(rc) && c->opts.skip_damaged) {
		if (a->space)
			a->n--;
		return 0;
	}
	if (rc)
		return rc;
	for (uint32_t i = 0; level && i < smr_node_nritems(n->buf) && !rc; i++)
		rc = audit_walk(c, t, smr_int_addr(n->buf, i),
				smr_int_gen(n->buf, i), (uint16_t)(level - 1),
				a);
	node_put(c, n);
	return rc;
}

static int u64_cmp(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

static bool in_xlist(const struct smr_xlist *l, uint64_t addr, uint32_t len)
{
	for (size_t i = 0; i < l->n; i++)
		if (addr < l->x[i].off + l->x[i].len &&
		    l->x[i].off < addr + len)
			return true;
	return false;
}

/* The audit; with @bad, every problem counted there and the audit goes on
 * (check_node). */
static int audit(struct smr_cow *c, struct bt_chk *bad)
{
	struct audit a = { 0 };
	int rc = 0;

	for (uint32_t id = 1; id <= SMR_COW_MAX_TREE && !rc; id++) {
		struct smr_tree *t = &c->trees[id];
		uint64_t items;

		if (!t->addr)
			continue;
		rc = bt_check(c, id, &items, bad);
		if (!rc)
			rc = audit_walk(c, t, t->addr, t->gen, t->level, &a);
		if (rc && bad && cow_damage(rc)) {
			bad->problems++;
			rc = 0;
		}
	}
	if (rc)
		goto out;
	if (a.n > 1) /* with no tree at all a.addr is NULL: not for qsort */
		qsort(a.addr, a.n, sizeof(*a.addr), u64_cmp);
	for (size_t i = 0; i < a.n && !rc; i++) {
		uint64_t x = a.addr[i];

		if (i && a.addr[i - 1] == x)
			rc = smr_corrupt(x, "audit: node reachable twice");
		else if (!(x & SMR_TMP_ADDR) &&
			 (in_xlist(&c->free_cur, x, c->ns) ||
			  in_xlist(&c->free_prev, x, c->ns)))
			rc = smr_corrupt(x, "audit: live node also released");
		else if (i && !(x & SMR_TMP_ADDR) &&
			 a.addr[i - 1] + c->ns > x)
			rc = smr_corrupt(x, "audit: nodes overlap");
		if (rc && bad) {
			bad->problems++;
			rc = 0;
		}
	}
out:
	free(a.addr);
	return rc;
}

int smr_cow_audit_locked(struct smr_cow *c)
{
	return audit(c, NULL);
}

int smr_cow_audit_count_locked(struct smr_cow *c, uint64_t *problems,
				uint64_t *underfull)
{
	struct bt_chk k = { 0, 0 };
	int rc = audit(c, &k);

	*problems = k.problems;
	*underfull = k.underfull;
	return rc;
}

int smr_bt_node_addrs_locked(struct smr_cow *c, uint64_t **addrs, size_t *n)
{
	struct audit a = { .space = true };
	int rc = 0;

	for (uint32_t id = 1; id <= SMR_COW_MAX_TREE && !rc; id++) {
		struct smr_tree *t = &c->trees[id];

		if (t->addr)
			rc = audit_walk(c, t, t->addr, t->gen, t->level, &a);
	}
	if (rc) {
		free(a.addr);
		return rc;
	}
	*addrs = a.addr;
	*n = a.n;
	return 0;
}

int smr_bt_create_locked(struct smr_cow *c, uint32_t tree)
{
	struct smr_tree *t = tree_get(c, tree);
	struct smr_node *root;

	if (!t)
		return -EINVAL;
	if (t->addr)
		return -EEXIST;
	root = node_new(c, t->id, 0);
	if (!root)
		return -ENOMEM;
	t->addr = root->addr;
	t->gen = root->gen;
	t->level = 0;
	node_put(c, root);
	return 0;
}

int smr_bt_height(struct smr_cow *c, uint32_t tree)
{
	struct smr_tree *t = tree_get(c, tree);

	if (!t)
		return -EINVAL;
	return t->addr ? t->level + 1 : 0;
}

/* ========================================================================
 * Cleaning: moving a live node out of its zone
 * ======================================================================== */

int smr_bt_relocate_node_locked(struct smr_cow *c, uint32_t tree,
				uint16_t level, const struct smr_nkey *first,
				uint64_t addr)
{
	struct smr_tree *t = tree_get(c, tree);
	struct smr_path p;
	int rc;

	if (!t)
		return -EINVAL;
	if (!t->addr || level > t->level)
		return 0;
	rc = bt_search(c, t, first, &p);
	if (rc == -ENOENT)
		return 0;
	if (rc < 0)
		return rc;
	/* Live iff the descent by its first key passes through it. */
	if (p.n[level]->addr != addr || p.n[level]->dirty) {
		rc = 0;
		goto out;
	}
	rc = path_cow(c, t, &p);
	if (!rc) {
		c->changed = true;
		rc = 1;
	}
out:
	path_release(c, &p);
	return rc;
}

/* ========================================================================
 * Salvage (fsck): rebuild a tree from what can still be read
 * ======================================================================== */

struct salv_item {
	struct smr_nkey key;
	uint32_t len;
	uint8_t *val;
};

/* A key range lost with a root or an interior node: [lo, hi), each bound
 * open when its flag is false. */
struct salv_range {
	struct smr_nkey lo, hi;
	bool has_lo, has_hi;
};

/* A leaf the device scan found: its key span and generation. */
struct salv_span {
	struct smr_nkey first, last;
	uint64_t gen;
};

/* An item of a lost range found by the scan, with its leaf's generation
 * and address. */
struct salv_found {
	struct salv_item it;
	uint64_t gen, addr;
	bool newer;  /* a newer leaf spans its key */
	bool drop;
};

struct salv {
	struct smr_cow *c;
	struct smr_tree *t;
	const struct smr_tree_type *tt;
	struct salv_item *v;
	size_t n, cap;
	uint64_t *old;   /* readable nodes of the old tree */
	size_t nold, cold;
	uint64_t bad;    /* nodes that did not verify */
	struct salv_range *lost; /* ranges the scan may fill */
	size_t nlost, clost;
	struct salv_span *span;  /* leaves the scan found */
	size_t nspan, cspan;
	struct salv_found *found;
	size_t nfound, cfound;
};

static int salv_grow(void **p, size_t *cap, size_t n, size_t size)
{
	void *q;
	size_t nc;

	if (n < *cap)
		return 0;
	nc = *cap ? 2 * *cap : 256;
	q = realloc(*p, nc * size);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = nc;
	return 0;
}

/* A node at @addr could not be read: its items from @lo up to @hi are
 * lost. Those of a root or an interior node are kept as a range for the
 * device scan (salv_scan): the leaves below such a node are most likely
 * intact, only the way to them is gone. A damaged leaf's own items exist
 * nowhere else but in its older copies, which are not taken, unless the
 * leaf is the root and so the whole tree. */
static int salv_lost(struct salv *s, uint64_t addr, uint16_t level, int why,
		     const struct smr_nkey *lo, const struct smr_nkey *hi)
{
	struct smr_nkey z = { 0 };
	char from[SMR_KEY_STR_MAX], end[SMR_KEY_STR_MAX] = "the end";
	uint32_t id = s->tt->id;

	s->bad++;
	if ((level || addr == s->t->addr) && !s->tt->derived) {
		struct salv_range *r;
		int rc = salv_grow((void **)&s->lost, &s->clost, s->nlost,
				   sizeof(*s->lost));

		if (rc)
			return rc;
		r = &s->lost[s->nlost++];
		memset(r, 0, sizeof(*r));
		r->has_lo = lo != NULL;
		r->has_hi = hi != NULL;
		if (lo)
			r->lo = *lo;
		if (hi)
			r->hi = *hi;
	}
	smr_tree_key_str_locked(s->c, id, lo ? lo : &z, from, sizeof(from));
	if (hi)
		smr_tree_key_str_locked(s->c, id, hi, end, sizeof(end));
	smr_err("salvage: tree %s: node at byte %" PRIu64 " (level %u) cannot "
		"be read (%s): the items from %s up to %s are dropped",
		s->tt->name, addr, level, strerror(-why), from, end);
	return 0;
}

static void salv_dropped(struct salv *s, uint64_t addr,
			 const struct smr_nkey *k, const char *why)
{
	char kb[SMR_KEY_STR_MAX];

	smr_err("salvage: tree %s: node at byte %" PRIu64 ": item %s dropped "
		"(%s)", s->tt->name, addr,
		smr_tree_key_str_locked(s->c, s->tt->id, k, kb, sizeof(kb)),
		why);
}

/* Collect the items of the subtree at @addr that can be read, in key order,
 * keeping only keys in [lo, hi) as the parent promised. */
static int salv_walk(struct salv *s, uint64_t addr, uint64_t gen,
		     uint16_t level, const struct smr_nkey *lo,
		     const struct smr_nkey *hi)
{
	struct smr_cow *c = s->c;
	struct smr_node *n;
	uint32_t cnt;
	int rc;

	rc = node_get(c, s->t->id, addr, gen, level, &n);
	if (rc == -ENOMEM)
		return rc;
	if (rc) {
		/* Its block is left to the space audit, as is everything
		 * below it: a damaged reference may name any block. */
		return salv_lost(s, addr, level, rc, lo, hi);
	}
	rc = salv_grow((void **)&s->old, &s->cold, s->nold, sizeof(*s->old));
	if (rc)
		goto out;
	s->old[s->nold++] = addr;
	cnt = smr_node_nritems(n->buf);
	for (uint32_t i = 0; i < cnt && !rc; i++) {
		struct smr_nkey k, kn;
		const char *why;

		if (level) {
			smr_int_key(n->buf, i, &k);
			if (i + 1 < cnt)
				smr_int_key(n->buf, i + 1, &kn);
			rc = salv_walk(s, smr_int_addr(n->buf, i),
				       smr_int_gen(n->buf, i),
				       (uint16_t)(level - 1), i ? &k : lo,
				       i + 1 < cnt ? &kn : hi);
			continue;
		}
		why = leaf_item_unfit(s->tt, n->buf, i, &k);
		if ((lo && smr_nkey_cmp(&k, lo) < 0) ||
		    (hi && smr_nkey_cmp(&k, hi) >= 0) ||
		    (s->n && smr_nkey_cmp(&k, &s->v[s->n - 1].key) <= 0))
			why = "out of order";
		if (why) {
			salv_dropped(s, addr, &k, why);
			continue;
		}
		rc = salv_grow((void **)&s->v, &s->cap, s->n, sizeof(*s->v));
		if (rc)
			break;
		s->v[s->n].key = k;
		s->v[s->n].len = smr_leaf_size(n->buf, i);
		s->v[s->n].val = malloc(s->v[s->n].len + 1);
		if (!s->v[s->n].val) {
			rc = -ENOMEM;
			break;
		}
		memcpy(s->v[s->n].val,
		       (const uint8_t *)n->buf + smr_leaf_valoff(n->buf, i),
		       s->v[s->n].len);
		s->n++;
	}
out:
	node_put(c, n);
	return rc;
}

static bool salv_in_lost(const struct salv *s, const struct smr_nkey *k)
{
	for (size_t i = 0; i < s->nlost; i++) {
		const struct salv_range *r = &s->lost[i];

		if ((!r->has_lo || smr_nkey_cmp(k, &r->lo) >= 0) &&
		    (!r->has_hi || smr_nkey_cmp(k, &r->hi) < 0))
			return true;
	}
	return false;
}

/* Does [@first, @last] meet a lost range? */
static bool salv_meets_lost(const struct salv *s, const struct smr_nkey *first,
			    const struct smr_nkey *last)
{
	for (size_t i = 0; i < s->nlost; i++) {
		const struct salv_range *r = &s->lost[i];

		if ((!r->has_hi || smr_nkey_cmp(first, &r->hi) < 0) &&
		    (!r->has_lo || smr_nkey_cmp(last, &r->lo) >= 0))
			return true;
	}
	return false;
}

/* One node the scan found: a leaf of the tree, written no later than the
 * checkpoint in use, keeps its span and its items in lost ranges. */
static int salv_scan_leaf(void *arg, uint64_t addr, const void *node)
{
	struct salv *s = arg;
	struct smr_blk_id id;
	struct salv_span sp;
	uint32_t cnt = smr_node_nritems(node);
	int rc;

	smr_blk_hdr_decode(node, &id);
	/* A node newer than the checkpoint is of a commit that never became
	 * durable, or of the log's replay: never part of this tree. */
	if (smr_node_level(node) || !cnt || id.gen > s->c->gen)
		return 0;
	smr_leaf_key(node, 0, &sp.first);
	smr_leaf_key(node, cnt - 1, &sp.last);
	sp.gen = id.gen;
	if (!salv_meets_lost(s, &sp.first, &sp.last))
		return 0;
	rc = salv_grow((void **)&s->span, &s->cspan, s->nspan,
		       sizeof(*s->span));
	if (rc)
		return rc;
	s->span[s->nspan++] = sp;
	for (uint32_t i = 0; i < cnt; i++) {
		struct salv_found *f;
		struct smr_nkey k;

		if (leaf_item_unfit(s->tt, node, i, &k) || !salv_in_lost(s, &k))
			continue;
		rc = salv_grow((void **)&s->found, &s->cfound, s->nfound,
			       sizeof(*s->found));
		if (rc)
			return rc;
		f = &s->found[s->nfound];
		f->it.key = k;
		f->it.len = smr_leaf_size(node, i);
		f->it.val = malloc(f->it.len + 1);
		if (!f->it.val)
			return -ENOMEM;
		memcpy(f->it.val, (const uint8_t *)node +
		       smr_leaf_valoff(node, i), f->it.len);
		f->gen = id.gen;
		f->addr = addr;
		s->nfound++;
	}
	return 0;
}

static int span_first_cmp(const void *x, const void *y)
{
	const struct salv_span *a = x, *b = y;

	return smr_nkey_cmp(&a->first, &b->first);
}

/* By key; for one key the newest leaf first (then the higher address,
 * only to be the same every run). */
static int found_cmp(const void *x, const void *y)
{
	const struct salv_found *a = x, *b = y;
	int k = smr_nkey_cmp(&a->it.key, &b->it.key);

	if (k)
		return k;
	if (a->gen != b->gen)
		return a->gen < b->gen ? 1 : -1;
	return a->addr < b->addr ? 1 : a->addr > b->addr ? -1 : 0;
}

static int item_key_cmp(const void *x, const void *y)
{
	const struct salv_item *a = x, *b = y;

	return smr_nkey_cmp(&a->key, &b->key);
}

/* Max-heap of span indices by generation (salv_resolve). */
static void heap_push(const struct salv_span *sp, size_t *h, size_t *n,
		      size_t v)
{
	size_t i = (*n)++;

	while (i && sp[h[(i - 1) / 2]].gen < sp[v].gen) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = v;
}

static void heap_pop(const struct salv_span *sp, size_t *h, size_t *n)
{
	size_t i = 0, v = h[--*n];

	for (;;) {
		size_t ch = 2 * i + 1;

		if (ch >= *n)
			break;
		if (ch + 1 < *n && sp[h[ch + 1]].gen > sp[h[ch]].gen)
			ch++;
		if (sp[h[ch]].gen <= sp[v].gen)
			break;
		h[i] = h[ch];
		i = ch;
	}
	if (*n)
		h[i] = v;
}

/* Found items by generation, then key (salv_drop_between). */
static int found_gen_cmp(const void *x, const void *y, void *arg)
{
	const struct salv_found *v = arg;
	const struct salv_found *a = &v[*(const size_t *)x];
	const struct salv_found *b = &v[*(const size_t *)y];

	if (a->gen != b->gen)
		return a->gen < b->gen ? -1 : 1;
	return smr_nkey_cmp(&a->it.key, &b->it.key);
}

/* Mark each found item that a newer leaf spans (s->found in key order). */
static int salv_mark_newer(struct salv *s)
{
	size_t *heap, nh = 0, next = 0;

	heap = malloc(s->nspan * sizeof(*heap));
	if (!heap)
		return -ENOMEM;
	qsort(s->span, s->nspan, sizeof(*s->span), span_first_cmp);
	for (size_t i = 0; i < s->nfound; i++) {
		struct salv_found *f = &s->found[i];

		while (next < s->nspan &&
		       smr_nkey_cmp(&s->span[next].first, &f->it.key) <= 0)
			heap_push(s->span, heap, &nh, next++);
		while (nh && smr_nkey_cmp(&s->span[heap[0]].last,
					  &f->it.key) < 0)
			heap_pop(s->span, heap, &nh);
		/* Its own leaf spans it, so the heap is not empty. */
		f->newer = nh && s->span[heap[0]].gen > f->gen;
		f->drop = f->newer;
	}
	free(heap);
	return 0;
}

/*
 * Drop an item that lies between two items of its own generation that
 * newer leaves span. The leaves one commit wrote are of one version of
 * the tree, so the region around the item was written again since,
 * without it: it was deleted at the edge of a leaf, and the newer leaves
 * on both sides do not span it. (It could also be the older copy of a
 * leaf that is damaged now; that one is not taken either, as a damaged
 * leaf's older copies never are.)
 */
static int salv_drop_between(struct salv *s)
{
	size_t *ix = malloc(s->nfound * sizeof(*ix));

	if (!ix)
		return -ENOMEM;
	for (size_t i = 0; i < s->nfound; i++)
		ix[i] = i;
	qsort_r(ix, s->nfound, sizeof(*ix), found_gen_cmp, s->found);
	for (size_t a = 0, b; a < s->nfound; a = b) {
		bool before = false;
		size_t last_newer = SIZE_MAX;

		for (b = a; b < s->nfound &&
		     s->found[ix[b]].gen == s->found[ix[a]].gen; b++)
			if (s->found[ix[b]].newer)
				last_newer = b;
		for (size_t i = a; i < b; i++) {
			struct salv_found *f = &s->found[ix[i]];

			if (f->newer)
				before = true;
			else if (before && last_newer != SIZE_MAX &&
				 last_newer > i)
				f->drop = true;
		}
	}
	free(ix);
	return 0;
}

/*
 * Decide which found items to keep. A leaf is written whole, so the newest
 * leaf whose span [first, last] holds a key says what the tree held there:
 * an item is kept only if no newer leaf spans its key (one deleted since
 * is not brought back by an older copy of its leaf), nor keys of its own
 * leaf on both sides of it (salv_drop_between); of one key only the
 * newest copy. Kept items join s->v, which is then sorted again.
 */
static int salv_resolve(struct salv *s)
{
	size_t kept = 0;
	int rc;

	if (!s->nfound)
		return 0;
	qsort(s->found, s->nfound, sizeof(*s->found), found_cmp);
	rc = salv_mark_newer(s);
	if (!rc)
		rc = salv_drop_between(s);
	for (size_t i = 0; i < s->nfound && !rc; i++) {
		struct salv_found *f = &s->found[i];

		if (f->drop || (kept && !smr_nkey_cmp(&s->v[s->n - 1].key,
						      &f->it.key)))
			continue;
		rc = salv_grow((void **)&s->v, &s->cap, s->n, sizeof(*s->v));
		if (rc)
			break;
		s->v[s->n++] = f->it;
		f->it.val = NULL;
		kept++;
	}
	if (rc)
		return rc;
	if (kept)
		qsort(s->v, s->n, sizeof(*s->v), item_key_cmp);
	smr_warn("salvage: tree %s: the device holds %zu leaves of it with "
		 "items in the lost key ranges, written no later than "
		 "generation %" PRIu64 ": %zu items taken from them",
		 s->tt->name, s->nspan, s->c->gen, kept);
	return 0;
}

/* Fill the lost ranges from the leaves a scan of the device finds. */
static int salv_scan(struct salv *s)
{
	int rc;

	if (!s->nlost || !s->c->sops->scan_nodes)
		return 0;
	rc = s->c->sops->scan_nodes(s->c, s->tt->id, salv_scan_leaf, s);
	return rc ? rc : salv_resolve(s);
}

int smr_bt_salvage_locked(struct smr_cow *c, uint32_t tree, uint64_t *kept,
			  uint64_t *bad_nodes)
{
	struct smr_tree *t = tree_get(c, tree);
	struct salv s = { .c = c, .t = t };
	int rc = 0;

	*kept = *bad_nodes = 0;
	if (!t)
		return -EINVAL;
	if (!t->addr)
		return 0;
	bt_reshaped(c);
	if (tree == SMR_TREE_FS)
		for (uint32_t i = 0; i < SMR_COW_FS_CHANGE_SLOTS; i++)
			fs_changed(c, i);
	s.tt = tree_type(c, tree, "salvage");
	if (!s.tt)
		return -EINVAL;
	rc = salv_walk(&s, t->addr, t->gen, t->level, NULL, NULL);
	if (!rc)
		rc = salv_scan(&s);
	if (rc)
		goto out;
	if (!s.n && t->nr_items && !s.tt->derived) {
		smr_err("salvage: tree %s: none of its %" PRIu64 " items can be "
			"read: left as it is rather than replaced by an empty "
			"tree", s.tt->name, t->nr_items);
		*bad_nodes = s.bad;
		rc = -SMR_EFSCORRUPTED;
		goto out;
	}
	/* The readable nodes of the old tree are released like any node a
	 * change replaces (each once, should damaged references name one
	 * twice); then the tree is built again from the items. */
	if (s.nold > 1)
		qsort(s.old, s.nold, sizeof(*s.old), u64_cmp);
	for (size_t i = 0; i < s.nold && !rc; i++) {
		struct smr_node *n;

		if (i && s.old[i] == s.old[i - 1])
			continue;

		pthread_mutex_lock(&c->cache_lock);
		n = hash_find(c, s.old[i]);
		pthread_mutex_unlock(&c->cache_lock);
		if (n)
			rc = node_drop(c, n);
		else
			rc = smr_xlist_add(&c->free_cur, s.old[i], c->ns);
	}
	if (rc)
		goto out;
	bt_reshaped(c);
	t->addr = 0;
	t->gen = 0;
	t->level = 0;
	t->nr_items = 0;
	c->changed = true;
	rc = smr_bt_create_locked(c, tree);
	for (size_t i = 0; i < s.n && !rc; i++)
		rc = smr_bt_modify_locked(c, tree, &s.v[i].key, s.v[i].val,
					  s.v[i].len, SMR_BT_INSERT);
	*kept = s.n;
	*bad_nodes = s.bad;
out:
	for (size_t i = 0; i < s.n; i++)
		free(s.v[i].val);
	for (size_t i = 0; i < s.nfound; i++)
		free(s.found[i].it.val);
	free(s.v);
	free(s.old);
	free(s.found);
	free(s.span);
	free(s.lost);
	return rc;
}
