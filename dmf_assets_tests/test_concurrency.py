"""Several runs at once on one history database: all finish, none fails on the DuckDB lock, and the
history is exactly what one run after the other would have written."""

from __future__ import annotations

import multiprocessing
import shutil
from datetime import date, timedelta
from pathlib import Path

import dagster as dg
import pytest

from dmf_assets.settings import PROJECT_ROOT
from dmf_assets_tests.graph_support import make_workspace

pytestmark = pytest.mark.slow

FAULTS = {"2026-10-08": "page_missing_rows"}
A_DAYS = [date(2026, 10, 5) + timedelta(days=i) for i in range(4)]  # 10-05 .. 10-08
B_DAYS = [date(2026, 10, 9) + timedelta(days=i) for i in range(3)]  # 10-09 .. 10-11


def _worker(root: str, days: list[date], out) -> None:
    from dmf_assets.runs import launch
    from dmf_assets_tests.graph_support import open_workspace

    ws = open_workspace(Path(root), FAULTS)
    reports = launch.run_days(days, instance=ws.instance, resources=ws.resources)
    out.put([(r.day, r.success, r.failure) for r in reports])


def _events(ws) -> list[tuple]:
    with ws.connect() as conn:
        return conn.execute(
            "SELECT day_id, base_day_id, event_id, event_type, severity, dmf_key, is_cosmetic, changed_fields "
            "FROM events ORDER BY event_id"
        ).fetchall()


def test_project_instance_limits_the_duckdb_pool_to_one():
    instance = dg.DagsterInstance.from_config(str(PROJECT_ROOT / "dagster_home"))
    config = instance.get_concurrency_config()
    assert config.pool_config.default_pool_limit == 1
    assert any(limit["key"] == "dagster/backfill" for limit in config.run_queue_config.tag_concurrency_limits)


def test_two_processes_at_once_finish_and_agree_with_sequential(tmp_path):
    sequential = make_workspace(tmp_path / "seq", FAULTS, records_in_memory=True)  # the reference: one process
    from dmf_assets.runs import launch

    launch.run_days(A_DAYS + B_DAYS, instance=sequential.instance, resources=sequential.resources)

    # the same days' raw archive (a re-run replays it, as in production): the processes race on the
    # history database, which is what is tested, not on fetching
    shutil.copytree(
        sequential.root / "data" / "raw", tmp_path / "shared" / "data" / "raw", ignore=shutil.ignore_patterns(".*.lock")
    )
    shared = make_workspace(tmp_path / "shared", FAULTS)
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    workers = [ctx.Process(target=_worker, args=(str(shared.root), days, out)) for days in (A_DAYS, B_DAYS)]
    for w in workers:
        w.start()
    results = [out.get(timeout=600) for _ in workers]
    for w in workers:
        w.join(60)
        assert w.exitcode == 0
    flat = [r for rs in results for r in rs]
    assert len(flat) == len(A_DAYS) + len(B_DAYS)
    assert all(failure is None for _, _, failure in flat), flat  # nobody failed on the lock
    # B's days were committed while A's earlier days were still arriving: re-derivation made it right
    assert _events(shared) == _events(sequential)
