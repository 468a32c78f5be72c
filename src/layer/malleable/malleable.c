/* malleable.c — gathers the evidence of whether a program's results may depend on its team size, and keeps the verdict it leads to. */
#include "malleable.h"

#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "../core/bound.h"
#include "../core/identity.h"
#include "../core/page.h"
#include "../core/say.h"
#include "../core/settings.h"
#include "../core/site.h"
#include "scaf/startrule.h"
#include "../core/verdict.h"
#include "../sandbox/sandbox.h"
#include "checkteam.h"
#include "reason.h"
#include "report.h"
#include "scaf/rules.h"
#include "tlscheck.h"
#include "tlsobj.h"

/*
 * The rule (docs/layer.md, "Malleability"): a team that changes between
 * regions gives a different result only where a thread's identity carries
 * meaning beyond the region it runs in. This file gathers the evidence, each
 * piece at the cost of a PLT call the program makes anyway, and keeps it and
 * the verdict; verdict.c decides from it (pure, table-tested), reason.c words
 * it, src/common/rules.c reads the user's rules files and report.c writes SCAF_REPORT:
 *
 *  - omp_get_max_threads() outside any region (a "query") or
 *    omp_set_num_threads() (a "set"): the program knows a count. Alone this
 *    proves nothing; a set also bounds every team by the count set.
 *  - inside a region, omp_get_thread_num() without omp_get_num_threads():
 *    the region splits or indexes by thread number against a count it did not
 *    read there. With a known count, fixed. Any thread numbering in a program
 *    that set its count: fixed.
 *  - regions in code whose object has thread-local storage (threadprivate):
 *    per-thread state that may outlive the region. Each such site is checked
 *    once (tlscheck.c) and held meanwhile at the team of the latest region in
 *    such code, so that state handed from one region to the next stays with
 *    the threads that made it.
 *
 * After a known count (or for code with thread-local storage), each region's
 * first instance runs at the runtime's own team while the evidence comes in, so
 * that the first look never changes the result.
 */

_Atomic unsigned scaf_mall_epoch, scaf_mall_tid_epoch, scaf_mall_nth_epoch;
_Atomic int scaf_mall_fixed;

/* The program-wide evidence as bits of one word: one load at a region's start. */
enum ev_bits {
    EV_FORCED = 1u << 0,
    EV_CHECK = 1u << 1,
    EV_QUERIED = 1u << 2,
    EV_SET = 1u << 3,
    EV_TID_ONLY = 1u << 4,
    EV_TID_ANY = 1u << 5,
};

/* All of the module's state: one place, guarded by `lock` where more than one word changes. */
static struct {
    pthread_mutex_t lock;
    _Atomic uint32_t ev;   /* enum ev_bits */
    uint64_t check_seed;
    _Atomic uint64_t check_index;
    const char *report_path; /* SCAF_REPORT */
    int prepared;

    _Atomic unsigned bound;
    _Atomic unsigned seen_min;   /* smallest team read by omp_get_num_threads() alone, 0 = none */
    _Atomic unsigned tls_team;   /* team of the latest region in code with thread-local storage, 0 = none */
    _Atomic unsigned tls_held;   /* sites held for their TLS check now (SCAF_SITE_TLS_WAIT set) */
    _Atomic unsigned fixed_team;
    _Atomic uint32_t verdict, source;
    char reason[SCAF_REASON_MAX];

    _Atomic(void *) query_caller; /* first omp_get_max_threads()/omp_set_num_threads() outside a region, or the region */
    _Atomic int query_in_region;  /* the count was omp_get_num_threads() read in region query_caller */
    _Atomic int set_count;        /* the count the program last set, 0 = never */
    _Atomic(void *) set_caller;
    _Atomic(void *) tid_only_fn; /* first region seen with a thread number but no team size */
    _Atomic(void *) tid_fn;      /* first region seen with a thread number */

    _Atomic uint64_t team_bits[SCAF_CPUSET_WORDS]; /* team sizes used, for SCAF_REPORT */
    _Atomic uint64_t regions;

    /* The daemon's memory (docs/memory.md): SCAF_MEMORY, the start team, the sites learned for learned[]. */
    int memory;
    _Atomic int recalled; /* the forced verdict is the memory's: scaf check found it malleable (not the user's) */
    _Atomic unsigned started;
    struct scaf_site_memo learned[SCAF_MEMORY_SITES];
    unsigned nlearned; /* guarded by lock */
    int learned_full;
} M = {.lock = PTHREAD_MUTEX_INITIALIZER, .verdict = SCAF_VERDICT_MALLEABLE,
       .source = SCAF_SOURCE_DEFAULT, .reason = "no team-size call outside a region yet"};

static unsigned watch_team(void);

static inline int ev_has(uint32_t bit)
{
    return (atomic_load_explicit(&M.ev, memory_order_relaxed) & bit) != 0;
}

static struct scaf_evidence evidence(void)
{
    uint32_t e = atomic_load_explicit(&M.ev, memory_order_relaxed);

    return (struct scaf_evidence){
        .verdict = atomic_load_explicit(&M.verdict, memory_order_relaxed),
        .forced = (e & EV_FORCED) != 0,
        .check = (e & EV_CHECK) != 0,
        .queried = (e & EV_QUERIED) != 0,
        .set = (e & EV_SET) != 0,
        .tid_only = (e & EV_TID_ONLY) != 0,
        .tid_any = (e & EV_TID_ANY) != 0,
    };
}

/* What the reasons name, as of now. */
static struct scaf_reason_facts facts(void)
{
    return (struct scaf_reason_facts){
        .query_caller = atomic_load(&M.query_caller),
        .query_in_region = atomic_load(&M.query_in_region),
        .set_count = atomic_load(&M.set_count),
        .set_caller = atomic_load(&M.set_caller),
        .tid_only_fn = atomic_load(&M.tid_only_fn),
        .tid_fn = atomic_load(&M.tid_fn),
        .tls_held = atomic_load(&M.tls_held),
    };
}

/* ---- verdict changes ---- */

/* The verdict half of the page, through page.c; caller holds M.lock (the reason must not change meanwhile). */
static void publish_locked(struct scaf_page *page)
{
    if (!page)
        return;
    scaf_page_publish_verdict(page, atomic_load(&M.verdict), atomic_load(&M.source), M.reason,
                              atomic_load(&M.fixed_team));
    /* A new page (a restarted daemon) has neither: written again at every (re)connect. */
    if (atomic_load(&M.started))
        scaf_page_set_started(page, atomic_load(&M.started));
    if (M.nlearned)
        scaf_page_publish_learned(page, M.learned, 0, M.nlearned);
}

void scaf_malleable_publish(struct scaf_page *page)
{
    pthread_mutex_lock(&M.lock);
    publish_locked(page);
    pthread_mutex_unlock(&M.lock);
}

/* Only FIXED is final; evidence never unfixes a program. Caller holds M.lock. */
static void set_verdict_locked(uint32_t verdict, uint32_t source, const char *reason, unsigned team)
{
    if (atomic_load(&M.verdict) == SCAF_VERDICT_FIXED)
        return;
    if (verdict == SCAF_VERDICT_FIXED) {
        atomic_store(&M.fixed_team, team && team < watch_team() ? team : watch_team());
        atomic_store(&scaf_mall_fixed, 1);
    }
    scaf_say_into(M.reason, sizeof M.reason, "%s", reason);
    atomic_store(&M.source, source);
    atomic_store(&M.verdict, verdict);
    scaf_layer_log("%s (%s)", verdict == SCAF_VERDICT_FIXED       ? "team fixed"
                              : verdict == SCAF_VERDICT_MALLEABLE ? "malleable"
                                                                  : "undecided",
                   reason);
    publish_locked(scaf_page_get());
}

/* `team`: the team a fixed verdict keeps when less than the first-look team (0: that team). */
static void set_verdict(uint32_t verdict, uint32_t source, const char *reason, unsigned team)
{
    pthread_mutex_lock(&M.lock);
    set_verdict_locked(verdict, source, reason, team);
    pthread_mutex_unlock(&M.lock);
}

/* ---- the user's word ---- */

/*
 * A word that evidence does not judge (the user's, a rules line's, scaf
 * check's): the verdict stands from now on, as a fixed one does. The one path
 * for all of them; caller holds M.lock.
 */
static void force_locked(uint32_t verdict, uint32_t source, const char *reason)
{
    atomic_fetch_or(&M.ev, EV_FORCED);
    set_verdict_locked(verdict, source, reason, 0);
}

void scaf_malleable_init(void)
{
    int m = scaf_settings.malleable;

    atomic_store(&M.bound, scaf_bound_threads());
    M.report_path = scaf_settings.report;
    M.memory = scaf_settings.memory;
    if (scaf_settings.check) {
        M.check_seed = scaf_settings.check_seed;
        atomic_fetch_or(&M.ev, EV_CHECK);
        pthread_mutex_lock(&M.lock);
        force_locked(SCAF_VERDICT_MALLEABLE, SCAF_SOURCE_CHECK,
                     "scaf check: SCAF_CHECK_SEED gives every region a seeded team");
        pthread_mutex_unlock(&M.lock);
        return;
    }
    if (m >= 0) {
        pthread_mutex_lock(&M.lock);
        force_locked(m ? SCAF_VERDICT_MALLEABLE : SCAF_VERDICT_FIXED, SCAF_SOURCE_USER,
                     m ? "SCAF_MALLEABLE=yes (scaf run --malleable)" : "SCAF_MALLEABLE=no (scaf run --fixed)");
        pthread_mutex_unlock(&M.lock);
    }
}

/* A rules file's line that is not a rule, or a file that cannot be read: said with SCAF_VERBOSE, then passed over. */
static int log_problem(const struct scaf_rules_line *l, void *ctx)
{
    (void)ctx;
    if (l->line)
        scaf_layer_log("%s:%u: %s: ignored", l->file, l->line, l->why);
    else
        scaf_layer_log("%s: %s", l->file, l->why);
    return 0;
}

void scaf_malleable_prepare(void)
{
    char reason[SCAF_REASON_MAX];
    struct scaf_rules_line rule;

    pthread_mutex_lock(&M.lock);
    if (M.prepared || ev_has(EV_FORCED)) {
        M.prepared = 1;
        pthread_mutex_unlock(&M.lock);
        return;
    }
    M.prepared = 1;
    pthread_mutex_unlock(&M.lock);

    if (!scaf_rules_find_self(scaf_settings.rules, &rule, log_problem, NULL))
        return;
    scaf_say_into(reason, sizeof reason, "rule %s:%u: %s %s", rule.file, rule.line, rule.word, rule.pattern);
    pthread_mutex_lock(&M.lock);
    force_locked(rule.verdict, SCAF_SOURCE_RULES, reason);
    pthread_mutex_unlock(&M.lock);
}

void scaf_malleable_recall(const struct scaf_page *page)
{
    struct scaf_page_memory m;
    char reason[SCAF_REASON_MAX];

    if (!page || !M.memory)
        return;
    if (scaf_page_known_any(page, SCAF_MEMO_STALLS)) {
        /* The stall net fixed this program in an earlier run: whatever else is said of its results, one of its
         * regions did not finish with fewer threads than it asked for. */
        pthread_mutex_lock(&M.lock);
        set_verdict_locked(SCAF_VERDICT_FIXED, SCAF_SOURCE_EVIDENCE,
                           "remembered: a region of this program stalled with fewer threads than it asked for "
                           "(scaf forget judges it afresh)",
                           0);
        pthread_mutex_unlock(&M.lock);
        return;
    }
    scaf_page_read_memory(page, &m);
    if (!scaf_start_recalled_malleable(m.runs, m.verdict, m.source))
        return;
    scaf_reason_for(SCAF_WHY_CHECKED, NULL, 0, &(struct scaf_reason_facts){0}, reason, sizeof reason);
    pthread_mutex_lock(&M.lock);
    /* The user's word (read before the first HELLO) wins, and evidence that fixed the program already stands (a
     * page that came only with a later daemon). Otherwise check's word is the verdict, as a `malleable` rule's. */
    if (!ev_has(EV_FORCED) && atomic_load(&M.verdict) != SCAF_VERDICT_FIXED) {
        atomic_store(&M.recalled, 1);
        force_locked(SCAF_VERDICT_MALLEABLE, SCAF_SOURCE_CHECK, reason);
    }
    pthread_mutex_unlock(&M.lock);
}

uint32_t scaf_malleable_user_word(uint32_t *verdict, char *reason, size_t len)
{
    uint32_t source = 0;

    pthread_mutex_lock(&M.lock);
    /* The memory's word is not the user's: the start reads it from the page (common/startrule.c). */
    if (ev_has(EV_FORCED) && !atomic_load(&M.recalled)) {
        source = atomic_load(&M.source);
        *verdict = atomic_load(&M.verdict);
        scaf_say_into(reason, len, "%s", M.reason);
    }
    pthread_mutex_unlock(&M.lock);
    return source;
}

void scaf_malleable_count_seen(int *read, int *set)
{
    *read = ev_has(EV_QUERIED);
    *set = ev_has(EV_SET);
}

void scaf_malleable_start(unsigned team, int fixed, uint32_t source, const char *reason)
{
    pthread_mutex_lock(&M.lock);
    atomic_store(&M.started, team);
    /* Its count from now on, as if OMP_NUM_THREADS had said so: no team above it. */
    atomic_store(&M.bound, team);
    if (fixed) {
        /* Over any verdict, the user's fixed one included: the team it started with is the one it keeps, and the
         * reason says why. Evidence is no longer judged: a fixed team cannot be unfixed. */
        atomic_fetch_or(&M.ev, EV_FORCED);
        atomic_store(&M.fixed_team, team);
        atomic_store(&scaf_mall_fixed, 1);
        scaf_say_into(M.reason, sizeof M.reason, "%s", reason);
        atomic_store(&M.source, source);
        atomic_store(&M.verdict, SCAF_VERDICT_FIXED);
        scaf_layer_log("team fixed (%s)", reason);
    }
    publish_locked(scaf_page_get());
    pthread_mutex_unlock(&M.lock);
}

/* ---- the daemon's memory of sites ---- */

void scaf_malleable_site_new(struct scaf_site *s, void (*fn)(void *), const struct scaf_page *p)
{
    struct scaf_page_memory m;
    uint64_t object;
    uint32_t offset, memo, bits, expected = 0;
    int tls;
    char what[96];

    if (!M.memory || !s || !p || atomic_load_explicit(&scaf_mall_fixed, memory_order_relaxed) || ev_has(EV_FORCED))
        return;
    scaf_page_read_memory(p, &m);
    if (m.known_sites == 0)
        return;
    tls = scaf_tlsobj_identify(fn, &object, &offset);
    if (tls < 0 || object == 0)
        return;
    memo = scaf_page_known(p, object, offset);
    bits = scaf_verdict_memo_site(memo, tls != 0);
    if (!bits || !atomic_compare_exchange_strong(&s->verdict, &expected, bits))
        return;
    scaf_reason_describe((void *)fn, what, sizeof what);
    scaf_layer_log("region %s remembered %s: steered from its first instance", what,
                   tls ? "clean, its thread-local data per-region scratch" : "clean");
}

/* Whether a site's code is known to have thread-local storage (its verdict bits say so once it was judged). */
static int m_tls(struct scaf_site *s)
{
    return (atomic_load_explicit(&s->verdict, memory_order_relaxed) & SCAF_SITE_TLS) != 0;
}

/* Tells the memory what one site taught (learned[]), once per change; caller holds nothing. */
static void learn(struct scaf_site *s, void (*fn)(void *), uint32_t memo)
{
    uint32_t was = atomic_load(&s->memo), now = memo | SCAF_SITE_MEMO_SAID;
    unsigned i;
    uint64_t object;
    uint32_t offset;
    struct scaf_page *page;
    char what[96];

    if (was == now || !atomic_compare_exchange_strong(&s->memo, &was, now))
        return;
    /* Code outside any object with a build ID cannot be named in the next run: not remembered. */
    if (scaf_tlsobj_identify(fn, &object, &offset) < 0 || object == 0)
        return;
    pthread_mutex_lock(&M.lock);
    /* A site that teaches something new later (clean first, then fixing the program, or stalling) changes its
     * entry: the daemon keeps the first entry of a site, so a second one would be lost. It reads them when the
     * program has gone. */
    for (i = 0; i < M.nlearned; i++)
        if (M.learned[i].object == object && M.learned[i].offset == offset)
            break;
    if (i < M.nlearned || M.nlearned < SCAF_MEMORY_SITES) {
        if (i == M.nlearned)
            M.nlearned++;
        M.learned[i] = (struct scaf_site_memo){.object = object, .offset = offset, .bits = memo};
        page = scaf_page_get();
        if (page)
            scaf_page_publish_learned(page, M.learned, i, M.nlearned);
        scaf_reason_describe((void *)fn, what, sizeof what);
        scaf_layer_log("learned region %s: bits %#x (object %016llx offset %#x)", what, memo,
                       (unsigned long long)object, offset);
    } else if (!M.learned_full) {
        M.learned_full = 1;
        scaf_layer_log("more than %d sites settled: the rest are not remembered", SCAF_MEMORY_SITES);
    }
    pthread_mutex_unlock(&M.lock);
}

/* ---- evidence outside regions ---- */

/* The program read (`set` 0) or set its count: the first known count is remembered, then judged. */
static void count_known(void *caller, int set, int team)
{
    char reason[SCAF_REASON_MAX];
    struct scaf_evidence ev;
    uint32_t verdict;
    int why;

    pthread_mutex_lock(&M.lock);
    ev = evidence();
    if (set) {
        atomic_store(&M.set_count, team < 1 ? 1 : team);
        atomic_store(&M.set_caller, caller);
    }
    if (!ev.queried) {
        atomic_store(&M.query_caller, caller);
        atomic_store(&M.query_in_region, 0);
    }
    atomic_fetch_or(&M.ev, EV_QUERIED | (set ? EV_SET : 0));
    verdict = scaf_verdict_count_known(&ev, set != 0, &why);
    if (verdict != ev.verdict || why != SCAF_WHY_NONE) {
        if (why != SCAF_WHY_NONE) {
            struct scaf_reason_facts f = facts();
            scaf_reason_for(why, NULL, 0, &f, reason, sizeof reason);
        } else {
            scaf_reason_count_known(caller, set, team, reason, sizeof reason);
        }
        set_verdict_locked(verdict, SCAF_SOURCE_EVIDENCE, reason, 0);
    }
    pthread_mutex_unlock(&M.lock);
}

void scaf_malleable_query(void *caller)
{
    if (scaf_sandbox_in_child() || ev_has(EV_QUERIED))
        return;
    if (ev_has(EV_FORCED)) {
        /* Remembered for reasons, judged by nobody. */
        atomic_fetch_or(&M.ev, EV_QUERIED);
        return;
    }
    count_known(caller, 0, 0);
}

void scaf_malleable_set(void *caller, int team)
{
    if (scaf_sandbox_in_child())
        return;
    /* Every team is bounded by what the program asked for from now on, whatever the verdict. */
    atomic_store(&M.bound, team < 1 ? 1u : (unsigned)team);
    pthread_mutex_lock(&M.lock);
    /* A fixed team follows the program's own choice (the user's --fixed, or a fixed verdict). */
    if (atomic_load(&M.verdict) == SCAF_VERDICT_FIXED) {
        atomic_store(&M.fixed_team, scaf_malleable_bound());
        publish_locked(scaf_page_get());
    }
    pthread_mutex_unlock(&M.lock);
    if (ev_has(EV_FORCED))
        return;
    count_known(caller, 1, team);
}

/* ---- evidence inside regions ---- */

/* The adapter saw the first omp_get_thread_num() of an epoch at the outermost level. */
void scaf_malleable_saw_tid(unsigned epoch)
{
    atomic_store_explicit(&scaf_mall_tid_epoch, epoch, memory_order_relaxed);
}

void scaf_malleable_saw_nth(unsigned epoch)
{
    atomic_store_explicit(&scaf_mall_nth_epoch, epoch, memory_order_relaxed);
}

int scaf_malleable_region_begin(struct scaf_mall_region *m, struct scaf_site *site, void (*fn)(void *),
                                unsigned num_threads, int strict, struct scaf_team_in *in)
{
    /* watch_team() inlined over one reading of the bound, this runs at every region. A fixed program
     * runs at the team it was fixed at, or else at the first-look team. */
    unsigned seen = atomic_load_explicit(&M.seen_min, memory_order_relaxed);
    unsigned fixed = atomic_load_explicit(&M.fixed_team, memory_order_relaxed);
    struct scaf_mode_in mi;

    in->bound = scaf_malleable_bound();
    in->watch_team = seen && seen < in->bound ? seen : in->bound;
    in->fixed_team = fixed ? fixed : in->watch_team;
    m->fn = fn;
    m->site = site;
    m->check_due = 0;
    /* Not an atomic increment: two masters opening regions at once only blur whose calls count. */
    m->epoch = atomic_load_explicit(&scaf_mall_epoch, memory_order_relaxed) + 1;
    atomic_store_explicit(&scaf_mall_epoch, m->epoch, memory_order_relaxed);
    mi.ev = evidence();
    mi.clause = num_threads == 0                         ? SCAF_CLAUSE_NONE
                : !strict && num_threads == in->bound ? SCAF_CLAUSE_DEFAULT
                                                         : SCAF_CLAUSE_OTHER;
    mi.fixed = atomic_load_explicit(&scaf_mall_fixed, memory_order_relaxed) != 0;
    mi.site_known = site != NULL;
    mi.site = site ? atomic_load_explicit(&site->verdict, memory_order_relaxed) : 0;
    /* The object lookup only for a site not seen yet; a seen one carries the answer in its bits. */
    mi.tls = mi.site ? (mi.site & SCAF_SITE_TLS) != 0 : (mi.clause != SCAF_CLAUSE_OTHER && !mi.fixed &&
                                                         !mi.ev.forced && scaf_tlsobj_has_tls(fn));
    m->tls = mi.tls;
    m->mode = in->mode = scaf_verdict_mode(&mi);
    if (m->mode == SCAF_TEAM_KEEP) {
        /* Started with its share: only the starting thread's nthreads-var says so (core/team.h). */
        in->pinned = atomic_load_explicit(&M.started, memory_order_relaxed) != 0;
    } else if (m->mode == SCAF_TEAM_CHECK) {
        uint64_t i = atomic_fetch_add_explicit(&M.check_index, 1, memory_order_relaxed);
        in->check_team = scaf_checkteam_pick(M.check_seed, i, in->bound);
    } else if (m->mode == SCAF_TEAM_WATCH && m->tls) {
        /* State handed from the latest region in such code stays with the threads that made it. */
        unsigned t = atomic_load_explicit(&M.tls_team, memory_order_relaxed);
        if (t && t < in->watch_team)
            in->watch_team = t;
        m->check_due = (mi.site & SCAF_SITE_TLS_WAIT) &&
                       atomic_load_explicit(&site->tls_result, memory_order_relaxed) == SCAF_TLS_NONE;
    }
    return m->mode;
}

void scaf_malleable_region_library(struct scaf_mall_region *m, struct scaf_site *site, void (*fn)(void *))
{
    m->fn = fn;
    m->site = site;
    m->check_due = 0;
    m->tls = 0;
    m->mode = SCAF_TEAM_LIBRARY;
    /* A new epoch: the library's own omp_get_thread_num() calls (OpenBLAS picks a buffer by it) are nobody's. */
    m->epoch = atomic_load_explicit(&scaf_mall_epoch, memory_order_relaxed) + 1;
    atomic_store_explicit(&scaf_mall_epoch, m->epoch, memory_order_relaxed);
}

/*
 * The program has read a team of `team` inside a region: a region it has not
 * shown to be team-relative (a first look, or a fixed team) gets no more than
 * that, since the count may have sized per-thread buffers. Regions seen to
 * read their own team size keep the whole bound, so teams can grow back.
 */
static void lower_cap(unsigned team)
{
    unsigned cur = atomic_load(&M.seen_min);

    while (team >= 1 && (cur == 0 || team < cur) && !atomic_compare_exchange_weak(&M.seen_min, &cur, team))
        ;
}

void scaf_malleable_region_end(const struct scaf_mall_region *m, unsigned team)
{
    struct scaf_judge_in ji;
    struct scaf_judgement j;
    struct scaf_site *s = m->site;
    char reason[SCAF_REASON_MAX];
    unsigned held;
    uint32_t memo, ev;

    if (M.report_path) {
        if (team >= 1 && team <= SCAF_MAX_CPUS)
            atomic_fetch_or_explicit(&M.team_bits[(team - 1) / 64], 1ull << ((team - 1) % 64),
                                     memory_order_relaxed);
        atomic_fetch_add_explicit(&M.regions, 1, memory_order_relaxed);
    }
    if (m->mode == SCAF_TEAM_KEEP || m->mode == SCAF_TEAM_CHECK || m->mode == SCAF_TEAM_LIBRARY)
        return;
    if (m->tls)
        atomic_store_explicit(&M.tls_team, team, memory_order_relaxed);
    ji.tid = atomic_load_explicit(&scaf_mall_tid_epoch, memory_order_relaxed) == m->epoch;
    ji.nth = atomic_load_explicit(&scaf_mall_nth_epoch, memory_order_relaxed) == m->epoch;
    ji.site = s ? atomic_load_explicit(&s->verdict, memory_order_relaxed) : 0;
    /* The common cases end here after four loads: a seen site whose threads neither number themselves nor read
     * the team size, or do both (a worksharing loop) in a program known to number its threads. The judgement
     * would change nothing (verdict.h); gathering its inputs and making it took about 170 instructions at every
     * region of a scikit-learn fit, whose Cython loops do both (docs/results.md, "One pool task, in
     * instructions"). */
    ev = atomic_load_explicit(&M.ev, memory_order_relaxed);
    if (!scaf_verdict_may_change(ji.site, ji.tid, ji.nth, (ev & EV_TID_ANY) != 0, (ev & EV_SET) != 0))
        return;
    ji.ev = evidence();
    ji.mode = m->mode;
    ji.tls = m->tls;
    ji.tls_check = SCAF_TLS_NONE;
    if (s && (ji.site & SCAF_SITE_TLS_WAIT)) {
        scaf_tlscheck_poll();
        ji.tls_check = (int)atomic_load(&s->tls_result);
    }
    held = atomic_load(&M.tls_held);
    ji.held_elsewhere = held - ((ji.site & SCAF_SITE_TLS_WAIT) && held ? 1u : 0u);
    scaf_verdict_judge(&ji, &j);
    if (j.lower_cap)
        lower_cap(team);
    if (ji.ev.forced)
        return;
    if (M.memory && s && scaf_verdict_memo_learn(&ji, &j, &memo))
        learn(s, m->fn, memo);
    /* Only the thread whose update lands counts the site in or out of the held ones. */
    if (s && j.site != ji.site && atomic_compare_exchange_strong(&s->verdict, &ji.site, j.site)) {
        if ((j.site & SCAF_SITE_TLS_WAIT) && !(ji.site & SCAF_SITE_TLS_WAIT))
            atomic_fetch_add(&M.tls_held, 1);
        else if (!(j.site & SCAF_SITE_TLS_WAIT) && (ji.site & SCAF_SITE_TLS_WAIT))
            atomic_fetch_sub(&M.tls_held, 1);
    }
    if (j.tid_any && !ji.ev.tid_any) {
        void *expected = NULL;
        atomic_compare_exchange_strong(&M.tid_fn, &expected, (void *)m->fn);
        atomic_fetch_or(&M.ev, EV_TID_ANY);
    }
    if (j.tid_only && !ji.ev.tid_only) {
        void *expected = NULL;
        atomic_compare_exchange_strong(&M.tid_only_fn, &expected, (void *)m->fn);
        atomic_fetch_or(&M.ev, EV_TID_ONLY);
    }
    if (j.escaped && !ji.ev.queried) {
        pthread_mutex_lock(&M.lock);
        if (!ev_has(EV_QUERIED)) {
            atomic_store(&M.query_in_region, 1);
            atomic_store(&M.query_caller, (void *)m->fn);
            atomic_fetch_or(&M.ev, EV_QUERIED);
        }
        pthread_mutex_unlock(&M.lock);
    }
    if (j.why != SCAF_WHY_NONE) {
        struct scaf_reason_facts f = facts();
        scaf_reason_for(j.why, (void *)m->fn, team, &f, reason, sizeof reason);
        /* Thread-local state handed between regions stays right only at the team that made it. */
        set_verdict(j.verdict, SCAF_SOURCE_EVIDENCE, reason,
                    j.why == SCAF_WHY_TLS_CARRIED || j.why == SCAF_WHY_TLS_UNCHECKED
                        ? atomic_load_explicit(&M.tls_team, memory_order_relaxed)
                        : 0);
    }
}

void scaf_malleable_stalled(void (*fn)(void *), struct scaf_site *site, unsigned team, unsigned asked, double secs)
{
    char what[96], reason[SCAF_REASON_MAX];

    scaf_reason_describe((void *)fn, what, sizeof what);
    scaf_say_into(reason, sizeof reason,
                  "region %s ran %.0f s with %u of the %u threads it asked for, its thread only yielding or "
                  "waiting: its work may wait for threads it was not given",
                  what, secs, team, asked);
    if (M.memory && site)
        learn(site, fn, SCAF_MEMO_FIXES | SCAF_MEMO_STALLS | (m_tls(site) ? SCAF_MEMO_TLS : 0u));
    pthread_mutex_lock(&M.lock);
    /* Forced or not: a word about results (the user's malleable) does not make a stalled region finish. */
    atomic_fetch_or(&M.ev, EV_FORCED);
    set_verdict_locked(SCAF_VERDICT_FIXED, SCAF_SOURCE_EVIDENCE, reason, 0);
    pthread_mutex_unlock(&M.lock);
}

unsigned scaf_malleable_bound(void)
{
    unsigned c = atomic_load_explicit(&M.bound, memory_order_relaxed);
    unsigned b = scaf_bound_threads();

    if (c == 0)
        c = b;
    return c < 1 ? 1 : c;
}

/* The team of a first look (or a fixed team): the bound, or less if a region read a smaller team. */
static unsigned watch_team(void)
{
    unsigned bound = scaf_malleable_bound(), seen = atomic_load_explicit(&M.seen_min, memory_order_relaxed);
    return seen && seen < bound ? seen : bound;
}


/* ---- SCAF_REPORT: one JSON line at exit, for scaf check ---- */

__attribute__((destructor)) static void report_at_exit(void)
{
    struct scaf_report r = {.pid = (int)getpid()};
    char reason[SCAF_REASON_MAX];

    if (!M.report_path || atomic_load(&M.regions) == 0 || scaf_sandbox_in_child())
        return;
    pthread_mutex_lock(&M.lock);
    memcpy(reason, M.reason, sizeof reason);
    r.reason = reason;
    r.verdict = atomic_load(&M.verdict);
    r.source = atomic_load(&M.source);
    r.regions = atomic_load(&M.regions);
    pthread_mutex_unlock(&M.lock);
    for (int w = 0; w < SCAF_CPUSET_WORDS; w++)
        r.team_bits[w] = atomic_load(&M.team_bits[w]);
    /* The program as the memory names it, whatever SCAF_MEMORY says: scaf check records its verdict under it. */
    r.key = scaf_identity_program(&r.program);
    scaf_report_write(M.report_path, &r);
}
