/*  Tests of vl_wire's float checks, built with -ffast-math (see
    CMakeLists.txt): under it the compiler may assume no NaN or Inf exists and
    fold isnan() to 0, so the checks must read exponent bits. The values are
    made from bits, which the optimiser cannot reason away. */
#include <stdint.h>
#include <string.h>

#include "../tests/vl_test.h"
#include "vl_wire.h"

/* Returns the float with these bits. */
static float s_float(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static void test_nan_and_inf_are_not_finite(void)
{
    VL_CHECK(!vl_float_is_finite(s_float(0x7fc00000u))); // quiet NaN
    VL_CHECK(!vl_float_is_finite(s_float(0xffc00001u))); // negative NaN with payload
    VL_CHECK(!vl_float_is_finite(s_float(0x7f800001u))); // signalling NaN
    VL_CHECK(!vl_float_is_finite(s_float(0x7f800000u))); // +Inf
    VL_CHECK(!vl_float_is_finite(s_float(0xff800000u))); // -Inf
}

static void test_finite_values_are_finite(void)
{
    VL_CHECK(vl_float_is_finite(0.0f) && vl_float_is_finite(-1.5f));
    VL_CHECK(vl_float_is_finite(s_float(0x7f7fffffu))); // largest float
    VL_CHECK(vl_float_is_finite(s_float(0x00000001u))); // smallest subnormal
}

static void test_arrays_and_doubles(void)
{
    float x[37];
    for (int i = 0; i < 37; i++)
        x[i] = (float)i;
    VL_CHECK(vl_wire_all_finite(x, 37));
    x[36] = s_float(0x7fc00000u);
    VL_CHECK(!vl_wire_all_finite(x, 37));
    VL_CHECK(vl_wire_all_finite(x, 36));
    uint64_t inf = 0x7ff0000000000000ull;
    double d;
    memcpy(&d, &inf, sizeof d);
    VL_CHECK(!vl_double_is_finite(d) && vl_double_is_finite(1e300));
}

int main(void)
{
    VL_RUN(test_nan_and_inf_are_not_finite);
    VL_RUN(test_finite_values_are_finite);
    VL_RUN(test_arrays_and_doubles);
    return VL_DONE();
}
