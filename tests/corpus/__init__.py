"""The corpus: real third-party OpenMP programs from Debian packages and pip wheels, plain and under scaf.

docs/corpus.md describes it.
"""
