"""Helpers the tests share that scaf itself does not need."""
