/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * damage.c - damage one structure of an unmounted smrfs filesystem, for the
 * corruption corpus (tests/fsck/corpus.sh). It finds the structure through
 * the library (the namespace to resolve a path, the engine's item API and
 * node walk, the allocator) and damages it either through the item API, so
 * that every block still verifies and only the meaning is wrong, or by
 * flipping a byte on the device, so that a verifier must catch it.
 *
 *   damage DEV flip OFF                 flip the byte at device offset OFF
 *   damage DEV sb N                     flip a byte of superblock copy N (0, 1)
 *   damage DEV ckpt                     flip a byte of the newest checkpoint
 *   damage DEV node fs|rmap LEVEL [last]
 *                                       flip a byte of the first (or last)
 *                                       node of the tree at LEVEL, in the
 *                                       walk's order (the key order)
 *   damage DEV inode PATH FIELD VALUE   set mode, size, nlink or flags
 *   damage DEV noinode PATH             delete PATH's inode item
 *   damage DEV notail PATH              delete PATH's first tail item
 *   damage DEV item PATH TYPE           add an item of item type TYPE (one
 *                                       the namespace does not know) to
 *                                       PATH's inode, as another program
 *                                       might write it
 *   damage DEV nometa                   delete the namespace record
 *   damage DEV stray PATH               add an extent item of a missing
 *                                       inode naming PATH's first extent's
 *                                       bytes
 *   damage DEV dirent PATH FIELD [VALUE]
 *                                       PATH's entry: ino or dtype (both
 *                                       items), name_len (the lookup item),
 *                                       hash (the lookup item moved to a key
 *                                       its name does not hash to)
 *   damage DEV extent PATH FIELD [VALUE]
 *                                       PATH's first extent item: nr_csums,
 *                                       len, csum (the first stored one),
 *                                       past-wp (dev_off where nothing was
 *                                       written), overlap (a copy one block
 *                                       further into the file), onto OTHER
 *                                       (dev_off of OTHER's first extent),
 *                                       onto-bad OTHER (the same, and its
 *                                       checksums zeroed: its data is
 *                                       nowhere)
 *   damage DEV data PATH                flip a byte of PATH's first block
 *   damage DEV zone-low PATH            free PATH's first block in the
 *                                       allocator: its zone's counter falls
 *                                       below what the trees reference
 *   damage DEV leak                     write and commit 32 KiB that nothing
 *                                       references
 *   damage DEV wp PATH                  zoned loop directory: move the write
 *                                       pointer of the zone of PATH's first
 *                                       extent back to the extent's start
 *
 * Each prints one line saying what it damaged. Exit status 0 done, 1 failed.
 */
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc/alloc.h"
#include "cow/cow_priv.h"
#include "dev/dev.h"
#include "format/blk.h"
#include "format/ondisk_ns.h"
#include "namespace/ns.h"

static const char *dev_path;

struct fs {
	struct smr_dev *dev;
	struct smr_cow *cow;
};

static int die(const char *what, int rc)
{
	fprintf(stderr, "damage: %s: %s\n", what, strerror(-rc));
	return 1;
}

/* The FS tree's type for writing items the namespace's type refuses. */
static const struct smr_tree_type any_item = {
	.id = SMR_TREE_FS, .name = "fs", .max_item = SMR_COW_MAX_ITEM,
};

/* Open the engine, its FS tree typed by @tt (the namespace's if NULL). */
static int fs_open_as(struct fs *f, bool ro, const struct smr_tree_type *tt)
{
	int rc = smr_dev_open(dev_path, &(struct smr_dev_opts){ .read_only = ro },
			      &f->dev);

	if (rc)
		return rc;
	rc = smr_cow_open(f->dev, &(struct smr_cow_opts){ .read_only = ro },
			  &f->cow);
	/* Items are changed through the tree's type. */
	if (!rc) {
		rc = tt ? smr_cow_tree_register(f->cow, tt) :
			  smr_ns_register_trees(f->cow);
		if (rc)
			smr_cow_close(f->cow);
	}
	if (rc)
		smr_dev_close(f->dev);
	return rc;
}

static int fs_open_ro(struct fs *f, bool ro)
{
	return fs_open_as(f, ro, NULL);
}

static int fs_open(struct fs *f)
{
	return fs_open_as(f, false, NULL);
}

static int fs_close(struct fs *f)
{
	int rc = smr_cow_close(f->cow);
	int rc2 = smr_dev_close(f->dev);

	return rc ? rc : rc2;
}

/* ------------------------------------------------------------------------
 * Bytes on the device
 * ------------------------------------------------------------------------ */

/* The file and offset in it that hold device byte @off: the device itself,
 * or in a zoned loop directory the zone's file. */
static int locate(uint64_t off, char *file, size_t size, uint64_t *at)
{
	const struct smr_dev_info *di;
	struct smr_dev *dev;
	uint32_t zno;
	int rc;

	rc = smr_dev_open(dev_path, &(struct smr_dev_opts){ .read_only = true },
			  &dev);
	if (rc)
		return rc;
	di = smr_dev_info(dev);
	if (strcmp(di->backend, "zloop")) {
		snprintf(file, size, "%s", dev_path);
		*at = off;
	} else {
		zno = smr_dev_zone_no(dev, off);
		snprintf(file, size, "%s/%s-%06u", dev_path,
			 zno < di->nr_cnv_zones ? "cnv" : "seq", zno);
		*at = off - smr_dev_zone_start(dev, zno);
	}
	return smr_dev_close(dev);
}

static int flip(uint64_t off)
{
	char file[4200];
	uint64_t at;
	uint8_t b;
	int fd, rc;

	rc = locate(off, file, sizeof(file), &at);
	if (rc)
		return rc;
	fd = open(file, O_RDWR);
	if (fd < 0)
		return -errno;
	rc = pread(fd, &b, 1, (off_t)at) == 1 ? 0 : -EIO;
	b ^= 0x5a;
	if (!rc && pwrite(fd, &b, 1, (off_t)at) != 1)
		rc = -EIO;
	close(fd);
	if (!rc)
		printf("flipped the byte at %" PRIu64 "\n", off);
	return rc;
}

/* ------------------------------------------------------------------------
 * Finding things
 * ------------------------------------------------------------------------ */

static struct smr_key key(uint64_t objid, uint8_t type, uint64_t off)
{
	struct smr_key k = { .objid = objid, .type = type, .offset = off };

	return k;
}

/* Resolve @path (from the root) to its inode and its parent's. */
static int resolve(const char *path, uint64_t *parent, uint64_t *ino,
		   char *name, size_t name_size)
{
	char buf[4096], *save = NULL, *c;
	struct smr_ns_attr a = { .ino = SMR_NS_ROOT };
	struct smr_ns *ns;
	struct fs f;
	int rc;

	rc = fs_open_ro(&f, true);
	if (rc)
		return rc;
	rc = smr_ns_open(f.cow, NULL, &ns);
	if (rc)
		goto out;
	snprintf(buf, sizeof(buf), "%s", path);
	*parent = SMR_NS_ROOT;
	for (c = strtok_r(buf, "/", &save); c && !rc;
	     c = strtok_r(NULL, "/", &save)) {
		*parent = a.ino;
		snprintf(name, name_size, "%s", c);
		rc = smr_ns_lookup(ns, a.ino, c, &a);
	}
	*ino = a.ino;
	smr_ns_close(ns);
out:
	fs_close(&f);
	return rc;
}

static int resolve_ino(const char *path, uint64_t *ino)
{
	char name[256];
	uint64_t parent;

	return resolve(path, &parent, ino, name, sizeof(name));
}

/* One item, read or written whole. */
struct item {
	struct smr_key k;
	uint8_t v[4096];
	size_t len;
};

struct find_arg {
	const char *name; /* entries: the name to find */
	struct item *it;
	bool found;
};

static int find_cb(void *arg, const struct smr_key *k, const void *val,
		   size_t len)
{
	struct find_arg *fa = arg;
	size_t nlen = fa->name ? strlen(fa->name) : 0;

	if (len > sizeof(fa->it->v))
		return 0;
	if (fa->name &&
	    (len != sizeof(struct smr_ns_dirent_d) + nlen ||
	     memcmp((const uint8_t *)val + sizeof(struct smr_ns_dirent_d),
		    fa->name, nlen)))
		return 0;
	fa->it->k = *k;
	memcpy(fa->it->v, val, len);
	fa->it->len = len;
	fa->found = true;
	return 1;
}

/* The first item of (@objid, @type), or the entry named @name. */
static int find_item(struct smr_cow *c, uint64_t objid, uint8_t type,
		     const char *name, struct item *it)
{
	struct smr_key from = key(objid, type, 0);
	struct smr_key to = key(objid, type, UINT64_MAX);
	struct find_arg fa = { .name = name, .it = it };
	int rc;

	rc = smr_bt_iterate(c, SMR_TREE_FS, &from, &to, find_cb, &fa);
	if (rc)
		return rc;
	return fa.found ? 0 : -ENOENT;
}

static int first_extent(const char *path, struct smr_ns_extent_d *d)
{
	struct item it;
	uint64_t ino;
	struct fs f;
	int rc;

	rc = resolve_ino(path, &ino);
	if (rc || (rc = fs_open_ro(&f, true)))
		return rc;
	rc = find_item(f.cow, ino, SMR_NS_T_EXTENT, NULL, &it);
	fs_close(&f);
	if (!rc)
		memcpy(d, it.v, sizeof(*d));
	return rc;
}

/* Unless @rc is an error already, apply @n changes (a zero length
 * deletes) in one transaction and commit; then close @f. */
static int put_items(struct fs *f, int rc, const struct item *its, int n)
{
	struct smr_txn *t;

	if (!rc)
		rc = smr_txn_begin(f->cow, &t);
	for (int i = 0; !rc && i < n; i++)
		rc = its[i].len ? smr_bt_put(t, SMR_TREE_FS, &its[i].k,
					     its[i].v, its[i].len)
				: smr_bt_delete(t, SMR_TREE_FS, &its[i].k);
	if (!rc) {
		smr_txn_end(t);
		rc = smr_cow_commit(f->cow);
	}
	fs_close(f);
	return rc;
}

/* ------------------------------------------------------------------------
 * The damages
 * ------------------------------------------------------------------------ */

static int do_sb(int copy)
{
	return flip((uint64_t)copy * SMR_SB_SIZE + 300);
}

static int do_ckpt(void)
{
	struct smr_cow_super_check sc;
	struct smr_dev *dev;
	int rc;

	rc = smr_dev_open(dev_path, &(struct smr_dev_opts){ .read_only = true },
			  &dev);
	if (rc)
		return rc;
	rc = smr_cow_check_super(dev, false, NULL, &sc);
	smr_dev_close(dev);
	if (rc)
		return rc;
	if (!sc.newest_gen)
		return -ENOENT;
	printf("checkpoint %" PRIu64 " at %" PRIu64 "\n", sc.newest_gen,
	       sc.newest_addr);
	return flip(sc.newest_addr + 600);
}

static int do_node(const char *tree, int level, bool last)
{
	uint32_t owner = strcmp(tree, "rmap") ? SMR_TREE_FS : SMR_TREE_RMAP;
	uint64_t *addrs = NULL, node = 0;
	uint8_t *nb;
	size_t n = 0;
	struct fs f;
	int rc;

	rc = fs_open(&f);
	if (rc)
		return rc;
	nb = smr_cow_buf_alloc(f.cow->ns);
	pthread_rwlock_rdlock(&f.cow->lock);
	rc = nb ? smr_bt_node_addrs_locked(f.cow, &addrs, &n) : -ENOMEM;
	for (size_t i = 0; !rc && (last || !node) && i < n; i++) {
		const struct smr_blk_hdr *h = (const void *)nb;

		rc = f.cow->sops->read(f.cow, addrs[i], nb, f.cow->ns);
		if (!rc && le64toh(h->owner) == owner &&
		    le16toh(h->level) == level)
			node = addrs[i];
	}
	pthread_rwlock_unlock(&f.cow->lock);
	smr_cow_buf_free(nb);
	free(addrs);
	fs_close(&f);
	if (rc)
		return rc;
	if (!node) {
		fprintf(stderr, "damage: no %s node at level %d\n", tree, level);
		return -ENOENT;
	}
	printf("%s node at %" PRIu64 ", level %d\n", tree, node, level);
	/* In the keys (interior) or the items (leaf): the checksum fails. */
	return flip(node + 200);
}

static int do_inode(const char *path, const char *field, uint64_t val)
{
	struct smr_ns_inode_d *d;
	struct item it;
	uint64_t ino;
	struct fs f;
	int rc;

	rc = resolve_ino(path, &ino);
	if (rc || (rc = fs_open(&f)))
		return rc;
	rc = find_item(f.cow, ino, SMR_NS_T_INODE, NULL, &it);
	d = (struct smr_ns_inode_d *)it.v;
	if (rc)
		;
	else if (!strcmp(field, "mode"))
		d->mode = htole32((uint32_t)val);
	else if (!strcmp(field, "size"))
		d->size = htole64(val);
	else if (!strcmp(field, "nlink"))
		d->nlink = htole32((uint32_t)val);
	else if (!strcmp(field, "flags"))
		d->flags = htole64(val);
	else
		rc = -EINVAL;
	rc = put_items(&f, rc, &it, 1);
	if (!rc)
		printf("inode %" PRIu64 ": %s = %#" PRIx64 "\n", ino, field, val);
	return rc;
}

/* Delete PATH's inode item, or (@tail) the first part of its tail block. */
static int do_delete(const char *path, bool tail)
{
	struct item it = { .len = 0 };
	uint64_t ino;
	struct fs f;
	int rc;

	rc = resolve_ino(path, &ino);
	if (rc || (rc = fs_open(&f)))
		return rc;
	it.k = tail ? key(SMR_NS_META_OBJID, SMR_NS_T_TAIL,
			  SMR_NS_TAIL_OFFSET(ino, 0)) :
		      key(ino, SMR_NS_T_INODE, 0);
	rc = put_items(&f, 0, &it, 1);
	if (!rc)
		printf("inode %" PRIu64 ": %s deleted\n", ino,
		       tail ? "tail item" : "inode item");
	return rc;
}

static int do_item(const char *path, uint8_t type)
{
	struct item it = { .len = 8 };
	uint64_t ino;
	struct fs f;
	int rc;

	rc = resolve_ino(path, &ino);
	if (rc || (rc = fs_open_as(&f, false, &any_item)))
		return rc;
	it.k = key(ino, type, 0);
	rc = put_items(&f, 0, &it, 1);
	if (!rc)
		printf("inode %" PRIu64 ": item of type %u added\n", ino, type);
	return rc;
}

static int do_nometa(void)
{
	struct item it = { .len = 0 };
	struct fs f;
	int rc;

	rc = fs_open(&f);
	if (rc)
		return rc;
	it.k = key(SMR_NS_META_OBJID, SMR_NS_T_META, 0);
	rc = put_items(&f, 0, &it, 1);
	if (!rc)
		printf("namespace record deleted\n");
	return rc;
}

static int do_stray(const char *path)
{
	struct item it;
	uint64_t ino;
	struct fs f;
	int rc;

	rc = resolve_ino(path, &ino);
	if (rc || (rc = fs_open(&f)))
		return rc;
	rc = find_item(f.cow, ino, SMR_NS_T_EXTENT, NULL, &it);
	/* An inode number past every one in use: no inode item. */
	it.k.objid = 1000000;
	rc = put_items(&f, rc, &it, 1);
	if (!rc)
		printf("extent item of missing inode %" PRIu64 " added\n",
		       it.k.objid);
	return rc;
}

static int do_dirent(const char *path, const char *field, uint64_t val)
{
	struct item it[3];
	struct smr_ns_dirent_d *e, *x;
	uint64_t dir, ino;
	char name[256];
	int n = 2, rc;
	struct fs f;

	rc = resolve(path, &dir, &ino, name, sizeof(name));
	if (rc || (rc = fs_open(&f)))
		return rc;
	rc = find_item(f.cow, dir, SMR_NS_T_DIRENT, name, &it[0]);
	e = (struct smr_ns_dirent_d *)it[0].v;
	if (!rc) {
		it[1].k = key(dir, SMR_NS_T_DIRINDEX, le64toh(e->ref));
		it[1].len = sizeof(it[1].v);
		rc = smr_bt_lookup(f.cow, SMR_TREE_FS, &it[1].k, it[1].v,
				   &it[1].len);
	}
	x = (struct smr_ns_dirent_d *)it[1].v;
	if (rc)
		;
	else if (!strcmp(field, "ino")) {
		e->ino = x->ino = htole64(val);
	} else if (!strcmp(field, "dtype")) {
		e->dtype = x->dtype = (uint8_t)val;
	} else if (!strcmp(field, "name_len")) {
		e->name_len = htole16((uint16_t)val);
		n = 1;
	} else if (!strcmp(field, "hash")) {
		/* Moved to a hash its name does not have, the readdir item
		 * following it: only the hash is wrong. */
		it[2] = it[0];
		it[2].len = 0;
		it[0].k.offset ^= 0x5a00;
		x->ref = htole64(it[0].k.offset);
		n = 3;
	} else {
		rc = -EINVAL;
	}
	rc = put_items(&f, rc, it, n);
	if (!rc)
		printf("entry %s in %" PRIu64 ": %s damaged\n", name, dir, field);
	return rc;
}

/* A device offset where nothing was written: the start of the last empty
 * zone of a zoned device, or the last blocks of a file's managed range. */
static uint64_t unwritten(struct smr_dev *dev, uint64_t len)
{
	const struct smr_dev_info *di = smr_dev_info(dev);

	for (uint32_t z = di->nr_zones; z-- > di->nr_cnv_zones;)
		if (smr_dev_zone_wp(dev, z) == smr_dev_zone_start(dev, z))
			return smr_dev_zone_start(dev, z);
	return (di->capacity - len) & ~(uint64_t)(di->block_size - 1);
}

static int do_extent(const char *path, const char *field, const char *arg)
{
	uint64_t val = arg ? strtoull(arg, NULL, 0) : 0;
	struct smr_ns_extent_d *d, other;
	bool onto = !strcmp(field, "onto"), bad = !strcmp(field, "onto-bad");
	struct item it[2];
	uint64_t ino, *csum;
	int n = 1, rc;
	struct fs f;

	rc = resolve_ino(path, &ino);
	if (!rc && (onto || bad))
		rc = arg ? first_extent(arg, &other) : -EINVAL;
	if (rc || (rc = fs_open(&f)))
		return rc;
	rc = find_item(f.cow, ino, SMR_NS_T_EXTENT, NULL, &it[0]);
	d = (struct smr_ns_extent_d *)it[0].v;
	csum = (uint64_t *)(it[0].v + sizeof(*d));
	if (rc)
		;
	else if (!strcmp(field, "nr_csums"))
		d->nr_csums = htole32((uint32_t)val);
	else if (!strcmp(field, "len"))
		d->len = htole64(val);
	else if (!strcmp(field, "csum"))
		csum[0] ^= htole64(0x5a5a);
	else if (onto || bad) {
		d->dev_off = other.dev_off;
		if (bad)
			memset(csum, 0, 8 * (size_t)le32toh(d->nr_csums));
	} else if (!strcmp(field, "past-wp"))
		d->dev_off = htole64(unwritten(f.dev, le64toh(d->len)));
	else if (!strcmp(field, "overlap")) {
		it[1] = it[0];
		it[1].k.offset += smr_dev_info(f.dev)->block_size;
		n = 2;
	} else {
		rc = -EINVAL;
	}
	rc = put_items(&f, rc, it, n);
	if (!rc)
		printf("extent of %" PRIu64 " at %" PRIu64 ": %s damaged\n", ino,
		       it[0].k.offset, field);
	return rc;
}

static int do_data(const char *path)
{
	struct smr_ns_extent_d d;
	int rc = first_extent(path, &d);

	return rc ? rc : flip(le64toh(d.dev_off) + 10);
}

static int do_zone_low(const char *path)
{
	struct smr_ns_extent_d d;
	struct fs f;
	int rc;

	rc = first_extent(path, &d);
	if (rc || (rc = fs_open(&f)))
		return rc;
	rc = smr_alloc_free(f.cow->alloc, le64toh(d.dev_off),
			    smr_dev_info(f.dev)->block_size);
	if (!rc)
		rc = smr_cow_commit_forced(f.cow);
	fs_close(&f);
	if (!rc)
		printf("freed the block at %" PRIu64 "\n", le64toh(d.dev_off));
	return rc;
}

static int do_leak(void)
{
	struct smr_alloc_hint hint = { 0 };
	void *buf = smr_dev_buf_alloc(8 * 4096);
	struct smr_extent x[4];
	struct fs f;
	int n, rc;

	if (!buf)
		return -ENOMEM;
	rc = fs_open(&f);
	if (rc)
		goto out;
	n = smr_alloc_write(f.cow->alloc, buf, 8 * 4096, &hint, SMR_STREAM_HOT,
			    x, 4);
	rc = n < 0 ? n : 0;
	/* Settled as if referenced, and referenced by nothing. */
	for (int i = 0; !rc && i < n; i++)
		rc = smr_alloc_settle(f.cow->alloc, x[i].off, x[i].len);
	if (!rc)
		rc = smr_cow_commit_forced(f.cow);
	fs_close(&f);
	if (!rc)
		printf("leaked %d extents at %" PRIu64 "\n", n, x[0].off);
out:
	smr_dev_buf_free(buf);
	return rc;
}

static int do_wp(const char *path)
{
	struct smr_ns_extent_d d;
	char file[4200];
	uint64_t at;
	int rc;

	rc = first_extent(path, &d);
	if (!rc)
		rc = locate(le64toh(d.dev_off), file, sizeof(file), &at);
	if (rc)
		return rc;
	if (!strstr(file, "/seq-"))
		return -EINVAL;
	if (truncate(file, (off_t)at))
		return -errno;
	printf("%s cut to %" PRIu64 " bytes\n", file, at);
	return 0;
}

int main(int argc, char **argv)
{
	const char *what = argc > 2 ? argv[2] : "";
	uint64_t val = argc > 5 ? strtoull(argv[5], NULL, 0) : 0;
	int rc = -EINVAL;

	if (argc < 3) {
		fprintf(stderr, "usage: damage DEVICE WHAT [ARGS]\n");
		return 1;
	}
	dev_path = argv[1];
	smr_log_set_level(SMR_LOG_ERR);
	if (!strcmp(what, "flip") && argc == 4)
		rc = flip(strtoull(argv[3], NULL, 0));
	else if (!strcmp(what, "sb") && argc == 4)
		rc = do_sb(atoi(argv[3]));
	else if (!strcmp(what, "ckpt") && argc == 3)
		rc = do_ckpt();
	else if (!strcmp(what, "node") && (argc == 5 || argc == 6))
		rc = do_node(argv[3], atoi(argv[4]),
			     argc == 6 && !strcmp(argv[5], "last"));
	else if (!strcmp(what, "inode") && argc == 6)
		rc = do_inode(argv[3], argv[4], val);
	else if (!strcmp(what, "noinode") && argc == 4)
		rc = do_delete(argv[3], false);
	else if (!strcmp(what, "notail") && argc == 4)
		rc = do_delete(argv[3], true);
	else if (!strcmp(what, "item") && argc == 5)
		rc = do_item(argv[3], (uint8_t)atoi(argv[4]));
	else if (!strcmp(what, "nometa") && argc == 3)
		rc = do_nometa();
	else if (!strcmp(what, "stray") && argc == 4)
		rc = do_stray(argv[3]);
	else if (!strcmp(what, "dirent") && argc >= 5)
		rc = do_dirent(argv[3], argv[4], val);
	else if (!strcmp(what, "extent") && argc >= 5)
		rc = do_extent(argv[3], argv[4], argc > 5 ? argv[5] : NULL);
	else if (!strcmp(what, "data") && argc == 4)
		rc = do_data(argv[3]);
	else if (!strcmp(what, "zone-low") && argc == 4)
		rc = do_zone_low(argv[3]);
	else if (!strcmp(what, "leak") && argc == 3)
		rc = do_leak();
	else if (!strcmp(what, "wp") && argc == 4)
		rc = do_wp(argv[3]);
	return rc ? die(what, rc) : 0;
}
