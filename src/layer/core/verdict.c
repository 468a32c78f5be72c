/* verdict.c — the malleability verdict, pure: region modes and what an ended region proves, from explicit evidence. */
#include "verdict.h"

#include "scaf/proto.h"
#include "team.h"

int scaf_verdict_mode(const struct scaf_mode_in *in)
{
    if (in->clause == SCAF_CLAUSE_OTHER || in->fixed)
        return SCAF_TEAM_KEEP;
    if (in->ev.check)
        return SCAF_TEAM_CHECK;
    if (in->ev.forced)
        return SCAF_TEAM_STEER;
    if (in->site_known && (in->site & SCAF_SITE_TLS_WAIT))
        return SCAF_TEAM_WATCH;
    if (in->site_known && in->site != 0)
        return SCAF_TEAM_STEER;
    /* A site not seen yet: watched once if a count is known outside (its regions may divide work by
     * it) or if its code keeps per-thread state; a crowded table watches every instance. */
    if (in->ev.queried || in->tls)
        return SCAF_TEAM_WATCH;
    return SCAF_TEAM_STEER;
}

/* A verdict change, unless the program is fixed already (only FIXED is final). */
static void change(struct scaf_judgement *out, uint32_t verdict, int why)
{
    if (out->verdict == SCAF_VERDICT_FIXED)
        return;
    out->verdict = verdict;
    out->why = why;
}

void scaf_verdict_judge(const struct scaf_judge_in *in, struct scaf_judgement *out)
{
    const struct scaf_evidence *ev = &in->ev;
    uint32_t site = in->site;
    /* A site started from the memory runs steered, but its first instance is judged as a first one. */
    bool first = site == 0 || (site & SCAF_SITE_KNOWN), queried = ev->queried, waiting, cleared = false;

    *out = (struct scaf_judgement){.verdict = ev->verdict, .why = SCAF_WHY_NONE, .site = site};
    /* An explicit count or a fixed team ran as written; scaf check's teams are its own. */
    if (in->mode == SCAF_TEAM_KEEP || in->mode == SCAF_TEAM_CHECK)
        return;
    /* The program has seen this team: first looks and fixed teams get no more from now on. */
    out->lower_cap = in->nth && !in->tid;
    if (ev->forced)
        return;
    if (first)
        site = site ? site & ~SCAF_SITE_KNOWN : SCAF_SITE_SEEN | (in->tls ? SCAF_SITE_TLS : 0);
    out->site = site;
    waiting = (site & SCAF_SITE_TLS_WAIT) != 0;
    /* The common case: a seen site whose threads neither number themselves nor read the team size. */
    if (!first && !in->tid && !in->nth && !waiting)
        return;
    out->tid_any = in->tid;
    if (in->nth && !in->tid) {
        /* `single: n = omp_get_num_threads()`: the count may escape to later regions; a query. */
        out->escaped = true;
        if (!queried) {
            queried = true;
            change(out, ev->tid_only ? SCAF_VERDICT_FIXED : SCAF_VERDICT_UNDECIDED,
                   ev->tid_only ? SCAF_WHY_ESCAPED_TID : SCAF_WHY_ESCAPED);
        }
    }
    /* Code with thread-local data, seen for the first time or held: its check decides. */
    if ((first || waiting) && (site & SCAF_SITE_TLS) && !(site & SCAF_SITE_TLS_CLEAR)) {
        switch (in->tls_check) {
        case SCAF_TLS_SCRATCH:
            site = (site & ~SCAF_SITE_TLS_WAIT) | SCAF_SITE_TLS_CLEAR;
            cleared = true;
            break;
        case SCAF_TLS_CARRIED:
            change(out, SCAF_VERDICT_FIXED, SCAF_WHY_TLS_CARRIED);
            break;
        case SCAF_TLS_UNCHECKED:
            change(out, SCAF_VERDICT_FIXED, SCAF_WHY_TLS_UNCHECKED);
            break;
        default:
            /* Per-thread data that may outlive the region: held at its team until checked. */
            if (!waiting) {
                out->tls_check_due = true;
                site |= SCAF_SITE_TLS_WAIT;
                change(out, SCAF_VERDICT_UNDECIDED, SCAF_WHY_TLS_WAIT);
            }
            break;
        }
        out->site = site;
    }
    if (in->tid && ev->set)
        change(out, SCAF_VERDICT_FIXED, SCAF_WHY_SET_TID);
    if (in->tid && !in->nth) {
        if (queried)
            change(out, SCAF_VERDICT_FIXED, SCAF_WHY_TID_ONLY);
        else
            out->tid_only = true;
    }
    /* A site seen clean (or cleared by its check) settles a program that was only watching, unless
     * another site is still held for its check: a program that ends then is undecided, not malleable. */
    if ((first || cleared) && !(site & SCAF_SITE_TLS_WAIT) && out->verdict == SCAF_VERDICT_UNDECIDED)
        change(out, in->held_elsewhere ? SCAF_VERDICT_UNDECIDED : SCAF_VERDICT_MALLEABLE,
               in->held_elsewhere ? SCAF_WHY_TLS_HELD : SCAF_WHY_CLEAN);
}

bool scaf_verdict_may_change(uint32_t site, bool tid, bool nth, bool tid_any, bool set)
{
    /* A first instance (or a remembered site's first) and a held site are judged in full. */
    if (site == 0 || (site & (SCAF_SITE_TLS_WAIT | SCAF_SITE_KNOWN)))
        return true;
    /* Neither call: judge's own common case. */
    if (!tid && !nth)
        return false;
    /* Both: no count escapes and none is read alone; what remains is thread numbers in a program that set its
     * count (fixes it), and the first thread numbers the program shows (remembered program-wide). */
    return !(tid && nth) || set || !tid_any;
}

uint32_t scaf_verdict_memo_site(uint32_t memo, bool tls)
{
    /* Memory never overrides evidence: only a site that settled clean starts settled. */
    if (!(memo & SCAF_MEMO_CLEAN) || (memo & SCAF_MEMO_FIXES) || tls != ((memo & SCAF_MEMO_TLS) != 0))
        return 0;
    if (!tls)
        return SCAF_SITE_SEEN | SCAF_SITE_KNOWN;
    if (!(memo & SCAF_MEMO_TLS_CLEAR))
        return 0;
    return SCAF_SITE_SEEN | SCAF_SITE_TLS | SCAF_SITE_TLS_CLEAR | SCAF_SITE_KNOWN;
}

static bool fixing(int why)
{
    return why == SCAF_WHY_ESCAPED_TID || why == SCAF_WHY_TID_ONLY || why == SCAF_WHY_SET_TID ||
           why == SCAF_WHY_TLS_CARRIED || why == SCAF_WHY_TLS_UNCHECKED;
}

bool scaf_verdict_memo_learn(const struct scaf_judge_in *in, const struct scaf_judgement *out, uint32_t *memo)
{
    bool fixes = out->verdict == SCAF_VERDICT_FIXED && in->ev.verdict != SCAF_VERDICT_FIXED && fixing(out->why);
    bool settles = in->site == 0 || (in->site & (SCAF_SITE_KNOWN | SCAF_SITE_TLS_WAIT));
    bool clean_calls = !(in->tid && !in->nth);
    uint32_t site = out->site, m = 0;

    if (in->ev.forced || in->mode == SCAF_TEAM_KEEP || in->mode == SCAF_TEAM_CHECK)
        return false;
    /* Held for its check: nothing is settled yet. */
    if (!fixes && (site & SCAF_SITE_TLS_WAIT))
        return false;
    /* The common case: a settled site that showed nothing new. */
    if (!settles && clean_calls && !fixes)
        return false;
    if (site & SCAF_SITE_TLS)
        m |= SCAF_MEMO_TLS | ((site & SCAF_SITE_TLS_CLEAR) ? SCAF_MEMO_TLS_CLEAR : 0);
    if (fixes)
        m |= SCAF_MEMO_FIXES;
    else if (clean_calls && (!(site & SCAF_SITE_TLS) || (site & SCAF_SITE_TLS_CLEAR)))
        m |= SCAF_MEMO_CLEAN;
    *memo = m;
    return true;
}

uint32_t scaf_verdict_count_known(const struct scaf_evidence *ev, bool set, int *why)
{
    *why = SCAF_WHY_NONE;
    if (ev->forced || ev->verdict == SCAF_VERDICT_FIXED)
        return ev->verdict;
    if (set && ev->tid_any) {
        /* The specification promises a program that sets n exactly n threads (dyn-var false): one that
         * also numbers its threads is read as relying on that. */
        *why = SCAF_WHY_SET_TID;
        return SCAF_VERDICT_FIXED;
    }
    if (ev->queried)
        return ev->verdict; /* only the first count known changes anything */
    if (ev->tid_only) {
        *why = SCAF_WHY_TID_ONLY;
        return SCAF_VERDICT_FIXED;
    }
    return SCAF_VERDICT_UNDECIDED;
}
