/*  vl_nosym_env: a test plugin whose table is exported under the wrong
    name; the loader must say that no `volley_env` is there. */
#include <volley/env.h>

const vl_env_t volley_environment = {
    .abi_version = VL_ENV_ABI_VERSION,
    .name = "nosym",
};
