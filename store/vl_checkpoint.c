/*  vl_checkpoint: named sections in one file, chunked, LZ4-compressed and
    CRC-32C-checked (the format is in vl_checkpoint.h).

    Writing: the header and tables are only known once every chunk is
    compressed, so the chunks go first, at the offset the tables will end
    at, and the tables are written over the start last. Two workers (the
    caller and one thread) claim chunks in order; each compresses its chunk
    and then waits for its turn to append it, so one compresses while the
    other writes and memory stays at one LZ4 buffer per worker.

    Reading: the tables are checked completely before anything is
    allocated; since they give every chunk's offset, the workers then read,
    check and decompress chunks in any order, each straight into its
    section's buffer. */
#include "vl_checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <lz4.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/vl_crc32c.h"
#include "../common/vl_fs.h"
#include "../common/vl_le.h"
#include "../common/vl_log.h"

#define S_MAGIC       "VLCKPT\0\1"
#define S_END_MAGIC   "VLCKEND\0"
#define S_VERSION     1
#define S_HEADER      48
#define S_SECTION     40
#define S_CHUNK       16
#define S_META_CRC    8
#define S_TRAILER     16
#define S_MAX_RATIO   256 // an LZ4 block never decodes to more than ~255x its size
#define S_MAX_THREADS 16
#define S_WHY         256
#define S_HUGE        (2u << 20) // x86-64's huge page; buffers this big or more ask for them

typedef struct {
    uint32_t raw_size, stored_size, raw_crc, stored_crc;
    uint32_t section;  // index of the section it belongs to
    uint64_t index;    // its number within that section, for messages
    uint64_t raw_off;  // where its raw bytes start in the section
    uint64_t file_off; // where its stored bytes start in the file
} s_chunk_t;

typedef struct {
    char name[VL_CHECKPOINT_NAME_MAX + 1];
    uint8_t *data; // NULL when size is 0
    uint64_t size;
} s_section_t;

struct vl_checkpoint_s {
    int n;
    s_section_t *sections;
};

/* What the workers share, in either direction. */
typedef struct {
    int fd;
    s_chunk_t *chunks;
    uint64_t n_chunks;
    uint32_t chunk_size;
    int acceleration;
    const vl_section_t *in; // write: the sections' bytes
    s_section_t *out;       // read: the sections' buffers
    pthread_mutex_t lock;
    pthread_cond_t turn;
    uint64_t next_claim; // the next chunk a worker takes
    uint64_t next_write; // write: the chunk to be appended next
    uint64_t offset;     // write: where it goes
    uint32_t data_crc;   // write: crc of the stored bytes appended so far
    int failed;
    int err;            // write: errno of the failure
    uint64_t bad_chunk; // read: the failing chunk, the lowest if several
    char why[S_WHY];    // read: what was wrong with it
} s_pool_t;

static const uint8_t s_empty[1]; // an empty section's bytes

/* ---- I/O that finishes what it starts -------------------------------- */

/* Returns 0 once all n bytes are written at off, or -1 with errno. */
static int s_pwrite_all(int fd, const void *buf, size_t n, uint64_t off)
{
    const char *p = buf;
    while (n) {
        ssize_t k = pwrite(fd, p, n, (off_t)off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            if (k == 0)
                errno = EIO;
            return -1;
        }
        p += k, n -= (size_t)k, off += (uint64_t)k;
    }
    return 0;
}

/* Returns how many of n bytes at off were read (fewer at end of file), or
   -1 with errno. */
static ssize_t s_pread_all(int fd, void *buf, size_t n, uint64_t off)
{
    char *p = buf;
    size_t got = 0;
    while (got < n) {
        ssize_t k = pread(fd, p + got, n - got, (off_t)(off + got));
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -1;
        if (k == 0)
            break;
        got += (size_t)k;
    }
    return (ssize_t)got;
}

/* ---- the two workers -------------------------------------------------- */

/* Takes the next chunk into *i. Returns 0 when none is left or a worker
   failed. */
static int s_claim(s_pool_t *p, uint64_t *i)
{
    pthread_mutex_lock(&p->lock);
    int ok = !p->failed && p->next_claim < p->n_chunks;
    if (ok)
        *i = p->next_claim++;
    pthread_mutex_unlock(&p->lock);
    return ok;
}

/* Write: waits for chunk i's turn, appends its stored bytes. Returns 0, or
   -1 when this or another append failed. */
static int s_append(s_pool_t *p, uint64_t i, const void *bytes)
{
    const s_chunk_t *c = &p->chunks[i];
    pthread_mutex_lock(&p->lock);
    while (p->next_write != i && !p->failed)
        pthread_cond_wait(&p->turn, &p->lock);
    int failed = p->failed;
    uint64_t off = p->offset; // only the worker whose turn it is moves it
    pthread_mutex_unlock(&p->lock);
    if (failed)
        return -1;
    int err = s_pwrite_all(p->fd, bytes, c->stored_size, off) < 0 ? errno : 0;
    pthread_mutex_lock(&p->lock);
    if (err) {
        p->failed = 1;
        p->err = err;
    } else {
        p->offset += c->stored_size;
        p->data_crc = vl_crc32c_combine(p->data_crc, c->stored_crc, c->stored_size);
        p->next_write++;
    }
    pthread_cond_broadcast(&p->turn);
    pthread_mutex_unlock(&p->lock);
    return err ? -1 : 0;
}

static void *s_compress_worker(void *arg)
{
    s_pool_t *p = arg;
    int cap = LZ4_compressBound((int)p->chunk_size);
    char *buf = malloc((size_t)cap);
    uint64_t i;
    while (buf && s_claim(p, &i)) {
        s_chunk_t *c = &p->chunks[i];
        const char *raw = (const char *)p->in[c->section].data + c->raw_off;
        c->raw_crc = vl_crc32c(0, raw, c->raw_size);
        int z = LZ4_compress_fast(raw, buf, (int)c->raw_size, cap, p->acceleration);
        const char *stored = raw; // incompressible: stored as is
        c->stored_size = c->raw_size;
        c->stored_crc = c->raw_crc;
        if (z > 0 && (uint32_t)z < c->raw_size) {
            stored = buf;
            c->stored_size = (uint32_t)z;
            c->stored_crc = vl_crc32c(0, buf, (size_t)z);
        }
        if (s_append(p, i, stored) < 0)
            break;
    }
    if (!buf) {
        pthread_mutex_lock(&p->lock);
        p->failed = 1;
        p->err = ENOMEM;
        pthread_cond_broadcast(&p->turn);
        pthread_mutex_unlock(&p->lock);
    }
    free(buf);
    return NULL;
}

/* Read: records why chunk i is bad and stops the workers. */
static void s_refuse_chunk(s_pool_t *p, uint64_t i, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void s_refuse_chunk(s_pool_t *p, uint64_t i, const char *fmt, ...)
{
    pthread_mutex_lock(&p->lock);
    if (!p->failed || i < p->bad_chunk) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->why, sizeof p->why, fmt, ap);
        va_end(ap);
        p->bad_chunk = i;
    }
    p->failed = 1;
    pthread_mutex_unlock(&p->lock);
}

/* Read: reads, checks and decompresses chunk i into its section. */
static void s_load_chunk(s_pool_t *p, uint64_t i, char *buf)
{
    const s_chunk_t *c = &p->chunks[i];
    const char *name = p->out[c->section].name;
    char *dst = (char *)p->out[c->section].data + c->raw_off;
    char *src = c->stored_size == c->raw_size ? dst : buf;
    ssize_t got = s_pread_all(p->fd, src, c->stored_size, c->file_off);
    if (got < 0)
        s_refuse_chunk(p, i, "read error in section '%s': %s", name, strerror(errno));
    else if ((size_t)got < c->stored_size)
        s_refuse_chunk(p, i, "truncated at byte %llu (the file shrank while read)",
                       (unsigned long long)(c->file_off + (uint64_t)got));
    else if (vl_crc32c(0, src, c->stored_size) != c->stored_crc)
        s_refuse_chunk(p, i, "checksum mismatch in section '%s' chunk %llu", name,
                       (unsigned long long)c->index);
    else if (src == buf && LZ4_decompress_safe(buf, dst, (int)c->stored_size, (int)c->raw_size) !=
                               (int)c->raw_size)
        s_refuse_chunk(p, i, "bad LZ4 data in section '%s' chunk %llu", name,
                       (unsigned long long)c->index);
    else if (vl_crc32c(0, dst, c->raw_size) != c->raw_crc)
        s_refuse_chunk(p, i, "checksum mismatch in section '%s' chunk %llu (decompressed)", name,
                       (unsigned long long)c->index);
}

static void *s_decompress_worker(void *arg)
{
    s_pool_t *p = arg;
    char *buf = malloc(p->chunk_size); // a compressed chunk is smaller than its raw bytes
    if (!buf)
        s_refuse_chunk(p, 0, "out of memory");
    uint64_t i;
    while (buf && s_claim(p, &i))
        s_load_chunk(p, i, buf);
    free(buf);
    return NULL;
}

/* Runs fn on the caller and threads - 1 more threads until the chunks are
   done. A thread that cannot start leaves its share to the others. */
static void s_run(s_pool_t *p, int threads, void *(*fn)(void *))
{
    pthread_t tids[S_MAX_THREADS];
    int started = 0;
    if ((uint64_t)threads > p->n_chunks)
        threads = p->n_chunks > 1 ? (int)p->n_chunks : 1;
    while (started < threads - 1 && pthread_create(&tids[started], NULL, fn, p) == 0)
        started++;
    fn(p);
    for (int t = 0; t < started; t++)
        pthread_join(tids[t], NULL);
}

/* Sets up p in place (a mutex must not be copied once initialised). */
static void s_pool_init(s_pool_t *p, int fd, uint32_t chunk_size, int acceleration)
{
    *p = (s_pool_t){.fd = fd, .chunk_size = chunk_size, .acceleration = acceleration};
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->turn, NULL);
}

static void s_pool_done(s_pool_t *p)
{
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->turn);
    free(p->chunks);
    p->chunks = NULL;
}

/* ---- options and names ------------------------------------------------- */

static vl_checkpoint_opts_t s_opts(const vl_checkpoint_opts_t *opts)
{
    vl_checkpoint_opts_t o = opts ? *opts : (vl_checkpoint_opts_t){0};
    o.chunk_size = o.chunk_size ? o.chunk_size : VL_CHECKPOINT_CHUNK;
    o.acceleration = o.acceleration > 0 ? o.acceleration : 1;
    o.threads = o.threads > 0 ? o.threads : VL_CHECKPOINT_THREADS;
    o.threads = o.threads < S_MAX_THREADS ? o.threads : S_MAX_THREADS;
    return o;
}

/* Returns 1 if name is 1..31 printable ASCII characters. */
static int s_name_ok(const char *name, size_t room)
{
    size_t len = strnlen(name, room);
    if (len < 1 || len > VL_CHECKPOINT_NAME_MAX)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (name[i] < 0x20 || name[i] > 0x7e)
            return 0;
    return 1;
}

/* ---- writing ------------------------------------------------------------- */

/* Returns 0 if the sections can be written, else -1 after logging why. */
static int s_check_sections(const char *path, const vl_section_t *sections, int n)
{
    if (n < 0 || n > VL_CHECKPOINT_MAX_SECTIONS || (n > 0 && !sections)) {
        vl_error("checkpoint %s: %d sections (0..%d)", path, n, VL_CHECKPOINT_MAX_SECTIONS);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        const vl_section_t *s = &sections[i];
        if (!s->name || !s_name_ok(s->name, VL_CHECKPOINT_NAME_MAX + 1)) {
            vl_error("checkpoint %s: section name '%.40s' is not 1..%d printable characters", path,
                     s->name ? s->name : "(null)", VL_CHECKPOINT_NAME_MAX);
            return -1;
        }
        if (!s->data && s->size) {
            vl_error("checkpoint %s: section '%s' has %zu bytes but no data", path, s->name,
                     s->size);
            return -1;
        }
        for (int j = 0; j < i; j++)
            if (strcmp(sections[j].name, s->name) == 0) {
                vl_error("checkpoint %s: two sections named '%s'", path, s->name);
                return -1;
            }
    }
    return 0;
}

/* Cuts the sections into chunks (p->chunks). Returns 0, or -1 if out of
   memory. */
static int s_plan(s_pool_t *p, const vl_section_t *sections, int n)
{
    uint64_t cs = p->chunk_size, total = 0;
    for (int i = 0; i < n; i++)
        total += sections[i].size / cs + (sections[i].size % cs != 0);
    p->n_chunks = total;
    p->chunks = calloc(total ? total : 1, sizeof *p->chunks);
    if (!p->chunks)
        return -1;
    s_chunk_t *c = p->chunks;
    for (int i = 0; i < n; i++)
        for (uint64_t off = 0, k = 0; off < sections[i].size; off += cs, k++, c++) {
            uint64_t left = sections[i].size - off;
            *c = (s_chunk_t){.raw_size = (uint32_t)(left < cs ? left : cs),
                             .section = (uint32_t)i,
                             .index = k,
                             .raw_off = off};
        }
    return 0;
}

/* Creates a new file beside path. Returns its descriptor and sets *tmp_p
   (caller frees), or -1 with errno. */
static int s_open_temp(const char *path, char **tmp_p)
{
    size_t len = strlen(path) + 48;
    char *tmp = malloc(len);
    if (!tmp)
        return -1;
    for (int attempt = 0; attempt < 1000; attempt++) {
        snprintf(tmp, len, "%s.tmp.%ld.%d", path, (long)getpid(), attempt);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0) {
            *tmp_p = tmp;
            return fd;
        }
        if (errno != EEXIST) // another writer in this process took the name: try the next
            break;
    }
    int err = errno;
    free(tmp);
    errno = err;
    return -1;
}

/* Returns the header, tables and meta_crc (caller frees), or NULL. */
static uint8_t *s_encode_meta(const s_pool_t *p, const vl_section_t *sections, int n,
                              uint64_t meta_size)
{
    uint8_t *m = calloc(1, meta_size);
    if (!m)
        return NULL;
    memcpy(m, S_MAGIC, 8);
    vl_le_put32(m + 8, S_VERSION);
    vl_le_put32(m + 12, (uint32_t)n);
    vl_le_put32(m + 16, p->chunk_size);
    vl_le_put64(m + 24, p->n_chunks);
    vl_le_put64(m + 32, p->offset + S_TRAILER);
    uint8_t *e = m + S_HEADER;
    for (int i = 0; i < n; i++, e += S_SECTION) {
        memcpy(e, sections[i].name, strlen(sections[i].name));
        vl_le_put64(e + 32, sections[i].size);
    }
    for (uint64_t i = 0; i < p->n_chunks; i++, e += S_CHUNK) {
        const s_chunk_t *c = &p->chunks[i];
        vl_le_put32(e, c->raw_size);
        vl_le_put32(e + 4, c->stored_size);
        vl_le_put32(e + 8, c->raw_crc);
        vl_le_put32(e + 12, c->stored_crc);
    }
    vl_le_put32(e, vl_crc32c(0, m, meta_size - S_META_CRC));
    return m;
}

int vl_checkpoint_write(const char *path, const vl_section_t *sections, int n)
{
    return vl_checkpoint_write_opts(path, sections, n, NULL);
}

int vl_checkpoint_write_opts(const char *path, const vl_section_t *sections, int n,
                             const vl_checkpoint_opts_t *opts)
{
    vl_checkpoint_opts_t o = s_opts(opts);
    if (o.chunk_size < VL_CHECKPOINT_MIN_CHUNK || o.chunk_size > VL_CHECKPOINT_MAX_CHUNK) {
        vl_error("checkpoint %s: chunk size %u out of %u..%u", path, o.chunk_size,
                 VL_CHECKPOINT_MIN_CHUNK, VL_CHECKPOINT_MAX_CHUNK);
        return -1;
    }
    if (s_check_sections(path, sections, n) < 0)
        return -1;
    char *tmp = NULL;
    uint8_t *meta = NULL;
    const char *what = "plan its chunks";
    s_pool_t p;
    s_pool_init(&p, -1, o.chunk_size, o.acceleration);
    p.in = sections;
    if (s_plan(&p, sections, n) < 0)
        goto err;
    what = "create a temp file beside it";
    if ((p.fd = s_open_temp(path, &tmp)) < 0)
        goto err;
    uint64_t meta_size = S_HEADER + (uint64_t)n * S_SECTION + p.n_chunks * S_CHUNK + S_META_CRC;
    p.offset = meta_size;
    s_run(&p, o.threads, s_compress_worker);
    what = "write";
    errno = p.err;
    if (p.failed || !(meta = s_encode_meta(&p, sections, n, meta_size)))
        goto err;
    uint8_t trailer[S_TRAILER] = {0};
    uint32_t meta_crc = vl_crc32c(0, meta, meta_size);
    vl_le_put32(trailer, vl_crc32c_combine(meta_crc, p.data_crc, p.offset - meta_size));
    memcpy(trailer + 8, S_END_MAGIC, 8);
    if (s_pwrite_all(p.fd, meta, meta_size, 0) < 0 ||
        s_pwrite_all(p.fd, trailer, S_TRAILER, p.offset) < 0)
        goto err;
    what = "fsync";
    if (fsync(p.fd) < 0)
        goto err;
    what = "close";
    int fd = p.fd;
    p.fd = -1;
    if (close(fd) < 0)
        goto err;
    what = "rename its temp file over it";
    if (rename(tmp, path) < 0)
        goto err;
    if (vl_fs_sync_dir(path) < 0) // the new file is in place, only its durability is in doubt
        vl_warn("checkpoint %s: fsync of its directory: %s", path, strerror(errno));
    free(tmp);
    free(meta);
    s_pool_done(&p);
    return 0;
err:
    vl_error("checkpoint %s: cannot %s: %s", path, what, strerror(errno ? errno : EIO));
    if (p.fd >= 0)
        close(p.fd);
    if (tmp)
        unlink(tmp);
    free(tmp);
    free(meta);
    s_pool_done(&p);
    return -1;
}

/* Returns n bytes (free() them), on huge pages when n is large: decompressing
   into fresh memory is otherwise bound by faulting it in 4 KiB at a time. */
static uint8_t *s_alloc(size_t n)
{
    if (n < S_HUGE)
        return malloc(n);
    void *p = NULL;
    if (posix_memalign(&p, S_HUGE, n) != 0)
        return NULL;
    madvise(p, n / S_HUGE * S_HUGE, MADV_HUGEPAGE); // a hint: failure costs only speed
    return p;
}

/* ---- reading --------------------------------------------------------------- */

typedef struct {
    uint32_t n_sections, chunk_size;
    uint64_t n_chunks, file_size, meta_size;
} s_header_t;

static int s_why(char *why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Writes a reason into why[S_WHY]. Returns -1. */
static int s_why(char *why, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, S_WHY, fmt, ap);
    va_end(ap);
    return -1;
}

/* Reads the header and checks it against the file's size. Returns 0, or -1
   with why. */
static int s_read_header(int fd, uint64_t size, s_header_t *h, char *why)
{
    uint8_t b[S_HEADER];
    size_t want = size < S_HEADER ? (size_t)size : S_HEADER;
    if (s_pread_all(fd, b, want, 0) != (ssize_t)want)
        return s_why(why, "cannot read the header: %s", errno ? strerror(errno) : "file shrank");
    if (memcmp(b, S_MAGIC, want < 8 ? want : 8) != 0)
        return s_why(why, "not a volley checkpoint");
    if (size < S_HEADER)
        return s_why(why, "truncated at byte %llu", (unsigned long long)size);
    uint32_t version = vl_le_get32(b + 8);
    if (version != S_VERSION)
        return s_why(why, "unsupported checkpoint format version %u (this build reads %d)", version,
                     S_VERSION);
    h->n_sections = vl_le_get32(b + 12);
    h->chunk_size = vl_le_get32(b + 16);
    h->n_chunks = vl_le_get64(b + 24);
    h->file_size = vl_le_get64(b + 32);
    if (vl_le_get32(b + 20) || vl_le_get64(b + 40))
        return s_why(why, "corrupt header: reserved bytes are not zero");
    if (h->n_sections > VL_CHECKPOINT_MAX_SECTIONS)
        return s_why(why, "corrupt header: %u sections", h->n_sections);
    if (h->chunk_size < VL_CHECKPOINT_MIN_CHUNK || h->chunk_size > VL_CHECKPOINT_MAX_CHUNK)
        return s_why(why, "corrupt header: chunk size %u", h->chunk_size);
    h->meta_size = UINT64_MAX;
    if (h->n_chunks <= size / S_CHUNK) // else its table alone could not fit
        h->meta_size =
            S_HEADER + (uint64_t)h->n_sections * S_SECTION + h->n_chunks * S_CHUNK + S_META_CRC;
    if (h->meta_size > size || size - h->meta_size < S_TRAILER) {
        if (h->file_size > size)
            return s_why(why, "truncated at byte %llu (of %llu)", (unsigned long long)size,
                         (unsigned long long)h->file_size);
        return s_why(why, "corrupt header: its tables cannot fit in the file's %llu bytes",
                     (unsigned long long)size);
    }
    return 0;
}

/* Checks the section table and fills self's names and sizes. Returns the
   number of chunks it implies, or -1 with why. */
static int s_parse_sections(const uint8_t *meta, const s_header_t *h, vl_checkpoint_t *self,
                            char *why)
{
    uint64_t total = 0, cs = h->chunk_size;
    for (uint32_t i = 0; i < h->n_sections; i++) {
        const uint8_t *e = meta + S_HEADER + (uint64_t)i * S_SECTION;
        s_section_t *s = &self->sections[i];
        memcpy(s->name, e, sizeof s->name);
        size_t len = strnlen(s->name, sizeof s->name);
        int padded = len < sizeof s->name;
        for (size_t k = len; padded && k < sizeof s->name; k++)
            padded = e[k] == 0;
        if (!padded || !s_name_ok(s->name, sizeof s->name))
            return s_why(why, "corrupt section table: entry %u has no valid name", i);
        for (uint32_t j = 0; j < i; j++)
            if (strcmp(self->sections[j].name, s->name) == 0)
                return s_why(why, "corrupt section table: two sections named '%s'", s->name);
        s->size = vl_le_get64(e + 32);
        uint64_t count = s->size / cs + (s->size % cs != 0);
        if (count > h->n_chunks - total || s->size > SIZE_MAX)
            return s_why(why, "corrupt section table: section '%s' claims %llu bytes", s->name,
                         (unsigned long long)s->size);
        total += count;
    }
    if (total != h->n_chunks)
        return s_why(why, "corrupt header: %llu chunks, the sections have %llu",
                     (unsigned long long)h->n_chunks, (unsigned long long)total);
    return 0;
}

/* Checks the chunk table: exact raw sizes, stored sizes that LZ4 could
   have produced and that tile the file up to the trailer. Fills p->chunks.
   Returns 0, or -1 with why. */
static int s_parse_chunks(const uint8_t *meta, const s_header_t *h, uint64_t size,
                          const vl_checkpoint_t *self, s_pool_t *p, char *why)
{
    p->n_chunks = h->n_chunks;
    p->chunks = calloc(h->n_chunks ? h->n_chunks : 1, sizeof *p->chunks);
    if (!p->chunks)
        return s_why(why, "out of memory for %llu chunks", (unsigned long long)h->n_chunks);
    const uint8_t *e = meta + S_HEADER + (uint64_t)h->n_sections * S_SECTION;
    uint64_t off = h->meta_size, end = size - S_TRAILER, cs = h->chunk_size;
    s_chunk_t *c = p->chunks;
    for (uint32_t i = 0; i < h->n_sections; i++) {
        const s_section_t *s = &self->sections[i];
        for (uint64_t at = 0, k = 0; at < s->size; at += cs, k++, c++, e += S_CHUNK) {
            uint64_t want = s->size - at < cs ? s->size - at : cs;
            *c = (s_chunk_t){.raw_size = vl_le_get32(e),
                             .stored_size = vl_le_get32(e + 4),
                             .raw_crc = vl_le_get32(e + 8),
                             .stored_crc = vl_le_get32(e + 12),
                             .section = i,
                             .index = k,
                             .raw_off = at,
                             .file_off = off};
            uint64_t stored = c->stored_size;
            if (c->raw_size != want || stored < 1 || stored > want ||
                (stored < want && want > stored * S_MAX_RATIO) || stored > end - off)
                return s_why(why, "corrupt chunk table: section '%s' chunk %llu", s->name,
                             (unsigned long long)k);
            off += stored;
        }
    }
    if (off != end)
        return s_why(why, "corrupt chunk table: %llu bytes of the file unaccounted for",
                     (unsigned long long)(end - off));
    return 0;
}

/* Reads the header and tables, checks them and the trailer, sizes self's
   sections and plans p's chunks. Returns 0, or -1 with why. Sets *file_crc
   to what the trailer says and *meta_crc to the crc of the metadata. */
static int s_read_meta(int fd, uint64_t size, vl_checkpoint_t *self, s_pool_t *p,
                       uint32_t *meta_crc, uint32_t *file_crc, char *why)
{
    s_header_t h = {0};
    if (s_read_header(fd, size, &h, why) < 0)
        return -1;
    uint8_t *meta = malloc(h.meta_size); // <= the file's size
    if (!meta)
        return s_why(why, "out of memory for %llu bytes of tables",
                     (unsigned long long)h.meta_size);
    int rc = -1;
    uint8_t t[S_TRAILER];
    if (s_pread_all(fd, meta, h.meta_size, 0) != (ssize_t)h.meta_size ||
        s_pread_all(fd, t, S_TRAILER, size - S_TRAILER) != S_TRAILER)
        s_why(why, "cannot read the tables: %s", errno ? strerror(errno) : "file shrank");
    else if (vl_crc32c(0, meta, h.meta_size - S_META_CRC) != vl_le_get32(meta + h.meta_size - 8) ||
             vl_le_get32(meta + h.meta_size - 4) != 0)
        s_why(why, "checksum mismatch in the header or tables");
    else if (h.file_size > size)
        s_why(why, "truncated at byte %llu (of %llu)", (unsigned long long)size,
              (unsigned long long)h.file_size);
    else if (h.file_size < size)
        s_why(why, "%llu unexpected bytes after the end", (unsigned long long)(size - h.file_size));
    else if (memcmp(t + 8, S_END_MAGIC, 8) != 0 || vl_le_get32(t + 4) != 0)
        s_why(why, "corrupt trailer");
    else if (!(self->sections = calloc(h.n_sections ? h.n_sections : 1, sizeof *self->sections)))
        s_why(why, "out of memory");
    else if ((self->n = (int)h.n_sections, s_parse_sections(meta, &h, self, why) == 0))
        rc = s_parse_chunks(meta, &h, size, self, p, why);
    if (rc == 0) {
        p->chunk_size = h.chunk_size;
        *meta_crc = vl_crc32c(0, meta, h.meta_size);
        *file_crc = vl_le_get32(t);
    }
    free(meta);
    return rc;
}

vl_checkpoint_t *vl_checkpoint_read(const char *path, char *why, size_t why_size)
{
    return vl_checkpoint_read_opts(path, NULL, why, why_size);
}

vl_checkpoint_t *vl_checkpoint_read_opts(const char *path, const vl_checkpoint_opts_t *opts,
                                         char *why, size_t why_size)
{
    vl_checkpoint_opts_t o = s_opts(opts);
    char reason[S_WHY] = "";
    vl_checkpoint_t *self = calloc(1, sizeof *self);
    int fd = open(path, O_RDONLY | O_CLOEXEC), open_err = errno;
    s_pool_t p;
    s_pool_init(&p, fd, 0, 0);
    struct stat st;
    uint32_t meta_crc = 0, file_crc = 0;
    if (!self) {
        s_why(reason, "out of memory");
        goto err;
    }
    if (p.fd < 0 || fstat(p.fd, &st) < 0) {
        s_why(reason, "cannot open: %s", strerror(p.fd < 0 ? open_err : errno));
        goto err;
    }
    if (!S_ISREG(st.st_mode)) {
        s_why(reason, "not a regular file");
        goto err;
    }
    if (s_read_meta(p.fd, (uint64_t)st.st_size, self, &p, &meta_crc, &file_crc, reason) < 0)
        goto err;
    for (int i = 0; i < self->n; i++) {
        s_section_t *s = &self->sections[i];
        if (s->size && !(s->data = s_alloc((size_t)s->size))) {
            s_why(reason, "out of memory for section '%s' (%llu bytes)", s->name,
                  (unsigned long long)s->size);
            goto err;
        }
    }
    p.out = self->sections;
    s_run(&p, o.threads, s_decompress_worker);
    if (p.failed) {
        memcpy(reason, p.why, sizeof reason);
        goto err;
    }
    uint32_t crc = meta_crc; // the whole file's, from what the workers checked
    for (uint64_t i = 0; i < p.n_chunks; i++)
        crc = vl_crc32c_combine(crc, p.chunks[i].stored_crc, p.chunks[i].stored_size);
    if (crc != file_crc) {
        s_why(reason, "checksum mismatch over the whole file");
        goto err;
    }
    close(p.fd);
    s_pool_done(&p);
    return self;
err:
    if (why && why_size)
        snprintf(why, why_size, "%s", reason);
    if (p.fd >= 0)
        close(p.fd);
    s_pool_done(&p);
    vl_checkpoint_destroy(&self);
    return NULL;
}

const void *vl_checkpoint_get(const vl_checkpoint_t *self, const char *name, size_t *size)
{
    for (int i = 0; self && name && i < self->n; i++)
        if (strcmp(self->sections[i].name, name) == 0) {
            if (size)
                *size = (size_t)self->sections[i].size;
            return self->sections[i].data ? self->sections[i].data : s_empty;
        }
    return NULL;
}

void *vl_checkpoint_take(vl_checkpoint_t *self, const char *name, size_t *size)
{
    for (int i = 0; self && name && i < self->n; i++)
        if (strcmp(self->sections[i].name, name) == 0 && self->sections[i].data) {
            void *data = self->sections[i].data;
            if (size)
                *size = (size_t)self->sections[i].size;
            self->sections[i].data = NULL;
            self->sections[i].size = 0;
            return data;
        }
    return NULL;
}

int vl_checkpoint_count(const vl_checkpoint_t *self)
{
    return self ? self->n : 0;
}

const char *vl_checkpoint_name(const vl_checkpoint_t *self, int i)
{
    return self && i >= 0 && i < self->n ? self->sections[i].name : NULL;
}

void vl_checkpoint_destroy(vl_checkpoint_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    vl_checkpoint_t *self = *self_p;
    for (int i = 0; self->sections && i < self->n; i++)
        free(self->sections[i].data);
    free(self->sections);
    free(self);
    *self_p = NULL;
}
