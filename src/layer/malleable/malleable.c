/* malleable.c — judges from evidence, the user's word and rules files whether a program's results may depend on its team size. */
#include "malleable.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "../core/bound.h"
#include "../core/page.h"
#include "../core/say.h"
#include "../core/settings.h"
#include "../core/site.h"
#include "../core/verdict.h"
#include "../sandbox/sandbox.h"
#include "tlscheck.h"

/*
 * The rule (docs/layer.md, "Malleability"): a team that changes between
 * regions gives a different result only where a thread's identity carries
 * meaning beyond the region it runs in. This file gathers the evidence, each
 * piece at the cost of a PLT call the program makes anyway, and keeps it;
 * verdict.c decides from it (pure, table-tested):
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

#define OBJ_CACHE 32

/* The program-wide evidence as bits of one word: one load at a region's start. */
enum ev_bits {
    EV_FORCED = 1u << 0,
    EV_CHECK = 1u << 1,
    EV_QUERIED = 1u << 2,
    EV_SET = 1u << 3,
    EV_TID_ONLY = 1u << 4,
    EV_TID_ANY = 1u << 5,
};

struct tls_obj {
    uintptr_t lo, hi; /* an executable PT_LOAD range of the object */
    int tls;
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
    _Atomic unsigned fixed_team;
    _Atomic uint32_t verdict, source;
    char reason[SCAF_REASON_MAX];

    _Atomic(void *) query_caller; /* first omp_get_max_threads()/omp_set_num_threads() outside a region, or the region */
    _Atomic int query_in_region;  /* the count was omp_get_num_threads() read in region query_caller */
    _Atomic int set_count;        /* the count the program last set, 0 = never */
    _Atomic(void *) set_caller;
    _Atomic(void *) tid_only_fn; /* first region seen with a thread number but no team size */
    _Atomic(void *) tid_fn;      /* first region seen with a thread number */

    struct tls_obj objs[OBJ_CACHE];
    int nobjs;

    _Atomic uint64_t team_bits[SCAF_CPUSET_WORDS]; /* team sizes used, for SCAF_REPORT */
    _Atomic uint64_t regions;
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

/* ---- describing code addresses for reasons ---- */

/* snprintf for texts that may be cut short on purpose (reasons, paths in reasons). */
__attribute__((format(printf, 3, 4))) static void say_into(char *out, size_t len, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(out, len, fmt, ap);
    va_end(ap);
}

/* "func (object)" for a code address, as dladdr sees it; stripped code gives "object+0xoff". */
static void describe(void *addr, char *out, size_t len)
{
    Dl_info info;
    const char *obj, *slash;

    if (!addr || !dladdr(addr, &info) || !info.dli_fname) {
        say_into(out, len, "%p", addr);
        return;
    }
    obj = info.dli_fname[0] ? info.dli_fname : program_invocation_name;
    slash = strrchr(obj, '/');
    obj = slash ? slash + 1 : obj;
    if (info.dli_sname)
        say_into(out, len, "%s (%s)", info.dli_sname, obj);
    else
        say_into(out, len, "%s+0x%lx", obj,
                 (unsigned long)((uintptr_t)addr - (uintptr_t)info.dli_fbase));
}

/* What the program's count query was, for reasons. */
static void query_text(char *out, size_t len)
{
    char who[96];

    describe(atomic_load(&M.query_caller), who, sizeof who);
    if (atomic_load(&M.query_in_region))
        say_into(out, len, "region %s read the team size", who);
    else if (atomic_load(&M.set_count) > 0 && atomic_load(&M.set_caller) == atomic_load(&M.query_caller))
        say_into(out, len, "omp_set_num_threads(%d) outside regions from %s", atomic_load(&M.set_count), who);
    else
        say_into(out, len, "omp_get_max_threads() outside regions from %s", who);
}

/* ---- verdict changes ---- */

/* The verdict half of the page, through page.c; caller holds M.lock (the reason must not change meanwhile). */
static void publish_locked(struct scaf_page *page)
{
    if (!page)
        return;
    scaf_page_publish_verdict(page, atomic_load(&M.verdict), atomic_load(&M.source), M.reason,
                              atomic_load(&M.fixed_team));
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
    say_into(M.reason, sizeof M.reason, "%s", reason);
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

void scaf_malleable_init(void)
{
    int m = scaf_settings.malleable;

    atomic_store(&M.bound, scaf_bound_threads());
    M.report_path = scaf_settings.report;
    if (scaf_settings.check) {
        M.check_seed = scaf_settings.check_seed;
        atomic_fetch_or(&M.ev, EV_CHECK | EV_FORCED);
        set_verdict(SCAF_VERDICT_MALLEABLE, SCAF_SOURCE_CHECK,
                    "scaf check: SCAF_CHECK_SEED gives every region a seeded team", 0);
        return;
    }
    if (m >= 0) {
        atomic_fetch_or(&M.ev, EV_FORCED);
        set_verdict(m ? SCAF_VERDICT_MALLEABLE : SCAF_VERDICT_FIXED, SCAF_SOURCE_USER,
                    m ? "SCAF_MALLEABLE=yes (scaf run --malleable)"
                      : "SCAF_MALLEABLE=no (scaf run --fixed)", 0);
    }
}

/*
 * One rules file: "malleable PATTERN" or "fixed PATTERN" per line, '#'
 * comments. Returns 1 and fills *verdict/where on the first match, else 0.
 */
static int rules_match(const char *file, const char *exe, const char *base, uint32_t *verdict,
                       char *where, size_t wlen)
{
    FILE *f = fopen(file, "re");
    char line[1024];
    int lineno = 0, found = 0;

    if (!f)
        return 0;
    while (!found && fgets(line, sizeof line, f)) {
        char word[32], pat[PATH_MAX], extra[2];
        char *hash = strchr(line, '#');
        int n;

        lineno++;
        if (hash)
            *hash = 0;
        n = sscanf(line, "%31s %4095s %1s", word, pat, extra);
        if (n <= 0)
            continue;
        if (n != 2 || (strcmp(word, "malleable") != 0 && strcmp(word, "fixed") != 0)) {
            scaf_layer_log("%s:%d: not a rule (want 'malleable PATTERN' or 'fixed PATTERN'): ignored",
                           file, lineno);
            continue;
        }
        if (fnmatch(pat, strchr(pat, '/') ? exe : base, 0) == 0) {
            *verdict = strcmp(word, "fixed") == 0 ? SCAF_VERDICT_FIXED : SCAF_VERDICT_MALLEABLE;
            say_into(where, wlen, "%s:%d: %s %s", file, lineno, word, pat);
            found = 1;
        }
    }
    fclose(f);
    return found;
}

void scaf_malleable_prepare(void)
{
    char exe[PATH_MAX], files[8][PATH_MAX], where[PATH_MAX + 64];
    const char *base, *list = scaf_settings.rules;
    uint32_t verdict;
    ssize_t n;
    int nfiles = 0;

    pthread_mutex_lock(&M.lock);
    if (M.prepared || ev_has(EV_FORCED)) {
        M.prepared = 1;
        pthread_mutex_unlock(&M.lock);
        return;
    }
    M.prepared = 1;
    pthread_mutex_unlock(&M.lock);

    n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return;
    exe[n] = 0;
    base = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;

    if (list) {
        /* SCAF_RULES: a colon-separated list (up to 8 files), replacing the default locations. */
        const char *p = list;
        while (*p && nfiles < 8) {
            size_t len = strcspn(p, ":");
            if (len > 0 && len < PATH_MAX)
                say_into(files[nfiles++], PATH_MAX, "%.*s", (int)len, p);
            p += len + (p[len] == ':');
        }
    } else {
        const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
        if (xdg && *xdg == '/')
            say_into(files[nfiles++], PATH_MAX, "%s/scaf/rules", xdg);
        else if (home && *home)
            say_into(files[nfiles++], PATH_MAX, "%s/.config/scaf/rules", home);
        say_into(files[nfiles++], PATH_MAX, "/etc/scaf/rules");
    }
    for (int i = 0; i < nfiles; i++)
        if (rules_match(files[i], exe, base, &verdict, where, sizeof where)) {
            char reason[SCAF_REASON_MAX];
            say_into(reason, sizeof reason, "rule %s", where);
            pthread_mutex_lock(&M.lock);
            atomic_fetch_or(&M.ev, EV_FORCED);
            set_verdict_locked(verdict, SCAF_SOURCE_RULES, reason, 0);
            pthread_mutex_unlock(&M.lock);
            return;
        }
}

/* ---- reasons: the rule verdict.c applied, with the names of the code it saw ---- */

/* The reason text for a judgement about region `fn` (SCAF_WHY_*). */
static void reason_for(int why, void *fn, unsigned team, char *out, size_t len)
{
    char what[96], who[160], other[96];

    describe(fn, what, sizeof what);
    query_text(who, sizeof who);
    switch (why) {
    case SCAF_WHY_ESCAPED:
        say_into(out, len, "region %s read the team size (%u) without thread numbers: watching each region once",
                 what, team);
        return;
    case SCAF_WHY_ESCAPED_TID:
        say_into(out, len, "a region numbers threads without omp_get_num_threads(); region %s read the team "
                 "size without thread numbers", what);
        return;
    case SCAF_WHY_TID_ONLY: {
        void *tid_fn = atomic_load(&M.tid_only_fn);
        describe(tid_fn ? tid_fn : fn, other, sizeof other);
        say_into(out, len, "region %s numbers threads without omp_get_num_threads(); %s", other, who);
        return;
    }
    case SCAF_WHY_SET_TID: {
        void *tid_fn = atomic_load(&M.tid_fn);
        char set_who[96];
        describe(tid_fn ? tid_fn : fn, other, sizeof other);
        describe(atomic_load(&M.set_caller), set_who, sizeof set_who);
        say_into(out, len, "region %s numbers threads; omp_set_num_threads(%d) outside regions from %s", other,
                 atomic_load(&M.set_count), set_who);
        return;
    }
    case SCAF_WHY_TLS_CARRIED:
        say_into(out, len, "region %s depends on thread-local (threadprivate) data left by earlier regions",
                 what);
        return;
    case SCAF_WHY_TLS_UNCHECKED:
        say_into(out, len, "region %s runs in code with thread-local (threadprivate) data that could not be "
                 "checked", what);
        return;
    case SCAF_WHY_TLS_WAIT:
        say_into(out, len, "region %s runs in code with thread-local (threadprivate) data: checking whether "
                 "it outlives the region", what);
        return;
    case SCAF_WHY_CLEAN:
        if (atomic_load(&M.query_caller))
            say_into(out, len, "%s, but every region seen reads its own team size or none", who);
        else
            say_into(out, len, "its thread-local data is per-region scratch (region %s checked)", what);
        return;
    default:
        say_into(out, len, "region %s", what);
        return;
    }
}

/* ---- evidence outside regions ---- */

/* The program read (`set` 0) or set its count: the first known count is remembered, then judged. */
static void count_known(void *caller, int set, int team)
{
    char reason[SCAF_REASON_MAX], who[96];
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
            reason_for(why, NULL, 0, reason, sizeof reason);
        } else {
            describe(caller, who, sizeof who);
            if (set)
                say_into(reason, sizeof reason,
                         "omp_set_num_threads(%d) outside regions from %s: watching each region once", team, who);
            else
                say_into(reason, sizeof reason,
                         "omp_get_max_threads() outside regions from %s: watching each region once", who);
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

struct obj_search {
    uintptr_t addr;
    struct tls_obj found;
    int hit;
};

static int find_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct obj_search *s = arg;
    int tls = 0, in = 0;

    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

        if (ph->p_type == PT_TLS && ph->p_memsz > 0)
            tls = 1;
        if (ph->p_type == PT_LOAD && s->addr >= lo && s->addr < lo + ph->p_memsz) {
            in = 1;
            s->found.lo = lo;
            s->found.hi = lo + ph->p_memsz;
        }
    }
    if (!in)
        return 0;
    s->found.tls = tls;
    s->hit = 1;
    return 1;
}

/* Whether the object holding `fn` has thread-local storage (threadprivate, __thread). Cached. */
static int object_has_tls(void (*fn)(void *))
{
    uintptr_t a = (uintptr_t)(void *)fn;
    struct obj_search s = {.addr = a};
    int tls;

    pthread_mutex_lock(&M.lock);
    for (int i = 0; i < M.nobjs; i++)
        if (a >= M.objs[i].lo && a < M.objs[i].hi) {
            tls = M.objs[i].tls;
            pthread_mutex_unlock(&M.lock);
            return tls;
        }
    pthread_mutex_unlock(&M.lock);
    dl_iterate_phdr(find_object, &s);
    if (!s.hit)
        return 0;
    pthread_mutex_lock(&M.lock);
    if (M.nobjs < OBJ_CACHE)
        M.objs[M.nobjs++] = s.found;
    pthread_mutex_unlock(&M.lock);
    return s.found.tls;
}

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
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
                                                         !mi.ev.forced && object_has_tls(fn));
    m->tls = mi.tls;
    m->mode = in->mode = scaf_verdict_mode(&mi);
    if (m->mode == SCAF_TEAM_CHECK) {
        uint64_t i = atomic_fetch_add_explicit(&M.check_index, 1, memory_order_relaxed);
        in->check_team = 1 + (unsigned)(mix64(M.check_seed * 0x100000001b3ull ^ mix64(i)) % in->bound);
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

    if (M.report_path) {
        if (team >= 1 && team <= SCAF_MAX_CPUS)
            atomic_fetch_or_explicit(&M.team_bits[(team - 1) / 64], 1ull << ((team - 1) % 64),
                                     memory_order_relaxed);
        atomic_fetch_add_explicit(&M.regions, 1, memory_order_relaxed);
    }
    if (m->mode == SCAF_TEAM_KEEP || m->mode == SCAF_TEAM_CHECK)
        return;
    if (m->tls)
        atomic_store_explicit(&M.tls_team, team, memory_order_relaxed);
    ji.tid = atomic_load_explicit(&scaf_mall_tid_epoch, memory_order_relaxed) == m->epoch;
    ji.nth = atomic_load_explicit(&scaf_mall_nth_epoch, memory_order_relaxed) == m->epoch;
    ji.site = s ? atomic_load_explicit(&s->verdict, memory_order_relaxed) : 0;
    /* The common case, a seen site whose threads neither number themselves nor read the team size,
     * ends here after three loads (the judgement would change nothing). */
    if (ji.site && !ji.tid && !ji.nth && !(ji.site & SCAF_SITE_TLS_WAIT))
        return;
    ji.ev = evidence();
    ji.mode = m->mode;
    ji.tls = m->tls;
    ji.tls_check = SCAF_TLS_NONE;
    if (s && (ji.site & SCAF_SITE_TLS_WAIT)) {
        scaf_tlscheck_poll();
        ji.tls_check = (int)atomic_load(&s->tls_result);
    }
    scaf_verdict_judge(&ji, &j);
    if (j.lower_cap)
        lower_cap(team);
    if (ji.ev.forced)
        return;
    if (s && j.site != ji.site)
        atomic_store_explicit(&s->verdict, j.site, memory_order_relaxed);
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
        reason_for(j.why, (void *)m->fn, team, reason, sizeof reason);
        /* Thread-local state handed between regions stays right only at the team that made it. */
        set_verdict(j.verdict, SCAF_SOURCE_EVIDENCE, reason,
                    j.why == SCAF_WHY_TLS_CARRIED || j.why == SCAF_WHY_TLS_UNCHECKED
                        ? atomic_load_explicit(&M.tls_team, memory_order_relaxed)
                        : 0);
    }
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

static const char *verdict_word(uint32_t v)
{
    return v == SCAF_VERDICT_FIXED ? "fixed" : v == SCAF_VERDICT_MALLEABLE ? "malleable" : "undecided";
}

static const char *source_word(uint32_t s)
{
    static const char *const w[] = {"default", "evidence", "user", "rules", "check"};
    return s < sizeof w / sizeof w[0] ? w[s] : "default";
}

__attribute__((destructor)) static void report_at_exit(void)
{
    char buf[1024], esc[2 * SCAF_REASON_MAX];
    size_t k = 0;
    int n, fd, first = 1;

    if (!M.report_path || atomic_load(&M.regions) == 0 || scaf_sandbox_in_child())
        return;
    pthread_mutex_lock(&M.lock);
    for (const char *p = M.reason; *p && k + 2 < sizeof esc; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '"' || c == '\\')
            esc[k++] = '\\';
        esc[k++] = c < 0x20 ? ' ' : (char)c;
    }
    esc[k] = 0;
    char exe[512] = "";
    ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[el > 0 ? el : 0] = 0;
    for (char *q = exe; *q; q++)
        if (*q == '"' || *q == '\\' || (unsigned char)*q < 0x20)
            *q = '?';
    n = snprintf(buf, sizeof buf,
                 "{\"pid\":%d,\"exe\":\"%s\",\"verdict\":\"%s\",\"source\":\"%s\",\"reason\":\"%s\",\"regions\":%llu,"
                 "\"teams\":[",
                 (int)getpid(), exe, verdict_word(atomic_load(&M.verdict)),
                 source_word(atomic_load(&M.source)), esc,
                 (unsigned long long)atomic_load(&M.regions));
    pthread_mutex_unlock(&M.lock);
    for (int t = 1; t <= SCAF_MAX_CPUS && n > 0 && n < (int)sizeof buf - 16; t++)
        if (atomic_load(&M.team_bits[(t - 1) / 64]) & (1ull << ((t - 1) % 64))) {
            n += snprintf(buf + n, sizeof buf - (size_t)n, "%s%d", first ? "" : ",", t);
            first = 0;
        }
    if (n <= 0 || n > (int)sizeof buf - 3)
        return;
    n += snprintf(buf + n, sizeof buf - (size_t)n, "]}\n");
    fd = open(M.report_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    /* One write: lines of several processes appending to one file never interleave. */
    if (write(fd, buf, (size_t)n) < 0)
        scaf_layer_log("SCAF_REPORT %s: %s", M.report_path, strerror(errno));
    close(fd);
}
