/*
 * fleet_stats.c — the statistics of fleet issues: order statistics (median,
 * 90th percentile) and the one-sided Mann-Whitney U test with the normal
 * approximation, tie-corrected (docs/fleet.md, "Statistics"). Plain C
 * without libm (the library links none): square root by Newton's method,
 * the normal tail from exp by range reduction and the Abramowitz-Stegun
 * 7.1.26 erfc approximation (absolute error below 1.5e-7).
 */
#include <stdint.h>
#include <stdlib.h>

#include "graph/fleet.h"
#include "graph/fleet_stats.h"

/* Quicksort (median of three, the smaller side first so the explicit
 * stack stays below 64 entries) with insertion sort for short runs: the
 * comparisons inline, several times faster than qsort's callback on the
 * millions of byte counts an issue run sorts. */
void _hg_fleet_sort(uint64_t *v, uint32_t n) {
  uint32_t lo_stack[64], hi_stack[64], sp = 0, lo = 0, hi = n;
  for (;;) {
    while (hi - lo > 16) {
      uint32_t mid = lo + (hi - lo) / 2;
      uint64_t a = v[lo], b = v[mid], c = v[hi - 1];
      uint64_t pivot = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
      uint32_t i = lo, j = hi - 1;
      for (;;) {
        while (v[i] < pivot) i++;
        while (v[j] > pivot) j--;
        if (i >= j) break;
        uint64_t t = v[i];
        v[i++] = v[j];
        v[j--] = t;
      }
      /* [lo, j] <= pivot <= [j + 1, hi) */
      if (j + 1 - lo < hi - (j + 1)) {
        lo_stack[sp] = j + 1, hi_stack[sp++] = hi;
        hi = j + 1;
      } else {
        lo_stack[sp] = lo, hi_stack[sp++] = j + 1;
        lo = j + 1;
      }
    }
    for (uint32_t i = lo + 1; i < hi; i++) {
      uint64_t x = v[i];
      uint32_t k = i;
      for (; k > lo && v[k - 1] > x; k--) v[k] = v[k - 1];
      v[k] = x;
    }
    if (!sp) return;
    sp--;
    lo = lo_stack[sp];
    hi = hi_stack[sp];
  }
}

/* Nearest-rank percentile of sorted v (q in 0..100). */
uint64_t _hg_fleet_pct(const uint64_t *v, uint32_t n, unsigned q) {
  if (!n) return 0;
  if (q == 50 && !(n & 1)) return v[n / 2 - 1] / 2 + v[n / 2] / 2 + (v[n / 2 - 1] & v[n / 2] & 1);
  uint64_t r = ((uint64_t)q * n + 99) / 100; /* ceil(q n / 100), 1-based */
  if (r < 1) r = 1;
  return v[r - 1];
}

static double sqrt_d(double x) {
  if (x <= 0) return 0;
  double r = x > 1 ? x : 1;
  for (int i = 0; i < 64; i++) {
    double n = 0.5 * (r + x / r);
    if (n == r) break;
    r = n;
  }
  return r;
}

static double exp_d(double x) {
  if (x < -700) return 0;
  if (x > 700) x = 700;
  const double ln2 = 0.69314718055994530942;
  int k = (int)(x / ln2);
  double r = x - k * ln2, term = 1, sum = 1;
  for (int i = 1; i < 30; i++) {
    term *= r / i;
    sum += term;
  }
  for (; k > 0; k--) sum *= 2;
  for (; k < 0; k++) sum /= 2;
  return sum;
}

/* P(Z > z) for a standard normal Z. */
static double normal_tail(double z) {
  double x = z < 0 ? -z : z, t = 1 / (1 + 0.3275911 * x / 1.41421356237309505);
  double erfc = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))) *
                exp_d(-x * x / 2);
  double tail = erfc / 2;
  return z < 0 ? 1 - tail : tail;
}

/* One-sided p that x tends to be larger than y (both sorted ascending):
 * ranks by merging the two, ties given their average rank. */
double _hg_fleet_mann_whitney(const uint64_t *x, uint32_t nx, const uint64_t *y, uint32_t ny) {
  if (!nx || !ny) return 1;
  uint32_t n = nx + ny, i = 0, j = 0;
  double rx = 0, ties = 0, rank = 0;
  while (i < nx || j < ny) {
    uint64_t v = j >= ny || (i < nx && x[i] <= y[j]) ? x[i] : y[j];
    uint32_t tx = 0, ty = 0;
    while (i < nx && x[i] == v) i++, tx++;
    while (j < ny && y[j] == v) j++, ty++;
    double t = tx + ty, avg = rank + (t + 1) / 2; /* ranks rank+1 .. rank+t */
    rx += tx * avg;
    ties += t * t * t - t;
    rank += t;
  }
  double u = rx - (double)nx * (nx + 1) / 2, mean = (double)nx * ny / 2;
  double var = (double)nx * ny / 12 * ((n + 1) - ties / ((double)n * (n - 1)));
  if (var <= 0) return 1;
  double z = (u - mean - 0.5) / sqrt_d(var);
  return normal_tail(z);
}
