"""The tests' own spelling of the wire format (tests/support/wire.py) encodes every message byte for byte as the C codec does, and so does scaf.lib.proto, which calls that codec through libscaf_launch.so."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT
from scaf.lib import proto
from support import wire

# Each line: a name and the message the C codec (src/common/wire.c) encodes, in hex.
PROGRAM = r"""
#include "scaf/wire.h"
#include <stdio.h>
#include <string.h>

static void show(const char *name, const void *p, size_t n)
{
    printf("%s ", name);
    for (size_t i = 0; i < n; i++)
        printf("%02x", ((const unsigned char *)p)[i]);
    printf("\n");
}

int main(void)
{
    struct scaf_msg_hello hello;
    struct scaf_msg_welcome welcome;
    struct scaf_msg_refuse refuse;
    struct scaf_wire_refusal why = {.reason = SCAF_REFUSE_FULL};
    struct scaf_msg_header h;

    struct scaf_msg_memory memory;
    struct scaf_msg_memory_reply memory_reply;
    const struct scaf_wire_memory_reply r = {SCAF_MEMORY_RECALL, SCAF_MEMORY_OK, 3, SCAF_VERDICT_FIXED,
                                             SCAF_SOURCE_EVIDENCE, 2, 0};

    scaf_wire_encode_hello(&hello, 8, 0, "pytest", 0);
    show("hello", &hello, sizeof hello);
    scaf_wire_encode_hello(&hello, 3, SCAF_HELLO_F_NONMALLEABLE, "fixed", 0x0123456789abcdefull);
    show("hello_fixed", &hello, sizeof hello);
    scaf_wire_encode_memory(&memory, SCAF_MEMORY_RECALL, 0xfedcba9876543210ull, 16, 0, NULL);
    show("memory_recall", &memory, sizeof memory);
    scaf_wire_encode_memory(&memory, SCAF_MEMORY_REMEMBER, 42, 0, SCAF_VERDICT_FIXED, "xgboost train.py");
    show("memory_remember", &memory, sizeof memory);
    scaf_wire_encode_memory_reply(&memory_reply, &r);
    show("memory_reply", &memory_reply, sizeof memory_reply);
    scaf_wire_encode_welcome(&welcome, 7, 12);
    show("welcome", &welcome, sizeof welcome);
    snprintf(why.text, sizeof why.text, "client table full");
    scaf_wire_encode_refuse(&refuse, &why);
    show("refuse", &refuse, sizeof refuse);
    h = scaf_wire_encode_status_req();
    show("status_req", &h, sizeof h);
    h = scaf_wire_encode_status_reply(100);
    show("status_reply", &h, sizeof h);
    return 0;
}
"""


def test_python_twin_encodes_as_the_c_codec(tmp_path: Path) -> None:
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler")
    src = tmp_path / "enc.c"
    src.write_text(PROGRAM)
    exe = tmp_path / "enc"
    subprocess.run([cc, "-std=c11", "-Wall", "-Werror", "-D_GNU_SOURCE", "-I", str(ROOT / "include"), "-o", str(exe),
                    str(src), str(ROOT / "src" / "common" / "wire.c")], check=True)
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    c = {name: bytes.fromhex(hexed) for name, hexed in (line.split() for line in out.splitlines())}
    py = {
        "hello": wire.hello(8),
        "hello_fixed": wire.hello(3, name=b"fixed", flags=wire.HELLO_F_NONMALLEABLE, key=0x0123456789ABCDEF),
        "memory_recall": wire.memory(wire.MEMORY_RECALL, key=0xFEDCBA9876543210, max_threads=16),
        "memory_remember": wire.memory(wire.MEMORY_REMEMBER, key=42, verdict=wire.VERDICT_FIXED,
                                       name=b"xgboost train.py"),
        "memory_reply": wire.memory_reply(wire.MEMORY_RECALL, wire.MEMORY_OK, 3, wire.VERDICT_FIXED, 1, 2),
        "welcome": wire.WELCOME.pack(wire.MAGIC, wire.VERSION, wire.MSG_WELCOME, wire.WELCOME.size, 0, 7,
                                     wire.PAGE_SIZE, 12, 0),
        "refuse": wire.REFUSE.pack(wire.MAGIC, wire.VERSION, wire.MSG_REFUSE, wire.REFUSE.size, 0, wire.REFUSE_FULL,
                                   wire.VERSION, b"client table full"),
        "status_req": wire.header(wire.MSG_STATUS_REQ, wire.HEADER.size),
        "status_reply": wire.header(wire.MSG_STATUS_REPLY, 100),
    }
    assert set(c) == set(py)
    for name, data in py.items():
        assert c[name] == data, name
    # The requests scaf sends, through ctypes: each argument reaches the codec as the C program passed it.
    assert proto.memory_request(proto.MEMORY_RECALL, key=0xFEDCBA9876543210, max_threads=16) == c["memory_recall"]
    assert proto.memory_request(proto.MEMORY_REMEMBER, key=42, verdict=proto.VERDICT_FIXED,
                                name=b"xgboost train.py") == c["memory_remember"]
    assert proto.status_request() == c["status_req"]
