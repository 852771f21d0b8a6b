/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * session_io.c - the session's I/O, for what libfuse 3.14 cannot do.
 *
 * One round trip per write instead of two. Unless a filesystem takes over
 * dropping set-id bits and capabilities itself (FUSE_HANDLE_KILLPRIV_V2,
 * Linux 5.11), the kernel asks it for the security.capability xattr
 * before every write to a file: a GETXATTR round trip as costly as the
 * write's own. (passthrough_ll escapes it only by not supporting xattrs:
 * its ENOSYS makes the kernel stop asking.) libfuse 3.14 cannot ask for
 * the flag, so the hooks set it in the INIT reply when the kernel offers
 * it. The namespace does what the flag promises: a write, truncate or
 * chown by anyone but root drops the set-id bits, and any of them drops
 * security.capability.
 *
 * O_TMPFILE. The kernel sends it as FUSE_TMPFILE (Linux 6.1), a CREATE
 * in all but the opcode, whose name is always "/"; libfuse 3.14 knows no
 * such opcode and would answer ENOSYS, which the kernel turns into
 * EOPNOTSUPP. The read hook makes it a CREATE of "/", a name no real
 * CREATE can carry, which smr_fuse_create() takes for a file without a
 * name (smr_ns_tmpfile).
 *
 * Birth times. statx(2) asking for more than the basic fields (stat(1)
 * asks for the birth time) reaches the daemon as FUSE_STATX (Linux 6.6);
 * libfuse 3.14 has no operation for it and answers ENOSYS, after which the
 * kernel never asks again and reports no birth time. The read hook
 * answers it from the namespace itself and reads on.
 */
#include "fuse/fuse_ops.h"

#include <linux/fuse.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

/* FUSE_STATX and its structures, as the protocol (7.39) lays them out:
 * Debian 12's <linux/fuse.h> predates them. */
#define SIO_FUSE_STATX 52

struct sio_sx_time {
	int64_t tv_sec;
	uint32_t tv_nsec;
	int32_t reserved;
};

struct sio_statx_in {
	uint32_t getattr_flags;
	uint32_t reserved;
	uint64_t fh;
	uint32_t sx_flags;
	uint32_t sx_mask;
};

struct sio_statx {
	uint32_t mask;
	uint32_t blksize;
	uint64_t attributes;
	uint32_t nlink;
	uint32_t uid;
	uint32_t gid;
	uint16_t mode;
	uint16_t spare0;
	uint64_t ino;
	uint64_t size;
	uint64_t blocks;
	uint64_t attributes_mask;
	struct sio_sx_time atime, btime, ctime, mtime;
	uint32_t rdev_major, rdev_minor;
	uint32_t dev_major, dev_minor;
	uint64_t spare2[14];
};

struct sio_statx_out {
	uint64_t attr_valid;
	uint32_t attr_valid_nsec;
	uint32_t flags;
	uint64_t spare[2];
	struct sio_statx stat;
};

_Static_assert(sizeof(struct sio_statx_in) == 24, "fuse_statx_in");
_Static_assert(sizeof(struct sio_statx) == 256, "fuse_statx");
_Static_assert(sizeof(struct sio_statx_out) == 288, "fuse_statx_out");

static void io_sx_time(struct sio_sx_time *t, const struct timespec *ts)
{
	t->tv_sec = ts->tv_sec;
	t->tv_nsec = (uint32_t)ts->tv_nsec;
}

/* Answer the FUSE_STATX request @in (@n bytes) on @fd: every basic field
 * and the birth time. False, and nothing sent, if it is too short. */
static bool io_statx(int fd, ssize_t n, const struct fuse_in_header *in,
		     struct smr_fuse_data *d)
{
	struct fuse_out_header out = { .unique = in->unique };
	struct sio_statx_out o;
	struct sio_statx *sx = &o.stat;
	struct iovec iov[2] = { { &out, sizeof(out) }, { &o, sizeof(o) } };
	struct smr_ns_attr a;
	int rc, cancel;

	if ((size_t)n < sizeof(*in) + sizeof(struct sio_statx_in))
		return false;
	/* This runs inside libfuse's receive, where a worker may be
	 * cancelled (libfuse cancels its workers at exit): not while it
	 * holds the namespace's locks, and its device reads are
	 * cancellation points. */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
	memset(&o, 0, sizeof(o));
	rc = smr_ns_getattr(d->ns, in->nodeid, &a);
	if (!rc) {
		o.attr_valid = (uint64_t)SMR_FUSE_TIMEOUT;
		sx->mask = STATX_BASIC_STATS | STATX_BTIME;
		sx->blksize = a.blksize;
		sx->nlink = a.nlink;
		sx->uid = a.uid;
		sx->gid = a.gid;
		sx->mode = (uint16_t)a.mode;
		sx->ino = a.ino;
		sx->size = a.size;
		sx->blocks = a.blocks;
		io_sx_time(&sx->atime, &a.atime);
		io_sx_time(&sx->btime, &a.crtime);
		io_sx_time(&sx->ctime, &a.ctime);
		io_sx_time(&sx->mtime, &a.mtime);
		sx->rdev_major = major(a.rdev);
		sx->rdev_minor = minor(a.rdev);
	}
	out.error = rc;
	out.len = (uint32_t)(sizeof(out) + (rc ? 0 : sizeof(o)));
	/* As libfuse's replies: a request the kernel no longer waits for
	 * (interrupted) fails here, and that is all. */
	(void)writev(fd, iov, rc ? 1 : 2);
	pthread_setcancelstate(cancel, NULL);
	return true;
}

/* A FUSE_TMPFILE request of @n bytes made a CREATE of "/", if it has
 * exactly the form of one (else libfuse refuses it). */
static void io_tmpfile(void *buf, ssize_t n, struct fuse_in_header *in)
{
	const size_t at = sizeof(*in) + sizeof(struct fuse_create_in);

	if ((size_t)n != at + sizeof(SMR_FUSE_TMPFILE_NAME) ||
	    in->len != (uint32_t)n ||
	    memcmp((char *)buf + at, SMR_FUSE_TMPFILE_NAME,
		   sizeof(SMR_FUSE_TMPFILE_NAME)))
		return;
	in->opcode = FUSE_CREATE;
	memcpy(buf, in, sizeof(*in));
}

static ssize_t io_read(int fd, void *buf, size_t len, void *userdata)
{
	struct smr_fuse_data *d = userdata;
	struct fuse_in_header in;
	struct fuse_init_in init;
	ssize_t n;

	for (;;) {
		n = read(fd, buf, len);
		if (n < (ssize_t)sizeof(in))
			return n;
		memcpy(&in, buf, sizeof(in));
		if (in.opcode != SIO_FUSE_STATX || !io_statx(fd, n, &in, d))
			break;
	}
	if (in.opcode == FUSE_TMPFILE)
		io_tmpfile(buf, n, &in);
	if (in.opcode != FUSE_INIT ||
	    n < (ssize_t)(sizeof(in) + offsetof(struct fuse_init_in, flags) +
			  sizeof(init.flags)))
		return n;
	memcpy(&init.flags,
	       (char *)buf + sizeof(in) + offsetof(struct fuse_init_in, flags),
	       sizeof(init.flags));
	if (init.flags & FUSE_HANDLE_KILLPRIV_V2) {
		d->init_unique = in.unique;
		__atomic_store_n(&d->init_due, true, __ATOMIC_RELEASE);
	}
	return n;
}

static ssize_t io_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	struct smr_fuse_data *d = userdata;
	const size_t at = offsetof(struct fuse_init_out, flags);
	struct fuse_out_header out;

	if (__atomic_load_n(&d->init_due, __ATOMIC_ACQUIRE) && count >= 2 &&
	    iov[0].iov_len >= sizeof(out) &&
	    iov[1].iov_len >= at + sizeof(uint32_t)) {
		memcpy(&out, iov[0].iov_base, sizeof(out));
		if (out.unique == d->init_unique) {
			uint32_t flags;

			__atomic_store_n(&d->init_due, false,
					 __ATOMIC_RELAXED);
			memcpy(&flags, (char *)iov[1].iov_base + at,
			       sizeof(flags));
			if (out.error == 0) {
				flags |= FUSE_HANDLE_KILLPRIV_V2;
				memcpy((char *)iov[1].iov_base + at, &flags,
				       sizeof(flags));
				d->killpriv_v2 = true;
			}
		}
	}
	return writev(fd, iov, count);
}

int smr_fuse_session_hooks(struct fuse_session *se)
{
	static const struct fuse_custom_io io = {
		.read = io_read,
		.writev = io_writev,
	};

	return fuse_session_custom_io(se, &io, fuse_session_fd(se));
}
