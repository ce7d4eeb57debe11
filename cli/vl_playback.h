/*  vl_playback: `volley replay FILE`, a recording played back: into a
    deterministic learner of its own (learner/vl_offline.h), printing the
    final weights' checksum as its last line, or into a running broker
    (--broker) for load tests with real traffic; as fast as possible or at
    the recorded pace. */
#ifndef VL_PLAYBACK_H
#define VL_PLAYBACK_H

/* The `volley replay` command. Returns 0 (a torn tail is replayed up to
   its last whole record and said), 1 on a corrupt or unreadable recording
   or a failed update, 2 on bad usage, 130 when interrupted (no checksum). */
int vl_playback_main(int argc, char **argv);

#endif
