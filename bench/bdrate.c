/* BD-rate with pchip interpolation (bdrate.h; docs/BENCH_RD.md). */
#include "bdrate.h"

#include <math.h>
#include <stdlib.h>

static int sign_of(double v) {
    return (v > 0) - (v < 0);
}

/* Slopes of the pchip interpolant at the points (Fritsch & Carlson 1980 with the
 * Fritsch & Butland weighted harmonic mean, as MATLAB's pchip and SciPy's
 * PchipInterpolator compute them). */
static void pchip_slopes(const double *x, const double *y, int n, double *d) {
    double h[BD_MAX_POINTS], m[BD_MAX_POINTS];
    for (int k = 0; k < n - 1; k++) {
        h[k] = x[k + 1] - x[k];
        m[k] = (y[k + 1] - y[k]) / h[k];
    }
    if (n == 2) {
        d[0] = d[1] = m[0];
        return;
    }
    for (int k = 1; k < n - 1; k++) {
        /* A local extremum or a flat segment on either side: slope 0 (monotonicity). */
        if (sign_of(m[k - 1]) * sign_of(m[k]) <= 0) {
            d[k] = 0;
            continue;
        }
        const double w1 = 2 * h[k] + h[k - 1], w2 = h[k] + 2 * h[k - 1];
        d[k] = (w1 + w2) / (w1 / m[k - 1] + w2 / m[k]);
    }
    /* End points: the one-sided three-point formula, clamped to keep the shape. */
    for (int e = 0; e < 2; e++) {
        const double h0 = e ? h[n - 2] : h[0], h1 = e ? h[n - 3] : h[1];
        const double m0 = e ? m[n - 2] : m[0], m1 = e ? m[n - 3] : m[1];
        double v = ((2 * h0 + h1) * m0 - h0 * m1) / (h0 + h1);
        if (sign_of(v) != sign_of(m0))
            v = 0;
        else if (sign_of(m0) != sign_of(m1) && fabs(v) > 3 * fabs(m0))
            v = 3 * m0;
        d[e ? n - 1 : 0] = v;
    }
}

/* Segment k as y = y[k] + d[k] t + c2 t^2 + c3 t^3, t = x - x[k]. */
static void segment(const double *x, const double *y, const double *d, int k, double *c2,
                    double *c3) {
    const double h = x[k + 1] - x[k], m = (y[k + 1] - y[k]) / h;
    *c2 = (3 * m - 2 * d[k] - d[k + 1]) / h;
    *c3 = (d[k] + d[k + 1] - 2 * m) / (h * h);
}

/* Integral of segment k from t = 0 to t. */
static double segment_area(const double *y, const double *d, int k, double c2, double c3,
                           double t) {
    return t * (y[k] + t * (d[k] / 2 + t * (c2 / 3 + t * c3 / 4)));
}

double bd_pchip_integral(const double *x, const double *y, int n, double a, double b) {
    double d[BD_MAX_POINTS], sum = 0;
    pchip_slopes(x, y, n, d);
    for (int k = 0; k < n - 1; k++) {
        const double lo = a > x[k] ? a : x[k], hi = b < x[k + 1] ? b : x[k + 1];
        if (hi <= lo) continue;
        double c2, c3;
        segment(x, y, d, k, &c2, &c3);
        sum +=
            segment_area(y, d, k, c2, c3, hi - x[k]) - segment_area(y, d, k, c2, c3, lo - x[k]);
    }
    return sum;
}

double bd_pchip_eval(const double *x, const double *y, int n, double t) {
    double d[BD_MAX_POINTS], c2, c3;
    pchip_slopes(x, y, n, d);
    int k = 0;
    while (k < n - 2 && t > x[k + 1])
        k++;
    segment(x, y, d, k, &c2, &c3);
    const double u = t - x[k];
    return y[k] + u * (d[k] + u * (c2 + u * c3));
}

/* The curve as (PSNR, log10 rate) sorted by PSNR; 0, or -1 for a bad curve. */
static int prepare(const double *rate, const double *psnr, int n, double *x, double *y) {
    if (n < 2 || n > BD_MAX_POINTS) return -1;
    for (int i = 0; i < n; i++) {
        if (!isfinite(rate[i]) || !isfinite(psnr[i]) || !(rate[i] > 0)) return -1;
        /* Insertion sort: a handful of points. */
        int j = i;
        while (j > 0 && x[j - 1] > psnr[i]) {
            x[j] = x[j - 1], y[j] = y[j - 1];
            j--;
        }
        x[j] = psnr[i], y[j] = log10(rate[i]);
    }
    for (int i = 1; i < n; i++)
        if (!(x[i] > x[i - 1])) return -1;
    return 0;
}

int bd_rate(const double *ref_rate, const double *ref_psnr, int nref, const double *test_rate,
            const double *test_psnr, int ntest, double *percent) {
    double xr[BD_MAX_POINTS], yr[BD_MAX_POINTS], xt[BD_MAX_POINTS], yt[BD_MAX_POINTS];
    *percent = NAN;
    if (prepare(ref_rate, ref_psnr, nref, xr, yr) < 0 ||
        prepare(test_rate, test_psnr, ntest, xt, yt) < 0)
        return -1;
    const double lo = xr[0] > xt[0] ? xr[0] : xt[0];
    const double hi = xr[nref - 1] < xt[ntest - 1] ? xr[nref - 1] : xt[ntest - 1];
    if (!(hi > lo)) return -1;
    const double avg =
        (bd_pchip_integral(xt, yt, ntest, lo, hi) - bd_pchip_integral(xr, yr, nref, lo, hi)) /
        (hi - lo);
    *percent = (pow(10.0, avg) - 1) * 100;
    return 0;
}
