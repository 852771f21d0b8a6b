/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * store_mem.c - a node store in memory, for tests of the tree alone.
 *
 * Blocks are kept by address; freed addresses are never handed out again,
 * so a read of a freed block (a tree bug) fails instead of returning
 * another node. Checkpoints are encoded and decoded with the real codecs.
 * The store outlives the engines opened on it, so a test can close and
 * reopen.
 */
#include "cow/cow_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct smr_memstore {
	uint32_t node_size;
	uint8_t uuid[16];
	uint8_t **blk;          /* index = addr / node_size - 1 */
	size_t nr_blk, cap_blk;
	uint8_t ckpt[2][SMR_CKPT_SIZE]; /* slot = gen & 1 */
	long fail_after;        /* writes left before failing; < 0 = never */
};

struct smr_memstore *smr_memstore_new(uint32_t node_size)
{
	struct smr_memstore *ms = calloc(1, sizeof(*ms));

	if (!ms)
		return NULL;
	ms->node_size = node_size;
	for (int i = 0; i < 16; i++)
		ms->uuid[i] = (uint8_t)(0x40 + i);
	ms->fail_after = -1;
	return ms;
}

void smr_memstore_free(struct smr_memstore *ms)
{
	if (!ms)
		return;
	for (size_t i = 0; i < ms->nr_blk; i++)
		free(ms->blk[i]);
	free(ms->blk);
	free(ms);
}

void smr_memstore_fail_after(struct smr_memstore *ms, long n)
{
	ms->fail_after = n;
}

static bool ms_fail(struct smr_memstore *ms)
{
	if (ms->fail_after < 0)
		return false;
	if (ms->fail_after == 0)
		return true;
	ms->fail_after--;
	return false;
}

static int ms_load(struct smr_cow *c, struct smr_ckpt *ck)
{
	struct smr_memstore *ms = c->store;
	struct smr_ckpt tmp;
	uint64_t best = 0;

	memset(&c->sb, 0, sizeof(c->sb));
	memcpy(c->sb.uuid, ms->uuid, 16);
	c->sb.node_size = ms->node_size;
	c->sb.block_size = 4096;
	c->sb.format_major = SMR_FORMAT_MAJOR;
	c->sb.format_minor = SMR_FORMAT_MINOR;
	c->sb.features_incompat = SMR_FEAT_INCOMPAT_PREV_CKPT;
	snprintf(c->sb.alloc, sizeof(c->sb.alloc), "memory");
	memset(ck, 0, sizeof(*ck));
	for (int s = 0; s < 2; s++) {
		if (!ms->ckpt[s][0])
			continue;
		if (smr_ckpt_from_disk(ms->ckpt[s], SMR_CKPT_SIZE,
				       (uint64_t)s * SMR_CKPT_SIZE, ms->uuid,
				       &tmp))
			continue;
		if (tmp.gen > best) {
			best = tmp.gen;
			*ck = tmp;
		}
	}
	return 0;
}

static int ms_read(struct smr_cow *c, uint64_t addr, void *buf, size_t len)
{
	struct smr_memstore *ms = c->store;
	size_t i = addr / ms->node_size;

	if (addr % ms->node_size || !i || i > ms->nr_blk ||
	    !ms->blk[i - 1] || len != ms->node_size)
		return -EIO;
	memcpy(buf, ms->blk[i - 1], len);
	return 0;
}

static int ms_meta_alloc(struct smr_cow *c, uint32_t n, uint64_t *addrs)
{
	struct smr_memstore *ms = c->store;

	if (ms->nr_blk + n > ms->cap_blk) {
		size_t cap = SMR_MAX(ms->cap_blk * 2, ms->nr_blk + n);
		uint8_t **b = realloc(ms->blk, cap * sizeof(*b));

		if (!b)
			return -ENOMEM;
		ms->blk = b;
		ms->cap_blk = cap;
	}
	for (uint32_t i = 0; i < n; i++) {
		ms->blk[ms->nr_blk] = NULL;
		addrs[i] = (uint64_t)(++ms->nr_blk) * ms->node_size;
	}
	return 0;
}

static int ms_meta_write(struct smr_cow *c, struct smr_io *ios, uint32_t n)
{
	struct smr_memstore *ms = c->store;

	for (uint32_t i = 0; i < n; i++) {
		size_t b = ios[i].off / ms->node_size - 1;

		if (ms_fail(ms))
			return -EIO;
		ms->blk[b] = malloc(ios[i].len);
		if (!ms->blk[b])
			return -ENOMEM;
		memcpy(ms->blk[b], ios[i].buf, ios[i].len);
	}
	return 0;
}

static void ms_meta_abort(struct smr_cow *c)
{
	(void)c;
}

static int ms_free(struct smr_cow *c, uint64_t off, uint64_t len)
{
	struct smr_memstore *ms = c->store;

	for (uint64_t a = off; a < off + len; a += ms->node_size) {
		size_t i = a / ms->node_size;

		if (!i || i > ms->nr_blk || !ms->blk[i - 1])
			return smr_corrupt(a, "memory store: double free");
		free(ms->blk[i - 1]);
		ms->blk[i - 1] = NULL;
	}
	return 0;
}

static int ms_checkpoint(struct smr_cow *c, struct smr_ckpt *ck)
{
	struct smr_memstore *ms = c->store;
	int s = (int)(ck->gen & 1);

	if (ms_fail(ms))
		return -EIO;
	return smr_ckpt_to_disk(ck, ms->uuid, ms->ckpt[s], SMR_CKPT_SIZE,
				(uint64_t)s * SMR_CKPT_SIZE);
}

const struct smr_store_ops smr_store_mem_ops = {
	.name = "memory",
	.load = ms_load,
	.read = ms_read,
	.meta_alloc = ms_meta_alloc,
	.meta_write = ms_meta_write,
	.meta_abort = ms_meta_abort,
	.free = ms_free,
	.checkpoint = ms_checkpoint,
	.close = NULL,
};
