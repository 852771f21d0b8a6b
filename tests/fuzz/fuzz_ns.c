/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_ns.c - the namespace's item decoders (inode, directory entry,
 * readdir index, extent, xattr, symlink, orphan and namespace records:
 * src/namespace/), over the in-memory engine of tests/memcow.c, so that
 * every input is a set of items and nothing else stands in front of them.
 *
 * Input: flags byte (unused but kept, so that inputs look like the other
 * targets'), then items: u8 type, __le64 objid, __le64 offset, __le16 value
 * length (at most SMR_COW_MAX_ITEM), value bytes, put under a tree type
 * that takes any item (as a damaged tree holds them). The namespace is opened
 * (which reclaims orphans), checked, walked and changed (fuzz_ns_walk),
 * then checked again.
 */
#include <stdlib.h>

#include "cow/cow.h"
#include "fuzz.h"
#include "memcow.h"
#include "namespace/ns.h"

static const struct smr_tree_type fuzz_any = {
	.id = SMR_TREE_FS, .name = "fs", .max_item = SMR_COW_MAX_ITEM,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	struct smr_cow *cow;
	struct smr_txn *t;
	struct smr_ns *ns;

	fuzz_setup();
	fuzz_u8(&in);
	if (memcow_create(2 << 20, 4096, &cow))
		return 0;
	if (smr_cow_tree_register(cow, &fuzz_any) || smr_txn_begin(cow, &t))
		goto out;
	while (in.n >= 19) {
		struct smr_key k;
		size_t len;

		k.type = fuzz_u8(&in);
		k.objid = fuzz_u64(&in);
		k.offset = fuzz_u64(&in);
		len = fuzz_u16(&in);
		if (len > in.n)
			len = in.n;
		if (len <= SMR_COW_MAX_ITEM)
			smr_bt_put(t, SMR_TREE_FS, &k, in.p, len);
		in.p += len;
		in.n -= len;
	}
	smr_txn_end(t);
	memcow_forget_type(cow);
	if (!smr_ns_open(cow, NULL, &ns)) {
		fuzz_ns_walk(ns, true);
		smr_ns_close(ns);
	}
out:
	smr_cow_close(cow);
	return 0;
}
