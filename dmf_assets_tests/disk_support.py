"""A small disk of its own, for the disk-full tests: the `small_fs` fixture (a 16 MiB tmpfs) and `fill_disk`."""

from __future__ import annotations

import errno
import os
import subprocess
from pathlib import Path

import pytest


def _mount_tmpfs(where: Path, size: str) -> None:
    where.mkdir(parents=True)
    result = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True, text=True
    )
    if result.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {result.stderr.strip()}")


def fill_disk(folder: Path) -> None:
    """Write until the file system refuses: afterwards not one more page fits."""
    fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC
    finally:
        os.close(fd)
    assert os.statvfs(folder).f_bavail == 0


@pytest.fixture
def small_fs(tmp_path):
    """A 16 MiB tmpfs of its own under tmp_path (root can mount one; the test is skipped otherwise)."""
    mnt = tmp_path / "fs"
    _mount_tmpfs(mnt, "16m")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)
