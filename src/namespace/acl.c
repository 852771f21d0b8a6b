/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * acl.c - POSIX access control lists.
 *
 * An ACL is the xattr system.posix_acl_access (what a node grants) or
 * system.posix_acl_default (what a directory's new nodes inherit), its value
 * in Linux's xattr form (docs/FORMAT.md, "POSIX ACLs"). The kernel checks
 * permissions against them itself (FUSE_POSIX_ACL, with
 * default_permissions); what is left to the filesystem is to keep each ACL
 * and the mode in step, as POSIX 1003.1e draft 17 and Linux do:
 *
 *  - setting an access ACL sets the mode's permission bits from it, and an
 *    ACL that says no more than the mode is not kept at all;
 *  - chmod sets the owner, group (or mask) and other entries of the access
 *    ACL from the new mode;
 *  - a new node in a directory with a default ACL gets that ACL, masked by
 *    the mode it was created with, in place of the umask; a new directory
 *    also inherits the default ACL itself.
 */
#include "namespace/ns_priv.h"

#include <endian.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define ACL_VERSION 2
#define ACL_HDR 4
#define ACL_ENTRY 8
#define ACL_UNDEFINED_ID UINT32_MAX

/* Entry tags, as in Linux's <linux/posix_acl.h>. */
#define ACL_USER_OBJ 0x01
#define ACL_USER 0x02
#define ACL_GROUP_OBJ 0x04
#define ACL_GROUP 0x08
#define ACL_MASK 0x10
#define ACL_OTHER 0x20

static const char ACL_ACCESS_NAME[] = "system.posix_acl_access";
static const char ACL_DEFAULT_NAME[] = "system.posix_acl_default";

int ns_acl_type(const char *name)
{
	if (!strcmp(name, ACL_ACCESS_NAME))
		return NS_ACL_ACCESS;
	if (!strcmp(name, ACL_DEFAULT_NAME))
		return NS_ACL_DEFAULT;
	return 0;
}

const char *ns_acl_name(int type)
{
	return type == NS_ACL_ACCESS ? ACL_ACCESS_NAME : ACL_DEFAULT_NAME;
}

int ns_acl_item(const struct smr_key *k, const void *val, size_t len,
		const void **value, size_t *size)
{
	char name[SMR_NS_XATTR_NAME_MAX + 1];
	struct smr_ns_xattr_d d;
	size_t nlen;
	int type;

	/* Only the first item of an xattr holds its name. */
	if (k->type != SMR_NS_T_XATTR || (k->offset & 0xff) ||
	    len < sizeof(d))
		return 0;
	memcpy(&d, val, sizeof(d));
	nlen = le16toh(d.name_len);
	if (nlen > SMR_NS_XATTR_NAME_MAX || len < sizeof(d) + nlen)
		return 0;
	memcpy(name, (const uint8_t *)val + sizeof(d), nlen);
	name[nlen] = 0;
	type = ns_acl_type(name);
	*value = NULL;
	*size = 0;
	if (type && len == sizeof(d) + nlen + le32toh(d.value_len)) {
		*value = (const uint8_t *)val + sizeof(d) + nlen;
		*size = len - sizeof(d) - nlen;
	}
	return type;
}

void smr_ns_set_acl(struct smr_ns *ns, bool on)
{
	pthread_mutex_lock(&ns->lock);
	ns->acl = on;
	pthread_mutex_unlock(&ns->lock);
}

static uint16_t acl_tag(const uint8_t *v, unsigned int i)
{
	uint16_t x;

	memcpy(&x, v + ACL_HDR + i * ACL_ENTRY, sizeof(x));
	return le16toh(x);
}

static uint16_t acl_perm(const uint8_t *v, unsigned int i)
{
	uint16_t x;

	memcpy(&x, v + ACL_HDR + i * ACL_ENTRY + 2, sizeof(x));
	return le16toh(x);
}

static uint32_t acl_id(const uint8_t *v, unsigned int i)
{
	uint32_t x;

	memcpy(&x, v + ACL_HDR + i * ACL_ENTRY + 4, sizeof(x));
	return le32toh(x);
}

static void acl_set_perm(uint8_t *v, unsigned int i, uint32_t perm)
{
	uint16_t x = htole16((uint16_t)(perm & 7));

	memcpy(v + ACL_HDR + i * ACL_ENTRY + 2, &x, sizeof(x));
}

/*
 * Check an ACL's value: the version, whole entries, each tag once in its
 * place (owner, named users by rising id, owning group, named groups by
 * rising id, mask, other), a mask where there are named entries. Returns
 * the number of entries (0: an empty ACL, which removes it) or -EINVAL.
 */
static int acl_check(const uint8_t *v, size_t len)
{
	enum { IN_OWNER, IN_USERS, IN_GROUPS, IN_OTHER, DONE } state = IN_OWNER;
	uint32_t ver, prev = 0;
	bool named = false, have_prev = false;
	unsigned int n;

	if (len < ACL_HDR || (len - ACL_HDR) % ACL_ENTRY)
		return -EINVAL;
	memcpy(&ver, v, sizeof(ver));
	if (le32toh(ver) != ACL_VERSION)
		return -EINVAL;
	n = (unsigned int)((len - ACL_HDR) / ACL_ENTRY);
	if (n == 0)
		return 0;
	for (unsigned int i = 0; i < n; i++) {
		uint16_t tag = acl_tag(v, i);
		uint32_t id = acl_id(v, i);

		if (acl_perm(v, i) & ~7)
			return -EINVAL;
		switch (tag) {
		case ACL_USER_OBJ:
			if (state != IN_OWNER)
				return -EINVAL;
			state = IN_USERS;
			break;
		case ACL_USER:
		case ACL_GROUP:
			if (state != (tag == ACL_USER ? IN_USERS : IN_GROUPS) ||
			    id == ACL_UNDEFINED_ID || (have_prev && id <= prev))
				return -EINVAL;
			prev = id;
			have_prev = named = true;
			break;
		case ACL_GROUP_OBJ:
			if (state != IN_USERS)
				return -EINVAL;
			state = IN_GROUPS;
			have_prev = false;
			break;
		case ACL_MASK:
			if (state != IN_GROUPS)
				return -EINVAL;
			state = IN_OTHER;
			break;
		case ACL_OTHER:
			if (state != IN_OTHER && !(state == IN_GROUPS && !named))
				return -EINVAL;
			state = DONE;
			break;
		default:
			return -EINVAL;
		}
		if (state == DONE && i + 1 < n)
			return -EINVAL;
	}
	return state == DONE ? (int)n : -EINVAL;
}

/*
 * The entries of an ACL of @n checked entries that the mode's three classes
 * of permission bits stand for: @cls[0] the owner, @cls[1] the group class
 * (the mask if there is one, else the owning group), @cls[2] other.
 * Returns whether the ACL says more than a mode can (a mask, named
 * entries).
 */
static bool acl_classes(const uint8_t *v, unsigned int n, unsigned int cls[3])
{
	bool more = false;

	for (unsigned int i = 0; i < n; i++) {
		switch (acl_tag(v, i)) {
		case ACL_USER_OBJ:
			cls[0] = i;
			break;
		case ACL_GROUP_OBJ: /* before the mask, which replaces it */
		case ACL_MASK:
			cls[1] = i;
			more |= acl_tag(v, i) == ACL_MASK;
			break;
		case ACL_OTHER:
			cls[2] = i;
			break;
		default:
			more = true;
			break;
		}
	}
	return more;
}

/* The mode's bits of class @c (0 owner, 1 group, 2 other). */
static uint32_t class_shift(int c)
{
	return (uint32_t)(6 - 3 * c);
}

/* The permission bits an ACL of @n checked entries gives; *@equiv says
 * whether the mode says all it does. */
static uint32_t acl_mode(const uint8_t *v, unsigned int n, bool *equiv)
{
	unsigned int cls[3] = { 0 };
	uint32_t mode = 0;

	*equiv = !acl_classes(v, n, cls);
	for (int c = 0; c < 3; c++)
		mode |= (uint32_t)acl_perm(v, cls[c]) << class_shift(c);
	return mode;
}

enum ns_acl_fault ns_acl_fault(int type, const void *value, size_t size,
			       uint32_t mode)
{
	bool equiv;
	int n;

	if (S_ISLNK(mode) || (type == NS_ACL_DEFAULT && !S_ISDIR(mode)))
		return NS_ACL_MISPLACED;
	if (!value)
		return NS_ACL_FINE;
	n = acl_check(value, size);
	if (n <= 0)
		return n ? NS_ACL_UNPARSED : NS_ACL_EMPTY;
	if (type != NS_ACL_ACCESS)
		return NS_ACL_FINE;
	if (acl_mode(value, (unsigned int)n, &equiv) != (mode & 0777))
		return NS_ACL_OUT_OF_STEP;
	return equiv ? NS_ACL_REDUNDANT : NS_ACL_FINE;
}

const char *ns_acl_fault_str(enum ns_acl_fault f)
{
	static const char *const what[] = {
		[NS_ACL_FINE] = "is fine",
		[NS_ACL_MISPLACED] = "on a node that can have none",
		[NS_ACL_UNPARSED] = "does not parse",
		[NS_ACL_EMPTY] = "is empty",
		[NS_ACL_OUT_OF_STEP] = "disagrees with the mode",
		[NS_ACL_REDUNDANT] = "says no more than the mode",
	};

	return what[f];
}

/*
 * A new node's access ACL from its directory's default one (a copy, @n
 * checked entries): owner, group class and other each keep only what the
 * @mode it was created with allows, and the mode only what they allow
 * (Linux's posix_acl_create_masq). Returns whether the ACL says more than
 * the mode.
 */
static bool acl_create_masq(uint8_t *v, unsigned int n, uint32_t *mode)
{
	unsigned int cls[3] = { 0 };
	bool more = acl_classes(v, n, cls);

	for (int c = 0; c < 3; c++) {
		uint32_t sh = class_shift(c);
		uint32_t perm = acl_perm(v, cls[c]) & (*mode >> sh) & 7;

		acl_set_perm(v, cls[c], perm);
		*mode = (*mode & ~(7U << sh)) | perm << sh;
	}
	return more;
}

/* Owner, group class and other of an access ACL follow @mode (Linux's
 * posix_acl_chmod). */
static void acl_chmod(uint8_t *v, unsigned int n, uint32_t mode)
{
	unsigned int cls[3] = { 0 };

	acl_classes(v, n, cls);
	for (int c = 0; c < 3; c++)
		acl_set_perm(v, cls[c], (mode >> class_shift(c)) & 7);
}

/*
 * Read the ACL @name of @ino into *@vp (malloc'd: the caller frees it) and
 * its length into *@lenp. Returns its number of entries, -ENODATA if there
 * is none, or an error; one that does not check is corruption (an empty
 * one is never kept: ns_acl_set).
 */
static int acl_read(struct smr_ns *ns, uint64_t ino, const char *name,
		    uint8_t **vp, size_t *lenp)
{
	ssize_t len = ns_xattr_dup_locked(ns, ino, name, vp);
	int n;

	if (len < 0)
		return (int)len;
	n = acl_check(*vp, (size_t)len);
	if (n <= 0) {
		free(*vp);
		return smr_corrupt(UINT64_MAX, "stored ACL");
	}
	*lenp = (size_t)len;
	return n;
}

int ns_acl_set(const struct smr_ns_cred *cr, struct ns_inode *ip,
	       const char *name, const void *value, size_t size, bool *keep)
{
	int n = acl_check(value, size);

	if (n < 0)
		return n;
	*keep = n > 0; /* an empty ACL removes it */
	if (*keep && ns_acl_type(name) == NS_ACL_ACCESS) {
		bool equiv;
		uint32_t mode = acl_mode(value, (unsigned int)n, &equiv);

		/* As chmod: the set-group-ID bit goes unless the caller is
		 * in the file's group (or root). One the mode says all of
		 * is not kept. */
		ip->mode = (ip->mode & ~(uint32_t)0777) | mode;
		if (cr->uid != 0 && !ns_cred_in_group(cr, ip->gid))
			ip->mode &= ~(uint32_t)S_ISGID;
		*keep = !equiv;
	}
	return 0;
}

int ns_acl_chmod_locked(struct smr_ns *ns, struct smr_txn *t,
			const struct ns_inode *ip)
{
	uint8_t *v;
	size_t len;
	int n, rc;

	/* Kept in step while ACLs are off too, for when they are on. */
	if (S_ISLNK(ip->mode))
		return 0;
	n = acl_read(ns, ip->ino, ACL_ACCESS_NAME, &v, &len);
	if (n < 0)
		return n == -ENODATA ? 0 : n;
	acl_chmod(v, (unsigned int)n, ip->mode);
	rc = ns_xattr_put_locked(ns, t, ip->ino, ACL_ACCESS_NAME, v, len);
	free(v);
	return rc;
}

int ns_acl_may_locked(struct smr_ns *ns, const struct smr_ns_cred *cr,
		      const struct ns_inode *ip, uint32_t want)
{
	uint8_t *v;
	size_t len;
	int n, rc = 0;
	unsigned int i;
	bool in_group = false;

	n = acl_read(ns, ip->ino, ACL_ACCESS_NAME, &v, &len);
	if (n < 0)
		return n;
	/* The first entry that names the caller decides (Linux's
	 * posix_acl_permission): the owner's as it is, a named user's or a
	 * group's through the mask; other only if no group matched. */
	for (i = 0; i < (unsigned int)n; i++) {
		uint32_t perm = acl_perm(v, i);

		switch (acl_tag(v, i)) {
		case ACL_USER_OBJ:
			if (cr->uid == ip->uid) {
				rc = (perm & want) == want;
				goto out;
			}
			break;
		case ACL_USER:
			if (cr->uid == acl_id(v, i))
				goto mask;
			break;
		case ACL_GROUP_OBJ:
		case ACL_GROUP:
			if (ns_cred_in_group(cr, acl_tag(v, i) == ACL_GROUP ?
						     acl_id(v, i) :
						     ip->gid)) {
				in_group = true;
				if ((perm & want) == want)
					goto mask;
			}
			break;
		case ACL_OTHER:
			rc = !in_group && (perm & want) == want;
			goto out;
		}
	}
	goto out;
mask:
	rc = (acl_perm(v, i) & want) == want;
	for (unsigned int j = i + 1; j < (unsigned int)n; j++)
		if (acl_tag(v, j) == ACL_MASK)
			rc = (acl_perm(v, i) & acl_perm(v, j) & want) == want;
out:
	free(v);
	return rc;
}

int ns_acl_new_prepare(struct smr_ns *ns, uint64_t dir, uint32_t *mode,
		       uint32_t umask, struct ns_acl_new *an)
{
	int n;

	memset(an, 0, sizeof(*an));
	if (S_ISLNK(*mode))
		return 0;
	n = ns->acl ? acl_read(ns, dir, ACL_DEFAULT_NAME, &an->def, &an->len) :
		      -ENODATA;
	if (n == -ENODATA) {
		*mode &= ~(umask & 0777);
		return 0;
	}
	if (n < 0)
		return n;
	an->acc = malloc(an->len);
	if (!an->acc) {
		ns_acl_new_free(an);
		return -ENOMEM;
	}
	memcpy(an->acc, an->def, an->len);
	an->store_acc = acl_create_masq(an->acc, (unsigned int)n, mode);
	an->store_def = S_ISDIR(*mode);
	return 0;
}

int ns_acl_new_store(struct smr_ns *ns, struct smr_txn *t, uint64_t ino,
		     const struct ns_acl_new *an)
{
	int rc = 0;

	if (an->store_acc)
		rc = ns_xattr_put_locked(ns, t, ino, ACL_ACCESS_NAME, an->acc,
					 an->len);
	if (!rc && an->store_def)
		rc = ns_xattr_put_locked(ns, t, ino, ACL_DEFAULT_NAME, an->def,
					 an->len);
	return rc;
}

void ns_acl_new_free(struct ns_acl_new *an)
{
	free(an->def);
	free(an->acc);
	memset(an, 0, sizeof(*an));
}

/* ========================================================================
 * Repair (fsck.smrfs -y)
 * ======================================================================== */

/* An ACL xattr the walk found: inode and NS_ACL_* type. */
struct acl_found {
	uint64_t ino;
	int type;
};

struct acl_walk {
	struct acl_found *v;
	size_t n, cap;
};

static int acl_walk_item(void *arg, const struct smr_key *k, const void *val,
			 size_t len)
{
	struct acl_walk *w = arg;
	const void *value;
	size_t size;
	int type = ns_acl_item(k, val, len, &value, &size);

	if (!type)
		return 0;
	if (smr_array_grow((void **)&w->v, &w->cap, w->n, sizeof(*w->v)))
		return -ENOMEM;
	w->v[w->n++] = (struct acl_found){ .ino = k->objid, .type = type };
	return 0;
}

/* Bring the ACL @f found to what ns_acl_fault() wants of it: *@fault says
 * what was wrong (NS_ACL_FINE: nothing done). Namespace lock held. */
static int acl_repair_one(struct smr_ns *ns, struct smr_txn *t,
			  const struct acl_found *f, enum ns_acl_fault *fault)
{
	const char *name = ns_acl_name(f->type);
	struct ns_inode in;
	uint8_t *v = NULL;
	ssize_t len;
	bool equiv;
	int rc;

	*fault = NS_ACL_FINE;
	rc = ns_inode_get(ns, f->ino, &in);
	if (rc)
		return rc == -ENOENT ? 0 : rc; /* fsck drops its items */
	len = ns_xattr_dup_locked(ns, f->ino, name, &v);
	if (len < 0)
		return len == -ENODATA ? 0 : (int)len;
	*fault = ns_acl_fault(f->type, v, (size_t)len, in.mode);
	if (*fault == NS_ACL_OUT_OF_STEP) {
		/* As a chmod to the mode, which is what the kernel was told;
		 * one that then says no more than it goes. */
		int n = acl_check(v, (size_t)len);

		acl_chmod(v, (unsigned int)n, in.mode);
		acl_mode(v, (unsigned int)n, &equiv);
		rc = equiv ? ns_xattr_remove_locked(ns, t, f->ino, name) :
			     ns_xattr_put_locked(ns, t, f->ino, name, v,
						 (size_t)len);
	} else if (*fault != NS_ACL_FINE) {
		rc = ns_xattr_remove_locked(ns, t, f->ino, name);
	}
	free(v);
	return rc;
}

int smr_ns_repair_acls(struct smr_ns *ns, uint64_t *fixed)
{
	struct smr_key from = ns_key(0, 0, 0),
		       to = ns_key(UINT64_MAX, UINT8_MAX, UINT64_MAX);
	struct acl_walk w = { 0 };
	int rc;

	/* Found first, repaired after: nothing changes the tree under the
	 * walk's shared lock. */
	pthread_mutex_lock(&ns->lock);
	rc = smr_bt_iterate(ns->cow, SMR_TREE_FS, &from, &to, acl_walk_item,
			    &w);
	for (size_t i = 0; rc == 0 && i < w.n; i++) {
		enum ns_acl_fault fault;
		struct smr_txn *t;

		rc = ns_txn_begin(ns, &t);
		if (rc)
			break;
		rc = ns_txn_end(ns, t, acl_repair_one(ns, t, &w.v[i], &fault));
		if (!rc && fault != NS_ACL_FINE) {
			smr_info("inode %llu: %s %s: %s",
				 (unsigned long long)w.v[i].ino,
				 ns_acl_name(w.v[i].type), ns_acl_fault_str(fault),
				 fault == NS_ACL_OUT_OF_STEP ?
					 "set from the mode" : "dropped");
			++*fixed;
		}
	}
	pthread_mutex_unlock(&ns->lock);
	free(w.v);
	return rc;
}
