/*  vl_abi_next_env: a test plugin built for the env ABI version after this
    one; the loader must refuse it by name, reading nothing past
    abi_version. */
#include <volley/env.h>

const vl_env_t volley_env = {
    .abi_version = VL_ENV_ABI_VERSION + 1,
    .name = "abi-next",
};
