/* idle.c — the idle rule, pure: no region, no WAKE and next to no CPU for a window makes a client idle; any of them makes it busy at once. */
#include "idle.h"

struct scaf_idle_rule scaf_idle_rule_default(uint32_t hz)
{
    return (struct scaf_idle_rule){
        .window_ns = SCAF_IDLE_WINDOW_NS,
        .span_ns = SCAF_IDLE_SPAN_NS,
        .cpu_frac = SCAF_IDLE_CPU_FRAC,
        .slack_ticks = SCAF_IDLE_SLACK_TICKS,
        .hz = hz ? hz : 100,
    };
}

/* Whether the span from the mark to this reading burned more than the rule allows. */
static bool span_busy(const struct scaf_idle *s, const struct scaf_idle_obs *o, const struct scaf_idle_rule *r)
{
    double allowed;

    /* A count that went back (a reused pid cannot get here, but a page or /proc oddity can) is activity. */
    if (o->cpu_ticks < s->mark_ticks)
        return true;
    allowed = r->cpu_frac * (double)(o->now_ns - s->mark_ns) * (double)r->hz / 1e9 + (double)r->slack_ticks;
    return (double)(o->cpu_ticks - s->mark_ticks) > allowed;
}

static void mark(struct scaf_idle *s, const struct scaf_idle_obs *o)
{
    s->have_mark = o->cpu_ok;
    s->mark_ns = o->now_ns;
    s->mark_ticks = o->cpu_ok ? o->cpu_ticks : 0;
}

bool scaf_idle_step(struct scaf_idle *s, const struct scaf_idle_obs *o, const struct scaf_idle_rule *r)
{
    bool busy;

    if (!s->started || o->now_ns < s->quiet_since_ns) {
        s->started = true;
        s->idle = false;
        s->regions = o->regions;
        s->quiet_since_ns = o->now_ns;
        mark(s, o);
        return false;
    }
    busy = o->woke || o->regions != s->regions || !o->cpu_ok;
    if (!busy && !s->have_mark) {
        /* The first reading after activity (the daemon does not read /proc for a client whose regions
         * moved): the next span starts here. */
        mark(s, o);
    } else if (!busy && o->now_ns - s->mark_ns >= r->span_ns) {
        busy = span_busy(s, o, r);
        mark(s, o);
    }
    if (busy) {
        s->idle = false;
        s->regions = o->regions;
        s->quiet_since_ns = o->now_ns;
        mark(s, o);
        return false;
    }
    if (!s->idle && o->now_ns - s->quiet_since_ns >= r->window_ns) {
        s->idle = true;
        s->epoch = s->epoch + 1 ? s->epoch + 1 : 1;
    }
    return s->idle;
}
