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
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fsck/fsck.h"
#include "mkfs/probe.h"
#include "util/smr.h"

static void fsck_usage(FILE *f)
{
	fprintf(f,
		"Usage: fsck.smrfs [-n|-y|-p|-a] [-f] [-v] [-C[FD]] [--scrub] [--json]\n"
		"                  [--uuid UUID] DEVICE\n"
		"Check an smrfs filesystem on DEVICE (a zoned block device, a zoned\n"
		"loop directory, a regular file or a block device) and repair what is\n"
		"safe to repair. The device must not be mounted.\n"
		"\n"
		"  -n          check only: open read-only and change nothing (the default)\n"
		"  -y, -p, -a  repair what is safe (link counts, entries naming missing\n"
		"              inodes, inodes without a name into /lost+found, orphans,\n"
		"              allocator counters, damaged superblock copies and\n"
		"              checkpoint slots), then check again\n"
		"  -f          accepted for fsck(8); the check is always complete\n"
		"  -v          say more\n"
		"  -C, -C0, --progress\n"
		"              show a progress bar on standard error (the default when\n"
		"              it is a terminal and --json is not given)\n"
		"  -CFD        write progress lines \"PASS DONE TOTAL DEVICE\" to file\n"
		"              descriptor FD instead, as e2fsck does for fsck(8)\n"
		"      --no-progress  no progress bar\n"
		"      --scrub also read every data block and verify its checksum\n"
		"      --json  print one JSON summary object on standard output\n"
		"      --uuid UUID  the filesystem's UUID, for a superblock rebuilt\n"
		"              where no copy of it and no checkpoint record is left\n"
		"              (default: the UUID of the B-tree nodes found)\n"
		"  -h, --help  this text\n"
		"\n"
		"Exit status: 0 no errors, 1 errors corrected, 4 errors left uncorrected,\n"
		"8 operational error (cannot open, in use, not smrfs), 16 usage error,\n"
		"32 cancelled (SIGINT or SIGTERM: the check stops between phases, a\n"
		"repair before its commit).\n");
}

/* ------------------------------------------------------------------------
 * Cancelling: SIGINT and SIGTERM set a flag that smr_fsck_run() looks at
 * between phases; the check then ends with status 32 instead of the
 * process dying in the middle of a repair.
 * ------------------------------------------------------------------------ */

static volatile sig_atomic_t fsck_cancel;

static void fsck_on_signal(int sig)
{
	(void)sig;
	fsck_cancel = 1;
}

static void fsck_catch_signals(void)
{
	struct sigaction sa;
	sigset_t set;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fsck_on_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* Inherited blocked (a caller's own handling): ours now. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
}

/* ------------------------------------------------------------------------
 * Progress. The log sinks must erase the bar before a message, and they
 * take no argument: so the bar is this program's one static state.
 * ------------------------------------------------------------------------ */

#define BAR_WIDTH 24
#define BAR_DELAY_MS 500   /* not drawn for checks shorter than this... */
#define BAR_PERIOD_MS 100  /* ... and at most ten times a second */

struct fsck_bar {
	int fd;            /* -1: off; 2: the bar; else e2fsck lines */
	bool delay;        /* wait BAR_DELAY_MS before the first draw */
	const char *device;
	struct timespec start, last;
	bool drawn_once;
	size_t shown;      /* characters of the bar on the line now */
};

static struct fsck_bar bar = { .fd = -1 };

static int64_t fsck_ms_since(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (int64_t)(now.tv_sec - t->tv_sec) * 1000 +
	       (now.tv_nsec - t->tv_nsec) / 1000000;
}

static void fsck_bar_erase(void)
{
	char blank[128];

	if (!bar.shown)
		return;
	memset(blank, ' ', sizeof(blank));
	fputc('\r', stderr);
	fwrite(blank, 1, bar.shown < sizeof(blank) ? bar.shown : sizeof(blank),
	       stderr);
	fputc('\r', stderr);
	fflush(stderr);
	bar.shown = 0;
}

static void fsck_bar_update(void *arg, unsigned int phase, const char *name,
			    uint64_t done, uint64_t total)
{
	unsigned int permille;
	char line[128], fill[BAR_WIDTH + 1];
	int n;

	(void)arg;
	if (bar.delay && fsck_ms_since(&bar.start) < BAR_DELAY_MS)
		return;
	if (bar.drawn_once && fsck_ms_since(&bar.last) < BAR_PERIOD_MS)
		return;
	clock_gettime(CLOCK_MONOTONIC, &bar.last);
	bar.drawn_once = true;
	if (total && done > total)
		done = total;
	/* The phases weigh the same; inside one, the items done. */
	permille = (unsigned int)(((phase - 1) * 1000 +
				   (total ? done * 1000 / total : 0)) /
				  SMR_FSCK_NR_PHASES);
	if (bar.fd != STDERR_FILENO) {
		dprintf(bar.fd, "%u %" PRIu64 " %" PRIu64 " %s\n", phase,
			total ? done : 0, total ? total : 1, bar.device);
		return;
	}
	for (unsigned int i = 0; i < BAR_WIDTH; i++)
		fill[i] = i < permille * BAR_WIDTH / 1000 ? '#' : '.';
	fill[BAR_WIDTH] = 0;
	if (total)
		n = snprintf(line, sizeof(line),
			     "[%s] %3u%% %u/%u %s: %" PRIu64 "/%" PRIu64 " %s",
			     fill, permille / 10, phase, SMR_FSCK_NR_PHASES,
			     name, done, total,
			     strcmp(name, SMR_FSCK_SCAN) ? "items" : "MiB");
	else
		n = snprintf(line, sizeof(line), "[%s] %3u%% %u/%u %s", fill,
			     permille / 10, phase, SMR_FSCK_NR_PHASES, name);
	if (n < 0)
		return;
	n = n < (int)sizeof(line) ? n : (int)sizeof(line) - 1;
	/* Pad over a longer line before it. */
	fprintf(stderr, "\r%s%*s", line,
		bar.shown > (size_t)n ? (int)(bar.shown - (size_t)n) : 0, "");
	fflush(stderr);
	bar.shown = bar.shown > (size_t)n ? bar.shown : (size_t)n;
}

/*
 * A damaged block is met by several phases (the superblock pass, the
 * engine's open and its fallbacks, an allocator rebuild, each walk), and
 * each read reports it: print each error and warning once per pass (the
 * check after a repair says again what is left). Hashes of those printed
 * (the first SEEN_MAX; later ones may repeat).
 */
#define SEEN_MAX 4096
static uint64_t seen[SEEN_MAX];
static size_t nseen;

static bool fsck_seen_before(const char *msg)
{
	uint64_t h = 14695981039346656037ULL; /* FNV-1a */

	for (const char *p = msg; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ULL;
	for (size_t i = 0; i < nseen; i++)
		if (seen[i] == h)
			return true;
	if (nseen < SEEN_MAX)
		seen[nseen++] = h;
	return false;
}

static void fsck_sink(FILE *f, enum smr_log_level level, const char *msg)
{
	if (level <= SMR_LOG_WARN && fsck_seen_before(msg))
		return;
	fsck_bar_erase();
	fprintf(f, "fsck.smrfs: %s%s\n",
		level <= SMR_LOG_ERR ? "error: " :
		level == SMR_LOG_WARN ? "warning: " : "", msg);
}

/* Every phase: a new pass starts with phase 1; the bar, if any. */
static void fsck_progress(void *arg, unsigned int phase, const char *name,
			  uint64_t done, uint64_t total)
{
	/* A pass starts: its messages are new. */
	if (phase == 1 && !done && strcmp(name, SMR_FSCK_SCAN))
		nseen = 0;
	if (bar.fd > 0)
		fsck_bar_update(arg, phase, name, done, total);
}

static void fsck_sink_out(enum smr_log_level level, const char *msg)
{
	fsck_sink(stdout, level, msg);
}

static void fsck_sink_err(enum smr_log_level level, const char *msg)
{
	fsck_sink(stderr, level, msg);
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
	       ", \"bad_data_blocks\": %" PRIu64
	       ", \"rmap_entries\": %" PRIu64
	       ", \"damaged_nodes\": %" PRIu64
	       ", \"underfull_nodes\": %" PRIu64 "}}\n",
	       r->gen, r->ckpt_valid, r->ckpt_bad, r->sb_bad, r->nodes,
	       r->inodes, r->entries, r->extents, r->zones, r->data_bytes,
	       r->bytes_referenced, r->leaked, r->scrubbed_bytes,
	       r->bad_data_blocks, r->rmap_entries, r->bad_nodes,
	       r->underfull_nodes);
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "json", no_argument, NULL, 'J' },
		{ "scrub", no_argument, NULL, 'S' },
		{ "progress", no_argument, NULL, 'C' },
		{ "no-progress", no_argument, NULL, 'N' },
		{ "uuid", required_argument, NULL, 'U' },
		{ NULL, 0, NULL, 0 },
	};
	struct smr_fsck_opts o = { .probe_other = smr_probe_other };
	struct smr_fsck_result r;
	bool json = false, verbose = false;
	uint8_t uuid[16];
	int mode = 0, c, progress = -1; /* -1: on a terminal, 0: off */
	char *end;

	if (smr_stdio_guard())
		return SMR_FSCK_OPERROR;
	while ((c = getopt_long(argc, argv, "nyapfvhC::", lopts, NULL)) != -1) {
		switch (c) {
		case 'a': /* e2fsck's old name of -p, which fsck(8) may pass */
			c = 'p';
			/* fall through */
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
		case 'C':
			/* fsck(8) passes -C0 for a bar, e2fsck takes -CFD for
			 * progress lines to FD (negative: none yet). */
			progress = STDERR_FILENO;
			if (optarg) {
				long fd = strtol(optarg, &end, 10);

				if (*end || end == optarg || fd > 1024 ||
				    fd < -1024) {
					fprintf(stderr, "fsck.smrfs: -C: bad file descriptor '%s'\n",
						optarg);
					return SMR_FSCK_USAGE;
				}
				progress = fd > 0 ? (int)fd :
					   fd < 0 ? 0 : STDERR_FILENO;
			}
			break;
		case 'N':
			progress = 0;
			break;
		case 'U':
			if (smr_uuid_parse(optarg, uuid)) {
				fprintf(stderr, "fsck.smrfs: bad UUID '%s'\n",
					optarg);
				return SMR_FSCK_USAGE;
			}
			o.uuid = uuid;
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
	if (progress < 0 && !json && isatty(STDERR_FILENO)) {
		progress = STDERR_FILENO;
		bar.delay = true; /* only for checks that take a while */
	}
	if (progress > 0) {
		bar.fd = progress;
		bar.device = o.device;
		clock_gettime(CLOCK_MONOTONIC, &bar.start);
	}
	o.progress = fsck_progress;
	o.cancel = &fsck_cancel;
	fsck_catch_signals();
	smr_fsck_run(&o, &r);
	fsck_bar_erase();
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
