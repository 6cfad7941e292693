"""The 06:00 KST schedule, the freshness policy, and the sensor that completes stopped days and raises alerts."""

from __future__ import annotations

import json
from datetime import date, datetime
from zoneinfo import ZoneInfo

import dagster as dg
import pytest

from dmf_assets.defs import assets as a
from dmf_assets.defs.automation import daily_0600_kst, dmf_watch_sensor
from dmf_assets.orchestration import followups, runner
from dmf_assets_tests.graph_support import make_workspace

KST = ZoneInfo("Asia/Seoul")
D1, D2 = date(2026, 10, 5), date(2026, 10, 6)


def test_schedule_runs_the_new_day_at_0600_kst():
    assert daily_0600_kst.cron_schedule == "0 6 * * *"
    assert daily_0600_kst.execution_timezone == "Asia/Seoul"
    tick = datetime(2026, 11, 30, 6, 0, tzinfo=KST)
    request = daily_0600_kst(dg.build_schedule_context(scheduled_execution_time=tick))
    assert request.partition_key == "2026-11-30" and request.run_key == "schedule:2026-11-30"
    # 05:59 UTC on Nov 29 is already 14:59 KST on Nov 29: the day is always the Korean one
    late = daily_0600_kst(dg.build_schedule_context(scheduled_execution_time=datetime(2026, 11, 29, 21, 0, tzinfo=ZoneInfo("UTC"))))
    assert late.partition_key == "2026-11-30"


def test_workbook_must_be_fresh_by_0900_kst():
    spec = a.xlsx_report.specs_by_key[dg.AssetKey("xlsx_report")]
    policy = spec.freshness_policy
    assert policy.deadline_cron == "0 9 * * *" and policy.timezone == "Asia/Seoul"


@pytest.fixture()
def stopped_day(tmp_path, monkeypatch):
    """D1 accepted; D2 rejected by a gate with its run stopped there (no follow-up yet)."""
    alerts = tmp_path / "alerts"
    config = tmp_path / "dmf.toml"
    config.write_text(f'[paths]\nalerts_dir = "{alerts}"\n', encoding="utf-8")
    monkeypatch.setenv("DMF_CONFIG", str(config))
    ws = make_workspace(tmp_path / "ws", {D2.isoformat(): "page_missing_rows"})
    runner.run_day(D1, instance=ws.instance, resources=ws.resources)
    result = dg.materialize(runner.all_assets(), partition_key=D2.isoformat(), instance=ws.instance,
                            resources=ws.resources, raise_on_error=False)
    assert not result.success  # the blocking gate check stopped the run after integrity_verdict
    return ws, alerts


def test_sensor_completes_the_stopped_day_and_alerts_once(stopped_day):
    ws, alerts = stopped_day
    result = dmf_watch_sensor(dg.build_sensor_context(instance=ws.instance))
    (request,) = result.run_requests
    assert request.partition_key == D2.isoformat()
    assert [k.path[-1] for k in request.asset_selection] == ["snapshot_diff", "events", "xlsx_report"]
    alert = json.loads((alerts / f"{D2.isoformat()}-rejected.json").read_text(encoding="utf-8"))
    assert alert["kind"] == "rejected" and "2026-10-05" in alert["message"]
    log = (alerts / "alerts.log").read_text(encoding="utf-8")
    assert log.count("\trejected\t") == 1

    # the same situation again: same run key (Dagster de-duplicates), no second alert
    again = dmf_watch_sensor(dg.build_sensor_context(instance=ws.instance))
    assert [r.run_key for r in again.run_requests] == [request.run_key]
    assert (alerts / "alerts.log").read_text(encoding="utf-8") == log

    # once the follow-up ran, there is nothing left to do for that day
    runner.complete_days(ws.instance, ws.resources)
    done = followups.plan_followups(ws.instance)
    assert done == []
    assert (ws.root / "reports" / f"DMF_리포트_{D2.isoformat()}.xlsx").exists()


def test_overdue_day_is_alerted_after_0900_kst(stopped_day):
    ws, alerts = stopped_day
    today = "2026-10-07"
    before = followups.find_alerts(ws.instance, datetime(2026, 10, 7, 8, 59, tzinfo=KST))
    assert not [x for x in before if x.kind == "overdue"]
    after = followups.find_alerts(ws.instance, datetime(2026, 10, 7, 9, 1, tzinfo=KST))
    (overdue,) = [x for x in after if x.kind == "overdue"]
    assert overdue.day == today
    written = followups.write_alerts(alerts, after)
    assert (alerts / f"{today}-overdue.json").exists() and overdue in written
