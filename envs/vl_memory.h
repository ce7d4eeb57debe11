/*  vl_memory: the layout and timing of the memory environment (vl_memory_env
    in volley/envs.h), a task that only a policy with memory can solve.

    An episode is VL_MEMORY_DELAY + 2 steps. The first observation shows a
    cue, one of VL_MEMORY_CUES drawn uniformly at each reset; the next
    VL_MEMORY_DELAY observations are blank; the last asks for the cue. The
    action (discrete, one choice per cue) taken on the query observation is
    the answer: +1 when it names the cue, -1 otherwise, and the episode ends
    (terminated). Actions taken on the cue and blank observations change
    nothing and pay 0.

    The observation is one f32 field of VL_MEMORY_OBS_DIM values, each 0 or 1:
      [0, CUES)  the cue, one-hot, on the first observation only (else 0)
      [BLANK]    1 on the delay's observations
      [QUERY]    1 on the answer's observation
    The first observation has both flags 0; after the answer the episode's
    final observation is all 0.

    The query observation is the same whatever the cue, so a policy that
    sees only the current observation (an MLP without memory) answers
    blindly: its expected return is at best chance, 2 / CUES - 1 (0 for two
    cues), however it is trained. One that remembers the first observation
    (an LSTM) scores 1; "solved" is a mean return of 0.95. */
#ifndef VL_MEMORY_H
#define VL_MEMORY_H

#include "../include/volley/envs.h"

/* The number of cues and of actions, fixed when volley is compiled (the
   observation's size follows it); a test builds the env with another. */
#ifndef VL_MEMORY_CUES
#define VL_MEMORY_CUES 2
#endif

/* Blank steps between the cue and the query: ten, long enough that a
   memory has to hold the cue across several updates of its state. */
#ifndef VL_MEMORY_DELAY
#define VL_MEMORY_DELAY 10
#endif

#define VL_MEMORY_OBS_BLANK (VL_MEMORY_CUES)      // index of the delay flag
#define VL_MEMORY_OBS_QUERY (VL_MEMORY_CUES + 1)  // index of the query flag
#define VL_MEMORY_OBS_DIM   (VL_MEMORY_CUES + 2)  // floats per observation
#define VL_MEMORY_STEPS     (VL_MEMORY_DELAY + 2) // steps per episode: cue, delay, answer
#define VL_MEMORY_RIGHT     1.0f                  // paid for naming the cue
#define VL_MEMORY_WRONG     -1.0f                 // paid for any other answer

#endif
