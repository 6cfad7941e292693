"""The project's Dagster instance lets one run at a time hold the history database (its DuckDB pool), and
queues backfills. Several runs at once on one history database — all finish, none fails on the DuckDB lock,
and the history is exactly what one run after the other would have written — is tested in
test_graph_e2e.py, against its in-order history of the same days (one run of those days instead of two)."""

from __future__ import annotations

import dagster as dg

from dmf_assets.settings import PROJECT_ROOT


def test_project_instance_limits_the_duckdb_pool_to_one() -> None:
    instance = dg.DagsterInstance.from_config(str(PROJECT_ROOT / "dagster_home"))
    config = instance.get_concurrency_config()
    assert config.pool_config.default_pool_limit == 1
    assert config.run_queue_config is not None
    assert any(limit["key"] == "dagster/backfill" for limit in config.run_queue_config.tag_concurrency_limits)
