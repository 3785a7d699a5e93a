/* Bjøntegaard delta rate (BD-rate) with piecewise cubic interpolation, the "pchip" variant
 * of the JCT-VC / VCEG spreadsheets (docs/BENCH_RD.md): log10(rate) is interpolated as a
 * function of PSNR by a monotone piecewise cubic Hermite interpolant (Fritsch-Carlson
 * slopes as MATLAB's and SciPy's pchip compute them), each curve is integrated exactly
 * over the PSNR interval both curves cover, and
 *   BD-rate = 10^((integral_test - integral_ref) / (hi - lo)) - 1
 * in percent: the average rate difference of `test` against `ref` at equal quality
 * (negative: test needs fewer bits). */
#ifndef VIDK_BENCH_BDRATE_H
#define VIDK_BENCH_BDRATE_H

/* Most points of one curve. */
#define BD_MAX_POINTS 64

/* Integral over [a, b] (x[0] <= a <= b <= x[n-1]) of the pchip interpolant of the points
 * (x[i], y[i]), x strictly increasing, 2 <= n <= BD_MAX_POINTS. Two points give the
 * straight line. */
double bd_pchip_integral(const double *x, const double *y, int n, double a, double b);

/* Value at t (x[0] <= t <= x[n-1]) of the same interpolant. */
double bd_pchip_eval(const double *x, const double *y, int n, double t);

/* BD-rate in percent of the curve (test_rate[i], test_psnr[i]) against the curve
 * (ref_rate[i], ref_psnr[i]); points in any order (sorted by PSNR here), rates > 0 in any
 * unit common to both curves. Returns 0 with *percent set, or -1 (and *percent NAN) when a
 * curve has fewer than 2 or more than BD_MAX_POINTS points, a rate <= 0 or a value that is
 * not finite, or two points of equal PSNR, or when the PSNR ranges of the curves do not
 * overlap (an interval of zero length). */
int bd_rate(const double *ref_rate, const double *ref_psnr, int nref, const double *test_rate,
            const double *test_psnr, int ntest, double *percent);

#endif
