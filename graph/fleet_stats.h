/*
 * fleet_stats.h — order statistics and the rank test of fleet issues
 * (graph/fleet_stats.c). Internal to graph/ (and its tests).
 */
#ifndef HG_GRAPH_FLEET_STATS_H
#define HG_GRAPH_FLEET_STATS_H

#include <stdint.h>

/* Sorts v ascending. */
void _hg_fleet_sort(uint64_t *v, uint32_t n);
/* Percentile q (0..100) of sorted v, nearest rank; q = 50 on an even count
 * is the mean of the middle two. 0 for n = 0. */
uint64_t _hg_fleet_pct(const uint64_t *v, uint32_t n, unsigned q);
/* One-sided Mann-Whitney U: p that x is stochastically larger than y, both
 * sorted ascending (normal approximation, tie-corrected, continuity
 * correction); 1 when either side is empty. */
double _hg_fleet_mann_whitney(const uint64_t *x, uint32_t nx, const uint64_t *y, uint32_t ny);

#endif
