"""Unit tests: the domain and its pure rules — no DuckDB, no Dagster, no HTTP, no other process."""
