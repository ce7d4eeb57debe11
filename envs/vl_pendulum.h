/*  vl_pendulum: test hooks into the Pendulum environment (vl_pendulum_env).
    Actors never need these; tests use them to step from a known state. They
    are public (volley/envs.h), for the Python package's tests. */
#ifndef VL_PENDULUM_H
#define VL_PENDULUM_H

#include "../include/volley/envs.h"

#endif
