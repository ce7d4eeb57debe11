/*  vl_abi: the sizes of the structs that bindings mirror, as this library was
    compiled. A binding (bindings/python's ctypes) compares each of its mirrors
    with them when it loads the library, so a package and a libvolley built from
    different headers refuse each other instead of passing garbage. */
#include <string.h>

#include "volley/actor.h"
#include "volley/engine.h"
#include "volley/env.h"
#include "volley/learner.h"
#include "volley/replay.h"
#include "volley/volley.h"
#include "volley/vtrace.h"

#define S_SIZE(type) {#type, sizeof(type)}

static const struct {
    const char *name;
    size_t size;
} s_sizes[] = {
    S_SIZE(vl_vtrace_params_t),    S_SIZE(vl_env_field_t),       S_SIZE(vl_env_t),
    S_SIZE(vl_actor_params_t),     S_SIZE(vl_rbuf_field_t),      S_SIZE(vl_transport_field_t),
    S_SIZE(vl_transport_spec_t),   S_SIZE(vl_transport_counts_t), S_SIZE(vl_transport_tensor_t),
    S_SIZE(vl_engine_config_t),    S_SIZE(vl_engine_stats_t),     S_SIZE(vl_engine_arrays_t),
    S_SIZE(vl_engine_ops_t),
};

size_t vl_abi_sizeof(const char *name)
{
    if (!name)
        return 0;
    for (size_t i = 0; i < sizeof s_sizes / sizeof s_sizes[0]; i++)
        if (strcmp(s_sizes[i].name, name) == 0)
            return s_sizes[i].size;
    return 0;
}
