"""The subcommands of `scaf`: one module each, holding its arguments, its printing and its exit codes."""
