/*  vl_queue: Vyukov's bounded MPMC queue with C11 atomics. A cell's sequence
    equals its position when it is free to write, position + 1 when it holds
    a value to read; producers and consumers each claim positions with a
    compare-and-swap on their own counter, so neither ever blocks the other. */
#include "vl_queue.h"

#include <stdalign.h>
#include <stdatomic.h>
#include <stdlib.h>

typedef struct {
    atomic_size_t sequence;
    uint32_t value;
} s_cell_t;

struct vl_queue_s {
    s_cell_t *cells;
    size_t mask;
    alignas(64) atomic_size_t tail; // next position to write
    alignas(64) atomic_size_t head; // next position to read
};

vl_queue_t *vl_queue_new(uint32_t capacity)
{
    if (capacity == 0 || capacity > (1u << 30))
        return NULL;
    size_t size = 1;
    while (size < capacity)
        size <<= 1;
    vl_queue_t *self = aligned_alloc(64, sizeof *self);
    if (!self)
        return NULL;
    self->cells = calloc(size, sizeof *self->cells);
    if (!self->cells) {
        free(self);
        return NULL;
    }
    self->mask = size - 1;
    for (size_t i = 0; i < size; i++)
        atomic_init(&self->cells[i].sequence, i);
    atomic_init(&self->tail, 0);
    atomic_init(&self->head, 0);
    return self;
}

void vl_queue_destroy(vl_queue_t **self_p)
{
    vl_queue_t *self = self_p ? *self_p : NULL;
    if (!self)
        return;
    free(self->cells);
    free(self);
    *self_p = NULL;
}

int vl_queue_push(vl_queue_t *self, uint32_t value)
{
    size_t pos = atomic_load_explicit(&self->tail, memory_order_relaxed);
    for (;;) {
        s_cell_t *cell = &self->cells[pos & self->mask];
        size_t seq = atomic_load_explicit(&cell->sequence, memory_order_acquire);
        intptr_t diff = (intptr_t)seq - (intptr_t)pos;
        if (diff == 0) {
            if (atomic_compare_exchange_weak_explicit(&self->tail, &pos, pos + 1,
                                                      memory_order_relaxed, memory_order_relaxed)) {
                cell->value = value;
                atomic_store_explicit(&cell->sequence, pos + 1, memory_order_release);
                return 0;
            }
        } else if (diff < 0) {
            return -1; // full
        } else {
            pos = atomic_load_explicit(&self->tail, memory_order_relaxed);
        }
    }
}

int vl_queue_pop(vl_queue_t *self, uint32_t *value)
{
    size_t pos = atomic_load_explicit(&self->head, memory_order_relaxed);
    for (;;) {
        s_cell_t *cell = &self->cells[pos & self->mask];
        size_t seq = atomic_load_explicit(&cell->sequence, memory_order_acquire);
        intptr_t diff = (intptr_t)seq - (intptr_t)(pos + 1);
        if (diff == 0) {
            if (atomic_compare_exchange_weak_explicit(&self->head, &pos, pos + 1,
                                                      memory_order_relaxed, memory_order_relaxed)) {
                *value = cell->value;
                atomic_store_explicit(&cell->sequence, pos + self->mask + 1, memory_order_release);
                return 0;
            }
        } else if (diff < 0) {
            return -1; // empty
        } else {
            pos = atomic_load_explicit(&self->head, memory_order_relaxed);
        }
    }
}
