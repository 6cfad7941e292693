"""The 05:30 KST maintenance job: a real in-process Dagster run in a temp project backs up the
history (in pool "duckdb") and then prunes by the retention rules."""

from __future__ import annotations

import shutil
from datetime import datetime, timedelta, timezone

import dagster as dg
import duckdb

from dmf_assets.clock import now_kst
from dmf_assets.defs.maintenance import backup_history, daily_maintenance, dmf_maintenance_job, prune_retention
from dmf_assets.defs.resources import DmfWorkspace
from dmf_assets.ops.backup import list_backups
from dmf_assets.settings import PROJECT_ROOT
from dmf_assets_tests.test_ops_retention import _file, _raw_day, make_history


def test_job_backs_up_then_prunes_in_a_temp_project(tmp_path):
    today = now_kst().date()
    last, old = today - timedelta(days=1), today - timedelta(days=200)
    db = make_history(tmp_path, {old: "baseline", last: "accepted"})
    old_raw, last_raw = _raw_day(tmp_path, old), _raw_day(tmp_path, last)
    backups = tmp_path / "data" / "backups"
    old_backup = _file(backups / f"dmf-{today - timedelta(days=45)}-053000.duckdb", 10)
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(PROJECT_ROOT / "dagster_home" / "dagster.yaml", home / "dagster.yaml")
    instance = dg.DagsterInstance.from_config(str(home))

    result = dmf_maintenance_job.execute_in_process(
        instance=instance, resources={"workspace": DmfWorkspace(root=str(tmp_path))}
    )

    assert result.success
    made = list_backups(backups)
    assert [b.path for b in made] == [made[-1].path] and str(made[-1].path) == result.output_for_node("backup_history")
    conn = duckdb.connect(str(made[-1].path), read_only=True)
    try:
        assert conn.execute("SELECT count(*) FROM runs").fetchone() == (2,)
    finally:
        conn.close()
    assert not old_backup.exists() and not old_raw.exists() and last_raw.exists() and db.exists()
    meta = {
        e.step_key: e.event_specific_data.metadata for e in result.all_events if e.event_type_value == "STEP_OUTPUT"
    }
    assert meta["backup_history"]["runs"].value == 2
    assert meta["prune_retention"]["last_accepted_day"].text == last.isoformat()
    by_kind = meta["prune_retention"]["by_kind"].data
    assert by_kind["backup"]["files"] == 1 and by_kind["raw"]["files"] >= 1  # the old day dir (+ its lock file)
    # the run is recorded in the temp instance, not in the project's
    assert instance.get_run_by_id(result.run_id) is not None


def test_backup_step_is_in_the_duckdb_pool_and_runs_first():
    assert backup_history.pool == "duckdb"
    assert prune_retention.pool in (None, "")
    deps = dmf_maintenance_job.graph.dependency_structure
    assert deps.input_to_upstream_outputs_for_node("prune_retention")  # prune waits for the backup


def test_schedule_0530_kst_and_definitions_load():
    assert daily_maintenance.cron_schedule == "30 5 * * *"
    assert daily_maintenance.execution_timezone == "Asia/Seoul"
    context = dg.build_schedule_context(scheduled_execution_time=datetime(2026, 10, 7, 20, 30, tzinfo=timezone.utc))
    request = daily_maintenance.evaluate_tick(context).run_requests[0]
    assert request.run_key == "maintenance:2026-10-08"  # 05:30 KST on the 8th

    from dmf_assets.definitions import defs

    loaded = defs()
    assert loaded.resolve_job_def("dmf_maintenance_job").name == "dmf_maintenance_job"
    assert loaded.resolve_schedule_def("daily_maintenance").job_name == "dmf_maintenance_job"
