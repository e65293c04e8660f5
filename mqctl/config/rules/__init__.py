"""Validation: the rule catalog, the rules by topic, host checks and the report."""
