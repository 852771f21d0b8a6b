/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * txn.c - transactions, the commit protocol, group commit and the timer.
 *
 * The commit protocol (docs/design/cow.md has the reasoning):
 *
 *   1. freeze: wait until no transaction handle is open, take the engine
 *      lock exclusive, so the trees are one consistent state;
 *   2. write every dirty node, children before parents, to addresses the
 *      allocator hands out from the metadata stream, in one batch;
 *   3. give the allocator the blocks the previous checkpoint released
 *      (smr_alloc_free): they are referenced by the checkpoint before it
 *      and become reusable only once this one is durable, so the newest
 *      *and* the previous checkpoint are always intact on disk;
 *   4. the store's checkpoint step: allocator state (smr_alloc_commit),
 *      flush, the checkpoint record, flush, smr_alloc_committed.
 *
 * The checkpoint record is written only after everything it references is
 * durable (the first flush), and the commit returns only after the record is
 * durable (the second flush). Any failure turns the engine read-only: the
 * last good checkpoint stays the newest on disk.
 */
#include "cow/cow_priv.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void smr_cow_set_error(struct smr_cow *c, int rc, const char *what)
{
	pthread_mutex_lock(&c->txn_lock);
	if (!cow_read_only(c) || !c->error) {
		smr_err("%s failed (%s): the filesystem is now read-only; the "
			"checkpoint of generation %" PRIu64 " stays the newest",
			what, strerror(-rc),
			__atomic_load_n(&c->gen, __ATOMIC_ACQUIRE));
		c->error = rc;
	}
	cow_set_read_only(c, true);
	pthread_mutex_unlock(&c->txn_lock);
}

/* Commit with the trees frozen (c->lock held exclusive). */
static int commit_locked(struct smr_cow *c)
{
	struct smr_cow_gc_stats gc = { 0 };
	struct smr_ckpt *ck;
	uint64_t gen = SMR_MAX(c->gen, c->gen_floor) + 1;
	bool gc_new;
	size_t np;
	int rc;

	/* The cleaner's figures, without clean_lock (a cleaning pass holds
	 * it across its commits); new figures alone are worth a commit, so
	 * that a pass's last ones reach the disk with the next timer or
	 * unmount. */
	gc.gc_runs = __atomic_load_n(&c->gc.gc_runs, __ATOMIC_RELAXED);
	gc.gc_zones = __atomic_load_n(&c->gc.gc_zones, __ATOMIC_RELAXED);
	gc.gc_usecs = __atomic_load_n(&c->gc.gc_usecs, __ATOMIC_RELAXED);
	gc_new = gc.gc_runs != c->gc_saved.gc_runs ||
		 gc.gc_zones != c->gc_saved.gc_zones ||
		 gc.gc_usecs != c->gc_saved.gc_usecs;
	if (!c->changed && !c->free_prev.n && !gc_new) {
		c->log_durable = c->log_change;
		return 0;
	}
	/* The reverse-map entries still in memory belong in this one. */
	rc = smr_rmap_flush_locked(c);
	if (rc)
		return rc;
	ck = calloc(1, sizeof(*ck));
	if (!ck)
		return -ENOMEM;
	ck->gen = gen;
	ck->prev_gen = c->gen;
	ck->gc_runs = gc.gc_runs;
	ck->gc_zones = gc.gc_zones;
	ck->gc_usecs = gc.gc_usecs;
	rc = smr_bt_write_dirty(c, gen, ck);
	if (rc)
		goto out;
	smr_failpoint("commit.after_nodes");
	/* Step 3: what the previous checkpoint released. */
	for (size_t i = 0; i < c->free_prev.n; i++) {
		rc = c->sops->free(c, c->free_prev.x[i].off,
				   c->free_prev.x[i].len);
		if (rc)
			goto out;
	}
	/* What this one releases is recorded in it and freed by the next;
	 * beyond what fits in the record it is freed now (the previous
	 * checkpoint then loses its guarantee for those blocks). The rest of
	 * the record is for data in flight (the store's checkpoint step). */
	np = SMR_MIN(c->free_cur.n,
		     (size_t)(SMR_CKPT_MAX_PENDING - SMR_CKPT_UNSETTLED_ROOM));
	for (size_t i = np; i < c->free_cur.n; i++) {
		rc = c->sops->free(c, c->free_cur.x[i].off,
				   c->free_cur.x[i].len);
		if (rc)
			goto out;
	}
	ck->nr_pending = (uint32_t)np;
	for (size_t i = 0; i < np; i++) {
		ck->pending[i].off = c->free_cur.x[i].off;
		ck->pending[i].len = c->free_cur.x[i].len;
	}
	rc = c->sops->checkpoint(c, ck);
	if (rc)
		goto out;
	__atomic_store_n(&c->gen, gen, __ATOMIC_RELEASE);
	c->changed = false;
	c->gc_saved = gc;
	smr_xlist_clear(&c->free_prev);
	for (size_t i = 0; i < np; i++)
		smr_xlist_add(&c->free_prev, ck->pending[i].off,
			      ck->pending[i].len);
	smr_xlist_clear(&c->free_cur);
	smr_log_committed_locked(c);
	__atomic_fetch_add(&c->stats.commits, 1, __ATOMIC_RELAXED);
	smr_cache_shrink(c);
out:
	/* A commit that failed after meta_alloc may still hold the metadata
	 * stream; the engine is read-only from now on, but whoever shares
	 * that stream (and close) must not wait for it. */
	if (rc)
		c->sops->meta_abort(c);
	free(ck);
	return rc;
}

/*
 * With commit_lock and txn_lock held, and the engine writable: wait for
 * the open handles to end, letting no new one begin, and run @fn with the
 * trees frozen (lock exclusive); a failure turns the engine read-only, and
 * so does success where @then_ro (read-only by request: the handles that
 * waited get -EROFS, none changed anything after @fn). Releases both locks.
 */
static int run_frozen(struct smr_cow *c, int (*fn)(struct smr_cow *),
		      const char *what, bool then_ro)
{
	uint64_t nodes;
	int rc;

	c->committing = true;
	while (c->nr_handles)
		pthread_cond_wait(&c->txn_cond, &c->txn_lock);
	pthread_mutex_unlock(&c->txn_lock);

	nodes = __atomic_load_n(&c->stats.nodes_written, __ATOMIC_RELAXED);
	pthread_rwlock_wrlock(&c->lock);
	rc = fn(c);
	pthread_rwlock_unlock(&c->lock);
	if (rc)
		smr_cow_set_error(c, rc, what);

	pthread_mutex_lock(&c->txn_lock);
	if (!rc && then_ro) {
		c->ro_asked = true;
		cow_set_read_only(c, true);
	}
	c->committing = false;
	pthread_cond_broadcast(&c->txn_cond);
	pthread_mutex_unlock(&c->txn_lock);
	pthread_mutex_unlock(&c->commit_lock);
	/* Metadata takes space too, from the reserve once data has none:
	 * a run of commits with little data written (creates and unlinks
	 * with fsync) must wake the cleaner as writers do, or it fills the
	 * reserve with nodes of dead zones and the next commit fails. */
	if (!rc)
		smr_cow_gc_kick(c, (__atomic_load_n(&c->stats.nodes_written,
						    __ATOMIC_RELAXED) -
				    nodes) * c->ns);
	return rc;
}

/* What a commit or fsync of a read-only engine returns (txn_lock held):
 * nothing to make durable where it was opened or asked to be read-only,
 * else the error that turned it so. */
static int cow_ro_result(struct smr_cow *c)
{
	if (c->opts.read_only || (c->ro_asked && !c->error))
		return 0;
	return c->error ? c->error : -EROFS;
}

/* Take commit_lock and txn_lock where the engine is writable; else take
 * nothing and put in *@rc what a commit returns now. */
static bool lock_writable(struct smr_cow *c, int *rc)
{
	pthread_mutex_lock(&c->commit_lock);
	pthread_mutex_lock(&c->txn_lock);
	if (!cow_read_only(c))
		return true;
	*rc = cow_ro_result(c);
	pthread_mutex_unlock(&c->txn_lock);
	pthread_mutex_unlock(&c->commit_lock);
	return false;
}

/*
 * Commit now: wait for open handles, freeze, commit. Callers that arrive
 * while a commit runs wait for it and then find their changes already
 * committed (group commit): @want is the generation that must be durable.
 */
static int commit_gen(struct smr_cow *c, uint64_t want)
{
	int rc;

	if (!lock_writable(c, &rc))
		return rc;
	if (__atomic_load_n(&c->gen, __ATOMIC_ACQUIRE) >= want) {
		pthread_mutex_unlock(&c->txn_lock);
		pthread_mutex_unlock(&c->commit_lock);
		return 0;
	}
	return run_frozen(c, commit_locked, "commit", false);
}

/* A log record, or a commit where none can be written. */
static int fsync_locked(struct smr_cow *c)
{
	int rc = smr_log_record_locked(c);

	return rc == 1 ? commit_locked(c) : rc;
}

/*
 * fsync: a log record where the engine can write one, else a commit.
 * Frozen like a commit, so that the record is the state after completed
 * transactions; callers whose changes a record or commit made durable
 * while they waited return at once (group commit).
 */
int smr_cow_fsync(struct smr_cow *c)
{
	uint64_t want;
	int rc;

	if (!c->log_on)
		return smr_cow_commit(c);
	pthread_rwlock_rdlock(&c->lock);
	want = c->log_change;
	pthread_rwlock_unlock(&c->lock);
	if (!lock_writable(c, &rc))
		return rc;
	if (c->log_durable >= want) {
		pthread_mutex_unlock(&c->txn_lock);
		pthread_mutex_unlock(&c->commit_lock);
		return 0;
	}
	return run_frozen(c, fsync_locked, "fsync", false);
}

int smr_cow_commit_now(struct smr_cow *c)
{
	uint64_t want = __atomic_load_n(&c->gen, __ATOMIC_ACQUIRE) + 1;

	return commit_gen(c, want);
}

int smr_cow_commit(struct smr_cow *c)
{
	return smr_cow_commit_now(c);
}

int smr_cow_set_read_only(struct smr_cow *c, bool ro)
{
	int rc;

	if (ro) {
		/* The cleaner first: a pass under way commits its moves. */
		smr_cow_gc_stop(c);
		if (!lock_writable(c, &rc))
			return rc;
		return run_frozen(c, commit_locked, "commit", true);
	}
	pthread_mutex_lock(&c->txn_lock);
	if (!cow_read_only(c)) {
		pthread_mutex_unlock(&c->txn_lock);
		return 0;
	}
	if (!c->ro_asked || c->error) {
		pthread_mutex_unlock(&c->txn_lock);
		return -EROFS;
	}
	c->ro_asked = false;
	c->gc_stop = false;
	cow_set_read_only(c, false);
	pthread_mutex_unlock(&c->txn_lock);
	return smr_cow_gc_start(c);
}

int smr_cow_commit_release(struct smr_cow *c)
{
	int rc = smr_cow_commit_now(c);

	if (!rc)
		rc = smr_cow_commit_now(c);
	/* The third may have nothing of the trees to write: forced. */
	if (!rc)
		rc = smr_cow_commit_forced(c);
	return rc;
}

/* ------------------------------------------------------------------------
 * Transaction handles
 * ------------------------------------------------------------------------ */

/*
 * Are there more dirty nodes than a transaction may find before the engine
 * commits? Half the cache, and more than the next commit is sure to find
 * room for: it writes them into free space, what the transactions freed
 * comes back only after it, and on a nearly full filesystem only the
 * allocator's reserve is left to metadata (names and xattrs created, or
 * files deleted, by the thousand there dirtied more nodes than the reserve
 * held, the commit failed and the filesystem turned read-only). So, as the
 * fsync log does before it writes a record (log.c, log_commit_due), no
 * more than a quarter of what is free or reserved. Data takes free space
 * at any time, so that is asked afresh (O(zones)) once the dirty nodes
 * pass a quarter of the reserve alone, which data cannot take and which
 * is worked out once after each commit; on a device whose reserve is
 * large that is never below half the cache.
 */
static bool dirty_due(struct smr_cow *c)
{
	size_t dirty = smr_cache_dirty_bytes(c);
	struct smr_space sp;

	if (dirty > c->cache_bytes / 2)
		return true;
	if (!c->alloc ||
	    dirty <= SMR_MAX(smr_cow_reserve(c, NULL) / 4, (uint64_t)c->ns))
		return false;
	smr_alloc_space(c->alloc, &sp);
	return dirty > (sp.free + sp.reserved) / 4;
}

/*
 * Handles the calling thread holds on engine txn_held_on. A thread that
 * holds one must not wait for that engine's commit (the commit waits for
 * its handle), so its nested begins neither wait for a freeze nor commit
 * themselves. Handles on a second engine are not counted: a begin there
 * waits like any other.
 */
static __thread const struct smr_cow *txn_held_on;
static __thread unsigned int txn_held;

static bool txn_nested(const struct smr_cow *c)
{
	return txn_held && txn_held_on == c;
}

/* Ask the timer thread for a commit now (txn_lock held). */
static void ask_commit_locked(struct smr_cow *c)
{
	c->commit_asked = true;
	pthread_cond_broadcast(&c->timer_cond);
}

int smr_txn_begin(struct smr_cow *c, struct smr_txn **tp)
{
	struct smr_txn *t;

	if (smr_cow_is_read_only(c))
		return -EROFS;
	/*
	 * Too much dirty metadata: commit before taking more. A thread that
	 * holds no handle commits itself: the commit waits for the open
	 * handles to end and lets no new one begin meanwhile, so the bound
	 * holds however the writers' handles overlap. A thread inside a
	 * handle of its own (a nested begin) cannot wait for that, so it
	 * has the timer thread commit, which happens once it ends.
	 */
	if (dirty_due(c)) {
		if (!txn_nested(c)) {
			int rc = smr_cow_commit_now(c);

			if (rc)
				return rc;
		} else {
			pthread_mutex_lock(&c->txn_lock);
			ask_commit_locked(c);
			pthread_mutex_unlock(&c->txn_lock);
		}
	}
	t = malloc(sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->c = c;
	pthread_mutex_lock(&c->txn_lock);
	/* A nested begin joins even while a commit waits: that commit waits
	 * for this thread's outer handle, so it has not frozen the trees. */
	while (c->committing && !txn_nested(c))
		pthread_cond_wait(&c->txn_cond, &c->txn_lock);
	if (cow_read_only(c)) {
		pthread_mutex_unlock(&c->txn_lock);
		free(t);
		return -EROFS;
	}
	c->nr_handles++;
	pthread_mutex_unlock(&c->txn_lock);
	t->counted = !txn_held || txn_held_on == c;
	if (t->counted) {
		txn_held_on = c;
		txn_held++;
	}
	*tp = t;
	return 0;
}

void smr_txn_end(struct smr_txn *t)
{
	struct smr_cow *c;

	if (!t)
		return;
	c = t->c;
	if (t->counted)
		txn_held--;
	pthread_mutex_lock(&c->txn_lock);
	if (!--c->nr_handles)
		pthread_cond_broadcast(&c->txn_cond);
	pthread_mutex_unlock(&c->txn_lock);
	free(t);
}

/* ------------------------------------------------------------------------
 * Timer
 * ------------------------------------------------------------------------ */

/* Commits every opts.commit_secs (txn_lock), and at once when a nested
 * begin found dirty metadata past its bound (commit_asked). */
static void *timer_main(void *arg)
{
	struct smr_cow *c = arg;

	pthread_mutex_lock(&c->txn_lock);
	while (!c->timer_stop) {
		struct timespec ts;

		if (!c->commit_asked) {
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += c->opts.commit_secs ? c->opts.commit_secs :
							   5;
			pthread_cond_timedwait(&c->timer_cond, &c->txn_lock,
					       &ts);
		}
		c->commit_asked = false;
		if (c->timer_stop || cow_read_only(c))
			continue;
		pthread_mutex_unlock(&c->txn_lock);
		smr_cow_commit_now(c);
		pthread_mutex_lock(&c->txn_lock);
	}
	pthread_mutex_unlock(&c->txn_lock);
	return NULL;
}

void smr_cow_set_commit_secs(struct smr_cow *c, unsigned int secs)
{
	pthread_mutex_lock(&c->txn_lock);
	c->opts.commit_secs = secs;
	pthread_cond_broadcast(&c->timer_cond);
	pthread_mutex_unlock(&c->txn_lock);
}

int smr_cow_start_timer(struct smr_cow *c)
{
	int rc;

	if (c->opts.read_only)
		return 0;
	rc = pthread_create(&c->timer, NULL, timer_main, c);
	if (rc)
		return -rc;
	c->timer_running = true;
	return 0;
}

static void stop_timer(struct smr_cow *c)
{
	if (!c->timer_running)
		return;
	pthread_mutex_lock(&c->txn_lock);
	c->timer_stop = true;
	pthread_cond_broadcast(&c->timer_cond);
	pthread_mutex_unlock(&c->txn_lock);
	pthread_join(c->timer, NULL);
	c->timer_running = false;
}

/* ------------------------------------------------------------------------
 * Setup and teardown
 * ------------------------------------------------------------------------ */

int smr_cow_setup(struct smr_cow *c)
{
	pthread_rwlockattr_t ra;
	pthread_condattr_t ca;

	pthread_rwlock_init(&c->lock, NULL);
	pthread_rwlockattr_init(&ra);
	pthread_rwlockattr_setkind_np(&ra,
		PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&c->reuse_lock, &ra);
	pthread_rwlockattr_destroy(&ra);
	pthread_mutex_init(&c->cache_lock, NULL);
	pthread_mutex_init(&c->txn_lock, NULL);
	pthread_mutex_init(&c->commit_lock, NULL);
	pthread_mutex_init(&c->clean_lock, NULL);
	pthread_mutex_init(&c->log_lock, NULL);
	pthread_cond_init(&c->txn_cond, NULL);
	pthread_cond_init(&c->gc_cond, NULL);
	pthread_condattr_init(&ca);
	pthread_cond_init(&c->timer_cond, &ca);
	pthread_condattr_destroy(&ca);
	c->cache_bytes = c->opts.cache_bytes ? c->opts.cache_bytes : 64 * SMR_MIB;
	if (c->cache_bytes < 16 * (size_t)c->ns)
		c->cache_bytes = 16 * (size_t)c->ns;
	return smr_cache_init(c);
}

void smr_cow_teardown(struct smr_cow *c)
{
	smr_cow_gc_stop(c);
	stop_timer(c);
	smr_cache_fini(c);
	free(c->free_cur.x);
	free(c->free_prev.x);
	free(c->cut.x);
	smr_rmap_pend_fini(c);
	smr_log_fini(c);
	pthread_rwlock_destroy(&c->lock);
	pthread_rwlock_destroy(&c->reuse_lock);
	pthread_mutex_destroy(&c->cache_lock);
	pthread_mutex_destroy(&c->txn_lock);
	pthread_mutex_destroy(&c->commit_lock);
	pthread_mutex_destroy(&c->clean_lock);
	pthread_cond_destroy(&c->txn_cond);
	pthread_cond_destroy(&c->gc_cond);
	pthread_cond_destroy(&c->timer_cond);
}

void smr_cow_get_stats(struct smr_cow *c, struct smr_cow_stats *st)
{
	st->node_reads = __atomic_load_n(&c->stats.node_reads, __ATOMIC_RELAXED);
	st->nodes_written =
		__atomic_load_n(&c->stats.nodes_written, __ATOMIC_RELAXED);
	st->commits = __atomic_load_n(&c->stats.commits, __ATOMIC_RELAXED);
	st->evictions = __atomic_load_n(&c->stats.evictions, __ATOMIC_RELAXED);
	st->log_records =
		__atomic_load_n(&c->stats.log_records, __ATOMIC_RELAXED);
	pthread_mutex_lock(&c->cache_lock);
	st->node_bytes = c->stats.node_bytes;
	pthread_mutex_unlock(&c->cache_lock);
}
