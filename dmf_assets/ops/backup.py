"""`dmf backup` / `dmf restore`: a consistent, verified copy of the history database (docs/DOMAIN.md §7: backups
kept 30 days), and the way back from one.

Consistent: taken under the database lock after a CHECKPOINT (everything is in the main file, no
WAL), so no run can write half-way through the copy. Atomic: copied to a hidden temporary file
(`fsutil.atomic_output`), verified, then renamed — a crash leaves either no backup or a whole one, and
a full disk leaves no temporary file. Verified: the copy is opened read-only, every value of every
table is read (a damaged block fails) and every table's row count must equal the original's.
`dmf restore` puts back the newest backup that passes the same reading, under the database lock,
keeping the file it replaces beside it.
"""

from __future__ import annotations

import re
import shutil
import time
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path

import duckdb

from dmf_assets.clock import KST, now_kst
from dmf_assets.errors import first_line
from dmf_assets.fsutil import atomic_output
from dmf_assets.ops.common import Unreadable, last_accepted_day, read_every_table, table_counts
from dmf_assets.report.retention import dated_files
from dmf_assets.storage.db import database_lock, lock_path, replace_database
from dmf_assets.storage.ops import checkpoint

#: dmf-2026-10-08-053000.duckdb (daily, Seoul time; "-2" if two land in the same second)
_DAILY_RE = re.compile(r"^(?P<stem>.+)-(?P<day>\d{4}-\d{2}-\d{2})-(?P<time>\d{6})(?:-\d+)?\.duckdb$")
#: dmf-before-migration-0002-20261008-053000.duckdb (storage.db.backup_database, Seoul time)
_MIGRATION_RE = re.compile(r"^(?P<stem>.+)-before-migration-\d{4}-(?P<day>\d{8})-(?P<time>\d{6})\.duckdb$")


class BackupError(RuntimeError):
    """The backup could not be made or did not verify; nothing was left under a backup name."""


@dataclass(frozen=True)
class BackupResult:
    path: Path
    bytes: int
    table_counts: dict[str, int]
    waited_s: float  # time spent waiting for the database lock
    seconds: float  # total, including the wait

    @property
    def runs(self) -> int:
        return self.table_counts.get("runs", 0)


@dataclass(frozen=True)
class BackupFile:
    path: Path
    taken_at: datetime  # timezone-aware


def backup_time(name: str) -> datetime | None:
    """When a backup file was taken, from its name; None if the name is not a backup's."""
    for pattern, stamp in ((_MIGRATION_RE, "%Y%m%d%H%M%S"), (_DAILY_RE, "%Y-%m-%d%H%M%S")):
        if m := pattern.match(name):
            try:  # both name Seoul time (db.backup_database, backup_database)
                return datetime.strptime(m["day"] + m["time"], stamp).replace(tzinfo=KST)
            except ValueError:
                return None
    return None


def list_backups(backups_dir: Path) -> list[BackupFile]:
    """Every backup file in `backups_dir` (daily and before-migration copies), oldest first — within one second in
    the order `_target` named them (`…-053000.duckdb`, then `…-053000-2.duckdb`; by name 「-2」 came first)."""
    found = [BackupFile(path, taken) for taken, path in dated_files(backups_dir, backup_time)]
    return sorted(found, key=lambda b: (b.taken_at, _nth_in_its_second(b.path.name)))


def _nth_in_its_second(name: str) -> int:
    found = re.search(r"-\d{6}-(\d+)\.duckdb$", name)
    return int(found[1]) if found else 1


def _target(backups_dir: Path, stem: str, now: datetime) -> Path:
    base = f"{stem}-{now.astimezone(KST):%Y-%m-%d-%H%M%S}"
    target, n = backups_dir / f"{base}.duckdb", 2
    while target.exists():
        target, n = backups_dir / f"{base}-{n}.duckdb", n + 1
    return target


def _copy(src: Path, dst: Path) -> None:
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        shutil.copyfileobj(fin, fout, length=4 * 1024 * 1024)


def backup_database(
    database: Path,
    backups_dir: Path,
    *,
    lock_timeout_s: float = 900.0,
    now: datetime | None = None,
) -> BackupResult:
    """Copy `database` to `backups_dir/<stem>-YYYY-MM-DD-HHMMSS.duckdb`, verified; returns what was made.

    Raises `storage.db.DatabaseBusy` if a run keeps the database longer than `lock_timeout_s`,
    `BackupError` for everything else (no database, another program holding it, a bad copy).
    """
    database, backups_dir = Path(database), Path(backups_dir)
    started = time.monotonic()
    if not database.is_file():
        raise BackupError(f"백업할 DB 파일이 없습니다 / no database to back up at {database}")
    backups_dir.mkdir(parents=True, exist_ok=True)
    target = _target(backups_dir, database.stem, now or now_kst())
    # atomic_output: renamed into place only once verified; removed on any failure (disk full included)
    with atomic_output(target) as tmp:
        with database_lock(lock_path(database), lock_timeout_s, "dmf backup"):
            waited = time.monotonic() - started
            try:
                conn = duckdb.connect(str(database))
            except duckdb.Error as exc:
                raise BackupError(f"DB를 열 수 없습니다 / cannot open {database}: {exc}") from None
            try:
                checkpoint(conn)  # fold the WAL into the main file: the file alone is the database
                counts = table_counts(conn)
            except duckdb.Error as exc:
                raise BackupError(f"DB를 읽을 수 없습니다 / cannot read {database}: {exc}") from None
            finally:
                conn.close()
            wal = database.with_name(database.name + ".wal")
            if wal.exists() and wal.stat().st_size > 0:
                raise BackupError(f"CHECKPOINT 뒤에도 WAL이 남아 있습니다 / {wal} is not empty after CHECKPOINT")
            _copy(database, tmp)  # atomic_output fsyncs it
        # The lock is released: verifying the copy needs only the copy.
        copied = _verify(tmp, counts)
    return BackupResult(target, copied, counts, waited, time.monotonic() - started)


def _read_copy(copy: Path) -> tuple[dict[str, int], date | None]:
    """Every table's row count — every value read, so a damaged block fails here — and the last accepted
    day of a database copy; BackupError when it does not open or read."""
    try:
        conn = duckdb.connect(str(copy), read_only=True)
    except duckdb.Error as exc:
        raise BackupError(f"사본이 열리지 않습니다 / the copy does not open: {first_line(exc)}") from None
    try:
        counts = read_every_table(conn)
        if "runs" not in counts:
            raise BackupError("사본에 runs 표가 없습니다 (DMF Watch DB가 아님) / not a DMF Watch database")
        return counts, last_accepted_day(conn)
    except Unreadable as exc:
        raise BackupError(
            f"사본의 '{exc.table}' 표를 읽을 수 없습니다 / table {exc.table} of the copy is unreadable: {exc.error}"
        ) from None
    finally:
        conn.close()


def _verify(copy: Path, expected: dict[str, int]) -> int:
    got, _ = _read_copy(copy)
    if got != expected:
        diff = {t: (expected.get(t), got.get(t)) for t in set(expected) | set(got) if expected.get(t) != got.get(t)}
        raise BackupError(f"백업 사본의 행 수가 다릅니다 / row counts differ in the copy: {diff}")
    return copy.stat().st_size


# --- restore ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RestoreResult:
    backup: BackupFile  # the backup now in place
    kept_aside: Path | None  # the file it replaced, kept beside it (None: there was none)
    skipped: list[tuple[Path, str]]  # newer backups that did not verify, and why
    runs: int
    last_accepted: date | None


def restore_database(database: Path, backups_dir: Path, *, lock_timeout_s: float = 900.0) -> RestoreResult:
    """Put the newest backup that verifies (opens, every table reads) in place of `database`, under the
    database lock; the file it replaces stays beside it (`storage.db.replace_database`). Raises
    `BackupError` when no backup verifies, `storage.db.DatabaseBusy` when a run keeps the database."""
    database, backups_dir = Path(database), Path(backups_dir)
    backups = list_backups(backups_dir)
    if not backups:
        raise BackupError(
            f"복원할 백업이 없습니다 ({backups_dir}) — `dmf rebuild`로 원본 보관에서 이력을 다시 만드세요 / "
            "no backup to restore: run `dmf rebuild`"
        )
    work = database.with_name(database.name + ".restore")
    skipped: list[tuple[Path, str]] = []
    with database_lock(lock_path(database), lock_timeout_s, "dmf restore"):
        try:
            for backup in reversed(backups):  # newest first
                with atomic_output(work) as tmp:  # a full disk leaves no half copy
                    _copy(backup.path, tmp)
                try:
                    counts, last = _read_copy(work)
                except BackupError as exc:
                    skipped.append((backup.path, str(exc)))
                    continue
                aside = replace_database(work, database, "restore")
                return RestoreResult(backup, aside, skipped, counts["runs"], last)
        finally:
            work.unlink(missing_ok=True)
    raise BackupError(
        f"백업 {len(backups)}개가 모두 열리지 않거나 읽히지 않습니다 (가장 최근: {skipped[0][0].name}: "
        f"{skipped[0][1]}) — `dmf rebuild`로 원본 보관에서 이력을 다시 만드세요 / no backup verifies: run `dmf rebuild`"
    )
