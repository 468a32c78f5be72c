# Makefile — `make` builds everything, `make test` runs every test, `make demo` runs the demo.
BUILD   := $(CURDIR)/build
ASAN    := $(CURDIR)/build-asan
PYTHON  ?= python3
VENV    := $(BUILD)/venv
VPY     := $(VENV)/bin/python
JOBS    ?= 2
FUZZ    := $(CURDIR)/build-fuzz
FUZZ_S  ?= 600
SOAK_S  ?= 600
SOAK_WAVE ?= 1000
PYTEST_ARGS ?=

.PHONY: all c asan py test test-unit test-py test-corpus lint cycles demo clean help man install uninstall fuzz fuzz-cov soak

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
	BUILD='$(BUILD)' PYTHON='$(INSTALL_PYTHON)'
# The installed scaf runs on the system's Python, which every user may run: a PYTHON of one's own
# (pyenv, conda under a home) would leave the installed command to its owner alone.
INSTALL_PYTHON ?= $(if $(wildcard /usr/bin/python3),/usr/bin/python3,$(PYTHON))

# The workloads built by clang (libomp), and against Intel's libiomp5 (from the intel-openmp
# wheel in the venv) by clang and by gcc: the LLVM/Intel layer's test programs.
IOMP5   := $(VENV)/lib/libiomp5.so

.PHONY: all build-all c asan py workloads-omp tbb-progs test test-unit test-py test-corpus lint cycles demo clean help

# The entry points a user types first (make, make demo, make test, make install, make fuzz) install
# the Debian packages they need with tools/deps (the project's one list of them; quiet and quick
# when nothing is missing), then build. The targets below them assume the packages are there.
all:
	@tools/deps build
	@$(MAKE) --no-print-directory build-all

build-all: c py workloads-omp tbb-progs

help:
	@echo "make          build daemon, layers, workloads (gcc, clang, libiomp5), the oneTBB test programs"
	@echo "              (g++, pip's tbb) and the scaf command into build/"
	@echo "make demo     run two workloads unmodified and under scaf, print the table (gcc only, no clang)"
	@echo "make test     C unit tests (plain and ASan+UBSan), then the pytest suite"
	@echo "              (SCAF_TEST_SCALE=0.25 or 4: as a machine 4 times faster or slower; docs/testing.md)"
	@echo "              (each of make, make demo, make test, make install first runs tools/deps:"
	@echo "              the Debian packages it needs, with sudo when not root)"
	@echo "make test-corpus  only the real third-party programs (tools/deps corpus installs them; docs/corpus.md)"
	@echo "make lint     ruff over the Python code, and make cycles"
	@echo "make cycles   fail when C files depend on each other in a circle (#include or linked symbol)"
	@echo "make man      the manual pages, from the --help texts, into build/man/"
	@echo "make install  install under PREFIX (default /usr/local; DESTDIR honoured); docs/deploy.md"
	@echo "make uninstall  remove exactly what make install put there"
	@echo "make fuzz     libFuzzer over the wire codec (both directions) and the page decoder for FUZZ_S seconds (default 600)"
	@echo "make soak     waves of SOAK_WAVE (1000) real clients, SIGKILLed, against the ASan daemon for SOAK_S seconds (600)"
	@echo "make clean    remove build/ and build-asan/ and build-fuzz/"

c:
	cmake -S . -B $(BUILD)/cmake -DSCAF_OUT=$(BUILD) >/dev/null
	cmake --build $(BUILD)/cmake -j$(JOBS)

workloads-omp: c py
	cmake -S . -B $(BUILD)/cmake-clang -DCMAKE_C_COMPILER=clang -DSCAF_OUT=$(BUILD) -DSCAF_WORKLOADS_ONLY=workloads-clang >/dev/null
	cmake --build $(BUILD)/cmake-clang -j$(JOBS)
	cmake -S . -B $(BUILD)/cmake-iomp5-clang -DCMAKE_C_COMPILER=clang -DSCAF_OUT=$(BUILD) -DSCAF_WORKLOADS_ONLY=workloads-iomp5-clang -DSCAF_WORKLOADS_OMPLIB=$(IOMP5) >/dev/null
	cmake --build $(BUILD)/cmake-iomp5-clang -j$(JOBS)
	cmake -S . -B $(BUILD)/cmake-iomp5-gcc -DCMAKE_C_COMPILER=gcc -DSCAF_OUT=$(BUILD) -DSCAF_WORKLOADS_ONLY=workloads-iomp5-gcc -DSCAF_WORKLOADS_OMPLIB=$(IOMP5) >/dev/null
	cmake --build $(BUILD)/cmake-iomp5-gcc -j$(JOBS)

# The oneTBB test programs (tests/thirdparty/test_tcm.py, scaf bench pairs --program), built by g++
# against the pinned tbb and tbb-devel wheels in the venv: headers from tbb-devel, libtbb.so.12
# from tbb (found at run time through the RUNPATH, as a pip user's program finds it).
# tbb_omp also has OpenMP regions (libgomp): one process, two runtimes.
TBB_PROGS := $(BUILD)/tbb/tbb_for $(BUILD)/tbb/tbb_reduce $(BUILD)/tbb/tbb_omp
tbb-progs: $(TBB_PROGS)

$(BUILD)/tbb/%: tests/progs/%.cpp tests/progs/tbb_probe.h $(VENV)/.stamp
	mkdir -p $(BUILD)/tbb
	g++ -std=c++17 -O2 -Wall -Wextra -Werror $(if $(filter tbb_omp,$*),-fopenmp) -isystem $(VENV)/include $< \
		-o $@ -L$(VENV)/lib -l:libtbb.so.12 -Wl,-rpath,$(VENV)/lib -pthread

asan:
	cmake -S . -B $(ASAN)/cmake -DSCAF_OUT=$(ASAN) -DSCAF_SANITIZE=ON >/dev/null
	cmake --build $(ASAN)/cmake -j$(JOBS)

# The venv finds the package through a .pth file rather than PYTHONPATH, which the programs `scaf run`
# starts would inherit. The bytecode is compiled here: an environment with PYTHONDONTWRITEBYTECODE would
# otherwise compile every module at each `scaf run`, a fifth of a second before each program.
py: $(VENV)/.stamp $(BUILD)/bin/scaf
	@$(VPY) -c 'import sys, sysconfig; open(sysconfig.get_path("purelib") + "/scaf-source.pth", "w").write(sys.argv[1] + "\n")' '$(CURDIR)/python'
	@$(VPY) -m compileall -q python/scaf >/dev/null

$(VENV)/.stamp: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install -q --disable-pip-version-check -r requirements.txt
	touch $@

$(BUILD)/bin/scaf: tools/scaf.in $(VENV)/.stamp
	mkdir -p $(BUILD)/bin
	sed -e 's|@ROOT@|$(CURDIR)|g' -e "s|@PFLAG@|$$($(VPY) -P -c pass 2>/dev/null && echo ' -P')|g" tools/scaf.in > $@
	chmod +x $@

test:
	@tools/deps test
	@$(MAKE) --no-print-directory build-all asan lint test-unit test-py

test-unit:
	cd $(BUILD)/cmake && ctest --output-on-failure
	cd $(ASAN)/cmake && ctest --output-on-failure

# Every pytest folder: tests/python (no daemon), tests/integration (real daemon, layer and programs),
# tests/thirdparty (others' programs and runtimes), tests/corpus (docs/architecture.md, "Files").
# The daemon robustness tests also run against the sanitized daemon.
test-py: build-all asan
	SCAF_ASAN_SCAFD=$(ASAN)/bin/scafd $(VPY) -m pytest $(PYTEST_ARGS) tests

# Real OpenMP programs from Debian packages, plain and under scaf (docs/corpus.md). `make test`
# runs them too (they are under tests/); programs whose package is missing are skipped, or fail
# with SCAF_CORPUS_REQUIRED=1 (.ci/run sets it; make test installs the packages first).
test-corpus: build-all
	$(VPY) -m pytest $(PYTEST_ARGS) tests/corpus

lint: py cycles
	$(VENV)/bin/ruff check python tests tools
	$(PYTHON) tools/lint/architecture.py --check

# Only gcc and GNU libgomp: the clang and libiomp5 variants of the workloads are for the tests.
demo:
	@tools/deps demo
	@$(MAKE) --no-print-directory c py
	$(BUILD)/bin/scaf demo

clean:
	rm -rf $(BUILD) $(ASAN) $(FUZZ)

man: build-all
	@tools/deps install
	BUILD='$(BUILD)' VPY='$(VPY)' tools/man/build.sh

# scafd goes to sbin (a daemon: section 8; `scaf` finds it by its installed path), the layers,
# workloads and a virtual environment of pinned runtime packages to $(libdir)/scaf (docs/deploy.md).
install:
	@tools/deps build install
	@$(MAKE) --no-print-directory build-all man
	$(INSTALL_VARS) tools/install.sh install

uninstall:
	$(INSTALL_VARS) tools/install.sh uninstall

# No C file may depend, by #include or by a linked symbol, on one that depends on it.
cycles: c
	$(PYTHON) tools/lint/cycles.py --dirs src --objects $(BUILD)/cmake --python python/scaf

# Coverage-guided fuzzing of the wire codec in both directions and of scafd's page decoder (docs/daemon.md, "Tests"). Not part of `make test`:
# it runs for FUZZ_S seconds. New inputs go to build-fuzz/corpus; the seeds in tests/fuzz/corpus stay as they are.
FUZZ_CC ?= clang-14
FUZZ_SRC := tests/fuzz/fuzz_decode.c src/common/wire.c src/daemon/collect/pageread.c src/daemon/apply/pagewrite.c
$(FUZZ)/fuzz_decode: $(FUZZ_SRC) include/scaf/wire.h src/daemon/collect/pageread.h src/daemon/apply/pagewrite.h include/scaf/proto.h
	mkdir -p $(FUZZ)
	$(FUZZ_CC) -std=c11 -g -O1 -Wall -Wextra -Werror -D_GNU_SOURCE -Iinclude \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		$(FUZZ_SRC) -o $@

fuzz:
	@tools/deps fuzz
	@$(MAKE) --no-print-directory $(FUZZ)/fuzz_decode
	$(MAKE) --no-print-directory fuzz-run

fuzz-run:
	mkdir -p $(FUZZ)/corpus $(FUZZ)/crashes
	$(FUZZ)/fuzz_decode -max_total_time=$(FUZZ_S) -max_len=600 -print_final_stats=1 \
		-artifact_prefix=$(FUZZ)/crashes/ $(FUZZ)/corpus tests/fuzz/corpus
	$(MAKE) --no-print-directory fuzz-cov

# Line and branch coverage of the codec and the page decoder by the corpus so far (seeds and what fuzzing found).
fuzz-cov:
	mkdir -p $(FUZZ)/corpus $(FUZZ)/cov
	$(FUZZ_CC) -std=c11 -g -O0 -D_GNU_SOURCE -Iinclude -fsanitize=fuzzer -fprofile-instr-generate -fcoverage-mapping \
		$(FUZZ_SRC) -o $(FUZZ)/cov/fuzz_decode
	LLVM_PROFILE_FILE=$(FUZZ)/cov/run.profraw $(FUZZ)/cov/fuzz_decode -runs=0 $(FUZZ)/corpus tests/fuzz/corpus \
		>/dev/null 2>&1
	llvm-profdata-14 merge -sparse $(FUZZ)/cov/run.profraw -o $(FUZZ)/cov/run.profdata
	llvm-cov-14 report $(FUZZ)/cov/fuzz_decode -instr-profile=$(FUZZ)/cov/run.profdata \
		src/common/wire.c src/daemon/collect/pageread.c src/daemon/apply/pagewrite.c

# Churn against the sanitized daemon (docs/daemon.md, "Tests"). Not part of `make test`: it runs for SOAK_S seconds.
soak: build-all asan
	$(VPY) tools/soak.py --scafd $(ASAN)/bin/scafd --seconds $(SOAK_S) --wave $(SOAK_WAVE)
