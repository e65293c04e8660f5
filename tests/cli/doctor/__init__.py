"""`mqctl doctor` through the CLI: the verdict, its formats and alert rules, as a user runs it."""
