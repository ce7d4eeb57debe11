/*  vl_recorder: the broker's recording of every segment message it
    receives, written by a thread of its own so that the broker's loop only
    takes a reference to each message (zmq_msg_copy shares the bytes) and
    goes on. The queue between them is bounded in messages and bytes; when
    it is full the broker waits: a recording is complete or it is nothing.
    File format: messages/vl_stream.h. */
#ifndef VL_RECORDER_H
#define VL_RECORDER_H

#include <stdint.h>
#include <zmq.h>

#include "../messages/vl_stream.h"

typedef struct vl_recorder_s vl_recorder_t;

/* Creates path (refusing an existing file) with config in its header and
   starts the writing thread. Returns NULL after logging why. */
vl_recorder_t *vl_recorder_new(const char *path, const char *config, vl_flush_t flush);

/* Queues a reference to msg (received at wall-clock recv_ns from actor
   source, UINT32_MAX if unknown) for the file; msg itself is untouched.
   Waits while the queue is full. After a write error the recorder counts
   what it could not record instead (logged once). */
void vl_recorder_add(vl_recorder_t *self, zmq_msg_t *msg, int64_t recv_ns, uint32_t source);

/* Returns the messages whose records the file holds whole so far: exactly
   what a replay of it reads (a record still in the writer's buffer, or cut
   part-way by a failed write, is not counted; after a write error the ones
   not whole are lost). */
uint64_t vl_recorder_written(const vl_recorder_t *self);

/* Returns the messages that could not be recorded (after a write error). */
uint64_t vl_recorder_lost(const vl_recorder_t *self);

/* Returns why the recording stopped (it is degraded: what comes is counted
   lost), or NULL while it is whole. */
const char *vl_recorder_error(const vl_recorder_t *self);

/* Writes out everything queued, syncs and closes the file, stops the
   thread, frees the recorder and nulls the pointer; logs the totals.
   Returns 0, or -1 if any message was not recorded. Safe on NULL. */
int vl_recorder_destroy(vl_recorder_t **self_p);

#endif
