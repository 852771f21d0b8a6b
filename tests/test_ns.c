/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_ns.c - the namespace layer and its POSIX rules, with exact errno
 * values. Built twice: over the in-memory engine (tests/memcow.c) as
 * test_ns, and with NS_TEST_REAL over the real COW engine on a zoned loop
 * directory as test_ns_cow, which also checks persistence across close and
 * reopen.
 */
#include "testutil.h"

#include <endian.h>
#include <inttypes.h>
#include <limits.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cow/cow.h"
#include "format/ondisk.h"
#include "namespace/ns.h"
#ifdef NS_TEST_REAL
#include "dev/dev.h"
#include "dev/fault.h"
#else
#include "memcow.h"
#endif

#define ROOT SMR_NS_ROOT

static struct smr_cow *cow;
static struct smr_ns *ns;
#ifdef NS_TEST_REAL
static struct smr_dev *dev;
static char devpath[4096];
#endif

static const uint32_t user_groups[] = { 1000, 2000 };
static const struct smr_ns_cred root_cr = { .uid = 0 };
static const struct smr_ns_cred user_cr = {
	.uid = 1000, .gid = 1000, .groups = user_groups, .ngroups = 2
};
static const struct smr_ns_cred other_cr = { .uid = 1001, .gid = 1001 };

/* ------------------------------------------------------------------------
 * Fixture: a fresh filesystem per test
 * ------------------------------------------------------------------------ */

#ifdef NS_TEST_REAL
static int engine_open_opts(const struct smr_cow_opts *o)
{
	int rc = smr_dev_open(devpath, NULL, &dev);

	if (rc)
		return rc;
	rc = smr_cow_open(dev, o, &cow);
	if (rc) {
		smr_dev_close(dev);
		dev = NULL;
	}
	return rc;
}

static int engine_open(void)
{
	return engine_open_opts(NULL);
}

static void engine_close(void)
{
	SMR_ASSERT_OK(smr_cow_close(cow));
	SMR_ASSERT_OK(smr_dev_close(dev));
	cow = NULL;
	dev = NULL;
}

static int engine_new(void)
{
	struct smr_zloop_params p = {
		.capacity = 256 * SMR_MIB,
		.zone_size = 16 * SMR_MIB,
		.nr_cnv = 2,
	};
	static unsigned int n;
	int rc;

	snprintf(devpath, sizeof(devpath), "%s/z%u",
		 smr_test_tmpdir("ns"), n++);
	rc = smr_zloop_create(devpath, &p);
	if (rc)
		return rc;
	rc = smr_dev_open(devpath, NULL, &dev);
	if (rc)
		return rc;
	rc = smr_cow_format(dev, NULL, NULL);
	smr_dev_close(dev);
	dev = NULL;
	if (rc)
		return rc;
	return engine_open();
}
#else
static int engine_new(void)
{
	return memcow_create(64 * SMR_MIB, 4096, &cow);
}

static void engine_close(void)
{
	CU_ASSERT_EQUAL(memcow_nr_errors(cow), 0);
	smr_cow_close(cow);
	cow = NULL;
}
#endif

static void fs_setup(void)
{
	SMR_ASSERT_OK(engine_new());
	SMR_ASSERT_OK(smr_ns_mkfs(cow, &root_cr));
	SMR_ASSERT_OK(smr_ns_open(cow, NULL, &ns));
}

static void fs_teardown(void)
{
	uint64_t problems = 0;

	/* Every test leaves a namespace that passes the audit. */
	SMR_ASSERT_OK(smr_ns_check(ns, &problems));
	CU_ASSERT_EQUAL(problems, 0);
	smr_ns_close(ns);
	ns = NULL;
	engine_close();
}

#ifdef NS_TEST_REAL
/* Close and open the filesystem again with @o (NULL: the defaults), or
 * after a power cut: nothing written since the last commit or fsync
 * record is kept. */
static void fs_reopen(const struct smr_cow_opts *o, bool power_cut)
{
	smr_ns_close(ns);
	ns = NULL;
	if (power_cut) {
		smr_cow_close_discard(cow);
		SMR_ASSERT_OK(smr_dev_close(dev));
		cow = NULL;
		dev = NULL;
	} else {
		engine_close();
	}
	SMR_ASSERT_OK(engine_open_opts(o));
	SMR_ASSERT_OK(smr_ns_open(cow, NULL, &ns));
}
#endif

/* Make a file/dir, return its inode (0 on failure, with an assertion). */
static uint64_t mkfile(uint64_t dir, const char *name, uint32_t mode)
{
	struct smr_ns_attr a;
	int rc = smr_ns_mknod(ns, &root_cr, dir, name, S_IFREG | mode, 0, &a);

	SMR_ASSERT_OK(rc);
	return rc ? 0 : a.ino;
}

static uint64_t mkdir_(uint64_t dir, const char *name)
{
	struct smr_ns_attr a;
	int rc = smr_ns_mkdir(ns, &root_cr, dir, name, 0755, &a);

	SMR_ASSERT_OK(rc);
	return rc ? 0 : a.ino;
}

static uint32_t nlink_of(uint64_t ino)
{
	struct smr_ns_attr a;

	if (smr_ns_getattr(ns, ino, &a))
		return UINT32_MAX;
	return a.nlink;
}

/* Inodes in use, as statfs counts them. */
static uint64_t inodes_used(void)
{
	struct smr_ns_statfs st;

	SMR_ASSERT_OK(smr_ns_statfs(ns, &st));
	return st.files - st.ffree;
}

static void set_times(uint64_t ino, int64_t sec)
{
	struct smr_ns_setattr sa = {
		.valid = SMR_NS_SET_ATIME | SMR_NS_SET_MTIME | SMR_NS_SET_CTIME,
	};

	sa.atime.tv_sec = sa.mtime.tv_sec = sa.ctime.tv_sec = sec;
	SMR_ASSERT_OK(smr_ns_setattr(ns, &root_cr, ino, &sa, NULL));
}

static void fill_pattern(uint8_t *buf, size_t len, uint64_t seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 9));
}

/* ------------------------------------------------------------------------
 * Names
 * ------------------------------------------------------------------------ */

static void test_root(void)
{
	struct smr_ns_attr a;

	fs_setup();
	SMR_ASSERT_OK(smr_ns_getattr(ns, ROOT, &a));
	CU_ASSERT_EQUAL(a.mode, S_IFDIR | 0755);
	CU_ASSERT_EQUAL(a.nlink, 2);
	CU_ASSERT_EQUAL(a.ino, ROOT);
	SMR_ASSERT_RC(smr_ns_mkfs(cow, &root_cr), -EEXIST);
	SMR_ASSERT_RC(smr_ns_getattr(ns, 12345, &a), -ENOENT);
	SMR_ASSERT_RC(smr_ns_getattr(ns, 0, &a), -ENOENT);
	SMR_ASSERT_OK(smr_ns_lookup(ns, ROOT, "..", &a));
	CU_ASSERT_EQUAL(a.ino, ROOT);
	fs_teardown();
}

static void test_names(void)
{
	char name[300];
	struct smr_ns_attr a;
	uint64_t f;

	fs_setup();
	f = mkfile(ROOT, "f", 0644);
	SMR_ASSERT_OK(smr_ns_lookup(ns, ROOT, "f", &a));
	CU_ASSERT_EQUAL(a.ino, f);
	CU_ASSERT_EQUAL(a.mode, S_IFREG | 0644);
	CU_ASSERT_EQUAL(a.nlink, 1);
	SMR_ASSERT_RC(smr_ns_mknod(ns, &root_cr, ROOT, "f", S_IFREG, 0, &a),
		      -EEXIST);
	SMR_ASSERT_RC(smr_ns_mkdir(ns, &root_cr, ROOT, "f", 0755, &a),
		      -EEXIST);
	SMR_ASSERT_RC(smr_ns_mkdir(ns, &root_cr, ROOT, ".", 0755, &a),
		      -EEXIST);
	SMR_ASSERT_RC(smr_ns_lookup(ns, ROOT, "g", &a), -ENOENT);
	SMR_ASSERT_RC(smr_ns_lookup(ns, f, "g", &a), -ENOTDIR);
	SMR_ASSERT_RC(smr_ns_mknod(ns, &root_cr, f, "g", S_IFREG, 0, &a),
		      -ENOTDIR);
	SMR_ASSERT_RC(smr_ns_mknod(ns, &root_cr, ROOT, "a/b", S_IFREG, 0, &a),
		      -EINVAL);
	SMR_ASSERT_RC(smr_ns_mknod(ns, &root_cr, ROOT, "d", S_IFDIR, 0, &a),
		      -EINVAL);
	memset(name, 'n', sizeof(name));
	name[256] = 0;
	SMR_ASSERT_RC(smr_ns_mknod(ns, &root_cr, ROOT, name, S_IFREG, 0, &a),
		      -ENAMETOOLONG);
	SMR_ASSERT_RC(smr_ns_lookup(ns, ROOT, name, &a), -ENAMETOOLONG);
	name[255] = 0;
	SMR_ASSERT_OK(smr_ns_mknod(ns, &root_cr, ROOT, name, S_IFREG, 0, &a));
	SMR_ASSERT_OK(smr_ns_lookup(ns, ROOT, name, &a));
	/* The name hash is part of the format: images made before must still
	 * find their names. */
	CU_ASSERT_EQUAL(smr_ns_name_hash("lost+found", 10),
			0xb3903888cb367e1eULL);

	/* Special files keep their type and device number. */
	SMR_ASSERT_OK(smr_ns_mknod(ns, &root_cr, ROOT, "fifo", S_IFIFO | 0600,
				   0, &a));
	CU_ASSERT_EQUAL(a.mode, S_IFIFO | 0600);
	SMR_ASSERT_OK(smr_ns_mknod(ns, &root_cr, ROOT, "sock", S_IFSOCK | 0600,
				   0, &a));
	CU_ASSERT_EQUAL(a.mode, S_IFSOCK | 0600);
	SMR_ASSERT_OK(smr_ns_mknod(ns, &root_cr, ROOT, "chr", S_IFCHR | 0600,
				   0x0103, &a));
	SMR_ASSERT_OK(smr_ns_lookup(ns, ROOT, "chr", &a));
	CU_ASSERT_EQUAL(a.mode, S_IFCHR | 0600);
	CU_ASSERT_EQUAL(a.rdev, 0x0103);
	SMR_ASSERT_RC(smr_ns_read(ns, a.ino, 0, 1, name), -EINVAL);
	fs_teardown();
}

struct collect {
	char (*names)[256];
	uint64_t *cookies;
	size_t n, max, stop_after;
};

static int collect_fill(void *arg, const char *name, size_t namelen,
			uint64_t ino, uint32_t dtype, uint64_t next)
{
	struct collect *c = arg;

	if (c->stop_after && c->n == c->stop_after)
		return 1;
	if (c->n >= c->max)
		return -ENOSPC;
	memcpy(c->names[c->n], name, namelen + 1);
	c->cookies[c->n] = next;
	c->n++;
	return 0;
}

static int name_count(struct collect *c, const char *name)
{
	int k = 0;

	for (size_t i = 0; i < c->n; i++)
		k += !strcmp(c->names[i], name);
	return k;
}

static void test_readdir(void)
{
	enum { N = 600 };
	struct collect c = { .max = 2 * N + 10 };
	struct smr_ns_attr a;
	char name[64];
	uint64_t cookie;
	size_t first;

	c.names = calloc(c.max, sizeof(*c.names));
	c.cookies = calloc(c.max, sizeof(*c.cookies));
	fs_setup();
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "file-%04d", i);
		mkfile(ROOT, name, 0644);
	}
	SMR_ASSERT_OK(smr_ns_opendir(ns, ROOT));
	SMR_ASSERT_OK(smr_ns_readdir(ns, ROOT, 0, collect_fill, &c));
	CU_ASSERT_EQUAL(c.n, N + 2);
	CU_ASSERT_STRING_EQUAL(c.names[0], ".");
	CU_ASSERT_STRING_EQUAL(c.names[1], "..");
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "file-%04d", i);
		CU_ASSERT_EQUAL(name_count(&c, name), 1);
		SMR_ASSERT_OK(smr_ns_lookup(ns, ROOT, name, &a));
	}

	/* Stop half way, change the directory, go on from the cookie:
	 * entries not touched come exactly once, removed ones never again. */
	c.n = 0;
	c.stop_after = N / 2;
	SMR_ASSERT_OK(smr_ns_readdir(ns, ROOT, 0, collect_fill, &c));
	CU_ASSERT_EQUAL(c.n, N / 2);
	first = c.n;
	cookie = c.cookies[c.n - 1];
	for (int i = 0; i < N; i += 3) {
		snprintf(name, sizeof(name), "file-%04d", i);
		SMR_ASSERT_OK(smr_ns_unlink(ns, &root_cr, ROOT, name));
	}
	for (int i = 0; i < 50; i++) {
		snprintf(name, sizeof(name), "new-%04d", i);
		mkfile(ROOT, name, 0644);
	}
	c.stop_after = 0;
	SMR_ASSERT_OK(smr_ns_readdir(ns, ROOT, cookie, collect_fill, &c));
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "file-%04d", i);
		if (i % 3) {
			CU_ASSERT_EQUAL(name_count(&c, name), 1);
		} else {
			CU_ASSERT(name_count(&c, name) <= 1);
		}
	}
	for (size_t i = first; i < c.n; i++)
		CU_ASSERT(strncmp(c.names[i], "file-", 5) ||
			  atoi(c.names[i] + 5) % 3);
	for (int i = 0; i < 50; i++) {
		snprintf(name, sizeof(name), "new-%04d", i);
		CU_ASSERT_EQUAL(name_count(&c, name), 1);
	}
	SMR_ASSERT_RC(smr_ns_opendir(ns, mkfile(ROOT, "plain", 0644)),
		      -ENOTDIR);
	fs_teardown();
	free(c.names);
	free(c.cookies);
}

/* What smr_ns_readdir_plus() handed over: names, inodes, sizes. */
struct collect_plus {
	struct collect c;
	uint64_t *inos, *sizes;
	size_t bare; /* entries without attributes */
};

static int collect_plus_fill(void *arg, const char *name, size_t namelen,
			     uint64_t ino, uint32_t dtype,
			     const struct smr_ns_attr *attr, uint64_t next)
{
	struct collect_plus *p = arg;
	size_t n = p->c.n;
	int rc = collect_fill(&p->c, name, namelen, ino, dtype, next);

	if (rc)
		return rc;
	p->inos[n] = attr ? attr->ino : 0;
	p->sizes[n] = attr ? attr->size : UINT64_MAX;
	p->bare += !attr;
	return 0;
}

/*
 * READDIRPLUS: every entry with its attributes, across the batches the
 * namespace reads the tree in, continued from any cookie; each entry the
 * caller took counts a kernel lookup (so the inode outlives its unlink
 * until forgotten), and none it did not take.
 */
static void test_readdir_plus(void)
{
	enum { N = 150, STOP = 100 };
	struct smr_ns_opts o = { .track_lookups = true };
	struct collect_plus p = { .c = { .max = N + 2 } };
	struct smr_ns_attr a;
	uint64_t ino[N];
	char name[64];

	p.c.names = calloc(p.c.max, sizeof(*p.c.names));
	p.c.cookies = calloc(p.c.max, sizeof(*p.c.cookies));
	p.inos = calloc(p.c.max, sizeof(*p.inos));
	p.sizes = calloc(p.c.max, sizeof(*p.sizes));
	fs_setup();
	smr_ns_close(ns);
	SMR_ASSERT_OK(smr_ns_open(cow, &o, &ns));
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "file-%04d", i);
		SMR_ASSERT_OK(smr_ns_mknod(ns, &root_cr, ROOT, name,
					   S_IFREG | 0644, 0, &a));
		ino[i] = a.ino;
		CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, a.ino, 0, name,
					     (size_t)i % 9), i % 9);
		smr_ns_forget(ns, a.ino, 1); /* the create's lookup */
	}

	/* Stop after STOP entries, past the first batch, and go on. */
	p.c.stop_after = STOP;
	SMR_ASSERT_OK(smr_ns_readdir_plus(ns, ROOT, 0, collect_plus_fill, &p));
	CU_ASSERT_EQUAL(p.c.n, STOP);
	p.c.stop_after = 0;
	SMR_ASSERT_OK(smr_ns_readdir_plus(ns, ROOT, p.c.cookies[STOP - 1],
					  collect_plus_fill, &p));
	CU_ASSERT_EQUAL(p.c.n, N + 2);
	CU_ASSERT_EQUAL(p.bare, 2); /* "." and ".." */
	for (int i = 0; i < N; i++) {
		size_t k;

		snprintf(name, sizeof(name), "file-%04d", i);
		CU_ASSERT_EQUAL(name_count(&p.c, name), 1);
		for (k = 0; k < p.c.n && strcmp(p.c.names[k], name); k++)
			;
		if (k == p.c.n)
			continue;
		CU_ASSERT_EQUAL(p.inos[k], ino[i]);
		CU_ASSERT_EQUAL(p.sizes[k], (uint64_t)(i % 9));
	}

	/* Every entry taken holds its inode past the unlink until the
	 * kernel forgets it. The entry refused at the stop counted none:
	 * one more walk that takes nothing shows it. */
	p.c.n = 0;
	p.c.stop_after = 0;
	p.c.max = 0; /* refuses the first entry (-ENOSPC) */
	SMR_ASSERT_RC(smr_ns_readdir_plus(ns, ROOT, 2, collect_plus_fill, &p),
		      -ENOSPC);
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "file-%04d", i);
		SMR_ASSERT_OK(smr_ns_unlink(ns, &root_cr, ROOT, name));
		SMR_ASSERT_OK(smr_ns_getattr(ns, ino[i], &a));
		smr_ns_forget(ns, ino[i], 1);
		SMR_ASSERT_RC(smr_ns_getattr(ns, ino[i], &a), -ENOENT);
	}
	SMR_ASSERT_RC(smr_ns_readdir_plus(ns, mkfile(ROOT, "plain", 0644), 0,
					  collect_plus_fill, &p),
		      -ENOTDIR);
	fs_teardown();
	free(p.c.names);
	free(p.c.cookies);
	free(p.inos);
	free(p.sizes);
}

static void test_dirs(void)
{
	struct smr_ns_attr a;
	uint64_t d, e;

	fs_setup();
	set_times(ROOT, 1000);
	d = mkdir_(ROOT, "d");
	SMR_ASSERT_OK(smr_ns_getattr(ns, ROOT, &a));
	CU_ASSERT_EQUAL(a.nlink, 3);
	CU_ASSERT(a.mtime.tv_sec > 1000 && a.ctime.tv_sec > 1000);
	CU_ASSERT_EQUAL(nlink_of(d), 2);
	e = mkdir_(d, "e");
	CU_ASSERT_EQUAL(nlink_of(d), 3);
	SMR_ASSERT_OK(smr_ns_lookup(ns, e, "..", &a));
	CU_ASSERT_EQUAL(a.ino, d);
	mkfile(e, "f", 0644);
	SMR_ASSERT_RC(smr_ns_rmdir(ns, &root_cr, ROOT, "d"), -ENOTEMPTY);
	SMR_ASSERT_RC(smr_ns_rmdir(ns, &root_cr, e, "f"), -ENOTDIR);
	SMR_ASSERT_RC(smr_ns_unlink(ns, &root_cr, d, "e"), -EISDIR);
	SMR_ASSERT_RC(smr_ns_rmdir(ns, &root_cr, d, "."), -EINVAL);
	SMR_ASSERT_RC(smr_ns_rmdir(ns, &root_cr, d, ".."), -ENOTEMPTY);
	SMR_ASSERT_RC(smr_ns_rmdir(ns, &root_cr, d, "nope"), -ENOENT);
	SMR_ASSERT_OK(smr_ns_unlink(ns, &root_cr, e, "f"));
	SMR_ASSERT_OK(smr_ns_rmdir(ns, &root_cr, d, "e"));
	CU_ASSERT_EQUAL(nlink_of(d), 2);
	SMR_ASSERT_RC(smr_ns_getattr(ns, e, &a), -ENOENT);
	SMR_ASSERT_OK(smr_ns_rmdir(ns, &root_cr, ROOT, "d"));
	CU_ASSERT_EQUAL(nlink_of(ROOT), 2);
	fs_teardown();
}

static void test_links(void)
{
	struct smr_ns_attr a;
	uint8_t buf[16];
	uint64_t f, d;

	fs_setup();
	f = mkfile(ROOT, "f", 0644);
	d = mkdir_(ROOT, "d");
	CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f, 0, "hello", 5), 5);
	set_times(f, 1000);
	SMR_ASSERT_OK(smr_ns_link(ns, f, d, "g", &a));
	CU_ASSERT_EQUAL(a.nlink, 2);
	CU_ASSERT(a.ctime.tv_sec > 1000);
	SMR_ASSERT_RC(smr_ns_link(ns, f, d, "g", &a), -EEXIST);
	SMR_ASSERT_RC(smr_ns_link(ns, d, ROOT, "d2", &a), -EPERM);
	SMR_ASSERT_RC(smr_ns_link(ns, f, f, "x", &a), -ENOTDIR);
	SMR_ASSERT_OK(smr_ns_unlink(ns, &root_cr, ROOT, "f"));
	CU_ASSERT_EQUAL(nlink_of(f), 1);
	CU_ASSERT_EQUAL(smr_ns_read(ns, f, 0, sizeof(buf), buf), 5);
	CU_ASSERT(!memcmp(buf, "hello", 5));
	SMR_ASSERT_OK(smr_ns_unlink(ns, &root_cr, d, "g"));
	SMR_ASSERT_RC(smr_ns_getattr(ns, f, &a), -ENOENT);
	SMR_ASSERT_RC(smr_ns_unlink(ns, &root_cr, d, "g"), -ENOENT);
	fs_teardown();
}

static void test_symlinks(void)
{
	char target[4100], out[4100];
	struct smr_ns_attr a;

	fs_setup();
	SMR_ASSERT_OK(smr_ns_symlink(ns, &root_cr, ROOT, "s", "some/where",
				     &a));
	CU_ASSERT_EQUAL(a.mode, S_IFLNK | 0777);
	CU_ASSERT_EQUAL(a.size, 10);
	CU_ASSERT_EQUAL(smr_ns_readlink(ns, a.ino, out, sizeof(out)), 10);
	CU_ASSERT(!memcmp(out, "some/where", 10));
	CU_ASSERT_EQUAL(smr_ns_readlink(ns, a.ino, out, 4), 10);
	CU_ASSERT(!memcmp(out, "some", 4));
	for (int i = 0; i < 4095; i++)
		target[i] = 'a' + i % 26;
	target[4095] = 0;
	SMR_ASSERT_OK(smr_ns_symlink(ns, &root_cr, ROOT, "long", target, &a));
	memset(out, 0, sizeof(out));
	CU_ASSERT_EQUAL(smr_ns_readlink(ns, a.ino, out, sizeof(out)), 4095);
	CU_ASSERT(!memcmp(out, target, 4095));
	target[4095] = 'x';
	target[4096] = 0;
	SMR_ASSERT_RC(smr_ns_symlink(ns, &root_cr, ROOT, "toolong", target,
				     &a),
		      -ENAMETOOLONG);
	SMR_ASSERT_RC(smr_ns_symlink(ns, &root_cr, ROOT, "empty", "", &a),
		      -ENOENT);
	SMR_ASSERT_RC(smr_ns_symlink(ns, &root_cr, ROOT, "s", "x", &a),
		      -EEXIST);
	SMR_ASSERT_RC(smr_ns_readlink(ns, ROOT, out, sizeof(out)), -EINVAL);
	SMR_ASSERT_OK(smr_ns_unlink(ns, &root_cr, ROOT, "long"));
	fs_teardown();
}

static void test_rename(void)
{
	struct smr_ns_attr a;
	uint64_t a1, b1, d1, d2, d3, sub;

	fs_setup();
	a1 = mkfile(ROOT, "a", 0644);
	b1 = mkfile(ROOT, "b", 0644);
	d1 = mkdir_(ROOT, "d1");
	d2 = mkdir_(ROOT, "d2");
	sub = mkdir_(d1, "sub");
	d3 = mkdir_(ROOT, "d3");
	mkfile(d3, "x", 0644);

	/* Flags and missing names. */
	SMR_ASSERT_RC(smr_ns_rename(ns, &root_cr, ROOT, "a", ROOT, "c", 8),
		      -EINVAL);
	SMR_ASSERT_RC(smr_ns_rename(ns, &root_cr, ROOT, "a", ROOT, "b",
				    SMR_NS_RENAME_WHITEOUT |
					    SMR_NS_RENAME_EXCHANGE),
		      -EINVAL);
	SMR_ASSERT_RC(smr_ns_rename(ns, &root_cr, ROOT, "a", ROOT, "b",
				    SMR_NS_RENAME_NOREPLACE |
					    SMR_NS_RENAME_EXCHANGE),
		      -EINVAL);
	SMR_ASSERT_RC(smr_ns_rename(ns, &root_cr, ROOT, "zz", ROOT, "c", 0),
		      -ENOENT);
	SMR_ASSERT_RC(smr_ns_rename(ns, &root_cr, ROOT, "a", ROOT, "zz",
				    SMR_NS_RENAME_EXCHANGE),
		      -ENOENT);
	SMR_ASSERT_RC(smr_ns_rename(ns, &root_cr, ROOT, "a", ROOT, "b",
				    SMR_NS_RENAME_NOREPLACE),
		      -EEXIST);
	/* Type conflicts. */
	SMR_ASSERT_RC(smr_ns_rename(ns, &root_cr, ROOT, "d1", ROOT, "a", 0),
		      -ENOTDIR);
	SMR_ASSERT_RC(smr_ns_rename(ns, &root_cr, ROOT, "a", ROOT, "d2", 0),
		      -EISDIR);
	SMR_ASSERT_RC(smr_ns_rename(ns, &root_cr, ROOT, "d1", ROOT, "d3", 0),
		      -ENOTEMPTY);
	/* Into its own subtree. */
	SMR_ASSERT_RC(smr_ns_rename(ns, &root_cr, ROOT, "d1", sub, "x", 0),
		      -EINVAL);
	SMR_ASSERT_RC(smr_ns_rename(ns, &root_cr, ROOT, "d1", d1, "x", 0),
		      -EINVAL);

	/* Replace a file: the old target goes. */
	SMR_ASSERT_OK(smr_ns_rename(ns, &root_cr, ROOT, "a", ROOT, "b", 0));
	SMR_ASSERT_OK(smr_ns_lookup(ns, ROOT, "b", &a));
	CU_ASSERT_EQUAL(a.ino, a1);
	SMR_ASSERT_RC(smr_ns_lookup(ns, ROOT, "a", &a), -ENOENT);
	SMR_ASSERT_RC(smr_ns_getattr(ns, b1, &a), -ENOENT);

	/* Move a directory over an empty one in another parent. */
	CU_ASSERT_EQUAL(nlink_of(ROOT), 5);
	SMR_ASSERT_OK(smr_ns_rename(ns, &root_cr, d1, "sub", d2, "s2", 0));
	CU_ASSERT_EQUAL(nlink_of(d1), 2);
	CU_ASSERT_EQUAL(nlink_of(d2), 3);
	SMR_ASSERT_OK(smr_ns_lookup(ns, sub, "..", &a));
	CU_ASSERT_EQUAL(a.ino, d2);
	SMR_ASSERT_OK(smr_ns_rename(ns, &root_cr, ROOT, "d1", d2, "s2", 0));
	CU_ASSERT_EQUAL(nlink_of(ROOT), 4);
	CU_ASSERT_EQUAL(nlink_of(d2), 3);
	SMR_ASSERT_RC(smr_ns_getattr(ns, sub, &a), -ENOENT);

	/* Exchange a file and a directory across parents. */
	mkfile(ROOT, "f", 0644);
	SMR_ASSERT_OK(smr_ns_rename(ns, &root_cr, ROOT, "f", d2, "s2",
				    SMR_NS_RENAME_EXCHANGE));
	SMR_ASSERT_OK(smr_ns_lookup(ns, ROOT, "f", &a));
	CU_ASSERT_EQUAL(a.ino, d1);
	CU_ASSERT(S_ISDIR(a.mode));
	SMR_ASSERT_OK(smr_ns_lookup(ns, d2, "s2", &a));
	CU_ASSERT(S_ISREG(a.mode));
	CU_ASSERT_EQUAL(nlink_of(d2), 2);
	CU_ASSERT_EQUAL(nlink_of(ROOT), 5);
	SMR_ASSERT_OK(smr_ns_lookup(ns, d1, "..", &a));
	CU_ASSERT_EQUAL(a.ino, ROOT);

	/* Onto another link of the same inode: nothing happens. */
	SMR_ASSERT_OK(smr_ns_link(ns, a1, ROOT, "b2", &a));
	SMR_ASSERT_OK(smr_ns_rename(ns, &root_cr, ROOT, "b", ROOT, "b2", 0));
	SMR_ASSERT_OK(smr_ns_lookup(ns, ROOT, "b", &a));
	SMR_ASSERT_OK(smr_ns_lookup(ns, ROOT, "b2", &a));
	CU_ASSERT_EQUAL(a.nlink, 2);
	/* Same name: nothing. */
	SMR_ASSERT_OK(smr_ns_rename(ns, &root_cr, ROOT, "b", ROOT, "b", 0));
	SMR_ASSERT_OK(smr_ns_lookup(ns, ROOT, "b", &a));
	fs_teardown();
}

/*
 * RENAME_WHITEOUT, as an overlay filesystem's upper layer gets it: the old
 * name names a whiteout (a character device 0:0 of mode 0, the caller's,
 * with a setgid directory's group) made in the same call.
 */
static void test_rename_whiteout(void)
{
	struct smr_ns_cred cr = { .uid = 1001, .gid = 1001 };
	struct smr_ns_setattr sa = { .valid = SMR_NS_SET_MODE |
					      SMR_NS_SET_GID,
				     .mode = 02777, .gid = 500 };
	struct smr_ns_attr a;
	uint64_t d, f, sd, used;

	fs_setup();
	d = mkdir_(ROOT, "d");
	SMR_ASSERT_OK(smr_ns_setattr(ns, &root_cr, d, &sa, NULL));
	f = mkfile(d, "f", 0644);
	sd = mkdir_(d, "sd");
	mkfile(ROOT, "taken", 0644);
	used = inodes_used();

	/* Refused: nothing made. */
	SMR_ASSERT_RC(smr_ns_rename(ns, &cr, d, "f", ROOT, "taken",
				    SMR_NS_RENAME_WHITEOUT |
					    SMR_NS_RENAME_NOREPLACE),
		      -EEXIST);
	SMR_ASSERT_RC(smr_ns_rename(ns, &cr, d, "none", ROOT, "x",
				    SMR_NS_RENAME_WHITEOUT),
		      -ENOENT);
	CU_ASSERT_EQUAL(inodes_used(), used);

	/* A file, out of the directory. */
	SMR_ASSERT_OK(smr_ns_rename(ns, &cr, d, "f", ROOT, "f",
				    SMR_NS_RENAME_WHITEOUT));
	SMR_ASSERT_OK(smr_ns_lookup(ns, ROOT, "f", &a));
	CU_ASSERT_EQUAL(a.ino, f);
	SMR_ASSERT_OK(smr_ns_lookup(ns, d, "f", &a));
	CU_ASSERT_NOT_EQUAL(a.ino, f);
	CU_ASSERT_EQUAL(a.mode, S_IFCHR);
	CU_ASSERT_EQUAL(a.rdev, 0);
	CU_ASSERT_EQUAL(a.nlink, 1);
	CU_ASSERT_EQUAL(a.uid, 1001);
	CU_ASSERT_EQUAL(a.gid, 500);
	CU_ASSERT_EQUAL(inodes_used(), used + 1);

	/* A directory, within the directory, over a file. */
	SMR_ASSERT_OK(smr_ns_rename(ns, &cr, d, "sd", d, "sd2",
				    SMR_NS_RENAME_WHITEOUT));
	SMR_ASSERT_OK(smr_ns_lookup(ns, d, "sd2", &a));
	CU_ASSERT_EQUAL(a.ino, sd);
	SMR_ASSERT_OK(smr_ns_lookup(ns, d, "sd", &a));
	CU_ASSERT_EQUAL(a.mode, S_IFCHR);
	CU_ASSERT_EQUAL(nlink_of(d), 3);
	SMR_ASSERT_OK(smr_ns_rename(ns, &cr, ROOT, "f", ROOT, "taken",
				    SMR_NS_RENAME_WHITEOUT));
	SMR_ASSERT_OK(smr_ns_lookup(ns, ROOT, "f", &a));
	CU_ASSERT_EQUAL(a.mode, S_IFCHR);
	SMR_ASSERT_OK(smr_ns_lookup(ns, ROOT, "taken", &a));
	CU_ASSERT_EQUAL(a.ino, f);
	/* Three whiteouts came, the file the rename replaced went. */
	CU_ASSERT_EQUAL(inodes_used(), used + 2);

	/* A whiteout goes like any name. */
	SMR_ASSERT_OK(smr_ns_unlink(ns, &root_cr, d, "f"));
	CU_ASSERT_EQUAL(inodes_used(), used + 1);
	fs_teardown();
}

/* ------------------------------------------------------------------------
 * Data
 * ------------------------------------------------------------------------ */

static void check_file(uint64_t ino, const uint8_t *shadow, uint64_t size)
{
	uint8_t *buf = malloc(size + 8192);
	ssize_t n;

	n = smr_ns_read(ns, ino, 0, size + 8192, buf);
	CU_ASSERT_EQUAL(n, (ssize_t)size);
	if (n == (ssize_t)size)
		CU_ASSERT(!memcmp(buf, shadow, size));
	free(buf);
}

static void test_read_write(void)
{
	enum { MAX = 3 * 1024 * 1024 };
	uint8_t *shadow = calloc(1, MAX), *buf = malloc(MAX);
	struct smr_cow_space sp0, sp1;
	struct smr_ns_attr a;
	uint64_t rnd = 42, size = 0, f;

	fs_setup();
	smr_cow_space(cow, &sp0);
	f = mkfile(ROOT, "f", 0644);
	/* Unaligned pieces, holes, a write bigger than one extent. */
	fill_pattern(buf, MAX, 1);
	CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f, 100, buf, 5000), 5000);
	memcpy(shadow + 100, buf, 5000);
	size = 5100;
	CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f, 20000, buf, 3), 3);
	memcpy(shadow + 20000, buf, 3);
	size = 20003;
	check_file(f, shadow, size);
	CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f, 8191, buf + 7,
				     1500000), 1500000);
	memcpy(shadow + 8191, buf + 7, 1500000);
	size = 8191 + 1500000;
	check_file(f, shadow, size);
	SMR_ASSERT_OK(smr_ns_getattr(ns, f, &a));
	CU_ASSERT_EQUAL(a.size, size);
	CU_ASSERT(a.blocks * 512 >= 1500000);

	/* Random overwrites and truncates against a shadow copy. */
	for (int i = 0; i < 200; i++) {
		uint64_t op = smr_test_rand(&rnd) % 10;
		uint64_t off = smr_test_rand(&rnd) % (MAX - 70000);
		uint64_t len = 1 + smr_test_rand(&rnd) % 70000;

		if (op == 0) {
			struct smr_ns_setattr sa = { .valid = SMR_NS_SET_SIZE,
						     .size = off };

			SMR_ASSERT_OK(smr_ns_setattr(ns, &root_cr, f, &sa,
						     &a));
			if (off < size)
				memset(shadow + off, 0, size - off);
			size = off;
			continue;
		}
		fill_pattern(buf, len, i + 2);
		CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f, off, buf, len),
				(ssize_t)len);
		memcpy(shadow + off, buf, len);
		if (off + len > size)
			size = off + len;
		if (i % 20 == 0)
			SMR_ASSERT_OK(smr_ns_fsync(ns, f, false));
	}
	check_file(f, shadow, size);
	/* Reads inside: every offset and length hit the shadow. */
	for (int i = 0; i < 100; i++) {
		uint64_t off = smr_test_rand(&rnd) % (size + 10);
		uint64_t len = smr_test_rand(&rnd) % 20000;
		ssize_t want = off >= size ? 0 :
				(ssize_t)SMR_MIN(len, size - off);

		CU_ASSERT_EQUAL(smr_ns_read(ns, f, off, len, buf), want);
		if (want > 0)
			CU_ASSERT(!memcmp(buf, shadow + off, want));
	}

	/* Unlinking gives every block back after a commit. */
	SMR_ASSERT_OK(smr_ns_unlink(ns, &root_cr, ROOT, "f"));
	SMR_ASSERT_OK(smr_ns_sync(ns));
	smr_cow_space(cow, &sp1);
#ifndef NS_TEST_REAL
	CU_ASSERT_EQUAL(sp1.used, sp0.used);
	CU_ASSERT_EQUAL(sp1.free, sp0.free);
#endif
	SMR_ASSERT_RC(smr_ns_write(ns, &root_cr, ROOT, 0, "x", 1), -EISDIR);
	SMR_ASSERT_RC(smr_ns_read(ns, ROOT, 0, 1, buf), -EISDIR);
	fs_teardown();
	free(shadow);
	free(buf);
}

static void test_large_offsets(void)
{
	const uint64_t big = 5 * SMR_GIB + 123;
	struct smr_ns_attr a;
	uint8_t buf[300];
	uint64_t f, r;

	fs_setup();
	f = mkfile(ROOT, "big", 0644);
	CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f, big, "tail", 4), 4);
	SMR_ASSERT_OK(smr_ns_getattr(ns, f, &a));
	CU_ASSERT_EQUAL(a.size, big + 4);
	CU_ASSERT_EQUAL(a.blocks, 4096 / 512);
	CU_ASSERT_EQUAL(smr_ns_read(ns, f, big - 100, sizeof(buf), buf), 104);
	for (int i = 0; i < 100; i++)
		CU_ASSERT_EQUAL(buf[i], 0);
	CU_ASSERT(!memcmp(buf + 100, "tail", 4));
	SMR_ASSERT_OK(smr_ns_lseek(ns, f, 0, SEEK_DATA, &r));
	CU_ASSERT_EQUAL(r, SMR_ROUND_DOWN(big, 4096));
	SMR_ASSERT_OK(smr_ns_lseek(ns, f, 0, SEEK_HOLE, &r));
	CU_ASSERT_EQUAL(r, 0);
	SMR_ASSERT_RC(smr_ns_write(ns, &root_cr, f, (uint64_t)INT64_MAX, "x",
				   1),
		      -EFBIG);
	fs_teardown();
}

static void test_truncate(void)
{
	uint8_t buf[8192], zero[8192] = { 0 };
	struct smr_ns_setattr sa = { .valid = SMR_NS_SET_SIZE };
	struct smr_ns_attr a;
	uint64_t f, d;

	fs_setup();
	f = mkfile(ROOT, "f", 0644);
	fill_pattern(buf, sizeof(buf), 3);
	CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f, 0, buf, 8192), 8192);
	set_times(f, 1000);
	sa.size = 5000;
	SMR_ASSERT_OK(smr_ns_setattr(ns, &root_cr, f, &sa, &a));
	CU_ASSERT_EQUAL(a.size, 5000);
	CU_ASSERT(a.mtime.tv_sec > 1000 && a.ctime.tv_sec > 1000);
	CU_ASSERT_EQUAL(a.blocks, 8192 / 512); /* 5000 > one block */
	sa.size = 10000;
	SMR_ASSERT_OK(smr_ns_setattr(ns, &root_cr, f, &sa, &a));
	CU_ASSERT_EQUAL(smr_ns_read(ns, f, 0, sizeof(buf), buf), 8192);
	fill_pattern(zero, 5000, 3);
	CU_ASSERT(!memcmp(buf, zero, 5000));
	memset(zero, 0, sizeof(zero));
	CU_ASSERT(!memcmp(buf + 5000, zero, 8192 - 5000));
	sa.size = 0;
	SMR_ASSERT_OK(smr_ns_setattr(ns, &root_cr, f, &sa, &a));
	CU_ASSERT_EQUAL(a.blocks, 0);
	d = mkdir_(ROOT, "d");
	SMR_ASSERT_RC(smr_ns_setattr(ns, &root_cr, d, &sa, &a), -EISDIR);
	SMR_ASSERT_OK(smr_ns_mknod(ns, &root_cr, ROOT, "p", S_IFIFO | 0644, 0,
				   &a));
	SMR_ASSERT_RC(smr_ns_setattr(ns, &root_cr, a.ino, &sa, &a), -EINVAL);
	sa.size = (uint64_t)INT64_MAX + 1;
	SMR_ASSERT_RC(smr_ns_setattr(ns, &root_cr, f, &sa, &a), -EFBIG);
	fs_teardown();
}

#define PUNCH_KEEP (SMR_NS_FALLOC_PUNCH_HOLE | SMR_NS_FALLOC_KEEP_SIZE)

static void test_fallocate_lseek(void)
{
	uint8_t buf[5 * 4096], want[5 * 4096];
	struct smr_ns_setattr sa = { 0 };
	struct smr_ns_attr a;
	uint64_t f, r;

	fs_setup();
	f = mkfile(ROOT, "f", 0644);
	/* No space can be reserved for copy-on-write: only punching is
	 * honoured, and a refused mode changes nothing. */
	SMR_ASSERT_RC(smr_ns_fallocate(ns, f, 0, 0, 10000), -EOPNOTSUPP);
	SMR_ASSERT_RC(smr_ns_fallocate(ns, f, SMR_NS_FALLOC_KEEP_SIZE, 0,
				       50000), -EOPNOTSUPP);
	SMR_ASSERT_OK(smr_ns_getattr(ns, f, &a));
	CU_ASSERT_EQUAL(a.size, 0);
	CU_ASSERT_EQUAL(a.blocks, 0);
	SMR_ASSERT_RC(smr_ns_fallocate(ns, f, SMR_NS_FALLOC_PUNCH_HOLE, 0, 1),
		      -EOPNOTSUPP);
	SMR_ASSERT_RC(smr_ns_fallocate(ns, f, SMR_NS_FALLOC_ZERO_RANGE |
				       SMR_NS_FALLOC_PUNCH_HOLE, 0, 1),
		      -EOPNOTSUPP);
	SMR_ASSERT_RC(smr_ns_fallocate(ns, f, 0x20, 0, 1), -EOPNOTSUPP);
	SMR_ASSERT_RC(smr_ns_fallocate(ns, f, PUNCH_KEEP, 0, 0), -EINVAL);
	SMR_ASSERT_RC(smr_ns_fallocate(ns, ROOT, PUNCH_KEEP, 0, 1), -EISDIR);
	/* Punching past the end neither grows the file nor fails. */
	SMR_ASSERT_OK(smr_ns_fallocate(ns, f, PUNCH_KEEP, 0, 10000));
	SMR_ASSERT_OK(smr_ns_getattr(ns, f, &a));
	CU_ASSERT_EQUAL(a.size, 0);

	fill_pattern(want, sizeof(want), 9);
	CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f, 0, want, sizeof(want)),
			(ssize_t)sizeof(want));
	/* Punch [1000, 13000): zeros there, whole blocks 1 and 2 dropped. */
	SMR_ASSERT_OK(smr_ns_fallocate(ns, f, PUNCH_KEEP, 1000, 12000));
	memset(want + 1000, 0, 12000);
	CU_ASSERT_EQUAL(smr_ns_read(ns, f, 0, sizeof(buf), buf),
			(ssize_t)sizeof(buf));
	CU_ASSERT(!memcmp(buf, want, sizeof(buf)));
	SMR_ASSERT_OK(smr_ns_getattr(ns, f, &a));
	CU_ASSERT_EQUAL(a.size, sizeof(buf));
	CU_ASSERT_EQUAL(a.blocks, 3 * 4096 / 512);

	SMR_ASSERT_OK(smr_ns_lseek(ns, f, 0, SEEK_DATA, &r));
	CU_ASSERT_EQUAL(r, 0);
	SMR_ASSERT_OK(smr_ns_lseek(ns, f, 0, SEEK_HOLE, &r));
	CU_ASSERT_EQUAL(r, 4096);
	SMR_ASSERT_OK(smr_ns_lseek(ns, f, 5000, SEEK_DATA, &r));
	CU_ASSERT_EQUAL(r, 3 * 4096);
	SMR_ASSERT_OK(smr_ns_lseek(ns, f, 3 * 4096, SEEK_HOLE, &r));
	CU_ASSERT_EQUAL(r, sizeof(buf));
	SMR_ASSERT_RC(smr_ns_lseek(ns, f, sizeof(buf), SEEK_DATA, &r),
		      -ENXIO);
	SMR_ASSERT_RC(smr_ns_lseek(ns, f, sizeof(buf), SEEK_HOLE, &r),
		      -ENXIO);
	SMR_ASSERT_RC(smr_ns_lseek(ns, f, 0, SEEK_END, &r), -EINVAL);
	/* A hole at the end: SEEK_DATA past the last extent is ENXIO. */
	sa.valid = SMR_NS_SET_SIZE;
	sa.size = 100000;
	SMR_ASSERT_OK(smr_ns_setattr(ns, &root_cr, f, &sa, &a));
	SMR_ASSERT_RC(smr_ns_lseek(ns, f, sizeof(buf), SEEK_DATA, &r),
		      -ENXIO);
	SMR_ASSERT_OK(smr_ns_lseek(ns, f, sizeof(buf) + 1, SEEK_HOLE, &r));
	CU_ASSERT_EQUAL(r, sizeof(buf) + 1);

	/* Zero range: zeros inside, the whole blocks dropped; with
	 * KEEP_SIZE the size stays, without it the file grows to the end
	 * of the range (never shrinks). */
	sa.size = sizeof(want);
	SMR_ASSERT_OK(smr_ns_setattr(ns, &root_cr, f, &sa, &a));
	fill_pattern(want, sizeof(want), 10);
	CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f, 0, want, sizeof(want)),
			(ssize_t)sizeof(want));
	SMR_ASSERT_OK(smr_ns_fallocate(ns, f, SMR_NS_FALLOC_ZERO_RANGE, 3000,
				       6000));
	memset(want + 3000, 0, 6000);
	SMR_ASSERT_OK(smr_ns_fallocate(ns, f, SMR_NS_FALLOC_ZERO_RANGE |
				       SMR_NS_FALLOC_KEEP_SIZE,
				       sizeof(want) - 5000, 9000));
	memset(want + sizeof(want) - 5000, 0, 5000);
	SMR_ASSERT_OK(smr_ns_getattr(ns, f, &a));
	CU_ASSERT_EQUAL(a.size, sizeof(want));
	CU_ASSERT_EQUAL(a.blocks, 3 * 4096 / 512);
	CU_ASSERT_EQUAL(smr_ns_read(ns, f, 0, sizeof(buf), buf),
			(ssize_t)sizeof(buf));
	CU_ASSERT(!memcmp(buf, want, sizeof(buf)));
	SMR_ASSERT_OK(smr_ns_fallocate(ns, f, SMR_NS_FALLOC_ZERO_RANGE, 100,
				       200));
	SMR_ASSERT_OK(smr_ns_getattr(ns, f, &a));
	CU_ASSERT_EQUAL(a.size, sizeof(want));
	SMR_ASSERT_OK(smr_ns_fallocate(ns, f, SMR_NS_FALLOC_ZERO_RANGE,
				       sizeof(want) - 1, 70001));
	SMR_ASSERT_OK(smr_ns_getattr(ns, f, &a));
	CU_ASSERT_EQUAL(a.size, sizeof(want) + 70000);
	memset(want + 100, 0, 200);
	CU_ASSERT_EQUAL(smr_ns_read(ns, f, 0, sizeof(buf), buf),
			(ssize_t)sizeof(buf));
	CU_ASSERT(!memcmp(buf, want, sizeof(buf) - 1));
	CU_ASSERT_EQUAL(buf[sizeof(buf) - 1], 0);
	CU_ASSERT_EQUAL(smr_ns_read(ns, f, sizeof(buf), sizeof(buf), buf),
			(ssize_t)sizeof(buf));
	CU_ASSERT(!memcmp(buf, want + 3000, 4000)); /* zeros */

	/* A range to the end of a file whose last block is partial drops
	 * that block too: no block of zeros is written for it. */
	sa.size = 10000;
	SMR_ASSERT_OK(smr_ns_setattr(ns, &root_cr, f, &sa, &a));
	CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f, 0, want, 10000), 10000);
	SMR_ASSERT_OK(smr_ns_fallocate(ns, f, PUNCH_KEEP, 4096, 1ULL << 40));
	SMR_ASSERT_OK(smr_ns_getattr(ns, f, &a));
	CU_ASSERT_EQUAL(a.size, 10000);
	CU_ASSERT_EQUAL(a.blocks, 4096 / 512);
	SMR_ASSERT_RC(smr_ns_lseek(ns, f, 4096, SEEK_DATA, &r), -ENXIO);
	SMR_ASSERT_OK(smr_ns_fallocate(ns, f, SMR_NS_FALLOC_ZERO_RANGE, 1000,
				       20000));
	SMR_ASSERT_OK(smr_ns_getattr(ns, f, &a));
	CU_ASSERT_EQUAL(a.size, 21000);
	CU_ASSERT_EQUAL(a.blocks, 4096 / 512);
	memset(want + 1000, 0, sizeof(want) - 1000);
	CU_ASSERT_EQUAL(smr_ns_read(ns, f, 0, sizeof(buf), buf),
			(ssize_t)sizeof(buf));
	CU_ASSERT(!memcmp(buf, want, sizeof(buf)));
	fs_teardown();
}

#ifndef NS_TEST_REAL
/* Find the device offset of a file's first block by corrupting each used
 * block in turn would be slow; instead write one block into an empty
 * engine, where it lands at the first free block. */
static void test_checksum(void)
{
	uint8_t buf[4096];
	uint64_t f;

	fs_setup();
	f = mkfile(ROOT, "f", 0644);
	fill_pattern(buf, sizeof(buf), 5);
	CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f, 0, buf, 4096), 4096);
	CU_ASSERT_EQUAL(smr_ns_read(ns, f, 0, 4096, buf), 4096);
	memcow_corrupt(cow, 100);
	smr_log_set_level(SMR_LOG_ERR - 1);
	CU_ASSERT_EQUAL(smr_ns_read(ns, f, 0, 4096, buf), -EIO);
	CU_ASSERT_EQUAL(smr_ns_read(ns, f, 4000, 10, buf), -EIO);
	/* A partial write must not launder the bad block either. */
	CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f, 10, "x", 1), -EIO);
	smr_log_set_level(SMR_LOG_ERR);
	/* A whole-block overwrite replaces it. */
	CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f, 0, buf, 4096), 4096);
	CU_ASSERT_EQUAL(smr_ns_read(ns, f, 0, 4096, buf), 4096);
	fs_teardown();
}

static void test_read_only(void)
{
	struct smr_ns_attr a;

	fs_setup();
	mkfile(ROOT, "f", 0644);
	memcow_set_read_only(cow, true);
	SMR_ASSERT_RC(smr_ns_mknod(ns, &root_cr, ROOT, "g", S_IFREG, 0, &a),
		      -EROFS);
	SMR_ASSERT_RC(smr_ns_unlink(ns, &root_cr, ROOT, "f"), -EROFS);
	SMR_ASSERT_OK(smr_ns_lookup(ns, ROOT, "f", &a));
	memcow_set_read_only(cow, false);
	fs_teardown();
}
#endif

/* ------------------------------------------------------------------------
 * Ownership rules
 * ------------------------------------------------------------------------ */

static void test_permissions(void)
{
	struct smr_ns_setattr sa;
	struct smr_ns_attr a;
	uint64_t f, d, s;

	fs_setup();
	SMR_ASSERT_OK(smr_ns_mknod(ns, &user_cr, ROOT, "f", S_IFREG | 06755,
				   0, &a));
	f = a.ino;
	CU_ASSERT_EQUAL(a.uid, 1000);
	CU_ASSERT_EQUAL(a.gid, 1000);

	/* chmod: owner or root only. */
	sa = (struct smr_ns_setattr){ .valid = SMR_NS_SET_MODE, .mode = 0600 };
	SMR_ASSERT_RC(smr_ns_setattr(ns, &other_cr, f, &sa, &a), -EPERM);
	sa.mode = 06755;
	SMR_ASSERT_OK(smr_ns_setattr(ns, &user_cr, f, &sa, &a));
	CU_ASSERT_EQUAL(a.mode, S_IFREG | 06755);
	/* ... except one that only drops set-id bits: the kernel asks for it
	 * when another user writes to the file. */
	sa.mode = 06555;
	SMR_ASSERT_RC(smr_ns_setattr(ns, &other_cr, f, &sa, &a), -EPERM);
	sa.mode = 06755;
	SMR_ASSERT_RC(smr_ns_setattr(ns, &other_cr, f, &sa, &a), -EPERM);
	sa.mode = 04755;
	SMR_ASSERT_OK(smr_ns_setattr(ns, &other_cr, f, &sa, &a));
	CU_ASSERT_EQUAL(a.mode, S_IFREG | 04755);
	sa.mode = 06755;
	SMR_ASSERT_RC(smr_ns_setattr(ns, &other_cr, f, &sa, &a), -EPERM);
	SMR_ASSERT_OK(smr_ns_setattr(ns, &user_cr, f, &sa, &a));

	/* A write by non-root clears set-id bits; by root it does not. */
	CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f, 0, "x", 1), 1);
	SMR_ASSERT_OK(smr_ns_getattr(ns, f, &a));
	CU_ASSERT_EQUAL(a.mode, S_IFREG | 06755);
	CU_ASSERT_EQUAL(smr_ns_write(ns, &user_cr, f, 0, "x", 1), 1);
	SMR_ASSERT_OK(smr_ns_getattr(ns, f, &a));
	CU_ASSERT_EQUAL(a.mode, S_IFREG | 0755);

	/* chown: root only; the owner may change the group to one of
	 * theirs; a chown clears set-id bits. */
	SMR_ASSERT_OK(smr_ns_setattr(ns, &user_cr, f, &sa, &a));
	sa = (struct smr_ns_setattr){ .valid = SMR_NS_SET_UID, .uid = 1001 };
	SMR_ASSERT_RC(smr_ns_setattr(ns, &user_cr, f, &sa, &a), -EPERM);
	sa = (struct smr_ns_setattr){ .valid = SMR_NS_SET_GID, .gid = 3000 };
	SMR_ASSERT_RC(smr_ns_setattr(ns, &user_cr, f, &sa, &a), -EPERM);
	SMR_ASSERT_RC(smr_ns_setattr(ns, &other_cr, f, &sa, &a), -EPERM);
	sa.gid = 2000;
	SMR_ASSERT_OK(smr_ns_setattr(ns, &user_cr, f, &sa, &a));
	CU_ASSERT_EQUAL(a.gid, 2000);
	CU_ASSERT_EQUAL(a.mode, S_IFREG | 0755);
	sa = (struct smr_ns_setattr){ .valid = SMR_NS_SET_UID |
						SMR_NS_SET_GID,
				      .uid = 1001, .gid = 1001 };
	SMR_ASSERT_OK(smr_ns_setattr(ns, &root_cr, f, &sa, &a));
	CU_ASSERT_EQUAL(a.uid, 1001);
	CU_ASSERT_EQUAL(a.gid, 1001);

	/* A non-member's chmod g+s is dropped. */
	sa = (struct smr_ns_setattr){ .valid = SMR_NS_SET_MODE, .mode = 02755 };
	SMR_ASSERT_OK(smr_ns_setattr(ns, &other_cr, f, &sa, &a));
	CU_ASSERT_EQUAL(a.mode, S_IFREG | 02755);
	sa = (struct smr_ns_setattr){ .valid = SMR_NS_SET_GID, .gid = 0 };
	SMR_ASSERT_OK(smr_ns_setattr(ns, &root_cr, f, &sa, &a));
	sa = (struct smr_ns_setattr){ .valid = SMR_NS_SET_MODE, .mode = 02755 };
	SMR_ASSERT_OK(smr_ns_setattr(ns, &other_cr, f, &sa, &a));
	CU_ASSERT_EQUAL(a.mode, S_IFREG | 0755);

	/* Times: explicit by owner/root; "now" also with write access. */
	sa = (struct smr_ns_setattr){ .valid = SMR_NS_SET_MTIME };
	sa.mtime.tv_sec = 5;
	SMR_ASSERT_RC(smr_ns_setattr(ns, &user_cr, f, &sa, &a), -EPERM);
	SMR_ASSERT_OK(smr_ns_setattr(ns, &other_cr, f, &sa, &a));
	CU_ASSERT_EQUAL(a.mtime.tv_sec, 5);
	/* The times the kernel kept (writeback cache), sent as whoever
	 * closed the file: set, as the kernel checked the call. */
	sa = (struct smr_ns_setattr){ .valid = SMR_NS_SET_MTIME |
						SMR_NS_SET_CTIME };
	sa.mtime.tv_sec = 7;
	sa.ctime.tv_sec = 8;
	SMR_ASSERT_RC(smr_ns_setattr(ns, &user_cr, f, &sa, &a), -EPERM);
	sa.valid |= SMR_NS_SET_KEPT_TIMES;
	SMR_ASSERT_OK(smr_ns_setattr(ns, &user_cr, f, &sa, &a));
	CU_ASSERT_EQUAL(a.mtime.tv_sec, 7);
	CU_ASSERT_EQUAL(a.ctime.tv_sec, 8);
	sa = (struct smr_ns_setattr){ .valid = SMR_NS_SET_MTIME_NOW |
						SMR_NS_SET_ATIME_NOW };
	SMR_ASSERT_RC(smr_ns_setattr(ns, &user_cr, f, &sa, &a), -EACCES);
	sa = (struct smr_ns_setattr){ .valid = SMR_NS_SET_MODE, .mode = 0666 };
	SMR_ASSERT_OK(smr_ns_setattr(ns, &root_cr, f, &sa, &a));
	sa = (struct smr_ns_setattr){ .valid = SMR_NS_SET_MTIME_NOW };
	SMR_ASSERT_OK(smr_ns_setattr(ns, &user_cr, f, &sa, &a));
	CU_ASSERT(a.mtime.tv_sec > 5);

	/* Sticky directories. */
	SMR_ASSERT_OK(smr_ns_mkdir(ns, &root_cr, ROOT, "tmp", 01777, &a));
	d = a.ino;
	SMR_ASSERT_OK(smr_ns_mknod(ns, &user_cr, d, "mine", S_IFREG | 0644, 0,
				   &a));
	SMR_ASSERT_RC(smr_ns_unlink(ns, &other_cr, d, "mine"), -EPERM);
	SMR_ASSERT_RC(smr_ns_rename(ns, &other_cr, d, "mine", d, "x", 0),
		      -EPERM);
	SMR_ASSERT_OK(smr_ns_mknod(ns, &other_cr, d, "theirs", S_IFREG | 0644,
				   0, &a));
	SMR_ASSERT_RC(smr_ns_rename(ns, &other_cr, d, "theirs", d, "mine", 0),
		      -EPERM);
	SMR_ASSERT_OK(smr_ns_unlink(ns, &user_cr, d, "mine"));
	SMR_ASSERT_OK(smr_ns_unlink(ns, &root_cr, d, "theirs"));

	/* setgid directories hand down their group (and the bit to dirs). */
	SMR_ASSERT_OK(smr_ns_mkdir(ns, &root_cr, ROOT, "sg", 02777, &a));
	s = a.ino;
	sa = (struct smr_ns_setattr){ .valid = SMR_NS_SET_GID, .gid = 777 };
	SMR_ASSERT_OK(smr_ns_setattr(ns, &root_cr, s, &sa, &a));
	SMR_ASSERT_OK(smr_ns_mknod(ns, &user_cr, s, "f", S_IFREG | 0644, 0,
				   &a));
	CU_ASSERT_EQUAL(a.gid, 777);
	SMR_ASSERT_OK(smr_ns_mkdir(ns, &user_cr, s, "d", 0755, &a));
	CU_ASSERT_EQUAL(a.gid, 777);
	CU_ASSERT_EQUAL(a.mode, S_IFDIR | 02755);
	SMR_ASSERT_OK(smr_ns_mknod(ns, &user_cr, s, "g", S_IFREG | 02755, 0,
				   &a));
	CU_ASSERT_EQUAL(a.mode, S_IFREG | 0755);
	fs_teardown();
}

/* ------------------------------------------------------------------------
 * Extended attributes
 * ------------------------------------------------------------------------ */

/* A write (aligned or not), a truncate and a chown drop the file's
 * capabilities, and only them: the FUSE adapter leaves that to us. Each
 * round starts with a write to a file without them, which the namespace
 * then remembers as such: setxattr must make it forget. */
static void test_drop_caps(void)
{
	static const char cap[20] = { 0, 0, 0, 2, 0, 4 };
	static uint8_t block[8192];
	struct smr_ns_setattr sa;
	struct smr_ns_attr a;
	uint64_t f;

	fs_setup();
	f = mkfile(ROOT, "f", 0644);
	for (int how = 0; how < 4; how++) {
		CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f, 0, block,
					     sizeof(block)),
				(ssize_t)sizeof(block));
		SMR_ASSERT_OK(smr_ns_setxattr(ns, &root_cr, f,
					      "security.capability", cap,
					      sizeof(cap), 0));
		SMR_ASSERT_OK(smr_ns_setxattr(ns, &root_cr, f, "user.k", "v",
					      1, 0));
		CU_ASSERT_EQUAL(smr_ns_getxattr(ns, &root_cr, f,
						"security.capability", NULL, 0),
				(ssize_t)sizeof(cap));
		memset(&sa, 0, sizeof(sa));
		if (how == 0) {
			CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f, 1, "x", 1),
					1);
		} else if (how == 1) {
			CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f, 0, block,
						     sizeof(block)),
					(ssize_t)sizeof(block));
		} else if (how == 2) {
			sa.valid = SMR_NS_SET_SIZE;
			sa.size = 100;
		} else {
			sa.valid = SMR_NS_SET_UID;
			sa.uid = 5;
		}
		if (sa.valid)
			SMR_ASSERT_OK(smr_ns_setattr(ns, &root_cr, f, &sa, &a));
		CU_ASSERT_EQUAL(smr_ns_getxattr(ns, &root_cr, f,
						"security.capability", NULL, 0),
				-ENODATA);
		CU_ASSERT_EQUAL(smr_ns_getxattr(ns, &root_cr, f, "user.k",
						NULL, 0), 1);
	}
	fs_teardown();
}

static void put_le32(uint8_t *p, uint32_t x)
{
	x = htole32(x);
	memcpy(p, &x, sizeof(x));
}

/* An ACL's xattr value from (tag, perm, id) triples, ending with tag 0;
 * returns its length. */
static size_t acl_make(uint8_t *v, uint32_t version, ...)
{
	va_list ap;
	size_t len = 4;

	put_le32(v, version);
	va_start(ap, version);
	for (;;) {
		unsigned int tag = va_arg(ap, unsigned int), perm, id;

		if (!tag)
			break;
		perm = va_arg(ap, unsigned int);
		id = va_arg(ap, unsigned int);
		v[len] = (uint8_t)tag;
		v[len + 1] = 0;
		v[len + 2] = (uint8_t)perm;
		v[len + 3] = 0;
		put_le32(v + len + 4, id);
		len += 8;
	}
	va_end(ap);
	return len;
}

static uint32_t perms_of(uint64_t ino)
{
	struct smr_ns_attr a;

	if (smr_ns_getattr(ns, ino, &a))
		return UINT32_MAX;
	return a.mode & 07777;
}

/* The permission of entry @i of the ACL @name of @ino, or -1. */
static int acl_perm_of(uint64_t ino, const char *name, unsigned int i)
{
	uint8_t v[256];
	ssize_t len = smr_ns_getxattr(ns, &root_cr, ino, name, v, sizeof(v));

	if (len < (ssize_t)(4 + 8 * (i + 1)))
		return -1;
	return v[4 + 8 * i + 2];
}

#define UOBJ 0x01
#define UNAMED 0x02
#define GOBJ 0x04
#define GNAMED 0x08
#define MASK 0x10
#define OTHER 0x20
#define NOID 0xffffffffu
#define ACL_A "system.posix_acl_access"
#define ACL_D "system.posix_acl_default"

/* POSIX ACLs: kept only when on; an access ACL sets the mode and chmod
 * sets it; a new node inherits its directory's default ACL in place of
 * the umask; what is invalid or not the caller's to set is refused. */
static void test_acl(void)
{
	const struct smr_ns_cred umask_cr = { .uid = 0, .umask = 027 };
	struct smr_ns_setattr sa = { .valid = SMR_NS_SET_MODE, .mode = 0640 };
	uint8_t v[256], out[256];
	char list[256];
	struct smr_ns_attr a;
	uint64_t f, d, g, e, s;
	size_t len;

	fs_setup();
	f = mkfile(ROOT, "f", 0644);
	d = mkdir_(ROOT, "d");
	len = acl_make(v, 2, UOBJ, 6, NOID, UNAMED, 7, 1000, GOBJ, 4, NOID,
		       MASK, 6, NOID, OTHER, 4, NOID, 0);
	/* Off: as any other system.* name. */
	SMR_ASSERT_RC(smr_ns_setxattr(ns, &root_cr, f, ACL_A, v, len, 0),
		      -EOPNOTSUPP);
	smr_ns_set_acl(ns, true);

	/* The mask is the group bits. */
	SMR_ASSERT_OK(smr_ns_setxattr(ns, &root_cr, f, ACL_A, v, len, 0));
	CU_ASSERT_EQUAL(perms_of(f), 0664);
	CU_ASSERT_EQUAL(smr_ns_getxattr(ns, &root_cr, f, ACL_A, out,
					sizeof(out)), (ssize_t)len);
	CU_ASSERT_EQUAL(memcmp(out, v, len), 0);
	/* chmod sets owner, mask and other; the named entry stays. */
	SMR_ASSERT_OK(smr_ns_setattr(ns, &root_cr, f, &sa, NULL));
	CU_ASSERT_EQUAL(acl_perm_of(f, ACL_A, 0), 6);
	CU_ASSERT_EQUAL(acl_perm_of(f, ACL_A, 1), 7);
	CU_ASSERT_EQUAL(acl_perm_of(f, ACL_A, 2), 4);
	CU_ASSERT_EQUAL(acl_perm_of(f, ACL_A, 3), 4);
	CU_ASSERT_EQUAL(acl_perm_of(f, ACL_A, 4), 0);
	/* One the mode says all of is not kept. */
	len = acl_make(v, 2, UOBJ, 7, NOID, GOBJ, 5, NOID, OTHER, 0, NOID, 0);
	SMR_ASSERT_OK(smr_ns_setxattr(ns, &root_cr, f, ACL_A, v, len, 0));
	CU_ASSERT_EQUAL(perms_of(f), 0750);
	SMR_ASSERT_RC(smr_ns_getxattr(ns, &root_cr, f, ACL_A, out,
				      sizeof(out)), -ENODATA);

	/* Invalid: version, order, duplicates, a named entry without a
	 * mask, a permission, part of an entry, an unknown tag. */
	len = acl_make(v, 1, UOBJ, 7, NOID, GOBJ, 5, NOID, OTHER, 0, NOID, 0);
	SMR_ASSERT_RC(smr_ns_setxattr(ns, &root_cr, f, ACL_A, v, len, 0),
		      -EINVAL);
	len = acl_make(v, 2, GOBJ, 5, NOID, UOBJ, 7, NOID, OTHER, 0, NOID, 0);
	SMR_ASSERT_RC(smr_ns_setxattr(ns, &root_cr, f, ACL_A, v, len, 0),
		      -EINVAL);
	len = acl_make(v, 2, UOBJ, 7, NOID, UNAMED, 7, 5, UNAMED, 7, 5, GOBJ,
		       5, NOID, MASK, 7, NOID, OTHER, 0, NOID, 0);
	SMR_ASSERT_RC(smr_ns_setxattr(ns, &root_cr, f, ACL_A, v, len, 0),
		      -EINVAL);
	len = acl_make(v, 2, UOBJ, 7, NOID, GOBJ, 5, NOID, GNAMED, 7, 5,
		       OTHER, 0, NOID, 0);
	SMR_ASSERT_RC(smr_ns_setxattr(ns, &root_cr, f, ACL_A, v, len, 0),
		      -EINVAL);
	len = acl_make(v, 2, UOBJ, 8, NOID, GOBJ, 5, NOID, OTHER, 0, NOID, 0);
	SMR_ASSERT_RC(smr_ns_setxattr(ns, &root_cr, f, ACL_A, v, len, 0),
		      -EINVAL);
	len = acl_make(v, 2, UOBJ, 7, NOID, GOBJ, 5, NOID, OTHER, 0, NOID, 0);
	SMR_ASSERT_RC(smr_ns_setxattr(ns, &root_cr, f, ACL_A, v, len - 1, 0),
		      -EINVAL);
	len = acl_make(v, 2, UOBJ, 7, NOID, 0x40, 5, NOID, OTHER, 0, NOID, 0);
	SMR_ASSERT_RC(smr_ns_setxattr(ns, &root_cr, f, ACL_A, v, len, 0),
		      -EINVAL);
	CU_ASSERT_EQUAL(perms_of(f), 0750);
	/* Only the owner sets one; none on a symlink; a default one only
	 * on a directory. */
	len = acl_make(v, 2, UOBJ, 7, NOID, GOBJ, 5, NOID, OTHER, 0, NOID, 0);
	SMR_ASSERT_RC(smr_ns_setxattr(ns, &user_cr, f, ACL_A, v, len, 0),
		      -EPERM);
	SMR_ASSERT_OK(smr_ns_symlink(ns, &root_cr, ROOT, "s", "f", &a));
	s = a.ino;
	SMR_ASSERT_RC(smr_ns_setxattr(ns, &root_cr, s, ACL_A, v, len, 0),
		      -EOPNOTSUPP);
	SMR_ASSERT_RC(smr_ns_setxattr(ns, &root_cr, f, ACL_D, v, len, 0),
		      -EACCES);

	/* Touching the times is for those the ACL lets write, through the
	 * mask: a named user whom the mode alone would not let in. */
	{
		struct smr_ns_setattr now = {
			.valid = SMR_NS_SET_ATIME_NOW | SMR_NS_SET_MTIME_NOW,
		};
		uint64_t h = mkfile(ROOT, "h", 0600);

		len = acl_make(v, 2, UOBJ, 6, NOID, UNAMED, 6, 1000, GOBJ, 0,
			       NOID, MASK, 6, NOID, OTHER, 0, NOID, 0);
		SMR_ASSERT_OK(smr_ns_setxattr(ns, &root_cr, h, ACL_A, v, len,
					      0));
		SMR_ASSERT_OK(smr_ns_setattr(ns, &user_cr, h, &now, NULL));
		SMR_ASSERT_RC(smr_ns_setattr(ns, &other_cr, h, &now, NULL),
			      -EACCES);
		len = acl_make(v, 2, UOBJ, 6, NOID, UNAMED, 6, 1000, GOBJ, 0,
			       NOID, MASK, 4, NOID, OTHER, 0, NOID, 0);
		SMR_ASSERT_OK(smr_ns_setxattr(ns, &root_cr, h, ACL_A, v, len,
					      0));
		SMR_ASSERT_RC(smr_ns_setattr(ns, &user_cr, h, &now, NULL),
			      -EACCES);
	}

	/* No default ACL: the umask. */
	SMR_ASSERT_OK(smr_ns_create(ns, &umask_cr, ROOT, "u", 0666, &a));
	CU_ASSERT_EQUAL(a.mode & 07777, 0640);
	/* A default ACL instead of the umask: a file gets it masked by its
	 * mode, a directory also keeps it as its own default. */
	len = acl_make(v, 2, UOBJ, 7, NOID, UNAMED, 7, 1000, GOBJ, 5, NOID,
		       MASK, 7, NOID, OTHER, 5, NOID, 0);
	SMR_ASSERT_OK(smr_ns_setxattr(ns, &root_cr, d, ACL_D, v, len, 0));
	CU_ASSERT_EQUAL(perms_of(d), 0755);
	SMR_ASSERT_OK(smr_ns_create(ns, &umask_cr, d, "g", 0666, &a));
	g = a.ino;
	CU_ASSERT_EQUAL(a.mode & 07777, 0664);
	CU_ASSERT_EQUAL(acl_perm_of(g, ACL_A, 0), 6);
	CU_ASSERT_EQUAL(acl_perm_of(g, ACL_A, 1), 7);
	CU_ASSERT_EQUAL(acl_perm_of(g, ACL_A, 2), 5);
	CU_ASSERT_EQUAL(acl_perm_of(g, ACL_A, 3), 6);
	CU_ASSERT_EQUAL(acl_perm_of(g, ACL_A, 4), 4);
	SMR_ASSERT_RC(smr_ns_getxattr(ns, &root_cr, g, ACL_D, out,
				      sizeof(out)), -ENODATA);
	SMR_ASSERT_OK(smr_ns_mkdir(ns, &umask_cr, d, "e", 0777, &a));
	e = a.ino;
	CU_ASSERT_EQUAL(a.mode & 07777, 0775);
	CU_ASSERT_EQUAL(acl_perm_of(e, ACL_A, 3), 7);
	CU_ASSERT_EQUAL(smr_ns_getxattr(ns, &root_cr, e, ACL_D, out,
					sizeof(out)), (ssize_t)len);
	CU_ASSERT_EQUAL(memcmp(out, v, len), 0);
	SMR_ASSERT_OK(smr_ns_symlink(ns, &umask_cr, d, "s", "g", &a));
	CU_ASSERT_EQUAL(a.mode & 07777, 0777);
	SMR_ASSERT_RC(smr_ns_getxattr(ns, &root_cr, a.ino, ACL_A, out,
				      sizeof(out)), -EOPNOTSUPP);
	/* An empty ACL removes it. */
	SMR_ASSERT_OK(smr_ns_setxattr(ns, &root_cr, e, ACL_D, v, 4, 0));
	SMR_ASSERT_RC(smr_ns_getxattr(ns, &root_cr, e, ACL_D, out,
				      sizeof(out)), -ENODATA);
	CU_ASSERT_EQUAL(smr_ns_listxattr(ns, &root_cr, e, list, sizeof(list)),
			(ssize_t)sizeof(ACL_A));
#ifdef NS_TEST_REAL
	fs_reopen(NULL, false);
	smr_ns_set_acl(ns, true);
	CU_ASSERT_EQUAL(perms_of(g), 0664);
	CU_ASSERT_EQUAL(acl_perm_of(g, ACL_A, 3), 6);
	CU_ASSERT_EQUAL(smr_ns_getxattr(ns, &root_cr, d, ACL_D, out,
					sizeof(out)), (ssize_t)len);
#endif
	/* Off again: hidden. */
	smr_ns_set_acl(ns, false);
	CU_ASSERT_EQUAL(smr_ns_listxattr(ns, &root_cr, e, list, sizeof(list)),
			0);
	SMR_ASSERT_RC(smr_ns_getxattr(ns, &root_cr, g, ACL_A, out,
				      sizeof(out)), -EOPNOTSUPP);
	fs_teardown();
}

/* The audit finds an ACL out of step with the mode, and one that does
 * not parse; a chmod while ACLs are off keeps them in step. */
static void test_acl_check(void)
{
	struct smr_ns_setattr sa = { .valid = SMR_NS_SET_MODE, .mode = 0600 };
	struct smr_ns_attr a;
	struct smr_ns_inode_d d;
	struct smr_key k, found;
	uint8_t v[64], item[256];
	struct smr_txn *t;
	uint64_t f, g, problems = 0;
	size_t len, ilen = sizeof(item), dlen = sizeof(d);

	fs_setup();
	smr_ns_set_acl(ns, true);
	f = mkfile(ROOT, "f", 0644);
	g = mkfile(ROOT, "g", 0644);
	len = acl_make(v, 2, UOBJ, 6, NOID, UNAMED, 6, 1000, GOBJ, 4, NOID,
		       MASK, 6, NOID, OTHER, 4, NOID, 0);
	SMR_ASSERT_OK(smr_ns_setxattr(ns, &root_cr, f, ACL_A, v, len, 0));
	SMR_ASSERT_OK(smr_ns_setxattr(ns, &root_cr, g, ACL_A, v, len, 0));
	smr_ns_set_acl(ns, false);
	SMR_ASSERT_OK(smr_ns_setattr(ns, &root_cr, f, &sa, NULL));
	SMR_ASSERT_OK(smr_ns_check(ns, &problems));
	CU_ASSERT_EQUAL(problems, 0);

	/* f's mode changed behind the namespace's back; a permission of 9
	 * in g's ACL. */
	SMR_ASSERT_OK(smr_txn_begin(cow, &t));
	k = (struct smr_key){ .objid = f, .type = SMR_NS_T_INODE };
	SMR_ASSERT_OK(smr_bt_lookup(cow, SMR_TREE_FS, &k, &d, &dlen));
	d.mode = htole32((le32toh(d.mode) & ~0777U) | 0644);
	SMR_ASSERT_OK(smr_bt_update(t, SMR_TREE_FS, &k, &d, sizeof(d)));
	k = (struct smr_key){ .objid = g, .type = SMR_NS_T_XATTR };
	SMR_ASSERT_OK(smr_bt_next(cow, SMR_TREE_FS, &k, &found, item, &ilen));
	CU_ASSERT_FATAL(found.objid == g && found.type == SMR_NS_T_XATTR &&
			ilen > len);
	item[ilen - len + 4 + 8 + 2] = 9;
	SMR_ASSERT_OK(smr_bt_update(t, SMR_TREE_FS, &found, item, ilen));
	smr_txn_end(t);
	smr_log_set_level(SMR_LOG_ERR - 1);
	SMR_ASSERT_RC(smr_ns_check(ns, &problems), -SMR_EFSCORRUPTED);
	smr_log_set_level(SMR_LOG_ERR);
	CU_ASSERT_EQUAL(problems, 2);

	/* The repair: f's ACL follows its mode, as after a chmod (the named
	 * user keeps rw-, the mask takes the group's r--); g's, which does
	 * not parse, goes. Then nothing is left to do. */
	problems = 0;
	SMR_ASSERT_OK(smr_ns_repair_acls(ns, &problems));
	CU_ASSERT_EQUAL(problems, 2);
	SMR_ASSERT_OK(smr_ns_check(ns, &problems));
	CU_ASSERT_EQUAL(problems, 0);
	smr_ns_set_acl(ns, true);
	SMR_ASSERT_OK(smr_ns_getattr(ns, f, &a));
	CU_ASSERT_EQUAL(a.mode, S_IFREG | 0644);
	len = acl_make(v, 2, UOBJ, 6, NOID, UNAMED, 6, 1000, GOBJ, 4, NOID,
		       MASK, 4, NOID, OTHER, 4, NOID, 0);
	CU_ASSERT_EQUAL(smr_ns_getxattr(ns, &root_cr, f, ACL_A, item,
					sizeof(item)), (ssize_t)len);
	CU_ASSERT(!memcmp(item, v, len));
	SMR_ASSERT_RC(smr_ns_getxattr(ns, &root_cr, g, ACL_A, item,
				      sizeof(item)), -ENODATA);
	problems = 0;
	SMR_ASSERT_OK(smr_ns_repair_acls(ns, &problems));
	CU_ASSERT_EQUAL(problems, 0);
	fs_teardown();
}

static void test_xattr(void)
{
	static uint8_t big[65536 + 1], out[65536 + 1];
	char list[256], name[300];
	struct smr_ns_attr a;
	uint64_t f, s;

	fs_setup();
	f = mkfile(ROOT, "f", 0644);
	SMR_ASSERT_OK(smr_ns_setxattr(ns, &root_cr, f, "user.a", "one", 3, 0));
	CU_ASSERT_EQUAL(smr_ns_getxattr(ns, &root_cr, f, "user.a", NULL, 0),
			3);
	CU_ASSERT_EQUAL(smr_ns_getxattr(ns, &root_cr, f, "user.a", out, 2),
			-ERANGE);
	CU_ASSERT_EQUAL(smr_ns_getxattr(ns, &root_cr, f, "user.a", out, 10),
			3);
	CU_ASSERT(!memcmp(out, "one", 3));
	SMR_ASSERT_RC(smr_ns_setxattr(ns, &root_cr, f, "user.a", "x", 1,
				      SMR_NS_XATTR_CREATE),
		      -EEXIST);
	SMR_ASSERT_RC(smr_ns_setxattr(ns, &root_cr, f, "user.b", "x", 1,
				      SMR_NS_XATTR_REPLACE),
		      -ENODATA);
	SMR_ASSERT_OK(smr_ns_setxattr(ns, &root_cr, f, "user.a", "two!", 4,
				      SMR_NS_XATTR_REPLACE));
	CU_ASSERT_EQUAL(smr_ns_getxattr(ns, &root_cr, f, "user.a", out, 10),
			4);
	CU_ASSERT(!memcmp(out, "two!", 4));
	SMR_ASSERT_OK(smr_ns_setxattr(ns, &root_cr, f, "user.empty", "", 0,
				      0));
	CU_ASSERT_EQUAL(smr_ns_getxattr(ns, &root_cr, f, "user.empty", out,
					10), 0);

	/* 64 KiB values span many items. */
	fill_pattern(big, sizeof(big), 11);
	SMR_ASSERT_OK(smr_ns_setxattr(ns, &root_cr, f, "trusted.big", big,
				      65536, 0));
	CU_ASSERT_EQUAL(smr_ns_getxattr(ns, &root_cr, f, "trusted.big", out,
					sizeof(out)), 65536);
	CU_ASSERT(!memcmp(out, big, 65536));
	SMR_ASSERT_RC(smr_ns_setxattr(ns, &root_cr, f, "user.huge", big,
				      65537, 0),
		      -E2BIG);
	SMR_ASSERT_OK(smr_ns_setxattr(ns, &root_cr, f, "trusted.big", big + 1,
				      40000, 0));
	CU_ASSERT_EQUAL(smr_ns_getxattr(ns, &root_cr, f, "trusted.big", out,
					sizeof(out)), 40000);
	CU_ASSERT(!memcmp(out, big + 1, 40000));

	/* Lists; trusted.* is hidden from and refused to non-root. */
	CU_ASSERT_EQUAL(smr_ns_listxattr(ns, &root_cr, f, NULL, 0),
			7 + 11 + 12);
	CU_ASSERT_EQUAL(smr_ns_listxattr(ns, &root_cr, f, list, 5), -ERANGE);
	CU_ASSERT_EQUAL(smr_ns_listxattr(ns, &user_cr, f, list, sizeof(list)),
			7 + 11);
	CU_ASSERT_EQUAL(smr_ns_getxattr(ns, &user_cr, f, "trusted.big", out,
					sizeof(out)), -ENODATA);
	SMR_ASSERT_RC(smr_ns_setxattr(ns, &user_cr, f, "trusted.x", "1", 1,
				      0),
		      -EPERM);

	/* Names. */
	SMR_ASSERT_RC(smr_ns_setxattr(ns, &root_cr, f, "other.x", "1", 1, 0),
		      -EOPNOTSUPP);
	SMR_ASSERT_RC(smr_ns_setxattr(ns, &root_cr, f, "", "1", 1, 0),
		      -ERANGE);
	memset(name, 'x', sizeof(name));
	memcpy(name, "user.", 5);
	name[256] = 0;
	SMR_ASSERT_RC(smr_ns_setxattr(ns, &root_cr, f, name, "1", 1, 0),
		      -ERANGE);
	name[255] = 0;
	SMR_ASSERT_OK(smr_ns_setxattr(ns, &root_cr, f, name, "1", 1, 0));
	CU_ASSERT_EQUAL(smr_ns_getxattr(ns, &root_cr, f, name, out, 1), 1);
	SMR_ASSERT_RC(smr_ns_getxattr(ns, &root_cr, f, "user.none", out, 1),
		      -ENODATA);

	/* user.* only on regular files and directories. */
	SMR_ASSERT_OK(smr_ns_symlink(ns, &root_cr, ROOT, "s", "f", &a));
	s = a.ino;
	SMR_ASSERT_RC(smr_ns_setxattr(ns, &root_cr, s, "user.a", "1", 1, 0),
		      -EPERM);
	SMR_ASSERT_OK(smr_ns_setxattr(ns, &root_cr, s, "security.a", "1", 1,
				      0));
	SMR_ASSERT_OK(smr_ns_setxattr(ns, &root_cr, ROOT, "user.a", "1", 1,
				      0));

	SMR_ASSERT_OK(smr_ns_removexattr(ns, &root_cr, f, "user.a"));
	SMR_ASSERT_RC(smr_ns_removexattr(ns, &root_cr, f, "user.a"),
		      -ENODATA);
	SMR_ASSERT_RC(smr_ns_getxattr(ns, &root_cr, f, "user.a", out, 10),
		      -ENODATA);
	fs_teardown();
}

/* ------------------------------------------------------------------------
 * Open-unlinked files and orphans
 * ------------------------------------------------------------------------ */

static void test_orphans(void)
{
	struct smr_ns_opts o = { .track_lookups = true };
	struct smr_ns_attr a;
	uint8_t buf[8];
	uint64_t f, g;

	fs_setup();
	/* Open, unlink: still readable until the last release. */
	SMR_ASSERT_OK(smr_ns_create(ns, &root_cr, ROOT, "f", 0644, &a));
	f = a.ino;
	CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f, 0, "data", 4), 4);
	SMR_ASSERT_OK(smr_ns_open_file(ns, f, O_RDONLY, NULL));
	SMR_ASSERT_OK(smr_ns_unlink(ns, &root_cr, ROOT, "f"));
	SMR_ASSERT_OK(smr_ns_getattr(ns, f, &a));
	CU_ASSERT_EQUAL(a.nlink, 0);
	CU_ASSERT_EQUAL(smr_ns_read(ns, f, 0, 8, buf), 4);
	CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f, 4, "more", 4), 4);
	smr_ns_release(ns, f);
	SMR_ASSERT_OK(smr_ns_getattr(ns, f, &a));
	smr_ns_release(ns, f);
	SMR_ASSERT_RC(smr_ns_getattr(ns, f, &a), -ENOENT);

	/* Left open when the namespace goes down: reclaimed at next open. */
	SMR_ASSERT_OK(smr_ns_create(ns, &root_cr, ROOT, "g", 0644, &a));
	g = a.ino;
	CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, g, 0, "data", 4), 4);
	SMR_ASSERT_OK(smr_ns_unlink(ns, &root_cr, ROOT, "g"));
	SMR_ASSERT_OK(smr_ns_getattr(ns, g, &a));
	smr_ns_close(ns);
	SMR_ASSERT_OK(smr_ns_open(cow, NULL, &ns));
	SMR_ASSERT_RC(smr_ns_getattr(ns, g, &a), -ENOENT);
	smr_ns_close(ns);

	/* With lookup counting, the kernel's references keep it too. */
	SMR_ASSERT_OK(smr_ns_open(cow, &o, &ns));
	SMR_ASSERT_OK(smr_ns_mknod(ns, &root_cr, ROOT, "h", S_IFREG | 0644, 0,
				   &a));
	SMR_ASSERT_OK(smr_ns_lookup(ns, ROOT, "h", &a));
	SMR_ASSERT_OK(smr_ns_unlink(ns, &root_cr, ROOT, "h"));
	smr_ns_forget(ns, a.ino, 1);
	SMR_ASSERT_OK(smr_ns_getattr(ns, a.ino, &a));
	smr_ns_forget(ns, a.ino, 1);
	SMR_ASSERT_RC(smr_ns_getattr(ns, a.ino, &a), -ENOENT);
	fs_teardown();
}

/*
 * O_TMPFILE: a file made without a name is an orphan, open once; it
 * changes no directory, smr_ns_link() may name it (once), and it goes at
 * its last release or, left open when the namespace goes down, at the
 * next open. Other unlinked files may not be named again.
 */
static void test_tmpfile(void)
{
	struct smr_ns_cred cr = { .uid = 1000, .gid = 1000, .umask = 022 };
	struct smr_ns_attr a, g, dir_before, dir_after;
	uint64_t used, f, d;
	uint8_t buf[8];

	fs_setup();
	d = mkdir_(ROOT, "d");
	SMR_ASSERT_OK(smr_ns_setattr(ns, &root_cr, d,
		&(struct smr_ns_setattr){ .valid = SMR_NS_SET_MODE,
					  .mode = 0777 }, NULL));
	set_times(d, 1000);
	SMR_ASSERT_OK(smr_ns_getattr(ns, d, &dir_before));
	used = inodes_used();

	SMR_ASSERT_OK(smr_ns_tmpfile(ns, &cr, d, 0666, &a));
	f = a.ino;
	CU_ASSERT_EQUAL(a.nlink, 0);
	CU_ASSERT_EQUAL(a.mode, S_IFREG | 0644); /* the umask applies */
	CU_ASSERT_EQUAL(a.uid, 1000);
	CU_ASSERT_EQUAL(inodes_used(), used + 1);
	SMR_ASSERT_OK(smr_ns_getattr(ns, d, &dir_after));
	CU_ASSERT_EQUAL(dir_after.mtime.tv_sec, dir_before.mtime.tv_sec);
	CU_ASSERT_EQUAL(dir_after.nlink, dir_before.nlink);
	CU_ASSERT_EQUAL(smr_ns_write(ns, &cr, f, 0, "tmpdata", 7), 7);
	CU_ASSERT_EQUAL(smr_ns_read(ns, f, 0, sizeof(buf), buf), 7);
	CU_ASSERT(!memcmp(buf, "tmpdata", 7));
	/* No entry can be named "/", which FUSE gives the file. */
	SMR_ASSERT_RC(smr_ns_lookup(ns, d, "/", &a), -ENOENT);
	SMR_ASSERT_RC(smr_ns_create(ns, &cr, d, "/", 0644, &a), -EINVAL);

	/* Named: a file like any other, which may be linked again. */
	SMR_ASSERT_OK(smr_ns_link(ns, f, d, "named", &a));
	CU_ASSERT_EQUAL(a.ino, f);
	CU_ASSERT_EQUAL(a.nlink, 1);
	SMR_ASSERT_OK(smr_ns_link(ns, f, ROOT, "again", &a));
	CU_ASSERT_EQUAL(a.nlink, 2);
	smr_ns_release(ns, f);
	SMR_ASSERT_OK(smr_ns_lookup(ns, d, "named", &a));
	CU_ASSERT_EQUAL(a.ino, f);
	CU_ASSERT_EQUAL(a.size, 7);
	/* Unlinked again, it may not come back. */
	SMR_ASSERT_OK(smr_ns_open_file(ns, f, O_RDWR, NULL));
	SMR_ASSERT_OK(smr_ns_unlink(ns, &root_cr, d, "named"));
	SMR_ASSERT_OK(smr_ns_unlink(ns, &root_cr, ROOT, "again"));
	SMR_ASSERT_RC(smr_ns_link(ns, f, d, "back", &a), -ENOENT);
	smr_ns_release(ns, f);
	SMR_ASSERT_RC(smr_ns_getattr(ns, f, &a), -ENOENT);
	CU_ASSERT_EQUAL(inodes_used(), used);

	/* Never named: gone with its data at the last release. */
	SMR_ASSERT_OK(smr_ns_tmpfile(ns, &cr, d, 0600, &g));
	CU_ASSERT_EQUAL(smr_ns_write(ns, &cr, g.ino, 0, "x", 1), 1);
	smr_ns_release(ns, g.ino);
	SMR_ASSERT_RC(smr_ns_getattr(ns, g.ino, &a), -ENOENT);
	SMR_ASSERT_RC(smr_ns_link(ns, g.ino, d, "late", &a), -ENOENT);
	CU_ASSERT_EQUAL(inodes_used(), used);

	/* Only in a directory that still is one. */
	SMR_ASSERT_RC(smr_ns_tmpfile(ns, &cr, mkfile(ROOT, "plain", 0644),
				     0600, &a), -ENOTDIR);
	SMR_ASSERT_OK(smr_ns_mkdir(ns, &root_cr, ROOT, "gone", 0755, &a));
	SMR_ASSERT_OK(smr_ns_open_file(ns, a.ino, O_RDONLY, NULL));
	SMR_ASSERT_OK(smr_ns_rmdir(ns, &root_cr, ROOT, "gone"));
	SMR_ASSERT_RC(smr_ns_tmpfile(ns, &cr, a.ino, 0600, &g), -ENOENT);
	smr_ns_release(ns, a.ino);

	/* Open when the namespace goes down: freed at the next open. */
	SMR_ASSERT_OK(smr_ns_tmpfile(ns, &cr, d, 0600, &g));
	CU_ASSERT_EQUAL(smr_ns_write(ns, &cr, g.ino, 0, "left", 4), 4);
	smr_ns_close(ns);
	SMR_ASSERT_OK(smr_ns_open(cow, NULL, &ns));
	SMR_ASSERT_RC(smr_ns_getattr(ns, g.ino, &a), -ENOENT);
	fs_teardown();
}

#ifndef NS_TEST_REAL
/*
 * A file that maps much is freed a part at a time after its unlink, each
 * part a transaction of its own (ns.c, NS_FREE_PART): a part that fails
 * leaves the inode, unlinked, with an orphan record and what the parts
 * before it left, for the next open to reclaim (in parts as well); the
 * unlink itself stands.
 */
/* Create @name in the root, left open, with @mib MiB of @buf. */
static uint64_t big_file(const char *name, const uint8_t *buf, int mib)
{
	struct smr_ns_attr a;

	SMR_ASSERT_OK(smr_ns_create(ns, &root_cr, ROOT, name, 0644, &a));
	for (int i = 0; i < mib; i++)
		CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, a.ino,
					     (uint64_t)i * SMR_MIB, buf,
					     SMR_MIB),
				(ssize_t)SMR_MIB);
	return a.ino;
}

static void test_big_unlink(void)
{
	enum { MIB = 40, PART = 16 * 8 + 1 };
	uint8_t *buf = malloc(SMR_MIB);
	struct smr_ns_attr a;
	uint64_t items, left, f;

	fs_setup();
	fill_pattern(buf, SMR_MIB, 7);
	items = memcow_nr_items(cow);
	f = big_file("f", buf, MIB);
	smr_ns_release(ns, f); /* create opened it */
	SMR_ASSERT_OK(smr_ns_unlink(ns, &root_cr, ROOT, "f"));
	SMR_ASSERT_RC(smr_ns_getattr(ns, f, &a), -ENOENT);
	CU_ASSERT_EQUAL(memcow_nr_items(cow), items);

	/* The same when a rename replaces it. */
	f = big_file("f", buf, MIB);
	smr_ns_release(ns, f);
	SMR_ASSERT_OK(smr_ns_mknod(ns, &root_cr, ROOT, "e", S_IFREG | 0644, 0,
				   &a));
	SMR_ASSERT_OK(smr_ns_rename(ns, &root_cr, ROOT, "e", ROOT, "f", 0));
	SMR_ASSERT_RC(smr_ns_getattr(ns, f, &a), -ENOENT);
	SMR_ASSERT_OK(smr_ns_unlink(ns, &root_cr, ROOT, "f"));
	CU_ASSERT_EQUAL(memcow_nr_items(cow), items);

	/* The second part fails: the first 16 MiB are gone, the rest stays
	 * (extent items of 128 KiB: 16 * 8 + 1 changes a part). */
	f = big_file("g", buf, MIB);
	/* Unlinked while open: freed at the release. */
	SMR_ASSERT_OK(smr_ns_unlink(ns, &root_cr, ROOT, "g"));
	memcow_fail_change(cow, PART + 3, -EIO);
	smr_ns_release(ns, f);
	CU_ASSERT_FALSE(memcow_fail_pending(cow));
	SMR_ASSERT_OK(smr_ns_getattr(ns, f, &a));
	CU_ASSERT_EQUAL(a.nlink, 0);
	CU_ASSERT_EQUAL(a.blocks * 512, (uint64_t)(MIB - 16) * SMR_MIB);
	SMR_ASSERT_RC(smr_ns_lookup(ns, ROOT, "g", &a), -ENOENT);
	smr_ns_close(ns);

	/* The next open reclaims it in parts too: its last one fails. */
	left = memcow_nr_items(cow);
	memcow_fail_change(cow, PART + 3, -EIO);
	SMR_ASSERT_RC(smr_ns_open(cow, NULL, &ns), -EIO);
	CU_ASSERT_EQUAL(memcow_nr_items(cow), left - (PART - 1));
	SMR_ASSERT_OK(smr_ns_open(cow, NULL, &ns));
	SMR_ASSERT_RC(smr_ns_getattr(ns, f, &a), -ENOENT);
	CU_ASSERT_EQUAL(memcow_nr_items(cow), items);
	free(buf);
	fs_teardown();
}
#endif

/* Many references at once (each of the table's shards grows past its
 * first size several times, and shrinks again): each still keeps its
 * unlinked inode, and only its own, whatever order the kernel forgets them
 * in. */
static void test_many_refs(void)
{
	enum { N = 20000 };
	struct smr_ns_opts o = { .track_lookups = true };
	static uint64_t ino[N];
	static bool gone[N];
	static int order[N];
	struct smr_ns_attr a;
	uint64_t seed = 77;
	char name[32];

	fs_setup();
	smr_ns_close(ns);
	SMR_ASSERT_OK(smr_ns_open(cow, &o, &ns));
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		SMR_ASSERT_OK(smr_ns_mknod(ns, &root_cr, ROOT, name,
					   S_IFREG | 0644, 0, &a));
		ino[i] = a.ino;
		SMR_ASSERT_OK(smr_ns_lookup(ns, ROOT, name, &a));
		SMR_ASSERT_OK(smr_ns_unlink(ns, &root_cr, ROOT, name));
		order[i] = i;
		gone[i] = false;
	}
	for (int i = N - 1; i > 0; i--) {
		int j = (int)(smr_test_rand(&seed) % (uint64_t)(i + 1));
		int t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	for (int k = 0; k < N; k++) {
		smr_ns_forget(ns, ino[order[k]], 2); /* mknod and lookup */
		gone[order[k]] = true;
		if (k % 2500 && k != N - 1)
			continue;
		for (int i = 0; i < N; i++)
			SMR_ASSERT_RC(smr_ns_getattr(ns, ino[i], &a),
				      gone[i] ? -ENOENT : 0);
	}
	fs_teardown();
}

static void test_timestamps_statfs(void)
{
	struct smr_ns_statfs st0, st1;
	struct smr_ns_attr a;
	uint64_t f;
	uint8_t buf[65536] = { 1 };
	bool fresh;

	fs_setup();
	f = mkfile(ROOT, "f", 0644);
	set_times(f, 1000);
	set_times(ROOT, 1000);
	CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f, 0, buf, sizeof(buf)),
			(ssize_t)sizeof(buf));
	SMR_ASSERT_OK(smr_ns_getattr(ns, f, &a));
	CU_ASSERT(a.mtime.tv_sec > 1000 && a.ctime.tv_sec > 1000);
	CU_ASSERT_EQUAL(a.atime.tv_sec, 1000);
	/* An open says a read is due to update atime (cached data must
	 * not serve it), and after the read that it is not. */
	fresh = true;
	SMR_ASSERT_OK(smr_ns_open_file(ns, f, O_RDONLY, &fresh));
	CU_ASSERT(!fresh);
	CU_ASSERT_EQUAL(smr_ns_read(ns, f, 0, 10, buf), 10);
	SMR_ASSERT_OK(smr_ns_getattr(ns, f, &a));
	CU_ASSERT(a.atime.tv_sec > 1000); /* atime <= mtime: relatime updates */
	SMR_ASSERT_OK(smr_ns_open_file(ns, f, O_RDONLY, &fresh));
	CU_ASSERT(fresh);
	smr_ns_release(ns, f);
	smr_ns_release(ns, f);
	SMR_ASSERT_OK(smr_ns_getattr(ns, ROOT, &a));
	CU_ASSERT_EQUAL(a.mtime.tv_sec, 1000); /* writing a file: not the dir */
	SMR_ASSERT_OK(smr_ns_setxattr(ns, &root_cr, ROOT, "user.x", "1", 1,
				      0));
	SMR_ASSERT_OK(smr_ns_getattr(ns, ROOT, &a));
	CU_ASSERT_EQUAL(a.mtime.tv_sec, 1000);
	CU_ASSERT(a.ctime.tv_sec > 1000);

	SMR_ASSERT_OK(smr_ns_statfs(ns, &st0));
	CU_ASSERT_EQUAL(st0.bsize, 4096);
	CU_ASSERT_EQUAL(st0.namemax, 255);
	CU_ASSERT(st0.blocks > 0 && st0.bavail <= st0.bfree &&
		  st0.bfree <= st0.blocks);
	CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f, 1 << 20, buf,
				     sizeof(buf)), (ssize_t)sizeof(buf));
	SMR_ASSERT_OK(smr_ns_statfs(ns, &st1));
	CU_ASSERT(st1.bavail + sizeof(buf) / 4096 <= st0.bavail);
	fs_teardown();
}

/* An answer, kept in *@arg. */
static void ack_result(void *arg, ssize_t result)
{
	*(ssize_t *)arg = result;
}

/*
 * A write the space runs out in: a short count, or, asked for all of it or
 * an error (the kernel's writeback of cached pages, which takes any count as
 * all written and would drop the rest unsaid), the error.
 */
static void test_write_whole(void)
{
	enum { CHUNK = 1024 * 1024 };
	struct smr_ns_setattr sa = { .valid = SMR_NS_SET_SIZE };
	uint8_t *buf = malloc(CHUNK);
	struct smr_ns_attr a;
	uint64_t f, off = 0;
	ssize_t n = 0;

	CU_ASSERT_FATAL(buf != NULL);
	fs_setup();
	f = mkfile(ROOT, "fill", 0644);
	fill_pattern(buf, CHUNK, 3);
	for (int i = 0; i < 100000; i++) {
		n = smr_ns_write(ns, &root_cr, f, off, buf, CHUNK);
		if (n != CHUNK)
			break;
		off += CHUNK;
	}
	if (n > 0)
		off += (uint64_t)n;
	CU_ASSERT_FATAL(off >= CHUNK);
	/* Half a chunk back, for the next writes to run out in. */
	off -= CHUNK / 2;
	sa.size = off;
	SMR_ASSERT_OK(smr_ns_setattr(ns, &root_cr, f, &sa, &a));
	smr_ns_write_ack(ns, &root_cr, f, off, buf, CHUNK, false, ack_result,
			 &n);
	CU_ASSERT(n > 0 && n < CHUNK);
	SMR_ASSERT_OK(smr_ns_setattr(ns, &root_cr, f, &sa, &a));
	smr_ns_write_ack(ns, &root_cr, f, off, buf, CHUNK, true, ack_result,
			 &n);
	CU_ASSERT_EQUAL(n, -ENOSPC);
	free(buf);
	fs_teardown();
}

/* A full device: a clear -ENOSPC, nothing written before it is lost, and
 * the space comes back once the file is gone and committed. */
static void test_enospc(void)
{
	enum { CHUNK = 1024 * 1024 };
	uint8_t *buf = malloc(CHUNK), *out = malloc(CHUNK);
	struct smr_ns_statfs st;
	uint64_t f, off = 0, whole;
	ssize_t n = 0;

	fs_setup();
#ifdef NS_TEST_REAL
	uint64_t k = mkfile(ROOT, "keep", 0644);

	fill_pattern(out, 5 * 4096, 77);
	CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, k, 0, out, 5 * 4096),
			5 * 4096);
#endif
	f = mkfile(ROOT, "fill", 0644);
	for (int i = 0; i < 100000; i++) {
		fill_pattern(buf, CHUNK, i);
		n = smr_ns_write(ns, &root_cr, f, off, buf, CHUNK);
		if (n != CHUNK)
			break;
		off += CHUNK;
	}
	/* The write that reaches the size may end short, in whole blocks;
	 * the next one fails. */
	whole = off;
	if (n > 0 && n < CHUNK) {
		CU_ASSERT_EQUAL(n % 4096, 0);
		off += (uint64_t)n;
		n = smr_ns_write(ns, &root_cr, f, off, buf, CHUNK);
	}
	CU_ASSERT_EQUAL(n, -ENOSPC);
	CU_ASSERT(off > 0);
#ifdef NS_TEST_REAL
	{
		/* Not a block left for data, nothing dead to clean: a
		 * truncate into a block, a punch and a zero range rewrite
		 * blocks and give space back, so they take the block from
		 * the reserve rather than fail (as ext4 never fails a
		 * shrinking truncate). */
		struct smr_ns_setattr sa = { .valid = SMR_NS_SET_SIZE,
					     .size = 5 * 4096 - 100 };
		struct smr_ns_attr a;
		uint64_t tail = off;

		while (smr_ns_write(ns, &root_cr, f, tail, buf, 4096) == 4096)
			tail += 4096;
		CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f, tail, buf, 4096),
				-ENOSPC);
		SMR_ASSERT_OK(smr_ns_setattr(ns, &root_cr, k, &sa, &a));
		SMR_ASSERT_OK(smr_ns_fallocate(ns, k, SMR_NS_FALLOC_PUNCH_HOLE |
					       SMR_NS_FALLOC_KEEP_SIZE, 1000,
					       100));
		SMR_ASSERT_OK(smr_ns_fallocate(ns, k, SMR_NS_FALLOC_ZERO_RANGE,
					       3 * 4096 + 10, 4096));
		memset(out + 1000, 0, 100);
		memset(out + 3 * 4096 + 10, 0, 4096);
		CU_ASSERT_EQUAL(smr_ns_read(ns, k, 0, CHUNK, buf),
				5 * 4096 - 100);
		CU_ASSERT(!memcmp(buf, out, 5 * 4096 - 100));
		/* And all of it commits. */
		SMR_ASSERT_OK(smr_ns_sync(ns));
	}
#endif
	SMR_ASSERT_OK(smr_ns_statfs(ns, &st));
	/* statfs must not promise space a write cannot get. */
	if (st.bavail * st.bsize >= CHUNK)
		fprintf(stderr, "at ENOSPC statfs says %llu blocks available\n",
			(unsigned long long)st.bavail);
	CU_ASSERT(st.bavail * st.bsize < CHUNK);
	for (uint64_t o = 0; o < whole; o += CHUNK) {
		fill_pattern(buf, CHUNK, o / CHUNK);
		CU_ASSERT_EQUAL(smr_ns_read(ns, f, o, CHUNK, out), CHUNK);
		if (memcmp(buf, out, CHUNK)) {
			CU_FAIL("data before ENOSPC changed");
			break;
		}
	}
	SMR_ASSERT_OK(smr_ns_unlink(ns, &root_cr, ROOT, "fill"));
	/* statfs counts the freed space at once, before any commit, and a
	 * writer gets it at once (the engine commits for it). What comes
	 * back is at most the size statfs reports, which the fill may not
	 * pass. */
	{
		struct smr_ns_statfs st2;
		uint64_t want = st.bavail + off / st.bsize;

		SMR_ASSERT_OK(smr_ns_statfs(ns, &st2));
		want = SMR_MIN(want, st2.blocks * 95 / 100);
		if (st2.bavail < want)
			fprintf(stderr, "freed %llu blocks: bavail %llu -> %llu\n",
				(unsigned long long)(off / st.bsize),
				(unsigned long long)st.bavail,
				(unsigned long long)st2.bavail);
		CU_ASSERT(st2.bavail >= want);
		CU_ASSERT(st2.bfree == st2.bavail);
	}
	f = mkfile(ROOT, "again", 0644);
	for (uint64_t o = 0; o + CHUNK <= off / 2; o += CHUNK)
		CU_ASSERT_EQUAL_FATAL(smr_ns_write(ns, &root_cr, f, o, buf,
						   CHUNK), CHUNK);
	fs_teardown();
	free(buf);
	free(out);
}

#ifndef NS_TEST_REAL
/* What a commit during a write found in the file: 1 all as before the
 * write, 2 all as after it, 3 anything else. */
struct whole_probe {
	uint64_t ino, off, len, size;
	const uint8_t *before, *data;
	int seen;
};

static void whole_probe_fn(void *arg)
{
	struct whole_probe *p = arg;
	uint8_t *b = malloc(p->size);
	bool whole = smr_ns_read(ns, p->ino, 0, p->size, b) ==
		     (ssize_t)p->size;

	if (whole && !memcmp(b, p->before, p->size))
		p->seen = 1;
	else if (whole && !memcmp(b + p->off, p->data, p->len) &&
		 !memcmp(b, p->before, p->off) &&
		 !memcmp(b + p->off + p->len, p->before + p->off + p->len,
			 p->size - p->off - p->len))
		p->seen = 2;
	else
		p->seen = 3;
	free(b);
}

/*
 * A write that runs out of space part way and gets the space by cleaning
 * (commits) is not made durable in part: the commits must not find the
 * first part written and the rest not (a crash there would leave a state
 * after no whole write, and the writer was told all of it went).
 */
static void test_enospc_whole(void)
{
	enum { MIB = 1024 * 1024, FSIZE = 3 * MIB, WLEN = 2 * MIB };
	uint8_t *before = malloc(FSIZE), *data = malloc(WLEN);
	uint8_t *buf = malloc(FSIZE);
	struct smr_ns_setattr sa = { .valid = SMR_NS_SET_SIZE };
	struct whole_probe p = { 0 };
	struct smr_ns_attr a;
	uint64_t f, g, h, off = 0;
	ssize_t n;

	fs_setup();
	memset(buf, 7, FSIZE);
	f = mkfile(ROOT, "f", 0644);
	fill_pattern(before, FSIZE, 1);
	CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f, 0, before, FSIZE), FSIZE);
	/* 4 MiB that an unlink makes dead space, free after a commit. */
	h = mkfile(ROOT, "h", 0644);
	for (uint64_t o = 0; o < 4 * MIB; o += MIB)
		CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, h, o, buf, MIB),
				MIB);
	/* The rest full, then 258 blocks free: room for the write's first
	 * piece (256 blocks), not for the rest. */
	g = mkfile(ROOT, "g", 0644);
	while ((n = smr_ns_write(ns, &root_cr, g, off, buf, MIB)) == MIB)
		off += MIB;
	while ((n = smr_ns_write(ns, &root_cr, g, off, buf, 4096)) == 4096)
		off += 4096;
	CU_ASSERT_EQUAL(n, -ENOSPC);
	CU_ASSERT_FATAL(off > 258 * 4096);
	sa.size = off - 258 * 4096;
	SMR_ASSERT_OK(smr_ns_setattr(ns, &root_cr, g, &sa, &a));
	SMR_ASSERT_OK(smr_ns_sync(ns));
	SMR_ASSERT_OK(smr_ns_unlink(ns, &root_cr, ROOT, "h"));

	/* 2 MiB at an offset in no block: 513 blocks. */
	fill_pattern(data, WLEN, 2);
	p = (struct whole_probe){ .ino = f, .off = 100, .len = WLEN,
				  .size = FSIZE, .before = before,
				  .data = data };
	memcow_on_commit(cow, whole_probe_fn, &p);
	CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f, 100, data, WLEN), WLEN);
	memcow_on_commit(cow, NULL, NULL);
	/* The write needed the commit (it cleans for the space), which
	 * found the file whole as it was. */
	CU_ASSERT_EQUAL(p.seen, 1);
	whole_probe_fn(&p);
	CU_ASSERT_EQUAL(p.seen, 2);
	CU_ASSERT_EQUAL(memcow_nr_errors(cow), 0);
	fs_teardown();
	free(before);
	free(data);
	free(buf);
}

/* ------------------------------------------------------------------------
 * All or nothing: a call that fails half-way changes nothing
 * ------------------------------------------------------------------------ */

/* The objects the calls under test work on (made by abort_fixture). */
static uint64_t ab_a, ab_b, ab_f, ab_frag;
static uint8_t *ab_buf;

enum { AB_BLOCKS = 24 };

/* A file of AB_BLOCKS blocks, each its own extent (written back to front,
 * so that none continues the one before it on the device). */
static uint64_t fragmented(uint64_t dir, const char *name)
{
	uint64_t f = mkfile(dir, name, 0644);

	for (int i = AB_BLOCKS - 1; i >= 0; i--) {
		fill_pattern(ab_buf, 4096, (uint64_t)i);
		CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f, (uint64_t)i * 4096,
					     ab_buf, 4096), 4096);
	}
	return f;
}

static void abort_fixture(void)
{
	struct smr_ns_attr a;

	/* Zeroed: fragmented() writes only its first block, and the
	 * setxattr below stores 9000 bytes of it in the tree, which the
	 * sweep's digests then hash. */
	ab_buf = calloc(AB_BLOCKS, 4096);
	ab_a = mkdir_(ROOT, "a");
	ab_b = mkdir_(ROOT, "b");
	ab_f = fragmented(ab_a, "f");
	ab_frag = fragmented(ab_a, "frag");
	SMR_ASSERT_OK(smr_ns_setxattr(ns, &root_cr, ab_frag, "user.big",
				      ab_buf, 9000, 0));
	mkdir_(ab_a, "d");
	mkfile(mkdir_(ab_a, "full"), "x", 0644);
	fragmented(ab_b, "y");
	SMR_ASSERT_OK(smr_ns_mkdir(ns, &root_cr, ab_b, "d2", 0755, &a));
	mkfile(a.ino, "inside", 0644);
	fragmented(ab_b, "victim");
	SMR_ASSERT_OK(smr_ns_setxattr(ns, &root_cr, ab_f, "user.x", "1", 1,
				      0));
}

static int ab_create(void)
{
	struct smr_ns_attr a;

	return smr_ns_mknod(ns, &root_cr, ab_a, "new", S_IFREG | 0644, 0, &a);
}

static int ab_mkdir(void)
{
	struct smr_ns_attr a;

	return smr_ns_mkdir(ns, &root_cr, ab_b, "newdir", 0755, &a);
}

static int ab_symlink(void)
{
	char target[3001];
	struct smr_ns_attr a;

	memset(target, 't', sizeof(target) - 1);
	target[sizeof(target) - 1] = 0;
	return smr_ns_symlink(ns, &root_cr, ab_a, "sl", target, &a);
}

static int ab_link(void)
{
	struct smr_ns_attr a;

	return smr_ns_link(ns, ab_f, ab_b, "f2", &a);
}

static uint64_t ab_tmp; /* the O_TMPFILE the sweep of ab_tmpfile made */

static int ab_tmpfile(void)
{
	struct smr_ns_attr a;
	int rc = smr_ns_tmpfile(ns, &root_cr, ab_b, 0644, &a);

	if (!rc)
		ab_tmp = a.ino;
	return rc;
}

/* Each failed try leaves it to be named by the next. */
static int ab_link_tmpfile(void)
{
	struct smr_ns_attr a;

	return smr_ns_link(ns, ab_tmp, ab_b, "tmp-named", &a);
}

static int ab_rename_whiteout(void)
{
	return smr_ns_rename(ns, &root_cr, ab_b, "f2", ab_a, "f3",
			     SMR_NS_RENAME_WHITEOUT);
}

static int ab_unlink_last(void)
{
	return smr_ns_unlink(ns, &root_cr, ab_b, "victim");
}

static int ab_rename_replace(void)
{
	return smr_ns_rename(ns, &root_cr, ab_a, "frag", ab_b, "y", 0);
}

static int ab_rename_dir(void)
{
	return smr_ns_rename(ns, &root_cr, ab_a, "d", ab_b, "d", 0);
}

static int ab_exchange(void)
{
	return smr_ns_rename(ns, &root_cr, ab_b, "d2", ab_a, "f",
			     SMR_NS_RENAME_EXCHANGE);
}

static int ab_rmdir(void)
{
	return smr_ns_rmdir(ns, &root_cr, ab_b, "newdir");
}

/* Over many extents, not block-aligned: read-modify-write at both ends. */
static int ab_write(void)
{
	ssize_t n;

	fill_pattern(ab_buf, AB_BLOCKS * 4096, 77);
	n = smr_ns_write(ns, &root_cr, ab_frag, 1000, ab_buf, 20 * 4096);
	return n < 0 ? (int)n : 0;
}

/* Whole blocks: the path that maps one piece per transaction. */
static int ab_write_aligned(void)
{
	ssize_t n;

	fill_pattern(ab_buf, AB_BLOCKS * 4096, 78);
	n = smr_ns_write(ns, &root_cr, ab_frag, 4096, ab_buf, 16 * 4096);
	return n < 0 ? (int)n : 0;
}

/* An overwrite of one block that is one extent: the extent's item is
 * taken in place. */
static int ab_write_block(void)
{
	ssize_t n;

	fill_pattern(ab_buf, 4096, 79);
	n = smr_ns_write(ns, &root_cr, ab_f, 5 * 4096, ab_buf, 4096);
	return n < 0 ? (int)n : 0;
}

static int ab_truncate(void)
{
	struct smr_ns_setattr sa = { .valid = SMR_NS_SET_SIZE, .size = 5000 };
	struct smr_ns_attr a;

	return smr_ns_setattr(ns, &root_cr, ab_frag, &sa, &a);
}

static int ab_punch(void)
{
	return smr_ns_fallocate(ns, ab_f, SMR_NS_FALLOC_PUNCH_HOLE |
				SMR_NS_FALLOC_KEEP_SIZE, 3000, 10 * 4096);
}

static int ab_setxattr(void)
{
	fill_pattern(ab_buf, 9000, 5);
	return smr_ns_setxattr(ns, &root_cr, ab_frag, "user.big", ab_buf,
			       7000, SMR_NS_XATTR_REPLACE);
}

static int ab_removexattr(void)
{
	return smr_ns_removexattr(ns, &root_cr, ab_frag, "user.big");
}

/*
 * Run @op with its n-th tree change failing with -EIO, for n = 1, 2, ...:
 * each such run must return -EIO and leave every item and the space in use
 * exactly as they were, and the audit clean; the sweep ends with the first
 * run that makes fewer than n changes, which must succeed.
 */
static void abort_sweep(const char *what, int (*op)(void))
{
	uint64_t before, problems;
	unsigned int n;
	int rc = 0;

	for (n = 1; n < 100000; n++) {
		before = memcow_digest(cow);
		memcow_fail_change(cow, n, -EIO);
		rc = op();
		if (memcow_fail_pending(cow))
			break;
		if (rc != -EIO || memcow_digest(cow) != before) {
			fprintf(stderr, "%s: change %u failed: returned %d, "
				"%s\n", what, n, rc,
				memcow_digest(cow) == before ?
				"nothing changed" : "something changed");
			CU_FAIL("a call that failed half-way changed something");
			return;
		}
		problems = 0;
		SMR_ASSERT_OK(smr_ns_check(ns, &problems));
		CU_ASSERT_EQUAL(problems, 0);
	}
	memcow_fail_change(cow, 0, 0);
	if (rc)
		fprintf(stderr, "%s: with no failure: %d\n", what, rc);
	SMR_ASSERT_OK(rc);
	CU_ASSERT(n > 2); /* it did change several items */
}

static void test_abort(void)
{
	static const struct {
		const char *what;
		int (*op)(void);
	} ops[] = {
		{ "create", ab_create },
		{ "mkdir", ab_mkdir },
		{ "symlink", ab_symlink },
		{ "link", ab_link },
		{ "O_TMPFILE", ab_tmpfile },
		{ "link of an O_TMPFILE", ab_link_tmpfile },
		{ "rename with a whiteout", ab_rename_whiteout },
		{ "unlink of the last link", ab_unlink_last },
		{ "rename over a file", ab_rename_replace },
		{ "rename of a directory", ab_rename_dir },
		{ "rename exchange", ab_exchange },
		{ "rmdir", ab_rmdir },
		{ "write", ab_write },
		{ "aligned write", ab_write_aligned },
		{ "overwrite of a one-block extent", ab_write_block },
		{ "truncate", ab_truncate },
		{ "punch hole", ab_punch },
		{ "setxattr", ab_setxattr },
		{ "removexattr", ab_removexattr },
	};
	uint8_t *out;

	fs_setup();
	abort_fixture();
	for (size_t i = 0; i < SMR_ARRAY_SIZE(ops); i++)
		abort_sweep(ops[i].what, ops[i].op);
	/* The last successful write and truncate left what they should. */
	out = malloc(5000);
	fill_pattern(ab_buf, AB_BLOCKS * 4096, 78);
	CU_ASSERT_EQUAL(smr_ns_read(ns, ab_frag, 4096, 904, out), 904);
	CU_ASSERT(!memcmp(out, ab_buf, 904));
	free(out);
	free(ab_buf);
	fs_teardown();
}
#endif

/* Several threads at once, each on its own files in a shared directory. */
struct worker {
	int id;
	int errors;
};

static void *worker_run(void *arg)
{
	struct worker *w = arg;
	uint8_t buf[20000], out[20000];
	struct smr_ns_attr a;
	char name[32];

	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "w%d-%d", w->id, i);
		fill_pattern(buf, sizeof(buf), (uint64_t)w->id * 1000 + i);
		if (smr_ns_mknod(ns, &root_cr, ROOT, name, S_IFREG | 0644, 0,
				 &a) ||
		    smr_ns_write(ns, &root_cr, a.ino, (uint64_t)i * 100, buf,
				 sizeof(buf)) != (ssize_t)sizeof(buf) ||
		    smr_ns_read(ns, a.ino, (uint64_t)i * 100, sizeof(out),
				out) != (ssize_t)sizeof(out) ||
		    memcmp(buf, out, sizeof(buf))) {
			w->errors++;
			continue;
		}
		if (i % 2 && smr_ns_unlink(ns, &root_cr, ROOT, name))
			w->errors++;
	}
	return NULL;
}

static void test_threads(void)
{
	enum { N = 4 };
	struct worker w[N];
	pthread_t th[N];
	struct smr_ns_attr a;
	char name[32];

	fs_setup();
	for (int i = 0; i < N; i++) {
		w[i].id = i;
		w[i].errors = 0;
		CU_ASSERT_EQUAL(pthread_create(&th[i], NULL, worker_run, &w[i]),
				0);
	}
	for (int i = 0; i < N; i++) {
		pthread_join(th[i], NULL);
		CU_ASSERT_EQUAL(w[i].errors, 0);
	}
	for (int i = 0; i < N; i++)
		for (int j = 0; j < 40; j++) {
			snprintf(name, sizeof(name), "w%d-%d", i, j);
			SMR_ASSERT_RC(smr_ns_lookup(ns, ROOT, name, &a),
				      j % 2 ? -ENOENT : 0);
		}
	fs_teardown();
}

/* Random name operations over a few names and directories, with only the
 * errors POSIX allows, and the audit holding all along. */
static bool allowed_rc(int rc)
{
	static const int ok[] = { 0, -EEXIST, -ENOENT, -ENOTDIR, -EISDIR,
				  -ENOTEMPTY, -EINVAL, -EPERM };

	for (size_t i = 0; i < SMR_ARRAY_SIZE(ok); i++)
		if (rc == ok[i])
			return true;
	fprintf(stderr, "unexpected result %d\n", rc);
	return false;
}

static void test_random_names(void)
{
	uint64_t dirs[4], rnd = 2024, problems;
	struct smr_ns_attr a;
	char n1[8], n2[8];

	fs_setup();
	dirs[0] = ROOT;
	dirs[1] = mkdir_(ROOT, "d1");
	dirs[2] = mkdir_(ROOT, "d2");
	dirs[3] = mkdir_(dirs[1], "d3");
	for (int i = 0; i < 3000; i++) {
		uint64_t p1 = dirs[smr_test_rand(&rnd) % 4];
		uint64_t p2 = dirs[smr_test_rand(&rnd) % 4];
		int op = (int)(smr_test_rand(&rnd) % 9), rc = 0;

		snprintf(n1, sizeof(n1), "n%d", (int)(smr_test_rand(&rnd) % 12));
		snprintf(n2, sizeof(n2), "n%d", (int)(smr_test_rand(&rnd) % 12));
		switch (op) {
		case 0:
			rc = smr_ns_mknod(ns, &root_cr, p1, n1, S_IFREG | 0644,
					  0, &a);
			break;
		case 1:
			rc = smr_ns_mkdir(ns, &root_cr, p1, n1, 0755, &a);
			break;
		case 2:
			rc = smr_ns_unlink(ns, &root_cr, p1, n1);
			break;
		case 3:
			rc = smr_ns_rmdir(ns, &root_cr, p1, n1);
			break;
		case 4:
		case 5:
			rc = smr_ns_rename(ns, &root_cr, p1, n1, p2, n2,
					   (unsigned int)(smr_test_rand(&rnd) % 3));
			break;
		case 6:
			rc = smr_ns_lookup(ns, p1, n1, &a);
			if (rc == 0)
				rc = smr_ns_link(ns, a.ino, p2, n2, &a);
			break;
		case 7:
			rc = smr_ns_symlink(ns, &root_cr, p1, n1, n2, &a);
			break;
		case 8:
			rc = smr_ns_lookup(ns, p1, n1, &a);
			if (rc == 0 && S_ISREG(a.mode))
				rc = smr_ns_write(ns, &root_cr, a.ino,
						  smr_test_rand(&rnd) % 20000,
						  n2, 2) == 2 ? 0 : -EIO;
			break;
		}
		CU_ASSERT(allowed_rc(rc));
		if (i % 500 == 499) {
			SMR_ASSERT_OK(smr_ns_check(ns, &problems));
			CU_ASSERT_EQUAL(problems, 0);
		}
	}
	fs_teardown();
}

/* The extent walk sees every extent once, with its device range. */
struct ext_sum {
	uint64_t n, bytes, last_ino;
	bool ordered;
};

static int ext_sum_fn(void *arg, uint64_t ino, uint64_t file_off,
		      uint64_t dev_off, uint64_t len)
{
	struct ext_sum *x = arg;

	x->ordered = x->ordered && ino >= x->last_ino && len % 4096 == 0;
	x->last_ino = ino;
	x->n++;
	x->bytes += len;
	return 0;
}

static void test_extent_walk(void)
{
	struct ext_sum x = { .ordered = true };
	struct smr_ns_attr a, b;
	uint8_t buf[3 * 4096] = { 1 };
	uint64_t f, g;

	fs_setup();
	f = mkfile(ROOT, "f", 0644);
	g = mkfile(ROOT, "g", 0644);
	CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f, 0, buf, sizeof(buf)),
			(ssize_t)sizeof(buf));
	CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, g, 1 << 20, buf, 4096),
			4096);
	SMR_ASSERT_OK(smr_ns_for_each_extent(ns, ext_sum_fn, &x));
	SMR_ASSERT_OK(smr_ns_getattr(ns, f, &a));
	SMR_ASSERT_OK(smr_ns_getattr(ns, g, &b));
	CU_ASSERT(x.n >= 2);
	CU_ASSERT(x.ordered);
	CU_ASSERT_EQUAL(x.bytes, (a.blocks + b.blocks) * 512);
	fs_teardown();
}

/* The extents of one file: count, bytes, and whether they tile
 * [0, x->end) without a hole. */
struct file_exts {
	uint64_t ino, n, bytes, end, max;
	bool tiled;
};

static int file_exts_fn(void *arg, uint64_t ino, uint64_t file_off,
			uint64_t dev_off, uint64_t len)
{
	struct file_exts *x = arg;

	(void)dev_off;
	if (ino != x->ino)
		return 0;
	x->tiled = x->tiled && file_off == x->end;
	x->end = file_off + len;
	x->n++;
	x->bytes += len;
	x->max = SMR_MAX(x->max, len);
	return 0;
}

static struct file_exts file_exts(uint64_t ino)
{
	struct file_exts x = { .ino = ino, .tiled = true };

	SMR_ASSERT_OK(smr_ns_for_each_extent(ns, file_exts_fn, &x));
	return x;
}

/* @nb blocks of a pattern into @f (and @model), back to front: one extent
 * a block, as no block merges into the one before it. */
static void write_back_to_front(uint64_t f, uint8_t *model, int nb)
{
	for (int i = nb - 1; i >= 0; i--) {
		fill_pattern(model + i * 4096, 4096, (uint64_t)i);
		CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f, (uint64_t)i * 4096,
					     model + i * 4096, 4096), 4096);
	}
}

/* Random overwrites of a file whose extents are as small as the writes
 * take each extent's item in place: the data, the map and the space
 * stay right, and a sequential rewrite afterwards still merges. */
static void test_overwrite_extents(void)
{
	enum { NB = 64 };
	uint8_t *model = malloc(NB * 4096), *out = malloc(NB * 4096);
	struct smr_ns_attr a;
	struct file_exts x;
	uint64_t f, problems = 0, r = 12345;

	fs_setup();
	f = mkfile(ROOT, "f", 0644);
	write_back_to_front(f, model, NB);
	x = file_exts(f);
	CU_ASSERT_EQUAL(x.n, NB);
	for (int k = 0; k < 4 * NB; k++) {
		uint64_t i;

		r = r * 6364136223846793005ULL + 1442695040888963407ULL;
		i = (r >> 33) % NB;
		fill_pattern(model + i * 4096, 4096, 1000 + (uint64_t)k);
		CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f, i * 4096,
					     model + i * 4096, 4096), 4096);
	}
	CU_ASSERT_EQUAL(smr_ns_read(ns, f, 0, NB * 4096, out), NB * 4096);
	CU_ASSERT(!memcmp(out, model, NB * 4096));
	x = file_exts(f);
	CU_ASSERT(x.tiled);
	CU_ASSERT_EQUAL(x.end, NB * 4096);
	CU_ASSERT_EQUAL(x.bytes, NB * 4096);
	SMR_ASSERT_OK(smr_ns_getattr(ns, f, &a));
	CU_ASSERT_EQUAL(a.blocks * 512, NB * 4096);
	SMR_ASSERT_OK(smr_ns_check(ns, &problems));
	CU_ASSERT_EQUAL(problems, 0);

	/* Front to back, one block at a time: each new block follows the
	 * one before it on the device and merges into its extent up to 32
	 * blocks (a zone boundary may split the run once). */
	for (int i = 0; i < NB; i++) {
		fill_pattern(model + i * 4096, 4096, 5000 + (uint64_t)i);
		CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f, (uint64_t)i * 4096,
					     model + i * 4096, 4096), 4096);
	}
	CU_ASSERT_EQUAL(smr_ns_read(ns, f, 0, NB * 4096, out), NB * 4096);
	CU_ASSERT(!memcmp(out, model, NB * 4096));
	x = file_exts(f);
	CU_ASSERT(x.tiled);
	CU_ASSERT_EQUAL(x.bytes, NB * 4096);
	CU_ASSERT(x.n <= NB / 32 + 1);
	CU_ASSERT(x.max <= 32 * 4096);
	SMR_ASSERT_OK(smr_ns_check(ns, &problems));
	CU_ASSERT_EQUAL(problems, 0);
	free(model);
	free(out);
	fs_teardown();
}

/* A model of one file: what every read of it must return. */
struct tmodel {
	uint64_t ino;
	uint8_t *b;
	uint64_t size;
};

static void tm_write(struct tmodel *m, uint64_t off, const void *buf,
		     size_t len)
{
	CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, m->ino, off, buf, len),
			(ssize_t)len);
	memcpy(m->b + off, buf, len);
	m->size = SMR_MAX(m->size, off + len);
}

static void tm_truncate(struct tmodel *m, uint64_t size)
{
	struct smr_ns_setattr sa = { .valid = SMR_NS_SET_SIZE, .size = size };

	SMR_ASSERT_OK(smr_ns_setattr(ns, &root_cr, m->ino, &sa, NULL));
	/* Past the size the model holds zeros, as the file reads. */
	if (size < m->size)
		memset(m->b + size, 0, m->size - size);
	m->size = size;
}

/* The whole file reads as the model says, and its size and blocks. */
static bool tm_same(const struct tmodel *m)
{
	uint8_t *got = malloc(m->size + 4096);
	struct smr_ns_attr a;
	bool same;

	if (!got)
		return false;
	same = smr_ns_read(ns, m->ino, 0, m->size + 4096, got) ==
		       (ssize_t)m->size &&
	       memcmp(got, m->b, m->size) == 0 &&
	       !smr_ns_getattr(ns, m->ino, &a) && a.size == m->size &&
	       (m->size == 0 || a.blocks > 0);
	free(got);
	return same;
}

/* Items of @type of @ino (TAIL: the namespace's, for @ino). */
static unsigned int items_of(uint64_t ino, uint8_t type)
{
	struct smr_key from = { ino, type, 0 }, found;
	unsigned int n = 0;
	size_t len = 0;

	if (type == SMR_NS_T_TAIL) {
		for (uint32_t p = 0; p < 2; p++) {
			struct smr_key k = { SMR_NS_META_OBJID, type,
					     SMR_NS_TAIL_OFFSET(ino, p) };

			len = 0;
			n += !smr_bt_lookup(cow, SMR_TREE_FS, &k, NULL, &len);
		}
		return n;
	}
	while (!smr_bt_next(cow, SMR_TREE_FS, &from, &found, NULL, &len) &&
	       found.objid == ino && found.type == type) {
		n++;
		from = found;
		from.offset++;
		len = 0;
	}
	return n;
}

/*
 * Small appends keep the file's last block in the tree (tail items), not
 * on the device: reads, truncates, punches, SEEK_DATA/SEEK_HOLE, writes
 * over it, past it and far from it, all see the bytes written, and the
 * audit finds the tail consistent after each step.
 */
static void test_tails(void)
{
	struct tmodel m = { 0 };
	uint8_t buf[12000];
	uint64_t r, problems;
	unsigned int seed = 5;

	fs_setup();
	m.b = calloc(1, 1 << 21);
	CU_ASSERT_FATAL(m.b != NULL);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)rand_r(&seed);
	m.ino = mkfile(ROOT, "log", 0644);
	/* Appends of 1 to 300 bytes: the tail grows over part boundaries
	 * and blocks. */
	for (int i = 0; i < 200; i++) {
		size_t n = 1 + (size_t)rand_r(&seed) % 300;

		tm_write(&m, m.size, buf + i, n);
		if (i % 20 == 0)
			CU_ASSERT_TRUE(tm_same(&m));
	}
	CU_ASSERT_TRUE(tm_same(&m));
	CU_ASSERT(items_of(m.ino, SMR_NS_T_TAIL) >= 1);
	SMR_ASSERT_OK(smr_ns_check(ns, &problems));
	CU_ASSERT_EQUAL(problems, 0);

	/* Writes past the end of a short tail, inside its block: the gap
	 * reads as zeros, the first part grows to its full length. */
	{
		struct tmodel g = { .ino = mkfile(ROOT, "gap", 0644),
				    .b = calloc(1, 8192) };

		CU_ASSERT_FATAL(g.b != NULL);
		tm_write(&g, 0, buf, 1500);
		tm_write(&g, 2100, buf, 300);
		CU_ASSERT_TRUE(tm_same(&g));
		tm_write(&g, 3000, buf, 10);
		tm_write(&g, 4000, buf, 50);
		CU_ASSERT_TRUE(tm_same(&g));
		SMR_ASSERT_OK(smr_ns_check(ns, &problems));
		CU_ASSERT_EQUAL(problems, 0);
		free(g.b);
	}
	/* An overwrite inside the tail, not reaching the end: the items
	 * change, the length stays; one that starts in the block before
	 * rewrites both to the device, and the tail goes. */
	tm_write(&m, SMR_ROUND_DOWN(m.size, 4096) + 1, "xyz", 3);
	CU_ASSERT_TRUE(tm_same(&m));
	CU_ASSERT(items_of(m.ino, SMR_NS_T_TAIL) >= 1);
	tm_write(&m, SMR_ROUND_DOWN(m.size, 4096) - 2, "abcd", 4);
	CU_ASSERT_TRUE(tm_same(&m));
	CU_ASSERT_EQUAL(items_of(m.ino, SMR_NS_T_TAIL), 0);
	/* Appending again makes one. */
	tm_write(&m, m.size, buf, 10);
	CU_ASSERT(items_of(m.ino, SMR_NS_T_TAIL) >= 1);
	/* Shrunk inside the tail block, then below it, then grown. */
	tm_truncate(&m, m.size - 5);
	CU_ASSERT_TRUE(tm_same(&m));
	tm_truncate(&m, SMR_ROUND_DOWN(m.size, 4096) - 100);
	CU_ASSERT_TRUE(tm_same(&m));
	tm_write(&m, m.size, buf, 50);
	tm_truncate(&m, m.size + 9000);
	CU_ASSERT_TRUE(tm_same(&m));
	/* The tail is not the last block now; a write past it ends in a
	 * block of its own, and the old tail goes to the device. */
	tm_write(&m, m.size + 3000, buf, 700);
	CU_ASSERT_TRUE(tm_same(&m));
	CU_ASSERT(items_of(m.ino, SMR_NS_T_TAIL) >= 1);
	/* A big unaligned append: whole blocks and a tail. */
	tm_write(&m, m.size, buf, sizeof(buf));
	CU_ASSERT_TRUE(tm_same(&m));
	SMR_ASSERT_OK(smr_ns_check(ns, &problems));
	CU_ASSERT_EQUAL(problems, 0);
	/* A punch inside the tail zeroes its bytes; one over the start of
	 * its block to the end drops it. */
	r = SMR_ROUND_DOWN(m.size, 4096);
	SMR_ASSERT_OK(smr_ns_fallocate(ns, m.ino, SMR_NS_FALLOC_PUNCH_HOLE |
				       SMR_NS_FALLOC_KEEP_SIZE, r + 10, 20));
	memset(m.b + r + 10, 0, 20);
	CU_ASSERT_TRUE(tm_same(&m));
	SMR_ASSERT_OK(smr_ns_fallocate(ns, m.ino, SMR_NS_FALLOC_PUNCH_HOLE |
				       SMR_NS_FALLOC_KEEP_SIZE, r - 4096,
				       m.size - r + 4096));
	memset(m.b + r - 4096, 0, m.size - r + 4096);
	CU_ASSERT_TRUE(tm_same(&m));
	CU_ASSERT_EQUAL(items_of(m.ino, SMR_NS_T_TAIL), 0);

	/* A file of a few bytes far out: data only in the tail block. */
	tm_truncate(&m, 0);
	tm_write(&m, 1 << 20, "hello", 5);
	CU_ASSERT_TRUE(tm_same(&m));
	SMR_ASSERT_OK(smr_ns_lseek(ns, m.ino, 0, SEEK_DATA, &r));
	CU_ASSERT_EQUAL(r, 1 << 20);
	SMR_ASSERT_OK(smr_ns_lseek(ns, m.ino, 0, SEEK_HOLE, &r));
	CU_ASSERT_EQUAL(r, 0);
	SMR_ASSERT_OK(smr_ns_lseek(ns, m.ino, (1 << 20) + 2, SEEK_DATA, &r));
	CU_ASSERT_EQUAL(r, (1 << 20) + 2);
	SMR_ASSERT_OK(smr_ns_lseek(ns, m.ino, 1 << 20, SEEK_HOLE, &r));
	CU_ASSERT_EQUAL(r, m.size);
	/* A block written in whole over it takes its place. */
	memset(buf, 9, 4096);
	tm_write(&m, 1 << 20, buf, 4096);
	CU_ASSERT_TRUE(tm_same(&m));
	CU_ASSERT_EQUAL(items_of(m.ino, SMR_NS_T_TAIL), 0);
	tm_write(&m, m.size, "end", 3);
	CU_ASSERT(items_of(m.ino, SMR_NS_T_TAIL) >= 1);
#ifdef NS_TEST_REAL
	/* Kept across a mount, and a power cut keeps what was committed. */
	fs_reopen(NULL, false);
	CU_ASSERT_TRUE(tm_same(&m));
	SMR_ASSERT_OK(smr_ns_sync(ns));
	fs_reopen(NULL, true);
	CU_ASSERT_TRUE(tm_same(&m));
#endif
	/* Unlinked while open, appended to, closed: the tail goes with the
	 * file (the audit at teardown finds no item left). */
	SMR_ASSERT_OK(smr_ns_open_file(ns, m.ino, O_RDWR, NULL));
	SMR_ASSERT_OK(smr_ns_unlink(ns, &root_cr, ROOT, "log"));
	tm_write(&m, m.size, "orphan", 6);
	CU_ASSERT_TRUE(tm_same(&m));
	CU_ASSERT(items_of(m.ino, SMR_NS_T_TAIL) >= 1);
	smr_ns_release(ns, m.ino);
	CU_ASSERT_EQUAL(items_of(m.ino, SMR_NS_T_TAIL), 0);
	free(m.b);
	fs_teardown();
}

#ifdef NS_TEST_REAL
/*
 * A file appended to in small writes costs the device about what was
 * written: 100-byte appends wrote a 4 KiB block each (42 device bytes per
 * user byte); the tail block now waits in the tree for a commit, and the
 * device gets each block once, when it is full. So does a small file
 * rewritten in place.
 */
static void test_tail_appends(void)
{
	struct smr_cow_gc_stats a, b;
	uint8_t line[100];
	uint64_t f;

	fs_setup();
	memset(line, 'x', sizeof(line));
	f = mkfile(ROOT, "log", 0644);
	smr_cow_gc_stats(cow, &a);
	for (int i = 0; i < 2000; i++)
		CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f,
					     (uint64_t)i * sizeof(line),
					     line, sizeof(line)),
				(ssize_t)sizeof(line));
	SMR_ASSERT_OK(smr_ns_sync(ns));
	smr_cow_gc_stats(cow, &b);
	CU_ASSERT_EQUAL(b.user_bytes - a.user_bytes, 2000 * sizeof(line));
	/* 200,000 bytes: 48 full blocks, a commit's nodes and the tail. */
	CU_ASSERT(b.device_bytes - a.device_bytes < 2 * 2000 * sizeof(line));
	/* A small file rewritten in place, as a state file is: its block
	 * stays in the tree (each rewrite wrote a block before). */
	f = mkfile(ROOT, "state", 0644);
	CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f, 0, line, sizeof(line)),
			(ssize_t)sizeof(line));
	smr_cow_gc_stats(cow, &a);
	for (int i = 0; i < 1000; i++)
		CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f, (uint64_t)i % 90,
					     line, 10),
				10);
	SMR_ASSERT_OK(smr_ns_sync(ns));
	smr_cow_gc_stats(cow, &b);
	CU_ASSERT(b.device_bytes - a.device_bytes < 100 * 4096);
	fs_teardown();
}
#endif

/* A namespace of version 1 (before tails) is mounted as it is: small
 * writes go to the device, and the version stays. */
static void test_tails_v1(void)
{
	struct smr_key k = { SMR_NS_META_OBJID, SMR_NS_T_META, 0 };
	struct smr_ns_meta_d d;
	struct smr_txn *t;
	size_t len = sizeof(d);
	uint64_t f;

	fs_setup();
	smr_ns_close(ns);
	SMR_ASSERT_OK(smr_bt_lookup(cow, SMR_TREE_FS, &k, &d, &len));
	d.version = htole32(1);
	SMR_ASSERT_OK(smr_txn_begin(cow, &t));
	SMR_ASSERT_OK(smr_bt_update(t, SMR_TREE_FS, &k, &d, sizeof(d)));
	smr_txn_end(t);
	SMR_ASSERT_OK(smr_ns_open(cow, NULL, &ns));
	f = mkfile(ROOT, "f", 0644);
	CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f, 0, "abc", 3), 3);
	CU_ASSERT_EQUAL(items_of(f, SMR_NS_T_TAIL), 0);
	CU_ASSERT_EQUAL(items_of(f, SMR_NS_T_EXTENT), 1);
	len = sizeof(d);
	SMR_ASSERT_OK(smr_bt_lookup(cow, SMR_TREE_FS, &k, &d, &len));
	CU_ASSERT_EQUAL(le32toh(d.version), 1);
	/* A version from the future is refused. */
	smr_ns_close(ns);
	d.version = htole32(SMR_NS_VERSION + 1);
	SMR_ASSERT_OK(smr_txn_begin(cow, &t));
	SMR_ASSERT_OK(smr_bt_update(t, SMR_TREE_FS, &k, &d, sizeof(d)));
	smr_txn_end(t);
	CU_ASSERT_EQUAL(smr_ns_open(cow, NULL, &ns), -EOPNOTSUPP);
	d.version = htole32(SMR_NS_VERSION);
	SMR_ASSERT_OK(smr_txn_begin(cow, &t));
	SMR_ASSERT_OK(smr_bt_update(t, SMR_TREE_FS, &k, &d, sizeof(d)));
	smr_txn_end(t);
	SMR_ASSERT_OK(smr_ns_open(cow, NULL, &ns));
	fs_teardown();
}

/* The bytes users write are counted, not the blocks written for them,
 * and the count is kept with the filesystem. */
static void test_user_bytes(void)
{
	struct smr_cow_gc_stats a, b;
	uint8_t buf[5000];
	uint64_t f;

	fs_setup();
	memset(buf, 7, sizeof(buf));
	f = mkfile(ROOT, "f", 0644);
	smr_cow_gc_stats(cow, &a);
	CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f, 100, buf, 1000), 1000);
	CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f, 8192, buf, 4096), 4096);
	CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f, 20000, buf, 5000), 5000);
	CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f, 0, buf, 0), 0);
	smr_cow_gc_stats(cow, &b);
	CU_ASSERT_EQUAL(b.user_bytes - a.user_bytes, 1000 + 4096 + 5000);
#ifdef NS_TEST_REAL
	/* The device took whole blocks: one, one and two. */
	CU_ASSERT(b.device_bytes - a.device_bytes >= 4 * 4096);
	fs_reopen(NULL, false);
	smr_cow_gc_stats(cow, &a);
	CU_ASSERT_EQUAL(a.user_bytes, b.user_bytes);
#endif
	fs_teardown();
}

/*
 * A big write is mapped in items of 32 blocks: random 4 KiB overwrites of
 * a file laid out in big writes then change little of the map each, and
 * an fsync after 256 of them is a log record, not a commit (with items of
 * 256 blocks each overwrite rewrote 2 KiB of checksums, and the record
 * outgrew the log).
 */
static void test_big_write_items(void)
{
	enum { MB = 1 << 20, NW = 256 };
	uint64_t nmb = 1, f, problems = 0, r = 777;
	uint8_t *buf = malloc(MB), *blk = malloc(4096), *out = malloc(4096);
	uint64_t *offs = malloc(NW * sizeof(*offs));
	struct file_exts x;

	fs_setup();
#ifdef NS_TEST_REAL
	{
		struct smr_cow_opts o = { .fsync_log = true,
					  .commit_secs = 3600 };

		fs_reopen(&o, false);
		nmb = 64;
	}
#endif
	f = mkfile(ROOT, "f", 0644);
	for (uint64_t i = 0; i < nmb; i++) {
		fill_pattern(buf, MB, i);
		CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f, i * MB, buf, MB),
				MB);
	}
	x = file_exts(f);
	CU_ASSERT(x.tiled);
	CU_ASSERT_EQUAL(x.bytes, nmb * MB);
	CU_ASSERT_EQUAL(x.max, 32 * 4096);
	/* A zone boundary may cut one more. */
	CU_ASSERT(x.n >= nmb * 8 && x.n <= nmb * 8 + 1 + nmb / 16);
	CU_ASSERT_EQUAL(smr_ns_read(ns, f, (nmb - 1) * MB, MB, buf), MB);
	fill_pattern(out, 4096, nmb - 1);
	CU_ASSERT(!memcmp(buf, out, 4096));
	SMR_ASSERT_OK(smr_ns_check(ns, &problems));
	CU_ASSERT_EQUAL(problems, 0);
	SMR_ASSERT_OK(smr_ns_sync(ns));

	/* (The memory store leaves these at zero.) */
	struct smr_cow_fsstat before, after;

	smr_cow_fsstat(cow, &before);
	for (int k = 0; k < NW; k++) {
		r = r * 6364136223846793005ULL + 1442695040888963407ULL;
		offs[k] = ((r >> 33) % (nmb * MB / 4096)) * 4096;
		fill_pattern(blk, 4096, 1000 + (uint64_t)k);
		CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f, offs[k], blk,
					     4096), 4096);
	}
	SMR_ASSERT_OK(smr_ns_fsync(ns, f, false));
	smr_cow_fsstat(cow, &after);
#ifdef NS_TEST_REAL
	CU_ASSERT_EQUAL(after.commits, before.commits);
	CU_ASSERT_EQUAL(after.log_records, before.log_records + 1);
	/* A power cut now: the record brings every overwrite back. */
	fs_reopen(NULL, true);
#else
	(void)before;
	(void)after;
#endif
	for (int k = 0; k < NW; k++) {
		bool later = false;

		for (int j = k + 1; j < NW; j++)
			later = later || offs[j] == offs[k];
		if (later)
			continue;
		fill_pattern(blk, 4096, 1000 + (uint64_t)k);
		CU_ASSERT_EQUAL(smr_ns_read(ns, f, offs[k], 4096, out), 4096);
		CU_ASSERT(!memcmp(out, blk, 4096));
	}
	SMR_ASSERT_OK(smr_ns_check(ns, &problems));
	CU_ASSERT_EQUAL(problems, 0);
	free(buf);
	free(blk);
	free(out);
	free(offs);
	fs_teardown();
}

#ifndef NS_TEST_REAL
/* Another writer, run while a write's data goes out. */
struct other_write {
	uint64_t ino, off;
	const uint8_t *buf;
};

static void other_write_fn(void *arg)
{
	const struct other_write *o = arg;

	CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, o->ino, o->off, o->buf,
				     4096), 4096);
}

/* A write finds the extent it replaces (and the one before it) while it
 * takes the locality hint, before its data goes out, and maps the data
 * afterwards. Another writer may change the map in between (here an
 * overwrite of the same block): what was found is then void, and the map
 * takes the extents as they are. Trusting the old find would free the
 * other writer's old extent a second time and leak its new one. */
static void test_overwrite_raced(void)
{
	enum { NB = 8 };
	static const int at[] = { 0, 3, NB - 1 };
	uint8_t *model = malloc(NB * 4096), *out = malloc(NB * 4096);
	uint8_t *theirs = malloc(4096);
	struct smr_cow_space sp0, sp;
	struct smr_ns_attr a;
	struct file_exts x;
	uint64_t f;

	fs_setup();
	f = mkfile(ROOT, "f", 0644);
	write_back_to_front(f, model, NB);
	smr_cow_space(cow, &sp0);
	for (size_t k = 0; k < SMR_ARRAY_SIZE(at); k++) {
		uint64_t i = (uint64_t)at[k];
		struct other_write o = { f, i * 4096, theirs };

		fill_pattern(theirs, 4096, 100 + i);
		fill_pattern(model + i * 4096, 4096, 200 + i);
		memcow_on_data_write(cow, other_write_fn, &o);
		CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f, i * 4096,
					     model + i * 4096, 4096), 4096);
		/* The other writer mapped first, this write last. */
		CU_ASSERT_EQUAL(smr_ns_read(ns, f, 0, NB * 4096, out),
				NB * 4096);
		CU_ASSERT(!memcmp(out, model, NB * 4096));
	}
	x = file_exts(f);
	CU_ASSERT(x.tiled);
	CU_ASSERT_EQUAL(x.bytes, NB * 4096);
	SMR_ASSERT_OK(smr_ns_getattr(ns, f, &a));
	CU_ASSERT_EQUAL(a.blocks * 512, NB * 4096);
	/* Each round left one more extent dead (the other writer's), none
	 * lost nor freed twice (memcow counts a double free). */
	smr_cow_space(cow, &sp);
	CU_ASSERT_EQUAL(sp.used + sp.reclaimable,
			sp0.used + sp0.reclaimable +
				2 * SMR_ARRAY_SIZE(at) * 4096);
	CU_ASSERT_EQUAL(memcow_nr_errors(cow), 0);
	free(model);
	free(out);
	free(theirs);
	fs_teardown();
}

/* A writer out of space while another's new copy is out. */
struct full_writer {
	uint64_t ino;
	uint8_t buf[4096];
	ssize_t rc;
	pthread_t th;
};

static void *full_write_run(void *arg)
{
	struct full_writer *w = arg;

	w->rc = smr_ns_write(ns, &root_cr, w->ino, 0, w->buf, 4096);
	return NULL;
}

/* Started once the first writer has taken the last free block and before
 * it maps it; given time to find no space. */
static void full_write_start(void *arg)
{
	struct full_writer *w = arg;

	SMR_ASSERT_OK(pthread_create(&w->th, NULL, full_write_run, w));
	usleep(200 * 1000);
}

/* On a full filesystem, an overwrite takes new space before it frees the
 * old copy. A second writer that finds no space while the first one's
 * new copy is out (written, not mapped) waits for it to be mapped, which
 * frees the copy it replaced, and then writes: ENOSPC would be a failure
 * on a filesystem with the space for both (one at a time). */
static void test_enospc_waits(void)
{
	enum { CHUNK = 1024 * 1024 };
	uint8_t *buf = malloc(CHUNK), out[4096], mine[4096];
	struct full_writer *w = calloc(1, sizeof(*w));
	struct smr_ns_setattr sa = { .valid = SMR_NS_SET_SIZE };
	struct smr_ns_attr a;
	uint64_t f1, f2, fill, off = 0;
	ssize_t n;

	fs_setup();
	f1 = mkfile(ROOT, "f1", 0644);
	f2 = mkfile(ROOT, "f2", 0644);
	fill = mkfile(ROOT, "fill", 0644);
	fill_pattern(mine, 4096, 1);
	CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f1, 0, mine, 4096), 4096);
	CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f2, 0, mine, 4096), 4096);
	/* Full, then one block given back and committed. */
	memset(buf, 7, CHUNK);
	while ((n = smr_ns_write(ns, &root_cr, fill, off, buf, CHUNK)) > 0)
		off += (uint64_t)n;
	CU_ASSERT_EQUAL(n, -ENOSPC);
	CU_ASSERT(off >= 4096);
	sa.size = off - 4096;
	SMR_ASSERT_OK(smr_ns_setattr(ns, &root_cr, fill, &sa, &a));
	SMR_ASSERT_OK(smr_ns_sync(ns));

	w->ino = f2;
	fill_pattern(w->buf, 4096, 2);
	fill_pattern(mine, 4096, 3);
	memcow_on_data_written(cow, full_write_start, w);
	CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f1, 0, mine, 4096), 4096);
	pthread_join(w->th, NULL);
	CU_ASSERT_EQUAL(w->rc, 4096);
	CU_ASSERT_EQUAL(smr_ns_read(ns, f1, 0, 4096, out), 4096);
	CU_ASSERT(!memcmp(out, mine, 4096));
	CU_ASSERT_EQUAL(smr_ns_read(ns, f2, 0, 4096, out), 4096);
	CU_ASSERT(!memcmp(out, w->buf, 4096));
	free(w);
	free(buf);
	fs_teardown();
}
#endif

/* The audit finds what breaks the invariants. */
static void test_check(void)
{
	struct smr_key from, found;
	struct smr_ns_inode_d d;
	struct smr_txn *t;
	uint64_t f, problems = 0;
	size_t len = sizeof(d);

	fs_setup();
	f = mkfile(ROOT, "f", 0644);
	mkdir_(ROOT, "d");
	CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f, 0, "x", 1), 1);
	SMR_ASSERT_OK(smr_ns_check(ns, &problems));
	CU_ASSERT_EQUAL(problems, 0);

	/* Drop one readdir index item of the root, and add a link the
	 * inode does not have. */
	SMR_ASSERT_OK(smr_txn_begin(cow, &t));
	from.objid = ROOT;
	from.type = SMR_NS_T_DIRINDEX;
	from.offset = 0;
	len = 0;
	SMR_ASSERT_OK(smr_bt_next(cow, SMR_TREE_FS, &from, &found, NULL,
				  &len));
	CU_ASSERT_EQUAL(found.type, SMR_NS_T_DIRINDEX);
	SMR_ASSERT_OK(smr_bt_delete(t, SMR_TREE_FS, &found));
	from.objid = f;
	from.type = SMR_NS_T_INODE;
	len = sizeof(d);
	SMR_ASSERT_OK(smr_bt_lookup(cow, SMR_TREE_FS, &from, &d, &len));
	d.nlink = htole32(le32toh(d.nlink) + 1);
	SMR_ASSERT_OK(smr_bt_update(t, SMR_TREE_FS, &from, &d, sizeof(d)));
	smr_txn_end(t);

	smr_log_set_level(SMR_LOG_ERR - 1);
	SMR_ASSERT_RC(smr_ns_check(ns, &problems), -SMR_EFSCORRUPTED);
	smr_log_set_level(SMR_LOG_ERR);
	CU_ASSERT(problems >= 3); /* index count, pairing, nlink */
	smr_ns_close(ns);
	ns = NULL;
	engine_close();
}

/* The namespace keeps the inodes it read and wrote last; a change of an
 * inode item made past it (as fsck's repairs make them) must show at
 * once, and a failed call's undo as well. */
static void test_inode_cache(void)
{
	struct smr_key k;
	struct smr_ns_inode_d d;
	struct smr_ns_attr a;
	struct smr_txn *t;
	size_t len = sizeof(d);
	uint64_t f;

	fs_setup();
	f = mkfile(ROOT, "f", 0644);
	CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f, 0, "abc", 3), 3);
	SMR_ASSERT_OK(smr_ns_getattr(ns, f, &a));
	CU_ASSERT_EQUAL(a.size, 3);
	CU_ASSERT_EQUAL(a.nlink, 1);

	k.objid = f;
	k.type = SMR_NS_T_INODE;
	k.offset = 0;
	SMR_ASSERT_OK(smr_bt_lookup(cow, SMR_TREE_FS, &k, &d, &len));
	d.nlink = htole32(7);
	d.size = htole64(4096);
	SMR_ASSERT_OK(smr_txn_begin(cow, &t));
	SMR_ASSERT_OK(smr_bt_update(t, SMR_TREE_FS, &k, &d, sizeof(d)));
	smr_txn_end(t);
	SMR_ASSERT_OK(smr_ns_getattr(ns, f, &a));
	CU_ASSERT_EQUAL(a.size, 4096);
	CU_ASSERT_EQUAL(a.nlink, 7);
	/* A write after it starts from the item as it is now. */
	CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f, 8192, "x", 1), 1);
	SMR_ASSERT_OK(smr_ns_getattr(ns, f, &a));
	CU_ASSERT_EQUAL(a.size, 8193);
	CU_ASSERT_EQUAL(a.nlink, 7);
	smr_ns_close(ns);
	ns = NULL;
	engine_close();
}

/* Threads writing whole blocks over one another in one file: every block
 * ends up as one writer wrote it, and no space is freed twice. */
static uint64_t shared_ino;

static void block_pattern(uint8_t *blk, uint64_t writer, uint64_t blkno)
{
	for (size_t i = 0; i < 4096; i += 8) {
		uint64_t v = writer << 56 | blkno << 16 | i;

		memcpy(blk + i, &v, 8);
	}
}

static void *overlap_run(void *arg)
{
	struct worker *w = arg;
	uint64_t rnd = 77 + w->id;
	uint8_t *buf = malloc(16 * 4096);

	for (int i = 0; i < 60; i++) {
		uint64_t first = smr_test_rand(&rnd) % 48;
		uint64_t n = 1 + smr_test_rand(&rnd) % 16;

		for (uint64_t b = 0; b < n; b++)
			block_pattern(buf + b * 4096, w->id, first + b);
		if (smr_ns_write(ns, &root_cr, shared_ino, first * 4096, buf,
				 n * 4096) != (ssize_t)(n * 4096))
			w->errors++;
	}
	free(buf);
	return NULL;
}

static void test_threads_overlap(void)
{
	enum { N = 4 };
	struct worker w[N];
	pthread_t th[N];
	uint8_t blk[4096], want[4096];

	fs_setup();
	shared_ino = mkfile(ROOT, "shared", 0644);
	for (int i = 0; i < N; i++) {
		w[i].id = i + 1;
		w[i].errors = 0;
		CU_ASSERT_EQUAL(pthread_create(&th[i], NULL, overlap_run,
					       &w[i]), 0);
	}
	for (int i = 0; i < N; i++) {
		pthread_join(th[i], NULL);
		CU_ASSERT_EQUAL(w[i].errors, 0);
	}
	for (uint64_t b = 0; b < 64; b++) {
		ssize_t n = smr_ns_read(ns, shared_ino, b * 4096, 4096, blk);
		bool ok = false;

		if (n == 0)
			continue; /* past the end */
		CU_ASSERT_EQUAL(n, 4096);
		memset(want, 0, sizeof(want));
		ok = !memcmp(blk, want, sizeof(blk)); /* never written */
		for (uint64_t id = 1; id <= N && !ok; id++) {
			block_pattern(want, id, b);
			ok = !memcmp(blk, want, sizeof(blk));
		}
		CU_ASSERT(ok);
	}
	SMR_ASSERT_OK(smr_ns_unlink(ns, &root_cr, ROOT, "shared"));
	SMR_ASSERT_OK(smr_ns_sync(ns));
	fs_teardown();
}

#ifndef NS_TEST_REAL
/* ------------------------------------------------------------------------
 * Reads leave the namespace lock during the device read, under a read pin
 * ------------------------------------------------------------------------ */

struct read_race {
	uint64_t ino;
	const uint8_t *data; /* what the overwrite writes */
	pthread_t th;
	bool started;
	int written;         /* the overwrite has returned */
	int during;          /* ...before the read's device read went on */
	ssize_t wrote;
	int synced;
};

static void *read_race_run(void *arg)
{
	struct read_race *r = arg;

	r->wrote = smr_ns_write(ns, &root_cr, r->ino, 0, r->data, 4096);
	__atomic_store_n(&r->written, 1, __ATOMIC_RELEASE);
	/* Frees the block the read is reading, unless the read holds it. */
	r->synced = smr_ns_sync(ns);
	return NULL;
}

/* At the start of the read's device read: overwrite the block and commit
 * from another thread, and give both time to end. */
static void read_race_fn(void *arg)
{
	struct read_race *r = arg;

	r->started = !pthread_create(&r->th, NULL, read_race_run, r);
	for (int i = 0; i < 500 && r->started &&
			!__atomic_load_n(&r->written, __ATOMIC_ACQUIRE); i++)
		usleep(1000);
	r->during = __atomic_load_n(&r->written, __ATOMIC_ACQUIRE);
	usleep(20000);
}

static void test_read_unlocked(void)
{
	uint8_t old[4096], new[4096], out[4096];
	struct read_race r = { .data = new };

	fs_setup();
	fill_pattern(old, sizeof(old), 1);
	fill_pattern(new, sizeof(new), 2);
	r.ino = mkfile(ROOT, "f", 0644);
	CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, r.ino, 0, old, 4096), 4096);
	SMR_ASSERT_OK(smr_ns_sync(ns));
	memcow_on_data_read(cow, read_race_fn, &r);
	CU_ASSERT_EQUAL(smr_ns_read(ns, r.ino, 0, 4096, out), 4096);
	CU_ASSERT(r.started);
	if (r.started)
		pthread_join(r.th, NULL);
	/* The overwrite did not wait for the read's device read... */
	CU_ASSERT_EQUAL(r.during, 1);
	CU_ASSERT_EQUAL(r.wrote, 4096);
	SMR_ASSERT_OK(r.synced);
	/* ...and the read got the data it looked up, from a block the commit
	 * did not free under it (engine_close counts reads of free blocks). */
	CU_ASSERT(!memcmp(out, old, sizeof(out)));
	CU_ASSERT_EQUAL(smr_ns_read(ns, r.ino, 0, 4096, out), 4096);
	CU_ASSERT(!memcmp(out, new, sizeof(out)));
	fs_teardown();
}

/* At the first extent's device read, cut the file to its first block. */
static void read_cut_fn(void *arg)
{
	struct smr_ns_setattr sa = { .valid = SMR_NS_SET_SIZE, .size = 4096 };
	struct smr_ns_attr a;

	SMR_ASSERT_OK(smr_ns_setattr(ns, &root_cr, *(uint64_t *)arg, &sa, &a));
}

/* A truncate that lands between two extents of a read ends it there. */
static void test_read_cut(void)
{
	uint8_t data[8192], out[8192];
	uint64_t f, g;

	fs_setup();
	fill_pattern(data, sizeof(data), 3);
	f = mkfile(ROOT, "f", 0644);
	g = mkfile(ROOT, "g", 0644);
	/* Two extents: the second block lands after another file's. */
	CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f, 0, data, 4096), 4096);
	CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, g, 0, data, 4096), 4096);
	CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f, 4096, data + 4096,
				     4096), 4096);
	memcow_on_data_read(cow, read_cut_fn, &f);
	memset(out, 0xee, sizeof(out));
	CU_ASSERT_EQUAL(smr_ns_read(ns, f, 0, 8192, out), 4096);
	CU_ASSERT(!memcmp(out, data, 4096));
	CU_ASSERT_EQUAL(smr_ns_read(ns, f, 0, 8192, out), 4096);
	fs_teardown();
}
#endif

/* ------------------------------------------------------------------------
 * Writes answered before they are mapped (smr_ns_write_ack)
 * ------------------------------------------------------------------------ */

struct ack_probe {
	uint64_t ino;
	bool fsync;     /* the probe fsyncs, else it reads */
	uint8_t *out;   /* what the read found */
	ssize_t read;
	int fsynced;    /* what the fsync returned */
	int answers;
	ssize_t result;
	int fail;       /* make the mapping fail with this */
	pthread_t th;
	bool started;
};

static void *ack_probe_run(void *arg)
{
	struct ack_probe *p = arg;

	if (p->fsync)
		p->fsynced = smr_ns_fsync(ns, p->ino, false);
	else
		p->read = smr_ns_read(ns, p->ino, 0, 3 * 4096, p->out);
	return NULL;
}

/* The answer: start the probe and give it time to run into whatever the
 * write has not finished yet. */
static void ack_probe_fn(void *arg, ssize_t result)
{
	struct ack_probe *p = arg;

	p->answers++;
	p->result = result;
#ifndef NS_TEST_REAL
	if (p->fail)
		memcow_fail_change(cow, 1, p->fail);
#endif
	p->started = !pthread_create(&p->th, NULL, ack_probe_run, p);
	usleep(20000);
}

#ifndef NS_TEST_REAL
/* An answer, kept in *@arg. */
static void ack_keep(void *arg, ssize_t result)
{
	*(ssize_t *)arg = result;
}
#endif

/* Write @len bytes of @buf at @off through smr_ns_write_ack with @p
 * probing; the write must be answered once, with @len. */
static void ack_probe_write(struct ack_probe *p, uint64_t off,
			    const uint8_t *buf, size_t len)
{
	p->answers = 0;
	p->started = false;
	smr_ns_write_ack(ns, &root_cr, p->ino, off, buf, len, false, ack_probe_fn,
			 p);
	CU_ASSERT_EQUAL(p->answers, 1);
	CU_ASSERT_EQUAL(p->result, (ssize_t)len);
	CU_ASSERT(p->started);
	if (p->started)
		pthread_join(p->th, NULL);
}

static void test_write_ack(void)
{
	uint8_t *old = malloc(3 * 4096), *new = malloc(3 * 4096);
	struct ack_probe p = { .out = malloc(3 * 4096) };
	uint8_t *out = malloc(3 * 4096);

	fs_setup();
#ifdef NS_TEST_REAL
	{
		/* fsync writes a log record: it waits for nothing it does
		 * not know of. */
		struct smr_cow_opts o = { .fsync_log = true };

		fs_reopen(&o, false);
	}
#endif
	p.ino = mkfile(ROOT, "f", 0644);
	fill_pattern(old, 3 * 4096, 1);
	fill_pattern(new, 3 * 4096, 2);
	CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, p.ino, 0, old, 3 * 4096),
			3 * 4096);
	SMR_ASSERT_OK(smr_ns_fsync(ns, p.ino, false));

	/* A read that starts from the answer sees the write. */
	ack_probe_write(&p, 4096, new + 4096, 4096);
	CU_ASSERT_EQUAL(p.read, 3 * 4096);
	CU_ASSERT(!memcmp(p.out, old, 4096));
	CU_ASSERT(!memcmp(p.out + 4096, new + 4096, 4096));
	CU_ASSERT(!memcmp(p.out + 8192, old + 8192, 4096));

	/* An fsync that starts from the answer makes it durable. */
	p.fsync = true;
	ack_probe_write(&p, 8192, new + 8192, 4096);
	CU_ASSERT_EQUAL(p.fsynced, 0);
#ifdef NS_TEST_REAL
	fs_reopen(NULL, true);
	CU_ASSERT_EQUAL(smr_ns_read(ns, p.ino, 0, 3 * 4096, out), 3 * 4096);
	CU_ASSERT(!memcmp(out + 4096, new + 4096, 8192));
#else
	CU_ASSERT_EQUAL(memcow_changes_since_commit(cow), 0);

	/* Unaligned: answered once, when its space is held. */
	p.fsync = false;
	ack_probe_write(&p, 100, new + 100, 10);
	CU_ASSERT(!memcmp(p.out + 100, new + 100, 10));

	/* The mapping fails after the answer: the filesystem turns read-only
	 * and the next fsync says so, as after a failed writeback. */
	p.fail = -ENOMEM;
	ack_probe_write(&p, 0, new, 4096);
	CU_ASSERT_FALSE(memcow_fail_pending(cow));
	CU_ASSERT(smr_cow_is_read_only(cow));
	SMR_ASSERT_RC(smr_ns_fsync(ns, p.ino, false), -ENOMEM);
	CU_ASSERT_EQUAL(smr_ns_read(ns, p.ino, 0, 4096, out), 4096);
	CU_ASSERT(!memcmp(out, old, 100));
	memcow_set_read_only(cow, false);
	memcow_clear_error(cow);

	/* The data fails to go out after the answer (a device error): the
	 * write is not made, the filesystem goes on, and the next flush or
	 * fsync of the file says so, once. */
	p.fail = 0;
	CU_ASSERT_EQUAL(smr_ns_read(ns, p.ino, 0, 3 * 4096, out), 3 * 4096);
	memcow_fail_data_write(cow, -EIO);
	ack_probe_write(&p, 0, new, 4096);
	CU_ASSERT_EQUAL(p.read, 3 * 4096);
	CU_ASSERT(!memcmp(p.out, out, 3 * 4096));
	SMR_ASSERT_RC(smr_ns_flush(ns, p.ino), -EIO);
	SMR_ASSERT_OK(smr_ns_flush(ns, p.ino));
	SMR_ASSERT_OK(smr_ns_fsync(ns, p.ino, false));
	memcow_fail_data_write(cow, -EIO);
	ack_probe_write(&p, 4096, new, 4096);
	SMR_ASSERT_RC(smr_ns_fsync(ns, p.ino, false), -EIO);
	SMR_ASSERT_OK(smr_ns_fsync(ns, p.ino, false));
	SMR_ASSERT_OK(smr_ns_flush(ns, p.ino));
	CU_ASSERT_FALSE(smr_cow_is_read_only(cow));
	CU_ASSERT_EQUAL(smr_ns_read(ns, p.ino, 0, 3 * 4096, p.out), 3 * 4096);
	CU_ASSERT(!memcmp(p.out, out, 3 * 4096));
	/* And a write that works again is made. */
	ack_probe_write(&p, 4096, new + 4096, 4096);
	CU_ASSERT(!memcmp(p.out + 4096, new + 4096, 4096));
	SMR_ASSERT_OK(smr_ns_flush(ns, p.ino));

	/* The same for a write inside a block (read, modified, written
	 * whole): nothing of it is made, and close says so. */
	CU_ASSERT_EQUAL(smr_ns_read(ns, p.ino, 0, 3 * 4096, out), 3 * 4096);
	memcow_fail_data_write(cow, -EIO);
	ack_probe_write(&p, 4096 + 100, new, 10);
	CU_ASSERT(!memcmp(p.out, out, 3 * 4096));
	SMR_ASSERT_RC(smr_ns_flush(ns, p.ino), -EIO);
	SMR_ASSERT_OK(smr_ns_flush(ns, p.ino));
	CU_ASSERT_FALSE(smr_cow_is_read_only(cow));
	ack_probe_write(&p, 4096 + 100, new, 10);
	CU_ASSERT(!memcmp(p.out + 4096 + 100, new, 10));
	CU_ASSERT(!memcmp(p.out + 4096, out + 4096, 100));
	SMR_ASSERT_OK(smr_ns_flush(ns, p.ino));

	/* A file deleted takes its waiting error with it: more such files
	 * than the table of errors holds leave the filesystem writable. */
	for (int i = 0; i < 40; i++) {
		char name[16];
		ssize_t r = 0;
		uint64_t g;

		snprintf(name, sizeof(name), "w%d", i);
		g = mkfile(ROOT, name, 0644);
		memcow_fail_data_write(cow, -EIO);
		smr_ns_write_ack(ns, &root_cr, g, 0, new, 4096, false, ack_keep,
				 &r);
		CU_ASSERT_EQUAL(r, 4096);
		SMR_ASSERT_OK(smr_ns_unlink(ns, &root_cr, ROOT, name));
	}
	CU_ASSERT_FALSE(smr_cow_is_read_only(cow));
#endif
	free(old);
	free(new);
	free(out);
	free(p.out);
	fs_teardown();
}

/*
 * Writes answered while others are: an answer may then come after the
 * mapping rather than before it (file.c, ns_write_aligned), but either way
 * a read that starts from it sees the write. Four writers, each its own
 * blocks of one file, each answer probed by a read of its block.
 */
#define ACKS_WRITERS 4
#define ACKS_ROUNDS 40

struct acks_writer {
	uint64_t ino;
	int id;
	uint8_t buf[4096], out[4096];
	struct ack_probe p;
	int bad; /* answers wrong, reads that missed the write */
};

static void *acks_probe_run(void *arg)
{
	struct acks_writer *w = arg;

	w->p.read = smr_ns_read(ns, w->ino, (uint64_t)w->id * 4096, 4096,
				w->out);
	return NULL;
}

static void acks_fn(void *arg, ssize_t result)
{
	struct acks_writer *w = arg;

	w->p.answers++;
	w->p.result = result;
	w->p.started = !pthread_create(&w->p.th, NULL, acks_probe_run, w);
	usleep(1000);
}

static void *acks_run(void *arg)
{
	struct acks_writer *w = arg;

	for (int r = 0; r < ACKS_ROUNDS; r++) {
		fill_pattern(w->buf, sizeof(w->buf),
			     (uint64_t)(100 + w->id * ACKS_ROUNDS + r));
		w->p.answers = 0;
		w->p.started = false;
		smr_ns_write_ack(ns, &root_cr, w->ino, (uint64_t)w->id * 4096,
				 w->buf, sizeof(w->buf), false, acks_fn, w);
		if (w->p.started)
			pthread_join(w->p.th, NULL);
		if (w->p.answers != 1 || w->p.result != 4096 ||
		    !w->p.started || w->p.read != 4096 ||
		    memcmp(w->out, w->buf, sizeof(w->buf)))
			w->bad++;
	}
	return NULL;
}

static void test_write_acks(void)
{
	struct acks_writer *w = calloc(ACKS_WRITERS, sizeof(*w));
	pthread_t th[ACKS_WRITERS];
	uint8_t out[4096];
	uint64_t ino;

	fs_setup();
	ino = mkfile(ROOT, "f", 0644);
	for (int i = 0; i < ACKS_WRITERS; i++) {
		w[i].ino = ino;
		w[i].id = i;
		SMR_ASSERT_OK(pthread_create(&th[i], NULL, acks_run, &w[i]));
	}
	for (int i = 0; i < ACKS_WRITERS; i++) {
		pthread_join(th[i], NULL);
		CU_ASSERT_EQUAL(w[i].bad, 0);
		CU_ASSERT_EQUAL(smr_ns_read(ns, ino, (uint64_t)i * 4096, 4096,
					    out), 4096);
		CU_ASSERT(!memcmp(out, w[i].buf, sizeof(out)));
	}
	free(w);
	fs_teardown();
}

#ifdef NS_TEST_REAL
static void test_persistence(void)
{
	uint8_t buf[100000], out[100000];
	struct smr_ns_attr a;
	char tgt[100];
	uint64_t f, d;

	fs_setup();
	d = mkdir_(ROOT, "dir");
	f = mkfile(d, "file", 0640);
	fill_pattern(buf, sizeof(buf), 21);
	CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f, 777, buf, sizeof(buf)),
			(ssize_t)sizeof(buf));
	SMR_ASSERT_OK(smr_ns_symlink(ns, &root_cr, d, "link", "file", &a));
	SMR_ASSERT_OK(smr_ns_setxattr(ns, &root_cr, f, "user.k", "v", 1, 0));
	SMR_ASSERT_OK(smr_ns_fsync(ns, f, false));
	fs_reopen(NULL, false);
	SMR_ASSERT_OK(smr_ns_lookup(ns, ROOT, "dir", &a));
	CU_ASSERT_EQUAL(a.ino, d);
	CU_ASSERT_EQUAL(nlink_of(ROOT), 3);
	SMR_ASSERT_OK(smr_ns_lookup(ns, d, "file", &a));
	CU_ASSERT_EQUAL(a.ino, f);
	CU_ASSERT_EQUAL(a.mode, S_IFREG | 0640);
	CU_ASSERT_EQUAL(a.size, 777 + sizeof(buf));
	CU_ASSERT_EQUAL(smr_ns_read(ns, f, 777, sizeof(out), out),
			(ssize_t)sizeof(out));
	CU_ASSERT(!memcmp(out, buf, sizeof(buf)));
	SMR_ASSERT_OK(smr_ns_lookup(ns, d, "link", &a));
	CU_ASSERT_EQUAL(smr_ns_readlink(ns, a.ino, tgt, sizeof(tgt)), 4);
	CU_ASSERT_EQUAL(smr_ns_getxattr(ns, &root_cr, f, "user.k", tgt, 10),
			1);
	/* New inodes do not reuse numbers after a reopen. */
	CU_ASSERT(mkfile(ROOT, "new", 0644) > a.ino);

	/* Unlinked while open when the filesystem went down: the orphan
	 * record survives, and the next open frees the inode. */
	SMR_ASSERT_OK(smr_ns_open_file(ns, f, O_RDWR, NULL));
	SMR_ASSERT_OK(smr_ns_unlink(ns, &root_cr, d, "file"));
	SMR_ASSERT_OK(smr_ns_fsync(ns, f, false));
	fs_reopen(NULL, false);
	SMR_ASSERT_RC(smr_ns_getattr(ns, f, &a), -ENOENT);
	SMR_ASSERT_RC(smr_ns_lookup(ns, d, "file", &a), -ENOENT);
	fs_teardown();
}
#endif

#ifdef NS_TEST_REAL
/*
 * Power cut at, and torn write of, every write of a small workload (through
 * the fault device):
 * the filesystem always opens again, passes the audit, and holds everything
 * of the last stage that was fsync'd before the cut.
 */
struct crash_run {
	struct smr_fault *f;
	struct smr_dev *fdev;
	int durable; /* last stage whose fsync completed before the cut */
};

static void crash_stage_done(struct crash_run *cr, int stage, int rc)
{
	if (rc == 0 && !smr_fault_is_cut(cr->f))
		cr->durable = stage;
}

/* The workload: three stages, each ended by an fsync. */
static void crash_workload(struct crash_run *cr, const uint8_t *buf)
{
	struct smr_ns_attr a;
	uint64_t f = 0, d = 0;

	if (!smr_ns_mkdir(ns, &root_cr, ROOT, "d", 0755, &a))
		d = a.ino;
	if (!smr_ns_mknod(ns, &root_cr, ROOT, "f", S_IFREG | 0644, 0, &a))
		f = a.ino;
	smr_ns_write(ns, &root_cr, f, 0, buf, 40000);
	smr_ns_setxattr(ns, &root_cr, f, "user.s", "1", 1, 0);
	crash_stage_done(cr, 1, smr_ns_fsync(ns, f, false));

	smr_ns_rename(ns, &root_cr, ROOT, "f", d, "g", 0);
	smr_ns_write(ns, &root_cr, f, 40000, buf + 40000, 30000);
	smr_ns_symlink(ns, &root_cr, d, "l", "g", &a);
	crash_stage_done(cr, 2, smr_ns_fsync(ns, f, false));

	smr_ns_unlink(ns, &root_cr, d, "l");
	smr_ns_write(ns, &root_cr, f, 1000, buf + 5, 8192);
	crash_stage_done(cr, 3, smr_ns_fsync(ns, f, false));
	smr_ns_mknod(ns, &root_cr, ROOT, "late", S_IFREG | 0644, 0, &a);
}

/* Which stage boundary the recovered filesystem shows (4: the final commit
 * at close, after "late" was made). Commits happen only at the fsyncs and at
 * close, so these are the only states a crash may leave. */
static int crash_stage_of(void)
{
	struct smr_ns_attr a, g;

	if (smr_ns_lookup(ns, ROOT, "d", &a))
		return 0;
	if (!smr_ns_lookup(ns, ROOT, "f", &g))
		return 1;
	if (!smr_ns_lookup(ns, a.ino, "l", &g))
		return 2;
	return smr_ns_lookup(ns, ROOT, "late", &g) ? 3 : 4;
}

static void crash_verify(int stage, const uint8_t *buf)
{
	static uint8_t want[70000], out[70000];
	struct smr_ns_attr a, g;
	char t[8];

	if (stage == 0)
		return;
	SMR_ASSERT_OK(smr_ns_lookup(ns, ROOT, "d", &a));
	if (stage == 1) {
		SMR_ASSERT_OK(smr_ns_lookup(ns, ROOT, "f", &g));
		CU_ASSERT_EQUAL(g.size, 40000);
		CU_ASSERT_EQUAL(smr_ns_read(ns, g.ino, 0, 40000, out), 40000);
		CU_ASSERT(!memcmp(out, buf, 40000));
		CU_ASSERT_EQUAL(smr_ns_getxattr(ns, &root_cr, g.ino, "user.s",
						t, sizeof(t)), 1);
		return;
	}
	memcpy(want, buf, 70000);
	if (stage >= 3)
		memcpy(want + 1000, buf + 5, 8192);
	SMR_ASSERT_RC(smr_ns_lookup(ns, ROOT, "f", &g), -ENOENT);
	SMR_ASSERT_OK(smr_ns_lookup(ns, a.ino, "g", &g));
	CU_ASSERT_EQUAL(g.size, 70000);
	CU_ASSERT_EQUAL(smr_ns_read(ns, g.ino, 0, 70000, out), 70000);
	CU_ASSERT(!memcmp(out, want, 70000));
	SMR_ASSERT_RC(smr_ns_lookup(ns, a.ino, "l", &g),
		      stage == 2 ? 0 : -ENOENT);
}

/* Run the workload on a fresh filesystem, with a power cut (@what: none,
 * drop or tear) after @k writes; *@writes gets the writes the device saw. */
static void crash_one(enum smr_fault_what what, uint64_t k,
		      const uint8_t *buf, struct crash_run *cr,
		      uint64_t *writes)
{
	struct smr_cow_opts co = { .commit_secs = 3600 };
	struct smr_fault_rule rule = { .what = what, .after = k,
				       .tear_bytes = 4096 };
	struct smr_fault_stats st;
	struct smr_dev *lower;

	cr->durable = 0;
	SMR_ASSERT_OK(engine_new());
	SMR_ASSERT_OK(smr_ns_mkfs(cow, &root_cr));
	engine_close();
	SMR_ASSERT_OK(smr_dev_open(devpath, NULL, &lower));
	SMR_ASSERT_OK(smr_fault_open(lower, &cr->f, &cr->fdev));
	if (what != SMR_FAULT_NONE)
		SMR_ASSERT_OK(smr_fault_arm(cr->f, &rule));
	SMR_ASSERT_OK(smr_cow_open(cr->fdev, &co, &cow));
	SMR_ASSERT_OK(smr_ns_open(cow, NULL, &ns));
	crash_workload(cr, buf);
	smr_ns_close(ns);
	ns = NULL;
	smr_cow_close(cow); /* its commit may be lost to the cut */
	cow = NULL;
	smr_fault_stats(cr->f, &st);
	smr_dev_close(cr->fdev);
	smr_fault_free(cr->f);
	smr_dev_close(lower);
	*writes = st.writes;
}

static void test_crash_sweep(void)
{
	uint8_t *buf = malloc(80000);
	uint64_t total, writes, problems, step;
	struct crash_run cr;
	int stage;

	fill_pattern(buf, 80000, 99);
	crash_one(SMR_FAULT_NONE, 0, buf, &cr, &total);
	CU_ASSERT(total > 0);
	CU_ASSERT_EQUAL(cr.durable, 3);
	/* Every write point while that stays quick, else an even sample. */
	step = total <= 150 ? 1 : total / 150 + 1;
	for (uint64_t i = 0; i < 2 * total; i += step) {
		enum smr_fault_what what = i < total ? SMR_FAULT_DROP_WRITES :
						       SMR_FAULT_TEAR_WRITE;
		uint64_t k = i % total;

		crash_one(what, k, buf, &cr, &writes);
		/* Recovery: open, audit, and find the durable stage. */
		SMR_ASSERT_OK(engine_open());
		if (!cow)
			break;
		SMR_ASSERT_OK(smr_ns_open(cow, NULL, &ns));
		SMR_ASSERT_OK(smr_ns_check(ns, &problems));
		CU_ASSERT_EQUAL(problems, 0);
		/* What was fsync'd before the cut is there; a commit the cut
		 * caught may have made it too (a torn write can be whole). */
		stage = crash_stage_of();
		CU_ASSERT(stage >= cr.durable);
		crash_verify(SMR_MIN(stage, 3), buf);
		if (getenv("NS_CRASH_VERBOSE"))
			fprintf(stderr, "%s after %llu of %llu writes (%llu seen): stage %d durable, %d found\n",
				what == SMR_FAULT_TEAR_WRITE ? "tear" : "cut",
				(unsigned long long)k, (unsigned long long)total,
				(unsigned long long)writes, cr.durable, stage);
		if (problems)
			fprintf(stderr, "%s after write %llu of %llu\n",
				what == SMR_FAULT_TEAR_WRITE ? "tear" : "cut",
				(unsigned long long)k,
				(unsigned long long)total);
		fs_teardown();
	}
	free(buf);
}

/* A data block changed on the device behind the engine's back: reads of
 * that block are -EIO, the blocks around it still read. */
static void test_checksum_device(void)
{
	uint8_t buf[3 * 4096], out[3 * 4096];
	union {
		struct smr_ns_extent_d d;
		uint8_t b[SMR_COW_MAX_ITEM];
	} v;
	struct smr_key k;
	size_t len = sizeof(v);
	uint64_t f, dev_off, zone = 16 * SMR_MIB;
	char path[4200];
	uint8_t byte;
	int fd;

	fs_setup();
	f = mkfile(ROOT, "f", 0644);
	fill_pattern(buf, sizeof(buf), 7);
	CU_ASSERT_EQUAL(smr_ns_write(ns, &root_cr, f, 0, buf, sizeof(buf)),
			(ssize_t)sizeof(buf));
	SMR_ASSERT_OK(smr_ns_fsync(ns, f, false));
	k.objid = f;
	k.type = SMR_NS_T_EXTENT;
	k.offset = 0;
	SMR_ASSERT_OK(smr_bt_lookup(cow, SMR_TREE_FS, &k, &v, &len));
	dev_off = le64toh(v.d.dev_off) + 4096 + 10;
	smr_ns_close(ns);
	engine_close();

	/* Zone files of a zoned loop directory: cnv-/seq-NNNNNN. */
	snprintf(path, sizeof(path), "%s/%s-%06llu", devpath,
		 dev_off / zone < 2 ? "cnv" : "seq",
		 (unsigned long long)(dev_off / zone));
	fd = open(path, O_RDWR);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(pread(fd, &byte, 1, dev_off % zone), 1);
	byte ^= 0x40;
	CU_ASSERT_EQUAL(pwrite(fd, &byte, 1, dev_off % zone), 1);

	/* One flipped bit is put back from the checksum: the data as
	 * written. */
	SMR_ASSERT_OK(engine_open());
	SMR_ASSERT_OK(smr_ns_open(cow, NULL, &ns));
	CU_ASSERT_EQUAL(smr_ns_read(ns, f, 0, sizeof(out), out),
			(ssize_t)sizeof(out));
	CU_ASSERT(!memcmp(out, buf, sizeof(out)));
	smr_ns_close(ns);
	engine_close();

	/* Two are not: the block fails, the others read. */
	byte ^= 0x01;
	CU_ASSERT_EQUAL(pwrite(fd, &byte, 1, dev_off % zone), 1);
	close(fd);
	SMR_ASSERT_OK(engine_open());
	SMR_ASSERT_OK(smr_ns_open(cow, NULL, &ns));
	smr_log_set_level(SMR_LOG_ERR - 1);
	CU_ASSERT_EQUAL(smr_ns_read(ns, f, 0, sizeof(out), out), -EIO);
	CU_ASSERT_EQUAL(smr_ns_read(ns, f, 4096 + 100, 1, out), -EIO);
	smr_log_set_level(SMR_LOG_ERR);
	CU_ASSERT_EQUAL(smr_ns_read(ns, f, 0, 4096, out), 4096);
	CU_ASSERT(!memcmp(out, buf, 4096));
	CU_ASSERT_EQUAL(smr_ns_read(ns, f, 8192, 4096, out), 4096);
	CU_ASSERT(!memcmp(out, buf + 8192, 4096));
	fs_teardown();
}
#endif

/* A readdir consumer that marks "fNNNNNN" names seen and stops after a
 * batch, as the kernel's readdir buffer does. */
struct big_dir {
	uint8_t *seen;
	uint64_t nr, batch, taken, dups, strangers;
	uint64_t next;
};

static int big_dir_fill(void *arg, const char *name, size_t namelen,
			uint64_t ino, uint32_t dtype, uint64_t next)
{
	struct big_dir *b = arg;
	unsigned long i;
	char *end;

	(void)ino;
	(void)dtype;
	if (b->taken == b->batch)
		return 1;
	b->taken++;
	b->next = next;
	if (namelen == 1 && name[0] == '.')
		return 0;
	if (namelen == 2 && !memcmp(name, "..", 2))
		return 0;
	i = name[0] == 'f' ? strtoul(name + 1, &end, 10) : ULONG_MAX;
	if (i >= b->nr || *end) {
		b->strangers++;
		return 0;
	}
	b->dups += b->seen[i];
	b->seen[i] = 1;
	return 0;
}

/* Read the whole directory in batches, continuing from each batch's last
 * cookie; returns the number of names taken. */
static uint64_t big_dir_list(uint64_t dir, struct big_dir *b)
{
	uint64_t total = 0, cookie = 0;

	memset(b->seen, 0, b->nr);
	b->dups = b->strangers = 0;
	for (;;) {
		b->taken = 0;
		SMR_ASSERT_OK(smr_ns_readdir(ns, dir, cookie, big_dir_fill, b));
		total += b->taken;
		if (b->taken < b->batch)
			return total;
		cookie = b->next;
	}
}

/*
 * 100,000 files in one directory (5,000 over the in-memory engine): create,
 * look every one up, list them in kernel-sized batches with cookies while
 * the directory changes, unlink them all. SMR_TEST_DIR_FILES changes the
 * count.
 */
static void test_big_directory(void)
{
#ifdef NS_TEST_REAL
	uint64_t nr = 100000;
#else
	uint64_t nr = 5000;
#endif
	const char *env = getenv("SMR_TEST_DIR_FILES");
	struct big_dir b = { .batch = 1000 };
	struct smr_ns_attr a;
	uint64_t dir, *inos;
	char name[32];

	if (env)
		nr = strtoull(env, NULL, 10);
	b.nr = nr;
	b.seen = calloc(nr, 1);
	inos = calloc(nr, sizeof(*inos));
	CU_ASSERT_FATAL(b.seen && inos);
	fs_setup();
	dir = mkdir_(ROOT, "big");
	for (uint64_t i = 0; i < nr; i++) {
		snprintf(name, sizeof(name), "f%06" PRIu64, i);
		inos[i] = mkfile(dir, name, 0644);
		if (!inos[i])
			break;
		if (i % 20000 == 19999)
			SMR_ASSERT_OK(smr_ns_sync(ns));
	}
	SMR_ASSERT_OK(smr_ns_sync(ns));
	for (uint64_t i = 0; i < nr; i++) {
		snprintf(name, sizeof(name), "f%06" PRIu64, i);
		if (smr_ns_lookup(ns, dir, name, &a) || a.ino != inos[i]) {
			CU_FAIL("lookup in a big directory");
			break;
		}
	}
	SMR_ASSERT_RC(smr_ns_lookup(ns, dir, "f-none", &a), -ENOENT);
	SMR_ASSERT_OK(smr_ns_opendir(ns, dir));
	CU_ASSERT_EQUAL(big_dir_list(dir, &b), nr + 2);
	CU_ASSERT_EQUAL(b.dups, 0);
	CU_ASSERT_EQUAL(b.strangers, 0);
	CU_ASSERT_EQUAL(memchr(b.seen, 0, nr), NULL);

	/* Unlink every other file between batches of a listing: the ones
	 * that stay are listed exactly once. */
	{
		uint64_t cookie = 0, k = 0;

		memset(b.seen, 0, nr);
		for (;;) {
			b.taken = 0;
			SMR_ASSERT_OK(smr_ns_readdir(ns, dir, cookie,
						     big_dir_fill, &b));
			for (int j = 0; j < 500 && k < nr; j++, k += 2) {
				snprintf(name, sizeof(name), "f%06" PRIu64, k);
				SMR_ASSERT_OK(smr_ns_unlink(ns, &root_cr, dir,
							    name));
			}
			if (b.taken < b.batch)
				break;
			cookie = b.next;
		}
		for (uint64_t i = 1; i < nr; i += 2)
			if (!b.seen[i]) {
				CU_FAIL("a file that stayed was not listed");
				break;
			}
		CU_ASSERT_EQUAL(b.dups, 0);
		for (; k < nr; k += 2) {
			snprintf(name, sizeof(name), "f%06" PRIu64, k);
			SMR_ASSERT_OK(smr_ns_unlink(ns, &root_cr, dir, name));
		}
	}
	for (uint64_t i = 1; i < nr; i += 2) {
		snprintf(name, sizeof(name), "f%06" PRIu64, i);
		SMR_ASSERT_OK(smr_ns_unlink(ns, &root_cr, dir, name));
	}
	SMR_ASSERT_OK(smr_ns_sync(ns));
	CU_ASSERT_EQUAL(big_dir_list(dir, &b), 2);
	SMR_ASSERT_OK(smr_ns_rmdir(ns, &root_cr, ROOT, "big"));
	free(b.seen);
	free(inos);
	fs_teardown();
}

static const struct smr_test ns_tests[] = {
	{ "root", test_root },
	{ "names", test_names },
	{ "readdir", test_readdir },
	{ "readdir_plus", test_readdir_plus },
	{ "big_directory", test_big_directory },
	{ "dirs", test_dirs },
	{ "links", test_links },
	{ "symlinks", test_symlinks },
	{ "rename", test_rename },
	{ "rename_whiteout", test_rename_whiteout },
	{ "read_write", test_read_write },
	{ "drop_caps", test_drop_caps },
	{ "large_offsets", test_large_offsets },
	{ "truncate", test_truncate },
	{ "fallocate_lseek", test_fallocate_lseek },
#ifndef NS_TEST_REAL
	{ "checksum", test_checksum },
	{ "read_only", test_read_only },
	{ "abort", test_abort },
#else
	{ "persistence", test_persistence },
	{ "checksum_device", test_checksum_device },
	{ "crash_sweep", test_crash_sweep },
#endif
	{ "permissions", test_permissions },
	{ "xattr", test_xattr },
	{ "acl", test_acl },
	{ "acl_check", test_acl_check },
	{ "orphans", test_orphans },
	{ "tmpfile", test_tmpfile },
#ifndef NS_TEST_REAL
	{ "big_unlink", test_big_unlink },
#endif
	{ "many_refs", test_many_refs },
	{ "timestamps_statfs", test_timestamps_statfs },
	{ "enospc", test_enospc },
	{ "write_whole", test_write_whole },
#ifndef NS_TEST_REAL
	{ "enospc_whole", test_enospc_whole },
#endif
	{ "check", test_check },
	{ "inode_cache", test_inode_cache },
	{ "extent_walk", test_extent_walk },
	{ "overwrite_extents", test_overwrite_extents },
	{ "big_write_items", test_big_write_items },
	{ "user_bytes", test_user_bytes },
	{ "tails", test_tails },
	{ "tails_v1", test_tails_v1 },
#ifdef NS_TEST_REAL
	{ "tail_appends", test_tail_appends },
#endif
#ifndef NS_TEST_REAL
	{ "overwrite_raced", test_overwrite_raced },
	{ "enospc_waits", test_enospc_waits },
	{ "read_unlocked", test_read_unlocked },
	{ "read_cut", test_read_cut },
#endif
	{ "random_names", test_random_names },
	{ "threads", test_threads },
	{ "threads_overlap", test_threads_overlap },
	{ "write_ack", test_write_ack },
	{ "write_acks", test_write_acks },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	static const struct smr_suite suites[] = {
		{ "namespace", ns_tests },
		{ NULL, NULL },
	};

	smr_log_set_level(SMR_LOG_ERR);
	return smr_test_main(argc, argv, suites);
}
