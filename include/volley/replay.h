/*  volley/replay.h: volley's replay buffer, for outside code and the
    Python package. A buffer holds `capacity` samples; each sample is a
    set of named fields of fixed shape and dtype, stored field by field in
    contiguous arrays ([capacity][field bytes]), so a field's array is one
    NumPy array and a batch of rows is one memcpy per field.

    add_batch is safe from several threads at once without a lock on the
    copy: each call reserves its rows with one atomic add and copies into
    them; a row being written is never sampled (a per-row commit stamp).
    When full, adding overwrites the oldest rows (a ring). Sampling draws
    uniformly or in proportion to per-row priorities (a sum-tree under a
    small lock, shared with update_priorities), with importance weights
    (N P(i))^-beta / max w. save/load write a checkpoint file of LZ4 chunks
    under CRC32C (the learner's checkpoint format); a truncated or corrupt
    file is refused with its reason. */
#ifndef VOLLEY_REPLAY_H
#define VOLLEY_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include <volley/volley.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VL_RBUF_FIELDS_MAX 16 // fields per sample
#define VL_RBUF_NDIM_MAX   4  // dimensions per field
#define VL_RBUF_NAME_MAX   32 // bytes of a field name, NUL included

/* A field's element type. */
enum { VL_RBUF_F32 = 0, VL_RBUF_U8 = 1, VL_RBUF_I32 = 2, VL_RBUF_I64 = 3, VL_RBUF_F64 = 4 };

typedef struct {
    char name[VL_RBUF_NAME_MAX]; // printable, unique within the buffer
    uint32_t dtype;              // a VL_RBUF_* type
    uint32_t ndim;               // 0 (a scalar) .. VL_RBUF_NDIM_MAX
    uint32_t shape[VL_RBUF_NDIM_MAX];
} vl_rbuf_field_t;

typedef struct vl_rbuf_s vl_rbuf_t;

/* Creates a buffer of capacity samples (1 .. 2^30, the priority tree's
   limit) of n_fields fields; seed drives sampling. Returns it (caller
   destroys), or NULL after writing why (bad field, no memory). */
VL_EXPORT vl_rbuf_t *vl_rbuf_new(uint64_t capacity, const vl_rbuf_field_t *fields,
                                 uint32_t n_fields, uint64_t seed, char *why, size_t why_size);

/* Frees the buffer and nulls the pointer; safe on NULL and twice. */
VL_EXPORT void vl_rbuf_destroy(vl_rbuf_t **self_p);

/* Returns how many samples it holds at most. */
VL_EXPORT uint64_t vl_rbuf_capacity(const vl_rbuf_t *self);

/* Returns how many fields a sample has. */
VL_EXPORT uint32_t vl_rbuf_n_fields(const vl_rbuf_t *self);

/* Returns field i's spec (owned by the buffer; name NUL-padded, shape past
   ndim 0), or NULL when i is out of range: how a loaded buffer's fields
   are learnt. */
VL_EXPORT const vl_rbuf_field_t *vl_rbuf_field(const vl_rbuf_t *self, uint32_t i);

/* Returns the bytes of one sample of field i (its shape times its dtype's
   size), 0 when i is out of range. */
VL_EXPORT size_t vl_rbuf_field_bytes(const vl_rbuf_t *self, uint32_t i);

/* Returns field i's array: capacity rows of vl_rbuf_field_bytes, 64-byte
   aligned (owned by the buffer, valid for its life), for zero-copy reads;
   NULL when i is out of range. Rows 0 .. size - 1 hold samples; a row may
   be mid-write while add_batch runs (gather never returns one). */
VL_EXPORT void *vl_rbuf_field_data(vl_rbuf_t *self, uint32_t i);

/* Adds n samples: data[i] points to n rows of field i, contiguous. New rows
   get priority max_priority seen so far (1 at first). Thread-safe. Returns
   the row of the first sample (sample j goes to row (first + j) % capacity;
   when n > capacity the first n - capacity are overwritten by the rest and
   not copied). */
VL_EXPORT uint64_t vl_rbuf_add_batch(vl_rbuf_t *self, const void *const *data, uint64_t n);

/* Returns how many samples it holds (<= capacity). */
VL_EXPORT uint64_t vl_rbuf_size(const vl_rbuf_t *self);

/* Draws n row indices into idx[n]: uniform when beta < 0 (w[n] all 1),
   else by priority with importance weights into w[n] (w may be NULL),
   largest 1. Only committed rows are drawn. Returns n, or 0 when the buffer
   is empty or no committed row of priority > 0 could be drawn. Thread-safe. */
VL_EXPORT uint64_t vl_rbuf_sample(vl_rbuf_t *self, uint64_t n, float beta, uint64_t *idx, float *w);

/* Copies rows idx[n] of every field into out[i] (n rows each), each row
   whole even while add_batch overwrites it (then as the newer sample). An
   index >= capacity gives zero bytes and is counted (vl_rbuf_rejected).
   Thread-safe. */
VL_EXPORT void vl_rbuf_gather(vl_rbuf_t *self, const uint64_t *idx, uint64_t n, void *const *out);

/* Sets the priorities of rows idx[n] (each >= 0 and finite; others are set
   to 0 and counted). An index >= capacity or of a row never written is
   ignored and counted. Thread-safe. */
VL_EXPORT void vl_rbuf_update_priorities(vl_rbuf_t *self, const uint64_t *idx, const double *p,
                                         uint64_t n);

/* Returns how many bad entries gather and update_priorities were given
   (indices out of range or of rows never written, priorities negative or
   not finite) since the buffer was made. */
VL_EXPORT uint64_t vl_rbuf_rejected(const vl_rbuf_t *self);

/* Writes the buffer (fields, rows, priorities, position) to path, atomically.
   Returns 0, or -1 after writing why. Never overwrites: an existing path is
   refused. Sampling may go on meanwhile; adding may not (a save that finds
   an add_batch in progress refuses, one started during the save may leave
   a torn row in the file). */
VL_EXPORT int vl_rbuf_save(vl_rbuf_t *self, const char *path, char *why, size_t why_size);

/* Loads a buffer saved by vl_rbuf_save (caller destroys it); seed drives
   its sampling. Returns it, or NULL after writing why (missing, truncated,
   corrupt: the reason names it). */
VL_EXPORT vl_rbuf_t *vl_rbuf_load(const char *path, uint64_t seed, char *why, size_t why_size);

#ifdef __cplusplus
}
#endif

#endif
