/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dir.c - directory entries, the readdir index, and every call that makes,
 * links, renames or removes a name.
 *
 * An entry is two items: a DIRENT keyed by the name's hash (for lookup in
 * O(log n)) and a DIRINDEX keyed by the directory's next sequence number
 * (for readdir, whose cookie is that number, so a cookie stays valid however
 * the directory changes). Names whose hashes agree in all but the low 8 bits
 * take the next free of 256 slots of the hash.
 */
#include "namespace/ns_priv.h"

#include <dirent.h>
#include <endian.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define NS_DIRENT_BUF (sizeof(struct smr_ns_dirent_d) + SMR_NS_NAME_MAX)
#define NS_SLOT_MASK ((uint64_t)SMR_NS_DIRENT_SLOTS - 1)

/* One directory entry as found. */
struct ns_dent {
	uint64_t ino;
	uint64_t hkey; /* offset of the DIRENT key */
	uint64_t seq;  /* offset of the DIRINDEX key */
	uint8_t dtype;
};

static uint8_t ns_dtype(uint32_t mode)
{
	return (mode & S_IFMT) >> 12;
}

static int ns_check_name(const char *name)
{
	size_t len = strnlen(name, SMR_NS_NAME_MAX + 1);

	if (len > SMR_NS_NAME_MAX)
		return -ENAMETOOLONG;
	if (len == 0 || strchr(name, '/'))
		return -EINVAL;
	return 0;
}

static bool ns_is_dot(const char *name)
{
	return !strcmp(name, ".") || !strcmp(name, "..");
}

/* Find @name in @dir: 0 and *@de, or -ENOENT. */
static int ns_dirent_find(struct smr_ns *ns, uint64_t dir, const char *name,
			  struct ns_dent *de)
{
	size_t nlen = strlen(name);
	uint64_t base = smr_ns_name_hash(name, nlen) & ~NS_SLOT_MASK;
	struct smr_key from = ns_key(dir, SMR_NS_T_DIRENT, base), found;
	union {
		struct smr_ns_dirent_d d;
		uint8_t b[NS_DIRENT_BUF];
	} v;
	size_t len;
	int rc;

	for (;;) {
		len = sizeof(v);
		rc = smr_bt_next(ns->cow, SMR_TREE_FS, &from, &found, &v, &len);
		if (rc)
			return rc;
		if (found.objid != dir || found.type != SMR_NS_T_DIRENT ||
		    (found.offset & ~NS_SLOT_MASK) != base)
			return -ENOENT;
		if (len < sizeof(v.d) ||
		    len != sizeof(v.d) + le16toh(v.d.name_len))
			return smr_corrupt(UINT64_MAX, "directory entry size");
		if (le16toh(v.d.name_len) == nlen &&
		    !memcmp(v.d.name, name, nlen)) {
			de->ino = le64toh(v.d.ino);
			de->seq = le64toh(v.d.ref);
			de->dtype = v.d.dtype;
			de->hkey = found.offset;
			return 0;
		}
		if ((found.offset & NS_SLOT_MASK) == NS_SLOT_MASK)
			return -ENOENT;
		from = found;
		from.offset++;
	}
}

/* Add @name -> @ino to @dir (whose inode the caller writes back: its
 * next_seq moves). -EEXIST if 256 names share the hash (never seen). */
static int ns_dirent_add(struct smr_ns *ns, struct smr_txn *t,
			 struct ns_inode *dir, const char *name, uint64_t ino,
			 uint8_t dtype)
{
	size_t nlen = strlen(name);
	uint64_t base = smr_ns_name_hash(name, nlen) & ~NS_SLOT_MASK;
	union {
		struct smr_ns_dirent_d d;
		uint8_t b[NS_DIRENT_BUF];
	} v;
	struct smr_key k;
	uint64_t slot, seq = dir->next_seq;
	size_t len;
	int rc;

	for (slot = 0; slot <= NS_SLOT_MASK; slot++) {
		k = ns_key(dir->ino, SMR_NS_T_DIRENT, base | slot);
		len = 0;
		rc = smr_bt_lookup(ns->cow, SMR_TREE_FS, &k, NULL, &len);
		if (rc == -ENOENT)
			break;
		if (rc)
			return rc;
	}
	if (slot > NS_SLOT_MASK)
		return -EEXIST;

	memset(&v, 0, sizeof(v));
	v.d.ino = htole64(ino);
	v.d.ref = htole64(seq);
	v.d.dtype = dtype;
	v.d.name_len = htole16((uint16_t)nlen);
	memcpy(v.d.name, name, nlen);
	rc = ns_bt_insert(ns, t, &k, &v, sizeof(v.d) + nlen);
	if (rc)
		return rc;
	v.d.ref = htole64(base | slot);
	k = ns_key(dir->ino, SMR_NS_T_DIRINDEX, seq);
	rc = ns_bt_insert(ns, t, &k, &v, sizeof(v.d) + nlen);
	if (rc)
		return rc;
	dir->next_seq = seq + 1;
	return 0;
}

static int ns_dirent_remove(struct smr_ns *ns, struct smr_txn *t,
			    uint64_t dir, const struct ns_dent *de)
{
	struct smr_key k = ns_key(dir, SMR_NS_T_DIRENT, de->hkey);
	int rc;

	rc = ns_bt_delete(ns, t, &k);
	if (rc)
		return rc;
	k = ns_key(dir, SMR_NS_T_DIRINDEX, de->seq);
	return ns_bt_delete(ns, t, &k);
}

/* Point an existing entry at another inode (rename exchange). */
static int ns_dirent_retarget(struct smr_ns *ns, struct smr_txn *t,
			      uint64_t dir, const struct ns_dent *de,
			      uint64_t ino, uint8_t dtype)
{
	union {
		struct smr_ns_dirent_d d;
		uint8_t b[NS_DIRENT_BUF];
	} v;
	struct smr_key keys[2] = {
		ns_key(dir, SMR_NS_T_DIRENT, de->hkey),
		ns_key(dir, SMR_NS_T_DIRINDEX, de->seq),
	};
	size_t len;
	int rc;

	for (int i = 0; i < 2; i++) {
		len = sizeof(v);
		rc = smr_bt_lookup(ns->cow, SMR_TREE_FS, &keys[i], &v, &len);
		if (rc)
			return rc;
		v.d.ino = htole64(ino);
		v.d.dtype = dtype;
		rc = ns_bt_update(ns, t, &keys[i], &v, len);
		if (rc)
			return rc;
	}
	return 0;
}

static int ns_dir_is_empty(struct smr_ns *ns, uint64_t dir)
{
	struct smr_key from = ns_key(dir, SMR_NS_T_DIRENT, 0), found;
	size_t len = 0;
	int rc;

	rc = smr_bt_next(ns->cow, SMR_TREE_FS, &from, &found, NULL, &len);
	if (rc == -ENOENT)
		return 1;
	if (rc)
		return rc;
	return found.objid != dir || found.type != SMR_NS_T_DIRENT;
}

/* Get a directory that may take new entries. */
static int ns_get_dir(struct smr_ns *ns, uint64_t ino, struct ns_inode *dir)
{
	int rc = ns_inode_get(ns, ino, dir);

	if (rc)
		return rc;
	if (!S_ISDIR(dir->mode))
		return -ENOTDIR;
	if (dir->nlink == 0)
		return -ENOENT; /* removed while someone was in it */
	return 0;
}

/* The directory @parent, to which @name may be added: -EEXIST when the name
 * is taken (or is "." or ".."), else ns_get_dir()'s errors. */
static int ns_get_dir_for_new(struct smr_ns *ns, uint64_t parent,
			      const char *name, struct ns_inode *dir)
{
	struct ns_dent de;
	int rc = ns_get_dir(ns, parent, dir);

	if (rc)
		return rc;
	if (ns_is_dot(name))
		return -EEXIST;
	rc = ns_dirent_find(ns, parent, name, &de);
	if (rc == 0)
		return -EEXIST;
	return rc == -ENOENT ? 0 : rc;
}

/* Sticky directories: only root, the directory's or the entry's owner. */
static int ns_sticky_ok(const struct smr_ns_cred *cr,
			const struct ns_inode *dir, const struct ns_inode *ip)
{
	if (!(dir->mode & S_ISVTX) || cr->uid == 0 || cr->uid == dir->uid ||
	    cr->uid == ip->uid)
		return 0;
	return -EPERM;
}

/* ========================================================================
 * Lookup
 * ======================================================================== */

int smr_ns_lookup(struct smr_ns *ns, uint64_t parent, const char *name,
		  struct smr_ns_attr *attr)
{
	struct ns_inode dir, in;
	struct ns_dent de;
	uint64_t ino;
	int rc;

	if (strnlen(name, SMR_NS_NAME_MAX + 1) > SMR_NS_NAME_MAX)
		return -ENAMETOOLONG;
	pthread_mutex_lock(&ns->lock);
	rc = ns_inode_get(ns, parent, &dir);
	if (rc)
		goto out;
	if (!S_ISDIR(dir.mode)) {
		rc = -ENOTDIR;
		goto out;
	}
	if (!strcmp(name, ".")) {
		ino = parent;
	} else if (!strcmp(name, "..")) {
		ino = dir.parent;
	} else {
		rc = ns_dirent_find(ns, parent, name, &de);
		if (rc)
			goto out;
		ino = de.ino;
	}
	rc = ns_inode_get(ns, ino, &in);
	if (rc == -ENOENT)
		rc = smr_corrupt(UINT64_MAX, "directory entry to no inode");
	if (rc)
		goto out;
	ns_inode_attr(ns, &in, attr);
	ns_lookup_ref(ns, ino);
out:
	pthread_mutex_unlock(&ns->lock);
	return rc;
}

/* ========================================================================
 * Making entries
 * ======================================================================== */

struct ns_new {
	uint32_t mode;
	uint64_t rdev;
	const char *target; /* symlinks */
	bool tmpfile;       /* no name: an orphan until linked */
};

static int ns_symlink_store(struct smr_ns *ns, struct smr_txn *t,
			    uint64_t ino, const char *target, size_t len)
{
	for (uint64_t part = 0; part * SMR_NS_SYMLINK_PART < len; part++) {
		size_t off = part * SMR_NS_SYMLINK_PART;
		struct smr_key k = ns_key(ino, SMR_NS_T_SYMLINK, part);
		int rc;

		rc = ns_bt_insert(ns, t, &k, target + off,
				   SMR_MIN(len - off, SMR_NS_SYMLINK_PART));
		if (rc)
			return rc;
	}
	return 0;
}

/* A new inode of @mode in directory @dir, numbered next: owner, group (a
 * setgid directory's), links, times and generation set, nothing stored. */
static void ns_inode_new(const struct smr_ns *ns, const struct smr_ns_cred *cr,
			 const struct ns_inode *dir, uint32_t mode, int64_t now,
			 struct ns_inode *in)
{
	memset(in, 0, sizeof(*in));
	in->ino = ns->next_ino;
	in->mode = mode;
	in->uid = cr->uid;
	if (dir->mode & S_ISGID) {
		in->gid = dir->gid;
		if (S_ISDIR(in->mode))
			in->mode |= S_ISGID;
	} else {
		in->gid = cr->gid;
	}
	if (!S_ISDIR(in->mode) && (in->mode & S_ISGID) && cr->uid != 0 &&
	    !ns_cred_in_group(cr, in->gid))
		in->mode &= ~S_ISGID;
	in->nlink = S_ISDIR(in->mode) ? 2 : 1;
	in->atime = in->mtime = in->ctime = in->crtime = now;
	in->gen = ns->next_gen;
}

/* The inode ns_inode_new() gave out is stored in @t: count it. */
static int ns_inode_count_new(struct smr_ns *ns, struct smr_txn *t)
{
	ns->next_ino++;
	ns->next_gen++;
	ns->nr_inodes++;
	return ns_meta_put(ns, t);
}

static int ns_make(struct smr_ns *ns, const struct smr_ns_cred *cr,
		   uint64_t parent, const char *name, const struct ns_new *nw,
		   bool open, struct smr_ns_attr *attr)
{
	struct ns_inode dir, in;
	struct ns_acl_new an = { 0 };
	struct smr_txn *t;
	bool reffed = false, listed = false;
	int64_t now = ns_now();
	uint32_t mode = nw->mode;
	uint64_t ino;
	int rc;

	rc = nw->tmpfile ? 0 : ns_check_name(name);
	if (rc)
		return rc;
	smr_cow_clean_for_meta(ns->cow);
	pthread_mutex_lock(&ns->lock);
	rc = nw->tmpfile ? ns_get_dir(ns, parent, &dir) :
			   ns_get_dir_for_new(ns, parent, name, &dir);
	if (rc)
		goto out_unlock;
	if (S_ISDIR(nw->mode) && dir.nlink >= SMR_NS_LINK_MAX) {
		rc = -EMLINK;
		goto out_unlock;
	}
	rc = ns_acl_new_prepare(ns, parent, &mode, cr->umask, &an);
	if (rc)
		goto out_unlock;
	ino = ns->next_ino;
	if (nw->tmpfile) {
		if (!ns_linkable_add(ns, ino)) {
			rc = -ENOMEM;
			goto out_unlock;
		}
		listed = true;
	}
	if (open || ns->opts.track_lookups) {
		if (!ns_ref_find(ns, ino, true)) {
			rc = -ENOMEM;
			goto out_unlock;
		}
		reffed = true;
	}

	ns_inode_new(ns, cr, &dir, mode, now, &in);
	if (nw->tmpfile)
		in.nlink = 0;
	if (S_ISCHR(in.mode) || S_ISBLK(in.mode))
		in.rdev = nw->rdev;
	if (S_ISDIR(in.mode)) {
		in.next_seq = SMR_NS_FIRST_SEQ;
		in.parent = parent;
	}
	if (nw->target)
		in.size = strlen(nw->target);
	/* The inode, the name twice (entry and index) or the orphan record,
	 * the target's parts, the ACLs it inherits. */
	rc = ns_admit_meta_locked(ns, 3 + (unsigned int)SMR_DIV_ROUND_UP(
					      in.size, SMR_NS_SYMLINK_PART) +
					      2 * !!an.def,
				  sizeof(struct smr_ns_inode_d) +
					  (name ? 2 * strlen(name) : 0) +
					  in.size + 2 * an.len);
	if (rc)
		goto out_unref;

	rc = ns_txn_begin(ns, &t);
	if (rc)
		goto out_unref;
	rc = nw->tmpfile ? ns_orphan_put(ns, t, in.ino) :
			   ns_dirent_add(ns, t, &dir, name, in.ino,
					 ns_dtype(in.mode));
	if (rc)
		goto out_end;
	if (nw->target) {
		rc = ns_symlink_store(ns, t, in.ino, nw->target, in.size);
		if (rc)
			goto out_end;
	}
	rc = ns_acl_new_store(ns, t, in.ino, &an);
	if (!rc)
		rc = ns_inode_put(ns, t, &in);
	if (rc)
		goto out_end;
	if (S_ISDIR(in.mode))
		dir.nlink++;
	/* A file with no name changes no directory. */
	if (!nw->tmpfile) {
		dir.mtime = dir.ctime = now;
		rc = ns_inode_put(ns, t, &dir);
		if (rc)
			goto out_end;
	}
	rc = ns_inode_count_new(ns, t);
	if (rc)
		goto out_end;
	if (reffed) {
		struct ns_ref *r = ns_ref_find(ns, ino, false);

		if (r && open)
			ns_ref_inc(&r->nopen);
		if (r && ns->opts.track_lookups)
			ns_ref_inc(&r->nlookup);
		reffed = false;
	}
	ns_inode_attr(ns, &in, attr);
out_end:
	rc = ns_txn_end(ns, t, rc);
out_unref:
	if (reffed)
		ns_ref_drop_if_unused(ns, ino);
out_unlock:
	if (rc && listed)
		ns_linkable_drop(ns, ino);
	pthread_mutex_unlock(&ns->lock);
	ns_acl_new_free(&an);
	return rc;
}

int smr_ns_mknod(struct smr_ns *ns, const struct smr_ns_cred *cr,
		 uint64_t parent, const char *name, uint32_t mode,
		 uint64_t rdev, struct smr_ns_attr *attr)
{
	struct ns_new nw = { .mode = mode & (S_IFMT | 07777), .rdev = rdev };

	switch (mode & S_IFMT) {
	case 0:
		nw.mode |= S_IFREG;
		break;
	case S_IFREG:
	case S_IFCHR:
	case S_IFBLK:
	case S_IFIFO:
	case S_IFSOCK:
		break;
	default:
		return -EINVAL;
	}
	return ns_make(ns, cr, parent, name, &nw, false, attr);
}

int smr_ns_create(struct smr_ns *ns, const struct smr_ns_cred *cr,
		  uint64_t parent, const char *name, uint32_t mode,
		  struct smr_ns_attr *attr)
{
	struct ns_new nw = { .mode = S_IFREG | (mode & 07777) };

	if ((mode & S_IFMT) && !S_ISREG(mode))
		return -EINVAL;
	return ns_make(ns, cr, parent, name, &nw, true, attr);
}

int smr_ns_tmpfile(struct smr_ns *ns, const struct smr_ns_cred *cr,
		   uint64_t parent, uint32_t mode, struct smr_ns_attr *attr)
{
	struct ns_new nw = { .mode = S_IFREG | (mode & 07777),
			     .tmpfile = true };

	if ((mode & S_IFMT) && !S_ISREG(mode))
		return -EINVAL;
	return ns_make(ns, cr, parent, NULL, &nw, true, attr);
}

int smr_ns_mkdir(struct smr_ns *ns, const struct smr_ns_cred *cr,
		 uint64_t parent, const char *name, uint32_t mode,
		 struct smr_ns_attr *attr)
{
	struct ns_new nw = { .mode = S_IFDIR | (mode & 07777) };

	return ns_make(ns, cr, parent, name, &nw, false, attr);
}

int smr_ns_symlink(struct smr_ns *ns, const struct smr_ns_cred *cr,
		   uint64_t parent, const char *name, const char *target,
		   struct smr_ns_attr *attr)
{
	struct ns_new nw = { .mode = S_IFLNK | 0777, .target = target };
	size_t len = strnlen(target, SMR_NS_SYMLINK_MAX + 1);

	if (len == 0)
		return -ENOENT;
	if (len > SMR_NS_SYMLINK_MAX)
		return -ENAMETOOLONG;
	return ns_make(ns, cr, parent, name, &nw, false, attr);
}

int smr_ns_readlink(struct smr_ns *ns, uint64_t ino, char *buf, size_t size)
{
	struct ns_inode in;
	int rc;

	pthread_mutex_lock(&ns->lock);
	rc = ns_inode_get(ns, ino, &in);
	if (rc)
		goto out;
	if (!S_ISLNK(in.mode)) {
		rc = -EINVAL;
		goto out;
	}
	if (in.size > SMR_NS_SYMLINK_MAX) {
		rc = smr_corrupt(UINT64_MAX, "symlink target too long");
		goto out;
	}
	for (uint64_t off = 0, part = 0; off < in.size && off < size; part++) {
		struct smr_key k = ns_key(ino, SMR_NS_T_SYMLINK, part);
		char tmp[SMR_NS_SYMLINK_PART];
		size_t len = sizeof(tmp);

		rc = smr_bt_lookup(ns->cow, SMR_TREE_FS, &k, tmp, &len);
		if (rc == -ENOENT)
			rc = smr_corrupt(UINT64_MAX, "symlink part missing");
		if (rc)
			goto out;
		if (len != SMR_MIN(in.size - off, SMR_NS_SYMLINK_PART)) {
			rc = smr_corrupt(UINT64_MAX, "symlink part size");
			goto out;
		}
		memcpy(buf + off, tmp, SMR_MIN(len, size - off));
		off += len;
	}
	rc = (int)in.size;
out:
	pthread_mutex_unlock(&ns->lock);
	return rc;
}

int smr_ns_link(struct smr_ns *ns, uint64_t ino, uint64_t newparent,
		const char *newname, struct smr_ns_attr *attr)
{
	struct ns_inode dir, in;
	struct smr_txn *t;
	int64_t now = ns_now();
	bool tmp;
	int rc;

	rc = ns_check_name(newname);
	if (rc)
		return rc;
	smr_cow_clean_for_meta(ns->cow);
	pthread_mutex_lock(&ns->lock);
	rc = ns_inode_get(ns, ino, &in);
	if (rc)
		goto out_unlock;
	if (S_ISDIR(in.mode)) {
		rc = -EPERM;
		goto out_unlock;
	}
	/* Of the unlinked files only one made by smr_ns_tmpfile() may be
	 * named, once. */
	tmp = in.nlink == 0;
	if (tmp && !ns_linkable_has(ns, ino)) {
		rc = -ENOENT;
		goto out_unlock;
	}
	if (in.nlink >= SMR_NS_LINK_MAX) {
		rc = -EMLINK;
		goto out_unlock;
	}
	rc = ns_get_dir_for_new(ns, newparent, newname, &dir);
	if (rc)
		goto out_unlock;
	rc = ns_admit_meta_locked(ns, 2, 2 * strlen(newname));
	if (rc)
		goto out_unlock;
	rc = ns_txn_begin(ns, &t);
	if (rc)
		goto out_unlock;
	rc = ns_dirent_add(ns, t, &dir, newname, ino, ns_dtype(in.mode));
	if (!rc && tmp)
		rc = ns_orphan_del(ns, t, ino);
	if (rc)
		goto out_end;
	in.nlink++;
	in.ctime = now;
	dir.mtime = dir.ctime = now;
	rc = ns_inode_put(ns, t, &in);
	if (!rc)
		rc = ns_inode_put(ns, t, &dir);
	if (rc)
		goto out_end;
	ns_inode_attr(ns, &in, attr);
	ns_lookup_ref(ns, ino);
out_end:
	rc = ns_txn_end(ns, t, rc);
	if (!rc && tmp)
		ns_linkable_drop(ns, ino);
out_unlock:
	pthread_mutex_unlock(&ns->lock);
	return rc;
}

/* ========================================================================
 * Removing entries
 * ======================================================================== */

static int ns_remove(struct smr_ns *ns, const struct smr_ns_cred *cr,
		     uint64_t parent, const char *name, bool rmdir)
{
	struct ns_inode dir, in;
	struct ns_dent de;
	struct smr_txn *t;
	int64_t now = ns_now();
	int rc;

	if (strnlen(name, SMR_NS_NAME_MAX + 1) > SMR_NS_NAME_MAX)
		return -ENAMETOOLONG;
	if (rmdir && !strcmp(name, "."))
		return -EINVAL;
	if (rmdir && !strcmp(name, ".."))
		return -ENOTEMPTY;
	if (!rmdir && ns_is_dot(name))
		return -EISDIR;
	smr_cow_clean_for_meta(ns->cow);
	pthread_mutex_lock(&ns->lock);
	rc = ns_inode_get(ns, parent, &dir);
	if (rc)
		goto out_unlock;
	if (!S_ISDIR(dir.mode)) {
		rc = -ENOTDIR;
		goto out_unlock;
	}
	rc = ns_dirent_find(ns, parent, name, &de);
	if (rc)
		goto out_unlock;
	rc = ns_inode_get(ns, de.ino, &in);
	if (rc == -ENOENT)
		rc = smr_corrupt(UINT64_MAX, "directory entry to no inode");
	if (rc)
		goto out_unlock;
	if (rmdir && !S_ISDIR(in.mode)) {
		rc = -ENOTDIR;
		goto out_unlock;
	}
	if (!rmdir && S_ISDIR(in.mode)) {
		rc = -EISDIR;
		goto out_unlock;
	}
	rc = ns_sticky_ok(cr, &dir, &in);
	if (rc)
		goto out_unlock;
	if (rmdir) {
		rc = ns_dir_is_empty(ns, in.ino);
		if (rc < 0)
			goto out_unlock;
		if (rc == 0) {
			rc = -ENOTEMPTY;
			goto out_unlock;
		}
	}
	rc = ns_txn_begin(ns, &t);
	if (rc)
		goto out_unlock;
	rc = ns_dirent_remove(ns, t, parent, &de);
	if (rc)
		goto out_end;
	if (rmdir) {
		in.nlink = 0;
		dir.nlink--;
	} else {
		in.nlink--;
	}
	dir.mtime = dir.ctime = now;
	in.ctime = now;
	rc = ns_inode_put(ns, t, &dir);
	if (rc)
		goto out_end;
	if (in.nlink == 0)
		rc = ns_inode_unlinked_locked(ns, t, &in);
	else
		rc = ns_inode_put(ns, t, &in);
out_end:
	rc = ns_txn_end(ns, t, rc);
	if (!rc && in.nlink == 0 && ns_free_in_parts(&in))
		(void)ns_maybe_destroy_locked(ns, in.ino);
out_unlock:
	pthread_mutex_unlock(&ns->lock);
	return rc;
}

int smr_ns_unlink(struct smr_ns *ns, const struct smr_ns_cred *cr,
		  uint64_t parent, const char *name)
{
	return ns_remove(ns, cr, parent, name, false);
}

int smr_ns_rmdir(struct smr_ns *ns, const struct smr_ns_cred *cr,
		 uint64_t parent, const char *name)
{
	return ns_remove(ns, cr, parent, name, true);
}

/* ========================================================================
 * Rename
 * ======================================================================== */

/* Is @dir @anc or below it? Walks the parent links up to the root. */
static int ns_is_under(struct smr_ns *ns, uint64_t dir, uint64_t anc)
{
	struct ns_inode in;
	unsigned int depth = 0;
	int rc;

	for (;;) {
		if (dir == anc)
			return 1;
		if (dir == SMR_NS_ROOT_INO)
			return 0;
		rc = ns_inode_get(ns, dir, &in);
		if (rc)
			return rc;
		dir = in.parent;
		if (++depth > 1u << 20)
			return smr_corrupt(UINT64_MAX, "directory parent loop");
	}
}

struct ns_rename {
	struct ns_inode op, np, src, dst;
	struct ns_inode *npp; /* &np, or &op when the parents are one */
	struct ns_dent sde, dde;
	bool have_dst;
};

static int ns_rename_check(struct smr_ns *ns, const struct smr_ns_cred *cr,
			   struct ns_rename *rn, uint64_t parent,
			   const char *name, uint64_t newparent,
			   const char *newname, unsigned int flags)
{
	bool exchange = flags & SMR_NS_RENAME_EXCHANGE;
	int rc;

	rc = ns_get_dir(ns, parent, &rn->op);
	if (rc)
		return rc;
	if (newparent == parent) {
		rn->npp = &rn->op;
	} else {
		rc = ns_get_dir(ns, newparent, &rn->np);
		if (rc)
			return rc;
		rn->npp = &rn->np;
	}
	if (ns_is_dot(name) || ns_is_dot(newname))
		return -EINVAL;
	rc = ns_dirent_find(ns, parent, name, &rn->sde);
	if (rc)
		return rc;
	rc = ns_inode_get(ns, rn->sde.ino, &rn->src);
	if (rc)
		return rc == -ENOENT ? smr_corrupt(UINT64_MAX, "dangling entry") :
				       rc;
	rc = ns_dirent_find(ns, newparent, newname, &rn->dde);
	if (rc && rc != -ENOENT)
		return rc;
	rn->have_dst = rc == 0;
	if (rn->have_dst) {
		rc = ns_inode_get(ns, rn->dde.ino, &rn->dst);
		if (rc)
			return rc == -ENOENT ?
				       smr_corrupt(UINT64_MAX, "dangling entry") :
				       rc;
	}
	if (exchange && !rn->have_dst)
		return -ENOENT;
	if ((flags & SMR_NS_RENAME_NOREPLACE) && rn->have_dst)
		return -EEXIST;
	if (rn->have_dst && rn->dst.ino == rn->src.ino)
		return 1; /* the same inode: nothing to do */

	/* A directory may not go below itself. */
	if (S_ISDIR(rn->src.mode) && newparent != parent) {
		rc = ns_is_under(ns, newparent, rn->src.ino);
		if (rc)
			return rc < 0 ? rc : -EINVAL;
	}
	if (exchange && S_ISDIR(rn->dst.mode) && newparent != parent) {
		rc = ns_is_under(ns, parent, rn->dst.ino);
		if (rc)
			return rc < 0 ? rc : -EINVAL;
	}
	if (rn->have_dst && !exchange) {
		if (S_ISDIR(rn->src.mode) && !S_ISDIR(rn->dst.mode))
			return -ENOTDIR;
		if (!S_ISDIR(rn->src.mode) && S_ISDIR(rn->dst.mode))
			return -EISDIR;
		if (S_ISDIR(rn->dst.mode)) {
			rc = ns_dir_is_empty(ns, rn->dst.ino);
			if (rc < 0)
				return rc;
			if (rc == 0)
				return -ENOTEMPTY;
		}
	}
	rc = ns_sticky_ok(cr, &rn->op, &rn->src);
	if (!rc && rn->have_dst)
		rc = ns_sticky_ok(cr, rn->npp, &rn->dst);
	if (rc)
		return rc;
	if (newparent != parent && S_ISDIR(rn->src.mode) &&
	    !(rn->have_dst && S_ISDIR(rn->dst.mode)) &&
	    rn->npp->nlink >= SMR_NS_LINK_MAX)
		return -EMLINK;
	if (exchange && newparent != parent && S_ISDIR(rn->dst.mode) &&
	    !S_ISDIR(rn->src.mode) && rn->op.nlink >= SMR_NS_LINK_MAX)
		return -EMLINK;
	return 0;
}

static int ns_rename_exchange(struct smr_ns *ns, struct smr_txn *t,
			      struct ns_rename *rn, int64_t now)
{
	bool sdir = S_ISDIR(rn->src.mode), ddir = S_ISDIR(rn->dst.mode);
	int rc;

	rc = ns_dirent_retarget(ns, t, rn->op.ino, &rn->sde, rn->dst.ino,
				ns_dtype(rn->dst.mode));
	if (!rc)
		rc = ns_dirent_retarget(ns, t, rn->npp->ino, &rn->dde,
					rn->src.ino, ns_dtype(rn->src.mode));
	if (rc)
		return rc;
	if (rn->npp != &rn->op) {
		if (sdir && !ddir) {
			rn->op.nlink--;
			rn->np.nlink++;
		} else if (ddir && !sdir) {
			rn->np.nlink--;
			rn->op.nlink++;
		}
		if (sdir)
			rn->src.parent = rn->np.ino;
		if (ddir)
			rn->dst.parent = rn->op.ino;
	}
	rn->dst.ctime = now;
	return ns_inode_put(ns, t, &rn->dst);
}

static int ns_rename_move(struct smr_ns *ns, struct smr_txn *t,
			  struct ns_rename *rn, const char *newname,
			  int64_t now)
{
	int rc;

	if (rn->have_dst) {
		rc = ns_dirent_remove(ns, t, rn->npp->ino, &rn->dde);
		if (rc)
			return rc;
		if (S_ISDIR(rn->dst.mode)) {
			rn->dst.nlink = 0;
			rn->npp->nlink--;
		} else {
			rn->dst.nlink--;
		}
		rn->dst.ctime = now;
		rc = rn->dst.nlink ? ns_inode_put(ns, t, &rn->dst) :
				     ns_inode_unlinked_locked(ns, t, &rn->dst);
		if (rc)
			return rc;
	}
	rc = ns_dirent_remove(ns, t, rn->op.ino, &rn->sde);
	if (rc)
		return rc;
	rc = ns_dirent_add(ns, t, rn->npp, newname, rn->src.ino,
			   ns_dtype(rn->src.mode));
	if (rc)
		return rc;
	if (S_ISDIR(rn->src.mode) && rn->npp != &rn->op) {
		rn->op.nlink--;
		rn->np.nlink++;
		rn->src.parent = rn->np.ino;
	}
	return 0;
}

/*
 * RENAME_WHITEOUT: the name @name the rename freed in @dir now names a
 * whiteout, a character device 0:0 of mode 0, which an overlay filesystem
 * takes for a deleted file of its lower layers (as Linux makes one: no
 * ACL). @dir is stored by the caller.
 */
static int ns_whiteout(struct smr_ns *ns, struct smr_txn *t,
		       const struct smr_ns_cred *cr, struct ns_inode *dir,
		       const char *name, int64_t now)
{
	struct ns_inode wh;
	int rc;

	ns_inode_new(ns, cr, dir, S_IFCHR, now, &wh);
	rc = ns_dirent_add(ns, t, dir, name, wh.ino, DT_CHR);
	if (!rc)
		rc = ns_inode_put(ns, t, &wh);
	return rc ? rc : ns_inode_count_new(ns, t);
}

int smr_ns_rename(struct smr_ns *ns, const struct smr_ns_cred *cr,
		  uint64_t parent, const char *name, uint64_t newparent,
		  const char *newname, unsigned int flags)
{
	struct ns_rename *rn;
	struct smr_txn *t;
	int64_t now = ns_now();
	int rc;

	if (flags & ~(SMR_NS_RENAME_NOREPLACE | SMR_NS_RENAME_EXCHANGE |
		      SMR_NS_RENAME_WHITEOUT))
		return -EINVAL;
	if ((flags & SMR_NS_RENAME_EXCHANGE) &&
	    (flags & (SMR_NS_RENAME_NOREPLACE | SMR_NS_RENAME_WHITEOUT)))
		return -EINVAL;
	rc = ns_check_name(name);
	if (!rc)
		rc = ns_check_name(newname);
	if (rc)
		return rc;
	rn = calloc(1, sizeof(*rn));
	if (!rn)
		return -ENOMEM;
	smr_cow_clean_for_meta(ns->cow);
	pthread_mutex_lock(&ns->lock);
	rc = ns_rename_check(ns, cr, rn, parent, name, newparent, newname,
			     flags);
	/* A whiteout is an inode and a name more. */
	if (!rc && (flags & SMR_NS_RENAME_WHITEOUT))
		rc = ns_admit_meta_locked(ns, 3, sizeof(struct smr_ns_inode_d) +
						 2 * strlen(name));
	if (rc) {
		if (rc == 1)
			rc = 0;
		goto out_unlock;
	}
	rc = ns_txn_begin(ns, &t);
	if (rc)
		goto out_unlock;
	if (flags & SMR_NS_RENAME_EXCHANGE)
		rc = ns_rename_exchange(ns, t, rn, now);
	else
		rc = ns_rename_move(ns, t, rn, newname, now);
	if (!rc && (flags & SMR_NS_RENAME_WHITEOUT))
		rc = ns_whiteout(ns, t, cr, &rn->op, name, now);
	if (rc)
		goto out_end;
	rn->src.ctime = now;
	rn->op.mtime = rn->op.ctime = now;
	rn->npp->mtime = rn->npp->ctime = now;
	rc = ns_inode_put(ns, t, &rn->src);
	if (!rc)
		rc = ns_inode_put(ns, t, &rn->op);
	if (!rc && rn->npp != &rn->op)
		rc = ns_inode_put(ns, t, &rn->np);
out_end:
	rc = ns_txn_end(ns, t, rc);
	if (!rc && rn->have_dst && !(flags & SMR_NS_RENAME_EXCHANGE) &&
	    rn->dst.nlink == 0 && ns_free_in_parts(&rn->dst))
		(void)ns_maybe_destroy_locked(ns, rn->dst.ino);
out_unlock:
	pthread_mutex_unlock(&ns->lock);
	free(rn);
	return rc;
}

/* ========================================================================
 * Reading directories
 * ======================================================================== */

int smr_ns_opendir(struct smr_ns *ns, uint64_t ino)
{
	struct ns_inode in;
	int rc;

	pthread_mutex_lock(&ns->lock);
	rc = ns_inode_get(ns, ino, &in);
	if (!rc && !S_ISDIR(in.mode))
		rc = -ENOTDIR;
	pthread_mutex_unlock(&ns->lock);
	return rc;
}

/* One entry of a batch of smr_ns_readdir_plus(). */
struct ns_rdent {
	uint64_t ino, next;
	uint32_t dtype;
	size_t len;
	char name[SMR_NS_NAME_MAX + 1];
};

/* Entries are taken from the tree this many at a time, and their inodes
 * looked up after (not from inside the tree's walk). */
#define NS_RDPLUS_BATCH 64

struct ns_readdir {
	smr_ns_filldir_fn fill;         /* smr_ns_readdir */
	struct ns_rdent *batch;         /* or smr_ns_readdir_plus */
	unsigned int n;
	void *arg;
	int err;
};

static int ns_readdir_item(void *arg, const struct smr_key *key,
			   const void *val, size_t len)
{
	struct ns_readdir *rd = arg;
	union {
		struct smr_ns_dirent_d d;
		uint8_t b[NS_DIRENT_BUF + 1];
	} v;
	struct ns_rdent *e;
	size_t nlen;

	/* The engine's value may sit anywhere in a node: copy it to align. */
	if (len < sizeof(v.d) || len > NS_DIRENT_BUF) {
		rd->err = smr_corrupt(UINT64_MAX, "readdir index entry size");
		return rd->err;
	}
	memcpy(&v, val, len);
	nlen = le16toh(v.d.name_len);
	if (len != sizeof(v.d) + nlen) {
		rd->err = smr_corrupt(UINT64_MAX, "readdir index entry size");
		return rd->err;
	}
	v.b[len] = 0;
	if (rd->fill)
		return rd->fill(rd->arg, (const char *)v.d.name, nlen,
				le64toh(v.d.ino), v.d.dtype, key->offset);
	e = &rd->batch[rd->n++];
	e->ino = le64toh(v.d.ino);
	e->next = key->offset;
	e->dtype = v.d.dtype;
	e->len = nlen;
	memcpy(e->name, v.d.name, nlen + 1);
	return rd->n == NS_RDPLUS_BATCH;
}

/* As smr_ns_opts.atime says. relatime: atime is updated only when it is not
 * newer than mtime/ctime or is a day old, so that reading does not write
 * metadata every time. (Compared with now less a day: any atime can be
 * set, and now minus one far in the past would overflow.) */
bool ns_atime_fresh(const struct smr_ns *ns, const struct ns_inode *ip,
		    int64_t now)
{
	switch (ns->opts.atime) {
	case SMR_NS_NOATIME:
		return true;
	case SMR_NS_STRICTATIME:
		break;
	case SMR_NS_RELATIME:
		if (ip->atime > ip->mtime && ip->atime > ip->ctime &&
		    ip->atime > now - 24LL * 3600 * 1000000000)
			return true;
		break;
	}
	return ns->opts.nodiratime && S_ISDIR(ip->mode);
}

void ns_touch_atime_locked(struct smr_ns *ns, struct ns_inode *ip)
{
	int64_t now = ns_now();
	struct smr_txn *t;

	if (ns_atime_fresh(ns, ip, now))
		return;
	if (smr_cow_is_read_only(ns->cow) || ns_txn_begin(ns, &t))
		return;
	ip->atime = now;
	/* Best effort: a failure leaves the old atime. */
	(void)ns_txn_end(ns, t, ns_inode_put(ns, t, ip));
}

/* Hand @fill the batch in @rd, each entry with its inode's attributes
 * (none if the entry names no inode: the kernel then looks it up, which
 * reports it); each entry taken counts a kernel lookup. 1 when @fill
 * stopped, else 0 or an error. */
static int ns_readdir_plus_batch(struct smr_ns *ns, struct ns_readdir *rd,
				 smr_ns_filldir_plus_fn fill)
{
	struct smr_ns_attr attr;
	struct ns_inode in;
	int rc;

	for (unsigned int i = 0; i < rd->n; i++) {
		struct ns_rdent *e = &rd->batch[i];
		bool have;

		rc = ns_inode_get(ns, e->ino, &in);
		if (rc && rc != -ENOENT)
			return rc;
		have = rc == 0;
		if (have)
			ns_inode_attr(ns, &in, &attr);
		rc = fill(rd->arg, e->name, e->len, e->ino, e->dtype,
			  have ? &attr : NULL, e->next);
		if (rc)
			return rc;
		if (have)
			ns_lookup_ref(ns, e->ino);
	}
	return 0;
}

static int ns_readdir(struct smr_ns *ns, uint64_t ino, uint64_t cookie,
		      smr_ns_filldir_fn fill, smr_ns_filldir_plus_fn fill_plus,
		      void *arg)
{
	struct ns_readdir rd = { .fill = fill, .arg = arg };
	struct smr_key from, to;
	struct ns_inode in;
	int rc;

	if (fill_plus) {
		rd.batch = malloc(NS_RDPLUS_BATCH * sizeof(*rd.batch));
		if (!rd.batch)
			return -ENOMEM;
	}
	pthread_mutex_lock(&ns->lock);
	rc = ns_inode_get(ns, ino, &in);
	if (rc)
		goto out;
	if (!S_ISDIR(in.mode)) {
		rc = -ENOTDIR;
		goto out;
	}
	if (cookie < 1) {
		rc = fill ? fill(arg, ".", 1, ino, DT_DIR, 1) :
			    fill_plus(arg, ".", 1, ino, DT_DIR, NULL, 1);
		if (rc)
			goto out_stop;
	}
	if (cookie < 2) {
		rc = fill ? fill(arg, "..", 2, in.parent, DT_DIR, 2) :
			    fill_plus(arg, "..", 2, in.parent, DT_DIR, NULL, 2);
		if (rc)
			goto out_stop;
	}
	to = ns_key(ino, SMR_NS_T_DIRINDEX, UINT64_MAX);
	do {
		from = ns_key(ino, SMR_NS_T_DIRINDEX,
			      SMR_MAX(cookie + 1, (uint64_t)SMR_NS_FIRST_SEQ));
		rd.n = 0;
		rc = smr_bt_iterate(ns->cow, SMR_TREE_FS, &from, &to,
				    ns_readdir_item, &rd);
		if (rd.err)
			rc = rd.err;
		if (rc < 0 || !fill_plus)
			break;
		rc = ns_readdir_plus_batch(ns, &rd, fill_plus);
		/* A full batch stopped the walk, not the caller: go on. */
		if (rc == 0 && rd.n < NS_RDPLUS_BATCH)
			rc = 1;
		if (rd.n)
			cookie = rd.batch[rd.n - 1].next;
	} while (rc == 0);
out_stop:
	if (rc == 1)
		rc = 0;
	if (rc == 0)
		ns_touch_atime_locked(ns, &in);
out:
	pthread_mutex_unlock(&ns->lock);
	free(rd.batch);
	return rc;
}

int smr_ns_readdir(struct smr_ns *ns, uint64_t ino, uint64_t cookie,
		   smr_ns_filldir_fn fill, void *arg)
{
	return ns_readdir(ns, ino, cookie, fill, NULL, arg);
}

int smr_ns_readdir_plus(struct smr_ns *ns, uint64_t ino, uint64_t cookie,
			smr_ns_filldir_plus_fn fill, void *arg)
{
	return ns_readdir(ns, ino, cookie, NULL, fill, arg);
}
