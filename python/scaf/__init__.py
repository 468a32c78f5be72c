"""scaf: space-sharing for OpenMP programs that run at the same time on one machine."""

__version__ = "0.1.0"
