/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ioctl.c - the daemon's answers to smrfsctl and mount.smrfs
 * (smrfs_ioctl.h): the figures of smrfsctl stat, a page of zones for
 * smrfsctl zones, and a remount. All are restricted ioctls: the kernel
 * sized the buffers from the command, so the handler checks the sizes it
 * was given and replies with a whole struct (none for the remount).
 * Any directory (or file) of the mount answers; smrfsctl asks the root.
 */
#include "fuse/fuse_ops.h"
#include "fuse/smrfs_ioctl.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define NS(req) (*(struct smr_ns **)fuse_req_userdata(req))

static void ioc_stat(fuse_req_t req, size_t out_bufsz)
{
	struct smrfs_ioc_stat out;
	struct smr_cow_fsstat st;
	struct stat pidns;
	uint64_t inodes = 0;

	if (out_bufsz < sizeof(out)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	smr_ns_fsstat(NS(req), &st, &inodes);
	smrfs_ioc_stat_pack(&out, &st, inodes);
	out.daemon_pid = (uint64_t)getpid();
	if (!stat("/proc/self/ns/pid", &pidns))
		out.daemon_pidns = (uint64_t)pidns.st_ino;
	fuse_reply_ioctl(req, 0, &out, sizeof(out));
}

static void ioc_zones(fuse_req_t req, const void *in_buf, size_t in_bufsz,
		      size_t out_bufsz)
{
	struct smrfs_ioc_zones hdr, *out;
	struct smr_cow_zstat *zs;
	struct smr_cow_fsstat st;
	uint32_t first;
	int n;

	if (in_bufsz < offsetof(struct smrfs_ioc_zones, z) ||
	    out_bufsz < sizeof(*out)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	/* Only the header is read: the caller's zone array is out space. */
	memcpy(&hdr, in_buf, offsetof(struct smrfs_ioc_zones, z));
	if (hdr.version != SMRFS_IOC_VERSION) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	first = hdr.first;
	out = calloc(1, sizeof(*out));
	zs = calloc(SMRFS_IOC_ZONES_MAX, sizeof(*zs));
	if (!out || !zs) {
		fuse_reply_err(req, ENOMEM);
		goto out_free;
	}
	n = smr_ns_zstat(NS(req), first, SMRFS_IOC_ZONES_MAX, zs);
	if (n < 0) {
		fuse_reply_err(req, n == -EOPNOTSUPP ? ENOTTY : -n);
		goto out_free;
	}
	smr_ns_fsstat(NS(req), &st, NULL);
	out->version = SMRFS_IOC_VERSION;
	out->first = first;
	out->count = (uint32_t)n;
	out->nr_zones = st.nr_zones;
	for (int i = 0; i < n; i++) {
		out->z[i].start = zs[i].start;
		out->z[i].len = zs[i].len;
		out->z[i].cap = zs[i].cap;
		out->z[i].written = zs[i].written;
		out->z[i].live = zs[i].live;
		out->z[i].type = zs[i].type;
		out->z[i].cond = zs[i].cond;
		out->z[i].flags = zs[i].flags;
	}
	fuse_reply_ioctl(req, 0, out, sizeof(*out));
out_free:
	free(zs);
	free(out);
}

static void ioc_remount(fuse_req_t req, const void *in_buf, size_t in_bufsz)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct smrfs_ioc_remount in;
	struct smr_ns_opts o = { 0 };
	int rc;

	/* Whoever could remount: root, or the user who mounted. */
	if (ctx->uid != 0 && ctx->uid != getuid()) {
		fuse_reply_err(req, EPERM);
		return;
	}
	if (in_bufsz < sizeof(in)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	memcpy(&in, in_buf, sizeof(in));
	if (in.version != SMRFS_IOC_VERSION ||
	    (in.flags & ~(SMRFS_REMOUNT_RO | SMRFS_REMOUNT_ATIME |
			  SMRFS_REMOUNT_NODIRATIME)) ||
	    in.atime > SMR_NS_STRICTATIME || in.commit_secs > 86400 ||
	    in.gc > SMRFS_REMOUNT_GC_OFF) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	/* First what can be refused: a refusal then changes nothing. */
	if (in.gc || in.gc_low || in.gc_high) {
		static const int policy[] = {
			[0] = SMR_COW_GC_KEEP,
			[SMRFS_REMOUNT_GC_COST_BENEFIT] = SMR_COW_GC_COST_BENEFIT,
			[SMRFS_REMOUNT_GC_GREEDY] = SMR_COW_GC_GREEDY,
			[SMRFS_REMOUNT_GC_OFF] = SMR_COW_GC_NEED_ONLY,
		};

		rc = smr_ns_set_gc(NS(req), policy[in.gc], in.gc_low,
				   in.gc_high);
		if (rc) {
			fuse_reply_err(req, -rc);
			return;
		}
	}
	o.atime = (enum smr_ns_atime)in.atime;
	o.nodiratime = in.flags & SMRFS_REMOUNT_NODIRATIME;
	rc = smr_ns_remount(NS(req),
			    in.flags & SMRFS_REMOUNT_ATIME ? &o : NULL,
			    in.commit_secs, in.flags & SMRFS_REMOUNT_RO);
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	/* What the daemon is now; mount.smrfs sends the cleaner's options
	 * of a remount to read-only ahead, with the state unchanged. */
	smr_info("remount: %s%s",
		 in.flags & SMRFS_REMOUNT_RO ?
			 "read-only, everything committed" : "read-write",
		 in.gc || in.gc_low || in.gc_high ?
			 "; the cleaner's options changed" : "");
	fuse_reply_ioctl(req, 0, NULL, 0);
}

void smr_fuse_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd,
		    void *arg, struct fuse_file_info *fi, unsigned int flags,
		    const void *in_buf, size_t in_bufsz, size_t out_bufsz)
{
	(void)ino, (void)arg, (void)fi;

	if (flags & FUSE_IOCTL_COMPAT) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	switch (cmd) {
	case SMRFS_IOC_STAT:
		ioc_stat(req, out_bufsz);
		return;
	case SMRFS_IOC_ZONES:
		ioc_zones(req, in_buf, in_bufsz, out_bufsz);
		return;
	case SMRFS_IOC_REMOUNT:
		ioc_remount(req, in_buf, in_bufsz);
		return;
	default:
		fuse_reply_err(req, ENOTTY);
	}
}
