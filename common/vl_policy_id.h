/*  vl_policy_id: the one rule for a policy id, shared by the wire's decoders,
    the broker, the learner and the command line. */
#ifndef VL_POLICY_ID_H
#define VL_POLICY_ID_H

#include <stddef.h>

#define VL_POLICY_ID_MAX 64 // bytes, including the terminating NUL

/* The one rule for a policy id, on the wire and on the command line: 1 to
   VL_POLICY_ID_MAX - 1 bytes, each printable ASCII other than space, the
   first not '~' (the broker's own topics, such as the stats topic, start with
   it). Reads exactly len bytes of id, which need not be NUL-terminated.
   Returns 1 if the id is valid, else 0; NULL gives 0. */
int vl_policy_id_valid(const char *id, size_t len);

/* Returns 1 if the NUL-terminated id (read to at most VL_POLICY_ID_MAX
   bytes) is valid by vl_policy_id_valid, else 0. */
int vl_policy_id_ok(const char *id);

#endif
