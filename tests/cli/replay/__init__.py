"""`mqctl replay` through the CLI (a subprocess: it starts Spark), as a user runs it."""
