"""The 05:30 KST maintenance job: a real in-process Dagster run in a temp project backs up the
history (in pool "duckdb") and then prunes by the retention rules — removing what they say and
keeping the last accepted day's data, the newest backups and the database."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta

import dagster as dg
import duckdb
import pytest
from dagster._utils.schedules import cron_string_iterator

from dmf_assets.clock import KST, now_kst
from dmf_assets.defs.automation import daily_0600_kst
from dmf_assets.defs.maintenance import daily_maintenance, dmf_maintenance_job
from dmf_assets.defs.resources import DmfWorkspace
from dmf_assets.ops.backup import list_backups
from dmf_assets.report.retention import dated_workbook_name
from dmf_assets.settings import PROJECT_ROOT, load_settings
from dmf_assets_tests.retention_support import aged_file, make_history, raw_day


@pytest.fixture(scope="module")
def maintenance(tmp_path_factory):
    """One real run of the job in a temp project whose last accepted day is older than every raw window."""
    root = tmp_path_factory.mktemp("maintenance")
    keep = load_settings().retention
    today = now_kst().date()
    last = today - timedelta(days=keep.raw_days + 20)  # a long outage: out of the raw window, kept anyway
    old = last - timedelta(days=20)
    db = make_history(root, {old: "baseline", last: "accepted"})
    backups = root / "data" / "backups"
    reports = root / "reports"
    files = {
        "old raw": raw_day(root, old),  # before the last accepted day and out of the window
        "last raw": raw_day(root, last),
        "recent raw": raw_day(root, today - timedelta(days=3)),
        "old backup": aged_file(backups / f"dmf-{today - timedelta(days=keep.backups_days + 15)}-053000.duckdb", 10),
        "recent backup": aged_file(backups / f"dmf-{today - timedelta(days=keep.backups_days - 5)}-053000.duckdb", 10),
        "old report": aged_file(reports / dated_workbook_name(today - timedelta(days=keep.reports_days + 30)), 100),
        "last report": aged_file(reports / dated_workbook_name(last), 100),
        "database": db,
    }
    home = root / "dagster_home"
    home.mkdir()
    shutil.copy(PROJECT_ROOT / "dagster_home" / "dagster.yaml", home / "dagster.yaml")
    instance = dg.DagsterInstance.from_config(str(home))
    result = dmf_maintenance_job.execute_in_process(
        instance=instance, resources={"workspace": DmfWorkspace(root=str(root))}
    )
    return result, instance, files, {"last": last, "backups": backups, "root": root}


def test_job_backs_up_then_prunes_in_a_temp_project(maintenance):
    result, instance, files, info = maintenance
    assert result.success
    made = list_backups(info["backups"])
    # the fresh backup is the newest; the one inside the window stays, the one past it went
    assert [b.path for b in made] == [files["recent backup"], made[-1].path]
    assert str(made[-1].path) == result.output_for_node("backup_history")
    conn = duckdb.connect(str(made[-1].path), read_only=True)
    try:
        assert conn.execute("SELECT count(*) FROM runs").fetchone() == (2,)
    finally:
        conn.close()
    removed = {"old raw", "old backup", "old report"}
    assert {name for name, p in files.items() if not p.exists()} == removed
    meta = {
        e.step_key: e.event_specific_data.metadata for e in result.all_events if e.event_type_value == "STEP_OUTPUT"
    }
    assert meta["backup_history"]["runs"].value == 2
    assert meta["prune_retention"]["last_accepted_day"].text == info["last"].isoformat()
    assert meta["prune_retention"]["kept_backup"].path == str(made[-1].path)
    by_kind = meta["prune_retention"]["by_kind"].data
    assert by_kind["backup"]["files"] == 1 and by_kind["report"]["files"] == 1
    assert by_kind["raw"]["files"] >= 1  # the old day dir (+ its lock file)
    listed = meta["prune_retention"]["removed_files"].md_str
    for name, path in files.items():
        assert (f"`{path}`" in listed) == (name in removed), (name, listed)
    assert "last accepted day kept" in meta["prune_retention"]["notes"].md_str
    # the run is recorded in the temp instance, finished, with its steps' events
    record = instance.get_run_record_by_id(result.run_id)
    assert record is not None and record.dagster_run.status == dg.DagsterRunStatus.SUCCESS
    assert record.dagster_run.tags.get("dmf/kind") == "maintenance"


def test_a_second_run_removes_nothing_and_says_so_in_words(maintenance):
    """Run again the same morning: nothing is left to prune, and the UI's Markdown says 「없음」 — not a lone "-",
    which Markdown draws as an empty bullet. (After the first test: this run adds a backup of its own.)"""
    _, instance, files, info = maintenance
    again = dmf_maintenance_job.execute_in_process(
        instance=instance, resources={"workspace": DmfWorkspace(root=str(info["root"]))}
    )
    assert again.success
    meta = {e.step_key: e.event_specific_data.metadata for e in again.all_events if e.event_type_value == "STEP_OUTPUT"}
    assert meta["prune_retention"]["removed"].value == 0
    assert meta["prune_retention"]["removed_files"].md_str == "없음 / none"
    assert all(p.exists() for name, p in files.items() if not name.startswith("old "))


def test_backup_step_is_in_the_duckdb_pool_and_runs_first(maintenance):
    result, instance, _, _ = maintenance
    run = instance.get_run_by_id(result.run_id)
    plan = instance.get_execution_plan_snapshot(run.execution_plan_snapshot_id)
    pools = {step.key: step.pool for step in plan.steps}
    assert pools["backup_history"] == "duckdb" and pools["prune_retention"] in (None, "")
    # prune starts only after the backup succeeded (it is handed the backup's path)
    order = [
        (e.step_key, e.event_type_value)
        for e in result.all_events
        if e.event_type_value in ("STEP_START", "STEP_SUCCESS")
    ]
    assert order == [
        ("backup_history", "STEP_START"),
        ("backup_history", "STEP_SUCCESS"),
        ("prune_retention", "STEP_START"),
        ("prune_retention", "STEP_SUCCESS"),
    ]


def test_schedule_0530_kst_before_the_collection_and_definitions_load():
    start = datetime(2026, 10, 7, 0, 0, tzinfo=UTC).timestamp()
    ticks = cron_string_iterator(start, daily_maintenance.cron_schedule, daily_maintenance.execution_timezone)
    collection = cron_string_iterator(start, daily_0600_kst.cron_schedule, daily_0600_kst.execution_timezone)
    for tick, collect, kst_day in zip(
        ticks, collection, ("2026-10-08", "2026-10-09"), strict=False
    ):  # the cron iterator never ends
        local = tick.astimezone(KST)
        assert (local.hour, local.minute) == (5, 30) and local.date().isoformat() == kst_day
        assert tick.astimezone(UTC).hour == 20  # 20:30 UTC the day before
        assert timedelta(0) < collect - tick <= timedelta(minutes=30)  # the same morning, before 06:00
        (request,) = daily_maintenance.evaluate_tick(
            dg.build_schedule_context(scheduled_execution_time=tick)
        ).run_requests
        assert request.run_key == f"maintenance:{kst_day}" and request.tags == {
            "dmf/trigger": "schedule",
            "dagster/schedule_name": "daily_maintenance",
        }

    from dmf_assets.definitions import defs

    loaded = defs()
    job = loaded.resolve_job_def("dmf_maintenance_job")
    deps = job.graph.dependency_structure
    assert {n.name for n in job.graph.nodes} == {"backup_history", "prune_retention"}
    upstream = deps.input_to_upstream_outputs_for_node("prune_retention")
    assert [o.node_name for outs in upstream.values() for o in outs] == ["backup_history"]
    assert loaded.resolve_schedule_def("daily_maintenance").job_name == "dmf_maintenance_job"
