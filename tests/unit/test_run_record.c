/* test_run_record.c — scaf-run's reader of `scaf run` records: what replays, what is stale, damaged or unsafe, and the environment's fingerprint. */
#include "../../src/run/record.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "scaf/progkey.h"

#define HOME "/home/me/scaf/build/lib"

static char top[] = "/tmp/scaf-test-record-XXXXXX";
static char prog[256], file[256];

static char *args[] = {"--fixed", "--", "prog", "x"};
static char *envp[] = {"B=2", "A=1", "PWD=/elsewhere", "AB=3", NULL};

/* A record as replay.Record.write makes it, its words joined by NULs; EDIT changes one thing. */
enum edit {
    GOOD, OTHER_MAGIC, OTHER_HOME, OTHER_ARG, FEWER_ARGS, OTHER_CWD, OTHER_ENV, OTHER_CPUS, OTHER_STAMP, NO_END, TRAILING,
    HUGE_COUNT, CUT_SHORT, NO_FINAL_NUL, BAD_DAEMON, BAD_ASK,
};

static size_t record(enum edit e, char *buf, size_t len)
{
    char hash[32], st[128], gone[300];
    const char *words[64];
    size_t n = 0, off = 0;

    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)scaf_run_record_env_hash(envp));
    if (e == OTHER_ENV)
        hash[0] = hash[0] == '0' ? '1' : '0';
    scaf_run_record_stamp(prog, st, sizeof st);
    if (e == OTHER_STAMP)
        snprintf(st, sizeof st, "1 2 3 4 5");
    snprintf(gone, sizeof gone, "%s/gone", top);
    words[n++] = e == OTHER_MAGIC ? "scaf-run-replay-v0" : SCAF_RUN_RECORD_MAGIC;
    words[n++] = e == OTHER_HOME ? "/usr/local/lib/scaf" : "/home/me/scaf/build/lib";
    words[n++] = e == FEWER_ARGS ? "3" : e == HUGE_COUNT ? "99999999" : "4";
    words[n++] = "--fixed";
    words[n++] = "--";
    words[n++] = "prog";
    if (e != FEWER_ARGS)
        words[n++] = e == OTHER_ARG ? "y" : "x";
    words[n++] = e == OTHER_CWD ? "/elsewhere" : top;
    words[n++] = hash;
    words[n++] = e == OTHER_CPUS ? "3" : "2";
    words[n++] = "2"; /* files: the program, and one that is not there (a rules file) */
    words[n++] = prog;
    words[n++] = st;
    words[n++] = gone;
    words[n++] = "-";
    words[n++] = prog; /* the path to start, and argv */
    words[n++] = "2";
    words[n++] = "prog";
    words[n++] = "x";
    words[n++] = "1"; /* sets */
    words[n++] = "SCAF_SOCKET";
    words[n++] = "/tmp/s.sock";
    words[n++] = e == BAD_DAEMON ? "theirs" : "own";
    words[n++] = "/tmp/s.sock";
    words[n++] = e == BAD_ASK ? "yes" : "1";
    words[n++] = "1"; /* fixed */
    words[n++] = "0"; /* malleable */
    words[n++] = "0"; /* the user's OMP_NUM_THREADS */
    words[n++] = prog; /* the key's command */
    words[n++] = "1";
    words[n++] = "prog";
    words[n++] = "1"; /* steered */
    words[n++] = "OPENBLAS_NUM_THREADS";
    if (e != NO_END)
        words[n++] = "end";
    if (e == TRAILING)
        words[n++] = "more";
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(words[i]) + 1;

        memcpy(buf + off, words[i], l);
        off += l;
    }
    if (e == CUT_SHORT)
        off /= 2;
    if (e == NO_FINAL_NUL)
        buf[off - 1] = 'x';
    (void)len;
    return off;
}

static void put(const char *data, size_t n, mode_t mode)
{
    int fd;

    unlink(file);
    fd = open(file, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0 || write(fd, data, n) != (ssize_t)n) {
        fail("write record", file);
        return;
    }
    fchmod(fd, mode);
    close(fd);
}

static void table(void)
{
    static const struct {
        enum edit edit;
        enum scaf_run_record_status want;
        const char *why;
    } rows[] = {
        {GOOD, SCAF_RUN_RECORD_OK, "as written"},
        {OTHER_MAGIC, SCAF_RUN_RECORD_DAMAGED, "another version"},
        {OTHER_HOME, SCAF_RUN_RECORD_STALE, "another scaf's (an install beside a build tree)"},
        {OTHER_ARG, SCAF_RUN_RECORD_STALE, "another command that hashed alike"},
        {FEWER_ARGS, SCAF_RUN_RECORD_STALE, "fewer words"},
        {OTHER_CWD, SCAF_RUN_RECORD_STALE, "another folder"},
        {OTHER_ENV, SCAF_RUN_RECORD_STALE, "another environment"},
        {OTHER_CPUS, SCAF_RUN_RECORD_STALE, "another affinity"},
        {OTHER_STAMP, SCAF_RUN_RECORD_STALE, "the program changed"},
        {NO_END, SCAF_RUN_RECORD_DAMAGED, "no end word"},
        {TRAILING, SCAF_RUN_RECORD_DAMAGED, "words after the end"},
        {HUGE_COUNT, SCAF_RUN_RECORD_DAMAGED, "a count beyond any command"},
        {CUT_SHORT, SCAF_RUN_RECORD_DAMAGED, "cut short"},
        {NO_FINAL_NUL, SCAF_RUN_RECORD_DAMAGED, "no final NUL"},
        {BAD_DAEMON, SCAF_RUN_RECORD_DAMAGED, "an unknown daemon mode"},
        {BAD_ASK, SCAF_RUN_RECORD_DAMAGED, "an ask that is not 0 or 1"},
    };
    static char buf[8192];

    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        struct scaf_run_plan plan;
        size_t n = record(rows[i].edit, buf, sizeof buf);
        enum scaf_run_record_status got;

        put(buf, n, 0600);
        got = scaf_run_record_load(file, HOME, 4, args, top, envp, 2, &plan);
        CHECK(got == rows[i].want, "%s: status %d, want %d", rows[i].why, got, rows[i].want);
        if (got == SCAF_RUN_RECORD_OK) {
            CHECK(strcmp(plan.path, prog) == 0 && plan.argv[0] && strcmp(plan.argv[1], "x") == 0 && !plan.argv[2],
                  "%s: the program and its argv", rows[i].why);
            CHECK(plan.nsets == 1 && strcmp(plan.sets[0], "SCAF_SOCKET") == 0 &&
                  strcmp(plan.sets[1], "/tmp/s.sock") == 0, "%s: the variables", rows[i].why);
            CHECK(strcmp(plan.daemon, "own") == 0 && plan.ask == 1 && plan.fixed == 1 && plan.nkey == 1 &&
                  plan.nsteered == 1 && strcmp(plan.steered[0], "OPENBLAS_NUM_THREADS") == 0,
                  "%s: the daemon and the start team's question", rows[i].why);
        }
        CHECK(got == SCAF_RUN_RECORD_OK || (!plan.buf && !plan.argv), "%s: a refused record leaves the plan empty",
              rows[i].why);
        scaf_run_plan_free(&plan);
    }
}

static void unsafe_and_missing(void)
{
    static char buf[8192];
    struct scaf_run_plan plan;
    size_t n = record(GOOD, buf, sizeof buf);
    char link[300];

    put(buf, n, 0622);
    CHECK(scaf_run_record_load(file, HOME, 4, args, top, envp, 2, &plan) == SCAF_RUN_RECORD_UNSAFE,
          "a record others may write is not trusted");
    put(buf, n, 0644);
    CHECK(scaf_run_record_load(file, HOME, 4, args, top, envp, 2, &plan) == SCAF_RUN_RECORD_OK,
          "a record others may read is used");
    scaf_run_plan_free(&plan);
    snprintf(link, sizeof link, "%s/link", top);
    CHECK(symlink(file, link) == 0, "symlink");
    CHECK(scaf_run_record_load(link, HOME, 4, args, top, envp, 2, &plan) == SCAF_RUN_RECORD_UNSAFE,
          "a symbolic link is not followed");
    unlink(link);
    unlink(file);
    CHECK(scaf_run_record_load(file, HOME, 4, args, top, envp, 2, &plan) == SCAF_RUN_RECORD_NONE, "no record");
}

/* replay.env_hash: NAME=VALUE in name order (a name before the longer names it begins), PWD left out. */
static void env_hash(void)
{
    char *same[] = {"AB=3", "A=1", "B=2", "PWD=/here", "SLURM_JOB_ID=7", NULL};
    char *other[] = {"AB=3", "A=1", "B=3", NULL};
    uint64_t h = SCAF_FNV_OFFSET;
    const char *order[] = {"A=1", "AB=3", "B=2"};

    for (size_t i = 0; i < 3; i++)
        h = scaf_progkey_fnv(h, order[i], strlen(order[i]) + 1);
    CHECK(scaf_run_record_env_hash(envp) == h, "the fingerprint is in name order, without PWD");
    CHECK(scaf_run_record_env_hash(same) == h, "the order given, PWD and SLURM_* do not count");
    CHECK(scaf_run_record_env_hash(other) != h, "a value counts");
}

static void path_of(void)
{
    char buf[512];

    setenv("XDG_CACHE_HOME", "/c", 1);
    CHECK(scaf_run_record_path(4, args, "/w", buf, sizeof buf) == 0 && strncmp(buf, "/c/scaf/run-v3/", 15) == 0 &&
          strlen(buf) == 15 + 16, "under XDG_CACHE_HOME: %s", buf);
    setenv("XDG_CACHE_HOME", "relative", 1);
    setenv("HOME", "/h", 1);
    CHECK(scaf_run_record_path(4, args, "/w", buf, sizeof buf) == 0 && strncmp(buf, "/h/.cache/scaf/run-v3/", 22) == 0,
          "a relative XDG_CACHE_HOME is ignored: %s", buf);
    unsetenv("XDG_CACHE_HOME");
    setenv("HOME", "", 1);
    CHECK(scaf_run_record_path(4, args, "/w", buf, sizeof buf) == -1, "no cache folder");
}

int main(void)
{
    int fd;

    if (!mkdtemp(top)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(prog, sizeof prog, "%s/prog", top);
    snprintf(file, sizeof file, "%s/record", top);
    fd = open(prog, O_WRONLY | O_CREAT, 0755);
    if (fd < 0 || write(fd, "#!/bin/sh\n", 10) != 10)
        return 1;
    close(fd);
    table();
    unsafe_and_missing();
    env_hash();
    path_of();
    unlink(prog);
    rmdir(top);
    return check_exit("test_run_record");
}
