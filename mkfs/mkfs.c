/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mkfs.c - mkfs.smrfs: make an smrfs filesystem.
 *
 *   mkfs.smrfs [-L label] [-U uuid] [-f] [-n] [-K] [--alloc NAME] DEVICE
 *
 * Refuses a device that already holds a filesystem (found by libblkid on a
 * regular file or block device, or smrfs's own superblock on any device)
 * unless -f. The engine formats the device (discarding it where it can,
 * unless -K, and resetting every sequential zone first); the root
 * directory is then made through the namespace layer and committed
 * through the same path the daemon uses. A dry run (-n) does
 * all of it on a scratch view of the device (dev/fault.h) that keeps the
 * writes in memory, so that it prints what a real run would.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cow/cow.h"
#include "dev/dev.h"
#include "dev/fault.h"
#include "mkfs/probe.h"
#include "namespace/ns.h"

#define PROG "mkfs.smrfs"

struct mkfs_opts {
	const char *dev;
	const char *label;
	const char *alloc;
	uint8_t uuid[16];
	bool have_uuid;
	bool force;
	bool dry_run;
	bool nodiscard;
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " [-L label] [-U uuid] [-f] [-n] [-K] [--alloc NAME] DEVICE\n"
		"\n"
		"Make an smrfs filesystem on DEVICE: a zoned loop directory, a\n"
		"regular file, a zoned block device or a block device. Every\n"
		"sequential zone is reset first, and the rest discarded where the\n"
		"device can (a regular file gets a hole); everything on DEVICE\n"
		"is lost.\n"
		"\n"
		"  -L, --label LABEL  filesystem label (up to 63 bytes)\n"
		"  -U, --uuid UUID    filesystem UUID (default: random)\n"
		"  -f, --force        format even if DEVICE holds a filesystem\n"
		"  -n, --dry-run      print what would be made; write nothing\n"
		"  -K, --nodiscard    do not discard the device first\n"
		"  -a, --alloc NAME   allocator: zoned, rotational or flash\n"
		"                     (default: chosen by the kind of device)\n"
		"  -h, --help         show this help\n"
		"  -V, --version      show the version\n"
		"\n"
		"Exit status: 0 made (or would be made), 1 error or refused.\n");
}

/* 1 if @dev holds an smrfs filesystem (its description in @what). */
static int smrfs_find(struct smr_dev *dev, char *what, size_t len)
{
	struct smr_cow_opts o = { .read_only = true };
	struct smr_cow_info info;
	struct smr_cow *c;
	char u[SMR_UUID_STR_LEN];
	int rc;

	/* Not finding one is the normal case: keep the engine quiet. */
	smr_log_set_level(SMR_LOG_ERR - 1);
	rc = smr_cow_open(dev, &o, &c);
	smr_log_set_level(SMR_LOG_INFO);
	if (rc)
		return 0;
	smr_cow_info(c, &info);
	snprintf(what, len, "an smrfs filesystem (label '%s', UUID %s)",
		 info.label, smr_uuid_format(info.uuid, u));
	smr_cow_close(c);
	return 1;
}

static int check_existing(const struct mkfs_opts *mo, struct smr_dev *dev)
{
	const struct smr_dev_info *di = smr_dev_info(dev);
	char what[160];
	int rc = 0;

	if (di->kind == SMR_DEV_KIND_FILE || di->kind == SMR_DEV_KIND_BDEV ||
	    di->kind == SMR_DEV_KIND_ZBD) {
		rc = smr_probe_other(mo->dev, what, sizeof(what));
		if (rc < 0) {
			fprintf(stderr, PROG ": %s: probing for filesystems: %s\n",
				mo->dev, strerror(-rc));
			return rc;
		}
	}
	if (rc == 0)
		rc = smrfs_find(dev, what, sizeof(what));
	if (rc == 0)
		return 0;
	if (mo->force) {
		printf("%s holds %s; %s it (-f).\n", mo->dev, what,
		       mo->dry_run ? "would overwrite" : "overwriting");
		return 0;
	}
	/* A dry run writes nothing, so there is nothing to protect: say what
	 * a real run would need and go on. */
	if (mo->dry_run) {
		printf("%s holds %s; a real run needs -f to overwrite it.\n",
		       mo->dev, what);
		return 0;
	}
	fprintf(stderr, PROG ": %s holds %s; use -f to overwrite it\n",
		mo->dev, what);
	return -EEXIST;
}

/* The engine's last error while formatting (a log sink takes no argument,
 * so this is the program's state, like its log settings). */
static char last_err[256];

static void keep_error_sink(enum smr_log_level level, const char *msg)
{
	if (level <= SMR_LOG_ERR)
		snprintf(last_err, sizeof(last_err), "%s", msg);
	else
		fprintf(stderr, "smrfs: %s\n", msg);
}

static void print_summary(const struct mkfs_opts *mo, struct smr_dev *dev,
			  const struct smr_cow_info *info,
			  const struct smr_cow_space *sp)
{
	const struct smr_dev_info *di = smr_dev_info(dev);
	char b1[32], b2[32], u[SMR_UUID_STR_LEN];

	smr_uuid_format(info->uuid, u);
	printf("%s %s: %s (%s), %s, block size %u\n",
	       mo->dry_run ? "Would make smrfs on" : "Made smrfs on", mo->dev,
	       smr_dev_kind_str(di->kind), di->backend,
	       smr_format_size(di->capacity, b1, sizeof(b1)), di->block_size);
	if (di->zoned)
		printf("  zones:      %u (%u conventional) of %s%s\n",
		       di->nr_zones, di->nr_cnv_zones,
		       smr_format_size(smr_dev_zone_len(dev, 0), b2,
				       sizeof(b2)),
		       di->host_aware ? ", host-aware driven as host-managed" :
					"");
	else
		printf("  zones:      none (conventional device%s)\n",
		       di->rotational ? ", rotational" : "");
	printf("  allocator:  %s\n",
	       info->alloc_why[0] ? info->alloc_why : info->alloc);
	printf("  format:     %u.%u, node size %u\n", info->format_major,
	       info->format_minor, info->node_size);
	printf("  label:      %s\n", info->label[0] ? info->label : "(none)");
	printf("  UUID:       %s\n", u);
	/* The size df will show: what users can fill and keep overwriting
	 * (the reserve and the cleaner's room are not theirs). */
	printf("  usable:     %s of %s managed\n",
	       smr_format_size(smr_cow_space_size(sp), b1, sizeof(b1)),
	       smr_format_size(sp->capacity, b2, sizeof(b2)));
}

static int make_fs(const struct mkfs_opts *mo)
{
	struct smr_dev_opts dopts = { .read_only = mo->dry_run,
				      .busy_wait = SMR_DEV_BUSY_WAIT };
	struct smr_format_opts fo = {
		.label = mo->label,
		.uuid = mo->have_uuid ? mo->uuid : NULL,
		.alloc = mo->alloc,
		/* (A dry run's view keeps its writes, and discards nothing.) */
		.discard = !mo->nodiscard && !mo->dry_run,
	};
	struct smr_ns_cred cr = { .uid = getuid(), .gid = getgid() };
	struct smr_cow_info info;
	struct smr_cow_space sp;
	struct smr_dev *dev, *target;
	struct smr_fault *scratch = NULL;
	struct smr_cow *cow;
	int rc;

	rc = smr_dev_open(mo->dev, &dopts, &dev);
	if (rc) {
		if (rc == -EBUSY)
			fprintf(stderr, PROG ": %s: in use (mounted?)\n",
				mo->dev);
		else if (rc == -EINVAL)
			fprintf(stderr, PROG ": %s: not a usable device\n",
				mo->dev);
		else
			fprintf(stderr, PROG ": %s: %s\n", mo->dev,
				strerror(-rc));
		return rc;
	}
	rc = check_existing(mo, dev);
	if (rc)
		goto out_dev;
	/* The device is open read-only for a dry run: the view writes
	 * nothing through to it. */
	target = dev;
	if (mo->dry_run) {
		rc = smr_fault_open_scratch(dev, &scratch, &target);
		if (rc) {
			fprintf(stderr, PROG ": %s: %s\n", mo->dev,
				strerror(-rc));
			goto out_dev;
		}
	}
	memset(&info, 0, sizeof(info));
	/* One line on failure, with the engine's reason in it. */
	last_err[0] = 0;
	smr_log_set_sink(keep_error_sink);
	rc = smr_cow_format(target, &fo, &info);
	smr_log_set_sink(NULL);
	if (rc) {
		char what[128];

		if (rc == -ENOENT && mo->alloc)
			snprintf(what, sizeof(what), "unknown allocator '%s'",
				 mo->alloc);
		else if (rc == -EINVAL && mo->alloc)
			snprintf(what, sizeof(what),
				 "allocator '%s' cannot be used here",
				 mo->alloc);
		else
			snprintf(what, sizeof(what), "cannot format: %s",
				 strerror(-rc));
		if (last_err[0])
			fprintf(stderr, PROG ": %s: %s (%s)\n", mo->dev, what,
				last_err);
		else
			fprintf(stderr, PROG ": %s: %s\n", mo->dev, what);
		goto out_target;
	}
	rc = smr_cow_open(target, NULL, &cow);
	if (rc) {
		fprintf(stderr, PROG ": %s: opening the new filesystem: %s\n",
			mo->dev, strerror(-rc));
		goto out_target;
	}
	rc = smr_ns_mkfs(cow, &cr);
	if (rc)
		fprintf(stderr, PROG ": %s: making the root directory: %s\n",
			mo->dev, strerror(-rc));
	smr_cow_info(cow, &info);
	smr_cow_space(cow, &sp);
	if (smr_cow_close(cow) && !rc) {
		fprintf(stderr, PROG ": %s: the last commit failed\n", mo->dev);
		rc = -EIO;
	}
	if (!rc)
		print_summary(mo, dev, &info, &sp);
out_target:
	if (scratch) {
		smr_dev_close(target);
		smr_fault_free(scratch);
	}
out_dev:
	if (smr_dev_close(dev) && !rc) {
		fprintf(stderr, PROG ": %s: flushing the device failed\n",
			mo->dev);
		rc = -EIO;
	}
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "label", required_argument, NULL, 'L' },
		{ "uuid", required_argument, NULL, 'U' },
		{ "force", no_argument, NULL, 'f' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "alloc", required_argument, NULL, 'a' },
		{ "nodiscard", no_argument, NULL, 'K' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct mkfs_opts mo = { 0 };
	int c;

	if (smr_stdio_guard())
		return 1;
	while ((c = getopt_long(argc, argv, "L:U:fnKa:hV", longopts, NULL)) !=
	       -1) {
		switch (c) {
		case 'L':
			if (strlen(optarg) > 63) {
				fprintf(stderr,
					PROG ": label longer than 63 bytes\n");
				return 1;
			}
			mo.label = optarg;
			break;
		case 'U':
			if (smr_uuid_parse(optarg, mo.uuid)) {
				fprintf(stderr, PROG ": bad UUID '%s'\n",
					optarg);
				return 1;
			}
			mo.have_uuid = true;
			break;
		case 'f':
			mo.force = true;
			break;
		case 'n':
			mo.dry_run = true;
			break;
		case 'K':
			mo.nodiscard = true;
			break;
		case 'a':
			mo.alloc = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf(PROG " (smrfs) %s\n", PACKAGE_VERSION);
			return 0;
		default:
			fprintf(stderr, "Try '" PROG " --help'.\n");
			return 1;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "Usage: " PROG
			" [-L label] [-U uuid] [-f] [-n] [-K] [--alloc NAME] DEVICE\n");
		return 1;
	}
	mo.dev = argv[optind];
	return make_fs(&mo) ? 1 : 0;
}
