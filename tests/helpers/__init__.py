"""What tests share: the CLI runners, the servers they start, paths, and checks on files and tables."""
