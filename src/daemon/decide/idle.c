/* idle.c — the idle rule, pure: no region, no WAKE and next to no CPU for a window makes a client idle; any of them makes it busy at once. */
#include "idle.h"

struct scaf_idle_rule scaf_idle_rule_default(uint32_t hz)
{
    return (struct scaf_idle_rule){
        .window_ns = SCAF_IDLE_WINDOW_NS,
        .span_ns = SCAF_IDLE_SPAN_NS,
        .cpu_frac = SCAF_IDLE_CPU_FRAC,
        .wake_frac = SCAF_IDLE_WAKE_FRAC,
        .slack_ticks = SCAF_IDLE_SLACK_TICKS,
        .hz = hz ? hz : 100,
    };
}

/* Whether the CPU burned since the mark is more than the rule allows over `span_ns` (the span's length, or
 * the shortest span for one not yet complete: a partial span already past that is busy for sure). An idle
 * client is allowed more: the bursts of a pool worker waiting for its next task would otherwise hand its
 * share back and forth while the last task runs. */
static bool span_busy(const struct scaf_idle *s, const struct scaf_idle_obs *o, const struct scaf_idle_rule *r,
                      uint64_t span_ns)
{
    double allowed;

    /* A count that went back (a reused pid cannot get here, but a page or /proc oddity can) is activity. */
    if (o->cpu_ticks < s->mark_ticks)
        return true;
    allowed = (s->idle ? r->wake_frac : r->cpu_frac) * (double)span_ns * (double)r->hz / 1e9 + (double)r->slack_ticks;
    return (double)(o->cpu_ticks - s->mark_ticks) > allowed;
}

static void mark(struct scaf_idle *s, const struct scaf_idle_obs *o)
{
    s->have_mark = o->cpu_ok;
    s->mark_ns = o->now_ns;
    s->mark_ticks = o->cpu_ok ? o->cpu_ticks : 0;
}

/* Activity now (or the first look): busy, quiet from this turn, the next span from this reading. */
static bool restart(struct scaf_idle *s, const struct scaf_idle_obs *o)
{
    s->idle = false;
    s->judged = false;
    s->regions = o->regions;
    s->quiet_since_ns = o->now_ns;
    mark(s, o);
    return false;
}

bool scaf_idle_step(struct scaf_idle *s, const struct scaf_idle_obs *o, const struct scaf_idle_rule *r)
{
    bool busy;

    if (!s->started || o->now_ns < s->quiet_since_ns) {
        s->started = true;
        return restart(s, o);
    }
    busy = o->woke || o->regions != s->regions || !o->cpu_ok;
    if (!busy && !s->have_mark) {
        /* No reading to judge from yet (the first turn, or one after a reading failed): the next
         * span starts here. */
        mark(s, o);
    } else if (!busy) {
        uint64_t span = o->now_ns - s->mark_ns;

        busy = span_busy(s, o, r, span > r->span_ns ? span : r->span_ns);
        if (!busy && span >= r->span_ns) {
            s->judged = true;
            mark(s, o);
        }
    }
    if (busy)
        return restart(s, o);
    /* Quiet for the window, and at least one span of it judged: a turn without a region alone says
     * nothing of a serial phase. */
    if (!s->idle && s->judged && o->now_ns - s->quiet_since_ns >= r->window_ns) {
        s->idle = true;
        s->epoch = s->epoch + 1 ? s->epoch + 1 : 1;
    }
    return s->idle;
}
