/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dev_wb.c - write-behind of sequential writes.
 *
 * A write into a sequential zone is copied into a buffer of the handle's own
 * (aligned, as direct I/O wants it), checked against the zone rules and
 * accounted in the zone cache (the write pointer advances, the zone opens or
 * becomes full) and queued; the caller goes on at once. The queue of a zone
 * has at most one device write in flight, because neither io_uring nor the
 * block layer keeps the order of several writes to one zone (Linux 6.1's
 * mq-deadline dispatches one write per zone at a time, but only among the
 * requests it already has); a zone's queued writes that follow each other
 * go out merged, as one vectored write of at most the device's max transfer.
 * A zone's small writes are gathered before they go out (dev.h,
 * SMR_DEV_WB_GATHER_*): every device write costs a system call and a
 * wake-up of this thread, and the small writes of one writer rarely found
 * another in flight to queue behind (bench/README.md). The caller has its
 * answer at once either way, and a write that was not flushed may be lost
 * in a crash whether it sits here or in the device's cache. Whoever waits
 * for a busy zone hurries the queue first (smr_dev_wb_hurry()); a wait
 * that does not still ends when the gathering time is over.
 * Zones go in parallel on one ring. The submitting thread is whoever queues
 * a write or completes one; one thread of the handle only reaps
 * completions (and, for a backend without io_target, does the writes).
 *
 * While a zone has queued writes it is busy in the zone cache, so a
 * synchronous write, a batch, a zone operation or an implicit close that
 * wants it waits, exactly as for a write in flight. Zones that the cache
 * counts as full while their last writes are still queued are open on the
 * medium: until they drain no other zone may be opened where the device has
 * open or active limits (smr_dev_wb_open_blocked()).
 *
 * A failed write is logged, its zone's later queued writes are dropped, the
 * zone is read back from the medium, and the error sticks to the handle:
 * every later flush and write returns it. The layers above turn a failed
 * flush into their read-only state.
 *
 * Everything here is protected by the handle's zlock, which is also what
 * waiters sleep on (zcond is broadcast when a write completes).
 */
#include <errno.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

#include "dev/dev_int.h"

#define WB_MERGE_MAX 64           /* queued writes per device write */
#define WB_RING_DEPTH 64
#define WB_DEFAULT_MAX_IO (8 * SMR_MIB)
#define WB_POOL_MAX 16            /* buffers kept for reuse */

/* One queued write. */
struct wb_req {
	struct wb_req *next;
	uint64_t off;
	size_t len;
	uint64_t ticket; /* order of queueing, for flush */
	uint64_t t_ns;   /* when it was queued (CLOCK_MONOTONIC) */
	char *buf;       /* the handle's copy */
	size_t cap;      /* its size */
};

/* A buffer kept for the next write. */
struct wb_buf {
	char *p;
	size_t cap;
};

/* A zone with queued writes (busy in the cache while it exists). */
struct wb_zone {
	struct wb_zone *next;
	uint32_t zno;
	bool full;     /* full in the cache: counted in wb->nr_full */
	bool on_ring;  /* its write is in flight */
	bool sync;     /* the ring cannot take it: the thread writes it */
	struct wb_req *head, *tail; /* oldest first; the first nio in flight */
	unsigned int nio;  /* queued writes in the device write */
	size_t io_len;     /* bytes of the device write */
	size_t io_done;    /* of which done (short transfers) */
	unsigned int iov_first;
	int fd;            /* io_target's descriptor while on the ring */
	struct iovec iov[WB_MERGE_MAX];
};

struct smr_dev_wb {
	struct smr_dev *dev;
	size_t max_bytes;      /* cap on queued bytes */
	size_t max_io;         /* bytes per device write */
	size_t gather;         /* a zone's queue goes out at this many bytes */
	uint64_t gather_ns;    /* or when its oldest write is this old */
	size_t queued;         /* bytes queued or in flight */
	uint64_t tickets;      /* last ticket handed out */
	uint64_t hurry;        /* writes up to this ticket are not gathered */
	int err;               /* first failed write: sticky */
	unsigned int nr_full;  /* zones full in the cache, writes queued */
	unsigned int inflight; /* device writes on the ring */
	struct wb_zone *zones; /* zones with queued writes, oldest first */
	struct wb_zone *spare; /* unused entries */
	/* Buffers of completed writes, for the next ones: fresh memory
	 * would be faulted in again for every write. At most half the cap. */
	struct wb_buf pool[WB_POOL_MAX];
	unsigned int npool;
	size_t pool_bytes;
	bool uring;            /* the ring is up */
	struct io_uring ring;
	pthread_t thread;
	pthread_cond_t wake;   /* the thread: work to do, or stop */
	bool stop;
	struct smr_dev_wb_stats st;
};

/* Does a write of @len bytes fit under the cap (dev->zlock held)? One that
 * would pass it waits, unless nothing is queued. */
static bool wb_has_room(const struct smr_dev_wb *wb, size_t len)
{
	return !wb->queued || wb->queued + len <= wb->max_bytes;
}

static struct wb_zone *zone_find(struct smr_dev_wb *wb, uint32_t zno)
{
	for (struct wb_zone *z = wb->zones; z; z = z->next)
		if (z->zno == zno)
			return z;
	return NULL;
}

/*
 * The first writes of zones must reach the device in the order the zone
 * cache opened them, or a device at its open limit closes another zone
 * than the cache does (both close the zone opened first). So a zone joins
 * the list at its end, zones that go out together go in list order, and
 * where the device has an open limit a zone that goes out takes the
 * gathering zones before it along (zone_issue()).
 */
static void zone_append(struct smr_dev_wb *wb, struct wb_zone *z)
{
	struct wb_zone **pp = &wb->zones;

	while (*pp)
		pp = &(*pp)->next;
	z->next = NULL;
	*pp = z;
}

static bool opens_zone(uint8_t cond, bool explicit_open)
{
	if (explicit_open)
		return cond != SMR_ZONE_COND_IMP_OPEN &&
		       cond != SMR_ZONE_COND_EXP_OPEN;
	return cond == SMR_ZONE_COND_EMPTY || cond == SMR_ZONE_COND_CLOSED;
}

bool smr_dev_wb_open_blocked(const struct smr_dev *dev, uint32_t zno,
			     bool explicit_open)
{
	const struct smr_dev_wb *wb = dev->wb;

	if (!wb || !wb->nr_full || (!dev->info.max_open &&
				    !dev->info.max_active))
		return false;
	return opens_zone(smr_zc_word_cond(smr_zc_word(dev->zc, zno)),
			  explicit_open);
}

/* ------------------------------------------------------------------------
 * Completion
 * ------------------------------------------------------------------------ */

static void req_free(struct smr_dev_wb *wb, struct wb_req *r)
{
	wb->queued -= r->len;
	if (wb->npool < WB_POOL_MAX &&
	    wb->pool_bytes + r->cap <= wb->max_bytes / 2) {
		wb->pool[wb->npool++] = (struct wb_buf){ r->buf, r->cap };
		wb->pool_bytes += r->cap;
	} else {
		smr_dev_buf_free(r->buf);
	}
	free(r);
}

/* A buffer for @len bytes: one of the pool that is not more than twice as
 * large, or a new one. */
static int buf_get(struct smr_dev *dev, struct wb_req *r, size_t len)
{
	struct smr_dev_wb *wb = dev->wb;

	r->buf = NULL;
	pthread_mutex_lock(&dev->zlock);
	for (unsigned int i = 0; i < wb->npool; i++) {
		if (wb->pool[i].cap < len || wb->pool[i].cap / 2 > len)
			continue;
		r->buf = wb->pool[i].p;
		r->cap = wb->pool[i].cap;
		wb->pool_bytes -= r->cap;
		wb->pool[i] = wb->pool[--wb->npool];
		break;
	}
	pthread_mutex_unlock(&dev->zlock);
	if (r->buf)
		return 0;
	r->buf = smr_dev_buf_alloc_uninit(len);
	r->cap = len;
	return r->buf ? 0 : -ENOMEM;
}

/* Zone @z has nothing queued any more: hand the zone back. */
static void zone_drained(struct smr_dev_wb *wb, struct wb_zone *z)
{
	struct wb_zone **pp = &wb->zones;

	if (z->full)
		wb->nr_full--;
	smr_zc_release(wb->dev->zc, z->zno);
	while (*pp != z)
		pp = &(*pp)->next;
	*pp = z->next;
	z->next = wb->spare;
	wb->spare = z;
}

/* A device write of @z failed: drop the zone's queue, read the zone back
 * from the medium, keep the error. */
static void zone_failed(struct smr_dev_wb *wb, struct wb_zone *z, int rc)
{
	struct smr_dev *dev = wb->dev;
	struct smr_zone rep;

	/* The errors of the open and active limits: dev.h promises -EIO. */
	if (rc == -ETOOMANYREFS || rc == -EOVERFLOW)
		rc = -EIO;
	smr_err("%s: queued write of %zu bytes at %llu (zone %u) failed: %s",
		dev->path, z->io_len, (unsigned long long)z->head->off,
		z->zno, strerror(-rc));
	if (!wb->err)
		wb->err = rc;
	while (z->head) {
		struct wb_req *r = z->head;

		z->head = r->next;
		wb->st.failed++;
		req_free(wb, r);
	}
	z->tail = NULL;
	z->nio = 0;
	/* The zone is still busy: nobody else moves it meanwhile. */
	if (dev->ops->report_zones &&
	    dev->ops->report_zones(dev, z->zno, 1, &rep) == 0)
		smr_zc_resync(dev->zc, z->zno, &rep);
	zone_drained(wb, z);
}

static void zone_issue(struct smr_dev_wb *wb, struct wb_zone *z, bool force);

/* Put (the rest of) @z's device write on the ring. */
static void zone_submit(struct smr_dev_wb *wb, struct wb_zone *z)
{
	struct smr_dev *dev = wb->dev;
	struct io_uring_sqe *sqe;
	uint64_t off = z->head->off + z->io_done, foff;
	int fd, rc;

	if (dev->ops->io_target(dev, off, z->io_len - z->io_done, &fd,
				&foff)) {
		/* No descriptor for the ring now: the thread writes it. */
		z->sync = true;
		pthread_cond_signal(&wb->wake);
		return;
	}
	sqe = wb->inflight < WB_RING_DEPTH ? io_uring_get_sqe(&wb->ring)
					    : NULL;
	if (!sqe) {
		/* The ring is full: submitted at the next completion. */
		if (dev->ops->io_release)
			dev->ops->io_release(dev, off, fd);
		return;
	}
	io_uring_prep_writev(sqe, fd, &z->iov[z->iov_first],
			     z->nio - z->iov_first, foff);
	io_uring_sqe_set_data(sqe, z);
	z->fd = fd;
	z->on_ring = true;
	if (++wb->inflight > wb->st.peak_inflight)
		wb->st.peak_inflight = wb->inflight;
	do
		rc = io_uring_submit(&wb->ring);
	while (rc == -EINTR);
	if (wb->inflight == 1)
		pthread_cond_signal(&wb->wake);
	if (rc < 0)
		smr_warn("%s: io_uring_submit: %s", dev->path, strerror(-rc));
}

/* Is @z gathering: writes queued, none going out? */
static bool zone_idle(const struct wb_zone *z)
{
	return z->head && !z->on_ring && !z->sync && !z->nio;
}

/* Start the next device write of @z, if it has none in flight: the queued
 * writes at its head, merged up to max_io; unless they are still few and
 * young, nobody waits for them and not @force. */
static void zone_issue(struct smr_dev_wb *wb, struct wb_zone *z, bool force)
{
	struct wb_req *r;
	size_t bytes = 0;
	unsigned int n = 0;

	if (!zone_idle(z))
		return;
	for (r = z->head; r && n < WB_MERGE_MAX; r = r->next) {
		if (n && bytes + r->len > wb->max_io)
			break;
		z->iov[n].iov_base = r->buf;
		z->iov[n].iov_len = r->len;
		bytes += r->len;
		n++;
	}
	if (!force && !r && n < WB_MERGE_MAX && bytes < wb->gather &&
	    !z->full && z->head->ticket > wb->hurry &&
	    smr_now_ns() < z->head->t_ns + wb->gather_ns) {
		/* The thread keeps the time; a zone that just started
		 * gathering may be due before whatever it waits for. */
		if (z->head == z->tail)
			pthread_cond_signal(&wb->wake);
		return;
	}
	/* Where the device closes zones implicitly, the zones the cache
	 * opened before this one are opened on the device first (see
	 * zone_append()): their gathered writes go too. */
	if (!force && wb->dev->info.max_open)
		for (struct wb_zone *o = wb->zones; o != z; o = o->next)
			zone_issue(wb, o, true);
	z->nio = n;
	z->io_len = bytes;
	z->io_done = 0;
	z->iov_first = 0;
	wb->st.issued++;
	if (!wb->uring) {
		z->sync = true;
		pthread_cond_signal(&wb->wake);
		return;
	}
	zone_submit(wb, z);
}

/* Every zone with something to issue or to submit again: after a
 * completion freed room on the ring, or when gathered writes are due. */
static void issue_waiting(struct smr_dev_wb *wb)
{
	for (struct wb_zone *z = wb->zones; z; z = z->next) {
		if (z->on_ring || z->sync || !z->head)
			continue;
		if (z->nio)
			zone_submit(wb, z);
		else
			zone_issue(wb, z, false);
	}
}

/* Somebody waits for the queue: what is queued now goes out without
 * gathering more (zlock held). */
static void wb_hurry(struct smr_dev_wb *wb)
{
	if (wb->hurry == wb->tickets)
		return;
	wb->hurry = wb->tickets;
	issue_waiting(wb);
}

void smr_dev_wb_hurry(struct smr_dev *dev)
{
	if (dev->wb)
		wb_hurry(dev->wb);
}

/* The device write of @z is over with @res (bytes, or a negative errno). */
static void zone_result(struct smr_dev_wb *wb, struct wb_zone *z, int res)
{
	if (res == -EINTR || res == -EAGAIN) {
		zone_submit(wb, z);
		return;
	}
	if (res <= 0) {
		zone_failed(wb, z, res ? res : -EIO);
		return;
	}
	z->io_done += (size_t)res;
	if (z->io_done < z->io_len) {
		/* Short: the rest goes out again. */
		size_t skip = (size_t)res;

		while (skip >= z->iov[z->iov_first].iov_len) {
			skip -= z->iov[z->iov_first].iov_len;
			z->iov_first++;
		}
		z->iov[z->iov_first].iov_base =
			(char *)z->iov[z->iov_first].iov_base + skip;
		z->iov[z->iov_first].iov_len -= skip;
		zone_submit(wb, z);
		return;
	}
	wb->st.bytes += z->io_len;
	for (unsigned int i = 0; i < z->nio; i++) {
		struct wb_req *r = z->head;

		z->head = r->next;
		req_free(wb, r);
	}
	if (!z->head)
		z->tail = NULL;
	z->nio = 0;
	if (z->head)
		zone_issue(wb, z, false);
	else
		zone_drained(wb, z);
}

/* A completion from the ring (zlock held). */
static void ring_complete(struct smr_dev_wb *wb, struct wb_zone *z, int res)
{
	struct smr_dev *dev = wb->dev;

	wb->inflight--;
	z->on_ring = false;
	if (dev->ops->io_release)
		dev->ops->io_release(dev, z->head->off + z->io_done, z->fd);
	zone_result(wb, z, res);
}

/* The thread writes @z's device write through the backend (no ring). */
static void zone_write_sync(struct smr_dev_wb *wb, struct wb_zone *z)
{
	struct smr_dev *dev = wb->dev;
	struct wb_req *r = z->head;
	size_t len = z->io_len - z->io_done;
	uint64_t off = r->off + z->io_done;
	unsigned int first = z->iov_first, nio = z->nio;
	int rc = 0;

	z->on_ring = true; /* in flight, off the lock */
	pthread_mutex_unlock(&dev->zlock);
	for (unsigned int i = first; i < nio && !rc; i++) {
		rc = dev->ops->write(dev, z->iov[i].iov_base,
				     z->iov[i].iov_len, off);
		off += z->iov[i].iov_len;
	}
	pthread_mutex_lock(&dev->zlock);
	z->on_ring = false;
	z->sync = false;
	zone_result(wb, z, rc ? rc : (int)len);
	issue_waiting(wb);
	pthread_cond_broadcast(&dev->zcond);
}

/* When the first gathering zone is due (0: none gathers). */
static uint64_t gather_due(const struct smr_dev_wb *wb)
{
	uint64_t due = 0;

	for (const struct wb_zone *z = wb->zones; z; z = z->next)
		if (zone_idle(z) && (!due || z->head->t_ns < due))
			due = z->head->t_ns;
	return due ? due + wb->gather_ns : 0;
}

static void *wb_thread(void *arg)
{
	struct smr_dev_wb *wb = arg;
	struct smr_dev *dev = wb->dev;

	pthread_mutex_lock(&dev->zlock);
	for (;;) {
		struct __kernel_timespec ts;
		struct io_uring_cqe *cqe;
		struct wb_zone *z;
		unsigned int head, seen;
		uint64_t due, now = 0;
		int rc;

		for (z = wb->zones; z && !(z->sync && !z->on_ring);
		     z = z->next)
			;
		if (z) {
			zone_write_sync(wb, z);
			continue;
		}
		due = gather_due(wb);
		if (due) {
			now = smr_now_ns();
			if (now >= due) {
				issue_waiting(wb);
				continue;
			}
		}
		if (!wb->inflight) {
			struct timespec until = {
				.tv_sec = (time_t)(due / 1000000000ULL),
				.tv_nsec = (long)(due % 1000000000ULL),
			};

			if (wb->stop)
				break;
			if (due)
				pthread_cond_timedwait(&wb->wake, &dev->zlock,
						       &until);
			else
				pthread_cond_wait(&wb->wake, &dev->zlock);
			continue;
		}
		/* A zone that starts gathering meanwhile cannot wake this
		 * wait: look again within the gathering time. */
		ts.tv_sec = 0;
		ts.tv_nsec = (long long)(due ? due - now : wb->gather_ns);
		if (ts.tv_nsec >= 1000000000LL) {
			ts.tv_sec = ts.tv_nsec / 1000000000LL;
			ts.tv_nsec %= 1000000000LL;
		}
		/* Only this thread reads the completion queue; the
		 * submission side is used under zlock. */
		pthread_mutex_unlock(&dev->zlock);
		rc = io_uring_wait_cqe_timeout(&wb->ring, &cqe, &ts);
		pthread_mutex_lock(&dev->zlock);
		if (rc == -ETIME) {
			/* Submit again what a failed submit may have left. */
			io_uring_submit(&wb->ring);
			continue;
		}
		if (rc < 0)
			continue; /* -EINTR: the writes are still there */
		seen = 0;
		io_uring_for_each_cqe(&wb->ring, head, cqe) {
			z = io_uring_cqe_get_data(cqe);
			ring_complete(wb, z, cqe->res);
			seen++;
		}
		io_uring_cq_advance(&wb->ring, seen);
		issue_waiting(wb);
		pthread_cond_broadcast(&dev->zcond);
	}
	pthread_mutex_unlock(&dev->zlock);
	return NULL;
}

/* ------------------------------------------------------------------------
 * The interface of dev.c
 * ------------------------------------------------------------------------ */

int smr_dev_wb_start(struct smr_dev *dev, size_t max_bytes)
{
	struct smr_dev_wb *wb = dev->wb;
	pthread_condattr_t ca;
	int rc;

	if (wb) {
		pthread_mutex_lock(&dev->zlock);
		wb->max_bytes = max_bytes;
		pthread_cond_broadcast(&dev->zcond);
		pthread_mutex_unlock(&dev->zlock);
		return 0;
	}
	wb = calloc(1, sizeof(*wb));
	if (!wb)
		return -ENOMEM;
	wb->dev = dev;
	wb->max_bytes = max_bytes;
	wb->max_io = dev->info.max_transfer ? dev->info.max_transfer
					    : WB_DEFAULT_MAX_IO;
	wb->gather = SMR_MIN(wb->max_io, (size_t)SMR_DEV_WB_GATHER_BYTES);
	wb->gather_ns = SMR_DEV_WB_GATHER_MS * 1000000ULL;
	if (dev->ops->io_target)
		wb->uring = io_uring_queue_init(WB_RING_DEPTH, &wb->ring,
						0) == 0;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&wb->wake, &ca);
	pthread_condattr_destroy(&ca);
	rc = -pthread_create(&wb->thread, NULL, wb_thread, wb);
	if (rc) {
		pthread_cond_destroy(&wb->wake);
		if (wb->uring)
			io_uring_queue_exit(&wb->ring);
		free(wb);
		return rc;
	}
	dev->wb = wb;
	return 0;
}

int smr_dev_wb_stop(struct smr_dev *dev)
{
	struct smr_dev_wb *wb = dev->wb;
	int rc;

	if (!wb)
		return 0;
	pthread_mutex_lock(&dev->zlock);
	wb_hurry(wb);
	while (wb->zones)
		pthread_cond_wait(&dev->zcond, &dev->zlock);
	wb->stop = true;
	pthread_cond_signal(&wb->wake);
	rc = wb->err;
	pthread_mutex_unlock(&dev->zlock);
	pthread_join(wb->thread, NULL);
	while (wb->spare) {
		struct wb_zone *z = wb->spare;

		wb->spare = z->next;
		free(z);
	}
	while (wb->npool)
		smr_dev_buf_free(wb->pool[--wb->npool].p);
	if (wb->uring)
		io_uring_queue_exit(&wb->ring);
	pthread_cond_destroy(&wb->wake);
	dev->wb = NULL;
	free(wb);
	return rc;
}

int smr_dev_wb_write(struct smr_dev *dev, uint32_t zno, const void *buf,
		     size_t len, uint64_t off)
{
	struct smr_dev_wb *wb = dev->wb;
	struct smr_zc_undo undo;
	struct wb_zone *z, *nz = NULL;
	struct wb_req *r;
	bool waited = false;
	int rc;

	r = malloc(sizeof(*r));
	if (!r)
		return -ENOMEM;
	if (buf_get(dev, r, len)) {
		free(r);
		return -ENOMEM;
	}
	memcpy(r->buf, buf, len);
	r->off = off;
	r->len = len;
	r->next = NULL;
	r->t_ns = smr_now_ns();

	pthread_mutex_lock(&dev->zlock);
	for (;;) {
		rc = wb->err;
		if (rc)
			break;
		z = zone_find(wb, zno);
		if (!z && !nz && wb->spare) {
			nz = wb->spare;
			wb->spare = nz->next;
		}
		if (!z && !nz) {
			/* An entry for the zone, before anything changes. */
			pthread_mutex_unlock(&dev->zlock);
			nz = malloc(sizeof(*nz));
			pthread_mutex_lock(&dev->zlock);
			if (nz)
				continue;
			rc = -ENOMEM;
			break;
		}
		if (!wb_has_room(wb, len)) {
			if (!waited)
				wb->st.cap_waits++;
			waited = true;
		} else if (!z && smr_dev_wb_open_blocked(dev, zno, false)) {
			/* Wait for the zones that are full to drain. */
		} else {
			rc = smr_zc_write_queue(dev->zc, zno, off, len, z != NULL,
						&undo);
			if (rc != SMR_ZC_BUSY_RETRY)
				break;
		}
		wb_hurry(wb);
		pthread_cond_wait(&dev->zcond, &dev->zlock);
	}
	if (rc) {
		if (nz) {
			nz->next = wb->spare;
			wb->spare = nz;
		}
		r->len = 0;
		req_free(wb, r);
		pthread_mutex_unlock(&dev->zlock);
		return rc;
	}
	if (!z) {
		z = nz;
		nz = NULL;
		memset(z, 0, sizeof(*z));
		z->zno = zno;
		zone_append(wb, z);
	}
	r->ticket = ++wb->tickets;
	if (z->tail)
		z->tail->next = r;
	else
		z->head = r;
	z->tail = r;
	wb->queued += len;
	wb->st.queued++;
	if (wb->queued > wb->st.peak_bytes)
		wb->st.peak_bytes = wb->queued;
	if (!z->full && smr_zc_word_cond(smr_zc_word(dev->zc, zno)) ==
				SMR_ZONE_COND_FULL) {
		z->full = true;
		wb->nr_full++;
	}
	if (nz) {
		nz->next = wb->spare;
		wb->spare = nz;
	}
	zone_issue(wb, z, false);
	pthread_mutex_unlock(&dev->zlock);
	return 0;
}

void smr_dev_wb_wait_read(struct smr_dev *dev, uint64_t off, size_t len)
{
	struct smr_dev_wb *wb = dev->wb;
	struct wb_zone *z;
	uint32_t zno;

	if (!wb || !len)
		return;
	zno = smr_zc_zone_no(dev->zc, off);
	/* A zone with queued writes is busy: most reads stop here. */
	if (zno == UINT32_MAX ||
	    !(smr_zc_word(dev->zc, zno) & SMR_ZC_BUSY))
		return;
	pthread_mutex_lock(&dev->zlock);
	while ((z = zone_find(wb, zno)) && z->head->off < off + len) {
		wb_hurry(wb);
		pthread_cond_wait(&dev->zcond, &dev->zlock);
	}
	pthread_mutex_unlock(&dev->zlock);
}

int smr_dev_wb_drain(struct smr_dev *dev)
{
	struct smr_dev_wb *wb = dev->wb;
	uint64_t last;
	int rc;

	if (!wb)
		return 0;
	pthread_mutex_lock(&dev->zlock);
	last = wb->tickets;
	for (;;) {
		bool older = false;

		/* Each zone's queue is in ticket order: its head is its
		 * oldest write. */
		for (struct wb_zone *z = wb->zones; z && !older; z = z->next)
			older = z->head->ticket <= last;
		if (!older)
			break;
		wb_hurry(wb);
		pthread_cond_wait(&dev->zcond, &dev->zlock);
	}
	rc = wb->err;
	pthread_mutex_unlock(&dev->zlock);
	return rc;
}

void smr_dev_wb_gather(struct smr_dev *dev, size_t bytes, uint64_t ms)
{
	struct smr_dev_wb *wb = dev->wb;

	if (!wb)
		return;
	pthread_mutex_lock(&dev->zlock);
	wb->gather = SMR_MIN(wb->max_io, bytes);
	wb->gather_ns = ms * 1000000ULL;
	pthread_cond_signal(&wb->wake);
	pthread_mutex_unlock(&dev->zlock);
}

bool smr_dev_wb_room(struct smr_dev *dev, size_t len)
{
	struct smr_dev_wb *wb = dev->wb;
	bool room;

	pthread_mutex_lock(&dev->zlock);
	room = wb_has_room(wb, len);
	pthread_mutex_unlock(&dev->zlock);
	return room;
}

void smr_dev_wb_stats(struct smr_dev *dev, struct smr_dev_wb_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!dev->wb)
		return;
	pthread_mutex_lock(&dev->zlock);
	*st = dev->wb->st;
	pthread_mutex_unlock(&dev->zlock);
}
