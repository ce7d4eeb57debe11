/*  vl_test: the few macros volley's unit tests share. A test file is a set of
    named cases (static void test_name(void)) run from main by VL_RUN; a case
    stops at its first failed check. main ends with VL_DONE(), which prints
    "N passed, N failed" and returns non-zero when any case failed. */
#ifndef VL_TEST_H
#define VL_TEST_H

#include <math.h>
#include <stdio.h>

static int vl_test_passed, vl_test_failed, vl_test_case_failed;

#define VL_CHECK(cond)                                                                             \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: %s: check failed: %s\n", __FILE__, __LINE__, __func__, #cond); \
            vl_test_case_failed = 1;                                                               \
            return;                                                                                \
        }                                                                                          \
    } while (0)

/* Checks |a - b| <= tol, printing both values when it fails. */
#define VL_CHECK_NEAR(a, b, tol)                                                                   \
    do {                                                                                           \
        double vl_a_ = (a), vl_b_ = (b);                                                           \
        if (!(fabs(vl_a_ - vl_b_) <= (tol))) {                                                     \
            fprintf(stderr, "%s:%d: %s: %s = %.9g, %s = %.9g, tolerance %g\n", __FILE__, __LINE__, \
                    __func__, #a, vl_a_, #b, vl_b_, (double)(tol));                                \
            vl_test_case_failed = 1;                                                               \
            return;                                                                                \
        }                                                                                          \
    } while (0)

#define VL_RUN(fn)                                                                                 \
    do {                                                                                           \
        vl_test_case_failed = 0;                                                                   \
        fn();                                                                                      \
        if (vl_test_case_failed) {                                                                 \
            vl_test_failed++;                                                                      \
            fprintf(stderr, "FAIL %s\n", #fn);                                                     \
        } else {                                                                                   \
            vl_test_passed++;                                                                      \
            printf("ok   %s\n", #fn);                                                              \
        }                                                                                          \
    } while (0)

#define VL_DONE()                                                                                  \
    (printf("%d passed, %d failed\n", vl_test_passed, vl_test_failed), vl_test_failed != 0)

#endif
