/* test_daemon_memory.c — the memory's pure rules as tables (a run learned, sites cleaned, eviction, the state directory, a remembered curve standing in), and its file on real files: checks, round trip, set aside. */
#include "../../src/daemon/decide/prepare.h"
#include "../../src/daemon/memory/file.h"
#include "../../src/daemon/memory/memo.h"
#include "../../src/daemon/memory/statedir.h"
#include "../../src/daemon/memory/store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

enum { U = SCAF_VERDICT_UNDECIDED, M = SCAF_VERDICT_MALLEABLE, F = SCAF_VERDICT_FIXED };
enum { DEF = SCAF_SOURCE_DEFAULT, EVI = SCAF_SOURCE_EVIDENCE, USR = SCAF_SOURCE_USER, RUL = SCAF_SOURCE_RULES,
       CHK = SCAF_SOURCE_CHECK };
enum { CLEAN = SCAF_MEMO_CLEAN, FIXES = SCAF_MEMO_FIXES, TLS = SCAF_MEMO_TLS, TLSC = SCAF_MEMO_TLS_CLEAR };

static void test_crc(void)
{
    /* The check value of CRC-32 (IEEE 802.3), as zlib's crc32 gives it. */
    CHECK(scaf_memfile_crc32(0, "123456789", 9) == 0xCBF43926u, "crc32(123456789) = %08x",
          scaf_memfile_crc32(0, "123456789", 9));
    CHECK(scaf_memfile_crc32(scaf_memfile_crc32(0, "1234", 4), "56789", 5) == 0xCBF43926u, "crc32 continued");
    CHECK(scaf_memfile_crc32(0, "", 0) == 0, "crc32 of nothing");
}

/* ---- a run learned ---- */

struct site {
    uint64_t object;
    uint32_t offset, bits;
};

struct learn_row {
    const char *why;
    /* remembered: verdict, source, runs, sites */
    uint32_t rv, rs, runs;
    struct site rsites[3];
    /* this run: verdict, source, sites, points */
    uint32_t v, s;
    struct site sites[3];
    uint32_t npoints;
    /* then: verdict, source, runs, sites (all of them, in order) */
    uint32_t wv, ws, wruns;
    struct site wsites[5];
};

static uint32_t count_sites(const struct site *s, uint32_t max)
{
    uint32_t n = 0;
    while (n < max && s[n].object)
        n++;
    return n;
}

static const struct learn_row learn_rows[] = {
    {"first run, evidence of a fixed team", U, DEF, 0, {{0}}, F, EVI, {{7, 0x10, FIXES | CLEAN}}, 2,
     F, EVI, 1, {{7, 0x10, FIXES | CLEAN}}},
    {"first run, malleable by evidence", U, DEF, 0, {{0}}, M, EVI, {{7, 0x10, CLEAN}, {7, 0x20, CLEAN}}, 1,
     M, EVI, 1, {{7, 0x10, CLEAN}, {7, 0x20, CLEAN}}},
    {"an undecided run changes only runs", F, EVI, 3, {{7, 0x10, FIXES}}, U, DEF, {{9, 1, CLEAN}}, 2,
     F, EVI, 4, {{7, 0x10, FIXES}}},
    {"the user's word is not evidence: verdict kept, sites learned", M, EVI, 2, {{7, 0x10, CLEAN}}, F, USR,
     {{7, 0x30, CLEAN}}, 0, M, EVI, 3, {{7, 0x30, CLEAN}, {7, 0x10, CLEAN}}},
    {"a rules file's word is not evidence either", U, DEF, 1, {{0}}, F, RUL, {{0}}, 0, U, DEF, 2, {{0}}},
    {"scaf check's seeded runs are not evidence", M, EVI, 1, {{0}}, F, CHK, {{0}}, 0, M, EVI, 2, {{0}}},
    {"evidence of a fixed team corrects a malleable memory", M, EVI, 5, {{7, 0x10, CLEAN}}, F, EVI,
     {{7, 0x10, FIXES}}, 0, F, EVI, 6, {{7, 0x10, FIXES}}},
    {"a malleable run that never reached the fixing site keeps the program fixed", F, EVI, 2, {{7, 0x10, FIXES}},
     M, EVI, {{7, 0x20, CLEAN}}, 0, F, EVI, 3, {{7, 0x20, CLEAN}, {7, 0x10, FIXES}}},
    {"a malleable run that showed the fixing site clean corrects it", F, EVI, 2, {{7, 0x10, FIXES}}, M, EVI,
     {{7, 0x10, CLEAN}}, 0, M, EVI, 3, {{7, 0x10, CLEAN}}},
    {"fixed without a fixing site: a malleable run corrects it", F, EVI, 1, {{7, 0x10, CLEAN}}, M, EVI,
     {{7, 0x10, CLEAN}}, 0, M, EVI, 2, {{7, 0x10, CLEAN}}},
    {"scaf check's fixed stands against malleable evidence", F, CHK, 1, {{0}}, M, EVI, {{7, 0x10, CLEAN}}, 0,
     F, CHK, 2, {{7, 0x10, CLEAN}}},
    {"scaf check's malleable stands against evidence of a fixed team (a suspicion it tested)", M, CHK, 1, {{0}}, F,
     EVI, {{7, 0x10, FIXES}}, 0, M, CHK, 2, {{7, 0x10, FIXES}}},
    {"a run steered on scaf check's malleable keeps it", M, CHK, 2, {{0}}, M, CHK, {{0}}, 1, M, CHK, 3, {{0}}},
    {"a run the user fixed keeps scaf check's malleable", M, CHK, 1, {{0}}, F, USR, {{0}}, 0, M, CHK, 2, {{0}}},
    {"scaf check's fixed stands against fixed evidence too", F, CHK, 1, {{0}}, F, EVI, {{7, 0x10, FIXES}}, 0, F, CHK,
     2, {{7, 0x10, FIXES}}},
    {"scaf check's malleable stays when evidence agrees", M, CHK, 1, {{0}}, M, EVI, {{0}}, 0, M, CHK, 2, {{0}}},
    {"a site's new bits replace its old ones", M, EVI, 1, {{7, 0x10, TLS}, {8, 0x10, CLEAN}}, M, EVI,
     {{7, 0x10, TLS | TLSC}}, 0, M, EVI, 2, {{7, 0x10, TLS | TLSC}, {8, 0x10, CLEAN}}},
};

static void test_learn(void)
{
    for (size_t i = 0; i < sizeof learn_rows / sizeof learn_rows[0]; i++) {
        const struct learn_row *r = &learn_rows[i];
        struct scaf_site_memo sites[3];
        struct scaf_memo_point pts[2] = {{4, 500000}, {2, 800000}};
        struct scaf_memo_record rec;
        uint32_t n = count_sites(r->sites, 3), wn = count_sites(r->wsites, 5);

        scaf_memo_record_init(&rec, 42, 100);
        rec.verdict = r->rv;
        rec.source = r->rs;
        rec.runs = r->runs;
        rec.nsites = count_sites(r->rsites, 3);
        for (uint32_t k = 0; k < rec.nsites; k++)
            rec.sites[k] = (struct scaf_site_memo){r->rsites[k].object, r->rsites[k].offset, r->rsites[k].bits};
        for (uint32_t k = 0; k < n; k++)
            sites[k] = (struct scaf_site_memo){r->sites[k].object, r->sites[k].offset, r->sites[k].bits};
        scaf_memo_learn(&rec, &(struct scaf_memo_run){.now_ns = 200, .verdict = r->v, .source = r->s,
                                                      .reason = "why", .name = "prog", .sites = sites, .nsites = n,
                                                      .points = pts, .npoints = r->npoints, .peers = 1.0,
                                                      .seconds = 10.0});
        CHECK(rec.verdict == r->wv && rec.source == r->ws && rec.runs == r->wruns,
              "%s: verdict %u source %u runs %u, want %u %u %u", r->why, rec.verdict, rec.source, rec.runs, r->wv,
              r->ws, r->wruns);
        CHECK(rec.last_seen_ns == 200 && strcmp(rec.name, "prog") == 0, "%s: last seen %lld, name %s", r->why,
              (long long)rec.last_seen_ns, rec.name);
        CHECK(rec.nsites == wn, "%s: %u sites, want %u", r->why, rec.nsites, wn);
        for (uint32_t k = 0; k < wn && k < rec.nsites; k++)
            CHECK(rec.sites[k].object == r->wsites[k].object && rec.sites[k].offset == r->wsites[k].offset &&
                      rec.sites[k].bits == r->wsites[k].bits,
                  "%s: site %u is %llu+%#x bits %#x", r->why, k, (unsigned long long)rec.sites[k].object,
                  rec.sites[k].offset, rec.sites[k].bits);
        if (r->v != U)
            CHECK(rec.npoints == r->npoints || (r->npoints == 0 && rec.npoints == 0), "%s: %u points", r->why,
                  rec.npoints);
        CHECK(scaf_memo_record_check(&rec) == NULL, "%s: the result does not check: %s", r->why,
              scaf_memo_record_check(&rec));
    }
}

/* The sites merge keeps at most SCAF_MEMO_SITES: this run's first. */
static void test_learn_sites_full(void)
{
    struct scaf_site_memo sites[SCAF_MEMO_SITES];
    struct scaf_memo_record rec;

    scaf_memo_record_init(&rec, 1, 0);
    rec.nsites = SCAF_MEMO_SITES;
    for (uint32_t k = 0; k < SCAF_MEMO_SITES; k++) {
        rec.sites[k] = (struct scaf_site_memo){1, k, CLEAN};
        sites[k] = (struct scaf_site_memo){2, k, CLEAN};
    }
    scaf_memo_learn(&rec, &(struct scaf_memo_run){.verdict = M, .source = EVI, .sites = sites, .nsites = 10});
    CHECK(rec.nsites == SCAF_MEMO_SITES && rec.sites[0].object == 2 && rec.sites[9].object == 2 &&
              rec.sites[10].object == 1 && rec.sites[10].offset == 0,
          "a full memory keeps this run's 10 sites first, then the oldest remembered: %u sites", rec.nsites);
}

/* Peers: the run-time-weighted mean, over the last hour of runs at most. */
static void test_peers(void)
{
    struct scaf_memo_record rec;
    struct scaf_memo_run run = {.verdict = M, .source = EVI};

    scaf_memo_record_init(&rec, 1, 0);
    run.peers = 2.0;
    run.seconds = 10.0;
    scaf_memo_learn(&rec, &run);
    CHECK(rec.peers_milli == 2000 && scaf_memo_peers(&rec) == 2, "first run: peers %u", rec.peers_milli);
    run.peers = 0.0;
    run.seconds = 30.0;
    scaf_memo_learn(&rec, &run);
    CHECK(rec.peers_milli == 500 && scaf_memo_peers(&rec) == 1, "10 s at 2, 30 s at 0: 0.5, rounded to 1: %u",
          rec.peers_milli);
    run.peers = 3.0;
    run.seconds = 1e6;
    scaf_memo_learn(&rec, &run);
    CHECK(rec.peers_milli > 2900 && rec.peer_weight_ms == SCAF_MEMO_PEER_WEIGHT_MAX_MS,
          "a run of 11 days counts as an hour and outweighs 40 s: %u, weight %u", rec.peers_milli, rec.peer_weight_ms);
    run.peers = 1.0 / 0.0;
    run.seconds = -5;
    scaf_memo_learn(&rec, &run);
    CHECK(scaf_memo_record_check(&rec) == NULL && rec.peers_milli <= 3000, "a nonsense run changes nothing: %u",
          rec.peers_milli);
}

/* Run time: the mean of this run's and the remembered, so the last runs weigh most; only a decided run's. */
static void test_run_time(void)
{
    struct scaf_memo_record rec;
    struct scaf_memo_run run = {.verdict = M, .source = EVI, .seconds = 10.0};

    scaf_memo_record_init(&rec, 1, 0);
    CHECK(rec.run_ms == 0, "nothing known of a fresh record: %u", rec.run_ms);
    scaf_memo_learn(&rec, &run);
    CHECK(rec.run_ms == 10000, "first run: %u ms", rec.run_ms);
    run.seconds = 2.0;
    scaf_memo_learn(&rec, &run);
    CHECK(rec.run_ms == 6000, "10 s, then 2 s: 6 s, %u", rec.run_ms);
    scaf_memo_learn(&rec, &run);
    scaf_memo_learn(&rec, &run);
    CHECK(rec.run_ms == 3000, "two more of 2 s: the old 10 s fades, %u", rec.run_ms);
    run.verdict = SCAF_VERDICT_UNDECIDED, run.seconds = 100.0;
    scaf_memo_learn(&rec, &run);
    CHECK(rec.run_ms == 3000, "an undecided run counts only: %u", rec.run_ms);
    run.verdict = M;
    run.seconds = -1.0;
    scaf_memo_learn(&rec, &run);
    run.seconds = 0.0 / 0.0;
    scaf_memo_learn(&rec, &run);
    CHECK(rec.run_ms == 3000, "a negative or NaN time changes nothing: %u", rec.run_ms);
    run.seconds = 1e-6;
    scaf_memo_record_init(&rec, 1, 0);
    scaf_memo_learn(&rec, &run);
    CHECK(rec.run_ms == 1, "a run under a millisecond is known, as one: %u", rec.run_ms);
    run.seconds = 1e12;
    scaf_memo_learn(&rec, &run);
    CHECK(rec.run_ms == UINT32_MAX && scaf_memo_record_check(&rec) == NULL, "saturates: %u", rec.run_ms);
}

static void test_remember(void)
{
    struct scaf_memo_record rec;

    scaf_memo_record_init(&rec, 5, 10);
    scaf_memo_remember(&rec, F, "xgboost train.py", 20);
    CHECK(rec.verdict == F && rec.source == CHK && rec.runs == 1 && strcmp(rec.name, "xgboost train.py") == 0 &&
              rec.last_seen_ns == 20,
          "scaf check's verdict: %u %u runs %u name %s", rec.verdict, rec.source, rec.runs, rec.name);
    scaf_memo_remember(&rec, F, "two\nlines\033[31m", 25);
    CHECK(strcmp(rec.name, "two?lines?[31m") == 0, "control bytes in a name: %s", rec.name);
    scaf_memo_remember(&rec, F, "xgboost train.py", 20);
    rec.runs = 7;
    scaf_memo_remember(&rec, M, "", 30);
    CHECK(rec.verdict == M && rec.runs == 7 && strcmp(rec.name, "xgboost train.py") == 0,
          "a second check: verdict %u runs %u name %s", rec.verdict, rec.runs, rec.name);
}

static void test_sites_clean(void)
{
    const struct scaf_site_memo in[] = {
        {1, 0x10, CLEAN},         /* kept */
        {0, 0x20, CLEAN},         /* no object: dropped */
        {1, 0x30, 0xffffffe0u},   /* only unknown bits: dropped */
        {1, 0x40, 0xffffffffu},   /* unknown bits masked */
        {1, 0x10, FIXES},         /* the same site again: dropped */
        {2, 0x10, TLS | TLSC},    /* kept */
    };
    struct scaf_site_memo out[SCAF_MEMO_SITES];
    uint32_t n = scaf_memo_sites_clean(out, in, 6);

    CHECK(n == 3, "3 of 6 kept, got %u", n);
    CHECK(n == 3 && out[0].offset == 0x10 && out[0].bits == CLEAN && out[1].offset == 0x40 &&
              out[1].bits == SCAF_MEMO_ALL && out[2].object == 2,
          "kept in order, bits masked");
    {
        struct scaf_site_memo many[SCAF_MEMO_SITES + 36];
        for (uint32_t i = 0; i < SCAF_MEMO_SITES + 36; i++)
            many[i] = (struct scaf_site_memo){1, i, CLEAN};
        CHECK(scaf_memo_sites_clean(out, many, SCAF_MEMO_SITES + 36) == SCAF_MEMO_SITES,
              "more entries than the page holds: only as many as it holds are read");
    }
}

static void test_record_check(void)
{
    struct scaf_memo_record ok, r;

    scaf_memo_record_init(&ok, 9, 1);
    CHECK(scaf_memo_record_check(&ok) == NULL, "a fresh record checks");
    r = ok, r.key = 0;
    CHECK(scaf_memo_record_check(&r) != NULL, "key 0");
    r = ok, r.verdict = 3;
    CHECK(scaf_memo_record_check(&r) != NULL, "verdict 3");
    r = ok, r.source = USR;
    CHECK(scaf_memo_record_check(&r) != NULL, "a user's verdict is never stored");
    r = ok, r.nsites = SCAF_MEMO_SITES + 1;
    CHECK(scaf_memo_record_check(&r) != NULL, "too many sites");
    r = ok, r.npoints = 1, r.points[0] = (struct scaf_memo_point){1, 500000};
    CHECK(scaf_memo_record_check(&r) != NULL, "a point at team 1");
    r = ok, r.npoints = 1, r.points[0] = (struct scaf_memo_point){4, 1000001};
    CHECK(scaf_memo_record_check(&r) != NULL, "E above 1");
    r = ok, memset(r.name, 'x', sizeof r.name);
    CHECK(scaf_memo_record_check(&r) != NULL, "an unterminated name");
    r = ok, r.nsites = 1, r.sites[0] = (struct scaf_site_memo){1, 0, 0x100};
    CHECK(scaf_memo_record_check(&r) != NULL, "an unknown site bit");
}

/* ---- eviction and the table ---- */

static void test_evict(void)
{
    struct scaf_memo_record r[4];

    for (int i = 0; i < 4; i++)
        scaf_memo_record_init(&r[i], (uint64_t)i + 1, 100);
    r[0].last_seen_ns = 300, r[1].last_seen_ns = 100, r[2].last_seen_ns = 200, r[3].last_seen_ns = 100;
    r[1].runs = 5, r[3].runs = 2;
    CHECK(scaf_memo_evict_choice(r, 4) == 3, "least recently seen, then fewest runs: %zu",
          scaf_memo_evict_choice(r, 4));
    r[3].runs = 5;
    CHECK(scaf_memo_evict_choice(r, 4) == 1, "then the lowest index: %zu", scaf_memo_evict_choice(r, 4));
    CHECK(scaf_memo_evict_choice(r, 1) == 0, "one record");
}

static void test_store(void)
{
    struct scaf_store s = {0};
    uint64_t evicted;
    struct scaf_memo_record *a;

    a = scaf_store_add(&s, 1, 10, 2, &evicted);
    CHECK(a && a->key == 1 && s.count == 1 && s.dirty && evicted == 0, "add 1");
    s.dirty = false;
    CHECK(scaf_store_add(&s, 1, 99, 2, &evicted) == a && !s.dirty, "add 1 again: the same record, unchanged");
    scaf_store_add(&s, 2, 20, 2, &evicted);
    scaf_store_add(&s, 3, 30, 2, &evicted);
    CHECK(s.count == 2 && evicted == 1 && !scaf_store_find(&s, 1) && scaf_store_find(&s, 2) &&
              scaf_store_find(&s, 3),
          "the third of two evicts the least recently seen: evicted %llu", (unsigned long long)evicted);
    CHECK(scaf_store_forget(&s, 9) == 0 && scaf_store_forget(&s, 2) == 1 && s.count == 1,
          "forget one");
    CHECK(scaf_store_find(&s, 0) == NULL, "key 0 is never found");
    scaf_store_add(&s, 4, 5, 8, &evicted);
    scaf_store_add(&s, 5, 50, 8, &evicted);
    CHECK(scaf_store_trim(&s, 2) == 1 && !scaf_store_find(&s, 4), "trim to 2 drops the oldest");
    CHECK(scaf_store_forget_all(&s) == 2 && s.count == 0, "forget all");
    scaf_store_free(&s);
}

/* ---- the state directory ---- */

static void test_statedir(void)
{
    static const struct {
        const char *option, *systemd, *xdg, *home, *want;
        enum scaf_statedir_from from;
    } rows[] = {
        {"/srv/scaf", "/var/lib/scaf", "/x", "/home/u", "/srv/scaf", SCAF_STATEDIR_OPTION},
        {"rel/dir", NULL, NULL, NULL, "rel/dir", SCAF_STATEDIR_OPTION},
        {NULL, "/var/lib/scaf", "/x", "/home/u", "/var/lib/scaf", SCAF_STATEDIR_SYSTEMD},
        {NULL, "/var/lib/scaf:/var/lib/other", NULL, NULL, "/var/lib/scaf", SCAF_STATEDIR_SYSTEMD},
        {"", "", "/home/u/.st", "/home/u", "/home/u/.st/scaf", SCAF_STATEDIR_XDG},
        {NULL, NULL, "relative", "/home/u", "/home/u/.local/state/scaf", SCAF_STATEDIR_HOME},
        {NULL, "relative", "", "/home/u", "/home/u/.local/state/scaf", SCAF_STATEDIR_HOME},
        {NULL, NULL, NULL, "/", "/.local/state/scaf", SCAF_STATEDIR_HOME},
        {NULL, NULL, NULL, "/home/u/", "/home/u/.local/state/scaf", SCAF_STATEDIR_HOME},
        {NULL, NULL, NULL, "", "", SCAF_STATEDIR_NONE},
        {NULL, NULL, NULL, "relative-home", "", SCAF_STATEDIR_NONE},
    };
    char out[256];

    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        enum scaf_statedir_from from =
            scaf_statedir_choose(rows[i].option, rows[i].systemd, rows[i].xdg, rows[i].home, out, sizeof out);
        CHECK(from == rows[i].from && strcmp(out, rows[i].want) == 0, "row %zu: %d %s, want %d %s", i, from, out,
              rows[i].from, rows[i].want);
    }
    CHECK(scaf_statedir_choose(NULL, NULL, NULL, "/home/a-rather-long-name", out, 16) == SCAF_STATEDIR_NONE &&
              out[0] == 0,
          "a path that does not fit is none");
}

/* ---- a remembered curve standing in for an estimate ---- */

static void test_remembered(void)
{
    static const struct {
        const char *why;
        struct scaf_memo_point pts[4];
        uint32_t n, most;
        bool ok;
        uint32_t team, alt;
    } rows[] = {
        {"one point", {{4, 500000}}, 1, 16, true, 4, 0},
        {"the largest team within reach, the furthest other", {{2, 900000}, {4, 700000}, {8, 400000}}, 3, 16, true, 8,
         2},
        {"a team beyond the bound is out of reach", {{2, 900000}, {4, 700000}, {8, 400000}}, 3, 4, true, 4, 2},
        {"nothing within reach: the smallest team (clamped later)", {{8, 400000}, {16, 200000}}, 2, 4, true, 8, 0},
        {"unusable points are skipped", {{1, 900000}, {4, 0}, {3, 600000}}, 3, 16, true, 3, 0},
        {"no usable point", {{1, 900000}, {4, 0}}, 2, 16, false, 0, 0},
        {"none", {{0}}, 0, 16, false, 0, 0},
    };

    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        uint32_t team = 99, alt = 99;
        double e = -2, alt_e = -2;
        bool ok = scaf_prepare_remembered(rows[i].pts, rows[i].n, rows[i].most, &team, &e, &alt, &alt_e);

        CHECK(ok == rows[i].ok, "%s: %d", rows[i].why, ok);
        if (ok)
            CHECK(team == rows[i].team && alt == rows[i].alt && e > 0 && e <= 1 && (alt == 0 || alt_e > 0),
                  "%s: team %u alt %u", rows[i].why, team, alt);
        else
            CHECK(team == 99 && alt == 99, "%s: untouched", rows[i].why);
    }
}

/* ---- the file ---- */

static char top[] = "/tmp/scaf-test-memory-XXXXXX";

static size_t make_file(unsigned char **out, uint32_t count, uid_t uid)
{
    struct scaf_memo_record *recs = calloc(count ? count : 1, sizeof *recs);
    struct scaf_memfile_header h = {SCAF_MEMFILE_MAGIC, SCAF_MEMFILE_VERSION, sizeof *recs, count, 0, (uint32_t)uid,
                                    0};
    size_t len = sizeof h + count * sizeof *recs;

    for (uint32_t i = 0; i < count; i++) {
        scaf_memo_record_init(&recs[i], 100 + i, i);
        snprintf(recs[i].name, sizeof recs[i].name, "prog%u", i);
    }
    h.crc = scaf_memfile_crc32(0, recs, count * sizeof *recs);
    *out = malloc(len);
    memcpy(*out, &h, sizeof h);
    memcpy(*out + sizeof h, recs, count * sizeof *recs);
    free(recs);
    return len;
}

static void test_file_check(void)
{
    static const struct {
        const char *what;
        size_t field; /* byte offset to change; SIZE_MAX: none */
        unsigned char value;
        long dlen; /* length change */
        const char *want;
    } rows[] = {
        {"a good file", SIZE_MAX, 0, 0, NULL},
        {"another magic", 0, 'X', 0, "magic"},
        {"another version", offsetof(struct scaf_memfile_header, version), 9, 0, "version"},
        {"another record size", offsetof(struct scaf_memfile_header, record_size), 1, 0, "record size"},
        {"another user's", offsetof(struct scaf_memfile_header, uid), 0x77, 0, "another user"},
        {"reserved set", offsetof(struct scaf_memfile_header, reserved), 1, 0, "reserved"},
        {"a count beyond the file", offsetof(struct scaf_memfile_header, count), 3, 0, "short"},
        {"cut off", SIZE_MAX, 0, -10, "short"},
        {"trailing bytes", SIZE_MAX, 0, 8, "longer"},
        {"a flipped bit in a record", sizeof(struct scaf_memfile_header) + 100, 0x55, 0, "CRC"},
        {"shorter than a header", SIZE_MAX, 0, -(long)(2 * sizeof(struct scaf_memo_record) + 20), "header"},
    };
    uint32_t count;

    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        unsigned char *buf, *big;
        size_t len = make_file(&buf, 2, 1000);
        const char *why;

        big = calloc(1, len + 64);
        memcpy(big, buf, len);
        if (rows[i].field != SIZE_MAX)
            big[rows[i].field] = rows[i].value;
        why = scaf_memfile_check(big, (size_t)((long)len + rows[i].dlen), 1000, &count);
        CHECK(rows[i].want ? why && strstr(why, rows[i].want) : why == NULL, "%s: %s", rows[i].what,
              why ? why : "(believed)");
        free(big);
        free(buf);
    }
    {
        /* A record that does not check, under a right CRC: written by something else, not believed. */
        unsigned char *buf;
        size_t len = make_file(&buf, 2, 1000);
        struct scaf_memfile_header h;

        memcpy(&h, buf, sizeof h);
        buf[sizeof h + offsetof(struct scaf_memo_record, verdict)] = 9;
        h.crc = scaf_memfile_crc32(0, buf + sizeof h, len - sizeof h);
        memcpy(buf, &h, sizeof h);
        CHECK(scaf_memfile_check(buf, len, 1000, &count) != NULL, "a bad record under a good CRC");
        /* The same key twice. */
        free(buf);
        len = make_file(&buf, 2, 1000);
        memcpy(buf + sizeof h + sizeof(struct scaf_memo_record), buf + sizeof h, sizeof(uint64_t));
        memcpy(&h, buf, sizeof h);
        h.crc = scaf_memfile_crc32(0, buf + sizeof h, len - sizeof h);
        memcpy(buf, &h, sizeof h);
        CHECK(scaf_memfile_check(buf, len, 1000, &count) != NULL, "a key twice");
        free(buf);
    }
    {
        /* Version 1: the field run_ms was reserved (0). Believed, with runs of unknown length; not with one set. */
        unsigned char *buf;
        size_t len = make_file(&buf, 2, 1000);
        struct scaf_memfile_header h;

        memcpy(&h, buf, sizeof h);
        h.version = SCAF_MEMFILE_VERSION_1;
        memcpy(buf, &h, sizeof h);
        CHECK(scaf_memfile_check(buf, len, 1000, &count) == NULL && count == 2, "a version 1 file is believed");
        buf[sizeof h + offsetof(struct scaf_memo_record, run_ms)] = 7;
        h.crc = scaf_memfile_crc32(0, buf + sizeof h, len - sizeof h);
        memcpy(buf, &h, sizeof h);
        CHECK(scaf_memfile_check(buf, len, 1000, &count) != NULL, "a version 1 record with a run time");
        h.version = SCAF_MEMFILE_VERSION;
        memcpy(buf, &h, sizeof h);
        CHECK(scaf_memfile_check(buf, len, 1000, &count) == NULL, "the same record in this version");
        free(buf);
    }
}

static bool file_exists(int dirfd, const char *name)
{
    struct stat st;
    return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static void test_file_io(void)
{
    struct scaf_memo_record recs[3], *back = NULL;
    uint32_t n = 99;
    char why[256], aside[128];
    struct stat st;
    int dirfd;

    if (!mkdtemp(top)) {
        fail("mkdtemp", strerror(errno));
        return;
    }
    dirfd = open(top, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    CHECK(scaf_memfile_load(dirfd, 1000, &back, &n, why, sizeof why) == SCAF_MEMFILE_ABSENT && n == 0,
          "no file: absent");
    for (int i = 0; i < 3; i++) {
        scaf_memo_record_init(&recs[i], 7 + (uint64_t)i, 1000 + i);
        recs[i].runs = (uint32_t)i + 1;
    }
    CHECK(scaf_memfile_save(dirfd, 1000, recs, 3, NULL, why, sizeof why) == 0, "save: %s", why);
    CHECK(fstatat(dirfd, "memory-1000.bin", &st, 0) == 0 && (st.st_mode & 0777) == 0600 &&
              st.st_size == (off_t)(sizeof(struct scaf_memfile_header) + 3 * sizeof recs[0]),
          "the file: mode %o, %lld bytes", st.st_mode & 0777, (long long)st.st_size);
    CHECK(!file_exists(dirfd, "memory-1000.bin.tmp"), "no temporary file left");
    CHECK(scaf_memfile_load(dirfd, 1000, &back, &n, why, sizeof why) == SCAF_MEMFILE_LOADED && n == 3 && back &&
              memcmp(back, recs, sizeof recs) == 0,
          "round trip: %u records", n);
    free(back);
    back = NULL;
    CHECK(scaf_memfile_load(dirfd, 1001, &back, &n, why, sizeof why) == SCAF_MEMFILE_ABSENT,
          "another uid's name is another file");
    /* The file renamed to another user's name is not theirs. */
    CHECK(renameat(dirfd, "memory-1000.bin", dirfd, "memory-1001.bin") == 0, "rename");
    CHECK(scaf_memfile_load(dirfd, 1001, &back, &n, why, sizeof why) == SCAF_MEMFILE_DAMAGED &&
              strstr(why, "another user"),
          "a file copied from another user's: %s", why);
    CHECK(scaf_memfile_set_aside(dirfd, 1001, 0, aside, sizeof aside) == 0 &&
              strcmp(aside, "memory-1001.bin.bad-19700101T000000Z") == 0 && !file_exists(dirfd, "memory-1001.bin") &&
              file_exists(dirfd, aside),
          "set aside as %s", aside);
    /* A second damaged file in the same second does not replace the first. */
    CHECK(scaf_memfile_save(dirfd, 1001, recs, 1, NULL, why, sizeof why) == 0, "save 1001");
    CHECK(scaf_memfile_set_aside(dirfd, 1001, 0, aside, sizeof aside) == 0 &&
              strcmp(aside, "memory-1001.bin.bad-19700101T000000Z-2") == 0,
          "the second set aside as %s", aside);
    /* A symbolic link where the file should be: never followed, set aside. */
    CHECK(symlinkat("/etc/passwd", dirfd, "memory-1002.bin") == 0, "symlink");
    CHECK(scaf_memfile_load(dirfd, 1002, &back, &n, why, sizeof why) == SCAF_MEMFILE_DAMAGED, "a link: %s", why);
    /* An empty memory is a file of one header. */
    CHECK(scaf_memfile_save(dirfd, 1003, recs, 0, NULL, why, sizeof why) == 0 &&
              scaf_memfile_load(dirfd, 1003, &back, &n, why, sizeof why) == SCAF_MEMFILE_LOADED && n == 0 && !back,
          "an empty memory");
    /* A stale temporary file of ours (a daemon killed while writing) is written over. */
    {
        int fd = openat(dirfd, "memory-1004.bin.tmp", O_WRONLY | O_CREAT, 0644);
        CHECK(fd >= 0 && write(fd, "junk", 4) == 4, "stale tmp");
        close(fd);
        CHECK(scaf_memfile_save(dirfd, 1004, recs, 2, NULL, why, sizeof why) == 0 &&
                  scaf_memfile_load(dirfd, 1004, &back, &n, why, sizeof why) == SCAF_MEMFILE_LOADED && n == 2,
              "written over a stale temporary file");
        free(back);
        back = NULL;
    }
    close(dirfd);
    {
        DIR *dir = opendir(top);
        struct dirent *e;
        char path[512];
        while (dir && (e = readdir(dir)))
            if (e->d_name[0] != '.') {
                snprintf(path, sizeof path, "%s/%s", top, e->d_name);
                unlink(path);
            }
        if (dir)
            closedir(dir);
        rmdir(top);
    }
}

int main(void)
{
    test_crc();
    test_learn();
    test_learn_sites_full();
    test_peers();
    test_run_time();
    test_remember();
    test_sites_clean();
    test_record_check();
    test_evict();
    test_store();
    test_statedir();
    test_remembered();
    test_file_check();
    test_file_io();
    return check_exit("test_daemon_memory");
}
