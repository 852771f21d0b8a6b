// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * workload.c - the operations of the crash sweep, run through the namespace
 * layer exactly as the FUSE adapter calls it, the workloads made of them,
 * and the snapshot of the visible state that the oracle compares.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

#include "cow/cow.h"
#include "namespace/ns.h"
#include "testutil.h"
#include "crash/crash.h"

static const struct smr_ns_cred cr_root = { .uid = 0 };

/* ------------------------------------------------------------------------
 * Paths
 * ------------------------------------------------------------------------ */

/* Look up the directory that holds @path and the last component's name
 * (in @leaf, NAME_MAX + 1 bytes). */
static int cr_parent(struct cr_fs *fs, const char *path, uint64_t *dir,
		     char *leaf)
{
	struct smr_ns_attr a;
	uint64_t ino = SMR_NS_ROOT;
	const char *p = path;

	for (;;) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);
		int rc;

		if (n == 0 || n > SMR_NS_NAME_MAX)
			return -EINVAL;
		memcpy(leaf, p, n);
		leaf[n] = '\0';
		if (!slash) {
			*dir = ino;
			return 0;
		}
		rc = smr_ns_lookup(fs->ns, ino, leaf, &a);
		if (rc)
			return rc;
		ino = a.ino;
		p = slash + 1;
	}
}

static int cr_lookup(struct cr_fs *fs, const char *path,
		     struct smr_ns_attr *a)
{
	char leaf[SMR_NS_NAME_MAX + 1];
	uint64_t dir;
	int rc;

	if (!path || !*path)
		return smr_ns_getattr(fs->ns, SMR_NS_ROOT, a);
	rc = cr_parent(fs, path, &dir, leaf);
	return rc ? rc : smr_ns_lookup(fs->ns, dir, leaf, a);
}

static void cr_pattern(uint8_t *buf, size_t len, uint64_t seed)
{
	uint64_t s = seed * 0x9e3779b97f4a7c15ULL + 1;

	for (size_t i = 0; i < len; i += 8) {
		uint64_t v = smr_test_rand(&s);

		memcpy(buf + i, &v, len - i < 8 ? len - i : 8);
	}
}

/* ------------------------------------------------------------------------
 * Operations
 * ------------------------------------------------------------------------ */

static int cr_write(struct cr_fs *fs, uint64_t ino, uint64_t off,
		    uint64_t len, uint64_t seed)
{
	uint8_t *buf = malloc(len ? len : 1);
	ssize_t n;

	if (!buf)
		return -ENOMEM;
	cr_pattern(buf, len, seed);
	n = smr_ns_write(fs->ns, &cr_root, ino, off, buf, len);
	free(buf);
	if (n < 0)
		return (int)n;
	return (uint64_t)n == len ? 0 : -EIO;
}

int cr_op_run(struct cr_fs *fs, const struct cr_op *op, uint64_t seed)
{
	char leaf[SMR_NS_NAME_MAX + 1], leaf2[SMR_NS_NAME_MAX + 1];
	struct smr_ns_setattr sa = { 0 };
	struct smr_ns_attr a;
	uint64_t dir, dir2;
	int rc;

	switch (op->kind) {
	case CR_SYNC:
		return smr_ns_sync(fs->ns);
	case CR_CLEAN:
		rc = smr_cow_clean(fs->cow, SMR_COW_GC_GREEDY,
				   (unsigned int)op->len);
		return rc < 0 ? rc : 0;
	case CR_CREATE:
	case CR_MKDIR:
	case CR_SYMLINK:
	case CR_RMDIR:
	case CR_UNLINK:
		rc = cr_parent(fs, op->a, &dir, leaf);
		if (rc)
			return rc;
		if (op->kind == CR_CREATE) {
			rc = smr_ns_create(fs->ns, &cr_root, dir, leaf,
					   S_IFREG | 0644, &a);
			if (!rc)
				smr_ns_release(fs->ns, a.ino);
			return rc;
		}
		if (op->kind == CR_MKDIR)
			return smr_ns_mkdir(fs->ns, &cr_root, dir, leaf, 0755,
					    &a);
		if (op->kind == CR_SYMLINK)
			return smr_ns_symlink(fs->ns, &cr_root, dir, leaf,
					      op->b, &a);
		if (op->kind == CR_RMDIR)
			return smr_ns_rmdir(fs->ns, &cr_root, dir, leaf);
		return smr_ns_unlink(fs->ns, &cr_root, dir, leaf);
	case CR_RENAME:
	case CR_WHITEOUT:
		rc = cr_parent(fs, op->a, &dir, leaf);
		if (!rc)
			rc = cr_parent(fs, op->b, &dir2, leaf2);
		return rc ? rc : smr_ns_rename(fs->ns, &cr_root, dir, leaf,
					       dir2, leaf2,
					       op->kind == CR_WHITEOUT ?
						       SMR_NS_RENAME_WHITEOUT :
						       0);
	case CR_TMPFILE:
		/* Written unnamed, then named: it appears whole or not at
		 * all. */
		rc = cr_parent(fs, op->a, &dir, leaf);
		if (!rc)
			rc = smr_ns_tmpfile(fs->ns, &cr_root, dir, 0644, &a);
		if (rc)
			return rc;
		rc = cr_write(fs, a.ino, 0, op->len, seed);
		if (!rc)
			rc = smr_ns_link(fs->ns, a.ino, dir, leaf, NULL);
		smr_ns_release(fs->ns, a.ino);
		return rc;
	default:
		break;
	}

	/* The rest act on an existing inode. */
	rc = cr_lookup(fs, op->a, &a);
	if (rc)
		return rc;
	switch (op->kind) {
	case CR_WRITE:
		return cr_write(fs, a.ino, op->off == CR_APPEND ? a.size :
					   op->off, op->len, seed);
	case CR_TRUNCATE:
		sa.valid = SMR_NS_SET_SIZE;
		sa.size = op->off;
		return smr_ns_setattr(fs->ns, &cr_root, a.ino, &sa, NULL);
	case CR_CHMOD:
		sa.valid = SMR_NS_SET_MODE;
		sa.mode = (uint32_t)op->mode;
		return smr_ns_setattr(fs->ns, &cr_root, a.ino, &sa, NULL);
	case CR_LINK:
		rc = cr_parent(fs, op->b, &dir2, leaf2);
		return rc ? rc : smr_ns_link(fs->ns, a.ino, dir2, leaf2, NULL);
	case CR_SETXATTR: {
		uint8_t *v = malloc(op->len);

		if (!v)
			return -ENOMEM;
		cr_pattern(v, op->len, seed);
		rc = smr_ns_setxattr(fs->ns, &cr_root, a.ino, op->b, v,
				     op->len, 0);
		free(v);
		return rc;
	}
	case CR_RMXATTR:
		return smr_ns_removexattr(fs->ns, &cr_root, a.ino, op->b);
	case CR_FALLOC:
		return smr_ns_fallocate(fs->ns, a.ino, op->mode, op->off,
					op->len);
	case CR_FSYNC:
		return smr_ns_fsync(fs->ns, a.ino, false);
	case CR_ORPHAN:
		rc = smr_ns_open_file(fs->ns, a.ino, O_RDWR, NULL);
		if (rc)
			return rc;
		rc = cr_parent(fs, op->a, &dir, leaf);
		if (!rc)
			rc = smr_ns_unlink(fs->ns, &cr_root, dir, leaf);
		if (rc)
			smr_ns_release(fs->ns, a.ino);
		return rc;
	default:
		return -EINVAL;
	}
}

static const char *const cr_kind_names[CR_NR_KINDS] = {
	[CR_CREATE] = "create", [CR_MKDIR] = "mkdir", [CR_RMDIR] = "rmdir",
	[CR_WRITE] = "write", [CR_TRUNCATE] = "truncate", [CR_LINK] = "link",
	[CR_UNLINK] = "unlink", [CR_RENAME] = "rename",
	[CR_SYMLINK] = "symlink", [CR_SETXATTR] = "setxattr",
	[CR_RMXATTR] = "removexattr", [CR_FALLOC] = "fallocate",
	[CR_CHMOD] = "chmod", [CR_FSYNC] = "fsync", [CR_SYNC] = "sync",
	[CR_CLEAN] = "clean", [CR_ORPHAN] = "open+unlink",
	[CR_TMPFILE] = "tmpfile+link", [CR_WHITEOUT] = "rename+whiteout",
};

void cr_op_str(const struct cr_op *op, char *buf, size_t size)
{
	const char *k = cr_kind_names[op->kind];

	switch (op->kind) {
	case CR_WRITE:
		if (op->off == CR_APPEND)
			snprintf(buf, size, "%s %s +%" PRIu64, k, op->a,
				 op->len);
		else
			snprintf(buf, size, "%s %s %" PRIu64 "+%" PRIu64, k,
				 op->a, op->off, op->len);
		break;
	case CR_TRUNCATE:
		snprintf(buf, size, "%s %s %" PRIu64, k, op->a, op->off);
		break;
	case CR_FALLOC:
		snprintf(buf, size, "%s %s mode %d %" PRIu64 "+%" PRIu64, k,
			 op->a, op->mode, op->off, op->len);
		break;
	case CR_CHMOD:
		snprintf(buf, size, "%s %s %o", k, op->a, op->mode);
		break;
	case CR_SETXATTR:
		snprintf(buf, size, "%s %s %s %" PRIu64, k, op->a, op->b,
			 op->len);
		break;
	case CR_TMPFILE:
		snprintf(buf, size, "%s %s %" PRIu64, k, op->a, op->len);
		break;
	case CR_SYNC:
		snprintf(buf, size, "%s", k);
		break;
	case CR_CLEAN:
		snprintf(buf, size, "%s %" PRIu64, k, op->len);
		break;
	default:
		snprintf(buf, size, "%s %s%s%s", k, op->a && *op->a ? op->a :
			 "/", op->b ? " " : "", op->b ? op->b : "");
	}
}

bool cr_op_is_persist(const struct cr_op *op)
{
	return op->kind == CR_FSYNC || op->kind == CR_SYNC;
}

/* ------------------------------------------------------------------------
 * Snapshot
 * ------------------------------------------------------------------------ */

struct cr_str {
	char *s;
	size_t len, cap;
};

static int cr_str_add(struct cr_str *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int cr_str_add(struct cr_str *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
		if (n < 0)
			return -EINVAL;
		if ((size_t)n < b->cap - b->len) {
			b->len += (size_t)n;
			return 0;
		}
		size_t cap = b->cap ? 2 * b->cap : 4096;
		while (cap - b->len <= (size_t)n)
			cap *= 2;
		char *s = realloc(b->s, cap);

		if (!s)
			return -ENOMEM;
		b->s = s;
		b->cap = cap;
	}
}

struct cr_dent {
	char name[SMR_NS_NAME_MAX + 1];
	uint64_t ino;
};

struct cr_dents {
	struct cr_dent *d;
	size_t n, cap;
};

static int cr_fill(void *arg, const char *name, size_t namelen, uint64_t ino,
		   uint32_t dtype, uint64_t next)
{
	struct cr_dents *l = arg;

	(void)dtype;
	(void)next;
	if ((namelen == 1 && name[0] == '.') ||
	    (namelen == 2 && name[0] == '.' && name[1] == '.'))
		return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		struct cr_dent *d = realloc(l->d, cap * sizeof(*d));

		if (!d)
			return -ENOMEM;
		l->d = d;
		l->cap = cap;
	}
	memcpy(l->d[l->n].name, name, namelen);
	l->d[l->n].name[namelen] = '\0';
	l->d[l->n].ino = ino;
	l->n++;
	return 0;
}

static int cr_dent_cmp(const void *a, const void *b)
{
	return strcmp(((const struct cr_dent *)a)->name,
		      ((const struct cr_dent *)b)->name);
}

static int cr_name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* " x:NAME=HASH" for every extended attribute, in name order. */
static int cr_snap_xattrs(struct cr_fs *fs, uint64_t ino, struct cr_str *out)
{
	char *list = NULL, **names = NULL;
	uint8_t *val = malloc(SMR_NS_XATTR_SIZE_MAX);
	ssize_t len;
	size_t n = 0;
	int rc = 0;

	if (!val)
		return -ENOMEM;
	len = smr_ns_listxattr(fs->ns, &cr_root, ino, NULL, 0);
	if (len <= 0) {
		rc = (int)len;
		goto out;
	}
	list = malloc((size_t)len);
	names = calloc((size_t)len, sizeof(*names));
	if (!list || !names) {
		rc = -ENOMEM;
		goto out;
	}
	len = smr_ns_listxattr(fs->ns, &cr_root, ino, list, (size_t)len);
	if (len < 0) {
		rc = (int)len;
		goto out;
	}
	for (ssize_t i = 0; i < len; i += (ssize_t)strlen(list + i) + 1)
		names[n++] = list + i;
	qsort(names, n, sizeof(*names), cr_name_cmp);
	for (size_t i = 0; i < n && !rc; i++) {
		ssize_t vl = smr_ns_getxattr(fs->ns, &cr_root, ino, names[i],
					     val, SMR_NS_XATTR_SIZE_MAX);

		if (vl < 0)
			rc = (int)vl;
		else
			rc = cr_str_add(out, " x:%s=%zd/%016" PRIx64, names[i],
					vl, (uint64_t)XXH3_64bits(val,
								  (size_t)vl));
	}
out:
	free(names);
	free(list);
	free(val);
	return rc;
}

static int cr_snap_contents(struct cr_fs *fs, const struct smr_ns_attr *a,
			    struct cr_str *out)
{
	uint8_t *buf;
	ssize_t n;
	int rc;

	if (S_ISLNK(a->mode)) {
		char t[SMR_NS_SYMLINK_MAX + 1];
		int l = smr_ns_readlink(fs->ns, a->ino, t, sizeof(t) - 1);

		if (l < 0)
			return l;
		t[l] = '\0';
		return cr_str_add(out, " -> %s", t);
	}
	if (!S_ISREG(a->mode))
		return 0;
	buf = malloc(a->size ? a->size : 1);
	if (!buf)
		return -ENOMEM;
	n = smr_ns_read(fs->ns, a->ino, 0, a->size, buf);
	if (n < 0)
		rc = (int)n;
	else if ((uint64_t)n != a->size)
		rc = -EIO;
	else
		rc = cr_str_add(out, " data=%016" PRIx64,
				(uint64_t)XXH3_64bits(buf, a->size));
	free(buf);
	return rc;
}

static int cr_snap_dir(struct cr_fs *fs, uint64_t dir, const char *path,
		       struct cr_str *out, unsigned int depth)
{
	struct cr_dents l = { 0 };
	int rc;

	if (depth > 64)
		return -ELOOP;
	rc = smr_ns_readdir(fs->ns, dir, 0, cr_fill, &l);
	if (rc)
		goto out;
	/* An empty directory has no array (qsort must not get NULL). */
	if (l.n > 1)
		qsort(l.d, l.n, sizeof(*l.d), cr_dent_cmp);
	for (size_t i = 0; i < l.n && !rc; i++) {
		struct smr_ns_attr a;
		char sub[4096];

		snprintf(sub, sizeof(sub), "%s/%s", path, l.d[i].name);
		rc = smr_ns_getattr(fs->ns, l.d[i].ino, &a);
		if (rc)
			break;
		rc = cr_str_add(out, "%s %o n%u s%" PRIu64 " b%" PRIu64
				" i%" PRIu64 " m%lld.%09ld c%lld.%09ld", sub,
				a.mode, a.nlink, a.size, a.blocks, a.ino,
				(long long)a.mtime.tv_sec, a.mtime.tv_nsec,
				(long long)a.ctime.tv_sec, a.ctime.tv_nsec);
		if (!rc)
			rc = cr_snap_contents(fs, &a, out);
		if (!rc && (S_ISREG(a.mode) || S_ISDIR(a.mode)))
			rc = cr_snap_xattrs(fs, a.ino, out);
		if (!rc)
			rc = cr_str_add(out, "\n");
		if (!rc && S_ISDIR(a.mode))
			rc = cr_snap_dir(fs, a.ino, sub, out, depth + 1);
	}
out:
	free(l.d);
	return rc;
}

char *cr_snapshot(struct cr_fs *fs, int *err)
{
	struct cr_str out = { 0 };
	struct smr_ns_attr a;
	int rc;

	rc = smr_ns_getattr(fs->ns, SMR_NS_ROOT, &a);
	if (!rc)
		rc = cr_str_add(&out, "/ %o n%u s%" PRIu64 " m%lld.%09ld "
				"c%lld.%09ld", a.mode, a.nlink, a.size,
				(long long)a.mtime.tv_sec, a.mtime.tv_nsec,
				(long long)a.ctime.tv_sec, a.ctime.tv_nsec);
	if (!rc)
		rc = cr_snap_xattrs(fs, SMR_NS_ROOT, &out);
	if (!rc)
		rc = cr_str_add(&out, "\n");
	if (!rc)
		rc = cr_snap_dir(fs, SMR_NS_ROOT, "", &out, 0);
	if (rc) {
		free(out.s);
		*err = rc;
		return NULL;
	}
	return out.s;
}

/* ------------------------------------------------------------------------
 * The bounded space
 * ------------------------------------------------------------------------ */

/* An empty workload with room for @max operations. */
static void cr_workload_new(struct cr_workload *w, size_t max, uint64_t seed)
{
	memset(w, 0, sizeof(*w));
	w->ops = calloc(max, sizeof(*w->ops));
	if (!w->ops)
		abort();
	w->seed = seed;
}

/*
 * The initial state: /foo (12000 bytes, user.a), /bar (3000 bytes), /A/
 * with /A/foo (5000 bytes), /B/ empty. Every operation below acts on it.
 */
static const struct cr_op cr_init_ops[] = {
	{ CR_MKDIR, "A", NULL, 0, 0, 0 },
	{ CR_MKDIR, "B", NULL, 0, 0, 0 },
	{ CR_CREATE, "foo", NULL, 0, 0, 0 },
	{ CR_WRITE, "foo", NULL, 0, 12000, 0 },
	{ CR_SETXATTR, "foo", "user.a", 0, 16, 0 },
	{ CR_CREATE, "bar", NULL, 0, 0, 0 },
	{ CR_WRITE, "bar", NULL, 0, 3000, 0 },
	{ CR_CREATE, "A/foo", NULL, 0, 0, 0 },
	{ CR_WRITE, "A/foo", NULL, 0, 5000, 0 },
	{ CR_SYNC, NULL, NULL, 0, 0, 0 },
};

int cr_initial_state(struct cr_fs *fs)
{
	for (size_t i = 0; i < sizeof(cr_init_ops) / sizeof(*cr_init_ops);
	     i++) {
		int rc = cr_op_run(fs, &cr_init_ops[i], 1000 + i);

		if (rc)
			return rc;
	}
	return 0;
}

static const struct cr_op cr_ace_ops[] = {
	{ CR_CREATE, "new", NULL, 0, 0, 0 },
	{ CR_CREATE, "A/new", NULL, 0, 0, 0 },
	{ CR_MKDIR, "C", NULL, 0, 0, 0 },
	{ CR_MKDIR, "A/sub", NULL, 0, 0, 0 },
	{ CR_RMDIR, "B", NULL, 0, 0, 0 },
	{ CR_WRITE, "foo", NULL, 0, 4096, 0 },            /* overwrite */
	{ CR_WRITE, "foo", NULL, CR_APPEND, 6000, 0 },    /* append */
	{ CR_WRITE, "foo", NULL, 1000, 5000, 0 },         /* unaligned */
	{ CR_WRITE, "A/foo", NULL, 0, 256 * 1024, 0 },    /* whole blocks */
	{ CR_TRUNCATE, "foo", NULL, 3000, 0, 0 },
	{ CR_TRUNCATE, "foo", NULL, 40000, 0, 0 },
	{ CR_LINK, "foo", "A/lnk", 0, 0, 0 },
	{ CR_UNLINK, "foo", NULL, 0, 0, 0 },
	{ CR_UNLINK, "A/foo", NULL, 0, 0, 0 },
	{ CR_RENAME, "foo", "A/bar", 0, 0, 0 },
	{ CR_RENAME, "foo", "bar", 0, 0, 0 },             /* replaces */
	{ CR_RENAME, "A", "B/A", 0, 0, 0 },               /* a directory */
	{ CR_SYMLINK, "sl", "foo", 0, 0, 0 },
	{ CR_SETXATTR, "foo", "user.x", 0, 100, 0 },
	{ CR_SETXATTR, "A", "user.big", 0, 5000, 0 },     /* several items */
	{ CR_RMXATTR, "foo", "user.a", 0, 0, 0 },
	{ CR_FALLOC, "foo", NULL, 0, 50000,
	  SMR_NS_FALLOC_PUNCH_HOLE | SMR_NS_FALLOC_KEEP_SIZE },
	{ CR_FALLOC, "foo", NULL, 2000, 7000,
	  SMR_NS_FALLOC_PUNCH_HOLE | SMR_NS_FALLOC_KEEP_SIZE },
	{ CR_CHMOD, "foo", NULL, 0, 0, 0600 },
	{ CR_ORPHAN, "foo", NULL, 0, 0, 0 },              /* still open */
};

size_t cr_ace_nr_ops(void)
{
	return sizeof(cr_ace_ops) / sizeof(*cr_ace_ops);
}

const struct cr_op *cr_ace_op(size_t i)
{
	return &cr_ace_ops[i];
}

const char *const cr_persist_names[CR_NR_PERSIST] = { "fsync", "fsyncdir",
						      "sync" };

/* The path an operation leaves its result at (a rename's or link's new
 * name), and its parent directory ("" for the root). */
static const char *cr_op_result(const struct cr_op *op)
{
	if (op->kind == CR_RENAME || op->kind == CR_LINK)
		return op->b;
	return op->a;
}

static const char *cr_parent_of(const char *path)
{
	static const char *const dirs[] = { "A", "B", "C", "A/sub", "B/A",
					    "B/sub", "C/sub" };
	const char *slash = path ? strrchr(path, '/') : NULL;

	if (!slash)
		return "";
	for (size_t i = 0; i < sizeof(dirs) / sizeof(*dirs); i++)
		if (strlen(dirs[i]) == (size_t)(slash - path) &&
		    !strncmp(dirs[i], path, (size_t)(slash - path)))
			return dirs[i];
	return "";
}

/* The persistence call @p after @op. An fsync of a name the operation
 * removed goes to its directory instead. */
static struct cr_op cr_persist_op(const struct cr_op *op, int p)
{
	struct cr_op o = { CR_FSYNC, NULL, NULL, 0, 0, 0 };
	const char *res = cr_op_result(op);

	if (p == 2 || !res) {
		o.kind = CR_SYNC;
		return o;
	}
	if (p == 1 || op->kind == CR_UNLINK || op->kind == CR_RMDIR ||
	    op->kind == CR_ORPHAN)
		o.a = cr_parent_of(res);
	else
		o.a = res;
	return o;
}

void cr_ace_workload(struct cr_workload *w, const size_t *ops,
		     const int *persist, size_t n)
{
	size_t len;

	cr_workload_new(w, 2 * n, 0);
	len = (size_t)snprintf(w->name, sizeof(w->name), "seq%zu", n);
	for (size_t i = 0; i < n; i++) {
		const struct cr_op *op = &cr_ace_ops[ops[i]];

		w->ops[w->nr_ops++] = *op;
		w->ops[w->nr_ops++] = cr_persist_op(op, persist[i]);
		if (len < sizeof(w->name))
			len += (size_t)snprintf(w->name + len,
						sizeof(w->name) - len,
						"-%zu%c", ops[i],
						"fds"[persist[i]]);
	}
	for (size_t i = 0; i < n; i++)
		w->seed = w->seed * 131 + ops[i] * 3 + (size_t)persist[i];
}

/* ------------------------------------------------------------------------
 * Random workloads
 * ------------------------------------------------------------------------ */

static const char *const cr_files[] = { "foo", "bar", "baz", "A/foo",
					"A/bar", "B/foo", "A/sub/foo",
					"C/foo", "B/A/foo" };
static const char *const cr_dirs[] = { "A", "B", "C", "A/sub", "B/A",
				       "B/sub", "C/sub" };
static const char *const cr_xattrs[] = { "user.a", "user.b", "user.c" };

#define CR_PICK(arr, s) ((arr)[smr_test_rand(s) % (sizeof(arr) / sizeof(*(arr)))])

void cr_random_workload(struct cr_workload *w, uint64_t seed, size_t n)
{
	uint64_t s = seed * 0x9e3779b97f4a7c15ULL + 7;

	cr_workload_new(w, 2 * n, seed);
	snprintf(w->name, sizeof(w->name), "random-%" PRIu64, seed);
	for (size_t i = 0; i < n; i++) {
		struct cr_op o = { 0 };
		uint64_t r = smr_test_rand(&s);

		o.a = CR_PICK(cr_files, &s);
		switch (r % 16) {
		case 0:
		case 1:
			o.kind = CR_CREATE;
			break;
		case 2:
			o.kind = CR_MKDIR;
			o.a = CR_PICK(cr_dirs, &s);
			break;
		case 3:
			o.kind = CR_RMDIR;
			o.a = CR_PICK(cr_dirs, &s);
			break;
		case 4:
		case 5:
		case 6:
			o.kind = CR_WRITE;
			o.off = smr_test_rand(&s) % 4 == 0 ? CR_APPEND :
				smr_test_rand(&s) % 65536;
			o.len = 1 + smr_test_rand(&s) % 40000;
			break;
		case 7:
			o.kind = CR_TRUNCATE;
			o.off = smr_test_rand(&s) % 70000;
			break;
		case 8:
			o.kind = CR_LINK;
			o.b = CR_PICK(cr_files, &s);
			break;
		case 9:
			switch (smr_test_rand(&s) % 4) {
			case 0:
				o.kind = CR_ORPHAN;
				break;
			case 1:
				o.kind = CR_TMPFILE;
				o.len = 1 + smr_test_rand(&s) % 20000;
				break;
			default:
				o.kind = CR_UNLINK;
			}
			break;
		case 10:
			o.kind = smr_test_rand(&s) % 4 ? CR_RENAME :
							 CR_WHITEOUT;
			if (smr_test_rand(&s) % 4 == 0) {
				o.a = CR_PICK(cr_dirs, &s);
				o.b = CR_PICK(cr_dirs, &s);
			} else {
				o.b = CR_PICK(cr_files, &s);
			}
			break;
		case 11:
			o.kind = CR_SYMLINK;
			o.b = CR_PICK(cr_files, &s);
			break;
		case 12:
			o.kind = CR_SETXATTR;
			o.b = CR_PICK(cr_xattrs, &s);
			o.len = 1 + smr_test_rand(&s) % 6000;
			break;
		case 13:
			o.kind = CR_RMXATTR;
			o.b = CR_PICK(cr_xattrs, &s);
			break;
		case 14:
			o.kind = CR_FALLOC;
			o.off = smr_test_rand(&s) % 60000;
			o.len = 1 + smr_test_rand(&s) % 30000;
			o.mode = SMR_NS_FALLOC_PUNCH_HOLE |
				 SMR_NS_FALLOC_KEEP_SIZE;
			break;
		default:
			o.kind = CR_CHMOD;
			o.mode = smr_test_rand(&s) % 2 ? 0600 : 0755;
			break;
		}
		w->ops[w->nr_ops++] = o;
		if (smr_test_rand(&s) % 3 == 0)
			w->ops[w->nr_ops++] =
				cr_persist_op(&o, (int)(smr_test_rand(&s) %
							CR_NR_PERSIST));
	}
}

/* ------------------------------------------------------------------------
 * Cleaner workloads
 * ------------------------------------------------------------------------ */

#define CR_CLEAN_FILES 64
#define CR_CLEAN_FSZ (192 * 1024)

static char cr_clean_names[CR_CLEAN_FILES][8];

static const char *cr_clean_name(unsigned int i)
{
	if (!cr_clean_names[i][0])
		snprintf(cr_clean_names[i], sizeof(cr_clean_names[i]), "f%02u",
			 i);
	return cr_clean_names[i];
}

/* Files on even numbers: 32 x 192 KiB. */
int cr_clean_initial_state(struct cr_fs *fs)
{
	for (unsigned int i = 0; i < CR_CLEAN_FILES; i += 2) {
		struct cr_op c = { CR_CREATE, cr_clean_name(i), NULL, 0, 0, 0 };
		struct cr_op wr = { CR_WRITE, cr_clean_name(i), NULL, 0,
				    CR_CLEAN_FSZ, 0 };
		int rc = cr_op_run(fs, &c, i);

		if (!rc)
			rc = cr_op_run(fs, &wr, i);
		if (rc)
			return rc;
	}
	return smr_ns_sync(fs->ns);
}

void cr_clean_workload(struct cr_workload *w, uint64_t seed, size_t rounds)
{
	uint64_t s = seed * 0x9e3779b97f4a7c15ULL + 11;

	cr_workload_new(w, rounds * 16, seed);
	snprintf(w->name, sizeof(w->name), "clean-%" PRIu64, seed);
	for (size_t r = 0; r < rounds; r++) {
		for (int k = 0; k < 6; k++) {
			const char *f = cr_clean_name(
				(unsigned int)(smr_test_rand(&s) %
					       CR_CLEAN_FILES));
			struct cr_op o = { CR_WRITE, f, NULL, 0,
					   CR_CLEAN_FSZ, 0 };

			switch (smr_test_rand(&s) % 4) {
			case 0:
				o.kind = CR_UNLINK;
				break;
			case 1:
				o.kind = CR_CREATE;
				w->ops[w->nr_ops++] = o;
				o.kind = CR_WRITE;
				break;
			case 2:
				o.off = smr_test_rand(&s) % CR_CLEAN_FSZ;
				o.len = 1 + smr_test_rand(&s) % 20000;
				break;
			default:
				break;
			}
			w->ops[w->nr_ops++] = o;
		}
		w->ops[w->nr_ops++] = (struct cr_op){ CR_FSYNC, "", NULL, 0,
						      0, 0 };
		w->ops[w->nr_ops++] = (struct cr_op){ CR_CLEAN, NULL, NULL, 0,
						      2, 0 };
		if (r % 2)
			w->ops[w->nr_ops++] = (struct cr_op){ CR_SYNC, NULL,
							      NULL, 0, 0, 0 };
	}
}

/* ------------------------------------------------------------------------
 * Many commits: the checkpoint log moves to its other zone
 * ------------------------------------------------------------------------ */

void cr_commit_workload(struct cr_workload *w, uint64_t seed, size_t n)
{
	uint64_t s = seed * 0x9e3779b97f4a7c15ULL + 13;

	cr_workload_new(w, 2 * n, seed);
	snprintf(w->name, sizeof(w->name), "commits-%" PRIu64, seed);
	for (size_t i = 0; i < n; i++) {
		struct cr_op o = { CR_WRITE, CR_PICK(cr_files, &s), NULL,
				   smr_test_rand(&s) % 30000,
				   1 + smr_test_rand(&s) % 300, 0 };

		if (i % 8 == 3)
			o.kind = CR_CREATE;
		else if (i % 8 == 7)
			o.kind = CR_UNLINK;
		w->ops[w->nr_ops++] = o;
		w->ops[w->nr_ops++] = cr_persist_op(&o, (int)(i % 3));
	}
}

/* ------------------------------------------------------------------------
 * fsync log: data and attribute changes of existing files between fsyncs
 * ------------------------------------------------------------------------ */

static const char *const cr_log_files[] = { "foo", "bar", "A/foo" };

void cr_fsync_workload(struct cr_workload *w, uint64_t seed, size_t n)
{
	uint64_t s = seed * 0x9e3779b97f4a7c15ULL + 29;
	size_t since = 0;

	cr_workload_new(w, 2 * n + 1, seed);
	snprintf(w->name, sizeof(w->name), "fsync-%" PRIu64, seed);
	for (size_t i = 0; i < n; i++) {
		struct cr_op o = { CR_WRITE, CR_PICK(cr_log_files, &s), NULL,
				   smr_test_rand(&s) % 60000,
				   1 + smr_test_rand(&s) % 9000, 0 };
		uint64_t r = smr_test_rand(&s) % 16;

		if (r < 2) {
			o.kind = CR_TRUNCATE;
			o.len = 0;
		} else if (r == 2) {
			o.kind = CR_FALLOC;
			o.mode = 0x03; /* FALLOC_FL_PUNCH_HOLE | KEEP_SIZE */
		} else if (r == 3) {
			o.kind = CR_CHMOD;
			o.mode = 0600 | (int)(smr_test_rand(&s) % 0100);
		} else if (r == 4) {
			o.kind = CR_WRITE;
			o.off = CR_APPEND;
		} else if (r == 5 && seed % 2) {
			/* A namespace change between fsyncs. */
			o.kind = smr_test_rand(&s) % 2 ? CR_CREATE : CR_RENAME;
			o.a = o.kind == CR_CREATE ? "baz" : "bar";
			o.b = "qux";
		}
		w->ops[w->nr_ops++] = o;
		if (++since >= 1 + smr_test_rand(&s) % 3) {
			struct cr_op f = { CR_FSYNC, CR_PICK(cr_log_files, &s),
					   NULL, 0, 0, 0 };

			/* Now and then a sync: a commit between records. */
			if (smr_test_rand(&s) % 9 == 0)
				f.kind = CR_SYNC;
			w->ops[w->nr_ops++] = f;
			since = 0;
		}
	}
	w->ops[w->nr_ops++] = (struct cr_op){ CR_FSYNC, "foo", NULL, 0, 0, 0 };
}

void cr_workload_free(struct cr_workload *w)
{
	free(w->ops);
	w->ops = NULL;
	w->nr_ops = 0;
}
