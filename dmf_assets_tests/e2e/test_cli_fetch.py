"""`dmf fetch` takes the days `dmf run` takes and reads .env as the other commands do; `dmf rebuild` is not
stopped by an archive of a day no run can be for (issue 34, "smaller"; issue 30 item 5)."""

from __future__ import annotations

import shutil
from datetime import date

import pytest

from dmf_assets import settings as settings_module
from dmf_assets.cli import main as dmf_main
from dmf_assets.orchestration.rebuild import rebuild_history
from dmf_assets.runs import launch
from dmf_assets.settings import load_settings
from dmf_assets.source.endpoint import SERVICE_BASE_PATH
from dmf_assets_tests.client_support import fixture_rows
from dmf_assets_tests.graph_support import make_workspace
from dmf_assets_tests.real_api_support import EchoingApi


@pytest.mark.parametrize("day", ["2999-12-31", "1900-01-01", "2024-12-31"])
def test_fetch_refuses_the_days_run_refuses_and_archives_nothing(tmp_path, capsys, day):
    raw = tmp_path / "raw"
    assert dmf_main(["fetch", "--date", day, "--raw-dir", str(raw)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"dmf: {day}: 실행할 수 있는 날짜가 아닙니다 — 2025-01-01 ~ ") and err.count("\n") == 1
    assert not raw.exists() or not any(raw.iterdir())
    assert dmf_main(["run", "--date", day]) == 2
    assert "실행할 수 있는 날짜가 아닙니다" in capsys.readouterr().err  # the same words as dmf run


def test_fetch_reads_the_key_from_dot_env(tmp_path, monkeypatch, capsys):
    """`dmf fetch` said the key was missing while .env held it; the server here insists on that key."""
    key = "DotEnv+Key/Only==abcdefgh12345678"
    (tmp_path / ".env").write_text(f"MFDS_SERVICE_KEY={key}\n", encoding="utf-8")
    monkeypatch.setattr(settings_module, "PROJECT_ROOT", tmp_path)  # a project of its own, with its .env
    monkeypatch.setenv("MFDS_SERVICE_KEY", "placeholder")  # so that the variable .env sets is undone afterwards
    monkeypatch.delenv("MFDS_SERVICE_KEY")
    with EchoingApi(fixture_rows(), service_key=key) as api:
        code = dmf_main(["fetch", "--base-url", api.url + SERVICE_BASE_PATH, "--raw-dir", str(tmp_path / "raw")])
    out = capsys.readouterr().out
    assert code == 0 and "— complete" in out, out


def test_rebuild_is_not_stopped_by_an_archive_of_a_day_no_run_can_be_for(tmp_path, capsys):
    """An earlier `dmf fetch --date 2999-12-31` left an archive: the rebuild refused until --force."""
    ws = make_workspace(tmp_path, records_in_memory=True)  # the rebuild reads the archives, not the runs
    days = [date(2026, 10, 5), date(2026, 10, 6)]
    launch.run_days(days, instance=ws.instance, resources=ws.resources, run_config=launch.QUIET)
    raw = tmp_path / "data" / "raw"
    shutil.copytree(raw / "2026-10-06", raw / "2999-12-31")
    result = rebuild_history(
        load_settings(), database=ws.database, raw_dir=raw, backups_dir=tmp_path / "data" / "backups"
    )
    assert [d.day for d in result.days] == days
    assert result.compared and result.differences == []
