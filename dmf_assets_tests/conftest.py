"""Shared test fixtures: the real MFDS rows and temporary project folders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

REAL_FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "real"


def _real_fixture_dir() -> Path:
    # ../shared sits beside the checkout; a fresh clone elsewhere finds it through DMF_SHARED
    import os

    env = os.environ.get("DMF_SHARED")
    candidates = [Path(env) / "fixtures" / "real"] if env else []
    # fallback: the copy packaged as the emulator's seed rows (identical; see test_seed_copy)
    candidates += [REAL_FIXTURES, Path(__file__).resolve().parents[1] / "dmf_assets" / "emulator" / "seeds"]
    for c in candidates:
        if c.is_dir():
            return c
    raise FileNotFoundError("real fixtures not found; set DMF_SHARED to the shared/ folder")


@pytest.fixture(scope="session")
def real_fixture_files() -> list[Path]:
    return sorted(_real_fixture_dir().glob("*.json"))


@pytest.fixture(scope="session")
def real_items(real_fixture_files) -> list[dict]:
    """Every real API row from ../shared/fixtures/real/, unchanged."""
    items: list[dict] = []
    for path in real_fixture_files:
        items.extend(json.loads(path.read_text(encoding="utf-8"))["items"])
    assert items, "no real rows found"
    return items


# --- temporary folders in memory ------------------------------------------------------------------
# The end-to-end tests write SQLite (Dagster's run and event storage: a commit, and a WAL checkpoint
# on every connection close, for each of a run's ~130 events), DuckDB, gzip archives and workbooks.
# On a disk each fsync costs milliseconds — seconds per day-run. On tmpfs it costs nothing, and the
# files, the processes and the code paths are the same (SIGKILL tests still kill a process: the page
# cache survives that either way). `quickstart.py test` (the CI) already puts pytest's basetemp there;
# these fixtures do the same for a plain `pytest` run. DMF_TEST_TMP=disk keeps them on tmp_path.

def _memory_root(tmp_path_factory) -> Path | None:
    """/dev/shm with room to spare (quickstart.py's rule), unless pytest's basetemp is there already."""
    import os
    import shutil

    shm = Path("/dev/shm")
    if os.environ.get("DMF_TEST_TMP") == "disk":
        return None
    try:
        if not (shm.is_dir() and os.access(shm, os.W_OK) and shutil.disk_usage(shm).free >= 4 << 30):
            return None
        if tmp_path_factory.getbasetemp().resolve().is_relative_to(shm.resolve()):
            return None  # tmp_path is in memory already
    except OSError:
        return None
    return shm


class MemoryTmp:
    """mktemp(name) like tmp_path_factory's, in /dev/shm when there is one; remove() when done."""

    def __init__(self, tmp_path_factory):
        self._factory = tmp_path_factory
        self._made: list[Path] = []

    def mktemp(self, name: str) -> Path:
        import re
        import tempfile

        root = _memory_root(self._factory)
        if root is None:
            return self._factory.mktemp(name)
        path = Path(tempfile.mkdtemp(prefix=f"dmf-{re.sub(r'[^A-Za-z0-9_-]', '_', name)[:40]}-", dir=root))
        self._made.append(path)
        return path

    def remove(self) -> None:
        import shutil

        for path in self._made:  # tmpfs is memory: nothing stays behind (tmp_path's folders pytest keeps)
            shutil.rmtree(path, ignore_errors=True)
        self._made.clear()


@pytest.fixture(scope="module")
def memory_tmp_factory(tmp_path_factory):
    """Module-scoped folders (shared, expensive state) in memory; removed after the module."""
    factory = MemoryTmp(tmp_path_factory)
    yield factory
    factory.remove()


@pytest.fixture
def memory_tmp(tmp_path_factory, request) -> Path:
    """tmp_path, but in memory (see above); removed after the test."""
    factory = MemoryTmp(tmp_path_factory)
    yield factory.mktemp(request.node.name)
    factory.remove()
