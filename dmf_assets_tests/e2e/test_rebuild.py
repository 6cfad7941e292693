"""A history that can always be rebuilt (issue 22): the raw archives are the event log, the database is
derived from them. `dmf rebuild` replays every archived day in date order and ends with the same
history — every day's outcome and every event — as the one that was built day by day, out of order,
with a rejected day and a gap; a lost database is refused by every writer with one line naming
`dmf restore` and `dmf rebuild`, and `dmf doctor` fails on it until one of them is run."""

from __future__ import annotations

import shutil
from datetime import date, timedelta
from pathlib import Path

import duckdb
import pytest

from dmf_assets.clock import today_kst
from dmf_assets.defs.resources import build_resources
from dmf_assets.emulator._calendar import previous_business_day
from dmf_assets.errors import UserError
from dmf_assets.orchestration import pipeline
from dmf_assets.orchestration.rebuild import rebuild_history
from dmf_assets.runs import launch
from dmf_assets.settings import load_settings
from dmf_assets.storage import history
from dmf_assets.storage.db import open_database
from dmf_assets_tests.graph_support import make_workspace
from dmf_assets_tests.project_support import clean_environ, dmf, project_paths, read_rows, write_config

FIRST = date(2026, 9, 1)
DAYS = [FIRST + timedelta(days=i) for i in range(30)]
GAP = date(2026, 9, 12)  # never run: the day after compares across it
REJECTED = date(2026, 9, 20)  # the completeness gate refuses it (a page short of rows)
LATE = [date(2026, 9, 10), date(2026, 9, 11), date(2026, 9, 13)]  # committed after the days that follow them


def _contents(database: Path) -> history.HistoryContent:
    conn = duckdb.connect(str(database), read_only=True)
    try:
        return history.history_content(conn)
    finally:
        conn.close()


@pytest.fixture(scope="module")
def thirty_days(tmp_path_factory) -> Path:
    """30 days of history built day by day by the day pipeline (what every asset runs), fetching from the
    emulator and archiving each day: out of date order (three days committed late, re-deriving the days
    after them), one day rejected by gate 2, one day never run."""
    root = tmp_path_factory.mktemp("thirty_days")
    settings = load_settings()
    client = build_resources(settings, root=root, emulator_faults={REJECTED.isoformat(): "page_missing_rows"})["mfds"]
    order = [d for d in DAYS if d != GAP and d not in LATE]
    order = order[: order.index(date(2026, 9, 19)) + 1] + LATE + order[order.index(date(2026, 9, 19)) + 1 :]
    with open_database(root / "data" / "dmf.duckdb", purpose="test") as conn:
        for day in order:
            judged = pipeline.judge(conn, pipeline.normalize(pipeline.collect(client, day), settings), settings)
            if judged.passed:  # its withdrawals confirmed with the source, as snapshot_diff does
                pipeline.diff_and_commit(conn, judged, settings, recheck=client.recheck)
    return root


def test_rebuild_of_thirty_days_says_the_same_history(thirty_days, tmp_path):
    project = tmp_path / "project"
    shutil.copytree(thirty_days, project)
    database = project / "data" / "dmf.duckdb"
    original = _contents(database)
    assert set(original.outcomes) == set(DAYS) - {GAP}
    assert original.outcomes[REJECTED][:2] == ("rejected", 2)
    assert sum(sum(c.values()) for c in original.events.values()) > 30  # a real history, not an empty one

    result = rebuild_history(
        load_settings(), database=database, raw_dir=project / "data" / "raw", backups_dir=project / "data" / "backups"
    )
    assert [d.day for d in result.days] == sorted(set(DAYS) - {GAP})  # date order, the gap stays a gap
    assert result.compared and result.differences == []
    rebuilt = _contents(database)
    assert rebuilt == original  # every outcome, every event with its changes — nothing more, nothing less
    assert rebuilt.outcomes[REJECTED][:2] == ("rejected", 2)  # rejected again, by the same gate
    assert _contents(result.kept_aside) == original  # the replaced file is kept beside the new one
    assert not list(database.parent.glob("dmf.duckdb.rebuild*"))  # no working file left behind


def test_a_rebuild_that_would_change_the_history_replaces_nothing_unless_forced(thirty_days, tmp_path):
    project = tmp_path / "project"
    shutil.copytree(thirty_days, project)
    database = project / "data" / "dmf.duckdb"
    before = database.read_bytes()
    settings, raw = load_settings(), project / "data" / "raw"
    # the archives from 28 September only: the days before it are not rebuilt, and 28 September becomes a baseline
    with pytest.raises(
        UserError,
        match=r"다시 만든 이력이 지금 DB와 27일 다릅니다: 2026-09-01: 원래 이력\(기준일\)에만 있음 — "
        r"다시 만든 범위\(2026-09-28 ~ 2026-09-30\) 밖입니다",
    ):
        rebuild_history(
            settings, database=database, raw_dir=raw, backups_dir=project / "data" / "backups", first=date(2026, 9, 28)
        )
    assert database.read_bytes() == before  # untouched

    forced = rebuild_history(
        settings,
        database=database,
        raw_dir=raw,
        backups_dir=project / "data" / "backups",
        first=date(2026, 9, 28),
        force=True,
    )
    assert forced.differences and not forced.compared
    assert min(_contents(database).outcomes) == date(2026, 9, 28)
    assert forced.kept_aside.read_bytes() == before


def test_restore_puts_back_the_newest_backup_that_reads(thirty_days, tmp_path, capsys):
    from dmf_assets import cli
    from dmf_assets.ops.backup import backup_database

    database, backups = tmp_path / "data" / "dmf.duckdb", tmp_path / "data" / "backups"
    database.parent.mkdir()
    shutil.copyfile(thirty_days / "data" / "dmf.duckdb", database)
    original = _contents(database)
    backup_database(database, backups)
    (backups / "dmf-2099-01-01-000000.duckdb").write_bytes(b"not a database")  # newer, and damaged
    database.write_bytes(b"")  # the history database lost its content

    assert cli.main(["restore", "--root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "건너뜀 / skipped dmf-2099-01-01-000000.duckdb: 사본이 열리지 않습니다" in out
    assert "복원 완료 / restored" in out and "실행 기록 29일, 마지막 반영일 2026-09-30" in out
    assert _contents(database) == original
    aside = next(database.parent.glob("dmf.duckdb.before-restore-*"))
    assert aside.read_bytes() == b"" and str(aside) in out  # the replaced file is kept, and said where


# --- the real commands ---------------------------------------------------------------------------------


def _cli_env(root: Path) -> dict:
    """The CLI pointed at the workspace's folders (the layout build_resources gives a project root)."""
    config = write_config(root / "dmf.toml", project_paths(root))
    return {**clean_environ(), "DMF_CONFIG": str(config), "DAGSTER_HOME": str(root / "dagster_home")}


def _keys_types_severities(database: Path) -> list[tuple]:
    return read_rows(database, "SELECT day_id, dmf_key, event_type, severity FROM events ORDER BY ALL")


def test_a_lost_database_is_refused_by_every_run_and_rebuilt_from_the_archives(tmp_path):
    """The issue's must-show: a backfill, `rm data/dmf.duckdb`, then `dmf run` → exit 2 with one line and no
    database created; the Dagster-launched run fails the same way; `dmf doctor` FAILs; `dmf rebuild` → exit 0
    and the same events (key, type, severity); `dmf doctor` → exit 0."""
    today = today_kst()
    # recent, so the doctor finds the history fresh; ending on a business day, since the emulator's registry (as
    # MFDS's) changes only on those: on a Monday, Friday–Saturday–Sunday would hold no event to compare
    last = previous_business_day(today - timedelta(days=1))
    days = [last - timedelta(days=n) for n in (2, 1, 0)]
    ws = make_workspace(tmp_path, records_in_memory=True)
    assert all(r.success for r in launch.run_days(days, instance=ws.instance, resources=ws.resources))
    events = _keys_types_severities(ws.database)
    assert events, "the backfill recorded no event to compare"
    env = _cli_env(tmp_path)

    ws.database.unlink()
    refused = dmf(env, "run", "--date", today.isoformat())
    assert refused.returncode == 2, (refused.stdout[-800:], refused.stderr)
    assert refused.stderr.count("\n") == 1 and refused.stderr.startswith(
        "dmf: 이력 DB가 없는데 이전 날의 기록이 남아 있습니다"
    )
    assert f"DB {ws.database}, 기록: 이벤트 파일 3개" in refused.stderr and "리포트 4개" in refused.stderr
    assert "`dmf restore`" in refused.stderr and "`dmf rebuild`" in refused.stderr and "Traceback" not in refused.stderr
    assert not ws.database.exists()
    # a run launched by Dagster (the schedule, the UI, `dagster asset materialize`) is refused by the same guard
    run = launch.execute_day(launch.definitions_with(ws.resources), ws.instance, today.isoformat())
    assert not run.success and "`dmf rebuild`" in launch.failure_of(run) and not ws.database.exists()
    doctor = dmf(env, "doctor")
    assert doctor.returncode == 2 and "DB 파일이 없는데" in doctor.stdout and "`dmf rebuild`" in doctor.stdout

    rebuilt = dmf(env, "rebuild")
    assert rebuilt.returncode == 0, (rebuilt.stdout, rebuilt.stderr)
    assert "Dagster의 실행 기록·리포트·이벤트 파일은 그대로입니다" in rebuilt.stdout
    # the backfilled days say what they said; today was archived by the refused Dagster run's raw_pages, so
    # it is replayed too (its run would have committed it, had the database been there)
    assert [e for e in _keys_types_severities(ws.database) if e[0] < history.day_id(today)] == events
    assert f"  {today}  반영" in rebuilt.stdout
    healthy = dmf(env, "doctor")
    assert healthy.returncode == 0, healthy.stdout
