/*  vl_stream: the record/replay file. A broker appends every message it
    receives, as received, with its receive time and source; `volley replay`
    reads them back in order. A recording is never overwritten, and a
    reader reports a torn tail (a crash mid-write) apart from corruption.

    The file, all integers little-endian:

      header   offset  size
               0       8     magic "VLSTREAM"
               8       4     u32 version (VL_STREAM_VERSION)
               12      4     u32 flags, 0 (a reader refuses any other)
               16      8     i64 created_ns, wall clock (CLOCK_REALTIME) at creation
               24      4     u32 config_len, at most VL_STREAM_MAX_CONFIG
               28      n     config text, config_len bytes, no NUL
               28 + n  4     u32 crc32c of the header's bytes before it

      record   offset  size  (repeated to the end of the file)
               0       4     u32 size of the payload, at most VL_STREAM_MAX_RECORD
               4       4     u32 source: the actor id, UINT32_MAX when unknown
               8       8     i64 recv_ns, when the broker received it
               16      4     u32 data_crc: crc32c of the payload
               20      4     u32 head_crc: crc32c of the record's 20 bytes before it
               24      size  payload: the message bytes as received

    A reader trusts a record's size only once head_crc holds, so a flipped
    bit in a length reads as corruption, never as a torn tail. At a record's
    start, 0 bytes left is the end; 1..23 left is a torn tail; a head_crc
    mismatch or a size over the limit is corruption; a payload running past
    the end is a torn tail; a data_crc mismatch is corruption. A flipped bit
    anywhere in a file of unchanged length therefore gives either a refused
    header or CORRUPT at the record holding it, never TORN.

    A writer or a reader is used by one thread at a time. */
#ifndef VL_STREAM_H
#define VL_STREAM_H

#include <stddef.h>
#include <stdint.h>

#define VL_STREAM_VERSION    1
#define VL_STREAM_MAX_RECORD (256u << 20) // largest payload a record may declare
#define VL_STREAM_MAX_CONFIG (64u << 10)  // largest header config text
#define VL_STREAM_HEADER     32           // header bytes besides the config text
#define VL_STREAM_RECORD     24           // record bytes besides the payload
#define VL_STREAM_WRITE_BUF  (1u << 20)   // a writer buffers this much before a write
#define VL_STREAM_READ_BUF   (4u << 20)   // a reader's reads: more for a larger record

/* When a writer's appends reach the disk. */
typedef enum {
    VL_FLUSH_ALWAYS,   // every append is written and fdatasync'ed before it returns
    VL_FLUSH_EVERYSEC, // the owner calls vl_stream_flush(w, 1) once a second
    VL_FLUSH_NEVER     // written when the buffer fills; synced by nobody
} vl_flush_t;

/* Parses "always", "everysec" or "never" into *out. Returns 0, or -1 for
   anything else (NULL included), leaving *out alone. */
int vl_flush_parse(const char *text, vl_flush_t *out);

/* Returns "always", "everysec" or "never"; "unknown" out of range. */
const char *vl_flush_name(vl_flush_t flush);

/* ---- writing ------------------------------------------------------------- */

typedef struct vl_stream_writer_s vl_stream_writer_t;

/* Creates path (refusing one that exists: a recording is never
   overwritten), writes the header (magic, version, creation time = wall
   clock now, config text; NULL is "") and returns the writer, which the
   caller destroys. Unless flush is NEVER, the header and the new directory
   entry are synced. Returns NULL after writing why into why[why_size]
   ("exists", strerror, a config over VL_STREAM_MAX_CONFIG); a file it
   created is then removed. */
vl_stream_writer_t *vl_stream_writer_new(const char *path, const char *config, vl_flush_t flush,
                                         char *why, size_t why_size);

/* Appends one record: the receive time, the source (actor id; UINT32_MAX
   when unknown), the message bytes as received (data may be NULL when size
   is 0). Buffered (VL_STREAM_WRITE_BUF); a record larger than the room left
   goes out with one writev of the buffer, its head and its payload, without
   copying the payload. With VL_FLUSH_ALWAYS every append is written and
   fdatasync'ed before returning. Returns 0, or -1 on an I/O error (why in
   vl_stream_writer_error), after which the file's tail is in doubt and
   every later append and flush returns -1. A payload over
   VL_STREAM_MAX_RECORD is refused (-1, nothing written, the writer still
   usable). */
int vl_stream_append(vl_stream_writer_t *w, int64_t recv_ns, uint32_t source, const void *data,
                     size_t size);

/* Writes out what is buffered, and fdatasync's when sync is non-zero. The
   owner calls it once a second with sync = (flush == VL_FLUSH_EVERYSEC).
   Returns 0, or -1 on an I/O error (now or earlier). */
int vl_stream_flush(vl_stream_writer_t *w, int sync);

/* Returns the records appended so far. */
uint64_t vl_stream_writer_records(const vl_stream_writer_t *w);

/* Returns the file's bytes so far, header included, counting what is
   still buffered: the size the file has once flushed. */
uint64_t vl_stream_writer_bytes(const vl_stream_writer_t *w);

/* Returns the bytes the kernel took for the file, header included: where
   the file ends, also after a write that failed part-way (a record that
   ends at or before it is whole in the file). */
uint64_t vl_stream_writer_written(const vl_stream_writer_t *w);

/* Returns the last error's text, or "" when there was none. */
const char *vl_stream_writer_error(const vl_stream_writer_t *w);

/* Flushes, syncs (unless NEVER), closes, frees and nulls *w_p. Safe on NULL
   and twice. Returns 0, or -1 if the final write, sync or close failed or
   an earlier I/O error left the recording incomplete. */
int vl_stream_writer_destroy(vl_stream_writer_t **w_p);

/* ---- reading --------------------------------------------------------------- */

typedef struct {
    int64_t recv_ns;     // as the writer was given it
    uint32_t source;     // actor id, UINT32_MAX when unknown
    const uint8_t *data; // valid until the next vl_stream_next call
    size_t size;
    uint64_t offset; // byte offset of this record in the file
} vl_stream_record_t;

typedef enum {
    VL_STREAM_OK,      // *rec filled
    VL_STREAM_END,     // clean end of file, exactly after a record (or the header)
    VL_STREAM_TORN,    // the file ends inside a record: everything before is valid
    VL_STREAM_CORRUPT, // a checksum mismatch or an impossible length
    VL_STREAM_IOERR    // a read failed
} vl_stream_status_t;

typedef struct vl_stream_reader_s vl_stream_reader_t;

/* Opens a recording and validates its header (magic, version, config
   length, header CRC, flags). Returns the reader (caller destroys it), or
   NULL after writing why into why[why_size] ("not a volley recording",
   "header checksum mismatch", "truncated in the header (N bytes)", ...). */
vl_stream_reader_t *vl_stream_reader_open(const char *path, char *why, size_t why_size);

/* Returns the header's config text, NUL-terminated (owned by the reader). */
const char *vl_stream_reader_config(const vl_stream_reader_t *r);

/* Returns the header's creation time, wall clock nanoseconds. */
int64_t vl_stream_reader_created_ns(const vl_stream_reader_t *r);

/* Reads the next record, checking both checksums. OK: *rec filled. END:
   clean end of file exactly after a record. TORN: the file ends inside a
   record: everything before is valid. CORRUPT: a checksum mismatch or an
   impossible length, reported, never skipped. IOERR: a read failed. After
   anything but OK, vl_stream_reader_why says what and at which byte
   offset, and further calls return the same status. */
vl_stream_status_t vl_stream_next(vl_stream_reader_t *r, vl_stream_record_t *rec);

/* Returns why the reader stopped ("" while it has not). */
const char *vl_stream_reader_why(const vl_stream_reader_t *r);

/* Returns the valid records read so far. */
uint64_t vl_stream_reader_records(const vl_stream_reader_t *r);

/* Returns the file offset after the last valid record (after the header
   before the first). */
uint64_t vl_stream_reader_offset(const vl_stream_reader_t *r);

/* Closes and frees the reader, nulls *r_p. Safe on NULL and twice. */
void vl_stream_reader_destroy(vl_stream_reader_t **r_p);

#endif
