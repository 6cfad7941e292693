"""Against the real MFDS API a past date cannot be fetched: the run says why, in Korean and English,
and nothing is written. With an archive of that day it is re-processed without any request."""

from __future__ import annotations

import shutil
from datetime import date

from dmf_assets.defs.resources import build_resources
from dmf_assets.runs import launch
from dmf_assets.settings import REAL_API_URL, load_settings
from dmf_assets_tests.client_support import fixture_rows
from dmf_assets_tests.graph_support import clocks_at, make_workspace, morning
from dmf_assets_tests.real_api_support import EchoingApi, real_api_resources

PAST = date(2026, 10, 5)


def _real_api_resources(root):
    return build_resources(load_settings(), root=root, base_url=REAL_API_URL)


def test_past_date_without_archive_fails_with_a_clear_message(tmp_path):
    ws = make_workspace(tmp_path, records_in_memory=True)
    result = launch.execute_day(launch.definitions_with(_real_api_resources(tmp_path)), ws.instance, PAST.isoformat())
    assert not result.success
    (failure,) = [e for e in result.all_events if e.is_step_failure]
    assert failure.step_key == "raw_pages"
    message = failure.step_failure_data.user_failure_data.description
    assert "식약처 API는 현재(오늘) 등록 현황만 제공합니다" in message
    assert "serves only the current registry" in message
    assert not (tmp_path / "data" / "dmf.duckdb").exists()  # nothing judged, nothing written


def test_past_date_with_an_archive_is_reprocessed_without_requests(tmp_path, monkeypatch):
    # the archive was made on that day by the real API (its client, over loopback); it is never asked again
    monkeypatch.setenv("MFDS_SERVICE_KEY", "real-api-guard-test-key")
    then = make_workspace(tmp_path / "then", records_in_memory=True)
    with EchoingApi(fixture_rows()) as api, clocks_at(morning(PAST)):
        launch.run_day(PAST, instance=then.instance, resources=real_api_resources(tmp_path / "then", api.url))
    ws = make_workspace(tmp_path / "now", records_in_memory=True)
    shutil.copytree(
        tmp_path / "then" / "data" / "raw" / PAST.isoformat(), tmp_path / "now" / "data" / "raw" / PAST.isoformat()
    )
    report = launch.run_day(PAST, instance=ws.instance, resources=_real_api_resources(tmp_path / "now"))
    assert report.success and report.failure is None
    with ws.connect() as conn:
        run = conn.execute("SELECT status, source, source_id, population FROM runs").fetchall()
    assert run == [("baseline", "archive", "apis.data.go.kr", len(fixture_rows()))]


def test_an_archive_of_the_emulator_is_never_replayed_as_the_real_apis(tmp_path):
    """Issue 30: after the demo, the real API's run of a demo day was accepted from the emulator's archive."""
    emulated = make_workspace(tmp_path / "then", records_in_memory=True)
    launch.run_day(PAST, instance=emulated.instance, resources=emulated.resources)
    ws = make_workspace(tmp_path / "now", records_in_memory=True)
    shutil.copytree(
        tmp_path / "then" / "data" / "raw" / PAST.isoformat(), tmp_path / "now" / "data" / "raw" / PAST.isoformat()
    )
    report = launch.run_day(PAST, instance=ws.instance, resources=_real_api_resources(tmp_path / "now"))
    assert report.failure is not None and report.failure.startswith("raw_pages: 원천이 다릅니다: "), report.failure
    assert "에뮬레이터(seed 20250101)의 기록이 있는데, 이번 수집의 원천은 식약처 Open API(apis.data.go.kr)입니다" in (
        report.failure
    )
    assert not (tmp_path / "now" / "data" / "dmf.duckdb").exists()  # nothing judged, nothing written


def test_real_api_without_a_key_is_one_line_naming_the_variable_and_env(tmp_path, monkeypatch):
    """The key is needed only for the real API; its absence is one clear line, not a config error."""
    ws = make_workspace(tmp_path, records_in_memory=True)
    monkeypatch.delenv("MFDS_SERVICE_KEY", raising=False)
    from dmf_assets.clock import today_kst

    result = launch.execute_day(
        launch.definitions_with(_real_api_resources(tmp_path)), ws.instance, today_kst().isoformat()
    )
    assert not result.success
    failure = launch.failure_of(result)
    assert failure.startswith("raw_pages: MFDS_SERVICE_KEY")
    assert ".env" in failure and "\n" not in failure
