/*  vl_abi2_env: a test plugin built for the next env ABI version; the
    loader must refuse it by name, reading nothing past abi_version. */
#include <volley/env.h>

const vl_env_t volley_env = {
    .abi_version = VL_ENV_ABI_VERSION + 1,
    .name = "abi2",
};
