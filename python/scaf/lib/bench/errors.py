"""The bench's one error type: a setup problem the user must fix."""


class BenchError(Exception):
    """A setup problem the user must fix (missing binary, bad option); the message says what."""
