"""Time only moves forward (issue 34): on a machine whose clock is set back, every way of running a day refuses
with one line — the clock, the newest day, what to check — and writes nothing; `dmf doctor` FAILs the clock; the
sensor does not request runs of days the partitions no longer show (it used to end every run in a
DagsterUnknownPartitionError traceback). The probe's case: the real-API path (any non-loopback host, where only
today can be fetched) with MFDS_SERVICE_KEY set, and the clock 20 days back — it used to archive and commit
"today" as a new baseline before the existing one, and the next day got 27 false WITHDRAWN."""

from __future__ import annotations

import shutil
from datetime import timedelta
from pathlib import Path

import pytest

from dmf_assets.cli import main as dmf_main
from dmf_assets.clock import today_kst
from dmf_assets.runs import launch
from dmf_assets.settings import REAL_API_URL
from dmf_assets_tests.client_support import fixture_rows
from dmf_assets_tests.graph_support import clocks_at, make_workspace, morning, runs_by_day
from dmf_assets_tests.project_support import project_paths, read_rows, write_config
from dmf_assets_tests.real_api_support import EchoingApi, real_api_resources

pytestmark = pytest.mark.slow

KEY = "Clock+Test/Key==q8w7e6r5t4y3u2i1o0p9"
CLOCK_LINE = "시계가 뒤로 갔습니다: 오늘(KST)이 "


def _history(database: Path) -> list[tuple]:
    return read_rows(database, "SELECT day_id, status, population FROM runs ORDER BY day_id")


def _cli_project(root: Path, base_url: str) -> Path:
    """The workspace's own config for the `dmf` commands (absolute paths, the given source)."""
    return write_config(root / "dmf.cli.toml", project_paths(root), f'[source]\nbase_url = "{base_url}"\n')


def test_a_clock_set_back_20_days_on_the_real_api_path_commits_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MFDS_SERVICE_KEY", KEY)
    ws = make_workspace(tmp_path)
    today = today_kst()
    days = [today - timedelta(days=2), today - timedelta(days=1), today]
    with EchoingApi(fixture_rows(), service_key=KEY) as api:
        resources = real_api_resources(tmp_path, api.url)
        for day in days[:2]:  # mornings of the real API, each fetching its own today
            with clocks_at(morning(day)):
                report = launch.run_day(day, instance=ws.instance, resources=resources, run_config=launch.QUIET)
            assert report.failure is None, report
        api.kind = "html_503"  # today: rejected at gate 1, its follow-up (the "collection failed" workbook) not run yet
        with clocks_at(morning(today)):
            launch.execute_day(
                launch.definitions_with(resources), ws.instance, today.isoformat(), run_config=launch.QUIET
            )
        api.kind = None
        history = _history(ws.database)
        assert [status for _, status, _ in history] == ["baseline", "accepted", "rejected"]
        requests = api.requests
        files = sorted(p.relative_to(tmp_path) for p in (tmp_path / "data").rglob("*") if "staging" not in p.parts)

        back = today - timedelta(days=20)
        monkeypatch.setenv("DMF_CONFIG", str(_cli_project(tmp_path, REAL_API_URL)))
        monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
        with clocks_at(morning(back)):
            # the schedule's (or a UI) run of "today": one line, from the first step
            report = launch.run_day(back, instance=ws.instance, resources=resources, run_config=launch.QUIET)
            assert report.failure is not None and report.failure.startswith(f"raw_pages: {CLOCK_LINE}{back}인데 ")
            assert f"{today}의 기록이 있습니다" in report.failure and "timedatectl" in report.failure
            # the sensor: today's pending follow-up waits for the clock — no run of a day the partitions no longer
            # show (that was the DagsterUnknownPartitionError of every later run)
            defs = launch.definitions_with(resources)
            assert [r.partition_key for r in launch.tick(defs, ws.instance).run_requests or []] == []
            assert launch.follow_up(defs, ws.instance, run_config=launch.QUIET) == []
            # the commands: one line each, exit 2, before any request
            capsys.readouterr()
            for argv in (
                ["run"],
                ["run", "--date", today.isoformat()],
                ["backfill", "--start", (back - timedelta(days=1)).isoformat(), "--end", back.isoformat()],
                ["fetch"],
            ):
                assert dmf_main(argv) == 2, argv
                err = capsys.readouterr().err
                assert err.startswith(f"dmf: {CLOCK_LINE}{back}인데 ") and err.count("\n") == 1, (argv, err)
            assert dmf_main(["doctor"]) == 2
            doctor = capsys.readouterr().out
            (line,) = [ln for ln in doctor.splitlines() if "시계 / clock" in ln]
            assert line.split()[0] == "FAIL" and f"원본 보관에 {today}의 수집본이 있습니다" in line

    assert api.requests == requests  # not one request
    assert _history(ws.database) == history  # 0 days committed, nothing re-derived
    with clocks_at(morning(today)):  # the clock put right: today's follow-up is requested again
        pending = launch.tick(launch.definitions_with(resources), ws.instance).run_requests
    assert [r.partition_key for r in pending] == [today.isoformat()]
    assert not (tmp_path / "data" / "raw" / back.isoformat()).exists()
    after = sorted(p.relative_to(tmp_path) for p in (tmp_path / "data").rglob("*") if "staging" not in p.parts)
    assert [p for p in after if p not in files and "alerts" not in p.parts] == []  # no archive, no events file
    assert not (tmp_path / "data" / "staging" / back.isoformat()).exists()


def test_a_history_later_than_today_refuses_the_day_even_without_its_archives(tmp_path):
    """The archives of the later days moved away (pruned, another disk): the database still knows them."""
    ws = make_workspace(tmp_path, records_in_memory=True)
    today = today_kst()
    launch.run_days([today - timedelta(days=1), today], instance=ws.instance, resources=ws.resources)
    history = _history(ws.database)
    shutil.move(tmp_path / "data" / "raw", tmp_path / "raw_elsewhere")
    back = today - timedelta(days=5)
    with clocks_at(morning(back)):
        report = launch.run_day(back, instance=ws.instance, resources=ws.resources, run_config=launch.QUIET)
    assert report.failure is not None and report.failure.startswith(
        f"integrity_verdict: {CLOCK_LINE}{back}인데 이력 DB에"
    )
    assert _history(ws.database) == history
    assert runs_by_day(ws).keys() == {today - timedelta(days=1), today}
