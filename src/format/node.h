/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * node.h - accessors of B-tree node images (struct smr_dnode and its
 * entries, ondisk.h) and the node verifier.
 *
 * The B-tree keeps nodes in memory as their on-disk image, so that a commit
 * seals and writes them without a copy. These accessors are the one place
 * that converts a node's fields between little-endian and host order; the
 * B-tree code (src/cow/bt.c) uses nothing else.
 */
#ifndef SMR_FORMAT_NODE_H
#define SMR_FORMAT_NODE_H

#include <endian.h>
#include <stdint.h>
#include <string.h>

#include "format/blk.h"
#include "format/ondisk.h"

extern const struct smr_blk_ops smr_node_ops;

/* An item key in host order (the same fields as cow.h's struct smr_key). */
struct smr_nkey {
	uint64_t objid;
	uint8_t type;
	uint64_t offset;
};

static inline int smr_nkey_cmp(const struct smr_nkey *a,
			       const struct smr_nkey *b)
{
	if (a->objid != b->objid)
		return a->objid < b->objid ? -1 : 1;
	if (a->type != b->type)
		return a->type < b->type ? -1 : 1;
	if (a->offset != b->offset)
		return a->offset < b->offset ? -1 : 1;
	return 0;
}

#define SMR_NODE_HDR sizeof(struct smr_dnode)

static inline struct smr_dnode *smr_node_d(void *n)
{
	return n;
}

static inline uint32_t smr_node_nritems(const void *n)
{
	return le32toh(((const struct smr_dnode *)n)->nritems);
}

static inline void smr_node_set_nritems(void *n, uint32_t v)
{
	((struct smr_dnode *)n)->nritems = htole32(v);
}

static inline uint32_t smr_node_data_off(const void *n)
{
	return le32toh(((const struct smr_dnode *)n)->data_off);
}

static inline void smr_node_set_data_off(void *n, uint32_t v)
{
	((struct smr_dnode *)n)->data_off = htole32(v);
}

static inline uint16_t smr_node_level(const void *n)
{
	return le16toh(((const struct smr_dnode *)n)->hdr.level);
}

/* Leaf items. */
static inline struct smr_ditem *smr_leaf_item(void *n, uint32_t i)
{
	return (struct smr_ditem *)((uint8_t *)n + SMR_NODE_HDR) + i;
}

static inline const struct smr_ditem *smr_leaf_citem(const void *n,
						     uint32_t i)
{
	return (const struct smr_ditem *)((const uint8_t *)n + SMR_NODE_HDR) +
	       i;
}

static inline void smr_leaf_key(const void *n, uint32_t i, struct smr_nkey *k)
{
	const struct smr_ditem *it = smr_leaf_citem(n, i);

	k->objid = le64toh(it->objid);
	k->type = it->type;
	k->offset = le64toh(it->offset);
}

static inline uint32_t smr_leaf_size(const void *n, uint32_t i)
{
	return le16toh(smr_leaf_citem(n, i)->size);
}

static inline uint32_t smr_leaf_valoff(const void *n, uint32_t i)
{
	return le32toh(smr_leaf_citem(n, i)->valoff);
}

static inline void smr_leaf_set_item(void *n, uint32_t i,
				     const struct smr_nkey *k, uint32_t size,
				     uint32_t valoff)
{
	struct smr_ditem *it = smr_leaf_item(n, i);

	it->objid = htole64(k->objid);
	it->offset = htole64(k->offset);
	it->type = k->type;
	it->pad = 0;
	it->size = htole16((uint16_t)size);
	it->valoff = htole32(valoff);
}

static inline void smr_leaf_set_valoff(void *n, uint32_t i, uint32_t valoff)
{
	smr_leaf_item(n, i)->valoff = htole32(valoff);
}

/* Internal node key pointers. */
static inline struct smr_dkptr *smr_int_ptr(void *n, uint32_t i)
{
	return (struct smr_dkptr *)((uint8_t *)n + SMR_NODE_HDR) + i;
}

static inline const struct smr_dkptr *smr_int_cptr(const void *n, uint32_t i)
{
	return (const struct smr_dkptr *)((const uint8_t *)n + SMR_NODE_HDR) +
	       i;
}

static inline void smr_int_key(const void *n, uint32_t i, struct smr_nkey *k)
{
	const struct smr_dkptr *p = smr_int_cptr(n, i);

	k->objid = le64toh(p->objid);
	k->type = p->type;
	k->offset = le64toh(p->offset);
}

static inline uint64_t smr_int_addr(const void *n, uint32_t i)
{
	return le64toh(smr_int_cptr(n, i)->addr);
}

static inline uint64_t smr_int_gen(const void *n, uint32_t i)
{
	return le64toh(smr_int_cptr(n, i)->gen);
}

static inline void smr_int_set_key(void *n, uint32_t i,
				   const struct smr_nkey *k)
{
	struct smr_dkptr *p = smr_int_ptr(n, i);

	p->objid = htole64(k->objid);
	p->offset = htole64(k->offset);
	p->type = k->type;
	memset(p->pad, 0, sizeof(p->pad));
}

static inline void smr_int_set_child(void *n, uint32_t i, uint64_t addr,
				     uint64_t gen)
{
	struct smr_dkptr *p = smr_int_ptr(n, i);

	p->addr = htole64(addr);
	p->gen = htole64(gen);
}

/* Entries that fit in a node of @size bytes. */
static inline uint32_t smr_int_capacity(uint32_t size)
{
	return (size - SMR_NODE_HDR) / sizeof(struct smr_dkptr);
}

/* Bytes a leaf's items use (entries and values). */
static inline uint32_t smr_leaf_used(const void *n, uint32_t size)
{
	return smr_node_nritems(n) * sizeof(struct smr_ditem) + size -
	       smr_node_data_off(n);
}

/* Start an empty node image of @size bytes at @level for tree @owner. The
 * header's address, generation and checksum are set at write time. */
void smr_node_init(void *n, uint32_t size, uint16_t level, uint64_t owner);

#endif /* SMR_FORMAT_NODE_H */
