"""Tests of mqctl.config.rules: validation findings, their context, and verdicts over the shared corpus."""
