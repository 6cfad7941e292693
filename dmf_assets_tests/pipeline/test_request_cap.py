"""A day whose fetch reaches `[source] daily_request_cap` (the guard on the developer key's quota) stops with one
line, commits nothing, and the sensor's follow-up alerts it as what it is — 「요청 한도 도달」 with the cap, never as a
failed run — from what the step recorded, not from the words of its error. (A day whose pages would not fit in the
requests left stops after its first page and is rejected as short: gate 2, as the day's first run here; its
re-run, as the sensor's retry would, finds no request left.)"""

from __future__ import annotations

import json
from datetime import date

import pytest

from dmf_assets.runs import launch
from dmf_assets_tests.graph_support import make_workspace, runs_by_day

pytestmark = pytest.mark.slow

DAY = date(2026, 10, 5)
CAP = 1  # the day's first run takes its one request with page 1 (and stops there, short)


def test_a_fetch_over_the_request_cap_is_alerted_as_the_cap_and_commits_nothing(tmp_path):
    ws = make_workspace(tmp_path, records_in_memory=True, daily_request_cap=CAP)
    short = launch.run_day(DAY, instance=ws.instance, resources=ws.resources, run_config=launch.QUIET)
    assert runs_by_day(ws)[DAY]["rejected_gate"] == 2 and short.failure is None  # the page cap: a short day
    (tmp_path / "data" / "alerts" / f"{DAY}-rejected.json").unlink()  # told; what follows is the second run's
    report = launch.run_day(DAY, instance=ws.instance, resources=ws.resources, run_config=launch.QUIET)
    assert not report.success
    assert report.failure is not None and report.failure.startswith("raw_pages: 일일 요청 한도 초과"), report.failure
    assert runs_by_day(ws)[DAY]["dagster_run_id"] == short.run_id  # nothing judged, nothing committed

    alerts = tmp_path / "data" / "alerts"
    kinds = sorted(p.name.removeprefix(f"{DAY}-").removesuffix(".json") for p in alerts.glob(f"{DAY}-*.json"))
    assert kinds == ["request_cap"], kinds  # its own kind, and not also 「실행 실패」
    alert = json.loads((alerts / f"{DAY}-request_cap.json").read_text(encoding="utf-8"))
    assert "요청 한도" in alert["subject"] and f"한도(request cap) {CAP:,}회에 도달" in alert["text"], alert
