/*  vl_inject: sends deliberately malformed messages to a running broker, one
    per named fault, for the hostile-input integration test. Each fault
    targets one check of one decoder; the test then reads the broker's
    counters. Usage: vl_inject HOST:PORT FAULT...  (vl_inject --list)
    Attacks take an argument, FAULT=ARG (see s_attack); HOST may be
    "SRC:0;HOST" to send from the local address SRC; with VL_INJECT_CERT and
    VL_INJECT_BROKER_KEY set every socket is a CURVE client with that key. */
#include <lz4.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "../common/vl_log.h"
#include "../common/vl_opts.h"
#include "../common/vl_sock.h"
#include "../messages/vl_codec.h"
#include "../messages/vl_spec.h"
#include "../messages/vl_status.h"
#include "volley.pb-c.h"

#define T 64 // the horizon volley actor and learner use by default: the policy's spec
#define D 4

typedef struct {
    void *push, *dealer, *pub, *control;
} s_socks_t;

static void *s_held[1024]; // sockets an attack keeps open until the end
static int s_n_held;

/* Keeps sock open until the end, or closes it when there is no room. */
static void s_hold(void *sock)
{
    if (s_n_held < (int)(sizeof s_held / sizeof s_held[0]))
        s_held[s_n_held++] = sock;
    else
        zmq_close(sock);
}

/* A valid CartPole-shaped segment for policy of horizon h (<= T), unpacked
   for editing. */
static Volley__Segment *s_segment_h(const char *policy, uint32_t h)
{
    static uint8_t arrays[1 << 16];
    vl_segment_t seg = {.horizon = h, .action = vl_action_discrete(2)};
    snprintf(seg.policy_id, sizeof seg.policy_id, "%s", policy);
    vl_obs_spec_t spec = vl_obs_spec_flat(D);
    vl_segment_set_spec(&seg, &spec);
    vl_segment_bind(&seg, arrays);
    for (int i = 0; i < (int)(h + 1) * D; i++)
        ((float *)seg.obs)[i] = 0.01f * (float)i; // all f32: rows are floats
    for (int t = 0; t < (int)h; t++) {
        seg.actions[t] = (float)(t % 2);
        seg.rewards[t] = 1;
        seg.dones[t] = 0;
        seg.logp[t] = -0.69f;
    }
    uint8_t *buf;
    size_t size;
    if (vl_segment_encode(&seg, &buf, &size) != 0)
        return NULL;
    Volley__Segment *msg = volley__segment__unpack(NULL, size, buf);
    free(buf);
    return msg;
}

/* A valid CartPole-shaped segment of horizon T for policy. */
static Volley__Segment *s_segment(const char *policy)
{
    return s_segment_h(policy, T);
}

/* Rewrites a segment's payload after edit() changed its raw bytes. */
static void s_edit_payload(Volley__Segment *msg, void (*edit)(uint8_t *raw))
{
    uint8_t raw[1 << 16], *block = malloc(LZ4_compressBound((int)msg->raw_size));
    LZ4_decompress_safe((char *)msg->payload.data, (char *)raw, (int)msg->payload.len,
                        (int)sizeof raw);
    edit(raw);
    int n = LZ4_compress_default((char *)raw, (char *)block, (int)msg->raw_size,
                                 LZ4_compressBound((int)msg->raw_size));
    msg->payload.data = block; // freed by s_free_segment
    msg->payload.len = (size_t)n;
}

static void s_nan_reward(uint8_t *raw)
{
    float nan = NAN;
    memcpy(raw + (T + 1) * D * 4 + 4 * T + 4 * 3, &nan, 4); // rewards[3]
}

static void s_inf_obs(uint8_t *raw)
{
    float inf = INFINITY;
    memcpy(raw + 4 * 5, &inf, 4); // obs value 5
}

static void s_bad_action(uint8_t *raw)
{
    float a = 7.0f;                               // a choice among 2 is 0 or 1
    memcpy(raw + (T + 1) * D * 4 + 4 * 2, &a, 4); // actions[2][0]
}

/* Sends a protobuf message as one frame. */
static void s_send_msg(void *sock, const ProtobufCMessage *msg)
{
    uint8_t *buf;
    size_t size;
    if (vl_wire_pack(msg, &buf, &size) == 0) {
        zmq_send(sock, buf, size, 0);
        free(buf);
    }
}

/* Sends a segment edited by fault; returns 0, or -1 for an unknown fault. */
static uint8_t s_bomb[10]; // an "LZ4 block" far too small for what it claims

/* Frees an edited segment: fields pointing at our own memory are freed or
   dropped first, so protobuf-c frees only what it allocated. */
static void s_free_segment(Volley__Segment *m, uint8_t *payload, char *policy_id)
{
    if (m->payload.data != payload && m->payload.data != s_bomb)
        free(m->payload.data);
    m->payload.data = payload;
    m->policy_id = policy_id;
    volley__segment__free_unpacked(m, NULL);
}

static int s_segment_fault(void *push, const char *fault)
{
    Volley__Segment *m =
        strcmp(fault, "seg-spec") == 0
            ? s_segment_h("default", T / 2) // valid, but not the policy's horizon
            : s_segment(strcmp(fault, "seg-unknown-policy") ? "default" : "nobody");
    uint8_t *payload = m->payload.data;
    char *policy_id = m->policy_id;
    int rc = 0;
    if (strcmp(fault, "seg-version") == 0)
        m->schema = 1;
    else if (strcmp(fault, "seg-horizon") == 0)
        m->horizon = 1u << 30;
    else if (strcmp(fault, "seg-shape") == 0)
        m->raw_size += 4;
    else if (strcmp(fault, "seg-policy") == 0)
        m->policy_id = "bad\x01id";
    else if (strcmp(fault, "seg-bound") == 0) {
        m->payload.len = LZ4_compressBound((int)m->raw_size) + 1;
        m->payload.data = calloc(1, m->payload.len);
    } else if (strcmp(fault, "seg-bomb") == 0) {
        m->obs_fields[0]->encoding = VOLLEY__ENCODING__U8; // 65 x 60000 bytes claimed ...
        m->obs_fields[0]->shape[0] = 60000;
        m->raw_size = (T + 1) * 60000 + 13 * T;
        m->payload.data = s_bomb; // ... from 10 bytes: more than LZ4's 255:1
        m->payload.len = sizeof s_bomb;
    } else if (strcmp(fault, "seg-corrupt") == 0)
        memset(m->payload.data, 0xff, m->payload.len);
    else if (strcmp(fault, "seg-nan-reward") == 0)
        s_edit_payload(m, s_nan_reward);
    else if (strcmp(fault, "seg-inf-obs") == 0)
        s_edit_payload(m, s_inf_obs);
    else if (strcmp(fault, "seg-action") == 0)
        s_edit_payload(m, s_bad_action);
    else if (strcmp(fault, "seg-unknown-policy") != 0 && strcmp(fault, "seg-stale") != 0 &&
             strcmp(fault, "seg-spec") != 0)
        rc = -1; // those three are valid segments: of a policy nobody serves, of version 0,
                 // of another horizon than the policy's
    if (rc == 0)
        s_send_msg(push, &m->base);
    s_free_segment(m, payload, policy_id);
    return rc;
}

/* Sends a control-port fault: bad verbs, frames, beats, pause requests.
   The broker's ERROR replies are left unread. -1 for an unknown fault. */
static int s_control_fault(void *control, const char *fault)
{
    char verb[100];
    memset(verb, 'V', sizeof verb);
    Volley__Beat beat = VOLLEY__BEAT__INIT;
    beat.schema = VL_SCHEMA_VERSION;
    beat.policy_id = "default";
    beat.apply_ms = NAN;
    const char *arg = NULL;
    if (strcmp(fault, "cmd-verb") == 0)
        zmq_send(control, "FROB", 4, 0);
    else if (strcmp(fault, "cmd-long-verb") == 0)
        zmq_send(control, verb, sizeof verb, 0);
    else if (strcmp(fault, "cmd-frames") == 0) {
        zmq_send(control, VL_VERB_STATUS, strlen(VL_VERB_STATUS), ZMQ_SNDMORE);
        zmq_send(control, "a", 1, ZMQ_SNDMORE);
        zmq_send(control, "b", 1, 0);
    } else if (strcmp(fault, "beat-garbage") == 0)
        arg = "\xff\xff\xff garbage";
    else if (strcmp(fault, "beat-missing") == 0)
        zmq_send(control, VL_VERB_BEAT, strlen(VL_VERB_BEAT), 0);
    else if (strcmp(fault, "pause-unknown") == 0) {
        zmq_send(control, VL_VERB_PAUSE, strlen(VL_VERB_PAUSE), ZMQ_SNDMORE);
        zmq_send(control, "nobody", 6, 0);
    } else if (strcmp(fault, "pause-policy") == 0) {
        zmq_send(control, VL_VERB_PAUSE, strlen(VL_VERB_PAUSE), ZMQ_SNDMORE);
        zmq_send(control, "bad\n", 4, 0);
    } else if (strcmp(fault, "beat-spec") == 0) { // a valid beat declaring another horizon
        beat.apply_ms = 0;
        beat.actor_id = 999;
        vl_spec_t spec = {.policy_id = "default", .horizon = T / 2, .hidden = 64};
        spec.action = vl_action_discrete(2);
        spec.obs_spec = vl_obs_spec_flat(D);
        Volley__Spec msg;
        Volley__ObsField fields[VL_OBS_FIELDS_MAX], *ptrs[VL_OBS_FIELDS_MAX];
        Volley__ActionSpace action;
        vl_spec_to_msg(&spec, &msg, fields, ptrs, &action);
        beat.spec = &msg;
        zmq_send(control, VL_VERB_BEAT, strlen(VL_VERB_BEAT), ZMQ_SNDMORE);
        s_send_msg(control, &beat.base);
    } else if (strcmp(fault, "beat-model") == 0) { // policy "badmodel": a model that is no spec
        beat.apply_ms = 0;
        beat.actor_id = 998;
        beat.policy_id = "badmodel";
        vl_spec_t spec = {
            .policy_id = "badmodel", .horizon = T, .hidden = 64, .model = "linear(3x) tanh"};
        spec.action = vl_action_discrete(2);
        spec.obs_spec = vl_obs_spec_flat(D);
        Volley__Spec msg;
        Volley__ObsField fields[VL_OBS_FIELDS_MAX], *ptrs[VL_OBS_FIELDS_MAX];
        Volley__ActionSpace action;
        vl_spec_to_msg(&spec, &msg, fields, ptrs, &action);
        beat.spec = &msg;
        zmq_send(control, VL_VERB_BEAT, strlen(VL_VERB_BEAT), ZMQ_SNDMORE);
        s_send_msg(control, &beat.base);
    } else if (strcmp(fault, "beat-nan") != 0)
        return -1;
    if (arg) {
        zmq_send(control, VL_VERB_BEAT, strlen(VL_VERB_BEAT), ZMQ_SNDMORE);
        zmq_send(control, arg, strlen(arg), 0);
    } else if (strcmp(fault, "beat-nan") == 0) {
        zmq_send(control, VL_VERB_BEAT, strlen(VL_VERB_BEAT), ZMQ_SNDMORE);
        s_send_msg(control, &beat.base);
    }
    return 0;
}

/* Sends raw bytes or a Hello/publication fault; -1 for an unknown fault. */
static int s_other_fault(s_socks_t *s, const char *fault)
{
    uint8_t junk[97];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (uint8_t)(i * 37 + 11);
    Volley__Hello hello = VOLLEY__HELLO__INIT;
    hello.schema = VL_SCHEMA_VERSION;
    hello.policy_id = "default";
    if (strcmp(fault, "seg-garbage") == 0)
        zmq_send(s->push, junk, sizeof junk, 0);
    else if (strcmp(fault, "seg-truncated") == 0) {
        Volley__Segment *m = s_segment("default");
        uint8_t *buf;
        size_t size;
        vl_wire_pack(&m->base, &buf, &size);
        zmq_send(s->push, buf, size / 2, 0);
        free(buf);
        volley__segment__free_unpacked(m, NULL);
    } else if (strcmp(fault, "seg-multipart") == 0) {
        zmq_send(s->push, junk, 8, ZMQ_SNDMORE);
        zmq_send(s->push, junk, 8, 0);
    } else if (strcmp(fault, "hello-garbage") == 0)
        zmq_send(s->dealer, junk, sizeof junk, 0);
    else if (strcmp(fault, "hello-version") == 0) {
        hello.schema = 99;
        s_send_msg(s->dealer, &hello.base);
    } else if (strcmp(fault, "hello-policy") == 0) {
        hello.policy_id = "";
        s_send_msg(s->dealer, &hello.base);
    } else
        return -1;
    return 0;
}

/* Packs weights for policy "default" whose one tensor has the n dims
   given (a payload of junk: the shape is refused before the block is
   read) into *buf (caller frees). */
static void s_bad_shape_weights(const uint32_t *dims, size_t n, uint8_t **buf, size_t *size)
{
    static uint8_t junk[8] = {0x10};
    Volley__Tensor t = VOLLEY__TENSOR__INIT;
    Volley__Tensor *ts[1] = {&t};
    Volley__Weights w = VOLLEY__WEIGHTS__INIT;
    t.name = "conv.0.0.weight";
    t.shape = (uint32_t *)dims;
    t.n_shape = n;
    t.raw_size = 24;
    t.payload = (ProtobufCBinaryData){sizeof junk, junk};
    w.schema = VL_SCHEMA_VERSION;
    w.policy_id = "default";
    w.version = 1000000;
    w.n_tensors = 1;
    w.tensors = ts;
    if (vl_wire_pack(&w.base, buf, size) != 0)
        *buf = NULL, *size = 0;
}

/* Sends a publication fault on the learners' PUB side; -1 if unknown. */
static int s_publication_fault(void *pub, const char *fault)
{
    float data[6] = {1, 2, 3, 4, 5, NAN};
    vl_tensor_t t = {.name = "pi.0.bias", .rows = 6, .cols = 1, .ndim = 1, .data = data};
    uint8_t *buf = NULL, junk[33] = {0xde, 0xad};
    size_t size = 0;
    const char *topic = "default";
    if (strcmp(fault, "pub-garbage") == 0) {
        buf = malloc(sizeof junk);
        memcpy(buf, junk, size = sizeof junk);
    } else if (strcmp(fault, "pub-nan-weights") == 0)
        vl_weights_encode("default", 1000000, &t, 1, &buf, &size);
    else if (strcmp(fault, "pub-rank5") == 0) // five dims, as many floats as [6]
        s_bad_shape_weights((const uint32_t[]){1, 1, 1, 2, 3}, 5, &buf, &size);
    else if (strcmp(fault, "pub-dims-overflow") == 0) // 2^64 floats: 0 in 64-bit arithmetic
        s_bad_shape_weights((const uint32_t[]){65536, 65536, 65536, 65536}, 4, &buf, &size);
    else if (strcmp(fault, "pub-mismatch") == 0) {
        data[5] = 6;
        vl_weights_encode("other", 1000000, &t, 1, &buf, &size);
    } else if (strcmp(fault, "pub-stats-nan") == 0) {
        vl_stats_t st = {.policy_id = "default", .mean_return = NAN};
        topic = VL_STATS_TOPIC;
        vl_stats_encode(&st, &buf, &size);
    } else if (strcmp(fault, "pub-one-frame") == 0) {
        zmq_send(pub, "default", 7, 0);
        return 0;
    } else
        return -1;
    zmq_send(pub, topic, strlen(topic), ZMQ_SNDMORE);
    zmq_send(pub, buf, size, 0);
    free(buf);
    return 0;
}

/* Returns a socket of type with no bound on its send queue (a SUB would
   drop subscriptions beyond it), not yet connected. NULL on error. */
static void *s_unbounded(void *ctx, int type)
{
    void *sock = zmq_socket(ctx, type);
    int zero = 0;
    if (!sock)
        return NULL;
    zmq_setsockopt(sock, ZMQ_SNDHWM, &zero, sizeof zero);
    zmq_setsockopt(sock, ZMQ_LINGER, &zero, sizeof zero);
    return sock;
}

/* Connects sock to broker's port offset. Returns sock, or NULL on error. */
static void *s_connect(void *sock, const char *broker, int offset)
{
    char endpoint[512];
    if (!sock || vl_opt_endpoint("inject", broker, offset, endpoint, sizeof endpoint) != 0 ||
        zmq_connect(sock, endpoint) != 0)
        return NULL;
    return sock;
}

/* Connects a socket of type to broker's port offset with no bound on its
   send queue. NULL on error. */
static void *s_connect_unbounded(void *ctx, int type, const char *broker, int offset)
{
    return s_connect(s_unbounded(ctx, type), broker, offset);
}

/* Subscribes n made-up topics of len bytes each (n <= 10^7, len 8..4096):
   numbered ("N:LEN", topics share long prefixes) or, with "N:LEN:random",
   each starting with 16 random letters (no two share a prefix beyond a few
   bytes: the most nodes a prefix tree can be made to hold per byte). All are
   made before the socket connects, so each connection (and each reconnection
   after the broker cuts one) sends the whole set at once. */
static void s_sub_flood(void *ctx, const char *broker, const char *arg)
{
    long n = 0, len = 0;
    char kind[16] = "";
    if (sscanf(arg, "%ld:%ld:%15s", &n, &len, kind) < 2 || n < 1 || n > 10000000 || len < 8 ||
        len > 4096)
        return;
    int random = strcmp(kind, "random") == 0;
    void *sub = s_unbounded(ctx, ZMQ_SUB);
    char *topic = malloc((size_t)len);
    if (!sub || !topic) {
        free(topic);
        return;
    }
    memset(topic, 't', (size_t)len);
    static uint64_t floods; // each flood its own topics; the same ones every run
    uint64_t x = 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull * ++floods; // xorshift64
    for (long i = 0; i < n; i++) {
        snprintf(topic, (size_t)len, "%07ld", i);
        topic[7] = 'x';
        for (int k = 0; random && k < 16 && k < len; k++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            topic[k] = (char)('a' + x % 26);
        }
        zmq_setsockopt(sub, ZMQ_SUBSCRIBE, topic, (size_t)len);
    }
    free(topic);
    if (!s_connect(sub, broker, VL_PORT_WEIGHTS_OUT)) {
        zmq_close(sub);
        return;
    }
    printf("flooding with %ld subscriptions of %ld bytes\n", n, len);
    s_hold(sub); // kept subscribed until the end (hold=S)
}

/* Subscribes to and unsubscribes from the policy's topic n times. */
static void s_sub_churn(void *ctx, const char *broker, const char *arg)
{
    long n = atol(arg);
    void *sub = s_connect_unbounded(ctx, ZMQ_SUB, broker, VL_PORT_WEIGHTS_OUT);
    usleep(200 * 1000);
    for (long i = 0; i < n; i++) {
        zmq_setsockopt(sub, ZMQ_SUBSCRIBE, "default", 7);
        zmq_setsockopt(sub, ZMQ_UNSUBSCRIBE, "default", 7);
    }
    s_hold(sub);
}

/* Subscribes to the policy and prints how many messages arrive in arg seconds. */
static void s_listen(void *ctx, const char *broker, const char *arg)
{
    double secs = atof(arg);
    void *sub = vl_sock_connect(ctx, ZMQ_SUB, broker, VL_PORT_WEIGHTS_OUT, 0, 64 << 20);
    zmq_setsockopt(sub, ZMQ_SUBSCRIBE, "default", 7);
    int timeout = 100;
    zmq_setsockopt(sub, ZMQ_RCVTIMEO, &timeout, sizeof timeout);
    int64_t end = vl_now_ns() + (int64_t)(secs * 1e9);
    long got = 0;
    zmq_msg_t m;
    zmq_msg_init(&m);
    while (vl_now_ns() < end)
        if (zmq_msg_recv(&m, sub, 0) >= 0 && !zmq_msg_more(&m))
            got++;
    zmq_msg_close(&m);
    printf("listened %.1f s: %ld messages (%.1f/s)\n", secs, got, got / secs);
    zmq_close(sub);
}

/* Subscribes to the policy's topic and the stats topic on one connection,
   both sent at once as a late joiner's are, and counts what each brings in
   secs seconds. */
static void s_late_join(void *ctx, const char *broker, const char *arg)
{
    double secs = atof(arg);
    void *sub = s_unbounded(ctx, ZMQ_SUB);
    if (!sub)
        return;
    zmq_setsockopt(sub, ZMQ_SUBSCRIBE, "default", 7);
    zmq_setsockopt(sub, ZMQ_SUBSCRIBE, VL_STATS_TOPIC, strlen(VL_STATS_TOPIC));
    int timeout = 100;
    zmq_setsockopt(sub, ZMQ_RCVTIMEO, &timeout, sizeof timeout);
    s_connect(sub, broker, VL_PORT_WEIGHTS_OUT);
    int64_t end = vl_now_ns() + (int64_t)(secs * 1e9);
    long weights = 0, stats = 0;
    zmq_msg_t m;
    zmq_msg_init(&m);
    while (vl_now_ns() < end)
        if (zmq_msg_recv(&m, sub, 0) >= 0 && zmq_msg_more(&m)) {
            int is_stats = zmq_msg_size(&m) == strlen(VL_STATS_TOPIC) &&
                           memcmp(zmq_msg_data(&m), VL_STATS_TOPIC, zmq_msg_size(&m)) == 0;
            stats += is_stats;
            weights += !is_stats;
            while (zmq_msg_more(&m) && zmq_msg_recv(&m, sub, 0) >= 0)
                ; // the body
        }
    zmq_msg_close(&m);
    printf("late joiner got %ld weights and %ld stats in %.1f s\n", weights, stats, secs);
    zmq_close(sub);
}

/* Sends n messages that are no subscription to the weights-out port. */
static void s_xpub_junk(void *ctx, const char *broker, const char *arg)
{
    long n = atol(arg);
    void *x = vl_sock_connect(ctx, ZMQ_XSUB, broker, VL_PORT_WEIGHTS_OUT, 2000, 1 << 20);
    usleep(200 * 1000);
    for (long i = 0; i < n; i++)
        zmq_send(x, "\x42junk", 5, 0);
    s_hold(x);
}

/* Takes a real weights message of the policy from the broker and publishes
   it again with version arg. */
static void s_pub_forged(void *ctx, void *pub, const char *broker, const char *arg)
{
    uint64_t version = strtoull(arg, NULL, 10);
    void *sub = vl_sock_connect(ctx, ZMQ_SUB, broker, VL_PORT_WEIGHTS_OUT, 0, 64 << 20);
    zmq_setsockopt(sub, ZMQ_SUBSCRIBE, "default", 7);
    int timeout = 5000;
    zmq_setsockopt(sub, ZMQ_RCVTIMEO, &timeout, sizeof timeout);
    zmq_msg_t t, b;
    zmq_msg_init(&t);
    zmq_msg_init(&b);
    vl_limits_t lim = vl_limits_default();
    vl_weights_t *w = NULL;
    if (zmq_msg_recv(&t, sub, 0) >= 0 && zmq_msg_recv(&b, sub, 0) >= 0 &&
        vl_weights_decode(zmq_msg_data(&b), zmq_msg_size(&b), &lim, &w) == VL_OK) {
        uint8_t *buf;
        size_t size;
        if (vl_weights_encode("default", version, w->tensors, w->n_tensors, &buf, &size) == 0) {
            zmq_send(pub, "default", 7, ZMQ_SNDMORE);
            zmq_send(pub, buf, size, 0);
            free(buf);
            printf("forged weights version %llu from a real one (version %llu)\n",
                   (unsigned long long)version, (unsigned long long)w->version);
        }
    } else {
        printf("no weights to forge from\n");
    }
    vl_weights_destroy(&w);
    zmq_msg_close(&t);
    zmq_msg_close(&b);
    zmq_close(sub);
}

/* Sends n valid Hellos for the policy, 200 ms apart, from one connection. */
static void s_hello_forged(void *dealer, const char *arg)
{
    long n = atol(arg);
    for (long i = 0; i < n; i++) {
        uint8_t *buf;
        size_t size;
        if (vl_hello_encode("default", &buf, &size) == 0) {
            zmq_send(dealer, buf, size, 0);
            free(buf);
        }
        usleep(200 * 1000);
    }
}

/* Sends n segments that pass every limit and the LZ4 ratio: horizon 900,
   2-bit observations of 65536 values, 15 MB of payload from ~60 KB
   (~250 MB of arrays once unpacked); the policy's spec (horizon 64, 4
   floats) implies 17 KB. */
static void s_seg_huge(void *push, const char *arg)
{
    long n = atol(arg);
    const char *colon = strchr(arg, ':'); // N:POLICY: another policy than default
    const uint32_t h = 900, dim = 65536;
    Volley__Segment *m = s_segment(colon ? colon + 1 : "default");
    uint8_t *payload = m->payload.data;
    char *policy_id = m->policy_id; // protobuf-c frees what it allocated
    uint32_t *shape = m->obs_fields[0]->shape, huge_shape[1] = {dim};
    size_t n_shape = m->obs_fields[0]->n_shape;
    m->obs_fields[0]->encoding = VOLLEY__ENCODING__U2;
    m->obs_fields[0]->shape = huge_shape;
    m->obs_fields[0]->n_shape = 1;
    m->horizon = h;
    m->raw_size = (h + 1) * (dim / 4) + 13 * h;
    uint8_t *raw = calloc(1, m->raw_size);
    int cap = LZ4_compressBound((int)m->raw_size);
    uint8_t *block = malloc((size_t)cap);
    m->payload.len =
        (size_t)LZ4_compress_default((char *)raw, (char *)block, (int)m->raw_size, cap);
    m->payload.data = block;
    for (long i = 0; i < n; i++)
        s_send_msg(push, &m->base);
    printf("sent %ld segments of %zu bytes declaring %u bytes\n", n, m->payload.len, m->raw_size);
    free(raw);
    free(block);
    m->policy_id = policy_id;
    m->obs_fields[0]->shape = shape;
    m->obs_fields[0]->n_shape = n_shape;
    m->payload.data = payload;
    volley__segment__free_unpacked(m, NULL);
}

/* Runs an attack FAULT=ARG. Returns 0, or -1 if FAULT is none. */
static int s_attack(void *ctx, s_socks_t *s, const char *broker, const char *f)
{
    const char *eq = strchr(f, '=');
    if (!eq)
        return -1;
    const char *arg = eq + 1;
    size_t n = (size_t)(eq - f);
    if (n == 9 && strncmp(f, "sub-flood", n) == 0)
        s_sub_flood(ctx, broker, arg);
    else if (n == 9 && strncmp(f, "sub-churn", n) == 0)
        s_sub_churn(ctx, broker, arg);
    else if (n == 9 && strncmp(f, "late-join", n) == 0)
        s_late_join(ctx, broker, arg);
    else if (n == 6 && strncmp(f, "listen", n) == 0)
        s_listen(ctx, broker, arg);
    else if (n == 9 && strncmp(f, "xpub-junk", n) == 0)
        s_xpub_junk(ctx, broker, arg);
    else if (n == 10 && strncmp(f, "pub-forged", n) == 0)
        s_pub_forged(ctx, s->pub, broker, arg);
    else if (n == 12 && strncmp(f, "hello-forged", n) == 0)
        s_hello_forged(s->dealer, arg);
    else if (n == 8 && strncmp(f, "seg-huge", n) == 0)
        s_seg_huge(s->push, arg);
    else if (n == 4 && strncmp(f, "hold", n) == 0)
        usleep((useconds_t)(atof(arg) * 1e6));
    else
        return -1;
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: vl_inject HOST:PORT FAULT...\n");
        return 2;
    }
    vl_curve_t *curve = NULL;
    if (vl_sock_client_curve(getenv("VL_INJECT_CERT"), getenv("VL_INJECT_BROKER_KEY"), &curve))
        return 1;
    void *ctx = zmq_ctx_new();
    s_socks_t s = {vl_sock_connect(ctx, ZMQ_PUSH, argv[1], VL_PORT_SEGMENTS, 2000, 1 << 20),
                   vl_sock_connect(ctx, ZMQ_DEALER, argv[1], VL_PORT_LEARNERS, 2000, 1 << 20),
                   vl_sock_connect(ctx, ZMQ_PUB, argv[1], VL_PORT_WEIGHTS_IN, 2000, 1 << 20),
                   vl_sock_connect(ctx, ZMQ_DEALER, argv[1], VL_PORT_CONTROL, 2000, 1 << 20)};
    if (!s.push || !s.dealer || !s.pub || !s.control)
        return 1;
    usleep(500 * 1000); // let the broker's subscribe-all reach our PUB
    int rc = 0;
    for (int i = 2; i < argc; i++) {
        const char *f = argv[i];
        int r = strchr(f, '=') ? s_attack(ctx, &s, argv[1], f)
                : strncmp(f, "seg-", 4) == 0 && s_segment_fault(s.push, f) == 0 ? 0
                : strncmp(f, "pub-", 4) == 0         ? s_publication_fault(s.pub, f)
                : s_control_fault(s.control, f) == 0 ? 0
                                                     : s_other_fault(&s, f);
        if (r != 0) {
            fprintf(stderr, "vl_inject: unknown fault '%s'\n", f);
            rc = 2;
        }
    }
    zmq_close(s.push);
    zmq_close(s.dealer);
    zmq_close(s.pub);
    zmq_close(s.control);
    for (int i = 0; i < s_n_held; i++)
        zmq_close(s_held[i]);
    zmq_ctx_term(ctx); // lingers until everything is sent
    vl_sock_client_curve_end(&curve);
    return rc;
}
