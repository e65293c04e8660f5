"""`mqctl bundle` through the CLI: the support archive, as a user writes it."""
