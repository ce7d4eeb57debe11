/*  vl_ini_test: entries in order with their sections; comments, blanks and
    odd spacing; every malformed line refused with file, line and reason;
    a callback's refusal located the same way. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../tests/vl_test.h"
#include "vl_ini.h"

typedef struct {
    char got[16][128];
    int n;
} s_seen_t;

static int s_collect(void *ctx, const char *section, const char *key, const char *value, char *why,
                     size_t why_size)
{
    s_seen_t *s = ctx;
    if (strcmp(key, "refuse") == 0) {
        snprintf(why, why_size, "no '%s' here", value);
        return -1;
    }
    if (s->n < 16)
        snprintf(s->got[s->n++], sizeof s->got[0], "%s|%s|%s", section, key, value);
    return 0;
}

static int s_parse(const char *text, s_seen_t *seen, char *why, size_t n)
{
    memset(seen, 0, sizeof *seen);
    why[0] = 0;
    return vl_ini_parse_text("run.ini", text, strlen(text), s_collect, seen, why, n);
}

static void test_entries_in_order(void)
{
    s_seen_t s;
    char why[256];
    const char *text = "# volley up, resolved\n"
                       "top = 1\n"
                       "\n"
                       "[up]\n"
                       "  env   =   cartpole  \n"
                       "lr=2.5e-4\r\n"
                       "; another comment\n"
                       "env-arg = a # not a comment\n"
                       "empty =\n"
                       "[ learner ]\n"
                       "env = again";
    VL_CHECK(s_parse(text, &s, why, sizeof why) == 0);
    VL_CHECK(s.n == 6);
    VL_CHECK(strcmp(s.got[0], "|top|1") == 0);
    VL_CHECK(strcmp(s.got[1], "up|env|cartpole") == 0);
    VL_CHECK(strcmp(s.got[2], "up|lr|2.5e-4") == 0);
    VL_CHECK(strcmp(s.got[3], "up|env-arg|a # not a comment") == 0);
    VL_CHECK(strcmp(s.got[4], "up|empty|") == 0);
    VL_CHECK(strcmp(s.got[5], "learner|env|again") == 0); // same key, another section
}

static void test_bad_lines_located(void)
{
    struct {
        const char *text, *want;
    } bad[] = {
        {"[up]\nlr 0.1\n", "run.ini:2: expected 'key = value'"},
        {"[up\n", "run.ini:1: a section header ends with ']'"},
        {"[u p]\n", "run.ini:1: bad section name 'u p'"},
        {"a = 1\n\n= 2\n", "run.ini:3: bad key ''"},
        {"[up]\nlr = 1\nlr = 2\n", "run.ini:3: 'lr' given twice in [up]"},
        {"x = \x01\n", "run.ini:1: a control character (byte 1) at column 5"},
        {"a = 1\nrefuse = it\n", "run.ini:2: no 'it' here"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        s_seen_t s;
        char why[256];
        VL_CHECK(s_parse(bad[i].text, &s, why, sizeof why) == -1);
        if (strncmp(why, bad[i].want, strlen(bad[i].want)) != 0) {
            fprintf(stderr, "case %zu: got '%s', want '%s'\n", i, why, bad[i].want);
            VL_CHECK(0);
        }
    }
}

static void test_files(void)
{
    char path[] = "/tmp/vl_ini_testXXXXXX", why[256];
    int fd = mkstemp(path);
    VL_CHECK(fd >= 0);
    const char *text = "[up]\nactors = 3\n";
    VL_CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
    s_seen_t s = {.n = 0};
    VL_CHECK(vl_ini_parse(path, s_collect, &s, why, sizeof why) == 0 && s.n == 1);
    VL_CHECK(strcmp(s.got[0], "up|actors|3") == 0);
    FILE *f = fopen(path, "wb");
    VL_CHECK(f);
    fwrite("a = 1\n\0b = 2\n", 1, 12, f);
    fclose(f);
    VL_CHECK(vl_ini_parse(path, s_collect, &s, why, sizeof why) == -1 && strstr(why, "NUL"));
    unlink(path);
    VL_CHECK(vl_ini_parse(path, s_collect, &s, why, sizeof why) == -1 &&
             strstr(why, "No such file"));
    char *big = malloc(VL_INI_MAX_LINE + 16);
    VL_CHECK(big);
    memset(big, 'a', VL_INI_MAX_LINE + 8);
    big[VL_INI_MAX_LINE + 8] = 0;
    VL_CHECK(s_parse(big, &s, why, sizeof why) == -1 && strstr(why, "run.ini:1: line longer"));
    free(big);
}

int main(void)
{
    VL_RUN(test_entries_in_order);
    VL_RUN(test_bad_lines_located);
    VL_RUN(test_files);
    return VL_DONE();
}
