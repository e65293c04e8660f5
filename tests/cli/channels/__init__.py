"""`mqctl channels` through the CLI, a module per command or source: output, JSON, exit codes (tests/cli/channels mirrors mqctl/cli/channels)."""
