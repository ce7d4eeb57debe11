/*  vl_cartpole: test hooks into the CartPole environment (vl_cartpole_env).
    Actors never need these; tests use them to step from a known state. They
    are public (volley/envs.h), for the Python package's tests. */
#ifndef VL_CARTPOLE_H
#define VL_CARTPOLE_H

#include "../include/volley/envs.h"

#endif
