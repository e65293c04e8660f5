"""Each command through the CLI as a user runs it: output, JSON, exit codes."""
