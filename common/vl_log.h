/*  vl_log: one-line log records on stderr, "HH:MM:SS.mmm role[pid] level: text".
    Standard output stays for what a command reports (progress, results). */
#ifndef VL_LOG_H
#define VL_LOG_H

#include <stddef.h>
#include <stdint.h>

typedef enum { VL_LOG_DEBUG, VL_LOG_INFO, VL_LOG_WARN, VL_LOG_ERROR } vl_log_level_t;

/* Names this process in log records ("broker", "actor 3", ...) and sets the
   lowest level printed. */
void vl_log_init(const char *role, vl_log_level_t min_level);

/* Writes one record if level is at or above the minimum. */
void vl_log(vl_log_level_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define vl_debug(...) vl_log(VL_LOG_DEBUG, __VA_ARGS__)
#define vl_info(...)  vl_log(VL_LOG_INFO, __VA_ARGS__)
#define vl_warn(...)  vl_log(VL_LOG_WARN, __VA_ARGS__)
#define vl_error(...) vl_log(VL_LOG_ERROR, __VA_ARGS__)

/* Writes a formatted reason into why[why_size] (why may be NULL, size 0).
   Returns -1, so that `return vl_why(why, n, "...", ...);` refuses. */
int vl_why(char *why, size_t why_size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Returns monotonic time in nanoseconds. */
int64_t vl_now_ns(void);

/* Returns wall-clock (CLOCK_REALTIME) time in nanoseconds. */
int64_t vl_wall_ns(void);

/* Returns to_ns - from_ns in milliseconds when it is between 0 and an hour,
   else -1: stamps read from the wire are hostile (the subtraction must not
   overflow) and clocks of two hosts may disagree. */
double vl_span_ms(int64_t from_ns, int64_t to_ns);

#endif
