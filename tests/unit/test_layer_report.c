/* test_layer_report.c — the SCAF_REPORT line scaf check reads (malleable/report.c), row by row: escaping, teams, what does not fit. */
#include "../../src/layer/malleable/report.h"

#include <string.h>

#include "check.h"

static const struct {
    const char *what;
    struct scaf_report r;
    size_t len; /* the buffer given (0: 1536, what the layer uses) */
    const char *want; /* NULL: does not fit */
} rows[] = {
    {"plain", {.pid = 42, .exe = "/bin/lu", .key = 0xabcde, .program = "lu", .verdict = SCAF_VERDICT_MALLEABLE, .source = SCAF_SOURCE_CHECK,
               .reason = "scaf check: seeded", .regions = 3, .team_bits = {0x5}},
     0, "{\"pid\":42,\"exe\":\"/bin/lu\",\"key\":\"00000000000abcde\",\"program\":\"lu\",\"verdict\":\"malleable\",\"source\":\"check\",\"reason\":\"scaf check: seeded\","
        "\"regions\":3,\"teams\":[1,3]}\n"},
    {"fixed by a rule, no team recorded", {.pid = 7, .exe = "x", .verdict = SCAF_VERDICT_FIXED,
                                           .source = SCAF_SOURCE_RULES, .reason = "", .regions = 1},
     0, "{\"pid\":7,\"exe\":\"x\",\"key\":\"0000000000000000\",\"program\":\"\",\"verdict\":\"fixed\",\"source\":\"rules\",\"reason\":\"\",\"regions\":1,\"teams\":[]}\n"},
    {"undecided, unknown source", {.pid = 1, .exe = "", .verdict = 99, .source = 99, .reason = "r", .regions = 0},
     0, "{\"pid\":1,\"exe\":\"\",\"key\":\"0000000000000000\",\"program\":\"\",\"verdict\":\"undecided\",\"source\":\"default\",\"reason\":\"r\",\"regions\":0,"
        "\"teams\":[]}\n"},
    {"escaping", {.pid = 2, .exe = "/a\"b\\c\td", .key = ~0ull, .program = "R \"x\"", .verdict = SCAF_VERDICT_FIXED, .source = SCAF_SOURCE_EVIDENCE,
                  .reason = "say \"hi\" \\ now\n", .regions = 5, .team_bits = {0, 1}},
     0, "{\"pid\":2,\"exe\":\"/a?b?c?d\",\"key\":\"ffffffffffffffff\",\"program\":\"R ?x?\",\"verdict\":\"fixed\",\"source\":\"evidence\",\"reason\":\"say \\\"hi\\\" \\\\ now \","
        "\"regions\":5,\"teams\":[65]}\n"},
    {"the user's word", {.pid = 3, .exe = "p", .verdict = SCAF_VERDICT_MALLEABLE, .source = SCAF_SOURCE_USER,
                         .reason = "--malleable", .regions = 9, .team_bits = {0x8000000000000000ull, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x8000000000000000ull}},
     0, "{\"pid\":3,\"exe\":\"p\",\"key\":\"0000000000000000\",\"program\":\"\",\"verdict\":\"malleable\",\"source\":\"user\",\"reason\":\"--malleable\",\"regions\":9,"
        "\"teams\":[64,1024]}\n"},
    {"too small a buffer", {.pid = 3, .exe = "p", .reason = "r"}, 32, NULL},
};

int main(void)
{
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        char buf[1536];
        size_t len = rows[i].len ? rows[i].len : sizeof buf;
        int n = scaf_report_format(&rows[i].r, buf, len);

        if (!rows[i].want) {
            CHECK(n < 0, "%s: %d, want -1", rows[i].what, n);
            continue;
        }
        CHECK(n == (int)strlen(rows[i].want), "%s: length %d, want %zu", rows[i].what, n, strlen(rows[i].want));
        CHECK(n > 0 && strcmp(buf, rows[i].want) == 0, "%s:\n  got  %s  want %s", rows[i].what, n > 0 ? buf : "",
              rows[i].want);
    }

    /* Every team of a 1024-context machine: the list is cut short, the line still closes and fits. */
    {
        struct scaf_report r = {.pid = 1, .exe = "p", .reason = "r", .regions = 1};
        char buf[1024];
        int n;

        memset(r.team_bits, 0xff, sizeof r.team_bits);
        n = scaf_report_format(&r, buf, sizeof buf);
        CHECK(n > 0 && n < (int)sizeof buf && strcmp(buf + n - 3, "]}\n") == 0, "all teams: %d", n);
    }
    return check_exit("test_layer_report");
}
