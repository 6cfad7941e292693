"""Workbook file names and retention (docs/DOMAIN.md §7: workbooks are kept 365 days).

The rules that keep users safe: the always-current `DMF_리포트_최신.xlsx` is never deleted, the newest
dated workbook is never deleted (even if it is older than the retention window — e.g. after a long
outage it is the last good report anyone has), and only files that match the dated pattern exactly are
ever touched.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Callable
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import TypeVar

log = logging.getLogger(__name__)
Stamp = TypeVar("Stamp", date, datetime)

DATED_PREFIX = "DMF_리포트_"
LATEST_NAME = "DMF_리포트_최신.xlsx"
_DATED_RE = re.compile(r"^DMF_리포트_(\d{4}-\d{2}-\d{2})\.xlsx$")


def dated_workbook_name(day: date) -> str:
    return f"{DATED_PREFIX}{day.isoformat()}.xlsx"


def parse_workbook_day(name: str) -> date | None:
    """The day of a dated workbook file name, or None if the name is not one (incl. 최신)."""
    # macOS and some zip tools store Hangul file names decomposed (NFD); compare composed.
    m = _DATED_RE.match(unicodedata.normalize("NFC", name))
    if not m:
        return None
    try:
        return date.fromisoformat(m.group(1))
    except ValueError:
        return None


def dated_files(folder: Path, stamp: Callable[[str], Stamp | None]) -> list[tuple[Stamp, Path]]:
    """(when, path) of every file in `folder` whose name `stamp` reads a day or a time from, oldest first
    (the dated workbooks here, the backups of `ops.backup`); nothing when the folder is missing."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    found = []
    for path in folder.iterdir():
        when = stamp(path.name)
        if when is not None and path.is_file():
            found.append((when, path))
    return sorted(found, key=lambda f: (f[0], f[1].name))


def dated_workbooks(reports_dir: Path) -> list[tuple[date, Path]]:
    """Every dated workbook in `reports_dir`, oldest first."""
    return dated_files(reports_dir, parse_workbook_day)


def prune_reports(reports_dir: Path, keep_days: int, today: date, *, dry_run: bool = False) -> list[Path]:
    """Delete dated workbooks older than `keep_days` before `today` (by the module's rules); return the deleted
    paths. A file that cannot be deleted is logged and skipped. `dry_run`: return what would be deleted, delete
    nothing."""
    if keep_days < 0:
        raise ValueError(f"keep_days must be >= 0, got {keep_days}")
    workbooks = dated_workbooks(Path(reports_dir))
    if not workbooks:
        return []
    cutoff = today - timedelta(days=keep_days)
    newest_path = workbooks[-1][1]
    deleted: list[Path] = []
    for day, path in workbooks:
        if day >= cutoff or path == newest_path:
            continue
        if dry_run:
            deleted.append(path)
            continue
        try:
            path.unlink()
        except FileNotFoundError:
            continue  # removed concurrently: the goal is reached
        except OSError as exc:
            log.warning("리포트 보존 정리: %s 삭제 실패 (%s)", path, exc)
            continue
        deleted.append(path)
    return deleted
