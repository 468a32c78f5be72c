/* probe.c — when a client held at one chunk is given a larger share again, so a phase change is seen (no ratchet). */
#include "scaf/policy.h"

/*
 * At one chunk a client reports from one thread, which says nothing about
 * scaling, so the speedup policy keeps its last fitted curve. Without a probe
 * a client whose curve once fell would stay at one chunk for good, even after
 * its program entered a phase that scales. So after `interval_ns` at one chunk
 * it is probed: treated as unknown (an average share) until it reports from 2
 * or more threads, for at least `hold_min_ns` (time for the layer to apply
 * the team and publish from it) and at most `hold_max_ns` (a program that
 * runs no regions never reports). Its fresh estimate then decides; if the
 * curve still falls it goes back to one chunk and the interval starts again,
 * doubled (up to SCAF_PROBE_BACKOFF_MAX times): a program that stays serial
 * costs fewer and fewer re-sizings, one that grew resets the interval.
 */
int scaf_probe_step(struct scaf_probe *st, uint64_t now_ns, uint32_t prev, uint32_t chunk, uint32_t eff_team,
                    const struct scaf_probe_timing *tm)
{
    if (!st || !tm || tm->interval_ns == 0)
        return 0;
    if (st->probe_since_ns) {
        uint64_t age = now_ns > st->probe_since_ns ? now_ns - st->probe_since_ns : 0;

        if ((eff_team >= 2 && age >= tm->hold_min_ns) || age >= tm->hold_max_ns) {
            st->probe_since_ns = 0;
            st->probe_end_ns = now_ns ? now_ns : 1;
            st->low_since_ns = now_ns;
            if (st->backoff < SCAF_PROBE_BACKOFF_MAX)
                st->backoff++; /* undone below if it stays above one chunk */
            return 0;
        }
        return 1;
    }
    if (prev == 0 || prev > (chunk ? chunk : 1)) {
        /* Above one chunk beyond the round or two a probe's end takes to apply: it grew for real. */
        if (prev > 0 && (!st->probe_end_ns || now_ns - st->probe_end_ns > tm->hold_min_ns))
            st->backoff = 0;
        st->low_since_ns = 0;
        return 0;
    }
    if (!st->low_since_ns) {
        st->low_since_ns = now_ns;
        return 0;
    }
    if (now_ns - st->low_since_ns >= tm->interval_ns << st->backoff) {
        st->probe_since_ns = now_ns ? now_ns : 1;
        return 1;
    }
    return 0;
}

/*
 * A client alone, or holding more than it can use, may sit past the peak of
 * its curve, and one point cannot show it: Amdahl through a low E still rises.
 * Only a measurement at a smaller team can. Two thirds of the allocation
 * (src/policy/marginal.c, shrink_target) is the cheapest probe that lands far
 * enough away (x1.5, where the policy fits two points) to bend the curve by
 * more than noise. The gates keep it to clients where a
 * peak is plausible (E < SCAF_SHRINK_E_MAX: more than half of each context
 * wasted) and not already measured (no second point x1.5 away in either
 * direction; the caller's points expire after SCAF_POINTS_MAX_AGE_NS, which
 * spaces probes of a program whose curve turned out to rise).
 */
int scaf_shrink_step(struct scaf_shrink *st, uint64_t now_ns, uint32_t prev, uint32_t chunk, uint32_t eff_team,
                     double efficiency, uint32_t alt_team, bool climbing, const struct scaf_probe_timing *tm)
{
    uint64_t wait, least;

    if (!st || !tm || tm->interval_ns == 0)
        return 0;
    if (!chunk)
        chunk = 1;
    if (st->probe_since_ns) {
        uint64_t age = now_ns > st->probe_since_ns ? now_ns - st->probe_since_ns : 0;

        if ((eff_team >= 2 && eff_team < st->steady_at && age >= tm->hold_min_ns) ||
            age >= tm->hold_max_ns) {
            st->probe_since_ns = 0;
            st->steady_at = 0;
            return 0;
        }
        return 2;
    }
    if (prev != st->steady_at || !st->steady_since_ns) {
        st->steady_at = prev;
        st->steady_since_ns = now_ns ? now_ns : 1;
        return 0;
    }
    if (prev < 2 * chunk || prev < 4 || eff_team != prev || !(efficiency >= 0.0 && efficiency < SCAF_SHRINK_E_MAX))
        return 0;
    if (alt_team >= 2 && ((uint64_t)alt_team * 3 <= (uint64_t)prev * 2 || (uint64_t)alt_team * 2 >= (uint64_t)prev * 3))
        return 0; /* the policy already fits its curve through two points far apart */
    /*
     * A smaller team measured slower: the curve still rises into the
     * allocation, so it is not past a peak, and shrinking it would only show a
     * shape the two points' slope already bounds. The job beside a pool on
     * 256 contexts (E 0.41 at 144, 0.44 at 128) was halved for 1.5 s, a
     * sixth of the machine's summed speedup lost, to learn that. A larger
     * team measured faster says the same (the caller's `climbing` reads both).
     */
    if (climbing)
        return 0;
    /*
     * The lower E, the sooner: a program that wastes most of its threads
     * loses least by a probe and gains most from one, but never before the
     * hold a probe itself takes (the time for a team to apply and publish),
     * so that its estimate at this team has settled (a probe read off the
     * first noisy windows fits a curve to noise). A floor of a quarter of
     * the interval (2.5 s) left a lock-bound newcomer measured at E 0.025
     * on 128 of 256 contexts there 1.5 s longer than its report needed:
     * an estimate's error is a fraction of E, so a low E settles as fast.
     */
    wait = (uint64_t)((double)tm->interval_ns * (efficiency / SCAF_SHRINK_E_MAX));
    /*
     * The floor itself scales below E 0.05: where most of every context is
     * wasted, the noise of E cannot change the verdict that a peak is
     * plausible, and each second there costs the program most of its speedup
     * (a lock-bound newcomer at E 0.010 on 214 of 256 contexts ran at 2.1
     * for a peak of 7.4).
     */
    least = efficiency < SCAF_SHRINK_E_FAST
                ? (uint64_t)((double)tm->hold_min_ns * (efficiency / SCAF_SHRINK_E_FAST))
                : tm->hold_min_ns;
    if (wait < least)
        wait = least;
    if (now_ns - st->steady_since_ns < wait)
        return 0;
    st->probe_since_ns = now_ns ? now_ns : 1;
    return 1;
}
