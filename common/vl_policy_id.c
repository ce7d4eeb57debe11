/*  vl_policy_id: the one rule for a policy id. */
#include "vl_policy_id.h"

#include <string.h>

int vl_policy_id_valid(const char *id, size_t len)
{
    if (!id || len == 0 || len >= VL_POLICY_ID_MAX || id[0] == '~')
        return 0;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)id[i] < 0x21 || (unsigned char)id[i] > 0x7e)
            return 0;
    return 1;
}

int vl_policy_id_ok(const char *id)
{
    return id && vl_policy_id_valid(id, strnlen(id, VL_POLICY_ID_MAX));
}
