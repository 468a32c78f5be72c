"""The corpus: real third-party OpenMP programs from Debian packages, plain and under scaf (docs/corpus.md)."""
