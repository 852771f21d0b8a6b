/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fuzz_util.c - inputs, sparse images and checksum stamping (fuzz.h). */
#include "fuzz.h"

#include <endian.h>
#include <errno.h>
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/blk.h"
#include "format/ondisk.h"
#include "util/smr.h"

/* ========================================================================
 * Setup
 * ======================================================================== */

static char fuzz_dir[256];

static void fuzz_log_drop(enum smr_log_level level, const char *msg)
{
	(void)level;
	(void)msg;
}

static int fuzz_rm_one(const char *path, const struct stat *st, int flag,
		       struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

static void fuzz_cleanup(void)
{
	if (fuzz_dir[0])
		nftw(fuzz_dir, fuzz_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

void fuzz_setup(void)
{
	static bool done;
	const char *base = getenv("TMPDIR");
	const char *v = getenv("FUZZ_VERBOSE");

	if (done)
		return;
	done = true;
	if (!v || strcmp(v, "1"))
		smr_log_set_sink(fuzz_log_drop);
	else
		smr_log_set_level(SMR_LOG_DEBUG);
	if (!base || !*base)
		base = access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm";
	snprintf(fuzz_dir, sizeof(fuzz_dir), "%s/smrfs-fuzz.XXXXXX", base);
	if (!mkdtemp(fuzz_dir)) {
		perror("fuzz: mkdtemp");
		abort();
	}
	atexit(fuzz_cleanup);
}

const char *fuzz_tmpdir(void)
{
	return fuzz_dir;
}

/* ========================================================================
 * Reading inputs
 * ======================================================================== */

static uint64_t fuzz_le(struct fuzz_in *in, size_t n)
{
	uint64_t v = 0;

	for (size_t i = 0; i < n; i++) {
		if (in->n) {
			v |= (uint64_t)in->p[0] << (8 * i);
			in->p++;
			in->n--;
		}
	}
	return v;
}

uint8_t fuzz_u8(struct fuzz_in *in)
{
	return (uint8_t)fuzz_le(in, 1);
}

uint16_t fuzz_u16(struct fuzz_in *in)
{
	return (uint16_t)fuzz_le(in, 2);
}

uint32_t fuzz_u32(struct fuzz_in *in)
{
	return (uint32_t)fuzz_le(in, 4);
}

uint64_t fuzz_u64(struct fuzz_in *in)
{
	return fuzz_le(in, 8);
}

/* The next record: false at the end of the input. */
static bool fuzz_rec(struct fuzz_in *in, uint64_t *off, const uint8_t **p,
		     size_t *len)
{
	if (in->n < FUZZ_REC_HDR)
		return false;
	*off = fuzz_u32(in);
	*len = fuzz_u16(in);
	if (*len > in->n)
		*len = in->n;
	*p = in->p;
	in->p += *len;
	in->n -= *len;
	return true;
}

void fuzz_sparse_flat(struct fuzz_in *in, uint8_t *buf, size_t size)
{
	const uint8_t *p;
	uint64_t off;
	size_t len;

	while (fuzz_rec(in, &off, &p, &len)) {
		if (off >= size)
			continue;
		memcpy(buf + off, p, SMR_MIN(len, size - off));
	}
}

static int fuzz_put_rec(FILE *out, uint64_t off, const uint8_t *p,
			size_t len)
{
	uint8_t h[FUZZ_REC_HDR] = {
		(uint8_t)off, (uint8_t)(off >> 8), (uint8_t)(off >> 16),
		(uint8_t)(off >> 24), (uint8_t)len, (uint8_t)(len >> 8),
	};

	if (off > UINT32_MAX || len > UINT16_MAX)
		return -ERANGE;
	if (fwrite(h, sizeof(h), 1, out) != 1 ||
	    (len && fwrite(p, len, 1, out) != 1))
		return -EIO;
	return 0;
}

int fuzz_sparse_pack(FILE *out, const uint8_t *buf, size_t len,
		     uint64_t base)
{
	/* A zero run shorter than this stays inside a record: cheaper than
	 * a record header, and keeps small fields whole. */
	const size_t gap = 32;
	size_t i = 0;

	while (i < len) {
		size_t start, end, zeros = 0;

		while (i < len && !buf[i])
			i++;
		if (i == len)
			break;
		start = i;
		end = i;
		while (i < len && zeros < gap && i - start < 65535) {
			if (buf[i]) {
				zeros = 0;
				end = i + 1;
			} else {
				zeros++;
			}
			i++;
		}
		int rc = fuzz_put_rec(out, base + start, buf + start,
				      end - start);
		if (rc)
			return rc;
		i = end;
	}
	return 0;
}

/* ========================================================================
 * Sparse images
 * ======================================================================== */

void fuzz_img_init(struct fuzz_img *img, uint64_t size)
{
	memset(img, 0, sizeof(*img));
	img->size = size;
}

void fuzz_img_free(struct fuzz_img *img)
{
	for (size_t i = 0; i < img->nr; i++)
		free(img->page[i]);
	free(img->idx);
	free(img->page);
	memset(img, 0, sizeof(*img));
}

/* Index of the first page >= @pg. */
static size_t fuzz_img_lower(const struct fuzz_img *img, uint64_t pg)
{
	size_t lo = 0, hi = img->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (img->idx[mid] < pg)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static const uint8_t *fuzz_img_find(const struct fuzz_img *img, uint64_t pg)
{
	size_t i = fuzz_img_lower(img, pg);

	return i < img->nr && img->idx[i] == pg ? img->page[i] : NULL;
}

static uint8_t *fuzz_img_make(struct fuzz_img *img, uint64_t pg)
{
	size_t i = fuzz_img_lower(img, pg);

	if (i < img->nr && img->idx[i] == pg)
		return img->page[i];
	if (img->nr == img->cap) {
		size_t nc = img->cap ? 2 * img->cap : 64;
		uint64_t *ni = realloc(img->idx, nc * sizeof(*ni));

		if (!ni)
			return NULL;
		img->idx = ni;
		uint8_t **np = realloc(img->page, nc * sizeof(*np));

		if (!np)
			return NULL;
		img->page = np;
		img->cap = nc;
	}
	uint8_t *p = calloc(1, FUZZ_PAGE);

	if (!p)
		return NULL;
	memmove(img->idx + i + 1, img->idx + i,
		(img->nr - i) * sizeof(*img->idx));
	memmove(img->page + i + 1, img->page + i,
		(img->nr - i) * sizeof(*img->page));
	img->idx[i] = pg;
	img->page[i] = p;
	img->nr++;
	return p;
}

void fuzz_img_get(const struct fuzz_img *img, uint64_t off, void *buf,
		  size_t len)
{
	uint8_t *b = buf;

	while (len) {
		uint64_t pg = off / FUZZ_PAGE;
		size_t at = off % FUZZ_PAGE, n = SMR_MIN(len, FUZZ_PAGE - at);
		const uint8_t *p = fuzz_img_find(img, pg);

		if (p)
			memcpy(b, p + at, n);
		else
			memset(b, 0, n);
		b += n;
		off += n;
		len -= n;
	}
}

int fuzz_img_put(struct fuzz_img *img, uint64_t off, const void *buf,
		 size_t len)
{
	const uint8_t *b = buf;

	if (off >= img->size)
		return 0;
	len = SMR_MIN(len, img->size - off);
	while (len) {
		size_t at = off % FUZZ_PAGE, n = SMR_MIN(len, FUZZ_PAGE - at);
		uint8_t *p = fuzz_img_make(img, off / FUZZ_PAGE);

		if (!p)
			return -ENOMEM;
		memcpy(p + at, b, n);
		b += n;
		off += n;
		len -= n;
	}
	return 0;
}

int fuzz_img_load(struct fuzz_img *img, struct fuzz_in *in)
{
	const uint8_t *p;
	uint64_t off;
	size_t len;
	int rc;

	while (fuzz_rec(in, &off, &p, &len)) {
		rc = fuzz_img_put(img, off, p, len);
		if (rc)
			return rc;
	}
	return 0;
}

/* ========================================================================
 * Checksums
 * ======================================================================== */

void fuzz_img_stamp(struct fuzz_img *img, uint64_t off, size_t len)
{
	uint8_t *b;
	__le64 cs;

	if (len < sizeof(struct smr_blk_hdr) || off + len > img->size)
		return;
	b = malloc(len);
	if (!b)
		return;
	fuzz_img_get(img, off, b, len);
	cs = htole64(smr_blk_csum(b, len));
	fuzz_img_put(img, off + offsetof(struct smr_blk_hdr, csum), &cs,
		     sizeof(cs));
	free(b);
}

/* The bytes of the state: at most this many. */
#define FUZZ_STATE_MAX (4U << 20)

bool fuzz_img_state_hash(const struct fuzz_img *img, uint64_t off,
			 uint64_t len, uint64_t *hash)
{
	uint8_t b0[SMR_ALLOC_STATE_BLKSZ];
	const struct smr_alloc_state_head *h =
		(const void *)(b0 + SMR_ALLOC_STATE_HEAD_OFF);
	uint64_t total = 0;
	uint32_t ne;
	uint8_t *buf;

	if (!len || len > FUZZ_STATE_MAX || off >= img->size)
		return false;
	fuzz_img_get(img, off, b0, sizeof(b0));
	ne = le32toh(h->nr_ext);
	if (!ne || ne > SMR_ALLOC_STATE_MAX_EXT)
		return false;
	for (uint32_t i = 0; i < ne; i++) {
		uint64_t el = le64toh(h->ext[i].len), eo = le64toh(h->ext[i].off);

		if (el > len - total || eo >= img->size ||
		    el > img->size - eo)
			return false;
		total += el;
	}
	if (total != len)
		return false;
	buf = malloc(len);
	if (!buf)
		return false;
	total = 0;
	for (uint32_t i = 0; i < ne; i++) {
		uint64_t el = le64toh(h->ext[i].len);

		fuzz_img_get(img, le64toh(h->ext[i].off), buf + total, el);
		total += el;
	}
	*hash = smr_hash64(buf, len, 0);
	free(buf);
	return true;
}

/* The block length a page's header claims, if it is one we stamp in
 * pass @pass (0: state blocks and nodes, 1: checkpoints and superblocks). */
static size_t fuzz_blk_len(const uint8_t *p, int pass)
{
	const struct smr_blk_hdr *h = (const void *)p;
	uint32_t len = le32toh(h->len);

	switch (le32toh(h->magic)) {
	case SMR_MAGIC_ALLOC:
		return !pass && len == SMR_ALLOC_STATE_BLKSZ ? len : 0;
	case SMR_MAGIC_NODE:
		return !pass && SMR_IS_POW2(len) && len >= SMR_NODE_MIN_SIZE &&
		       len <= SMR_NODE_MAX_SIZE ? len : 0;
	case SMR_MAGIC_CKPT:
		return pass && len == SMR_CKPT_SIZE ? len : 0;
	case SMR_MAGIC_SB:
		return pass && len == SMR_SB_SIZE ? len : 0;
	default:
		return 0;
	}
}

void fuzz_img_reseal(struct fuzz_img *img)
{
	for (int pass = 0; pass < 2; pass++) {
		/* Stamping adds no page: the header is in the page found. */
		for (size_t i = 0; i < img->nr; i++) {
			uint64_t off = img->idx[i] * FUZZ_PAGE;
			size_t len = fuzz_blk_len(img->page[i], pass);
			struct smr_dckpt *ck = (void *)img->page[i];
			uint64_t hash;

			if (!len)
				continue;
			if (le32toh(ck->hdr.magic) == SMR_MAGIC_CKPT &&
			    fuzz_img_state_hash(img, le64toh(ck->alloc_off),
						le64toh(ck->alloc_len), &hash))
				ck->alloc_csum = htole64(hash);
			fuzz_img_stamp(img, off, len);
		}
	}
}
