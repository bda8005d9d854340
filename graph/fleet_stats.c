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

static int cmp_u64(const void *x, const void *y) {
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return a < b ? -1 : a > b;
}

void _hg_fleet_sort(uint64_t *v, uint32_t n) { qsort(v, n, sizeof *v, cmp_u64); }

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

struct ranked { uint64_t v; uint32_t side; };
static int cmp_ranked(const void *x, const void *y) {
  const struct ranked *a = x, *b = y;
  return a->v < b->v ? -1 : a->v > b->v;
}

/* One-sided p that x tends to be larger than y. 1 when either is empty. */
double _hg_fleet_mann_whitney(const uint64_t *x, uint32_t nx, const uint64_t *y, uint32_t ny) {
  if (!nx || !ny) return 1;
  uint32_t n = nx + ny;
  struct ranked *r = malloc((size_t)n * sizeof *r);
  if (!r) return 1;
  for (uint32_t i = 0; i < nx; i++) r[i] = (struct ranked){x[i], 0};
  for (uint32_t i = 0; i < ny; i++) r[nx + i] = (struct ranked){y[i], 1};
  qsort(r, n, sizeof *r, cmp_ranked);
  double rx = 0, ties = 0;
  for (uint32_t i = 0; i < n;) {
    uint32_t j = i;
    while (j < n && r[j].v == r[i].v) j++;
    double avg = (i + 1 + j) / 2.0, t = j - i; /* ranks i+1 .. j */
    for (uint32_t k = i; k < j; k++)
      if (!r[k].side) rx += avg;
    ties += t * t * t - t;
    i = j;
  }
  free(r);
  double u = rx - (double)nx * (nx + 1) / 2, mean = (double)nx * ny / 2;
  double var = (double)nx * ny / 12 * ((n + 1) - ties / ((double)n * (n - 1)));
  if (var <= 0) return 1;
  double z = (u - mean - 0.5) / sqrt_d(var);
  return normal_tail(z);
}
