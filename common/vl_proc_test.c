/*  vl_proc_test: a child's end in words, from real wait statuses. */
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../tests/vl_test.h"
#include "vl_proc.h"

/* Forks a child that exits with code (>= 0) or kills itself with -code,
   and returns its wait status. */
static int s_status_of(int code)
{
    pid_t pid = fork();
    if (pid == 0) {
        if (code < 0) {
            signal(-code, SIG_DFL);
            raise(-code);
        }
        _exit(code < 0 ? 99 : code);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return status;
}

static void test_exits_in_words(void)
{
    char how[64];
    VL_CHECK(strcmp(vl_proc_describe(s_status_of(0), how, sizeof how), "exit 0") == 0);
    VL_CHECK(strcmp(vl_proc_describe(s_status_of(2), how, sizeof how), "exit 2") == 0);
    VL_CHECK(strcmp(vl_proc_describe(512, how, sizeof how), "exit 2") == 0); // not "status 512"
}

static void test_signals_in_words(void)
{
    char how[64];
    VL_CHECK(strcmp(vl_proc_describe(s_status_of(-SIGKILL), how, sizeof how),
                    "killed by signal 9 (SIGKILL)") == 0);
    VL_CHECK(strcmp(vl_proc_describe(s_status_of(-SIGSEGV), how, sizeof how),
                    "killed by signal 11 (SIGSEGV)") == 0);
    VL_CHECK(strcmp(vl_proc_describe(s_status_of(-SIGTERM), how, sizeof how),
                    "killed by signal 15 (SIGTERM)") == 0);
}

static void test_stop_one_gives_the_status(void)
{
    char how[64];
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGTERM, SIG_DFL);
        for (;;)
            pause();
    }
    int status = 0;
    VL_CHECK(vl_proc_stop_one(&pid, 5000, &status) == -1 && pid == 0);
    VL_CHECK(strcmp(vl_proc_describe(status, how, sizeof how), "killed by signal 15 (SIGTERM)") ==
             0);
}

int main(void)
{
    VL_RUN(test_exits_in_words);
    VL_RUN(test_signals_in_words);
    VL_RUN(test_stop_one_gives_the_status);
    return VL_DONE();
}
