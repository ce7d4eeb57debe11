/*  Tests of vl_file_id: a file's size and CRC-32C (the published check
    value), a changed byte or length told apart, a missing file and a
    directory refused with their errno. */
#include "vl_file_id.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../tests/vl_test.h"
#include "vl_crc32c.h"

/* Writes n bytes of text into a new temporary file, its name into path[64].
   Returns 0, or -1 when it could not. */
static int s_file(char *path, const char *text, size_t n)
{
    snprintf(path, 64, "/tmp/vl_file_id_XXXXXX");
    int fd = mkstemp(path);
    int ok = fd >= 0 && write(fd, text, n) == (ssize_t)n;
    if (fd >= 0)
        close(fd);
    return ok ? 0 : -1;
}

static void test_check_value(void)
{
    char path[64];
    VL_CHECK(s_file(path, "123456789", 9) == 0);
    vl_file_id_t id;
    VL_CHECK(vl_file_id(path, &id) == 0);
    VL_CHECK(id.bytes == 9 && id.crc32c == 0xE3069283u);
    unlink(path);
}

static void test_changes_told_apart(void)
{
    vl_file_id_t a, b, c;
    char path[64];
    VL_CHECK(s_file(path, "123456789", 9) == 0 && vl_file_id(path, &a) == 0);
    unlink(path);
    VL_CHECK(s_file(path, "123456780", 9) == 0 && vl_file_id(path, &b) == 0); // a byte other
    unlink(path);
    VL_CHECK(s_file(path, "1234567890", 10) == 0 && vl_file_id(path, &c) == 0); // a byte more
    unlink(path);
    VL_CHECK(vl_file_id_same(&a, &a) && !vl_file_id_same(&a, &b) && !vl_file_id_same(&a, &c));
}

static void test_large_file_in_pieces(void)
{
    size_t n = 200000; // several reads
    char *text = malloc(n);
    VL_CHECK(text != NULL);
    for (size_t i = 0; i < n; i++)
        text[i] = (char)(i * 31 + 7);
    char path[64];
    vl_file_id_t id = {0};
    uint32_t want = vl_crc32c(0, text, n);
    int got = s_file(path, text, n) == 0 && vl_file_id(path, &id) == 0;
    unlink(path);
    free(text);
    VL_CHECK(got && id.bytes == n && id.crc32c == want);
}

static void test_refusals(void)
{
    vl_file_id_t id;
    errno = 0;
    VL_CHECK(vl_file_id("/nonexistent/vl_file_id", &id) == -1 && errno == ENOENT);
    errno = 0;
    VL_CHECK(vl_file_id("/tmp", &id) == -1 && errno == EISDIR);
}

int main(void)
{
    VL_RUN(test_check_value);
    VL_RUN(test_changes_told_apart);
    VL_RUN(test_large_file_in_pieces);
    VL_RUN(test_refusals);
    return VL_DONE();
}
