"""Each rule that C and Python both need is written once, in C, and Python calls it (docs/runtimes.md, "The one
table"; docs/python.md): this lint fails when a Python module of the scaf package carries a rule's own words again.

A rule's words are what any second implementation would have to spell out: the start rule's reasons, the start
environment's variables. The command's help texts (python/scaf/commands) may name the variables to the user; the
library (python/scaf/lib) may not, since it would then be deciding with them.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LIB = ROOT / "python" / "scaf" / "lib"

# The one implementation of each rule, and words only it should hold.
RULES = {
    "the start rule (src/common/startrule.c)": ("remembered fixed from", "offers no start team",
                                                 "is not below its count", "remembered malleable by scaf check"),
    "the start environment (src/common/startenv.c)": ("RAYON_NUM_THREADS", "POLARS_MAX_THREADS",
                                                       "ORT_INTRA_OP_NUM_THREADS", "NUMBA_NUM_THREADS",
                                                       "NUMEXPR_NUM_THREADS", "GOMAXPROCS", "ActiveProcessorCount",
                                                       "DOTNET_PROCESSOR_COUNT", "JULIA_NUM_THREADS"),
    "the rules files (src/common/rules.c)": ("must be lowercase", "without a pattern", "more than one pattern",
                                             "is not 'malleable' or 'fixed'", "not a rules file", "line longer than",
                                             "SCAF_RULES", "XDG_CONFIG_HOME", "/etc/scaf/rules",
                                             ".config/scaf/rules", "1022"),
    "the socket directory (src/common/rundir.c)": ("writable by other users", "belongs to uid", "not sticky",
                                                   "planted by someone else", "O_NOFOLLOW", "st_nlink"),
    "peer trust (src/common/peer.c)": ("SCAF_DAEMON_USER", "getpwnam", "ucred", "not as you"),
    "the default socket path (src/common/sockpath.c)": ("XDG_RUNTIME_DIR", "/tmp/scaf-", "scaf/scafd.sock"),
    "the oneTBB probe (src/common/tbblib.c)": ("oneTBB: VERSION", "tcmConnect", "2021.11"),
}


# Words a module holds for another reason, each with it.
EXEMPT = {
    ("frameworks.py", "NUMBA_NUM_THREADS"): "joblib's own list of the variables it sets in loky's workers (LOKY_VARS)",
    ("frameworks.py", "NUMEXPR_NUM_THREADS"): "joblib's own list of the variables it sets in loky's workers",
}


@pytest.mark.parametrize("rule", RULES)
def test_no_python_module_writes_a_c_rule_again(rule: str) -> None:
    found = []
    for f in sorted(LIB.rglob("*.py")):
        text = f.read_text()
        for word in RULES[rule]:
            if (f.name, word) in EXEMPT:
                continue
            for m in re.finditer(re.escape(word), text):
                found.append(f"{f.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}: {word}")
    assert not found, f"{rule} is written again in Python: call it through libscaf_launch.so instead: {found}"


def test_the_c_rules_hold_their_words() -> None:
    """The lint looks for words that the one implementation does hold: a word that moved would make it blind."""
    start = (ROOT / "src" / "common" / "startrule.c").read_text()
    env = (ROOT / "src" / "common" / "startenv.c").read_text()
    for word in RULES["the start rule (src/common/startrule.c)"]:
        assert word in start, word
    for word in RULES["the start environment (src/common/startenv.c)"]:
        assert word in env, word


# The one implementation of each rule added since the two above, by the name RULES gives it.
SOURCES = {
    "the rules files (src/common/rules.c)": ("src/common/rules.c", "include/scaf/rules.h"),
    "the socket directory (src/common/rundir.c)": ("src/common/rundir.c",),
    "peer trust (src/common/peer.c)": ("src/common/peer.c",),
    "the default socket path (src/common/sockpath.c)": ("src/common/sockpath.c",),
    "the oneTBB probe (src/common/tbblib.c)": ("src/common/tbblib.c", "include/scaf/tbblib.h"),
}

# Words a rule's C source spells another way (a constant's value, a struct field): where they are.
SPELLED = {"O_NOFOLLOW": "src/common/rundir.c", "st_nlink": "src/common/rundir.c", "ucred": "src/common/peer.c"}


@pytest.mark.parametrize("rule", SOURCES)
def test_each_c_rule_holds_its_words(rule: str) -> None:
    """Each word the lint looks for is one the rule's C source holds: a word that moved would make it blind."""
    text = "".join((ROOT / f).read_text() for f in SOURCES[rule])
    missing = [w for w in RULES[rule] if w not in text]
    assert not missing, f"{rule}: the C source no longer holds {missing}: update RULES"


# ---- the wire format (include/scaf/proto.h, src/common/wire.c) and the child's supervisor (src/common/supervise.c):
# Python encodes, checks and supervises through libscaf_launch.so (scaf.lib.proto, scaf.lib.supervise).

PROTO_H = ROOT / "include" / "scaf" / "proto.h"
PACKAGE = ROOT / "python" / "scaf"
SUPERVISOR_WORDS = ("sigwaitinfo", "SI_KERNEL", "cannot execute")
_C_INT = {"uint32_t": "I", "uint16_t": "H", "uint64_t": "Q"}


def proto_values() -> dict[str, int]:
    """proto.h's macros and enum members with a number, by the names Python would give them (SCAF_PROTO_MAGIC:
    MAGIC, SCAF_MSG_MEMORY: MSG_MEMORY)."""
    text = PROTO_H.read_text()
    number = r"(0x[0-9a-fA-F]+|\d+)u?"
    out = {name: int(value, 0) for name, value in re.findall(rf"^#define\s+SCAF_(\w+)\s+{number}\b", text, re.MULTILINE)}
    out |= {name: int(value, 0) for name, value in re.findall(rf"^\s+SCAF_(\w+)\s*=\s*{number}\b", text, re.MULTILINE)}
    out |= {name: int(a, 0) << int(b) for name, a, b in re.findall(
        rf"^#define\s+SCAF_(\w+)\s+\({number}\s*<<\s*(\d+)\)", text, re.MULTILINE)}
    return {name.removeprefix("PROTO_"): value for name, value in out.items()}


def header_format() -> str:
    """The struct module's spelling of struct scaf_msg_header, read from proto.h ("IHHII")."""
    body = re.search(r"struct scaf_msg_header \{(.*?)\};", PROTO_H.read_text(), re.DOTALL)
    assert body, "struct scaf_msg_header is not in proto.h"
    return "".join(_C_INT[t] for t in re.findall(r"^\s*(uint\d+_t)\s+\w+;", body.group(1), re.MULTILINE))


def _literal(node: ast.AST) -> bool:
    """An expression of number literals only (1, 0x46414353, 1 << 20, a tuple of them)."""
    return all(isinstance(n, (ast.Constant, ast.Tuple, ast.BinOp, ast.UnaryOp, ast.operator, ast.unaryop,
                              ast.expr_context)) for n in ast.walk(node)) and any(
        isinstance(n, ast.Constant) and isinstance(n.value, int) for n in ast.walk(node))


def _bound_to_literals(tree: ast.AST) -> list[tuple[str, int]]:
    """(name, line) of every name a module binds to number literals, `A, B = 1, 2` included."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _literal(node.value):
            for target in node.targets:
                names = target.elts if isinstance(target, ast.Tuple) else [target]
                out += [(n.id, node.lineno) for n in names if isinstance(n, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and node.value is not None and _literal(node.value) and isinstance(
                node.target, ast.Name):
            out.append((node.target.id, node.lineno))
    return out


def test_no_python_module_writes_the_wire_format_again() -> None:
    """proto.h's numbers (the magic, the message types, the ops, statuses, verdicts and sources) and its header's
    layout are the C codec's: a module of the scaf package that binds one of those names to a number, packs the
    header, or spells the magic is a second copy. A one-word name (VERSION) is another format's anywhere but in
    proto.py."""
    values = proto_values()
    magic = values["MAGIC"]
    layout = re.compile(r"""["'][@=<>!]?\s*""" + header_format())
    found = []
    for f in sorted(PACKAGE.rglob("*.py")):
        text = f.read_text()
        where = f.relative_to(ROOT)
        found += [f"{where}:{line}: {name} = a number" for name, line in _bound_to_literals(ast.parse(text))
                  if name in values and ("_" in name or f.name == "proto.py")]
        found += [f"{where}:{text.count(chr(10), 0, m.start()) + 1}: the header's layout" for m in layout.finditer(text)]
        for word in (hex(magic), str(magic)):
            found += [f"{where}:{text.count(chr(10), 0, m.start()) + 1}: the magic"
                      for m in re.finditer(word, text, re.IGNORECASE)]
    assert not found, f"the wire format is written again in Python: call the C codec (scaf.lib.proto) instead: {found}"


def test_no_python_module_supervises_the_child_again() -> None:
    found = []
    for f in sorted(PACKAGE.rglob("*.py")):
        text = f.read_text()
        for word in SUPERVISOR_WORDS:
            found += [f"{f.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}: {word}"
                      for m in re.finditer(re.escape(word), text)]
    assert not found, f"the child's supervisor is written again in Python: call scaf.lib.supervise instead: {found}"


def test_the_c_side_holds_the_wire_format_and_the_supervisor() -> None:
    """The lints above look for what the C side does hold: a name or word that moved would make them blind."""
    values = proto_values()
    assert values["MAGIC"] == 0x46414353 and values["VERSION"] >= 6
    for name in ("MSG_STATUS_REQ", "MSG_STATUS_REPLY", "MSG_MEMORY", "MSG_MEMORY_REPLY", "MSG_REFUSE",
                 "MEMORY_RECALL", "MEMORY_FORGET", "MEMORY_REMEMBER", "MEMORY_OK", "MEMORY_OFF", "MEMORY_UNKNOWN",
                 "MEMORY_FAILED", "VERDICT_FIXED", "VERDICT_MALLEABLE", "SOURCE_CHECK", "STATUS_MAX"):
        assert name in values, name
    assert header_format() == "IHHII"
    supervisor = (ROOT / "src" / "common" / "supervise.c").read_text()
    for word in SUPERVISOR_WORDS:
        assert word in supervisor, word


def test_the_wire_lint_sees_a_copy() -> None:
    """The lint's own check, on the copy proto.py used to hold: each kind of finding is caught."""
    copy = 'import struct\nMAGIC = 0x46414353\nMSG_STATUS_REQ = 4\nMEMORY_OK, MEMORY_OFF = 0, 1\n' \
           'HEADER = struct.Struct("=IHHII")\n'
    names = {name for name, _ in _bound_to_literals(ast.parse(copy))}
    assert {"MAGIC", "MSG_STATUS_REQ", "MEMORY_OK", "MEMORY_OFF"} <= names & set(proto_values())
    assert re.search(r"""["'][@=<>!]?\s*""" + header_format(), copy)
