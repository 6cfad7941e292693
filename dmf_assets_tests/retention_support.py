"""A project's files for the retention tests (test_ops_retention, test_ops_maintenance): a history database that
says which days were accepted, raw archives and files of a given age."""

from __future__ import annotations

import os
from datetime import date, datetime
from pathlib import Path

from dmf_assets.clock import KST
from dmf_assets.storage.db import open_database
from dmf_assets.storage.history import day_id

NOW = datetime(2026, 10, 8, 5, 30, tzinfo=KST)


def make_history(root: Path, runs: dict[date, str]) -> Path:
    """A migrated history database whose `runs` table says which days were accepted."""
    db = root / "data" / "dmf.duckdb"
    with open_database(db, purpose="test") as conn:
        for d, status in runs.items():
            conn.execute("INSERT INTO runs (day_id, status) VALUES (?, ?)", [day_id(d), status])
    return db


def aged_file(path: Path, size: int = 100, age_days: float | None = None) -> Path:
    """A file of `size` bytes, last written `age_days` before NOW."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    if age_days is not None:
        t = NOW.timestamp() - age_days * 86400
        os.utime(path, (t, t))
    return path


def raw_day(root: Path, d: date, pages: int = 2) -> Path:
    """A raw archive of `d` under root/data/raw: `pages` pages and a manifest."""
    folder = root / "data" / "raw" / d.isoformat()
    for i in range(pages):
        aged_file(folder / f"page-{i + 1:04d}.json.gz", 1000)
    aged_file(folder / "manifest.json", 50)
    return folder
