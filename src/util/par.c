/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * par.c - a helper thread for side work; see par.h.
 */
#include "util/par.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

enum { PAR_QUEUED, PAR_RUNNING, PAR_DONE };

struct smr_par {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t work;      /* a job queued, or stop */
	pthread_cond_t done;      /* a job done */
	/* protected by lock: */
	struct smr_par_job *head, *tail;
	bool stop;
};

static void *par_main(void *arg)
{
	struct smr_par *p = arg;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		struct smr_par_job *j;

		while (!p->stop && !p->head)
			pthread_cond_wait(&p->work, &p->lock);
		if (!p->head)
			break;
		j = p->head;
		p->head = j->next;
		if (!p->head)
			p->tail = NULL;
		j->state = PAR_RUNNING;
		pthread_mutex_unlock(&p->lock);
		j->fn(j->arg);
		pthread_mutex_lock(&p->lock);
		j->state = PAR_DONE;
		pthread_cond_broadcast(&p->done);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

int smr_par_create(struct smr_par **pp)
{
	struct smr_par *p = calloc(1, sizeof(*p));
	int rc;

	*pp = NULL;
	if (!p)
		return -ENOMEM;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->work, NULL);
	pthread_cond_init(&p->done, NULL);
	rc = pthread_create(&p->thread, NULL, par_main, p);
	if (rc) {
		pthread_cond_destroy(&p->done);
		pthread_cond_destroy(&p->work);
		pthread_mutex_destroy(&p->lock);
		free(p);
		return -rc;
	}
	*pp = p;
	return 0;
}

void smr_par_destroy(struct smr_par *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_signal(&p->work);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->thread, NULL);
	pthread_cond_destroy(&p->done);
	pthread_cond_destroy(&p->work);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

void smr_par_submit(struct smr_par *p, struct smr_par_job *j,
		    void (*fn)(void *arg), void *arg)
{
	j->fn = fn;
	j->arg = arg;
	j->state = PAR_QUEUED;
	j->next = NULL;
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	if (p->tail)
		p->tail->next = j;
	else
		p->head = j;
	p->tail = j;
	pthread_cond_signal(&p->work);
	pthread_mutex_unlock(&p->lock);
}

void smr_par_join(struct smr_par *p, struct smr_par_job *j)
{
	bool mine = false;

	if (!p) {
		j->fn(j->arg);
		return;
	}
	pthread_mutex_lock(&p->lock);
	if (j->state == PAR_QUEUED) {
		/* Not started: take it out of the queue and run it here. */
		struct smr_par_job **pj = &p->head, *prev = NULL;

		while (*pj != j) {
			prev = *pj;
			pj = &(*pj)->next;
		}
		*pj = j->next;
		if (p->tail == j)
			p->tail = prev;
		mine = true;
	}
	while (!mine && j->state != PAR_DONE)
		pthread_cond_wait(&p->done, &p->lock);
	pthread_mutex_unlock(&p->lock);
	if (mine) {
		j->fn(j->arg);
		j->state = PAR_DONE;
	}
}
