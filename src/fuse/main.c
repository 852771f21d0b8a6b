/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * main.c - mount.smrfs: the FUSE daemon.
 *
 *   mount.smrfs DEVICE MOUNTPOINT [-o opts] [-f] [-d]
 *
 * Works standalone and as the mount(8) helper (mount -t smrfs DEV DIR runs
 * "mount.smrfs DEV DIR -o opts"). Order of work, so that a failure leaves
 * nothing mounted and nothing written: parse the options and build the FUSE
 * session (a bad option fails here), check the mount point, go to the
 * background, open the device exclusively, the engine and the namespace,
 * mount, and only then tell the waiting parent that all went well. The
 * parent exits with the child's verdict, so `mount` sees the real result.
 * Everything is opened in the process that serves it (engine threads do not
 * survive a fork). SIGTERM, SIGINT, SIGHUP and an unmount end the loop;
 * then the namespace is closed and the engine commits everything.
 */
#include <errno.h>
#include <fcntl.h>
#include <libmount.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <syslog.h>
#include <unistd.h>

#include "cow/cow.h"
#include "fuse/fuse_ops.h"
#include "fuse/smrfs_ioctl.h"
#include "namespace/ns.h"
#include "smr_commit.h"
#ifdef SMR_FUSE_MEMCOW
#include "memcow.h"
#else
#include "dev/dev.h"
#endif
#ifdef SMR_FUSE_FAULT
/* Test build: the fault device between the device and the filesystem. */
#include "fault_daemon.h"
#define fs_dev_close(dev) fault_daemon_close(dev)
#else
#define fs_dev_close(dev) smr_dev_close(dev)
#endif

#define PROG "mount.smrfs"

struct mount_opts {
	const char *dev;
	const char *mnt;
	bool ro;
	bool foreground;
	bool debug;
	char *alloc;       /* owned */
	unsigned int commit_secs;
	int fsync_log;     /* -1 = the default */
	uint64_t cache_bytes;
	bool gc_off;
	bool gc_given;     /* gc= was given */
	bool noacl;
	bool writeback;
	int gc_policy;     /* enum smr_cow_gc_policy */
	int log_level;     /* enum smr_log_level; 0: the default */
	int atime;         /* enum smr_ns_atime */
	bool nodiratime;
	bool remount;      /* -o remount: change a mount, start nothing */
	bool rw_given;     /* ro or rw was given */
	bool atime_given;  /* an atime option was given */
	unsigned long ms_set, ms_clear; /* MS_* flags the options named */
	unsigned int gc_low, gc_high;
	char *fsname;      /* owned */
	char *subtype;     /* owned */
	char *fuse_opts;   /* owned: passed on to libfuse */
	char *dev_path;    /* owned: dev made absolute (what dev points to) */
	char *mnt_path;    /* owned: mnt made absolute (what mnt points to) */
};

/* What fsync does unless -o fsync= says. */
#define FSYNC_DEFAULT_LOG true
#define FSYNC_DEFAULT_NAME "log"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " DEVICE MOUNTPOINT [-o OPTIONS] [-f] [-d]\n"
		"\n"
		"Mount the smrfs filesystem on DEVICE (a zoned loop directory, a\n"
		"regular file, a zoned block device or a block device) at\n"
		"MOUNTPOINT. Runs in the background unless -f or -d is given.\n"
		"\n"
		"Options:\n"
		"  -f               stay in the foreground, log to stderr\n"
		"  -d               debug: foreground, FUSE requests and debug log\n"
		"  -o OPT[,OPT...]  mount options:\n"
		"     ro            read-only (rw is the default)\n"
		"     remount       change the mount at MOUNTPOINT: ro commits\n"
		"                   everything and then writes nothing, rw\n"
		"                   writes again; with the atime and generic\n"
		"                   options and commit= (mount -o remount\n"
		"                   runs this)\n"
		"     acl, noacl    keep POSIX access control lists (setfacl),\n"
		"                   which the kernel enforces (default acl)\n"
		"     alloc=NAME    allocator module to use instead of the one\n"
		"                   recorded by mkfs (zoned, rotational, flash)\n"
		"     commit=SECS   commit at least every SECS seconds (default 5)\n"
		"     fsync=HOW     log: fsync writes a small log record, replayed\n"
		"                   at the next mount; commit: fsync commits\n"
		"                   (default " FSYNC_DEFAULT_NAME ")\n"
		"     cache=SIZE    metadata cache size, e.g. 64M (default 64 MiB)\n"
		"     writeback_cache  let the kernel gather writes in its page\n"
		"                   cache and send them later: small writes\n"
		"                   run faster, but ENOSPC and write errors\n"
		"                   come at fsync or close, not at the write\n"
		"                   (default off, nowriteback_cache)\n"
		"     gc=POLICY     zoned devices: how the background cleaner\n"
		"                   picks zones: cost-benefit (default), greedy,\n"
		"                   or off (clean only when a write needs space)\n"
		"     gc_low=N      start cleaning below N free zones (default 1)\n"
		"     gc_high=N     stop above N free zones, more than gc_low\n"
		"                   (default gc_low + 1 plus 16 MiB of zones,\n"
		"                   1 to a 64th of them); both below the\n"
		"                   device's number of zones\n"
		"     log=LEVEL     what the daemon logs: error, warning, info\n"
		"                   (the default) or debug; -d logs debug\n"
		"     allow_other   let other users see the files (FUSE option;\n"
		"                   on by default when root mounts)\n"
		"     fsname=NAME   name shown in mount tables (default: DEVICE)\n"
		"     subtype=NAME  type shown as fuse.NAME (default: smrfs)\n"
		"     relatime      update atime on a read only when it is not\n"
		"                   newer than mtime and ctime, or is a day\n"
		"                   old (the default)\n"
		"     noatime       never update atime\n"
		"     strictatime   update atime at every read\n"
		"     nodiratime    never update the atime of directories\n"
		"     other FUSE and mount options (nosuid, nodev, noexec, ...)\n"
		"     are passed to FUSE; default_permissions is always on.\n"
		"  -h, --help       show this help\n"
		"  -V, --version    show the version\n"
		"\n"
		"Unmount with umount MOUNTPOINT, which returns once the last\n"
		"commit is written (umount.smrfs), or fusermount3 -u MOUNTPOINT;\n"
		"SIGTERM and SIGINT also commit everything and unmount.\n");
}

static int add_fuse_opt(struct mount_opts *mo, const char *opt)
{
	size_t old = mo->fuse_opts ? strlen(mo->fuse_opts) : 0;
	char *n = realloc(mo->fuse_opts, old + strlen(opt) + 2);

	if (!n)
		return -ENOMEM;
	if (old)
		n[old++] = ',';
	strcpy(n + old, opt);
	mo->fuse_opts = n;
	return 0;
}

/* Options of mount(8) alone, and the generic options that have no effect
 * on a FUSE filesystem (lazytime: times go out with the next commit in any
 * case; norelatime: relatime stays the default unless strictatime). */
static bool is_ignored_mount_opt(const char *o)
{
	static const char *const ignored[] = {
		"defaults", "auto", "noauto", "user", "nouser", "users",
		"_netdev", "nofail", "default_permissions", "async",
		"owner", "group", "loop", "lazytime", "nolazytime",
		"norelatime", "iversion", "noiversion", "mand", "nomand",
		"silent", "loud",
	};

	for (size_t i = 0; i < SMR_ARRAY_SIZE(ignored); i++)
		if (!strcmp(o, ignored[i]))
			return true;
	return !strncmp(o, "x-", 2) || !strncmp(o, "comment=", 8);
}

/*
 * The atime options, as mount(8) knows them. The kernel leaves the atime of
 * a FUSE filesystem to the daemon, so the namespace applies them
 * (smr_ns_opts.atime). FUSE knows only noatime and atime, which it also
 * puts in the mount table: those two go on to it (*pass). Returns whether
 * @o is one.
 */
static bool parse_atime_opt(struct mount_opts *mo, const char *o, bool *pass)
{
	*pass = false;
	if (!strcmp(o, "noatime")) {
		mo->atime = SMR_NS_NOATIME;
		*pass = true;
	} else if (!strcmp(o, "atime")) {
		if (mo->atime == SMR_NS_NOATIME)
			mo->atime = SMR_NS_RELATIME;
		*pass = true;
	} else if (!strcmp(o, "relatime")) {
		mo->atime = SMR_NS_RELATIME;
	} else if (!strcmp(o, "strictatime")) {
		mo->atime = SMR_NS_STRICTATIME;
	} else if (!strcmp(o, "nostrictatime")) {
		if (mo->atime == SMR_NS_STRICTATIME)
			mo->atime = SMR_NS_RELATIME;
	} else if (!strcmp(o, "nodiratime")) {
		mo->nodiratime = true;
	} else if (!strcmp(o, "diratime")) {
		mo->nodiratime = false;
	} else {
		return false;
	}
	return true;
}

/* The generic options a remount gives the kernel, by their flags (the
 * atime options go by mo->atime and mo->nodiratime: do_remount). */
static void note_mount_flag(struct mount_opts *mo, const char *o)
{
	static const struct {
		const char *name;
		unsigned long set, clear;
	} flags[] = {
		{ "nosuid", MS_NOSUID, 0 },
		{ "suid", 0, MS_NOSUID },
		{ "nodev", MS_NODEV, 0 },
		{ "dev", 0, MS_NODEV },
		{ "noexec", MS_NOEXEC, 0 },
		{ "exec", 0, MS_NOEXEC },
		{ "sync", MS_SYNCHRONOUS, 0 },
		{ "async", 0, MS_SYNCHRONOUS },
		{ "dirsync", MS_DIRSYNC, 0 },
	};

	for (size_t i = 0; i < SMR_ARRAY_SIZE(flags); i++) {
		if (!strcmp(o, flags[i].name)) {
			mo->ms_set = (mo->ms_set & ~flags[i].clear) |
				     flags[i].set;
			mo->ms_clear = (mo->ms_clear & ~flags[i].set) |
				       flags[i].clear;
		}
	}
}

static int parse_o(struct mount_opts *mo, const char *arg)
{
	bool pass;
	char *copy = strdup(arg), *save = NULL, *o;
	int rc = 0;

	if (!copy)
		return -ENOMEM;
	for (o = strtok_r(copy, ",", &save); o && !rc;
	     o = strtok_r(NULL, ",", &save)) {
		note_mount_flag(mo, o);
		if (!strcmp(o, "ro") || !strcmp(o, "rw")) {
			mo->ro = !strcmp(o, "ro");
			mo->rw_given = true;
		} else if (!strcmp(o, "remount")) {
			mo->remount = true;
		} else if (!strcmp(o, "acl")) {
			mo->noacl = false;
		} else if (!strcmp(o, "noacl")) {
			mo->noacl = true;
		} else if (!strcmp(o, "writeback_cache")) {
			mo->writeback = true;
		} else if (!strcmp(o, "nowriteback_cache")) {
			mo->writeback = false;
		} else if (!strncmp(o, "alloc=", 6)) {
			if (!o[6]) {
				fprintf(stderr, PROG ": alloc= needs a name\n");
				rc = -EINVAL;
			}
			/* A copy: in @arg the options after it follow. */
			free(mo->alloc);
			mo->alloc = strdup(o + 6);
			if (!mo->alloc)
				rc = -ENOMEM;
		} else if (!strncmp(o, "commit=", 7)) {
			char *end;
			unsigned long v = strtoul(o + 7, &end, 10);

			if (!o[7] || *end || v == 0 || v > 86400) {
				fprintf(stderr,
					PROG ": bad commit interval '%s' (1..86400 seconds)\n",
					o + 7);
				rc = -EINVAL;
			}
			mo->commit_secs = (unsigned int)v;
		} else if (!strncmp(o, "fsync=", 6)) {
			if (!strcmp(o + 6, "log")) {
				mo->fsync_log = 1;
			} else if (!strcmp(o + 6, "commit")) {
				mo->fsync_log = 0;
			} else {
				fprintf(stderr,
					PROG ": bad fsync mode '%s' (log, commit)\n",
					o + 6);
				rc = -EINVAL;
			}
		} else if (!strncmp(o, "cache=", 6)) {
			if (smr_parse_size(o + 6, &mo->cache_bytes) ||
			    mo->cache_bytes < SMR_MIB) {
				fprintf(stderr,
					PROG ": bad cache size '%s' (at least 1M)\n",
					o + 6);
				rc = -EINVAL;
			}
		} else if (!strncmp(o, "gc=", 3)) {
			mo->gc_given = true;
			if (!strcmp(o + 3, "greedy")) {
				mo->gc_policy = SMR_COW_GC_GREEDY;
			} else if (!strcmp(o + 3, "cost-benefit")) {
				mo->gc_policy = SMR_COW_GC_COST_BENEFIT;
			} else if (!strcmp(o + 3, "off")) {
				mo->gc_off = true;
			} else {
				fprintf(stderr,
					PROG ": bad gc policy '%s' (greedy, cost-benefit, off)\n",
					o + 3);
				rc = -EINVAL;
			}
		} else if (!strncmp(o, "gc_low=", 7) ||
			   !strncmp(o, "gc_high=", 8)) {
			bool low = o[3] == 'l';
			const char *val = o + (low ? 7 : 8);
			char *end;
			unsigned long v = strtoul(val, &end, 10);

			if (!*val || *end || v == 0 || v > 65536) {
				fprintf(stderr,
					PROG ": bad %s '%s' (1..65536 zones)\n",
					low ? "gc_low" : "gc_high", val);
				rc = -EINVAL;
			}
			if (low)
				mo->gc_low = (unsigned int)v;
			else
				mo->gc_high = (unsigned int)v;
		} else if (!strncmp(o, "log=", 4)) {
			static const struct {
				const char *name;
				int level;
			} levels[] = {
				{ "error", SMR_LOG_ERR },
				{ "warning", SMR_LOG_WARN },
				{ "info", SMR_LOG_INFO },
				{ "debug", SMR_LOG_DEBUG },
			};

			mo->log_level = 0;
			for (size_t i = 0; i < SMR_ARRAY_SIZE(levels); i++)
				if (!strcmp(o + 4, levels[i].name))
					mo->log_level = levels[i].level;
			if (!mo->log_level) {
				fprintf(stderr,
					PROG ": bad log level '%s' (error, warning, info, debug)\n",
					o + 4);
				rc = -EINVAL;
			}
		} else if (!strncmp(o, "fsname=", 7)) {
			free(mo->fsname);
			mo->fsname = strdup(o + 7);
			if (!mo->fsname)
				rc = -ENOMEM;
		} else if (!strncmp(o, "subtype=", 8)) {
			free(mo->subtype);
			mo->subtype = strdup(o + 8);
			if (!mo->subtype)
				rc = -ENOMEM;
		} else if (parse_atime_opt(mo, o, &pass)) {
			mo->atime_given = true;
			if (pass)
				rc = add_fuse_opt(mo, o);
		} else if (!is_ignored_mount_opt(o)) {
			rc = add_fuse_opt(mo, o);
		}
	}
	free(copy);
	return rc;
}

/* 0 to go on, 1 to exit 0 (help, version), -EINVAL for a usage error. */
static int parse_args(int argc, char **argv, struct mount_opts *mo)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 1;
		} else if (!strcmp(a, "-V") || !strcmp(a, "--version")) {
			printf(PROG " (smrfs) %s, commit %s\nFUSE library %s\n",
			       PACKAGE_VERSION, SMR_BUILD_COMMIT,
			       fuse_pkgversion());
			return 1;
		} else if (!strcmp(a, "-f")) {
			mo->foreground = true;
		} else if (!strcmp(a, "-d")) {
			mo->foreground = mo->debug = true;
		} else if (!strcmp(a, "-n") || !strcmp(a, "-s") ||
			   !strcmp(a, "-v")) {
			/* mount(8) helper flags: no mtab, sloppy, verbose */
		} else if (!strncmp(a, "-o", 2)) {
			const char *v = a[2] ? a + 2 : (i + 1 < argc ?
							argv[++i] : NULL);
			if (!v) {
				fprintf(stderr, PROG ": -o needs options\n");
				return -EINVAL;
			}
			if (parse_o(mo, v))
				return -EINVAL;
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr, PROG ": unknown option '%s' (see --help)\n",
				a);
			return -EINVAL;
		} else if (!mo->dev) {
			mo->dev = a;
		} else if (!mo->mnt) {
			mo->mnt = a;
		} else {
			fprintf(stderr, PROG ": unexpected argument '%s'\n", a);
			return -EINVAL;
		}
	}
	if (!mo->dev || !mo->mnt) {
		fprintf(stderr, "Usage: " PROG
			" DEVICE MOUNTPOINT [-o OPTIONS] (see --help)\n");
		return -EINVAL;
	}
	/* Cleaning stops above gc_high: at or below gc_low it would stop
	 * where it starts. */
	if (mo->gc_low && mo->gc_high && mo->gc_high <= mo->gc_low) {
		fprintf(stderr, PROG ": gc_high (%u) must be above gc_low (%u)\n",
			mo->gc_high, mo->gc_low);
		return -EINVAL;
	}
	return 0;
}

/*
 * Make the device and the mount point absolute paths. In the background the
 * daemon changes to /, and libfuse unmounts by the path it was given: a
 * relative mount point would then name another directory, and SIGTERM
 * would leave a dead mount behind. The mount table shows the device as
 * given, which should not depend on where mount.smrfs was started.
 */
static int resolve_paths(struct mount_opts *mo)
{
	int rc;

	mo->mnt_path = realpath(mo->mnt, NULL);
	if (!mo->mnt_path) {
		rc = -errno;
		fprintf(stderr, PROG ": mount point %s: %s\n", mo->mnt,
			strerror(-rc));
		return rc;
	}
	mo->mnt = mo->mnt_path;
#ifndef SMR_FUSE_MEMCOW /* there DEVICE is only a name */
	mo->dev_path = realpath(mo->dev, NULL);
	if (!mo->dev_path) {
		rc = -errno;
		fprintf(stderr, PROG ": %s: %s\n", mo->dev, strerror(-rc));
		return rc;
	}
	mo->dev = mo->dev_path;
#endif
	return 0;
}

/* Why the daemon refused a remount (@err), for the message. */
static void remount_refused(const struct mount_opts *mo,
			    const struct smrfs_ioc_stat *st, int err)
{
	if (err == EROFS)
		fprintf(stderr, PROG ": %s: read-only since it was mounted (-o "
			"ro) or since an error; unmount it and mount it again "
			"to write\n", mo->mnt);
	else if (err == EINVAL && (mo->gc_low || mo->gc_high))
		fprintf(stderr, PROG ": %s: gc_low and gc_high must be below "
			"the device's %u zones, gc_high above gc_low (as "
			"mounted, unless given)\n", mo->mnt, st->nr_zones);
	else
		fprintf(stderr, PROG ": %s: %s\n", mo->mnt, strerror(err));
}

/*
 * -o remount, as mount(8) runs it for a mounted smrfs (through
 * mount.fuse.smrfs: mount(8) goes by the type in the mount table). The
 * kernel's flags change by mount(2), the daemon's state by
 * SMRFS_IOC_REMOUNT. To read-only, the kernel goes first: it refuses while
 * a file is open for writing (EBUSY), so when the daemon commits and stops
 * writing nothing is under way. To writable, the daemon goes first, and
 * goes back should the kernel refuse. What the options do not name keeps
 * its value (mount(8) names them all, from the mount table); of the
 * options of smrfs itself, commit=, gc=, gc_low= and gc_high= change, the
 * others (cache=, fsync=, ...) stay those of the mount.
 */
static int do_remount(const struct mount_opts *mo)
{
	struct smrfs_ioc_remount ir = { .version = SMRFS_IOC_VERSION };
	struct smrfs_ioc_stat st;
	struct statvfs sv;
	unsigned long flags = MS_REMOUNT;
	bool ro, was_ro;
	int fd, rc = -1;

	fd = open(mo->mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, PROG ": %s: %s\n", mo->mnt, strerror(errno));
		return -1;
	}
	if (fstatvfs(fd, &sv) || ioctl(fd, SMRFS_IOC_STAT, &st)) {
		fprintf(stderr, PROG ": %s: not a mounted smrfs (%s)\n",
			mo->mnt, strerror(errno));
		goto out;
	}
	was_ro = sv.f_flag & ST_RDONLY;
	ro = mo->rw_given ? mo->ro : was_ro;
	flags |= (sv.f_flag & ST_NOSUID ? MS_NOSUID : 0) |
		 (sv.f_flag & ST_NODEV ? MS_NODEV : 0) |
		 (sv.f_flag & ST_NOEXEC ? MS_NOEXEC : 0) |
		 (sv.f_flag & ST_SYNCHRONOUS ? MS_SYNCHRONOUS : 0);
	flags = (flags | mo->ms_set) & ~mo->ms_clear;
	if (ro) {
		flags |= MS_RDONLY;
		ir.flags |= SMRFS_REMOUNT_RO;
	}
	/* Without an atime option the kernel keeps its atime flags. */
	if (mo->atime_given) {
		flags |= mo->atime == SMR_NS_NOATIME	  ? MS_NOATIME :
			 mo->atime == SMR_NS_STRICTATIME ? MS_STRICTATIME :
							   MS_RELATIME;
		if (mo->nodiratime)
			flags |= MS_NODIRATIME;
		ir.flags |= SMRFS_REMOUNT_ATIME |
			    (mo->nodiratime ? SMRFS_REMOUNT_NODIRATIME : 0);
		ir.atime = (uint32_t)mo->atime;
	}
	ir.commit_secs = mo->commit_secs;
	ir.gc = !mo->gc_given ? 0 :
		mo->gc_off ? SMRFS_REMOUNT_GC_OFF :
		mo->gc_policy == SMR_COW_GC_GREEDY ?
			     SMRFS_REMOUNT_GC_GREEDY :
			     SMRFS_REMOUNT_GC_COST_BENEFIT;
	ir.gc_low = mo->gc_low;
	ir.gc_high = mo->gc_high;
	/* To read-only the kernel goes first, and a refusal of the daemon's
	 * then would leave the two apart: the cleaner's options, which the
	 * daemon may refuse, go ahead alone, the daemon staying as it is. */
	if (ro && (ir.gc || ir.gc_low || ir.gc_high)) {
		struct smrfs_ioc_remount gc = {
			.version = SMRFS_IOC_VERSION,
			.flags = st.flags & SMRFS_STAT_READ_ONLY ?
					 SMRFS_REMOUNT_RO : 0,
			.gc = ir.gc, .gc_low = ir.gc_low, .gc_high = ir.gc_high,
		};

		if (ioctl(fd, SMRFS_IOC_REMOUNT, &gc)) {
			remount_refused(mo, &st, errno);
			goto out;
		}
		ir.gc = ir.gc_low = ir.gc_high = 0;
	}
	if (!ro && ioctl(fd, SMRFS_IOC_REMOUNT, &ir)) {
		remount_refused(mo, &st, errno);
		goto out;
	}
	if (mount(NULL, mo->mnt, NULL, flags, NULL)) {
		int err = errno;

		fprintf(stderr, PROG ": cannot remount %s: %s\n", mo->mnt,
			err == EBUSY ? "a file is open for writing" :
				       strerror(err));
		/* Writable again in the daemon alone: back as it was. */
		if (!ro && was_ro) {
			ir.flags |= SMRFS_REMOUNT_RO;
			(void)ioctl(fd, SMRFS_IOC_REMOUNT, &ir);
		}
		goto out;
	}
	if (ro && ioctl(fd, SMRFS_IOC_REMOUNT, &ir)) {
		fprintf(stderr, PROG ": %s: remounted read-only, but the "
			"filesystem's last commit failed: %s\n", mo->mnt,
			strerror(errno));
		goto out;
	}
	rc = 0;
out:
	close(fd);
	return rc;
}

/* The per-mount flags of the newest mount on @mnt, from the mount table (a
 * statvfs would ask this daemon, which serves nothing yet). -ENOENT where
 * nothing is mounted there. */
static int mount_flags_of(const char *mnt, unsigned long *flags)
{
	static const struct {
		const char *name;
		unsigned long flag;
	} names[] = {
		{ "ro", MS_RDONLY },	   { "nosuid", MS_NOSUID },
		{ "nodev", MS_NODEV },	   { "noexec", MS_NOEXEC },
		{ "noatime", MS_NOATIME }, { "nodiratime", MS_NODIRATIME },
		{ "relatime", MS_RELATIME },
	};
	char opts[512], *save = NULL;
	int rc = smr_mountinfo_find(mnt, NULL, 0, opts, sizeof(opts));

	*flags = 0;
	if (rc)
		return rc;
	for (char *o = strtok_r(opts, ",", &save); o;
	     o = strtok_r(NULL, ",", &save))
		for (size_t i = 0; i < SMR_ARRAY_SIZE(names); i++)
			if (!strcmp(o, names[i].name))
				*flags |= names[i].flag;
	return 0;
}

/*
 * FUSE mounts with noatime or with relatime (the kernel's default): where
 * the daemon does strictatime or nodiratime, say so in the mount's flags
 * too, so that the mount table tells what is done and mount(8), which
 * passes a remount the options it reads there, keeps it. Best effort:
 * only root may change a mount's flags.
 */
static void show_atime(const struct mount_opts *mo)
{
	unsigned long flags;

	if ((mo->atime != SMR_NS_STRICTATIME && !mo->nodiratime) ||
	    mount_flags_of(mo->mnt, &flags))
		return;
	flags &= ~(MS_NOATIME | MS_RELATIME);
	flags |= MS_REMOUNT | MS_BIND |
		 (mo->atime == SMR_NS_STRICTATIME ? MS_STRICTATIME :
		  mo->atime == SMR_NS_NOATIME	  ? MS_NOATIME :
						    MS_RELATIME) |
		 (mo->nodiratime ? MS_NODIRATIME : 0);
	if (mount(NULL, mo->mnt, NULL, flags, NULL))
		smr_debug("the mount table keeps its atime flags: %s",
			  strerror(errno));
}

/*
 * Add (@add) or remove the note "helper=smrfs" on this mount in libmount's
 * table of userspace mount options (utab). Root's umount(8) learns the
 * type of a mount from statfs(2), which says only "fuse", and without the
 * note it would unmount by umount(2) itself and return before the last
 * commit; with it, umount(8) runs umount.smrfs, which waits for that.
 * (Another user's umount(8) reads the mount table, finds fuse.smrfs and
 * runs umount.fuse.smrfs.) Root only; without the note only the wait is
 * lost, so a failure is logged and no more. True when done.
 */
static bool utab_note(const struct mount_opts *mo, bool add)
{
	struct libmnt_update *upd;
	struct libmnt_fs *fs = NULL;
	int rc = -ENOMEM;

	if (geteuid() != 0)
		return false;
	upd = mnt_new_update();
	if (!upd)
		goto out;
	if (add) {
		fs = mnt_new_fs();
		if (!fs)
			goto out;
		rc = mnt_fs_set_source(fs, mo->dev);
		if (!rc)
			rc = mnt_fs_set_target(fs, mo->mnt);
		if (!rc)
			rc = mnt_fs_set_options(fs, "helper=smrfs");
		if (rc)
			goto out;
	}
	rc = mnt_update_set_fs(upd, 0, add ? NULL : mo->mnt, fs);
	if (!rc)
		rc = mnt_update_table(upd, NULL);
out:
	if (rc < 0)
		smr_warn("%s: cannot %s the umount helper note in the mount "
			 "table (%s)%s", mo->mnt, add ? "add" : "remove",
			 strerror(-rc), add ? ": umount(8) will not wait for "
			 "the last commit" : "");
	mnt_free_fs(fs);
	mnt_free_update(upd);
	return rc == 0;
}

/*
 * libfuse prints its own complaint about options it does not know ("fuse:
 * unknown option(s): ..."), which with ours made two lines for one mistake.
 * While the session is made its messages are caught here instead, to be
 * told as part of our one line. (A log function takes no argument, so this
 * is the program's state, like the held log below.)
 */
static char fuse_said[256];

static void catch_fuse_log(enum fuse_log_level level, const char *fmt,
			   va_list ap)
{
	size_t n = strlen(fuse_said);

	(void)level;
	if (n < sizeof(fuse_said) - 1)
		vsnprintf(fuse_said + n, sizeof(fuse_said) - n, fmt, ap);
}

/* "fuse: unknown option(s): `-o x'\n" -> "unknown option(s): `-o x'" */
static const char *fuse_said_line(void)
{
	char *s = fuse_said, *nl;

	if (!strncmp(s, "fuse: ", 6))
		s += 6;
	nl = strchr(s, '\n');
	if (nl)
		*nl = 0;
	return s;
}

/* @s for a FUSE option's value: libfuse splits options at commas and
 * takes a backslash as an escape, so both get one (a device path may hold
 * either). NULL without memory. */
static char *fuse_opt_escaped(const char *s)
{
	char *out = malloc(2 * strlen(s) + 1), *o = out;

	if (!out)
		return NULL;
	for (; *s; s++) {
		if (*s == ',' || *s == '\\')
			*o++ = '\\';
		*o++ = *s;
	}
	*o = 0;
	return out;
}

/* The session's userdata gets the namespace handle later: the session is
 * made (and the options checked) before the filesystem opens. On failure
 * one line says why. */
static struct fuse_session *make_session(struct mount_opts *mo,
					 const char *argv0,
					 struct smr_fuse_data *data)
{
	char *opts = NULL, *fsname;
	struct fuse_session *se;
	char *fargv[5];
	int fargc = 0;
	struct fuse_args args;
	/* Mounted by root, it is a filesystem of the system, which every user
	 * may use as the permission bits allow (default_permissions). */
	bool others = geteuid() == 0 &&
		      !(mo->fuse_opts && (strstr(mo->fuse_opts, "allow_other") ||
					  strstr(mo->fuse_opts, "allow_root")));

	fsname = fuse_opt_escaped(mo->fsname ? mo->fsname : mo->dev);
	if (!fsname ||
	    asprintf(&opts, "default_permissions%s,fsname=%s,subtype=%s%s%s%s",
		     others ? ",allow_other" : "", fsname,
		     mo->subtype ? mo->subtype : "smrfs",
		     mo->ro ? ",ro" : "", mo->fuse_opts ? "," : "",
		     mo->fuse_opts ? mo->fuse_opts : "") < 0) {
		free(fsname);
		fprintf(stderr, PROG ": no memory\n");
		return NULL;
	}
	free(fsname);
	fargv[fargc++] = (char *)argv0;
	fargv[fargc++] = "-o";
	fargv[fargc++] = opts;
	if (mo->debug)
		fargv[fargc++] = "-d";
	fargv[fargc] = NULL;
	args = (struct fuse_args)FUSE_ARGS_INIT(fargc, fargv);
	fuse_said[0] = 0;
	fuse_set_log_func(catch_fuse_log);
	se = fuse_session_new(&args, &smr_fuse_ops, sizeof(smr_fuse_ops),
			      data);
	fuse_set_log_func(NULL); /* back to libfuse's own, on stderr */
	fuse_opt_free_args(&args);
	free(opts);
	if (!se && fuse_said[0])
		fprintf(stderr, PROG ": bad FUSE options: %s (see --help)\n",
			fuse_said_line());
	else if (!se)
		fprintf(stderr, PROG ": bad FUSE options (see --help)\n");
	else if (fuse_said[0])
		fputs(fuse_said, stderr);
	return se;
}

/* ------------------------------------------------------------------------
 * Opening the filesystem
 *
 * What the library logs while the filesystem opens is held back: after a
 * success it is shown, after a failure only the last error is, inside the
 * one line that says what went wrong. (A log sink takes no argument, so
 * this is the program's state, like its log settings.)
 * ------------------------------------------------------------------------ */

#define HELD_MAX 8

/* Threads the library starts while it opens (the commit timer, the
 * cleaner, the device's own) log through the sink too, so the held log
 * has a lock; once replayed it is closed, and a message that still comes
 * through hold_sink (its thread read the sink before the switch) is shown
 * at once, after the replayed ones. */
static pthread_mutex_t held_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	unsigned int n;
	bool closed;
	enum smr_log_level level[HELD_MAX];
	char msg[HELD_MAX][256];
	char last_err[256];
} held; /* protected by held_lock */

static void hold_sink(enum smr_log_level level, const char *msg)
{
	pthread_mutex_lock(&held_lock);
	if (held.closed) {
		smr_log(level, "%s", msg);
	} else {
		if (level <= SMR_LOG_ERR)
			snprintf(held.last_err, sizeof(held.last_err), "%s",
				 msg);
		if (held.n < HELD_MAX) {
			held.level[held.n] = level;
			snprintf(held.msg[held.n], sizeof(held.msg[0]), "%s",
				 msg);
			held.n++;
		}
	}
	pthread_mutex_unlock(&held_lock);
}

/* After smr_log_set_sink() took hold_sink away: show what it held (the
 * sink now is another, so smr_log() does not come back here). */
static void held_replay(void)
{
	pthread_mutex_lock(&held_lock);
	for (unsigned int i = 0; i < held.n; i++)
		smr_log(held.level[i], "%s", held.msg[i]);
	held.n = 0;
	held.last_err[0] = 0;
	held.closed = true;
	pthread_mutex_unlock(&held_lock);
}


struct fs {
	struct smr_dev *dev;
	struct smr_cow *cow;
	struct smr_ns *ns;
};

#ifdef SMR_FUSE_MEMCOW
/* Test build: a fresh in-memory filesystem; DEVICE is only a name. */
static int open_fs(struct mount_opts *mo, struct fs *fs)
{
	struct smr_ns_opts no = {
		.track_lookups = true,
		.atime = (enum smr_ns_atime)mo->atime,
		.nodiratime = mo->nodiratime,
	};
	struct smr_ns_cred cr = { .uid = getuid(), .gid = getgid() };
	int rc = memcow_create(256 * SMR_MIB, 4096, &fs->cow);

	if (!rc)
		rc = smr_ns_mkfs(fs->cow, &cr);
	if (!rc)
		rc = smr_ns_open(fs->cow, &no, &fs->ns);
	if (rc)
		fprintf(stderr, PROG ": in-memory filesystem: %s\n",
			strerror(-rc));
	return rc;
}

static int close_fs(struct fs *fs)
{
	smr_ns_close(fs->ns);
	return smr_cow_close(fs->cow);
}
#else
/* "mount.smrfs: DEVICE: WHAT (the library's reason)" */
static void open_failed(const struct mount_opts *mo, const char *what)
{
	pthread_mutex_lock(&held_lock);
	if (held.last_err[0])
		fprintf(stderr, PROG ": %s: %s (%s)\n", mo->dev, what,
			held.last_err);
	else
		fprintf(stderr, PROG ": %s: %s\n", mo->dev, what);
	pthread_mutex_unlock(&held_lock);
}

static int open_fs(struct mount_opts *mo, struct fs *fs)
{
	struct smr_dev_opts dopts = { .read_only = mo->ro,
				      .busy_wait = SMR_DEV_BUSY_WAIT };
	struct smr_cow_opts copts = {
		.read_only = mo->ro,
		.alloc = mo->alloc,
		.cache_bytes = mo->cache_bytes,
		.commit_secs = mo->commit_secs,
		.fsync_log = mo->fsync_log < 0 ? FSYNC_DEFAULT_LOG :
						 mo->fsync_log == 1,
		/* A read-only mount shows what fsync made durable. */
		.replay_ro = true,
		/* gc=off: no cleaning ahead of need, but the thread still
		 * cleans once metadata takes the reserve, which nothing else
		 * would (a data write that finds no space cleans itself). */
		.gc_need_only = mo->gc_off,
		.gc_policy = mo->gc_policy,
		.gc_low = mo->gc_low,
		.gc_high = mo->gc_high,
	};
	struct smr_ns_opts nopts = {
		.track_lookups = true,
		.atime = (enum smr_ns_atime)mo->atime,
		.nodiratime = mo->nodiratime,
	};
	const struct smr_dev_info *info;
	int rc;

	rc = smr_dev_open(mo->dev, &dopts, &fs->dev);
	if (rc) {
		open_failed(mo, rc == -EBUSY ?
			"in use (already mounted, or open in another program)" :
			rc == -EINVAL ? "not a usable device" : strerror(-rc));
		return rc;
	}
	/* The watermarks count free zones: at or past the device's zones,
	 * cleaning would never stop. */
	info = smr_dev_info(fs->dev);
	if (info->zoned && (mo->gc_low >= info->nr_zones ||
			    mo->gc_high >= info->nr_zones)) {
		char what[128];

		snprintf(what, sizeof(what),
			 "%s=%u: the device has only %u zones",
			 mo->gc_low >= info->nr_zones ? "gc_low" : "gc_high",
			 mo->gc_low >= info->nr_zones ? mo->gc_low :
							mo->gc_high,
			 info->nr_zones);
		open_failed(mo, what);
		rc = -EINVAL;
		goto out_dev;
	}
#ifdef SMR_FUSE_FAULT
	rc = fault_daemon_stack(&fs->dev);
	if (rc) {
		open_failed(mo, "cannot stack the fault device");
		goto out_dev;
	}
#endif
	rc = smr_cow_open(fs->dev, &copts, &fs->cow);
	if (rc) {
		char what[128];

		if (rc == -EINVAL && mo->alloc)
			snprintf(what, sizeof(what),
				 "cannot be mounted with alloc=%s", mo->alloc);
		else if (rc == -ENOENT && mo->alloc)
			snprintf(what, sizeof(what), "unknown allocator '%s'",
				 mo->alloc);
		else
			snprintf(what, sizeof(what), "%s",
				 rc == -EINVAL ? "not an smrfs filesystem" :
				 rc == -EMEDIUMTYPE ?
				 "an smrfs filesystem made for another device" :
				 rc == -SMR_EFSCORRUPTED || rc == -SMR_EFSBADCRC ?
				 "the filesystem is damaged; run fsck.smrfs" :
				 rc == -EOPNOTSUPP ?
				 "uses features this version does not support" :
				 rc == -EROFS ?
				 "can only be mounted read-only (-o ro)" :
				 strerror(-rc));
		open_failed(mo, what);
		goto out_dev;
	}
	rc = smr_ns_open(fs->cow, &nopts, &fs->ns);
	if (rc) {
		open_failed(mo, "cannot open the namespace");
		goto out_cow;
	}
	return 0;
out_cow:
	smr_cow_close(fs->cow);
out_dev:
	fs_dev_close(fs->dev);
	return rc;
}

static int close_fs(struct fs *fs)
{
	int rc, rc2;

	smr_ns_close(fs->ns);
	rc = smr_cow_close(fs->cow);
	rc2 = fs_dev_close(fs->dev);
	return rc ? rc : rc2;
}
#endif

static void syslog_sink(enum smr_log_level level, const char *msg)
{
	syslog((int)level, "%s", msg);
}

/* Fork: the parent waits for the child's verdict and exits with it. */
static int go_background(int *status_fd)
{
	int p[2];
	pid_t pid;
	char c = 1;

	if (pipe(p)) {
		perror(PROG ": pipe");
		return -errno;
	}
	pid = fork();
	if (pid < 0) {
		perror(PROG ": fork");
		return -errno;
	}
	if (pid > 0) {
		close(p[1]);
		if (read(p[0], &c, 1) != 1)
			c = 1;
		_exit(c);
	}
	close(p[0]);
	setsid();
	*status_fd = p[1];
	return 0;
}

static void report_status(int *status_fd, char status)
{
	if (*status_fd < 0)
		return;
	if (write(*status_fd, &status, 1) != 1)
		smr_warn("telling the parent: %s", strerror(errno));
	close(*status_fd);
	*status_fd = -1;
}

static void detach_stdio(void)
{
	int fd = open("/dev/null", O_RDWR);

	if (fd < 0)
		return;
	dup2(fd, 0);
	dup2(fd, 1);
	dup2(fd, 2);
	if (fd > 2)
		close(fd);
	if (chdir("/"))
		smr_warn("chdir /: %s", strerror(errno));
}

int main(int argc, char **argv)
{
	struct mount_opts mo = { .fsync_log = -1 };
	struct fuse_loop_config cfg = { .clone_fd = 0, .max_idle_threads = 10 };
	struct fuse_session *se;
	struct stat st;
	struct fs fs = { 0 };
	struct smr_fuse_data data = { 0 };
	int status_fd = -1, rc, ret = 1;
	bool noted;

	/* Before anything is opened: see stdio_guard.c. */
	if (smr_stdio_guard())
		return 1;
	rc = parse_args(argc, argv, &mo);
	if (rc) {
		/* What the options took so far (fsname=, subtype=, FUSE's). */
		ret = rc == 1 ? 0 : 1;
		goto out_opts;
	}
	if (mo.debug)
		smr_log_set_level(SMR_LOG_DEBUG);
	else if (mo.log_level)
		smr_log_set_level((enum smr_log_level)mo.log_level);
	if (smr_failpoint_init())
		goto out_opts;
#ifdef SMR_FUSE_FAULT
	if (fault_daemon_init())
		goto out_opts;
#endif
	/* A remount needs no device: mount(8) names the one of the mount
	 * table, which may since have moved. */
	if (mo.remount) {
		ret = do_remount(&mo) ? 1 : 0;
		goto out_opts;
	}
	if (resolve_paths(&mo))
		goto out_opts;
	if (stat(mo.mnt, &st)) {
		fprintf(stderr, PROG ": mount point %s: %s\n", mo.mnt,
			strerror(errno));
		goto out_opts;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, PROG ": mount point %s: not a directory\n",
			mo.mnt);
		goto out_opts;
	}
	data.noacl = mo.noacl;
	data.writeback = mo.writeback;
	se = make_session(&mo, argv[0], &data);
	if (!se)
		goto out_opts;
	if (!mo.foreground && go_background(&status_fd))
		goto out_session;
	if (!mo.debug)
		smr_log_set_sink(hold_sink);
	rc = open_fs(&mo, &fs);
	smr_log_set_sink(NULL);
	if (rc)
		goto out_status;
	data.ns = fs.ns;
	held_replay();
	/* A shell starts a job in the background with SIGINT ignored, and
	 * libfuse leaves an ignored signal alone; SIGINT and SIGTERM commit
	 * and unmount whoever started the daemon. (SIGHUP stays as it came:
	 * nohup.) */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	if (fuse_set_signal_handlers(se)) {
		fprintf(stderr, PROG ": cannot set signal handlers\n");
		goto out_fs;
	}
	if (fuse_session_mount(se, mo.mnt)) {
		fprintf(stderr, PROG ": cannot mount on %s\n", mo.mnt);
		goto out_signals;
	}
	show_atime(&mo);
	noted = utab_note(&mo, true);
	if (smr_fuse_session_hooks(se))
		smr_warn("cannot hook the FUSE session's I/O: every write "
			 "costs the kernel's capability check, and neither "
			 "O_TMPFILE nor birth times are supported");
	if (!mo.foreground) {
		openlog(PROG, LOG_PID, LOG_DAEMON);
		smr_log_set_sink(syslog_sink);
		report_status(&status_fd, 0);
		detach_stdio();
	}
	{
		struct smr_cow_info ci;

		smr_cow_info(fs.cow, &ci);
		smr_info("%s mounted on %s%s; %s", mo.dev, mo.mnt,
			 mo.ro ? " read-only" : "", ci.alloc_why);
	}
	rc = fuse_session_loop_mt(se, &cfg);
	fuse_session_unmount(se);
	if (noted)
		utab_note(&mo, false);
	smr_failpoint("daemon.before_close");
	ret = rc < 0 ? 1 : 0;
out_signals:
	fuse_remove_signal_handlers(se);
out_fs:
	rc = close_fs(&fs);
	if (rc) {
		smr_err("%s: the last commit failed: %s", mo.dev,
			strerror(-rc));
		ret = 1;
	} else if (ret == 0) {
		smr_info("%s unmounted cleanly", mo.dev);
	}
out_status:
	report_status(&status_fd, 1);
out_session:
	if (se)
		fuse_session_destroy(se);
out_opts:
	free(mo.alloc);
	free(mo.fsname);
	free(mo.subtype);
	free(mo.fuse_opts);
	free(mo.dev_path);
	free(mo.mnt_path);
	return ret;
}
