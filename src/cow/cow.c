/* SPDX-License-Identifier: GPL-2.0-or-later */
/* cow.c - the public entry points of the COW engine (cow.h). */
#include "cow/cow_priv.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static void to_nkey(const struct smr_key *k, struct smr_nkey *nk)
{
	nk->objid = k->objid;
	nk->type = k->type;
	nk->offset = k->offset;
}

static void from_nkey(const struct smr_nkey *nk, struct smr_key *k)
{
	k->objid = nk->objid;
	k->type = nk->type;
	k->offset = nk->offset;
}

/* ------------------------------------------------------------------------
 * Tree types
 * ------------------------------------------------------------------------ */

int smr_cow_tree_register(struct smr_cow *c, const struct smr_tree_type *tt)
{
	int rc = 0;

	if (!tt || tt->id < 1 || tt->id > SMR_COW_MAX_TREE || !tt->name ||
	    !tt->max_item || tt->max_item > SMR_COW_MAX_ITEM)
		return -EINVAL;
	pthread_rwlock_wrlock(&c->lock);
	if (c->types[tt->id] && c->types[tt->id] != tt)
		rc = -EEXIST;
	else
		c->types[tt->id] = tt;
	pthread_rwlock_unlock(&c->lock);
	return rc;
}

const char *smr_tree_key_str_locked(struct smr_cow *c, uint32_t tree,
				    const struct smr_nkey *key, char *buf,
				    size_t len)
{
	const struct smr_tree_type *tt = smr_tree_type_of(c, tree);
	struct smr_key k;

	from_nkey(key, &k);
	if (!tt || !tt->key_str || !tt->key_str(&k, buf, len))
		snprintf(buf, len, "(%" PRIu64 ", %u, %" PRIu64 ")", k.objid,
			 k.type, k.offset);
	return buf;
}

const char *smr_tree_name_locked(struct smr_cow *c, uint32_t tree, char *buf,
				 size_t len)
{
	const struct smr_tree_type *tt = smr_tree_type_of(c, tree);

	if (tt)
		return tt->name;
	snprintf(buf, len, "%u", tree);
	return buf;
}

const char *smr_tree_key_str(struct smr_cow *c, uint32_t tree,
			     const struct smr_key *key, char *buf, size_t len)
{
	struct smr_nkey k;

	to_nkey(key, &k);
	pthread_rwlock_rdlock(&c->lock);
	smr_tree_key_str_locked(c, tree, &k, buf, len);
	pthread_rwlock_unlock(&c->lock);
	return buf;
}

const char *smr_tree_name(struct smr_cow *c, uint32_t tree, char *buf,
			  size_t len)
{
	const char *name;

	pthread_rwlock_rdlock(&c->lock);
	name = smr_tree_name_locked(c, tree, buf, len);
	pthread_rwlock_unlock(&c->lock);
	return name;
}

/* ------------------------------------------------------------------------
 * Open and close
 * ------------------------------------------------------------------------ */

/* Open the engine over @ops/@store once c->dev etc. are set. */
/*
 * Data in flight when the checkpoint was taken is among what it released,
 * with the reverse-map entries its writer had made: nothing references it
 * now, so its entries go (those of other released extents went with their
 * release). Nothing to do read-only: no cleaner runs then.
 */
static int cow_trim_released(struct smr_cow *c)
{
	bool skipped = false;
	int rc = 0;

	if (c->opts.read_only || !c->alloc)
		return 0;
	pthread_rwlock_wrlock(&c->lock);
	for (size_t i = 0; i < c->free_prev.n + c->cut.n && !rc; i++) {
		const struct smr_extent *x = i < c->free_prev.n ?
			&c->free_prev.x[i] : &c->cut.x[i - c->free_prev.n];

		rc = smr_rmap_trim_locked(c, x->off, x->len);
		/* Opened to salvage: the rebuild drops them with the node. */
		if (cow_damage(rc) && c->opts.salvage) {
			skipped = true;
			rc = 0;
		}
	}
	pthread_rwlock_unlock(&c->lock);
	if (skipped)
		smr_warn("reverse map: entries of data released in flight "
			 "left behind a damaged node, for its rebuild");
	return rc;
}

static void cow_free_found(struct smr_cow *c)
{
	for (uint32_t i = 0; i < c->log_nfound; i++)
		smr_dev_buf_free(c->log_found[i]);
	free(c->log_found);
	free(c->log_found_len);
	c->log_found = NULL;
	c->log_found_len = NULL;
	c->log_nfound = 0;
}

/*
 * The fsync log: replay the records the store found after the checkpoint
 * and commit them, so that the log is empty before anything else is
 * written. A read-only open replays them in memory if asked to
 * (replay_ro) and leaves them on the device for the next read-write one.
 */
static int cow_open_log(struct smr_cow *c)
{
	int rc = 0;

	c->log_on = c->opts.fsync_log && !c->opts.read_only && c->alloc &&
		    c->sops->log_write &&
		    (c->sb.features_incompat & SMR_FEAT_INCOMPAT_LOG);
	c->log_frees_delta = c->sb.features_incompat &
			     SMR_FEAT_INCOMPAT_LOG_FREES;
	if (c->opts.fsync_log && !c->opts.read_only && c->alloc &&
	    !(c->sb.features_incompat & SMR_FEAT_INCOMPAT_LOG))
		smr_info("filesystem made without the fsync log: fsync commits");
	if (!c->log_nfound)
		return 0;
	if (c->opts.read_only && !(c->opts.replay_ro && c->alloc)) {
		c->log_pending = c->log_nfound;
		smr_warn("%u fsync log record%s after generation %" PRIu64
			 " not replayed (read-only): this shows the state of "
			 "the checkpoint; a read-write open replays them",
			 c->log_nfound, c->log_nfound == 1 ? "" : "s", c->gen);
		cow_free_found(c);
		return 0;
	}
	rc = smr_log_replay(c, c->log_found, c->log_found_len, c->log_nfound);
	cow_free_found(c);
	if (rc || !c->changed)
		return rc;
	if (c->opts.read_only) {
		smr_info("fsync log: replayed in memory only (read-only); a "
			 "read-write open writes it");
		return 0;
	}
	return smr_cow_commit_now(c);
}

static int cow_open_common(struct smr_cow *c)
{
	struct smr_ckpt *ck = calloc(1, sizeof(*ck));
	int rc;

	if (!ck)
		return -ENOMEM;
	rc = c->sops->load(c, ck);
	if (rc)
		goto out;
	c->ns = c->sb.node_size;
	rc = smr_cow_setup(c);
	if (!rc)
		rc = smr_rmap_register(c);
	if (rc)
		goto out;
	rc = smr_bt_load_roots(c, ck);
	if (rc)
		goto out;
	c->gen = ck->gen;
	c->nr_nodes = ck->nr_nodes;
	c->gc.gc_runs = ck->gc_runs;
	c->gc.gc_zones = ck->gc_zones;
	c->gc.gc_usecs = ck->gc_usecs;
	c->gc_saved = c->gc;
	c->alloc_ref.off = ck->alloc_off;
	c->alloc_ref.len = ck->alloc_len;
	c->alloc_ref.csum = ck->alloc_csum;
	c->alloc_ref.gen = ck->alloc_gen;
	for (uint32_t i = 0; i < ck->nr_pending; i++) {
		rc = smr_xlist_add(&c->free_prev, ck->pending[i].off,
				   ck->pending[i].len);
		if (rc)
			goto out;
	}
	rc = cow_trim_released(c);
	if (rc)
		goto out;
	smr_rmap_guard(c);
	cow_set_read_only(c, c->opts.read_only);
	rc = cow_open_log(c);
	if (rc)
		goto out;
	if (!cow_read_only(c))
		rc = smr_cow_start_timer(c);
	if (!rc && !cow_read_only(c))
		rc = smr_cow_gc_start(c);
out:
	free(ck);
	return rc;
}

int smr_cow_open_store(const struct smr_store_ops *ops, void *store,
		       const struct smr_cow_opts *o, struct smr_cow **cp)
{
	struct smr_cow *c = calloc(1, sizeof(*c));
	int rc;

	if (!c)
		return -ENOMEM;
	c->sops = ops;
	c->store = store;
	if (o)
		c->opts = *o;
	rc = cow_open_common(c);
	if (rc) {
		smr_cow_teardown(c);
		if (c->sops->close)
			c->sops->close(c);
		free(c);
		return rc;
	}
	*cp = c;
	return 0;
}

int smr_cow_open(struct smr_dev *dev, const struct smr_cow_opts *o,
		 struct smr_cow **cp)
{
	struct smr_cow *c = calloc(1, sizeof(*c));
	int rc;

	if (!c)
		return -ENOMEM;
	c->sops = &smr_store_dev_ops;
	c->dev = dev;
	c->info = smr_dev_info(dev);
	if (o)
		c->opts = *o;
	rc = cow_open_common(c);
	if (rc) {
		smr_cow_teardown(c);
		c->sops->close(c);
		cow_free_found(c);
		free(c);
		return rc;
	}
	*cp = c;
	return 0;
}

int smr_cow_close(struct smr_cow *c)
{
	int rc = 0;

	if (!c)
		return 0;
	smr_cow_gc_stop(c);
	if (!smr_cow_is_read_only(c)) {
		rc = smr_cow_commit_now(c);
		/* A second, empty commit hands the blocks the last one
		 * released to the allocator, so nothing stays pending. */
		if (!rc && c->free_prev.n)
			rc = smr_cow_commit_now(c);
	} else {
		/* Turned read-only by a failed commit: what was not
		 * committed is lost, say so. (The timer still runs.) */
		pthread_mutex_lock(&c->txn_lock);
		rc = c->error;
		pthread_mutex_unlock(&c->txn_lock);
	}
	smr_cow_teardown(c);
	if (c->sops->close)
		c->sops->close(c);
	free(c);
	return rc;
}

void smr_cow_close_discard(struct smr_cow *c)
{
	if (!c)
		return;
	/* Read-only from here: neither the cleaner nor close commits. */
	smr_cow_gc_stop(c);
	pthread_mutex_lock(&c->txn_lock);
	cow_set_read_only(c, true);
	pthread_mutex_unlock(&c->txn_lock);
	smr_cow_close(c);
}

void smr_cow_info(struct smr_cow *c, struct smr_cow_info *info)
{
	memset(info, 0, sizeof(*info));
	memcpy(info->uuid, c->sb.uuid, sizeof(info->uuid));
	memcpy(info->label, c->sb.label, sizeof(info->label));
	memcpy(info->alloc, c->sb.alloc, sizeof(info->alloc));
	if (c->alloc)
		snprintf(info->alloc, sizeof(info->alloc), "%s",
			 c->alloc->ops->name);
	memcpy(info->alloc_why, c->alloc_why, sizeof(info->alloc_why));
	info->block_size = c->sb.block_size;
	info->node_size = c->sb.node_size;
	info->capacity = c->sb.capacity;
	info->data_start = c->sb.data_start;
	info->gen = __atomic_load_n(&c->gen, __ATOMIC_ACQUIRE);
	info->format_major = c->sb.format_major;
	info->format_minor = c->sb.format_minor;
	info->skipped_gen = c->skipped_gen;
	info->ckpt_rebuilt = c->ckpt_rebuilt;
	info->log_replayed = c->log_replayed;
	info->log_pending = c->log_pending;
	info->log_on = c->log_on;
	info->alloc_restored = c->alloc && c->alloc->state_restored;
	pthread_rwlock_rdlock(&c->lock);
	info->fs_items = c->trees[SMR_TREE_FS].nr_items;
	pthread_rwlock_unlock(&c->lock);
}

/* A flag alone: no lock (every write and transaction asks). */
bool smr_cow_is_read_only(struct smr_cow *c)
{
	return cow_read_only(c);
}

int smr_cow_check(struct smr_cow *c)
{
	int rc;

	pthread_rwlock_rdlock(&c->lock);
	rc = smr_cow_audit_locked(c);
	pthread_rwlock_unlock(&c->lock);
	return rc;
}

int smr_cow_check_all(struct smr_cow *c, uint64_t *problems,
		      uint64_t *underfull)
{
	int rc;

	*problems = *underfull = 0;
	pthread_rwlock_rdlock(&c->lock);
	rc = smr_cow_audit_count_locked(c, problems, underfull);
	pthread_rwlock_unlock(&c->lock);
	if (cow_damage(rc)) {
		if (!*problems)
			*problems = 1;
		rc = 0;
	}
	return rc;
}

uint64_t smr_cow_nodes_restored(struct smr_cow *c)
{
	uint64_t n = 0;

	for (uint32_t id = 1; id <= SMR_COW_MAX_TREE; id++)
		n += __atomic_load_n(&c->trees[id].restored, __ATOMIC_RELAXED);
	return n;
}

/* ------------------------------------------------------------------------
 * Items
 * ------------------------------------------------------------------------ */

int smr_bt_lookup(struct smr_cow *c, uint32_t tree, const struct smr_key *key,
		  void *val, size_t *len)
{
	struct smr_nkey k;
	size_t dummy = 0;
	int rc;

	to_nkey(key, &k);
	rc = smr_rmap_sync(c, tree);
	if (rc)
		return rc;
	pthread_rwlock_rdlock(&c->lock);
	rc = smr_bt_lookup_locked(c, tree, &k, val, len ? len : &dummy);
	pthread_rwlock_unlock(&c->lock);
	return rc;
}

/* Up to @n (at most 2) items from @from on, as smr_bt_step_n_locked():
 * how many, or an error; @found may be NULL. */
static int bt_step(struct smr_cow *c, uint32_t tree, const struct smr_key *from,
		   bool fwd, unsigned int n, struct smr_key *found, void **val,
		   size_t *len)
{
	struct smr_nkey k, f[2];
	int rc;

	if (n > SMR_ARRAY_SIZE(f))
		return -EINVAL;
	to_nkey(from, &k);
	rc = smr_rmap_sync(c, tree);
	if (rc)
		return rc;
	pthread_rwlock_rdlock(&c->lock);
	rc = smr_bt_step_n_locked(c, tree, &k, fwd, n, f, val, len);
	pthread_rwlock_unlock(&c->lock);
	for (int i = 0; found && i < rc; i++)
		from_nkey(&f[i], &found[i]);
	return rc;
}

/* One item, as smr_bt_next() and smr_bt_prev(): 0 or an error. */
static int bt_step1(struct smr_cow *c, uint32_t tree,
		    const struct smr_key *from, bool fwd,
		    struct smr_key *found, void *val, size_t *len)
{
	int rc = bt_step(c, tree, from, fwd, 1, found, &val, len);

	return rc < 0 ? rc : 0;
}

int smr_bt_next(struct smr_cow *c, uint32_t tree, const struct smr_key *from,
		struct smr_key *found, void *val, size_t *len)
{
	return bt_step1(c, tree, from, true, found, val, len);
}

int smr_bt_prev(struct smr_cow *c, uint32_t tree, const struct smr_key *from,
		struct smr_key *found, void *val, size_t *len)
{
	return bt_step1(c, tree, from, false, found, val, len);
}

int smr_bt_prev2(struct smr_cow *c, uint32_t tree, const struct smr_key *from,
		 struct smr_key found[2], void *val[2], size_t len[2])
{
	return bt_step(c, tree, from, false, 2, found, val, len);
}

static int bt_modify(struct smr_txn *t, uint32_t tree,
		     const struct smr_key *key, const void *val, size_t len,
		     int mode)
{
	struct smr_cow *c = t->c;
	struct smr_nkey k;
	int rc;

	if (len > SMR_COW_MAX_ITEM)
		return -E2BIG;
	to_nkey(key, &k);
	pthread_rwlock_wrlock(&c->lock);
	rc = cow_read_only(c) ? -EROFS :
			    smr_bt_modify_locked(c, tree, &k, val, len, mode);
	if (!rc)
		smr_log_change_locked(c, tree, &k, val, len, false);
	pthread_rwlock_unlock(&c->lock);
	return rc;
}

int smr_bt_insert(struct smr_txn *t, uint32_t tree, const struct smr_key *key,
		  const void *val, size_t len)
{
	return bt_modify(t, tree, key, val, len, SMR_BT_INSERT);
}

int smr_bt_update(struct smr_txn *t, uint32_t tree, const struct smr_key *key,
		  const void *val, size_t len)
{
	return bt_modify(t, tree, key, val, len, SMR_BT_UPDATE);
}

int smr_bt_put(struct smr_txn *t, uint32_t tree, const struct smr_key *key,
	       const void *val, size_t len)
{
	return bt_modify(t, tree, key, val, len, SMR_BT_PUT);
}

int smr_bt_delete(struct smr_txn *t, uint32_t tree, const struct smr_key *key)
{
	struct smr_cow *c = t->c;
	struct smr_nkey k;
	int rc;

	to_nkey(key, &k);
	pthread_rwlock_wrlock(&c->lock);
	rc = cow_read_only(c) ? -EROFS : smr_bt_delete_locked(c, tree, &k);
	if (!rc)
		smr_log_change_locked(c, tree, &k, NULL, 0, true);
	pthread_rwlock_unlock(&c->lock);
	return rc;
}

uint64_t smr_cow_fs_changes(struct smr_cow *c, uint64_t objid)
{
	return __atomic_load_n(&c->fs_changes[smr_cow_fs_slot(objid)].n,
			       __ATOMIC_RELAXED);
}

int smr_bt_iterate(struct smr_cow *c, uint32_t tree, const struct smr_key *from,
		   const struct smr_key *to, smr_bt_iter_fn fn, void *arg)
{
	struct smr_nkey f, l;
	int rc;

	to_nkey(from, &f);
	to_nkey(to, &l);
	rc = smr_rmap_sync(c, tree);
	if (rc)
		return rc;
	pthread_rwlock_rdlock(&c->lock);
	rc = smr_bt_iterate_locked(c, tree, &f, &l, fn, arg);
	pthread_rwlock_unlock(&c->lock);
	return rc;
}
