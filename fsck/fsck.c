/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fsck.c - fsck.smrfs: the command line around smr_fsck_run() (run.c).
 *
 * Messages go to standard output (to standard error with --json, so that
 * standard output holds only the summary object); the exit status is the
 * one fsck(8) defines.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsck/fsck.h"
#include "util/smr.h"

static void fsck_usage(FILE *f)
{
	fprintf(f,
		"Usage: fsck.smrfs [-n|-y|-p] [-f] [-v] [--scrub] [--json] DEVICE\n"
		"Check an smrfs filesystem on DEVICE (a zoned block device, a zoned\n"
		"loop directory, a regular file or a block device) and repair what is\n"
		"safe to repair. The device must not be mounted.\n"
		"\n"
		"  -n          check only: open read-only and change nothing (the default)\n"
		"  -y, -p      repair what is safe (link counts, entries naming missing\n"
		"              inodes, inodes without a name into /lost+found, orphans,\n"
		"              allocator counters, damaged superblock copies and\n"
		"              checkpoint slots), then check again\n"
		"  -f          accepted for fsck(8); the check is always complete\n"
		"  -v          say more\n"
		"      --scrub also read every data block and verify its checksum\n"
		"      --json  print one JSON summary object on standard output\n"
		"  -h, --help  this text\n"
		"\n"
		"Exit status: 0 no errors, 1 errors corrected, 4 errors left uncorrected,\n"
		"8 operational error (cannot open, in use, not smrfs), 16 usage error.\n");
}

static void fsck_sink_out(enum smr_log_level level, const char *msg)
{
	printf("fsck.smrfs: %s%s\n",
	       level <= SMR_LOG_ERR ? "error: " :
	       level == SMR_LOG_WARN ? "warning: " : "", msg);
}

static void fsck_sink_err(enum smr_log_level level, const char *msg)
{
	fprintf(stderr, "fsck.smrfs: %s%s\n",
		level <= SMR_LOG_ERR ? "error: " :
		level == SMR_LOG_WARN ? "warning: " : "", msg);
}

static void fsck_json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch < 0x20)
			printf("\\u%04x", ch);
		else
			putchar(ch);
	}
	putchar('"');
}

static void fsck_json(const char *dev, const struct smr_fsck_result *r)
{
	printf("{\"device\": ");
	fsck_json_str(dev);
	printf(", \"exit_code\": %d, \"problems\": %" PRIu64
	       ", \"fixed\": %" PRIu64 ", \"remaining\": %" PRIu64
	       ", \"orphans\": %" PRIu64 ", \"allocator\": ",
	       r->exit_code, r->problems, r->fixed, r->remaining, r->orphans);
	fsck_json_str(r->alloc);
	printf(", \"checked\": {\"generation\": %" PRIu64
	       ", \"checkpoints_valid\": %" PRIu64
	       ", \"checkpoints_damaged\": %" PRIu64
	       ", \"superblocks_damaged\": %" PRIu64 ", \"nodes\": %" PRIu64
	       ", \"inodes\": %" PRIu64 ", \"entries\": %" PRIu64
	       ", \"extents\": %" PRIu64 ", \"zones\": %" PRIu64
	       ", \"data_bytes\": %" PRIu64 ", \"referenced_bytes\": %" PRIu64
	       ", \"leaked_bytes\": %" PRIu64 ", \"scrubbed_bytes\": %" PRIu64
	       ", \"bad_data_blocks\": %" PRIu64 "}}\n",
	       r->gen, r->ckpt_valid, r->ckpt_bad, r->sb_bad, r->nodes,
	       r->inodes, r->entries, r->extents, r->zones, r->data_bytes,
	       r->bytes_referenced, r->leaked, r->scrubbed_bytes,
	       r->bad_data_blocks);
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "json", no_argument, NULL, 'J' },
		{ "scrub", no_argument, NULL, 'S' },
		{ NULL, 0, NULL, 0 },
	};
	struct smr_fsck_opts o = { 0 };
	struct smr_fsck_result r;
	bool json = false, verbose = false;
	int mode = 0, c;

	while ((c = getopt_long(argc, argv, "nypfvh", lopts, NULL)) != -1) {
		switch (c) {
		case 'n':
		case 'y':
		case 'p':
			if (mode && mode != c && !(mode != 'n' && c != 'n')) {
				fprintf(stderr, "fsck.smrfs: -n cannot go with -y or -p\n");
				return SMR_FSCK_USAGE;
			}
			mode = c;
			break;
		case 'f':
			break;
		case 'v':
			verbose = true;
			break;
		case 'J':
			json = true;
			break;
		case 'S':
			o.scrub = true;
			break;
		case 'h':
			fsck_usage(stdout);
			return SMR_FSCK_OK;
		default:
			fsck_usage(stderr);
			return SMR_FSCK_USAGE;
		}
	}
	if (optind != argc - 1) {
		fsck_usage(stderr);
		return SMR_FSCK_USAGE;
	}
	o.device = argv[optind];
	o.repair = mode == 'y' || mode == 'p';
	smr_log_set_sink(json ? fsck_sink_err : fsck_sink_out);
	smr_log_set_level(verbose ? SMR_LOG_DEBUG : SMR_LOG_INFO);
	smr_fsck_run(&o, &r);
	if (json) {
		fsck_json(o.device, &r);
	} else if (r.exit_code != SMR_FSCK_OPERROR) {
		printf("%s: %" PRIu64 " problem%s found, %" PRIu64 " fixed, %" PRIu64
		       " left; %" PRIu64 " inodes, %" PRIu64 " entries, %" PRIu64
		       " extents, %" PRIu64 " nodes checked (generation %" PRIu64
		       ", allocator %s)%s\n",
		       o.device, r.problems, r.problems == 1 ? "" : "s", r.fixed,
		       r.remaining, r.inodes, r.entries, r.extents, r.nodes, r.gen,
		       r.alloc[0] ? r.alloc : "?",
		       r.orphans ? "; orphans are reclaimed at the next read-write open" : "");
	}
	fflush(stdout);
	return r.exit_code;
}
