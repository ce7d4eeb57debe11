/*  vl_tfevents_test: event files read back by the record reader, which
    checks both CRCs of every record; every cut and every flipped bit of a
    small file is reported, never read as a record; two writers never share
    a file; a failed write is counted. */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "../common/vl_crc32c.h"
#include "../common/vl_log.h"
#include "../tests/vl_test.h"
#include "tfevents.pb-c.h"
#include "vl_tfevents.h"

static char s_dir[] = "/tmp/vl_tfevents_testXXXXXX";

/* Reads a whole file into a malloc'd buffer. */
static uint8_t *s_slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc(size > 0 ? (size_t)size : 1);
    *n = buf ? fread(buf, 1, (size_t)size, f) : 0;
    fclose(f);
    return buf;
}

/* Writes a file of 3 scalar events (steps 100, 200, 300) and returns its
   bytes. */
static uint8_t *s_sample(size_t *n)
{
    vl_tfevents_t *w = vl_tfevents_new(s_dir);
    if (!w)
        return NULL;
    const char *tags[2] = {"charts/episode_return", "losses/value_loss"};
    for (int i = 1; i <= 3; i++) {
        float v[2] = {10.0f * i, 0.5f / i};
        vl_tfevents_scalars(w, 100 * i, 1.7e9 + i, tags, v, 2);
    }
    char *path = strdup(vl_tfevents_path(w));
    vl_tfevents_destroy(&w);
    uint8_t *buf = s_slurp(path, n);
    unlink(path);
    free(path);
    return buf;
}

static void test_mask_is_tensorflows(void)
{
    // masked = rotate right by 15, plus 0xa282ead8 (TensorFlow's crc32c::Mask).
    VL_CHECK(vl_tfevents_mask(0) == 0xa282ead8u);
    VL_CHECK(vl_tfevents_mask(0x00008000u) == 0xa282ead9u);
    VL_CHECK(vl_tfevents_mask(1) == 0xa282ead8u + (1u << 17));
    VL_CHECK(vl_crc32c(0, "123456789", 9) == 0xe3069283u); // the CRC-32C check value
}

static void test_events_read_back(void)
{
    size_t n = 0, off = 0, len;
    uint8_t *buf = s_sample(&n);
    VL_CHECK(buf && n > 0);
    const uint8_t *data;
    VL_CHECK(vl_tfevents_next(buf, n, &off, &data, &len) == VL_TFEV_RECORD);
    VlTb__Event *ev = vl_tb__event__unpack(NULL, len, data);
    VL_CHECK(ev && ev->what_case == VL_TB__EVENT__WHAT_FILE_VERSION);
    VL_CHECK(strcmp(ev->file_version, "brain.Event:2") == 0);
    vl_tb__event__free_unpacked(ev, NULL);
    for (int i = 1; i <= 3; i++) {
        VL_CHECK(vl_tfevents_next(buf, n, &off, &data, &len) == VL_TFEV_RECORD);
        ev = vl_tb__event__unpack(NULL, len, data);
        VL_CHECK(ev && ev->what_case == VL_TB__EVENT__WHAT_SUMMARY && ev->step == 100 * i);
        VL_CHECK_NEAR(ev->wall_time, 1.7e9 + i, 1e-6);
        VL_CHECK(ev->summary->n_value == 2);
        VL_CHECK(strcmp(ev->summary->value[0]->tag, "charts/episode_return") == 0);
        VL_CHECK(ev->summary->value[0]->simple_value == 10.0f * i);
        VL_CHECK(strcmp(ev->summary->value[1]->tag, "losses/value_loss") == 0);
        VL_CHECK(ev->summary->value[1]->simple_value == 0.5f / i);
        vl_tb__event__free_unpacked(ev, NULL);
    }
    VL_CHECK(vl_tfevents_next(buf, n, &off, &data, &len) == VL_TFEV_END && off == n);
    free(buf);
}

/* Reads every record of buf[n]; returns the final status and the count. */
static vl_tfev_read_t s_read_all(const uint8_t *buf, size_t n, int *records)
{
    size_t off = 0, len;
    const uint8_t *data;
    vl_tfev_read_t r;
    *records = 0;
    while ((r = vl_tfevents_next(buf, n, &off, &data, &len)) == VL_TFEV_RECORD)
        (*records)++;
    return r;
}

static void test_every_cut_is_torn(void)
{
    size_t n = 0;
    uint8_t *buf = s_sample(&n);
    VL_CHECK(buf);
    int records, whole = 0;
    for (size_t cut = 0; cut < n; cut++) {
        vl_tfev_read_t r = s_read_all(buf, cut, &records);
        VL_CHECK(r == VL_TFEV_TORN || r == VL_TFEV_END);
        VL_CHECK(records < 4);
        whole += r == VL_TFEV_END; // only at a record's boundary
    }
    VL_CHECK(whole == 4); // 0 and the ends of the first three records
    free(buf);
}

static void test_every_flipped_bit_is_caught(void)
{
    size_t n = 0;
    uint8_t *buf = s_sample(&n);
    VL_CHECK(buf);
    int records;
    for (size_t bit = 0; bit < n * 8; bit++) {
        buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        vl_tfev_read_t r = s_read_all(buf, n, &records);
        buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        VL_CHECK(r == VL_TFEV_CORRUPT || r == VL_TFEV_TORN);
        VL_CHECK(records < 4);
    }
    VL_CHECK(s_read_all(buf, n, &records) == VL_TFEV_END && records == 4);
    free(buf);
}

static void test_two_writers_two_files(void)
{
    vl_tfevents_t *a = vl_tfevents_new(s_dir), *b = vl_tfevents_new(s_dir);
    VL_CHECK(a && b);
    VL_CHECK(strcmp(vl_tfevents_path(a), vl_tfevents_path(b)) != 0);
    unlink(vl_tfevents_path(a));
    unlink(vl_tfevents_path(b));
    vl_tfevents_destroy(&a);
    vl_tfevents_destroy(&b);
    VL_CHECK(vl_tfevents_new("/nonexistent/dir") == NULL);
}

static void test_failed_writes_are_counted(void)
{
    vl_tfevents_t *w = vl_tfevents_new(s_dir);
    VL_CHECK(w);
    struct rlimit old, lim = {4096, 4096};
    getrlimit(RLIMIT_FSIZE, &old);
    lim.rlim_max = old.rlim_max;
    signal(SIGXFSZ, SIG_IGN);
    setrlimit(RLIMIT_FSIZE, &lim);
    const char *tag[1] = {"x"};
    float v = 1.0f;
    int failed = 0;
    for (int i = 0; i < 2000; i++)
        failed += vl_tfevents_scalars(w, i, 0.0, tag, &v, 1) < 0;
    setrlimit(RLIMIT_FSIZE, &old);
    VL_CHECK(failed > 0 && vl_tfevents_lost(w) == (uint64_t)failed);
    size_t n = 0;
    uint8_t *buf = s_slurp(vl_tfevents_path(w), &n);
    int records;
    VL_CHECK(buf && n <= 4096 && s_read_all(buf, n, &records) == VL_TFEV_END);
    VL_CHECK(records == 1 + 2000 - failed); // the version, then every event not counted lost
    free(buf);
    unlink(vl_tfevents_path(w));
    vl_tfevents_destroy(&w);
}

int main(void)
{
    vl_log_init("vl_tfevents_test", VL_LOG_ERROR);
    if (!mkdtemp(s_dir))
        return 1;
    VL_RUN(test_mask_is_tensorflows);
    VL_RUN(test_events_read_back);
    VL_RUN(test_every_cut_is_torn);
    VL_RUN(test_every_flipped_bit_is_caught);
    VL_RUN(test_two_writers_two_files);
    VL_RUN(test_failed_writes_are_counted);
    rmdir(s_dir);
    return VL_DONE();
}
