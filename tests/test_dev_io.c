/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_dev_io.c - batched I/O (smr_dev_submit, io_uring): hundreds of
 * requests in flight across several zones, reads and writes mixed, per-zone
 * write order, errors and cancellation inside a batch, several threads on
 * one handle; every byte checked against a model.
 */
#include "testutil.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dev/dev.h"
#include "dev/dev_priv.h"
#include "dev/fault.h"

#define ZS SMR_MIB
#define NZ 10   /* zones */
#define NCNV 2  /* conventional ones */

static struct smr_dev *mkdev(const char *tag, uint32_t max_open,
			     uint8_t **model)
{
	static char path[4096];
	struct smr_zloop_params p = {
		.capacity = NZ * ZS,
		.zone_size = ZS,
		.nr_cnv = NCNV,
		.max_open = max_open,
		.block_size = 4096,
	};
	struct smr_dev *dev = NULL;

	snprintf(path, sizeof(path), "%s/zl", smr_test_tmpdir(tag));
	SMR_ASSERT_OK(smr_zloop_create(path, &p));
	SMR_ASSERT_OK(smr_dev_open(path, NULL, &dev));
	CU_ASSERT_PTR_NOT_NULL_FATAL(dev);
	if (model)
		*model = calloc(1, NZ * ZS);
	return dev;
}

static void fill(uint8_t *buf, size_t len, uint64_t seed)
{
	for (size_t i = 0; i < len; i += 8) {
		uint64_t v = seed * 0x9e3779b97f4a7c15ULL + i;

		memcpy(buf + i, &v, 8);
	}
}

/* Read the whole device back in one batch of 4 KiB reads in a shuffled
 * order and compare with @model. */
static void check_all(struct smr_dev *dev, const uint8_t *model)
{
	const unsigned int n = NZ * ZS / 4096;
	uint8_t *r = smr_dev_buf_alloc(NZ * ZS);
	struct smr_io *ios = calloc(n, sizeof(*ios));
	uint64_t seed = 99;

	memset(r, 0xee, NZ * ZS);
	for (unsigned int i = 0; i < n; i++)
		ios[i] = (struct smr_io){ SMR_IO_READ, r + i * 4096ULL, 4096,
					  i * 4096ULL, 1 };
	for (unsigned int i = n - 1; i > 0; i--) {
		unsigned int j = (unsigned int)(smr_test_rand(&seed) % (i + 1));
		struct smr_io t = ios[i];

		ios[i] = ios[j];
		ios[j] = t;
	}
	SMR_ASSERT_OK(smr_dev_submit(dev, ios, n));
	for (unsigned int i = 0; i < n; i++)
		CU_ASSERT_EQUAL(ios[i].result, 0);
	for (size_t z = 0; z < NZ; z++)
		if (memcmp(r + z * ZS, model + z * ZS, ZS)) {
			fprintf(stderr, "zone %zu differs from the model\n", z);
			CU_FAIL("data differs");
		}
	free(ios);
	smr_dev_buf_free(r);
}

static void test_many_in_flight(void)
{
	uint8_t *model;
	struct smr_dev *dev = mkdev("io-many", 0, &model);
	const unsigned int per_zone = 32, wlen = 16384;
	const unsigned int nseq = NZ - NCNV;
	const unsigned int ncnv = 96;
	unsigned int n = 0;
	struct smr_io *ios = calloc(nseq * per_zone + ncnv, sizeof(*ios));
	uint8_t *data = smr_dev_buf_alloc((nseq * per_zone + ncnv) * wlen);
	uint64_t seed = 7;

	/* Interleaved: write k of every sequential zone, then k+1, ...
	 * with conventional-zone writes at random places in between. */
	for (unsigned int k = 0; k < per_zone; k++) {
		for (unsigned int z = NCNV; z < NZ; z++) {
			uint64_t off = z * (uint64_t)ZS + k * (uint64_t)wlen;
			uint8_t *b = data + n * (size_t)wlen;

			fill(b, wlen, n + 1);
			memcpy(model + off, b, wlen);
			ios[n++] = (struct smr_io){ SMR_IO_WRITE, b, wlen, off,
						    1 };
		}
		for (unsigned int c = 0; c < ncnv / per_zone; c++) {
			/* Distinct blocks, so that the order among them does
			 * not matter. */
			uint64_t off = (k * (ncnv / per_zone) + c) *
				       (uint64_t)wlen;
			uint8_t *b = data + n * (size_t)wlen;

			(void)seed;
			fill(b, wlen, n + 1);
			memcpy(model + off, b, wlen);
			ios[n++] = (struct smr_io){ SMR_IO_WRITE, b, wlen, off,
						    1 };
		}
	}
	SMR_ASSERT_OK(smr_dev_submit(dev, ios, n));
	for (unsigned int i = 0; i < n; i++)
		CU_ASSERT_EQUAL(ios[i].result, 0);
	for (uint32_t z = NCNV; z < NZ; z++) {
		CU_ASSERT_EQUAL(smr_dev_zone_wp(dev, z),
				z * (uint64_t)ZS + per_zone * wlen);
		CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, z),
				SMR_ZONE_COND_IMP_OPEN);
	}
	check_all(dev, model);

	/* Fill every sequential zone to the end with writes of different
	 * sizes while reading written parts of all zones in the same batch. */
	n = 0;
	uint8_t *rd = smr_dev_buf_alloc(nseq * 65536);
	for (unsigned int z = NCNV; z < NZ; z++) {
		uint64_t off = z * (uint64_t)ZS + per_zone * wlen;
		uint8_t *b = data;

		ios[n++] = (struct smr_io){ SMR_IO_READ,
					    rd + (z - NCNV) * 65536ULL, 65536,
					    z * (uint64_t)ZS, 1 };
		while (off < (z + 1) * (uint64_t)ZS) {
			size_t len = 4096 * (1 + smr_test_rand(&seed) % 8);

			len = SMR_MIN(len, (z + 1) * (uint64_t)ZS - off);
			fill(b, len, off);
			memcpy(model + off, b, len);
			ios[n++] = (struct smr_io){ SMR_IO_WRITE, b, len, off,
						    1 };
			b += len;
			off += len;
			if (n == nseq * per_zone + ncnv)
				break;
		}
		/* Submit zone by zone: buffers are reused per zone. */
		SMR_ASSERT_OK(smr_dev_submit(dev, ios, n));
		CU_ASSERT_EQUAL(memcmp(rd + (z - NCNV) * 65536ULL,
				       model + z * (uint64_t)ZS, 65536), 0);
		CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, z), SMR_ZONE_COND_FULL);
		n = 0;
	}
	CU_ASSERT_EQUAL(smr_dev_nr_open(dev), 0);
	check_all(dev, model);
	SMR_ASSERT_OK(smr_dev_close(dev));

	smr_dev_buf_free(rd);
	smr_dev_buf_free(data);
	free(ios);
	free(model);
}

static void test_batch_errors(void)
{
	uint8_t *model;
	struct smr_dev *dev = mkdev("io-err", 0, &model);
	uint8_t *b = smr_dev_buf_alloc(16 * 4096);
	uint64_t z2 = 2 * (uint64_t)ZS, z3 = 3 * (uint64_t)ZS;
	struct smr_io ios[] = {
		{ SMR_IO_WRITE, b, 4096, z2, 1 },
		{ SMR_IO_WRITE, b + 4096, 4096, z3, 1 },
		{ SMR_IO_WRITE, b + 8192, 4096, z2 + 4096, 1 },
		{ SMR_IO_WRITE, b + 12288, 4096, z2 + 65536, 1 }, /* not at wp */
		{ SMR_IO_WRITE, b + 16384, 4096, z3 + 4096, 1 },
		{ SMR_IO_WRITE, b + 20480, 4096, z2 + 8192, 1 },  /* cancelled */
		{ SMR_IO_READ, b + 24576, 4096, 100, 1 },          /* misaligned */
		{ SMR_IO_WRITE, b + 28672, 4096, z3 + 8192, 1 },
		{ SMR_IO_WRITE, b + 32768, 4096, z3 + 12288 + 1, 1 }, /* bad */
		{ SMR_IO_WRITE, b + 36864, 4096, z3 + 12288, 1 }, /* cancelled */
		{ SMR_IO_READ, b + 40960, 8192, z2, 1 },
	};

	fill(b, 16 * 4096, 5);
	/* Empty requests do nothing, wherever they point. */
	{
		struct smr_io empty[3] = {
			{ SMR_IO_WRITE, b, 0, 0, 1 },
			{ SMR_IO_READ, b, 0, z2, 1 },
			{ SMR_IO_WRITE, b, 0, NZ * (uint64_t)ZS, 1 },
		};

		SMR_ASSERT_OK(smr_dev_submit(dev, empty, 3));
		CU_ASSERT_EQUAL(empty[0].result, 0);
		CU_ASSERT_EQUAL(empty[2].result, 0);
		SMR_ASSERT_OK(smr_dev_write(dev, b, 0, z2 + 4096));
		CU_ASSERT_EQUAL(smr_dev_zone_wp(dev, 2), z2);
		CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, 2), SMR_ZONE_COND_EMPTY);
	}
	SMR_ASSERT_RC(smr_dev_submit(dev, ios, SMR_ARRAY_SIZE(ios)), -EIO);
	CU_ASSERT_EQUAL(ios[0].result, 0);
	CU_ASSERT_EQUAL(ios[1].result, 0);
	CU_ASSERT_EQUAL(ios[2].result, 0);
	CU_ASSERT_EQUAL(ios[3].result, -EIO);
	CU_ASSERT_EQUAL(ios[4].result, 0);
	CU_ASSERT_EQUAL(ios[5].result, -ECANCELED);
	CU_ASSERT_EQUAL(ios[6].result, -EINVAL);
	CU_ASSERT_EQUAL(ios[7].result, 0);
	CU_ASSERT_EQUAL(ios[8].result, -EINVAL);
	CU_ASSERT_EQUAL(ios[9].result, -ECANCELED);
	CU_ASSERT_EQUAL(ios[10].result, 0);
	CU_ASSERT_EQUAL(smr_dev_zone_wp(dev, 2), z2 + 8192);
	CU_ASSERT_EQUAL(smr_dev_zone_wp(dev, 3), z3 + 12288);
	memcpy(model + z2, b, 4096);
	memcpy(model + z2 + 4096, b + 8192, 4096);
	memcpy(model + z3, b + 4096, 4096);
	memcpy(model + z3 + 4096, b + 16384, 4096);
	memcpy(model + z3 + 8192, b + 28672, 4096);
	check_all(dev, model);
	SMR_ASSERT_OK(smr_dev_close(dev));
	smr_dev_buf_free(b);
	free(model);
}

/* Long runs of writes that follow each other in one zone (merged into
 * vectored writes), and a run that crosses the zone capacity: the writes
 * before the capacity land, the one crossing it fails, the rest are
 * cancelled. */
static void test_runs(void)
{
	char path[4096];
	struct smr_zloop_params p = {
		.capacity = 4 * ZS,
		.zone_size = ZS,
		.zone_cap = 768 * 1024,
		.block_size = 4096,
	};
	const unsigned int n = 200;
	struct smr_io *ios = calloc(n, sizeof(*ios));
	uint8_t *b = smr_dev_buf_alloc(n * 4096ULL);
	uint8_t *r = smr_dev_buf_alloc(ZS);
	struct smr_dev *dev = NULL;

	snprintf(path, sizeof(path), "%s/zl", smr_test_tmpdir("io-runs"));
	SMR_ASSERT_OK(smr_zloop_create(path, &p));
	SMR_ASSERT_OK(smr_dev_open(path, NULL, &dev));
	CU_ASSERT_PTR_NOT_NULL_FATAL(dev);

	/* 180 blocks of zone 0 (more than one vectored write holds), then
	 * 20 blocks of zone 1 in the same batch. */
	fill(b, n * 4096ULL, 17);
	for (unsigned int i = 0; i < n; i++)
		ios[i] = (struct smr_io){
			SMR_IO_WRITE, b + i * 4096ULL, 4096,
			i < 180 ? i * 4096ULL : ZS + (i - 180) * 4096ULL, 1
		};
	SMR_ASSERT_OK(smr_dev_submit(dev, ios, n));
	CU_ASSERT_EQUAL(smr_dev_zone_wp(dev, 0), 180 * 4096);
	CU_ASSERT_EQUAL(smr_dev_zone_wp(dev, 1), ZS + 20 * 4096);
	SMR_ASSERT_OK(smr_dev_read(dev, r, 180 * 4096, 0));
	CU_ASSERT_EQUAL(memcmp(r, b, 180 * 4096), 0);
	SMR_ASSERT_OK(smr_dev_read(dev, r, 20 * 4096, ZS));
	CU_ASSERT_EQUAL(memcmp(r, b + 180 * 4096, 20 * 4096), 0);

	/* Zone 2: 256 KiB, 512 KiB (reaches the 768 KiB capacity), then
	 * 4 KiB more and 4 KiB more. */
	ios[0] = (struct smr_io){ SMR_IO_WRITE, b, 256 * 1024, 2 * ZS, 1 };
	ios[1] = (struct smr_io){ SMR_IO_WRITE, b + 256 * 1024, 512 * 1024,
				  2 * ZS + 256 * 1024, 1 };
	ios[2] = (struct smr_io){ SMR_IO_WRITE, b, 4096, 2 * ZS + 768 * 1024,
				  1 };
	ios[3] = (struct smr_io){ SMR_IO_WRITE, b, 4096,
				  2 * ZS + 772 * 1024, 1 };
	SMR_ASSERT_RC(smr_dev_submit(dev, ios, 4), -EIO);
	CU_ASSERT_EQUAL(ios[0].result, 0);
	CU_ASSERT_EQUAL(ios[1].result, 0);
	CU_ASSERT_EQUAL(ios[2].result, -EIO);
	CU_ASSERT_EQUAL(ios[3].result, -ECANCELED);
	CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, 2), SMR_ZONE_COND_FULL);
	CU_ASSERT_EQUAL(smr_dev_zone_wp(dev, 2), 2 * ZS + 768 * 1024);
	SMR_ASSERT_OK(smr_dev_read(dev, r, ZS, 2 * ZS));
	CU_ASSERT_EQUAL(memcmp(r, b, 768 * 1024), 0);
	CU_ASSERT_EQUAL(r[768 * 1024], 0);
	CU_ASSERT_EQUAL(r[ZS - 1], 0);

	SMR_ASSERT_OK(smr_dev_close(dev));
	smr_dev_buf_free(b);
	smr_dev_buf_free(r);
	free(ios);
}

/* Threads writing their own zones through one handle with max_open 2, so
 * that they keep closing each other's zones implicitly. */
struct worker {
	struct smr_dev *dev;
	uint32_t zno;
	uint8_t *model;
	int rc;
};

static void *worker_fn(void *arg)
{
	struct worker *w = arg;
	uint8_t *b = smr_dev_buf_alloc(ZS);
	uint64_t off = w->zno * (uint64_t)ZS;
	struct smr_io ios[16];

	fill(b, ZS, w->zno);
	memcpy(w->model + off, b, ZS);
	for (unsigned int round = 0; round < ZS / (16 * 4096) && !w->rc;
	     round++) {
		for (unsigned int i = 0; i < 16; i++) {
			uint64_t o = round * 16 * 4096ULL + i * 4096ULL;

			ios[i] = (struct smr_io){ SMR_IO_WRITE, b + o, 4096,
						  off + o, 1 };
		}
		w->rc = smr_dev_submit(w->dev, ios, 16);
	}
	smr_dev_buf_free(b);
	return NULL;
}

static void test_threads(void)
{
	uint8_t *model;
	struct smr_dev *dev = mkdev("io-threads", 2, &model);
	struct worker w[6];
	pthread_t t[6];

	for (int i = 0; i < 6; i++) {
		w[i] = (struct worker){ dev, (uint32_t)(NCNV + i), model, 0 };
		CU_ASSERT_EQUAL_FATAL(
			pthread_create(&t[i], NULL, worker_fn, &w[i]), 0);
	}
	for (int i = 0; i < 6; i++) {
		pthread_join(t[i], NULL);
		SMR_ASSERT_OK(w[i].rc);
		CU_ASSERT_EQUAL(smr_dev_zone_cond(dev, w[i].zno),
				SMR_ZONE_COND_FULL);
	}
	CU_ASSERT(smr_dev_nr_open(dev) <= 2);
	check_all(dev, model);
	SMR_ASSERT_OK(smr_dev_close(dev));
	free(model);
}

static void test_file_batch(void)
{
	const size_t size = 4 * SMR_MIB;
	const unsigned int n = 400;
	char path[4096];
	struct smr_dev *dev = NULL;
	uint8_t *model = calloc(1, size);
	uint8_t *b = smr_dev_buf_alloc(n * 8192ULL);
	uint8_t *r = smr_dev_buf_alloc(size);
	struct smr_io *ios = calloc(n, sizeof(*ios));
	unsigned int *perm = calloc(size / 8192, sizeof(*perm));
	uint64_t seed = 3;
	int fd;

	snprintf(path, sizeof(path), "%s/img", smr_test_tmpdir("io-file"));
	fd = open(path, O_RDWR | O_CREAT, 0600);
	CU_ASSERT_FATAL(fd >= 0 && ftruncate(fd, (off_t)size) == 0);
	close(fd);
	SMR_ASSERT_OK(smr_dev_open(path, NULL, &dev));
	CU_ASSERT_PTR_NOT_NULL_FATAL(dev);

	/* Distinct 8 KiB slots in random order. */
	for (unsigned int i = 0; i < size / 8192; i++)
		perm[i] = i;
	for (unsigned int i = size / 8192 - 1; i > 0; i--) {
		unsigned int j = (unsigned int)(smr_test_rand(&seed) % (i + 1));
		unsigned int x = perm[i];

		perm[i] = perm[j];
		perm[j] = x;
	}
	for (unsigned int i = 0; i < n; i++) {
		uint64_t off = perm[i] * 8192ULL;

		fill(b + i * 8192ULL, 8192, i + 1);
		memcpy(model + off, b + i * 8192ULL, 8192);
		ios[i] = (struct smr_io){ SMR_IO_WRITE, b + i * 8192ULL, 8192,
					  off, 1 };
	}
	SMR_ASSERT_OK(smr_dev_submit(dev, ios, n));
	for (unsigned int i = 0; i < n; i++) {
		ios[i] = (struct smr_io){ SMR_IO_READ, r + i * 8192ULL, 8192,
					  i * 8192ULL, 1 };
	}
	SMR_ASSERT_OK(smr_dev_submit(dev, ios, n));
	CU_ASSERT_EQUAL(memcmp(r, model, n * 8192ULL), 0);
	SMR_ASSERT_OK(smr_dev_close(dev));
	free(perm);
	free(ios);
	free(model);
	smr_dev_buf_free(b);
	smr_dev_buf_free(r);
}

/*
 * The ring engine against the plain synchronous path: the same random
 * batches (runs of writes at the write pointer, writes off it, misaligned
 * ones, ones crossing the capacity, empty ones) go to one zoned loop
 * directory through io_uring and to a twin through a fault device, which
 * has no io_target and so takes the synchronous path. Every request's
 * result, every zone and every byte must come out the same. (No open or
 * active limit: with limits, which zone a write closes may rightly depend
 * on the order writes of different zones complete in.)
 */
static void test_differential(void)
{
	struct smr_zloop_params p = {
		.capacity = 6 * ZS, .zone_size = ZS, .zone_cap = 768 * 1024,
		.nr_cnv = 1, .block_size = 4096,
	};
	const unsigned int maxn = 48;
	struct smr_dev *a = NULL, *lower = NULL, *b = NULL;
	struct smr_io *ia = calloc(maxn, sizeof(*ia));
	struct smr_io *ib = calloc(maxn, sizeof(*ib));
	uint8_t *data = smr_dev_buf_alloc(maxn * 65536ULL + 4096);
	uint8_t *ra = smr_dev_buf_alloc(6 * ZS), *rb = smr_dev_buf_alloc(6 * ZS);
	struct smr_fault *f = NULL;
	char pa[4096], pb[4096];
	uint64_t seed = 12345, next[6] = { 0 };
	unsigned int differ = 0, failed = 0, total = 0;

	snprintf(pa, sizeof(pa), "%s/a", smr_test_tmpdir("io-diff"));
	snprintf(pb, sizeof(pb), "%s/b", smr_test_tmpdir("io-diff"));
	SMR_ASSERT_OK(smr_zloop_create(pa, &p));
	SMR_ASSERT_OK(smr_zloop_create(pb, &p));
	SMR_ASSERT_OK(smr_dev_open(pa, NULL, &a));
	SMR_ASSERT_OK(smr_dev_open(pb, NULL, &lower));
	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	CU_ASSERT_PTR_NOT_NULL_FATAL(lower);
	SMR_ASSERT_OK(smr_fault_open(lower, &f, &b));
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	fill(data, maxn * 65536ULL + 4096, 9);
	for (uint32_t z = 0; z < 6; z++)
		next[z] = z * (uint64_t)ZS;

	for (int round = 0; round < 150; round++) {
		unsigned int n = 2 + (unsigned int)(smr_test_rand(&seed) % (maxn - 1));
		uint8_t *d = data;

		for (unsigned int i = 0; i < n; i++) {
			uint32_t z = (uint32_t)(smr_test_rand(&seed) % 6);
			uint64_t len = 4096 * (1 + smr_test_rand(&seed) % 16);
			uint64_t off = next[z];
			unsigned int how = (unsigned int)(smr_test_rand(&seed) % 64);
			uint64_t end = z * (uint64_t)ZS +
				       (smr_test_rand(&seed) % 8 ? 768 * 1024 : ZS);

			if (how == 0)
				off = z * (uint64_t)ZS +
				      4096 * (smr_test_rand(&seed) % 256);
			else if (how == 1)
				off += 512;
			else if (how == 2)
				len = 0;
			else if (z == 0)
				off = 4096 * (smr_test_rand(&seed) % 200);
			if (off + len > end)
				len = off < end ? end - off : 4096;
			if (off + len > (z + 1) * (uint64_t)ZS)
				len = (z + 1) * (uint64_t)ZS - off;
			next[z] = off + len;
			ia[i] = (struct smr_io){ SMR_IO_WRITE, d, len, off, 1 };
			ib[i] = ia[i];
			d += len;
		}
		smr_dev_submit(a, ia, n);
		smr_dev_submit(b, ib, n);
		for (unsigned int i = 0; i < n; i++) {
			total++;
			if (ia[i].result)
				failed++;
			if (ia[i].result != ib[i].result) {
				if (!differ++)
					fprintf(stderr, "round %d request %u: "
						"%d against %d\n", round, i,
						ia[i].result, ib[i].result);
			}
		}
		for (uint32_t z = 0; z < 6; z++) {
			CU_ASSERT_EQUAL(smr_dev_zone_wp(a, z),
					smr_dev_zone_wp(b, z));
			CU_ASSERT_EQUAL(smr_dev_zone_cond(a, z),
					smr_dev_zone_cond(b, z));
			/* Full zones are mostly reset; the generator mostly
			 * follows the real write pointer. */
			if (z && smr_dev_zone_cond(a, z) == SMR_ZONE_COND_FULL &&
			    smr_test_rand(&seed) % 4) {
				SMR_ASSERT_OK(smr_dev_zone_reset(a, z));
				SMR_ASSERT_OK(smr_dev_zone_reset(b, z));
			}
			if (z && smr_test_rand(&seed) % 8)
				next[z] = smr_dev_zone_wp(a, z);
		}
		/* Now and then a zone is reset or finished on both. */
		if (round % 7 == 3) {
			uint32_t z = 1 + (uint32_t)(smr_test_rand(&seed) % 5);
			bool fin = smr_test_rand(&seed) % 3 == 0;

			SMR_ASSERT_RC(fin ? smr_dev_zone_finish(a, z) :
					    smr_dev_zone_reset(a, z),
				      fin ? smr_dev_zone_finish(b, z) :
					    smr_dev_zone_reset(b, z));
			next[z] = smr_dev_zone_wp(a, z);
		}
	}
	CU_ASSERT_EQUAL(differ, 0);
	fprintf(stderr, "\n  %u requests, %u failed ", total, failed);
	/* The walk must have had both outcomes in good numbers. */
	CU_ASSERT(failed > total / 20);
	CU_ASSERT(total - failed > total / 3);
	SMR_ASSERT_OK(smr_dev_read(a, ra, 6 * ZS, 0));
	SMR_ASSERT_OK(smr_dev_read(b, rb, 6 * ZS, 0));
	CU_ASSERT_EQUAL(memcmp(ra, rb, 6 * ZS), 0);

	SMR_ASSERT_OK(smr_dev_close(b));
	smr_fault_free(f);
	SMR_ASSERT_OK(smr_dev_close(lower));
	SMR_ASSERT_OK(smr_dev_close(a));
	smr_dev_buf_free(data);
	smr_dev_buf_free(ra);
	smr_dev_buf_free(rb);
	free(ia);
	free(ib);
}

/*
 * A request the kernel never completes must not hang a batch. The wrapped
 * backend hands out, for the first request of a batch, one end of a pipe
 * that blocks (empty for a read, full for a write): io_uring parks that
 * request for ever, as it does when no worker thread can be created for
 * it. The batch must cancel it after its deadline, do it synchronously on
 * the real backend, and come out with the right bytes.
 */
static const struct smr_dev_backend_ops *stall_real;
static int stall_fd = -1;

static int stall_io_target(struct smr_dev *dev, uint64_t off, size_t len,
			   int *fd, uint64_t *file_off)
{
	if (stall_fd >= 0) {
		*fd = stall_fd;
		*file_off = 0;
		stall_fd = -1;
		return 0;
	}
	return stall_real->io_target(dev, off, len, fd, file_off);
}

static int stall_pipe[2] = { -1, -1 };

static void stall_io_release(struct smr_dev *dev, uint64_t off, int fd)
{
	if (fd == stall_pipe[0] || fd == stall_pipe[1])
		return;
	if (stall_real->io_release)
		stall_real->io_release(dev, off, fd);
}

/* Two requests in one batch, the first of which stalls and the second
 * follows it on the device, and a read of block 0 beside them: a piece
 * that would be alone on the ring (two writes to one zone merge into one)
 * is done synchronously instead, and could not stall. */
static void stall_batch(struct smr_dev *dev, uint8_t *model, uint64_t off,
			size_t len, bool wr)
{
	uint8_t *b = smr_dev_buf_alloc(2 * len);
	uint8_t *r0 = smr_dev_buf_alloc(4096);
	struct smr_io io[3];

	for (int i = 0; i < 2; i++)
		io[i] = (struct smr_io){ wr ? SMR_IO_WRITE : SMR_IO_READ,
					 b + i * len, len, off + i * len, 1 };
	io[2] = (struct smr_io){ SMR_IO_READ, r0, 4096, 0, 1 };
	if (wr) {
		char junk[4096] = { 0 };

		/* A full pipe: a write to it blocks. */
		CU_ASSERT_FATAL(fcntl(stall_pipe[1], F_SETFL, O_NONBLOCK) == 0);
		while (write(stall_pipe[1], junk, sizeof(junk)) > 0)
			;
		CU_ASSERT_FATAL(fcntl(stall_pipe[1], F_SETFL, 0) == 0);
		fill(b, 2 * len, off + 7);
		memcpy(model + off, b, 2 * len);
		stall_fd = stall_pipe[1];
	} else {
		char junk[4096];

		/* An empty pipe: a read of it blocks. */
		CU_ASSERT_FATAL(fcntl(stall_pipe[0], F_SETFL, O_NONBLOCK) == 0);
		while (read(stall_pipe[0], junk, sizeof(junk)) > 0)
			;
		CU_ASSERT_FATAL(fcntl(stall_pipe[0], F_SETFL, 0) == 0);
		stall_fd = stall_pipe[0];
	}
	SMR_ASSERT_OK(smr_dev_submit(dev, io, 3));
	CU_ASSERT_EQUAL(io[0].result, 0);
	CU_ASSERT_EQUAL(io[1].result, 0);
	CU_ASSERT_EQUAL(io[2].result, 0);
	CU_ASSERT_EQUAL(stall_fd, -1); /* the stalled path was taken */
	if (!wr)
		CU_ASSERT_EQUAL(memcmp(b, model + off, 2 * len), 0);
	CU_ASSERT_EQUAL(memcmp(r0, model, 4096), 0);
	smr_dev_buf_free(r0);
	smr_dev_buf_free(b);
}

static void test_stall(void)
{
	struct smr_dev_backend_ops ops;
	uint8_t *model = NULL;
	struct smr_dev *dev = mkdev("io-stall", 0, &model);

	alarm(60); /* the bug this tests is a hang */
	CU_ASSERT_FATAL(pipe(stall_pipe) == 0);
	stall_real = dev->ops;
	ops = *dev->ops;
	ops.io_target = stall_io_target;
	ops.io_release = stall_io_release;
	dev->ops = &ops;

	/* A conventional zone, then a sequential one at its write pointer. */
	stall_batch(dev, model, 8192, 16384, true);
	stall_batch(dev, model, NCNV * ZS, 65536, true);
	stall_batch(dev, model, 8192, 16384, false);
	stall_batch(dev, model, NCNV * ZS, 65536, false);
	CU_ASSERT_EQUAL(smr_dev_zone_wp(dev, NCNV), NCNV * ZS + 2 * 65536);

	dev->ops = stall_real;
	check_all(dev, model);
	SMR_ASSERT_OK(smr_dev_close(dev));
	close(stall_pipe[0]);
	close(stall_pipe[1]);
	free(model);
	alarm(0);
}

static const struct smr_test io_tests[] = {
	{ "many_in_flight", test_many_in_flight },
	{ "batch_errors", test_batch_errors },
	{ "runs", test_runs },
	{ "differential", test_differential },
	{ "threads", test_threads },
	{ "file_batch", test_file_batch },
	{ "stall", test_stall },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	static const struct smr_suite suites[] = {
		{ "dev_io", io_tests },
		{ NULL, NULL },
	};

	smr_log_set_level((enum smr_log_level)(SMR_LOG_ERR - 1));
	return smr_test_main(argc, argv, suites);
}
