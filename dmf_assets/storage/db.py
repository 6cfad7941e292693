"""Opening the history database: one writer at a time, migrated, never half-written, never silently new.

DuckDB allows one writing process per file; concurrent Dagster runs would otherwise fail on its
lock (DAGSTER_NOTES). Every access goes through `open_database`, which first takes an OS file lock
beside the database (released by the kernel even if the process is SIGKILLed), records who holds
it (for `dmf doctor`), then applies pending migrations — after copying the file to backups/.

The raw archives are the event log; the database is derived from them (docs/DOMAIN.md §9). A database that
is missing or holds no day while files of earlier days exist (`HistoryTraces`) was lost, not new: the
writers (every run, whatever launched it) are refused with `HistoryMissing`, a file DuckDB cannot read
with `DatabaseDamaged` — both name the two ways out, `dmf restore` and `dmf rebuild`. A write that
finds the disk full is `DatabaseDiskFull`; a database that cannot be written at all (permissions, an
immutable file or folder, a read-only mount) is `DatabaseReadOnly`, never "held by another program".
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import logging
import os
import re
import shutil
import socket
import sys
import time
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from datetime import date
from functools import cache
from pathlib import Path
from typing import IO, Any

import duckdb

from dmf_assets.clock import TIMEZONE_NAME, now_kst
from dmf_assets.errors import UserError, first_line
from dmf_assets.fsutil import atomic_output, fsync_dir
from dmf_assets.settings import PROJECT_ROOT

SQL_DIR = PROJECT_ROOT / "sql"
#: Block size of a NEW database file (existing files keep theirs). 64 KiB instead of DuckDB's 256 KiB
#: halves the file: many small tables (runs, gates, events) would each pin mostly empty 256 KiB blocks.
BLOCK_SIZE = 65536
MIGRATIONS_DIR = SQL_DIR / "migrations"
QUERIES_DIR = SQL_DIR / "queries"


class DatabaseBusy(RuntimeError):
    """Another process kept the database longer than we were willing to wait."""


class MigrationError(RuntimeError):
    """The database schema does not match the migration files (edited after being applied?)."""


#: the two ways back to a history, named by every message about a lost or damaged database
WAYS_OUT_KO = "`dmf restore`(최신 백업에서 복원) 또는 `dmf rebuild`(원본 보관에서 이력을 다시 만듦)를 실행하세요"
WAYS_OUT_EN = "run `dmf restore` (the latest backup) or `dmf rebuild` (replays the raw archives)"
WAYS_OUT = f"{WAYS_OUT_KO} / {WAYS_OUT_EN}"


class DatabaseUnusable(UserError):
    """The history database cannot be used as it is; the message names `WAYS_OUT`."""


class HistoryMissing(DatabaseUnusable):
    """The database is missing (or holds no day) while files of earlier days exist: it was lost, not new."""

    def __init__(self, database: Path, traces: str, *, empty: bool = False) -> None:
        state_ko, state_en = (
            ("이력 DB에 기록된 날이 하나도 없는데", "holds no day") if empty else ("이력 DB가 없는데", "is missing")
        )
        super().__init__(
            f"{state_ko} 이전 날의 기록이 남아 있습니다 — DB {database}, 기록: {traces}. 새 기준일로 다시 시작하지 않습니다 — "
            f"{WAYS_OUT}. The history database {state_en} although earlier days exist; not starting over."
        )


class DatabaseDamaged(DatabaseUnusable):
    """DuckDB cannot read the file: truncated, zero-length or overwritten."""

    def __init__(self, database: Path, detail: str) -> None:
        super().__init__(
            f"이력 DB 파일이 손상되었습니다 ({database}: {detail}) — {WAYS_OUT}. The history database file is corrupt."
        )


class DatabaseOutdated(RuntimeError):
    """The database's schema is older than this release's migrations: only a writer may migrate it."""


class DatabaseReadOnly(UserError):
    """The history database (or its folder) cannot be written: read-only, immutable or forbidden — not busy."""

    CHECK_KO = (
        "파일과 폴더의 권한(`ls -l`), 변경 불가 속성(`lsattr`, 해제는 `chattr -i`), 읽기 전용 마운트를 확인하세요"
    )
    CHECK_EN = "check its permissions, `lsattr` (`chattr -i`) and the mount"

    def __init__(self, where: Path | str, detail: str) -> None:
        super().__init__(
            f"이력 DB에 쓸 수 없습니다 — 읽기 전용이거나 바꿀 수 없게(immutable) 되어 있습니다: {where} ({detail}). "
            f"다른 프로그램이 쓰고 있는 것이 아닙니다 — {self.CHECK_KO} / the history database cannot be written: it is "
            f"read-only or immutable, not in use — {self.CHECK_EN}"
        )


#: how DuckDB and the OS word a write refused for good (permissions, an immutable file, a read-only mount)
_READ_ONLY_SIGNS = ("Permission denied", "Operation not permitted", "Read-only file system")


def write_refusal(database: Path) -> str | None:
    """Why the database could not be written (its file, its WAL, or its folder, where DuckDB creates the WAL),
    in a few words — or None. Changes nothing: a file is opened for writing and closed, a folder only asked."""
    for path in (database, database.with_name(database.name + ".wal")):
        try:
            os.close(os.open(path, os.O_WRONLY))
        except FileNotFoundError:
            continue
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
                return str(exc.strerror) if path == database else f"{path.name}: {exc.strerror}"
    folder = database.parent
    if folder.is_dir() and not os.access(folder, os.W_OK | os.X_OK):
        return f"{folder}: 폴더에 파일을 만들 수 없음 / cannot create files in the folder"
    return None


class DatabaseDiskFull(OSError):
    """A write to the history database found no space left; DuckDB rolled the transaction back."""

    def __init__(self, where: str) -> None:
        super().__init__(errno.ENOSPC, os.strerror(errno.ENOSPC), where)

    def __str__(self) -> str:
        return (
            f"디스크 공간이 부족합니다 (No space left on device): {self.filename} — 공간을 확보한 뒤 다시 실행하세요 "
            "(`dmf doctor`, `dmf prune`); 이력 DB는 바뀌지 않았습니다 / free some space and run again"
        )


@dataclass(frozen=True)
class HistoryTraces:
    """Where the days a history database recorded leave files of their own: the events files
    (`events_dir/YYYY-MM-DD.jsonl`) and the workbooks (`reports_dir/DMF_*.xlsx`), written only after the
    database recorded a day, and the raw archives (`raw_dir/YYYY-MM-DD/manifest.json`) — those only once
    no run can still be about to record them: finished more than `run_limit_s` ago (a run is stopped
    after `[runs] max_minutes`; the first days of a new project may run at once) and not of a day being
    run now (raw_pages archives it before the database is first opened)."""

    raw_dir: Path
    events_dir: Path
    reports_dir: Path
    run_limit_s: float = 30 * 60

    def describe(self, except_days: Collection[date] = ()) -> str | None:
        """What is there, in words ("원본 보관 5일(2026-10-01 ~ 2026-10-05, …), 이벤트 파일 5개(…), 리포트 6개(…)"),
        or None. `except_days`: the days being run now."""
        skip = {d.isoformat() for d in except_days}
        settled = time.time() - self.run_limit_s
        raw = sorted(
            p.parent.name
            for p in _glob(self.raw_dir, "????-??-??/manifest.json")
            if p.parent.name not in skip and _mtime(p) < settled
        )
        events = _glob(self.events_dir, "????-??-??.jsonl")
        workbooks = _glob(self.reports_dir, "DMF_*.xlsx")
        found = (
            ([f"원본 보관 {len(raw)}일({raw[0]} ~ {raw[-1]}, {self.raw_dir})"] if raw else [])
            + ([f"이벤트 파일 {len(events)}개({self.events_dir})"] if events else [])
            + ([f"리포트 {len(workbooks)}개({self.reports_dir})"] if workbooks else [])
        )
        return ", ".join(found) or None


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:  # removed meanwhile (a re-fetch publishing the day again)
        return float("inf")


def _glob(folder: Path, pattern: str) -> list[Path]:
    try:
        return list(Path(folder).glob(pattern))
    except OSError:  # an unreadable folder shows nothing; the command that needs it says why
        return []


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode("utf-8")).hexdigest()


#: checksums an applied migration may carry from an earlier text of its file whose SQL is the same: 0001 and
#: 0002 were applied while their first comment line cited the specification outside the repository; the
#: citation now names docs/DOMAIN.md, and databases migrated before must not be refused for a comment
EARLIER_CHECKSUMS: dict[int, frozenset[str]] = {
    1: frozenset({"9a6a5647a466c88185b47b1fb2e4b16a8f6b367e9f59393f0862d8f5684783c9"}),
    2: frozenset({"7e93d1207f228c6da4d7904ca7d55e7faaf69551862a599c184c6c9cedc9974d"}),
}


def migrations() -> list[Migration]:
    found = []
    for path in sorted(MIGRATIONS_DIR.glob("*.sql")):
        m = re.match(r"(\d+)_(.+)\.sql$", path.name)
        if m:
            found.append(Migration(int(m.group(1)), m.group(2), path.read_text(encoding="utf-8")))
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise MigrationError(f"duplicate migration numbers in {MIGRATIONS_DIR}: {versions}")
    return found


@cache
def _query_file(name: str) -> dict[str, str]:
    text = (QUERIES_DIR / f"{name}.sql").read_text(encoding="utf-8")
    queries: dict[str, str] = {}
    current: str | None = None
    for line in text.splitlines():
        m = re.match(r"--\s*name:\s*(\w+)", line)
        if m:
            current = m.group(1)
            queries[current] = ""
        elif current:
            queries[current] += line + "\n"
    return {k: v.strip() for k, v in queries.items()}


def query(name: str) -> str:
    """A named SQL statement from sql/queries/<file>.sql: `query("history.latest_accepted_before")`."""
    file, _, key = name.partition(".")
    try:
        return _query_file(file)[key]
    except KeyError:
        raise KeyError(f"no query named {key!r} in sql/queries/{file}.sql") from None


def fetch_one(conn: duckdb.DuckDBPyConnection, sql: str, params: list | None = None) -> tuple | None:
    """First row or None. DuckDB 2 wants every result consumed before the next statement."""
    rows = conn.execute(sql, params or []).fetchall()
    return rows[0] if rows else None


def one_row(conn: duckdb.DuckDBPyConnection, sql: str, params: list | None = None) -> tuple:
    """The row of a query that always returns one (an aggregate without GROUP BY, a PRAGMA)."""
    row = fetch_one(conn, sql, params)
    if row is None:
        raise LookupError(f"the query returned no row: {sql}")
    return row


def dict_rows(cur: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """An executed statement's rows as dicts keyed by column name."""
    names = [d[0] for d in cur.description or ()]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def lock_path(database: Path) -> Path:
    return database.with_name(database.name + ".lock")


def lock_holder(database: Path) -> dict | None:
    """Who holds the database lock right now (None if free). Used by `dmf doctor`."""
    path = lock_path(database)
    if not path.exists():
        return None
    with open(path) as fh:  # read-only: works on a full or read-only disk
        try:
            fcntl.flock(fh, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            try:
                return json.loads(fh.read() or "{}")
            except json.JSONDecodeError:
                return {"holder": "unknown"}
        fcntl.flock(fh, fcntl.LOCK_UN)
    return None


def _write_holder(fd: int, data: bytes) -> None:
    """Who holds the lock, for `dmf doctor` — informative only, so a full disk does not stop a reader.
    Unbuffered (no buffer left to fail again at close); the file is opened for appending, so after the
    truncate the write lands at offset 0."""
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
        if data:
            os.write(fd, data)


LOCK_NOTE_AFTER_S = 3.0
LOCK_NOTE_EVERY_S = 15.0
log = logging.getLogger("dmf.db")


def _holder_text(fh: IO[str]) -> str:
    """ "PID 123 (dagster, command …)" from the lock record, for the waiting message."""
    try:
        fh.seek(0)
        holder = json.loads(fh.read() or "{}")
    except (OSError, json.JSONDecodeError):
        return "다른 실행 / another run"
    if not holder:
        return "다른 실행 / another run"
    command = f", {holder['command']}" if holder.get("command") else ""
    return f"PID {holder.get('pid')} ({holder.get('purpose')}{command}, {holder.get('since')}부터)"


@contextlib.contextmanager
def database_lock(path: Path, timeout_s: float, purpose: str) -> Iterator[None]:
    """The exclusive lock beside the database file (held by every access; the kernel drops it on exit)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        started = time.monotonic()
        deadline, next_note = started + timeout_s, started + LOCK_NOTE_AFTER_S
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= next_note:  # a wait the user can see, never a silent one
                    next_note += LOCK_NOTE_EVERY_S
                    log.warning(
                        "DB 잠금 대기 중 / waiting for the database lock held by %s — %d초 경과 (최대 %d초)",
                        _holder_text(fh),
                        time.monotonic() - started,
                        timeout_s,
                    )
                if time.monotonic() >= deadline:
                    fh.seek(0)
                    holder = fh.read().strip() or "unknown"
                    raise DatabaseBusy(
                        f"DB가 다른 실행에 의해 {timeout_s:.0f}초 넘게 사용 중입니다 (holder: {holder}). "
                        f"The history database is busy; retry later or check `dmf doctor`."
                    ) from None
                time.sleep(0.2)
        record = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "purpose": purpose,
            "command": " ".join(sys.argv)[:200],
            "since": now_kst().isoformat(timespec="seconds"),
        }
        _write_holder(fh.fileno(), json.dumps(record).encode())
        try:
            yield
        finally:
            _write_holder(fh.fileno(), b"")
            fcntl.flock(fh, fcntl.LOCK_UN)


def _connect(path: Path, timeout_s: float) -> duckdb.DuckDBPyConnection:
    # Our file lock serialises DMF Watch itself; this loop covers anyone else (a DuckDB CLI left open).
    deadline = time.monotonic() + timeout_s
    delay = 0.2
    while True:
        try:
            with _file_errors(path):
                conn = duckdb.connect(str(path), config={"default_block_size": str(BLOCK_SIZE)})
            break
        except duckdb.IOException as exc:
            if "lock" not in str(exc).lower() or time.monotonic() >= deadline:
                raise DatabaseBusy(
                    f"DB 파일을 열 수 없습니다: {exc}. Another program holds {path}; close it and retry."
                ) from exc
            time.sleep(delay)
            delay = min(delay * 2, 5.0)
    try:
        _check_length(conn, path)
    except BaseException:
        conn.close()
        raise
    # now()::TIMESTAMP in sql/ is then Seoul wall time whatever the server's zone (ICU is built into
    # the duckdb wheel; TimeZone cannot be passed to connect())
    conn.execute("SET TimeZone = ?", [TIMEZONE_NAME])
    return conn


#: how DuckDB words a file it cannot read: overwritten or zero-length, a block whose checksum does not
#: match, a file cut short, a WAL that does not fit the file
_DAMAGE_SIGNS = (
    "not a valid DuckDB database file",
    "Corrupt database file",
    "Could not read enough bytes",
    "replaying WAL",
)


def interrupted_query(exc: BaseException) -> bool:
    """A query that Ctrl-C (SIGINT) stopped, as DuckDB reports it: DuckDB takes the signal for itself, so Python
    never raises the KeyboardInterrupt — a run would carry on as after an ordinary error."""
    return isinstance(exc, duckdb.InterruptException) or (
        isinstance(exc, RuntimeError) and str(exc) == "Query interrupted"
    )


@contextlib.contextmanager
def _interrupts_kept() -> Iterator[None]:
    """Ctrl-C during a query raised as the KeyboardInterrupt it was: Dagster then stops the run as after any Ctrl-C
    (and `dmf backfill` its remaining days) instead of failing one step and going on."""
    try:
        yield
    except Exception as exc:
        if interrupted_query(exc):
            raise KeyboardInterrupt from exc
        raise


@contextlib.contextmanager
def _file_errors(path: Path, *, writing: bool = True) -> Iterator[None]:
    """A DuckDB error that says something about the file raised as the error this module raises for it — no space
    left or not writable (`writing`: a reader is never told it cannot write), damaged; any other as it is."""
    try:
        yield
    except duckdb.Error as exc:
        text, first = str(exc), first_line(exc)
        problem: Exception | None = None
        if writing and "No space left on device" in text:
            # DuckDB says "Could not write file "<path>": No space left on device" (the path is its WAL or the file)
            quoted = re.search(r'"([^"]+)"', text)
            problem = DatabaseDiskFull(quoted[1] if quoted else str(path))
        elif writing and any(sign in first for sign in _READ_ONLY_SIGNS):
            problem = DatabaseReadOnly(path, first)
        elif any(sign in text for sign in _DAMAGE_SIGNS):
            problem = DatabaseDamaged(path, first)
        if problem is not None:
            raise problem from exc
        raise


#: DuckDB's file starts with a main header and two database headers of 4 KiB each, then the blocks
_HEADERS_BYTES = 3 * 4096


def _check_length(conn: duckdb.DuckDBPyConnection, path: Path) -> None:
    """A truncated file still opens (DuckDB reads its blocks lazily) and fails half-way through a run: the
    blocks in use must all lie inside the file."""
    _, _, block_size, _, used_blocks, *_ = one_row(conn, "PRAGMA database_size")
    length = path.stat().st_size
    if length and length < _HEADERS_BYTES + used_blocks * block_size:
        raise DatabaseDamaged(
            path,
            f"파일이 잘렸습니다 — {length:,} bytes, 사용 중인 블록 {used_blocks}개에 "
            f"{_HEADERS_BYTES + used_blocks * block_size:,} bytes 필요 (truncated)",
        )


def applied_migrations(conn: duckdb.DuckDBPyConnection) -> dict[int, tuple[str, str]]:
    exists = one_row(conn, "SELECT count(*) FROM information_schema.tables WHERE table_name = 'schema_migrations'")[0]
    if not exists:
        return {}
    return {v: (n, c) for v, n, c in conn.execute("SELECT version, name, checksum FROM schema_migrations").fetchall()}


def check_migrations(conn: duckdb.DuckDBPyConnection) -> tuple[list[Migration], list[str]]:
    """(pending migrations, problems): problems = applied files whose checksum changed or vanished."""
    applied = applied_migrations(conn)
    files = {m.version: m for m in migrations()}
    problems = []
    for version, (name, checksum) in sorted(applied.items()):
        m = files.get(version)
        if m is None:
            problems.append(f"migration {version:04d}_{name} is applied but its file is missing")
        elif checksum != m.checksum and checksum not in EARLIER_CHECKSUMS.get(version, frozenset()):
            problems.append(f"migration {version:04d}_{name}.sql was edited after it was applied (checksum differs)")
    pending = [m for v, m in sorted(files.items()) if v not in applied]
    return pending, problems


def backup_database(path: Path, backups_dir: Path, label: str) -> Path | None:
    """Copy the database file (caller holds the lock and has no open connection)."""
    if not path.exists():
        return None
    backups_dir.mkdir(parents=True, exist_ok=True)
    stamp = now_kst().strftime("%Y%m%d-%H%M%S")  # Seoul time, like every name the product writes
    target = backups_dir / f"{path.stem}-{label}-{stamp}{path.suffix}"
    with atomic_output(target) as tmp:
        shutil.copyfile(path, tmp)
    return target


def replace_database(new: Path, database: Path, reason: str) -> Path | None:
    """Put `new` — a closed database file beside `database` (same folder, so the rename is atomic) — in
    place of `database`, keeping the file it replaces (and its WAL) beside it as
    `<name>.before-<reason>-YYYYMMDD-HHMMSS` (`-2`, `-3`… after it within the same second); returns that path (None when there was no file). The
    caller holds the database lock. At no moment is there no database file: the old one is linked
    aside first, then `new` is renamed over it."""
    if new.with_name(new.name + ".wal").exists():
        raise RuntimeError(f"{new} still has a WAL: it was not closed cleanly")  # the caller's bug, not the user's
    aside, stamp = None, f"before-{reason}-{now_kst():%Y%m%d-%H%M%S}"
    wal = database.with_name(database.name + ".wal")
    if database.exists():
        aside = _link_aside(database, f"{database.name}.{stamp}")
        if wal.exists():  # it belongs to the old file: replayed onto the new one, it would damage it
            os.replace(wal, aside.with_name(aside.name + ".wal"))
    elif wal.exists():  # the WAL of a database file that is gone: kept aside too, never replayed onto the new one
        _link_aside(wal, f"{wal.name}.{stamp}")
        wal.unlink()
    os.replace(new, database)
    fsync_dir(database.parent)
    return aside


def _link_aside(database: Path, name: str) -> Path:
    """A second name for `database` beside it: `name`, or `name-2`, `name-3`… when a file kept by a replacement
    in the same second already has it (two rebuilds in one second must not fail, nor overwrite what is kept)."""
    for n in range(1, 1000):
        aside = database.with_name(name if n == 1 else f"{name}-{n}")
        try:
            os.link(database, aside)
            return aside
        except FileExistsError:
            continue
    raise RuntimeError(f"{database.parent}: 999 files named {name}… already")  # a loop, not a user's mistake


def _migrate(path: Path, backups_dir: Path, timeout_s: float) -> duckdb.DuckDBPyConnection:
    conn = _connect(path, timeout_s)
    pending, problems = check_migrations(conn)
    if problems:
        conn.close()
        raise MigrationError("; ".join(problems) + " — restore the original sql/migrations files.")
    if not pending:
        return conn
    if applied_migrations(conn):
        # An existing history: copy it before changing its schema.
        conn.execute("CHECKPOINT")
        conn.close()
        backup_database(path, backups_dir, f"before-migration-{pending[0].version:04d}")
        conn = _connect(path, timeout_s)
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, "
        "checksum VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL)"
    )
    for m in pending:
        conn.execute("BEGIN TRANSACTION")
        try:
            conn.execute(m.sql)
            conn.execute(
                "INSERT INTO schema_migrations VALUES (?, ?, ?, now()::TIMESTAMP)", [m.version, m.name, m.checksum]
            )
            conn.execute("COMMIT")
        except Exception:
            conn.execute("ROLLBACK")
            conn.close()
            raise
    return conn


def _holds_no_day(conn: duckdb.DuckDBPyConnection) -> bool:
    return one_row(conn, "SELECT count(*) FROM runs")[0] == 0


@contextlib.contextmanager
def open_database(
    path: str | Path,
    *,
    backups_dir: str | Path | None = None,
    lock_timeout_s: float = 900.0,
    purpose: str = "dmf",
    traces: HistoryTraces | None = None,
    writing: Collection[date] = (),
) -> Iterator[duckdb.DuckDBPyConnection]:
    """Exclusive, migrated connection to the history database; always closed, lock always released.

    `traces`: where earlier days leave files — given by every writer of the history (the runs), so a lost
    database is refused (`HistoryMissing`) instead of silently starting a new one; `writing`: the days
    being run, whose own raw archives do not count. Raises `DatabaseDamaged` for a file DuckDB cannot
    read and `DatabaseDiskFull` when a write inside the block finds no space left.
    """
    path = Path(path)
    if traces is not None and not path.exists() and (found := traces.describe(writing)):
        raise HistoryMissing(path, found)  # refused before anything is created
    path.parent.mkdir(parents=True, exist_ok=True)
    backups = Path(backups_dir) if backups_dir else path.parent / "backups"
    with database_lock(lock_path(path), lock_timeout_s, purpose), _interrupts_kept():
        if refused := write_refusal(path):  # said as such, before DuckDB would call it a lock held by another
            raise DatabaseReadOnly(path, refused)
        with _file_errors(path):  # its catalog could not be read, or a migration not written
            conn = _migrate(path, backups, lock_timeout_s)
        try:
            # the WAL could not be created or written, or a damaged block was met half-way through a run
            with _file_errors(path):
                if traces is not None and _holds_no_day(conn) and (found := traces.describe(writing)):
                    raise HistoryMissing(path, found, empty=True)
                yield conn
        finally:
            conn.close()


@contextlib.contextmanager
def read_only_database(path: str | Path, *, wait_s: float = 2.0) -> Iterator[duckdb.DuckDBPyConnection]:
    """A brief read-only connection, for a reader that must never hold a run up for long (the web page).

    The lock beside the database is taken shared — readers do not wait for each other, a writer waits until
    the last one is done — and waited for at most `wait_s`, then `DatabaseBusy` (a run is writing: say so,
    rather than hang). No database is created or migrated (only the lock file, when it is missing):
    `FileNotFoundError` when there is no database yet, `DatabaseOutdated` when migrations are pending (the
    next run applies them), `DatabaseDamaged` for a file DuckDB cannot read. Open it per question and close it
    at once: an open connection blocks writers.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(errno.ENOENT, "no history database yet", str(path))
    with open(lock_path(path), "a+") as fh:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_SH | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise DatabaseBusy(f"the history database is being written ({_holder_text(fh)})") from None
                time.sleep(0.05)
        try:
            try:
                with _file_errors(path, writing=False):
                    conn = duckdb.connect(str(path), read_only=True)
            except duckdb.Error as exc:
                if "lock" in str(exc).lower():  # another program (a DuckDB CLI) holds the file
                    raise DatabaseBusy(first_line(exc)) from exc
                raise
            try:
                with _file_errors(path, writing=False):
                    _check_length(conn, path)
                    pending, problems = check_migrations(conn)
                    if problems or pending:
                        raise DatabaseOutdated("; ".join(problems) or f"{len(pending)} migration(s) pending")
                    conn.execute("SET TimeZone = ?", [TIMEZONE_NAME])
                    yield conn
            finally:
                conn.close()
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
