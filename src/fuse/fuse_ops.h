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
 * through this daemon (the device is opened exclusively), and the kernel
 * drops what an operation it sent invalidates, so caching is safe. */
#define SMR_FUSE_TIMEOUT 1.0
/* Largest write request the kernel sends. */
#define SMR_FUSE_MAX_WRITE (1024 * 1024)

/* The operations; the session's userdata is a struct smr_ns ** (set
 * before the session is mounted). */
extern const struct fuse_lowlevel_ops smr_fuse_ops;

/* The ioctls of smrfs_ioctl.h (ioctl.c); FUSE's ioctl operation. */
void smr_fuse_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd,
		    void *arg, struct fuse_file_info *fi, unsigned int flags,
		    const void *in_buf, size_t in_bufsz, size_t out_bufsz);

#endif /* SMR_FUSE_FUSE_OPS_H */
