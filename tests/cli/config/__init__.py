"""`mqctl config` through the CLI: explain, validate, get and the edits, as a user runs them."""
