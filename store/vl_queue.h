/*  vl_queue: a bounded multi-producer multi-consumer queue of slot numbers
    without locks (Dmitry Vyukov's array queue: each cell carries a sequence
    number that says whose turn it is). The learner's buffer passes slots
    between ingest threads and the trainer through two of these. */
#ifndef VL_QUEUE_H
#define VL_QUEUE_H

#include <stdint.h>

typedef struct vl_queue_s vl_queue_t;

/* Creates an empty queue holding at least capacity values (rounded up to a
   power of two). Returns NULL on no memory or capacity 0. */
vl_queue_t *vl_queue_new(uint32_t capacity);

/* Frees the queue and nulls the pointer; safe on NULL and twice. */
void vl_queue_destroy(vl_queue_t **self_p);

/* Appends a value. Returns 0, or -1 if the queue is full, or for an instant
   looks full while a reader finishes popping the oldest value. */
int vl_queue_push(vl_queue_t *self, uint32_t value);

/* Removes the oldest value into *value. Returns 0, or -1 if empty. */
int vl_queue_pop(vl_queue_t *self, uint32_t *value);

#endif
