"""Dagster definitions, loaded by `load_from_defs_folder`."""
