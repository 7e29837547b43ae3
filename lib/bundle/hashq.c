/*
 * Hashing on a second thread (see hashq.h). One producer, one consumer:
 * a ring of buffers, each carrying a run of records (BEGIN with the
 * ranges, DATA, END), and a ring of results. The producer fills the slot
 * at the ring's head and hands it over only when it is full or when the
 * producer waits for a result, so a run of small files costs one
 * wake-up of the worker, not one per file. A mutex and one condition
 * variable guard both rings; the buffers are large enough that locking
 * costs little next to SHA-256.
 */
#include <pthread.h>
#include <string.h>

#include "bundle.h"
#include "hashq.h"
#include "macro.h"

#define SLOTS 16
#define SLOT_SIZE (128u * 1024)
/* A DATA record is not started in a slot with less room than this left:
 * the slot goes and the bytes start a new one. */
#define SLOT_MIN_DATA 4096u

enum { OP_BEGIN, OP_DATA, OP_END };

struct rec {
	uint32_t op;
	uint32_t len;
};

struct slot {
	uint8_t *buf;           /* records, each a struct rec and its len bytes */
	size_t used;
};

struct fatelf_hashq {
	pthread_t thread;
	bool started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct slot slot[SLOTS];
	unsigned head, tail, count;     /* head: filled by the producer; tail: next to hash */
	bool quit;
	bool open;                      /* producer: a file is begun and not ended */
	bool filling;                   /* producer: the head slot holds records not handed over */

	/* results: ended files, oldest at rtail */
	fatelf_hash_result result[FATELF_HASHQ_PENDING];
	unsigned rtail, pending, ready;

	/* worker side: the file being hashed */
	fatelf_sha256 *file;
	fatelf_sha256 *range;
	fatelf_hash_range ranges[FATELF_MAX_RECORDS];
	unsigned nranges, cur;
	uint64_t pos;
	fatelf_hash_result *out;
	unsigned done;                  /* files ended by the worker */
};

static void hash_bytes(fatelf_hashq *q, const uint8_t *p, size_t len)
{
	fatelf_sha256_update(q->file, p, len);
	while (len > 0 && q->cur < q->nranges) {
		const fatelf_hash_range *r = &q->ranges[q->cur];
		uint64_t end = r->offset + r->size;

		if (q->pos < r->offset) {
			size_t skip = (size_t)MIN((uint64_t)len, r->offset - q->pos);
			q->pos += skip;
			p += skip;
			len -= skip;
			continue;
		}
		size_t n = (size_t)MIN((uint64_t)len, end - q->pos);
		fatelf_sha256_update(q->range, p, n);
		q->pos += n;
		p += n;
		len -= n;
		if (q->pos == end)
			fatelf_sha256_final(q->range, q->out->ranges[q->cur++]);
	}
	q->pos += len;
}

/* Hashes one slot's records; returns the files it ended. */
static unsigned hash_slot(fatelf_hashq *q, const struct slot *s)
{
	unsigned ended = 0;
	uint8_t junk[32];

	for (size_t at = 0; at + sizeof(struct rec) <= s->used;) {
		struct rec h;
		const uint8_t *p = s->buf + at + sizeof(h);

		memcpy(&h, s->buf + at, sizeof(h));
		at += sizeof(h) + h.len;
		switch (h.op) {
		case OP_BEGIN:
			/* The result slot of the file being hashed is reserved
			 * by the producer (pending counts it) until the file is
			 * collected; rtail moves only under the lock, but the
			 * slot (done files past the collected ones) does not. */
			q->out = &q->result[q->done % FATELF_HASHQ_PENDING];
			memcpy(q->ranges, p, h.len);
			q->nranges = (unsigned)(h.len / sizeof(fatelf_hash_range));
			q->cur = 0;
			q->pos = 0;
			memset(q->out, 0, sizeof(*q->out));
			q->out->nranges = q->nranges;
			fatelf_sha256_final(q->range, junk); /* a clean range context */
			break;
		case OP_DATA:
			hash_bytes(q, p, h.len);
			break;
		case OP_END:
			fatelf_sha256_final(q->file, q->out->file);
			q->done++;
			ended++;
			break;
		}
	}
	return ended;
}

static void *worker(void *arg)
{
	fatelf_hashq *q = arg;

	pthread_mutex_lock(&q->mu);
	for (;;) {
		while (q->count == 0 && !q->quit)
			pthread_cond_wait(&q->cv, &q->mu);
		if (q->quit)
			break;
		struct slot *s = &q->slot[q->tail];
		pthread_mutex_unlock(&q->mu);

		unsigned ended = hash_slot(q, s);

		pthread_mutex_lock(&q->mu);
		s->used = 0;
		q->tail = (q->tail + 1) % SLOTS;
		q->count--;
		q->ready += ended;
		pthread_cond_broadcast(&q->cv);
	}
	pthread_mutex_unlock(&q->mu);
	return NULL;
}

int fatelf_hashq_new(fatelf_hashq **ret)
{
	fatelf_hashq *q = calloc(1, sizeof(*q));

	if (!q)
		return -ENOMEM;
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->cv, NULL);
	q->file = fatelf_sha256_new();
	q->range = fatelf_sha256_new();
	for (unsigned i = 0; i < SLOTS; i++) {
		q->slot[i].buf = malloc(SLOT_SIZE);
		if (!q->slot[i].buf)
			goto fail;
	}
	if (!q->file || !q->range)
		goto fail;
	if (pthread_create(&q->thread, NULL, worker, q) != 0)
		goto fail;
	q->started = true;
	*ret = q;
	return 0;
fail:
	fatelf_hashq_free(q);
	return -ENOMEM;
}

/* Hands the head slot's records to the worker. */
static void flush(fatelf_hashq *q)
{
	if (!q->filling)
		return;
	q->filling = false;
	pthread_mutex_lock(&q->mu);
	q->head = (q->head + 1) % SLOTS;
	q->count++;
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->mu);
}

/* The head slot with room for a record of len bytes (at least min of
 * them), handed over first when it has less; waits for a free slot. */
static struct slot *room(fatelf_hashq *q, size_t len, size_t min)
{
	struct slot *s;

	if (q->filling) {
		s = &q->slot[q->head];
		if (SLOT_SIZE - s->used >= sizeof(struct rec) + MIN(len, min))
			return s;
		flush(q);
	}
	pthread_mutex_lock(&q->mu);
	while (q->count == SLOTS)
		pthread_cond_wait(&q->cv, &q->mu);
	pthread_mutex_unlock(&q->mu);
	/* The worker never touches a slot that is not handed over. */
	s = &q->slot[q->head];
	s->used = 0;
	q->filling = true;
	return s;
}

/* Appends a record of up to len bytes; returns how many went in. */
static size_t push(fatelf_hashq *q, int op, const void *buf, size_t len, size_t min)
{
	struct slot *s = room(q, len, min);
	struct rec h = { .op = (uint32_t)op };
	size_t n = MIN(len, SLOT_SIZE - s->used - sizeof(h));

	h.len = (uint32_t)n;
	memcpy(s->buf + s->used, &h, sizeof(h));
	if (n)
		memcpy(s->buf + s->used + sizeof(h), buf, n);
	s->used += sizeof(h) + n;
	if (SLOT_SIZE - s->used < sizeof(h) + SLOT_MIN_DATA)
		flush(q);
	return n;
}

int fatelf_hashq_begin(fatelf_hashq *q, const fatelf_hash_range *ranges, unsigned n)
{
	_Static_assert(FATELF_MAX_RECORDS * sizeof(fatelf_hash_range) + sizeof(struct rec) <= SLOT_SIZE,
		       "the ranges fit in one slot");
	if (n > FATELF_MAX_RECORDS || q->open)
		return -EINVAL;
	if (q->pending == FATELF_HASHQ_PENDING)
		return -EBUSY;
	q->pending++; /* reserves the result slot the worker will fill */
	q->open = true;
	push(q, OP_BEGIN, ranges, n * sizeof(*ranges), n * sizeof(*ranges));
	return 0;
}

int fatelf_hashq_feed(fatelf_hashq *q, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	if (!q->open)
		return -EINVAL;
	while (len > 0) {
		size_t n = push(q, OP_DATA, p, len, SLOT_MIN_DATA);
		p += n;
		len -= n;
	}
	return 0;
}

int fatelf_hashq_end(fatelf_hashq *q)
{
	if (!q->open)
		return -EINVAL;
	q->open = false;
	push(q, OP_END, NULL, 0, 0);
	return 0;
}

unsigned fatelf_hashq_pending(const fatelf_hashq *q)
{
	return q->pending - (q->open ? 1 : 0);
}

int fatelf_hashq_collect(fatelf_hashq *q, bool wait, fatelf_hash_result *ret)
{
	int got = 0;

	/* Waiting for a file whose records are still in the head slot would
	 * never end. */
	if (wait && fatelf_hashq_pending(q) > 0)
		flush(q);
	pthread_mutex_lock(&q->mu);
	if (fatelf_hashq_pending(q) > 0) {
		while (wait && q->ready == 0)
			pthread_cond_wait(&q->cv, &q->mu);
		if (q->ready > 0) {
			*ret = q->result[q->rtail];
			q->rtail = (q->rtail + 1) % FATELF_HASHQ_PENDING;
			q->ready--;
			q->pending--;
			got = 1;
		}
	}
	pthread_mutex_unlock(&q->mu);
	return got;
}

fatelf_hashq *fatelf_hashq_free(fatelf_hashq *q)
{
	if (!q)
		return NULL;
	if (q->started) {
		pthread_mutex_lock(&q->mu);
		q->quit = true;
		pthread_cond_broadcast(&q->cv);
		pthread_mutex_unlock(&q->mu);
		pthread_join(q->thread, NULL);
	}
	for (unsigned i = 0; i < SLOTS; i++)
		free(q->slot[i].buf);
	fatelf_sha256_free(q->file);
	fatelf_sha256_free(q->range);
	pthread_cond_destroy(&q->cv);
	pthread_mutex_destroy(&q->mu);
	free(q);
	return NULL;
}
