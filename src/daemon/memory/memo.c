/* memo.c — the pure rules of one remembered program: a run learned, scaf check's verdict, a page's sites cleaned, the record evicted first. */
#include "memo.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

void scaf_memo_record_init(struct scaf_memo_record *rec, uint64_t key, int64_t now_ns)
{
    memset(rec, 0, sizeof *rec);
    rec->key = key;
    rec->last_seen_ns = now_ns;
    rec->verdict = SCAF_VERDICT_UNDECIDED;
    rec->source = SCAF_SOURCE_DEFAULT;
}

/* A NUL-terminated copy into a fixed field, the rest zeroed (the file holds no stale bytes). */
static void copy_text(char *dst, size_t len, const char *src)
{
    size_t n = src ? strnlen(src, len - 1) : 0;

    memset(dst, 0, len);
    if (n)
        memcpy(dst, src, n);
}

/* A name for people (log lines, status): a client's command line or scaf check's word, control bytes made '?'. */
static void copy_name(char *dst, size_t len, const char *src)
{
    copy_text(dst, len, src);
    for (char *p = dst; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '?';
}

static const struct scaf_site_memo *find_site(const struct scaf_site_memo *sites, uint32_t n, uint64_t object,
                                              uint32_t offset)
{
    for (uint32_t i = 0; i < n; i++)
        if (sites[i].object == object && sites[i].offset == offset)
            return &sites[i];
    return NULL;
}

/*
 * Whether this run showed clean every remembered site that fixed the program
 * (true also when none did): only then does a malleable run say something
 * about what made the program fixed before.
 */
static bool fixing_sites_cleared(const struct scaf_memo_record *rec, const struct scaf_memo_run *run)
{
    for (uint32_t i = 0; i < rec->nsites; i++) {
        const struct scaf_site_memo *now;

        if (!(rec->sites[i].bits & SCAF_MEMO_FIXES))
            continue;
        now = find_site(run->sites, run->nsites, rec->sites[i].object, rec->sites[i].offset);
        if (!now || (now->bits & SCAF_MEMO_FIXES) || !(now->bits & SCAF_MEMO_CLEAN))
            return false;
    }
    return true;
}

static void learn_verdict(struct scaf_memo_record *rec, const struct scaf_memo_run *run)
{
    /* The user's word (scaf run --fixed, a rules file), scaf check's seeded test runs and a run steered on scaf
     * check's remembered malleable (source CHECK too) are not evidence. */
    if (run->source != SCAF_SOURCE_EVIDENCE || run->verdict == SCAF_VERDICT_UNDECIDED)
        return;
    /* scaf check's verdict, either way, is a test of what evidence only suspects: no run's evidence replaces it
     * (scaf check again, or scaf forget, does). Fixed: absence of a hazard in one run is not a test. Malleable:
     * every rule that fixes a program by evidence is a suspicion (calls, thread-local data) that check's seeded
     * teams put to the test, and the layer treats check's malleable as a `malleable` rule (docs/memory.md). */
    if (rec->source == SCAF_SOURCE_CHECK)
        return;
    /* Evidence of a fixed team always counts; a malleable run unfixes only what it showed clean. */
    if (run->verdict == SCAF_VERDICT_MALLEABLE && rec->verdict == SCAF_VERDICT_FIXED &&
        !fixing_sites_cleared(rec, run))
        return;
    rec->verdict = run->verdict;
    rec->source = SCAF_SOURCE_EVIDENCE;
    copy_text(rec->reason, sizeof rec->reason, run->reason);
}

/* This run's sites first (its bits replace the remembered ones), then the remembered sites it did not show. */
static void learn_sites(struct scaf_memo_record *rec, const struct scaf_memo_run *run)
{
    struct scaf_site_memo merged[SCAF_MEMO_SITES];
    uint32_t n = 0;

    for (uint32_t i = 0; i < run->nsites && n < SCAF_MEMO_SITES; i++)
        merged[n++] = run->sites[i];
    for (uint32_t i = 0; i < rec->nsites && n < SCAF_MEMO_SITES; i++)
        if (!find_site(run->sites, run->nsites, rec->sites[i].object, rec->sites[i].offset))
            merged[n++] = rec->sites[i];
    memset(rec->sites, 0, sizeof rec->sites);
    memcpy(rec->sites, merged, n * sizeof merged[0]);
    rec->nsites = n;
}

static bool point_ok(const struct scaf_memo_point *p)
{
    return p->team >= 2 && p->team <= SCAF_MAX_CPUS && p->efficiency_ppm >= 1 && p->efficiency_ppm <= 1000000u;
}

/* The daemon's own points of this run replace the remembered curve when it measured any. */
static void learn_points(struct scaf_memo_record *rec, const struct scaf_memo_run *run)
{
    uint32_t n = 0;
    struct scaf_memo_point pts[SCAF_MEMO_POINTS];

    for (uint32_t i = 0; i < run->npoints && n < SCAF_MEMO_POINTS; i++)
        if (point_ok(&run->points[i]))
            pts[n++] = run->points[i];
    if (n == 0)
        return;
    memset(rec->points, 0, sizeof rec->points);
    memcpy(rec->points, pts, n * sizeof pts[0]);
    rec->npoints = n;
}

/* The peers mean, weighted by run time: the last hour of runs at most, so that a change of habits shows. */
static void learn_peers(struct scaf_memo_record *rec, const struct scaf_memo_run *run)
{
    double peers = isfinite(run->peers) && run->peers > 0 ? run->peers : 0.0;
    double ms = isfinite(run->seconds) && run->seconds > 0 ? run->seconds * 1e3 : 0.0;
    double w = rec->peer_weight_ms, mean;

    if (peers > SCAF_MAX_CPUS * 4.0)
        peers = SCAF_MAX_CPUS * 4.0;
    if (ms > SCAF_MEMO_PEER_WEIGHT_MAX_MS)
        ms = SCAF_MEMO_PEER_WEIGHT_MAX_MS;
    if (w + ms <= 0.0) {
        /* Nothing to weigh by: the run's mean stands when nothing is remembered. */
        if (rec->peer_weight_ms == 0)
            rec->peers_milli = (uint32_t)lround(peers * 1e3);
        return;
    }
    mean = (rec->peers_milli / 1e3 * w + peers * ms) / (w + ms);
    rec->peers_milli = (uint32_t)lround(mean * 1e3);
    w += ms;
    rec->peer_weight_ms = (uint32_t)(w > SCAF_MEMO_PEER_WEIGHT_MAX_MS ? SCAF_MEMO_PEER_WEIGHT_MAX_MS : w);
}

/*
 * How long its runs last (a start team's scaf_start_outlasts): the mean of this
 * run and the remembered time, so the last few runs weigh most. The same
 * program on the same input runs about as long each time (a job array's tasks,
 * a nightly script), and a new input shows within two or three runs.
 */
static void learn_run_time(struct scaf_memo_record *rec, const struct scaf_memo_run *run)
{
    double ms = run->seconds * 1e3;

    if (!isfinite(ms) || ms <= 0.0)
        return;
    if (rec->run_ms)
        ms = (rec->run_ms + ms) / 2.0;
    if (ms > UINT32_MAX)
        ms = UINT32_MAX;
    rec->run_ms = ms < 1.0 ? 1u : (uint32_t)lround(ms);
}

void scaf_memo_learn(struct scaf_memo_record *rec, const struct scaf_memo_run *run)
{
    if (rec->runs < UINT32_MAX)
        rec->runs++;
    if (run->now_ns > rec->last_seen_ns)
        rec->last_seen_ns = run->now_ns;
    if (run->name && run->name[0])
        copy_name(rec->name, sizeof rec->name, run->name);
    if (run->verdict == SCAF_VERDICT_UNDECIDED)
        return; /* an undecided run: nothing but runs and last seen */
    /* The verdict first: it weighs this run's sites against the remembered ones. */
    learn_verdict(rec, run);
    learn_sites(rec, run);
    learn_points(rec, run);
    learn_peers(rec, run);
    learn_run_time(rec, run);
}

void scaf_memo_remember(struct scaf_memo_record *rec, uint32_t verdict, const char *name, int64_t now_ns)
{
    rec->verdict = verdict;
    rec->source = SCAF_SOURCE_CHECK;
    copy_text(rec->reason, sizeof rec->reason, "scaf check");
    if (name && name[0])
        copy_name(rec->name, sizeof rec->name, name);
    if (now_ns > rec->last_seen_ns)
        rec->last_seen_ns = now_ns;
    if (rec->runs == 0)
        rec->runs = 1;
}

uint32_t scaf_memo_sites_clean(struct scaf_site_memo *out, const struct scaf_site_memo *in, uint32_t n)
{
    uint32_t kept = 0;

    if (n > SCAF_MEMO_SITES)
        n = SCAF_MEMO_SITES;
    for (uint32_t i = 0; i < n; i++) {
        struct scaf_site_memo s = in[i];

        s.bits &= SCAF_MEMO_ALL;
        if (s.object == 0 || s.bits == 0 || find_site(out, kept, s.object, s.offset))
            continue;
        out[kept++] = s;
    }
    return kept;
}

uint32_t scaf_memo_peers(const struct scaf_memo_record *rec)
{
    return (uint32_t)(((uint64_t)rec->peers_milli + 500u) / 1000u);
}

static bool terminated(const char *s, size_t len)
{
    return memchr(s, 0, len) != NULL;
}

const char *scaf_memo_record_check(const struct scaf_memo_record *rec)
{
    if (rec->key == 0)
        return "a record without a key";
    if (rec->verdict > SCAF_VERDICT_FIXED || rec->source > SCAF_SOURCE_CHECK ||
        rec->source == SCAF_SOURCE_USER || rec->source == SCAF_SOURCE_RULES)
        return "a record with an unknown verdict or source";
    if (rec->nsites > SCAF_MEMO_SITES || rec->npoints > SCAF_MEMO_POINTS)
        return "a record with more sites or points than it holds";
    if (rec->peer_weight_ms > SCAF_MEMO_PEER_WEIGHT_MAX_MS)
        return "a record with a field out of range";
    for (uint32_t i = 0; i < rec->npoints; i++)
        if (!point_ok(&rec->points[i]))
            return "a record with a point out of range";
    for (uint32_t i = 0; i < rec->nsites; i++)
        if (rec->sites[i].object == 0 || rec->sites[i].bits == 0 || (rec->sites[i].bits & ~SCAF_MEMO_ALL))
            return "a record with a site it cannot hold";
    if (!terminated(rec->name, sizeof rec->name) || !terminated(rec->reason, sizeof rec->reason))
        return "a record with an unterminated text";
    return NULL;
}

size_t scaf_memo_evict_choice(const struct scaf_memo_record *recs, size_t n)
{
    size_t best = 0;

    for (size_t i = 1; i < n; i++)
        if (recs[i].last_seen_ns < recs[best].last_seen_ns ||
            (recs[i].last_seen_ns == recs[best].last_seen_ns && recs[i].runs < recs[best].runs))
            best = i;
    return best;
}
