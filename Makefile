# Makefile — `make` builds everything, `make test` runs every test, `make demo` runs the demo.
BUILD   := $(CURDIR)/build
ASAN    := $(CURDIR)/build-asan
PYTHON  ?= python3
VENV    := $(BUILD)/venv
VPY     := $(VENV)/bin/python
JOBS    ?= 2
PYTEST_ARGS ?=

.PHONY: all c asan py test test-unit test-py test-corpus lint cycles demo clean help man install uninstall

# Where `make install` puts things (GNU directory variables; DESTDIR is prepended to each).
PREFIX      ?= /usr/local
prefix      ?= $(PREFIX)
exec_prefix ?= $(prefix)
bindir      ?= $(exec_prefix)/bin
sbindir     ?= $(exec_prefix)/sbin
libdir      ?= $(exec_prefix)/lib
pkglibdir   ?= $(libdir)/scaf
datarootdir ?= $(prefix)/share
mandir      ?= $(datarootdir)/man
docdir      ?= $(datarootdir)/doc/scaf
systemdsystemunitdir ?= $(libdir)/systemd/system
systemduserunitdir   ?= $(libdir)/systemd/user
INSTALL_VARS = DESTDIR='$(DESTDIR)' prefix='$(prefix)' bindir='$(bindir)' sbindir='$(sbindir)' \
	libdir='$(libdir)' pkglibdir='$(pkglibdir)' mandir='$(mandir)' docdir='$(docdir)' \
	systemdsystemunitdir='$(systemdsystemunitdir)' systemduserunitdir='$(systemduserunitdir)' \
	BUILD='$(BUILD)' PYTHON='$(PYTHON)'

all: c py

help:
	@echo "make          build daemon, layer, workloads and the scaf command into build/"
	@echo "make demo     run two workloads unmodified and under scaf, print the table"
	@echo "make test     C unit tests (plain and ASan+UBSan), then the pytest suite"
	@echo "make test-corpus  only the real third-party programs (tools/corpus-install first; docs/corpus.md)"
	@echo "make lint     ruff over the Python code, and make cycles"
	@echo "make cycles   fail when C files depend on each other in a circle (#include or linked symbol)"
	@echo "make man      the manual pages, from the --help texts, into build/man/"
	@echo "make install  install under PREFIX (default /usr/local; DESTDIR honoured); docs/deploy.md"
	@echo "make uninstall  remove exactly what make install put there"
	@echo "make clean    remove build/ and build-asan/"

c:
	cmake -S . -B $(BUILD)/cmake -DSCAF_OUT=$(BUILD) >/dev/null
	cmake --build $(BUILD)/cmake -j$(JOBS)

asan:
	cmake -S . -B $(ASAN)/cmake -DSCAF_OUT=$(ASAN) -DSCAF_SANITIZE=ON >/dev/null
	cmake --build $(ASAN)/cmake -j$(JOBS)

py: $(VENV)/.stamp $(BUILD)/bin/scaf

$(VENV)/.stamp: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install -q --disable-pip-version-check -r requirements.txt
	touch $@

$(BUILD)/bin/scaf: tools/scaf.in
	mkdir -p $(BUILD)/bin
	sed -e 's|@ROOT@|$(CURDIR)|g' tools/scaf.in > $@
	chmod +x $@

test: all asan lint test-unit test-py

test-unit:
	cd $(BUILD)/cmake && ctest --output-on-failure
	cd $(ASAN)/cmake && ctest --output-on-failure

# The daemon robustness tests also run against the sanitized daemon.
test-py: all asan
	SCAF_ASAN_SCAFD=$(ASAN)/bin/scafd $(VPY) -m pytest $(PYTEST_ARGS) tests

# Real OpenMP programs from Debian packages, plain and under scaf (docs/corpus.md). `make test`
# runs them too (they are under tests/); programs whose package is missing are skipped, or fail
# with SCAF_CORPUS_REQUIRED=1 (.ci/run sets it after tools/corpus-install).
test-corpus: all
	$(VPY) -m pytest $(PYTEST_ARGS) tests/corpus

lint: py cycles
	$(VENV)/bin/ruff check python tests tools

demo: all
	$(BUILD)/bin/scaf demo

clean:
	rm -rf $(BUILD) $(ASAN)

man: all
	BUILD='$(BUILD)' VPY='$(VPY)' tools/man/build.sh

# scafd goes to sbin (a daemon: section 8; `scaf` finds it by its installed path), the layers,
# workloads and a virtual environment of pinned runtime packages to $(libdir)/scaf (docs/deploy.md).
install: all man
	$(INSTALL_VARS) tools/install.sh install

uninstall:
	$(INSTALL_VARS) tools/install.sh uninstall

# No C file may depend, by #include or by a linked symbol, on one that depends on it.
cycles: c
	$(PYTHON) tools/lint/cycles.py --dirs src --objects $(BUILD)/cmake
