"""Edits that keep comments and formatting: plan, splice, verify, diff, then an atomic write."""
