"""Operations: `dmf doctor` (health checks), `dmf prune` (retention), `dmf backup` (verified copies).

Pure file and read-only database work; the Dagster job that runs backup + prune every morning lives
in `dmf_assets/defs/maintenance.py`.
"""
