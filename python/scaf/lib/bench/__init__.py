"""The bench: run workloads alone, in pairs under each configuration, and with and without scaf; store and report the results."""
