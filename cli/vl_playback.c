/*  vl_playback: reading a recording record by record and handing each to
    an offline learner or a broker's segment port. */
#include "vl_playback.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <zmq.h>

#include "../common/vl_log.h"
#include "../common/vl_opts.h"
#include "../common/vl_proc.h"
#include "../common/vl_sock.h"
#include "../learner/vl_learner.h"
#include "../learner/vl_offline.h"
#include "../messages/vl_stream.h"

#define S_PROGRESS_NS 1000000000LL
#define S_INTERRUPTED ((vl_stream_status_t)-1) // s_play's own status: stopped by a signal

/* Where the records go: a learner of our own, or a broker. */
typedef struct {
    vl_offline_t *learner; // or
    void *ctx, *push;      // to the broker's segment port
    uint64_t sent;
    int64_t first_ns, last_ns; // receive times of the first and last record played
} s_sink_t;

static void s_usage(FILE *out)
{
    fprintf(out,
            "usage: volley replay FILE [--policy NAME] [--env NAME] [--pace fast|recorded]\n"
            "                     [--broker HOST[:PORT]] [learner numeric options]\n"
            "                     [--quiet|--verbose]\n"
            "\n"
            "Plays back a recording made with `volley broker --record FILE` (or `volley up\n"
            "--record FILE`). By default into a deterministic learner of its own: one thread,\n"
            "portable arithmetic, the given seed, an update each time --batch new segments\n"
            "have arrived, so the same file gives the same weights, bit for bit, on any\n"
            "x86-64 (with --retain, the ring's sampler uses libm's double exp/log/pow, whose\n"
            "last bits may differ across CPUs in rare cases); the last line printed is their\n"
            "checksum (16 hex digits); interrupted, it prints none (exit 130). Every record's\n"
            "checksum is verified: a torn tail (a recording cut short) is replayed up to its\n"
            "last whole record and reported; corruption is reported with its byte offset and\n"
            "nothing is printed as a checksum (exit 1).\n"
            "\n"
            "  FILE               the recording\n"
            "  --pace fast|recorded  as fast as possible (default), or with the recorded gaps\n"
            "                     between messages\n"
            "  --broker HOST[:PORT]  send the records to a running broker's segment port\n"
            "                     (default port %d) instead (a load test with real traffic);\n"
            "                     no learner here\n"
            "  --policy NAME      policy whose segments train the learner (default 'default')\n",
            VL_DEFAULT_PORT);
    vl_opt_print_curve(out);
    vl_env_print_help(out, "cartpole; the recording's spec must match it");
    vl_opt_print_model(out);
    vl_learner_config_t defaults = vl_learner_config_default();
    vl_opt_print(out, vl_learner_opts, vl_learner_n_opts, &defaults);
    fprintf(out, "  --quiet            warnings and errors only\n"
                 "  --verbose          debug logging\n"
                 "  -h, --help         this text\n");
}

/* Sleeps until the record's recorded offset from the first one has passed
   since the replay started (both in ns), or a signal. */
static void s_pace(int64_t first_recv, int64_t recv, int64_t start)
{
    if (recv > first_recv)
        vl_proc_sleep_until(start + (recv - first_recv));
}

/* Hands one record to the sink. Returns 0, or -1 on a failed update/send. */
static int s_deliver(s_sink_t *k, const vl_stream_record_t *rec)
{
    if (k->learner)
        return vl_offline_feed(k->learner, rec->data, rec->size, rec->recv_ns);
    if (zmq_send(k->push, rec->data, rec->size, 0) < 0)
        return vl_interrupted ? 0 : -1;
    k->sent++;
    return 0;
}

/* Logs progress: records, share of the file, and the learner's state. */
static void s_progress(const s_sink_t *k, const vl_stream_reader_t *r, uint64_t file_size)
{
    uint64_t off = vl_stream_reader_offset(r);
    double pct = file_size ? 100.0 * (double)off / (double)file_size : 0.0;
    if (!k->learner) {
        vl_info("replayed %" PRIu64 " records (%.0f%%) into the broker", k->sent, pct);
        return;
    }
    vl_offline_stats_t st;
    vl_offline_stats(k->learner, &st);
    vl_info("replayed %" PRIu64 " records (%.0f%%): version %" PRIu64 ", return %.1f", st.messages,
            pct, st.updates, (double)st.mean_return);
}

/* Plays every record to the sink. Returns the reader's final status, or
   VL_STREAM_IOERR after a failed delivery. */
static vl_stream_status_t s_play(vl_stream_reader_t *r, s_sink_t *k, int paced, uint64_t size)
{
    vl_stream_record_t rec;
    vl_stream_status_t st;
    int64_t start = vl_now_ns(), next_note = start + S_PROGRESS_NS;
    while (!vl_interrupted && (st = vl_stream_next(r, &rec)) == VL_STREAM_OK) {
        if (!k->first_ns)
            k->first_ns = rec.recv_ns;
        k->last_ns = rec.recv_ns;
        if (paced)
            s_pace(k->first_ns, rec.recv_ns, start);
        if (s_deliver(k, &rec) != 0) {
            vl_error("replay stopped at the record at byte %" PRIu64 ": %s", rec.offset,
                     k->learner ? "an update failed (out of memory?)" : zmq_strerror(zmq_errno()));
            return VL_STREAM_IOERR;
        }
        if (vl_now_ns() >= next_note) {
            s_progress(k, r, size);
            next_note = vl_now_ns() + S_PROGRESS_NS;
        }
    }
    return vl_interrupted ? S_INTERRUPTED : st;
}

/* Prints what the offline learner did, then the checksum as the last line. */
static void s_report(const s_sink_t *k)
{
    vl_offline_t *learner = k->learner;
    vl_offline_stats_t st;
    vl_offline_stats(learner, &st);
    uint64_t refused = 0;
    for (int i = 0; i < VL_EREASONS; i++)
        refused += st.refused[i];
    printf("records=%" PRIu64 " accepted=%" PRIu64 " refused=%" PRIu64 " updates=%" PRIu64
           " trained=%" PRIu64 " stale=%" PRIu64 " env_steps=%" PRIu64 " episodes=%" PRIu64
           " return=%.1f span_ms=%" PRId64 "\n",
           st.messages, st.accepted, refused, st.updates, st.trained, st.stale, st.env_steps,
           st.episodes, (double)st.mean_return, (k->last_ns - k->first_ns) / 1000000);
    for (int i = 0; i < VL_EREASONS; i++)
        if (st.refused[i])
            printf("  refused %" PRIu64 ": %s\n", st.refused[i], vl_reason_str((vl_reason_t)i));
    if (st.first_refusal[0])
        printf("  the first refused: %s\n", st.first_refusal);
    printf("%016" PRIx64 "\n", vl_offline_checksum(learner));
}

/* Opens the sink the flags ask for. Returns 0, or -1 after logging why. */
static int s_sink_open(s_sink_t *k, const vl_learner_config_t *c, const char *broker)
{
    if (!broker) {
        k->learner = vl_offline_new(c);
        if (!k->learner)
            vl_error("cannot start the replay learner (out of memory?)");
        return k->learner ? 0 : -1;
    }
    k->ctx = zmq_ctx_new();
    k->push =
        k->ctx ? vl_sock_connect(k->ctx, ZMQ_PUSH, broker, VL_PORT_SEGMENTS, 10000, 4096) : NULL;
    if (!k->push)
        vl_error("cannot connect to the broker at %s", broker);
    return k->push ? 0 : -1;
}

/* Closes the sink (a broker's socket lingers up to 10 s to deliver). */
static void s_sink_close(s_sink_t *k)
{
    vl_offline_destroy(&k->learner);
    if (k->push)
        zmq_close(k->push);
    if (k->ctx)
        zmq_ctx_term(k->ctx);
}

/* Replays the file. Returns the exit code. */
static int s_replay(const char *path, const vl_learner_config_t *c, const vl_role_opts_t *role)
{
    char why[512];
    vl_stream_reader_t *r = vl_stream_reader_open(path, why, sizeof why);
    if (!r) {
        vl_error("cannot replay %s: %s", path, why);
        return 1;
    }
    struct stat sb;
    uint64_t size = stat(path, &sb) == 0 ? (uint64_t)sb.st_size : 0;
    vl_info("replaying %s (recorded by: %s) %s", path, vl_stream_reader_config(r),
            role->broker ? "into the broker" : "into a deterministic learner");
    s_sink_t k = {0};
    int rc = 1;
    if (s_sink_open(&k, c, role->broker) == 0) {
        vl_stream_status_t st = s_play(r, &k, role->pace_recorded, size);
        if (st == S_INTERRUPTED)
            vl_warn("interrupted after %" PRIu64 " records: no checksum",
                    vl_stream_reader_records(r));
        else if (st == VL_STREAM_TORN)
            vl_warn("%s: replayed the valid prefix, %" PRIu64 " records", vl_stream_reader_why(r),
                    vl_stream_reader_records(r));
        else if (st == VL_STREAM_CORRUPT || st == VL_STREAM_IOERR)
            vl_error("%s", st == VL_STREAM_IOERR && !vl_stream_reader_why(r)[0]
                               ? "replay failed"
                               : vl_stream_reader_why(r));
        rc = st == VL_STREAM_END || st == VL_STREAM_TORN ? 0 : st == S_INTERRUPTED ? 130 : 1;
        if (rc == 0 && k.learner)
            s_report(&k);
        else if (rc == 0)
            vl_info("sent %" PRIu64 " records to the broker", k.sent);
    }
    s_sink_close(&k);
    vl_stream_reader_destroy(&r);
    return rc;
}

int vl_playback_main(int argc, char **argv)
{
    vl_learner_config_t c = vl_learner_config_default();
    vl_role_opts_t role = {
        .policy = c.policy, .env = c.env_name, .log_level = VL_LOG_INFO, .replay = 1};
    int rc = vl_opt_parse_role("replay", argc, argv, vl_learner_opts, vl_learner_n_opts, &c, &role,
                               s_usage);
    if (rc != 0)
        return rc > 0 ? 0 : 2;
    const vl_env_ops_t *env = vl_env_lookup("replay", role.env);
    if (!env)
        return 2;
    vl_learner_config_set_env(&c, env);
    char why[512];
    if (vl_learner_config_set_model(&c, role.model, 1, NULL, why, sizeof why) != 0) {
        fprintf(stderr, "volley replay: --model: %s\n", why);
        return 2;
    }
    vl_learner_config_settle(&c, role.given);
    vl_learner_config_size(&c); // --batch 0 or --capacity 0
    // One thread unless told: a conv model's sums depend on how many threads split them, so
    // the default of every core would give another checksum on another machine.
    for (int i = 0; i < vl_learner_n_opts && i < 64; i++)
        if (strcmp(vl_learner_opts[i].name, "threads") == 0 && !(role.given >> i & 1))
            c.threads = 1;
    if (vl_learner_config_check("replay", &c) != 0)
        return 2;
    c.policy = role.policy;
    vl_log_init("replay", (vl_log_level_t)role.log_level);
    vl_proc_catch_signals();
    vl_curve_t *curve;
    if (vl_sock_client_curve(role.cert, role.broker_key, &curve) != 0)
        return 1;
    rc = s_replay(role.file, &c, &role);
    vl_sock_client_curve_end(&curve);
    return rc;
}
