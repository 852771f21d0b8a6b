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
 */
#include "fuse/fuse_ops.h"

#include <linux/fuse.h>
#include <stddef.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

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
	ssize_t n = read(fd, buf, len);
	struct fuse_in_header in;
	struct fuse_init_in init;

	if (n < (ssize_t)sizeof(in))
		return n;
	memcpy(&in, buf, sizeof(in));
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
