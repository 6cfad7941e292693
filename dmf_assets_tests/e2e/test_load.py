"""Load: an 8-day backfill while the 06:00 schedule fires and a user re-runs a day — all at once.

Everything finishes, no run fails on the database lock, nothing is written twice, and every day's
stored events are exactly the emulator's truth (the days were committed out of order and re-derived).
The race is made to happen and checked to have happened: the schedule and the user start once the
backfill's runs are under way (read from the Dagster instance, not guessed with sleeps), and the run
records show the schedule's and the user's runs overlapping a backfill run, before the backfill's end.
"""

from __future__ import annotations

import multiprocessing
import time
from datetime import date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import dagster as dg
import pytest

from dmf_assets.emulator.registry import RegistrySimulator
from dmf_assets_tests.graph_support import make_workspace, open_workspace, runs_by_day, score_history

pytestmark = pytest.mark.slow

START = date(2026, 6, 1)
#: enough days that the backfill is still running well after the other two processes have started: the user's
#: run (the later one) starts as the backfill's third day does and takes about one day-run; the backfill's five
#: days after that (each with the sensor's refresh of a re-derived day) end ≈14 s after it on a quiet machine
DAYS = [START + timedelta(days=i) for i in range(8)]
USER_DAY = DAYS[len(DAYS) // 2]


def _backfill(root: str, out) -> None:
    from dmf_assets.runs import launch

    ws = open_workspace(Path(root))
    reports = launch.run_days(DAYS, instance=ws.instance, resources=ws.resources, trigger="load-backfill")
    out.put(
        ("backfill", next((r.failure for r in reports if r.failure), None), all(r.failure is None for r in reports))
    )


def _schedule_fires(root: str, out) -> None:
    from dmf_assets.defs.automation import daily_0600_kst
    from dmf_assets.runs import launch

    ws = open_workspace(Path(root))
    tick = datetime.combine(DAYS[-1], datetime.min.time().replace(hour=6), ZoneInfo("Asia/Seoul"))
    request = daily_0600_kst(
        dg.build_schedule_context(
            instance=ws.instance, scheduled_execution_time=tick, resources={"workspace": ws.resources["workspace"]}
        )
    )
    report = launch.run_day(
        date.fromisoformat(request.partition_key), instance=ws.instance, resources=ws.resources, trigger="schedule"
    )
    out.put(("schedule", report.failure, request.partition_key))


def _user_reruns(root: str, out) -> None:
    from dmf_assets.runs import launch

    ws = open_workspace(Path(root))
    report = launch.run_day(USER_DAY, instance=ws.instance, resources=ws.resources, trigger="user")
    out.put(("user", report.failure, USER_DAY.isoformat()))


def _wait_for_backfill_runs(ws, n: int, procs, timeout_s: float = 300) -> None:
    """Until the backfill has started its n-th run (its process still alive)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if len(ws.instance.get_run_ids(filters=dg.RunsFilter(tags={"dmf/trigger": "load-backfill"}))) >= n:
            return
        assert procs[0].is_alive() or procs[0].exitcode == 0, f"backfill process exited {procs[0].exitcode}"
        time.sleep(0.2)
    pytest.fail(f"the backfill did not start {n} runs in {timeout_s} s")


def test_backfill_schedule_and_rerun_at_once(tmp_path):
    ws = make_workspace(tmp_path)
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_backfill, args=(str(tmp_path), out))]
    procs[0].start()
    _wait_for_backfill_runs(ws, 2, procs)  # the backfill is past its first day when the schedule fires…
    procs.append(ctx.Process(target=_schedule_fires, args=(str(tmp_path), out)))
    procs[-1].start()
    _wait_for_backfill_runs(ws, 3, procs)  # …and a user re-runs a day in the middle of the range
    procs.append(ctx.Process(target=_user_reruns, args=(str(tmp_path), out)))
    procs[-1].start()
    results = {name: (failure, extra) for name, failure, extra in (out.get(timeout=900) for _ in procs)}
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert all(failure is None for failure, _ in results.values()), results
    assert results["schedule"][1] == DAYS[-1].isoformat()

    runs = runs_by_day(ws)
    assert sorted(runs) == DAYS
    assert runs[DAYS[0]]["status"] == "baseline"
    assert all(r["status"] == "accepted" for d, r in runs.items() if d != DAYS[0])
    with ws.connect() as conn:
        assert conn.execute("SELECT count(*) - count(DISTINCT event_id) FROM events").fetchone() == (0,)
        dup = conn.execute(
            "SELECT count(*) FROM (SELECT day_id, dmf_key, base_dmf_key, event_type, count(*) n FROM events "
            "GROUP BY ALL HAVING n > 1)"
        ).fetchone()
        assert dup == (0,)
        per_day = conn.execute("SELECT day_id, count(*) FROM snapshots GROUP BY day_id").fetchall()
        assert len(per_day) == len(DAYS) and all(n > 8000 for _, n in per_day)
        for day in DAYS[1:]:
            base = conn.execute(
                "SELECT base_day_id FROM runs WHERE day_id = ?", [day.year * 10000 + day.month * 100 + day.day]
            ).fetchone()[0]
            prev = day - timedelta(days=1)
            assert base == prev.year * 10000 + prev.month * 100 + prev.day  # the chain ended in date order
    total, scored = score_history(ws, RegistrySimulator())
    assert scored == len(DAYS) - 1 and total.perfect, (total.missed[:5], total.spurious[:5])
    # the race happened: the schedule's and the user's runs started while backfill days were still running
    records = ws.instance.get_run_records()
    backfill = [r for r in records if r.dagster_run.tags.get("dmf/trigger") == "load-backfill"]
    assert len(backfill) >= len(DAYS) and all(b.start_time and b.end_time for b in backfill)
    for trigger in ("schedule", "user"):
        (other,) = [r for r in records if r.dagster_run.tags.get("dmf/trigger") == trigger]
        assert min(b.start_time for b in backfill) < other.start_time < max(b.end_time for b in backfill), trigger
        # overlapping intervals: at least one backfill run was running while this run was
        overlapping = [b for b in backfill if b.start_time < other.end_time and other.start_time < b.end_time]
        assert overlapping, (trigger, other.start_time, other.end_time)
    # every run that touched the database finished; none died on a lock
    failed = ws.instance.get_runs(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.FAILURE]))
    for run in failed:
        logs = " ".join(
            str(r.event_log_entry.user_message) for r in ws.instance.get_records_for_run(run.run_id).records
        )
        assert "lock" not in logs.lower(), logs[:2000]
