# Makefile — `make` builds everything, `make test` runs every test, `make demo` runs the demo.
BUILD   := $(CURDIR)/build
ASAN    := $(CURDIR)/build-asan
PYTHON  ?= python3
VENV    := $(BUILD)/venv
VPY     := $(VENV)/bin/python
JOBS    ?= 2
PYTEST_ARGS ?=

# The workloads built by clang (libomp), and against Intel's libiomp5 (from the intel-openmp
# wheel in the venv) by clang and by gcc: the LLVM/Intel layer's test programs.
IOMP5   := $(VENV)/lib/libiomp5.so

.PHONY: all c asan py workloads-omp test test-unit test-py test-corpus lint cycles demo clean help

all: c py workloads-omp

help:
	@echo "make          build daemon, layers, workloads (gcc, clang, libiomp5) and the scaf command into build/"
	@echo "make demo     run two workloads unmodified and under scaf, print the table"
	@echo "make test     C unit tests (plain and ASan+UBSan), then the pytest suite"
	@echo "make test-corpus  only the real third-party programs (tools/corpus-install first; docs/corpus.md)"
	@echo "make lint     ruff over the Python code, and make cycles"
	@echo "make cycles   fail when C files depend on each other in a circle (#include or linked symbol)"
	@echo "make clean    remove build/ and build-asan/"

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

# No C file may depend, by #include or by a linked symbol, on one that depends on it.
cycles: c
	$(PYTHON) tools/lint/cycles.py --dirs src --objects $(BUILD)/cmake
