/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stat.c - smrfsctl stat and smrfsctl zones: the figures of a filesystem,
 * mounted or not.
 *
 * A mount point of a running daemon is asked through the ioctls of
 * fuse/smrfs_ioctl.h on its root directory, so the figures are the live
 * ones. Anything else is a device: it is opened read-only (the device, the
 * engine and the namespace), read and closed. A device that a daemon holds
 * is opened shared and shows its last checkpoint.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cow/cow.h"
#include "ctl/ctl.h"
#include "dev/dev.h"
#include "fuse/smrfs_ioctl.h"
#include "namespace/ns.h"
#include "util/smr.h"

/* ------------------------------------------------------------------------
 * Where the figures come from
 * ------------------------------------------------------------------------ */

struct ctl_src {
	const char *path;
	const char *cmd;
	bool mounted;        /* a daemon answers on fd */
	bool busy;           /* a device in use, opened shared */
	int fd;
	struct smr_dev *dev;
	struct smr_cow *cow;
	struct smr_ns *ns;
};

/* Is @path the mount point of a FUSE filesystem? smrfs mounts show as
 * fuse.smrfs (or fuse.SUBTYPE with -o subtype); the ioctl's answer tells
 * whether it is really smrfs. */
static bool is_fuse_mount(const char *path)
{
	char real[PATH_MAX], type[64];

	return realpath(path, real) &&
	       !smr_mountinfo_find(real, type, sizeof(type), NULL, 0) &&
	       !strncmp(type, "fuse", 4);
}

static int src_open(struct ctl_src *s, const char *cmd, const char *path)
{
	struct smr_dev_opts dopts = { .read_only = true };
	struct smr_cow_opts copts = { .read_only = true };
	char what[PATH_MAX + 64];
	struct stat sb;
	int rc;

	memset(s, 0, sizeof(*s));
	s->fd = -1;
	s->path = path;
	s->cmd = cmd;
	snprintf(what, sizeof(what), "%s %s", cmd, path);

	if (is_fuse_mount(path)) {
		s->fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (s->fd < 0)
			return ctl_fail(cmd, what, -errno);
		s->mounted = true;
		return 0;
	}

	rc = smr_dev_open(path, &dopts, &s->dev);
	if (rc == -EBUSY) {
		/* A daemon holds it: read the last checkpoint beside it. */
		ctl_clear_log();
		dopts.shared = true;
		s->busy = true;
		rc = smr_dev_open(path, &dopts, &s->dev);
	}
	if (rc == -EINVAL && !stat(path, &sb) && S_ISDIR(sb.st_mode)) {
		fprintf(stderr,
			"smrfsctl: %s: neither a mounted smrfs nor a zoned "
			"loop directory\n",
			what);
		return 1;
	}
	if (rc)
		return ctl_fail(cmd, what, rc);
	rc = smr_cow_open(s->dev, &copts, &s->cow);
	if (rc) {
		smr_dev_close(s->dev);
		if (rc == -EINVAL) {
			fprintf(stderr,
				"smrfsctl: %s: not an smrfs filesystem (nor "
				"the mount point of one)\n",
				what);
			return 1;
		}
		return ctl_fail(cmd, what, rc);
	}
	/* The inode count only; stat works without it. */
	if (smr_ns_open(s->cow, NULL, &s->ns))
		s->ns = NULL;
	ctl_clear_log();
	return 0;
}

static void src_close(struct ctl_src *s)
{
	if (s->fd >= 0)
		close(s->fd);
	smr_ns_close(s->ns);
	if (s->cow)
		smr_cow_close(s->cow);
	smr_dev_close(s->dev);
}

/* The daemon did not answer an ioctl: one line saying what that means. */
static int ioc_fail(struct ctl_src *s, int err)
{
	if (err == ENOTTY || err == ENOSYS || err == EINVAL)
		fprintf(stderr,
			"smrfsctl: %s %s: the filesystem mounted there does "
			"not answer smrfs's ioctls (not smrfs, or a daemon of "
			"another version)\n",
			s->cmd, s->path);
	else
		fprintf(stderr, "smrfsctl: %s %s: %s\n", s->cmd, s->path,
			strerror(err));
	return 1;
}

static int src_fsstat(struct ctl_src *s, struct smr_cow_fsstat *st,
		      uint64_t *inodes)
{
	struct smrfs_ioc_stat io;

	*inodes = 0;
	if (!s->mounted) {
		if (s->ns)
			return smr_ns_fsstat(s->ns, st, inodes) ? 1 : 0;
		smr_cow_fsstat(s->cow, st);
		return 0;
	}
	memset(&io, 0, sizeof(io));
	if (ioctl(s->fd, SMRFS_IOC_STAT, &io) < 0)
		return ioc_fail(s, errno);
	if (io.version != SMRFS_IOC_VERSION)
		return ioc_fail(s, EINVAL);
	smrfs_ioc_stat_unpack(&io, st, inodes);
	return 0;
}

/* Every zone into *@zp (malloc'd), their number into *@nr. */
static int src_zones(struct ctl_src *s, struct smr_cow_zstat **zp,
		     uint32_t *nr)
{
	struct smr_cow_fsstat st;
	struct smr_cow_zstat *z;
	struct smrfs_ioc_zones *io = NULL;
	uint64_t inodes;
	uint32_t n = 0;
	int rc;

	if (src_fsstat(s, &st, &inodes))
		return 1;
	if (!st.zoned || !st.nr_zones) {
		fprintf(stderr,
			"smrfsctl: %s %s: not a zoned device (%s): it has no "
			"zones to show\n",
			s->cmd, s->path, st.dev_kind[0] ? st.dev_kind : "?");
		return 1;
	}
	z = calloc(st.nr_zones, sizeof(*z));
	if (!z)
		return ctl_fail(s->cmd, "out of memory", -ENOMEM);
	if (!s->mounted) {
		rc = smr_cow_zstat(s->cow, 0, st.nr_zones, z);
		if (rc < 0) {
			free(z);
			return ctl_fail(s->cmd, s->path, rc);
		}
		n = (uint32_t)rc;
		goto out;
	}
	/* A page of zones per call: the kernel bounds an ioctl's buffer. */
	io = malloc(sizeof(*io));
	if (!io) {
		free(z);
		return ctl_fail(s->cmd, "out of memory", -ENOMEM);
	}
	while (n < st.nr_zones) {
		memset(io, 0, offsetof(struct smrfs_ioc_zones, z));
		io->version = SMRFS_IOC_VERSION;
		io->first = n;
		if (ioctl(s->fd, SMRFS_IOC_ZONES, io) < 0) {
			rc = errno;
			free(io);
			free(z);
			return ioc_fail(s, rc);
		}
		if (!io->count || io->count > SMRFS_IOC_ZONES_MAX)
			break;
		for (uint32_t i = 0; i < io->count && n < st.nr_zones; i++) {
			const struct smrfs_ioc_zone *w = &io->z[i];

			z[n].start = w->start;
			z[n].len = w->len;
			z[n].cap = w->cap;
			z[n].written = w->written;
			z[n].live = w->live;
			z[n].type = w->type;
			z[n].cond = w->cond;
			z[n].flags = w->flags;
			n++;
		}
	}
	free(io);
out:
	*zp = z;
	*nr = n;
	return 0;
}

/* ------------------------------------------------------------------------
 * Formatting
 * ------------------------------------------------------------------------ */

/* "1.50 GiB" */
static const char *fmt_size(char *buf, size_t len, uint64_t v)
{
	static const char *const units[] = { "B",   "KiB", "MiB", "GiB",
					     "TiB", "PiB", "EiB" };
	double d = (double)v;
	int u = 0;

	while (d >= 1024 && u < 6) {
		d /= 1024;
		u++;
	}
	if (!u)
		snprintf(buf, len, "%" PRIu64 " B", v);
	else
		snprintf(buf, len, "%.2f %s", d, units[u]);
	return buf;
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static const char *model_str(const struct smr_cow_fsstat *st)
{
	if (!st->zoned)
		return st->rotational ? "not zoned, rotational" :
					"not zoned, non-rotational";
	return st->host_aware ? "zoned, host-aware (driven as host-managed)" :
				"zoned, host-managed";
}

/* ------------------------------------------------------------------------
 * smrfsctl stat
 * ------------------------------------------------------------------------ */

static const char stat_help[] =
	"Usage: smrfsctl stat MOUNTPOINT|DEVICE [--json]\n"
	"\n"
	"Show the device kind and backend, the allocator module and why it\n"
	"was chosen, the zones (total, free, open, active, full, conventional,\n"
	"superblock and checkpoint zones), the space (capacity, used, free,\n"
	"reclaimable, reserved, and the size and available space statfs\n"
	"reports), block and node size, label, UUID, checkpoint\n"
	"generation, inodes and the allocator's counters since mkfs.\n"
	"\n"
	"A mount point is asked through the running daemon; a device (zoned\n"
	"loop directory, zoned block device, file) is opened read-only. A\n"
	"device a daemon holds shows its last checkpoint.\n"
	"\n"
	"  --json    one JSON object instead of text\n";

static void stat_json(FILE *f, const struct ctl_src *s,
		      const struct smr_cow_fsstat *st, uint64_t inodes)
{
	static const char *const streams[] = { "meta", "hot", "cold",
					       "relocation" };
	char uuid[SMR_UUID_STR_LEN];

	smr_uuid_format(st->info.uuid, uuid);
	fputs("{\n  \"source\": ", f);
	json_str(f, s->path);
	fprintf(f, ",\n  \"mounted\": %s,\n", s->mounted ? "true" : "false");
	fprintf(f, "  \"device_kind\": ");
	json_str(f, st->dev_kind);
	fprintf(f, ",\n  \"backend\": ");
	json_str(f, st->backend);
	fprintf(f, ",\n  \"zoned\": %s,\n  \"host_aware\": %s,\n"
		   "  \"rotational\": %s,\n  \"read_only\": %s,\n",
		st->zoned ? "true" : "false",
		st->host_aware ? "true" : "false",
		st->rotational ? "true" : "false",
		s->mounted && st->read_only ? "true" : "false");
	fprintf(f, "  \"allocator\": ");
	json_str(f, st->info.alloc);
	fprintf(f, ",\n  \"allocator_reason\": ");
	json_str(f, st->info.alloc_why);
	fprintf(f, ",\n  \"label\": ");
	json_str(f, st->info.label);
	fprintf(f, ",\n  \"uuid\": \"%s\",\n", uuid);
	fprintf(f, "  \"generation\": %" PRIu64 ",\n", st->info.gen);
	fprintf(f, "  \"format_version\": \"%u.%u\",\n", st->info.format_major,
		st->info.format_minor);
	fprintf(f, "  \"block_size\": %u,\n  \"node_size\": %u,\n",
		st->info.block_size, st->info.node_size);
	fprintf(f,
		"  \"zones_total\": %u,\n  \"zones_free\": %u,\n"
		"  \"zones_open\": %u,\n  \"zones_active\": %u,\n"
		"  \"zones_full\": %u,\n  \"zones_conventional\": %u,\n"
		"  \"zones_meta\": %u,\n  \"max_open_zones\": %u,\n"
		"  \"max_active_zones\": %u,\n  \"zone_size\": %" PRIu64 ",\n"
		"  \"zone_capacity\": %" PRIu64 ",\n",
		st->nr_zones, st->zones_free, st->zones_open, st->zones_active,
		st->zones_full, st->nr_cnv_zones, st->zones_meta, st->max_open,
		st->max_active, st->zone_size, st->zone_cap);
	fprintf(f,
		"  \"device_bytes\": %" PRIu64 ",\n"
		"  \"data_start\": %" PRIu64 ",\n"
		"  \"capacity_bytes\": %" PRIu64 ",\n"
		"  \"used_bytes\": %" PRIu64 ",\n"
		"  \"free_bytes\": %" PRIu64 ",\n"
		"  \"reclaimable_bytes\": %" PRIu64 ",\n"
		"  \"reserved_bytes\": %" PRIu64 ",\n"
		"  \"overhead_bytes\": %" PRIu64 ",\n"
		"  \"size_bytes\": %" PRIu64 ",\n"
		"  \"available_bytes\": %" PRIu64 ",\n"
		"  \"inodes\": %" PRIu64 ",\n",
		st->info.capacity, st->info.data_start, st->space.capacity,
		st->space.used, st->space.free, st->space.reclaimable,
		st->space.reserved, st->space.overhead,
		smr_cow_space_size(&st->space),
		smr_cow_space_avail(&st->space), inodes);
	fputs("  \"bytes_allocated\": {", f);
	for (int i = 0; i < 4; i++)
		fprintf(f, "%s\"%s\": %" PRIu64, i ? ", " : " ", streams[i],
			st->bytes_allocated[i]);
	fprintf(f,
		" },\n  \"bytes_freed\": %" PRIu64 ",\n"
		"  \"allocations\": %" PRIu64 ",\n"
		"  \"zones_reset\": %" PRIu64 ",\n"
		"  \"zones_finished\": %" PRIu64 ",\n"
		"  \"commits\": %" PRIu64 ",\n"
		"  \"nodes_written\": %" PRIu64 ",\n"
		"  \"fsync_log_records\": %" PRIu64,
		st->bytes_freed, st->nr_allocs, st->zones_reset,
		st->zones_finished, st->commits, st->nodes_written,
		st->log_records);
	if (st->has_gc) {
		fprintf(f,
			",\n  \"user_bytes_written\": %" PRIu64 ",\n"
			"  \"device_bytes_written\": %" PRIu64 ",\n"
			"  \"relocated_bytes\": %" PRIu64 ",\n"
			"  \"zones_cleaned\": %" PRIu64 ",\n"
			"  \"cleaner_runs\": %" PRIu64 ",\n"
			"  \"cleaner_seconds\": %.3f,\n"
			"  \"write_amplification\": ",
			st->user_bytes, st->device_bytes, st->reloc_bytes,
			st->gc_zones, st->gc_runs, (double)st->gc_usecs / 1e6);
		/* Undefined before any user data: null, not a made-up 0. */
		if (st->user_bytes)
			fprintf(f, "%.4f", (double)st->device_bytes /
						   (double)st->user_bytes);
		else
			fputs("null", f);
	}
	fputs("\n}\n", f);
}

static void stat_line(FILE *f, const char *what, uint64_t v,
		      const char *note)
{
	char b[32];

	fprintf(f, "  %-12s %12s  (%" PRIu64 " bytes)%s%s\n", what,
		fmt_size(b, sizeof(b), v), v, note ? "  " : "",
		note ? note : "");
}

static void stat_text(FILE *f, const struct ctl_src *s,
		      const struct smr_cow_fsstat *st, uint64_t inodes)
{
	char uuid[SMR_UUID_STR_LEN], b1[32], b2[32];

	smr_uuid_format(st->info.uuid, uuid);
	fprintf(f, "%s: smrfs%s\n", s->path,
		s->mounted ? ", mounted (figures from the daemon)" :
		s->busy ? ", in use (figures of the last checkpoint)" :
			  ", not mounted");
	fprintf(f, "  %-12s %s, backend %s, %s%s\n", "device", st->dev_kind,
		st->backend, model_str(st),
		st->read_only && s->mounted ? ", read-only" : "");
	/* The reason usually names the module already. */
	if (!strncmp(st->info.alloc_why, "allocator ", 10))
		fprintf(f, "  %-12s %s\n", "allocator", st->info.alloc_why + 10);
	else
		fprintf(f, "  %-12s %s: %s\n", "allocator", st->info.alloc,
			st->info.alloc_why[0] ? st->info.alloc_why :
						"(no reason kept)");
	fprintf(f, "  %-12s %s\n", "label",
		st->info.label[0] ? st->info.label : "(none)");
	fprintf(f, "  %-12s %s\n", "uuid", uuid);
	fprintf(f, "  %-12s %" PRIu64 "\n", "generation", st->info.gen);
	fprintf(f, "  %-12s %u.%u\n", "format", st->info.format_major,
		st->info.format_minor);
	fprintf(f, "  %-12s %u bytes, node %u bytes\n", "block size",
		st->info.block_size, st->info.node_size);
	if (st->zoned) {
		fprintf(f,
			"  %-12s %u total: %u free, %u full, %u open, %u "
			"active; %u conventional; %u kept for superblocks "
			"and checkpoints\n",
			"zones", st->nr_zones, st->zones_free, st->zones_full,
			st->zones_open, st->zones_active, st->nr_cnv_zones,
			st->zones_meta);
		fprintf(f, "  %-12s size %s, capacity %s; ", "",
			fmt_size(b1, sizeof(b1), st->zone_size),
			fmt_size(b2, sizeof(b2), st->zone_cap));
		if (st->max_open)
			fprintf(f, "max open %u, ", st->max_open);
		else
			fputs("no open limit, ", f);
		if (st->max_active)
			fprintf(f, "max active %u\n", st->max_active);
		else
			fputs("no active limit\n", f);
	} else {
		fprintf(f, "  %-12s none (not a zoned device)\n", "zones");
	}
	stat_line(f, "device", st->info.capacity, NULL);
	stat_line(f, "capacity", st->space.capacity,
		  "managed by the allocator");
	stat_line(f, "used", st->space.used, "live data and metadata");
	stat_line(f, "free", st->space.free, "writable now");
	stat_line(f, "reclaimable", st->space.reclaimable,
		  "back after a commit or cleaning");
	stat_line(f, "reserved", st->space.reserved,
		  "for metadata and the cleaner");
	stat_line(f, "size", smr_cow_space_size(&st->space),
		  "what statfs reports: users can fill it and keep "
		  "overwriting");
	stat_line(f, "available", smr_cow_space_avail(&st->space),
		  "of that size, as statfs reports it");
	if (s->ns || s->mounted)
		fprintf(f, "  %-12s %" PRIu64 "\n", "inodes", inodes);
	fprintf(f, "allocator counters (since mkfs):\n");
	fprintf(f, "  %-12s meta %s, hot %s,\n", "allocated",
		fmt_size(b1, sizeof(b1), st->bytes_allocated[0]),
		fmt_size(b2, sizeof(b2), st->bytes_allocated[1]));
	fprintf(f, "  %-12s cold %s, relocation %s\n", "",
		fmt_size(b1, sizeof(b1), st->bytes_allocated[2]),
		fmt_size(b2, sizeof(b2), st->bytes_allocated[3]));
	fprintf(f, "  %-12s %s in %" PRIu64 " allocations\n", "freed",
		fmt_size(b1, sizeof(b1), st->bytes_freed), st->nr_allocs);
	fprintf(f, "  %-12s %" PRIu64 " reset, %" PRIu64 " finished\n",
		"zones", st->zones_reset, st->zones_finished);
	if (st->has_gc) {
		fprintf(f, "writes and cleaning (since mkfs):\n");
		fprintf(f, "  %-12s %s by users, %s to the device", "written",
			fmt_size(b1, sizeof(b1), st->user_bytes),
			fmt_size(b2, sizeof(b2), st->device_bytes));
		if (st->user_bytes)
			fprintf(f, ": write amplification %.2f",
				(double)st->device_bytes /
					(double)st->user_bytes);
		fputs("\n", f);
		fprintf(f, "  %-12s %s relocated; %" PRIu64 " zones emptied "
			   "of %" PRIu64 " tried in %.1f s\n",
			"cleaner", fmt_size(b1, sizeof(b1), st->reloc_bytes),
			st->gc_zones, st->gc_runs, (double)st->gc_usecs / 1e6);
	}
	fprintf(f, "engine (since %s): %" PRIu64 " commits, %" PRIu64
		   " nodes written, %" PRIu64 " fsync log records\n",
		s->mounted ? "mount" : "this open", st->commits,
		st->nodes_written, st->log_records);
}

static bool want_help_arg(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return true;
	return false;
}

int cmd_stat(int argc, char **argv)
{
	struct smr_cow_fsstat st;
	const char *path = NULL;
	struct ctl_src s;
	bool json = false;
	uint64_t inodes;
	int rc;

	if (want_help_arg(argc, argv)) {
		fputs(stat_help, stdout);
		return 0;
	}
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = true;
		else if (argv[i][0] == '-')
			return ctl_usage_error("stat: unknown option '%s'",
					       argv[i]);
		else if (path)
			return ctl_usage_error("stat: one MOUNTPOINT or DEVICE, "
					       "not also '%s'",
					       argv[i]);
		else
			path = argv[i];
	}
	if (!path)
		return ctl_usage_error("%s",
				       "stat: expected MOUNTPOINT or DEVICE");
	rc = src_open(&s, "stat", path);
	if (rc)
		return rc;
	rc = src_fsstat(&s, &st, &inodes);
	if (!rc) {
		if (json)
			stat_json(stdout, &s, &st, inodes);
		else
			stat_text(stdout, &s, &st, inodes);
	}
	src_close(&s);
	if (!rc && (fflush(stdout) || ferror(stdout))) {
		fprintf(stderr, "smrfsctl: stat: write error\n");
		rc = 1;
	}
	return rc;
}

/* ------------------------------------------------------------------------
 * smrfsctl zones: the map
 * ------------------------------------------------------------------------ */

enum cell_kind {
	CELL_EMPTY,
	CELL_OPEN,
	CELL_LIVE,     /* written, not open: coloured by its live ratio */
	CELL_CNV,
	CELL_META,
	CELL_BAD,      /* offline or read-only */
	CELL_NR
};

struct cell {
	enum cell_kind kind;
	double ratio;  /* CELL_LIVE: live / written, 0..1 */
};

static struct cell zone_cell(const struct smr_cow_zstat *z)
{
	struct cell c = { CELL_LIVE, 0 };

	if (z->flags & SMR_COW_ZONE_META)
		c.kind = CELL_META;
	else if (z->type == SMR_ZONE_TYPE_CNV)
		c.kind = CELL_CNV;
	else if (z->cond == SMR_ZONE_COND_OFFLINE ||
		 z->cond == SMR_ZONE_COND_READONLY)
		c.kind = CELL_BAD;
	else if (z->cond == SMR_ZONE_COND_EMPTY)
		c.kind = CELL_EMPTY;
	else if (z->cond == SMR_ZONE_COND_IMP_OPEN ||
		 z->cond == SMR_ZONE_COND_EXP_OPEN)
		c.kind = CELL_OPEN;
	if (c.kind == CELL_LIVE || c.kind == CELL_OPEN) {
		uint64_t live = z->live > 0 ? (uint64_t)z->live : 0;

		c.ratio = z->written ? (double)live / (double)z->written : 0;
		if (c.ratio > 1)
			c.ratio = 1;
	}
	return c;
}

/* The live-ratio gradient, dead red through amber to live green. */
static void ratio_rgb(double r, int rgb[3])
{
	/* Hue 0 (red) .. 130 (green), full saturation, lightness 45%. */
	double h = r * 130.0, s = 0.75, l = 0.47;
	double c = (1 - (2 * l - 1 < 0 ? -(2 * l - 1) : 2 * l - 1)) * s;
	double hp = h / 60.0, x, m = l - c / 2, rr = 0, gg = 0, bb = 0;
	double t = hp - 2.0 * (int)(hp / 2.0) - 1.0;

	x = c * (1 - (t < 0 ? -t : t));
	if (hp < 1)
		rr = c, gg = x;
	else if (hp < 2)
		rr = x, gg = c;
	else
		gg = c, bb = x;
	rgb[0] = (int)((rr + m) * 255 + 0.5);
	rgb[1] = (int)((gg + m) * 255 + 0.5);
	rgb[2] = (int)((bb + m) * 255 + 0.5);
}

static const int kind_rgb[CELL_NR][3] = {
	[CELL_EMPTY] = { 0xe5, 0xe7, 0xeb },
	[CELL_OPEN] = { 0x25, 0x63, 0xeb },
	[CELL_LIVE] = { 0, 0, 0 },
	[CELL_CNV] = { 0x9c, 0xa3, 0xaf },
	[CELL_META] = { 0x93, 0x33, 0xea },
	[CELL_BAD] = { 0x11, 0x18, 0x27 },
};

static void cell_rgb(const struct cell *c, int rgb[3])
{
	if (c->kind == CELL_LIVE) {
		ratio_rgb(c->ratio, rgb);
		return;
	}
	for (int i = 0; i < 3; i++)
		rgb[i] = kind_rgb[c->kind][i];
}

/* The cell's character: a digit for tenths live ('#' all live). */
static char cell_char(const struct cell *c)
{
	int d;

	switch (c->kind) {
	case CELL_EMPTY: return '.';
	case CELL_OPEN: return 'o';
	case CELL_CNV: return 'C';
	case CELL_META: return 'M';
	case CELL_BAD: return 'X';
	default:
		break;
	}
	d = (int)(c->ratio * 10);
	return d >= 10 ? '#' : (char)('0' + d);
}

/* xterm's 256-colour cube index nearest to @rgb. */
static int rgb_256(const int rgb[3])
{
	int q[3];

	for (int i = 0; i < 3; i++)
		q[i] = rgb[i] < 48 ? 0 : rgb[i] < 115 ? 1 : (rgb[i] - 35) / 40;
	return 16 + 36 * q[0] + 6 * q[1] + q[2];
}

static void put_cell(FILE *f, const struct cell *c, bool colour)
{
	int rgb[3];

	if (!colour) {
		fputc(cell_char(c), f);
		return;
	}
	if (c->kind == CELL_EMPTY) {
		/* Empty zones stay in the terminal's own background. */
		fprintf(f, "\033[38;5;245m%c\033[0m", cell_char(c));
		return;
	}
	cell_rgb(c, rgb);
	/* Dark text on light cells, light text on dark ones. */
	fprintf(f, "\033[48;5;%d;38;5;%dm%c\033[0m", rgb_256(rgb),
		rgb[0] * 3 + rgb[1] * 6 + rgb[2] > 1200 ? 16 : 231,
		cell_char(c));
}

struct zone_totals {
	uint32_t n[CELL_NR];
	uint32_t full, dead_zones;
	uint64_t live, written;
};

static void zone_totals(const struct smr_cow_zstat *z, uint32_t nr,
			struct zone_totals *t)
{
	memset(t, 0, sizeof(*t));
	for (uint32_t i = 0; i < nr; i++) {
		struct cell c = zone_cell(&z[i]);

		t->n[c.kind]++;
		if (c.kind != CELL_LIVE && c.kind != CELL_OPEN)
			continue;
		if (z[i].cond == SMR_ZONE_COND_FULL)
			t->full++;
		t->written += z[i].written;
		if (z[i].live > 0)
			t->live += (uint64_t)z[i].live;
		if (z[i].live >= 0 && (uint64_t)z[i].live < z[i].written)
			t->dead_zones++;
	}
}

static unsigned int term_width(bool tty)
{
	struct winsize ws;
	const char *cols = getenv("COLUMNS");

	if (tty && !ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) && ws.ws_col)
		return ws.ws_col;
	if (cols && atoi(cols) > 0)
		return (unsigned int)atoi(cols);
	return 80;
}

/* The cells of a zone map that are not coloured by live ratio, in the
 * order both legends (terminal and SVG) list them. */
static const struct {
	enum cell_kind kind;
	const char *what;
} legend[] = {
	{ CELL_EMPTY, "empty" },
	{ CELL_OPEN, "open" },
	{ CELL_CNV, "conventional" },
	{ CELL_META, "superblock/checkpoint" },
	{ CELL_BAD, "offline/read-only" },
};

static void zones_text(FILE *f, const struct ctl_src *s,
		       const struct smr_cow_zstat *z, uint32_t nr, bool colour,
		       unsigned int width)
{
	struct zone_totals t;
	unsigned int per_row;
	char b1[32], b2[32];

	per_row = width > 12 ? width - 10 : 2;
	if (per_row >= 16)
		per_row -= per_row % 16;
	zone_totals(z, nr, &t);
	fprintf(f, "%s: %u zones of %s\n", s->path, nr,
		fmt_size(b1, sizeof(b1), nr ? z[nr - 1].len : 0));
	for (uint32_t i = 0; i < nr; i++) {
		struct cell c = zone_cell(&z[i]);

		if (i % per_row == 0)
			fprintf(f, "%s%8u ", i ? "\n" : "", i);
		put_cell(f, &c, colour);
	}
	fputs("\n", f);

	fputs("legend:", f);
	for (size_t i = 0; i < SMR_ARRAY_SIZE(legend); i++) {
		struct cell c = { legend[i].kind, 0 };

		fputs("  ", f);
		put_cell(f, &c, colour);
		fprintf(f, " %s", legend[i].what);
	}
	fputs("\nlegend:  ", f);
	for (int d = 0; d <= 10; d++) {
		struct cell c = { CELL_LIVE, d / 10.0 };

		put_cell(f, &c, colour);
	}
	fputs(" written zones by live share of what was written: 0 = under"
	      " 10%, 9 = 90% or more, # = all\n",
	      f);
	fprintf(f,
		"totals: %u zones: %u empty, %u open, %u written (%u full), "
		"%u conventional, %u superblock/checkpoint",
		nr, t.n[CELL_EMPTY], t.n[CELL_OPEN], t.n[CELL_LIVE],
		t.full, t.n[CELL_CNV], t.n[CELL_META]);
	if (t.n[CELL_BAD])
		fprintf(f, ", %u offline/read-only", t.n[CELL_BAD]);
	fprintf(f, "\ntotals: live %s of %s written (%.0f%%); %u written "
		   "zones (open ones too) hold dead data\n",
		fmt_size(b1, sizeof(b1), t.live),
		fmt_size(b2, sizeof(b2), t.written),
		t.written ? 100.0 * (double)t.live / (double)t.written : 0.0,
		t.dead_zones);
}

static void xml_str(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		default: fputc(*s, f);
		}
	}
}

static const char *cond_word(uint8_t cond)
{
	switch (cond) {
	case SMR_ZONE_COND_NOT_WP: return "conventional";
	case SMR_ZONE_COND_EMPTY: return "empty";
	case SMR_ZONE_COND_IMP_OPEN: return "open";
	case SMR_ZONE_COND_EXP_OPEN: return "open (explicitly)";
	case SMR_ZONE_COND_CLOSED: return "closed";
	case SMR_ZONE_COND_FULL: return "full";
	case SMR_ZONE_COND_READONLY: return "read-only";
	case SMR_ZONE_COND_OFFLINE: return "offline";
	default: return "unknown";
	}
}

static void svg_rect(FILE *f, const char *cls, int x, int y, int w, int h,
		     const int rgb[3])
{
	fprintf(f,
		"<rect class=\"%s\" x=\"%d\" y=\"%d\" width=\"%d\" "
		"height=\"%d\" rx=\"%d\" fill=\"#%02x%02x%02x\"",
		cls, x, y, w, h, w >= 8 ? 2 : 0, rgb[0], rgb[1], rgb[2]);
}

/* The same map as a picture: a title, a grid of rectangles (one per zone,
 * class "z", with a tooltip), row labels, and a legend. */
static int zones_svg(const char *file, const struct ctl_src *s,
		     const struct smr_cow_zstat *z, uint32_t nr)
{
	const int margin = 24, label_w = 56, top = 70;
	char real[PATH_MAX];
	struct zone_totals t;
	int cols, rows, cell, gap, pitch, width, height, gy, x;
	char b1[32], b2[32];
	FILE *f;

	cols = nr <= 64 ? 16 : nr <= 4096 ? 64 : 256;
	if (nr < (uint32_t)cols)
		cols = (int)nr;
	cell = nr <= 64 ? 22 : nr <= 4096 ? 14 : 5;
	gap = nr <= 4096 ? 2 : 1;
	pitch = cell + gap;
	rows = (int)((nr + (uint32_t)cols - 1) / (uint32_t)cols);
	width = margin * 2 + label_w + cols * pitch;
	if (width < 620)
		width = 620;
	gy = top + rows * pitch + 24;
	height = gy + 110;
	x = margin;
	for (size_t i = 0; i < SMR_ARRAY_SIZE(legend); i++) {
		int w = 20 + 7 * (int)strlen(legend[i].what) + 18;

		if (x > margin && x + w > width - margin) {
			x = margin;
			height += 22;
		}
		x += w;
	}

	f = fopen(file, "w");
	if (!f)
		return ctl_fail("zones", file, -errno);
	zone_totals(z, nr, &t);
	fprintf(f,
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
		"height=\"%d\" viewBox=\"0 0 %d %d\" "
		"font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n",
		width, height, width, height);
	if (!realpath(s->path, real))
		snprintf(real, sizeof(real), "%s", s->path);
	fprintf(f, "<title>smrfs zones of ");
	xml_str(f, real);
	fprintf(f, "</title>\n"
		   "<rect class=\"bg\" width=\"100%%\" height=\"100%%\" "
		   "fill=\"#ffffff\"/>\n");
	fprintf(f, "<text x=\"%d\" y=\"32\" font-size=\"18\" "
		   "font-weight=\"bold\" fill=\"#111827\">smrfs zones: ",
		margin);
	xml_str(f, real);
	fprintf(f, "</text>\n");
	fprintf(f,
		"<text x=\"%d\" y=\"54\" font-size=\"12\" fill=\"#4b5563\">"
		"%u zones of %s; live %s of %s written (%.0f%%); %u empty, "
		"%u open, %u written</text>\n",
		margin, nr, fmt_size(b1, sizeof(b1), nr ? z[nr - 1].len : 0),
		fmt_size(b2, sizeof(b2), t.live),
		fmt_size((char[32]){ 0 }, 32, t.written),
		t.written ? 100.0 * (double)t.live / (double)t.written : 0.0,
		t.n[CELL_EMPTY], t.n[CELL_OPEN], t.n[CELL_LIVE]);

	for (int r = 0; r < rows; r++) {
		if (rows <= 64 || r % 8 == 0)
			fprintf(f,
				"<text x=\"%d\" y=\"%d\" font-size=\"%d\" "
				"text-anchor=\"end\" fill=\"#6b7280\">%d"
				"</text>\n",
				margin + label_w - 6,
				top + r * pitch + cell - (cell > 8 ? 3 : 0),
				cell > 8 ? 10 : 8, r * cols);
	}
	for (uint32_t i = 0; i < nr; i++) {
		struct cell c = zone_cell(&z[i]);
		int rgb[3];

		cell_rgb(&c, rgb);
		svg_rect(f, "z", margin + label_w + (int)(i % (uint32_t)cols) * pitch,
			 top + (int)(i / (uint32_t)cols) * pitch, cell, cell, rgb);
		if (nr > 4096) {
			/* No tooltips: they would triple the file. */
			fputs("/>\n", f);
			continue;
		}
		fprintf(f, "><title>zone %u: %s", i, cond_word(z[i].cond));
		if (z[i].flags & SMR_COW_ZONE_META)
			fputs(", superblock/checkpoint", f);
		if (z[i].live >= 0)
			fprintf(f, ", live %s of %s written",
				fmt_size(b1, sizeof(b1), (uint64_t)z[i].live),
				fmt_size(b2, sizeof(b2), z[i].written));
		fputs("</title></rect>\n", f);
	}

	/* Legend: the marks (wrapped to the width), then the gradient. */
	x = margin;
	for (size_t i = 0; i < SMR_ARRAY_SIZE(legend); i++) {
		struct cell c = { legend[i].kind, 0 };
		int w = 20 + 7 * (int)strlen(legend[i].what) + 18;
		int rgb[3];

		if (x > margin && x + w > width - margin) {
			x = margin;
			gy += 22;
		}
		cell_rgb(&c, rgb);
		svg_rect(f, "legend", x, gy, 14, 14, rgb);
		fputs("/>\n", f);
		fprintf(f,
			"<text x=\"%d\" y=\"%d\" font-size=\"12\" "
			"fill=\"#111827\">%s</text>\n",
			x + 20, gy + 12, legend[i].what);
		x += w;
	}
	fprintf(f,
		"<text x=\"%d\" y=\"%d\" font-size=\"12\" fill=\"#111827\">"
		"written zones, by live share of what was written:</text>\n",
		margin, gy + 44);
	for (int d = 0; d <= 10; d++) {
		struct cell c = { CELL_LIVE, d / 10.0 };
		int rgb[3];

		cell_rgb(&c, rgb);
		svg_rect(f, "legend", margin + d * 30, gy + 54, 28, 14, rgb);
		fputs("/>\n", f);
	}
	fprintf(f,
		"<text x=\"%d\" y=\"%d\" font-size=\"11\" fill=\"#4b5563\">"
		"0%% live (all dead)</text>\n"
		"<text x=\"%d\" y=\"%d\" font-size=\"11\" fill=\"#4b5563\" "
		"text-anchor=\"end\">100%% live</text>\n",
		margin, gy + 84, margin + 11 * 30 - 2, gy + 84);
	fputs("</svg>\n", f);
	if (fclose(f)) {
		fprintf(stderr, "smrfsctl: zones: writing %s: %s\n", file,
			strerror(errno));
		return 1;
	}
	return 0;
}

static const char zones_help[] =
	"Usage: smrfsctl zones MOUNTPOINT|DEVICE [--svg FILE]\n"
	"\n"
	"Show every zone as one cell, wrapped to the terminal's width:\n"
	"  .  empty            o  open for writing\n"
	"  C  conventional     M  superblock or checkpoint zone\n"
	"  X  offline or read-only\n"
	"  0-9, #  a written zone by the share of what was written in it\n"
	"          that is still live: 0 under 10%, 9 at least 90%, # all\n"
	"On a terminal the cells are coloured too: a gradient from red (dead)\n"
	"to green (live). A legend and totals follow the map.\n"
	"\n"
	"  --svg FILE   also write the map as an SVG picture to FILE\n"
	"\n"
	"A mount point is asked through the running daemon; a device is\n"
	"opened read-only.\n";

int cmd_zones(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "svg", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *svg = NULL;
	struct smr_cow_zstat *z = NULL;
	struct ctl_src s;
	uint32_t nr = 0;
	bool tty;
	int c, rc;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		switch (c) {
		case 's':
			svg = optarg;
			break;
		case 'h':
			fputs(zones_help, stdout);
			return 0;
		default:
			return ctl_usage_error("zones: bad option '%s'",
					       argv[optind - 1]);
		}
	}
	if (optind != argc - 1)
		return ctl_usage_error("%s",
				       "zones: expected one MOUNTPOINT or DEVICE");
	rc = src_open(&s, "zones", argv[optind]);
	if (rc)
		return rc;
	rc = src_zones(&s, &z, &nr);
	if (!rc) {
		tty = isatty(STDOUT_FILENO);
		zones_text(stdout, &s, z, nr, tty, term_width(tty));
		if (svg)
			rc = zones_svg(svg, &s, z, nr);
	}
	free(z);
	src_close(&s);
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "smrfsctl: zones: write error\n");
		rc = 1;
	}
	return rc;
}
