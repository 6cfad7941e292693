"""A history database that cannot be written — an immutable file or folder (`chattr +i`, as root), or no write
permission (anyone else) — is named as such by every command and FAILs `dmf doctor`; it used to be a traceback
ending in "another program holds …", "in use by another job" from `asof`/`history`, and `FAIL 0` from the doctor."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from dmf_assets_tests.project_support import FIRST_DAY, dmf, first_day_run

DAY = FIRST_DAY.isoformat()  # 2026-10-05
SAYS = "이력 DB에 쓸 수 없습니다 — 읽기 전용이거나 바꿀 수 없게(immutable) 되어 있습니다"


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """A project with one accepted day, its database alone in db/ (test_crash_safety's baseline too: run once)."""
    first = first_day_run(tmp_path_factory)
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
    return first.root / "db" / "dmf.duckdb", first.env


@contextlib.contextmanager
def _unwritable(path: Path) -> Iterator[None]:
    """`path` made unwritable the way its owner would: immutable as root, read-only permissions otherwise."""
    if os.geteuid() == 0:
        if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(path)]).returncode != 0:
            pytest.skip("chattr +i is not available here")
        undo = ["chattr", "-i", str(path)]
    else:
        mode = path.stat().st_mode
        path.chmod(0o555 if path.is_dir() else 0o444)
        undo = None
    try:
        yield
    finally:
        if undo:
            subprocess.run(undo, check=True)
        else:
            path.chmod(mode)


@pytest.mark.parametrize("what", ["file", "folder"])
def test_every_command_names_an_unwritable_database_as_such(project, what):
    database, env = project
    before = hashlib.sha256(database.read_bytes()).hexdigest()
    with _unwritable(database if what == "file" else database.parent):
        results = {
            "run": dmf(env, "run", "--date", DAY),
            "asof": dmf(env, "asof", DAY, "--format", "csv"),
            "history": dmf(env, "history", "--ingredient", "나프록센"),
            "doctor": dmf(env, "doctor"),
        }
    for name, result in results.items():
        text = result.stdout + result.stderr
        assert result.returncode != 0, (name, text[-2000:])
        assert "Traceback" not in text and "Another program" not in text and "다른 작업이 사용 중" not in text, (
            name,
            text[-2000:],
        )
    for name in ("run", "asof", "history"):
        err = results[name].stderr
        assert err.startswith(f"dmf: {SAYS}: {database}") and err.count("\n") == 1, (name, err)
        assert "chattr -i" in err
    doctor = results["doctor"]
    assert doctor.returncode == 2
    (line,) = [ln for ln in doctor.stdout.splitlines() if "DB 쓰기 / writable" in ln]
    assert line.split()[0] == "FAIL" and "읽기 전용이거나 바꿀 수 없게(immutable)" in line
    assert hashlib.sha256(database.read_bytes()).hexdigest() == before
