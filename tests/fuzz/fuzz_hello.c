/*  fuzz_hello: vl_hello_decode under libFuzzer.

    Checked on every input: a named reason; the caller's policy_id left
    untouched on a refusal. On VL_OK: the id printable and NUL-terminated
    inside VL_POLICY_ID_MAX, and the round trip: vl_hello_encode succeeds
    and its bytes decode to the same id. */
#include <stdint.h>
#include <string.h>

#include "fuzz_common.h"
#include "messages/vl_codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char id[VL_POLICY_ID_MAX];
    memset(id, FUZZ_SENTINEL, sizeof id);
    vl_reason_t reason = vl_hello_decode(data, size, id);
    FUZZ_CHECK_REASON(reason);
    if (reason != VL_OK) {
        FUZZ_CHECK(fuzz_untouched(id, sizeof id));
        return 0;
    }
    FUZZ_CHECK(vl_wire_name_ok(id, sizeof id));

    uint8_t *wire = NULL;
    size_t wire_size = 0;
    FUZZ_CHECK(vl_hello_encode(id, &wire, &wire_size) == 0);
    char again[VL_POLICY_ID_MAX];
    FUZZ_CHECK(vl_hello_decode(wire, wire_size, again) == VL_OK);
    FUZZ_CHECK(strcmp(id, again) == 0);
    free(wire);
    return 0;
}
