"""`mqctl sandbox` through the CLI: its state and the commands on it, as a user runs them."""
