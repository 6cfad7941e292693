"""What `dmf doctor`, `dmf prune` and `dmf backup` share: the project's paths, a read-only look at
the history database under its lock, the last accepted day, and file sizes."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import duckdb

from dmf_assets.errors import first_line
from dmf_assets.settings import PROJECT_ROOT, Settings, first_inside, resolve_path
from dmf_assets.storage import ops as ops_storage
from dmf_assets.storage.db import database_lock, lock_path
from dmf_assets.storage.history import to_date


@dataclass(frozen=True)
class ProjectPaths:
    """Every folder the operations commands look at, resolved against one project root."""

    root: Path
    database: Path
    raw_dir: Path
    staging_dir: Path
    reports_dir: Path
    backups_dir: Path
    logs_dir: Path
    events_dir: Path
    alerts_dir: Path
    dagster_home: Path

    @property
    def dagster_storage(self) -> Path:
        """Where Dagster's local compute-log manager keeps per-run stdout/stderr."""
        return self.dagster_home / "storage"

    def not_logs(self) -> Path | None:
        """What `logs_dir` holds that is not logs — the project, the database or another data folder (or is one
        of them) — which a sweep of old log files by age would delete; None when it holds only itself."""
        others = [self.root, self.database, self.raw_dir, self.staging_dir, self.reports_dir, self.backups_dir]
        return first_inside(self.logs_dir, [*others, self.events_dir, self.alerts_dir, self.dagster_home])

    @property
    def written_folders(self) -> tuple[Path, ...]:
        """Where the product writes files (through a temporary file a killed writer may leave behind)."""
        return (
            self.database.parent,
            self.raw_dir,
            self.staging_dir,
            self.reports_dir,
            self.backups_dir,
            self.events_dir,
        )


def project_paths(
    settings: Settings,
    root: str | Path | None = None,
    *,
    database: str | Path | None = None,
    dagster_home: str | Path | None = None,
) -> ProjectPaths:
    """Paths from config/dmf.toml, relative ones resolved against `root` (default: the project).

    DAGSTER_HOME: explicit argument, else `root/dagster_home` when a root is given (tests, temp
    projects), else $DAGSTER_HOME, else the project's dagster_home/ (what `dmf ui` uses).
    """
    base = Path(root) if root else PROJECT_ROOT
    if dagster_home is None:
        dagster_home = (
            base / "dagster_home" if root else os.environ.get("DAGSTER_HOME") or PROJECT_ROOT / "dagster_home"
        )
    folders = ("raw_dir", "staging_dir", "reports_dir", "backups_dir", "logs_dir", "events_dir", "alerts_dir")
    return ProjectPaths(
        root=base,
        database=resolve_path(base, database or settings.paths.database),
        **{name: resolve_path(base, getattr(settings.paths, name)) for name in folders},
        dagster_home=Path(dagster_home),
    )


@contextlib.contextmanager
def read_only_database(database: Path, *, lock_timeout_s: float, purpose: str) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-only DuckDB connection taken under the DMF Watch database lock.

    The lock keeps writers out while we read (a reader and a writer in two processes would fail on
    DuckDB's own file lock). Raises `storage.db.DatabaseBusy` when the lock stays taken longer than
    `lock_timeout_s`, `FileNotFoundError` when there is no database, and `duckdb.Error` when the file
    cannot be opened (damaged, or held by another program). Never migrates, never writes the file.
    """
    database = Path(database)
    if not database.is_file():
        raise FileNotFoundError(f"DB 파일이 없습니다 / no database file at {database}")
    with database_lock(lock_path(database), lock_timeout_s, purpose):
        conn = duckdb.connect(str(database), read_only=True)
        try:
            yield conn
        finally:
            conn.close()


def last_accepted_day(conn: duckdb.DuckDBPyConnection) -> date | None:
    return to_date(ops_storage.last_accepted_day_id(conn))


def table_counts(conn: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """Row count of every table (identifiers come from the catalog, not from users)."""
    return {t: ops_storage.table_count(conn, t) for t in ops_storage.table_names(conn)}


class Unreadable(Exception):
    """A table of the database cannot be read (a damaged file)."""

    def __init__(self, table: str, error: str) -> None:
        super().__init__(f"{table}: {error}")
        self.table, self.error = table, error


def read_every_table(conn: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """Row count of every table, reading every value: DuckDB verifies each block's checksum as it reads it
    (a bare count(*) could be answered from metadata; hashing every column touches every block).
    Raises `Unreadable` naming the first table that cannot be read."""
    counts = {}
    for t in ops_storage.table_names(conn):
        try:  # identifier from the catalog, not from a user
            counts[t] = ops_storage.read_table(conn, t)
        except duckdb.Error as exc:
            raise Unreadable(t, first_line(exc)) from None
    return counts


def path_size(path: Path) -> int:
    """Bytes of a file, or of every file under a directory (0 if missing); symlinks are not followed."""
    try:
        if path.is_symlink() or path.is_file():
            return path.lstat().st_size
    except FileNotFoundError:
        return 0
    total = 0
    for dirpath, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(FileNotFoundError):
                total += os.lstat(os.path.join(dirpath, name)).st_size
    return total


def human_size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if size < 1024 or unit == "TB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover
