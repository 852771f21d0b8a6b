/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * undo.c - all or nothing for every namespace call.
 *
 * The engine's transaction has no abort: what a call changed stays in the
 * running transaction and commits with it. A call that fails half-way (an
 * I/O error reading a node, no memory) must not leave half a rename or a
 * name without its inode, so the namespace keeps its own undo log while a
 * call runs:
 *
 *   - before an item changes, the log keeps what was there (its value, or
 *     that there was none); rolling back puts the old values back and
 *     deletes what was added, newest first;
 *   - device space that leaves the file maps is released only when the call
 *     succeeds (ns_data_release): a rolled-back call maps it again, so the
 *     engine must not have been told it is free;
 *   - new data space that a call maps (ns_data_new) is given back when the
 *     call rolls back, since nothing references it then;
 *   - the inode counters are put back as they were when the call began.
 *
 * Rolling back changes only items the call itself touched, whose tree paths
 * are then in the node cache, so it does not fail for want of a read; if it
 * fails anyway (no memory), that is logged and what is left is what a crash
 * at that point would leave, which fsck repairs.
 *
 * The log holds the old values, about 2 KiB per MiB of file data a call
 * cuts out of a map. Past NS_UNDO_MAX_BYTES (a truncate of a file of
 * many gigabytes) a call stops keeping them and can no longer be rolled
 * back: it then fails as it did before there was a log, with its changes
 * ordered so that what is left is safe.
 *
 * The log is protected by ns->lock, which every changing call holds from
 * ns_txn_begin() to ns_txn_end().
 */
#include "namespace/ns_priv.h"

#include <stdlib.h>
#include <string.h>

enum ns_undo_kind {
	NS_UNDO_ITEM,     /* restore @key: @len bytes of @val, or absent */
	NS_UNDO_RELEASE,  /* free [off, off + len) when the call succeeds */
	NS_UNDO_NEW,      /* free [off, off + len) when the call rolls back */
};

struct ns_undo_rec {
	enum ns_undo_kind kind;
	bool absent;          /* ITEM: the key was not there */
	bool pooled;          /* has NS_UNDO_POOL_VAL bytes of val: reusable */
	struct smr_key key;   /* ITEM */
	uint64_t off, len;    /* RELEASE, NEW: device range; ITEM: value size */
	uint8_t val[];        /* ITEM: the old value */
};

#define NS_UNDO_MAX_BYTES (32u << 20)

/* Records with room for a value this long are kept for the next call
 * rather than freed (a write takes four: its extent, its inode, the
 * space it maps and the space it releases). */
#define NS_UNDO_POOL_VAL 256
#define NS_UNDO_POOL 16

struct ns_undo {
	struct ns_undo_rec **rec;
	size_t n, cap;
	size_t bytes;              /* held by the records */
	bool overflow;             /* past NS_UNDO_MAX_BYTES: no rollback */
	unsigned int depth;        /* nested ns_txn_begin calls */
	bool replaying;            /* rolling back: record nothing */
	uint64_t next_ino, next_gen, nr_inodes; /* at the outermost begin */
	struct ns_undo_rec *pool[NS_UNDO_POOL];  /* free pooled records */
	unsigned int npool;
};

/* A record with room for @len bytes of value; its header is zeroed. */
static struct ns_undo_rec *ns_undo_rec_get(struct ns_undo *u, size_t len)
{
	struct ns_undo_rec *r;

	if (len > NS_UNDO_POOL_VAL)
		r = malloc(sizeof(*r) + len);
	else if (u->npool)
		r = u->pool[--u->npool];
	else
		r = malloc(sizeof(*r) + NS_UNDO_POOL_VAL);
	if (r) {
		memset(r, 0, sizeof(*r));
		r->pooled = len <= NS_UNDO_POOL_VAL;
	}
	return r;
}

static void ns_undo_rec_put(struct ns_undo *u, struct ns_undo_rec *r)
{
	if (r->pooled && u->npool < NS_UNDO_POOL)
		u->pool[u->npool++] = r;
	else
		free(r);
}

static struct ns_undo *ns_undo(struct smr_ns *ns)
{
	if (!ns->undo)
		ns->undo = calloc(1, sizeof(*ns->undo));
	return ns->undo;
}

void ns_undo_free(struct smr_ns *ns)
{
	struct ns_undo *u = ns->undo;

	if (!u)
		return;
	for (size_t i = 0; i < u->n; i++)
		free(u->rec[i]);
	for (unsigned int i = 0; i < u->npool; i++)
		free(u->pool[i]);
	free(u->rec);
	free(u);
	ns->undo = NULL;
}

static int ns_undo_push(struct ns_undo *u, struct ns_undo_rec *r)
{
	if (u->n == u->cap) {
		size_t cap = u->cap ? 2 * u->cap : 64;
		struct ns_undo_rec **n = realloc(u->rec, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		u->rec = n;
		u->cap = cap;
	}
	u->rec[u->n++] = r;
	u->bytes += sizeof(*r) + (r->kind == NS_UNDO_ITEM ? r->len : 0);
	if (u->bytes > NS_UNDO_MAX_BYTES && !u->overflow) {
		u->overflow = true;
		smr_warn("namespace: a call changes too much to be undone "
			 "should it fail");
	}
	return 0;
}

/* Is a call running whose changes the log must follow? */
static struct ns_undo *ns_undo_active(struct smr_ns *ns)
{
	struct ns_undo *u = ns->undo;

	return u && u->depth && !u->replaying ? u : NULL;
}

/* Keep that @key holds @val (@len bytes), or nothing when @val is NULL. */
static int ns_undo_keep(struct ns_undo *u, const struct smr_key *key,
			const void *val, size_t len)
{
	struct ns_undo_rec *r;
	int rc;

	if (!val)
		len = 0;
	r = ns_undo_rec_get(u, len);
	if (!r)
		return -ENOMEM;
	r->kind = NS_UNDO_ITEM;
	r->key = *key;
	r->absent = !val;
	r->len = len;
	if (len)
		memcpy(r->val, val, len);
	rc = ns_undo_push(u, r);
	if (rc)
		ns_undo_rec_put(u, r);
	return rc;
}

/* Keep what @key holds now. -ENOENT (nothing kept) when it is absent and
 * @need says the change requires it to be there. */
static int ns_undo_keep_item(struct smr_ns *ns, const struct smr_key *key,
			     bool need)
{
	struct ns_undo *u = ns_undo_active(ns);
	uint8_t val[SMR_COW_MAX_ITEM];
	size_t len = sizeof(val);
	int rc;

	if (!u || u->overflow)
		return 0;
	rc = smr_bt_lookup(ns->cow, SMR_TREE_FS, key, val, &len);
	if (rc && rc != -ENOENT)
		return rc;
	if (rc == -ENOENT && need)
		return rc;
	return ns_undo_keep(u, key, rc == -ENOENT ? NULL : val, len);
}

static int ns_undo_keep_range(struct smr_ns *ns, enum ns_undo_kind kind,
			      uint64_t off, uint64_t len)
{
	struct ns_undo *u = ns_undo_active(ns);
	struct ns_undo_rec *r;
	int rc;

	if (!u)
		return -ENOENT;
	r = ns_undo_rec_get(u, 0);
	if (!r)
		return -ENOMEM;
	r->kind = kind;
	r->off = off;
	r->len = len;
	rc = ns_undo_push(u, r);
	if (rc)
		ns_undo_rec_put(u, r);
	return rc;
}

/* ========================================================================
 * Changes, as the rest of the namespace makes them
 * ======================================================================== */

int ns_bt_insert(struct smr_ns *ns, struct smr_txn *t,
		 const struct smr_key *key, const void *val, size_t len)
{
	struct ns_undo *u = ns_undo_active(ns);
	struct ns_undo_rec *r;
	int rc;

	if (!u || u->overflow)
		return smr_bt_insert(t, SMR_TREE_FS, key, val, len);
	/* The key must be absent for an insert to change anything. */
	r = ns_undo_rec_get(u, 0);
	if (!r)
		return -ENOMEM;
	r->kind = NS_UNDO_ITEM;
	r->key = *key;
	r->absent = true;
	rc = ns_undo_push(u, r);
	if (rc) {
		ns_undo_rec_put(u, r);
		return rc;
	}
	rc = smr_bt_insert(t, SMR_TREE_FS, key, val, len);
	if (rc == -EEXIST || rc == -E2BIG) {
		/* Refused before any change: nothing to undo. */
		u->n--;
		ns_undo_rec_put(u, r);
	}
	return rc;
}

int ns_bt_update(struct smr_ns *ns, struct smr_txn *t,
		 const struct smr_key *key, const void *val, size_t len)
{
	int rc = ns_undo_keep_item(ns, key, true);

	return rc ? rc : smr_bt_update(t, SMR_TREE_FS, key, val, len);
}

int ns_bt_put(struct smr_ns *ns, struct smr_txn *t, const struct smr_key *key,
	      const void *val, size_t len)
{
	int rc = ns_undo_keep_item(ns, key, false);

	return rc ? rc : smr_bt_put(t, SMR_TREE_FS, key, val, len);
}

int ns_bt_delete(struct smr_ns *ns, struct smr_txn *t,
		 const struct smr_key *key)
{
	int rc = ns_undo_keep_item(ns, key, true);

	return rc ? rc : smr_bt_delete(t, SMR_TREE_FS, key);
}

int ns_bt_put_was(struct smr_ns *ns, struct smr_txn *t,
		  const struct smr_key *key, const void *val, size_t len,
		  const void *old, size_t old_len)
{
	struct ns_undo *u = ns_undo_active(ns);
	int rc = u && !u->overflow ? ns_undo_keep(u, key, old, old_len) : 0;

	return rc ? rc : smr_bt_put(t, SMR_TREE_FS, key, val, len);
}

int ns_bt_delete_was(struct smr_ns *ns, struct smr_txn *t,
		     const struct smr_key *key, const void *old,
		     size_t old_len)
{
	struct ns_undo *u = ns_undo_active(ns);
	int rc = u && !u->overflow ? ns_undo_keep(u, key, old, old_len) : 0;

	return rc ? rc : smr_bt_delete(t, SMR_TREE_FS, key);
}

int ns_data_release(struct smr_ns *ns, struct smr_txn *t, uint64_t off,
		    uint64_t len)
{
	int rc = ns_undo_keep_range(ns, NS_UNDO_RELEASE, off, len);

	/* Outside a call (never, today) the engine is told at once. */
	return rc == -ENOENT ? smr_cow_data_free(t, off, len) : rc;
}

int ns_data_new(struct smr_ns *ns, struct smr_txn *t, uint64_t off,
		uint64_t len)
{
	int rc = smr_cow_data_settle(t, off, len);

	if (!rc)
		rc = ns_undo_keep_range(ns, NS_UNDO_NEW, off, len);
	return rc == -ENOENT ? 0 : rc;
}

/* ========================================================================
 * Calls
 * ======================================================================== */

int ns_txn_begin(struct smr_ns *ns, struct smr_txn **tp)
{
	struct ns_undo *u = ns_undo(ns);
	int rc;

	if (!u)
		return -ENOMEM;
	rc = smr_txn_begin(ns->cow, tp);
	if (rc)
		return rc;
	if (u->depth++ == 0) {
		u->next_ino = ns->next_ino;
		u->next_gen = ns->next_gen;
		u->nr_inodes = ns->nr_inodes;
	}
	return 0;
}

size_t ns_undo_mark(struct smr_ns *ns)
{
	return ns->undo ? ns->undo->n : 0;
}

bool ns_undo_to(struct smr_ns *ns, struct smr_txn *t, size_t mark)
{
	struct ns_undo *u = ns->undo;
	unsigned long failed = 0;

	if (!u || u->overflow)
		return false;
	u->replaying = true;
	while (u->n > mark) {
		struct ns_undo_rec *r = u->rec[--u->n];
		int rc = 0;

		switch (r->kind) {
		case NS_UNDO_ITEM:
			if (r->absent) {
				rc = smr_bt_delete(t, SMR_TREE_FS, &r->key);
				if (rc == -ENOENT)
					rc = 0;
			} else {
				rc = smr_bt_put(t, SMR_TREE_FS, &r->key,
						r->val, r->len);
			}
			break;
		case NS_UNDO_NEW:
			rc = smr_cow_data_free(t, r->off, r->len);
			break;
		case NS_UNDO_RELEASE:
			break; /* still mapped: never released */
		}
		if (rc)
			failed++;
		ns_undo_rec_put(u, r);
	}
	u->replaying = false;
	if (failed)
		smr_err("namespace: %lu change%s of a failed call could not be "
			"undone; fsck repairs what is left", failed,
			failed == 1 ? "" : "s");
	return true;
}

int ns_txn_end(struct smr_ns *ns, struct smr_txn *t, int rc)
{
	struct ns_undo *u = ns->undo;

	if (--u->depth) {
		smr_txn_end(t);
		return rc;
	}
	if (rc < 0 && u->overflow)
		smr_err("namespace: a call too large to undo failed (%d); what "
			"it changed stays", rc);
	if (rc < 0 && !u->overflow) {
		ns_undo_to(ns, t, 0);
		ns->next_ino = u->next_ino;
		ns->next_gen = u->next_gen;
		ns->nr_inodes = u->nr_inodes;
	} else {
		for (size_t i = 0; i < u->n; i++) {
			struct ns_undo_rec *r = u->rec[i];
			int frc;

			if (r->kind != NS_UNDO_RELEASE)
				continue;
			frc = smr_cow_data_free(t, r->off, r->len);
			if (frc)
				smr_warn("namespace: releasing %llu+%llu: %d; "
					 "fsck finds the space",
					 (unsigned long long)r->off,
					 (unsigned long long)r->len, frc);
		}
	}
	for (size_t i = 0; i < u->n; i++)
		ns_undo_rec_put(u, u->rec[i]);
	u->n = 0;
	u->bytes = 0;
	u->overflow = false;
	smr_txn_end(t);
	return rc;
}
