"""Retention (`dmf prune`): old raw archives, staging, workbooks, backups and logs go; the last accepted
day's data never does — even when it is older than every window (after a long outage)."""

from __future__ import annotations

import os
import time
from datetime import date, timedelta
from pathlib import Path

import pytest

from dmf_assets import cli
from dmf_assets.ops.common import project_paths
from dmf_assets.ops.retention import prune, prune_backups
from dmf_assets.report.retention import LATEST_NAME, dated_workbook_name
from dmf_assets.settings import Retention, load_settings
from dmf_assets.source.archive import DayArchive
from dmf_assets_tests.retention_support import NOW, aged_file, make_history, raw_day

TODAY = date(2026, 10, 8)
RETENTION = Retention(raw_days=180, reports_days=365, backups_days=30, logs_days=90, staging_days=14)


def _layout(root: Path, days: list[date]) -> dict[str, Path]:
    """Raw, staging and workbook files for `days`, plus the odd files a real raw_dir holds."""
    raw = root / "data" / "raw"
    paths: dict[str, Path] = {}
    for d in days:
        paths[f"raw {d}"] = raw_day(root, d)
        paths[f"lock {d}"] = aged_file(raw / f".{d}.lock", 0)
        paths[f"requests {d}"] = aged_file(raw / "_requests" / f"{d}.json", 30)
        staged = aged_file(root / "data" / "staging" / d.isoformat() / "normalized.parquet", 500)
        os.utime(staged, (time.time() - 7 * 86400,) * 2)  # written long ago (recent = a backfill using it)
        paths[f"staging {d}"] = staged.parent
        paths[f"report {d}"] = aged_file(root / "reports" / dated_workbook_name(d), 2000)
    paths["latest"] = aged_file(root / "reports" / LATEST_NAME, 2000)
    paths["partial old"] = aged_file(raw / f".{days[0]}.partial" / "page-0001.json.gz", 10).parent
    paths["requests lock"] = aged_file(raw / "_requests" / ".lock", 0)
    paths["stranger"] = aged_file(raw / "notes.txt", 10)
    paths["bad date dir"] = aged_file(raw / "2025-13-01" / "x", 10).parent
    return paths


def _paths(root: Path):
    return project_paths(load_settings(), root)


def test_outage_keeps_the_last_accepted_day_and_everything_after(tmp_path):
    last = date(2025, 9, 1)  # 402 days ago: older than the raw (180) and workbook (365) windows
    older, after = date(2025, 8, 1), date(2025, 10, 1)
    make_history(
        tmp_path, {older: "baseline", last: "accepted", after: "rejected", TODAY - timedelta(days=1): "rejected"}
    )
    files = _layout(tmp_path, [older, last, after])

    dry = prune(_paths(tmp_path), RETENTION, now=NOW, dry_run=True)
    assert all(p.exists() for p in files.values())  # a dry run deletes nothing
    report = prune(_paths(tmp_path), RETENTION, now=NOW)

    assert report.last_accepted == last
    gone = {
        files[k]
        for k in (
            f"raw {older}",
            f"lock {older}",
            f"requests {older}",
            f"staging {older}",
            f"report {older}",
            "partial old",
        )
    }
    assert {r.path for r in report.removed} == gone
    assert {(r.kind, r.path) for r in dry.removed} == {(r.kind, r.path) for r in report.removed}
    for key, path in files.items():
        assert path.exists() == (path not in gone), key
    assert (tmp_path / "data" / "raw" / last.isoformat() / "manifest.json").exists()
    sizes = {r.path: r.bytes for r in report.removed}
    assert sizes[files[f"raw {older}"]] == 2 * 1000 + 50 and sizes[files[f"report {older}"]] == 2000
    assert any("last accepted day kept" in n for n in report.notes)


def test_normal_windows_cut_at_their_exact_day(tmp_path):
    make_history(tmp_path, {TODAY - timedelta(days=1): "accepted"})
    raw_edge = [TODAY - timedelta(days=181), TODAY - timedelta(days=180)]
    staging_edge = [TODAY - timedelta(days=15), TODAY - timedelta(days=14)]
    report_edge = [TODAY - timedelta(days=366), TODAY - timedelta(days=365)]
    files = _layout(tmp_path, sorted({*raw_edge, *staging_edge, *report_edge, TODAY - timedelta(days=1)}))
    report = prune(_paths(tmp_path), RETENTION, now=NOW)
    removed = {r.path for r in report.removed}
    raw_gone = {d for d in (*raw_edge, *report_edge) if d < raw_edge[1]}
    for d in raw_gone:
        assert files[f"raw {d}"] in removed and files[f"lock {d}"] in removed
    assert files[f"raw {raw_edge[1]}"].exists() and files[f"lock {raw_edge[1]}"].exists()
    assert not files[f"staging {staging_edge[0]}"].exists() and files[f"staging {staging_edge[1]}"].exists()
    assert not files[f"report {report_edge[0]}"].exists() and files[f"report {report_edge[1]}"].exists()
    assert files["latest"].exists() and files["stranger"].exists() and files["bad date dir"].exists()
    assert files["requests lock"].exists()
    assert {r.kind for r in report.removed} == {"raw", "staging", "report"}


def test_a_running_fetch_keeps_its_day(tmp_path):
    make_history(tmp_path, {TODAY: "accepted"})
    old = TODAY - timedelta(days=200)
    folder = raw_day(tmp_path, old)
    with DayArchive(tmp_path / "data" / "raw", old).locked():
        report = prune(_paths(tmp_path), RETENTION, now=NOW)
    assert folder.exists() and any("fetch in progress" in n for n in report.notes)
    report = prune(_paths(tmp_path), RETENTION, now=NOW)
    assert not folder.exists() and not (tmp_path / "data" / "raw" / f".{old}.lock").exists()


def test_staging_written_just_now_is_in_use(tmp_path):
    make_history(tmp_path, {TODAY: "accepted"})
    old = TODAY - timedelta(days=100)
    in_use = aged_file(tmp_path / "data" / "staging" / old.isoformat() / "items.parquet", 10).parent
    report = prune(_paths(tmp_path), RETENTION, now=NOW)
    assert in_use.exists() and not report.removed
    assert any("staging not pruned this time" in n for n in report.notes)
    os.utime(in_use / "items.parquet", (time.time() - 7 * 3600,) * 2)
    report = prune(_paths(tmp_path), RETENTION, now=NOW)
    assert [r.path for r in report.removed] == [in_use] and not in_use.exists()


@pytest.mark.parametrize("damage", ["missing", "garbage"])
def test_unreadable_database_prunes_nothing_day_bound(tmp_path, damage):
    db = tmp_path / "data" / "dmf.duckdb"
    if damage == "garbage":
        aged_file(db, 50_000)
    old = TODAY - timedelta(days=400)
    files = _layout(tmp_path, [old])
    old_log = aged_file(tmp_path / "data" / "logs" / "dmf.log", 10, age_days=100)
    report = prune(_paths(tmp_path), RETENTION, now=NOW)
    assert report.last_accepted is None
    assert all(p.exists() for p in files.values())
    assert {r.path for r in report.removed} == {old_log}  # logs are not day data: still pruned
    note = next(n for n in report.notes if "not pruned" in n)
    assert ("no database" if damage == "missing" else "database unreadable") in note


def test_backups_keep_the_newest_and_only_touch_backup_names(tmp_path):
    folder = tmp_path / "backups"
    names = {
        "dmf-2026-08-01-053000.duckdb": True,  # 68 days
        "dmf-2026-09-07-053000.duckdb": True,  # 31 days
        "dmf-before-migration-0002-20260801-120000.duckdb": True,
        "dmf-2026-09-09-053000.duckdb": False,  # 29 days
        "dmf-2026-10-08-053000.duckdb": False,
        "notes.duckdb": False,
        "dmf-2026-08-01-053000.duckdb.bak": False,
    }
    for name in names:
        aged_file(folder / name, 10)
    stale_tmp = aged_file(folder / ".dmf-2026-09-01-053000.duckdb.tmp", 10)
    os.utime(stale_tmp, (time.time() - 3 * 86400,) * 2)
    fresh_tmp = aged_file(folder / ".dmf-2026-10-08-053001.duckdb.tmp", 10)
    removed = {r.path.name for r in prune_backups(folder, 30, NOW)}
    assert removed == {n for n, gone in names.items() if gone} | {stale_tmp.name}
    assert fresh_tmp.exists()

    # all old: the newest stays anyway
    only_old = tmp_path / "only_old"
    for name in ("dmf-2025-01-01-053000.duckdb", "dmf-2025-01-02-053000.duckdb"):
        aged_file(only_old / name, 10)
    assert [r.path.name for r in prune_backups(only_old, 30, NOW)] == ["dmf-2025-01-01-053000.duckdb"]
    assert (only_old / "dmf-2025-01-02-053000.duckdb").exists()


def test_logs_and_dagster_compute_logs(tmp_path):
    make_history(tmp_path, {TODAY: "accepted"})
    logs = tmp_path / "data" / "logs"
    old_log, new_log = aged_file(logs / "a" / "old.log", 10, age_days=91), aged_file(logs / "new.log", 10, age_days=89)
    storage = tmp_path / "dagster_home" / "storage"
    old_run = "0b1c2d3e-1111-2222-3333-444455556666"
    new_run = "0b1c2d3e-1111-2222-3333-777788889999"
    aged_file(storage / old_run / "compute_logs" / "abc.err", 10, age_days=120)
    aged_file(storage / new_run / "compute_logs" / "abc.err", 10, age_days=120)
    aged_file(storage / new_run / "compute_logs" / "def.err", 10, age_days=1)  # the run still logs
    not_a_run = aged_file(storage / "assets" / "x", 10, age_days=500)
    report = prune(_paths(tmp_path), RETENTION, now=NOW)
    assert {(r.kind, r.path) for r in report.removed} == {("log", old_log), ("dagster_log", storage / old_run)}
    assert new_log.exists() and not (logs / "a").exists() and (storage / new_run).exists() and not_a_run.exists()


def test_a_logs_dir_holding_data_is_not_swept(tmp_path):
    """Old log files go by age alone: a logs_dir that holds the database, the archives or the backups (the settings
    refuse one; a root given to `dmf prune` can still make one) is left alone, and the report says why."""
    from dataclasses import replace

    make_history(tmp_path, {TODAY: "accepted"})
    old_day = raw_day(tmp_path, TODAY)  # the last accepted day's archive
    for path in (tmp_path / "data" / "dmf.duckdb", old_day):
        for f in [path, *path.rglob("*")]:
            os.utime(f, (NOW.timestamp() - 400 * 86400,) * 2)
    paths = replace(_paths(tmp_path), logs_dir=tmp_path / "data")
    report = prune(paths, RETENTION, now=NOW)
    assert not [r for r in report.removed if r.kind == "log"]
    assert (tmp_path / "data" / "dmf.duckdb").exists() and old_day.exists()
    assert any(
        n.startswith("로그는 정리하지 않았습니다") and n.endswith(f"logs_dir holds {paths.database}")
        for n in report.notes
    )


def test_prune_command(tmp_path, capsys):
    make_history(tmp_path, {TODAY - timedelta(days=1): "accepted"})
    old = raw_day(tmp_path, TODAY - timedelta(days=200))
    assert cli.main(["prune", "--root", str(tmp_path), "--today", TODAY.isoformat(), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "삭제 예정 (dry run): [raw]" in out and str(old) in out and old.exists()
    assert "last accepted day 2026-10-07" in out
    assert cli.main(["prune", "--root", str(tmp_path), "--today", TODAY.isoformat()]) == 0
    out = capsys.readouterr().out
    assert f"삭제함: [raw] {old} (2.0 KB)" in out and not old.exists()


def test_doctor_says_when_prune_removes_a_leaked_temporary_file(tmp_path):
    """`dmf doctor` notices a crashed writer's temporary file after an hour; `dmf prune` removes it only after a day
    (a slow writer may still own a younger one). Doctor's line said prune removes it — even when prune would not."""
    from dmf_assets.ops.doctor import _temp_files_check
    from dmf_assets.ops.retention import prune_temp_files

    paths = project_paths(load_settings(), tmp_path)
    leak = paths.reports_dir / ".DMF_리포트_2026-12-01.xlsx.tmp"
    leak.parent.mkdir(parents=True)
    leak.write_bytes(b"x" * 1000)
    for hours_old, pruned in ((3, False), (25, True)):
        os.utime(leak, (time.time() - hours_old * 3600,) * 2)
        check = _temp_files_check(paths)
        assert check.status == "WARN" and str(leak) in check.message_ko
        assert check.message_ko.endswith("`dmf prune`이 만든 지 24시간이 지난 것을 지웁니다"), check.message_ko
        assert check.message_en.endswith("`dmf prune` removes them once 24 hours old")
        removed = prune_temp_files(paths.written_folders, dry_run=True)
        assert [r.path for r in removed] == ([leak] if pruned else []), hours_old


def test_prune_reads_the_settings_the_projects_env_names(tmp_path, monkeypatch, capsys):
    """A DMF_CONFIG kept in the project's .env (the services' EnvironmentFile) was read by `dmf run` and `doctor`
    but not by `prune`, `backup` or the analysts' commands: from a shell they acted on other settings."""
    monkeypatch.delenv("DMF_CONFIG", raising=False)  # and put back as it was: .env sets it in this process
    make_history(tmp_path, {TODAY: "accepted"})
    old = raw_day(tmp_path, TODAY - timedelta(days=10))  # kept by the default 180 days, not by 5
    (tmp_path / "short.toml").write_text("[retention]\nraw_days = 5\n", encoding="utf-8")
    (tmp_path / ".env").write_text(f"DMF_CONFIG={tmp_path / 'short.toml'}\n", encoding="utf-8")
    assert cli.main(["prune", "--root", str(tmp_path), "--today", TODAY.isoformat(), "--dry-run"]) == 0
    assert f"삭제 예정 (dry run): [raw] {old}" in capsys.readouterr().out


def test_two_backups_of_one_second_are_ordered_as_they_were_taken(tmp_path):
    """The second backup of a second is named `…-053000-2.duckdb`; by name it sorted before the first, so restore
    and prune took the older copy for the newest."""
    from dmf_assets.ops.backup import list_backups

    for name in ("dmf-2026-10-08-053000-2.duckdb", "dmf-2026-10-08-053000.duckdb", "dmf-2026-10-08-053000-10.duckdb"):
        aged_file(tmp_path / name, 10)
    assert [b.path.name for b in list_backups(tmp_path)] == [
        "dmf-2026-10-08-053000.duckdb",
        "dmf-2026-10-08-053000-2.duckdb",
        "dmf-2026-10-08-053000-10.duckdb",
    ]
