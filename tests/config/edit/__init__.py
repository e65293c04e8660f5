"""Tests of mqctl.config.edit: set, unset and switch that keep comments, written atomically with a backup."""
