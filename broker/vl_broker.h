/*  vl_broker: the one address every actor and learner knows. It pulls
    segments from actors, validates them and routes each to the learner that
    serves its policy as the learner's credit allows (segments beyond it wait
    in a queue bounded in bytes, oldest dropped first); it validates the weights and stats learners
   publish, carries them to subscribers (XSUB/XPUB) and keeps the last message of every topic, so a
   late subscriber gets the newest weights at once. Whatever fails validation is counted by kind and
   reason and dropped. */
#ifndef VL_BROKER_H
#define VL_BROKER_H

#include <stddef.h>
#include <stdint.h>

typedef struct vl_broker_s vl_broker_t;

typedef struct {
    const char *bind_host;  // interface to listen on, "*" for all
    int port;               // base port; the broker uses port .. port + 4
    int64_t max_msg;        // bytes; larger messages are refused by libzmq
    int sndhwm;             // messages queued per learner before drops
    int inspect_full;       // 1: decode every segment in full; 0: headers only
    size_t queue_bytes;     // bound of each learner's queue of segments waiting for credit
    uint64_t max_lag;       // drop segments this many versions behind the newest weights (0: never)
    int log_every_s;        // seconds between key=value status log lines (0: none)
    uint32_t max_actors;    // actors accounted for at once
    int max_conns;          // connections open at once on each port
    int max_conns_per_addr; // of them from one source address
    const char *record;     // file to record every segment message into (NULL: none)
    int record_flush;       // a vl_flush_t: when the recording reaches the disk
    const char *cert;       // CURVE: the broker's certificate (NULL: no security)
    const char *allow;      // CURVE: directory of the public certificates let in, with roles
    const char *trust;      // open broker: CIDRs trusted as learners and admins beyond loopback
} vl_broker_config_t;

/* Returns the defaults: all interfaces, port 7600, 64 MiB, 1000 messages,
   full inspection, 64 MiB queued per learner, no lag bound, status logged
   every 10 s, 4096 actors, 4096 connections per port and 256 of them
   per source address, no recording (flushed every second if on). */
vl_broker_config_t vl_broker_config_default(void);

/* Creates a broker and binds its sockets. Returns NULL after logging why
   (e.g. a port in use: errno EADDRINUSE, the first such port named). Caller
   destroys. */
vl_broker_t *vl_broker_new(const vl_broker_config_t *config);

/* Serves until vl_broker_stop is called or a SHUTDOWN request comes. Returns 0, or -1 on a
   socket error. */
int vl_broker_run(vl_broker_t *self);

/* Asks the broker to stop: vl_broker_run returns within its poll period (250 ms), at once if
   it has not started. Safe from another thread and from a signal handler. */
void vl_broker_stop(vl_broker_t *self);

/* Logs the broker's counters: segments received, routed, dropped and
   queued (the first is the sum of the others), and what was dropped, by kind
   (segments, hellos, credits, publications) and reason. */
void vl_broker_log_counters(const vl_broker_t *self);

/* Finishes the recording, if there is one: writes out what is queued,
   syncs and closes the file. Returns 0, or -1 if some message could not be
   recorded. */
int vl_broker_stop_recording(vl_broker_t *self);

/* Closes the sockets, frees the broker and nulls the pointer; safe twice. */
void vl_broker_destroy(vl_broker_t **self_p);

/* The `volley broker` command. Returns the process exit code. */
int vl_broker_main(int argc, char **argv);

#endif
