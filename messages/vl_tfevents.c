/*  vl_tfevents: TensorBoard event files, written and read record by record. */
#include "vl_tfevents.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "../common/vl_crc32c.h"
#include "../common/vl_le.h"
#include "../common/vl_log.h"
#include "tfevents.pb-c.h"

#define S_TAGS_MAX 64 // scalars in one event

struct vl_tfevents_s {
    int fd;
    uint64_t size; // bytes of whole records written: a failed write is cut back to it
    char *path;
    uint64_t lost;
    int warned;
};

uint32_t vl_tfevents_mask(uint32_t crc)
{
    return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

/* Writes one record of data[len] with one write(); a partial write is cut
   back, so the file always ends at a whole record. Returns 0 or -1. */
static int s_write_record(vl_tfevents_t *self, const uint8_t *data, size_t len)
{
    size_t n = 16 + len;
    uint8_t *rec = malloc(n);
    if (!rec)
        return -1;
    vl_le_put64(rec, (uint64_t)len);
    vl_le_put32(rec + 8, vl_tfevents_mask(vl_crc32c(0, rec, 8)));
    memcpy(rec + 12, data, len);
    vl_le_put32(rec + 12 + len, vl_tfevents_mask(vl_crc32c(0, data, len)));
    ssize_t w;
    do
        w = pwrite(self->fd, rec, n, (off_t)self->size);
    while (w < 0 && errno == EINTR);
    int saved = errno;
    free(rec);
    if (w == (ssize_t)n) {
        self->size += n;
        return 0;
    }
    if (w > 0 && ftruncate(self->fd, (off_t)self->size) != 0)
        vl_debug("%s: cannot cut a partial record: %s", self->path, strerror(errno));
    errno = w < 0 ? saved : ENOSPC;
    return -1;
}

/* Serializes ev and writes it as a record; counts and logs (once) a
   failure. Returns 0 or -1. */
static int s_write_event(vl_tfevents_t *self, const VlTb__Event *ev)
{
    size_t len = vl_tb__event__get_packed_size(ev);
    uint8_t *buf = malloc(len ? len : 1);
    int rc = -1;
    if (buf) {
        vl_tb__event__pack(ev, buf);
        rc = s_write_record(self, buf, len);
        free(buf);
    }
    if (rc < 0) {
        self->lost++;
        if (!self->warned++)
            vl_error("%s: cannot write an event (%s); counting the lost ones", self->path,
                     errno ? strerror(errno) : "no memory");
    }
    return rc;
}

/* Returns a new "DIR/events.out.tfevents.<secs>.<host>[.<k>]" no file has
   yet, created exclusively (fd in *fd), or NULL. */
static char *s_create(const char *dir, int *fd)
{
    char host[64] = "localhost";
    gethostname(host, sizeof host - 1);
    host[sizeof host - 1] = 0;
    for (char *c = host; *c; c++)
        if (*c == '/')
            *c = '_';
    size_t cap = strlen(dir) + 128;
    char *path = malloc(cap);
    for (int k = 0; path && k < 100; k++) {
        int n =
            snprintf(path, cap, "%s/events.out.tfevents.%lld.%s", dir, (long long)time(NULL), host);
        if (k)
            snprintf(path + n, cap - (size_t)n, ".%d", k);
        *fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (*fd >= 0 || errno != EEXIST)
            break;
    }
    return path;
}

vl_tfevents_t *vl_tfevents_new(const char *dir)
{
    vl_tfevents_t *self = calloc(1, sizeof *self);
    int fd = -1;
    if (self)
        self->fd = -1;
    if (!self || !(self->path = s_create(dir, &fd)) || fd < 0) {
        vl_error("cannot create a TensorBoard event file in %s: %s", dir, strerror(errno));
        vl_tfevents_destroy(&self);
        return NULL;
    }
    self->fd = fd;
    VlTb__Event ev = VL_TB__EVENT__INIT;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ev.wall_time = (double)ts.tv_sec + ts.tv_nsec * 1e-9;
    ev.what_case = VL_TB__EVENT__WHAT_FILE_VERSION;
    ev.file_version = (char *)VL_TFEVENTS_VERSION;
    if (s_write_event(self, &ev) < 0) {
        vl_tfevents_destroy(&self);
        return NULL;
    }
    return self;
}

const char *vl_tfevents_path(const vl_tfevents_t *self)
{
    return self->path;
}

int vl_tfevents_scalars(vl_tfevents_t *self, int64_t step, double wall_time,
                        const char *const *tags, const float *values, int n)
{
    if (n < 0 || n > S_TAGS_MAX)
        return -1;
    VlTb__Summary__Value vals[S_TAGS_MAX], *ptrs[S_TAGS_MAX];
    for (int i = 0; i < n; i++) {
        vl_tb__summary__value__init(&vals[i]);
        vals[i].tag = (char *)tags[i];
        vals[i].simple_value = values[i];
        ptrs[i] = &vals[i];
    }
    VlTb__Summary sum = VL_TB__SUMMARY__INIT;
    sum.n_value = (size_t)n;
    sum.value = ptrs;
    VlTb__Event ev = VL_TB__EVENT__INIT;
    ev.wall_time = wall_time;
    ev.step = step;
    ev.what_case = VL_TB__EVENT__WHAT_SUMMARY;
    ev.summary = &sum;
    return s_write_event(self, &ev);
}

int vl_tfevents_sync(vl_tfevents_t *self)
{
    return fdatasync(self->fd) == 0 ? 0 : -1;
}

uint64_t vl_tfevents_lost(const vl_tfevents_t *self)
{
    return self->lost;
}

void vl_tfevents_destroy(vl_tfevents_t **self_p)
{
    vl_tfevents_t *self = self_p ? *self_p : NULL;
    if (!self)
        return;
    if (self->fd >= 0 && close(self->fd) != 0)
        vl_error("%s: closing: %s", self->path, strerror(errno));
    free(self->path);
    free(self);
    *self_p = NULL;
}

vl_tfev_read_t vl_tfevents_next(const uint8_t *buf, size_t n, size_t *off, const uint8_t **data,
                                size_t *len)
{
    size_t at = *off;
    if (at >= n)
        return VL_TFEV_END;
    if (n - at < 12)
        return VL_TFEV_TORN;
    if (vl_le_get32(buf + at + 8) != vl_tfevents_mask(vl_crc32c(0, buf + at, 8)))
        return VL_TFEV_CORRUPT;
    uint64_t size = vl_le_get64(buf + at);
    if (size > VL_TFEVENTS_MAX_EVENT)
        return VL_TFEV_CORRUPT;
    if (n - at - 12 < size + 4)
        return VL_TFEV_TORN;
    const uint8_t *d = buf + at + 12;
    if (vl_le_get32(d + size) != vl_tfevents_mask(vl_crc32c(0, d, (size_t)size)))
        return VL_TFEV_CORRUPT;
    *data = d;
    *len = (size_t)size;
    *off = at + 16 + (size_t)size;
    return VL_TFEV_RECORD;
}
