/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * memcow.c - the in-memory COW engine of the namespace tests (memcow.h).
 * Simple over fast: a sorted array of items, binary search, one rwlock.
 */
#include "memcow.h"

#include "format/blk.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum { MC_FREE = 0, MC_USED = 1, MC_FREEING = 2, MC_UNSETTLED = 3 };

struct mc_item {
	struct smr_key key;
	void *val;
	size_t len;
};

struct smr_cow {
	pthread_rwlock_t lock;
	/* Read pins (smr_cow_read_pin): a commit frees nothing while one is
	 * held. Taken before lock. */
	pthread_rwlock_t reuse;
	struct mc_item *items; /* sorted by key */
	size_t n, cap;
	uint8_t *data;
	uint8_t *state; /* one byte per block */
	uint64_t nblocks;
	uint32_t bs;
	uint64_t cursor;
	bool ro;
	uint64_t errors, commits;
	int error; /* smr_cow_set_error()'s */
	uint64_t changes_committed; /* changes counted at the last commit */
	const struct smr_tree_type *type; /* of the one tree held */
	/* Failure injection: the fail_at-th change from now fails. */
	uint64_t changes, fail_at;
	int fail_err;
	/* Called once at the start of the next data write. */
	void (*on_write)(void *);
	void *on_write_arg;
	/* Called once when the next data write has taken its space. */
	void (*on_written)(void *);
	void *on_written_arg;
	int data_err; /* the next data write's, after it took its space */
	void (*on_commit)(void *);
	void *on_commit_arg;
	/* Called once at the start of the next data read. */
	void (*on_read)(void *);
	void *on_read_arg;
	uint64_t user_bytes; /* smr_cow_count_user()'s */
};

struct smr_txn {
	struct smr_cow *c;
};

int smr_key_cmp(const struct smr_key *a, const struct smr_key *b)
{
	if (a->objid != b->objid)
		return a->objid < b->objid ? -1 : 1;
	if (a->type != b->type)
		return a->type < b->type ? -1 : 1;
	if (a->offset != b->offset)
		return a->offset < b->offset ? -1 : 1;
	return 0;
}

/* The one tree it holds takes its type's bounds, as the engine does. */
int smr_cow_tree_register(struct smr_cow *c, const struct smr_tree_type *tt)
{
	if (!tt || tt->id != SMR_TREE_FS || !tt->name || !tt->max_item ||
	    tt->max_item > SMR_COW_MAX_ITEM)
		return -EINVAL;
	if (c->type && c->type != tt)
		return -EEXIST;
	c->type = tt;
	return 0;
}

void memcow_forget_type(struct smr_cow *c)
{
	c->type = NULL;
}

int memcow_create(uint64_t capacity, uint32_t block_size, struct smr_cow **cp)
{
	struct smr_cow *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->bs = block_size;
	c->nblocks = capacity / block_size;
	c->data = calloc(c->nblocks, block_size);
	c->state = calloc(c->nblocks, 1);
	if (!c->data || !c->state) {
		free(c->data);
		free(c->state);
		free(c);
		return -ENOMEM;
	}
	pthread_rwlock_init(&c->lock, NULL);
	pthread_rwlock_init(&c->reuse, NULL);
	*cp = c;
	return 0;
}

void memcow_corrupt(struct smr_cow *c, uint64_t off)
{
	c->data[off] ^= 0x5a;
}

void memcow_fail_data_write(struct smr_cow *c, int err)
{
	c->data_err = err;
}

void memcow_set_read_only(struct smr_cow *c, bool ro)
{
	c->ro = ro;
}

uint64_t memcow_nr_items(struct smr_cow *c)
{
	return c->n;
}

uint64_t memcow_nr_errors(struct smr_cow *c)
{
	uint64_t n = c->errors;

	pthread_rwlock_rdlock(&c->lock);
	for (uint64_t b = 0; b < c->nblocks; b++)
		n += c->state[b] == MC_UNSETTLED;
	pthread_rwlock_unlock(&c->lock);
	return n;
}

uint64_t memcow_nr_commits(struct smr_cow *c)
{
	return c->commits;
}

int smr_cow_format(struct smr_dev *dev, const struct smr_format_opts *o,
		   struct smr_cow_info *info)
{
	return -EOPNOTSUPP;
}

int smr_cow_open(struct smr_dev *dev, const struct smr_cow_opts *o,
		 struct smr_cow **cp)
{
	return -EOPNOTSUPP;
}

int smr_cow_close(struct smr_cow *c)
{
	if (!c)
		return 0;
	for (size_t i = 0; i < c->n; i++)
		free(c->items[i].val);
	free(c->items);
	free(c->data);
	free(c->state);
	pthread_rwlock_destroy(&c->lock);
	pthread_rwlock_destroy(&c->reuse);
	free(c);
	return 0;
}

void smr_cow_info(struct smr_cow *c, struct smr_cow_info *info)
{
	memset(info, 0, sizeof(*info));
	strcpy(info->alloc, "memory");
	info->block_size = c->bs;
	info->node_size = 4096;
	info->capacity = c->nblocks * c->bs;
	info->gen = c->commits + 1;
	info->format_major = 1;
}

bool smr_cow_is_read_only(struct smr_cow *c)
{
	return c->ro;
}

int smr_cow_set_read_only(struct smr_cow *c, bool ro)
{
	if (!ro) {
		if (c->error)
			return -EROFS;
		c->ro = false;
		return 0;
	}
	if (!c->ro) {
		int rc = smr_cow_commit(c);

		if (rc)
			return rc;
		c->ro = true;
	}
	return c->error;
}

void smr_cow_set_commit_secs(struct smr_cow *c, unsigned int secs)
{
	(void)c, (void)secs; /* no timer */
}

int smr_cow_set_gc(struct smr_cow *c, int policy, unsigned int low,
		   unsigned int high)
{
	(void)c, (void)low, (void)high; /* no cleaner */
	return policy >= SMR_COW_GC_NEED_ONLY && policy <= SMR_COW_GC_GREEDY ?
		       0 : -EINVAL;
}

void smr_cow_set_error(struct smr_cow *c, int rc, const char *what)
{
	(void)what;
	if (!c->error)
		c->error = rc;
	c->ro = true;
}

void memcow_clear_error(struct smr_cow *c)
{
	c->error = 0;
}

int smr_txn_begin(struct smr_cow *c, struct smr_txn **tp)
{
	struct smr_txn *t;

	if (c->ro)
		return -EROFS;
	t = malloc(sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->c = c;
	*tp = t;
	return 0;
}

void smr_txn_end(struct smr_txn *t)
{
	free(t);
}

int smr_cow_commit(struct smr_cow *c)
{
	if (c->on_commit) {
		void (*fn)(void *) = c->on_commit;

		c->on_commit = NULL;
		fn(c->on_commit_arg);
	}
	pthread_rwlock_wrlock(&c->reuse);
	pthread_rwlock_wrlock(&c->lock);
	for (uint64_t b = 0; b < c->nblocks; b++)
		if (c->state[b] == MC_FREEING)
			c->state[b] = MC_FREE;
	c->commits++;
	c->changes_committed = c->changes;
	pthread_rwlock_unlock(&c->lock);
	pthread_rwlock_unlock(&c->reuse);
	return 0;
}

int smr_cow_fsync(struct smr_cow *c)
{
	if (c->error)
		return c->error;
	return smr_cow_commit(c);
}

/* ------------------------------------------------------------------------
 * Items
 * ------------------------------------------------------------------------ */

/* Index of the first item with key >= @k. */
static size_t mc_lower(struct smr_cow *c, const struct smr_key *k)
{
	size_t lo = 0, hi = c->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (smr_key_cmp(&c->items[mid].key, k) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void mc_copy_out(const struct mc_item *it, void *val, size_t *len)
{
	if (val && len)
		memcpy(val, it->val, SMR_MIN(*len, it->len));
	if (len)
		*len = it->len;
}

int smr_bt_lookup(struct smr_cow *c, uint32_t tree, const struct smr_key *key,
		  void *val, size_t *len)
{
	size_t i;
	int rc = -ENOENT;

	pthread_rwlock_rdlock(&c->lock);
	i = mc_lower(c, key);
	if (i < c->n && !smr_key_cmp(&c->items[i].key, key)) {
		mc_copy_out(&c->items[i], val, len);
		rc = 0;
	}
	pthread_rwlock_unlock(&c->lock);
	return rc;
}

int smr_bt_next(struct smr_cow *c, uint32_t tree, const struct smr_key *from,
		struct smr_key *found, void *val, size_t *len)
{
	size_t i;
	int rc = -ENOENT;

	pthread_rwlock_rdlock(&c->lock);
	i = mc_lower(c, from);
	if (i < c->n) {
		*found = c->items[i].key;
		mc_copy_out(&c->items[i], val, len);
		rc = 0;
	}
	pthread_rwlock_unlock(&c->lock);
	return rc;
}

int smr_bt_prev(struct smr_cow *c, uint32_t tree, const struct smr_key *from,
		struct smr_key *found, void *val, size_t *len)
{
	size_t i;
	int rc = -ENOENT;

	pthread_rwlock_rdlock(&c->lock);
	i = mc_lower(c, from);
	if (i < c->n && !smr_key_cmp(&c->items[i].key, from))
		i++;
	if (i > 0) {
		*found = c->items[i - 1].key;
		mc_copy_out(&c->items[i - 1], val, len);
		rc = 0;
	}
	pthread_rwlock_unlock(&c->lock);
	return rc;
}

int smr_bt_prev2(struct smr_cow *c, uint32_t tree, const struct smr_key *from,
		 struct smr_key found[2], void *val[2], size_t len[2])
{
	size_t i;
	int n = 0;

	pthread_rwlock_rdlock(&c->lock);
	i = mc_lower(c, from);
	if (i < c->n && !smr_key_cmp(&c->items[i].key, from))
		i++;
	for (; i > 0 && n < 2; i--, n++) {
		found[n] = c->items[i - 1].key;
		mc_copy_out(&c->items[i - 1], val[n], &len[n]);
	}
	pthread_rwlock_unlock(&c->lock);
	return n ? n : -ENOENT;
}

void memcow_on_data_write(struct smr_cow *c, void (*fn)(void *), void *arg)
{
	c->on_write = fn;
	c->on_write_arg = arg;
}

void memcow_on_data_written(struct smr_cow *c, void (*fn)(void *),
			    void *arg)
{
	c->on_written = fn;
	c->on_written_arg = arg;
}

void memcow_on_commit(struct smr_cow *c, void (*fn)(void *), void *arg)
{
	c->on_commit = fn;
	c->on_commit_arg = arg;
}

void memcow_on_data_read(struct smr_cow *c, void (*fn)(void *), void *arg)
{
	pthread_rwlock_wrlock(&c->lock);
	c->on_read = fn;
	c->on_read_arg = arg;
	pthread_rwlock_unlock(&c->lock);
}

/* Is this change the one to fail? (Counted under the write lock.) */
static int mc_fail_change(struct smr_cow *c)
{
	c->changes++;
	if (c->fail_at && c->changes == c->fail_at) {
		c->fail_at = 0;
		return c->fail_err;
	}
	return 0;
}

uint64_t smr_cow_fs_changes(struct smr_cow *c, uint64_t objid)
{
	(void)objid; /* one count for all: a cache answers less often */
	uint64_t n;

	pthread_rwlock_rdlock(&c->lock);
	n = c->changes;
	pthread_rwlock_unlock(&c->lock);
	return n;
}

uint64_t memcow_changes_since_commit(struct smr_cow *c)
{
	uint64_t n;

	pthread_rwlock_rdlock(&c->lock);
	n = c->changes - c->changes_committed;
	pthread_rwlock_unlock(&c->lock);
	return n;
}

void memcow_fail_change(struct smr_cow *c, uint64_t n, int err)
{
	pthread_rwlock_wrlock(&c->lock);
	c->fail_at = n ? c->changes + n : 0;
	c->fail_err = err;
	pthread_rwlock_unlock(&c->lock);
}

bool memcow_fail_pending(struct smr_cow *c)
{
	bool p;

	pthread_rwlock_rdlock(&c->lock);
	p = c->fail_at != 0;
	pthread_rwlock_unlock(&c->lock);
	return p;
}

uint64_t memcow_digest(struct smr_cow *c)
{
	uint64_t h = 0, used = 0;

	pthread_rwlock_rdlock(&c->lock);
	for (size_t i = 0; i < c->n; i++) {
		const struct mc_item *it = &c->items[i];
		uint64_t k[3] = { it->key.objid, it->key.type, it->key.offset };

		h = smr_hash64(k, sizeof(k), h);
		h = smr_hash64(it->val, it->len, h);
	}
	/* Space in use, not where: a rolled-back write gives its new space
	 * back as freed-at-commit, which is still no change. */
	for (uint64_t b = 0; b < c->nblocks; b++)
		used += c->state[b] == MC_USED || c->state[b] == MC_UNSETTLED;
	h = smr_hash64(&used, sizeof(used), h);
	pthread_rwlock_unlock(&c->lock);
	return h;
}

static int mc_put(struct smr_txn *t, const struct smr_key *key,
		  const void *val, size_t len, int mode)
{
	struct smr_cow *c = t->c;
	void *copy;
	size_t i;
	bool exists;
	int rc = 0;

	/* The engine's rule: changes only through the tree's type. */
	if (!c->type)
		return -EINVAL;
	if (len > c->type->max_item)
		return -E2BIG;
	if (c->type->check_item && c->type->check_item(key, val, len))
		return -EINVAL;
	if (c->ro)
		return -EROFS;
	copy = malloc(len ? len : 1);
	if (!copy)
		return -ENOMEM;
	if (len)
		memcpy(copy, val, len);
	pthread_rwlock_wrlock(&c->lock);
	i = mc_lower(c, key);
	exists = i < c->n && !smr_key_cmp(&c->items[i].key, key);
	rc = mc_fail_change(c);
	if (rc) {
		goto out;
	} else if (mode == 0 && exists) {
		rc = -EEXIST;
	} else if (mode == 1 && !exists) {
		rc = -ENOENT;
	} else if (exists) {
		free(c->items[i].val);
		c->items[i].val = copy;
		c->items[i].len = len;
		copy = NULL;
	} else {
		if (c->n == c->cap) {
			size_t ncap = c->cap ? 2 * c->cap : 256;
			struct mc_item *ni;

			ni = realloc(c->items, ncap * sizeof(*ni));
			if (!ni) {
				rc = -ENOMEM;
				goto out;
			}
			c->items = ni;
			c->cap = ncap;
		}
		memmove(&c->items[i + 1], &c->items[i],
			(c->n - i) * sizeof(c->items[0]));
		c->items[i].key = *key;
		c->items[i].val = copy;
		c->items[i].len = len;
		c->n++;
		copy = NULL;
	}
out:
	pthread_rwlock_unlock(&c->lock);
	free(copy);
	return rc;
}

int smr_bt_insert(struct smr_txn *t, uint32_t tree, const struct smr_key *key,
		  const void *val, size_t len)
{
	return mc_put(t, key, val, len, 0);
}

int smr_bt_update(struct smr_txn *t, uint32_t tree, const struct smr_key *key,
		  const void *val, size_t len)
{
	return mc_put(t, key, val, len, 1);
}

int smr_bt_put(struct smr_txn *t, uint32_t tree, const struct smr_key *key,
	       const void *val, size_t len)
{
	return mc_put(t, key, val, len, 2);
}

int smr_bt_delete(struct smr_txn *t, uint32_t tree, const struct smr_key *key)
{
	struct smr_cow *c = t->c;
	size_t i;
	int rc = -ENOENT;

	if (c->ro)
		return -EROFS;
	pthread_rwlock_wrlock(&c->lock);
	i = mc_lower(c, key);
	rc = mc_fail_change(c);
	if (rc) {
		pthread_rwlock_unlock(&c->lock);
		return rc;
	}
	rc = -ENOENT;
	if (i < c->n && !smr_key_cmp(&c->items[i].key, key)) {
		free(c->items[i].val);
		memmove(&c->items[i], &c->items[i + 1],
			(c->n - i - 1) * sizeof(c->items[0]));
		c->n--;
		rc = 0;
	}
	pthread_rwlock_unlock(&c->lock);
	return rc;
}

int smr_bt_iterate(struct smr_cow *c, uint32_t tree, const struct smr_key *from,
		   const struct smr_key *to, smr_bt_iter_fn fn, void *arg)
{
	int rc = 0;

	pthread_rwlock_rdlock(&c->lock);
	for (size_t i = mc_lower(c, from); i < c->n; i++) {
		if (smr_key_cmp(&c->items[i].key, to) > 0)
			break;
		rc = fn(arg, &c->items[i].key, c->items[i].val,
			c->items[i].len);
		if (rc)
			break;
	}
	pthread_rwlock_unlock(&c->lock);
	return rc < 0 ? rc : 0;
}

/* ------------------------------------------------------------------------
 * Data
 * ------------------------------------------------------------------------ */

static void *mc_buf(size_t len, int fill)
{
	size_t al = SMR_ROUND_UP(len ? len : 1, 4096);
	void *p = aligned_alloc(4096, al);

	if (p)
		memset(p, fill, al);
	return p;
}

void *smr_cow_buf_alloc(size_t len)
{
	return mc_buf(len, 0);
}

/* Filled with a pattern, not zeroed, so that a caller relying on zeros
 * it was not promised reads garbage in the tests. */
void *smr_cow_buf_alloc_uninit(size_t len)
{
	return mc_buf(len, 0xa5);
}

void smr_cow_buf_free(void *buf)
{
	free(buf);
}

static int mc_data_write(struct smr_cow *c, uint64_t near, const void *buf,
			 uint64_t len, struct smr_data_extent *ext,
			 unsigned int max, const struct smr_cow_held *held)
{
	uint64_t need, got = 0, b, scanned = 0, nfree = 0;
	unsigned int n = 0;
	const uint8_t *src = buf;

	if (c->on_write) {
		void (*fn)(void *) = c->on_write;

		c->on_write = NULL;
		fn(c->on_write_arg);
	}
	if (len % c->bs || len == 0 || max == 0)
		return -EINVAL;
	if (c->ro)
		return -EROFS;
	need = len / c->bs;
	pthread_rwlock_wrlock(&c->lock);
	for (b = 0; b < c->nblocks; b++)
		nfree += c->state[b] == MC_FREE;
	if (nfree < need) {
		pthread_rwlock_unlock(&c->lock);
		return -ENOSPC;
	}
	b = near ? near / c->bs : c->cursor;
	while (got < need && scanned < c->nblocks) {
		b %= c->nblocks;
		if (c->state[b] != MC_FREE) {
			b++;
			scanned++;
			continue;
		}
		if (n && ext[n - 1].off + ext[n - 1].len == b * c->bs) {
			ext[n - 1].len += c->bs;
		} else {
			if (n == max)
				break;
			ext[n].off = b * c->bs;
			ext[n].len = c->bs;
			n++;
		}
		c->state[b] = MC_UNSETTLED;
		got++;
		b++;
		scanned++;
	}
	if (got < need) {
		for (unsigned int i = 0; i < n; i++)
			for (uint64_t x = 0; x < ext[i].len / c->bs; x++)
				c->state[ext[i].off / c->bs + x] = MC_FREE;
		pthread_rwlock_unlock(&c->lock);
		return -ENOSPC;
	}
	c->cursor = b;
	pthread_rwlock_unlock(&c->lock);
	if (held)
		held->fn(held->arg);
	if (c->data_err) {
		int err = c->data_err;

		c->data_err = 0;
		pthread_rwlock_wrlock(&c->lock);
		for (unsigned int i = 0; i < n; i++)
			for (uint64_t x = 0; x < ext[i].len / c->bs; x++)
				c->state[ext[i].off / c->bs + x] = MC_FREE;
		pthread_rwlock_unlock(&c->lock);
		return err;
	}
	got = 0;
	for (unsigned int i = 0; i < n; i++) {
		memcpy(c->data + ext[i].off, src + got, ext[i].len);
		got += ext[i].len;
	}
	if (c->on_written) {
		void (*fn)(void *) = c->on_written;

		c->on_written = NULL;
		fn(c->on_written_arg);
	}
	return (int)n;
}

int smr_cow_data_write(struct smr_cow *c, enum smr_data_temp temp,
		       uint64_t near, const void *buf, uint64_t len,
		       struct smr_data_extent *ext, unsigned int max)
{
	(void)temp;
	return mc_data_write(c, near, buf, len, ext, max, NULL);
}

bool smr_cow_data_write_quick(struct smr_cow *c, uint64_t len)
{
	(void)c;
	(void)len;
	return true;
}

int smr_cow_data_read(struct smr_cow *c, uint64_t off, void *buf, uint64_t len)
{
	void (*fn)(void *);

	if (off % c->bs || len % c->bs || off + len > c->nblocks * c->bs)
		return -EINVAL;
	pthread_rwlock_wrlock(&c->lock);
	fn = c->on_read;
	c->on_read = NULL;
	pthread_rwlock_unlock(&c->lock);
	if (fn)
		fn(c->on_read_arg);
	pthread_rwlock_rdlock(&c->lock);
	for (uint64_t b = off / c->bs; b < (off + len) / c->bs; b++)
		if (c->state[b] == MC_FREE)
			c->errors++;
	memcpy(buf, c->data + off, len);
	pthread_rwlock_unlock(&c->lock);
	return 0;
}

void smr_cow_read_pin(struct smr_cow *c)
{
	pthread_rwlock_rdlock(&c->reuse);
}

void smr_cow_read_unpin(struct smr_cow *c)
{
	pthread_rwlock_unlock(&c->reuse);
}

/* Blocks of [@off, @off + @len) in a state of the @from mask go to @to;
 * any other is a misuse. */
static int mc_move(struct smr_cow *c, uint64_t off, uint64_t len,
		   unsigned int from, uint8_t to)
{
	int rc = 0;

	if (off % c->bs || len % c->bs || off + len > c->nblocks * c->bs) {
		c->errors++;
		return -EINVAL;
	}
	pthread_rwlock_wrlock(&c->lock);
	for (uint64_t b = off / c->bs; b < (off + len) / c->bs; b++) {
		if (!(from & (1u << c->state[b]))) {
			c->errors++;
			rc = -EINVAL;
			continue;
		}
		c->state[b] = to;
	}
	pthread_rwlock_unlock(&c->lock);
	return rc;
}

int smr_cow_data_free(struct smr_txn *t, uint64_t off, uint64_t len)
{
	return mc_move(t->c, off, len, 1u << MC_USED | 1u << MC_UNSETTLED,
		       MC_FREEING);
}

/* Stricter than the engine: only fresh data is settled, and only once. */
int smr_cow_data_settle(struct smr_txn *t, uint64_t off, uint64_t len)
{
	return mc_move(t->c, off, len, 1u << MC_UNSETTLED, MC_USED);
}

void smr_cow_space(struct smr_cow *c, struct smr_cow_space *sp)
{
	uint64_t cnt[4] = { 0, 0, 0, 0 };

	pthread_rwlock_rdlock(&c->lock);
	for (uint64_t b = 0; b < c->nblocks; b++)
		cnt[c->state[b]]++;
	pthread_rwlock_unlock(&c->lock);
	memset(sp, 0, sizeof(*sp));
	sp->block_size = c->bs;
	sp->capacity = c->nblocks * c->bs;
	sp->free = cnt[MC_FREE] * c->bs;
	sp->used = (cnt[MC_USED] + cnt[MC_UNSETTLED]) * c->bs;
	sp->reclaimable = cnt[MC_FREEING] * c->bs;
}

/* As the engine's, with no overhead; counts every block, as above. */
uint64_t smr_cow_space_room(struct smr_cow *c)
{
	struct smr_cow_space sp;

	smr_cow_space(c, &sp);
	return sp.used < sp.capacity ? sp.capacity - sp.used : 0;
}

/* No reserve here: the same room as data. */
uint64_t smr_cow_space_room_meta(struct smr_cow *c)
{
	return smr_cow_space_room(c);
}

/* The cleaner: nothing to clean in memory; data writes keep no owner. */
int smr_cow_data_write_owned(struct smr_cow *c, enum smr_data_temp temp,
			     uint64_t near, const struct smr_key *owner,
			     const void *buf, uint64_t len,
			     struct smr_data_extent *ext, unsigned int max,
			     const struct smr_cow_held *held)
{
	(void)owner;
	(void)temp;
	return mc_data_write(c, near, buf, len, ext, max, held);
}

void smr_cow_set_relocate_hook(struct smr_cow *c, smr_cow_relocate_fn fn,
			       void *arg)
{
	(void)c;
	(void)fn;
	(void)arg;
}

/* No reverse map in memory: fsck's check of it does not apply. */
int smr_cow_rmap_iterate(struct smr_cow *c, smr_cow_rmap_fn fn, void *arg,
			 uint64_t *nr_bad)
{
	(void)c;
	(void)fn;
	(void)arg;
	if (nr_bad)
		*nr_bad = 0;
	return -EOPNOTSUPP;
}

int smr_cow_rmap_rebuild(struct smr_txn *t, const struct smr_cow_rmap_entry *e,
			 size_t n)
{
	(void)t;
	(void)e;
	(void)n;
	return -EOPNOTSUPP;
}

int smr_cow_clean_zone(struct smr_cow *c, uint32_t zno)
{
	(void)c;
	(void)zno;
	return -EOPNOTSUPP;
}

int smr_cow_clean(struct smr_cow *c, enum smr_cow_gc_policy policy,
		  unsigned int max_zones)
{
	(void)c;
	(void)policy;
	(void)max_zones;
	return -EOPNOTSUPP;
}

/* As the real engine: a commit gives back what was freed; nothing else. */
int smr_cow_clean_for_space(struct smr_cow *c)
{
	struct smr_cow_space sp;

	smr_cow_space(c, &sp);
	if (!sp.reclaimable)
		return -ENOSPC;
	return smr_cow_commit(c);
}

/* No reserve here, so nothing for metadata to take. */
void smr_cow_clean_for_meta(struct smr_cow *c)
{
	(void)c;
}

/* Only the bytes users wrote: there is no device to count. */
void smr_cow_gc_stats(struct smr_cow *c, struct smr_cow_gc_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->user_bytes = __atomic_load_n(&c->user_bytes, __ATOMIC_RELAXED);
}

void smr_cow_count_user(struct smr_cow *c, uint64_t bytes)
{
	__atomic_add_fetch(&c->user_bytes, bytes, __ATOMIC_RELAXED);
}

/* The figures of smrfsctl stat: info and space only, no device. */
void smr_cow_fsstat(struct smr_cow *c, struct smr_cow_fsstat *st)
{
	memset(st, 0, sizeof(*st));
	smr_cow_info(c, &st->info);
	smr_cow_space(c, &st->space);
	st->read_only = smr_cow_is_read_only(c);
}

int smr_cow_zstat(struct smr_cow *c, uint32_t first, uint32_t n,
		  struct smr_cow_zstat *out)
{
	(void)c, (void)first, (void)n, (void)out;
	return -EOPNOTSUPP;
}
