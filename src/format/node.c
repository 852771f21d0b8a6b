/* SPDX-License-Identifier: GPL-2.0-or-later */
/* node.c - the B-tree node verifier. */
#include "format/node.h"

void smr_node_init(void *n, uint32_t size, uint16_t level, uint64_t owner)
{
	struct smr_dnode *d = n;

	memset(n, 0, size);
	d->hdr.magic = htole32(SMR_MAGIC_NODE);
	d->hdr.len = htole32(size);
	d->hdr.owner = htole64(owner);
	d->hdr.level = htole16(level);
	d->data_off = htole32(level ? 0 : size);
}

/*
 * Structural checks of a node: entry counts within the node, keys strictly
 * increasing, leaf values inside the node and packed in slot order, child
 * pointers non-zero with a generation not newer than the node's own.
 */
static int smr_node_verify(const void *blk, size_t len, uint64_t addr)
{
	const struct smr_dnode *d = blk;
	uint32_t n = le32toh(d->nritems), level = le16toh(d->hdr.level);
	uint64_t gen = le64toh(d->hdr.gen);
	struct smr_nkey prev = { 0 }, k;

	if (len < SMR_NODE_MIN_SIZE || len > SMR_NODE_MAX_SIZE)
		return smr_corrupt(addr, "btree node: bad size");
	if (level >= SMR_BT_MAX_LEVEL)
		return smr_corrupt(addr, "btree node: level too high");
	if (!d->hdr.owner || le64toh(d->hdr.owner) > SMR_CKPT_MAX_ROOTS)
		return smr_corrupt(addr, "btree node: bad owner tree");
	if (d->hdr.flags || d->reserved[0] || d->reserved[1] || d->reserved[2])
		return smr_corrupt(addr, "btree node: reserved bytes not zero");
	if (level) {
		if (!n || n > smr_int_capacity(len))
			return smr_corrupt(addr, "btree node: bad pointer count");
		if (d->data_off)
			return smr_corrupt(addr, "btree node: data offset set");
		for (uint32_t i = 0; i < n; i++) {
			const struct smr_dkptr *p = smr_int_cptr(blk, i);

			smr_int_key(blk, i, &k);
			if (i && smr_nkey_cmp(&prev, &k) >= 0)
				return smr_corrupt(addr,
					"btree node: keys out of order");
			for (size_t j = 0; j < sizeof(p->pad); j++)
				if (p->pad[j])
					return smr_corrupt(addr,
						"btree node: pointer pad not zero");
			if (!p->addr || le64toh(p->addr) % 512 ||
			    le64toh(p->addr) >> 63)
				return smr_corrupt(addr,
					"btree node: bad child address");
			if (!p->gen || le64toh(p->gen) > gen)
				return smr_corrupt(addr,
					"btree node: child newer than parent");
			prev = k;
		}
		return 0;
	}
	uint32_t doff = le32toh(d->data_off), end = (uint32_t)len;

	if ((uint64_t)n * sizeof(struct smr_ditem) + SMR_NODE_HDR > doff ||
	    doff > len)
		return smr_corrupt(addr, "btree node: items overlap values");
	for (uint32_t i = 0; i < n; i++) {
		const struct smr_ditem *it = smr_leaf_citem(blk, i);
		uint32_t sz = le16toh(it->size), vo = le32toh(it->valoff);

		smr_leaf_key(blk, i, &k);
		if (i && smr_nkey_cmp(&prev, &k) >= 0)
			return smr_corrupt(addr, "btree node: keys out of order");
		if (it->pad)
			return smr_corrupt(addr, "btree node: item pad not zero");
		if (vo + sz != end || vo < doff)
			return smr_corrupt(addr, "btree node: bad value offset");
		end = vo;
		prev = k;
	}
	if (end != doff)
		return smr_corrupt(addr, "btree node: bad data offset");
	return 0;
}

const struct smr_blk_ops smr_node_ops = {
	.name = "btree node",
	.magic = SMR_MAGIC_NODE,
	.verify = smr_node_verify,
};
