/* jsonbuf.h — a growable text buffer and JSON string escaping (not an installed interface). */
#ifndef SCAFD_JSONBUF_H
#define SCAFD_JSONBUF_H

#include <stdbool.h>
#include <stddef.h>

struct scaf_buf {
    char *p;
    size_t len, cap;
    bool failed; /* an allocation failed; the content is incomplete */
};

void scaf_buf_printf(struct scaf_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends s as a JSON string literal, quotes included; bytes that are not valid UTF-8 become U+FFFD. */
void scaf_buf_json_string(struct scaf_buf *b, const char *s);
void scaf_buf_free(struct scaf_buf *b);

#endif
