/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ckpt_scan.c - fsck's last resort when no checkpoint record is left: the
 * roots of a checkpoint found again among the B-tree nodes on the device
 * (smr_ckpt_from_scan; docs/design/fsck.md).
 *
 * Every commit writes the nodes it changed, children before parents, the
 * root of each tree it changed last; the checkpoint record only names the
 * roots. A tree's newest root is then its node of the newest generation
 * at the highest level, taken when the tree below it reads back whole
 * (each child verifying against its parent's entry). Where it does not,
 * the choice is between that root with the damage below it (the salvage
 * drops it), the commit before (when the newest root is missing: a commit
 * cut short), and the leaves alone (cs_root).
 */
#include "cow/cow_priv.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* A node the scan found: which tree, which commit, how high. */
struct cs_node {
	uint64_t addr, gen;
	uint32_t tree;
	uint16_t level;
};

struct cs_scan {
	struct cs_node *v;
	size_t n, cap;
};

static int cs_found(void *arg, uint64_t addr, const void *node)
{
	struct cs_scan *s = arg;
	struct smr_blk_id id;
	int rc = smr_array_grow((void **)&s->v, &s->cap, s->n, sizeof(*s->v));

	if (rc)
		return rc;
	smr_blk_hdr_decode(node, &id);
	s->v[s->n++] = (struct cs_node){ .addr = addr, .gen = id.gen,
					 .tree = (uint32_t)id.owner,
					 .level = smr_node_level(node) };
	return 0;
}

/* By tree, then newest first, highest first, the later address first. */
static int cs_cmp(const void *x, const void *y)
{
	const struct cs_node *a = x, *b = y;

	if (a->tree != b->tree)
		return a->tree < b->tree ? -1 : 1;
	if (a->gen != b->gen)
		return a->gen > b->gen ? -1 : 1;
	if (a->level != b->level)
		return a->level > b->level ? -1 : 1;
	return a->addr > b->addr ? -1 : a->addr < b->addr;
}

/* What a walk of one candidate's tree found. */
struct cs_walk {
	struct smr_cow *c;
	uint32_t tree;
	size_t nodes;                /* of the tree, found by the scan */
	bool stop;                   /* at the first node that does not read */
	void *buf[SMR_BT_MAX_LEVEL]; /* one node buffer a level */
	uint64_t items;              /* in the leaves that read */
	uint64_t bad;                /* nodes that did not */
	uint64_t left;               /* reads left: a tree has no more nodes
				      * than the scan found of it, and a
				      * damaged one naming a subtree many
				      * times must not take forever */
};

/* Read the node at @addr as its parent names it, and everything below. */
static int cs_walk(struct cs_walk *w, uint64_t addr, uint64_t gen,
		   uint16_t level)
{
	struct smr_cow *c = w->c;
	struct smr_blk_expect exp = { .addr = addr, .gen = gen,
				      .owner = w->tree, .uuid = c->sb.uuid };
	void *buf = w->buf[level];
	uint32_t cnt;
	int rc;

	/* Outside the data area: damage, said quietly (the store's read
	 * would log it, and candidates are tried in turn). */
	if (addr < c->sb.data_start || addr + c->ns > c->sb.capacity ||
	    !w->left) {
		w->bad++;
		return 0;
	}
	w->left--;
	rc = c->sops->read(c, addr, buf, c->ns);
	if (rc)
		return rc;
	if (!smr_blk_matches(buf, c->ns, &smr_node_ops, &exp) ||
	    smr_node_level(buf) != level ||
	    smr_node_ops.verify(buf, c->ns, addr)) {
		w->bad++;
		return 0;
	}
	cnt = smr_node_nritems(buf);
	if (!level) {
		w->items += cnt;
		return 0;
	}
	for (uint32_t i = 0; i < cnt && !(w->stop && w->bad); i++) {
		/* The buffer of a lower level: this one stays as it is. */
		rc = cs_walk(w, smr_int_addr(buf, i), smr_int_gen(buf, i),
			     (uint16_t)(level - 1));
		if (rc)
			return rc;
	}
	return 0;
}

/* Walk the tree under @n into w->items and w->bad. */
static int cs_walk_from(struct cs_walk *w, const struct cs_node *n, bool stop)
{
	w->items = w->bad = 0;
	w->left = w->nodes;
	w->stop = stop;
	return cs_walk(w, n->addr, n->gen, n->level);
}

/* The nodes of one generation of a tree in the scan's order: the top
 * ones first. */
struct cs_gen {
	const struct cs_node *v;
	size_t n;
};

/*
 * Can generation @g's top node be the root of a commit: alone at its
 * level, and not lower than the top of the generation before (@prev, n = 0
 * if none)? Two or more nodes at the top are the children of a root that
 * is missing (a commit cut short, or a root split in it) or a commit cut
 * short and made again. Part of a commit cut short can read back whole by
 * itself (a leaf written before its parents), but it is lower than the
 * root before it, and a tree does not get lower from one commit to the
 * next but by deletions that merge a level away (that commit is then given
 * up).
 */
static bool cs_top(const struct cs_gen *g, const struct cs_gen *prev)
{
	return (g->n < 2 || g->v[1].level != g->v[0].level) &&
	       (!prev->n || g->v[0].level >= prev->v[0].level);
}

/* Is generation @g a whole commit of its tree: cs_top, and the tree under
 * its top node reads back whole? */
static int cs_whole(struct cs_walk *w, const struct cs_gen *g,
		    const struct cs_gen *prev, bool *whole)
{
	int rc;

	*whole = false;
	if (!cs_top(g, prev))
		return 0;
	rc = cs_walk_from(w, g->v, true);
	*whole = !rc && !w->bad;
	return rc;
}

/*
 * The root of one tree among its @n nodes @v (sorted by cs_cmp), in this
 * order of preference:
 *
 * 1. The top node of the newest commit, if it is whole (cs_whole).
 * 2. The newest top node, if it can be a root (cs_top): the newest tree,
 *    with damage below its root that the salvage drops and fills from the
 *    leaves.
 * 3. The top node of the commit before the newest, if it is whole: the
 *    newest one's root is missing, cut short (on a zoned device the nodes
 *    of a commit reach it children first, the root last) or lost.
 * 4. SMR_ROOT_LOST: the salvage rebuilds the whole tree from the newest
 *    leaves on the device. An older whole commit is not taken: it may be
 *    far older than the newest tree.
 */
static int cs_root(struct cs_walk *w, const struct cs_node *v, size_t n,
		   struct smr_root *r)
{
	struct cs_gen g[3] = { { 0 } };
	const struct cs_node *take = NULL;
	const char *why = NULL;
	bool whole;
	int rc;

	for (size_t i = 0, k = 0; i < n && k < 3; k++) {
		g[k].v = v + i;
		while (i < n && v[i].gen == g[k].v->gen)
			i++;
		g[k].n = (size_t)(v + i - g[k].v);
	}
	rc = cs_whole(w, &g[0], &g[1], &whole);
	if (rc)
		return rc;
	if (whole) {
		take = g[0].v;
	} else if (cs_top(&g[0], &g[1])) {
		take = g[0].v;
		why = "its root is taken, for the salvage to drop what does "
		      "not read and fill it from the leaves";
	} else {
		if (g[1].n) {
			rc = cs_whole(w, &g[1], &g[2], &whole);
			if (rc)
				return rc;
		}
		take = g[1].n && whole ? g[1].v : NULL;
		why = take ? "its root is missing (cut short), and the commit "
			     "before it is taken" :
			     "its root is taken as lost, for the salvage to "
			     "rebuild the tree from its newest leaves";
	}
	if (why)
		smr_warn("checkpoint rebuild: tree %u: its newest commit "
			 "(generation %" PRIu64 ") does not read back whole: %s",
			 w->tree, v[0].gen, why);
	rc = cs_walk_from(w, take ? take : v, false);
	if (rc)
		return rc;
	*r = (struct smr_root){ .tree = w->tree, .nr_items = w->items,
				.addr = take ? take->addr : SMR_ROOT_LOST,
				.gen = take ? take->gen : v[0].gen,
				.level = take ? take->level : 0 };
	return 0;
}

int smr_ckpt_from_scan(struct smr_cow *c, struct smr_ckpt *ck)
{
	struct cs_scan s = { 0 };
	struct cs_walk w = { .c = c };
	int rc;

	memset(ck, 0, sizeof(*ck));
	if (!c->sops->scan_nodes)
		return -EOPNOTSUPP;
	rc = c->sops->scan_nodes(c, 0, cs_found, &s);
	if (rc)
		goto out;
	if (!s.n) {
		smr_err("checkpoint rebuild: no B-tree node of this "
			"filesystem is left on the device");
		rc = -SMR_EFSCORRUPTED;
		goto out;
	}
	qsort(s.v, s.n, sizeof(*s.v), cs_cmp);
	for (uint32_t l = 0; l < SMR_BT_MAX_LEVEL; l++) {
		w.buf[l] = smr_dev_buf_alloc(c->ns);
		if (!w.buf[l]) {
			rc = -ENOMEM;
			goto out;
		}
	}
	for (size_t i = 0, end; i < s.n && !rc; i = end) {
		struct smr_root *rt = &ck->roots[ck->nr_roots];

		for (end = i; end < s.n && s.v[end].tree == s.v[i].tree; end++)
			ck->gen = SMR_MAX(ck->gen, s.v[end].gen);
		w.tree = s.v[i].tree;
		w.nodes = end - i;
		rc = cs_root(&w, s.v + i, end - i, rt);
		if (rc)
			break;
		if (rt->addr != SMR_ROOT_LOST)
			smr_warn("checkpoint rebuild: tree %u: root at byte %"
				 PRIu64 " (generation %" PRIu64 ", level %u, %"
				 PRIu64 " items)", w.tree, rt->addr, rt->gen,
				 rt->level, rt->nr_items);
		ck->nr_roots++;
	}
out:
	for (uint32_t l = 0; l < SMR_BT_MAX_LEVEL; l++)
		smr_dev_buf_free(w.buf[l]);
	free(s.v);
	return rc;
}
