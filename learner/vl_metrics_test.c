/*  vl_metrics_test: rows as JSON lines (every key, non-finite as null,
    appended after a reopen, never truncated) and as TensorBoard events
    whose every record's CRCs hold, at the row's env steps. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/vl_log.h"
#include "../messages/vl_tfevents.h"
#include "../tests/vl_test.h"
#include "tfevents.pb-c.h"
#include "vl_metrics.h"

static char s_dir[] = "/tmp/vl_metrics_testXXXXXX";

static vl_metrics_row_t s_row(uint64_t steps)
{
    return (vl_metrics_row_t){.wall_time = 1.7e9,
                              .uptime_s = 2.5,
                              .env_steps = steps,
                              .version = 7,
                              .episodes = 12,
                              .window = 12,
                              .return_mean = 21.5f,
                              .return_min = 9.0f,
                              .return_max = 64.0f,
                              .length_mean = 21.5f,
                              .loss_pi = -0.01f,
                              .loss_v = 3.25f,
                              .entropy = 0.69f,
                              .explained_var = NAN,
                              .lr = 1e-3f,
                              .lag_max = 2,
                              .segments_trained = 7296,
                              .segments_dropped = 50560 + 3 + 2 + 1,
                              .dropped_lag = 50560,
                              .dropped_capacity = 3,
                              .dropped_budget = 2,
                              .dropped_invalid = 1,
                              .segments_arrived = 57862};
}

static char *s_slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = malloc(1 << 20);
    *n = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
    if (buf)
        buf[*n] = 0;
    fclose(f);
    return buf;
}

static void test_json_row(void)
{
    char line[2048];
    vl_metrics_row_t r = s_row(4096);
    int n = vl_metrics_json(&r, line, sizeof line);
    VL_CHECK(n > 0 && line[n - 1] == '\n' && line[0] == '{' && line[n - 2] == '}');
    const char *keys[] = {"wall_time",
                          "uptime_s",
                          "env_steps",
                          "steps_per_s",
                          "version",
                          "episodes",
                          "return_mean",
                          "return_min",
                          "return_max",
                          "length_mean",
                          "loss_pi",
                          "loss_v",
                          "entropy",
                          "approx_kl",
                          "clip_frac",
                          "explained_var",
                          "lr",
                          "lag_min",
                          "lag_median",
                          "lag_max",
                          "segments_trained",
                          "segments_dropped",
                          "ingest_ms",
                          "train_ms",
                          "dropped_lag",
                          "dropped_capacity",
                          "dropped_budget",
                          "dropped_invalid",
                          "segments_arrived"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        char k[64];
        snprintf(k, sizeof k, "\"%s\":", keys[i]);
        VL_CHECK(strstr(line, k) != NULL);
    }
    VL_CHECK(strstr(line, "\"explained_var\":null"));
    VL_CHECK(strstr(line, "\"env_steps\":4096,"));
    VL_CHECK(strstr(line, "\"segments_dropped\":50566,\"dropped_lag\":50560,"
                          "\"dropped_capacity\":3,\"dropped_budget\":2,\"dropped_invalid\":1,"
                          "\"segments_arrived\":57862,"));
    VL_CHECK(strstr(line, "\"return_max\":64,") || strstr(line, "\"return_max\":64}"));
    VL_CHECK(vl_metrics_json(&r, line, 40) == -1); // does not fit: refused, not cut
}

static void test_files_appended_and_events_read(void)
{
    vl_metrics_t *m = vl_metrics_new(s_dir);
    VL_CHECK(m);
    vl_metrics_row_t a = s_row(1000), b = s_row(2000);
    VL_CHECK(vl_metrics_write(m, &a) == 0 && vl_metrics_write(m, &b) == 0);
    vl_metrics_destroy(&m);
    m = vl_metrics_new(s_dir); // a resumed run appends
    vl_metrics_row_t c = s_row(3000);
    VL_CHECK(m && vl_metrics_write(m, &c) == 0 && vl_metrics_lost(m) == 0);
    vl_metrics_destroy(&m);
    char path[256];
    size_t n;
    snprintf(path, sizeof path, "%s/metrics.jsonl", s_dir);
    char *text = s_slurp(path, &n);
    VL_CHECK(text);
    int lines = 0;
    for (size_t i = 0; i < n; i++)
        lines += text[i] == '\n';
    VL_CHECK(lines == 3 && strstr(text, "\"env_steps\":1000,") &&
             strstr(text, "\"env_steps\":3000,"));
    free(text);
    unlink(path);
}

static void test_event_file(void)
{
    vl_metrics_t *m = vl_metrics_new(s_dir);
    VL_CHECK(m);
    vl_metrics_row_t r = s_row(5000);
    VL_CHECK(vl_metrics_write(m, &r) == 0);
    vl_metrics_destroy(&m);
    char path[512] = "";
    FILE *ls = popen("ls /tmp/vl_metrics_test*/events.out.tfevents.* | tail -1", "r");
    VL_CHECK(ls && fgets(path, sizeof path, ls));
    pclose(ls);
    path[strcspn(path, "\n")] = 0;
    size_t n, off = 0, len;
    uint8_t *buf = (uint8_t *)s_slurp(path, &n);
    const uint8_t *data;
    VL_CHECK(buf && vl_tfevents_next(buf, n, &off, &data, &len) == VL_TFEV_RECORD);
    VL_CHECK(vl_tfevents_next(buf, n, &off, &data, &len) == VL_TFEV_RECORD);
    VlTb__Event *ev = vl_tb__event__unpack(NULL, len, data);
    VL_CHECK(ev && ev->what_case == VL_TB__EVENT__WHAT_SUMMARY && ev->step == 5000);
    int saw_return = 0, saw_nan = 0, saw_drops = 0;
    for (size_t i = 0; i < ev->summary->n_value; i++) {
        const char *tag = ev->summary->value[i]->tag;
        float v = ev->summary->value[i]->simple_value;
        saw_drops += (strcmp(tag, "segments/dropped_lag") == 0 && v == 50560.0f) +
                     (strcmp(tag, "segments/dropped_capacity") == 0 && v == 3.0f) +
                     (strcmp(tag, "segments/dropped_budget") == 0 && v == 2.0f) +
                     (strcmp(tag, "segments/dropped_invalid") == 0 && v == 1.0f) +
                     (strcmp(tag, "segments/arrived") == 0 && v == 57862.0f);
        saw_return |= strcmp(ev->summary->value[i]->tag, "charts/episode_return") == 0 &&
                      ev->summary->value[i]->simple_value == 21.5f;
        saw_nan |= strcmp(ev->summary->value[i]->tag, "losses/explained_variance") == 0;
    }
    vl_tb__event__free_unpacked(ev, NULL);
    VL_CHECK(saw_return && !saw_nan); // NaN scalars are left out, not written
    VL_CHECK(saw_drops == 5);         // each drop cause and the arrivals, as scalars
    VL_CHECK(vl_tfevents_next(buf, n, &off, &data, &len) == VL_TFEV_END);
    free(buf);
}

/* A learner resumed into the run's directory: its rows' uptime goes on from
   the file's last row; its first row, before an update and a step, has
   null losses and rate, not zeros that would be drawn. */
static void test_resumed_run_goes_on(void)
{
    char path[256];
    snprintf(path, sizeof path, "%s/metrics.jsonl", s_dir);
    unlink(path);
    vl_metrics_t *m = vl_metrics_new(s_dir);
    vl_metrics_row_t a = s_row(1000);
    a.uptime_s = 40.5;
    VL_CHECK(m && vl_metrics_write(m, &a) == 0);
    vl_metrics_destroy(&m);
    m = vl_metrics_new(s_dir); // the resumed learner's own clock starts at 0
    vl_metrics_row_t b = s_row(1000), c = s_row(1500);
    b.uptime_s = 0.25, b.steps_per_s = 0;
    b.loss_pi = b.loss_v = b.entropy = b.approx_kl = b.clip_frac = b.explained_var = 0;
    c.uptime_s = 1.5;
    VL_CHECK(m && vl_metrics_write(m, &b) == 0 && vl_metrics_write(m, &c) == 0);
    vl_metrics_destroy(&m);
    size_t n;
    char *text = s_slurp(path, &n);
    VL_CHECK(text);
    char *second = text ? strchr(text, '\n') : NULL;
    char *third = second ? strchr(second + 1, '\n') : NULL;
    VL_CHECK(second && third);
    if (second && third) {
        *third = '\0';
        VL_CHECK(strstr(second, "\"uptime_s\":40.750000") && strstr(second, "\"loss_pi\":null") &&
                 strstr(second, "\"entropy\":null") && strstr(second, "\"steps_per_s\":null"));
        VL_CHECK(strstr(third + 1, "\"uptime_s\":42.000000") &&
                 strstr(third + 1, "\"loss_v\":3.25"));
    }
    free(text);
    unlink(path);
}

int main(void)
{
    vl_log_init("vl_metrics_test", VL_LOG_ERROR);
    if (!mkdtemp(s_dir))
        return 1;
    VL_RUN(test_json_row);
    VL_RUN(test_files_appended_and_events_read);
    VL_RUN(test_event_file);
    VL_RUN(test_resumed_run_goes_on);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", s_dir);
    if (system(cmd) != 0)
        return 1;
    return VL_DONE();
}
