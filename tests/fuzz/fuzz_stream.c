/*  fuzz_stream: the record/replay reader on arbitrary files, against a
    reference reading of the same bytes; and the writer on records cut from
    the input, read back.

    The input goes into a memfd (no disk, nothing to clean up) that the
    reader opens by its /proc/self/fd path, as it would a recording. The
    reference is the format's rules from vl_stream.h read straight off the
    input with the table CRC, in one pass, without the reader's buffer: the
    reader must accept the same header, return the same records (fields,
    offsets, bytes), stop with the same status at the same offset, name that
    offset in its why, and keep returning that status. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/vl_crc32c.h"
#include "fuzz_common.h"
#include "messages/vl_stream.h"

static uint32_t s_get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t s_get64(const uint8_t *p)
{
    return (uint64_t)s_get32(p) | (uint64_t)s_get32(p + 4) << 32;
}

/* Returns the header's size if the reference accepts it, else 0. */
static size_t s_ref_header(const uint8_t *d, size_t n)
{
    if (n < VL_STREAM_HEADER || memcmp(d, "VLSTREAM", 8) != 0 || s_get32(d + 8) != 1)
        return 0;
    uint32_t len = s_get32(d + 24);
    if (len > VL_STREAM_MAX_CONFIG || n < VL_STREAM_HEADER + (size_t)len)
        return 0;
    size_t h = VL_STREAM_HEADER + len;
    if (vl_crc32c_sw(0, d, h - 4) != s_get32(d + h - 4) || s_get32(d + 12) != 0 ||
        memchr(d + 28, 0, len))
        return 0;
    return h;
}

/* The reference's verdict on the record at off: VL_STREAM_OK with *size,
   or the status a reader must stop with. */
static vl_stream_status_t s_ref_record(const uint8_t *d, size_t n, size_t off, uint32_t *size)
{
    size_t left = n - off;
    if (left == 0)
        return VL_STREAM_END;
    if (left < VL_STREAM_RECORD)
        return VL_STREAM_TORN;
    const uint8_t *h = d + off;
    if (vl_crc32c_sw(0, h, 20) != s_get32(h + 20))
        return VL_STREAM_CORRUPT;
    *size = s_get32(h);
    if (*size > VL_STREAM_MAX_RECORD)
        return VL_STREAM_CORRUPT;
    if (left - VL_STREAM_RECORD < *size)
        return VL_STREAM_TORN;
    if (vl_crc32c_sw(0, h + VL_STREAM_RECORD, *size) != s_get32(h + 16))
        return VL_STREAM_CORRUPT;
    return VL_STREAM_OK;
}

/* Returns 1 if why names byte offset `at` (not followed by a digit). */
static int s_says_offset(const char *why, uint64_t at)
{
    char want[32];
    snprintf(want, sizeof want, "byte %llu", (unsigned long long)at);
    for (const char *p = why; (p = strstr(p, want)) != NULL; p++)
        if (p[strlen(want)] < '0' || p[strlen(want)] > '9')
            return 1;
    return 0;
}

/* Returns a memfd holding exactly d[0..n) and its path in path[64]. */
static int s_memfd(const uint8_t *d, size_t n, char *path)
{
    static int fd = -1;
    if (fd < 0)
        fd = memfd_create("fuzz_stream", MFD_CLOEXEC);
    FUZZ_CHECK(fd >= 0);
    FUZZ_CHECK(ftruncate(fd, 0) == 0);
    FUZZ_CHECK(n == 0 || pwrite(fd, d, n, 0) == (ssize_t)n);
    snprintf(path, 64, "/proc/self/fd/%d", fd);
    return fd;
}

static void s_fuzz_reader(const uint8_t *d, size_t n)
{
    char path[64], why[256] = "";
    s_memfd(d, n, path);
    size_t off = s_ref_header(d, n);
    vl_stream_reader_t *r = vl_stream_reader_open(path, why, sizeof why);
    FUZZ_CHECK((r != NULL) == (off != 0));
    if (!r) {
        FUZZ_CHECK(why[0] != '\0' && strlen(why) < sizeof why);
        return;
    }
    const char *config = vl_stream_reader_config(r);
    FUZZ_CHECK(strlen(config) == off - VL_STREAM_HEADER);
    FUZZ_CHECK(memcmp(config, d + 28, off - VL_STREAM_HEADER) == 0);
    FUZZ_CHECK(vl_stream_reader_created_ns(r) == (int64_t)s_get64(d + 16));
    FUZZ_CHECK(vl_stream_reader_offset(r) == off && vl_stream_reader_records(r) == 0);
    vl_stream_record_t rec;
    vl_stream_status_t want, got;
    uint64_t k = 0;
    uint32_t size = 0;
    while ((want = s_ref_record(d, n, off, &size)) == VL_STREAM_OK) {
        memset(&rec, 0xA5, sizeof rec);
        FUZZ_CHECK(vl_stream_next(r, &rec) == VL_STREAM_OK);
        FUZZ_CHECK(rec.offset == off && rec.size == size);
        FUZZ_CHECK(rec.source == s_get32(d + off + 4));
        FUZZ_CHECK(rec.recv_ns == (int64_t)s_get64(d + off + 8));
        FUZZ_CHECK(size == 0 || memcmp(rec.data, d + off + VL_STREAM_RECORD, size) == 0);
        off += VL_STREAM_RECORD + (size_t)size;
        FUZZ_CHECK(vl_stream_reader_offset(r) == off && vl_stream_reader_records(r) == ++k);
        FUZZ_CHECK(vl_stream_reader_why(r)[0] == '\0');
    }
    got = vl_stream_next(r, &rec);
    FUZZ_CHECK(got == want);
    FUZZ_CHECK(vl_stream_reader_offset(r) == off && vl_stream_reader_records(r) == k);
    FUZZ_CHECK(s_says_offset(vl_stream_reader_why(r), off));
    FUZZ_CHECK(vl_stream_next(r, &rec) == want && vl_stream_next(r, &rec) == want);
    vl_stream_reader_destroy(&r);
    FUZZ_CHECK(r == NULL);
    vl_stream_reader_destroy(&r);
}

/* Cuts the input into records (a length byte, then that many bytes),
   writes them with a fresh writer and reads them back. */
static void s_fuzz_writer(const uint8_t *d, size_t n)
{
    char path[64], why[256] = "";
    const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp"; // tmpfs if any
    snprintf(path, sizeof path, "%s/fuzz_stream.%ld", dir, (long)getpid());
    unlink(path);
    vl_stream_writer_t *w = vl_stream_writer_new(path, "fuzz", VL_FLUSH_NEVER, why, sizeof why);
    FUZZ_CHECK(w);
    uint64_t bytes = VL_STREAM_HEADER + 4, records = 0;
    for (size_t at = 0; at < n; records++) {
        size_t len = d[at++];
        len = len < n - at ? len : n - at;
        FUZZ_CHECK(vl_stream_append(w, -(int64_t)at, (uint32_t)at, d + at, len) == 0);
        bytes += VL_STREAM_RECORD + len;
        at += len;
    }
    FUZZ_CHECK(vl_stream_writer_records(w) == records && vl_stream_writer_bytes(w) == bytes);
    FUZZ_CHECK(vl_stream_writer_destroy(&w) == 0 && w == NULL);
    vl_stream_reader_t *r = vl_stream_reader_open(path, why, sizeof why);
    FUZZ_CHECK(r && strcmp(vl_stream_reader_config(r), "fuzz") == 0);
    vl_stream_record_t rec;
    for (size_t at = 0; at < n;) {
        size_t len = d[at++];
        len = len < n - at ? len : n - at;
        FUZZ_CHECK(vl_stream_next(r, &rec) == VL_STREAM_OK);
        FUZZ_CHECK(rec.size == len && rec.source == (uint32_t)at && rec.recv_ns == -(int64_t)at);
        FUZZ_CHECK(len == 0 || memcmp(rec.data, d + at, len) == 0);
        at += len;
    }
    FUZZ_CHECK(vl_stream_next(r, &rec) == VL_STREAM_END);
    FUZZ_CHECK(vl_stream_reader_offset(r) == bytes && vl_stream_reader_records(r) == records);
    vl_stream_reader_destroy(&r);
    unlink(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    s_fuzz_reader(data, size);
    s_fuzz_writer(data, size);
    return 0;
}
