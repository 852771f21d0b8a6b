/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuse_ops.h - the FUSE low-level adapter of smrfs: it translates requests
 * into namespace calls (namespace/ns.h) and owns nothing persistent. It is
 * the one place where a negative errno becomes FUSE's positive one.
 */
#ifndef SMR_FUSE_FUSE_OPS_H
#define SMR_FUSE_FUSE_OPS_H

#define FUSE_USE_VERSION 35
#include <fuse_lowlevel.h>

#include "namespace/ns.h"

/* Kernel caching of entries and attributes, in seconds. Every change goes
 * through this daemon (the device is opened exclusively) at the kernel's
 * request, and the kernel drops what an operation it sent invalidates (a
 * read the atime, a link the nlink and ctime), so what it caches stays
 * true for as long as it keeps it: a day, as passthrough_ll's cache=always
 * (its directory is its own). Nothing the daemon does by itself changes
 * an attribute or a name. */
#define SMR_FUSE_TIMEOUT 86400.0
/* Largest write request the kernel sends. */
#define SMR_FUSE_MAX_WRITE (1024 * 1024)

/* The session's userdata. */
struct smr_fuse_data {
	struct smr_ns *ns;   /* first (the handlers read it as a struct
			      * smr_ns **); set before the session is mounted */
	/* session_io.c: the INIT request whose reply is due (init_unique is
	 * set before init_due, which every reply's thread loads: atomic),
	 * and whether the kernel took FUSE_HANDLE_KILLPRIV_V2 */
	uint64_t init_unique;
	bool init_due;
	bool killpriv_v2;
	bool noacl;          /* -o noacl: no POSIX ACLs */
	bool writeback;      /* -o writeback_cache, and the kernel took it */
};

/* The operations. */
extern const struct fuse_lowlevel_ops smr_fuse_ops;

/*
 * Put the session's I/O through hooks (session_io.c), after
 * fuse_session_mount(): they ask the kernel for FUSE_HANDLE_KILLPRIV_V2,
 * pass O_TMPFILE on as a CREATE of SMR_FUSE_TMPFILE_NAME, and answer
 * FUSE_STATX (birth times) themselves. 0, or -1 as
 * fuse_session_custom_io().
 */
int smr_fuse_session_hooks(struct fuse_session *se);

/* The name the kernel gives an O_TMPFILE's dentry; no entry has it. */
#define SMR_FUSE_TMPFILE_NAME "/"

/* The ioctls of smrfs_ioctl.h (ioctl.c); FUSE's ioctl operation. */
void smr_fuse_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd,
		    void *arg, struct fuse_file_info *fi, unsigned int flags,
		    const void *in_buf, size_t in_bufsz, size_t out_bufsz);

#endif /* SMR_FUSE_FUSE_OPS_H */
