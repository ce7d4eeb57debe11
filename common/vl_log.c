/*  vl_log: one-line log records on stderr. */
#include "vl_log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char s_role[48] = "volley";
static vl_log_level_t s_min_level = VL_LOG_INFO;

void vl_log_init(const char *role, vl_log_level_t min_level)
{
    snprintf(s_role, sizeof s_role, "%s", role ? role : "volley");
    s_min_level = min_level;
}

void vl_log(vl_log_level_t level, const char *fmt, ...)
{
    static const char *names[] = {"debug", "info", "warn", "error"};
    if (level < s_min_level)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    localtime_r(&ts.tv_sec, &tm);
    char line[1024];
    int n = snprintf(line, sizeof line, "%02d:%02d:%02d.%03ld %s[%d] %s: ", tm.tm_hour, tm.tm_min,
                     tm.tm_sec, ts.tv_nsec / 1000000, s_role, (int)getpid(), names[level]);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof line)
        vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s\n", line); // one write per record keeps processes' lines whole
}

static int64_t s_clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int64_t vl_now_ns(void)
{
    return s_clock_ns(CLOCK_MONOTONIC);
}

int64_t vl_wall_ns(void)
{
    return s_clock_ns(CLOCK_REALTIME);
}

double vl_span_ms(int64_t from_ns, int64_t to_ns)
{
    int64_t d;
    if (__builtin_sub_overflow(to_ns, from_ns, &d) || d < 0 || d > 3600LL * 1000000000LL)
        return -1.0;
    return (double)d / 1e6;
}

int vl_why(char *why, size_t why_size, const char *fmt, ...)
{
    if (why && why_size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, why_size, fmt, ap);
        va_end(ap);
    }
    return -1;
}
