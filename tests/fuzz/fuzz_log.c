/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_log.c - the fsync log's readers (src/cow/log.c): the decoder that
 * open runs on every checkpoint slot or zone log record that could be a
 * piece of a record, and the parser of a record's payload, which replay
 * trusts from then on.
 *
 * Input: flags byte, then records over one piece of SMR_CKPT_SIZE bytes
 * (FUZZ_F_RESEAL: its checksum stamped first), decoded at the address its
 * header names; a piece that decodes and holds a whole record has its
 * payload parsed. With FUZZ_LOG_PAYLOAD, a le32 length (at most
 * SMR_LOG_MAX_PIECES pieces' worth) and records over a payload of that
 * length, parsed directly, so that mutations need no checksum. A payload
 * the parser accepts is then walked as replay walks it, in a buffer of
 * exactly its length: every claim, free and item must lie inside it and
 * be of a kind replay knows.
 */
#include <endian.h>
#include <stdlib.h>
#include <string.h>

#include "cow/cow_priv.h"
#include "fuzz.h"

/* Keeps the reads from being optimised away. */
static volatile uint64_t fuzz_sink;

static void fuzz_payload(const uint8_t *p, size_t len)
{
	uint32_t nc, nf, ni;
	uint64_t sum = 0;
	size_t at;

	if (smr_log_payload_parse(p, len, &nc, &nf, &ni))
		return;
	at = sizeof(struct smr_dlog_head);
	for (uint32_t i = 0; i < nc; i++, at += sizeof(struct smr_dlog_claim)) {
		struct smr_dlog_claim d;

		if (len - at < sizeof(d))
			abort();
		memcpy(&d, p + at, sizeof(d));
		sum += le64toh(d.off) + le64toh(d.len) + le64toh(d.csum);
	}
	for (uint32_t i = 0; i < nf; i++, at += sizeof(struct smr_dextent)) {
		struct smr_dextent d;

		if (len - at < sizeof(d))
			abort();
		memcpy(&d, p + at, sizeof(d));
		sum += le64toh(d.off) + le64toh(d.len);
	}
	for (uint32_t i = 0; i < ni; i++) {
		struct smr_dlog_item d;
		size_t vl;

		if (len - at < sizeof(d))
			abort();
		memcpy(&d, p + at, sizeof(d));
		vl = le16toh(d.len);
		if ((d.op != SMR_LOG_OP_PUT && d.op != SMR_LOG_OP_DELETE) ||
		    vl > SMR_COW_MAX_ITEM ||
		    len - at - sizeof(d) < SMR_ROUND_UP(vl, 8))
			abort();
		for (size_t j = 0; j < vl; j++)
			sum += p[at + sizeof(d) + j];
		at += sizeof(d) + SMR_ROUND_UP(vl, 8);
	}
	if (at != len)
		abort();
	fuzz_sink = sum;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	uint8_t flags = fuzz_u8(&in);
	struct smr_log_piece pc;
	const struct smr_blk_hdr *h;
	size_t len = SMR_CKPT_SIZE;
	uint8_t *b;

	fuzz_setup();
	if (flags & FUZZ_LOG_PAYLOAD) {
		len = fuzz_u32(&in) % (SMR_LOG_MAX_PIECES *
				       SMR_LOG_PIECE_ROOM + 1);
		/* Exactly @len bytes, so that ASan sees a read past them. */
		b = calloc(1, len ? len : 1);
		if (!b)
			return 0;
		fuzz_sparse_flat(&in, b, len);
		fuzz_payload(b, len);
		free(b);
		return 0;
	}
	b = calloc(1, len);
	if (!b)
		return 0;
	fuzz_sparse_flat(&in, b, len);
	if (flags & FUZZ_F_RESEAL)
		((struct smr_blk_hdr *)b)->csum = htole64(smr_blk_csum(b, len));
	h = (const void *)b;
	if (smr_log_piece_decode(b, le64toh(h->addr), h->uuid, &pc))
		goto out;
	/* What open's gathering of the pieces relies on: the record needs
	 * every one of its pieces, and this one holds its share of the
	 * payload, which lies in the piece. */
	if (!pc.nr_pieces || pc.piece >= pc.nr_pieces ||
	    pc.total <= (uint64_t)(pc.nr_pieces - 1) * SMR_LOG_PIECE_ROOM ||
	    pc.len != SMR_MIN(pc.total - (uint64_t)pc.piece *
			      SMR_LOG_PIECE_ROOM, SMR_LOG_PIECE_ROOM))
		abort();
	if (pc.nr_pieces == 1)
		fuzz_payload(b + sizeof(struct smr_dlog), pc.len);
out:
	free(b);
	return 0;
}
