"""`mqctl migrate` through the CLI: plan, run, status, resume and rollback, as a user runs them."""
