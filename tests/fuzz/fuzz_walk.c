/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fuzz_walk.c - a bounded look at a whole namespace (fuzz.h). */
#include "fuzz.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "namespace/ns.h"

/* Bounds: a damaged tree may hold loops and millions of names. */
#define WALK_MAX_NAMES 512
#define WALK_MAX_DIRS 64
#define WALK_MAX_READ (256 * 1024)

struct walk_name {
	char name[256];
	uint64_t ino;
};

struct walk_dir {
	struct walk_name *names;
	size_t n;
};

static int walk_fill(void *arg, const char *name, size_t namelen,
		     uint64_t ino, uint32_t dtype, uint64_t next)
{
	struct walk_dir *d = arg;

	(void)dtype;
	(void)next;
	if (d->n == WALK_MAX_NAMES)
		return 1;
	namelen = namelen < 255 ? namelen : 255;
	memcpy(d->names[d->n].name, name, namelen);
	d->names[d->n].name[namelen] = 0;
	d->names[d->n].ino = ino;
	d->n++;
	return 0;
}

/* The listing with attributes, as READDIRPLUS reads it: counted only. */
static int walk_fill_plus(void *arg, const char *name, size_t namelen,
			  uint64_t ino, uint32_t dtype,
			  const struct smr_ns_attr *attr, uint64_t next)
{
	size_t *n = arg;

	(void)name;
	(void)namelen;
	(void)ino;
	(void)dtype;
	(void)attr;
	(void)next;
	return ++*n == WALK_MAX_NAMES;
}

static void walk_xattrs(struct smr_ns *ns, const struct smr_ns_cred *cr,
			uint64_t ino, bool change)
{
	char list[4096];
	char *val = malloc(65536);
	ssize_t n = smr_ns_listxattr(ns, cr, ino, list, sizeof(list));

	if (!val)
		return;
	for (ssize_t at = 0; n > 0 && at < n; at += (ssize_t)strlen(list + at) + 1) {
		if (strnlen(list + at, (size_t)(n - at)) == (size_t)(n - at))
			break;
		smr_ns_getxattr(ns, cr, ino, list + at, val, 65536);
		smr_ns_getxattr(ns, cr, ino, list + at, NULL, 0);
	}
	if (change) {
		smr_ns_setxattr(ns, cr, ino, "user.fuzz", "v", 1, 0);
		if (n > 0)
			smr_ns_removexattr(ns, cr, ino, list);
	}
	free(val);
}

static void walk_file(struct smr_ns *ns, const struct smr_ns_cred *cr,
		      const struct smr_ns_attr *a, bool change)
{
	uint64_t res;
	void *buf = malloc(WALK_MAX_READ);

	if (!buf)
		return;
	if (smr_ns_open_file(ns, a->ino, O_RDWR, NULL) == 0) {
		smr_ns_read(ns, a->ino, 0, WALK_MAX_READ, buf);
		if (a->size > WALK_MAX_READ)
			smr_ns_read(ns, a->ino, a->size - 4096, 8192, buf);
		smr_ns_lseek(ns, a->ino, 0, SEEK_DATA, &res);
		smr_ns_lseek(ns, a->ino, 0, SEEK_HOLE, &res);
		if (change) {
			struct smr_ns_setattr sa = {
				.valid = SMR_NS_SET_SIZE, .size = a->size / 2,
			};

			memset(buf, 0x5a, 8192);
			smr_ns_write(ns, cr, a->ino, 1000, buf, 8192);
			smr_ns_setattr(ns, cr, a->ino, &sa, NULL);
			smr_ns_fallocate(ns, a->ino,
					 SMR_NS_FALLOC_PUNCH_HOLE |
						 SMR_NS_FALLOC_KEEP_SIZE,
					 0, 4096);
		}
		smr_ns_release(ns, a->ino);
	}
	free(buf);
}

void fuzz_ns_walk(struct smr_ns *ns, bool change)
{
	static const struct smr_ns_cred root = { .uid = 0 };
	uint64_t dirs[WALK_MAX_DIRS];
	size_t ndirs = 0, done = 0, plus;
	struct walk_dir d;
	struct smr_ns_statfs sf;
	uint64_t problems;

	d.names = malloc(WALK_MAX_NAMES * sizeof(*d.names));
	if (!d.names)
		return;
	smr_ns_statfs(ns, &sf);
	dirs[ndirs++] = SMR_NS_ROOT;
	while (done < ndirs) {
		uint64_t dir = dirs[done++];
		struct smr_ns_attr a;
		char target[4096];

		d.n = 0;
		if (smr_ns_opendir(ns, dir) ||
		    smr_ns_readdir(ns, dir, 0, walk_fill, &d) < 0)
			continue;
		plus = 0;
		smr_ns_readdir_plus(ns, dir, 0, walk_fill_plus, &plus);
		walk_xattrs(ns, &root, dir, change);
		for (size_t i = 0; i < d.n; i++) {
			const char *name = d.names[i].name;

			if (!strcmp(name, ".") || !strcmp(name, ".."))
				continue;
			if (smr_ns_lookup(ns, dir, name, &a))
				continue;
			smr_ns_getattr(ns, a.ino, &a);
			walk_xattrs(ns, &root, a.ino, change);
			if (S_ISDIR(a.mode)) {
				bool seen = false;

				for (size_t j = 0; j < ndirs; j++)
					seen |= dirs[j] == a.ino;
				if (!seen && ndirs < WALK_MAX_DIRS)
					dirs[ndirs++] = a.ino;
			} else if (S_ISLNK(a.mode)) {
				smr_ns_readlink(ns, a.ino, target,
						sizeof(target));
			} else if (S_ISREG(a.mode)) {
				walk_file(ns, &root, &a, change);
			}
		}
		if (change && d.n > 2) {
			/* The last name: renamed, linked, then removed. */
			const char *name = d.names[d.n - 1].name;

			smr_ns_rename(ns, &root, dir, name, dir, "fuzz.r", 0);
			if (!smr_ns_lookup(ns, dir, "fuzz.r", &a)) {
				smr_ns_link(ns, a.ino, SMR_NS_ROOT, "fuzz.l",
					    NULL);
				smr_ns_unlink(ns, &root, SMR_NS_ROOT, "fuzz.l");
				if (S_ISDIR(a.mode))
					smr_ns_rmdir(ns, &root, dir, "fuzz.r");
				else
					smr_ns_unlink(ns, &root, dir, "fuzz.r");
			}
			smr_ns_mkdir(ns, &root, dir, "fuzz.d", 0755, NULL);
			smr_ns_symlink(ns, &root, dir, "fuzz.s", "t", NULL);
		}
	}
	smr_ns_check(ns, &problems);
	free(d.names);
}
