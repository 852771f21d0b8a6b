/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * killpriv.c - one FUSE round trip per write instead of two.
 *
 * Unless a filesystem takes over dropping set-id bits and capabilities
 * itself (FUSE_HANDLE_KILLPRIV_V2, Linux 5.11), the kernel asks it for the
 * security.capability xattr before every write to a file: a GETXATTR round
 * trip as costly as the write's own. (passthrough_ll escapes it only by not
 * supporting xattrs: its ENOSYS makes the kernel stop asking.) libfuse 3.14
 * cannot ask for the flag, so the session's I/O goes through these hooks,
 * which set it in the INIT reply when the kernel offers it. The namespace
 * does what the flag promises: a write, truncate or chown by anyone but
 * root drops the set-id bits, and any of them drops security.capability.
 */
#include "fuse/fuse_ops.h"

#include <linux/fuse.h>
#include <stddef.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

static ssize_t kp_read(int fd, void *buf, size_t len, void *userdata)
{
	struct smr_fuse_data *d = userdata;
	ssize_t n = read(fd, buf, len);
	struct fuse_in_header in;
	struct fuse_init_in init;

	if (n < (ssize_t)(sizeof(in) + offsetof(struct fuse_init_in, flags) +
			  sizeof(init.flags)))
		return n;
	memcpy(&in, buf, sizeof(in));
	if (in.opcode != FUSE_INIT)
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

static ssize_t kp_writev(int fd, struct iovec *iov, int count, void *userdata)
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

int smr_fuse_killpriv_hooks(struct fuse_session *se)
{
	static const struct fuse_custom_io io = {
		.read = kp_read,
		.writev = kp_writev,
	};

	return fuse_session_custom_io(se, &io, fuse_session_fd(se));
}
