/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * alloc.c - the allocator registry, module selection, the handle, and the
 * wrappers that take the handle's lock around every op.
 */
#include "alloc/alloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *smr_stream_str(enum smr_stream s)
{
	static const char *const names[SMR_STREAM_NR] = {
		"meta", "hot", "cold", "reloc",
	};

	return (unsigned int)s < SMR_STREAM_NR ? names[s] : "unknown";
}

const struct smr_alloc_ops *const smr_alloc_modules[] = {
	&smr_zoned_ops,
	&smr_rot_ops,
	&smr_flash_ops,
	NULL,
};

const struct smr_alloc_ops *smr_alloc_find(const char *name)
{
	for (int i = 0; smr_alloc_modules[i]; i++)
		if (!strcmp(smr_alloc_modules[i]->name, name))
			return smr_alloc_modules[i];
	return NULL;
}

int smr_alloc_select(const struct smr_dev_info *info, const char *name,
		     const struct smr_alloc_ops **ops, char *why, size_t whylen)
{
	const struct smr_alloc_ops *best = NULL;
	char reason[128], best_reason[128] = "";
	int score, best_score = 0;

	if (name) {
		const struct smr_alloc_ops *o = smr_alloc_find(name);

		if (!o) {
			snprintf(why, whylen, "no allocator module named \"%s\"",
				 name);
			return -ENOENT;
		}
		reason[0] = '\0';
		if (!o->probe(info, reason, sizeof(reason))) {
			snprintf(why, whylen, "allocator %s cannot serve this "
				 "device: %s", o->name, reason);
			return -EINVAL;
		}
		snprintf(why, whylen, "allocator %s: %s", o->name,
			 reason);
		*ops = o;
		return 0;
	}
	for (int i = 0; smr_alloc_modules[i]; i++) {
		reason[0] = '\0';
		score = smr_alloc_modules[i]->probe(info, reason,
						    sizeof(reason));
		if (score > best_score) {
			best_score = score;
			best = smr_alloc_modules[i];
			memcpy(best_reason, reason, sizeof(reason));
		}
	}
	if (!best) {
		snprintf(why, whylen, "no allocator module can serve this "
			 "device");
		return -EINVAL;
	}
	snprintf(why, whylen, "allocator %s chosen: %s", best->name,
		 best_reason);
	*ops = best;
	return 0;
}

static int alloc_open(const struct smr_alloc_ops *ops, struct smr_dev *dev,
		      uint64_t data_start, const uint8_t fs_uuid[16],
		      const struct smr_alloc_ref *ref, bool rebuild,
		      const struct smr_alloc_stats *keep,
		      const struct smr_extent *unw, size_t nunw,
		      struct smr_alloc **ap)
{
	static const struct smr_alloc_ref zero_ref;
	const struct smr_dev_info *info = smr_dev_info(dev);
	struct smr_alloc *a;
	int rc;

	if (data_start % info->block_size || data_start >= info->capacity)
		return -EINVAL;
	if (info->zoned && data_start &&
	    smr_dev_zone_start(dev, smr_dev_zone_no(dev, data_start)) !=
		    data_start)
		return -EINVAL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->ops = ops;
	a->dev = dev;
	a->info = info;
	a->data_start = data_start;
	a->rebuild = rebuild;
	a->keep_stats = keep;
	a->unwritten = unw;
	a->nr_unwritten = nunw;
	if (keep)
		a->user_bytes = keep->user_bytes;
	memcpy(a->fs_uuid, fs_uuid, sizeof(a->fs_uuid));
	pthread_mutex_init(&a->lock, NULL);
	for (int i = 0; i < SMR_STREAM_NR; i++) {
		pthread_mutex_init(&a->stream_lock[i], NULL);
		a->stream_share[i] = (uint8_t)i;
	}
	if (ref && !memcmp(ref, &zero_ref, sizeof(*ref)))
		ref = NULL;
	pthread_mutex_lock(&a->lock);
	rc = ops->init(a, ref);
	a->keep_stats = NULL;
	a->unwritten = NULL;
	a->nr_unwritten = 0;
	pthread_mutex_unlock(&a->lock);
	if (rc) {
		for (int i = 0; i < SMR_STREAM_NR; i++)
			pthread_mutex_destroy(&a->stream_lock[i]);
		pthread_mutex_destroy(&a->lock);
		free(a);
		return rc;
	}
	*ap = a;
	return 0;
}

int smr_alloc_open(const struct smr_alloc_ops *ops, struct smr_dev *dev,
		   uint64_t data_start, const uint8_t fs_uuid[16],
		   const struct smr_alloc_ref *ref, struct smr_alloc **ap)
{
	return alloc_open(ops, dev, data_start, fs_uuid, ref, false, NULL,
			  NULL, 0, ap);
}

int smr_alloc_open_cut(const struct smr_alloc_ops *ops, struct smr_dev *dev,
		       uint64_t data_start, const uint8_t fs_uuid[16],
		       const struct smr_alloc_ref *ref,
		       const struct smr_extent *unw, size_t n,
		       struct smr_alloc **ap)
{
	return alloc_open(ops, dev, data_start, fs_uuid, ref, false, NULL,
			  unw, n, ap);
}

int smr_alloc_open_rebuild(const struct smr_alloc_ops *ops,
			   struct smr_dev *dev, uint64_t data_start,
			   const uint8_t fs_uuid[16],
			   const struct smr_alloc_stats *keep,
			   struct smr_alloc **ap)
{
	return alloc_open(ops, dev, data_start, fs_uuid, NULL, true, keep,
			  NULL, 0, ap);
}

void smr_alloc_set_in_use(struct smr_alloc *a,
			  bool (*fn)(void *arg, uint64_t start, uint64_t end),
			  void *arg)
{
	pthread_mutex_lock(&a->lock);
	a->in_use = fn;
	a->in_use_arg = arg;
	pthread_mutex_unlock(&a->lock);
}

void smr_alloc_close(struct smr_alloc *a)
{
	if (!a)
		return;
	pthread_mutex_lock(&a->lock);
	a->ops->fini(a);
	pthread_mutex_unlock(&a->lock);
	free(a->unsettled.x);
	free(a->unsettled_at_commit.x);
	free(a->unsettled_reloc.x);
	for (int i = 0; i < SMR_STREAM_NR; i++)
		pthread_mutex_destroy(&a->stream_lock[i]);
	pthread_mutex_destroy(&a->lock);
	free(a);
}

pthread_mutex_t *smr_alloc_stream_lock(struct smr_alloc *a,
				       enum smr_stream stream)
{
	if ((unsigned int)stream >= SMR_STREAM_NR)
		stream = SMR_STREAM_META;
	return &a->stream_lock[a->stream_share[stream]];
}

/* ------------------------------------------------------------------------
 * Unsettled data (alloc.h has the rules; a->lock held throughout)
 * ------------------------------------------------------------------------ */

/* Room for @more extents and one spare: removing a range from the middle
 * of an extent then needs no allocation. */
static int set_reserve(struct smr_extent_set *s, size_t more)
{
	struct smr_extent *x;
	size_t nc;

	if (s->n + more < s->cap)
		return 0;
	nc = SMR_MAX(2 * s->cap, s->n + more + 16);
	x = realloc(s->x, nc * sizeof(*x));
	if (!x)
		return -ENOMEM;
	s->x = x;
	s->cap = nc;
	return 0;
}

/* Take [@off, @off + @len) out of @s. The extents of a set never overlap,
 * so at most one of them is split. */
static int set_remove(struct smr_extent_set *s, uint64_t off, uint64_t len)
{
	uint64_t end = off + len;

	for (size_t i = 0; i < s->n;) {
		struct smr_extent *e = &s->x[i];
		uint64_t eend = e->off + e->len;

		if (eend <= off || e->off >= end) {
			i++;
		} else if (e->off < off && eend > end) {
			if (s->n == s->cap)
				return -ENOMEM; /* no spare: cannot happen */
			s->x[s->n].off = end;
			s->x[s->n++].len = eend - end;
			e->len = off - e->off;
			/* The spare for the next split; failing that, the
			 * next such split fails instead. */
			(void)set_reserve(s, 0);
			i++;
		} else if (e->off < off) {
			e->len = off - e->off;
			i++;
		} else if (eend > end) {
			e->len = eend - end;
			e->off = end;
			i++;
		} else {
			*e = s->x[--s->n];
		}
	}
	return 0;
}

static int unsettled_remove(struct smr_alloc *a, uint64_t off, uint64_t len)
{
	int rc = set_remove(&a->unsettled, off, len);
	int rc2 = set_remove(&a->unsettled_reloc, off, len);

	return rc ? rc : rc2;
}

int smr_alloc_settle(struct smr_alloc *a, uint64_t off, uint64_t len)
{
	int rc;

	pthread_mutex_lock(&a->lock);
	rc = unsettled_remove(a, off, len);
	pthread_mutex_unlock(&a->lock);
	return rc;
}

size_t smr_alloc_unsettled_at_commit(struct smr_alloc *a, struct smr_extent *x,
				     size_t max)
{
	size_t n;

	pthread_mutex_lock(&a->lock);
	n = a->unsettled_at_commit.n;
	if (n && max) /* no array before the first commit */
		memcpy(x, a->unsettled_at_commit.x,
		       SMR_MIN(n, max) * sizeof(*x));
	pthread_mutex_unlock(&a->lock);
	return n;
}

/* ------------------------------------------------------------------------
 * Wrappers
 * ------------------------------------------------------------------------ */

int smr_alloc_extent(struct smr_alloc *a, uint64_t len,
		     const struct smr_alloc_hint *hint, enum smr_stream stream,
		     struct smr_extent *ext, unsigned int max_ext)
{
	int rc;

	pthread_mutex_lock(&a->lock);
	rc = a->ops->alloc(a, len, hint, stream, ext, max_ext);
	pthread_mutex_unlock(&a->lock);
	return rc;
}

int smr_alloc_free(struct smr_alloc *a, uint64_t off, uint64_t len)
{
	int rc;

	pthread_mutex_lock(&a->lock);
	rc = a->ops->free(a, off, len);
	if (!rc)
		rc = unsettled_remove(a, off, len);
	pthread_mutex_unlock(&a->lock);
	return rc;
}

int smr_alloc_claim(struct smr_alloc *a, uint64_t off, uint64_t len)
{
	int rc;

	if (!a->ops->claim)
		return -EOPNOTSUPP;
	pthread_mutex_lock(&a->lock);
	rc = a->ops->claim(a, off, len);
	pthread_mutex_unlock(&a->lock);
	return rc;
}

void smr_alloc_set_meta_unit(struct smr_alloc *a, uint32_t unit)
{
	if (!a->ops->meta_unit)
		return;
	pthread_mutex_lock(&a->lock);
	a->ops->meta_unit(a, unit);
	pthread_mutex_unlock(&a->lock);
}

void smr_alloc_write_failed(struct smr_alloc *a, uint64_t off, uint64_t len)
{
	if (!a->ops->write_failed)
		return;
	pthread_mutex_lock(&a->lock);
	a->ops->write_failed(a, off, len);
	(void)unsettled_remove(a, off, len); /* not an error to lose */
	pthread_mutex_unlock(&a->lock);
}

int smr_alloc_commit(struct smr_alloc *a, uint64_t gen,
		     struct smr_alloc_ref *ref)
{
	int rc;

	pthread_mutex_lock(&a->lock);
	/* The unsettled set as of this state: room first, so that a state
	 * once written always has its set. */
	rc = set_reserve(&a->unsettled_at_commit, a->unsettled.n);
	if (!rc)
		rc = a->ops->commit(a, gen, ref);
	if (!rc) {
		if (a->unsettled.n)
			memcpy(a->unsettled_at_commit.x, a->unsettled.x,
			       a->unsettled.n * sizeof(*a->unsettled.x));
		a->unsettled_at_commit.n = a->unsettled.n;
	}
	pthread_mutex_unlock(&a->lock);
	return rc;
}

int smr_alloc_committed(struct smr_alloc *a)
{
	int rc = 0;

	if (!a->ops->committed)
		return 0;
	pthread_mutex_lock(&a->lock);
	rc = a->ops->committed(a);
	pthread_mutex_unlock(&a->lock);
	return rc;
}

void smr_alloc_space(struct smr_alloc *a, struct smr_space *sp)
{
	pthread_mutex_lock(&a->lock);
	a->ops->space(a, sp);
	pthread_mutex_unlock(&a->lock);
}

void smr_alloc_usage(struct smr_alloc *a, uint64_t freeing, uint64_t *used,
		     uint64_t *size)
{
	struct smr_space sp;

	pthread_mutex_lock(&a->lock);
	if (a->ops->usage) {
		a->ops->usage(a, used, size);
	} else {
		a->ops->space(a, &sp);
		*used = sp.used;
		*size = sp.capacity - SMR_MIN(sp.overhead, sp.capacity);
	}
	/* A handful of the cleaner's copies (smr_alloc_space_freeing). */
	for (size_t i = 0; i < a->unsettled_reloc.n; i++)
		freeing += a->unsettled_reloc.x[i].len;
	pthread_mutex_unlock(&a->lock);
	*used -= SMR_MIN(*used, freeing);
}

static int ext_off_cmp(const void *pa, const void *pb)
{
	const struct smr_extent *x = pa, *y = pb;

	return x->off < y->off ? -1 : x->off > y->off;
}

void smr_alloc_space_freeing(struct smr_alloc *a, struct smr_extent *x,
			     size_t n, struct smr_space *sp)
{
	struct smr_extent *all = x;
	uint64_t bytes = 0;

	pthread_mutex_lock(&a->lock);
	/* A copy the cleaner has not settled yet: either it replaces its
	 * original, which is then freed, or it is dropped; one of the two
	 * is dead space. Without memory for the list, the copies count as
	 * used a moment longer. */
	if (a->unsettled_reloc.n) {
		all = malloc((n + a->unsettled_reloc.n) * sizeof(*all));
		if (all) {
			if (n)
				memcpy(all, x, n * sizeof(*all));
			memcpy(all + n, a->unsettled_reloc.x,
			       a->unsettled_reloc.n * sizeof(*all));
			n += a->unsettled_reloc.n;
		} else {
			all = x;
		}
	}
	if (n > 1)
		qsort(all, n, sizeof(*all), ext_off_cmp);
	if (a->ops->space_freeing) {
		a->ops->space_freeing(a, all, n, sp);
	} else {
		a->ops->space(a, sp);
		for (size_t i = 0; i < n; i++)
			bytes += all[i].len;
		bytes = SMR_MIN(bytes, sp->used);
		sp->used -= bytes;
		sp->reclaimable += bytes;
	}
	pthread_mutex_unlock(&a->lock);
	if (all != x)
		free(all);
}

int smr_alloc_gc_pick(struct smr_alloc *a, enum smr_gc_policy policy,
		      uint32_t *zno)
{
	int rc;

	if (!a->ops->gc_pick)
		return -EOPNOTSUPP;
	pthread_mutex_lock(&a->lock);
	rc = a->ops->gc_pick(a, policy, zno);
	pthread_mutex_unlock(&a->lock);
	return rc;
}

int smr_alloc_gc_pick_n(struct smr_alloc *a, enum smr_gc_policy policy,
			struct smr_gc_victim *v, unsigned int max)
{
	int rc;

	if (!a->ops->gc_pick_n)
		return -EOPNOTSUPP;
	pthread_mutex_lock(&a->lock);
	rc = a->ops->gc_pick_n(a, policy, v, max);
	pthread_mutex_unlock(&a->lock);
	return rc;
}

int64_t smr_alloc_zone_live(struct smr_alloc *a, uint32_t zno)
{
	int64_t rc;

	if (!a->ops->zone_live)
		return -EOPNOTSUPP;
	pthread_mutex_lock(&a->lock);
	rc = a->ops->zone_live(a, zno);
	pthread_mutex_unlock(&a->lock);
	return rc;
}

void smr_alloc_stats(struct smr_alloc *a, struct smr_alloc_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!a->ops->stats)
		return;
	pthread_mutex_lock(&a->lock);
	a->ops->stats(a, st);
	pthread_mutex_unlock(&a->lock);
	st->user_bytes = __atomic_load_n(&a->user_bytes, __ATOMIC_RELAXED);
}

void smr_alloc_count_user(struct smr_alloc *a, uint64_t bytes)
{
	__atomic_add_fetch(&a->user_bytes, bytes, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------------------
 * Allocate and write
 * ------------------------------------------------------------------------ */

static int write_stream(struct smr_alloc *a, const void *buf, uint64_t len,
			const struct smr_alloc_hint *hint,
			enum smr_stream stream, struct smr_extent *ext,
			unsigned int max_ext)
{
	pthread_mutex_t *sl = smr_alloc_stream_lock(a, stream);
	bool reloc = stream == SMR_STREAM_RELOC || (hint && hint->reloc);
	const uint8_t *p = buf;
	uint64_t got = 0, done = 0;
	unsigned int n = 0, i;
	int rc = 0;

	if (!max_ext || !len)
		return -EINVAL;
	pthread_mutex_lock(sl);
	while (got < len && n < max_ext) {
		/* Allocated and unsettled in one step: a commit sees both or
		 * neither. */
		pthread_mutex_lock(&a->lock);
		rc = set_reserve(&a->unsettled, max_ext - n);
		if (!rc && reloc)
			rc = set_reserve(&a->unsettled_reloc, max_ext - n);
		if (!rc)
			rc = a->ops->alloc(a, len - got, hint, stream, ext + n,
					   max_ext - n);
		for (int k = 0; k < rc; k++) {
			a->unsettled.x[a->unsettled.n++] = ext[n + k];
			if (reloc)
				a->unsettled_reloc.x[a->unsettled_reloc.n++] =
					ext[n + k];
		}
		pthread_mutex_unlock(&a->lock);
		if (rc < 0)
			break;
		for (int k = 0; k < rc; k++)
			got += ext[n + k].len;
		/* Join a piece that continues the previous one in its zone. */
		if (n && ext[n - 1].off + ext[n - 1].len == ext[n].off &&
		    smr_dev_zone_no(a->dev, ext[n - 1].off) ==
			    smr_dev_zone_no(a->dev, ext[n].off)) {
			ext[n - 1].len += ext[n].len;
			memmove(&ext[n], &ext[n + 1],
				sizeof(*ext) * (unsigned int)(rc - 1));
			rc--;
		}
		n += (unsigned int)rc;
		rc = 0;
	}
	if (!n)
		goto out_unlock;
	/* Out of space part way: write and keep what was had (the caller
	 * sees a total below @len). */
	rc = 0;
	if (got == len && hint && hint->held)
		hint->held(hint->held_arg);

	/* Write in allocation order: on a zoned device each extent sits at
	 * its zone's write pointer only once the ones before it are written. */
	for (i = 0; i < n; i++) {
		int wrc = smr_dev_write(a->dev, p + done, ext[i].len,
					ext[i].off);

		if (wrc) {
			smr_err("alloc: writing %" PRIu64 " bytes at %" PRIu64
				" (%s stream) failed: %s", ext[i].len,
				ext[i].off, smr_stream_str(stream),
				strerror(-wrc));
			for (unsigned int k = i; k < n; k++)
				smr_alloc_write_failed(a, ext[k].off,
						       ext[k].len);
			rc = wrc;
			break;
		}
		done += ext[i].len;
	}
	if (rc) {
		for (unsigned int k = 0; k < i; k++)
			smr_alloc_free(a, ext[k].off, ext[k].len);
		goto out_unlock;
	}
	rc = (int)n;
out_unlock:
	pthread_mutex_unlock(sl);
	return rc;
}

int smr_alloc_write(struct smr_alloc *a, const void *buf, uint64_t len,
		    const struct smr_alloc_hint *hint, enum smr_stream stream,
		    struct smr_extent *ext, unsigned int max_ext)
{
	enum smr_stream other = stream == SMR_STREAM_HOT ? SMR_STREAM_COLD :
				SMR_STREAM_HOT;
	struct smr_alloc_hint rest;
	uint64_t got = 0;
	int n, k;

	n = write_stream(a, buf, len, hint, stream, ext, max_ext);
	/* A data stream that cannot open a zone (the rest is the reserve)
	 * goes on in the other data stream's open zone: the tails of both
	 * count as free, and a full device would otherwise refuse writes
	 * with most of a zone left in the stream that is not written. */
	if ((stream != SMR_STREAM_HOT && stream != SMR_STREAM_COLD) ||
	    a->stream_share[stream] == a->stream_share[other] ||
	    (n < 0 && n != -ENOSPC))
		return n;
	n = SMR_MAX(n, 0);
	for (int i = 0; i < n; i++)
		got += ext[i].len;
	if (got == len || (unsigned int)n == max_ext)
		return n;
	/* Not all of it was held at once: nothing to tell. */
	if (hint && hint->held) {
		rest = *hint;
		rest.held = NULL;
		hint = &rest;
	}
	k = write_stream(a, (const uint8_t *)buf + got, len - got, hint, other,
			 ext + n, max_ext - (unsigned int)n);
	if (k < 0)
		return n ? n : k;
	return n + k;
}
