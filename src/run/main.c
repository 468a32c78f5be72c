/* main.c — scaf-run: starts a command exactly as the last identical `scaf run` decided, in a few milliseconds, or hands it to the Python `scaf run` whenever anything that decision rested on has changed. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scaf/startenv.h"
#include "scaf/startrule.h"
#include "ask.h"
#include "record.h"
#include "scaf/progkey.h"
#include "scaf/supervise.h"

extern char **environ;

/*
 * Usage (the `scaf` launcher's, never a user's): scaf-run PYTHON PFLAG run ARGS...
 * PYTHON and PFLAG ("-P" or "") run the scaf package, which takes every command this one does not replay.
 */
static void python_scaf(char **argv, int argc)
{
    char **args = calloc((size_t)argc + 4, sizeof *args), *flag = argv[2];
    int n = 0;

    while (*flag == ' ')
        flag++; /* the launcher's @PFLAG@ is " -P" or "" */
    if (args) {
        args[n++] = argv[1];
        if (*flag)
            args[n++] = flag;
        args[n++] = "-m";
        args[n++] = "scaf";
        for (int i = 3; i < argc; i++)
            args[n++] = argv[i];
        execv(argv[1], args);
    }
    fprintf(stderr, "scaf: cannot run %s: %s\n", argv[1], strerror(errno));
    free(args);
    /* As after a failed exec: what was read for the replay goes with the process, unreleased. */
    _exit(125);
}

/* The folder this executable is in, symbolic links resolved: the records of the scaf beside it are its own. */
static int home_of(char *buf, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", buf, len - 1);
    char *slash;

    if (n <= 0)
        return -1;
    buf[n] = '\0';
    if (!(slash = strrchr(buf, '/')))
        return -1;
    if (slash == buf)
        slash++; /* an executable in / */
    *slash = '\0';
    return 0;
}

static unsigned cpus_of_affinity(void)
{
    cpu_set_t set;

    return sched_getaffinity(0, sizeof set, &set) == 0 ? (unsigned)CPU_COUNT(&set) : 1;
}

/* "NAME=VALUE", allocated; NULL without memory. */
static char *entry(const char *name, const char *value)
{
    size_t n = strlen(name), v = strlen(value);
    char *e = malloc(n + v + 2);

    if (e) {
        memcpy(e, name, n);
        e[n] = '=';
        memcpy(e + n + 1, value, v + 1);
    }
    return e;
}

/* The environment with every NAME of ADD (name, value pairs) set to its value; *kept: environ's entries, first. */
static char **environment(const char **add, int nadd, size_t *kept)
{
    size_t n = 0, k = 0;
    char **env;

    while (environ[n])
        n++;
    env = calloc(n + (size_t)nadd + 1, sizeof *env);
    if (!env)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        int replaced = 0;

        for (int j = 0; j < nadd && !replaced; j++) {
            size_t len = strlen(add[2 * j]);

            replaced = strncmp(environ[i], add[2 * j], len) == 0 && environ[i][len] == '=';
        }
        if (!replaced)
            env[k++] = environ[i];
    }
    *kept = k;
    for (int j = 0; j < nadd; j++) {
        int later = 0;

        for (int l = j + 1; l < nadd && !later; l++)
            later = strcmp(add[2 * j], add[2 * l]) == 0; /* the last one stands, as in a dict */
        if (!later && !(env[k++] = entry(add[2 * j], add[2 * j + 1])))
            return NULL;
    }
    return env;
}

/* The value the record adds for NAME (NULL: none). */
static const char *set_of(const struct scaf_run_plan *plan, const char *name)
{
    for (int i = 0; i < plan->nsets; i++)
        if (strcmp(plan->sets[2 * i], name) == 0)
            return plan->sets[2 * i + 1];
    return NULL;
}

/* The share the daemon gives the program now, which its runtimes start with (0: none known). */
static unsigned share_of(const struct scaf_run_answer *a)
{
    if (!a->recalled)
        return 0;
    if (a->reply.status != SCAF_MEMORY_OK && a->reply.status != SCAF_MEMORY_UNKNOWN &&
        a->reply.status != SCAF_MEMORY_OFF)
        return 0;
    return a->reply.start_team;
}

/* The start team the daemon's memory gives the program now (0: its own count), decided by the layer's rule. */
static unsigned start_team(const struct scaf_run_plan *plan, const struct scaf_run_answer *a, unsigned count)
{
    struct scaf_start_in in = {.user_fixed = plan->fixed, .user_malleable = plan->malleable,
                               .user_count = plan->user_count, .nthreads = count};
    struct scaf_start out;

    if (!a->recalled || (a->reply.status != SCAF_MEMORY_OK && a->reply.status != SCAF_MEMORY_UNKNOWN))
        return 0;
    in.asked = 1;
    in.start_team = a->reply.start_team;
    if (a->reply.status == SCAF_MEMORY_OK) {
        in.memory_runs = a->reply.runs;
        in.memory_verdict = a->reply.verdict;
        in.memory_source = a->reply.source;
    }
    out = scaf_start_decide(&in);
    return out.why == SCAF_START_APPLY ? out.team : 0;
}

int main(int argc, char **argv)
{
    char cwd[PATH_MAX], home[PATH_MAX], file[PATH_MAX + 64], team_s[16], pid_s[24];
    struct scaf_run_plan plan;
    struct scaf_run_answer answer;
    struct scaf_progkey key = {0};
    struct scaf_startenv_var share[SCAF_STARTENV_MAX];
    unsigned nshare;
    const char *replay = getenv("SCAF_RUN_REPLAY"), **add;
    unsigned count = cpus_of_affinity(), team = 0;
    char **env;
    size_t kept = 0;
    int nadd = 0, rc;

    if (argc < 3) {
        fprintf(stderr, "scaf-run: the scaf command runs this, as: scaf-run PYTHON PFLAG run ARGS...\n");
        return 125;
    }
    if (argc < 4 || strcmp(argv[3], "run") != 0)
        python_scaf(argv, argc);
    if ((replay && strcmp(replay, "0") == 0) || !getcwd(cwd, sizeof cwd) || home_of(home, sizeof home) != 0 ||
        scaf_run_record_path(argc - 4, argv + 4, cwd, file, sizeof file) != 0 ||
        scaf_run_record_load(file, home, argc - 4, argv + 4, cwd, environ, count, &plan) != SCAF_RUN_RECORD_OK)
        python_scaf(argv, argc);
    /* An empty command names no program (SCAF_MEMORY=0): the daemon is asked for the share alone, under key 0. */
    if (plan.ask && plan.key_exe[0] && scaf_progkey_of(plan.key_exe, plan.key_words, plan.nkey, &key) != 0)
        python_scaf(argv, argc);
    if (scaf_run_ask(plan.daemon, plan.sock, plan.ask, plan.ask ? key.key : 0, count, &answer) != 0)
        python_scaf(argv, argc);
    if (plan.ask && key.key)
        team = start_team(&plan, &answer, count);
    /* Every runtime of the program starts with its share (runenv.start_team): the one table's variables. */
    nshare = plan.ask ? scaf_startenv_build(share_of(&answer), count, scaf_startenv_bits(set_of(&plan, "SCAF_RUNTIMES")),
                                            0, (const char *const *)environ, share, SCAF_STARTENV_MAX)
                      : 0;
    add = calloc(2 * ((size_t)plan.nsets + 3 + (size_t)plan.nsteered + nshare), sizeof *add);
    if (!add)
        python_scaf(argv, argc);
    for (int i = 0; i < 2 * plan.nsets; i++)
        add[i] = plan.sets[i];
    nadd = plan.nsets;
    for (unsigned i = 0; i < nshare; i++) {
        add[2 * nadd] = share[i].name;
        add[2 * nadd++ + 1] = share[i].value;
    }
    if (team) {
        /* runenv.start_team: the count, scaf's sign that it is scaf's, and whose it is (this process's child). */
        snprintf(team_s, sizeof team_s, "%u", team);
        snprintf(pid_s, sizeof pid_s, "%ld", (long)getpid());
        const char *more[] = {"OMP_NUM_THREADS", team_s, "SCAF_START_TEAM", team_s, "SCAF_START_PARENT", pid_s};

        for (int i = 0; i < 6; i += 2) {
            add[2 * nadd] = more[i];
            add[2 * nadd++ + 1] = more[i + 1];
        }
        for (int i = 0; i < plan.nsteered; i++) {
            add[2 * nadd] = plan.steered[i];
            add[2 * nadd++ + 1] = team_s;
        }
    }
    if (!(env = environment(add, nadd, &kept)))
        python_scaf(argv, argc);
    utimensat(AT_FDCWD, file, NULL, 0); /* the least recently started records go first (replay._prune) */
    rc = scaf_run_supervise(plan.path, (char *const *)plan.argv, env);
    for (size_t i = kept; env[i]; i++) /* the entries environment() made; the ones before are environ's */
        free(env[i]);
    free(env);
    free(add);
    scaf_run_plan_free(&plan);
    return rc;
}
