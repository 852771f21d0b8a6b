/* SPDX-License-Identifier: GPL-2.0-or-later */
/* blk.c - checksums and the common verifier of self-describing blocks. */
#include "format/blk.h"

#include <endian.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>
/* Where the library has it, the dispatcher: the same hashes, computed
 * with the widest vector unit the CPU has (see configure.ac). */
#if defined(HAVE_XXH_X86DISPATCH_H) && \
	defined(HAVE_XXH3_64BITS_WITHSEED_DISPATCH)
#include <xxh_x86dispatch.h>
#endif

uint64_t smr_hash64(const void *buf, size_t len, uint64_t seed)
{
	return XXH3_64bits_withSeed(buf, len, seed);
}

int smr_hash_fix_bit(void *buf, size_t len, uint64_t seed, uint64_t want)
{
	uint8_t *b = buf;

	for (size_t i = 0; i < len; i++) {
		for (int bit = 0; bit < 8; bit++) {
			b[i] ^= (uint8_t)(1 << bit);
			if (smr_hash64(buf, len, seed) == want)
				return 0;
			b[i] ^= (uint8_t)(1 << bit);
		}
	}
	return -SMR_EFSBADCRC;
}

uint64_t smr_blk_csum(const void *blk, size_t len)
{
	static const uint8_t zero[8];
	const size_t at = offsetof(struct smr_blk_hdr, csum);
	XXH3_state_t st;

	/* Hash around the csum field rather than copying the block. */
	XXH3_64bits_reset(&st);
	XXH3_64bits_update(&st, blk, at);
	XXH3_64bits_update(&st, zero, sizeof(zero));
	XXH3_64bits_update(&st, (const uint8_t *)blk + at + 8, len - at - 8);
	return XXH3_64bits_digest(&st);
}

void smr_blk_hdr_decode(const void *blk, struct smr_blk_id *id)
{
	const struct smr_blk_hdr *h = blk;

	id->magic = le32toh(h->magic);
	id->len = le32toh(h->len);
	id->csum = le64toh(h->csum);
	id->addr = le64toh(h->addr);
	id->gen = le64toh(h->gen);
	id->owner = le64toh(h->owner);
	id->level = le16toh(h->level);
	memcpy(id->uuid, h->uuid, sizeof(id->uuid));
}

void smr_blk_hdr_init(void *blk, const struct smr_blk_ops *ops, size_t len,
		      uint64_t addr, uint64_t gen, uint64_t owner,
		      const uint8_t uuid[16], uint16_t level)
{
	struct smr_blk_hdr *h = blk;

	memset(h, 0, sizeof(*h));
	h->magic = htole32(ops->magic);
	h->len = htole32((uint32_t)len);
	h->addr = htole64(addr);
	h->gen = htole64(gen);
	h->owner = htole64(owner);
	memcpy(h->uuid, uuid, sizeof(h->uuid));
	h->level = htole16(level);
}

int smr_blk_seal(void *blk, size_t len, const struct smr_blk_ops *ops)
{
	struct smr_blk_hdr *h = blk;
	uint64_t addr = le64toh(h->addr);
	int rc;

	if (le32toh(h->magic) != ops->magic || le32toh(h->len) != len)
		return smr_corrupt(addr, "sealing a block with a bad header");
	if (ops->verify) {
		rc = ops->verify(blk, len, addr);
		if (rc)
			return rc;
	}
	h->csum = htole64(smr_blk_csum(blk, len));
	return 0;
}

static int smr_blk_fail(const struct smr_blk_ops *ops, uint64_t addr,
			const char *what, int rc, const char *func, int line)
{
	char why[160];

	snprintf(why, sizeof(why), "%s: %s", ops->name, what);
	smr_corrupt_at(addr, why, func, line);
	return rc;
}

#define BLK_FAIL(what, rc) \
	smr_blk_fail(ops, exp->addr, (what), (rc), __func__, __LINE__)

int smr_blk_verify(const void *blk, size_t len, const struct smr_blk_ops *ops,
		   const struct smr_blk_expect *exp)
{
	const struct smr_blk_hdr *h = blk;

	if (len < sizeof(*h))
		return BLK_FAIL("block shorter than its header",
				-SMR_EFSCORRUPTED);
	if (le32toh(h->magic) != ops->magic)
		return BLK_FAIL("bad magic", -SMR_EFSCORRUPTED);
	if (le32toh(h->len) != len)
		return BLK_FAIL("bad length", -SMR_EFSCORRUPTED);
	if (le64toh(h->csum) != smr_blk_csum(blk, len))
		return BLK_FAIL("checksum mismatch", -SMR_EFSBADCRC);
	if (le64toh(h->addr) != exp->addr)
		return BLK_FAIL("misdirected: address in header differs",
				-SMR_EFSCORRUPTED);
	if (exp->uuid && memcmp(h->uuid, exp->uuid, sizeof(h->uuid)))
		return BLK_FAIL("block of another filesystem",
				-SMR_EFSCORRUPTED);
	if (exp->gen && le64toh(h->gen) != exp->gen)
		return BLK_FAIL("stale: generation differs from the reference",
				-SMR_EFSCORRUPTED);
	if (exp->owner && le64toh(h->owner) != exp->owner)
		return BLK_FAIL("wrong owner", -SMR_EFSCORRUPTED);
	if (h->reserved)
		return BLK_FAIL("reserved bytes not zero", -SMR_EFSCORRUPTED);
	return ops->verify ? ops->verify(blk, len, exp->addr) : 0;
}

int smr_blk_fix_bit(void *blk, size_t len, const struct smr_blk_ops *ops,
		    const struct smr_blk_expect *exp)
{
	const size_t at = offsetof(struct smr_blk_hdr, csum);
	struct smr_blk_hdr *h = blk;
	uint8_t *b = blk;
	uint64_t sum;

	if (len < sizeof(*h))
		return -SMR_EFSBADCRC;
	/* A bit of the checksum itself: the rest hashes as stored. */
	sum = smr_blk_csum(blk, len);
	for (size_t i = 0; i < len; i++) {
		bool in_csum = i >= at && i < at + 8;

		for (int bit = 0; bit < 8; bit++) {
			b[i] ^= (uint8_t)(1 << bit);
			if (le64toh(h->csum) ==
				    (in_csum ? sum : smr_blk_csum(blk, len)) &&
			    !smr_blk_verify(blk, len, ops, exp))
				return 0;
			b[i] ^= (uint8_t)(1 << bit);
		}
	}
	return -SMR_EFSBADCRC;
}

bool smr_blk_matches(const void *blk, size_t len, const struct smr_blk_ops *ops,
		     const struct smr_blk_expect *exp)
{
	const struct smr_blk_hdr *h = blk;
	struct smr_blk_id id;

	if (len < sizeof(*h))
		return false;
	smr_blk_hdr_decode(blk, &id);
	/* The cheap fields first: a scan mostly meets blocks that are not
	 * of this type at all. */
	return id.magic == ops->magic && id.len == len &&
	       id.addr == exp->addr &&
	       (!exp->uuid || !memcmp(id.uuid, exp->uuid, sizeof(id.uuid))) &&
	       (!exp->gen || id.gen == exp->gen) &&
	       (!exp->owner || id.owner == exp->owner) && !h->reserved &&
	       id.csum == smr_blk_csum(blk, len);
}
