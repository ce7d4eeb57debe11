/*  vl_top_test: the views of `volley top` from a hand-built Status. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../messages/vl_status.h"
#include "../tests/vl_test.h"
#include "vl_top.h"

/* A run as a broker might report it: one learner with stats, one without,
   three actors (one gone), two drop rows. Every figure is distinct so that a
   view printing the wrong field shows. */
typedef struct {
    Volley__Status status;
    Volley__LearnerRow learner[2];
    Volley__LearnerRow *learners[2];
    Volley__Stats stats;
    Volley__ActorRow actor[3];
    Volley__ActorRow *actors[3];
    Volley__DropRow drop[2];
    Volley__DropRow *drops[2];
} s_run_t;

static void s_run_init(s_run_t *r)
{
    memset(r, 0, sizeof *r);
    volley__status__init(&r->status);
    r->status.schema = VL_SCHEMA_VERSION;
    r->status.uptime_s = 83.5;
    r->status.received = 12345;
    r->status.routed = 12000;
    r->status.dropped = 300;
    r->status.queued = 45;
    r->status.received_per_s = 812.5f;
    r->status.queue_bytes_bound = 64u << 20;
    r->status.rss_bytes = 47395635; // 45.2 MiB

    volley__stats__init(&r->stats);
    r->stats.schema = VL_SCHEMA_VERSION;
    r->stats.policy_id = "alpha";
    r->stats.version = 777;
    r->stats.mean_return = 187.5f;
    r->stats.env_steps = 9876543;
    r->stats.lag_min = 1;
    r->stats.lag_median = 2;
    r->stats.lag_max = 9;
    r->stats.ingest_ms = 3.25f;
    r->stats.train_ms = 45.5f;
    char *policies[2] = {"alpha", "beta"};
    for (int i = 0; i < 2; i++) {
        volley__learner_row__init(&r->learner[i]);
        r->learner[i].policy_id = policies[i];
        r->learner[i].credit = 64 + (uint64_t)i;
        r->learner[i].delivered_per_s = i ? 0.0f : 799.5f;
        r->learners[i] = &r->learner[i];
    }
    r->learner[0].stats = &r->stats;
    r->learner[1].paused = 1;
    r->learner[1].queued = 4321;
    uint32_t ids[3] = {31, 7, 19}; // not in order: views sort by id
    for (int i = 0; i < 3; i++) {
        volley__actor_row__init(&r->actor[i]);
        r->actor[i].actor_id = ids[i];
        r->actor[i].policy_id = policies[i % 2];
        r->actor[i].alive = 1;
        r->actor[i].segments_per_s = 40.5f + (float)i;
        r->actor[i].env_steps_per_s = 2560.0f;
        r->actors[i] = &r->actor[i];
    }
    r->actor[0].send_ms = 0.5f; // send: (0.5 + 1.5) / 2 = 1.0; actor 19 is gone
    r->actor[1].send_ms = 1.5f;
    r->actor[2].send_ms = 100.0f;
    r->actor[0].apply_ms = 2.0f; // apply: (2 + 6) / 2 = 4.0
    r->actor[1].apply_ms = 6.0f;
    r->actor[2].apply_ms = 100.0f;
    r->actor[2].alive = 0;
    r->actor[2].silent_s = 12.5f;
    char *kinds[2] = {"segments", "hellos"};
    char *reasons[2] = {"learner queue over its byte bound", "say \"hi\"=bad\\"};
    for (int i = 0; i < 2; i++) {
        volley__drop_row__init(&r->drop[i]);
        r->drop[i].kind = kinds[i];
        r->drop[i].reason = reasons[i];
        r->drop[i].count = i ? 1 : 299;
        r->drops[i] = &r->drop[i];
    }
    r->status.n_learners = 2;
    r->status.learners = r->learners;
    r->status.n_actors = 3;
    r->status.actors = r->actors;
    r->status.n_drops = 2;
    r->status.drops = r->drops;
}

/* Renders the table view into a new string (caller frees). */
static char *s_table(const Volley__Status *s, int max_actors)
{
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    vl_top_render(s, "127.0.0.1:7600", max_actors, f);
    fclose(f);
    return buf;
}

/* Renders the kv view into a new string (caller frees). */
static char *s_kv(const Volley__Status *s)
{
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    vl_top_render_kv(s, 1700000000123000000LL, f); // 2023-11-14T22:13:20.123Z
    fclose(f);
    return buf;
}

/* Returns the line of text holding needle (a new string), or NULL. */
static char *s_line_with(const char *text, const char *needle)
{
    const char *at = strstr(text, needle);
    if (!at)
        return NULL;
    const char *start = at, *end = strchr(at, '\n');
    while (start > text && start[-1] != '\n')
        start--;
    return strndup(start, end ? (size_t)(end - start) : strlen(start));
}

static void test_adds_up(void)
{
    s_run_t r;
    s_run_init(&r);
    VL_CHECK(vl_top_adds_up(&r.status));
    char *t = s_table(&r.status, 0);
    int ok = strstr(t, "received 12345 = routed 12000 + dropped 300 + queued 45") &&
             strstr(t, "(adds up)") && !strstr(t, "NOT ADD UP");
    free(t);
    VL_CHECK(ok);
    r.status.queued = 46; // one segment too many: the broker lost count
    VL_CHECK(!vl_top_adds_up(&r.status));
    t = s_table(&r.status, 0);
    ok = strstr(t, "received 12345 != routed") && strstr(t, "DOES NOT ADD UP") &&
         !strstr(t, "(adds up)");
    free(t);
    VL_CHECK(ok);
    char *kv = s_kv(&r.status);
    ok = strstr(kv, " adds_up=0 ") != NULL;
    free(kv);
    VL_CHECK(ok);
}

static void test_table_numbers(void)
{
    s_run_t r;
    s_run_init(&r);
    char *t = s_table(&r.status, 0);
    char *header = s_line_with(t, "broker 127.0.0.1:7600");
    char *alpha = s_line_with(t, "  alpha  ");
    char *beta = s_line_with(t, "  beta  ");
    char *gone = s_line_with(t, "        19 ");
    int ok = header && strstr(header, "1m23s") && strstr(header, "45.2 MiB") &&
             strstr(header, "64.0 MiB") && strstr(t, "received/s 812.5") && alpha &&
             strstr(alpha, "799.5") && beta && strstr(beta, "4321") && strstr(beta, "PAUSED") &&
             gone && strstr(gone, " NO ") && strstr(gone, "12.5");
    // training: the learner with stats has a row, the one without has none
    char *train = s_line_with(t, "  777 ");
    ok = ok && train && strstr(train, "alpha") && strstr(train, "187.5") &&
         strstr(train, "9876543") && strstr(train, "1/2/9") && strstr(train, "3.25") &&
         strstr(train, "45.50");
    ok = ok && strstr(t, "learner queue over its byte bound") && strstr(t, "299");
    free(header), free(alpha), free(beta), free(gone), free(train), free(t);
    VL_CHECK(ok);
}

static void test_actors_sorted_and_capped(void)
{
    s_run_t r;
    s_run_init(&r);
    char *t = s_table(&r.status, 0);
    char *a7 = strstr(t, "         7 "), *a19 = strstr(t, "        19 "),
         *a31 = strstr(t, "        31 ");
    int ok = a7 && a19 && a31 && a7 < a19 && a19 < a31;
    free(t);
    VL_CHECK(ok);
    t = s_table(&r.status, 2);
    ok = strstr(t, "         7 ") && strstr(t, "        19 ") && !strstr(t, "        31 ") &&
         strstr(t, "and 1 more");
    free(t);
    VL_CHECK(ok);
}

static void test_hops(void)
{
    s_run_t r;
    s_run_init(&r);
    vl_top_hops_t h = vl_top_hops(&r.status);
    VL_CHECK_NEAR(h.send_ms, 1.0, 1e-6);    // alive actors' send_ms
    VL_CHECK_NEAR(h.ingest_ms, 3.25, 1e-6); // Stats.ingest_ms
    VL_CHECK_NEAR(h.train_ms, 45.5, 1e-6);  // Stats.train_ms
    VL_CHECK_NEAR(h.apply_ms, 4.0, 1e-6);   // alive actors' apply_ms
    char *t = s_table(&r.status, 0);
    char *line = s_line_with(t, "hops");
    int ok = line && strstr(line, "broker 1.00 ms") && strstr(line, "learner ingest 3.25 ms") &&
             strstr(line, "weights published 45.50 ms") && strstr(line, "applied 4.00 ms");
    free(line), free(t);
    VL_CHECK(ok);
    // no learner stats and no live actors: nothing to report, not zeros
    r.learner[0].stats = NULL;
    for (int i = 0; i < 3; i++)
        r.actor[i].alive = 0;
    h = vl_top_hops(&r.status);
    VL_CHECK(isnan(h.send_ms) && isnan(h.ingest_ms) && isnan(h.train_ms) && isnan(h.apply_ms));
    t = s_table(&r.status, 0);
    line = s_line_with(t, "hops");
    ok = line && strstr(line, "broker - |") && !strstr(line, "ms");
    free(line), free(t);
    VL_CHECK(ok);
}

/* Parses one "key=value key=\"v a l\" ..." line into keys and values
   (unescaped, in place). Returns the pair count, or -1 if malformed. */
static int s_parse_kv(char *line, char **keys, char **vals, int max)
{
    int n = 0;
    char *p = line;
    while (*p) {
        char *eq = strchr(p, '=');
        if (!eq || eq == p || n == max || memchr(p, ' ', (size_t)(eq - p)))
            return -1;
        *eq = 0;
        keys[n] = p;
        char *v = eq + 1, *w = v;
        if (*v == '"') {
            for (v++; *v && *v != '"'; v++)
                *w++ = (*v == '\\' && v[1]) ? *++v : *v;
            if (*v != '"')
                return -1;
            v++;
        } else {
            while (*v && *v != ' ')
                v++;
            w = v;
        }
        vals[n++] = eq + 1 + (eq[1] == '"');
        if (*v && *v != ' ')
            return -1;
        p = *v ? v + 1 : v;
        *w = 0;
    }
    return n;
}

/* Returns the value of key in a parsed line, or NULL. */
static const char *s_val(char **keys, char **vals, int n, const char *key)
{
    for (int i = 0; i < n; i++)
        if (strcmp(keys[i], key) == 0)
            return vals[i];
    return NULL;
}

/* Returns 1 if key is in the parsed line with value want. */
static int s_is(char **keys, char **vals, int n, const char *key, const char *want)
{
    const char *v = s_val(keys, vals, n, key);
    return v && strcmp(v, want) == 0;
}

static void test_kv_lines_parse(void)
{
    s_run_t r;
    s_run_init(&r);
    char *kv = s_kv(&r.status);
    int lines = 0, kinds[4] = {0}, ok = 1;
    const char *names[4] = {"broker", "learner", "actor", "drop"};
    char *save = NULL;
    for (char *line = strtok_r(kv, "\n", &save); ok && line; line = strtok_r(NULL, "\n", &save)) {
        char *keys[64], *vals[64];
        int n = s_parse_kv(line, keys, vals, 64);
        ok = n >= 3 && strcmp(keys[0], "ts") == 0 &&
             strcmp(vals[0], "2023-11-14T22:13:20.123Z") == 0 && strcmp(keys[1], "kind") == 0;
        for (int k = 0; ok && k < 4; k++)
            kinds[k] += strcmp(vals[1], names[k]) == 0;
        const char *kind = ok ? vals[1] : "";
#define S_IS(key, want) s_is(keys, vals, n, key, want)
        if (ok && strcmp(kind, "actor") == 0 && S_IS("id", "7"))
            ok = S_IS("seg_per_s", "41.5") && S_IS("policy", "beta") && S_IS("alive", "1");
        if (ok && strcmp(kind, "learner") == 0 && S_IS("policy", "alpha"))
            ok = S_IS("version", "777") && S_IS("lag_median", "2") && S_IS("ingest_ms", "3.25");
        if (ok && strcmp(kind, "learner") == 0 && S_IS("policy", "beta"))
            ok = S_IS("stats", "0") && !s_val(keys, vals, n, "version") && S_IS("paused", "1");
        if (ok && strcmp(kind, "drop") == 0 && S_IS("drop_kind", "hellos"))
            ok = S_IS("reason", "say \"hi\"=bad\\") && S_IS("count", "1");
        if (ok && strcmp(kind, "broker") == 0)
            ok = S_IS("received", "12345") && S_IS("adds_up", "1") && S_IS("hop_send_ms", "1") &&
                 S_IS("hop_train_ms", "45.5");
#undef S_IS
        lines++;
    }
    free(kv);
    VL_CHECK(ok);
    VL_CHECK(lines == 8);
    VL_CHECK(kinds[0] == 1 && kinds[1] == 2 && kinds[2] == 3 && kinds[3] == 2);
}

/* A learner that drops most of what reaches it: its row says how many and
   what share, a line under its training row says why, the drops block lists
   the broker's "learner" rows, and the kv lines carry every count. */
static void test_learner_drops(void)
{
    s_run_t r;
    s_run_init(&r);
    r.stats.segments_dropped = 50560 + 12;
    r.stats.dropped_lag = 50560;
    r.stats.dropped_invalid = 12;
    r.stats.segments_arrived = 57868;
    Volley__DropRow lag = VOLLEY__DROP_ROW__INIT, *drops[1] = {&lag};
    lag.kind = "learner";
    lag.reason = "lag (older than --max-lag)";
    lag.count = 50560;
    r.status.n_drops = 1;
    r.status.drops = drops;
    r.status.learner_dropped = 50560;
    char *t = s_table(&r.status, 0);
    char *alpha = s_line_with(t, "  alpha  "), *beta = s_line_with(t, "  beta  ");
    char *why = s_line_with(t, "alpha            dropped ");
    char *row = s_line_with(t, "  learner     ");
    int ok = alpha && strstr(alpha, " 50572 (87%)") && beta && strstr(beta, " -") && why &&
             strstr(why, "dropped 50572 of 57868 arrived (87%): lag 50560, invalid 12") && row &&
             strstr(row, "50560  lag (older than --max-lag)") && !strstr(t, "drops: none") &&
             strstr(t, "learner dropped 50560 of the routed segments") && strstr(t, "(adds up)");
    free(alpha), free(beta), free(why), free(row), free(t);
    VL_CHECK(ok);
    char *kv = s_kv(&r.status);
    ok =
        strstr(kv, " learner_dropped=50560 ") && strstr(kv, " dropped_lag=50560 ") &&
        strstr(kv, " dropped_capacity=0 ") && strstr(kv, " dropped_budget=0 ") &&
        strstr(kv, " dropped_invalid=12 ") && strstr(kv, " segments_arrived=57868 ") &&
        strstr(kv, " dropped_share=0.8739 ") &&
        strstr(kv, "kind=drop drop_kind=learner reason=\"lag (older than --max-lag)\" count=50560");
    free(kv);
    VL_CHECK(ok);
    uint8_t *buf; // the counts cross the control port as they are
    size_t size;
    VL_CHECK(vl_status_encode(&r.status, &buf, &size) == 0);
    vl_reason_t reason;
    Volley__Status *s = vl_status_decode(buf, size, &reason);
    free(buf);
    VL_CHECK(s && reason == VL_OK);
    char *a = s_kv(&r.status), *b = s_kv(s);
    ok = strcmp(a, b) == 0 && s->learner_dropped == 50560 &&
         s->learners[0]->stats->segments_arrived == 57868;
    free(a), free(b);
    vl_status_free(&s);
    VL_CHECK(ok);
}

static void test_decoded_status_renders(void)
{
    // What the commands render comes through vl_status_decode: a round trip
    // keeps every row the views read.
    s_run_t r;
    s_run_init(&r);
    uint8_t *buf;
    size_t size;
    VL_CHECK(vl_status_encode(&r.status, &buf, &size) == 0);
    vl_reason_t why;
    Volley__Status *s = vl_status_decode(buf, size, &why);
    free(buf);
    VL_CHECK(s && why == VL_OK);
    char *a = s_kv(&r.status), *b = s_kv(s);
    int same = strcmp(a, b) == 0;
    free(a), free(b);
    vl_status_free(&s);
    VL_CHECK(same);
}

int main(void)
{
    VL_RUN(test_adds_up);
    VL_RUN(test_table_numbers);
    VL_RUN(test_actors_sorted_and_capped);
    VL_RUN(test_hops);
    VL_RUN(test_kv_lines_parse);
    VL_RUN(test_learner_drops);
    VL_RUN(test_decoded_status_renders);
    return VL_DONE();
}
