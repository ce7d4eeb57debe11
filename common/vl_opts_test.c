/*  vl_opts_test: counts and floats as people write them ("1e6", "2.5e-4"),
    and every malformed or out-of-range value refused. */
#include <stdio.h>

#include "../tests/vl_test.h"
#include "vl_opts.h"

static void test_whole_numbers(void)
{
    long v = 0;
    VL_CHECK(vl_opt_long("t", "n", "42", 0, 100, &v) == 0 && v == 42);
    VL_CHECK(vl_opt_long("t", "n", "1e6", 0, 1L << 40, &v) == 0 && v == 1000000);
    VL_CHECK(vl_opt_long("t", "n", "2.5e5", 0, 1L << 40, &v) == 0 && v == 250000);
    VL_CHECK(vl_opt_long("t", "n", "-1e3", -5000, 0, &v) == 0 && v == -1000);
    VL_CHECK(vl_opt_long("t", "n", "3E2", 0, 1000, &v) == 0 && v == 300);
}

static void test_bad_whole_numbers_refused(void)
{
    const char *bad[] = {"",    "1.5",  "1e-3",  "1e400", "nan",
                         "inf", "0x10", "12abc", "1e6x",  "99999999999999999999",
                         " ",   "1e16"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        long v = 7;
        VL_CHECK(vl_opt_long("t", "n", bad[i], -100, 1L << 50, &v) != 0);
        VL_CHECK(v == 7);
    }
    long v = 7;
    VL_CHECK(vl_opt_long("t", "n", "1e6", 0, 999999, &v) != 0 && v == 7); // over its range
    VL_CHECK(vl_opt_long("t", "n", NULL, 0, 9, &v) != 0);
}

static void test_floats(void)
{
    float f = 0;
    VL_CHECK(vl_opt_float("t", "lr", "2.5e-4", 0, 1, &f) == 0 && f == 2.5e-4f);
    VL_CHECK(vl_opt_float("t", "lr", "0.99", 0, 1, &f) == 0 && f == 0.99f);
    VL_CHECK(vl_opt_float("t", "lr", "nan", 0, 1, &f) != 0);
    VL_CHECK(vl_opt_float("t", "lr", "2", 0, 1, &f) != 0);
}

int main(void)
{
    printf("(the refusals below are expected)\n");
    VL_RUN(test_whole_numbers);
    VL_RUN(test_bad_whole_numbers_refused);
    VL_RUN(test_floats);
    return VL_DONE();
}
