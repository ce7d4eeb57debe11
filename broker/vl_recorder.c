/*  vl_recorder: a bounded queue of message references and a thread that
    appends them to a vl_stream file. */
#include "vl_recorder.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/vl_log.h"

#define S_MAX_MESSAGES 4096       // queued references
#define S_MAX_BYTES    (64 << 20) // bytes they hold, beyond which the broker waits
#define S_FLUSH_NS     1000000000LL
// Records appended but not yet whole in the file: they sit in the writer's
// buffer (each takes at least VL_STREAM_RECORD bytes of it), plus the one
// that went out past it.
#define S_MAX_PENDING (VL_STREAM_WRITE_BUF / VL_STREAM_RECORD + 2)

typedef struct {
    zmq_msg_t msg;
    int64_t recv_ns;
    uint32_t source;
} s_entry_t;

struct vl_recorder_s {
    vl_stream_writer_t *w;
    vl_flush_t flush;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t not_empty, not_full;
    s_entry_t ring[S_MAX_MESSAGES];
    uint32_t head, count;       // under lock
    size_t bytes;               // under lock: of the queued messages and the one being written
    int stop;                   // under lock
    int failed;                 // writer thread only, then read after join
    uint64_t *ends;             // writer thread: [S_MAX_PENDING] file offsets where the records
    uint32_t ends_head, n_ends; // appended but not yet whole in the file end, oldest first
    uint64_t whole_end;         // writer thread: where the last record counted written ends
    uint64_t written, lost;     // written by the thread; read as a snapshot
    uint64_t torn;              // of lost: cut part-way by the failed write (0 or 1)
    char error[256];            // why the recording stopped; set once, before degraded
    int degraded;               // atomic: 1 once error is set
};

/* Counts as written every appended record whose bytes the file now holds
   whole: exactly what a replay of the file reads. */
static void s_settle(vl_recorder_t *self)
{
    uint64_t in_file = vl_stream_writer_written(self->w);
    while (self->n_ends && self->ends[self->ends_head] <= in_file) {
        self->whole_end = self->ends[self->ends_head];
        self->ends_head = (self->ends_head + 1) % S_MAX_PENDING;
        self->n_ends--;
        __atomic_add_fetch(&self->written, 1, __ATOMIC_RELAXED);
    }
}

/* Stops the recording: records the file holds whole stay counted written;
   the rest appended are lost, the first of them torn if the failed write
   put part of it in the file (a replay stops before it). */
static void s_fail(vl_recorder_t *self, const char *what)
{
    self->failed = 1;
    snprintf(self->error, sizeof self->error, "%s", what);
    s_settle(self);
    self->torn = self->n_ends && vl_stream_writer_written(self->w) > self->whole_end;
    __atomic_add_fetch(&self->lost, self->n_ends, __ATOMIC_RELAXED);
    self->n_ends = 0;
    __atomic_store_n(&self->degraded, 1, __ATOMIC_RELEASE);
    vl_error("recording stopped: %s; the broker goes on, unrecorded messages are counted", what);
}

/* Appends one entry, or counts it lost after a write error (logged once). */
static void s_write(vl_recorder_t *self, s_entry_t *e)
{
    if (self->failed) {
        __atomic_add_fetch(&self->lost, 1, __ATOMIC_RELAXED);
        return;
    }
    size_t size = zmq_msg_size(&e->msg);
    uint32_t at = (self->ends_head + self->n_ends++) % S_MAX_PENDING;
    self->ends[at] = vl_stream_writer_bytes(self->w) + VL_STREAM_RECORD + size;
    if (vl_stream_append(self->w, e->recv_ns, e->source, zmq_msg_data(&e->msg), size) != 0)
        s_fail(self, vl_stream_writer_error(self->w));
    else
        s_settle(self);
}

/* Flushes (and with everysec syncs) if a second passed since the last. */
static void s_maybe_flush(vl_recorder_t *self, int64_t *last)
{
    int64_t now = vl_now_ns();
    if (now - *last < S_FLUSH_NS || self->failed)
        return;
    *last = now;
    if (vl_stream_flush(self->w, self->flush == VL_FLUSH_EVERYSEC) != 0)
        s_fail(self, vl_stream_writer_error(self->w));
    else
        s_settle(self);
}

/* The writing thread: takes entries oldest first until stopped and drained. */
static void *s_main(void *arg)
{
    vl_recorder_t *self = arg;
    int64_t flushed = vl_now_ns();
    pthread_mutex_lock(&self->lock);
    for (;;) {
        while (self->count == 0 && !self->stop) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += 1;
            pthread_cond_timedwait(&self->not_empty, &self->lock, &ts);
            pthread_mutex_unlock(&self->lock);
            s_maybe_flush(self, &flushed);
            pthread_mutex_lock(&self->lock);
        }
        if (self->count == 0)
            break; // stopped and drained
        s_entry_t e = self->ring[self->head];
        self->head = (self->head + 1) % S_MAX_MESSAGES;
        self->count--;
        pthread_mutex_unlock(&self->lock);
        size_t size = zmq_msg_size(&e.msg);
        s_write(self, &e);
        zmq_msg_close(&e.msg);
        s_maybe_flush(self, &flushed);
        pthread_mutex_lock(&self->lock);
        self->bytes -= size;
        pthread_cond_signal(&self->not_full);
    }
    pthread_mutex_unlock(&self->lock);
    return NULL;
}

vl_recorder_t *vl_recorder_new(const char *path, const char *config, vl_flush_t flush)
{
    vl_recorder_t *self = calloc(1, sizeof *self);
    if (!self || !(self->ends = calloc(S_MAX_PENDING, sizeof *self->ends))) {
        vl_error("cannot record to %s: out of memory", path);
        free(self);
        return NULL;
    }
    char why[256];
    self->flush = flush;
    self->w = vl_stream_writer_new(path, config, flush, why, sizeof why);
    if (!self->w) {
        vl_error("cannot record to %s: %s", path, why);
        free(self->ends);
        free(self);
        return NULL;
    }
    self->whole_end = vl_stream_writer_bytes(self->w); // the header, written by now
    pthread_mutex_init(&self->lock, NULL);
    pthread_cond_init(&self->not_empty, NULL);
    pthread_cond_init(&self->not_full, NULL);
    if (pthread_create(&self->thread, NULL, s_main, self) != 0) {
        vl_error("cannot record to %s: no thread", path);
        vl_stream_writer_destroy(&self->w);
        free(self->ends);
        free(self);
        return NULL;
    }
    vl_info("recording every segment message to %s (flush %s)", path, vl_flush_name(flush));
    return self;
}

void vl_recorder_add(vl_recorder_t *self, zmq_msg_t *msg, int64_t recv_ns, uint32_t source)
{
    size_t size = zmq_msg_size(msg);
    pthread_mutex_lock(&self->lock);
    // A message larger than the whole bound waits for an empty queue, then goes alone.
    while (self->count == S_MAX_MESSAGES || (self->bytes && self->bytes + size > S_MAX_BYTES))
        pthread_cond_wait(&self->not_full, &self->lock);
    s_entry_t *e = &self->ring[(self->head + self->count) % S_MAX_MESSAGES];
    zmq_msg_init(&e->msg);
    zmq_msg_copy(&e->msg, msg);
    e->recv_ns = recv_ns;
    e->source = source;
    self->count++;
    self->bytes += size;
    pthread_cond_signal(&self->not_empty);
    pthread_mutex_unlock(&self->lock);
}

uint64_t vl_recorder_written(const vl_recorder_t *self)
{
    return __atomic_load_n(&self->written, __ATOMIC_RELAXED);
}

uint64_t vl_recorder_lost(const vl_recorder_t *self)
{
    return __atomic_load_n(&self->lost, __ATOMIC_RELAXED);
}

const char *vl_recorder_error(const vl_recorder_t *self)
{
    return __atomic_load_n(&self->degraded, __ATOMIC_ACQUIRE) ? self->error : NULL;
}

int vl_recorder_destroy(vl_recorder_t **self_p)
{
    vl_recorder_t *self = self_p ? *self_p : NULL;
    if (!self)
        return 0;
    pthread_mutex_lock(&self->lock);
    self->stop = 1;
    pthread_cond_signal(&self->not_empty);
    pthread_mutex_unlock(&self->lock);
    pthread_join(self->thread, NULL);
    if (!self->failed) { // the last flush, as destroy will do it, counted
        if (vl_stream_flush(self->w, self->flush != VL_FLUSH_NEVER) != 0)
            s_fail(self, vl_stream_writer_error(self->w));
        else
            s_settle(self);
    }
    uint64_t bytes = vl_stream_writer_written(self->w);
    int rc = vl_stream_writer_destroy(&self->w);
    if (rc != 0 && !self->failed)
        vl_error("recording: the last write or sync failed");
    vl_info("recorded %llu messages, %llu bytes%s", (unsigned long long)self->written,
            (unsigned long long)bytes, self->lost ? "; SOME WERE NOT RECORDED" : "");
    if (self->lost)
        vl_error("recording incomplete: %llu messages not recorded%s",
                 (unsigned long long)self->lost,
                 self->torn ? " (1 of them cut part-way at the end of the file, in doubt: a "
                              "replay stops before it)"
                            : "");
    rc = rc != 0 || self->lost ? -1 : 0;
    pthread_cond_destroy(&self->not_empty);
    pthread_cond_destroy(&self->not_full);
    pthread_mutex_destroy(&self->lock);
    free(self->ends);
    free(self);
    *self_p = NULL;
    return rc;
}
