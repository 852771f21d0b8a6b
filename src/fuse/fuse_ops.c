/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuse_ops.c - FUSE low-level requests to namespace calls.
 *
 * Each handler takes the caller's credentials from the request, calls one
 * namespace function, and replies. Errors come back from the namespace as
 * negative errnos and are turned positive only in reply_err(). The namespace
 * does its own locking; the handlers run on the session loop's threads.
 */
#include "fuse/fuse_ops.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NS(req) (*(struct smr_ns **)fuse_req_userdata(req))
#define DATA(req) ((struct smr_fuse_data *)fuse_req_userdata(req))
#define FUSE_MAX_GROUPS 64

/* The one place a negative errno becomes FUSE's positive one. */
static void reply_err(fuse_req_t req, int rc)
{
	fuse_reply_err(req, rc < 0 ? -rc : rc);
}

/*
 * Who sent a request. The supplementary groups come from /proc (an open, a
 * read and a close, some 10 us), so they are read only when a rule asks
 * whether the caller is in a group other than its own (ns_cred_in_group),
 * and once per request; by the sender's thread id, not through the
 * request, which a write may have answered by then.
 */
struct req_who {
	pid_t pid;
	int ngroups; /* -1: not read yet */
	uint32_t groups[FUSE_MAX_GROUPS];
};

/* The "Groups:" line of /proc/TID/task/TID/status, as libfuse's
 * fuse_req_getgroups() reads it; none if the thread is gone. */
static int who_groups(void *arg, const uint32_t **groups)
{
	struct req_who *w = arg;
	char path[64], buf[8192], *p, *end;
	size_t n = 0;
	ssize_t r;
	int fd;

	*groups = w->groups;
	if (w->ngroups >= 0)
		return w->ngroups;
	w->ngroups = 0;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)w->pid,
		 (int)w->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	while (n < sizeof(buf) - 1 &&
	       (r = read(fd, buf + n, sizeof(buf) - 1 - n)) > 0)
		n += (size_t)r;
	close(fd);
	buf[n] = 0;
	p = strstr(buf, "\nGroups:");
	if (!p)
		return 0;
	/* Numbers up to the next line, whose name ends the conversion. */
	for (p += 8; w->ngroups < FUSE_MAX_GROUPS; p = end) {
		unsigned long g = strtoul(p, &end, 10);

		if (end == p)
			break;
		w->groups[w->ngroups++] = (uint32_t)g;
	}
	return w->ngroups;
}

static void req_cred(fuse_req_t req, struct smr_ns_cred *cr,
		     struct req_who *w)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);

	w->pid = ctx->pid;
	w->ngroups = -1;
	cr->uid = ctx->uid;
	cr->gid = ctx->gid;
	cr->groups = NULL;
	cr->ngroups = 0;
	cr->get_groups = who_groups;
	cr->get_groups_arg = w;
	/* Sent with creates (zero otherwise); the kernel leaves it to us
	 * with FUSE_CAP_DONT_MASK, else it masked the mode already. */
	cr->umask = ctx->umask;
}

static void attr_to_stat(const struct smr_ns_attr *a, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = a->ino;
	st->st_mode = a->mode;
	st->st_nlink = a->nlink;
	st->st_uid = a->uid;
	st->st_gid = a->gid;
	st->st_rdev = a->rdev;
	st->st_size = (off_t)a->size;
	st->st_blksize = a->blksize;
	st->st_blocks = (blkcnt_t)a->blocks;
	st->st_atim = a->atime;
	st->st_mtim = a->mtime;
	st->st_ctim = a->ctime;
}

static void reply_entry(fuse_req_t req, const struct smr_ns_attr *a)
{
	struct fuse_entry_param e;

	memset(&e, 0, sizeof(e));
	e.ino = a->ino;
	e.generation = a->gen;
	attr_to_stat(a, &e.attr);
	e.attr_timeout = SMR_FUSE_TIMEOUT;
	e.entry_timeout = SMR_FUSE_TIMEOUT;
	if (fuse_reply_entry(req, &e) == -ENOENT)
		/* The request was interrupted: the kernel will not count
		 * the lookup, so neither may we. */
		smr_ns_forget(NS(req), a->ino, 1);
}

/* ------------------------------------------------------------------------ */

static void smr_fuse_init(void *userdata, struct fuse_conn_info *conn)
{
	struct smr_fuse_data *d = userdata;
	const unsigned int acl = FUSE_CAP_POSIX_ACL | FUSE_CAP_DONT_MASK;

	conn->max_write = SMR_FUSE_MAX_WRITE;
	/* POSIX ACLs: the kernel checks permissions against them; a new
	 * node's mode is ours to mask, by the default ACL of its directory
	 * or else by the umask. */
	if (!d->noacl && (conn->capable & acl) == acl) {
		conn->want |= acl;
		smr_ns_set_acl(d->ns, true);
	}
	/* The writeback cache only if asked for: with it the kernel owns
	 * size and times, writes fail (ENOSPC) only when written back, and
	 * dirty data dies with the daemon. */
	if (d->writeback && !(conn->capable & FUSE_CAP_WRITEBACK_CACHE)) {
		smr_warn("fuse: the kernel offers no writeback cache: "
			 "writes go through");
		d->writeback = false;
	}
	if (d->writeback)
		conn->want |= FUSE_CAP_WRITEBACK_CACHE;
	else
		conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
	/* open(O_TRUNC) arrives as a setattr of the size, which truncates;
	 * open itself does not. */
	conn->want &= ~FUSE_CAP_ATOMIC_O_TRUNC;
	if (conn->capable & FUSE_CAP_SPLICE_READ)
		conn->want &= ~FUSE_CAP_SPLICE_READ;
	/* A write may be short (ENOSPC after some blocks). The kernel's
	 * asynchronous direct I/O turns a short answer into EIO for the
	 * whole O_DIRECT write; without it the kernel sends one request at a
	 * time and returns the short count, as for a buffered write. */
	conn->want &= ~FUSE_CAP_ASYNC_DIO;
}

static void smr_fuse_lookup(fuse_req_t req, fuse_ino_t parent,
			    const char *name)
{
	struct smr_ns_attr a;
	int rc = smr_ns_lookup(NS(req), parent, name, &a);

	if (rc == -ENOENT) {
		/* A negative entry the kernel may cache. */
		struct fuse_entry_param e;

		memset(&e, 0, sizeof(e));
		e.entry_timeout = SMR_FUSE_TIMEOUT;
		fuse_reply_entry(req, &e);
		return;
	}
	if (rc)
		return reply_err(req, rc);
	reply_entry(req, &a);
}

static void smr_fuse_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	smr_ns_forget(NS(req), ino, nlookup);
	fuse_reply_none(req);
}

static void smr_fuse_forget_multi(fuse_req_t req, size_t count,
				  struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		smr_ns_forget(NS(req), forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void smr_fuse_getattr(fuse_req_t req, fuse_ino_t ino,
			     struct fuse_file_info *fi)
{
	struct smr_ns_attr a;
	struct stat st;
	int rc = smr_ns_getattr(NS(req), ino, &a);

	if (rc)
		return reply_err(req, rc);
	attr_to_stat(&a, &st);
	fuse_reply_attr(req, &st, SMR_FUSE_TIMEOUT);
}

static void smr_fuse_setattr(fuse_req_t req, fuse_ino_t ino,
			     struct stat *attr, int to_set,
			     struct fuse_file_info *fi)
{
	struct smr_ns_setattr sa;
	struct smr_ns_cred cr;
	struct req_who who;
	struct smr_ns_attr a;
	struct stat st;
	int rc;

	memset(&sa, 0, sizeof(sa));
	if (to_set & FUSE_SET_ATTR_MODE) {
		sa.valid |= SMR_NS_SET_MODE;
		sa.mode = attr->st_mode & 07777;
	}
	if (to_set & FUSE_SET_ATTR_UID) {
		sa.valid |= SMR_NS_SET_UID;
		sa.uid = attr->st_uid;
	}
	if (to_set & FUSE_SET_ATTR_GID) {
		sa.valid |= SMR_NS_SET_GID;
		sa.gid = attr->st_gid;
	}
	if (to_set & FUSE_SET_ATTR_SIZE) {
		if (attr->st_size < 0)
			return reply_err(req, -EINVAL);
		sa.valid |= SMR_NS_SET_SIZE;
		sa.size = (uint64_t)attr->st_size;
	}
	if (to_set & FUSE_SET_ATTR_ATIME_NOW) {
		sa.valid |= SMR_NS_SET_ATIME_NOW;
	} else if (to_set & FUSE_SET_ATTR_ATIME) {
		sa.valid |= SMR_NS_SET_ATIME;
		sa.atime = attr->st_atim;
	}
	if (to_set & FUSE_SET_ATTR_MTIME_NOW) {
		sa.valid |= SMR_NS_SET_MTIME_NOW;
	} else if (to_set & FUSE_SET_ATTR_MTIME) {
		sa.valid |= SMR_NS_SET_MTIME;
		sa.mtime = attr->st_mtim;
	}
	if (to_set & FUSE_SET_ATTR_CTIME) {
		sa.valid |= SMR_NS_SET_CTIME;
		sa.ctime = attr->st_ctim;
		/* With the writeback cache the kernel keeps the times and
		 * sends them, ctime (which no call sets) among them, with
		 * every setattr and for cached writes on close, with the
		 * closer's credentials. It has checked each call itself
		 * (default_permissions): the owner's rule for explicit
		 * times is not ours to apply to them. */
		if (DATA(req)->writeback)
			sa.valid |= SMR_NS_SET_KEPT_TIMES;
	}
	req_cred(req, &cr, &who);
	rc = smr_ns_setattr(NS(req), &cr, ino, &sa, &a);
	if (rc)
		return reply_err(req, rc);
	attr_to_stat(&a, &st);
	fuse_reply_attr(req, &st, SMR_FUSE_TIMEOUT);
}

static void smr_fuse_readlink(fuse_req_t req, fuse_ino_t ino)
{
	char buf[SMR_NS_SYMLINK_MAX + 1];
	int rc = smr_ns_readlink(NS(req), ino, buf, SMR_NS_SYMLINK_MAX);

	if (rc < 0)
		return reply_err(req, rc);
	buf[rc] = 0;
	fuse_reply_readlink(req, buf);
}

static void smr_fuse_mknod(fuse_req_t req, fuse_ino_t parent,
			   const char *name, mode_t mode, dev_t rdev)
{
	struct smr_ns_cred cr;
	struct req_who who;
	struct smr_ns_attr a;
	int rc;

	req_cred(req, &cr, &who);
	rc = smr_ns_mknod(NS(req), &cr, parent, name, mode, rdev, &a);
	if (rc)
		return reply_err(req, rc);
	reply_entry(req, &a);
}

static void smr_fuse_mkdir(fuse_req_t req, fuse_ino_t parent,
			   const char *name, mode_t mode)
{
	struct smr_ns_cred cr;
	struct req_who who;
	struct smr_ns_attr a;
	int rc;

	req_cred(req, &cr, &who);
	rc = smr_ns_mkdir(NS(req), &cr, parent, name, mode, &a);
	if (rc)
		return reply_err(req, rc);
	reply_entry(req, &a);
}

static void smr_fuse_unlink(fuse_req_t req, fuse_ino_t parent,
			    const char *name)
{
	struct smr_ns_cred cr;
	struct req_who who;

	req_cred(req, &cr, &who);
	reply_err(req, smr_ns_unlink(NS(req), &cr, parent, name));
}

static void smr_fuse_rmdir(fuse_req_t req, fuse_ino_t parent,
			   const char *name)
{
	struct smr_ns_cred cr;
	struct req_who who;

	req_cred(req, &cr, &who);
	reply_err(req, smr_ns_rmdir(NS(req), &cr, parent, name));
}

static void smr_fuse_symlink(fuse_req_t req, const char *link,
			     fuse_ino_t parent, const char *name)
{
	struct smr_ns_cred cr;
	struct req_who who;
	struct smr_ns_attr a;
	int rc;

	req_cred(req, &cr, &who);
	rc = smr_ns_symlink(NS(req), &cr, parent, name, link, &a);
	if (rc)
		return reply_err(req, rc);
	reply_entry(req, &a);
}

static void smr_fuse_rename(fuse_req_t req, fuse_ino_t parent,
			    const char *name, fuse_ino_t newparent,
			    const char *newname, unsigned int flags)
{
	struct smr_ns_cred cr;
	struct req_who who;

	req_cred(req, &cr, &who);
	reply_err(req, smr_ns_rename(NS(req), &cr, parent, name, newparent,
				     newname, flags));
}

static void smr_fuse_link(fuse_req_t req, fuse_ino_t ino,
			  fuse_ino_t newparent, const char *newname)
{
	struct smr_ns_attr a;
	int rc = smr_ns_link(NS(req), ino, newparent, newname, &a);

	if (rc)
		return reply_err(req, rc);
	reply_entry(req, &a);
}

/*
 * How the kernel treats an open file. Its cached pages may stay from one
 * open to the next (@keep): every change of a file's data reaches the
 * daemon through the kernel, which updates or drops the pages it touches
 * (writes, truncates, punches, copies), and the daemon never changes data
 * by itself (the cleaner moves it unchanged). But a read served from them
 * does not reach the daemon, which sets atime: they are kept only while a
 * read would leave atime as it is (always under noatime), else the open
 * drops them and the first read comes here. A descriptor that cannot write has
 * nothing to report at close (smr_fuse_flush): the kernel need not ask.
 */
static void open_flags(struct fuse_file_info *fi, bool keep)
{
	fi->keep_cache = keep;
	if ((fi->flags & O_ACCMODE) == O_RDONLY)
		fi->noflush = 1;
}

static void smr_fuse_open(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi)
{
	bool fresh;
	int rc = smr_ns_open_file(NS(req), ino, fi->flags, &fresh);

	if (rc)
		return reply_err(req, rc);
	open_flags(fi, fresh);
	if (fuse_reply_open(req, fi) == -ENOENT)
		smr_ns_release(NS(req), ino); /* interrupted */
}

static void smr_fuse_create(fuse_req_t req, fuse_ino_t parent,
			    const char *name, mode_t mode,
			    struct fuse_file_info *fi)
{
	struct fuse_entry_param e;
	struct smr_ns_cred cr;
	struct req_who who;
	struct smr_ns_attr a;
	int rc;

	req_cred(req, &cr, &who);
	/* O_TMPFILE (session_io.c) */
	if (!strcmp(name, SMR_FUSE_TMPFILE_NAME))
		rc = smr_ns_tmpfile(NS(req), &cr, parent, mode, &a);
	else
		rc = smr_ns_create(NS(req), &cr, parent, name, mode, &a);
	if (rc)
		return reply_err(req, rc);
	memset(&e, 0, sizeof(e));
	e.ino = a.ino;
	e.generation = a.gen;
	attr_to_stat(&a, &e.attr);
	e.attr_timeout = SMR_FUSE_TIMEOUT;
	e.entry_timeout = SMR_FUSE_TIMEOUT;
	open_flags(fi, false); /* nothing cached yet */
	if (fuse_reply_create(req, &e, fi) == -ENOENT) {
		smr_ns_release(NS(req), a.ino);
		smr_ns_forget(NS(req), a.ino, 1);
	}
}

static void smr_fuse_release(fuse_req_t req, fuse_ino_t ino,
			     struct fuse_file_info *fi)
{
	smr_ns_release(NS(req), ino);
	fuse_reply_err(req, 0);
}

static void smr_fuse_flush(fuse_req_t req, fuse_ino_t ino,
			   struct fuse_file_info *fi)
{
	/* close() does not promise durability (fsync does), but it says
	 * whether a write answered early failed. */
	reply_err(req, smr_ns_flush(NS(req), ino));
}

static void smr_fuse_read(fuse_req_t req, fuse_ino_t ino, size_t size,
			  off_t off, struct fuse_file_info *fi)
{
	void *buf;
	ssize_t n;

	if (off < 0)
		return reply_err(req, -EINVAL);
	buf = malloc(size ? size : 1);
	if (!buf)
		return reply_err(req, -ENOMEM);
	n = smr_ns_read(NS(req), ino, (uint64_t)off, size, buf);
	if (n < 0)
		reply_err(req, (int)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

static void write_ack(void *arg, ssize_t n)
{
	fuse_req_t req = arg;

	if (n < 0)
		reply_err(req, (int)n);
	else
		fuse_reply_write(req, (size_t)n);
}

static void smr_fuse_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
			   size_t size, off_t off, struct fuse_file_info *fi)
{
	struct smr_ns_cred cr;
	struct req_who who;

	if (off < 0)
		return reply_err(req, -EINVAL);
	req_cred(req, &cr, &who);
	/* The writeback of cached pages (writeback_cache) takes a short
	 * count as all written and drops the rest without an error. */
	smr_ns_write_ack(NS(req), &cr, ino, (uint64_t)off, buf, size,
			 fi->writepage, write_ack, req);
}

static void smr_fuse_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
			   struct fuse_file_info *fi)
{
	reply_err(req, smr_ns_fsync(NS(req), ino, datasync));
}

static void smr_fuse_opendir(fuse_req_t req, fuse_ino_t ino,
			     struct fuse_file_info *fi)
{
	int rc = smr_ns_opendir(NS(req), ino);

	if (rc)
		return reply_err(req, rc);
	fuse_reply_open(req, fi);
}

struct fuse_dirbuf {
	fuse_req_t req;
	char *buf;
	size_t size, len;
};

/* The entry fuse_add_direntry*() made takes @n bytes: 1 if they did not
 * fit (nothing was written; the entry comes next time), else 0. */
static int dirbuf_took(struct fuse_dirbuf *d, size_t n)
{
	if (n > d->size - d->len)
		return 1;
	d->len += n;
	return 0;
}

static int fuse_filldir(void *arg, const char *name, size_t namelen,
			uint64_t ino, uint32_t dtype, uint64_t next)
{
	struct fuse_dirbuf *d = arg;
	struct stat st;
	size_t n;

	memset(&st, 0, sizeof(st));
	st.st_ino = ino;
	st.st_mode = dtype << 12;
	n = fuse_add_direntry(d->req, d->buf + d->len, d->size - d->len, name,
			      &st, (off_t)next);
	return dirbuf_took(d, n);
}

static int fuse_filldir_plus(void *arg, const char *name, size_t namelen,
			     uint64_t ino, uint32_t dtype,
			     const struct smr_ns_attr *a, uint64_t next)
{
	struct fuse_dirbuf *d = arg;
	struct fuse_entry_param e;
	size_t n;

	/* No attributes ("." and ".."): ino 0 makes the kernel leave the
	 * entry alone. */
	memset(&e, 0, sizeof(e));
	if (a) {
		e.ino = a->ino;
		e.generation = a->gen;
		attr_to_stat(a, &e.attr);
		e.attr_timeout = SMR_FUSE_TIMEOUT;
		e.entry_timeout = SMR_FUSE_TIMEOUT;
	} else {
		e.attr.st_ino = ino;
		e.attr.st_mode = dtype << 12;
	}
	n = fuse_add_direntry_plus(d->req, d->buf + d->len, d->size - d->len,
				   name, &e, (off_t)next);
	return dirbuf_took(d, n);
}

static void fuse_readdir_any(fuse_req_t req, fuse_ino_t ino, size_t size,
			     off_t off, bool plus)
{
	struct fuse_dirbuf d = { .req = req, .size = size };
	int rc;

	d.buf = malloc(size ? size : 1);
	if (!d.buf)
		return reply_err(req, -ENOMEM);
	rc = plus ? smr_ns_readdir_plus(NS(req), ino, (uint64_t)off,
					fuse_filldir_plus, &d) :
		    smr_ns_readdir(NS(req), ino, (uint64_t)off, fuse_filldir,
				   &d);
	if (rc)
		reply_err(req, rc);
	else
		fuse_reply_buf(req, d.buf, d.len);
	free(d.buf);
}

static void smr_fuse_readdir(fuse_req_t req, fuse_ino_t ino, size_t size,
			     off_t off, struct fuse_file_info *fi)
{
	fuse_readdir_any(req, ino, size, off, false);
}

/* With attributes: a listing followed by a stat of each name (ls -l,
 * find, du, rm -r) then costs no LOOKUP round trip per name. */
static void smr_fuse_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
				 off_t off, struct fuse_file_info *fi)
{
	fuse_readdir_any(req, ino, size, off, true);
}

static void smr_fuse_releasedir(fuse_req_t req, fuse_ino_t ino,
				struct fuse_file_info *fi)
{
	fuse_reply_err(req, 0);
}

static void smr_fuse_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
			      struct fuse_file_info *fi)
{
	reply_err(req, smr_ns_fsync(NS(req), ino, datasync));
}

static void smr_fuse_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct smr_ns_statfs s;
	struct statvfs v;
	int rc = smr_ns_statfs(NS(req), &s);

	if (rc)
		return reply_err(req, rc);
	memset(&v, 0, sizeof(v));
	v.f_bsize = s.bsize;
	v.f_frsize = s.bsize;
	v.f_blocks = s.blocks;
	v.f_bfree = s.bfree;
	v.f_bavail = s.bavail;
	v.f_files = s.files;
	v.f_ffree = s.ffree;
	v.f_favail = s.ffree;
	v.f_namemax = s.namemax;
	fuse_reply_statfs(req, &v);
}

static void smr_fuse_setxattr(fuse_req_t req, fuse_ino_t ino,
			      const char *name, const char *value,
			      size_t size, int flags)
{
	struct smr_ns_cred cr;
	struct req_who who;

	req_cred(req, &cr, &who);
	reply_err(req, smr_ns_setxattr(NS(req), &cr, ino, name, value, size,
				       flags));
}

static void smr_fuse_getxattr(fuse_req_t req, fuse_ino_t ino,
			      const char *name, size_t size)
{
	struct smr_ns_cred cr;
	struct req_who who;
	void *buf = NULL;
	ssize_t n;

	req_cred(req, &cr, &who);
	if (size) {
		buf = malloc(size);
		if (!buf)
			return reply_err(req, -ENOMEM);
	}
	n = smr_ns_getxattr(NS(req), &cr, ino, name, buf, size);
	if (n < 0)
		reply_err(req, (int)n);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

static void smr_fuse_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct smr_ns_cred cr;
	struct req_who who;
	char *buf = NULL;
	ssize_t n;

	req_cred(req, &cr, &who);
	if (size) {
		buf = malloc(size);
		if (!buf)
			return reply_err(req, -ENOMEM);
	}
	n = smr_ns_listxattr(NS(req), &cr, ino, buf, size);
	if (n < 0)
		reply_err(req, (int)n);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

static void smr_fuse_removexattr(fuse_req_t req, fuse_ino_t ino,
				 const char *name)
{
	struct smr_ns_cred cr;
	struct req_who who;

	req_cred(req, &cr, &who);
	reply_err(req, smr_ns_removexattr(NS(req), &cr, ino, name));
}

/* The mode goes to the namespace as it comes. */
_Static_assert(SMR_NS_FALLOC_KEEP_SIZE == FALLOC_FL_KEEP_SIZE &&
		       SMR_NS_FALLOC_PUNCH_HOLE == FALLOC_FL_PUNCH_HOLE &&
		       SMR_NS_FALLOC_ZERO_RANGE == FALLOC_FL_ZERO_RANGE,
	       "fallocate mode bits");

static void smr_fuse_fallocate(fuse_req_t req, fuse_ino_t ino, int mode,
			       off_t off, off_t len,
			       struct fuse_file_info *fi)
{
	if (off < 0 || len <= 0)
		return reply_err(req, -EINVAL);
	reply_err(req, smr_ns_fallocate(NS(req), ino, mode, (uint64_t)off,
					(uint64_t)len));
}

static void smr_fuse_lseek(fuse_req_t req, fuse_ino_t ino, off_t off,
			   int whence, struct fuse_file_info *fi)
{
	uint64_t res;
	int rc;

	/* Dirty pages the kernel holds are data we have not seen: the
	 * kernel answers itself (data up to the size) once told ENOSYS. */
	if (DATA(req)->writeback)
		return reply_err(req, -ENOSYS);
	if (off < 0)
		return reply_err(req, -ENXIO);
	rc = smr_ns_lseek(NS(req), ino, (uint64_t)off, whence, &res);
	if (rc)
		return reply_err(req, rc);
	fuse_reply_lseek(req, (off_t)res);
}

const struct fuse_lowlevel_ops smr_fuse_ops = {
	.init = smr_fuse_init,
	.lookup = smr_fuse_lookup,
	.forget = smr_fuse_forget,
	.forget_multi = smr_fuse_forget_multi,
	.getattr = smr_fuse_getattr,
	.setattr = smr_fuse_setattr,
	.readlink = smr_fuse_readlink,
	.mknod = smr_fuse_mknod,
	.mkdir = smr_fuse_mkdir,
	.unlink = smr_fuse_unlink,
	.rmdir = smr_fuse_rmdir,
	.symlink = smr_fuse_symlink,
	.rename = smr_fuse_rename,
	.link = smr_fuse_link,
	.open = smr_fuse_open,
	.create = smr_fuse_create,
	.read = smr_fuse_read,
	.write = smr_fuse_write,
	.flush = smr_fuse_flush,
	.release = smr_fuse_release,
	.fsync = smr_fuse_fsync,
	.opendir = smr_fuse_opendir,
	.readdir = smr_fuse_readdir,
	.readdirplus = smr_fuse_readdirplus,
	.releasedir = smr_fuse_releasedir,
	.fsyncdir = smr_fuse_fsyncdir,
	.statfs = smr_fuse_statfs,
	.setxattr = smr_fuse_setxattr,
	.getxattr = smr_fuse_getxattr,
	.listxattr = smr_fuse_listxattr,
	.removexattr = smr_fuse_removexattr,
	.fallocate = smr_fuse_fallocate,
	.lseek = smr_fuse_lseek,
	.ioctl = smr_fuse_ioctl,
};
