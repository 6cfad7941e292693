"""Disk full and other I/O faults, for real: a small tmpfs filled to the last byte (root can mount one), a
read-only remount, and RLIMIT_FSIZE (works for anyone). Every failed write leaves the old file and no
temporary file; the CLI says "No space left on device" with the path; `dmf doctor` reports instead of crashing;
the history database is never touched."""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from dmf_assets.fsutil import atomic_output, atomic_write_bytes, leaked_temp_files
from dmf_assets.settings import PROJECT_ROOT
from dmf_assets.storage.db import open_database
from dmf_assets_tests.disk_support import fill_disk
from dmf_assets_tests.project_support import dagster_home, project_paths, write_config
from dmf_assets_tests.project_support import dmf as run_dmf


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def dmf(*args: str, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    # DMF_CONFIG: the one env_extra names, else the tests' empty override (conftest) — never dmf.local.toml
    return run_dmf({**os.environ, **(env_extra or {})}, *args, timeout=300)


def test_atomic_write_on_a_full_disk_keeps_the_old_file_and_no_temp(small_fs):
    target = small_fs / "manifest.json"
    atomic_write_bytes(target, b'{"old": true}')
    fill_disk(small_fs)
    with pytest.raises(OSError) as err:
        atomic_write_bytes(target, b"x" * 200_000)
    assert err.value.errno == errno.ENOSPC
    assert err.value.filename == str(target)  # the message can say where
    assert target.read_bytes() == b'{"old": true}'
    assert sorted(p.name for p in small_fs.iterdir()) == ["filler", "manifest.json"]


def test_an_interrupted_writer_leaves_no_temp(tmp_path):
    target = tmp_path / "DMF_리포트_2026-10-08.xlsx"
    target.write_bytes(b"old workbook")
    for fault in (KeyboardInterrupt(), RuntimeError("openpyxl failed")):
        with pytest.raises(type(fault)), atomic_output(target) as tmp:
            tmp.write_bytes(b"half a workbook")
            raise fault
    assert target.read_bytes() == b"old workbook"
    assert [p.name for p in tmp_path.iterdir()] == [target.name]


LIMITED = """
import errno, os, resource, sys
from pathlib import Path
from dmf_assets.fsutil import atomic_write_bytes
resource.setrlimit(resource.RLIMIT_FSIZE, (65536, 65536))  # Python ignores SIGXFSZ: writes fail with EFBIG
target = Path(sys.argv[1])
try:
    atomic_write_bytes(target, b"y" * 1_000_000)
except OSError as exc:
    print(errno.errorcode[exc.errno])
"""


def test_file_size_limit_fails_cleanly(tmp_path):
    target = tmp_path / "page-0001.json.gz"
    target.write_bytes(b"previous page")
    result = subprocess.run(
        [sys.executable, "-c", LIMITED, str(target)], capture_output=True, text=True, cwd=PROJECT_ROOT, timeout=60
    )
    assert result.stdout.strip() == "EFBIG", result.stderr
    assert target.read_bytes() == b"previous page"
    assert [p.name for p in tmp_path.iterdir()] == [target.name]


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_mode_follows_the_umask(tmp_path, umask, mode):
    # group-readable under the usual umasks (tempfile.mkstemp would force 0600 on every workbook)
    code = textwrap.dedent(f"""
        import os, sys
        from dmf_assets.fsutil import atomic_output, atomic_write_text
        os.umask({umask})
        atomic_write_text(sys.argv[1] + "/a.jsonl", "{{}}\\n")
        with atomic_output(sys.argv[1] + "/b.xlsx") as tmp:
            tmp.write_bytes(b"PK")
    """)
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True, cwd=PROJECT_ROOT, timeout=60)
    for name in ("a.jsonl", "b.xlsx"):
        assert (tmp_path / name).stat().st_mode & 0o777 == mode, name


def _project(root: Path) -> Path:
    database = root / "data" / "dmf.duckdb"
    with open_database(database, purpose="disk-full test"):
        pass
    (root / "dagster_home").mkdir()
    return database


def test_doctor_reports_on_a_full_disk(small_fs):
    root = small_fs / "proj"
    database = _project(root)
    leaked = root / "data" / "raw" / ".page-0001.json.gz.4242.deadbeef.tmp"
    leaked.parent.mkdir(parents=True)
    leaked.write_bytes(b"half")
    os.utime(leaked, (time.time() - 3 * 3600,) * 2)  # its writer died hours ago
    (root / "data" / "dmf.duckdb.lock").unlink()  # the doctor must create and write it
    before = sha(database)
    fill_disk(small_fs)
    result = dmf("doctor", "--root", str(root))
    assert "Traceback" not in result.stderr + result.stdout, result.stderr
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = {line.split()[1]: line for line in result.stdout.splitlines() if line.startswith("  ")}
    assert lines["DB"].split()[0] == "OK"  # the database was still read (read-only)
    assert lines["디스크"].split()[0] == "FAIL" and "0 B" in lines["디스크"]
    assert lines["임시"].split()[0] == "WARN" and str(leaked) in lines["임시"]
    assert sha(database) == before


def test_doctor_on_a_read_only_disk(small_fs):
    root = small_fs / "proj"
    database = _project(root)
    (root / "data" / "dmf.duckdb.lock").unlink()
    before = sha(database)
    subprocess.run(["mount", "-o", "remount,ro", str(small_fs)], check=True)
    result = dmf("doctor", "--root", str(root))
    assert "Traceback" not in result.stderr + result.stdout, result.stderr
    assert result.returncode == 2
    assert "DB 잠금 파일을 만들 수 없어" in result.stdout and "the disk is read-only" in result.stdout
    assert "디스크 / disk" in result.stdout  # the other checks still ran
    assert sha(database) == before


def test_backup_to_a_full_disk_says_so(tmp_path, small_fs):
    database = _project(tmp_path)
    backups = small_fs / "backups"
    backups.mkdir()
    config = tmp_path / "dmf.toml"
    config.write_text(f'[paths]\ndatabase = "{database}"\nbackups_dir = "{backups}"\n', encoding="utf-8")
    before = sha(database)
    fill_disk(small_fs)
    result = dmf("backup", env_extra={"DMF_CONFIG": str(config)})
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("dmf: 디스크 공간이 부족합니다 (No space left on device): "), result.stderr
    assert str(backups) in result.stderr
    assert list(backups.iterdir()) == []  # no half backup, no temporary file
    assert sha(database) == before


def test_fetch_to_a_full_disk_says_so_and_leaks_nothing(tmp_path, small_fs):
    raw = small_fs / "raw"
    config = tmp_path / "dmf.toml"
    config.write_text(f'[paths]\nraw_dir = "{raw}"\n', encoding="utf-8")
    fill_disk(small_fs)
    result = dmf("fetch", "--date", "2026-10-05", env_extra={"DMF_CONFIG": str(config)})
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert "디스크 공간이 부족합니다 (No space left on device): " + str(raw) in result.stderr, result.stderr
    assert not (raw / "2026-10-05").exists()  # nothing published
    assert leaked_temp_files(raw) == []


# --- a day's run meets a full or read-only disk: the step's own line says so, once, and names the path -------


def _day_project(root: Path, **elsewhere: Path) -> dict[str, str]:
    """`dmf` environment of a project under `root`, with the folders named in `elsewhere` moved (onto a small disk)."""
    config = write_config(root / "dmf.toml", project_paths(root, **elsewhere))
    home = dagster_home(root)
    return {"DMF_CONFIG": str(config), "DAGSTER_HOME": str(home), "MFDS_SERVICE_KEY": "disk-test-key"}


NO_SPACE = "디스크 공간이 부족합니다 (No space left on device): "


def _no_traceback(result: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in result.stdout + result.stderr, result.stderr[-3000:]
    assert "Exception ignored" not in result.stderr, result.stderr[-3000:]  # a writer's __del__ failing again


@pytest.mark.parametrize(
    ("folder", "step", "file", "committed"),
    [
        ("raw_dir", "raw_pages", "2026-10-05", False),  # the first step: nothing of the day is committed
        ("reports_dir", "xlsx_report", "DMF_리포트_2026-10-05.xlsx", True),  # the last: the day stays, no workbook
    ],
)
def test_a_full_disk_is_the_failed_steps_own_line(tmp_path, small_fs, folder, step, file, committed):
    target = small_fs / folder
    env = _day_project(tmp_path / "proj", **{folder: target})
    fill_disk(small_fs)
    result = dmf("run", "--date", "2026-10-05", env_extra=env)
    _no_traceback(result)
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert f"실패 / FAILED: {step}: {NO_SPACE}{target}/" in result.stdout, result.stdout
    assert (f"{target}/{file}" in result.stdout) == (step == "xlsx_report")  # names the very file, where it can
    assert ("2026-10-05  기준일" in result.stdout) == committed
    assert not (target / file).exists() and leaked_temp_files(target) == []


def test_a_nearly_full_dagster_home_is_one_line(tmp_path, small_fs):
    """SQLite never names the file or the errno ("database or disk is full", "disk I/O error"), and Dagster echoes
    each failed event-log write with its SQL: the run is still one line naming DAGSTER_HOME."""
    import dagster as dg

    env = _day_project(tmp_path / "proj")
    home = small_fs / "dagster_home"
    home.mkdir()
    shutil.copy(PROJECT_ROOT / "dagster_home" / "dagster.yaml", home / "dagster.yaml")
    dg.DagsterInstance.from_config(str(home)).dispose()  # the instance's databases exist, as after earlier runs
    fill_disk(small_fs)
    with open(small_fs / "filler", "r+b") as fh:  # a few pages free: small writes succeed, a transaction does not
        fh.truncate(os.fstat(fh.fileno()).st_size - 64 * 1024)
    result = dmf("run", "--date", "2026-10-05", env_extra={**env, "DAGSTER_HOME": str(home)})
    _no_traceback(result)
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert (
        result.stderr == f"dmf: {NO_SPACE}{home} (DAGSTER_HOME) — 공간을 확보한 뒤 다시 실행하세요 (`dmf doctor`, "
        f"`dmf prune`) / free some space and run again\n"
    ), result.stderr


def test_a_read_only_folder_is_the_steps_own_line_and_a_read_only_database_one_dmf_line(tmp_path, small_fs):
    """A read-only raw archive: the fetch step's own line says so (it used to be lost behind a traceback from
    reading the day's summary). A read-only database folder: one dmf: line before anything runs."""
    read_only = "읽기 전용 파일 시스템이라 쓸 수 없습니다 (Read-only file system): "
    (small_fs / "raw").mkdir()
    (small_fs / "data").mkdir()
    subprocess.run(["mount", "-o", "remount,ro", str(small_fs)], check=True)

    result = dmf("run", "--date", "2026-10-05", env_extra=_day_project(tmp_path / "a", raw_dir=small_fs / "raw"))
    _no_traceback(result)
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert f"실패 / FAILED: raw_pages: {read_only}{small_fs}/raw/" in result.stdout, result.stdout

    data = small_fs / "data"
    result = dmf("run", "--date", "2026-10-05", env_extra=_day_project(tmp_path / "b", database=data / "dmf.duckdb"))
    _no_traceback(result)
    assert result.returncode == 1 and result.stdout == "", (result.stdout, result.stderr)
    assert result.stderr == (
        f"dmf: {read_only}{data}/dmf.duckdb.lock — 쓰기 가능하게 다시 마운트하거나 config의 [paths]를 "
        f"쓸 수 있는 폴더로 바꾸세요 / remount it read-write or point [paths] at a writable folder\n"
    )


def test_a_library_writer_on_a_full_disk_names_the_file(small_fs):
    """polars reports a full disk as its own ComputeError ("... (os error 28)"), naming no file: the atomic write
    turns it into the OSError Python's writers raise, naming the file (the staging hand-off writes this way)."""
    import polars as pl

    target = small_fs / "staging" / "2026-10-05" / "raw_pages.parquet"
    fill_disk(small_fs)
    with pytest.raises(OSError) as err, atomic_output(target) as tmp:
        pl.DataFrame({"n": range(100_000)}).write_parquet(tmp)
    assert err.value.errno == errno.ENOSPC and err.value.filename == str(target)
    assert leaked_temp_files(target.parent) == []
