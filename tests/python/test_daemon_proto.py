"""The Python twin of proto.h agrees with the C headers: offsets and sizes printed by a compiled offsetof()."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT
from support import wire

FIELDS = sorted(wire.PAGE_OFFSETS)
PROGRAM = (
    '#include "scaf/proto.h"\n#include <stddef.h>\n#include <stdio.h>\nint main(void)\n{\n'
    + "".join(f'    printf("{f} %zu\\n", offsetof(struct scaf_page, {f}));\n' for f in FIELDS)
    + '    printf("page %zu\\n", sizeof(struct scaf_page));\n'
    + '    printf("hello %zu\\nwelcome %zu\\nrefuse %zu\\n", sizeof(struct scaf_msg_hello),'
    + " sizeof(struct scaf_msg_welcome), sizeof(struct scaf_msg_refuse));\n"
    + '    printf("cpuset_words %d\\npage_size %u\\nstatus_max %u\\n", SCAF_CPUSET_WORDS, SCAF_PAGE_SIZE,'
    + " SCAF_STATUS_MAX);\n"
    + '    printf("page_magic %u\\ncontrol_cpuset %d\\nnonmalleable %u\\nlong_region %u\\nexiting %u\\nhello_nm %u\\n",'
    + " SCAF_PAGE_MAGIC, SCAF_CONTROL_CPUSET, SCAF_CLIENT_NONMALLEABLE, SCAF_CLIENT_LONG_REGION,"
    + " SCAF_CLIENT_EXITING, SCAF_HELLO_F_NONMALLEABLE);\n    return 0;\n}\n"
)


def test_page_layout_matches_c(tmp_path: Path) -> None:
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler")
    src = tmp_path / "off.c"
    src.write_text(PROGRAM)
    exe = tmp_path / "off"
    subprocess.run([cc, "-std=c11", "-I", str(ROOT / "include"), "-o", str(exe), str(src)], check=True)
    out = dict(line.split() for line in subprocess.run([str(exe)], capture_output=True, text=True,
                                                        check=True).stdout.splitlines())
    for f in FIELDS:
        assert int(out[f]) == wire.PAGE_OFFSETS[f], f
    assert int(out["page"]) == 2632
    assert int(out["hello"]) == wire.HELLO.size and int(out["welcome"]) == wire.WELCOME.size
    assert int(out["refuse"]) == wire.REFUSE.size
    assert int(out["cpuset_words"]) == wire.CPUSET_WORDS and int(out["page_size"]) == wire.PAGE_SIZE
    assert int(out["status_max"]) == wire.STATUS_MAX and int(out["page_magic"]) == wire.PAGE_MAGIC
    assert int(out["control_cpuset"]) == wire.CONTROL_CPUSET
    assert int(out["nonmalleable"]) == wire.CLIENT_NONMALLEABLE
    assert int(out["long_region"]) == wire.CLIENT_LONG_REGION
    assert int(out["exiting"]) == wire.CLIENT_EXITING
    assert int(out["hello_nm"]) == wire.HELLO_F_NONMALLEABLE
