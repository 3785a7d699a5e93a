/* BD-rate (bench/bdrate.c) against answers known in advance: identical curves, curves with
 * every rate scaled, values computed independently with SciPy's PchipInterpolator (the
 * script is in docs/BENCH_RD.md, "Checking the BD-rate code"), and the refusals. */
#include <math.h>
#include <stdio.h>

#include "bdrate.h"
#include "test_util.h"

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

static void check_near(const char *what, double got, double want, double tol) {
    if (!(fabs(got - want) <= tol)) {
        fprintf(stderr, "%s: %.15g, expected %.15g (tolerance %g)\n", what, got, want, tol);
        test_failures++;
    }
}

/* The four-point example that the usual BD-rate scripts ship (e.g. the Bjontegaard_metric
 * Python script): anchor R1/P1, test R2/P2 (kbit/s, dB). */
static const double R1[] = {686.76, 309.58, 157.11, 85.95}, P1[] = {40.28, 37.18, 34.24, 31.42};
static const double R2[] = {893.34, 407.8, 204.93, 112.75}, P2[] = {40.39, 37.21, 34.17, 31.24};

static void test_scaled(void) {
    double r[4], pc;
    CHECK(bd_rate(R1, P1, 4, R1, P1, 4, &pc) == 0);
    check_near("identical curves", pc, 0, 1e-12);
    const double scale[] = {0.9, 1.25, 0.5, 2.0};
    const double want[] = {-10, 25, -50, 100};
    for (int s = 0; s < 4; s++) {
        for (int i = 0; i < 4; i++)
            r[i] = R1[i] * scale[s];
        CHECK(bd_rate(R1, P1, 4, r, P1, 4, &pc) == 0);
        check_near("rates scaled", pc, want[s], 1e-9);
    }
    /* Scaling holds for any interpolant: also the shifted, 5-point, unsorted case. */
    const double rr[] = {1500, 100, 700, 180, 260}, pp[] = {42.5, 30, 38, 33.5, 34};
    double r9[5];
    for (int i = 0; i < 5; i++)
        r9[i] = rr[i] * 0.9;
    CHECK(bd_rate(rr, pp, 5, r9, pp, 5, &pc) == 0);
    check_near("rates x 0.9, unsorted", pc, -10, 1e-9);
}

static void test_scipy(void) {
    double pc;
    /* scipy.interpolate.PchipInterpolator(psnr, log10(rate)).integrate(lo, hi), SciPy 1.17.1 */
    CHECK(bd_rate(R1, P1, 4, R2, P2, 4, &pc) == 0);
    check_near("published example", pc, 31.379878202397627, 1e-9);
    CHECK(bd_rate(R2, P2, 4, R1, P1, 4, &pc) == 0);
    check_near("published example, reversed", pc, -23.884843426369507, 1e-9);
    const double r3[] = {100, 180, 260, 700, 1500}, p3[] = {30, 33.5, 34, 38, 42.5};
    const double r4[] = {1400, 90, 650, 300, 170}, p4[] = {42, 29.5, 38.5, 35, 33};
    CHECK(bd_rate(r3, p3, 5, r4, p4, 5, &pc) == 0);
    check_near("5 points, unsorted", pc, -8.180213280747072, 1e-9);

    /* The interpolant itself: every branch of the slopes (harmonic mean, 0 at an extremum,
     * the end slope clamped to 3 m0 and to 0). Derivatives there: 3, 0, 0, 0.97, 1.6, 0. */
    const double x[] = {0, 1, 2, 4, 5, 6}, y[] = {0, 1, -9, -8, -4, -3};
    const double t[] = {0.25, 0.5, 1.5, 3.0, 4.5, 5.75};
    const double v[] = {0.578125,           0.875,   -4.0, -8.743243243243242,
                        -6.078378378378378, -3.08125};
    for (int i = 0; i < N_OF(t); i++)
        check_near("pchip value", bd_pchip_eval(x, y, 6, t[i]), v[i], 1e-12);
    for (int i = 0; i < 6; i++)
        check_near("pchip at a knot", bd_pchip_eval(x, y, 6, x[i]), y[i], 1e-12);
    check_near("pchip integral", bd_pchip_integral(x, y, 6, 0.3, 5.6), -28.87596157657658,
               1e-12);
    const double lx[] = {30, 33.5, 34, 38, 42.5};
    double ly[5];
    for (int i = 0; i < 5; i++)
        ly[i] = log10(r3[i]);
    const double t2[] = {31.0, 33.8, 36.0, 41.0};
    const double v2[] = {2.021857378558989, 2.3522258263243283, 2.6785230144274434,
                         3.0824599646421986};
    for (int i = 0; i < 4; i++)
        check_near("pchip value (log rate)", bd_pchip_eval(lx, ly, 5, t2[i]), v2[i], 1e-12);
    check_near("pchip integral (log rate)", bd_pchip_integral(lx, ly, 5, 30.5, 41.7),
               29.197665912975744, 1e-12);
}

static void test_exact(void) {
    /* pchip reproduces a straight line: its integral is exact. */
    const double x[] = {0, 1, 2, 4}, y[] = {1, 3, 5, 9};
    check_near("line", bd_pchip_integral(x, y, 4, 0.5, 3.2), (3.2 * 3.2 + 3.2) - (0.25 + 0.5),
               1e-12);
    /* Two points: the straight line too. */
    check_near("two points", bd_pchip_integral(x, y, 2, 0, 1), 2, 1e-15);
    /* Monotone data give a monotone interpolant (no overshoot between the points). */
    double prev = -1e30;
    for (int i = 0; i <= 1000; i++) {
        const double px[] = {31.42, 34.24, 37.18, 40.28};
        const double py[] = {log10(85.95), log10(157.11), log10(309.58), log10(686.76)};
        const double t = 31.42 + (40.28 - 31.42) * i / 1000;
        const double v = bd_pchip_eval(px, py, 4, t);
        CHECK(v >= prev);
        prev = v;
    }
}

static void test_refusals(void) {
    double pc = 0;
    const double r[] = {100, 200, 400, 800}, p[] = {30, 33, 36, 39};
    const double pdup[] = {30, 33, 33, 39}, rzero[] = {100, 0, 400, 800};
    const double pfar[] = {40, 43, 46, 49}, pnan[] = {30, NAN, 36, 39};
    CHECK(bd_rate(r, p, 1, r, p, 4, &pc) < 0 && isnan(pc));
    CHECK(bd_rate(r, p, 4, r, pdup, 4, &pc) < 0 && isnan(pc));
    CHECK(bd_rate(r, p, 4, rzero, p, 4, &pc) < 0);
    CHECK(bd_rate(r, p, 4, r, pfar, 4, &pc) < 0);
    CHECK(bd_rate(r, p, 4, r, pnan, 4, &pc) < 0);
    CHECK(bd_rate(r, p, BD_MAX_POINTS + 1, r, p, 4, &pc) < 0);
    /* Touching ranges (one common PSNR) have no interval to average over. */
    const double ptouch[] = {39, 42, 45, 48};
    CHECK(bd_rate(r, p, 4, r, ptouch, 4, &pc) < 0);
}

int main(void) {
    test_scaled();
    test_scipy();
    test_exact();
    test_refusals();
    return test_finish("bdrate");
}
