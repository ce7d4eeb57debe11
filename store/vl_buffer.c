/*  vl_buffer: slots passed between threads through two lock-free queues,
    free and ready. A slot is owned by exactly one thread at a time (the
    ingest thread writing it, the queue, or the trainer reading it), so no
    read can be torn and no lock is taken on the hot path. The mutex and
    condition variable exist only for a trainer that has to sleep. */
#include "vl_buffer.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "vl_queue.h"

struct vl_buffer_s {
    uint32_t capacity;
    uint32_t state_size;  // floats of recurrent state a segment's slot holds
    size_t slot_size;     // bytes of array storage per slot
    uint8_t *storage;     // [capacity][slot_size]
    vl_segment_t *segs;   // [capacity] headers of committed segments
    vl_queue_t *free;     // slots to write
    vl_queue_t *ready;    // committed slots, oldest first
    atomic_int n_waiting; // committed slots in `ready`
    atomic_int want;      // segments a sleeping trainer waits for, 0 if none
    atomic_int woken;
    atomic_uint_fast64_t evicted;
    pthread_mutex_t lock; // only for sleeping and waking the trainer
    pthread_cond_t ready_cond;
};

/* Appends a slot. The queues hold every slot with room to spare, so a
   failure is a reader mid-pop and passes at once: retry, never drop. */
static void s_push(vl_queue_t *q, uint32_t slot)
{
    while (vl_queue_push(q, slot) != 0)
        ;
}

vl_buffer_t *vl_buffer_new(uint32_t capacity, uint32_t T, const vl_obs_spec_t *spec,
                           uint32_t action_dims, uint32_t state_size)
{
    size_t arrays = vl_segment_arrays_size(T, spec, action_dims, state_size);
    if (capacity == 0 || T == 0 || arrays == SIZE_MAX)
        return NULL;
    vl_buffer_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->capacity = capacity;
    self->state_size = state_size;
    self->slot_size = (arrays + 63) & ~(size_t)63;
    self->storage = aligned_alloc(64, self->slot_size * capacity);
    self->segs = calloc(capacity, sizeof *self->segs);
    // Twice the slots: a queue can look full for an instant while a reader
    // finishes a pop, and s_push must never lose a slot.
    self->free = vl_queue_new(2 * capacity);
    self->ready = vl_queue_new(2 * capacity);
    if (!self->storage || !self->segs || !self->free || !self->ready) {
        vl_buffer_destroy(&self);
        return NULL;
    }
    for (uint32_t i = 0; i < capacity; i++)
        s_push(self->free, i);
    pthread_mutex_init(&self->lock, NULL);
    pthread_cond_init(&self->ready_cond, NULL);
    return self;
}

void vl_buffer_destroy(vl_buffer_t **self_p)
{
    vl_buffer_t *self = self_p ? *self_p : NULL;
    if (!self)
        return;
    if (self->storage && self->segs && self->free && self->ready) {
        pthread_mutex_destroy(&self->lock);
        pthread_cond_destroy(&self->ready_cond);
    }
    vl_queue_destroy(&self->free);
    vl_queue_destroy(&self->ready);
    free(self->storage);
    free(self->segs);
    free(self);
    *self_p = NULL;
}

int vl_buffer_claim(vl_buffer_t *self, void **arrays, size_t *cap)
{
    uint32_t slot;
    if (vl_queue_pop(self->free, &slot) != 0) {
        if (vl_queue_pop(self->ready, &slot) != 0)
            return -1; // every slot is being written or trained on
        atomic_fetch_sub(&self->n_waiting, 1);
        atomic_fetch_add(&self->evicted, 1);
    }
    *arrays = self->storage + (size_t)slot * self->slot_size;
    *cap = self->slot_size;
    return (int)slot;
}

void vl_buffer_commit(vl_buffer_t *self, int slot, const vl_segment_t *seg)
{
    self->segs[slot] = *seg; // published to the trainer by the queue's release
    s_push(self->ready, (uint32_t)slot);
    int waiting = atomic_fetch_add(&self->n_waiting, 1) + 1;
    int want = atomic_load(&self->want);
    if (want && waiting >= want) {
        pthread_mutex_lock(&self->lock);
        pthread_cond_signal(&self->ready_cond);
        pthread_mutex_unlock(&self->lock);
    }
}

void vl_buffer_abandon(vl_buffer_t *self, int slot)
{
    s_push(self->free, (uint32_t)slot);
}

/* Sleeps until n segments wait, timeout_ms passes or vl_buffer_wake. */
static void s_wait(vl_buffer_t *self, int n, int timeout_ms)
{
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += timeout_ms / 1000;
    deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&self->lock);
    atomic_store(&self->want, n); // before the check: a committer sees it or we see its count
    int rc = 0;
    while (atomic_load(&self->n_waiting) < n && !atomic_load(&self->woken) && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&self->ready_cond, &self->lock, &deadline);
    atomic_store(&self->want, 0);
    atomic_store(&self->woken, 0);
    pthread_mutex_unlock(&self->lock);
}

int vl_buffer_take(vl_buffer_t *self, int n, int timeout_ms, int *slots)
{
    if (atomic_load(&self->n_waiting) < n)
        s_wait(self, n, timeout_ms);
    if (atomic_load(&self->n_waiting) < n)
        return 0;
    int taken = 0;
    uint32_t slot;
    while (taken < n && vl_queue_pop(self->ready, &slot) == 0) { // fewer if ingest evicted
        atomic_fetch_sub(&self->n_waiting, 1);
        slots[taken++] = (int)slot;
    }
    return taken;
}

const vl_segment_t *vl_buffer_segment(const vl_buffer_t *self, int slot)
{
    return &self->segs[slot];
}

void vl_buffer_release(vl_buffer_t *self, const int *slots, int n)
{
    for (int i = 0; i < n; i++)
        s_push(self->free, (uint32_t)slots[i]);
}

uint64_t vl_buffer_evicted(vl_buffer_t *self)
{
    return atomic_load(&self->evicted);
}

int vl_buffer_waiting(vl_buffer_t *self)
{
    return atomic_load(&self->n_waiting);
}

void vl_buffer_wake(vl_buffer_t *self)
{
    pthread_mutex_lock(&self->lock);
    atomic_store(&self->woken, 1);
    pthread_cond_signal(&self->ready_cond);
    pthread_mutex_unlock(&self->lock);
}

uint32_t vl_buffer_state_size(const vl_buffer_t *self)
{
    return self->state_size;
}
