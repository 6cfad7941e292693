"""Time is KST where it says KST (issue 10): on a server whose clock runs in Los Angeles, every timestamp the
product writes — database rows, the lock record, backup names, the workbook's 생성 시각 (KST), the raw manifest — is
Korean time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import date, datetime, timedelta

from openpyxl import load_workbook

from dmf_assets.clock import KST
from dmf_assets.ops.backup import backup_time
from dmf_assets.settings import PROJECT_ROOT
from dmf_assets_tests.project_support import dagster_home, project_paths, read_rows, write_config

LA = {"TZ": "America/Los_Angeles"}
#: what a stamp may lose to its precision (a backup name's whole seconds, a workbook's milliseconds)
SECOND = timedelta(seconds=1)

WRITER = """
import datetime, json, sys
from pathlib import Path
from dmf_assets.storage.db import backup_database, lock_path, open_database
db = Path(sys.argv[1])
with open_database(db, purpose="tz test") as conn:
    applied = conn.execute("SELECT max(applied_at) FROM schema_migrations").fetchone()[0]
    since = json.loads(lock_path(db).read_text())["since"]
    conn.execute("CHECKPOINT")
backup = backup_database(db, db.parent / "backups", "before-migration-0099")
print(json.dumps({"applied": applied.isoformat(), "since": since, "backup": backup.name,
                  "local": datetime.datetime.now().isoformat()}))
"""


def kst_wall() -> datetime:
    return datetime.now(KST).replace(tzinfo=None)


class Window:
    """The Korean wall-clock time from before a process started until after it ended: a stamp it wrote "now"
    lies inside, however long the process took on a loaded machine (no fixed tolerance around the end)."""

    def __init__(self) -> None:
        self.start = datetime.now(KST)
        self.end = self.start

    def close(self) -> None:
        self.end = datetime.now(KST)

    def holds(self, stamp: datetime) -> bool:
        """`stamp` (aware; or naive, read as Korean wall time) is inside."""
        aware = stamp if stamp.tzinfo is not None else stamp.replace(tzinfo=KST)
        return self.start - SECOND <= aware <= self.end + SECOND


def run_in_la(args: list[str], **kw) -> subprocess.CompletedProcess:
    env = {**os.environ, **LA, **kw.pop("env", {})}
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=PROJECT_ROOT,
        timeout=kw.pop("timeout", 120),
        **kw,
    )


def test_database_lock_and_backup_times_are_kst(tmp_path):
    window = Window()
    result = run_in_la(["-c", WRITER, str(tmp_path / "dmf.duckdb")])
    window.close()
    assert result.returncode == 0, result.stderr
    got = json.loads(result.stdout)
    # the subprocess really ran on Los Angeles time (17 h behind Seoul in December, 16 h in summer)
    assert abs(datetime.fromisoformat(got["local"]) - kst_wall()) > timedelta(hours=15)
    assert window.holds(datetime.fromisoformat(got["applied"])), got  # now()::TIMESTAMP in SQL
    since = datetime.fromisoformat(got["since"])
    assert since.utcoffset() == timedelta(hours=9) and window.holds(since), got
    taken = backup_time(got["backup"])
    assert taken is not None and window.holds(taken), got


def test_dmf_run_on_a_los_angeles_server_writes_kst(tmp_path):
    day = date(2026, 10, 5)
    config = write_config(tmp_path / "dmf.toml", project_paths(tmp_path))
    home = dagster_home(tmp_path)
    window = Window()
    result = run_in_la(
        ["-m", "dmf_assets", "run", "--date", day.isoformat()],
        timeout=600,
        env={"DMF_CONFIG": str(config), "DAGSTER_HOME": str(home), "MFDS_SERVICE_KEY": "tz-test-key"},
    )
    window.close()
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    workbook = tmp_path / "reports" / f"DMF_리포트_{day.isoformat()}.xlsx"
    assert workbook.is_file(), (result.returncode, result.stdout[-2000:], result.stderr[-2000:])
    summary = load_workbook(workbook, read_only=True).worksheets[0]
    generated = next(r[1] for r in summary.iter_rows(max_col=2, values_only=True) if r[0] == "생성 시각 (KST)")
    assert isinstance(generated, datetime) and window.holds(generated), generated
    stamps = read_rows(tmp_path / "data" / "dmf.duckdb", "SELECT judged_at, committed_at FROM runs")
    assert stamps and all(v is not None and window.holds(v) for row in stamps for v in row), stamps
    # the raw archive's manifest: the fetch's start, end and every attempt, with the +09:00 the README promises
    manifest = json.loads((tmp_path / "data" / "raw" / day.isoformat() / "manifest.json").read_text(encoding="utf-8"))
    written = [
        manifest["started_at"],
        manifest["finished_at"],
        *(a["started_at"] for page in manifest["pages"] for a in page["attempts"]),
    ]
    assert len(written) > 3 and all(datetime.fromisoformat(t).utcoffset() == timedelta(hours=9) for t in written), (
        written
    )
    assert all(window.holds(datetime.fromisoformat(t)) for t in written), written
