/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fault_daemon.c - the fault device under the test build of the daemon
 * (fault_daemon.h). One per process: this is the program's test harness,
 * not filesystem state. */
#include "fault_daemon.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dev/fault.h"
#include "util/smr.h"

static struct {
	struct smr_fault_rule rule;
	struct smr_fault *f;
	struct smr_dev *lower;
	pthread_t thread;
	bool running;
} fd_state;

static sigset_t fault_sigs(void)
{
	sigset_t s;

	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	sigaddset(&s, SIGUSR2);
	return s;
}

static int parse_rule(const char *spec, struct smr_fault_rule *r)
{
	char what[16];
	unsigned long long after = 0;
	int err = EIO, n;

	n = sscanf(spec, "%15[a-z]:%llu:%d", what, &after, &err);
	if (n < 1 || err <= 0)
		return -EINVAL;
	if (!strcmp(what, "reads"))
		r->what = SMR_FAULT_FAIL_READS;
	else if (!strcmp(what, "writes"))
		r->what = SMR_FAULT_FAIL_WRITES;
	else if (!strcmp(what, "resets"))
		r->what = SMR_FAULT_FAIL_RESETS;
	else if (!strcmp(what, "flushes"))
		r->what = SMR_FAULT_FAIL_FLUSHES;
	else
		return -EINVAL;
	r->after = after;
	r->error = -err;
	return 0;
}

int fault_daemon_init(void)
{
	const char *spec = getenv("SMRFS_FAULT");
	sigset_t s = fault_sigs();

	if (spec && parse_rule(spec, &fd_state.rule)) {
		fprintf(stderr, "SMRFS_FAULT='%s': expected "
			"reads|writes|resets|flushes[:AFTER[:ERRNO]]\n", spec);
		return -EINVAL;
	}
	return -pthread_sigmask(SIG_BLOCK, &s, NULL);
}

static void *fault_main(void *arg)
{
	sigset_t s = fault_sigs();
	int sig;

	(void)arg;
	while (!sigwait(&s, &sig)) {
		if (sig == SIGUSR2) {
			smr_fault_disarm(fd_state.f);
			smr_warn("fault device: rule cleared");
		} else if (fd_state.rule.what) {
			smr_fault_arm(fd_state.f, &fd_state.rule);
			smr_warn("fault device: rule armed");
		}
	}
	return NULL;
}

int fault_daemon_stack(struct smr_dev **devp)
{
	struct smr_dev *dev;
	int rc;

	rc = smr_fault_open(*devp, &fd_state.f, &dev);
	if (rc)
		return rc;
	/* Faults only: a log of every write would grow without bound. */
	smr_fault_set_recording(fd_state.f, false);
	rc = -pthread_create(&fd_state.thread, NULL, fault_main, NULL);
	if (rc) {
		smr_dev_close(dev);
		smr_fault_free(fd_state.f);
		return rc;
	}
	fd_state.running = true;
	fd_state.lower = *devp;
	*devp = dev;
	return 0;
}

int fault_daemon_close(struct smr_dev *dev)
{
	int rc;

	if (fd_state.running) {
		pthread_cancel(fd_state.thread);
		pthread_join(fd_state.thread, NULL);
		fd_state.running = false;
	}
	rc = smr_dev_close(dev);
	smr_fault_free(fd_state.f);
	if (fd_state.lower) {
		int rc2 = smr_dev_close(fd_state.lower);

		rc = rc ? rc : rc2;
	}
	return rc;
}
