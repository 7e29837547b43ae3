/*
 * Recovery at start: every transaction the journal still holds is rolled
 * forward (its store commit happened) or back (it did not), and pending
 * history rows without a journal are marked rolled back. Every step
 * tolerates having been done already, so a crash during recovery is
 * recovered the same way.
 */
#include <string.h>
#include <time.h>

#include "engine_private.h"
#include "macro.h"

#define ROLLED_BACK_AT_START "interrupted: rolled back at start"

static int op_from_name(const char *name)
{
	for (size_t i = 0; i < _ENG_OP_MAX; i++)
		if (name && strcmp(name, eng_op_names[i]) == 0)
			return (int)i;
	return -1;
}

struct id_list {
	int64_t *ids;
	size_t n, cap;
};

static int id_push(struct id_list *l, int64_t id)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		int64_t *n = realloc(l->ids, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		l->ids = n;
		l->cap = cap;
	}
	l->ids[l->n++] = id;
	return 0;
}

static int collect_txid(int64_t txid, void *userdata)
{
	return id_push(userdata, txid);
}

static int collect_pending(const store_tx *row, void *userdata)
{
	return id_push(userdata, row->id);
}

struct jop {
	int kind;
	char *path;
	char *temp;
};

struct jop_list {
	struct jop *ops;
	size_t n, cap;
};

static int collect_jop(const store_journal_op *j, void *userdata)
{
	struct jop_list *l = userdata;
	int kind = op_from_name(j->op);

	if (kind < 0 || !j->path || j->path[0] != '/')
		return 0; /* nothing this program knows how to do or undo */
	if (eng_op_has_temp(kind) && !j->temp_path)
		return 0;	/* a remove without a temp (an older journal) unlinks its path */
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		struct jop *n = realloc(l->ops, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		l->ops = n;
		l->cap = cap;
	}
	struct jop *o = &l->ops[l->n];
	o->kind = kind;
	o->path = strdup(j->path);
	o->temp = j->temp_path ? strdup(j->temp_path) : NULL;
	if (!o->path || (j->temp_path && !o->temp)) {
		free(o->path);
		free(o->temp);
		return -ENOMEM;
	}
	l->n++;
	return 0;
}

static void jop_list_free(struct jop_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->ops[i].path);
		free(l->ops[i].temp);
	}
	free(l->ops);
	l->ops = NULL;
	l->n = l->cap = 0;
}

/* Finishes or undoes one journaled transaction. */
static int recover_one(engine *e, int64_t txid, fatelf_diag *d)
{
	struct jop_list l = { 0 };
	store_tx row;
	bool forward = false, pending = false;
	int q;

	q = store_tx_get(e->st, txid, &row, d);
	if (q == 0) {
		forward = row.state && strcmp(row.state, "committed") == 0;
		pending = row.state && strcmp(row.state, "pending") == 0;
		store_tx_done(&row);
	} else if (q != -ENOENT) {
		return q;
	}
	q = store_journal_of(e->st, txid, collect_jop, &l, d);
	if (q < 0)
		goto out;

	if (forward) {
		for (size_t i = 0; i < l.n; i++) {
			fatelf_diag tmp;
			/* One path that cannot be finished must not keep every
			 * later start from opening: it is left as it is. */
			(void)eng_op_forward(e, l.ops[i].kind, l.ops[i].path, l.ops[i].temp, true, &tmp);
			engine_failpoint("recover-op");
		}
		if (e->cfg.durable)
			(void)eng_sync_root(e, NULL);
	} else {
		for (size_t i = l.n; i-- > 0;) {
			eng_op_backward(e, l.ops[i].kind, l.ops[i].path, l.ops[i].temp, -1);
			engine_failpoint("recover-op");
		}
		if (pending) {
			q = store_tx_finish(e->st, txid, "rolled-back", (int64_t)time(NULL), 0, 0,
					    ROLLED_BACK_AT_START, d);
			if (q < 0 && q != -ENOENT)
				goto out;
		}
	}
	q = store_journal_clear(e->st, txid, d);
out:
	jop_list_free(&l);
	return q;
}

int eng_recover(engine *e, unsigned *ret_count, fatelf_diag *d)
{
	struct id_list txids = { 0 }, pending = { 0 };
	unsigned count = 0;
	int q;

	engine_failpoint("recover");
	q = store_journal_txids(e->st, collect_txid, &txids, d);
	if (q < 0)
		goto out;
	for (size_t i = 0; i < txids.n; i++) {
		q = recover_one(e, txids.ids[i], d);
		if (q < 0)
			goto out;
		count++;
	}
	/* Rows cut off before their journal was written touched no file. */
	q = store_tx_pending(e->st, collect_pending, &pending, d);
	if (q < 0)
		goto out;
	for (size_t i = 0; i < pending.n; i++) {
		q = store_tx_finish(e->st, pending.ids[i], "rolled-back", (int64_t)time(NULL), 0, 0,
				    ROLLED_BACK_AT_START, d);
		if (q < 0 && q != -ENOENT)
			goto out;
		count++;
	}
	q = 0;
	engine_failpoint("recovered");
	if (ret_count)
		*ret_count = count;
out:
	free(txids.ids);
	free(pending.ids);
	return q;
}
