/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench_alloc.c - allocation rate of each allocator module, and how badly
 * the rotational module splits large requests on a fragmented disk.
 *
 * Usage: bench_alloc [DIR]   (scratch space; default $TMPDIR or /tmp)
 *
 * Rate: a steady state of allocations of 1..32 blocks from the two data
 * streams, each freed again 4096 allocations later (first in, first out, so
 * that zones die whole and come back without cleaning), with a commit every
 * 1024 operations. Only allocation bookkeeping is timed: no data is
 * written (the zoned module's own state is, at each commit).
 *
 * Fragmentation: fill the rotational module with extents of 1..64 blocks,
 * free a random half, commit, then ask for 4 MiB at a time (up to 256
 * extents each) until the space runs out; print the mean extent count.
 *
 * State: the size of the zoned module's persisted state for 16384 zones,
 * and the time of one commit and of one open from it.
 */
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "alloc/alloc.h"
#include "dev/dev.h"
#include "util/smr.h"

#define BS 4096ULL
#define OPS 400000
#define WINDOW 4096
#define COMMIT_EVERY 1024

static const uint8_t uuid[16] = { 0xbe, 0x7c, 0x4a };

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dULL;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int rm_one(const char *p, const struct stat *st, int fl,
		  struct FTW *f)
{
	(void)st;
	(void)fl;
	(void)f;
	return remove(p);
}

static int open_dev(const char *dir, bool zoned, struct smr_dev **dev)
{
	char path[8192];

	if (zoned) {
		struct smr_zloop_params p = {
			.capacity = 64 * 16 * SMR_MIB,
			.zone_size = 16 * SMR_MIB,
			.block_size = BS,
		};
		int rc;

		snprintf(path, sizeof(path), "%s/zoned", dir);
		rc = smr_zloop_create(path, &p);
		if (rc)
			return rc;
	} else {
		int fd;

		snprintf(path, sizeof(path), "%s/file.img", dir);
		fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
		if (fd < 0)
			return -errno;
		if (ftruncate(fd, (off_t)SMR_GIB)) {
			close(fd);
			return -errno;
		}
		close(fd);
	}
	return smr_dev_open(path, NULL, dev);
}

struct held {
	struct smr_extent e[WINDOW];
	unsigned int n;
	unsigned int head;
};

static int bench_rate(const struct smr_alloc_ops *ops, const char *dir)
{
	struct smr_dev *dev = NULL;
	struct smr_alloc *a = NULL;
	struct smr_alloc_ref ref;
	struct held *h = calloc(1, sizeof(*h));
	uint64_t seed = 1, gen = 0, bytes = 0;
	double t0, t;
	int rc;

	rc = open_dev(dir, ops == &smr_zoned_ops, &dev);
	if (!rc)
		rc = smr_alloc_open(ops, dev, 0, uuid, NULL, &a);
	if (rc)
		goto out;
	t0 = now();
	for (unsigned int i = 0; i < OPS; i++) {
		struct smr_extent ext[4];
		enum smr_stream s = 1 + (enum smr_stream)(i & 1);
		int n;

		if (h->n == WINDOW) {
			struct smr_extent *old = &h->e[h->head];

			rc = smr_alloc_free(a, old->off, old->len);
			if (rc)
				goto out;
			h->head = (h->head + 1) % WINDOW;
			h->n--;
		}
		n = smr_alloc_extent(a, BS * (1 + rnd(&seed) % 32), NULL, s,
				     ext, 1);
		if (n < 0) {
			rc = n;
			goto out;
		}
		bytes += ext[0].len;
		h->e[(h->head + h->n) % WINDOW] = ext[0];
		h->n++;
		if (i % COMMIT_EVERY == COMMIT_EVERY - 1) {
			rc = smr_alloc_commit(a, ++gen, &ref);
			if (!rc)
				rc = smr_alloc_committed(a);
			if (rc)
				goto out;
		}
	}
	t = now() - t0;
	printf("%-10s %9.0f allocs/s  (%u allocs + frees, %" PRIu64
	       " MiB, %" PRIu64 " commits, %.2f s)\n",
	       ops->name, OPS / t, OPS, (uint64_t)(bytes / SMR_MIB), gen, t);
out:
	if (rc)
		fprintf(stderr, "%s: %s\n", ops->name, strerror(-rc));
	smr_alloc_close(a);
	smr_dev_close(dev);
	free(h);
	return rc;
}

static int bench_frag(const char *dir)
{
	struct smr_dev *dev = NULL;
	struct smr_alloc *a = NULL;
	struct smr_alloc_ref ref;
	struct smr_extent *all = NULL, ext[256];
	uint64_t seed = 7, nall = 0, reqs = 0, pieces = 0;
	int rc, n;

	rc = open_dev(dir, false, &dev);
	if (!rc)
		rc = smr_alloc_open(&smr_rot_ops, dev, 0, uuid, NULL, &a);
	all = calloc(SMR_GIB / BS, sizeof(*all));
	if (rc || !all)
		goto out;
	while ((n = smr_alloc_extent(a, BS * (1 + rnd(&seed) % 64), NULL,
				     SMR_STREAM_HOT, ext, 1)) > 0)
		all[nall++] = ext[0];
	for (uint64_t i = 0; i < nall; i++)
		if (rnd(&seed) & 1)
			smr_alloc_free(a, all[i].off, all[i].len);
	rc = smr_alloc_commit(a, 1, &ref);
	if (!rc)
		rc = smr_alloc_committed(a);
	if (rc)
		goto out;
	while ((n = smr_alloc_extent(a, 4 * SMR_MIB, NULL, SMR_STREAM_COLD,
				     ext, 256)) > 0) {
		uint64_t got = 0;

		for (int i = 0; i < n; i++)
			got += ext[i].len;
		if (got < 4 * SMR_MIB)
			break; /* the last, short one does not count */
		reqs++;
		pieces += (uint64_t)n;
	}
	printf("rotational fragmented: %" PRIu64 " extents filled, half freed;"
	       " %.1f extents per 4 MiB allocation (%" PRIu64 " allocations)\n",
	       nall, reqs ? (double)pieces / (double)reqs : 0.0, reqs);
out:
	if (rc)
		fprintf(stderr, "fragmentation: %s\n", strerror(-rc));
	free(all);
	smr_alloc_close(a);
	smr_dev_close(dev);
	return rc;
}

/* What persisting the zoned state costs with many zones: its size, one
 * commit, and one open from it (what mount pays). */
static int bench_state(const char *dir, uint32_t nzones)
{
	struct smr_zloop_params p = {
		.capacity = (uint64_t)nzones * 64 * SMR_KIB,
		.zone_size = 64 * SMR_KIB,
		.block_size = BS,
	};
	struct smr_dev *dev = NULL;
	struct smr_alloc *a = NULL;
	struct smr_alloc_ref ref;
	struct smr_extent e;
	char path[8192];
	double t0, tc, to;
	int rc;

	snprintf(path, sizeof(path), "%s/state", dir);
	rc = smr_zloop_create(path, &p);
	if (!rc)
		rc = smr_dev_open(path, NULL, &dev);
	if (!rc)
		rc = smr_alloc_open(&smr_zoned_ops, dev, 0, uuid, NULL, &a);
	if (rc)
		goto out;
	/* Some usage, so that the table is not all zeros. */
	for (uint32_t i = 0; i < nzones / 2; i++) {
		rc = smr_alloc_extent(a, 8 * BS, NULL, SMR_STREAM_COLD, &e, 1);
		if (rc < 0)
			goto out;
	}
	t0 = now();
	rc = smr_alloc_commit(a, 1, &ref);
	tc = now() - t0;
	if (rc)
		goto out;
	smr_alloc_close(a);
	a = NULL;
	t0 = now();
	rc = smr_alloc_open(&smr_zoned_ops, dev, 0, uuid, &ref, &a);
	to = now() - t0;
	if (rc)
		goto out;
	printf("zoned state, %u zones: %" PRIu64 " KiB; commit %.1f ms, "
	       "open %.1f ms\n", nzones, (uint64_t)(ref.len / SMR_KIB), tc * 1e3,
	       to * 1e3);
out:
	if (rc < 0)
		fprintf(stderr, "state: %s\n", strerror(-rc));
	smr_alloc_close(a);
	smr_dev_close(dev);
	return rc < 0 ? rc : 0;
}

int main(int argc, char **argv)
{
	const char *base = argc > 1 ? argv[1] : getenv("TMPDIR");
	char dir[4096];
	int rc = 0;

	if (!base || !*base)
		base = "/tmp";
	snprintf(dir, sizeof(dir), "%s/bench_alloc-XXXXXX", base);
	if (!mkdtemp(dir)) {
		perror(dir);
		return 1;
	}
	for (int i = 0; smr_alloc_modules[i] && !rc; i++) {
		char sub[4200];

		snprintf(sub, sizeof(sub), "%s/%s", dir,
			 smr_alloc_modules[i]->name);
		if (mkdir(sub, 0755)) {
			rc = -errno;
			break;
		}
		rc = bench_rate(smr_alloc_modules[i], sub);
	}
	if (!rc) {
		char sub[4200];

		snprintf(sub, sizeof(sub), "%s/frag", dir);
		rc = mkdir(sub, 0755) ? -errno : bench_frag(sub);
	}
	if (!rc) {
		char sub[4200];

		snprintf(sub, sizeof(sub), "%s/state", dir);
		rc = mkdir(sub, 0755) ? -errno : bench_state(sub, 16384);
	}
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return rc ? 1 : 0;
}
