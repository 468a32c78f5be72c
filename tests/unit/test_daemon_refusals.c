/* test_daemon_refusals.c — the refusal log's windows: the first few in full, the rest counted, one summary. */
#include "../../src/daemon/report/refusals.h"
#include "../../src/daemon/say.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

static int rd = -1;

/* Everything scaf_say wrote since the last call (stderr is a pipe this test holds). */
static void take(char *buf, size_t len)
{
    ssize_t n = read(rd, buf, len - 1);
    buf[n > 0 ? n : 0] = '\0';
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

static void windows(void)
{
    struct scaf_refusals r = {0};
    static char out[65536];

    /* 12 in the first second: 5 lines, then nothing until the window ends. */
    for (int i = 0; i < 10; i++)
        scaf_refusals_note(&r, 100.0 + i * 0.05, SCAF_REFUSAL_MALFORMED, "refused #%d: bad magic", i);
    scaf_refusals_note(&r, 100.6, SCAF_REFUSAL_USER_PENDING, "refused: pending");
    scaf_refusals_note(&r, 100.7, SCAF_REFUSAL_USER_PENDING, "refused: pending");
    scaf_refusals_tick(&r, 100.9); /* the window started at 100.0: not over yet */
    take(out, sizeof out);
    CHECK(count(out, "refused #") == SCAF_REFUSALS_FULL_PER_S, "lines in full: %d\n%s", count(out, "refused #"), out);
    CHECK(strstr(out, "in the last second") == NULL, "no summary before the window ends:\n%s", out);

    scaf_refusals_tick(&r, 101.05);
    take(out, sizeof out);
    CHECK(strstr(out, "12 refused in the last second (5 shown above), by reason: malformed 10, user's pending quota 2\n") !=
              NULL,
          "summary:\n%s", out);

    /* A window with no more than the lines shown needs no summary. */
    scaf_refusals_note(&r, 102.2, SCAF_REFUSAL_SILENT, "dropping a silent one");
    scaf_refusals_tick(&r, 103.5);
    take(out, sizeof out);
    CHECK(count(out, "dropping a silent one") == 1 && strstr(out, "in the last second") == NULL, "one line only:\n%s",
          out);

    /* A note after a long quiet starts a new window at once: its lines are shown again. */
    for (int i = 0; i < 7; i++)
        scaf_refusals_note(&r, 200.0, SCAF_REFUSAL_DESCRIPTORS, "out of fds %d", i);
    scaf_refusals_note(&r, 201.5, SCAF_REFUSAL_DESCRIPTORS, "out of fds later");
    take(out, sizeof out);
    CHECK(count(out, "out of fds") == 6, "5 in the first window, 1 in the next: %d\n%s", count(out, "out of fds"), out);
    CHECK(strstr(out, "7 refused in the last second (5 shown above), by reason: out of descriptors 7") != NULL,
          "the summary comes when the next window opens:\n%s", out);
}

/* A full stderr drops lines instead of waiting, counts them, and the next summary that gets out says so. */
static void full_pipe(void)
{
    struct scaf_refusals r = {.dropped_seen = scaf_say_dropped()};
    static char out[1 << 20];
    unsigned long long before = scaf_say_dropped();
    int lines = 0;

    /* Fill the pipe: scaf_say must return every time, the dropped count grows once it is full. */
    while (scaf_say_dropped() == before && lines < 100000) {
        scaf_say("filler line %d .................................................................", lines);
        lines++;
    }
    CHECK(scaf_say_dropped() > before, "a full pipe drops lines (%d written)", lines);
    scaf_say("filler line %d .................................................................", lines);
    CHECK(scaf_say_dropped() >= before + 2, "every line that does not fit is counted");
    for (int i = 0; i < 8; i++)
        scaf_refusals_note(&r, 300.0, SCAF_REFUSAL_MALFORMED, "x");
    while (read(rd, out, sizeof out) > 0) {
    }
    scaf_refusals_tick(&r, 301.0);
    take(out, sizeof out);
    CHECK(strstr(out, "8 refused in the last second (5 shown above)") != NULL, "summary:\n%s", out);
    CHECK(strstr(out, "log lines dropped, stderr full") != NULL, "the loss is reported:\n%s", out);
}

int main(void)
{
    int p[2], saved = dup(STDERR_FILENO);
    FILE *report = saved >= 0 ? fdopen(saved, "w") : NULL;

    /* fd 2 becomes a small pipe read here, before the first scaf_say sets up its writes; CHECK's
     * messages go to the real stderr, kept aside. */
    if (!report || pipe(p) < 0 || dup2(p[1], STDERR_FILENO) < 0)
        return 2;
    setvbuf(report, NULL, _IONBF, 0);
    stderr = report;
    close(p[1]);
    rd = p[0];
    fcntl(rd, F_SETPIPE_SZ, 4096);
    fcntl(rd, F_SETFL, O_NONBLOCK);
    windows();
    full_pipe();
    return check_exit("test_daemon_refusals");
}
