/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench_wa.c - write amplification of the cleaner.
 *
 * Fills a fresh zoned loop directory to a utilization U with files, then
 * overwrites random blocks of them for several times the device's size,
 * uniformly or with a hot/cold skew (90% of the writes to 10% of the
 * files), and reports WA = device bytes written / user bytes written over
 * the overwrite phase, for U = 50, 75, 90% under the greedy and the
 * cost-benefit policy. Runs through the namespace library directly (no
 * FUSE). Before each write, the writing thread takes the step the
 * background thread would (smr_cow_clean_auto) with the policy under test
 * and the default watermarks (BENCH_WA_GC_LOW, BENCH_WA_GC_HIGH set them).
 * A step that runs out of room for its copies (-ENOSPC) does not end the
 * run, as it does not stop the thread: the write's own cleaning decides,
 * and the steps that did are counted under the table.
 *
 * Usage: bench_wa [DIR] [ZONES] [ZONE_MIB] [PASSES]
 *   DIR       scratch directory (default $TMPDIR or /tmp)
 *   ZONES     zones of the device (default 64)
 *   ZONE_MIB  zone size in MiB, a power of two (default 4)
 *   PASSES    overwrite volume in device sizes (default 3)
 *
 * To run a part of the table: BENCH_WA_U=75 (one utilization, any
 * percentage),
 * BENCH_WA_SKEW=0 or 1 (uniform or hot/cold only), BENCH_WA_POLICY=greedy
 * or cost-benefit. BENCH_WA_MAX_OPEN limits the open and active zones of
 * the device (the allocator's streams then share zones); BENCH_WA_OF_SIZE
 * counts U against the size statfs reports (the managed capacity less
 * the overhead the cleaner and the streams keep) instead of the whole
 * managed capacity; BENCH_WA_SEED=N draws another sequence of overwrites
 * (to tell a change from noise, run several); BENCH_WA_DUMP
 * prints, when a run fails, where the space is and each zone's live share.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cow/cow.h"
#include "dev/dev.h"
#include "namespace/ns.h"

#define FILE_BYTES (1024 * 1024ULL)
#define WRITE_BYTES (64 * 1024ULL)

static const struct smr_ns_cred cr = { .uid = 0 };

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int rmtree(const char *dir)
{
	char cmd[4200];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -EIO;
}

/* What U counts against, from the first run: the managed capacity (the
 * zones the allocator manages) and the size statfs reports. */
static uint64_t seen_capacity, seen_size;

struct result {
	double wa;
	uint64_t user, device, reloc, meta, zones_cleaned;
	double secs;
	int err;
	const char *phase; /* where err happened */
	uint64_t writes;   /* overwrites done */
	uint64_t short_steps; /* cleaner steps that ran out of room */
};

/* Where the space is when a run fails (BENCH_WA_DUMP set): the space
 * figures and each managed zone's live share, in tenths. */
static void dump(struct smr_cow *c, uint64_t writes)
{
	struct smr_cow_zstat z[64];
	struct smr_cow_space sp;
	uint32_t first = 0;
	int n;

	smr_cow_space(c, &sp);
	fprintf(stderr, "after %llu writes: free %llu MiB, reclaimable %llu "
		"MiB, reserved %llu MiB, used %llu MiB\nzones (live tenths, "
		". empty, M metadata):\n", (unsigned long long)writes,
		(unsigned long long)(sp.free >> 20),
		(unsigned long long)(sp.reclaimable >> 20),
		(unsigned long long)(sp.reserved >> 20),
		(unsigned long long)(sp.used >> 20));
	while ((n = smr_cow_zstat(c, first, 64, z)) > 0) {
		for (int i = 0; i < n; i++) {
			if (z[i].flags & SMR_COW_ZONE_META)
				fputc('M', stderr);
			else if (!z[i].written)
				fputc('.', stderr);
			else
				fputc('0' + (int)SMR_MIN(9, z[i].live * 10 /
						(int64_t)z[i].cap), stderr);
		}
		first += (uint32_t)n;
	}
	fputc('\n', stderr);
}

static int run(const char *base, unsigned int nzones, uint64_t zone,
	       unsigned int passes, unsigned int util, bool skew,
	       enum smr_cow_gc_policy pol, struct result *r)
{
	const char *max_open = getenv("BENCH_WA_MAX_OPEN");
	struct smr_zloop_params p = { .capacity = nzones * zone,
				      .zone_size = zone, .nr_cnv = 2 };
	struct smr_cow_opts o = { .gc_off = true, .gc_policy = (int)pol };
	const char *low = getenv("BENCH_WA_GC_LOW");
	const char *high = getenv("BENCH_WA_GC_HIGH");
	bool of_size = getenv("BENCH_WA_OF_SIZE") != NULL;
	const char *seed_env = getenv("BENCH_WA_SEED");
	struct smr_cow_gc_stats s0, s1;
	struct smr_cow_space sp;
	struct smr_dev *dev = NULL;
	struct smr_cow *c = NULL;
	struct smr_ns *ns = NULL;
	uint64_t *ino = NULL, nfiles, seed = 0x1234567 + util + skew, todo;
	struct timespec t0, t1;
	char path[4096];
	uint8_t *buf;
	int rc;

	memset(r, 0, sizeof(*r));
	if (seed_env)
		seed += strtoull(seed_env, NULL, 0) * 0x9e3779b97f4a7c15ULL;
	p.max_open = max_open ? (uint32_t)atoi(max_open) : 0;
	p.max_active = p.max_open;
	o.gc_low = low ? (unsigned int)atoi(low) : 0;
	o.gc_high = high ? (unsigned int)atoi(high) : 0;
	snprintf(path, sizeof(path), "%s/bench_wa.%d", base, (int)getpid());
	rmtree(path);
	buf = malloc(FILE_BYTES);
	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; i < FILE_BYTES; i++)
		buf[i] = (uint8_t)(i * 7 + 3);
	rc = smr_zloop_create(path, &p);
	if (!rc)
		rc = smr_dev_open(path, NULL, &dev);
	if (!rc)
		rc = smr_cow_format(dev, NULL, NULL);
	if (dev)
		smr_dev_close(dev);
	dev = NULL;
	if (!rc)
		rc = smr_dev_open(path, NULL, &dev);
	if (!rc)
		rc = smr_cow_open(dev, &o, &c);
	if (!rc)
		rc = smr_ns_mkfs(c, &cr);
	if (!rc)
		rc = smr_ns_open(c, NULL, &ns);
	if (rc)
		goto out;

	r->phase = "fill";
	smr_cow_space(c, &sp);
	seen_capacity = sp.capacity;
	seen_size = smr_cow_space_size(&sp);
	nfiles = (of_size ? smr_cow_space_size(&sp) : sp.capacity) * util /
		 100 / FILE_BYTES;
	ino = calloc(nfiles, sizeof(*ino));
	if (!ino) {
		rc = -ENOMEM;
		goto out;
	}
	for (uint64_t i = 0; i < nfiles; i++) {
		struct smr_ns_attr a;
		char name[32];
		ssize_t n;

		snprintf(name, sizeof(name), "f%llu", (unsigned long long)i);
		rc = smr_ns_create(ns, &cr, SMR_NS_ROOT, name, 0100644, &a);
		if (rc)
			goto out;
		smr_ns_release(ns, a.ino);
		ino[i] = a.ino;
		n = smr_ns_write(ns, &cr, a.ino, 0, buf, FILE_BYTES);
		if (n != (ssize_t)FILE_BYTES) {
			rc = n < 0 ? (int)n : -ENOSPC;
			goto out;
		}
	}
	rc = smr_ns_sync(ns);
	if (rc)
		goto out;

	r->phase = "overwrite";
	smr_cow_gc_stats(c, &s0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	todo = (uint64_t)passes * nzones * zone / WRITE_BYTES;
	for (uint64_t w = 0; w < todo; w++) {
		uint64_t f, off;
		ssize_t n;

		if (skew && rnd(&seed) % 10 != 0)
			f = rnd(&seed) % (nfiles / 10 ? nfiles / 10 : 1);
		else
			f = rnd(&seed) % nfiles;
		off = rnd(&seed) % (FILE_BYTES / WRITE_BYTES) * WRITE_BYTES;
		r->writes = w;
		rc = smr_cow_clean_auto(c);
		if (rc == -ENOSPC)
			r->short_steps++;
		else if (rc < 0)
			goto out;
		n = smr_ns_write(ns, &cr, ino[f], off, buf, WRITE_BYTES);
		if (n != (ssize_t)WRITE_BYTES) {
			rc = n < 0 ? (int)n : -ENOSPC;
			goto out;
		}
	}
	rc = smr_ns_sync(ns);
	if (rc)
		goto out;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	smr_cow_gc_stats(c, &s1);
	r->user = s1.user_bytes - s0.user_bytes;
	r->device = s1.device_bytes - s0.device_bytes;
	r->reloc = s1.reloc_bytes - s0.reloc_bytes;
	r->meta = s1.meta_bytes - s0.meta_bytes;
	r->zones_cleaned = s1.gc_zones - s0.gc_zones;
	r->wa = r->user ? (double)r->device / (double)r->user : 0;
	r->secs = (double)(t1.tv_sec - t0.tv_sec) +
		  (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
out:
	r->err = rc;
	if (rc && c && getenv("BENCH_WA_DUMP"))
		dump(c, r->writes);
	smr_ns_close(ns);
	if (c)
		smr_cow_close(c);
	if (dev)
		smr_dev_close(dev);
	rmtree(path);
	free(ino);
	free(buf);
	return rc;
}

int main(int argc, char **argv)
{
	const char *base = argc > 1 ? argv[1] :
			   getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	unsigned int nzones = argc > 2 ? (unsigned int)atoi(argv[2]) : 64;
	uint64_t zone = (argc > 3 ? (uint64_t)atoi(argv[3]) : 4) * SMR_MIB;
	unsigned int passes = argc > 4 ? (unsigned int)atoi(argv[4]) : 3;
	static const unsigned int utils[] = { 50, 75, 90 };
	static const char *const pname[] = { "cost-benefit", "greedy" };
	const char *only_u = getenv("BENCH_WA_U");
	const char *only_skew = getenv("BENCH_WA_SKEW");
	const char *only_pol = getenv("BENCH_WA_POLICY");
	char notes[4096] = "";
	size_t nl = 0;

	smr_log_set_level(SMR_LOG_WARN);
	printf("%u zones of %llu MiB, %llu KiB random overwrites of 1 MiB "
	       "files, %u device sizes, U of the %s\n\n", nzones,
	       (unsigned long long)(zone / SMR_MIB),
	       (unsigned long long)(WRITE_BYTES / 1024), passes,
	       getenv("BENCH_WA_OF_SIZE") ? "size statfs reports" :
					    "managed capacity");
	printf("| workload | U | policy | WA | relocated / user | metadata / user | zones cleaned | seconds |\n");
	printf("|---|---|---|---|---|---|---|---|\n");
	for (int skew = 0; skew < 2; skew++) {
		if (only_skew && atoi(only_skew) != skew)
			continue;
		for (unsigned int u = 0; u < 3; u++) {
			unsigned int util = only_u ?
					    (unsigned int)atoi(only_u) :
					    utils[u];

			if (only_u && u)
				break;
			for (int pol = 1; pol >= 0; pol--) {
				struct result r;

				if (only_pol && strcmp(only_pol, pname[pol]))
					continue;

				run(base, nzones, zone, passes, util, skew,
				    (enum smr_cow_gc_policy)pol, &r);
				if (r.err)
					printf("| %s | %u%% | %s | %s in the %s | - | - | - | - |\n",
					       skew ? "hot/cold 90/10" :
						      "uniform",
					       util, pname[pol],
					       strerror(-r.err), r.phase);
				else
					printf("| %s | %u%% | %s | %.2f | %.2f | %.2f | %llu | %.1f |\n",
					       skew ? "hot/cold 90/10" :
						      "uniform",
					       util, pname[pol], r.wa,
					       (double)r.reloc / (double)r.user,
					       (double)r.meta / (double)r.user,
					       (unsigned long long)r.zones_cleaned,
					       r.secs);
				if (r.short_steps && nl < sizeof(notes))
					nl += (size_t)snprintf(
						notes + nl, sizeof(notes) - nl,
						"%s%s, %u%%, %s: %llu",
						nl ? "; " : "",
						skew ? "hot/cold" : "uniform",
						util, pname[pol],
						(unsigned long long)
							r.short_steps);
				fflush(stdout);
			}
		}
	}
	if (nl)
		printf("\nCleaner steps that ran out of room for their copies "
		       "(the run went on, as the background thread does): "
		       "%s\n", notes);
	if (seen_capacity)
		printf("\nU of the %s: the device has %llu MiB, the allocator "
		       "manages %llu MiB, statfs reports a size of %llu MiB\n",
		       getenv("BENCH_WA_OF_SIZE") ? "size statfs reports" :
						    "managed capacity",
		       (unsigned long long)(nzones * zone / SMR_MIB),
		       (unsigned long long)(seen_capacity / SMR_MIB),
		       (unsigned long long)(seen_size / SMR_MIB));
	return 0;
}
