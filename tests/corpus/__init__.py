"""The corpus: real third-party OpenMP programs from Debian packages and pip's wheels, plain and under scaf (docs/corpus.md)."""
