"""Pipeline tests: one day's layers in this process — the real Dagster graph, DuckDB files, the workbook, the in-process emulator."""
