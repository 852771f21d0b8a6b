/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * xattr.c - extended attributes.
 *
 * An attribute is one to 23 XATTR items keyed by the name's hash (low 16
 * bits cleared), a collision slot (bits 8-15) and a part number (bits 0-7).
 * Part 0 holds the name, the value's length and the value's first bytes;
 * parts 1.. hold the rest, each as full as an item may be.
 */
#include "namespace/ns_priv.h"

#include <endian.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define NS_XA_BASE_MASK 0xffffULL
#define NS_XA_SLOTS 256
#define NS_XA_HDR sizeof(struct smr_ns_xattr_d)

struct ns_xa {
	uint64_t key;    /* offset of part 0 */
	uint32_t vlen;
	uint32_t nparts;
};

static size_t ns_xa_first(size_t nlen, size_t vlen)
{
	return SMR_MIN(vlen, SMR_COW_MAX_ITEM - NS_XA_HDR - nlen);
}

static uint32_t ns_xa_parts(size_t nlen, size_t vlen)
{
	size_t rest = vlen - ns_xa_first(nlen, vlen);

	return 1 + (uint32_t)SMR_DIV_ROUND_UP(rest, SMR_COW_MAX_ITEM);
}

/* Check a name: 0, -ERANGE (empty or longer than 255), -EOPNOTSUPP (an
 * unknown namespace, or a system.* name but the two of POSIX ACLs),
 * -EINVAL (a bare prefix). *@kind says which namespace it is in. */
enum ns_xa_kind { NS_XA_USER, NS_XA_TRUSTED, NS_XA_SECURITY, NS_XA_ACL };

static int ns_xa_check_name(const char *name, enum ns_xa_kind *kind)
{
	static const char *const prefixes[] = { "user.", "trusted.",
						"security." };
	size_t len = strnlen(name, SMR_NS_XATTR_NAME_MAX + 1);

	if (len == 0 || len > SMR_NS_XATTR_NAME_MAX)
		return -ERANGE;
	if (ns_acl_type(name)) {
		*kind = NS_XA_ACL;
		return 0;
	}
	for (size_t i = 0; i < SMR_ARRAY_SIZE(prefixes); i++) {
		size_t plen = strlen(prefixes[i]);

		if (strncmp(name, prefixes[i], plen))
			continue;
		if (len == plen)
			return -EINVAL;
		*kind = (enum ns_xa_kind)i;
		return 0;
	}
	return -EOPNOTSUPP;
}

static int ns_xa_find(struct smr_ns *ns, uint64_t ino, const char *name,
		      struct ns_xa *xa)
{
	size_t nlen = strlen(name);
	uint64_t base = smr_ns_name_hash(name, nlen) & ~NS_XA_BASE_MASK;
	struct smr_key from = ns_key(ino, SMR_NS_T_XATTR, base), found;
	union {
		struct smr_ns_xattr_d d;
		uint8_t b[SMR_COW_MAX_ITEM];
	} *v;
	size_t len;
	int rc;

	v = malloc(sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (;;) {
		len = sizeof(*v);
		rc = smr_bt_next(ns->cow, SMR_TREE_FS, &from, &found, v, &len);
		if (rc)
			break;
		if (found.objid != ino || found.type != SMR_NS_T_XATTR ||
		    (found.offset & ~NS_XA_BASE_MASK) != base) {
			rc = -ENOENT;
			break;
		}
		if ((found.offset & 0xff) == 0) {
			size_t n = le16toh(v->d.name_len);
			uint32_t vlen = le32toh(v->d.value_len);

			if (len < NS_XA_HDR + n ||
			    len != NS_XA_HDR + n + ns_xa_first(n, vlen) ||
			    vlen > SMR_NS_XATTR_SIZE_MAX) {
				rc = smr_corrupt(UINT64_MAX, "xattr item size");
				break;
			}
			if (n == nlen && !memcmp(v->d.name, name, n)) {
				xa->key = found.offset;
				xa->vlen = vlen;
				xa->nparts = ns_xa_parts(n, vlen);
				break;
			}
		}
		/* The next slot. */
		if ((found.offset | 0xff) == (base | NS_XA_BASE_MASK)) {
			rc = -ENOENT;
			break;
		}
		from = found;
		from.offset = (found.offset | 0xff) + 1;
	}
	free(v);
	return rc;
}

static int ns_xa_delete(struct smr_ns *ns, struct smr_txn *t, uint64_t ino,
			const struct ns_xa *xa)
{
	for (uint32_t p = 0; p < xa->nparts; p++) {
		struct smr_key k = ns_key(ino, SMR_NS_T_XATTR, xa->key + p);
		int rc = ns_bt_delete(ns, t, &k);

		if (rc)
			return rc;
	}
	return 0;
}

/* A free slot for @name: -ENOSPC if all 256 are taken (never seen). */
static int ns_xa_free_slot(struct smr_ns *ns, uint64_t ino, const char *name,
			   uint64_t *keyp)
{
	uint64_t base = smr_ns_name_hash(name, strlen(name)) & ~NS_XA_BASE_MASK;

	for (uint64_t s = 0; s < NS_XA_SLOTS; s++) {
		struct smr_key k = ns_key(ino, SMR_NS_T_XATTR, base | s << 8);
		size_t len = 0;
		int rc = smr_bt_lookup(ns->cow, SMR_TREE_FS, &k, NULL, &len);

		if (rc == -ENOENT) {
			*keyp = k.offset;
			return 0;
		}
		if (rc)
			return rc;
	}
	return -ENOSPC;
}

static int ns_xa_store(struct smr_ns *ns, struct smr_txn *t, uint64_t ino,
		       uint64_t key, const char *name, const uint8_t *value,
		       size_t vlen)
{
	size_t nlen = strlen(name), first = ns_xa_first(nlen, vlen), off;
	uint32_t nparts = ns_xa_parts(nlen, vlen);
	struct smr_ns_xattr_d *d;
	struct smr_key k = ns_key(ino, SMR_NS_T_XATTR, key);
	int rc;

	d = calloc(1, SMR_COW_MAX_ITEM);
	if (!d)
		return -ENOMEM;
	d->name_len = htole16((uint16_t)nlen);
	d->value_len = htole32((uint32_t)vlen);
	memcpy(d->name, name, nlen);
	if (first)
		memcpy(d->name + nlen, value, first);
	rc = ns_bt_insert(ns, t, &k, d, NS_XA_HDR + nlen + first);
	free(d);
	off = first;
	for (uint32_t p = 1; !rc && p < nparts; p++) {
		size_t n = SMR_MIN(vlen - off, (size_t)SMR_COW_MAX_ITEM);

		k.offset = key + p;
		rc = ns_bt_insert(ns, t, &k, value + off, n);
		off += n;
	}
	return rc;
}

int ns_xattr_free_all_locked(struct smr_ns *ns, struct smr_txn *t,
			     uint64_t ino)
{
	return ns_delete_all(ns, t, ino, SMR_NS_T_XATTR);
}

/* The slot of @ino in ns->nocaps (Fibonacci hashing, as the heat table). */
static uint64_t *ns_nocaps_slot(struct smr_ns *ns, uint64_t ino)
{
	return &ns->nocaps[(ino * 0x9e3779b97f4a7c15ULL) >>
			   (64 - NS_NOCAPS_BITS)];
}

int ns_xattr_drop_caps_locked(struct smr_ns *ns, struct smr_txn *t,
			      uint64_t ino)
{
	uint64_t *nocaps = ns_nocaps_slot(ns, ino);
	struct ns_xa xa;
	int rc;

	/* Every write asks; nearly no file has one. */
	if (*nocaps == ino)
		return 0;
	rc = ns_xa_find(ns, ino, "security.capability", &xa);
	if (rc == -ENOENT) {
		/* Only a lookup that found none sets the slot: a delete
		 * may still roll back with the call. */
		*nocaps = ino;
		return 0;
	}
	return rc ? rc : ns_xa_delete(ns, t, ino, &xa);
}

/* Common start of every call: checks, and the inode. */
static int ns_xa_begin(struct smr_ns *ns, const struct smr_ns_cred *cr,
		       uint64_t ino, const char *name, bool set,
		       struct ns_inode *in)
{
	enum ns_xa_kind kind;
	int rc;

	rc = ns_xa_check_name(name, &kind);
	if (rc)
		return rc;
	if (kind == NS_XA_ACL && !ns->acl)
		return -EOPNOTSUPP;
	rc = ns_inode_get(ns, ino, in);
	if (rc)
		return rc;
	switch (kind) {
	case NS_XA_TRUSTED:
		if (cr->uid != 0)
			return set ? -EPERM : -ENODATA;
		break;
	case NS_XA_USER:
		if (set && !S_ISREG(in->mode) && !S_ISDIR(in->mode))
			return -EPERM;
		break;
	case NS_XA_ACL:
		/* As Linux: none on symlinks, a default one only on a
		 * directory, set only by the owner. */
		if (S_ISLNK(in->mode))
			return -EOPNOTSUPP;
		if (ns_acl_type(name) == NS_ACL_DEFAULT && !S_ISDIR(in->mode))
			return set ? -EACCES : -ENODATA;
		if (set && cr->uid != 0 && cr->uid != in->uid)
			return -EPERM;
		break;
	case NS_XA_SECURITY:
		break;
	}
	return 0;
}

/* Store @name's value in place of @xa (NULL: it has none yet). */
static int ns_xa_replace(struct smr_ns *ns, struct smr_txn *t, uint64_t ino,
			 const char *name, const void *value, size_t size,
			 const struct ns_xa *xa)
{
	uint64_t key;
	int rc;

	/* Whatever the name, the inode may hold a capability now. */
	if (*ns_nocaps_slot(ns, ino) == ino)
		*ns_nocaps_slot(ns, ino) = 0;
	if (xa) {
		key = xa->key;
		rc = ns_xa_delete(ns, t, ino, xa);
	} else {
		rc = ns_xa_free_slot(ns, ino, name, &key);
	}
	return rc ? rc : ns_xa_store(ns, t, ino, key, name, value, size);
}

int ns_xattr_put_locked(struct smr_ns *ns, struct smr_txn *t, uint64_t ino,
			const char *name, const void *value, size_t size)
{
	struct ns_xa xa;
	int rc = ns_xa_find(ns, ino, name, &xa);

	if (rc && rc != -ENOENT)
		return rc;
	return ns_xa_replace(ns, t, ino, name, value, size, rc ? NULL : &xa);
}

int ns_xattr_remove_locked(struct smr_ns *ns, struct smr_txn *t,
			   uint64_t ino, const char *name)
{
	struct ns_xa xa;
	int rc = ns_xa_find(ns, ino, name, &xa);

	if (rc)
		return rc == -ENOENT ? -ENODATA : rc;
	return ns_xa_delete(ns, t, ino, &xa);
}

int smr_ns_setxattr(struct smr_ns *ns, const struct smr_ns_cred *cr,
		    uint64_t ino, const char *name, const void *value,
		    size_t size, int flags)
{
	struct ns_inode in;
	struct ns_xa xa;
	struct smr_txn *t;
	bool exists, keep = true;
	int rc;

	if (flags & ~(SMR_NS_XATTR_CREATE | SMR_NS_XATTR_REPLACE))
		return -EINVAL;
	if (size > SMR_NS_XATTR_SIZE_MAX)
		return -E2BIG;
	smr_cow_clean_for_meta(ns->cow);
	pthread_mutex_lock(&ns->lock);
	rc = ns_xa_begin(ns, cr, ino, name, true, &in);
	if (rc)
		goto out_unlock;
	rc = ns_xa_find(ns, ino, name, &xa);
	if (rc && rc != -ENOENT)
		goto out_unlock;
	exists = rc == 0;
	if (exists && (flags & SMR_NS_XATTR_CREATE)) {
		rc = -EEXIST;
		goto out_unlock;
	}
	if (!exists && (flags & SMR_NS_XATTR_REPLACE)) {
		rc = -ENODATA;
		goto out_unlock;
	}
	/* A value replaced by one no larger needs no more room. */
	if (!exists || size > xa.vlen) {
		uint32_t parts = ns_xa_parts(strlen(name), size);

		rc = ns_admit_meta_locked(ns, exists ? 0 : parts,
					  size - (exists ? xa.vlen : 0) +
						  (exists ? 0 : strlen(name)));
		if (rc)
			goto out_unlock;
	}
	rc = ns_txn_begin(ns, &t);
	if (rc)
		goto out_unlock;
	/* An ACL sets the mode, and one that says no more than the mode (or
	 * none at all) is not kept. */
	if (ns_acl_type(name))
		rc = ns_acl_set(cr, &in, name, value, size, &keep);
	if (!rc && keep)
		rc = ns_xa_replace(ns, t, ino, name, value, size,
				   exists ? &xa : NULL);
	else if (!rc && exists)
		rc = ns_xa_delete(ns, t, ino, &xa);
	if (!rc) {
		in.ctime = ns_now();
		rc = ns_inode_put(ns, t, &in);
	}
	rc = ns_txn_end(ns, t, rc);
out_unlock:
	pthread_mutex_unlock(&ns->lock);
	return rc;
}

/* Read the @xa.vlen bytes of the value of @xa, named @name, into @out. */
static int ns_xa_read(struct smr_ns *ns, uint64_t ino, const char *name,
		      const struct ns_xa *xa, uint8_t *out)
{
	size_t off = 0, nlen = strlen(name);
	uint8_t *item;
	int rc = 0;

	item = malloc(SMR_COW_MAX_ITEM);
	if (!item)
		return -ENOMEM;
	for (uint32_t p = 0; p < xa->nparts; p++) {
		struct smr_key k = ns_key(ino, SMR_NS_T_XATTR, xa->key + p);
		size_t len = SMR_COW_MAX_ITEM, skip = p ? 0 : NS_XA_HDR + nlen;

		rc = smr_bt_lookup(ns->cow, SMR_TREE_FS, &k, item, &len);
		if (rc == -ENOENT)
			rc = smr_corrupt(UINT64_MAX, "xattr part missing");
		if (rc)
			break;
		if (len < skip || off + (len - skip) > xa->vlen) {
			rc = smr_corrupt(UINT64_MAX, "xattr part size");
			break;
		}
		memcpy(out + off, item + skip, len - skip);
		off += len - skip;
	}
	if (!rc && off != xa->vlen)
		rc = smr_corrupt(UINT64_MAX, "xattr value short");
	free(item);
	return rc;
}

/* An xattr's value, as smr_ns_getxattr without its checks. */
static ssize_t ns_xattr_get_locked(struct smr_ns *ns, uint64_t ino,
				   const char *name, void *value, size_t size)
{
	struct ns_xa xa;
	int rc;

	rc = ns_xa_find(ns, ino, name, &xa);
	if (rc)
		return rc == -ENOENT ? -ENODATA : rc;
	if (size == 0)
		return xa.vlen;
	if (size < xa.vlen)
		return -ERANGE;
	rc = ns_xa_read(ns, ino, name, &xa, value);
	return rc ? rc : (ssize_t)xa.vlen;
}

ssize_t ns_xattr_dup_locked(struct smr_ns *ns, uint64_t ino, const char *name,
			    uint8_t **vp)
{
	struct ns_xa xa;
	int rc;

	rc = ns_xa_find(ns, ino, name, &xa);
	if (rc)
		return rc == -ENOENT ? -ENODATA : rc;
	*vp = malloc(xa.vlen ? xa.vlen : 1);
	if (!*vp)
		return -ENOMEM;
	rc = ns_xa_read(ns, ino, name, &xa, *vp);
	if (rc) {
		free(*vp);
		return rc;
	}
	return xa.vlen;
}

ssize_t smr_ns_getxattr(struct smr_ns *ns, const struct smr_ns_cred *cr,
			uint64_t ino, const char *name, void *value,
			size_t size)
{
	struct ns_inode in;
	ssize_t rc;

	pthread_mutex_lock(&ns->lock);
	rc = ns_xa_begin(ns, cr, ino, name, false, &in);
	if (!rc)
		rc = ns_xattr_get_locked(ns, ino, name, value, size);
	pthread_mutex_unlock(&ns->lock);
	return rc;
}

struct ns_xa_list {
	const struct smr_ns_cred *cr;
	bool acl;
	char *list;
	size_t size;
	size_t len;
	int err;
};

static int ns_xa_list_item(void *arg, const struct smr_key *key,
			   const void *val, size_t len)
{
	struct ns_xa_list *l = arg;
	const uint8_t *name = (const uint8_t *)val + NS_XA_HDR;
	struct smr_ns_xattr_d d;
	size_t n;

	if ((key->offset & 0xff) != 0)
		return 0;
	/* The engine's value may sit anywhere in a node: copy to align. */
	if (len < NS_XA_HDR)
		goto out_corrupt;
	memcpy(&d, val, sizeof(d));
	n = le16toh(d.name_len);
	if (len < NS_XA_HDR + n)
		goto out_corrupt;
	if (l->cr->uid != 0 && n >= 8 && !memcmp(name, "trusted.", 8))
		return 0;
	/* ACLs kept while they were on: not there while they are off. */
	if (!l->acl && n >= 7 && !memcmp(name, "system.", 7))
		return 0;
	if (l->size) {
		if (l->len + n + 1 > l->size) {
			l->err = -ERANGE;
			return l->err;
		}
		memcpy(l->list + l->len, name, n);
		l->list[l->len + n] = 0;
	}
	l->len += n + 1;
	return 0;
out_corrupt:
	l->err = smr_corrupt(UINT64_MAX, "xattr item size");
	return l->err;
}

ssize_t smr_ns_listxattr(struct smr_ns *ns, const struct smr_ns_cred *cr,
			 uint64_t ino, char *list, size_t size)
{
	struct ns_xa_list l = { .cr = cr, .list = list, .size = size };
	struct smr_key from = ns_key(ino, SMR_NS_T_XATTR, 0);
	struct smr_key to = ns_key(ino, SMR_NS_T_XATTR, UINT64_MAX);
	struct ns_inode in;
	int rc;

	pthread_mutex_lock(&ns->lock);
	l.acl = ns->acl;
	rc = ns_inode_get(ns, ino, &in);
	if (!rc)
		rc = smr_bt_iterate(ns->cow, SMR_TREE_FS, &from, &to,
				    ns_xa_list_item, &l);
	pthread_mutex_unlock(&ns->lock);
	if (l.err)
		return l.err;
	if (rc < 0)
		return rc;
	return (ssize_t)l.len;
}

int smr_ns_removexattr(struct smr_ns *ns, const struct smr_ns_cred *cr,
		       uint64_t ino, const char *name)
{
	struct ns_inode in;
	struct ns_xa xa;
	struct smr_txn *t;
	int rc;

	smr_cow_clean_for_meta(ns->cow);
	pthread_mutex_lock(&ns->lock);
	rc = ns_xa_begin(ns, cr, ino, name, true, &in);
	if (rc)
		goto out_unlock;
	rc = ns_xa_find(ns, ino, name, &xa);
	if (rc == -ENOENT)
		rc = -ENODATA;
	if (rc)
		goto out_unlock;
	rc = ns_txn_begin(ns, &t);
	if (rc)
		goto out_unlock;
	rc = ns_xa_delete(ns, t, ino, &xa);
	if (!rc) {
		in.ctime = ns_now();
		rc = ns_inode_put(ns, t, &in);
	}
	rc = ns_txn_end(ns, t, rc);
out_unlock:
	pthread_mutex_unlock(&ns->lock);
	return rc;
}
