"""The corpus: real third-party OpenMP programs from Debian bookworm packages, one row each, and
Python programs on the pip wheels of build/venv (scikit-learn, numpy).

Each row says which Debian package(s) provide the program (all listed in packages.txt, which
tools/deps corpus installs) or which pip packages (pinned in requirements.txt, which `make`
installs into build/venv), the command line(s) run in a fresh directory, the generator of
its input, the output files compared byte for byte, the masks for output that is not
deterministic even without scaf (each with its reason, proven by running plain twice), the
OpenMP pattern the program uses, and why it is interesting. The pattern is what we could tell
without reading every program's source: the calls scaf's verdict reason names (call site and
library), the region counts the daemon reported, and the programs' documented thread options.

Programs get no thread-count option unless they need one to run in parallel at all: a default
team (one thread per CPU) is what a user gets, and what the layer has to bound.
"""

from __future__ import annotations

import glob
import os
import re
from pathlib import Path

from . import inputs as gen
from .harness import Program, StepResult, venv_python

# Timestamps some programs print on stdout: the same program prints different ones each run.
KALIGN_TIME = (r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\]", "kalign stamps each log line with the wall-clock time")
KALIGN_CPU = (r"CPU Time: .*$", "kalign logs the CPU and elapsed time of each phase")
VELVET_TIME = (r"^\[\d+\.\d+\]", "velvet prefixes each log line with the seconds since it started")
VELVET_PHASE = (r" in \d+\.\d+ s$", "velvet logs how long each phase took (=== Threaded in 0.26 s)")


# Debian's multiarch directory of libopenblas0-openmp (x86_64-linux-gnu, aarch64-linux-gnu, ...).
OPENBLAS_OPENMP_DIR = next(iter(sorted(glob.glob("/usr/lib/*-linux-gnu*/openblas-openmp"))),
                           "/usr/lib/x86_64-linux-gnu/openblas-openmp")


def _numpy_uses_openblas_openmp(step: StepResult) -> None:
    openmp, blas = _maps_line(step, "openmp"), _maps_line(step, "blas")
    assert "openblas-openmp/libopenblas" in blas, f"numpy did not load OpenBLAS built for OpenMP: {blas}"
    assert "libgomp.so.1" in openmp, f"numpy's process has no libgomp mapped: {openmp}"


# The Python programs run by build/venv's python on pip's wheels (requirements.txt), not Debian's.
VENV_PYTHON = str(venv_python())
SCRIPTS = Path(__file__).resolve().with_name("scripts")


# The scripts print the OpenMP runtimes they mapped on stderr; under scaf run that line also names
# the layer and the system's libgomp.so.1, which the layer links.
MAPPED_OPENMP = (r"^openmp \[.*\]$", "under scaf run the process also maps the layer and the libgomp.so.1 it links")


def _maps_line(step: StepResult, word: str) -> str:
    lines = step.stderr.decode().splitlines()
    return next((ln for ln in lines if ln.startswith(word + " ")), f"(no {word} line on stderr)")


def _sklearn_uses_bundled_libgomp(step: StepResult) -> None:
    openmp, blas = _maps_line(step, "openmp"), _maps_line(step, "blas")
    assert "scikit_learn.libs/libgomp" in openmp, f"scikit-learn did not map its bundled libgomp: {openmp}"
    assert "numpy.libs/libscipy_openblas" in blas, f"not pip's numpy and its OpenBLAS: {blas}"


def _numpy_uses_bundled_openblas(step: StepResult) -> None:
    openmp, blas = _maps_line(step, "openmp"), _maps_line(step, "blas")
    assert "numpy.libs/libscipy_openblas" in blas, f"not pip's numpy and its OpenBLAS: {blas}"
    assert openmp == "openmp []", f"an OpenMP runtime is mapped: {openmp}"


def _xgboost_uses_a_bundled_libgomp(step: StepResult) -> None:
    # xgboost imports scikit-learn when it is installed; both wheels bundle the same libgomp build
    # (one soname), so the process maps whichever copy came first.
    openmp = _maps_line(step, "openmp")
    assert re.search(r"(xgboost_cpu|scikit_learn)\.libs/libgomp-", openmp), f"no wheel's bundled libgomp: {openmp}"


def _datatable_takes_every_cpu(step: StepResult) -> None:
    first = step.stdout.decode().splitlines()[0]
    assert first.split()[:2] == ["threads", str(len(os.sched_getaffinity(0)))], (
        f"setDTthreads(0) should give data.table one thread per CPU: {first}")


PROGRAMS: list[Program] = [
    Program(
        name="clustalo",
        packages=("clustalo",),
        steps=(("clustalo", "-i", "prot.fa", "-o", "aln.fa", "--force"),),
        inputs=gen.protein_family("prot.fa", count=80, length=300, rate=0.3, seed=1),
        outputs=("aln.fa",),
        compare_stderr=True,
        does="multiple alignment of 80 related proteins (300 residues)",
        pattern=("omp_set_num_threads(N) once at start (N: --threads, default one per CPU); ~50,000 tiny regions a "
                 "second"),
        why="very many tiny regions from a fixed team: the layer's per-region cost, and affinity steering",
    ),
    Program(
        name="fasttree",
        packages=("fasttree",),
        steps=(("fasttreeMP", "-nt", "aln.fa"),),
        inputs=gen.dna_alignment("aln.fa", taxa=100, length=500, rate=0.05, seed=2),
        does="approximately-maximum-likelihood tree of 100 aligned DNA sequences (500 sites); the tree is on stdout",
        pattern=("omp_get_max_threads() outside regions (for its 'OpenMP (2 threads)' banner); ~600 regions that read "
                 "their own team size"),
        why="reads the count at level 0 only to print it: the case a one-call rule would wrongly fix",
    ),
    Program(
        name="muscle",
        packages=("muscle",),
        steps=(("muscle", "-align", "prot.fa", "-output", "aln.afa"),),
        inputs=gen.protein_family("prot.fa", count=20, length=250, rate=0.3, seed=3),
        outputs=("aln.afa",),
        does="MUSCLE 5 multiple alignment (posterior consistency) of 20 proteins",
        pattern="omp_get_max_threads() outside regions; 1-3 long regions",
        why="reads the count at level 0 and then runs long regions: the layer must decide what the count was for",
    ),
    Program(
        name="kalign",
        packages=("kalign",),
        steps=(("kalign", "-i", "prot.fa", "-o", "aln.afa"),),
        inputs=gen.protein_family("prot.fa", count=2000, length=400, rate=0.3, seed=4),
        outputs=("aln.afa",),
        stdout_masks=(KALIGN_TIME, KALIGN_CPU),
        does="kalign 3 alignment of 2000 proteins; its log goes to stdout",
        pattern="omp_set_num_threads(4): its default of 4 threads, whatever the CPU count",
        why=("asks for more threads than the machine has (4 on 2 CPUs); the layer keeps the team above its bound as "
             "written"),
    ),
    Program(
        name="cd-hit",
        packages=("cd-hit",),
        steps=(("cd-hit", "-i", "prot.fa", "-o", "nr.fa", "-c", "0.9", "-T", "0", "-M", "0"),),
        inputs=gen.protein_families("prot.fa", families=300, count=12_000, rate=0.03, seed=5),
        outputs=("nr.fa", "nr.fa.clstr"),
        stdout_masks=(
            (r"(?s).*", ("cd-hit's progress lines depend on how its threads raced (two plain runs differ); "
                         "the clusters are in the compared output files")),
        ),
        does="clusters 12,000 proteins from 300 families at 90% identity",
        pattern="omp_set_num_threads(-T; 0 = one per CPU); ~10-20 regions",
        why="a fixed team; its progress output (stdout) is racy even without scaf, its clusters are not",
    ),
    Program(
        name="velveth",
        packages=("velvet",),
        steps=(("velveth_de", "vd", "31", "-fastq", "-short", "reads.fq"),),
        inputs=gen.reads("reads.fq", genome_len=100_000, count=40_000, read_len=100, seed=6),
        # Roadmaps is not compared: velveth_de (the OpenMP build) writes its records in the order
        # its threads finish, so two plain runs with 2 threads differ (three runs, three files);
        # with OMP_NUM_THREADS=1 it is reproducible. Sequences is deterministic.
        outputs=("vd/Sequences",),
        stdout_masks=(VELVET_TIME, VELVET_PHASE),
        does="velveth (OpenMP build): hashes 40,000 100-bp reads into k-mer roadmaps",
        pattern="omp_get_max_threads() outside regions; 2 regions",
        why="its own output order (Roadmaps) is racy with 2 threads even without scaf: a check that masks only that",
    ),
    Program(
        name="velvetg",
        packages=("velvet",),
        steps=(("velvetg_de", "vd", "-exp_cov", "auto"),),
        # velveth on one thread (reproducible, see velveth) makes velvetg's input.
        inputs=gen.chain(gen.reads("reads.fq", genome_len=100_000, count=40_000, read_len=100, seed=6),
                         gen.command(["velveth_de", "vd", "31", "-fastq", "-short", "reads.fq"],
                                     env={"OMP_NUM_THREADS": "1"})),
        outputs=("vd/contigs.fa", "vd/stats.txt", "vd/LastGraph", "vd/Graph2", "vd/PreGraph"),
        stdout_masks=(VELVET_TIME, VELVET_PHASE),
        does="velvetg (OpenMP build): de Bruijn graph and contigs from velveth's output",
        pattern="omp_get_max_threads() outside regions; 6 regions that read their own team size",
        why="reads the count at level 0 yet is malleable; input made by velveth on one thread",
    ),
    Program(
        name="megahit",
        packages=("megahit",),
        steps=(("megahit", "-r", "reads.fq", "-o", "mh", "--min-count", "2"),),
        inputs=gen.reads("reads.fq", genome_len=100_000, count=40_000, read_len=100, seed=7),
        outputs=("mh/final.contigs.fa", "mh/intermediate_contigs/*.fa"),
        does="megahit assembly of 40,000 reads: a Python driver running megahit_core several times",
        pattern="4-5 megahit_core processes, each with omp_set_num_threads (-t, or 1 for its serial steps)",
        why=("a process tree: a Python driver (Debian's python3, no OpenMP) starts the OpenMP programs, which inherit "
             "the layer"),
    ),
    Program(
        name="sumaclust",
        packages=("sumaclust",),
        steps=(("sumaclust", "-p", "2", "amp.fa"),),
        inputs=gen.amplicons("amp.fa", otus=300, count=8_000, length=250, rate=0.03, seed=8),
        does="clusters 8,000 amplicon reads around 300 centres; result on stdout",
        pattern="omp_set_num_threads(-p); one region per cluster (~7,500)",
        why="many medium regions from a fixed team",
    ),
    Program(
        name="ntcard",
        packages=("ntcard",),
        steps=(("ntcard", "-k", "21,31", "-t", "2", "-p", "freq", "reads.fq"),),
        inputs=gen.reads("reads.fq", genome_len=200_000, count=40_000, read_len=100, seed=9),
        outputs=("freq_k21.hist", "freq_k31.hist"),
        does="k-mer frequency histograms (k=21, 31) of 40,000 reads",
        pattern="omp_set_num_threads(-t); 2 long regions",
        why="a fixed team with long regions",
    ),
    Program(
        name="spaced",
        packages=("spaced",),
        # -f: without a pattern file spaced draws random patterns, different in every run.
        steps=(("spaced", "-f", "patterns.txt", "-o", "dist.txt", "genomes.fa"),),
        inputs=gen.chain(gen.genomes(["genomes.fa"], length=300_000, rate=0.02, seed=10, per_file=6),
                         gen.spaced_patterns("patterns.txt", count=5, weight=14, dont_care=15, seed=10)),
        outputs=("dist.txt",),
        # Measured: 1 plain run in 60 printed 0.908962522541 where the others print 0.90896252254
        # (its sums depend on which of its 15 threads finishes first), with no scaf at all.
        output_digits=(10, "spaced's own 12-digit distances differ in the last digit between two plain runs"),
        compare_stderr=True,
        does="alignment-free distances (spaced words) between 6 related 300-kb genomes in one file",
        pattern="omp_set_num_threads(15) for 6 sequences (its -t default is 25): more threads than CPUs",
        why="a fixed team far above the CPU count; without -f its random patterns change the result every run",
    ),
    Program(
        name="andi",
        packages=("andi",),
        steps=(("andi", "-j", "g0.fa", "g1.fa", "g2.fa", "g3.fa", "g4.fa", "g5.fa", "g6.fa", "g7.fa"),),
        inputs=gen.genomes([f"g{i}.fa" for i in range(8)], length=600_000, rate=0.01, seed=11),
        compare_stderr=True,
        does="anchor distances between 8 related 600-kb genomes; the matrix is on stdout",
        pattern="no team-size call; 1 long region",
        why="the simplest malleable program: one region, team set by the allocation at its start",
    ),
    Program(
        name="phylonium",
        packages=("phylonium",),
        steps=(("phylonium", "g0.fa", "g1.fa", "g2.fa", "g3.fa", "g4.fa", "g5.fa", "g6.fa", "g7.fa"),),
        inputs=gen.genomes([f"g{i}.fa" for i in range(8)], length=2_000_000, rate=0.01, seed=12),
        compare_stderr=True,
        does="phylonium distances between 8 related 2-Mb genomes; the matrix is on stdout",
        pattern="no team-size call; 2 regions",
        why="malleable, few regions",
    ),
    Program(
        name="par2",
        packages=("par2",),
        steps=(("par2", "create", "-q", "-r10", "-n1", "blob.par2", "blob.bin"),),
        inputs=gen.random_bytes("blob.bin", 20_000_000, seed=13),
        outputs=("blob.par2", "blob.vol*.par2"),
        compare_stderr=True,
        does="Reed-Solomon recovery data (10%) for a 20 MB file",
        pattern="no team-size call; ~1,800 regions (blocks of the recovery computation)",
        why="malleable with many regions: sees its team change between regions",
    ),
    Program(
        name="pngquant",
        packages=("pngquant",),
        steps=(("pngquant", "--speed", "1", "-f", "-o", "out.png", "in.png"),),
        inputs=gen.png("in.png", 2000, 2000, seed=14),
        outputs=("out.png",),
        compare_stderr=True,
        does="quantizes a 2000x2000 RGB PNG to 256 colours (libimagequant)",
        pattern=("omp_get_max_threads() in libimagequant's liq_set_speed outside regions; ~4,600 regions that read "
                 "their own team size"),
        why="a library (libimagequant0) reads the count at level 0; the program stays malleable",
    ),
    Program(
        name="jpegqs",
        packages=("jpegqs",),
        steps=(("jpegqs", "in.jpg", "out.jpg"),),
        inputs=gen.jpeg("in.jpg", 4000, 3000, seed=15),
        outputs=("out.jpg",),
        does="JPEG quant smoothing (deblocking) of a 4000x3000 quality-40 JPEG",
        pattern="omp_set_num_threads(N) (-t, default one per CPU); ~15 regions",
        why="a fixed team of an image filter",
    ),
    Program(
        name="aaphoto",
        packages=("aaphoto",),
        steps=(("aaphoto", "-a", "--bmp", "-o", "out", "in.bmp"),),
        inputs=gen.chain(gen.bmp("in.bmp", 5000, 3500, seed=16), gen.mkdir("out")),
        outputs=("out/*",),
        compare_stderr=True,
        does="automatic colour correction of a 5000x3500 BMP",
        pattern="no team-size call; ~14 regions",
        why="a malleable image filter",
    ),
    Program(
        name="iqtree",
        packages=("iqtree",),
        steps=(("iqtree2", "-s", "aln.phy", "-m", "HKY+G", "-T", "2", "--seed", "1", "-redo", "--quiet"),),
        inputs=gen.dna_alignment("aln.phy", taxa=12, length=1000, rate=0.05, seed=17, fmt="phylip"),
        outputs=("aln.phy.treefile",),
        compare_stderr=True,
        does="maximum-likelihood tree search, 12 taxa x 1000 sites, HKY+G",
        pattern="omp_set_num_threads(-T) in main; ~125,000 tiny regions (likelihood kernels)",
        why="the most regions in the corpus, from a fixed team",
    ),
    Program(
        name="msgmerge",
        packages=("gettext",),
        steps=(("msgmerge", "-q", "-o", "out.po", "old.po", "new.pot"),),
        inputs=gen.po_catalog("new.pot", "old.po", messages=6000, seed=18),
        outputs=("out.po",),
        compare_stderr=True,
        does="merges a 6000-message catalog into a reworded template (fuzzy matching)",
        pattern="no team-size call; 1 region (the fuzzy-match search)",
        why="gettext: on almost every Debian machine",
    ),
    Program(
        name="pdf2djvu",
        packages=("pdf2djvu",),
        # --no-metadata: otherwise the DjVu carries the conversion time. -j 0: one thread per CPU.
        steps=(("pdf2djvu", "-j", "0", "--no-metadata", "-o", "out.djvu", "doc.pdf"),),
        inputs=gen.pdf("doc.pdf", pages=8, width=1200, height=1600, seed=19),
        outputs=("out.djvu",),
        # stderr not compared: its "- page #1 -> #1" lines come in the order the pages finish.
        does="converts an 8-page scanned-looking PDF to DjVu (poppler renders, DjVuLibre encodes)",
        pattern="no team-size call with -j 0; 1 region over the pages",
        why="malleable; its regions are long (a page each)",
    ),
    Program(
        name="fastani",
        packages=("fastani",),
        steps=(("fastANI", "--ql", "genomes.txt", "--rl", "genomes.txt", "-t", "2", "-o", "ani.txt"),),
        inputs=gen.chain(gen.genomes(["q0.fa", "q1.fa", "q2.fa"], length=3_000_000, rate=0.02, seed=20),
                         gen.write_text("genomes.txt", "q0.fa\nq1.fa\nq2.fa\n")),
        outputs=("ani.txt",),
        does="average nucleotide identity of every pair of 3 related 3-Mb genomes",
        pattern="omp_set_num_threads(-t); 1 region",
        why="one long region from a fixed team",
    ),
    Program(
        name="cdo",
        packages=("cdo",),
        # --no_history: otherwise the netCDF history attribute holds the time of the run.
        # -P 2: cdo runs one thread unless told. The random field is seeded (",7").
        steps=(("cdo", "-s", "-f", "nc", "--no_history", "-P", "2", "remapcon,r720x360", "-random,r1440x720,7",
                "out.nc"),),
        inputs=gen.write_text("README", "cdo generates its own input field\n"),
        outputs=("out.nc",),
        compare_stderr=True,
        does="conservative remapping of a seeded random 1440x720 global field to 720x360 (netCDF)",
        pattern="omp_set_num_threads(-P) at start; ~7 regions",
        why=("its results depend on its thread count (-P 1 and -P 2 give different files): a fixed team keeps them "
             "identical"),
    ),
    Program(
        name="gmic",
        packages=("gmic",),
        steps=(("gmic", "-input", "3000,3000,1,3,(x*y+c*40)%255", "-blur", "4", "-rotate", "13", "-sharpen", "50",
                "-resize", "70%,70%,1,3,5", "-output", "out.pnm"),),
        inputs=gen.write_text("README", "gmic generates its own input image\n"),
        outputs=("out.pnm",),
        does="fills a 3000x3000 image from a formula, blurs, rotates, sharpens and resizes it (CImg)",
        pattern=("omp_set_num_threads() from GraphicsMagick's InitializeMagickResources (a library gmic links for file"
                 " formats); CImg's loops, ~7 regions"),
        why=("a library decides the verdict for the whole process; gmic's -noise (not used) gives one of two images at"
             " random with 2 threads, even without scaf"),
    ),
    Program(
        name="numpy-openblas",
        packages=("python3-numpy", "libopenblas0-openmp"),
        steps=(("/usr/bin/python3", str(SCRIPTS / "numpy_pip.py")),),
        inputs=gen.write_text("README", "the script generates its matrices (seeded)\n"),
        env={"LD_LIBRARY_PATH": OPENBLAS_OPENMP_DIR},
        compare_stderr=True,
        stderr_masks=(MAPPED_OPENMP,),
        check=_numpy_uses_openblas_openmp,
        does=("Debian's numpy, numpy-pip's script: 1500x1500 matmuls of integer-valued matrices and a solve with a "
              "known integer answer on OpenBLAS built for OpenMP; hashes of the results"),
        pattern=("OpenBLAS (OpenMP build): its exec_blas regions keep the team it asks for, and it reads "
                 "omp_get_max_threads() (answered the share) at every call; ~70-200 regions"),
        why=("the BLAS under every scientific Python program, picked for this process by LD_LIBRARY_PATH without "
             "touching the system's libblas.so.3 alternative; its float results follow the count it reads, as its "
             "OPENBLAS_NUM_THREADS makes them, so the data make them exact"),
    ),
    Program(
        name="r-lapack",
        packages=("r-base-core", "libopenblas0-openmp"),
        steps=(("Rscript", str(SCRIPTS / "r_lapack.R")),),
        inputs=gen.write_text("README", "the script generates its matrices (set.seed)\n"),
        compare_stderr=True,
        pair=True,
        client_name="R",
        regions=None,
        does=("Debian's R on its system BLAS and LAPACK (OpenBLAS built with OpenMP): crossprod, chol, solve, eigen "
              "and a product of 1200x1200 seeded matrices, as a pair with a second copy of itself; sums to 7 digits"),
        pattern=("OpenBLAS's exec_blas regions (libopenblas.so.0), whose work items wait for each other; "
                 "omp_get_max_threads() from libblas.so.3 and liblapack.so.3 at every call, answered the share"),
        why=("two copies once never finished under scaf: a region given fewer threads than OpenBLAS's "
             "items deadlocks; its regions now keep the team OpenBLAS asks for"),
    ),
    Program(
        name="imagemagick",
        packages=("imagemagick",),
        steps=(("convert-im6.q16", "-size", "256x8192", "gradient:", "-blur", "0x6", "out.ppm"),),
        inputs=gen.write_text("README", "no input\n"),
        outputs=("out.ppm",),
        compare_stderr=True,
        does="blurs a generated 256x8192 gradient",
        pattern=("omp_get_max_threads() in libMagickCore's ResourceComponentGenesis outside regions; num_threads "
                 "clauses on its regions"),
        why="explicit counts on every region (also in tests/thirdparty/test_thirdparty.py)",
    ),
    Program(
        name="graphicsmagick",
        packages=("graphicsmagick",),
        steps=(("gm", "convert", "-size", "512x8192", "gradient:", "-blur", "0x20", "out.ppm"),),
        inputs=gen.write_text("README", "no input\n"),
        outputs=("out.ppm",),
        compare_stderr=True,
        does="blurs a generated 512x8192 gradient",
        pattern="omp_set_num_threads() in InitializeMagickResources (libGraphicsMagick); ~4 regions",
        why="per-thread state sized at start (also in tests/thirdparty/test_thirdparty.py)",
    ),
    Program(
        name="sklearn-hgb",
        packages=(),
        pip=("scikit-learn", "numpy"),
        steps=((VENV_PYTHON, str(SCRIPTS / "sklearn_hgb.py")),),
        inputs=gen.write_text("README", "the script generates its data (make_classification, seeded)\n"),
        compare_stderr=True,
        stderr_masks=(MAPPED_OPENMP,),
        check=_sklearn_uses_bundled_libgomp,
        does=("HistGradientBoostingClassifier, 30 iterations on 60,000 x 40 seeded samples; full-precision hashes "
              "of predict_proba and of the trees"),
        pattern=("scikit-learn's bundled libgomp (scikit_learn.libs/libgomp-*.so): omp_get_max_threads() outside "
                 "regions in its _openmp_helpers (once per fit and predict), num_threads clauses on every prange; "
                 "~6,400 regions"),
        why=("OpenMP as most Python programs get it, from a wheel's bundled and renamed libgomp; its results are the "
             "same bits at any team (each histogram and split search is one thread's), so they are compared in full"),
    ),
    Program(
        name="sklearn-kmeans",
        packages=(),
        pip=("scikit-learn", "numpy"),
        steps=((VENV_PYTHON, str(SCRIPTS / "sklearn_kmeans.py")),),
        inputs=gen.write_text("README", "the script generates its data (make_blobs, seeded)\n"),
        compare_stderr=True,
        stderr_masks=(MAPPED_OPENMP,),
        check=_sklearn_uses_bundled_libgomp,
        does=("KMeans (lloyd, 3 seeded inits, 12 clusters) of 100,000 x 16 seeded blobs; hashes of labels_ (full), "
              "cluster_centers_ (6 decimal places) and inertia_ (10 digits)"),
        pattern=("scikit-learn's bundled libgomp: omp_get_max_threads() outside regions (once per fit), a "
                 "num_threads clause on each lloyd iteration's region; ~50 regions; it sets its BLAS pool to 1 itself "
                 "(threadpoolctl) while lloyd runs"),
        why=("a floating-point reduction whose result depends on the team: the centres and inertia are compared "
             "rounded (measured differences in docs/corpus.md), the labels in full"),
    ),
    Program(
        name="numpy-pip",
        packages=(),
        pip=("numpy",),
        steps=((VENV_PYTHON, str(SCRIPTS / "numpy_pip.py")),),
        inputs=gen.write_text("README", "the script generates its matrices (seeded)\n"),
        compare_stderr=True,
        stderr_masks=(MAPPED_OPENMP,),
        check=_numpy_uses_bundled_openblas,
        regions=False,
        does=("pip's numpy: 1500x1500 matmuls of integer-valued matrices and a solve with a known integer answer on "
              "the OpenBLAS its wheel bundles (pthread pool); hashes of the results"),
        pattern=("no OpenMP: OpenBLAS's own pthread pool (numpy.libs/libscipy_openblas64_-*.so), found and sized by "
                 "the layer's BLAS adapter between calls; regions 0"),
        why=("the BLAS pool under every pip-installed numpy, steered without OpenMP; its float results depend on the "
             "pool's size, so the matrices are chosen to make them exact (integer-valued products, a solve with a "
             "known integer answer)"),
    ),
    Program(
        name="datatable",
        packages=("r-cran-data.table",),
        steps=(("Rscript", str(SCRIPTS / "datatable_group.R")),),
        inputs=gen.write_text("README", "the script generates its table (set.seed)\n"),
        compare_stderr=True,
        check=_datatable_takes_every_cpu,
        does=("R's data.table with setDTthreads(0): group-by aggregates (by an integer id, by a character column), a "
              "three-column order and a keyed join of a seeded 1,000,000-row table; MD5s of the results, serialized"),
        pattern=("omp_get_max_threads() outside regions in initDTthreads (at library load); every region has "
                 "num_threads(getDTthreads(n)), the count it read, throttled; thread-numbered scratch inside an ordered "
                 "dynamic loop (forder) and inside static loops (gforce); ~80 regions"),
        why=("the commonest shape of real libraries: per-thread buffers sized by a count read once, indexed by "
             "thread number inside worksharing loops (docs/shapes.md)"),
    ),
    Program(
        name="xgboost-hist",
        packages=(),
        pip=("xgboost-cpu", "numpy"),
        steps=((VENV_PYTHON, str(SCRIPTS / "xgboost_hist.py")),),
        inputs=gen.write_text("README", "the script generates its data (numpy, seeded)\n"),
        compare_stderr=True,
        stderr_masks=(MAPPED_OPENMP,),
        check=_xgboost_uses_a_bundled_libgomp,
        does=("XGBoost 3.2 (xgboost-cpu wheel), tree_method hist, 30 rounds of depth 6 on 20,000 x 24 seeded samples; "
              "full-precision hashes of the predictions and of the model (JSON), the last log loss"),
        pattern=("omp_get_max_threads() outside regions (OmpGetNumThreads, from libxgboost.so); every region has "
                 "num_threads(n_threads); ParallelFor2d regions give blocks of rows cut for that count to thread "
                 "numbers; ~1,300 regions"),
        why=("the same count-sized per-thread buffers as data.table, but with the work itself cut by the count: a "
             "smaller team would skip rows (docs/shapes.md)"),
    ),
]
