"""The Dagster definitions load: `dagster definitions validate` exits 0, and the graph has its shape."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys

import dagster as dg

from dmf_assets.settings import PROJECT_ROOT


def test_dagster_definitions_validate_without_a_service_key():
    env = {k: v for k, v in os.environ.items() if k != "MFDS_SERVICE_KEY"}  # the emulator needs none
    result = subprocess.run(
        [sys.executable, "-m", "dagster", "definitions", "validate", "-w", str(PROJECT_ROOT / "workspace.yaml")],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "All code locations passed validation" in result.stdout + result.stderr


def test_graph_shape_checks_and_pools():
    from dmf_assets.definitions import defs

    d = defs()
    dg.Definitions.validate_loadable(d)
    graph = d.resolve_asset_graph()
    chain = ["raw_pages", "normalized_records", "integrity_verdict", "snapshot_diff", "events", "xlsx_report"]
    for up, down in itertools.pairwise(chain):
        assert dg.AssetKey(up) in graph.get(dg.AssetKey(down)).parent_keys
    blocking = {(k.asset_key.path[-1], k.name) for k in graph.asset_check_keys if graph.get_check_spec(k).blocking}
    assert blocking == {
        ("integrity_verdict", "gate_1_transport"),
        ("integrity_verdict", "gate_2_completeness"),
        ("integrity_verdict", "gate_3_drop"),
        ("integrity_verdict", "gate_4_nulls"),
        ("integrity_verdict", "gate_5_duplicates"),
        ("snapshot_diff", "gate_6_churn"),
        ("snapshot_diff", "gate_2_completeness_recheck"),  # gate 2 once more, on the diff's withdrawals
    }
    # every asset that touches the DuckDB file is in the single-slot pool
    for key in ("integrity_verdict", "snapshot_diff", "events", "xlsx_report"):
        assert graph.get(dg.AssetKey(key)).pools == {"duckdb"}
    assert d.resolve_schedule_def("daily_0600_kst") and d.resolve_sensor_def("dmf_watch_sensor")
    assert d.resolve_job_def("dmf_daily_job") and d.resolve_schedule_def("daily_maintenance")


def test_every_check_is_recorded_on_its_day_and_days_do_not_wait_for_each_other():
    from dmf_assets.definitions import defs
    from dmf_assets.defs.partitions import daily_partitions

    graph = defs().resolve_asset_graph()
    for key in graph.asset_check_keys:
        assert graph.get_check_spec(key).partitions_def == daily_partitions, key  # partitioned: one verdict per day
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        assert node.partitions_def == daily_partitions and node.backfill_policy is None, key  # a run per day
        assert key not in node.parent_keys, key  # no self-dependency: a rejected day never blocks the next
