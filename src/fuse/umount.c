/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * umount.c - umount.smrfs: unmount an smrfs, and return only once its
 * daemon has written its last commit and let go of the device.
 *
 *   umount.smrfs MOUNTPOINT [-flnrv] [-t TYPE] [-N NAMESPACE]
 *
 * The kernel unmounts a FUSE filesystem at once and only then tells its
 * daemon, which then commits what was still in memory and exits: without
 * this helper, umount(8) returns while the last commit is still being
 * written, and a script that goes on to copy, check or detach the device
 * would find it busy or behind. umount(8) runs this helper for the type of
 * the mount table (fuse.smrfs, as umount.fuse.smrfs), with the options
 * above. The daemon names itself through SMRFS_IOC_STAT before the unmount
 * (one that does not answer within ASK_SECS is not waited for); afterwards
 * a pidfd tells when it has exited.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fuse/smrfs_ioctl.h"
#include "smr_commit.h"
#include "util/smr.h"

#define PROG "umount.smrfs"

/* Exit codes of umount(8). */
#define EX_USAGE 1
#define EX_SYSERR 2
#define EX_FAIL 32

static void usage(FILE *f)
{
	fputs("Usage: " PROG " MOUNTPOINT [-flnrv] [-t TYPE] [-N NAMESPACE]\n"
	      "\n"
	      "Unmount the smrfs at MOUNTPOINT and wait until its daemon has "
	      "written its\nlast commit and let go of the device. umount(8) "
	      "runs it as umount.fuse.smrfs\nfor every smrfs in the mount "
	      "table.\n"
	      "\n"
	      "  -l, --lazy       detach now, clean up once no longer busy; "
	      "does not wait\n"
	      "                   for the daemon, which ends only then\n"
	      "  -f, --force      abort the requests the daemon has not "
	      "answered yet\n"
	      "  -r, --read-only  if the filesystem is busy, remount it "
	      "read-only instead\n"
	      "  -v, --verbose    say what is done and waited for\n"
	      "  -n, --no-mtab    accepted for umount(8); there is no mtab to "
	      "write\n"
	      "  -t, --types TYPE the type from the mount table; only "
	      "fuse.smrfs is unmounted\n"
	      "  -N, --namespace NS  unmount in the mount namespace NS (a "
	      "path or a pid)\n"
	      "  -h, --help       this text\n"
	      "  -V, --version    the version\n"
	      "\n"
	      "A user unmounts their own mount through fusermount3 -u. Exit "
	      "status: 0 unmounted,\n1 bad usage, 2 system error, 32 not "
	      "unmounted.\n",
	      f);
}

/* Enter the mount namespace @ns: a path, or the pid of a process in it. */
static int enter_namespace(const char *ns)
{
	char path[64];
	char *end;
	long pid = strtol(ns, &end, 10);
	int fd;

	if (*ns && !*end && pid > 0) {
		snprintf(path, sizeof(path), "/proc/%ld/ns/mnt", pid);
		ns = path;
	}
	fd = open(ns, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWNS)) {
		fprintf(stderr, PROG ": namespace %s: %s\n", ns,
			strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/* How long the daemon has to say who it is. One that does not answer
 * (stopped, or hung) is not waited for, and does not hold up the unmount,
 * which does not need it. */
#define ASK_SECS 5

/*
 * Ask the daemon of @mnt for its figures (SMRFS_IOC_STAT) into *@st. The
 * open and the ioctl are FUSE requests, which a stopped or hung daemon
 * never answers and only a fatal signal interrupts: a child asks, and is
 * killed after ASK_SECS. Returns 0 or an errno value (ETIMEDOUT then).
 */
static int ask_daemon(const char *mnt, struct smrfs_ioc_stat *st)
{
	int pipefd[2], status, err = 0;
	struct pollfd p;
	ssize_t n;
	pid_t pid;

	if (pipe2(pipefd, O_CLOEXEC))
		return errno;
	pid = fork();
	if (pid < 0) {
		err = errno;
		close(pipefd[0]);
		close(pipefd[1]);
		return err;
	}
	if (!pid) {
		/* The figures, or the errno alone (less than PIPE_BUF: one
		 * write, read whole). */
		int fd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		if (fd < 0 || ioctl(fd, SMRFS_IOC_STAT, st)) {
			err = errno;
			n = write(pipefd[1], &err, sizeof(err));
		} else {
			n = write(pipefd[1], st, sizeof(*st));
		}
		_exit(n > 0 ? 0 : 1);
	}
	close(pipefd[1]);
	p = (struct pollfd){ .fd = pipefd[0], .events = POLLIN };
	while ((n = poll(&p, 1, ASK_SECS * 1000)) < 0 && errno == EINTR)
		;
	if (n == 0) {
		kill(pid, SIGKILL);
		err = ETIMEDOUT;
	} else {
		n = read(pipefd[0], st, sizeof(*st));
		if (n == (ssize_t)sizeof(err))
			memcpy(&err, st, sizeof(err));
		else if (n != (ssize_t)sizeof(*st))
			err = EIO;
	}
	close(pipefd[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return err;
}

/*
 * A pidfd of the daemon that serves @mnt, or -1 where there is none to wait
 * for: the daemon is gone (the mount is dead), does not answer, is older
 * (it does not name itself), or is in another pid namespace, where its pid
 * names someone else.
 */
static int daemon_pidfd(const char *mnt, bool verbose)
{
	struct smrfs_ioc_stat st;
	struct stat ns;
	const char *why = NULL;
	int err, pidfd = -1;

	memset(&st, 0, sizeof(st));
	err = ask_daemon(mnt, &st);
	if (err)
		why = err == ETIMEDOUT ? "it does not answer" : strerror(err);
	else if (!st.daemon_pid)
		why = "a daemon that does not name itself";
	else if (stat("/proc/self/ns/pid", &ns) ||
		 (uint64_t)ns.st_ino != st.daemon_pidns)
		why = "the daemon is in another pid namespace";
	else if ((pidfd = (int)syscall(SYS_pidfd_open,
				       (pid_t)st.daemon_pid, 0)) < 0)
		why = strerror(errno);
	if (why && verbose)
		printf(PROG ": %s: not waiting for the daemon: %s\n", mnt, why);
	return pidfd;
}

/* Run @argv (a program on PATH) and return its exit status, or -1. */
static int run(char *const argv[])
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (!pid) {
		execvp(argv[0], argv);
		fprintf(stderr, PROG ": %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* umount -r of a busy filesystem: mount.smrfs remounts it read-only, the
 * kernel's mount and the daemon both. */
static int remount_read_only(const char *mnt)
{
	char self[PATH_MAX], helper[PATH_MAX + 16];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	/* The mount.smrfs installed beside this program, else on PATH. */
	snprintf(helper, sizeof(helper), "mount.smrfs");
	if (n > 0) {
		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			snprintf(helper, sizeof(helper), "%s/mount.smrfs",
				 self);
			if (access(helper, X_OK))
				snprintf(helper, sizeof(helper), "mount.smrfs");
		}
	}
	return run((char *const[]){ helper, "none", (char *)mnt, "-o",
				    "remount,ro", NULL });
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "lazy", no_argument, NULL, 'l' },
		{ "force", no_argument, NULL, 'f' },
		{ "read-only", no_argument, NULL, 'r' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "no-mtab", no_argument, NULL, 'n' },
		{ "types", required_argument, NULL, 't' },
		{ "namespace", required_argument, NULL, 'N' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	bool lazy = false, force = false, ro = false, verbose = false;
	const char *type = NULL, *mnt;
	char real[PATH_MAX], fstype[64];
	int c, flags = 0, pidfd, err;

	while ((c = getopt_long(argc, argv, "lfrvnt:N:hV", longopts,
				NULL)) != -1) {
		switch (c) {
		case 'l': lazy = true; break;
		case 'f': force = true; break;
		case 'r': ro = true; break;
		case 'v': verbose = true; break;
		case 'n': break;
		case 't': type = optarg; break;
		case 'N':
			if (enter_namespace(optarg))
				return EX_SYSERR;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf(PROG " (smrfs) %s, commit %s\n",
			       PACKAGE_VERSION, SMR_BUILD_COMMIT);
			return 0;
		default:
			fputs("Try '" PROG " --help'.\n", stderr);
			return EX_USAGE;
		}
	}
	if (optind + 1 != argc) {
		fputs("Usage: " PROG " MOUNTPOINT [-flnrv] (see --help)\n",
		      stderr);
		return EX_USAGE;
	}
	mnt = argv[optind];
	if (type && strcmp(type, "fuse.smrfs") && strcmp(type, "smrfs")) {
		fprintf(stderr, PROG ": %s: type %s is not smrfs\n", mnt, type);
		return EX_USAGE;
	}
	/* The mount table holds canonical paths. */
	if (realpath(mnt, real))
		mnt = real;
	err = smr_mountinfo_find(mnt, fstype, sizeof(fstype), NULL, 0);
	if (err) {
		fprintf(stderr, PROG ": %s: %s\n", mnt,
			err == -ENOENT ? "not mounted" : strerror(-err));
		return EX_FAIL;
	}
	if (strcmp(fstype, "fuse.smrfs")) {
		fprintf(stderr, PROG ": %s: not an smrfs but %s\n", mnt,
			fstype);
		return EX_FAIL;
	}

	/* A lazy unmount ends the daemon only when the last user of the
	 * filesystem leaves: not a wait for the command. */
	pidfd = lazy ? -1 : daemon_pidfd(mnt, verbose);
	if (lazy)
		flags |= MNT_DETACH;
	if (force)
		flags |= MNT_FORCE;
	if (umount2(mnt, flags)) {
		err = errno;
		if (err == EPERM && getuid() != 0) {
			/* A user's own mount: fusermount3 may unmount it. */
			if (run((char *const[]){ "fusermount3",
						 lazy ? "-uz" : "-u",
						 (char *)mnt, NULL }))
				goto fail;
		} else if (err == EBUSY && ro) {
			if (remount_read_only(mnt))
				goto fail;
			if (verbose)
				printf(PROG ": %s: busy, remounted read-only\n",
				       mnt);
			goto out;
		} else {
			fprintf(stderr, PROG ": %s: %s\n", mnt,
				err == EBUSY ? "target is busy" :
					       strerror(err));
			goto fail;
		}
	}
	if (pidfd >= 0) {
		struct pollfd p = { .fd = pidfd, .events = POLLIN };

		int n, secs = 0;

		if (verbose)
			printf(PROG ": %s: unmounted; waiting for its daemon's "
			       "last commit\n", mnt);
		/* As long as it takes; after a while, say what for. */
		while ((n = poll(&p, 1, 1000)) <= 0) {
			if (n < 0 && errno != EINTR)
				break;
			if (n == 0 && ++secs == 10)
				fprintf(stderr, PROG ": %s: unmounted; still "
					"waiting for the daemon to write its "
					"last commit (interrupting stops the "
					"wait, not the commit)\n", mnt);
		}
	}
	if (verbose)
		printf(PROG ": %s: unmounted\n", mnt);
out:
	if (pidfd >= 0)
		close(pidfd);
	return 0;
fail:
	if (pidfd >= 0)
		close(pidfd);
	return EX_FAIL;
}
