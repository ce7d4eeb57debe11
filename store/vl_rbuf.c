/*  vl_rbuf: volley's replay buffer for outside code (include/volley/replay.h).

    Sample number s (the s-th ever added, from 0) lives in row s % capacity.
    A writer reserves its samples' numbers with one fetch_add on `cursor`,
    claims their rows, copies each field's rows with one or two memcpys (two
    when they wrap) and commits. Each row has a stamp:
      0                  never written
      s + 1              holds sample s, committed
      (s + 1) | S_BUSY   sample s is being copied in
    A writer claims a row by a CAS from the stamp of an older, committed
    sample to its own busy stamp. Should a newer sample already hold the row
    (a writer lapped by capacity rows of others), its own sample is one the
    ring has overwritten: it skips the row. Should an older sample still be
    copying, it waits for it. So no two writers copy into one row at once
    and the newest sample wins.

    Readers see committed rows only: sample draws a row only when its stamp
    is committed (and draws again otherwise); gather copies a row between
    two reads of its stamp and copies again if they differ (a seqlock), so a
    row overwritten meanwhile comes out whole, as the newer sample.

    Priorities live in a vl_sampler (a sum-tree, not thread-safe) under
    `lock`, taken once per add_batch (all its rows' priorities at once), per
    sample and per update_priorities, never around a copy. A row gets its
    priority when it commits, so a row reserved but not yet written in the
    first pass has priority 0 and is never drawn; a row being overwritten
    keeps its old priority until then, and a draw that lands on it draws
    again.

    File (vl_checkpoint sections; integers little-endian, field data in
    host order, little-endian on every host volley builds for):
      "rbuf"        48-byte header then 64 bytes per field:
                    0 magic "VLRBUF\0\1", 8 version, 12 n_fields,
                    16 capacity, 24 cursor (samples ever added), 32 size,
                    40 max priority (IEEE double);
                    field: 0 name[32], 32 dtype, 36 ndim, 40 shape[4],
                    56 bytes per sample
      "priorities"  size doubles, rows 0 .. size - 1
      "field.<i>"   rows 0 .. size - 1 of field i, as stored: the ring's
                    oldest sample is in row cursor % capacity once full
    Only rows 0 .. size - 1 ever hold samples (size < capacity means the
    ring has not wrapped), so the file holds exactly the valid rows. */
#include "volley/replay.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/vl_fs.h"
#include "../common/vl_le.h"
#include "../common/vl_log.h"
#include "../common/vl_rng.h"
#include "vl_checkpoint.h"
#include "vl_sampler.h"

#define S_BUSY         (1ull << 63)
#define S_MAX_SEQ      (1ull << 62) // samples ever added; far from S_BUSY
#define S_MAX_CAPACITY (1ull << 30) // vl_sampler's limit
#define S_ALIGN        64           // a cache line: rows of 64-byte multiples never share one
#define S_HUGE         (2u << 20)   // arrays this big or more ask for huge pages
#define S_REDRAWS      1000         // draws per sample that may land on rows being written
#define S_BATCH        256          // draws per vl_sampler_sample call (stack buffers)
#define S_MAGIC        "VLRBUF\0\1"
#define S_VERSION      1
#define S_HEADER       48
#define S_FIELD        64
#define S_SAVE_THREADS 8 // checkpoint threads, at most: memory bandwidth is the limit

typedef struct {
    vl_rbuf_field_t spec;
    size_t bytes;  // per sample
    uint8_t *data; // [capacity][bytes], S_ALIGN-aligned
} s_field_t;

struct vl_rbuf_s {
    uint64_t capacity;
    uint32_t n_fields;
    s_field_t fields[VL_RBUF_FIELDS_MAX];
    _Atomic uint64_t *stamps;                 // [capacity], see the top
    alignas(S_ALIGN) _Atomic uint64_t cursor; // samples reserved
    alignas(S_ALIGN) _Atomic uint64_t added;  // samples whose add_batch finished
    alignas(S_ALIGN) _Atomic uint64_t rejected;
    alignas(S_ALIGN) pthread_mutex_t lock; // guards what follows
    vl_sampler_t *sampler;
    vl_rng_t rng;        // uniform draws
    double max_priority; // of every priority set so far, 1 at first
};

static const size_t s_dtype_size[] = {
    [VL_RBUF_F32] = 4, [VL_RBUF_U8] = 1, [VL_RBUF_I32] = 4, [VL_RBUF_I64] = 8, [VL_RBUF_F64] = 8};

/* ---- fields ----------------------------------------------------------------- */

/* Checks one field and sets *bytes. Returns 0, or -1 with why. */
static int s_check_field(const vl_rbuf_field_t *f, uint32_t i, size_t *bytes, char *why,
                         size_t why_size)
{
    size_t len = strnlen(f->name, VL_RBUF_NAME_MAX);
    if (len == 0 || len == VL_RBUF_NAME_MAX)
        return vl_why(why, why_size, "field %u: name is not 1..%d characters", i,
                      VL_RBUF_NAME_MAX - 1);
    for (size_t k = 0; k < len; k++)
        if (f->name[k] < 0x20 || f->name[k] > 0x7e)
            return vl_why(why, why_size, "field %u: name has a character that is not printable", i);
    if (f->dtype >= sizeof s_dtype_size / sizeof s_dtype_size[0])
        return vl_why(why, why_size, "field '%s': unknown dtype %u", f->name, f->dtype);
    if (f->ndim > VL_RBUF_NDIM_MAX)
        return vl_why(why, why_size, "field '%s': %u dimensions (at most %d)", f->name, f->ndim,
                      VL_RBUF_NDIM_MAX);
    uint64_t b = s_dtype_size[f->dtype];
    for (uint32_t d = 0; d < f->ndim; d++) {
        if (f->shape[d] == 0 || b * f->shape[d] > (1ull << 40))
            return vl_why(why, why_size, "field '%s': dimension %u is %u", f->name, d, f->shape[d]);
        b *= f->shape[d];
    }
    *bytes = (size_t)b;
    return 0;
}

/* Checks capacity and the field table, and sets bytes[n]. Returns 0, or -1
   with why. */
static int s_check_fields(uint64_t capacity, const vl_rbuf_field_t *fields, uint32_t n,
                          size_t *bytes, char *why, size_t why_size)
{
    if (capacity == 0 || capacity > S_MAX_CAPACITY)
        return vl_why(why, why_size, "capacity %llu is not 1..2^30 (the priority tree's limit)",
                      (unsigned long long)capacity);
    if (n == 0 || n > VL_RBUF_FIELDS_MAX || !fields)
        return vl_why(why, why_size, "%u fields (1..%d)", n, VL_RBUF_FIELDS_MAX);
    for (uint32_t i = 0; i < n; i++) {
        if (s_check_field(&fields[i], i, &bytes[i], why, why_size) < 0)
            return -1;
        // PTRDIFF_MAX / 2 bounds every size and offset made from it (rounded up to a huge page
        // in s_alloc, indexed as ptrdiff_t by NumPy views), whatever a caller or a file says
        if (bytes[i] > (size_t)(PTRDIFF_MAX / 2) / capacity)
            return vl_why(why, why_size, "field '%s': %llu samples of %zu bytes is too large",
                          fields[i].name, (unsigned long long)capacity, bytes[i]);
        for (uint32_t j = 0; j < i; j++)
            if (strcmp(fields[i].name, fields[j].name) == 0)
                return vl_why(why, why_size, "two fields named '%s'", fields[i].name);
    }
    return 0;
}

/* Clears what a checked field's spec does not use: the name's bytes after
   its NUL, the shape past ndim. */
static void s_normalize(vl_rbuf_field_t *f)
{
    size_t len = strnlen(f->name, VL_RBUF_NAME_MAX);
    memset(f->name + len, 0, VL_RBUF_NAME_MAX - len);
    for (uint32_t d = f->ndim; d < VL_RBUF_NDIM_MAX; d++)
        f->shape[d] = 0;
}

/* Returns n bytes aligned to S_ALIGN (free() them), or NULL. Large arrays
   ask for huge pages: copying into fresh memory is otherwise bound by
   faulting it in 4 KiB at a time. */
static void *s_alloc(size_t n)
{
    size_t align = n >= S_HUGE ? S_HUGE : S_ALIGN;
    if (n > SIZE_MAX - align)
        return NULL;
    size_t rounded = n / align * align + (n % align ? align : 0);
    void *p = aligned_alloc(align, rounded ? rounded : align);
    if (p && align == S_HUGE)
        madvise(p, rounded, MADV_HUGEPAGE); // a hint: failure costs only speed
    else if (p)
        memset(p, 0, rounded);
    return p;
}

vl_rbuf_t *vl_rbuf_new(uint64_t capacity, const vl_rbuf_field_t *fields, uint32_t n_fields,
                       uint64_t seed, char *why, size_t why_size)
{
    size_t bytes[VL_RBUF_FIELDS_MAX];
    if (s_check_fields(capacity, fields, n_fields, bytes, why, why_size) < 0)
        return NULL;
    size_t size = (sizeof(vl_rbuf_t) + S_ALIGN - 1) / S_ALIGN * S_ALIGN;
    vl_rbuf_t *self = aligned_alloc(S_ALIGN, size);
    if (!self) {
        vl_why(why, why_size, "no memory");
        return NULL;
    }
    memset(self, 0, size);
    self->capacity = capacity;
    self->n_fields = n_fields;
    atomic_init(&self->cursor, 0);
    atomic_init(&self->added, 0);
    atomic_init(&self->rejected, 0);
    pthread_mutex_init(&self->lock, NULL);
    vl_rng_seed(&self->rng, seed ^ 0x5eed0fa11u);
    self->max_priority = 1.0;
    self->sampler = vl_sampler_new((uint32_t)capacity, seed);
    // Zero bytes are a valid _Atomic uint64_t 0 on every target volley has.
    self->stamps = calloc(capacity, sizeof *self->stamps);
    int ok = self->sampler && self->stamps;
    for (uint32_t i = 0; ok && i < n_fields; i++) {
        self->fields[i] = (s_field_t){.spec = fields[i], .bytes = bytes[i]};
        s_normalize(&self->fields[i].spec);
        ok = (self->fields[i].data = s_alloc(capacity * bytes[i])) != NULL;
    }
    if (!ok) {
        vl_why(why, why_size, "no memory for %llu samples", (unsigned long long)capacity);
        vl_rbuf_destroy(&self);
    }
    return self;
}

void vl_rbuf_destroy(vl_rbuf_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    vl_rbuf_t *self = *self_p;
    for (uint32_t i = 0; i < self->n_fields; i++)
        free(self->fields[i].data);
    free(self->stamps);
    vl_sampler_destroy(&self->sampler);
    pthread_mutex_destroy(&self->lock);
    free(self);
    *self_p = NULL;
}

uint64_t vl_rbuf_capacity(const vl_rbuf_t *self)
{
    return self->capacity;
}

uint32_t vl_rbuf_n_fields(const vl_rbuf_t *self)
{
    return self->n_fields;
}

const vl_rbuf_field_t *vl_rbuf_field(const vl_rbuf_t *self, uint32_t i)
{
    return i < self->n_fields ? &self->fields[i].spec : NULL;
}

size_t vl_rbuf_field_bytes(const vl_rbuf_t *self, uint32_t i)
{
    return i < self->n_fields ? self->fields[i].bytes : 0;
}

void *vl_rbuf_field_data(vl_rbuf_t *self, uint32_t i)
{
    return i < self->n_fields ? self->fields[i].data : NULL;
}

uint64_t vl_rbuf_size(const vl_rbuf_t *self)
{
    uint64_t added = atomic_load_explicit(&self->added, memory_order_acquire);
    return added < self->capacity ? added : self->capacity;
}

uint64_t vl_rbuf_rejected(const vl_rbuf_t *self)
{
    return atomic_load_explicit(&self->rejected, memory_order_relaxed);
}

/* ---- adding ------------------------------------------------------------------ */

/* Claims sample seq's row for writing. Returns 1, or 0 when a newer sample
   holds it (seq is already overwritten in ring order). */
static int s_claim(vl_rbuf_t *self, uint64_t seq)
{
    _Atomic uint64_t *stamp = &self->stamps[seq % self->capacity];
    uint64_t old = atomic_load_explicit(stamp, memory_order_relaxed);
    for (;;) {
        if ((old & ~S_BUSY) > seq + 1)
            return 0;
        if (old & S_BUSY) { // an older sample is still copying in: wait for it
            sched_yield();
            old = atomic_load_explicit(stamp, memory_order_relaxed);
        } else if (atomic_compare_exchange_weak_explicit(stamp, &old, (seq + 1) | S_BUSY,
                                                         memory_order_acquire,
                                                         memory_order_relaxed)) {
            return 1;
        }
    }
}

/* Copies k samples, from number src of data's rows, into the rows of
   samples seq .. seq + k - 1 (k <= capacity): two memcpys a field when
   they wrap. */
static void s_copy(vl_rbuf_t *self, const void *const *data, uint64_t src, uint64_t seq, uint64_t k)
{
    uint64_t row = seq % self->capacity, first = self->capacity - row;
    first = k < first ? k : first;
    for (uint32_t i = 0; i < self->n_fields; i++) {
        size_t b = self->fields[i].bytes;
        const uint8_t *from = (const uint8_t *)data[i] + src * b;
        memcpy(self->fields[i].data + row * b, from, first * b);
        if (k > first)
            memcpy(self->fields[i].data, from + first * b, (k - first) * b);
    }
}

/* Returns 1 if sample seq's row is busy with seq: claimed by its writer. */
static int s_mine(const vl_rbuf_t *self, uint64_t seq)
{
    return atomic_load_explicit(&self->stamps[seq % self->capacity], memory_order_relaxed) ==
           ((seq + 1) | S_BUSY);
}

/* Commits samples seq .. seq + k - 1 (those this writer claimed), then
   gives them the highest priority so far, all under one lock. */
static void s_commit(vl_rbuf_t *self, uint64_t seq, uint64_t k)
{
    for (uint64_t s = seq; s < seq + k; s++)
        if (s_mine(self, s)) // only this writer moves a stamp off its busy value
            atomic_store_explicit(&self->stamps[s % self->capacity], s + 1, memory_order_release);
    pthread_mutex_lock(&self->lock);
    for (uint64_t s = seq; s < seq + k; s++) {
        uint64_t row = s % self->capacity;
        if (atomic_load_explicit(&self->stamps[row], memory_order_relaxed) == s + 1)
            vl_sampler_set(self->sampler, (uint32_t)row, self->max_priority);
    }
    pthread_mutex_unlock(&self->lock);
}

uint64_t vl_rbuf_add_batch(vl_rbuf_t *self, const void *const *data, uint64_t n)
{
    if (n == 0)
        return atomic_load_explicit(&self->cursor, memory_order_relaxed) % self->capacity;
    uint64_t seq0 = atomic_fetch_add_explicit(&self->cursor, n, memory_order_relaxed);
    uint64_t skip = n > self->capacity ? n - self->capacity : 0; // overwritten by the rest
    uint64_t seq = seq0 + skip, k = n - skip, claimed = 0;
    for (uint64_t s = seq; s < seq + k; s++)
        claimed += (uint64_t)s_claim(self, s);
    atomic_thread_fence(memory_order_release); // busy stamps before the bytes (a seqlock)
    if (claimed == k)
        s_copy(self, data, skip, seq, k);
    else // lapped: some rows are a newer sample's
        for (uint64_t j = 0; j < k; j++)
            if (s_mine(self, seq + j))
                s_copy(self, data, skip + j, seq + j, 1);
    s_commit(self, seq, k);
    atomic_fetch_add_explicit(&self->added, n, memory_order_release);
    return seq0 % self->capacity;
}

/* ---- sampling and gathering --------------------------------------------------- */

/* Returns 1 if the row holds a sample, committed. */
static int s_committed(const vl_rbuf_t *self, uint64_t row)
{
    uint64_t stamp = atomic_load_explicit(&self->stamps[row], memory_order_acquire);
    return stamp != 0 && !(stamp & S_BUSY);
}

/* Draws n committed rows uniformly, under the lock. Returns n, or 0 when
   S_REDRAWS draws in a row found none. */
static uint64_t s_sample_uniform(vl_rbuf_t *self, uint64_t n, uint64_t *idx, float *w)
{
    uint64_t cursor = atomic_load_explicit(&self->cursor, memory_order_relaxed);
    uint32_t hi = (uint32_t)(cursor < self->capacity ? cursor : self->capacity);
    for (uint64_t k = 0; k < n; k++) {
        int tries = 0;
        do
            idx[k] = vl_rng_below(&self->rng, hi);
        while (!s_committed(self, idx[k]) && ++tries < S_REDRAWS);
        if (tries == S_REDRAWS)
            return 0;
        if (w)
            w[k] = 1.0f;
    }
    return n;
}

/* Writes w[n] = (N P(i))^-beta over the largest among the n, as
   vl_sampler_sample does, for draws some of which were drawn again. */
static void s_weights(const vl_rbuf_t *self, const uint64_t *idx, uint64_t n, float beta, float *w)
{
    double lo = INFINITY;
    for (uint64_t k = 0; k < n; k++) {
        double l = log(vl_sampler_get(self->sampler, (uint32_t)idx[k]));
        lo = l < lo ? l : lo;
    }
    for (uint64_t k = 0; k < n; k++) {
        double l = log(vl_sampler_get(self->sampler, (uint32_t)idx[k]));
        w[k] = beta == 0.0f ? 1.0f : (float)exp(-(double)beta * (l - lo));
    }
}

/* Draws n committed rows by priority, under the lock. Returns n, or 0. */
static uint64_t s_sample_prioritized(vl_rbuf_t *self, uint64_t n, float beta, uint64_t *idx,
                                     float *w)
{
    uint32_t slots[S_BATCH];
    float weights[S_BATCH];
    int redrawn = 0;
    double total = vl_sampler_total(self->sampler);
    for (uint64_t k = 0; k < n; k += S_BATCH) {
        uint32_t m = (uint32_t)(n - k < S_BATCH ? n - k : S_BATCH);
        if (vl_sampler_sample(self->sampler, m, beta, slots, weights) != m)
            return 0;
        for (uint32_t j = 0; j < m; j++) {
            int tries = 0;
            while (!s_committed(self, slots[j]) && ++tries < S_REDRAWS) {
                slots[j] = vl_sampler_find(self->sampler, total * vl_rng_uniform(&self->rng));
                redrawn = 1;
            }
            if (tries == S_REDRAWS)
                return 0;
            idx[k + j] = slots[j];
            if (w)
                w[k + j] = weights[j];
        }
    }
    if (w && (redrawn || n > S_BATCH)) // the sampler's weights are relative to its own draws
        s_weights(self, idx, n, beta, w);
    return n;
}

uint64_t vl_rbuf_sample(vl_rbuf_t *self, uint64_t n, float beta, uint64_t *idx, float *w)
{
    if (n == 0 || vl_rbuf_size(self) == 0)
        return 0;
    pthread_mutex_lock(&self->lock);
    uint64_t got = beta < 0.0f ? s_sample_uniform(self, n, idx, w)
                               : s_sample_prioritized(self, n, beta, idx, w);
    pthread_mutex_unlock(&self->lock);
    return got;
}

/* Copies row `row` of every field into row k of out[], whole: again if a
   writer took the row meanwhile. */
static void s_gather_row(vl_rbuf_t *self, uint64_t row, uint64_t k, void *const *out)
{
    for (;;) {
        uint64_t before = atomic_load_explicit(&self->stamps[row], memory_order_acquire);
        if (before & S_BUSY) {
            sched_yield();
            continue;
        }
        for (uint32_t i = 0; i < self->n_fields; i++) {
            size_t b = self->fields[i].bytes;
            memcpy((uint8_t *)out[i] + k * b, self->fields[i].data + row * b, b);
        }
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&self->stamps[row], memory_order_relaxed) == before)
            return;
    }
}

void vl_rbuf_gather(vl_rbuf_t *self, const uint64_t *idx, uint64_t n, void *const *out)
{
    for (uint64_t k = 0; k < n; k++) {
        if (idx[k] < self->capacity) {
            s_gather_row(self, idx[k], k, out);
            continue;
        }
        for (uint32_t i = 0; i < self->n_fields; i++)
            memset((uint8_t *)out[i] + k * self->fields[i].bytes, 0, self->fields[i].bytes);
        atomic_fetch_add_explicit(&self->rejected, 1, memory_order_relaxed);
    }
}

void vl_rbuf_update_priorities(vl_rbuf_t *self, const uint64_t *idx, const double *p, uint64_t n)
{
    uint64_t bad = 0;
    pthread_mutex_lock(&self->lock);
    for (uint64_t k = 0; k < n; k++) {
        // A row never written must stay out of the tree: drawn, it is no sample.
        if (idx[k] >= self->capacity ||
            atomic_load_explicit(&self->stamps[idx[k]], memory_order_relaxed) == 0) {
            bad++;
            continue;
        }
        double q = p[k];
        if (!(q >= 0.0) || isinf(q)) { // NaN fails q >= 0
            bad++;
            q = 0.0;
        }
        vl_sampler_set(self->sampler, (uint32_t)idx[k], q);
        self->max_priority = q > self->max_priority ? q : self->max_priority;
    }
    pthread_mutex_unlock(&self->lock);
    if (bad)
        atomic_fetch_add_explicit(&self->rejected, bad, memory_order_relaxed);
}

/* ---- saving -------------------------------------------------------------------- */

static uint64_t s_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static double s_double(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

/* Writes the "rbuf" section into h[S_HEADER + n_fields * S_FIELD]. */
static void s_encode_header(const vl_rbuf_t *self, uint64_t cursor, uint64_t size,
                            double max_priority, uint8_t *h)
{
    memset(h, 0, S_HEADER + (size_t)self->n_fields * S_FIELD);
    memcpy(h, S_MAGIC, 8);
    vl_le_put32(h + 8, S_VERSION);
    vl_le_put32(h + 12, self->n_fields);
    vl_le_put64(h + 16, self->capacity);
    vl_le_put64(h + 24, cursor);
    vl_le_put64(h + 32, size);
    vl_le_put64(h + 40, s_bits(max_priority));
    for (uint32_t i = 0; i < self->n_fields; i++) {
        const s_field_t *f = &self->fields[i];
        uint8_t *e = h + S_HEADER + (size_t)i * S_FIELD;
        memcpy(e, f->spec.name, strnlen(f->spec.name, VL_RBUF_NAME_MAX));
        vl_le_put32(e + 32, f->spec.dtype);
        vl_le_put32(e + 36, f->spec.ndim);
        for (uint32_t d = 0; d < VL_RBUF_NDIM_MAX; d++)
            vl_le_put32(e + 40 + 4 * d, d < f->spec.ndim ? f->spec.shape[d] : 0);
        vl_le_put64(e + 56, f->bytes);
    }
}

/* Returns rows 0 .. size - 1's priorities as little-endian doubles (caller
   frees) and sets *max_priority, or NULL. */
static uint8_t *s_encode_priorities(vl_rbuf_t *self, uint64_t size, double *max_priority)
{
    uint8_t *p = malloc(size ? 8 * size : 1);
    if (!p)
        return NULL;
    pthread_mutex_lock(&self->lock);
    for (uint64_t r = 0; r < size; r++)
        vl_le_put64(p + 8 * r, s_bits(vl_sampler_get(self->sampler, (uint32_t)r)));
    *max_priority = self->max_priority;
    pthread_mutex_unlock(&self->lock);
    return p;
}

static int s_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > S_SAVE_THREADS ? S_SAVE_THREADS : (int)n;
}

/* Writes the checkpoint to tmp. Returns 0, or -1 with why. */
static int s_write(vl_rbuf_t *self, const char *tmp, char *why, size_t why_size)
{
    uint64_t cursor = atomic_load_explicit(&self->added, memory_order_acquire);
    uint64_t size = cursor < self->capacity ? cursor : self->capacity;
    uint8_t header[S_HEADER + VL_RBUF_FIELDS_MAX * S_FIELD];
    char names[VL_RBUF_FIELDS_MAX][16];
    vl_section_t sections[2 + VL_RBUF_FIELDS_MAX];
    double max_priority;
    uint8_t *prio = s_encode_priorities(self, size, &max_priority);
    if (!prio)
        return vl_why(why, why_size, "no memory");
    s_encode_header(self, cursor, size, max_priority, header);
    sections[0] = (vl_section_t){"rbuf", header, S_HEADER + (size_t)self->n_fields * S_FIELD};
    sections[1] = (vl_section_t){"priorities", prio, 8 * size};
    for (uint32_t i = 0; i < self->n_fields; i++) {
        snprintf(names[i], sizeof names[i], "field.%u", i);
        sections[2 + i] =
            (vl_section_t){names[i], self->fields[i].data, size * self->fields[i].bytes};
    }
    // LZ4 at its default acceleration: higher measured no faster, neither on
    // board planes (22x smaller) nor on noise (stored raw).
    vl_checkpoint_opts_t o = {.threads = s_threads()};
    int rc = vl_checkpoint_write_opts(tmp, sections, 2 + (int)self->n_fields, &o);
    free(prio);
    return rc < 0 ? vl_why(why, why_size, "cannot write %s (the log says why)", tmp) : 0;
}

int vl_rbuf_save(vl_rbuf_t *self, const char *path, char *why, size_t why_size)
{
    static _Atomic unsigned serial; // two saves in one process never share a temp name
    struct stat st;
    if (lstat(path, &st) == 0)
        return vl_why(why, why_size, "%s exists; refusing to overwrite", path);
    if (errno != ENOENT)
        return vl_why(why, why_size, "%s: %s", path, strerror(errno));
    if (atomic_load(&self->cursor) != atomic_load(&self->added))
        return vl_why(why, why_size, "%s: an add_batch is in progress; save needs writers stopped",
                      path);
    size_t len = strlen(path) + 64;
    char *tmp = malloc(len);
    if (!tmp)
        return vl_why(why, why_size, "no memory");
    snprintf(tmp, len, "%s.rbuf.%ld.%u", path, (long)getpid(), atomic_fetch_add(&serial, 1));
    int rc = s_write(self, tmp, why, why_size);
    // link() makes the name appear only if it is free: never over a file
    // that appeared since the check above, and never a half-written one.
    if (rc == 0 && link(tmp, path) < 0)
        rc = errno == EEXIST ? vl_why(why, why_size, "%s exists; refusing to overwrite", path)
                             : vl_why(why, why_size, "%s: cannot link: %s", path, strerror(errno));
    unlink(tmp);
    free(tmp);
    if (rc == 0)
        vl_fs_sync_dir(path); // the file is durable; only its name's durability could fail
    return rc;
}

/* ---- loading ------------------------------------------------------------------- */

typedef struct {
    uint64_t capacity, cursor, size;
    double max_priority;
    uint32_t n_fields;
    vl_rbuf_field_t fields[VL_RBUF_FIELDS_MAX];
    size_t bytes[VL_RBUF_FIELDS_MAX];
} s_header_t;

/* Decodes and checks the "rbuf" section. Returns 0, or -1 with why. */
static int s_decode_header(const uint8_t *b, size_t n, s_header_t *h, char *why, size_t why_size)
{
    if (n < S_HEADER || memcmp(b, S_MAGIC, 8) != 0)
        return vl_why(why, why_size, "corrupt: not a replay buffer header");
    if (vl_le_get32(b + 8) != S_VERSION)
        return vl_why(why, why_size, "unsupported replay buffer version %u (this build reads %d)",
                      vl_le_get32(b + 8), S_VERSION);
    h->n_fields = vl_le_get32(b + 12);
    if (h->n_fields == 0 || h->n_fields > VL_RBUF_FIELDS_MAX ||
        n != S_HEADER + (size_t)h->n_fields * S_FIELD)
        return vl_why(why, why_size, "corrupt header: %u fields in %zu bytes", h->n_fields, n);
    h->capacity = vl_le_get64(b + 16);
    h->cursor = vl_le_get64(b + 24);
    h->size = vl_le_get64(b + 32);
    h->max_priority = s_double(vl_le_get64(b + 40));
    for (uint32_t i = 0; i < h->n_fields; i++) {
        const uint8_t *e = b + S_HEADER + (size_t)i * S_FIELD;
        vl_rbuf_field_t *f = &h->fields[i];
        memcpy(f->name, e, VL_RBUF_NAME_MAX);
        f->dtype = vl_le_get32(e + 32);
        f->ndim = vl_le_get32(e + 36);
        for (uint32_t d = 0; d < VL_RBUF_NDIM_MAX; d++)
            f->shape[d] = vl_le_get32(e + 40 + 4 * d);
    }
    char reason[160];
    if (s_check_fields(h->capacity, h->fields, h->n_fields, h->bytes, reason, sizeof reason) < 0)
        return vl_why(why, why_size, "corrupt header: %s", reason);
    for (uint32_t i = 0; i < h->n_fields; i++)
        if (vl_le_get64(b + S_HEADER + (size_t)i * S_FIELD + 56) != h->bytes[i])
            return vl_why(why, why_size, "corrupt header: field '%s' has the wrong size",
                          h->fields[i].name);
    if (h->cursor > S_MAX_SEQ || h->size != (h->cursor < h->capacity ? h->cursor : h->capacity))
        return vl_why(why, why_size, "corrupt header: size %llu, cursor %llu, capacity %llu",
                      (unsigned long long)h->size, (unsigned long long)h->cursor,
                      (unsigned long long)h->capacity);
    if (!(h->max_priority > 0.0) || isinf(h->max_priority))
        return vl_why(why, why_size, "corrupt header: max priority %g", h->max_priority);
    return 0;
}

/* Returns section name's bytes if it holds exactly want bytes, else NULL
   with why. */
static const uint8_t *s_section(const vl_checkpoint_t *ck, const char *name, uint64_t want,
                                char *why, size_t why_size)
{
    size_t n;
    const uint8_t *p = vl_checkpoint_get(ck, name, &n);
    if (!p)
        vl_why(why, why_size, "corrupt: no section '%s'", name);
    else if (n != want)
        vl_why(why, why_size, "corrupt: section '%s' has %zu bytes, not %llu", name, n,
               (unsigned long long)want);
    return p && n == want ? p : NULL;
}

typedef struct {
    uint8_t *dst;
    const uint8_t *src;
    size_t n;
} s_copy_t;

static void *s_copy_worker(void *arg)
{
    s_copy_t *c = arg;
    memcpy(c->dst, c->src, c->n);
    return NULL;
}

/* Copies n bytes with up to `threads` threads: copying into a fresh buffer
   is bound by faulting its pages in, which threads do side by side. */
static void s_copy_parallel(uint8_t *dst, const uint8_t *src, size_t n, int threads)
{
    s_copy_t part[S_SAVE_THREADS];
    pthread_t tid[S_SAVE_THREADS];
    size_t slice = n / (size_t)threads / S_HUGE * S_HUGE; // whole huge pages each
    int started = 0;
    if (slice == 0)
        threads = 1;
    for (int t = 0; t < threads; t++) {
        size_t at = (size_t)t * slice;
        part[t] = (s_copy_t){dst + at, src + at, t + 1 < threads ? slice : n - at};
    }
    while (started < threads - 1 &&
           pthread_create(&tid[started], NULL, s_copy_worker, &part[started]) == 0)
        started++;
    for (int t = started; t < threads; t++) // the caller's part, and any a thread could not take
        s_copy_worker(&part[t]);
    for (int t = 0; t < started; t++)
        pthread_join(tid[t], NULL);
}

/* Fills field i's rows with the checkpoint section name (rows, n bytes):
   a full buffer's field adopts the section's own memory when it is aligned
   as ours (no copy, and no second 2.5 GB of pages faulted in, at 50,000
   samples of 49,412 bytes); otherwise the rows are copied. */
static void s_fill_field(vl_rbuf_t *self, uint32_t i, vl_checkpoint_t *ck, const char *name,
                         const uint8_t *rows, size_t n)
{
    if (n == self->capacity * self->fields[i].bytes && (uintptr_t)rows % S_ALIGN == 0) {
        void *mine = vl_checkpoint_take(ck, name, NULL);
        if (mine == rows) {
            free(self->fields[i].data); // fresh, never touched: costs nothing
            self->fields[i].data = mine;
            return;
        }
    }
    s_copy_parallel(self->fields[i].data, rows, n, s_threads());
}

/* Fills a new buffer's rows, stamps and priorities from the checkpoint.
   Returns 0, or -1 with why. */
static int s_restore(vl_rbuf_t *self, vl_checkpoint_t *ck, const s_header_t *h, char *why,
                     size_t why_size)
{
    const uint8_t *prio = s_section(ck, "priorities", 8 * h->size, why, why_size);
    if (!prio)
        return -1;
    for (uint64_t r = 0; r < h->size; r++) {
        double p = s_double(vl_le_get64(prio + 8 * r));
        if (!(p >= 0.0) || isinf(p))
            return vl_why(why, why_size, "corrupt: row %llu's priority is %g",
                          (unsigned long long)r, p);
        vl_sampler_set(self->sampler, (uint32_t)r, p);
    }
    for (uint32_t i = 0; i < h->n_fields; i++) {
        char name[24];
        snprintf(name, sizeof name, "field.%u", i);
        const uint8_t *rows = s_section(ck, name, h->size * h->bytes[i], why, why_size);
        if (!rows)
            return -1;
        s_fill_field(self, i, ck, name, rows, h->size * h->bytes[i]);
    }
    // Row r holds the latest sample number s < cursor with s % capacity == r.
    uint64_t c = h->cursor, cap = h->capacity;
    for (uint64_t r = 0; r < h->size; r++)
        atomic_store_explicit(&self->stamps[r], (c - 1 - (c - 1 + cap - r) % cap) + 1,
                              memory_order_relaxed);
    atomic_store(&self->cursor, c);
    atomic_store(&self->added, c);
    self->max_priority = h->max_priority;
    return 0;
}

vl_rbuf_t *vl_rbuf_load(const char *path, uint64_t seed, char *why, size_t why_size)
{
    char reason[256];
    vl_checkpoint_opts_t o = {.threads = s_threads()};
    vl_checkpoint_t *ck = vl_checkpoint_read_opts(path, &o, reason, sizeof reason);
    if (!ck) {
        vl_why(why, why_size, "%s: %s", path, reason);
        return NULL;
    }
    s_header_t h;
    vl_rbuf_t *self = NULL;
    size_t n;
    int ok = 0;
    const uint8_t *header = vl_checkpoint_get(ck, "rbuf", &n);
    if (!header)
        vl_why(why, why_size, "%s: corrupt: not a replay buffer (no 'rbuf' section)", path);
    else if (s_decode_header(header, n, &h, reason, sizeof reason) < 0)
        vl_why(why, why_size, "%s: %s", path, reason);
    else if (!(self = vl_rbuf_new(h.capacity, h.fields, h.n_fields, seed, reason, sizeof reason)))
        vl_why(why, why_size, "%s: %s", path, reason);
    else if (s_restore(self, ck, &h, reason, sizeof reason) < 0)
        vl_why(why, why_size, "%s: %s", path, reason);
    else if (vl_checkpoint_count(ck) != 2 + (int)h.n_fields) // all there, and more
        vl_why(why, why_size, "%s: corrupt: %d sections for %u fields", path,
               vl_checkpoint_count(ck), h.n_fields);
    else
        ok = 1;
    if (!ok)
        vl_rbuf_destroy(&self);
    vl_checkpoint_destroy(&ck);
    return self;
}
