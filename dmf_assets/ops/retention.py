"""`dmf prune`: retention per docs/DOMAIN.md §7 and `[retention]` in config/dmf.toml.

Events and versions (the database) are kept forever; raw archives `raw_days`, workbooks
`reports_days`, staging folders `staging_days`, backups `backups_days`, logs `logs_days`.

The rule that keeps users safe: the data of the **last accepted day** is never deleted. Every
day-bound window (raw, staging, workbooks) is stretched back to reach that day — after a long outage
the last good day's archive, staging and workbook stay, and so do the rejected days after it (the
evidence of the outage). That day is read from the database; when the database cannot be read,
nothing day-bound is pruned and the report says why. Backups always keep the newest one.
Only names that match the expected patterns are ever touched.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path

import duckdb

from dmf_assets.clock import now_kst
from dmf_assets.errors import first_line
from dmf_assets.fsutil import leaked_temp_files
from dmf_assets.korean import josa
from dmf_assets.ops.backup import list_backups
from dmf_assets.ops.common import ProjectPaths, human_size, last_accepted_day, path_size, read_only_database
from dmf_assets.report.retention import dated_workbooks, prune_reports
from dmf_assets.settings import Retention
from dmf_assets.source.archive import DayArchive
from dmf_assets.source.errors import FetchInProgress
from dmf_assets.storage.db import DatabaseBusy

_DAY = r"(\d{4}-\d{2}-\d{2})"
_RAW_DAY_DIR = re.compile(rf"^{_DAY}$")
_RAW_WORK = re.compile(rf"^\.{_DAY}\.(partial|old)$")  # an interrupted fetch / publish leftover
_RAW_LOCK = re.compile(rf"^\.{_DAY}\.lock$")
_REQUESTS_FILE = re.compile(rf"^{_DAY}\.json$")
#: Dagster run ids are UUIDs; only those folders under DAGSTER_HOME/storage are compute logs of a run
_RUN_ID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
#: a temporary file this old belongs to a crashed writer: `dmf prune` removes it (`dmf doctor` says so)
PRUNED_TEMP_AGE_S = 24 * 3600
_STAGING_IN_USE_S = 6 * 3600  # an old day's staging written this recently belongs to a running backfill


@dataclass(frozen=True)
class Removal:
    kind: str  # raw | staging | report | backup | log | dagster_log
    path: Path
    bytes: int


@dataclass
class PruneReport:
    today: date
    dry_run: bool
    last_accepted: date | None
    removed: list[Removal] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # why something was kept or skipped

    @property
    def bytes(self) -> int:
        return sum(r.bytes for r in self.removed)

    def by_kind(self) -> dict[str, tuple[int, int]]:
        out: dict[str, tuple[int, int]] = {}
        for r in self.removed:
            n, b = out.get(r.kind, (0, 0))
            out[r.kind] = (n + 1, b + r.bytes)
        return out

    def lines(self, limit: int | None = None) -> list[str]:
        """Human-readable report; `limit` caps the per-file lines (the totals always follow)."""
        verb = "삭제 예정 (dry run)" if self.dry_run else "삭제함"
        last = self.last_accepted.isoformat() if self.last_accepted else "알 수 없음 / unknown"
        out = [f"보존 정리 / retention prune — 기준일 {self.today}, 마지막 반영일 / last accepted day {last}"]
        removed = sorted(self.removed, key=lambda r: (r.kind, str(r.path)))
        for r in removed[:limit]:
            out.append(f"  {verb}: [{r.kind}] {r.path} ({human_size(r.bytes)})")
        if limit is not None and len(removed) > limit:
            out.append(f"  … 외 {len(removed) - limit}개 / and {len(removed) - limit} more")
        out += [f"  참고 / note: {n}" for n in self.notes]
        summary = (
            ", ".join(f"{k} {n}개 {human_size(b)}" for k, (n, b) in sorted(self.by_kind().items())) or "없음 / nothing"
        )
        out.append(f"  합계 / total: {len(self.removed)}개 {human_size(self.bytes)} — {summary}")
        return out


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


def _removal(kind: str, path: Path, dry_run: bool) -> Removal:
    """`path` (a file or a folder) measured, then deleted unless `dry_run`; one that is gone already is no error
    (its writer or another prune removed it meanwhile)."""
    size = path_size(path)
    if not dry_run and path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    elif not dry_run:
        path.unlink(missing_ok=True)
    return Removal(kind, path, size)


def _day(value: str) -> date | None:
    try:
        return date.fromisoformat(value)
    except ValueError:
        return None


def protected_cutoff(today: date, keep_days: int, last_accepted: date | None) -> date:
    """Days strictly before the cutoff may go; never later than the last accepted day."""
    if keep_days < 0:
        raise ValueError(f"keep_days must be >= 0, got {keep_days}")
    cutoff = today - timedelta(days=keep_days)
    return min(cutoff, last_accepted) if last_accepted else cutoff


# --- raw archive ---------------------------------------------------------------------------------


def prune_raw(raw_dir: Path, cutoff: date, *, dry_run: bool = False) -> tuple[list[Removal], list[str]]:
    """Delete raw archive entries of days before `cutoff`: `YYYY-MM-DD/`, `.YYYY-MM-DD.partial|old/`,
    `.YYYY-MM-DD.lock` and `_requests/YYYY-MM-DD.json`. A day whose fetch is running is skipped
    (its lock is held while we delete, so no fetch can start half-way). Anything else is left alone."""
    raw_dir = Path(raw_dir)
    removed: list[Removal] = []
    notes: list[str] = []
    if not raw_dir.is_dir():
        return removed, notes
    per_day: dict[date, list[Path]] = {}
    locks: dict[date, Path] = {}
    for entry in raw_dir.iterdir():
        if ((m := _RAW_DAY_DIR.match(entry.name)) and entry.is_dir()) or (m := _RAW_WORK.match(entry.name)):
            d = _day(m.group(1))
        elif m := _RAW_LOCK.match(entry.name):
            if (d := _day(m.group(1))) is not None and d < cutoff:
                locks[d] = entry
            continue
        else:
            continue  # _requests/ is handled below; unknown names are not ours to delete
        if d is not None and d < cutoff:
            per_day.setdefault(d, []).append(entry)

    for d in sorted(set(per_day) | set(locks)):
        entries = sorted(per_day.get(d, []))
        if dry_run:
            removed += [_removal("raw", e, dry_run) for e in [*entries, *([locks[d]] if d in locks else [])]]
            continue
        archive = DayArchive(raw_dir, d)
        try:
            with archive.locked():
                for e in entries:
                    size = path_size(e)
                    _remove(e)
                    removed.append(Removal("raw", e, size))
                lock = locks.get(d) or raw_dir / f".{d.isoformat()}.lock"
                # Unlinked while we hold it: a fetch of this old day would have to start from scratch anyway.
                with contextlib.suppress(FileNotFoundError):
                    lock.unlink()
                    if d in locks:
                        removed.append(Removal("raw", lock, 0))
        except FetchInProgress:
            notes.append(f"{d}: 수집 중이라 원본을 지우지 않았습니다 / fetch in progress, raw archive kept")

    requests_dir = raw_dir / "_requests"
    if requests_dir.is_dir():
        for entry in sorted(requests_dir.iterdir()):
            m = _REQUESTS_FILE.match(entry.name)
            if m and (d := _day(m.group(1))) is not None and d < cutoff and entry.is_file():
                removed.append(_removal("raw", entry, dry_run))
    return removed, notes


# --- staging and workbooks (existing helpers; dry run lists what they would delete) ----------------


def _newest_mtime(folder: Path) -> float:
    return max(
        (os.lstat(os.path.join(dp, n)).st_mtime for dp, _, files in os.walk(folder) for n in files),
        default=folder.lstat().st_mtime,
    )


def _prune_staging(staging_dir: Path, cutoff: date, dry_run: bool, notes: list[str]) -> list[Removal]:
    """Delete staging day folders (data/staging/YYYY-MM-DD/, the day store of the asset graph) of days before
    `cutoff` — the raw archive can rebuild them. `dry_run`: list, delete nothing."""
    candidates = [
        folder
        for folder in sorted(Path(staging_dir).glob("????-??-??"))
        if (d := _day(folder.name)) is not None and d < cutoff
    ]
    # A backfill of old days writes their staging now and reads it a step later: leave it alone.
    in_use = [p.name for p in candidates if time.time() - _newest_mtime(p) < _STAGING_IN_USE_S]
    if in_use:
        notes.append(
            f"스테이징 {', '.join(in_use[:5])} 사용 중(최근 수정)이라 이번에는 정리하지 않음 / "
            f"staging of old days was written in the last {_STAGING_IN_USE_S // 3600} h "
            "(a backfill?): staging not pruned this time"
        )
        return []
    return [_removal("staging", p, dry_run) for p in candidates]


def _prune_reports(reports_dir: Path, keep_days: int, today: date, dry_run: bool) -> list[Removal]:
    sizes = {p: path_size(p) for _, p in dated_workbooks(Path(reports_dir))}
    return [
        Removal("report", p, sizes.get(p, 0))
        for p in prune_reports(Path(reports_dir), keep_days, today, dry_run=dry_run)
    ]


# --- backups and logs (not day-bound) ------------------------------------------------------------


def prune_backups(backups_dir: Path, keep_days: int, now: datetime, *, dry_run: bool = False) -> list[Removal]:
    """Delete backups taken more than `keep_days` before `now`; the newest backup always stays.
    Also removes temporary files of backups that crashed more than a day ago."""
    backups = list_backups(Path(backups_dir))
    cutoff = now - timedelta(days=keep_days)
    removed = [_removal("backup", b.path, dry_run) for b in backups[:-1] if b.taken_at < cutoff]  # never the newest
    return removed + prune_temp_files([backups_dir], dry_run=dry_run, kind="backup")


def prune_temp_files(folders: Iterable[str | Path], *, dry_run: bool = False, kind: str = "tmp") -> list[Removal]:
    """Delete `.*.tmp` files (fsutil's temporary files, a day or more old: their writer is gone) in
    `folders` and their direct subfolders."""
    removed = []
    for tmp in leaked_temp_files(*map(Path, folders)):
        with contextlib.suppress(FileNotFoundError):
            if time.time() - tmp.stat().st_mtime > PRUNED_TEMP_AGE_S:  # the real clock: mtimes are real
                removed.append(_removal(kind, tmp, dry_run))
    return removed


def prune_logs(logs_dir: Path, keep_days: int, now: datetime, *, dry_run: bool = False) -> list[Removal]:
    """Delete files under `logs_dir` last modified more than `keep_days` ago (then empty folders)."""
    logs_dir = Path(logs_dir)
    if not logs_dir.is_dir():
        return []
    cutoff = now.timestamp() - keep_days * 86400
    removed = []
    for dirpath, _, files in os.walk(logs_dir):
        for name in files:
            path = Path(dirpath) / name
            with contextlib.suppress(FileNotFoundError):
                if path.lstat().st_mtime < cutoff:
                    removed.append(_removal("log", path, dry_run))
    if not dry_run:
        for dirpath, _, _ in sorted(os.walk(logs_dir), key=lambda w: -len(w[0])):
            if Path(dirpath) != logs_dir:
                with contextlib.suppress(OSError):
                    os.rmdir(dirpath)  # only succeeds when empty
    return removed


def prune_dagster_logs(storage_dir: Path, keep_days: int, now: datetime, *, dry_run: bool = False) -> list[Removal]:
    """Delete per-run compute-log folders (DAGSTER_HOME/storage/<run id>/) untouched for `keep_days`.
    Only folders named like a run id; the run history itself (Dagster's SQLite) is not touched."""
    storage_dir = Path(storage_dir)
    if not storage_dir.is_dir():
        return []
    cutoff = now.timestamp() - keep_days * 86400
    runs = [f for f in sorted(storage_dir.iterdir()) if _RUN_ID.match(f.name) and f.is_dir() and not f.is_symlink()]
    return [_removal("dagster_log", f, dry_run) for f in runs if _newest_mtime(f) < cutoff]


# --- everything ----------------------------------------------------------------------------------


def read_last_accepted(database: Path, lock_timeout_s: float) -> tuple[date | None, str | None]:
    """(last accepted day, None) or (None, why the database could not be read)."""
    try:
        with read_only_database(database, lock_timeout_s=lock_timeout_s, purpose="dmf prune") as conn:
            return last_accepted_day(conn), None
    except FileNotFoundError:
        return None, f"DB 파일이 없습니다 / no database at {database}"
    except DatabaseBusy as exc:
        return None, f"DB 사용 중 / database busy: {exc}"
    except duckdb.Error as exc:
        return None, f"DB를 읽을 수 없습니다 / database unreadable: {first_line(exc)}"


def prune(
    paths: ProjectPaths,
    retention: Retention,
    *,
    now: datetime | None = None,
    dry_run: bool = False,
    lock_timeout_s: float = 60.0,
) -> PruneReport:
    """Apply every retention rule; returns what was (or, with dry_run, would be) deleted."""
    now = now or now_kst()
    today = now.date()
    last, why = read_last_accepted(paths.database, lock_timeout_s)
    report = PruneReport(today=today, dry_run=dry_run, last_accepted=last)
    if why is not None:
        report.notes.append(
            f"원본·스테이징·리포트는 정리하지 않았습니다 (마지막 반영일을 알 수 없음) / "
            f"raw, staging and workbooks not pruned: {why}"
        )
    else:
        if last is None:
            report.notes.append("반영된 날이 아직 없습니다 / no accepted day yet: plain retention windows apply")
        raw_cutoff = protected_cutoff(today, retention.raw_days, last)
        if last is not None and raw_cutoff == last and last < today - timedelta(days=retention.raw_days):
            report.notes.append(f"마지막 반영일 {last}의 데이터는 보존 기간이 지나도 남깁니다 / last accepted day kept")
        removed, notes = prune_raw(paths.raw_dir, raw_cutoff, dry_run=dry_run)
        report.removed += removed
        report.notes += notes
        staging_cutoff = protected_cutoff(today, retention.staging_days, last)
        report.removed += _prune_staging(paths.staging_dir, staging_cutoff, dry_run, report.notes)
        # prune_reports counts days back from today: the days back to the protected cutoff
        reports_keep_days = (today - protected_cutoff(today, retention.reports_days, last)).days
        report.removed += _prune_reports(paths.reports_dir, reports_keep_days, today, dry_run)
    report.removed += prune_backups(paths.backups_dir, retention.backups_days, now, dry_run=dry_run)
    leftovers = prune_temp_files([f for f in paths.written_folders if f != paths.backups_dir], dry_run=dry_run)
    report.removed += [r for r in leftovers if r.path.parent != paths.backups_dir]  # counted by prune_backups
    if (held := paths.not_logs()) is None:
        report.removed += prune_logs(paths.logs_dir, retention.logs_days, now, dry_run=dry_run)
    else:  # a sweep by age would take the data with the logs
        report.notes.append(
            f"로그는 정리하지 않았습니다: logs_dir({paths.logs_dir})에 {josa(str(held), '이/가')} 들어 있습니다 — "
            f"logs_dir를 로그만 두는 폴더로 바꾸세요 / logs not pruned: logs_dir holds {held}"
        )
    report.removed += prune_dagster_logs(paths.dagster_storage, retention.logs_days, now, dry_run=dry_run)
    return report
