/*  vl_flags_test: one table parses every kind of flag, refuses bad values,
    unknown and missing flags with one line, and writes --help naming every
    flag with its default, wrapped at 80 columns. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../tests/vl_test.h"
#include "vl_flags.h"

typedef struct {
    const char *file, *policy;
    int once, level, mode;
    uint32_t n;
    int64_t bytes;
    size_t queue;
    float rate;
} s_args_t;

/* Reads --mode: fast (1) or slow (2). */
static int s_mode(const char *text, void *field, char *why, size_t why_size)
{
    int m = strcmp(text, "fast") == 0 ? 1 : strcmp(text, "slow") == 0 ? 2 : 0;
    if (!m)
        return snprintf(why, why_size, "--mode wants fast or slow, not '%s'", text), -1;
    *(int *)field = m;
    return 0;
}

static const vl_flag_t s_flags[] = {
    VL_FLAG_STR(s_args_t, "file", file, "FILE", "where it goes"),
    VL_FLAG_POLICY_ID(s_args_t, "policy", policy, "which policy"),
    VL_FLAG_SWITCH(s_args_t, "once", once, "once and exit"),
    VL_FLAG_SETS(s_args_t, "quiet", level, 3, "warnings only"),
    VL_FLAG_NUM(s_args_t, "n", VL_OPT_U32, n, 1, 10, "N", "how many"),
    VL_FLAG_NUM(s_args_t, "bytes", VL_OPT_I64, bytes, 1024, 1L << 40, "BYTES",
                "a long sentence that says a great deal about bytes, so long that it cannot fit "
                "on one line of help and has to be wrapped under the help column, twice at least "
                "to be sure"),
    VL_FLAG_NUM(s_args_t, "queue", VL_OPT_SIZE, queue, 0, 1L << 40, "N", "queued bytes"),
    VL_FLAG_NUM(s_args_t, "rate", VL_OPT_FLOAT, rate, 0, 1, "X", "a fraction"),
    VL_FLAG_CHOICE(s_args_t, "mode", mode, s_mode, "fast|slow", "how"),
    VL_FLAG_HELP_H,
    VL_FLAG_END};

static const vl_flag_arg_t s_operands[] = {{"DIR", "a directory"}, {NULL, NULL}};

static const vl_flag_cmd_t s_cmd = {.name = "t",
                                    .operands = "DIR",
                                    .about = "Tests flags.\n",
                                    .args = s_operands,
                                    .flags = s_flags,
                                    .footer = "Exit 0.\n"};

static const s_args_t s_defaults = {.file = "out.txt", .n = 7, .bytes = 4096, .rate = 0.25f};

/* Parses the words of line (space-separated, at most 22) as argv after
   "t", with stderr into err[size]. Returns vl_flags_parse's code. */
static int s_parse(const char *line, s_args_t *a, int *first, uint64_t *given, char *err,
                   size_t size)
{
    static char buf[512];
    char *argv[24] = {"t"};
    int argc = 1;
    snprintf(buf, sizeof buf, "%s", line);
    for (char *save, *w = strtok_r(buf, " ", &save); w && argc < 23; w = strtok_r(NULL, " ", &save))
        argv[argc++] = w;
    argv[argc] = NULL;
    *a = s_defaults;
    fflush(stderr);
    int saved = dup(2);
    FILE *tmp = tmpfile();
    dup2(fileno(tmp), 2);
    int rc = vl_flags_parse(&s_cmd, argc, argv, a, &s_defaults, first, given);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(tmp);
    size_t n = fread(err, 1, size - 1, tmp);
    err[n] = 0;
    fclose(tmp);
    return rc;
}

static void test_every_kind_parsed(void)
{
    s_args_t a;
    int first = 0;
    uint64_t given = 0;
    char err[512];
    int rc = s_parse("--file f --policy p --once --quiet --n 3 --bytes 1e6 --queue 5 --rate 0.5 "
                     "--mode slow dir",
                     &a, &first, &given, err, sizeof err);
    VL_CHECK(rc == 0 && err[0] == 0);
    VL_CHECK(strcmp(a.file, "f") == 0 && strcmp(a.policy, "p") == 0);
    VL_CHECK(a.once == 1 && a.level == 3 && a.n == 3 && a.bytes == 1000000 && a.queue == 5);
    VL_CHECK(a.rate == 0.5f && a.mode == 2);
    VL_CHECK(given == 0x1ff); // every flag but help's
    VL_CHECK(first == 17);    // the positional argument
    VL_CHECK(s_parse("--n=4 dir", &a, &first, &given, err, sizeof err) == 0 && a.n == 4);
    VL_CHECK(given == 1u << 4 && a.bytes == 4096); // the rest keep their defaults
}

static void test_refusals_are_one_line(void)
{
    static const struct {
        const char *line, *want;
    } cases[] = {
        {"--n x", "volley t: --n wants a whole number in [1, 10], not 'x'\n"},
        {"--n 11", "volley t: --n wants a whole number in [1, 10], not '11'\n"},
        {"--rate 2", "volley t: --rate wants a number in [0, 1], not '2'\n"},
        {"--mode medium", "volley t: --mode wants fast or slow, not 'medium'\n"},
        {"--policy ~x", "volley t: --policy wants 1 to 63 printable characters"},
        {"--rtae 1", "volley t: unknown flag --rtae (did you mean --rate?); see --help\n"},
        {"--zzzzzzzz", "volley t: unknown flag --zzzzzzzz; see --help\n"},
        {"--n", "volley t: --n wants a value; see --help\n"},
        {"--once=1", "volley t: --once takes no value; see --help\n"},
        {"-x", "volley t: unknown flag -x; see --help\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        s_args_t a;
        char err[512];
        int first;
        int rc = s_parse(cases[i].line, &a, &first, NULL, err, sizeof err);
        if (rc != -1)
            fprintf(stderr, "%s: %d\n", cases[i].line, rc);
        VL_CHECK(rc == -1);
        if (strncmp(err, cases[i].want, strlen(cases[i].want)) != 0)
            fprintf(stderr, "'%s' said: %s", cases[i].line, err);
        VL_CHECK(strncmp(err, cases[i].want, strlen(cases[i].want)) == 0);
        VL_CHECK(strchr(err, '\n') == err + strlen(err) - 1); // one line
    }
}

static void test_required_flag(void)
{
    static vl_flag_t flags[] = {{"to", 0, VL_FLAG_TEXT, 0, 0, 0, "FILE", "where", NULL, 1, NULL},
                                VL_FLAG_END};
    const char *to = NULL;
    char *argv[] = {"t", NULL, NULL, NULL};
    vl_flag_group_t g = {flags, &to, 0};
    int first;
    printf("(a refusal of --to is expected)\n");
    VL_CHECK(vl_flags_parse_groups("t", 1, argv, &g, 1, &first) == -1);
    argv[1] = "--to", argv[2] = "x";
    VL_CHECK(vl_flags_parse_groups("t", 3, argv, &g, 1, &first) == 0 && strcmp(to, "x") == 0);
}

static void test_help_short_flag(void)
{
    s_args_t a;
    char err[64];
    int first;
    FILE *saved = stdout;
    stdout = fopen("/dev/null", "w");
    int rc = s_parse("-h", &a, &first, NULL, err, sizeof err);
    int rc_long = s_parse("--n 3 --help", &a, &first, NULL, err, sizeof err);
    fclose(stdout);
    stdout = saved;
    VL_CHECK(rc == 1 && rc_long == 1);
}

static void test_help_names_every_flag_with_its_default(void)
{
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    vl_flags_print_help(f, &s_cmd, &s_defaults);
    fclose(f);
    VL_CHECK(strncmp(text, "usage: volley t DIR [--file FILE] [--policy NAME] [--once]", 58) == 0);
    for (const vl_flag_t *fl = s_flags; fl->name; fl++) {
        char entry[64];
        snprintf(entry, sizeof entry, "\n  %s--%s", fl->short_name ? "-h, " : "", fl->name);
        VL_CHECK(strstr(text, entry) != NULL);
    }
    VL_CHECK(strstr(text, "  --n N              how many (default 7)\n"));
    VL_CHECK(strstr(text, "where it goes (default out.txt)\n"));
    VL_CHECK(strstr(text, "a fraction (default 0.25)\n"));
    VL_CHECK(strstr(text, "once and exit\n")); // a switch shows no default
    VL_CHECK(strstr(text, "\n  DIR                a directory\n"));
    VL_CHECK(strstr(text, "\nTests flags.\n\n"));
    VL_CHECK(strstr(text, "Exit 0.\n"));
    int lines = 0, wrapped = 0;
    for (char *line = text; *line; lines++) {
        size_t len = strcspn(line, "\n");
        VL_CHECK(len <= 80);
        wrapped += strncmp(line, "                     (default 4096)\n", 36) == 0;
        line += len + (line[len] != 0);
    }
    if (wrapped != 1 || lines <= 12)
        fprintf(stderr, "%s", text);
    VL_CHECK(wrapped == 1 && lines > 12);
    free(text);
}

int main(void)
{
    VL_RUN(test_every_kind_parsed);
    VL_RUN(test_refusals_are_one_line);
    VL_RUN(test_required_flag);
    VL_RUN(test_help_short_flag);
    VL_RUN(test_help_names_every_flag_with_its_default);
    return VL_DONE();
}
