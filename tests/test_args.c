/* The command-line value parsers every tool uses (core/args.h): ranges checked before any
 * conversion, exponents, junk, byte sizes with units, lists without repeats. */
#include <string.h>

#include "core/args.h"
#include "tests.h"

static void test_arg_int(void) {
    long long v = -7;
    int i = -7;
    CU_ASSERT_TRUE(gr_arg_int("1000", 1, 100000000, &v) && v == 1000);
    CU_ASSERT_TRUE(gr_arg_int("1e4", 1, 100000000, &v) && v == 10000);
    CU_ASSERT_TRUE(gr_arg_int32("0", 0, 5, &i) && i == 0);
    const char *bad[] = {"", "x", "12x", "1.5", "0", "1e99", "-1e99", "nan", "inf", "100000001", NULL};
    for (const char **b = bad; *b; b++) {
        v = -7;
        CU_ASSERT_FALSE(gr_arg_int(*b, 1, 100000000, &v));
        CU_ASSERT_EQUAL(v, -7); /* untouched */
    }
    CU_ASSERT_FALSE(gr_arg_int(NULL, 1, 2, &v));
    CU_ASSERT_FALSE(gr_arg_int32("3000000000", 0, 2147483647, &i));
}

static void test_arg_bytes(void) {
    double b = 0;
    CU_ASSERT_TRUE(gr_arg_bytes("8G", &b) && b == 8e9);
    CU_ASSERT_TRUE(gr_arg_bytes("2GiB", &b) && b == 2147483648.0);
    CU_ASSERT_TRUE(gr_arg_bytes("512MB", &b) && b == 512e6);
    CU_ASSERT_TRUE(gr_arg_bytes("1000000", &b) && b == 1e6);
    const char *bad[] = {"", "G", "8X", "-1G", "0", "0.5", "8 G", NULL};
    for (const char **x = bad; *x; x++) CU_ASSERT_FALSE(gr_arg_bytes(*x, &b));
}

static void test_arg_list(void) {
    int v[8];
    CU_ASSERT_EQUAL(gr_arg_list("1,2,4,8", 1, 64, v, 8), 4);
    CU_ASSERT_EQUAL(v[3], 8);
    CU_ASSERT_EQUAL(gr_arg_list("4", 1, 64, v, 8), 1);
    const char *bad[] = {"", ",", "1,,2", "1,2,", ",1", "1,1", "0,1", "1,x", "65", NULL};
    for (const char **x = bad; *x; x++) CU_ASSERT_EQUAL(gr_arg_list(*x, 1, 64, v, 8), -1);
    CU_ASSERT_EQUAL(gr_arg_list("1,2,3", 1, 64, v, 2), -1); /* more than max */
}

static gr_arg take(const char *const *argv, int argc, int *i, const char *const *flags) {
    static const char *const wv[] = {"--iters", "--json", "-o", NULL};
    gr_arg a;
    gr_arg_take(argc, (char **)argv, i, wv, flags, &a);
    return a;
}

/* the one tokenizer of the four tools' command lines */
static void test_arg_take(void) {
    const char *v1[] = {"x", "--iters=5", "--iters", "7", "--json", "-", "-o", "f", "-h", "-", "W",
                        "--quiet", "--iters", "-3"};
    int n = (int)(sizeof(v1) / sizeof(v1[0])), i = 1;
    gr_arg a = take(v1, n, &i, NULL);
    CU_ASSERT_EQUAL(a.kind, GR_ARG_OPTION);
    CU_ASSERT_STRING_EQUAL(a.name, "--iters");
    CU_ASSERT_STRING_EQUAL(a.value, "5");
    i++;
    a = take(v1, n, &i, NULL);
    CU_ASSERT_STRING_EQUAL(a.value, "7");
    CU_ASSERT_EQUAL(i, 3); /* the value was taken */
    i++;
    a = take(v1, n, &i, NULL);
    CU_ASSERT_STRING_EQUAL(a.value, "-"); /* "--json -": stdout */
    i++;
    a = take(v1, n, &i, NULL);
    CU_ASSERT_STRING_EQUAL(a.name, "-o");
    CU_ASSERT_STRING_EQUAL(a.value, "f");
    i++;
    a = take(v1, n, &i, NULL);
    CU_ASSERT_STRING_EQUAL(a.name, "--help");
    i++;
    a = take(v1, n, &i, NULL);
    CU_ASSERT_EQUAL(a.kind, GR_ARG_POSITIONAL);
    CU_ASSERT_STRING_EQUAL(a.value, "-");
    i++;
    a = take(v1, n, &i, NULL);
    CU_ASSERT_EQUAL(a.kind, GR_ARG_POSITIONAL);
    i++;
    a = take(v1, n, &i, NULL);
    CU_ASSERT_STRING_EQUAL(a.name, "--quiet");
    CU_ASSERT_PTR_NULL(a.value);
    i++;
    a = take(v1, n, &i, NULL);
    CU_ASSERT_STRING_EQUAL(a.value, "-3"); /* a negative number is a value */
    /* errors */
    const char *v2[] = {"x", "--iters", "--json", "f"};
    i = 1;
    a = take(v2, 4, &i, NULL);
    CU_ASSERT_EQUAL(a.kind, GR_ARG_ERROR);
    CU_ASSERT_STRING_EQUAL(a.error, "option --iters needs a value, got the option --json (write "
                                    "--iters=VALUE for a value that starts with -)");
    const char *v3[] = {"x", "--iters"};
    i = 1;
    a = take(v3, 2, &i, NULL);
    CU_ASSERT_STRING_EQUAL(a.error, "option --iters needs a value");
    const char *v4[] = {"x", "--iters=", "--quiet=1", "--bogus=1"};
    i = 1;
    a = take(v4, 4, &i, NULL);
    CU_ASSERT_STRING_EQUAL(a.error, "option --iters needs a value, got an empty one");
    i = 2;
    a = take(v4, 4, &i, NULL);
    CU_ASSERT_STRING_EQUAL(a.error, "option --quiet takes no value");
    /* with the flags listed, an unknown option comes back for the caller to name */
    static const char *const flags[] = {"--quiet", NULL};
    i = 3;
    a = take(v4, 4, &i, flags);
    CU_ASSERT_EQUAL(a.kind, GR_ARG_OPTION);
    CU_ASSERT_STRING_EQUAL(a.name, "--bogus");
    i = 2;
    a = take(v4, 4, &i, flags);
    CU_ASSERT_EQUAL(a.kind, GR_ARG_ERROR);
}

static CU_TestInfo args_tests[] = {{"one tokenizer: values, flags, positionals, errors", test_arg_take},{"whole numbers in a range", test_arg_int},
                                   {"byte sizes with units", test_arg_bytes},
                                   {"comma lists", test_arg_list},
                                   CU_TEST_INFO_NULL};

static gr_suite_def gr_args_suites[] = {{"args", args_tests, 0}, {NULL, NULL, 0}};
GR_REGISTER_SUITES(gr_args_suites)
