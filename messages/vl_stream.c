/*  vl_stream: the record/replay file (the format is in vl_stream.h).

    Writing: records gather in a 1 MiB buffer and go out with one write when
    it fills; a record that does not fit goes out together with what is
    buffered in one writev, its payload straight from the caller's memory.
    After a failed write or sync the tail of the file is in doubt, so the
    writer stops: every later call fails rather than append after a hole.

    Reading: one large buffer, refilled with read(); a record is handed out
    as a pointer into it. Nothing read is trusted before its checksum holds,
    and the buffer grows past VL_STREAM_READ_BUF only for a record whose
    checked head declares more and that the file is long enough to hold. */
#include "vl_stream.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "../common/vl_crc32c.h"
#include "../common/vl_fs.h"
#include "../common/vl_le.h"
#include "../common/vl_log.h"

#define S_MAGIC      "VLSTREAM"
#define S_FIXED      28 // header bytes before the config text
#define S_HEAD_CRC   20 // record bytes head_crc covers
#define S_WHY        256
#define S_GROW_ROUND (1u << 20)  // a grown read buffer is a whole number of MiB
#define S_MIN_BUF    (64u << 10) // the smallest read buffer: a small file needs no more

struct vl_stream_writer_s {
    int fd;
    vl_flush_t flush;
    uint8_t *buf; // VL_STREAM_WRITE_BUF bytes, used of them waiting
    size_t used;
    uint64_t records, bytes;
    uint64_t written; // bytes the kernel took (header included), partial writes too
    int failed;       // an I/O error left the tail in doubt: nothing more is written
    char error[S_WHY];
};

struct vl_stream_reader_s {
    int fd;
    uint8_t *buf; // buf[pos, end) is read but not handed out; cap bytes in all
    size_t cap, pos, end;
    uint64_t offset; // file offset of buf[pos]: after the last valid record
    uint64_t records;
    vl_stream_status_t status; // sticky once not OK
    char *config;
    int64_t created_ns;
    char why[S_WHY];
};

static const char *s_flush_names[] = {
    [VL_FLUSH_ALWAYS] = "always", [VL_FLUSH_EVERYSEC] = "everysec", [VL_FLUSH_NEVER] = "never"};

int vl_flush_parse(const char *text, vl_flush_t *out)
{
    for (int i = 0; text && i <= VL_FLUSH_NEVER; i++)
        if (strcmp(text, s_flush_names[i]) == 0) {
            *out = (vl_flush_t)i;
            return 0;
        }
    return -1;
}

const char *vl_flush_name(vl_flush_t flush)
{
    return (unsigned)flush <= VL_FLUSH_NEVER ? s_flush_names[flush] : "unknown";
}

static void s_say(char *why, size_t why_size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Writes a reason into why[why_size], if there is room. */
static void s_say(char *why, size_t why_size, const char *fmt, ...)
{
    if (!why || !why_size)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, why_size, fmt, ap);
    va_end(ap);
}

/* ---- writing ------------------------------------------------------------- */

/* Returns 0 once every byte of iov[0..n) is written, or -1 with errno. The
   iovecs are consumed; *done grows by every byte the kernel took, so that
   after a failure it says where the file ends. */
static int s_writev_all(int fd, struct iovec *iov, int n, uint64_t *done)
{
    while (n > 0) {
        if (iov->iov_len == 0) {
            iov++, n--;
            continue;
        }
        ssize_t k = writev(fd, iov, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            if (k == 0)
                errno = EIO;
            return -1;
        }
        *done += (uint64_t)k;
        for (size_t left = (size_t)k; left > 0;) {
            size_t step = left < iov->iov_len ? left : iov->iov_len;
            iov->iov_base = (char *)iov->iov_base + step;
            iov->iov_len -= step;
            left -= step;
            if (iov->iov_len == 0)
                iov++, n--;
        }
    }
    return 0;
}

/* Marks the writer failed after `what` went wrong with errno. Returns -1. */
static int s_fail(vl_stream_writer_t *w, const char *what)
{
    snprintf(w->error, sizeof w->error, "%s: %s", what, strerror(errno ? errno : EIO));
    w->failed = 1;
    return -1;
}

/* Writes the header for config (len bytes) to w's new file, synced unless
   NEVER. Returns 0, or -1 with w->error. */
static int s_write_header(vl_stream_writer_t *w, const char *path, const char *config, size_t len)
{
    uint8_t *h = w->buf; // the header always fits the empty buffer
    memcpy(h, S_MAGIC, 8);
    vl_le_put32(h + 8, VL_STREAM_VERSION);
    vl_le_put32(h + 12, 0);
    vl_le_put64(h + 16, (uint64_t)vl_wall_ns());
    vl_le_put32(h + 24, (uint32_t)len);
    memcpy(h + S_FIXED, config, len);
    vl_le_put32(h + S_FIXED + len, vl_crc32c(0, h, S_FIXED + len));
    w->used = VL_STREAM_HEADER + len;
    w->bytes = w->used;
    if (vl_stream_flush(w, w->flush != VL_FLUSH_NEVER) < 0)
        return -1;
    if (w->flush != VL_FLUSH_NEVER && vl_fs_sync_dir(path) < 0)
        return s_fail(w, "sync of its directory");
    return 0;
}

vl_stream_writer_t *vl_stream_writer_new(const char *path, const char *config, vl_flush_t flush,
                                         char *why, size_t why_size)
{
    config = config ? config : "";
    size_t len = strnlen(config, VL_STREAM_MAX_CONFIG + 1);
    if (len > VL_STREAM_MAX_CONFIG) {
        s_say(why, why_size, "config text over %u bytes", VL_STREAM_MAX_CONFIG);
        return NULL;
    }
    if ((unsigned)flush > VL_FLUSH_NEVER) {
        s_say(why, why_size, "unknown flush policy %d", (int)flush);
        return NULL;
    }
    vl_stream_writer_t *w = calloc(1, sizeof *w);
    if (!w || !(w->buf = malloc(VL_STREAM_WRITE_BUF))) {
        s_say(why, why_size, "out of memory");
        free(w);
        return NULL;
    }
    w->flush = flush;
    w->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (w->fd < 0) {
        s_say(why, why_size, "%s", errno == EEXIST ? "exists" : strerror(errno));
        free(w->buf);
        free(w);
        return NULL;
    }
    if (s_write_header(w, path, config, len) < 0) {
        s_say(why, why_size, "%s", w->error);
        close(w->fd);
        unlink(path); // ours: created above with O_EXCL
        free(w->buf);
        free(w);
        return NULL;
    }
    return w;
}

/* Payloads from this size up are written from where they are, not copied. */
#define S_COPY_BELOW (64u << 10)

int vl_stream_append(vl_stream_writer_t *w, int64_t recv_ns, uint32_t source, const void *data,
                     size_t size)
{
    if (!w || w->failed)
        return -1;
    if (size > VL_STREAM_MAX_RECORD || (size && !data)) {
        snprintf(w->error, sizeof w->error, "record of %zu bytes refused (%s)", size,
                 data ? "over VL_STREAM_MAX_RECORD" : "no data");
        return -1;
    }
    uint8_t head[VL_STREAM_RECORD];
    vl_le_put32(head, (uint32_t)size);
    vl_le_put32(head + 4, source);
    vl_le_put64(head + 8, (uint64_t)recv_ns);
    vl_le_put32(head + 16, vl_crc32c(0, data, size));
    vl_le_put32(head + 20, vl_crc32c(0, head, S_HEAD_CRC));
    // Small records gather in the buffer (one write for many); a large one goes out with
    // what is buffered in one writev, without being copied first.
    if (size < S_COPY_BELOW && VL_STREAM_RECORD + size <= VL_STREAM_WRITE_BUF - w->used) {
        memcpy(w->buf + w->used, head, sizeof head);
        if (size)
            memcpy(w->buf + w->used + sizeof head, data, size);
        w->used += sizeof head + size;
    } else {
        struct iovec iov[3] = {{w->buf, w->used}, {head, sizeof head}, {(void *)data, size}};
        if (s_writev_all(w->fd, iov, 3, &w->written) < 0)
            return s_fail(w, "write");
        w->used = 0;
    }
    w->records++;
    w->bytes += sizeof head + size;
    return w->flush == VL_FLUSH_ALWAYS ? vl_stream_flush(w, 1) : 0;
}

int vl_stream_flush(vl_stream_writer_t *w, int sync)
{
    if (!w || w->failed)
        return -1;
    struct iovec iov = {w->buf, w->used};
    if (s_writev_all(w->fd, &iov, 1, &w->written) < 0)
        return s_fail(w, "write");
    w->used = 0;
    if (sync && fdatasync(w->fd) < 0)
        return s_fail(w, "fdatasync");
    return 0;
}

uint64_t vl_stream_writer_records(const vl_stream_writer_t *w)
{
    return w ? w->records : 0;
}

uint64_t vl_stream_writer_bytes(const vl_stream_writer_t *w)
{
    return w ? w->bytes : 0;
}

uint64_t vl_stream_writer_written(const vl_stream_writer_t *w)
{
    return w ? w->written : 0;
}

const char *vl_stream_writer_error(const vl_stream_writer_t *w)
{
    return w ? w->error : "";
}

int vl_stream_writer_destroy(vl_stream_writer_t **w_p)
{
    if (!w_p || !*w_p)
        return 0;
    vl_stream_writer_t *w = *w_p;
    int rc = vl_stream_flush(w, w->flush != VL_FLUSH_NEVER);
    if (close(w->fd) < 0 && rc == 0)
        rc = s_fail(w, "close");
    if (rc < 0)
        vl_error("recording: %s", w->error);
    free(w->buf);
    free(w);
    *w_p = NULL;
    return rc;
}

/* ---- reading --------------------------------------------------------------- */

/* Reads until want bytes are buffered (want <= cap) or the file ends.
   Returns 0 (fewer than want buffered means the end), or -1 with errno. */
static int s_fill(vl_stream_reader_t *r, size_t want)
{
    if (r->end - r->pos >= want)
        return 0;
    if (r->cap - r->pos < want || r->cap - r->end < r->cap / 2) { // keep every read large
        memmove(r->buf, r->buf + r->pos, r->end - r->pos);
        r->end -= r->pos;
        r->pos = 0;
    }
    while (r->end - r->pos < want) {
        ssize_t k = read(r->fd, r->buf + r->end, r->cap - r->end);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -1;
        if (k == 0)
            break;
        r->end += (size_t)k;
    }
    return 0;
}

/* Replaces the buffer by one of at least want bytes, keeping what is
   unread. Returns 0, or -1 if out of memory. */
static int s_grow(vl_stream_reader_t *r, size_t want)
{
    size_t cap = (want + S_GROW_ROUND - 1) / S_GROW_ROUND * S_GROW_ROUND;
    uint8_t *buf = malloc(cap);
    if (!buf)
        return -1;
    memcpy(buf, r->buf + r->pos, r->end - r->pos);
    free(r->buf);
    r->buf = buf;
    r->cap = cap;
    r->end -= r->pos;
    r->pos = 0;
    return 0;
}

static vl_stream_status_t s_stop(vl_stream_reader_t *r, vl_stream_status_t status, const char *fmt,
                                 ...) __attribute__((format(printf, 3, 4)));

/* Stops the reader with status and why. Returns status. */
static vl_stream_status_t s_stop(vl_stream_reader_t *r, vl_stream_status_t status, const char *fmt,
                                 ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->why, sizeof r->why, fmt, ap);
    va_end(ap);
    r->status = status;
    return status;
}

static vl_stream_status_t s_bad_record(vl_stream_reader_t *r, vl_stream_status_t status,
                                       const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Stops the reader at the record at its offset, TORN or CORRUPT, saying
   what is wrong with it. Returns status. */
static vl_stream_status_t s_bad_record(vl_stream_reader_t *r, vl_stream_status_t status,
                                       const char *fmt, ...)
{
    char what[S_WHY / 2];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return s_stop(r, status, "%s record at byte %llu (%llu valid before it): %s",
                  status == VL_STREAM_TORN ? "torn" : "corrupt", (unsigned long long)r->offset,
                  (unsigned long long)r->records, what);
}

/* Returns 1 if the file is a regular one too short to hold want bytes from
   the reader's offset, so a torn tail is known without a buffer for it. */
static int s_cannot_hold(const vl_stream_reader_t *r, size_t want)
{
    struct stat st;
    return fstat(r->fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size < r->offset + want;
}

/* Buffers the whole record of `size` payload bytes at r->offset. Returns
   VL_STREAM_OK or the status the reader stopped with. */
static vl_stream_status_t s_load_record(vl_stream_reader_t *r, uint32_t size)
{
    unsigned long long at = r->offset;
    size_t want = VL_STREAM_RECORD + (size_t)size;
    if (want > r->cap) {
        if (s_cannot_hold(r, want))
            return s_bad_record(r, VL_STREAM_TORN, "the file ends within its %zu bytes", want);
        if (s_grow(r, want) < 0)
            return s_stop(r, VL_STREAM_IOERR, "out of memory for the record at byte %llu", at);
    }
    if (s_fill(r, want) < 0)
        return s_stop(r, VL_STREAM_IOERR, "read error at byte %llu: %s", at, strerror(errno));
    if (r->end - r->pos < want)
        return s_bad_record(r, VL_STREAM_TORN, "the file ends %zu bytes into its %zu",
                            r->end - r->pos, want);
    return VL_STREAM_OK;
}

vl_stream_status_t vl_stream_next(vl_stream_reader_t *r, vl_stream_record_t *rec)
{
    if (!r)
        return VL_STREAM_IOERR;
    if (r->status != VL_STREAM_OK)
        return r->status;
    unsigned long long at = r->offset, n = r->records;
    if (s_fill(r, VL_STREAM_RECORD) < 0)
        return s_stop(r, VL_STREAM_IOERR, "read error at byte %llu: %s", at, strerror(errno));
    size_t have = r->end - r->pos;
    if (have == 0)
        return s_stop(r, VL_STREAM_END, "end of the recording at byte %llu, after %llu records", at,
                      n);
    if (have < VL_STREAM_RECORD)
        return s_bad_record(r, VL_STREAM_TORN, "the file ends %zu bytes into its %d-byte head",
                            have, VL_STREAM_RECORD);
    const uint8_t *h = r->buf + r->pos;
    if (vl_crc32c(0, h, S_HEAD_CRC) != vl_le_get32(h + S_HEAD_CRC))
        return s_bad_record(r, VL_STREAM_CORRUPT, "head checksum mismatch");
    uint32_t size = vl_le_get32(h);
    if (size > VL_STREAM_MAX_RECORD)
        return s_bad_record(r, VL_STREAM_CORRUPT, "it declares %u bytes, over the limit of %u",
                            size, VL_STREAM_MAX_RECORD);
    vl_stream_status_t status = s_load_record(r, size);
    if (status != VL_STREAM_OK)
        return status;
    h = r->buf + r->pos; // the buffer may have moved
    if (vl_crc32c(0, h + VL_STREAM_RECORD, size) != vl_le_get32(h + 16))
        return s_bad_record(r, VL_STREAM_CORRUPT, "payload checksum mismatch (%u bytes)", size);
    *rec = (vl_stream_record_t){.recv_ns = (int64_t)vl_le_get64(h + 8),
                                .source = vl_le_get32(h + 4),
                                .data = h + VL_STREAM_RECORD,
                                .size = size,
                                .offset = r->offset};
    r->pos += VL_STREAM_RECORD + (size_t)size;
    r->offset += VL_STREAM_RECORD + (uint64_t)size;
    r->records++;
    return VL_STREAM_OK;
}

/* Reads and checks the header, leaves r just after it. Returns 0, or -1
   after writing why. */
static int s_read_header(vl_stream_reader_t *r, char *why, size_t why_size)
{
    if (s_fill(r, S_FIXED) < 0) {
        s_say(why, why_size, "cannot read: %s", strerror(errno));
        return -1;
    }
    const uint8_t *h = r->buf;
    size_t have = r->end;
    if (memcmp(h, S_MAGIC, have < 8 ? have : 8) != 0) {
        s_say(why, why_size, "not a volley recording");
        return -1;
    }
    uint32_t version = have >= 12 ? vl_le_get32(h + 8) : VL_STREAM_VERSION;
    if (version != VL_STREAM_VERSION) {
        s_say(why, why_size, "unsupported recording version %u (this build reads %d)", version,
              VL_STREAM_VERSION);
        return -1;
    }
    if (have < S_FIXED) {
        s_say(why, why_size, "truncated in the header (%zu bytes)", have);
        return -1;
    }
    uint32_t len = vl_le_get32(h + 24);
    if (len > VL_STREAM_MAX_CONFIG) {
        s_say(why, why_size, "corrupt header: a config of %u bytes (at most %u)", len,
              VL_STREAM_MAX_CONFIG);
        return -1;
    }
    size_t size = VL_STREAM_HEADER + (size_t)len;
    if (size > r->cap && s_grow(r, size) < 0) {
        s_say(why, why_size, "out of memory");
        return -1;
    }
    if (s_fill(r, size) < 0) {
        s_say(why, why_size, "cannot read: %s", strerror(errno));
        return -1;
    }
    h = r->buf; // pos is 0: nothing moved, but the buffer may be new
    if (r->end < size) {
        s_say(why, why_size, "truncated in the header (%zu bytes of its %zu)", r->end, size);
        return -1;
    }
    if (vl_crc32c(0, h, size - 4) != vl_le_get32(h + size - 4)) {
        s_say(why, why_size, "header checksum mismatch");
        return -1;
    }
    if (vl_le_get32(h + 12) != 0) {
        s_say(why, why_size, "unsupported header flags 0x%x", vl_le_get32(h + 12));
        return -1;
    }
    if (memchr(h + S_FIXED, 0, len)) {
        s_say(why, why_size, "corrupt header: a NUL byte in the config text");
        return -1;
    }
    if (!(r->config = malloc((size_t)len + 1))) {
        s_say(why, why_size, "out of memory");
        return -1;
    }
    memcpy(r->config, h + S_FIXED, len);
    r->config[len] = '\0';
    r->created_ns = (int64_t)vl_le_get64(h + 16);
    r->pos = size;
    r->offset = size;
    return 0;
}

/* Returns the read buffer's first size: VL_STREAM_READ_BUF, or less for a
   regular file that is smaller (it grows if the file does). */
static size_t s_first_cap(int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size >= VL_STREAM_READ_BUF)
        return VL_STREAM_READ_BUF;
    return st.st_size < S_MIN_BUF ? S_MIN_BUF : (size_t)st.st_size;
}

vl_stream_reader_t *vl_stream_reader_open(const char *path, char *why, size_t why_size)
{
    vl_stream_reader_t *r = calloc(1, sizeof *r);
    if (!r) {
        s_say(why, why_size, "out of memory");
        return NULL;
    }
    r->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (r->fd < 0) {
        s_say(why, why_size, "cannot open: %s", strerror(errno));
        vl_stream_reader_destroy(&r);
        return NULL;
    }
    r->cap = s_first_cap(r->fd);
    if (!(r->buf = malloc(r->cap))) {
        s_say(why, why_size, "out of memory");
        vl_stream_reader_destroy(&r);
        return NULL;
    }
    if (s_read_header(r, why, why_size) < 0) {
        vl_stream_reader_destroy(&r);
        return NULL;
    }
    return r;
}

const char *vl_stream_reader_config(const vl_stream_reader_t *r)
{
    return r && r->config ? r->config : "";
}

int64_t vl_stream_reader_created_ns(const vl_stream_reader_t *r)
{
    return r ? r->created_ns : 0;
}

const char *vl_stream_reader_why(const vl_stream_reader_t *r)
{
    return r ? r->why : "";
}

uint64_t vl_stream_reader_records(const vl_stream_reader_t *r)
{
    return r ? r->records : 0;
}

uint64_t vl_stream_reader_offset(const vl_stream_reader_t *r)
{
    return r ? r->offset : 0;
}

void vl_stream_reader_destroy(vl_stream_reader_t **r_p)
{
    if (!r_p || !*r_p)
        return;
    vl_stream_reader_t *r = *r_p;
    if (r->fd >= 0)
        close(r->fd);
    free(r->buf);
    free(r->config);
    free(r);
    *r_p = NULL;
}
