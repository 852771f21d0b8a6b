/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * par.h - one helper thread that runs a caller's side work while the caller
 * does its own: a checksum of data while the same data is being written.
 *
 * smr_par_submit() queues a job; smr_par_join() returns once it has run. A
 * job the helper has not started when it is joined is taken back and run by
 * the joining thread itself, so a busy or starved helper never makes the
 * caller wait longer than doing the job inline would. Any number of threads
 * may submit and join; each joins its own jobs. A NULL helper runs every job
 * in smr_par_join().
 */
#ifndef SMR_UTIL_PAR_H
#define SMR_UTIL_PAR_H

struct smr_par;

/* A job. The caller's memory (on its stack, say) until joined. */
struct smr_par_job {
	void (*fn)(void *arg);
	void *arg;
	int state;                /* private: queued, running, done */
	struct smr_par_job *next; /* private: the queue */
};

/* Start a helper: 0, -ENOMEM, or the error of pthread_create. */
int smr_par_create(struct smr_par **pp);
/* Stop and free it (no job may be queued). NULL is allowed. */
void smr_par_destroy(struct smr_par *p);

/* Queue @fn(@arg) as @j. */
void smr_par_submit(struct smr_par *p, struct smr_par_job *j,
		    void (*fn)(void *arg), void *arg);
/* Return when @j has run: wait for the helper if it is running it, run it
 * here if it has not started. */
void smr_par_join(struct smr_par *p, struct smr_par_job *j);

#endif
