"""Each rule that C and Python both need is written once, in C, and Python calls it (docs/runtimes.md, "The one
table"; docs/python.md): this lint fails when a Python module of the scaf package carries a rule's own words again.

A rule's words are what any second implementation would have to spell out: the start rule's reasons, the start
environment's variables. The command's help texts (python/scaf/commands) may name the variables to the user; the
library (python/scaf/lib) may not, since it would then be deciding with them.
"""

from __future__ import annotations

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

