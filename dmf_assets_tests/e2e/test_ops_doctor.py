"""`dmf doctor` and `dmf backup` on a real history: three emulator days through the real Dagster graph,
then the database damaged in the ways that matter (bytes, references, days, schema, staleness, lock)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import shutil
import subprocess
import sys
from datetime import date, datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from dmf_assets import cli
from dmf_assets.clock import KST, frozen_at
from dmf_assets.ops.backup import BackupError, backup_database, backup_time, list_backups
from dmf_assets.ops.common import project_paths, table_counts
from dmf_assets.ops.doctor import FAIL, OK, WARN, Thresholds, run_doctor
from dmf_assets.runs import launch
from dmf_assets.settings import PROJECT_ROOT, load_settings
from dmf_assets.storage.db import migrations, open_database
from dmf_assets_tests.graph_support import make_workspace

DAYS = [date(2026, 10, 5) + timedelta(days=i) for i in range(3)]
LAST = DAYS[-1]

HOLDER = """
import sys, time
from dmf_assets.storage.db import open_database
with open_database(sys.argv[1], purpose="test holder"):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


@contextlib.contextmanager
def lock_held(database: Path, seconds: float):
    """Another process holding the history database (as a running day would)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(database), str(seconds)], stdout=subprocess.PIPE, text=True, cwd=PROJECT_ROOT
    )
    try:
        assert proc.stdout.readline().strip() == "held"
        yield proc
    finally:
        try:
            proc.wait(timeout=seconds + 30)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.stdout.close()


@pytest.fixture(scope="module")
def healthy(tmp_path_factory):
    ws = make_workspace(tmp_path_factory.mktemp("ops_doctor"))
    reports = launch.run_days(DAYS, instance=ws.instance, resources=ws.resources)
    assert all(r.success for r in reports), reports
    return ws


def _at(day: date) -> datetime:
    return datetime.combine(day, datetime.min.time().replace(hour=10), tzinfo=KST)


def _paths(ws, database: Path | None = None):
    return project_paths(load_settings(), ws.root, database=database)


def _copy_db(ws, tmp_path: Path) -> Path:
    target = tmp_path / "copy.duckdb"
    shutil.copyfile(ws.database, target)
    return target


def _doctor_cli(capsys, *args: str) -> tuple[int, str, str]:
    rc = cli.main(["doctor", *args])
    out, err = capsys.readouterr()
    return rc, out, err


# --- healthy ---------------------------------------------------------------------------------------


def test_healthy_demo_database_exits_0(healthy, capsys):
    report = run_doctor(_paths(healthy), now=_at(LAST))
    status = {c.name: c.status for c in report.checks}
    assert status == {
        "database": OK,
        "schema": OK,
        "references": OK,
        "days": OK,
        "unfinished": OK,
        "source": OK,
        "freshness": OK,
        "writable": OK,
        "clock": OK,
        "lock": OK,
        "backup": WARN,
        "disk": OK,
        "temp_files": OK,
        "sizes": OK,  # no backup taken yet: a warning, not a failure
    }, report.table()
    counts = report.check("database").details["tables"]
    with open_database(healthy.database, purpose="test") as conn:
        assert counts == table_counts(conn)
        assert (
            counts["runs"] == 3
            and counts["snapshots"] == conn.execute("SELECT sum(population) FROM runs").fetchone()[0]
        )
    assert report.check("freshness").details == {
        "last_accepted": "2026-10-07",
        "age_days": 0,
        "today": "2026-10-07",
        "latest_run": {"day": "2026-10-07", "status": "accepted"},
    }
    sizes = report.check("sizes").details
    assert (
        sizes["raw_days"] == 3
        and sizes["workbooks"] == 3
        and sizes["bytes"]["database"] == healthy.database.stat().st_size
    )
    assert report.exit_code() == 0 and report.exit_code(strict=True) == 1

    rc, out, err = _doctor_cli(capsys, "--root", str(healthy.root), "--today", LAST.isoformat())
    assert rc == 0 and err == ""
    # the CLI adds the delivery check: no channel is configured here, which it says (a WARN)
    assert "결과 / result: OK 13 · WARN 2 · FAIL 0" in out and "references" in out
    assert "알림 채널이 설정되지 않았습니다" in out


def test_real_command_prints_json(healthy):
    proc = subprocess.run(
        [
            str(PROJECT_ROOT / ".venv" / "bin" / "dmf"),
            "doctor",
            "--root",
            str(healthy.root),
            "--json",
            "--today",
            (LAST + timedelta(days=1)).isoformat(),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["status"] == WARN and data["exit_code"] == 0
    fresh = next(c for c in data["checks"] if c["name"] == "freshness")
    assert fresh["status"] == OK and fresh["details"]["age_days"] == 1


# --- damaged ---------------------------------------------------------------------------------------


def _data_block_offset(database: Path, table: str) -> int:
    """A file offset inside a block that holds `table`'s rows (damage in unused space changes no data,
    so it is not what we want to detect). DuckDB files: three 4 KiB headers, then fixed-size blocks."""
    conn = duckdb.connect(str(database), read_only=True)
    try:
        block_size = conn.execute("SELECT block_size FROM pragma_database_size()").fetchone()[0]
        block = conn.execute(
            "SELECT max(block_id) FROM pragma_storage_info(?) WHERE block_id >= 0", [table]
        ).fetchone()[0]
    finally:
        conn.close()
    return 3 * 4096 + block * block_size + 1024


@pytest.mark.parametrize("where", ["header", "middle"])
def test_overwritten_bytes_fail_cleanly(healthy, tmp_path, capsys, where):
    copy = _copy_db(healthy, tmp_path)
    offset = 8 if where == "header" else _data_block_offset(copy, "snapshots")
    with open(copy, "r+b") as fh:
        fh.seek(offset)
        fh.write(b"\xde\xad\xbe\xef" * 16)
    rc, out, err = _doctor_cli(
        capsys, "--root", str(healthy.root), "--database", str(copy), "--today", LAST.isoformat()
    )
    assert rc == 2
    assert "Traceback" not in out + err
    line = next(ln for ln in out.splitlines() if "DB 파일 / database" in ln)
    assert line.split()[0] == FAIL
    expected = "not a valid DuckDB database file" if where == "header" else "checksum"
    assert expected in line and "손상" in line and "`dmf restore`" in line and "`dmf rebuild`" in line


#: SQL damage -> the checks that must FAIL (and no other) -> phrases their English lines must contain
MUTATIONS = {
    "orphan_snapshot": (
        ["INSERT INTO snapshots VALUES (20261007, 999999, 999999)"],
        {"references", "days"},
        [
            "snapshot rows without a record: 1 (e.g. 20261007)",
            "snapshot rows without a version: 1",
            "snapshot rows differ from runs.population: 1 (e.g. 20261007)",
        ],
    ),
    "accepted_without_snapshot": (
        ["DELETE FROM snapshots WHERE day_id = 20261006"],
        {"days"},
        ["accepted days without snapshot rows: 1 (e.g. 20261006)"],
    ),
    "rejected_with_history": (
        ["UPDATE runs SET status = 'rejected', rejected_gate = 2 WHERE day_id = 20261006"],
        {"days"},
        [
            "rejected days with snapshot or event rows: 1 (e.g. 20261006)",
            "snapshot rows for days not accepted: 1 (e.g. 20261006)",
        ],
    ),
    "duplicate_snapshot_and_event": (
        [
            "INSERT INTO snapshots SELECT * FROM snapshots WHERE day_id = 20261005 LIMIT 2",
            "INSERT INTO events SELECT * FROM events LIMIT 1",
        ],
        {"references", "days"},
        [
            "duplicate (day_id, record_id) in snapshots: 2 (e.g. 20261005)",
            "duplicate event ids: 1",
            "snapshot rows differ from runs.population: 1 (e.g. 20261005)",
        ],
    ),
    "orphan_change": (
        ["INSERT INTO event_changes VALUES (123, 20261007, 'ingredient', 'a', 'b', false, 'HIGH')"],
        {"references"},
        ["event_changes without an event: 1 (e.g. 123)"],
    ),
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_inconsistent_history_fails_naming_the_problem(healthy, tmp_path, name):
    statements, failing, phrases = MUTATIONS[name]
    copy = _copy_db(healthy, tmp_path)
    with open_database(copy, purpose="test") as conn:
        for sql in statements:
            conn.execute(sql)
    report = run_doctor(_paths(healthy, copy), now=_at(LAST))
    assert {c.name for c in report.checks if c.status == FAIL} == failing, report.table()
    assert report.exit_code() == 2
    said = " | ".join(report.check(name).message_en for name in failing)
    for phrase in phrases:
        assert phrase in said, said


def test_a_day_judged_but_never_committed_is_unfinished(healthy, tmp_path):
    # integrity_verdict judged 2026-10-07 again at 08:00, and snapshot_diff never committed that judgement
    copy = _copy_db(healthy, tmp_path)
    with open_database(copy, purpose="test") as conn:
        conn.execute(
            "UPDATE runs SET judged_at = TIMESTAMP '2026-10-07 08:00:00', "
            "committed_at = TIMESTAMP '2026-10-07 07:00:00' WHERE day_id = 20261007"
        )
    while_running = run_doctor(_paths(healthy, copy), now=datetime(2026, 10, 7, 8, 10, tzinfo=KST))
    assert while_running.check("unfinished").status == WARN  # its run may be between the two steps
    stopped = run_doctor(_paths(healthy, copy), now=_at(LAST)).check("unfinished")
    assert stopped.status == FAIL and stopped.details["days"] == ["2026-10-07"], stopped
    assert "raw_pages부터 다시 실행" in stopped.message_ko and "120분 전" in stopped.message_ko


def test_edited_migration_checksum_fails(healthy, tmp_path):
    copy = _copy_db(healthy, tmp_path)
    with open_database(copy, purpose="test") as conn:
        conn.execute("UPDATE schema_migrations SET checksum = 'edited' WHERE version = 1")
    report = run_doctor(_paths(healthy, copy), now=_at(LAST))
    schema = report.check("schema")
    assert schema.status == FAIL and report.exit_code() == 2
    assert "0001_history.sql was edited after it was applied" in schema.message_en
    assert schema.details["problems"] and schema.details["applied"] == [m.version for m in migrations()]


def test_pending_migration_is_a_warning(healthy, tmp_path):
    copy = _copy_db(healthy, tmp_path)
    with open_database(copy, purpose="test") as conn:
        conn.execute("DELETE FROM schema_migrations")
    report = run_doctor(_paths(healthy, copy), now=_at(LAST))
    assert report.check("schema").status == WARN
    assert report.check("schema").details["pending"] == [m.version for m in migrations()]
    assert report.exit_code() == 0 and report.exit_code(strict=True) == 1


@pytest.mark.parametrize("age,status,code", [(1, OK, 0), (2, WARN, 0), (3, WARN, 0), (5, FAIL, 2)])
def test_staleness(healthy, capsys, age, status, code):
    rc, out, _ = _doctor_cli(
        capsys, "--root", str(healthy.root), "--today", (LAST + timedelta(days=age)).isoformat(), "--json"
    )
    data = json.loads(out)
    fresh = next(c for c in data["checks"] if c["name"] == "freshness")
    assert (fresh["status"], fresh["details"]["age_days"], rc) == (status, age, code)
    if status == FAIL:
        assert "older than 3 day(s)" in fresh["message_en"]


def test_stale_thresholds_are_flags(healthy, capsys):
    rc, out, _ = _doctor_cli(
        capsys,
        "--root",
        str(healthy.root),
        "--today",
        (LAST + timedelta(days=5)).isoformat(),
        "--stale-warn-days",
        "7",
        "--stale-fail-days",
        "10",
    )
    assert rc == 0 and "FAIL 0" in out


def test_no_database_and_low_disk_fail(healthy, tmp_path):
    report = run_doctor(_paths(healthy, tmp_path / "missing.duckdb"), now=_at(LAST))
    assert report.check("database").status == FAIL and not (tmp_path / "missing.duckdb.lock").exists()
    low = run_doctor(_paths(healthy), now=_at(LAST), thresholds=Thresholds(disk_fail_bytes=2**62))
    assert low.check("disk").status == FAIL and low.exit_code() == 2


def test_busy_database_reports_the_holder_and_still_checks_files(healthy, tmp_path):
    copy = _copy_db(healthy, tmp_path)
    with lock_held(copy, 30.0) as holder:
        report = run_doctor(_paths(healthy, copy), now=_at(LAST), thresholds=Thresholds(lock_wait_s=0.5))
        holder.terminate()  # the kernel releases its lock; no need to sit out the sleep
    # it did not wait for the holder (held until now): it gave up after its short wait and said who holds it
    assert report.check("database").status == WARN
    lock = report.check("lock")
    assert lock.status == WARN and lock.details["holder"]["pid"] == holder.pid
    assert lock.details["holder"]["purpose"] == "test holder" and f"pid {holder.pid}" in lock.message_en
    assert {c.name for c in report.checks} >= {"disk", "sizes", "backup"}
    assert report.exit_code() == 0


# --- backup ----------------------------------------------------------------------------------------


def test_backup_is_a_verified_copy(healthy, tmp_path, capsys):
    backups = tmp_path / "backups"
    taken = _at(LAST)
    with frozen_at(taken):  # the product's clock: the second the backup is named after, known
        result = backup_database(healthy.database, backups)
    assert result.path.parent == backups and backup_time(result.path.name) == taken
    assert [b.path for b in list_backups(backups)] == [result.path]
    assert not list(backups.glob(".*.tmp"))
    with open_database(healthy.database, purpose="test") as conn:
        original = table_counts(conn)
        runs = conn.execute("SELECT * FROM runs ORDER BY day_id").fetchall()
    conn = duckdb.connect(str(result.path), read_only=True)
    try:
        assert table_counts(conn) == original == result.table_counts
        assert conn.execute("SELECT * FROM runs ORDER BY day_id").fetchall() == runs
    finally:
        conn.close()
    assert result.runs == 3 and result.bytes == result.path.stat().st_size

    paths = dataclasses.replace(_paths(healthy), backups_dir=backups)
    report = run_doctor(paths, now=taken + timedelta(minutes=1))
    assert report.check("backup").status == OK and report.check("backup").details["runs"] == 3

    # a second backup in the same second gets its own name (always the same second now, not by luck)
    second = backup_database(healthy.database, backups, now=taken)
    assert second.path != result.path and len(list_backups(backups)) == 2


def test_backup_waits_for_a_running_day(healthy, tmp_path):
    copy = _copy_db(healthy, tmp_path)
    with lock_held(copy, 1.5):
        result = backup_database(copy, tmp_path / "backups", lock_timeout_s=60)
    assert result.waited_s >= 1.0, result
    assert result.runs == 3


def test_backup_errors_are_one_line(tmp_path, capsys):
    assert cli.main(["backup", "--root", str(tmp_path)]) == 2
    _, err = capsys.readouterr()
    assert err.startswith("dmf: 백업할 DB 파일이 없습니다") and "Traceback" not in err
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "dmf.duckdb").write_bytes(b"not a database" * 1000)
    with pytest.raises(BackupError, match="cannot open"):
        backup_database(tmp_path / "data" / "dmf.duckdb", tmp_path / "backups")
    assert not any((tmp_path / "backups").iterdir())
