"""The simulator: scenarios, a model of how programs progress, the real policy code deciding, and reports."""
