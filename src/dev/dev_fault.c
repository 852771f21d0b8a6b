/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dev_fault.c - the fault device: a stacking backend that records what
 * reaches the device below it, injects failures and power cuts, and replays
 * any prefix of its log onto another device. The contract is in fault.h.
 *
 * The log holds what the lower device executed, in order, and nothing else:
 * a write failed by a rule, or lost to a power cut, is not in it. Replaying
 * the whole log onto a copy of the starting state therefore reproduces the
 * lower device, and every prefix is a state the lower device went through.
 *
 * After a power cut the lost writes are kept in an overlay list so that reads
 * through the fault device still return what was acknowledged; the zone cache
 * of the fault device (kept by dev.c) advances with those writes, while the
 * lower device and its own cache do not move.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "dev/dev_priv.h"
#include "dev/fault.h"

/* One record of the log, as kept in memory. */
struct fault_rec {
	uint64_t off;
	uint64_t len;
	void *data;  /* WRITE: copy of the data (aligned), else NULL */
	uint32_t zno;
	uint8_t op;  /* enum smr_fault_op */
	bool seq;
	bool torn;
};

/* What a read after a power cut sees on top of the lower device. */
struct fault_ovl {
	uint64_t off;
	uint64_t len;
	void *data; /* NULL: zeros (a zone reset) */
};

struct smr_fault {
	pthread_mutex_t lock;  /* protects everything below */
	int refs;              /* the control handle and the open device */
	struct smr_dev *lower;
	struct smr_dev *dev;   /* NULL once closed */
	struct smr_dev_info linfo; /* of lower, for replays after it closed */
	uint32_t bs;           /* block size of lower */

	bool recording;
	struct fault_rec *recs;
	uint64_t nr_recs;
	uint64_t cap_recs;
	uint64_t last_flush;   /* index + 1 of the last FLUSH record, 0: none */
	size_t log_bytes;

	/* One rule per kind of operation; what == SMR_FAULT_NONE: disarmed.
	 * The counts are operations seen since the rule was armed. */
	struct smr_fault_rule wrule, rrule, zrule, frule;
	uint64_t wcount, rcount, zcount, fcount;

	bool cut;              /* power cut: nothing reaches lower any more */
	struct fault_ovl *ovl; /* writes and resets lost to the cut, in order */
	size_t nr_ovl;
	size_t cap_ovl;

	struct smr_fault_stats st;
};

/* ------------------------------------------------------------------------
 * The log and the overlay
 * ------------------------------------------------------------------------ */

static void *fault_copy(const void *buf, size_t len)
{
	void *p;

	if (posix_memalign(&p, SMR_DEV_BUF_ALIGN, len ? len : 1))
		return NULL;
	memcpy(p, buf, len);
	return p;
}

static void fault_zone_of(struct smr_fault *f, uint64_t off, uint32_t *zno,
			  bool *seq)
{
	*zno = smr_dev_zone_no(f->lower, off);
	*seq = *zno != UINT32_MAX &&
	       smr_dev_zone_type(f->lower, *zno) != SMR_ZONE_TYPE_CNV;
}

/* Append a record; @buf is copied for a write. Returns 0 or -ENOMEM. */
static int fault_log(struct smr_fault *f, enum smr_fault_op op, uint64_t off,
		     uint64_t len, uint32_t zno, const void *buf, bool torn)
{
	struct fault_rec *r;

	if (!f->recording)
		return 0;
	if (f->nr_recs == f->cap_recs) {
		uint64_t cap = f->cap_recs ? f->cap_recs * 2 : 256;
		struct fault_rec *n = realloc(f->recs, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		f->recs = n;
		f->cap_recs = cap;
	}
	r = &f->recs[f->nr_recs];
	memset(r, 0, sizeof(*r));
	r->op = op;
	r->off = off;
	r->len = len;
	r->zno = zno;
	r->torn = torn;
	if (zno != UINT32_MAX)
		r->seq = smr_dev_zone_type(f->lower, zno) != SMR_ZONE_TYPE_CNV;
	if (op == SMR_FOP_WRITE) {
		r->data = fault_copy(buf, len);
		if (!r->data)
			return -ENOMEM;
		f->log_bytes += len;
	}
	f->log_bytes += sizeof(*r);
	f->nr_recs++;
	if (op == SMR_FOP_FLUSH)
		f->last_flush = f->nr_recs;
	return 0;
}

static void fault_log_free(struct smr_fault *f)
{
	for (uint64_t i = 0; i < f->nr_recs; i++)
		free(f->recs[i].data);
	free(f->recs);
	f->recs = NULL;
	f->nr_recs = 0;
	f->cap_recs = 0;
	f->last_flush = 0;
	f->log_bytes = 0;
}

/* Remember data lost to the power cut (@buf NULL: zeros). */
static int fault_ovl_add(struct smr_fault *f, const void *buf, uint64_t len,
			 uint64_t off)
{
	struct fault_ovl *o;

	if (f->nr_ovl == f->cap_ovl) {
		size_t cap = f->cap_ovl ? f->cap_ovl * 2 : 64;
		struct fault_ovl *n = realloc(f->ovl, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		f->ovl = n;
		f->cap_ovl = cap;
	}
	o = &f->ovl[f->nr_ovl];
	o->off = off;
	o->len = len;
	o->data = NULL;
	if (buf) {
		o->data = fault_copy(buf, len);
		if (!o->data)
			return -ENOMEM;
	}
	f->nr_ovl++;
	return 0;
}

static void fault_ovl_apply(struct smr_fault *f, void *buf, size_t len,
			    uint64_t off)
{
	for (size_t i = 0; i < f->nr_ovl; i++) {
		const struct fault_ovl *o = &f->ovl[i];
		uint64_t s = SMR_MAX(off, o->off);
		uint64_t e = SMR_MIN(off + len, o->off + o->len);

		if (s >= e)
			continue;
		if (o->data)
			memcpy((char *)buf + (s - off),
			       (const char *)o->data + (s - o->off), e - s);
		else
			memset((char *)buf + (s - off), 0, e - s);
	}
}

static void fault_put(struct smr_fault *f)
{
	bool last;

	pthread_mutex_lock(&f->lock);
	last = --f->refs == 0;
	pthread_mutex_unlock(&f->lock);
	if (!last)
		return;
	fault_log_free(f);
	for (size_t i = 0; i < f->nr_ovl; i++)
		free(f->ovl[i].data);
	free(f->ovl);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

/* Does the rule @r, which has seen *@count operations, fire for this one? */
static bool fault_fires(const struct smr_fault_rule *r, uint64_t *count)
{
	if (r->what == SMR_FAULT_NONE)
		return false;
	return (*count)++ >= r->after;
}

static int fault_error(const struct smr_fault_rule *r)
{
	return r->error ? r->error : -EIO;
}

/* ------------------------------------------------------------------------
 * Backend operations
 * ------------------------------------------------------------------------ */

static int fault_read(struct smr_dev *dev, void *buf, size_t len, uint64_t off)
{
	struct smr_fault *f = smr_dev_priv(dev);
	int rc;

	pthread_mutex_lock(&f->lock);
	f->st.reads++;
	if (fault_fires(&f->rrule, &f->rcount)) {
		f->st.failed++;
		rc = fault_error(&f->rrule);
		goto out;
	}
	rc = smr_dev_read(f->lower, buf, len, off);
	if (!rc && f->nr_ovl)
		fault_ovl_apply(f, buf, len, off);
out:
	pthread_mutex_unlock(&f->lock);
	return rc;
}

/* The power is cut during this write: keep @keep bytes of it on lower. */
static int fault_cut_write(struct smr_fault *f, const void *buf, size_t len,
			   uint64_t off, uint64_t keep)
{
	uint32_t zno;
	bool seq;
	int rc;

	if (keep) {
		fault_zone_of(f, off, &zno, &seq);
		rc = smr_dev_write(f->lower, buf, keep, off);
		if (rc)
			return rc;
		f->st.torn++;
		rc = fault_log(f, SMR_FOP_WRITE, off, keep, zno, buf, true);
		if (rc)
			return rc;
	}
	f->cut = true;
	f->st.dropped++;
	return fault_ovl_add(f, buf, len, off);
}

static int fault_write(struct smr_dev *dev, const void *buf, size_t len,
		       uint64_t off)
{
	struct smr_fault *f = smr_dev_priv(dev);
	const struct smr_fault_rule *r = &f->wrule;
	uint32_t zno;
	bool seq;
	int rc;

	pthread_mutex_lock(&f->lock);
	f->st.writes++;
	if (f->cut) {
		f->st.dropped++;
		rc = fault_ovl_add(f, buf, len, off);
		goto out;
	}
	if (fault_fires(r, &f->wcount)) {
		switch (r->what) {
		case SMR_FAULT_FAIL_WRITES:
			f->st.failed++;
			rc = fault_error(r);
			goto out;
		case SMR_FAULT_DROP_WRITES:
			rc = fault_cut_write(f, buf, len, off, 0);
			goto out;
		case SMR_FAULT_TEAR_WRITE:
			rc = fault_cut_write(f, buf, len, off,
				SMR_MIN(SMR_ROUND_DOWN(r->tear_bytes, f->bs),
					len));
			goto out;
		default:
			break;
		}
	}
	fault_zone_of(f, off, &zno, &seq);
	rc = smr_dev_write(f->lower, buf, len, off);
	if (!rc)
		rc = fault_log(f, SMR_FOP_WRITE, off, len, zno, buf, false);
out:
	pthread_mutex_unlock(&f->lock);
	return rc;
}

static int fault_flush(struct smr_dev *dev)
{
	struct smr_fault *f = smr_dev_priv(dev);
	int rc = 0;

	pthread_mutex_lock(&f->lock);
	f->st.flushes++;
	if (!f->cut && fault_fires(&f->frule, &f->fcount)) {
		f->st.failed++;
		rc = fault_error(&f->frule);
	} else if (!f->cut) {
		rc = smr_dev_flush(f->lower);
		if (!rc)
			rc = fault_log(f, SMR_FOP_FLUSH, 0, 0, UINT32_MAX,
				       NULL, false);
	}
	pthread_mutex_unlock(&f->lock);
	return rc;
}

static int fault_discard(struct smr_dev *dev, uint64_t off, uint64_t len)
{
	struct smr_fault *f = smr_dev_priv(dev);
	uint32_t zno;
	bool seq;
	int rc = 0;

	pthread_mutex_lock(&f->lock);
	if (f->cut) {
		/* Discarded data is undefined: reading the old data is fine. */
		f->st.dropped++;
		goto out;
	}
	fault_zone_of(f, off, &zno, &seq);
	rc = smr_dev_discard(f->lower, off, len);
	if (!rc)
		rc = fault_log(f, SMR_FOP_DISCARD, off, len, zno, NULL, false);
out:
	pthread_mutex_unlock(&f->lock);
	return rc;
}

static int fault_report_zones(struct smr_dev *dev, uint32_t first, uint32_t nr,
			      struct smr_zone *zones)
{
	struct smr_fault *f = smr_dev_priv(dev);

	for (uint32_t i = 0; i < nr; i++) {
		int rc = smr_dev_zone(f->lower, first + i, &zones[i]);

		if (rc)
			return rc;
	}
	return 0;
}

static int fault_zone_op(struct smr_dev *dev, uint32_t zno,
			 enum smr_fault_op op)
{
	struct smr_fault *f = smr_dev_priv(dev);
	uint64_t start = smr_dev_zone_start(f->lower, zno);
	uint64_t zlen = smr_dev_zone_len(f->lower, zno);
	int rc;

	pthread_mutex_lock(&f->lock);
	if (op == SMR_FOP_ZONE_RESET)
		f->st.resets++;
	if (f->cut) {
		f->st.dropped++;
		rc = 0;
		/* Reads of the zone must now see zeros, whatever lower holds. */
		if (op == SMR_FOP_ZONE_RESET)
			rc = fault_ovl_add(f, NULL, zlen, start);
		goto out;
	}
	if (op == SMR_FOP_ZONE_RESET && fault_fires(&f->zrule, &f->zcount)) {
		f->st.failed++;
		rc = fault_error(&f->zrule);
		goto out;
	}
	switch (op) {
	case SMR_FOP_ZONE_RESET:
		rc = smr_dev_zone_reset(f->lower, zno);
		break;
	case SMR_FOP_ZONE_FINISH:
		rc = smr_dev_zone_finish(f->lower, zno);
		break;
	case SMR_FOP_ZONE_OPEN:
		rc = smr_dev_zone_open(f->lower, zno);
		break;
	case SMR_FOP_ZONE_CLOSE:
		rc = smr_dev_zone_close(f->lower, zno);
		break;
	default:
		rc = -EINVAL;
		break;
	}
	if (!rc)
		rc = fault_log(f, op, start, zlen, zno, NULL, false);
out:
	pthread_mutex_unlock(&f->lock);
	return rc;
}

static int fault_zone_reset(struct smr_dev *dev, uint32_t zno)
{
	return fault_zone_op(dev, zno, SMR_FOP_ZONE_RESET);
}

static int fault_zone_finish(struct smr_dev *dev, uint32_t zno)
{
	return fault_zone_op(dev, zno, SMR_FOP_ZONE_FINISH);
}

static int fault_zone_open(struct smr_dev *dev, uint32_t zno)
{
	return fault_zone_op(dev, zno, SMR_FOP_ZONE_OPEN);
}

static int fault_zone_close(struct smr_dev *dev, uint32_t zno)
{
	return fault_zone_op(dev, zno, SMR_FOP_ZONE_CLOSE);
}

static void fault_close(struct smr_dev *dev)
{
	struct smr_fault *f = smr_dev_priv(dev);

	pthread_mutex_lock(&f->lock);
	f->dev = NULL;
	pthread_mutex_unlock(&f->lock);
	fault_put(f);
}

static const struct smr_dev_backend_ops smr_dev_fault_ops = {
	.name = "fault",
	.open = NULL, /* stacking: smr_fault_open() */
	.close = fault_close,
	.read = fault_read,
	.write = fault_write,
	.flush = fault_flush,
	.report_zones = fault_report_zones,
	.zone_reset = fault_zone_reset,
	.zone_finish = fault_zone_finish,
	.zone_open = fault_zone_open,
	.zone_close = fault_zone_close,
	.discard = fault_discard,
	.io_target = NULL, /* every request must come through us */
};

/* ------------------------------------------------------------------------
 * Control
 * ------------------------------------------------------------------------ */

static int fault_open(struct smr_dev *lower, bool scratch,
		      struct smr_fault **fp, struct smr_dev **devp)
{
	struct smr_dev_info info;
	struct smr_fault *f;
	int rc;

	if (!lower)
		return -EINVAL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	rc = -pthread_mutex_init(&f->lock, NULL);
	if (rc)
		goto out_free;
	f->lower = lower;
	f->linfo = *smr_dev_info(lower);
	f->bs = f->linfo.block_size;
	f->recording = !scratch;
	f->cut = scratch;
	f->refs = 2;
	info = *smr_dev_info(lower);
	if (scratch)
		info.read_only = false; /* writes stop here */
	rc = smr_dev_create(&smr_dev_fault_ops, f, &info, smr_dev_path(lower),
			    &f->dev);
	if (rc)
		goto out_lock;
	*fp = f;
	*devp = f->dev;
	return 0;

out_lock:
	pthread_mutex_destroy(&f->lock);
out_free:
	free(f);
	return rc;
}

int smr_fault_open(struct smr_dev *lower, struct smr_fault **fp,
		   struct smr_dev **devp)
{
	return fault_open(lower, false, fp, devp);
}

int smr_fault_open_scratch(struct smr_dev *lower, struct smr_fault **fp,
			   struct smr_dev **devp)
{
	return fault_open(lower, true, fp, devp);
}

void smr_fault_free(struct smr_fault *f)
{
	if (f)
		fault_put(f);
}

int smr_fault_arm(struct smr_fault *f, const struct smr_fault_rule *r)
{
	struct smr_fault_rule *slot;
	uint64_t *count;

	if (r->error > 0)
		return -EINVAL;
	switch (r->what) {
	case SMR_FAULT_FAIL_WRITES:
	case SMR_FAULT_DROP_WRITES:
	case SMR_FAULT_TEAR_WRITE:
		slot = &f->wrule;
		count = &f->wcount;
		break;
	case SMR_FAULT_FAIL_READS:
		slot = &f->rrule;
		count = &f->rcount;
		break;
	case SMR_FAULT_FAIL_RESETS:
		slot = &f->zrule;
		count = &f->zcount;
		break;
	case SMR_FAULT_FAIL_FLUSHES:
		slot = &f->frule;
		count = &f->fcount;
		break;
	default:
		return -EINVAL;
	}
	pthread_mutex_lock(&f->lock);
	*slot = *r;
	*count = 0;
	pthread_mutex_unlock(&f->lock);
	return 0;
}

void smr_fault_disarm(struct smr_fault *f)
{
	pthread_mutex_lock(&f->lock);
	f->wrule.what = SMR_FAULT_NONE;
	f->rrule.what = SMR_FAULT_NONE;
	f->zrule.what = SMR_FAULT_NONE;
	f->frule.what = SMR_FAULT_NONE;
	pthread_mutex_unlock(&f->lock);
}

bool smr_fault_is_cut(struct smr_fault *f)
{
	bool cut;

	pthread_mutex_lock(&f->lock);
	cut = f->cut;
	pthread_mutex_unlock(&f->lock);
	return cut;
}

void smr_fault_stats(struct smr_fault *f, struct smr_fault_stats *st)
{
	pthread_mutex_lock(&f->lock);
	*st = f->st;
	pthread_mutex_unlock(&f->lock);
}

const char *smr_fault_op_str(enum smr_fault_op op)
{
	switch (op) {
	case SMR_FOP_WRITE: return "write";
	case SMR_FOP_FLUSH: return "flush";
	case SMR_FOP_DISCARD: return "discard";
	case SMR_FOP_ZONE_RESET: return "reset";
	case SMR_FOP_ZONE_FINISH: return "finish";
	case SMR_FOP_ZONE_OPEN: return "open";
	case SMR_FOP_ZONE_CLOSE: return "close";
	default: return "unknown";
	}
}

void smr_fault_set_recording(struct smr_fault *f, bool on)
{
	pthread_mutex_lock(&f->lock);
	f->recording = on;
	pthread_mutex_unlock(&f->lock);
}

void smr_fault_log_reset(struct smr_fault *f)
{
	pthread_mutex_lock(&f->lock);
	fault_log_free(f);
	pthread_mutex_unlock(&f->lock);
}

uint64_t smr_fault_nr_records(struct smr_fault *f)
{
	uint64_t n;

	pthread_mutex_lock(&f->lock);
	n = f->nr_recs;
	pthread_mutex_unlock(&f->lock);
	return n;
}

int smr_fault_record(struct smr_fault *f, uint64_t i, struct smr_fault_rec *r)
{
	const struct fault_rec *fr;
	int rc = 0;

	pthread_mutex_lock(&f->lock);
	if (i >= f->nr_recs) {
		rc = -ERANGE;
		goto out;
	}
	fr = &f->recs[i];
	r->op = fr->op;
	r->off = fr->off;
	r->len = fr->len;
	r->zno = fr->zno;
	r->seq = fr->seq;
	r->torn = fr->torn;
	r->flushed = i + 1 < f->last_flush;
	r->data = fr->data;
out:
	pthread_mutex_unlock(&f->lock);
	return rc;
}

int smr_fault_cut_prefix(struct smr_fault *f, uint64_t n, uint64_t *nr)
{
	uint64_t writes = 0, i;
	int rc = 0;

	pthread_mutex_lock(&f->lock);
	for (i = 0; i < f->nr_recs; i++) {
		if (f->recs[i].op != SMR_FOP_WRITE)
			continue;
		if (writes == n)
			break;
		writes++;
	}
	if (writes < n)
		rc = -ERANGE;
	else
		*nr = i;
	pthread_mutex_unlock(&f->lock);
	return rc;
}

size_t smr_fault_log_bytes(struct smr_fault *f)
{
	size_t n;

	pthread_mutex_lock(&f->lock);
	n = f->log_bytes;
	pthread_mutex_unlock(&f->lock);
	return n;
}

/* ------------------------------------------------------------------------
 * Replay
 * ------------------------------------------------------------------------ */

static bool replay_same_geometry(const struct smr_dev_info *a,
				 const struct smr_dev_info *b)
{
	return a->block_size == b->block_size && a->capacity == b->capacity &&
	       a->zoned == b->zoned && a->nr_zones == b->nr_zones &&
	       a->nr_cnv_zones == b->nr_cnv_zones;
}

/* xorshift64*: the replay's own generator, so that a seed is reproducible. */
static uint64_t replay_rand(uint64_t *s)
{
	uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ULL;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dULL;
}

/*
 * Contiguous writes to one zone are replayed as one write of up to
 * REPLAY_RUN_MAX bytes: the log of a COW workload is mostly appends, and the
 * cost of a replay is the target's system calls.
 */
#define REPLAY_RUN_MAX (1024 * 1024)

struct replay_run {
	bool exact;   /* SMR_REPLAY_EXACT: no merging */
	uint8_t *buf; /* REPLAY_RUN_MAX bytes, aligned */
	uint64_t off;
	size_t len;   /* 0: nothing pending */
	uint32_t zno;
};

static int replay_run_flush(struct smr_dev *t, struct replay_run *run)
{
	int rc = 0;

	if (run->len)
		rc = smr_dev_write(t, run->buf, run->len, run->off);
	run->len = 0;
	return rc;
}

static int replay_write(struct smr_dev *t, struct replay_run *run,
			const void *data, size_t len, uint64_t off,
			uint32_t zno)
{
	int rc;

	if (run->len && off == run->off + run->len && zno == run->zno &&
	    run->len + len <= REPLAY_RUN_MAX) {
		memcpy(run->buf + run->len, data, len);
		run->len += len;
		return 0;
	}
	rc = replay_run_flush(t, run);
	if (rc)
		return rc;
	if (run->exact || len > REPLAY_RUN_MAX / 2)
		return smr_dev_write(t, data, len, off);
	memcpy(run->buf, data, len);
	run->off = off;
	run->len = len;
	run->zno = zno;
	return 0;
}

/*
 * SMR_REPLAY_LOSE_BLOCKS: what a volatile write cache keeps of the unflushed
 * writes. A sequential zone keeps all its unflushed blocks, or a shorter
 * prefix of them of a length drawn uniformly (budget[zno] blocks still to
 * keep). Which zones lose a part is read from the bits of the seed, bit j
 * for the j-th zone written after the last flush (bit set: a part lost),
 * so that consecutive seeds go through every combination: the loss that
 * matters most, an earlier zone's tail lost while a later zone is whole,
 * is seed 1. Any other block is kept with probability keep_8 / 8, drawn
 * once per replay from 1/8 to 7/8 so that seeds cover both "nearly all
 * lost" and "nearly all kept".
 */
struct replay_cache {
	uint64_t *budget; /* per zone; NULL without LOSE_BLOCKS */
	bool *part;       /* per zone: loses a part */
	unsigned int keep_8;
};

static int replay_cache_init(struct replay_cache *c,
			     const struct fault_rec *recs,
			     uint64_t from, uint64_t nr, uint64_t last_len,
			     uint32_t nr_zones, uint32_t bs, uint64_t seed,
			     uint64_t *rng)
{
	unsigned int j = 0;

	c->keep_8 = 1 + replay_rand(rng) % 7;
	c->budget = calloc(nr_zones ? nr_zones : 1, sizeof(*c->budget));
	c->part = calloc(nr_zones ? nr_zones : 1, sizeof(*c->part));
	if (!c->budget || !c->part)
		return -ENOMEM;
	for (uint64_t i = from; i < nr; i++) {
		const struct fault_rec *r = &recs[i];

		if (r->op != SMR_FOP_WRITE || !r->seq)
			continue;
		if (!c->budget[r->zno])
			c->part[r->zno] = (seed >> (j++ % 64)) & 1;
		c->budget[r->zno] += (i + 1 == nr ? last_len : r->len) / bs;
	}
	for (uint32_t z = 0; z < nr_zones; z++)
		if (c->part[z] && c->budget[z])
			c->budget[z] = replay_rand(rng) % c->budget[z];
	return 0;
}

/*
 * Replay the unflushed write @r (its first @len bytes) as the cache leaves
 * it: in runs of kept blocks. Sets *@lost when a block of it was lost.
 */
static int replay_cached_write(struct smr_dev *t, struct replay_run *run,
			       struct replay_cache *cache,
			       const struct fault_rec *r, uint64_t len,
			       uint32_t bs, uint64_t *rng, bool *lost)
{
	const uint8_t *data = r->data;
	uint64_t nb = len / bs, start = 0;
	int rc = 0;

	if (r->seq) {
		uint64_t keep = SMR_MIN(nb, cache->budget[r->zno]);

		cache->budget[r->zno] -= keep;
		*lost = keep < nb;
		return keep ? replay_write(t, run, data, keep * bs, r->off,
					   r->zno) : 0;
	}
	*lost = false;
	for (uint64_t b = 0; b <= nb && !rc; b++) {
		if (b < nb && replay_rand(rng) % 8 < cache->keep_8)
			continue;
		/* Block b is lost (or the end): write the run before it. */
		if (b > start)
			rc = replay_write(t, run, data + start * bs,
					  (b - start) * bs, r->off + start * bs,
					  r->zno);
		*lost |= b < nb;
		start = b + 1;
	}
	return rc;
}

/*
 * Apply one zone operation of the log to @t. @lax: writes were dropped
 * before it, so the target's zone may be in another condition than the
 * recorded device's was: open and close then only try (they change no data).
 */
static int replay_zone_op(struct smr_dev *t, const struct fault_rec *r,
			  bool lax)
{
	uint8_t cond = smr_dev_zone_cond(t, r->zno);
	int rc;

	switch (r->op) {
	case SMR_FOP_ZONE_RESET:
		return smr_dev_zone_reset(t, r->zno);
	case SMR_FOP_ZONE_FINISH:
		return smr_dev_zone_finish(t, r->zno);
	case SMR_FOP_ZONE_OPEN:
		if (cond == SMR_ZONE_COND_FULL ||
		    cond == SMR_ZONE_COND_EXP_OPEN)
			return 0;
		rc = smr_dev_zone_open(t, r->zno);
		return lax ? 0 : rc;
	case SMR_FOP_ZONE_CLOSE:
		if (cond == SMR_ZONE_COND_EMPTY ||
		    cond == SMR_ZONE_COND_CLOSED || cond == SMR_ZONE_COND_FULL)
			return 0;
		rc = smr_dev_zone_close(t, r->zno);
		return lax ? 0 : rc;
	default:
		return -EINVAL;
	}
}

int smr_fault_replay(struct smr_fault *f, uint64_t nr,
		     const struct smr_replay_opts *opts,
		     struct smr_dev *target)
{
	static const struct smr_replay_opts none;
	const struct smr_dev_info *ti = smr_dev_info(target);
	bool *dropping = NULL; /* per zone: a write of it was dropped */
	struct replay_cache cache = { .budget = NULL, .part = NULL };
	struct replay_run run = { .len = 0 };
	bool dropped_any = false, flushes = false;
	uint64_t unflushed = 0; /* first record after the prefix's last flush */
	uint64_t tear_len = 0;  /* bytes of record @nr - 1 replayed */
	uint64_t rng;
	int rc = 0;

	if (!opts)
		opts = &none;
	rng = opts->seed;
	pthread_mutex_lock(&f->lock);
	if (nr > f->nr_recs || target == f->dev ||
	    !replay_same_geometry(ti, &f->linfo)) {
		rc = -EINVAL;
		goto out;
	}
	if (opts->flags & SMR_REPLAY_TEAR_LAST) {
		if (nr == 0 || f->recs[nr - 1].op != SMR_FOP_WRITE ||
		    (opts->flags & SMR_REPLAY_DROP_UNFLUSHED)) {
			rc = -EINVAL;
			goto out;
		}
		tear_len = SMR_MIN(f->recs[nr - 1].len,
				   SMR_ROUND_DOWN(opts->tear_bytes,
						  ti->block_size));
	} else if (nr) {
		tear_len = f->recs[nr - 1].len;
	}
	if ((opts->flags & SMR_REPLAY_LOSE_BLOCKS) &&
	    (opts->flags & (SMR_REPLAY_DROP_UNFLUSHED |
			    SMR_REPLAY_DROP_RANDOM))) {
		rc = -EINVAL;
		goto out;
	}
	for (uint64_t i = 0; i < nr; i++)
		if (f->recs[i].op == SMR_FOP_FLUSH)
			unflushed = i + 1;
	if (opts->flags & SMR_REPLAY_LOSE_BLOCKS) {
		rc = replay_cache_init(&cache, f->recs, unflushed, nr,
				       tear_len, ti->nr_zones, ti->block_size,
				       opts->seed, &rng);
		if (rc)
			goto out;
	}
	if (ti->nr_zones) {
		dropping = calloc(ti->nr_zones, sizeof(*dropping));
		if (!dropping) {
			rc = -ENOMEM;
			goto out;
		}
	}
	run.exact = opts->flags & SMR_REPLAY_EXACT;
	if (!run.exact && posix_memalign((void **)&run.buf, SMR_DEV_BUF_ALIGN,
					 REPLAY_RUN_MAX)) {
		rc = -ENOMEM;
		goto out_dropping;
	}

	for (uint64_t i = 0; i < nr && !rc; i++) {
		const struct fault_rec *r = &f->recs[i];
		uint64_t len = r->len;
		bool keep = true;

		switch (r->op) {
		case SMR_FOP_WRITE:
			if (i + 1 == nr)
				len = tear_len;
			if (i >= unflushed && cache.budget) {
				bool lost;

				rc = replay_cached_write(target, &run, &cache,
							 r, len,
							 ti->block_size, &rng,
							 &lost);
				dropped_any |= lost;
				break;
			}
			if (i >= unflushed) {
				if (opts->flags & SMR_REPLAY_DROP_UNFLUSHED)
					keep = false;
				else if (r->seq && dropping[r->zno])
					keep = false;
				else if (opts->flags & SMR_REPLAY_DROP_RANDOM)
					keep = replay_rand(&rng) & 1;
			}
			if (!keep) {
				/* A sequential zone keeps a prefix of its
				 * writes: once one is lost, so are the rest. */
				if (r->seq)
					dropping[r->zno] = true;
				dropped_any = true;
				break;
			}
			if (len)
				rc = replay_write(target, &run, r->data, len,
						  r->off, r->zno);
			break;
		case SMR_FOP_FLUSH:
			/* The target's durability matters once, at the
			 * end: one flush there stands for all of them. */
			flushes = true;
			if (run.exact)
				rc = smr_dev_flush(target);
			break;
		case SMR_FOP_DISCARD:
			rc = replay_run_flush(target, &run);
			if (!rc)
				rc = smr_dev_discard(target, r->off, r->len);
			break;
		case SMR_FOP_ZONE_RESET:
			rc = replay_run_flush(target, &run);
			if (!rc)
				rc = replay_zone_op(target, r, dropped_any);
			if (dropping)
				dropping[r->zno] = false;
			break;
		default:
			rc = replay_run_flush(target, &run);
			if (!rc)
				rc = replay_zone_op(target, r, dropped_any);
			break;
		}
	}
	if (!rc)
		rc = replay_run_flush(target, &run);
	if (!rc && flushes && !run.exact)
		rc = smr_dev_flush(target);
	free(run.buf);
out_dropping:
	free(dropping);
out:
	free(cache.budget);
	free(cache.part);
	pthread_mutex_unlock(&f->lock);
	return rc;
}
