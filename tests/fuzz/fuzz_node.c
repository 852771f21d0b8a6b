/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_node.c - the B-tree node verifier and accessors (src/format/node.c,
 * node.h).
 *
 * Input: flags byte (FUZZ_F_RESEAL), then records over one node of the
 * size its header names (16, 32 or 64 KiB; else 16). A node that verifies
 * is read through the accessors the B-tree uses, every key and value, in a
 * buffer of exactly the node's size: whatever the verifier let through
 * must stay inside it and hold the order it promises.
 */
#include <endian.h>
#include <stdlib.h>
#include <string.h>

#include "format/node.h"
#include "fuzz.h"

/* Keeps the reads of the values from being optimised away. */
static volatile uint64_t fuzz_sink;

static uint64_t fuzz_node_read(const uint8_t *n, uint32_t len)
{
	uint32_t nr = smr_node_nritems(n);
	struct smr_nkey k, prev = { 0 };
	uint64_t sum = 0;

	if (smr_node_level(n)) {
		for (uint32_t i = 0; i < nr; i++) {
			smr_int_key(n, i, &k);
			if (i && smr_nkey_cmp(&prev, &k) >= 0)
				abort();
			sum += smr_int_addr(n, i) + smr_int_gen(n, i);
			prev = k;
		}
		return sum;
	}
	if (smr_leaf_used(n, len) > len - SMR_NODE_HDR)
		abort();
	for (uint32_t i = 0; i < nr; i++) {
		uint32_t vo = smr_leaf_valoff(n, i), sz = smr_leaf_size(n, i);

		smr_leaf_key(n, i, &k);
		if (i && smr_nkey_cmp(&prev, &k) >= 0)
			abort();
		for (uint32_t j = 0; j < sz; j++)
			sum += n[vo + j];
		prev = k;
	}
	return sum;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	uint8_t flags = fuzz_u8(&in);
	uint8_t *max = calloc(1, SMR_NODE_MAX_SIZE), *n = NULL;
	struct smr_blk_expect exp = { 0 };
	const struct smr_blk_hdr *h;
	uint32_t len;

	fuzz_setup();
	if (!max)
		return 0;
	fuzz_sparse_flat(&in, max, SMR_NODE_MAX_SIZE);
	h = (const void *)max;
	len = le32toh(h->len);
	if (len != 16384 && len != 32768 && len != 65536)
		len = SMR_NODE_MIN_SIZE;
	n = malloc(len);
	if (!n)
		goto out;
	memcpy(n, max, len);
	h = (const void *)n;
	if (flags & FUZZ_F_RESEAL)
		((struct smr_blk_hdr *)n)->csum = htole64(smr_blk_csum(n, len));
	exp.addr = le64toh(h->addr);
	exp.uuid = h->uuid;
	if (!smr_blk_verify(n, len, &smr_node_ops, &exp))
		fuzz_sink = fuzz_node_read(n, len);
out:
	free(n);
	free(max);
	return 0;
}
