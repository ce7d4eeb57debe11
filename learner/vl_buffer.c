/*  vl_buffer: slots, a free stack and a FIFO of committed segments under one
    short-held mutex; the copying (decode, training) happens outside it. */
#include "vl_buffer.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

struct vl_buffer_s {
    pthread_mutex_t lock;
    pthread_cond_t ready; // signalled when committed segments reach `want`
    uint32_t capacity;
    size_t slot_size;   // bytes of array storage per slot
    uint8_t *storage;   // [capacity][slot_size]
    vl_segment_t *segs; // [capacity] headers of committed segments
    int *free_stack;    // [capacity] free slots
    int n_free;
    int *fifo; // [capacity] committed slots, oldest at head
    int head, n_waiting;
    int want; // segments the trainer waits for, 0 if none waits
    int woken;
    uint64_t evicted;
};

vl_buffer_t *vl_buffer_new(uint32_t capacity, uint32_t T, const vl_obs_spec_t *spec)
{
    size_t arrays = vl_segment_arrays_size(T, spec);
    if (capacity == 0 || T == 0 || arrays == SIZE_MAX)
        return NULL;
    vl_buffer_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->capacity = capacity;
    self->slot_size = (arrays + 63) & ~(size_t)63;
    self->storage = aligned_alloc(64, self->slot_size * capacity);
    self->segs = calloc(capacity, sizeof *self->segs);
    self->free_stack = calloc(capacity, sizeof(int));
    self->fifo = calloc(capacity, sizeof(int));
    if (!self->storage || !self->segs || !self->free_stack || !self->fifo) {
        vl_buffer_destroy(&self);
        return NULL;
    }
    for (uint32_t i = 0; i < capacity; i++)
        self->free_stack[self->n_free++] = (int)(capacity - 1 - i);
    pthread_mutex_init(&self->lock, NULL);
    pthread_cond_init(&self->ready, NULL);
    return self;
}

void vl_buffer_destroy(vl_buffer_t **self_p)
{
    vl_buffer_t *self = self_p ? *self_p : NULL;
    if (!self)
        return;
    if (self->storage && self->segs && self->free_stack && self->fifo) {
        pthread_mutex_destroy(&self->lock);
        pthread_cond_destroy(&self->ready);
    }
    free(self->storage);
    free(self->segs);
    free(self->free_stack);
    free(self->fifo);
    free(self);
    *self_p = NULL;
}

/* Removes and returns the oldest committed slot; lock held, n_waiting > 0. */
static int s_pop_oldest(vl_buffer_t *self)
{
    int slot = self->fifo[self->head];
    self->head = (self->head + 1) % (int)self->capacity;
    self->n_waiting--;
    return slot;
}

int vl_buffer_claim(vl_buffer_t *self, void **arrays, size_t *cap)
{
    pthread_mutex_lock(&self->lock);
    int slot = -1;
    if (self->n_free > 0)
        slot = self->free_stack[--self->n_free];
    else if (self->n_waiting > 0) {
        slot = s_pop_oldest(self);
        self->evicted++;
    }
    pthread_mutex_unlock(&self->lock);
    if (slot >= 0) {
        *arrays = self->storage + (size_t)slot * self->slot_size;
        *cap = self->slot_size;
    }
    return slot;
}

void vl_buffer_commit(vl_buffer_t *self, int slot, const vl_segment_t *seg)
{
    pthread_mutex_lock(&self->lock);
    self->segs[slot] = *seg;
    self->fifo[(self->head + self->n_waiting) % (int)self->capacity] = slot;
    self->n_waiting++;
    if (self->want && self->n_waiting >= self->want)
        pthread_cond_signal(&self->ready);
    pthread_mutex_unlock(&self->lock);
}

void vl_buffer_abandon(vl_buffer_t *self, int slot)
{
    vl_buffer_release(self, &slot, 1);
}

int vl_buffer_take(vl_buffer_t *self, int n, int timeout_ms, int *slots)
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
    self->want = n;
    int rc = 0;
    while (self->n_waiting < n && !self->woken && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&self->ready, &self->lock, &deadline);
    self->want = 0;
    self->woken = 0;
    int taken = 0;
    if (self->n_waiting >= n)
        for (; taken < n; taken++)
            slots[taken] = s_pop_oldest(self);
    pthread_mutex_unlock(&self->lock);
    return taken;
}

const vl_segment_t *vl_buffer_segment(const vl_buffer_t *self, int slot)
{
    return &self->segs[slot];
}

void vl_buffer_release(vl_buffer_t *self, const int *slots, int n)
{
    pthread_mutex_lock(&self->lock);
    for (int i = 0; i < n; i++)
        self->free_stack[self->n_free++] = slots[i];
    pthread_mutex_unlock(&self->lock);
}

uint64_t vl_buffer_evicted(vl_buffer_t *self)
{
    pthread_mutex_lock(&self->lock);
    uint64_t n = self->evicted;
    pthread_mutex_unlock(&self->lock);
    return n;
}

int vl_buffer_waiting(vl_buffer_t *self)
{
    pthread_mutex_lock(&self->lock);
    int n = self->n_waiting;
    pthread_mutex_unlock(&self->lock);
    return n;
}

void vl_buffer_wake(vl_buffer_t *self)
{
    pthread_mutex_lock(&self->lock);
    self->woken = 1;
    pthread_cond_signal(&self->ready);
    pthread_mutex_unlock(&self->lock);
}
