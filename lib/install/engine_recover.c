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

/* Finishes or undoes one journaled transaction. */
static int recover_one(engine *e, int64_t txid, fatelf_diag *d)
{
	store_journal_op *ops = NULL;
	size_t n = 0;
	store_tx row;
	bool forward = false, pending = false;
	int q;

	q = store_tx_get(e->st, txid, &row, d);
	if (q < 0)
		return q;
	if (q > 0) {
		forward = row.state == STORE_TX_COMMITTED;
		pending = row.state == STORE_TX_PENDING;
		store_tx_done(&row);
	}
	q = store_journal_of(e->st, txid, &ops, &n, d);
	if (q < 0)
		return q;

	if (forward) {
		for (size_t i = 0; i < n; i++) {
			fatelf_diag tmp;

			if (!ops[i].path || ops[i].path[0] != '/')
				continue; /* nothing this program knows how to do */
			if (eng_op_has_temp(ops[i].op) && !ops[i].temp_path)
				continue;
			/* One path that cannot be finished must not keep every
			 * later start from opening: it is left as it is. */
			(void)eng_op_forward(e, ops[i].op, ops[i].path, ops[i].temp_path, true, &tmp);
			engine_failpoint("recover-op");
		}
		if (e->cfg.durable)
			(void)eng_sync_root(e, NULL);
	} else {
		for (size_t i = n; i-- > 0;) {
			if (!ops[i].path || ops[i].path[0] != '/')
				continue;
			if (eng_op_has_temp(ops[i].op) && !ops[i].temp_path)
				continue;
			eng_op_backward(e, ops[i].op, ops[i].path, ops[i].temp_path, -1);
			engine_failpoint("recover-op");
		}
		if (pending) {
			q = store_tx_finish(e->st, txid, STORE_TX_ROLLED_BACK, (int64_t)time(NULL), 0, 0,
					    ROLLED_BACK_AT_START, d);
			if (q < 0 && q != -ENOENT)
				goto out;
		}
	}
	q = store_journal_clear(e->st, txid, d);
out:
	store_journal_free(ops, n);
	return q;
}

int eng_recover(engine *e, unsigned *ret_count, fatelf_diag *d)
{
	int64_t *txids = NULL;
	store_tx *pending = NULL;
	size_t ntxids = 0, npending = 0;
	unsigned count = 0;
	int q;

	engine_failpoint("recover");
	q = store_journal_txids(e->st, &txids, &ntxids, d);
	if (q < 0)
		goto out;
	for (size_t i = 0; i < ntxids; i++) {
		q = recover_one(e, txids[i], d);
		if (q < 0)
			goto out;
		count++;
	}
	/* Rows cut off before their journal was written touched no file. */
	q = store_tx_pending(e->st, &pending, &npending, d);
	if (q < 0)
		goto out;
	for (size_t i = 0; i < npending; i++) {
		q = store_tx_finish(e->st, pending[i].id, STORE_TX_ROLLED_BACK, (int64_t)time(NULL), 0, 0,
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
	free(txids);
	store_txs_free(pending, npending);
	return q;
}
