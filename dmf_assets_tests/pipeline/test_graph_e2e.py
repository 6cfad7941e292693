"""The whole asset graph in real Dagster runs on a temp DuckDB file, scored against the emulator's truth
(the runs' Dagster records kept in memory: see `graph_support.make_workspace`).

22 emulator days with three injected faults (completeness, drop, churn — two of them back to back):
run-per-day (what the schedule and a per-day backfill do), in date order or not, must accept
exactly the good days, write nothing for the rejected ones, cover the gap on recovery, and store
exactly the true events. Two processes running days of the same history at once on one database end
in the history run in date order.
"""

from __future__ import annotations

import multiprocessing
import shutil
from datetime import date, timedelta
from multiprocessing.queues import Queue
from pathlib import Path

import pytest
from openpyxl import load_workbook

from dmf_assets.emulator.registry import RegistrySimulator
from dmf_assets.notify.messages import Redone
from dmf_assets.orchestration import followups
from dmf_assets.report.workbook import workbook_day
from dmf_assets.runs import launch
from dmf_assets.storage import history
from dmf_assets_tests.graph_support import Workspace, make_workspace, open_workspace, runs_by_day, score_history

START = date(2026, 10, 5)
DAYS = [START + timedelta(days=i) for i in range(22)]
FAULTS = {
    "2026-10-08": "page_missing_rows",  # gate 2
    "2026-10-14": "mass_disappearance",  # gate 3
    "2026-10-15": "garbled_text",  # gate 6 — the day after another rejected day
}
EXPECTED_GATE = {date.fromisoformat(d): g for d, g in {"2026-10-08": 2, "2026-10-14": 3, "2026-10-15": 6}.items()}

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def sim():
    return RegistrySimulator()


def _assert_history_is_true(ws, sim):
    runs = runs_by_day(ws)
    assert set(runs) == set(DAYS)
    assert runs[DAYS[0]]["status"] == "baseline"
    for day, run in runs.items():
        if day in EXPECTED_GATE:
            assert run["status"] == "rejected" and run["rejected_gate"] == EXPECTED_GATE[day], (day, run)
        else:
            assert run["status"] in ("accepted", "baseline"), (day, run)
    with ws.connect() as conn:
        for day in EXPECTED_GATE:
            d = history.day_id(day)
            assert conn.execute("SELECT count(*) FROM snapshots WHERE day_id = ?", [d]).fetchone() == (0,)
            assert conn.execute("SELECT count(*) FROM events WHERE day_id = ?", [d]).fetchone() == (0,)
    # recovery covers the gap: after two rejected days the base is the last accepted day before them
    assert runs[date(2026, 10, 9)]["base_day_id"] == history.day_id(date(2026, 10, 7))
    assert runs[date(2026, 10, 16)]["base_day_id"] == history.day_id(date(2026, 10, 13))
    total, scored = score_history(ws, sim)
    assert scored == len(DAYS) - 1 - len(EXPECTED_GATE)
    for kind in ("NEW", "CHANGED", "WITHDRAWN"):
        assert total.precision(kind) == 1.0 and total.recall(kind) == 1.0, (kind, total.missed, total.spurious)
    assert total.false_positive["WITHDRAWN"] == 0
    assert sum(total.true_positive.values()) > 40  # the 22 days really changed things


def _event_rows(ws):
    with ws.connect() as conn:
        return conn.execute(
            "SELECT e.event_id, e.day_id, e.base_day_id, e.event_type, e.severity, e.dmf_key, e.base_dmf_key, "
            "e.is_cosmetic, e.number_changed, e.changed_fields FROM events e ORDER BY e.event_id"
        ).fetchall()


@pytest.fixture(scope="module")
def per_day(tmp_path_factory, sim):
    ws = make_workspace(tmp_path_factory.mktemp("per_day"), FAULTS, records_in_memory=True)
    reports = launch.run_days(DAYS, instance=ws.instance, resources=ws.resources)
    return ws, reports


def test_run_per_day_accepts_good_days_and_rejects_faults(per_day, sim):
    ws, reports = per_day
    assert all(r.failure is None for r in reports), [r for r in reports if r.failure]
    # a rejected day stops its own run (blocking check) and is completed by a follow-up run
    stopped = {r.day for r in reports if not r.success}
    assert stopped == set(EXPECTED_GATE)
    _assert_history_is_true(ws, sim)


def test_every_day_has_a_workbook_and_rejected_days_say_so(per_day):
    ws, _ = per_day
    for day in DAYS:
        path = ws.root / "reports" / f"DMF_리포트_{day.isoformat()}.xlsx"
        assert path.exists(), path
    wb = load_workbook(ws.root / "reports" / "DMF_리포트_2026-10-15.xlsx", read_only=True)
    for ws_ in wb.worksheets:
        first = next(ws_.iter_rows(min_row=1, max_row=1, values_only=True))
        assert "수집 실패 — 비교 기준은 여전히 2026-10-13" in str(first[0]), (ws_.title, first)
    assert workbook_day(ws.root / "reports" / "DMF_리포트_최신.xlsx") == DAYS[-1]


def test_rerunning_a_day_is_idempotent(per_day):
    ws, _ = per_day
    before = _event_rows(ws)
    launch.run_day(date(2026, 10, 20), instance=ws.instance, resources=ws.resources)
    assert _event_rows(ws) == before


def test_days_committed_out_of_order_end_in_the_same_history(tmp_path, per_day, sim):
    """A backfill racing the schedule commits days in any order: each commit re-derives the next accepted
    day, and the sensor refreshes that day's workbook — the history ends exactly as if run in date order.

    A fresh history and Dagster instance, over the raw archive the in-order runs fetched (a re-run of a
    day replays its archive, as in production): the complete days — the gate-3 and gate-6 faults among
    them — replay without a request, the short day (gate 2, archived "incomplete") is fetched from the
    emulator again and is short again. The order of commits, not the fetch, is what differs."""
    shutil.copytree(
        per_day[0].root / "data" / "raw", tmp_path / "data" / "raw", ignore=shutil.ignore_patterns(".*.lock")
    )
    ws = make_workspace(tmp_path, FAULTS, records_in_memory=True)
    order = DAYS[1::2] + DAYS[0::2][::-1]  # every other day first, then the rest backwards
    reports = [launch.run_day(day, instance=ws.instance, resources=ws.resources) for day in order]
    assert all(r.failure is None for r in reports), [r for r in reports if r.failure]
    _assert_history_is_true(ws, sim)
    assert _event_rows(ws) == _event_rows(per_day[0])
    for day in DAYS:
        assert (ws.root / "reports" / f"DMF_리포트_{day.isoformat()}.xlsx").exists()
    # re-derived days got their workbook refreshed by the sensor's follow-up runs, which a correction of a day's
    # earlier mail names as comparing it again (not asking MFDS again)
    assert sum(r.followups for r in reports) > len(EXPECTED_GATE)
    refreshes = [r for r in ws.instance.get_runs() if r.tags.get(followups.TRIGGER_TAG) == "sensor-refresh"]
    assert refreshes and all(followups.redone_of(r.tags) is Redone.RECOMPARED for r in refreshes)


def test_workbook_events_table_reads_back_exactly_as_stored(per_day):
    """The 변경 이벤트 sheet, read back with openpyxl, is exactly the database's non-cosmetic events."""
    from dmf_assets.report.day_data import build_day_report
    from dmf_assets.settings import load_settings
    from dmf_assets_tests.workbook_reader import RejectedDayError, read_events_sheet

    ws, _ = per_day
    checked = 0
    for day in DAYS[1:]:
        path = ws.root / "reports" / f"DMF_리포트_{day.isoformat()}.xlsx"
        if day in EXPECTED_GATE:
            with pytest.raises(RejectedDayError):
                read_events_sheet(path)
            continue
        with ws.connect() as conn:
            stored = build_day_report(conn, day, load_settings()).headline_events
        sheet = read_events_sheet(path)
        fields = (
            "event_type",
            "severity",
            "dmf_key",
            "base_dmf_key",
            "permit_no",
            "ingredient",
            "applicant",
            "manufacturer",
            "countries",
            "address",
            "bizrno",
            "target_class",
            "issue_date",
            "changed_fields",
        )
        got = sorted(tuple(row[f] for f in fields) for row in sheet)
        want = sorted(tuple(getattr(e, f) for f in fields) for e in stored)
        assert got == want, day
        checked += len(want)
    assert checked > 20


def test_every_count_people_read_follows_one_definition_of_changed(per_day):
    """실질 변경 once: the UI's metadata (snapshot_diff, xlsx_report), the workbook's KPI row and the mail
    count a number assignment as 번호 부여 and a re-numbering as 번호 변경, never as 변경 (nor the re-numbering
    as 삭제) — on the days that had one (the emulator re-numbers one on 10-07, and on 10-16, the day that
    covers two rejected days)."""
    import dagster as dg

    from dmf_assets.notify import messages
    from dmf_assets.report.day_data import build_day_report
    from dmf_assets.report.sentences import headline_counts
    from dmf_assets.settings import load_settings

    ws, _ = per_day
    runs = runs_by_day(ws)

    def metadata(asset: str, day: date) -> dict:
        records = ws.instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[day.isoformat()]), limit=1
        ).records
        return {k: v.value for k, v in records[0].asset_materialization.metadata.items()}

    accepted = {d: r for d, r in runs.items() if r["status"] == "accepted"}
    assert len([d for d, r in accepted.items() if r["assigned_count"]]) >= 3  # a number now and then
    assert [d for d, r in accepted.items() if r["renumbered_count"]] == [date(2026, 10, 7), date(2026, 10, 16)]
    for day, run in accepted.items():
        if not (run["assigned_count"] or run["renumbered_count"]):
            continue
        numbers = (run["assigned_count"], run["renumbered_count"])
        changed = run["changed_count"] - sum(numbers)
        diff = metadata("snapshot_diff", day)
        assert (diff["changed"], diff["number_assigned"], diff["number_changed"]) == (changed, *numbers), day
        with ws.connect() as conn:
            report = build_day_report(conn, day, load_settings())
            withdrawn = conn.execute(
                "SELECT count(*) FROM events WHERE day_id = ? AND event_type = 'WITHDRAWN'", [history.day_id(day)]
            ).fetchone()[0]
        k = report.summary
        assert (k.changed, k.number_assigned, k.number_changed, k.withdrawn) == (changed, *numbers, withdrawn), day
        assert (
            f"| {k.registry_size:,} | {k.new:,} | {changed:,} | {k.withdrawn:,} |"
            in metadata("xlsx_report", day)["summary"]
        )
        counts = headline_counts(k)
        assert counts in messages.report_subject(messages.ReportDelivery.from_day_report(report, None)), day
        assert ("번호 변경" in counts) == bool(run["renumbered_count"]), day


# --- several runs at once on one history database ----------------------------------------------------

#: two processes, each with its own days of the history above: A's last day is the short day gate 2 rejects
CONCURRENT_FAULTS = {"2026-10-08": FAULTS["2026-10-08"]}
A_DAYS = DAYS[:4]  # 10-05 .. 10-08
B_DAYS = DAYS[4:7]  # 10-09 .. 10-11


def _concurrent_worker(root: str, days: list[date], out: Queue) -> None:
    ws = open_workspace(Path(root), CONCURRENT_FAULTS)
    reports = launch.run_days(days, instance=ws.instance, resources=ws.resources)
    out.put([(r.day, r.success, r.failure) for r in reports])


def _events_until(ws: Workspace, last: date) -> list[tuple]:
    with ws.connect() as conn:
        return conn.execute(
            "SELECT day_id, base_day_id, event_id, event_type, severity, dmf_key, is_cosmetic, changed_fields "
            "FROM events WHERE day_id <= ? ORDER BY event_id",
            [history.day_id(last)],
        ).fetchall()


def test_two_processes_at_once_finish_and_agree_with_sequential(tmp_path: Path, per_day: tuple) -> None:
    """Several runs at once on one history database (the project's SQLite Dagster instance): all finish,
    none fails on the DuckDB lock, and the history is exactly what one run after the other wrote — the
    in-order history's same days (a day's events never change once the days after it are committed in
    order, so its first eleven days are the reference)."""
    sequential = per_day[0]
    # the same days' raw archive (a re-run replays it, as in production): the processes race on the
    # history database, which is what is tested, not on fetching
    shutil.copytree(
        sequential.root / "data" / "raw", tmp_path / "shared" / "data" / "raw", ignore=shutil.ignore_patterns(".*.lock")
    )
    shared = make_workspace(tmp_path / "shared", CONCURRENT_FAULTS)
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    workers = [ctx.Process(target=_concurrent_worker, args=(str(shared.root), days, out)) for days in (A_DAYS, B_DAYS)]
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
    events = _events_until(shared, B_DAYS[-1])
    assert events and events == _events_until(sequential, B_DAYS[-1])
    assert _events_until(shared, DAYS[-1]) == events  # and nothing beyond the two processes' days
