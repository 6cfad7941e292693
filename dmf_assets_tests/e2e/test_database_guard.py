"""The history database is never silently replaced (issue 22): a file DuckDB cannot read is named as
corruption, a database that holds no day while earlier days' files exist is refused as lost — both with
the two ways out, `dmf restore` and `dmf rebuild` — a truly new project still starts, and a full disk
under the database is the README's one line, not "cannot rollback"."""

from __future__ import annotations

import errno
import hashlib
import os
import time
from datetime import date, datetime
from pathlib import Path

import pytest

from dmf_assets.clock import KST, frozen_at
from dmf_assets.storage import history
from dmf_assets.storage.db import (
    DatabaseDamaged,
    DatabaseDiskFull,
    HistoryMissing,
    HistoryTraces,
    open_database,
    replace_database,
)
from dmf_assets_tests.disk_support import fill_disk
from dmf_assets_tests.project_support import dmf, temp_project

DAY = date(2026, 10, 6)


def _history_db(path: Path) -> Path:
    """A database with a day of content: enough blocks that cutting the file in half loses some."""
    with open_database(path, purpose="test") as conn:
        conn.execute("INSERT INTO runs (day_id, status) VALUES (20261005, 'accepted')")
        conn.execute("CREATE TABLE filler AS SELECT range AS n, repeat('x', 200) AS text FROM range(100000)")
        conn.execute("CHECKPOINT")
    return path


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


DAMAGE = {
    "zero-length": lambda p: p.write_bytes(b""),
    "overwritten header": lambda p: p.write_bytes(b"garbage" * 1000 + p.read_bytes()[7000:]),
    "truncated": lambda p: os.truncate(p, p.stat().st_size // 2),
}


@pytest.mark.parametrize("kind", list(DAMAGE))
def test_a_damaged_file_is_named_as_corruption_with_the_ways_out(tmp_path, kind):
    database = _history_db(tmp_path / "dmf.duckdb")
    DAMAGE[kind](database)
    before = _sha(database)
    with pytest.raises(DatabaseDamaged) as damaged, open_database(database, purpose="test"):
        pass
    text = str(damaged.value)
    assert text.startswith(f"이력 DB 파일이 손상되었습니다 ({database}: ") and "corrupt" in text
    assert "`dmf restore`" in text and "`dmf rebuild`" in text and "Another program holds" not in text
    assert _sha(database) == before  # nothing written to it


def test_an_empty_or_missing_database_is_lost_only_when_earlier_days_left_files(tmp_path):
    traces = HistoryTraces(tmp_path / "raw", tmp_path / "events", tmp_path / "reports")
    database = tmp_path / "dmf.duckdb"
    with open_database(database, purpose="test", traces=traces) as conn:  # a truly new project starts as always
        assert history.run_row(conn, DAY) is None
    manifest = tmp_path / "raw" / "2026-10-06" / "manifest.json"
    manifest.parent.mkdir(parents=True)
    manifest.write_text("{}", encoding="utf-8")
    with open_database(database, purpose="test", traces=traces):
        pass  # archived minutes ago: a run in progress may still record it (the first days of a project at once)
    os.utime(manifest, (time.time() - 3600,) * 2)
    with open_database(database, purpose="test", traces=traces, writing=[DAY]):
        pass  # the day being run archived its pages before the database was first opened: no trace of a history
    (tmp_path / "events").mkdir()
    (tmp_path / "events" / "2026-10-05.jsonl").write_text("", encoding="utf-8")
    with (
        pytest.raises(
            HistoryMissing,
            match=r"^이력 DB에 기록된 날이 하나도 없는데 이전 날의 기록이 남아 있습니다 — DB .*, 기록: 이벤트 파일 1개",
        ),
        open_database(database, purpose="test", traces=traces, writing=[DAY]),
    ):
        pass
    database.unlink()
    with (
        pytest.raises(
            HistoryMissing,
            match=r"^이력 DB가 없는데 이전 날의 기록이 남아 있습니다 — DB .*, 기록: 원본 보관 1일\(2026-10-06 ~ 2026-10-06",
        ),
        open_database(database, purpose="test", traces=traces),
    ):
        pass
    assert not database.exists()  # refused before anything was created


def test_dmf_run_on_a_zero_length_database_is_one_line_naming_the_corruption(tmp_path):
    database = tmp_path / "data" / "dmf.duckdb"
    database.parent.mkdir(parents=True)
    database.write_bytes(b"")
    result = dmf(temp_project(tmp_path), "run", "--date", DAY.isoformat())
    assert result.returncode == 2, (result.stdout[-800:], result.stderr)
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("dmf: 이력 DB 파일이 손상되었습니다")
    assert "`dmf restore`" in result.stderr and "`dmf rebuild`" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "data" / "raw" / DAY.isoformat()).exists()  # refused before anything was fetched


def test_a_full_disk_under_the_database_is_the_readme_line(tmp_path, small_fs):
    database = small_fs / "dmf.duckdb"
    with open_database(database, purpose="test") as conn:
        conn.execute("CHECKPOINT")
    fill_disk(small_fs)
    with pytest.raises(DatabaseDiskFull) as full, open_database(database, purpose="test") as conn:
        # what a day's commit does: one transaction; its COMMIT cannot write the WAL
        history.transaction(
            conn,
            lambda: conn.execute(
                "INSERT INTO runs (day_id, status, reason) SELECT range, 'pending', repeat('x', 1000) FROM range(20000)"
            ),
        )
    assert full.value.errno == errno.ENOSPC and full.value.filename.startswith(str(database))
    assert str(full.value).startswith(f"디스크 공간이 부족합니다 (No space left on device): {database}")
    assert "cannot rollback" not in str(full.value)
    os.unlink(small_fs / "filler")
    with open_database(database, purpose="test") as conn:
        assert conn.execute("SELECT count(*) FROM runs").fetchone()[0] == 0  # rolled back, the file intact


def test_two_replacements_in_one_second_keep_both_files_they_replaced(tmp_path):
    """`dmf rebuild` twice within a second (a script, a fast machine): the second keeps what it replaced beside the
    first one's copy instead of failing on the name (it raised FileExistsError, a traceback)."""
    database = tmp_path / "dmf.duckdb"
    kept = []
    with frozen_at(datetime(2026, 12, 5, 22, 42, 35, tzinfo=KST)):
        for n in range(3):
            new = tmp_path / "dmf.duckdb.rebuild"
            new.write_bytes(f"version {n + 1}".encode())
            kept.append(replace_database(new, database, "rebuild"))
    assert kept[0] is None  # nothing to keep the first time
    assert [p.name for p in kept[1:]] == [
        "dmf.duckdb.before-rebuild-20261205-224235",
        "dmf.duckdb.before-rebuild-20261205-224235-2",
    ]
    assert [p.read_bytes() for p in kept[1:]] == [b"version 1", b"version 2"]
    assert database.read_bytes() == b"version 3"


def test_a_replacement_keeps_aside_the_wal_of_a_database_file_that_is_gone(tmp_path):
    """The database file was lost but its WAL stayed: `dmf restore` / `dmf rebuild` put the new file in place, and
    DuckDB replayed the old WAL onto it (the restored history came back empty, or would not open)."""
    database = tmp_path / "dmf.duckdb"
    with open_database(database, purpose="test") as conn:
        conn.execute("INSERT INTO runs (day_id, status) VALUES (20261201, 'pending')")
    new = tmp_path / "dmf.duckdb.restore"
    database.rename(new)  # a clean, closed database to put in place
    orphan = database.with_name("dmf.duckdb.wal")
    orphan.write_bytes(b"the WAL of a file that is gone")
    with frozen_at(datetime(2026, 12, 6, 9, 0, tzinfo=KST)):
        assert replace_database(new, database, "restore") is None  # no database file to keep
    assert not orphan.exists()
    assert (
        tmp_path / "dmf.duckdb.wal.before-restore-20261206-090000"
    ).read_bytes() == b"the WAL of a file that is gone"
    with open_database(database, purpose="test") as conn:
        assert conn.execute("SELECT day_id FROM runs").fetchall() == [(20261201,)]
