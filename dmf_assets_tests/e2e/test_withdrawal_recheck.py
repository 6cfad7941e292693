"""A withdrawal is confirmed before it is committed, and a page is trusted only with the day's shape — through
the real Dagster graph, against hostile loopback sources over real rows (issue 34).

Offset paging cannot see the source change under it: after page 5 a row before the cursor is deleted and a
new one appended (totalCount unchanged), the row that moved up across the cursor is never served, and the
day looked complete — with a CRITICAL WITHDRAWN of a registration still listed. Now every would-be
WITHDRAWN is asked of the source again (its ingredient filter); the answers are archived with the day, so
a re-run and `dmf rebuild` give the same verdict without a request.
"""

from __future__ import annotations

import json
import shutil
from datetime import date, timedelta

import polars as pl
import pytest

from dmf_assets.domain.recheck import Answer, judge_recheck, plan_recheck, query_word
from dmf_assets.domain.snapshot import build_snapshot
from dmf_assets.emulator import faults as F
from dmf_assets.emulator.app import EmulatorApp, StaticItemSource
from dmf_assets.emulator.server import EmulatorServer
from dmf_assets.errors import UserError
from dmf_assets.orchestration.followups import REFETCH_TAG
from dmf_assets.orchestration.rebuild import rebuild_history
from dmf_assets.runs import launch
from dmf_assets.settings import load_settings
from dmf_assets.source.recheck import RECHECK_DIR
from dmf_assets.storage import history
from dmf_assets_tests.client_support import fixture_rows
from dmf_assets_tests.graph_support import make_workspace, runs_by_day

pytestmark = pytest.mark.slow

D1, D2 = date(2026, 10, 6), date(2026, 10, 7)
PER_PAGE = 20  # 151 real rows: 8 pages


def _events(ws, day: date) -> list[tuple[str, str]]:
    with ws.connect() as conn:
        sql = "SELECT event_type, permit_no FROM events WHERE day_id = ? ORDER BY 1, 2"
        return conn.execute(sql, [history.day_id(day)]).fetchall()


def _metadata(ws, asset: str, day: date) -> dict:
    import dagster as dg

    records = ws.instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[day.isoformat()]), limit=1
    ).records
    return {k: getattr(v, "value", v) for k, v in records[0].asset_materialization.metadata.items()}


def _checks_of_the_day_run(ws, day: date) -> dict[str, bool]:
    """The asset checks of the day's latest run started by `dmf` (not a follow-up the sensor launched): name -> passed."""
    import dagster as dg

    runs = ws.instance.get_runs(
        dg.RunsFilter(tags={"dagster/partition": day.isoformat(), "dmf/trigger": "cli"}), limit=1
    )
    evaluations = ws.instance.all_logs(runs[0].run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION)
    return {
        e.dagster_event.event_specific_data.check_name: e.dagster_event.event_specific_data.passed for e in evaluations
    }


def test_a_field_renamed_on_one_page_rejects_the_day_with_no_events(tmp_path):
    rows = fixture_rows()
    app = EmulatorApp(StaticItemSource(rows), faults={D2.isoformat(): "field_renamed_on_page"})
    with EmulatorServer(app=app, emit=lambda line: None) as server:
        ws = make_workspace(tmp_path, base_url=server.base_url, num_of_rows=PER_PAGE, records_in_memory=True)
        launch.run_days([D1, D2], instance=ws.instance, resources=ws.resources)
    runs = runs_by_day(ws)
    assert runs[D1]["status"] == "baseline"
    day = runs[D2]
    assert day["status"] == "rejected" and day["rejected_gate"] == 1
    bad = F.middle_page(8)
    assert f"{bad}쪽(page {bad}): 응답 항목이 API의 9개 항목과 다릅니다" in day["reason"]
    assert "빠진 항목: 제조소명 (20행 중 20행) · 처음 보는 항목: MNFCTR_NM (20행 중 20행)" in day["reason"]
    assert _events(ws, D2) == [] and (day["new_count"], day["changed_count"], day["withdrawn_count"]) == (0, 0, 0)


def test_the_registry_changing_during_the_fetch_never_withdraws_a_listed_registration(tmp_path):
    rows = fixture_rows()
    fault = F.parse_fault("registry_shift:after_page=5")
    shifted = F.shifted_registry(fault, D2.isoformat(), rows, PER_PAGE)
    skipped = rows[5 * PER_PAGE]  # moved up across the cursor: never served, still listed
    deleted = next(r for r in rows if r not in shifted)  # really gone, but served before it went
    app = EmulatorApp(StaticItemSource(rows), faults={D2.isoformat(): fault.spec()})
    with EmulatorServer(app=app, emit=lambda line: None) as server:
        ws = make_workspace(tmp_path, base_url=server.base_url, num_of_rows=PER_PAGE, records_in_memory=True)
        launch.run_days([D1], instance=ws.instance, resources=ws.resources)
        asked = len(app.requests)
        assert asked == 8  # the baseline has nothing to confirm: no request beyond its pages

        launch.run_day(D2, instance=ws.instance, resources=ws.resources)
        first = runs_by_day(ws)[D2]
        assert first["status"] == "rejected" and first["rejected_gate"] == 2, first
        assert "원천이 아직 싣고 있는 등록이 수집본에서 빠졌습니다" in first["reason"]
        assert _events(ws, D2) == []  # no WITHDRAWN of the listed registration, no event at all
        assert len(app.requests) - asked == 8 + 1  # the pages, and one question about the one would-be withdrawal
        asked = len(app.requests)
        with ws.connect() as conn:
            sql = "SELECT samples FROM gate_results WHERE gate_no = 2 AND day_id = ?"
            samples = json.loads(conn.execute(sql, [history.day_id(D2)]).fetchone()[0])
        assert [s["permit_no"] for s in samples] == [skipped["DMF_PERMIT_NO"]]
        # the churn gate was judged on the diff before the re-check refused the day: the UI's check and the
        # stored row (what the workbook shows) both say it passed, never one "passed" and one "not judged"
        with ws.connect() as conn:
            stored = {r["gate_no"]: r["passed"] for r in history.gate_rows(conn, D2)}
        assert stored[2] is False and stored[6] is True, stored
        checks = _checks_of_the_day_run(ws, D2)
        assert checks["gate_6_churn"] is True, checks
        # and the refusal is a failed check on the day's partition, like any gate's (it was a failed step only)
        assert checks["gate_2_completeness_recheck"] is False, checks

        # the same morning's retry fetches again: the registry stays changed now, so the fetch is consistent
        launch.run_day(D2, instance=ws.instance, resources=ws.resources, extra_tags={REFETCH_TAG: "true"})
        retried = runs_by_day(ws)[D2]
        assert retried["status"] == "accepted", retried
        assert _events(ws, D2) == [("NEW", shifted[-1]["DMF_PERMIT_NO"]), ("WITHDRAWN", deleted["DMF_PERMIT_NO"])]
        assert len(app.requests) - asked == 8 + 1  # the real withdrawal, confirmed with one question
        assert _metadata(ws, "snapshot_diff", D2)["recheck_requests"] == 1
        assert _checks_of_the_day_run(ws, D2)["gate_2_completeness_recheck"] is True  # confirmed, so passed

    # the answers are archived with the day: a rebuild says the same with no source at all (the server is gone)
    raw = tmp_path / "data" / "raw"
    filed = json.loads((raw / D2.isoformat() / RECHECK_DIR / "manifest.json").read_text(encoding="utf-8"))
    word = query_word(deleted["INGR_KOR_NAME"])
    assert (
        list(filed["queries"]) == [f"ingr_kor_name={word}"]
        and filed["queries"][f"ingr_kor_name={word}"]["status"] == "ok"
    )
    kwargs = {"database": ws.database, "raw_dir": raw, "backups_dir": tmp_path / "data" / "backups"}
    rebuilt = rebuild_history(load_settings(), **kwargs)
    assert rebuilt.compared and [d.status for d in rebuilt.days] == ["baseline", "accepted"]
    assert [d.recheck_requests for d in rebuilt.days] == [0, 0]

    # without its archived answer the withdrawal cannot be confirmed any more: not committed, so the rebuild differs
    shutil.rmtree(raw / D2.isoformat() / RECHECK_DIR)
    with pytest.raises(UserError, match="2026-10-07: 반영 → 거부\\(게이트 2\\)"):
        rebuild_history(load_settings(), **kwargs)
    # an archive written before withdrawals were re-checked is replayed as it was accepted then
    manifest_path = raw / D2.isoformat() / "manifest.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    manifest_path.write_text(json.dumps({**manifest, "schema_version": 1}), encoding="utf-8")
    assert rebuild_history(load_settings(), **kwargs).compared


class _ListedByDay:
    """A registry that lists other rows on some days (the ItemSource protocol)."""

    def __init__(self, rows: list[dict], by_day: dict[date, list[dict]]) -> None:
        self.rows, self.by_day = rows, by_day

    def items(self, day: date) -> list[dict]:
        return [dict(r) for r in self.by_day.get(day, self.rows)]


def test_a_withdrawal_a_backfilled_day_brings_to_a_later_day_is_confirmed_with_the_source_first(tmp_path):
    """Days committed out of order: L's fetch lost a registration while the source shifted, but against its
    base O (which did not list it yet) nothing looked withdrawn. Backfilling D (which lists it) re-derives L
    against D: the registration became a CRITICAL WITHDRAWN nobody had asked the source about, though the
    source lists it. Now the re-derivation asks, as the commit does, and refuses L by gate 2."""
    rows = fixture_rows()
    fault = F.parse_fault("registry_shift:after_page=5")
    skipped = rows[5 * PER_PAGE]  # L's fetch never serves it (it crosses the cursor), the source still lists it
    first = D1 - timedelta(days=1)
    source = _ListedByDay(rows, {first: [r for r in rows if r is not skipped]})  # O: not listed yet
    app = EmulatorApp(source, faults={D2.isoformat(): fault.spec()})
    with EmulatorServer(app=app, emit=lambda line: None) as server:
        ws = make_workspace(tmp_path, base_url=server.base_url, num_of_rows=PER_PAGE, records_in_memory=True)
        launch.run_days([first, D2], instance=ws.instance, resources=ws.resources)
        assert runs_by_day(ws)[D2]["status"] == "accepted"  # against O, nothing is missing
        launch.run_day(D1, instance=ws.instance, resources=ws.resources)  # the backfill: D lists it
        runs = runs_by_day(ws)
        assert runs[D1]["status"] == "accepted" and ("NEW", skipped["DMF_PERMIT_NO"]) in _events(ws, D1)
        assert runs[D2]["status"] == "rejected" and runs[D2]["rejected_gate"] == 2, runs[D2]
        assert runs[D2]["base_day_id"] == history.day_id(D1)
        assert not [e for e in _events(ws, D2) if e[0] == "WITHDRAWN"]
        with ws.connect() as conn:
            stored = {r["gate_no"]: r for r in history.gate_rows(conn, D2)}
        assert stored[2]["passed"] is False and skipped["DMF_PERMIT_NO"] in stored[2]["samples"]
    # the answer is archived with L: `dmf rebuild`, in date order and with no source, says the same history
    raw = tmp_path / "data" / "raw"
    assert (raw / D2.isoformat() / RECHECK_DIR / "manifest.json").is_file()
    kwargs = {"database": ws.database, "raw_dir": raw, "backups_dir": tmp_path / "data" / "backups"}
    rebuilt = rebuild_history(load_settings(), **kwargs)
    assert [d.status for d in rebuilt.days] == ["baseline", "accepted", "rejected"]


def test_extra_requests_on_emulator_days_without_and_with_a_withdrawal(tmp_path):
    """The price of confirming withdrawals, measured on the emulator's registry (9,168 rows, 19 pages):
    a day without a withdrawal asks nothing more; 2026-10-12 has one real withdrawal and asks one question."""
    ws = make_workspace(tmp_path, records_in_memory=True)
    days = [date(2026, 10, 11), date(2026, 10, 12), date(2026, 10, 13)]
    launch.run_days(days, instance=ws.instance, resources=ws.resources)
    runs = runs_by_day(ws)
    assert [runs[d]["status"] for d in days] == ["baseline", "accepted", "accepted"]
    assert [runs[d]["withdrawn_count"] for d in days] == [0, 1, 0]
    assert [_metadata(ws, "snapshot_diff", d)["recheck_requests"] for d in days] == [0, 1, 0]
    assert [_metadata(ws, "raw_pages", d)["requests"] for d in days] == [19, 19, 19]


def _keyed(rows: list[dict]) -> pl.DataFrame:
    return build_snapshot(rows)


def test_what_the_answers_prove():
    rows = fixture_rows()

    def sharing(r):  # the real rows whose ingredient holds the word that looks `r` up
        return [x for x in rows if query_word(r["INGR_KOR_NAME"]) in (x["INGR_KOR_NAME"] or "")]

    k = next(i for i, r in enumerate(rows) if len(sharing(r)) > 1)  # a word other registrations share
    today = _keyed(rows[:k] + rows[k + 1 :])  # rows[k] is not in today's snapshot
    plan = plan_recheck(_keyed([rows[k]]))
    (q,) = plan.queries
    assert q.params == {"ingr_kor_name": query_word(rows[k]["INGR_KOR_NAME"])} and not plan.unaskable
    same_word = sharing(rows[k])

    def verdict(items):
        return judge_recheck(today, 1, plan, {q.key: Answer(items)})

    # the source no longer lists it, and lists what today's snapshot holds: confirmed
    assert verdict([r for r in same_word if r is not rows[k]]).confirmed
    # the source still lists it: the snapshot misses a listed registration
    still = verdict(same_word)
    assert not still.confirmed and [s["permit_no"] for s in still.listed] == [rows[k]["DMF_PERMIT_NO"]]
    # no answer: unconfirmed, never committed
    none = judge_recheck(today, 1, plan, {q.key: Answer(None, "HTTP 503")})
    assert not none.confirmed and none.unconfirmed[0]["error"] == "HTTP 503"
    # silence from a filter that today's snapshot proves must match something: proves nothing
    assert not verdict([]).confirmed
    # the only registration with its word: silence is the answer
    alone = next(i for i, r in enumerate(rows) if len(sharing(r)) == 1)
    alone_plan = plan_recheck(_keyed([rows[alone]]))
    (aq,) = alone_plan.queries
    assert judge_recheck(_keyed(rows[:alone] + rows[alone + 1 :]), 1, alone_plan, {aq.key: Answer([])}).confirmed
    # a registration with no word to look it up by cannot be confirmed
    blank = _keyed([{**rows[k], "INGR_KOR_NAME": "-", "ENTP_NAME": "(주)"}])
    assert plan_recheck(blank).unaskable and not judge_recheck(today, 1, plan_recheck(blank), {}).confirmed
