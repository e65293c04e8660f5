"""`mqctl exporter` through the CLI: the /metrics endpoint, as a user serves it."""
