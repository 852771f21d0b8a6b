/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dev_io.c - batched I/O through io_uring.
 *
 * smr_dev_submit() splits each request into pieces that lie within one zone
 * (a backend's io_target maps a piece to one file descriptor and offset),
 * and runs them on a ring: reads and conventional writes go out at once, as
 * many as the ring holds; the writes of one sequential zone form a queue in
 * array order of which only the head is in flight, the next one issued when
 * it completes, because io_uring does not keep the order of several writes
 * to one file or zone. Writes of one zone that follow each other on the
 * device are merged into one vectored write (up to SMR_MERGE_MAX requests,
 * SMR_MERGE_BYTES bytes), so that a zone's queue costs one round trip per
 * run rather than per request. Each sequential write passes the handle's
 * write gate (zone rules, implicit open, busy flag) just before it is
 * issued, and its completion updates the zone cache. Short transfers are
 * resubmitted for the rest; reads of a sequential zone stop at the write
 * pointer and the rest is zero-filled.
 *
 * A piece that would be alone on the ring (nothing else of the batch in
 * flight or ready) is done at once with pwritev/pread on the same
 * descriptor instead. A batch of one zone's writes, such as a commit's
 * nodes, is all such pieces: the ring could overlap them with nothing, and
 * for a buffered write that may block (a zone file on tmpfs) it would only
 * hand the write to a worker thread and wait for it.
 *
 * Rings are kept in a small pool per handle: a call takes one (creating it
 * the first time) and gives it back, so that threads never share a ring.
 *
 * A request must not be able to hang the filesystem. The kernel runs
 * buffered I/O that would block (a zone file on tmpfs or on a disk) in
 * io_uring's worker threads, and a worker that cannot be created leaves
 * the request queued for ever, with nothing in flight. So the wait for
 * completions has a deadline: after SMR_RING_STALL_MS without one, every
 * request still on the ring is cancelled, and those the kernel had not
 * started (completed with -ECANCELED) are done synchronously instead.
 * Requests already running are not cancelled and complete as usual, so a
 * slow device costs nothing but the cancel requests.
 */
#include <errno.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "dev/dev_int.h"

#define SMR_RING_DEPTH 128
#define SMR_MERGE_MAX 64
#define SMR_MERGE_BYTES (8 * SMR_MIB)
#define SMR_IO_CHUNK ((size_t)SMR_GIB) /* largest single transfer */
#define SMR_RING_STALL_MS 1000

struct smr_dev_uring {
	struct io_uring ring;
	struct smr_dev_uring *next;
};

/* One piece of a request, within one zone. */
struct piece {
	struct smr_io *io;
	char *buf;
	size_t len;         /* bytes still to transfer */
	uint64_t off;       /* device offset of the next byte */
	size_t total;       /* bytes of the piece (write gate) */
	uint32_t zno;       /* sequential zone of a write, else UINT32_MAX */
	bool begun;         /* write gate passed */
	struct smr_zc_undo undo;
	struct piece *next; /* ready list, or the zone's queue */
	/* A merged write: the head holds the whole range (len, off, total
	 * cover every member) and the iovec room; the other members hang
	 * off ->memb and are on no list. */
	size_t own;         /* the head's own bytes */
	unsigned int nmemb; /* 1 unless merged */
	struct piece *memb; /* next member */
	struct iovec *iov;  /* nmemb entries, for a merged head */
	int fd;             /* while on the ring: the io_target descriptor */
	bool on_ring;       /* issued, its completion not yet seen */
	bool cancelled;     /* a cancel was sent for it (stall) */
};

/* The writes of one sequential zone in this batch. */
struct zqueue {
	uint32_t zno;
	bool failed;  /* a write failed: the rest are cancelled */
	bool issuing; /* one write of the zone is ready or in flight */
	struct piece *head, *tail; /* the writes waiting for it */
	struct piece *last;        /* last head added (merging) */
	struct piece *last_memb;   /* its last member */
};

struct batch {
	struct smr_dev *dev;
	struct io_uring *ring;
	struct piece *pieces;
	unsigned int nr_pieces;
	struct zqueue *zq;
	unsigned int nr_zq;
	struct iovec *iov; /* room for merged writes */
	struct piece *ready, *ready_tail;
	unsigned int inflight;
	unsigned int left; /* pieces not finished */
	unsigned int cancels; /* cancel requests whose completion is due */
};

/* ------------------------------------------------------------------------
 * The ring pool
 * ------------------------------------------------------------------------ */

static struct smr_dev_uring *ring_get(struct smr_dev *dev)
{
	struct smr_dev_uring *r;

	pthread_mutex_lock(&dev->ring_lock);
	r = dev->ring;
	if (r)
		dev->ring = r->next;
	pthread_mutex_unlock(&dev->ring_lock);
	if (r)
		return r;
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	if (io_uring_queue_init(SMR_RING_DEPTH, &r->ring, 0) < 0) {
		free(r);
		return NULL;
	}
	return r;
}

static void ring_put(struct smr_dev *dev, struct smr_dev_uring *r)
{
	pthread_mutex_lock(&dev->ring_lock);
	r->next = dev->ring;
	dev->ring = r;
	pthread_mutex_unlock(&dev->ring_lock);
}

void smr_dev_uring_free(struct smr_dev *dev)
{
	struct smr_dev_uring *r = dev->ring;

	while (r) {
		struct smr_dev_uring *next = r->next;

		io_uring_queue_exit(&r->ring);
		free(r);
		r = next;
	}
	dev->ring = NULL;
}

/* ------------------------------------------------------------------------
 * Pieces
 * ------------------------------------------------------------------------ */

static void ready_push(struct batch *b, struct piece *p)
{
	p->next = NULL;
	if (b->ready_tail)
		b->ready_tail->next = p;
	else
		b->ready = p;
	b->ready_tail = p;
}

static struct piece *ready_pop(struct batch *b)
{
	struct piece *p = b->ready;

	if (p) {
		b->ready = p->next;
		if (!b->ready)
			b->ready_tail = NULL;
	}
	return p;
}

static struct zqueue *zqueue_of(struct batch *b, uint32_t zno)
{
	for (unsigned int i = 0; i < b->nr_zq; i++)
		if (b->zq[i].zno == zno)
			return &b->zq[i];
	b->zq[b->nr_zq] = (struct zqueue){ .zno = zno };
	return &b->zq[b->nr_zq++];
}

static void set_result(struct smr_io *io, int rc)
{
	if (rc && !io->result)
		io->result = rc;
}

/* Fail every write still queued behind the head of @q. */
static void zqueue_cancel(struct batch *b, struct zqueue *q)
{
	q->failed = true;
	while (q->head) {
		struct piece *p = q->head;

		q->head = p->next;
		for (struct piece *m = p; m; m = m->memb) {
			set_result(m->io, -ECANCELED);
			b->left--;
		}
	}
	q->tail = NULL;
}

/* A piece is over: for a sequential write, settle the zone and let the
 * next write of the zone go. */
static void piece_done(struct batch *b, struct piece *p, int rc)
{
	set_result(p->io, rc);
	b->left--;
	/* Members of a merged write: a failure is charged to the first. */
	for (struct piece *m = p->memb; m; m = m->memb) {
		set_result(m->io, rc ? -ECANCELED : 0);
		b->left--;
	}
	if (p->zno == UINT32_MAX)
		return;
	if (p->begun)
		smr_dev_write_end(b->dev, p->zno, p->total, rc == 0, &p->undo);
	{
		struct zqueue *q = zqueue_of(b, p->zno);

		if (rc) {
			q->issuing = false;
			zqueue_cancel(b, q);
		} else if (q->head) {
			struct piece *n = q->head;

			q->head = n->next;
			if (!q->head)
				q->tail = NULL;
			ready_push(b, n);
		} else {
			q->issuing = false;
		}
	}
}

/* Do a piece synchronously through the backend (no io_target for it). */
static void piece_sync(struct batch *b, struct piece *p)
{
	struct smr_dev *dev = b->dev;
	size_t skip = p->total - p->len;
	uint64_t off = p->off - skip;
	int rc = 0;

	if (p->io->op == SMR_IO_READ) {
		piece_done(b, p, dev->ops->read(dev, p->buf, p->len, p->off));
		return;
	}
	if (p->nmemb == 1) {
		piece_done(b, p, dev->ops->write(dev, p->buf, p->len, p->off));
		return;
	}
	for (struct piece *m = p; m && !rc; m = m->memb) {
		size_t len = m == p ? p->own : m->len;

		if (skip >= len) {
			skip -= len;
		} else {
			rc = dev->ops->write(dev, m->buf + skip, len - skip,
					     off + skip);
			skip = 0;
		}
		off += len;
	}
	piece_done(b, p, rc);
}

/* Fill the iovec of merged write @p with what is left of it. */
static unsigned int build_iov(struct piece *p)
{
	size_t skip = p->total - p->len;
	unsigned int n = 0;

	for (struct piece *m = p; m; m = m->memb) {
		size_t len = m == p ? p->own : m->len;

		if (skip >= len) {
			skip -= len;
			continue;
		}
		p->iov[n].iov_base = m->buf + skip;
		p->iov[n].iov_len = len - skip;
		skip = 0;
		n++;
	}
	return n;
}

/* The gate refused merged write @p: split it up again. The members go back
 * to the front of the zone's queue, to be issued one by one after @p. */
static void unmerge(struct batch *b, struct piece *p)
{
	struct zqueue *q = zqueue_of(b, p->zno);
	struct piece *first = p->memb, *last = NULL;

	for (struct piece *m = first; m; m = m->memb) {
		m->next = m->memb;
		last = m;
	}
	for (struct piece *m = first, *n; m; m = n) {
		n = m->memb;
		m->memb = NULL;
	}
	last->next = q->head;
	q->head = first;
	if (!q->tail)
		q->tail = last;
	p->memb = NULL;
	p->nmemb = 1;
	p->total = p->len = p->own;
}

/* The descriptor of @p's last issue is no longer in use. */
static void piece_release(struct batch *b, struct piece *p)
{
	if (b->dev->ops->io_release)
		b->dev->ops->io_release(b->dev, p->off, p->fd);
}

static void piece_result(struct batch *b, struct piece *p, int res,
			 bool cancelled);

/* Transfer (the rest of) @p at @foff of @fd now, as the ring would: the
 * bytes done or a negative errno, a completion's result. */
static int piece_io_now(struct piece *p, int fd, uint64_t foff)
{
	size_t len = (size_t)SMR_MIN(p->len, SMR_IO_CHUNK);
	ssize_t n;

	if (p->io->op == SMR_IO_READ)
		n = pread(fd, p->buf, len, (off_t)foff);
	else if (p->nmemb > 1)
		n = pwritev(fd, p->iov, (int)build_iov(p), (off_t)foff);
	else
		n = pwrite(fd, p->buf, len, (off_t)foff);
	return n < 0 ? -errno : (int)n;
}

/*
 * Put piece @p on the ring, or, when it is @lone (nothing else of the batch
 * is in flight or ready to go, so the ring could overlap it with nothing:
 * a batch of one zone's writes, whose writes go one at a time), do it at
 * once in this thread: the ring would hand a buffered write that can block
 * (a zone file on tmpfs) to a worker thread and wait for it. Returns 0
 * when queued or finished, or SMR_ZC_BUSY_RETRY when it must wait for a
 * zone held by another thread.
 */
static int piece_issue(struct batch *b, struct piece *p, bool wait, bool lone)
{
	struct smr_dev *dev = b->dev;
	struct io_uring_sqe *sqe;
	uint64_t foff;
	int fd, rc;

	if (p->io->op == SMR_IO_READ && p->len == p->total) {
		size_t rd;

		smr_dev_wb_wait_read(dev, p->off, p->len);
		rd = smr_dev_readable(dev, p->len, p->off);

		if (rd < p->len)
			memset(p->buf + rd, 0, p->len - rd);
		p->len = rd;
		p->total = rd;
		if (!rd) {
			piece_done(b, p, 0);
			return 0;
		}
	}
	while (p->zno != UINT32_MAX && !p->begun) {
		rc = smr_dev_write_begin(dev, p->zno, p->off, p->total, wait,
					 &p->undo);
		if (rc == SMR_ZC_BUSY_RETRY)
			return rc;
		if (rc && p->nmemb > 1) {
			/* Find out which member is refused. */
			unmerge(b, p);
			continue;
		}
		if (rc) {
			piece_done(b, p, rc);
			return 0;
		}
		p->begun = true;
	}
	rc = dev->ops->io_target(dev, p->off, p->len, &fd, &foff);
	if (rc) {
		piece_sync(b, p);
		return 0;
	}
	if (lone) {
		rc = piece_io_now(p, fd, foff);
		p->fd = fd;
		piece_release(b, p);
		piece_result(b, p, rc, false);
		return 0;
	}
	p->fd = fd;
	sqe = io_uring_get_sqe(b->ring);
	if (!sqe) {
		/* Cannot happen: at most SMR_RING_DEPTH in flight. */
		piece_release(b, p);
		piece_sync(b, p);
		return 0;
	}
	/* A transfer longer than SMR_IO_CHUNK goes in parts, as if short. */
	if (p->io->op == SMR_IO_READ)
		io_uring_prep_read(sqe, fd, p->buf,
				   (unsigned int)SMR_MIN(p->len, SMR_IO_CHUNK),
				   foff);
	else if (p->nmemb > 1)
		io_uring_prep_writev(sqe, fd, p->iov, build_iov(p), foff);
	else
		io_uring_prep_write(sqe, fd, p->buf,
				    (unsigned int)SMR_MIN(p->len, SMR_IO_CHUNK),
				    foff);
	io_uring_sqe_set_data(sqe, p);
	p->on_ring = true;
	b->inflight++;
	return 0;
}

static void piece_complete(struct batch *b, struct piece *p, int res)
{
	bool cancelled = p->cancelled;

	b->inflight--;
	p->on_ring = false;
	p->cancelled = false;
	piece_release(b, p);
	piece_result(b, p, res, cancelled);
}

/* What the transfer of @p gave (@cancelled: a stall's cancel was sent for
 * it): done, failed, or ready again for the rest. */
static void piece_result(struct batch *b, struct piece *p, int res,
			 bool cancelled)
{
	if (res == -ECANCELED && cancelled) {
		/* Stalled and never started: do it here instead. */
		piece_sync(b, p);
		return;
	}
	if (res == -EINTR || res == -EAGAIN) {
		ready_push(b, p);
		return;
	}
	if (res < 0) {
		/* A zoned device refuses a write past its open or active zone
		 * limit with these; dev.h promises -EIO for a refused write. */
		if (res == -ETOOMANYREFS || res == -EOVERFLOW)
			res = -EIO;
		piece_done(b, p, res);
		return;
	}
	if (res == 0) {
		if (p->io->op == SMR_IO_READ) {
			/* End of file: zeros. */
			memset(p->buf, 0, p->len);
			piece_done(b, p, 0);
		} else {
			piece_done(b, p, -EIO);
		}
		return;
	}
	if ((size_t)res < p->len) {
		/* Short: the rest goes out again (a merged write rebuilds its
		 * iovec from what is left). */
		if (p->nmemb == 1)
			p->buf += res;
		p->off += (uint64_t)res;
		p->len -= (size_t)res;
		ready_push(b, p);
		return;
	}
	piece_done(b, p, 0);
}

/* ------------------------------------------------------------------------
 * Splitting the batch
 * ------------------------------------------------------------------------ */

/* Largest number of pieces @io can make. */
static unsigned int pieces_of(const struct smr_dev *dev,
			      const struct smr_io *io)
{
	uint32_t first, last;

	if (!dev->zc || !io->len)
		return 1;
	first = smr_zc_zone_no(dev->zc, io->off);
	last = smr_zc_zone_no(dev->zc, io->off + io->len - 1);
	return last - first + 1;
}

static void add_piece(struct batch *b, struct smr_io *io, char *buf,
		      size_t len, uint64_t off, uint32_t zno)
{
	struct piece *p = &b->pieces[b->nr_pieces++];
	struct zqueue *q;
	struct piece *h;

	*p = (struct piece){ .io = io, .buf = buf, .len = len, .off = off,
			     .total = len, .zno = zno, .own = len,
			     .nmemb = 1 };
	b->left++;
	if (zno == UINT32_MAX) {
		ready_push(b, p);
		return;
	}
	q = zqueue_of(b, zno);
	h = q->last;
	if (q->failed) {
		set_result(io, -ECANCELED);
		b->left--;
	} else if (h && h->off + h->total == off &&
		   h->nmemb < SMR_MERGE_MAX &&
		   h->total + len <= SMR_MERGE_BYTES) {
		/* Follows the last write of the zone: one vectored write. */
		if (q->last_memb)
			q->last_memb->memb = p;
		else
			h->memb = p;
		q->last_memb = p;
		h->nmemb++;
		h->total += len;
		h->len += len;
	} else if (!q->issuing) {
		/* First write of the zone: it may go now. */
		q->issuing = true;
		q->last = p;
		q->last_memb = NULL;
		ready_push(b, p);
	} else {
		p->next = NULL;
		if (q->tail)
			q->tail->next = p;
		else
			q->head = p;
		q->tail = p;
		q->last = p;
		q->last_memb = NULL;
	}
}

static int split(struct batch *b, struct smr_io *ios, unsigned int n)
{
	struct smr_dev *dev = b->dev;

	for (unsigned int i = 0; i < n; i++) {
		struct smr_io *io = &ios[i];
		uint64_t off = io->off;
		size_t len = io->len;
		char *buf = io->buf;
		uint32_t zno;
		bool seq;
		int rc;

		io->result = 0;
		rc = smr_dev_io_check(dev, io->op, io->len, io->off);
		if (!rc && io->op == SMR_IO_WRITE)
			rc = smr_dev_write_zone(dev, len, off, &zno, &seq);
		if (rc) {
			io->result = rc;
			/* Later writes to this zone are cancelled. */
			if (io->op == SMR_IO_WRITE && dev->zc) {
				zno = smr_zc_zone_no(dev->zc, io->off);
				if (zno != UINT32_MAX)
					zqueue_of(b, zno)->failed = true;
			}
			continue;
		}
		if (!len)
			continue;
		if (io->op == SMR_IO_WRITE && seq) {
			add_piece(b, io, buf, len, off, zno);
			continue;
		}
		while (len) {
			size_t piece = (size_t)SMR_MIN(
				(uint64_t)len, smr_dev_zone_end_of(dev, off) - off);

			add_piece(b, io, buf, piece, off, UINT32_MAX);
			buf += piece;
			off += piece;
			len -= piece;
		}
	}
	return 0;
}

/* ------------------------------------------------------------------------
 * The loop
 * ------------------------------------------------------------------------ */

/* A completion of ours: a piece's, or a cancel request's (no data; it may
 * also come in a later batch on the ring, and is ignored there). */
static void cqe_complete(struct batch *b, struct io_uring_cqe *cqe)
{
	struct piece *p = io_uring_cqe_get_data(cqe);

	if (p)
		piece_complete(b, p, cqe->res);
	else if (b->cancels)
		b->cancels--;
}

/* Nothing completed for SMR_RING_STALL_MS: cancel what is on the ring. */
static void ring_cancel_stalled(struct batch *b)
{
	static bool told;
	unsigned int n = 0;

	for (unsigned int i = 0; i < b->nr_pieces; i++) {
		struct piece *p = &b->pieces[i];
		struct io_uring_sqe *sqe;

		if (!p->on_ring)
			continue;
		sqe = io_uring_get_sqe(b->ring);
		if (!sqe)
			break;
		io_uring_prep_cancel(sqe, p, 0);
		io_uring_sqe_set_data(sqe, NULL);
		p->cancelled = true;
		b->cancels++;
		n++;
	}
	if (n && !__atomic_test_and_set(&told, __ATOMIC_RELAXED))
		smr_warn("%s: no I/O completion for %d ms: cancelling %u requests, to be done synchronously if not yet started (logged once)",
			 b->dev->path, SMR_RING_STALL_MS, n);
}

/* Submit what is queued, wait for completions (at most SMR_RING_STALL_MS,
 * then cancel the stalled requests) and take all that are there. */
static int ring_wait(struct batch *b)
{
	struct __kernel_timespec ts = {
		.tv_sec = SMR_RING_STALL_MS / 1000,
		.tv_nsec = (SMR_RING_STALL_MS % 1000) * 1000000L,
	};
	struct io_uring_cqe *cqe;
	unsigned int head, seen;
	int rc;

	do
		rc = io_uring_submit(b->ring);
	while (rc == -EINTR || rc == -EAGAIN);
	if (rc < 0)
		return rc;
	do
		rc = io_uring_wait_cqe_timeout(b->ring, &cqe, &ts);
	while (rc == -EINTR);
	if (rc == -ETIME) {
		ring_cancel_stalled(b);
		return 0;
	}
	if (rc < 0)
		return rc;
	do {
		seen = 0;
		io_uring_for_each_cqe(b->ring, head, cqe) {
			cqe_complete(b, cqe);
			seen++;
		}
		io_uring_cq_advance(b->ring, seen);
	} while (io_uring_peek_cqe(b->ring, &cqe) == 0);
	return 0;
}

static int run(struct batch *b)
{
	int rc;

	while (b->left) {
		struct piece *p, *def = NULL;

		/* Issue what is ready, up to the ring's depth. */
		while (b->inflight < SMR_RING_DEPTH && (p = ready_pop(b))) {
			bool lone = !b->inflight && !b->ready && !def;

			if (piece_issue(b, p, false, lone) ==
			    SMR_ZC_BUSY_RETRY) {
				p->next = def;
				def = p;
			}
		}
		/* Waiting ones go back to the front of the ready list. */
		while (def) {
			p = def;
			def = p->next;
			p->next = b->ready;
			b->ready = p;
			if (!b->ready_tail)
				b->ready_tail = p;
		}
		if (b->inflight) {
			rc = ring_wait(b);
			if (rc < 0)
				return rc;
			continue;
		}
		/* Nothing of ours in flight: whatever is busy belongs to
		 * another thread. Wait for it on the first waiting piece. */
		p = ready_pop(b);
		if (p)
			piece_issue(b, p, true, !b->ready);
	}
	return 0;
}

int smr_dev_submit_uring(struct smr_dev *dev, struct smr_io *ios,
			 unsigned int n)
{
	struct smr_dev_uring *r;
	struct batch b = { .dev = dev };
	unsigned int max = 0;
	int rc, first = 0;

	if (!dev->ops->io_target)
		return -EOPNOTSUPP;
	for (unsigned int i = 0; i < n; i++) {
		if (smr_dev_io_check(dev, ios[i].op, ios[i].len,
				     ios[i].off) == 0)
			max += pieces_of(dev, &ios[i]);
		else
			max++;
	}
	r = ring_get(dev);
	if (!r)
		return -EOPNOTSUPP;
	b.ring = &r->ring;
	b.pieces = calloc(max ? max : 1, sizeof(*b.pieces));
	b.zq = calloc(n ? n : 1, sizeof(*b.zq));
	b.iov = calloc(max ? max : 1, sizeof(*b.iov));
	if (!b.pieces || !b.zq || !b.iov) {
		rc = -ENOMEM;
		goto out;
	}
	rc = split(&b, ios, n);
	if (!rc) {
		unsigned int cur = 0;

		for (unsigned int i = 0; i < b.nr_pieces; i++) {
			if (b.pieces[i].nmemb > 1) {
				b.pieces[i].iov = &b.iov[cur];
				cur += b.pieces[i].nmemb;
			}
		}
		rc = run(&b);
	}
	if (rc) {
		/* The ring failed under us: finish in-flight pieces before the
		 * buffers go back to the caller. */
		struct io_uring_cqe *cqe;

		while (b.inflight && io_uring_wait_cqe(b.ring, &cqe) == 0) {
			struct piece *p = io_uring_cqe_get_data(cqe);

			if (p)
				piece_complete(&b, p, -EIO);
			io_uring_cqe_seen(b.ring, cqe);
		}
		io_uring_queue_exit(&r->ring);
		free(r);
		r = NULL;
	}
out:
	if (r)
		ring_put(dev, r);
	free(b.pieces);
	free(b.zq);
	free(b.iov);
	if (rc)
		return rc;
	for (unsigned int i = 0; i < n; i++)
		if (ios[i].result && !first)
			first = ios[i].result;
	return first;
}
