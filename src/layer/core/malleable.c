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

#include "../estimate/experiment.h"
#include "bound.h"
#include "page.h"
#include "say.h"
#include "settings.h"

/*
 * The rule (docs/layer.md, "Malleability"): a team that changes between
 * regions gives a different result only where a thread's identity carries
 * meaning beyond the region it runs in. The layer sees three kinds of
 * evidence, each at the cost of a PLT call the program makes anyway:
 *
 *  - omp_set_num_threads() outside any region: the program chose its team.
 *    Fixed at once.
 *  - omp_get_max_threads() outside any region (a "query"): the program knows
 *    a count. Alone this proves nothing (almost every program prints it).
 *  - inside a region, omp_get_thread_num() without omp_get_num_threads():
 *    the region splits or indexes by thread number against a count it did not
 *    read there, i.e. the queried one. With a query, fixed.
 *  - inside a region, omp_get_thread_num() in code whose object has
 *    thread-local storage (threadprivate): per-thread state that can outlive
 *    the region. Fixed.
 *
 * After a query (or for code with thread-local storage), each region's
 * first instance runs at the runtime's own team while the evidence comes in, so
 * that the first look never changes the result.
 */

_Atomic unsigned scaf_mall_epoch, scaf_mall_tid_epoch, scaf_mall_nth_epoch;
_Atomic int scaf_mall_fixed;

#define SITE_SLOTS 1024 /* power of two */
#define OBJ_CACHE 32

/* Bits of a site's state, 0 until its first instance ended. */
enum site_state {
    SITE_SEEN = 1,     /* an instance ended: later ones are steered */
    SITE_TLS = 2,      /* its code's object has thread-local storage (looked up once) */
};

struct site {
    _Atomic(void *) fn;
    _Atomic int state;
};

struct tls_obj {
    uintptr_t lo, hi; /* an executable PT_LOAD range of the object */
    int tls;
};

/* All of the module's state: one place, guarded by `lock` where more than one word changes. */
static struct {
    pthread_mutex_t lock;
    _Atomic int forced; /* the user, a rule or scaf check decided: evidence is not judged */
    int check;         /* SCAF_CHECK_SEED given */
    uint64_t check_seed;
    _Atomic uint64_t check_index;
    const char *report_path; /* SCAF_REPORT */
    int prepared;

    _Atomic unsigned cap;
    _Atomic int cap_lowered;     /* the program saw a smaller team than the runtime would give */
    _Atomic unsigned seen_min;   /* smallest team read by omp_get_num_threads() alone, 0 = none */
    _Atomic unsigned fixed_team;
    _Atomic uint32_t verdict, source;
    char reason[SCAF_REASON_MAX];

    _Atomic(void *) query_caller; /* first omp_get_max_threads() outside a region, or the region */
    _Atomic int query_in_region;  /* the count was omp_get_num_threads() read in region query_caller */
    _Atomic int query_seen;
    _Atomic(void *) tid_only_fn; /* first region seen with a thread number but no team size */

    struct site sites[SITE_SLOTS];
    struct tls_obj objs[OBJ_CACHE];
    int nobjs;

    _Atomic uint64_t team_bits[SCAF_CPUSET_WORDS]; /* team sizes used, for SCAF_REPORT */
    _Atomic uint64_t regions;
} M = {.lock = PTHREAD_MUTEX_INITIALIZER, .verdict = SCAF_VERDICT_MALLEABLE,
       .source = SCAF_SOURCE_DEFAULT, .reason = "no team-size call outside a region yet"};

static unsigned watch_team(void);

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
static void set_verdict_locked(uint32_t verdict, uint32_t source, const char *reason)
{
    if (atomic_load(&M.verdict) == SCAF_VERDICT_FIXED)
        return;
    if (verdict == SCAF_VERDICT_FIXED) {
        atomic_store(&M.fixed_team, watch_team());
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

static void set_verdict(uint32_t verdict, uint32_t source, const char *reason)
{
    pthread_mutex_lock(&M.lock);
    set_verdict_locked(verdict, source, reason);
    pthread_mutex_unlock(&M.lock);
}

/* ---- the user's word ---- */

void scaf_malleable_init(void)
{
    int m = scaf_settings.malleable;

    atomic_store(&M.cap, scaf_bound_threads());
    M.report_path = scaf_settings.report;
    if (scaf_settings.check) {
        M.check = 1;
        M.check_seed = scaf_settings.check_seed;
        M.forced = 1;
        set_verdict(SCAF_VERDICT_MALLEABLE, SCAF_SOURCE_CHECK,
                    "scaf check: SCAF_CHECK_SEED gives every region a seeded team");
        return;
    }
    if (m >= 0) {
        M.forced = 1;
        set_verdict(m ? SCAF_VERDICT_MALLEABLE : SCAF_VERDICT_FIXED, SCAF_SOURCE_USER,
                    m ? "SCAF_MALLEABLE=yes (scaf run --malleable)"
                      : "SCAF_MALLEABLE=no (scaf run --fixed)");
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
    if (M.prepared || M.forced) {
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
            M.forced = 1;
            set_verdict_locked(verdict, SCAF_SOURCE_RULES, reason);
            pthread_mutex_unlock(&M.lock);
            return;
        }
}

/* ---- evidence outside regions ---- */

void scaf_malleable_query(void *caller)
{
    char who[96], what[96], reason[SCAF_REASON_MAX];
    void *tid_fn;

    if (scaf_experiment_in_child() || atomic_exchange(&M.query_seen, 1))
        return;
    atomic_store(&M.query_caller, caller);
    if (M.forced)
        return;
    describe(caller, who, sizeof who);
    tid_fn = atomic_load(&M.tid_only_fn);
    if (tid_fn) {
        describe(tid_fn, what, sizeof what);
        say_into(reason, sizeof reason,
                 "region %s numbers threads without omp_get_num_threads(); "
                 "omp_get_max_threads() outside regions from %s", what, who);
        set_verdict(SCAF_VERDICT_FIXED, SCAF_SOURCE_EVIDENCE, reason);
        return;
    }
    say_into(reason, sizeof reason,
             "omp_get_max_threads() outside regions from %s: watching each region once", who);
    set_verdict(SCAF_VERDICT_UNDECIDED, SCAF_SOURCE_EVIDENCE, reason);
}

void scaf_malleable_set(void *caller, int team)
{
    char who[96], reason[SCAF_REASON_MAX];

    if (scaf_experiment_in_child())
        return;
    atomic_store(&M.cap, team < 1 ? 1u : (unsigned)team);
    if (M.forced) {
        /* A user-declared fixed team follows the program's own choice. */
        if (atomic_load(&M.verdict) == SCAF_VERDICT_FIXED)
            atomic_store(&M.fixed_team, atomic_load(&M.cap));
        return;
    }
    describe(caller, who, sizeof who);
    say_into(reason, sizeof reason, "omp_set_num_threads(%d) outside regions from %s", team, who);
    pthread_mutex_lock(&M.lock);
    if (atomic_load(&M.verdict) == SCAF_VERDICT_FIXED)
        atomic_store(&M.fixed_team, atomic_load(&M.cap)); /* it chose again */
    set_verdict_locked(SCAF_VERDICT_FIXED, SCAF_SOURCE_EVIDENCE, reason);
    publish_locked(scaf_page_get());
    pthread_mutex_unlock(&M.lock);
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

static struct site *site_get(void (*fn)(void *))
{
    uintptr_t h = (uintptr_t)(void *)fn;
    void *key = (void *)fn;

    h ^= h >> 17;
    h *= 0xed5ad4bbu;
    h ^= h >> 11;
    for (unsigned i = 0; i < 16; i++) {
        struct site *s = &M.sites[(h + i) & (SITE_SLOTS - 1)];
        void *cur = atomic_load_explicit(&s->fn, memory_order_acquire);
        if (cur == key)
            return s;
        if (!cur) {
            void *expected = NULL;
            if (atomic_compare_exchange_strong(&s->fn, &expected, key) || expected == key)
                return s;
        }
    }
    return NULL; /* table crowded: the site is watched every time, which is only slower */
}

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* The verdict's part of a region's team: which enum scaf_team_mode, and the seeded team for scaf check. */
static int region_mode(struct scaf_mall_region *m, void (*fn)(void *), int explicit_count, unsigned cap,
                       unsigned *check_team)
{
    struct site *s;

    m->fn = fn;
    m->site = NULL;
    /* Not an atomic increment: two masters opening regions at once only blur whose calls count. */
    m->epoch = atomic_load_explicit(&scaf_mall_epoch, memory_order_relaxed) + 1;
    atomic_store_explicit(&scaf_mall_epoch, m->epoch, memory_order_relaxed);
    if (explicit_count || atomic_load_explicit(&scaf_mall_fixed, memory_order_relaxed))
        return m->mode = SCAF_TEAM_KEEP;
    if (M.check) {
        uint64_t i = atomic_fetch_add_explicit(&M.check_index, 1, memory_order_relaxed);
        *check_team = 1 + (unsigned)(mix64(M.check_seed * 0x100000001b3ull ^ mix64(i)) % cap);
        return m->mode = SCAF_TEAM_CHECK;
    }
    if (M.forced)
        return m->mode = SCAF_TEAM_STEER;
    s = site_get(fn);
    m->site = s;
    if (s && atomic_load_explicit(&s->state, memory_order_relaxed) != 0)
        return m->mode = SCAF_TEAM_STEER;
    /* A site not seen yet: watch it if a count was read outside, or if its code keeps per-thread state. */
    if (atomic_load_explicit(&M.query_seen, memory_order_relaxed) || object_has_tls(fn))
        return m->mode = SCAF_TEAM_WATCH;
    return m->mode = SCAF_TEAM_STEER;
}

int scaf_malleable_region_begin(struct scaf_mall_region *m, void (*fn)(void *), int explicit_count,
                                struct scaf_team_in *in)
{
    /* watch_team() inlined over one reading of the cap, this runs at every region. A fixed program
     * runs at the team it was fixed at, or else at the first-look team. */
    unsigned seen = atomic_load_explicit(&M.seen_min, memory_order_relaxed);
    unsigned fixed = atomic_load_explicit(&M.fixed_team, memory_order_relaxed);

    in->cap = scaf_malleable_cap();
    in->watch_team = seen && seen < in->cap ? seen : in->cap;
    in->fixed_team = fixed ? fixed : in->watch_team;
    in->cap_lowered = atomic_load_explicit(&M.cap_lowered, memory_order_relaxed);
    in->mode = region_mode(m, fn, explicit_count, in->cap, &in->check_team);
    return in->mode;
}

/*
 * The program has read a team of `team` inside a region: a region it has not
 * shown to be team-relative (a first look, or a fixed team) gets no more than
 * that, since the count may have sized per-thread buffers. Regions seen to
 * read their own team size keep the whole cap, so teams can grow back.
 */
static void lower_cap(unsigned team)
{
    unsigned cur = atomic_load(&M.seen_min);

    while (team >= 1 && (cur == 0 || team < cur) && !atomic_compare_exchange_weak(&M.seen_min, &cur, team))
        ;
    if (team >= 1 && team < scaf_malleable_cap())
        atomic_store(&M.cap_lowered, 1);
}

/*
 * A region read its team size without numbering its threads (typically
 * `single: nthreads = omp_get_num_threads()`): the count may escape to later
 * regions as a buffer size. It counts as a query, and the program has now
 * seen that team: no later region may be given more.
 */
static void count_escaped(const struct scaf_mall_region *m, unsigned team)
{
    char what[96], reason[SCAF_REASON_MAX];

    if (atomic_load_explicit(&M.query_seen, memory_order_relaxed) || atomic_exchange(&M.query_seen, 1))
        return;
    atomic_store(&M.query_in_region, 1);
    atomic_store(&M.query_caller, (void *)m->fn);
    describe((void *)m->fn, what, sizeof what);
    if (atomic_load(&M.tid_only_fn)) {
        say_into(reason, sizeof reason,
                 "a region numbers threads without omp_get_num_threads(); region %s read the team "
                 "size without thread numbers", what);
        set_verdict(SCAF_VERDICT_FIXED, SCAF_SOURCE_EVIDENCE, reason);
        return;
    }
    say_into(reason, sizeof reason,
             "region %s read the team size (%u) without thread numbers: watching each region once",
             what, team);
    set_verdict(SCAF_VERDICT_UNDECIDED, SCAF_SOURCE_EVIDENCE, reason);
}

void scaf_malleable_region_end(const struct scaf_mall_region *m, unsigned team)
{
    int tid = atomic_load_explicit(&scaf_mall_tid_epoch, memory_order_relaxed) == m->epoch;
    int nth = atomic_load_explicit(&scaf_mall_nth_epoch, memory_order_relaxed) == m->epoch;
    char what[96], who[160], reason[SCAF_REASON_MAX];
    struct site *s = m->site;
    int state, first;

    if (M.report_path) {
        if (team >= 1 && team <= SCAF_MAX_CPUS)
            atomic_fetch_or_explicit(&M.team_bits[(team - 1) / 64], 1ull << ((team - 1) % 64),
                                     memory_order_relaxed);
        atomic_fetch_add_explicit(&M.regions, 1, memory_order_relaxed);
    }
    if (m->mode == SCAF_TEAM_KEEP || m->mode == SCAF_TEAM_CHECK)
        return;
    if (nth && !tid)
        lower_cap(team);
    if (M.forced)
        return;
    /* The common case, a seen site whose threads neither number themselves nor read the team
     * size alone, ends here after two loads. */
    state = s ? atomic_load_explicit(&s->state, memory_order_relaxed) : 0;
    first = state == 0;
    if (!first && !tid && !nth)
        return;
    if (first) {
        state = SITE_SEEN | (object_has_tls(m->fn) ? SITE_TLS : 0);
        if (s)
            atomic_store_explicit(&s->state, state, memory_order_relaxed);
    }
    if (nth && !tid)
        count_escaped(m, team);
    if (tid && (state & SITE_TLS)) {
        describe((void *)m->fn, what, sizeof what);
        say_into(reason, sizeof reason,
                 "region %s numbers threads in code with thread-local (threadprivate) data", what);
        set_verdict(SCAF_VERDICT_FIXED, SCAF_SOURCE_EVIDENCE, reason);
        return;
    }
    if (tid && !nth) {
        if (atomic_load(&M.query_seen)) {
            describe((void *)m->fn, what, sizeof what);
            query_text(who, sizeof who);
            say_into(reason, sizeof reason,
                     "region %s numbers threads without omp_get_num_threads(); %s", what, who);
            set_verdict(SCAF_VERDICT_FIXED, SCAF_SOURCE_EVIDENCE, reason);
            return;
        }
        if (!atomic_load_explicit(&M.tid_only_fn, memory_order_relaxed)) {
            void *expected = NULL;
            atomic_compare_exchange_strong(&M.tid_only_fn, &expected, (void *)m->fn);
        }
    }
    if (first && atomic_load(&M.verdict) == SCAF_VERDICT_UNDECIDED) {
        query_text(who, sizeof who);
        say_into(reason, sizeof reason, "%s, but every region seen reads its own team size or none", who);
        set_verdict(SCAF_VERDICT_MALLEABLE, SCAF_SOURCE_EVIDENCE, reason);
    }
}

unsigned scaf_malleable_cap(void)
{
    unsigned c = atomic_load_explicit(&M.cap, memory_order_relaxed);
    unsigned b = scaf_bound_threads();

    if (c == 0)
        c = b;
    return c < 1 ? 1 : c;
}

/* The team of a first look (or a fixed team): the cap, or less if a region read a smaller team. */
static unsigned watch_team(void)
{
    unsigned cap = scaf_malleable_cap(), seen = atomic_load_explicit(&M.seen_min, memory_order_relaxed);
    return seen && seen < cap ? seen : cap;
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

    if (!M.report_path || atomic_load(&M.regions) == 0 || scaf_experiment_in_child())
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
