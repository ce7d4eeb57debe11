/*  vl_recorder_test: the broker's recorder writes every message it is given,
    in order, with its source and time, more messages and bytes than its
    queue can hold at once, leaving the caller's message untouched; refuses an
    existing file; and after a write error counts what it could not record
    and says so, its count of recorded messages exactly what the file holds
    whole. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include "../common/vl_log.h"
#include "../tests/vl_test.h"
#include "vl_recorder.h"

#define S_N   10000 // messages: more than the queue's 4096
#define S_BIG 20    // of which this many are 4 MiB: more than the queue's 64 MiB

static char s_dir[64];

/* Fills msg with message i: its size and bytes follow from i. */
static void s_make(zmq_msg_t *msg, int i)
{
    size_t size = i % (S_N / S_BIG) == 7 ? (4u << 20) : (size_t)(i % 3000);
    zmq_msg_init_size(msg, size);
    uint8_t *p = zmq_msg_data(msg);
    for (size_t k = 0; k < size; k++)
        p[k] = (uint8_t)(i * 31 + k);
}

/* Returns 1 if a record holds message i as s_make made it. */
static int s_is(const vl_stream_record_t *rec, int i)
{
    zmq_msg_t m;
    s_make(&m, i);
    int ok = rec->size == zmq_msg_size(&m) && memcmp(rec->data, zmq_msg_data(&m), rec->size) == 0 &&
             rec->source == (uint32_t)(i % 7) && rec->recv_ns == 1000 + i;
    zmq_msg_close(&m);
    return ok;
}

static void test_every_message_in_order(void)
{
    char path[128], why[256];
    snprintf(path, sizeof path, "%s/all.vlrec", s_dir);
    vl_recorder_t *r = vl_recorder_new(path, "test config", VL_FLUSH_NEVER);
    VL_CHECK(r);
    for (int i = 0; i < S_N; i++) {
        zmq_msg_t m;
        s_make(&m, i);
        size_t size = zmq_msg_size(&m);
        vl_recorder_add(r, &m, 1000 + i, (uint32_t)(i % 7));
        VL_CHECK(zmq_msg_size(&m) == size); // untouched: the recorder took its own reference
        zmq_msg_close(&m);
    }
    VL_CHECK(vl_recorder_destroy(&r) == 0 && r == NULL);
    vl_stream_reader_t *rd = vl_stream_reader_open(path, why, sizeof why);
    VL_CHECK(rd);
    VL_CHECK(strcmp(vl_stream_reader_config(rd), "test config") == 0);
    vl_stream_record_t rec;
    int i = 0;
    for (; vl_stream_next(rd, &rec) == VL_STREAM_OK; i++)
        if (!s_is(&rec, i))
            break;
    VL_CHECK(i == S_N);
    VL_CHECK(vl_stream_next(rd, &rec) == VL_STREAM_END);
    vl_stream_reader_destroy(&rd);
    VL_CHECK(!vl_recorder_new(path, "again", VL_FLUSH_NEVER)); // never over a recording
}

/* In a child: records under a file-size limit; exits 0 if the recorder
   counted the messages it could not write and destroy said so. */
static int s_disk_full_child(const char *path)
{
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = {1 << 20, 1 << 20}; // 1 MiB
    if (setrlimit(RLIMIT_FSIZE, &lim) != 0)
        return 2;
    vl_recorder_t *r = vl_recorder_new(path, "", VL_FLUSH_ALWAYS);
    if (!r)
        return 3;
    for (int i = 0; i < 100; i++) {
        zmq_msg_t m;
        zmq_msg_init_size(&m, 64 << 10);
        memset(zmq_msg_data(&m), i, 64 << 10);
        vl_recorder_add(r, &m, i, 0);
        zmq_msg_close(&m);
    }
    while (vl_recorder_written(r) + vl_recorder_lost(r) < 100)
        usleep(1000);
    uint64_t written = vl_recorder_written(r), lost = vl_recorder_lost(r);
    int rc = vl_recorder_destroy(&r);
    return rc == -1 && written > 0 && written < 16 && lost == 100 - written ? 0 : 4;
}

static void test_disk_full_counted(void)
{
    char path[128];
    snprintf(path, sizeof path, "%s/full.vlrec", s_dir);
    pid_t pid = fork();
    VL_CHECK(pid >= 0);
    if (pid == 0)
        _exit(s_disk_full_child(path));
    int status = 0;
    waitpid(pid, &status, 0);
    VL_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* In a child: records N small messages, buffered (flush never), under a
   file-size limit that a buffer's write crosses part-way; writes "written
   lost" to counts. Returns 0, or a code naming what failed. */
static int s_torn_child(const char *path, const char *counts, int n)
{
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = {(1 << 20) + 12345, (1 << 20) + 12345};
    if (setrlimit(RLIMIT_FSIZE, &lim) != 0)
        return 2;
    vl_recorder_t *r = vl_recorder_new(path, "", VL_FLUSH_NEVER);
    if (!r)
        return 3;
    for (int i = 0; i < n; i++) {
        zmq_msg_t m;
        zmq_msg_init_size(&m, 1000);
        memset(zmq_msg_data(&m), i, 1000);
        vl_recorder_add(r, &m, i, 0);
        zmq_msg_close(&m);
    }
    while (vl_recorder_written(r) + vl_recorder_lost(r) < (uint64_t)n)
        usleep(1000);
    uint64_t written = vl_recorder_written(r), lost = vl_recorder_lost(r);
    vl_recorder_destroy(&r);
    FILE *f = fopen(counts, "w");
    if (!f)
        return 4;
    fprintf(f, "%llu %llu\n", (unsigned long long)written, (unsigned long long)lost);
    return fclose(f) == 0 ? 0 : 4;
}

/* A write that fails part-way (the file ends inside a record): the count
   of recorded messages is exactly the records a reader gets from the file,
   the rest are lost. */
static void test_disk_full_count_is_the_file(void)
{
    char path[128], counts[140], why[256];
    snprintf(path, sizeof path, "%s/torn.vlrec", s_dir);
    snprintf(counts, sizeof counts, "%s/torn.counts", s_dir);
    const int n = 3000; // about 3 MB through a 1 MiB buffer
    pid_t pid = fork();
    VL_CHECK(pid >= 0);
    if (pid == 0)
        _exit(s_torn_child(path, counts, n));
    int status = 0;
    waitpid(pid, &status, 0);
    VL_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    unsigned long long written = 0, lost = 0;
    FILE *f = fopen(counts, "r");
    VL_CHECK(f && fscanf(f, "%llu %llu", &written, &lost) == 2);
    if (f)
        fclose(f);
    vl_stream_reader_t *rd = vl_stream_reader_open(path, why, sizeof why);
    VL_CHECK(rd);
    vl_stream_record_t rec;
    unsigned long long in_file = 0;
    vl_stream_status_t st;
    while ((st = vl_stream_next(rd, &rec)) == VL_STREAM_OK)
        in_file++;
    VL_CHECK(st != VL_STREAM_END); // the file ends inside a record
    vl_stream_reader_destroy(&rd);
    VL_CHECK(in_file > 0 && written == in_file);
    VL_CHECK(written + lost == (unsigned long long)n);
}

int main(void)
{
    vl_log_init("recorder_test", VL_LOG_WARN);
    snprintf(s_dir, sizeof s_dir, "/tmp/vl_recorder_test.XXXXXX");
    if (!mkdtemp(s_dir))
        return 1;
    VL_RUN(test_every_message_in_order);
    VL_RUN(test_disk_full_counted);
    VL_RUN(test_disk_full_count_is_the_file);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", s_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", s_dir);
    return VL_DONE();
}
