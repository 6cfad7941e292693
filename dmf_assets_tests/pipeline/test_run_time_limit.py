"""`[runs] max_minutes` is enforced by the runs `dmf run | backfill | demo` execute themselves (issue 34 item 6):
Dagster's run monitoring stops only the runs its daemon launched, and a source dripping its pages kept `dmf run`
going for minutes past the limit. A run over its limit ends with one line saying so, nothing of the day is
committed or published, its Dagster record says it (the sensor alerts a run time limit), and the next run
resumes the fetch from the pages archived. The limit here is a tiny one (the run tag the limit travels in), the
source far slower than it: the verdict does not hang on how fast this machine is."""

from __future__ import annotations

import json
from datetime import date

import pytest

from dmf_assets.orchestration.followups import TIMED_OUT_TAG
from dmf_assets.runs import launch
from dmf_assets_tests.graph_support import make_workspace, runs_by_day

pytestmark = pytest.mark.slow

DAY = date(2026, 10, 5)
LIMIT_S = 3  # the source below needs ≥ 190 s (19 pages, each answered after 10 s)


def test_a_run_over_its_time_limit_stops_with_one_line_and_commits_nothing(tmp_path):
    ws = make_workspace(tmp_path, {DAY.isoformat(): "slow_responses:delay_s=10"})
    report = launch.run_day(
        DAY,
        instance=ws.instance,
        resources=ws.resources,
        run_config=launch.QUIET,
        extra_tags={launch.MAX_RUNTIME_TAG: str(LIMIT_S)},
    )
    assert not report.success
    assert report.failure is not None and report.failure.startswith(
        f"raw_pages: 실행 시간 한도({LIMIT_S}초, [runs] max_minutes)를 넘어 멈췄습니다 — 이 날은 반영되지 않았고"
    ), report.failure
    assert "\n" not in report.failure
    run = ws.instance.get_run_by_id(report.run_id)
    assert run.status.value == "FAILURE" and run.tags[TIMED_OUT_TAG] == str(LIMIT_S)
    raw = tmp_path / "data" / "raw"
    assert not (raw / DAY.isoformat()).exists()  # nothing published (what was archived waits in .partial)
    assert not ws.database.exists() or DAY not in runs_by_day(ws)  # nothing judged, nothing committed
    alert = tmp_path / "data" / "alerts" / f"{DAY}-run_timeout.json"  # the sensor's follow-up told people
    assert alert.is_file() and "실행 시간" in json.loads(alert.read_text(encoding="utf-8"))["subject"]

    again = launch.run_day(DAY, instance=ws.instance, resources=make_workspace(tmp_path, reuse=True).resources)
    assert again.success and again.failure is None  # the source answers at its pace again: the day completes
    assert runs_by_day(ws)[DAY]["status"] == "baseline"
    assert json.loads((raw / DAY.isoformat() / "manifest.json").read_text(encoding="utf-8"))["status"] == "complete"
