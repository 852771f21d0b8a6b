/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * smrfsctl - the administration command of smrfs.
 *
 *   smrfsctl zloop create DIR --capacity SIZE [--zone-size SIZE] ...
 *   smrfsctl zloop report DIR
 *   smrfsctl zloop reset|finish|open|close DIR ZONE
 *   smrfsctl stat MOUNTPOINT|DEVICE [--json]
 *   smrfsctl zones MOUNTPOINT|DEVICE [--svg FILE]
 *
 * Commands and subcommands are tables, so that later ones (stat, zones) are
 * one entry each. Exit status: 0 success, 1 failure, 2 usage error. Every
 * error is one line on stderr.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctl.h"
#include "dev/dev.h"
#include "util/smr.h"

struct ctl_cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

/* The library's last error message: the log sink has no context argument,
 * so the one-line error report of a command picks it up from here. */
static char ctl_last_log[512];

static void ctl_log_sink(enum smr_log_level level, const char *msg)
{
	if (level <= SMR_LOG_WARN)
		snprintf(ctl_last_log, sizeof(ctl_last_log), "%s", msg);
}

/* Report a failed library call as one line: the library's own message if
 * it logged one (it names the path), else @what and the errno text.
 * Returns 1 (the exit status). */
int ctl_fail(const char *cmd, const char *what, int rc)
{
	size_t n = strlen(ctl_last_log);

	while (n && ctl_last_log[n - 1] == '\n')
		ctl_last_log[--n] = 0;
	if (n)
		fprintf(stderr, "smrfsctl: %s: %s\n", cmd, ctl_last_log);
	else
		fprintf(stderr, "smrfsctl: %s: %s\n", what, strerror(-rc));
	return 1;
}

void ctl_clear_log(void)
{
	ctl_last_log[0] = 0;
}

int ctl_usage_error(const char *fmt, const char *arg)
{
	fputs("smrfsctl: ", stderr);
	fprintf(stderr, fmt, arg);
	fputs(" (see --help)\n", stderr);
	return EXIT_USAGE;
}

static int parse_u32(const char *s, uint32_t *v)
{
	char *end;
	unsigned long long x;

	if (!s || !*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	x = strtoull(s, &end, 10);
	if (errno || *end || x > UINT32_MAX)
		return -EINVAL;
	*v = (uint32_t)x;
	return 0;
}

static bool want_help(int argc, char **argv)
{
	return argc > 1 &&
	       (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"));
}

/* ------------------------------------------------------------------------
 * zloop
 * ------------------------------------------------------------------------ */

static const char zloop_help[] =
	"Usage: smrfsctl zloop COMMAND DIR [ARGS]\n"
	"\n"
	"Zoned loop directories: one file per zone in the layout of the Linux\n"
	"zloop driver (cnv-NNNNNN, seq-NNNNNN; a sequential zone's file size is\n"
	"its write pointer), plus zloop.params with the geometry and limits.\n"
	"\n"
	"Commands:\n"
	"  create DIR --capacity SIZE [options]\n"
	"                      create DIR (made if missing) with empty zones\n"
	"      --capacity SIZE       device size, a multiple of the zone size\n"
	"      --zone-size SIZE      power of two (default 256M; zns preset 2G)\n"
	"      --zone-capacity SIZE  writable part of a zone (default: zone size)\n"
	"      --conv-zones N        conventional zones at the start (default 0)\n"
	"      --max-open N          max open zones, 0 = no limit (default 0)\n"
	"      --max-active N        max active zones, 0 = no limit (default 0)\n"
	"      --block-size N        512 or 4096 (default 4096)\n"
	"      --preset smr|zns      smr: 256M zones, 1% conventional zones (at\n"
	"                            least 1), max open 128;\n"
	"                            zns: 2G zones of half that capacity, no\n"
	"                            conventional zones, max active 14;\n"
	"                            explicit options override the preset\n"
	"  report DIR          list the zones as blkzone report does (values in\n"
	"                      512-byte sectors; wptr relative to the start)\n"
	"  reset DIR ZONE|all  rewind a sequential zone (or all) to empty\n"
	"  finish DIR ZONE     make a sequential zone full\n"
	"  open DIR ZONE       open a zone explicitly (checks the limits)\n"
	"  close DIR ZONE      close an open zone\n"
	"\n"
	"SIZE takes K, M, G, T suffixes (powers of 1024). ZONE is a zone number.\n"
	"Open and closed conditions live only as long as a handle: the files\n"
	"record write pointers, so after reopening a zone that is neither empty\n"
	"nor full is closed, as with the kernel driver.\n";

static int zloop_create(int argc, char **argv)
{
	enum { O_CAP = 1, O_ZS, O_ZCAP, O_CNV, O_MAXO, O_MAXA, O_BS, O_PRESET };
	static const struct option lopts[] = {
		{ "capacity", required_argument, NULL, O_CAP },
		{ "zone-size", required_argument, NULL, O_ZS },
		{ "zone-capacity", required_argument, NULL, O_ZCAP },
		{ "conv-zones", required_argument, NULL, O_CNV },
		{ "max-open", required_argument, NULL, O_MAXO },
		{ "max-active", required_argument, NULL, O_MAXA },
		{ "block-size", required_argument, NULL, O_BS },
		{ "preset", required_argument, NULL, O_PRESET },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct smr_zloop_params p = { 0 };
	bool set_zs = false, set_zcap = false, set_cnv = false;
	bool set_maxo = false, set_maxa = false;
	const char *preset = NULL, *dir;
	uint64_t v;
	int c, rc;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		switch (c) {
		case O_CAP:
		case O_ZS:
		case O_ZCAP:
			if (smr_parse_size(optarg, &v) || !v)
				return ctl_usage_error("bad size '%s'", optarg);
			if (c == O_CAP)
				p.capacity = v;
			else if (c == O_ZS)
				p.zone_size = v, set_zs = true;
			else
				p.zone_cap = v, set_zcap = true;
			break;
		case O_CNV:
		case O_MAXO:
		case O_MAXA:
		case O_BS: {
			uint32_t n;

			if (parse_u32(optarg, &n))
				return ctl_usage_error("bad number '%s'",
						       optarg);
			if (c == O_CNV)
				p.nr_cnv = n, set_cnv = true;
			else if (c == O_MAXO)
				p.max_open = n, set_maxo = true;
			else if (c == O_MAXA)
				p.max_active = n, set_maxa = true;
			else
				p.block_size = n;
			break;
		}
		case O_PRESET:
			if (strcmp(optarg, "smr") && strcmp(optarg, "zns"))
				return ctl_usage_error(
					"unknown preset '%s' (smr or zns)",
					optarg);
			preset = optarg;
			break;
		case 'h':
			fputs(zloop_help, stdout);
			return 0;
		default:
			return ctl_usage_error("zloop create: bad option '%s'",
					       argv[optind - 1]);
		}
	}
	if (optind != argc - 1)
		return ctl_usage_error("%s",
				       "zloop create: expected one DIR");
	dir = argv[optind];
	if (!p.capacity)
		return ctl_usage_error("%s", "zloop create: --capacity is required");

	if (preset && !strcmp(preset, "smr")) {
		if (!set_zs)
			p.zone_size = 256 * SMR_MIB;
		if (!set_maxo)
			p.max_open = 128;
		if (!set_cnv && p.capacity >= p.zone_size) {
			uint64_t nr = p.capacity / p.zone_size;

			p.nr_cnv = (uint32_t)SMR_MAX(nr / 100, 1);
			if (p.nr_cnv >= nr)
				p.nr_cnv = (uint32_t)(nr - 1);
		}
	} else if (preset && !strcmp(preset, "zns")) {
		uint32_t bs = p.block_size ? p.block_size : 4096;

		if (!set_zs)
			p.zone_size = 2 * SMR_GIB;
		if (!set_zcap)
			p.zone_cap = SMR_MAX(SMR_ROUND_DOWN(p.zone_size / 2, bs),
					     bs);
		if (!set_maxa)
			p.max_active = 14;
		if (!set_cnv)
			p.nr_cnv = 0;
	}

	rc = smr_zloop_create(dir, &p);
	if (rc == -EINVAL && !ctl_last_log[0]) {
		fprintf(stderr,
			"smrfsctl: zloop create %s: inconsistent geometry "
			"(zone size a power of two, capacity a multiple of it, "
			"zone capacity <= zone size, fewer conventional zones "
			"than zones, block size 512 or 4096, max open <= max "
			"active)\n",
			dir);
		return 1;
	}
	if (rc == -EEXIST) {
		fprintf(stderr,
			"smrfsctl: zloop create %s: already holds a zoned loop "
			"device\n",
			dir);
		return 1;
	}
	if (rc) {
		char what[4200];

		snprintf(what, sizeof(what), "zloop create %s", dir);
		return ctl_fail("zloop create", what, rc);
	}
	return 0;
}

static int zloop_open_dir(const char *dir, bool rw, struct smr_dev **devp)
{
	struct smr_dev_opts o = {
		.backend = "zloop",
		.read_only = !rw,
		.shared = !rw,
	};

	return smr_dev_open(dir, &o, devp);
}

static int zloop_report(int argc, char **argv)
{
	const struct smr_dev_info *info;
	struct smr_dev *dev;
	int rc;

	if (want_help(argc, argv)) {
		fputs(zloop_help, stdout);
		return 0;
	}
	if (argc != 2)
		return ctl_usage_error("%s", "zloop report: expected DIR");
	rc = zloop_open_dir(argv[1], false, &dev);
	if (rc) {
		char what[4200];

		snprintf(what, sizeof(what), "zloop report %s", argv[1]);
		return ctl_fail("zloop report", what, rc);
	}
	info = smr_dev_info(dev);
	for (uint32_t zno = 0; zno < info->nr_zones; zno++) {
		struct smr_zone z;

		smr_dev_zone(dev, zno, &z);
		printf("  start: 0x%09" PRIx64 ", len 0x%06" PRIx64
		       ", cap 0x%06" PRIx64 ", wptr 0x%06" PRIx64
		       " reset:0 non-seq:0, zcond:%2u(%s) [type: %u(%s)]\n",
		       z.start >> 9, z.len >> 9, z.cap >> 9,
		       smr_zone_is_cnv(&z) ? 0 : (z.wp - z.start) >> 9,
		       z.cond, smr_zone_cond_str(z.cond), z.type,
		       smr_zone_type_str(z.type));
	}
	smr_dev_close(dev);
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "smrfsctl: zloop report: write error\n");
		return 1;
	}
	return 0;
}

enum zone_verb { ZV_RESET, ZV_FINISH, ZV_OPEN, ZV_CLOSE };

static const char *cond_name(uint8_t cond)
{
	switch (cond) {
	case SMR_ZONE_COND_EMPTY: return "empty";
	case SMR_ZONE_COND_IMP_OPEN: return "implicitly open";
	case SMR_ZONE_COND_EXP_OPEN: return "explicitly open";
	case SMR_ZONE_COND_CLOSED: return "closed";
	case SMR_ZONE_COND_FULL: return "full";
	case SMR_ZONE_COND_READONLY: return "read-only";
	case SMR_ZONE_COND_OFFLINE: return "offline";
	default: return "not a write-pointer zone";
	}
}

static int zloop_zone_cmd(int argc, char **argv, enum zone_verb verb)
{
	static const char *const names[] = { "zloop reset", "zloop finish",
					     "zloop open", "zloop close" };
	struct smr_dev *dev;
	char what[4200];
	uint32_t zno = 0;
	bool all = false;
	uint8_t cond;
	int rc;

	if (want_help(argc, argv)) {
		fputs(zloop_help, stdout);
		return 0;
	}
	if (argc != 3)
		return ctl_usage_error("%s: expected DIR ZONE", names[verb]);
	if (verb == ZV_RESET && !strcmp(argv[2], "all"))
		all = true;
	else if (parse_u32(argv[2], &zno))
		return ctl_usage_error("bad zone number '%s'", argv[2]);

	snprintf(what, sizeof(what), "%s %s %s", names[verb], argv[1],
		 argv[2]);
	rc = zloop_open_dir(argv[1], true, &dev);
	if (rc)
		return ctl_fail(names[verb], what, rc);
	if (!all && zno >= smr_dev_info(dev)->nr_zones) {
		fprintf(stderr, "smrfsctl: %s: no such zone (%u zones)\n",
			what, smr_dev_info(dev)->nr_zones);
		smr_dev_close(dev);
		return 1;
	}
	if (!all && smr_dev_zone_type(dev, zno) == SMR_ZONE_TYPE_CNV) {
		fprintf(stderr, "smrfsctl: %s: zone %u is conventional\n",
			what, zno);
		smr_dev_close(dev);
		return 1;
	}
	cond = smr_dev_zone_cond(dev, zno);
	switch (verb) {
	case ZV_RESET:
		rc = all ? smr_dev_reset_all(dev) : smr_dev_zone_reset(dev, zno);
		break;
	case ZV_FINISH:
		rc = smr_dev_zone_finish(dev, zno);
		break;
	case ZV_OPEN:
		rc = smr_dev_zone_open(dev, zno);
		break;
	case ZV_CLOSE:
		rc = smr_dev_zone_close(dev, zno);
		break;
	}
	if (rc) {
		smr_dev_close(dev);
		if (rc == -EIO && (verb == ZV_OPEN || verb == ZV_CLOSE)) {
			fprintf(stderr,
				"smrfsctl: %s: refused: the zone is %s%s\n",
				what, cond_name(cond),
				verb == ZV_OPEN && cond != SMR_ZONE_COND_FULL ?
					" and the open/active zone limit is "
					"reached" :
					"");
			return 1;
		}
		return ctl_fail(names[verb], what, rc);
	}
	rc = smr_dev_close(dev);
	if (rc)
		return ctl_fail(names[verb], what, rc);
	return 0;
}

static int zloop_reset(int argc, char **argv)
{
	return zloop_zone_cmd(argc, argv, ZV_RESET);
}

static int zloop_finish(int argc, char **argv)
{
	return zloop_zone_cmd(argc, argv, ZV_FINISH);
}

static int zloop_zopen(int argc, char **argv)
{
	return zloop_zone_cmd(argc, argv, ZV_OPEN);
}

static int zloop_zclose(int argc, char **argv)
{
	return zloop_zone_cmd(argc, argv, ZV_CLOSE);
}

static const struct ctl_cmd zloop_cmds[] = {
	{ "create", zloop_create, "create a zoned loop directory" },
	{ "report", zloop_report, "list its zones" },
	{ "reset", zloop_reset, "reset a zone (or all)" },
	{ "finish", zloop_finish, "finish a zone" },
	{ "open", zloop_zopen, "open a zone explicitly" },
	{ "close", zloop_zclose, "close a zone" },
	{ NULL, NULL, NULL },
};

static int run_table(const struct ctl_cmd *cmds, const char *what, int argc,
		     char **argv)
{
	if (argc < 1)
		return ctl_usage_error("%s: missing command", what);
	for (const struct ctl_cmd *c = cmds; c->name; c++)
		if (!strcmp(c->name, argv[0]))
			return c->fn(argc, argv);
	return ctl_usage_error("unknown command '%s'", argv[0]);
}

static int cmd_zloop(int argc, char **argv)
{
	if (argc < 2 || want_help(argc, argv)) {
		fputs(zloop_help, argc < 2 ? stderr : stdout);
		return argc < 2 ? EXIT_USAGE : 0;
	}
	return run_table(zloop_cmds, "zloop", argc - 1, argv + 1);
}

/* ------------------------------------------------------------------------
 * Top level
 * ------------------------------------------------------------------------ */

static const struct ctl_cmd top_cmds[] = {
	{ "stat", cmd_stat, "space, zones and counters of a filesystem" },
	{ "zones", cmd_zones, "map of the zones: state and live data" },
	{ "zloop", cmd_zloop, "create and inspect zoned loop directories" },
	{ NULL, NULL, NULL },
};

static void top_help(FILE *f)
{
	fprintf(f, "Usage: smrfsctl [--help] [--version] COMMAND [ARGS]\n"
		   "\n"
		   "Administration of smrfs devices.\n"
		   "\n"
		   "Commands:\n");
	for (const struct ctl_cmd *c = top_cmds; c->name; c++)
		fprintf(f, "  %-8s %s\n", c->name, c->summary);
	fprintf(f, "\nRun 'smrfsctl COMMAND --help' for a command's options.\n"
		   "Exit status: 0 success, 1 failure, 2 usage error.\n");
}

int main(int argc, char **argv)
{
	if (smr_stdio_guard())
		return 1;
	smr_log_set_sink(ctl_log_sink);
	if (argc < 2) {
		top_help(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		top_help(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("smrfsctl (%s) %s\n", PACKAGE_NAME, PACKAGE_VERSION);
		return 0;
	}
	if (argv[1][0] == '-')
		return ctl_usage_error("unknown option '%s'", argv[1]);
	return run_table(top_cmds, "smrfsctl", argc - 1, argv + 1);
}
