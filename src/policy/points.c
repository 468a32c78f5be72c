/* points.c — the points of a client's curve seen at several team sizes, so that a model can see it flatten and fall. */
#include "scaf/policy.h"

#include <math.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * The layer publishes one (p', E) pair at a time: the team it runs now. A
 * curve that can fall needs a second team size, which a client passes through
 * whenever its share changes (arrivals, departures, probes). Keeping the last
 * E seen at each of a few sizes is enough: the policy fits through the
 * current point and one other, and the caller picks the one that shows
 * saturation if any does, because that is the only case where two points say
 * more than one, else the one furthest away in team size, because the bend
 * of the curve between two points far apart is more than noise (an Amdahl
 * curve through the current point alone cannot show a curve that flattens).
 */
static int usable(double e)
{
    return isfinite(e) && e > 0.0;
}

/* The larger of the two teams at slots a and b was no faster than the smaller. */
static int slower(const struct scaf_points *st, uint32_t a, uint32_t b)
{
    double sa = st->e[a] * st->p[a], sb = st->e[b] * st->p[b];

    return st->p[a] > st->p[b] ? sa <= sb : sb <= sa;
}

/* Where a point at team size p goes: its own slot, else an empty one, else the stalest. */
static uint32_t slot_for(const struct scaf_points *st, uint32_t p)
{
    uint32_t empty = SCAF_POINTS_MAX, stalest = 0;

    for (uint32_t i = 0; i < SCAF_POINTS_MAX; i++) {
        if (st->p[i] == p)
            return i;
        if (!st->p[i] && empty == SCAF_POINTS_MAX)
            empty = i;
        if (st->seen_ns[i] < st->seen_ns[stalest])
            stalest = i;
    }
    return empty != SCAF_POINTS_MAX ? empty : stalest;
}

void scaf_points_update(struct scaf_points *st, uint64_t now_ns, uint32_t p, double e, uint64_t max_age_ns,
                        uint32_t *alt_p, double *alt_e, uint32_t *side_p, double *side_e)
{
    uint32_t slot, best = SCAF_POINTS_MAX, side = SCAF_POINTS_MAX;

    if (alt_p)
        *alt_p = 0;
    if (alt_e)
        *alt_e = 0.0;
    if (side_p)
        *side_p = 0;
    if (side_e)
        *side_e = 0.0;
    if (!st)
        return;
    for (uint32_t i = 0; i < SCAF_POINTS_MAX; i++)
        if (st->p[i] && (now_ns < st->seen_ns[i] || now_ns - st->seen_ns[i] > max_age_ns))
            st->p[i] = 0;
    if (p < 2 || !usable(e))
        return; /* nothing to record, and no report for a second point to go with */
    slot = slot_for(st, p);
    /*
     * E at the team of the last report moving by more than the noise from
     * one report to the next: the program changed phase where it runs, and
     * every other point is of its old curve. The rule below cannot see it when
     * the older points lie at larger teams with a lower E: a program held at 5
     * threads in a serial phase (E 0.33, a point at 14 at E 0.13) that began to
     * scale (E 0.97 at 5) fitted a curve peaking at 5 through its old point,
     * and kept 5 of 256 contexts for the 30 s the point lived. A report back
     * at a team left earlier is not compared: its first estimate may straddle
     * the move.
     */
    if (st->p[slot] == p && fabs(st->e[slot] - (e > 1.0 ? 1.0 : e)) > SCAF_POINTS_NOISE) {
        bool latest = true;

        for (uint32_t j = 0; j < SCAF_POINTS_MAX; j++)
            latest &= j == slot || !st->p[j] || st->seen_ns[j] < st->seen_ns[slot];
        for (uint32_t j = 0; latest && j < SCAF_POINTS_MAX; j++)
            if (j != slot)
                st->p[j] = 0;
    }
    st->p[slot] = p;
    st->e[slot] = e > 1.0 ? 1.0 : e;
    st->seen_ns[slot] = now_ns;
    /*
     * Efficiency never rises with the team on one curve. A point that says it
     * did (beyond noise) was measured on another curve: the program changed
     * phase, so every older point is forgotten.
     */
    for (uint32_t i = 0; i < SCAF_POINTS_MAX; i++)
        if (st->p[i] && i != slot &&
            (st->p[i] < p ? st->e[i] + SCAF_POINTS_NOISE < st->e[slot] : st->e[i] > st->e[slot] + SCAF_POINTS_NOISE)) {
            for (uint32_t j = 0; j < SCAF_POINTS_MAX; j++)
                if (j != slot)
                    st->p[j] = 0;
            break;
        }
    for (uint32_t i = 0; i < SCAF_POINTS_MAX; i++) {
        double d, d_best;

        if (!st->p[i] || i == slot)
            continue;
        d = fabs(log((double)st->p[i] / p));
        d_best = best == SCAF_POINTS_MAX ? -1.0 : fabs(log((double)st->p[best] / p));
        /* The furthest; between two as far (one each side), the one that shows a slowdown. */
        if (d > d_best || (d == d_best && slower(st, slot, i)))
            best = i;
    }
    if (best == SCAF_POINTS_MAX)
        return;
    if (alt_p)
        *alt_p = st->p[best];
    if (alt_e)
        *alt_e = st->e[best];
    /*
     * The furthest point shapes the fit; the nearest of the others is where the next move lands, and a fit
     * through points further away says little there (a knee at the core count). Passing over points
     * under x1.1 or x1.25 away from the report cost more in the simulator's sweep than it saved.
     */
    for (uint32_t i = 0; i < SCAF_POINTS_MAX; i++) {
        if (!st->p[i] || i == slot || i == best)
            continue;
        if (side == SCAF_POINTS_MAX || fabs(log((double)st->p[i] / p)) < fabs(log((double)st->p[side] / p)))
            side = i;
    }
    if (side == SCAF_POINTS_MAX)
        return;
    if (side_p)
        *side_p = st->p[side];
    if (side_e)
        *side_e = st->e[side];
}
