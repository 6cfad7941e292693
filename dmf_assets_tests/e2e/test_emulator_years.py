"""The built-in emulator holds a registry for its own years (2025–2030). Once today is past them, the README's
first command (`dmf demo`) runs the emulator's last days and says so, and `dmf run` of a day past them is refused in
one line naming the years, before anything is written. Before, each such day was rejected at gate 1 as a failing
source, with advice to wait for the source to recover — which never happens. In-process `dmf` on a temp project,
with the product's and Dagster's clocks set to 2031."""

from __future__ import annotations

from datetime import date, datetime

import pytest

from dmf_assets.cli import main as dmf_main
from dmf_assets.cli.runs import demo_end, outside_the_emulator
from dmf_assets.clock import KST
from dmf_assets.domain.model import DayStatus
from dmf_assets.emulator.registry import FIRST_DATE, LAST_DATE
from dmf_assets.storage.history import day_id
from dmf_assets_tests.graph_support import clocks_at
from dmf_assets_tests.project_support import read_rows, temp_project

AFTER = datetime(2031, 1, 5, 7, 0, tzinfo=KST)  # a Sunday morning, five days past the emulator's last day
SPAN = f"{FIRST_DATE} ~ {LAST_DATE}"


def test_the_demo_ends_on_the_emulators_last_day_once_today_is_past_it():
    assert demo_end(None, date(2031, 1, 5)) == (LAST_DATE, True)
    assert demo_end(None, date(2026, 12, 7)) == (date(2026, 12, 7), False)
    assert demo_end(date(2026, 10, 1), date(2031, 1, 5)) == (date(2026, 10, 1), False)  # asked for: kept
    assert outside_the_emulator(FIRST_DATE, LAST_DATE) is None
    assert SPAN in (outside_the_emulator(LAST_DATE, date(2031, 1, 1)) or "")
    assert (outside_the_emulator(date(2024, 12, 31), LAST_DATE) or "").startswith("2024-12-31: ")


@pytest.fixture
def project(tmp_path, monkeypatch):
    for name, value in temp_project(tmp_path).items():
        monkeypatch.setenv(name, value)
    return tmp_path


def test_a_run_past_the_emulators_years_is_refused_in_one_line_and_writes_nothing(project, capsys):
    with clocks_at(AFTER):
        code = dmf_main(["run", "--date", "2031-01-02"])
    err = capsys.readouterr().err
    assert code == 2, err
    (line,) = err.strip().splitlines()
    assert line.startswith("dmf: 2031-01-02: 내장 MFDS 에뮬레이터에는 ") and SPAN in line
    assert "회복" not in line and "Traceback" not in err
    assert not (project / "data" / "dmf.duckdb").exists() and not list((project / "data").rglob("*.json*"))


def test_the_demo_after_the_emulators_years_runs_its_last_day(project, capsys):
    with clocks_at(AFTER):
        code = dmf_main(["demo", "--days", "1", "--no-fault"])
    out = capsys.readouterr()
    assert code == 0, out.out[-2000:] + out.err[-2000:]
    assert f"기간 {LAST_DATE} ~ {LAST_DATE} (1일)" in out.out
    assert "오늘(2031-01-05)은 에뮬레이터의 목록 밖이라 그 마지막 날까지 실행합니다" in out.out
    runs = read_rows(project / "data" / "dmf.duckdb", "SELECT day_id, status FROM runs")
    assert runs == [(day_id(LAST_DATE), DayStatus.BASELINE.value)]
