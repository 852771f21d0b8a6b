/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ondisk_rmap.h - the engine's reverse map of data extents (tree id
 * SMR_TREE_RMAP). Part of ondisk.h (included from it); the same rules apply.
 *
 * One item per data extent written with an owner, keyed by device offset:
 *
 *   (dev_off, SMR_RMAP_T_EXTENT, 0)          struct smr_rmap_d
 *
 * Byte d of [dev_off, dev_off + len) belongs to the owner item's key with
 * offset owner_offset + (d - dev_off). Items never overlap. The cleaner
 * uses the map to find the live data of a zone without walking the
 * namespace; freeing part of an extent trims or splits its item.
 */
#ifndef SMR_FORMAT_ONDISK_RMAP_H
#define SMR_FORMAT_ONDISK_RMAP_H

/* Tree id of the reverse map (an engine tree, not the namespace's). */
#define SMR_TREE_RMAP 2
/* Item type of a reverse-map entry. */
#define SMR_RMAP_T_EXTENT 1

struct smr_rmap_d {
	__le64 len;          /* bytes, a multiple of the block size */
	__le64 owner_objid;  /* key of the item that references the extent */
	__le64 owner_offset; /* ... its offset, for the extent's first byte */
	uint8_t owner_type;  /* ... its type */
	uint8_t pad[7];      /* zero */
};
SMR_ONDISK_SIZE(struct smr_rmap_d, 32);
SMR_ONDISK_OFFSET(struct smr_rmap_d, len, 0);
SMR_ONDISK_OFFSET(struct smr_rmap_d, owner_objid, 8);
SMR_ONDISK_OFFSET(struct smr_rmap_d, owner_offset, 16);
SMR_ONDISK_OFFSET(struct smr_rmap_d, owner_type, 24);
SMR_ONDISK_OFFSET(struct smr_rmap_d, pad, 25);

#endif /* SMR_FORMAT_ONDISK_RMAP_H */
