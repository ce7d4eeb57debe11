/*  vl_tfevents: TensorBoard event files, so that `tensorboard --logdir runs/`
    shows a volley run's curves where TensorBoard is installed. Written from
    the format's description (TensorFlow's record_writer and event.proto):

      record   offset  size
               0       8     u64 length of data, little-endian
               8       4     u32 masked crc32c of the 8 length bytes
               12      len   data: one serialized Event (messages/tfevents.proto)
               12+len  4     u32 masked crc32c of data

    masked(crc) = ((crc >> 15) | (crc << 17)) + 0xa282ead8. A file is named
    events.out.tfevents.<seconds>.<host>; its first event carries
    file_version "brain.Event:2", each later one a Summary of scalars at a
    step. A writer is used by one thread at a time. */
#ifndef VL_TFEVENTS_H
#define VL_TFEVENTS_H

#include <stddef.h>
#include <stdint.h>

#define VL_TFEVENTS_VERSION   "brain.Event:2"
#define VL_TFEVENTS_MAX_EVENT (1u << 20) // bytes of one event a reader accepts

typedef struct vl_tfevents_s vl_tfevents_t;

/* Returns TensorBoard's masked form of a CRC-32C. */
uint32_t vl_tfevents_mask(uint32_t crc);

/* Creates a new event file in dir (never over an existing one) and writes
   its version event. Returns NULL after logging why. Caller destroys. */
vl_tfevents_t *vl_tfevents_new(const char *dir);

/* Returns the file's path (owned by the writer). */
const char *vl_tfevents_path(const vl_tfevents_t *self);

/* Appends one event holding n scalars (tags[i] = values[i]) at step and
   wall_time (seconds since the epoch). Returns 0, or -1 when it could not
   be written (counted, logged once; the file still ends at a whole
   record). */
int vl_tfevents_scalars(vl_tfevents_t *self, int64_t step, double wall_time,
                        const char *const *tags, const float *values, int n);

/* Makes what was appended durable (fdatasync; each event is already in
   the kernel when vl_tfevents_scalars returns). Returns 0 or -1. */
int vl_tfevents_sync(vl_tfevents_t *self);

/* Returns how many events could not be written. */
uint64_t vl_tfevents_lost(const vl_tfevents_t *self);

/* Closes and frees the writer, nulls the pointer; safe on NULL and
   twice. */
void vl_tfevents_destroy(vl_tfevents_t **self_p);

typedef enum { VL_TFEV_RECORD = 0, VL_TFEV_END, VL_TFEV_TORN, VL_TFEV_CORRUPT } vl_tfev_read_t;

/* Reads the record at *off of buf[n], checking both CRCs: VL_TFEV_RECORD
   sets *data and *len (pointing into buf) and advances *off; VL_TFEV_END at
   the end; VL_TFEV_TORN when the file ends inside a record; VL_TFEV_CORRUPT
   on a CRC mismatch or a length over VL_TFEVENTS_MAX_EVENT. */
vl_tfev_read_t vl_tfevents_next(const uint8_t *buf, size_t n, size_t *off, const uint8_t **data,
                                size_t *len);

#endif
