"""The command line: `xerj-tools` and its subcommands."""
