/*  vl_broker_engine: the broker's private parts, shared by its modules: the
    engine (vl_broker.c: sockets, poll loop, start, stop), the learner table
    and routing (vl_broker_learners.c), the last-value cache
    (vl_broker_lvc.c), the control verbs (vl_broker_control.c) and the books
    (vl_broker_books.c). Not a public header. */
#ifndef VL_BROKER_ENGINE_H
#define VL_BROKER_ENGINE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <zmq.h>

#include "../common/vl_curve.h"
#include "../messages/vl_codec.h"
#include "vl_broker.h"
#include "vl_conns.h"
#include "vl_inspect.h"
#include "vl_notify.h"
#include "vl_recorder.h"
#include "vl_roles.h"
#include "vl_roster.h"
#include "vl_specs.h"

#define VLB_MAX_LEARNERS       64
#define VLB_MAX_TOPICS         256          // last-value cache entries (policies + stats)
#define VLB_IDENTITY_MAX       256          // libzmq routing ids are at most 255 bytes
#define VLB_LEARNER_TIMEOUT_NS 5000000000LL // a learner says hello every second
#define VLB_ACTOR_TIMEOUT_NS   5000000000LL // an actor beats every second
// For this long after the broker starts, segments of a policy no learner has claimed yet are
// held for it (in a queue like a learner's, dropped if none claims it in VLB_LEARNER_TIMEOUT_NS):
// after a broker restart, actors flush what they held before the learner has said hello.
#define VLB_STARTUP_GRACE_NS 3000000000LL
#define VLB_MAX_UNCLAIMED    4 // policies held for at once that way: a bound on what anyone can park
#define VLB_WINDOW_NS        1000000000LL // rates are over windows of this length
#define VLB_VERB_MAX         16           // longest control verb
#define VLB_BATCH            256          // messages taken per socket per poll wake-up
#define VLB_MAX_ARRAYS       (256u << 20) // largest decoded segment inspected
// Bytes a queued segment is charged beyond its size: our node (zmq_msg_t and a link) and
// libzmq's content header, each with its malloc header, so the byte bound bounds memory.
#define VLB_QUEUED_OVERHEAD 128
// libzmq receives small messages into shared 8 KiB-ish batch buffers and hands them out by
// reference: one queued 1 KiB segment can keep a whole buffer alive. Queued messages below
// this size are copied out, so the queue's byte bound is what it holds.
#define VLB_COPY_BELOW (64 << 10)
#define VLB_MAX_SPECS  256 // policies with a declared spec
// Distinct refusal texts counted by name (a field with both values); more are counted under
// the codec's "not what this receiver serves", so no sender can grow the table.
#define VLB_TEXT_DROPS      64
#define VLB_LEARNER_REASONS VL_REFUSALS_MAX // a learner's refusal rows the broker follows
// Subscriptions: libzmq keeps every topic a subscriber names, so the broker takes them by
// hand (XPUB_MANUAL) and holds at most this many distinct topics (policy ids and the stats
// topic, each shorter than VL_POLICY_ID_MAX) for everyone; any one connection holds no more.
#define VLB_MAX_SUB_TOPICS 256
// libzmq keeps every subscription of a connection (even under XPUB_MANUAL) until it closes:
// a connection that subscribes more than this often is cut (its subscriptions go with it).
#define VLB_SUBS_PER_CONN 64
#define VLB_CONN_FDS_MAX                                                                           \
    (1 << 20) // descriptors followed at most (the table is sized by
              // RLIMIT_NOFILE: every connection the process can have)
// libzmq files every subscription it reads (XPUB_MANUAL too) in a prefix tree of a node per
// topic byte before the broker sees it, so what a connection may send is bounded where libzmq
// reads it: a message over this is the end of the connection. The longest subscription the
// broker takes is the ZMTP 3.1 SUBSCRIBE command ("\x09SUBSCRIBE", 10 bytes) with a topic of
// VL_POLICY_ID_MAX - 1 bytes; an older peer's "\x01" + topic is shorter, and so are the
// handshake's READY and the heartbeats.
#define VLB_SUB_MSG_MAX (10 + VL_POLICY_ID_MAX - 1)
// Under CURVE the bound holds for the handshake too, whose INITIATE is 257 bytes plus the
// client's metadata: this leaves room for that. Only a key of the allow directory gets past
// it, and the broker cuts its connection at the first topic over VL_POLICY_ID_MAX - 1 bytes.
#define VLB_SUB_MSG_MAX_CURVE 512
// libzmq files every subscription it reads from a connection in its own table (XPUB_MANUAL
// too) before the broker sees it, and reads as long as the connection's queue has room. A
// queue this short paces a connection's subscriptions to the broker's own reading, so the
// per-connection cut comes after about VLB_SUBS_PER_CONN of them, not after a whole flood.
#define VLB_SUB_RCVHWM 4
// A subscription is answered with the cached last values (a late joiner's weights); each
// resend goes to every subscriber of the topic, so churn would multiply traffic: a connection
// gets at most one resend per VLB_RESEND_GAP_NS after a first VLB_RESEND_BURST (a subscriber
// names a few topics at once: its policy and the stats topic), and all together at most
// VLB_RESENDS_PER_S a second (a subscriber refused one gets the next publication, within a
// second).
#define VLB_RESEND_GAP_NS 1000000000LL
#define VLB_RESEND_BURST  4
#define VLB_RESENDS_PER_S 50
// A segment of a policy with no declared spec may take at most this many bytes of arrays
// (declared payload and decoded arrays alike); a policy's spec sets its own ceiling: exactly
// what its horizon and fields take. Checked before anything is decompressed or reserved.
#define VLB_NO_SPEC_MAX (16u << 20)

/* Why a message was dropped: the codec's reasons, then the broker's own. */
enum {
    VLB_DROP_NO_LEARNER = VL_EREASONS,
    VLB_DROP_QUEUE_FULL,  // libzmq's send queue (--hwm) full
    VLB_DROP_QUEUE_BYTES, // oldest pushed out of the learner's queue (--queue-bytes)
    VLB_DROP_GONE,        // queued for a learner that went silent or was replaced
    VLB_DROP_STALE,       // policy version older than the newest by more than --max-lag
    VLB_DROP_VERB,        // a control request with an unknown verb
    VLB_DROP_ROLE,        // the peer's role (key, or address on an open broker) does not allow it
    VLB_DROP_HELD,        // a hello for a policy another live learner holds
    VLB_DROP_NOT_HOLDER,  // a publication from a peer that does not hold the policy's hello
    VLB_DROP_OLD_VERSION, // weights not newer than the last accepted from that learner
    VLB_DROP_TOPIC,       // a subscription to a topic that is no policy id (or too long)
    VLB_DROP_TOPICS,      // a subscription beyond the bound on topics held
    VLB_DROP_RESEND,      // a cached-value resend beyond its rate (the subscription stands)
    VLB_DROP_JUNK,        // a message on the weights-out port that is no subscription
    VLB_DROP_PER_CONN,    // subscriptions beyond VLB_SUBS_PER_CONN: the connection is cut
    VLB_DROP_CEILING,     // a segment declaring more than its policy's spec implies
    VLB_DROP_CONNS_ADDR,  // a connection beyond --max-conns-per-addr from its address
    VLB_DROP_CONNS,       // a connection beyond --max-conns on its port
    VLB_DROP_REASONS
};

/* What was dropped, for counting and logging. */
enum {
    VLB_SEGMENT,
    VLB_HELLO,
    VLB_CREDIT,
    VLB_PUBLICATION,
    VLB_COMMAND,
    VLB_SPEC,
    VLB_SUBSCRIPTION,
    VLB_CONNECTION,
    VLB_KINDS
};

/* Why a learner dropped segments the broker had routed to it: its Stats'
   causes, booked apart from the broker's own drops (after routing). */
enum {
    VLB_LEARNER_LAG,
    VLB_LEARNER_CAPACITY,
    VLB_LEARNER_BUDGET,
    VLB_LEARNER_INVALID,
    VLB_LEARNER_CAUSES
};

/* A drop counted under a reason text that names the field and its values. */
typedef struct {
    int kind;
    char text[VL_SPEC_REASON_MAX];
    uint64_t count;
} vlb_text_drop_t;

/* What the broker has counted of one refusal row of a learner's stats. */
typedef struct {
    uint32_t actor_id;
    char reason[VL_REFUSAL_TEXT_MAX];
    uint64_t counted;
} vlb_seen_refusal_t;

/* A segment waiting for its learner's credit. */
typedef struct vlb_queued_s {
    zmq_msg_t msg;
    struct vlb_queued_s *next;
} vlb_queued_t;

typedef struct {
    char policy[VL_POLICY_ID_MAX];
    uint8_t id[VLB_IDENTITY_MAX];
    size_t id_len;
    int64_t seen_ns;           // monotonic, last hello
    int credited;              // 1 once a Credit on this connection set `sent`'s base
    uint64_t granted;          // the connection's latest total_granted
    uint64_t sent;             // counted like the learner's total_received
    vlb_queued_t *head, *tail; // waiting for credit, oldest first
    uint64_t queued;           // segments in the queue
    size_t queued_bytes;       // their sizes plus VLB_QUEUED_OVERHEAD each
    int paused;                // 1: hold its segments in the queue (control PAUSE)
    uint64_t delivered;        // segments sent to it
    uint64_t win_delivered;    // in the current rate window
    float delivered_per_s;     // over the last window
    uint64_t newest_version;   // of the weights it published, as accepted (--max-lag's base)
    char holder[VL_PEER_MAX];  // the peer (key or address) whose hello holds the policy
    uint64_t epoch;            // new for each connection that takes the policy: versions
                               // start again in a new epoch, never within one
    uint64_t base_received;    // the learner's total_received at its first credit here
    int have_stats;
    vl_stats_t stats;                                 // the last it published
    vlb_seen_refusal_t refusals[VLB_LEARNER_REASONS]; // its refusals counted so far
    int n_refusals;
} vlb_learner_t;

typedef struct {
    zmq_msg_t topic;
    zmq_msg_t body;
} vlb_cached_t;

#define VLB_PORTS 5 // segments, learners, weights in, weights out, control

struct vl_broker_s {
    void *ctx;
    int own_ctx;       // 0: czmq's, shared with the authenticator
    vl_curve_t *curve; // NULL: no security
    void *pull;        // segments from actors
    void *router;      // learners: hellos in, segments out
    void *xsub;        // weights and stats from learners
    void *xpub;        // weights and stats to actors and monitors
    void *control;     // beats, status, pause/resume, shutdown
    vl_limits_t limits;
    vlb_learner_t learners[VLB_MAX_LEARNERS];
    int n_learners;
    vlb_cached_t cache[VLB_MAX_TOPICS];
    int n_cached;
    char sub_topics[VLB_MAX_SUB_TOPICS][VL_POLICY_ID_MAX]; // topics subscribers may hold
    int n_sub_topics;
    int n_fds;              // descriptors followed: the process's RLIMIT_NOFILE
    uint16_t *subs_by_fd;   // subscriptions made on each connection (by file descriptor)
    uint32_t *conn_by_fd;   // a hash of each descriptor's peer, to see a descriptor reused
    int64_t *resent_by_fd;  // monotonic, when each connection's cached-value resends are paid off
    vl_conns_t *conns;      // open connections by port and address
    int max_conns;          // per port
    int max_conns_per_addr; // per port and source address
    void *monitors[VLB_PORTS]; // each port's connection events
    int n_monitors;
    int64_t trim_until_ns;    // monotonic: freed memory is handed back until then
    int64_t trimmed_ns;       // monotonic, when it last was
    int64_t resend_window_ns; // monotonic, start of the current resend window
    int resends;              // cached-value resends in it
    vl_inspect_t *inspect;
    size_t queue_bytes; // bound of each learner's queue
    uint64_t max_lag;   // 0: no bound
    int64_t log_every_ns;
    vl_roster_t *roster;
    vl_roles_t *roles;   // who each peer is and what it may do
    uint64_t epochs;     // learner epochs begun (the last one's number)
    vl_specs_t *specs;   // each policy's spec
    vl_notify_t *notify; // where to tell an actor it was refused
    vlb_text_drop_t text_drops[VLB_TEXT_DROPS];
    int n_text_drops;
    vl_recorder_t *recorder;                // NULL: not recording
    int64_t start_ns, window_ns, logged_ns; // monotonic
    uint64_t win_received;
    float received_per_s;
    int shutdown;    // a SHUTDOWN request came
    atomic_int stop; // vl_broker_stop was called (from any thread or a signal handler)
    int warned_full; // the learner table was full (logged once)
    uint64_t received;
    uint64_t routed;
    uint64_t dropped[VLB_KINDS][VLB_DROP_REASONS];
    uint64_t learner_gone[VLB_LEARNER_CAUSES]; // drops of learner connections that ended, by
                                               // cause, as their last stats said
};

/* books (vl_broker_books.c) */

/* Returns the text of a drop reason (the codec's or the broker's own). */
const char *vl_books_reason_str(int reason);
/* Counts a dropped message of a kind; the first of each kind and reason is logged. */
void vl_books_drop(vl_broker_t *self, int kind, int reason, const char *policy);
/* Counts a refusal of a peer by role or bound: under kind and reason, and
   logged once per peer, naming it. */
void vl_books_refuse_peer(vl_broker_t *self, int kind, int reason, const vl_peer_t *peer,
                          const char *policy);
/* Counts n drops under a reason text; the first of each text is logged. */
void vl_books_drop_text(vl_broker_t *self, int kind, const char *text, uint64_t n);
/* Returns the number of segments queued for all learners. */
uint64_t vl_books_queued(const vl_broker_t *self);
/* Returns the number of segments dropped, all reasons. */
uint64_t vl_books_dropped(const vl_broker_t *self);
/* Fills out[VLB_LEARNER_CAUSES] with what a learner's newest stats say it
   dropped after routing, by cause: its invalid ones less those its refusal
   rows already booked as segment drops. All 0 without stats. */
void vl_books_learner_drops(const vlb_learner_t *l, uint64_t *out);
/* Keeps in the books the drops of a learner connection that ends (replaced or removed). */
void vl_books_learner_gone(vl_broker_t *self, const vlb_learner_t *l);
/* Fills out[VLB_LEARNER_CAUSES] with the learners' drops: those of connections
   gone plus the newest of those here. Returns their sum. */
uint64_t vl_books_learners_dropped(const vl_broker_t *self, uint64_t *out);
/* Encodes the broker's Status now into *buf (caller frees). Returns 0, or -1. */
int vl_books_status_encode(vl_broker_t *self, uint8_t **buf, size_t *size);
/* Logs the counters as key=value lines: one for the broker, one per learner. */
void vl_books_log_status(vl_broker_t *self);

/* learners and routing (vl_broker_learners.c) */

/* Returns the learner entry serving policy, or NULL. */
vlb_learner_t *vl_learners_find(vl_broker_t *self, const char *policy);
/* Forgets a learner, dropping what was queued for it; l then names another entry or none. */
void vl_learners_remove(vl_broker_t *self, vlb_learner_t *l, const char *why);
/* Returns how many more segments a learner can take now. */
uint64_t vl_learners_credit(const vlb_learner_t *l);
/* Sends queued segments while the learner has credit and is not paused. */
void vl_learners_drain(vl_broker_t *self, vlb_learner_t *l);
/* Frees every learner's queue without counting (the broker is ending). */
void vl_learners_free_queues(vl_broker_t *self);
/* Reads one [identity][hello or credit] from the learners' port. Returns 0, or -1 when empty. */
int vl_learners_recv(vl_broker_t *self);
/* Takes one segment from the actors and routes it. Returns 0, or -1 when none is waiting. */
int vl_learners_recv_segment(vl_broker_t *self);

/* last-value cache (vl_broker_lvc.c) */

/* Takes one publication from the learners. Returns 0, or -1 when none is waiting. */
int vl_lvc_recv_publication(vl_broker_t *self);
/* Reads one subscription event from the XPUB. Returns 0, or -1 when none. */
int vl_lvc_recv_subscription(vl_broker_t *self);
/* Frees the cached last values. */
void vl_lvc_free(vl_broker_t *self);

/* connections (vl_broker_conns.c) */

/* Watches the connections of socks[0 .. n) (the ports, in order) and
   creates the count. Returns 0, or -1 after logging. */
int vl_conns_watch(vl_broker_t *self, void *const *socks, int n);
/* Takes one connection event: counts an accepted connection or cuts it;
   counts one ended. Returns 0, or -1 when none is waiting. */
int vl_conns_recv(vl_broker_t *self);
/* Hands freed memory back to the system, at most once a second, for a few
   seconds after connections ended. */
void vl_conns_tick(vl_broker_t *self, int64_t now_ns);
/* Closes the monitors and frees the count. */
void vl_conns_unwatch(vl_broker_t *self);

/* control verbs (vl_broker_control.c) */

/* Reads and serves one [identity][verb][argument?] from the control port.
   Returns 0, or -1 when none is waiting. */
int vl_control_recv(vl_broker_t *self);

#endif
