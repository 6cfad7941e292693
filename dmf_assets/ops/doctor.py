"""`dmf doctor`: is the installation healthy? Read-only; never waits long for the database.

Checks, each OK / WARN / FAIL with one Korean + English line:
  database    the file opens read-only and every row of every table can be read (DuckDB verifies
              block checksums while reading, so a damaged file fails here — no CHECKPOINT, no write)
  schema      applied migrations vs sql/migrations (versions and checksums)
  references  snapshots/events/changes/versions point at rows that exist; no duplicate keys
  days        accepted days have a snapshot, rejected days have no history, nothing else has one
  unfinished  days judged by gates 1–5 but never committed or rejected (WARN while a run may still be
              between the two steps, FAIL after 30 minutes)
  source      which registry the history is built from (the emulator of a seed, the real API, another
              server); FAIL when the configured source is another one (its runs are refused)
  freshness   last accepted day vs today (Asia/Seoul); its raw archive is still there
  writable    the runs can write the database file, its WAL and its folder (not read-only, not immutable)
  clock       today (Asia/Seoul) is not earlier than the newest raw archive (a clock set back refuses every run)
  lock        who holds the database lock, and for how long
  backup      age of the newest backup, and that it opens
  disk        free space where the data lives
  temp files  `.*.tmp` files a killed writer left behind (they keep a full disk full)
  sizes       database, raw archive, staging, workbooks, backups, logs

Exit code: 2 if anything FAILs; 1 with `--strict` if anything WARNs; else 0.
The doctor itself never fails on a full or read-only disk: it writes nothing but the lock record,
and a lock it cannot take is a FAIL line, not a crash.
"""

from __future__ import annotations

import contextlib
import errno
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import date, datetime
from pathlib import Path

import duckdb

from dmf_assets.clock import now_kst
from dmf_assets.domain.model import DayStatus
from dmf_assets.errors import first_line
from dmf_assets.fsutil import is_disk_full, leaked_temp_files
from dmf_assets.korean import display_width, pad
from dmf_assets.ops.backup import list_backups
from dmf_assets.ops.common import (
    ProjectPaths,
    Unreadable,
    human_size,
    last_accepted_day,
    path_size,
    read_every_table,
    read_only_database,
)
from dmf_assets.ops.retention import PRUNED_TEMP_AGE_S
from dmf_assets.report.retention import dated_workbooks
from dmf_assets.source.archive import newest_archived_day
from dmf_assets.source.identity import folder_source
from dmf_assets.source.identity import label as source_label
from dmf_assets.storage import ops as ops_storage
from dmf_assets.storage.db import (
    WAYS_OUT_EN,
    WAYS_OUT_KO,
    DatabaseBusy,
    DatabaseReadOnly,
    HistoryTraces,
    MigrationError,
    check_migrations,
    lock_holder,
    migrations,
    write_refusal,
)
from dmf_assets.storage.history import history_source, to_date

OK, WARN, FAIL = "OK", "WARN", "FAIL"
_RANK = {OK: 0, WARN: 1, FAIL: 2}

#: (query name in sql/queries/ops.sql, Korean, English) — each must find nothing
REFERENCE_CHECKS = (
    ("snapshot_without_record", "스냅샷이 없는 등록을 가리킴", "snapshot rows without a record"),
    ("snapshot_without_version", "스냅샷이 없는 버전을 가리킴", "snapshot rows without a version"),
    ("snapshot_version_of_other_record", "스냅샷 버전이 다른 등록의 것", "snapshot version belongs to another record"),
    ("snapshot_duplicates", "스냅샷 (날짜, 등록) 중복", "duplicate (day_id, record_id) in snapshots"),
    ("version_without_record", "버전이 없는 등록을 가리킴", "versions without a record"),
    ("record_current_version_missing", "현재 버전이 없음", "records whose current version is missing"),
    ("event_without_record", "이벤트가 없는 등록을 가리킴", "events without their record"),
    ("event_without_version", "이벤트가 없는 버전을 가리킴", "events without their version"),
    ("change_without_event", "변경 내역이 없는 이벤트를 가리킴", "event_changes without an event"),
    ("duplicate_event_ids", "이벤트 ID 중복", "duplicate event ids"),
)
DAY_CHECKS = (
    ("accepted_day_without_snapshot", "반영된 날에 스냅샷이 없음", "accepted days without snapshot rows"),
    ("rejected_day_with_history", "거부된 날에 이력이 있음", "rejected days with snapshot or event rows"),
    ("snapshot_day_not_accepted", "반영되지 않은 날의 스냅샷", "snapshot rows for days not accepted"),
    ("event_day_not_accepted", "반영되지 않은 날의 이벤트", "events for days not accepted"),
    ("snapshot_size_mismatch", "스냅샷 행 수가 등록 수와 다름", "snapshot rows differ from runs.population"),
)


@dataclass(frozen=True)
class Thresholds:
    stale_warn_days: int = 1  # last accepted day older than this: WARN
    stale_fail_days: int = 3  # …older than this: FAIL
    disk_warn_bytes: int = 2 * 1024**3
    disk_fail_bytes: int = 200 * 1024**2
    backup_warn_hours: float = 48.0  # the daily backup runs at 05:30 KST
    lock_wait_s: float = 5.0  # how long the doctor waits for a run to release the database
    lock_stuck_hours: float = 6.0  # a lock held this long belongs to a stuck process
    unfinished_fail_minutes: float = 30.0  # a day judged this long ago and never committed: its run stopped


@dataclass(frozen=True)
class Check:
    name: str
    status: str
    label: str
    message_ko: str
    message_en: str
    details: dict = field(default_factory=dict)

    @staticmethod
    def named(name: str, label: str) -> Callable[..., Check]:
        """The maker of one check's line: each verdict then says only its status, its two texts and its details."""

        def verdict(status: str, ko: str, en: str, details: dict | None = None) -> Check:
            return Check(name, status, label, ko, en, details or {})

        return verdict


@dataclass
class DoctorReport:
    database: Path
    now: datetime
    checks: list[Check]

    @property
    def status(self) -> str:
        return max((c.status for c in self.checks), key=_RANK.__getitem__, default=OK)

    def exit_code(self, strict: bool = False) -> int:
        return 2 if self.status == FAIL else 1 if (strict and self.status == WARN) else 0

    def check(self, name: str) -> Check:
        return next(c for c in self.checks if c.name == name)

    def to_dict(self, strict: bool = False) -> dict:
        return {
            "database": str(self.database),
            "checked_at": self.now.isoformat(timespec="seconds"),
            "status": self.status,
            "exit_code": self.exit_code(strict),
            "checks": [asdict(c) for c in self.checks],
        }

    def table(self, strict: bool = False) -> str:
        width = max(display_width(c.label) for c in self.checks)
        lines = [f"DMF Watch 점검 / doctor — {self.database} — {self.now:%Y-%m-%d %H:%M} KST"]
        for c in self.checks:
            lines.append(f"  {c.status:<4}  {pad(c.label, width)}  {c.message_ko} — {c.message_en}")
        counts = {s: sum(1 for c in self.checks if c.status == s) for s in (OK, WARN, FAIL)}
        lines.append(
            f"결과 / result: OK {counts[OK]} · WARN {counts[WARN]} · FAIL {counts[FAIL]} "
            f"→ 종료 코드 / exit {self.exit_code(strict)}" + (" (--strict)" if strict else "")
        )
        return "\n".join(lines)


# --- database checks ----------------------------------------------------------------------------


def _problem_check(
    conn: duckdb.DuckDBPyConnection, check: Callable[..., Check], specs: tuple, ok_ko: str, ok_en: str
) -> Check:
    problems: list[tuple[str, str]] = []
    details: dict[str, dict[str, object]] = {}
    for query_name, ko, en in specs:
        try:
            n, sample = ops_storage.problem_count(conn, query_name)
        except duckdb.Error as exc:
            problems.append((f"{ko}: 확인 불가 ({first_line(exc)})", f"{en}: cannot check"))
            details[query_name] = {"error": first_line(exc)}
            continue
        sample = [str(s) for s in (sample or [])]
        details[query_name] = {"count": n, "sample": sample}
        if n:
            problems.append((f"{ko} {n}건 (예: {', '.join(sample)})", f"{en}: {n} (e.g. {', '.join(sample)})"))
    if problems:
        return check(FAIL, "; ".join(p[0] for p in problems), "; ".join(p[1] for p in problems), details)
    return check(OK, ok_ko, ok_en, details)


def _schema_check(conn: duckdb.DuckDBPyConnection, tables: list[str]) -> Check:
    check = Check.named("schema", "스키마 / schema")
    if "schema_migrations" not in tables:
        return check(
            FAIL,
            "schema_migrations 표가 없습니다 (DMF Watch DB가 아님)",
            "no schema_migrations table: not a DMF Watch database",
        )
    try:
        pending, problems = check_migrations(conn)
    except MigrationError as exc:  # e.g. two migration files with one number
        return check(FAIL, f"마이그레이션 파일 오류: {exc}", str(exc))
    applied = ops_storage.applied_versions(conn)
    files = [m.version for m in migrations()]
    details = {"applied": applied, "files": files, "pending": [m.version for m in pending], "problems": problems}
    if problems:
        return check(
            FAIL,
            "마이그레이션 파일이 적용 후 바뀌었습니다: " + "; ".join(problems),
            "; ".join(problems) + " — restore the original sql/migrations files",
            details,
        )
    version = applied[-1] if applied else 0
    if pending:
        names = ", ".join(f"{m.version:04d}_{m.name}" for m in pending)
        return check(
            WARN,
            f"버전 {version}, 대기 중인 마이그레이션 {names} (다음 실행 때 적용)",
            f"version {version}; pending {names} (applied, after a backup, on the next run)",
            details,
        )
    ko = f"버전 {version}, 체크섬 일치 ({len(applied)}개)"
    return check(OK, ko, f"version {version}, {len(applied)} migration checksum(s) match", details)


def _unfinished_check(conn: duckdb.DuckDBPyConnection, now: datetime, th: Thresholds) -> Check:
    """Days judged by gates 1–5 but never committed or rejected afterwards (snapshot_diff failed, or is running)."""
    check = Check.named("unfinished", "미완료 날짜 / unfinished")
    rows = ops_storage.unfinished_days(conn)
    if not rows:
        return check(OK, "판정된 날은 모두 반영 또는 거부됨", "every judged day was committed or rejected")
    days = [to_date(d) for d, _ in rows]
    minutes = max(0.0, (now.replace(tzinfo=None) - max(at for _, at in rows)).total_seconds() / 60)
    shown = ", ".join(map(str, days[:5])) + (" …" if len(days) > 5 else "")
    details = {"days": [d.isoformat() for d in days], "minutes_since_latest": round(minutes, 1)}
    status = FAIL if minutes > th.unfinished_fail_minutes else WARN
    ko = (
        f"판정만 되고 반영·거부되지 않은 날 {len(days)}일: {shown} (가장 최근 판정 {minutes:.0f}분 전) — 실행 중이 아니면 "
        f"snapshot_diff가 실패한 것입니다: 그 날짜를 raw_pages부터 다시 실행하세요 (dmf run --date {days[-1]})"
    )
    en = (
        f"{len(days)} day(s) judged but never committed or rejected ({shown}): unless a run is in progress, "
        "snapshot_diff failed — re-run the day from raw_pages"
    )
    return check(status, ko, en, details)


_FRESHNESS = Check.named("freshness", "최신 반영일 / freshness")


def _freshness_check(conn: duckdb.DuckDBPyConnection, paths: ProjectPaths, today: date, th: Thresholds) -> Check:
    last = last_accepted_day(conn)
    latest = ops_storage.latest_run(conn)
    latest_note_ko = latest_note_en = ""
    if latest:
        d, status, gate = to_date(latest[0]), latest[1], latest[2]
        gate_txt = f", 게이트 {gate}" if gate else ""
        latest_note_ko = f"; 마지막 실행 {d} {DayStatus.of_value(status).word_ko}{gate_txt}"
        latest_note_en = f"; latest run {d} {status}" + (f" (gate {gate})" if gate else "")
    if last is None:
        ko, en = "반영된 날이 없습니다" + latest_note_ko, "no accepted day yet" + latest_note_en
        return _FRESHNESS(FAIL, ko, en, {"last_accepted": None})
    age = (today - last).days
    details = {
        "last_accepted": last.isoformat(),
        "age_days": age,
        "today": today.isoformat(),
        "latest_run": latest and {"day": to_date(latest[0]).isoformat(), "status": latest[1]},
    }
    status = FAIL if age > th.stale_fail_days else WARN if age > th.stale_warn_days else OK
    ko = f"마지막 반영일 {last} ({age}일 전){latest_note_ko}"
    en = f"last accepted day {last} ({age} day(s) ago){latest_note_en}"
    if status != OK:
        limit = th.stale_fail_days if status == FAIL else th.stale_warn_days
        ko += f" — {limit}일 초과, 수집이 멈췄는지 확인하세요"
        en += f" — older than {limit} day(s): is the daily run failing?"
    if not (paths.raw_dir / last.isoformat()).is_dir():
        status = max(status, WARN, key=_RANK.__getitem__)
        ko += f"; 마지막 반영일의 원본 보관({paths.raw_dir / last.isoformat()})이 없습니다"
        en += "; the raw archive of the last accepted day is missing"
        details["raw_archive_missing"] = True
    return _FRESHNESS(status, ko, en, details)


def _source_check(conn: duckdb.DuckDBPyConnection, paths: ProjectPaths, configured: str | None) -> Check:
    """One source per history (source.identity): which registry the history is built from, and whether the
    configured source is that one — a run of another source is refused."""
    check = Check.named("source", "원천 / source")
    held = history_source(conn)
    if held is None and (archived := folder_source(paths.raw_dir)):
        held = archived[0]
    details = {"history": held, "configured": configured}
    if held is None:
        return check(OK, "아직 수집한 원천이 없습니다", "no source recorded yet", details)
    if configured is not None and configured != held:
        return check(
            FAIL,
            f"이력은 {source_label(held)}에서 만들어졌는데 설정된 원천은 {source_label(configured)}입니다 — 실행이 "
            "거부됩니다. 새 원천으로 시작하려면 새 데이터 폴더를 쓰거나 README의 '원천 바꾸기'대로 지금 폴더를 옮겨 두세요",
            f"the history is built from {held}, the configuration names {configured}: runs are refused",
            details,
        )
    note = "" if configured is not None else " (설정된 서버가 응답하지 않아 그 원천은 확인하지 못했습니다)"
    return check(OK, f"이력의 원천: {source_label(held)}{note}", f"history built from {held}", details)


#: the check of the database file itself
_DATABASE = Check.named("database", "DB 파일 / database")


def _database_checks(
    paths: ProjectPaths, now: datetime, th: Thresholds, source: str | None = None
) -> tuple[list[Check], dict | None]:
    """The checks that need the database; plus the lock holder when the lock could not be taken."""
    db = paths.database
    traces = HistoryTraces(paths.raw_dir, paths.events_dir, paths.reports_dir).describe()
    if not db.is_file():
        return [_missing_database(db, traces)], None
    try:
        with read_only_database(db, lock_timeout_s=th.lock_wait_s, purpose="dmf doctor") as conn:
            return _open_database_checks(conn, paths, now, th, source, traces), None
    except DatabaseBusy:
        holder = lock_holder(db) or {"holder": "unknown"}
        ko = f"다른 실행이 DB를 {th.lock_wait_s:.0f}초 넘게 사용 중이라 DB 점검을 건너뜀"
        en = f"database busy for more than {th.lock_wait_s:.0f} s; database checks skipped"
        return [_DATABASE(WARN, ko, en, {"holder": holder})], holder
    except OSError as exc:  # the lock file cannot be created or written: a full or read-only disk
        return [_lock_refused(db, exc)], None
    except duckdb.Error as exc:
        msg = first_line(exc)
        if "lock" in msg.lower():
            ko, en = f"다른 프로그램이 DB 파일을 열고 있습니다: {msg}", "another program holds the file"
        else:
            ko = f"DB 파일이 손상되어 열리지 않습니다 ({msg}) — {WAYS_OUT_KO}"
            en = f"the file is corrupt and does not open — {WAYS_OUT_EN}"
        return [_DATABASE(FAIL, ko, en, {"error": msg})], None


def _missing_database(db: Path, traces: str | None) -> Check:
    if traces:
        return _DATABASE(
            FAIL,
            f"DB 파일이 없는데 이전 날의 기록이 남아 있습니다 ({db}): {traces} — {WAYS_OUT_KO}",
            f"no database file at {db} although earlier days exist — {WAYS_OUT_EN}",
            {"traces": traces},
        )
    return _DATABASE(
        FAIL, f"DB 파일이 없습니다 ({db}) — `dmf demo` 또는 일일 실행 후 생깁니다", f"no database file at {db}"
    )


def _lock_refused(db: Path, exc: OSError) -> Check:
    msg = f"{exc.strerror or exc} ({exc.filename or db})"
    hint_ko, hint_en = (
        ("디스크 공간이 부족합니다", "no space left on device: free some space")
        if is_disk_full(exc)
        else ("읽기 전용 디스크입니다", "the disk is read-only")
        if exc.errno == errno.EROFS
        else ("파일을 쓸 수 없습니다", "cannot write there")
    )
    return _DATABASE(
        FAIL,
        f"DB 잠금 파일을 만들 수 없어 점검하지 못했습니다 — {hint_ko}: {msg}",
        f"cannot take the database lock — {hint_en}: {msg}",
        {"error": msg, "errno": exc.errno},
    )


def _open_database_checks(
    conn: duckdb.DuckDBPyConnection,
    paths: ProjectPaths,
    now: datetime,
    th: Thresholds,
    source: str | None,
    traces: str | None,
) -> list[Check]:
    """Every table read, then the schema, the references, the days, the unfinished days, the source and the
    freshness — or the one reason the file cannot be trusted."""
    try:
        counts = read_every_table(conn)
    except Unreadable as exc:
        ko = f"DB 파일이 손상되었습니다 — '{exc.table}' 표를 읽을 수 없습니다: {exc.error} — {WAYS_OUT_KO}"
        en = f"the file is corrupt: table {exc.table} is unreadable — {WAYS_OUT_EN}"
        return [_DATABASE(FAIL, ko, en, {"table": exc.table, "error": exc.error})]
    except duckdb.Error as exc:  # the catalog itself
        ko = f"DB 파일이 손상되었습니다 — 목록(catalog)을 읽을 수 없습니다: {first_line(exc)} — {WAYS_OUT_KO}"
        en = f"the file is corrupt: its catalog is unreadable — {WAYS_OUT_EN}"
        return [_DATABASE(FAIL, ko, en, {"error": first_line(exc)})]
    if counts.get("runs") == 0 and traces:
        ko = f"DB에 기록된 날이 하나도 없는데 이전 날의 기록이 남아 있습니다: {traces} — {WAYS_OUT_KO}"
        en = f"the database holds no day although earlier days exist — {WAYS_OUT_EN}"
        return [_DATABASE(FAIL, ko, en, {"tables": counts, "traces": traces})]
    size = path_size(paths.database)
    shown = ", ".join(f"{t} {counts[t]:,}" for t in ("runs", "snapshots", "events") if t in counts)
    return [
        _DATABASE(
            OK,
            f"{len(counts)}개 표 모두 읽힘 ({shown}), {human_size(size)}",
            f"all {len(counts)} tables readable, {human_size(size)}",
            {"tables": counts, "bytes": size},
        ),
        _schema_check(conn, list(counts)),
        _problem_check(
            conn,
            Check.named("references", "참조 무결성 / references"),
            REFERENCE_CHECKS,
            "스냅샷·이벤트·변경·버전의 참조가 모두 맞음",
            "snapshots, events, changes and versions all resolve",
        ),
        _problem_check(
            conn,
            Check.named("days", "날짜 일관성 / days"),
            DAY_CHECKS,
            "반영일만 스냅샷이 있고 거부일은 이력이 없음",
            "only accepted days have history; rejected days have none",
        ),
        _unfinished_check(conn, now, th),
        _source_check(conn, paths, source),
        _freshness_or_failure(conn, paths, now, th),
    ]


def _freshness_or_failure(conn: duckdb.DuckDBPyConnection, paths: ProjectPaths, now: datetime, th: Thresholds) -> Check:
    try:
        return _freshness_check(conn, paths, now.date(), th)
    except duckdb.Error as exc:
        return _FRESHNESS(FAIL, f"확인 불가: {first_line(exc)}", "cannot read the runs table")


# --- file checks --------------------------------------------------------------------------------


def _clock_check(paths: ProjectPaths, today: date) -> Check:
    """Time only moves forward: today (KST) earlier than the newest archived day means the clock was set back —
    every run is refused until it is right (a run would commit "today" before days already recorded)."""
    check = Check.named("clock", "시계 / clock")
    newest = newest_archived_day(paths.raw_dir)
    details = {"today": today.isoformat(), "newest_archive": newest and newest.isoformat()}
    if newest is not None and today < newest:
        return check(
            FAIL,
            f"시계가 뒤로 갔습니다: 오늘(KST)이 {today}인데 원본 보관에 {newest}의 수집본이 있습니다 "
            f"({paths.raw_dir / newest.isoformat()}) — 이 컴퓨터의 날짜·시각과 시간대(timedatectl, NTP)를 확인하세요; "
            "그때까지 모든 실행이 거부됩니다",
            f"the clock says today is {today} (KST) but the newest archive is of {newest}: check the system clock; "
            "every run is refused until then",
            details,
        )
    shown = f"가장 최근 원본 보관 {newest}" if newest else "원본 보관 없음"
    return check(OK, f"오늘(KST) {today}, {shown}", f"today {today} (KST), not before any archive", details)


def _writable_check(paths: ProjectPaths) -> Check:
    """The runs write the database: one that cannot be written (permissions, an immutable file or folder, a
    read-only mount) fails every run, so it is a FAIL here too, said as what it is."""
    check = Check.named("writable", "DB 쓰기 / writable")
    if refused := write_refusal(paths.database):
        return check(
            FAIL,
            f"실행이 이력 DB에 쓸 수 없습니다 — 읽기 전용이거나 바꿀 수 없게(immutable) 되어 있습니다 ({refused}); "
            f"{DatabaseReadOnly.CHECK_KO}",
            f"the runs cannot write the history database: read-only or immutable — {DatabaseReadOnly.CHECK_EN}",
            {"error": refused},
        )
    return check(OK, "실행이 DB에 쓸 수 있음", "the runs can write the database")


def _lock_check(holder: dict | None, was_held: dict | None, now: datetime, th: Thresholds) -> Check:
    check = Check.named("lock", "DB 잠금 / lock")
    if holder is None:
        if was_held:
            return check(
                OK,
                f"잠시 사용 중이었다가 풀림 (pid {was_held.get('pid')})",
                f"briefly held by pid {was_held.get('pid')} ({was_held.get('purpose')}), released",
                {"was_held": was_held},
            )
        return check(OK, "사용 중인 실행 없음", "free")
    who = f"pid {holder.get('pid')} @ {holder.get('host')} ({holder.get('purpose')})"
    held_h = None
    with contextlib.suppress(KeyError, TypeError, ValueError):
        held_h = (now - datetime.fromisoformat(holder["since"])).total_seconds() / 3600
    since = f", {held_h:.1f}시간째" if held_h is not None else ""
    since_en = f" for {held_h:.1f} h" if held_h is not None else ""
    details = {"holder": holder, "held_hours": held_h}
    if held_h is not None and held_h > th.lock_stuck_hours:
        ko, en = (
            f"{who}가 DB를 잡고 있음{since} — 멈춘 프로세스인지 확인하세요",
            f"held by {who}{since_en}: stuck process?",
        )
        return check(FAIL, ko, en, details)
    return check(WARN, f"{who}가 사용 중{since}", f"held by {who}{since_en}", details)


def _backup_check(paths: ProjectPaths, now: datetime, th: Thresholds) -> Check:
    check = Check.named("backup", "백업 / backup")
    backups = list_backups(paths.backups_dir)
    if not backups:
        return check(
            WARN,
            "백업이 없습니다 — `dmf backup` (매일 05:30 KST 자동)",
            "no backup yet — run `dmf backup` (daily at 05:30 KST)",
            {"count": 0},
        )
    newest = backups[-1]
    age_h = max(0.0, (now - newest.taken_at).total_seconds() / 3600)
    details = {"count": len(backups), "newest": str(newest.path), "age_hours": round(age_h, 1)}
    try:
        conn = duckdb.connect(str(newest.path), read_only=True)
        try:
            details["runs"] = ops_storage.runs_count(conn)
        finally:
            conn.close()
    except duckdb.Error as exc:
        ko = f"최신 백업을 열 수 없습니다 ({newest.path.name}): {first_line(exc)}"
        return check(FAIL, ko, "the newest backup does not open", details)
    ko = f"최신 {newest.path.name} ({age_h:.1f}시간 전, 실행 기록 {details['runs']}일), 모두 {len(backups)}개"
    en = f"newest {age_h:.1f} h old, opens ({details['runs']} runs); {len(backups)} backup(s)"
    if age_h > th.backup_warn_hours:
        limit = f"{th.backup_warn_hours:.0f}"
        return check(WARN, ko + f" — {limit}시간 초과", en + f" — older than {limit} h", details)
    return check(OK, ko, en, details)


def _existing_ancestor(path: Path) -> Path:
    path = path.absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _disk_check(paths: ProjectPaths, th: Thresholds) -> Check:
    check = Check.named("disk", "디스크 / disk")
    # data/, reports/ and backups may sit on different file systems: the fullest one decides
    places: dict[int, Path] = {}
    for folder in (paths.database.parent, paths.raw_dir, paths.reports_dir, paths.backups_dir):
        where = _existing_ancestor(folder)
        places.setdefault(where.stat().st_dev, where)
    free_by_place = {where: shutil.disk_usage(where).free for where in places.values()}
    where = min(free_by_place, key=free_by_place.__getitem__)
    free = free_by_place[where]
    details = {"path": str(where), "free_bytes": free, "places": {str(p): f for p, f in free_by_place.items()}}
    ko, en = f"{where} 여유 {human_size(free)}", f"{human_size(free)} free under {where}"
    for status, limit in ((FAIL, th.disk_fail_bytes), (WARN, th.disk_warn_bytes)):
        if free < limit:
            return check(status, ko + f" (< {human_size(limit)})", en + f" (< {human_size(limit)})", details)
    return check(OK, ko, en, details)


#: a temporary file this old has no writer any more (a run is limited to 30 minutes)
STALE_TEMP_S = 3600


def _temp_files_check(paths: ProjectPaths) -> Check:
    check = Check.named("temp_files", "임시 파일 / temp files")
    stale = []
    for p in leaked_temp_files(*paths.written_folders):
        try:
            st = p.stat()
        except FileNotFoundError:  # its writer just finished
            continue
        if time.time() - st.st_mtime > STALE_TEMP_S:  # the real clock (--today only moves the freshness date)
            stale.append((p, st.st_size))
    if not stale:
        return check(OK, "남은 임시 파일 없음", "no leaked temporary files", {"count": 0})
    total, hours = sum(size for _, size in stale), PRUNED_TEMP_AGE_S // 3600
    shown = ", ".join(str(p) for p, _ in stale[:3]) + (" …" if len(stale) > 3 else "")
    return check(
        WARN,
        f"중단된 쓰기가 남긴 임시 파일 {len(stale)}개 ({human_size(total)}): {shown} — `dmf prune`이 만든 지 "
        f"{hours}시간이 지난 것을 지웁니다",
        f"{len(stale)} leaked temporary file(s), {human_size(total)} — `dmf prune` removes them once {hours} hours old",
        {"count": len(stale), "bytes": total, "files": [str(p) for p, _ in stale]},
    )


def _sizes_check(paths: ProjectPaths) -> Check:
    db = path_size(paths.database) + path_size(paths.database.with_name(paths.database.name + ".wal"))
    raw_days = sorted(p.name for p in paths.raw_dir.glob("????-??-??") if p.is_dir()) if paths.raw_dir.is_dir() else []
    workbooks = dated_workbooks(paths.reports_dir)
    backups = list_backups(paths.backups_dir)
    sizes = {
        "database": db,
        "raw": path_size(paths.raw_dir),
        "staging": path_size(paths.staging_dir),
        "reports": path_size(paths.reports_dir),
        "backups": path_size(paths.backups_dir),
        "events": path_size(paths.events_dir),
        "logs": path_size(paths.logs_dir),
        "dagster_logs": path_size(paths.dagster_storage),
    }
    oldest_raw = raw_days[0] if raw_days else None
    ko = (
        f"DB {human_size(db)} · 원본 {human_size(sizes['raw'])} ({len(raw_days)}일, 가장 오래된 {oldest_raw or '-'}) · "
        f"리포트 {human_size(sizes['reports'])} ({len(workbooks)}개) · 백업 {human_size(sizes['backups'])} "
        f"({len(backups)}개) · 스테이징 {human_size(sizes['staging'])} · 로그 "
        f"{human_size(sizes['logs'] + sizes['dagster_logs'])}"
    )
    en = (
        f"db {human_size(db)}, raw {human_size(sizes['raw'])}, reports {human_size(sizes['reports'])}, "
        f"backups {human_size(sizes['backups'])}"
    )
    details = {
        "bytes": sizes,
        "raw_days": len(raw_days),
        "oldest_raw_day": oldest_raw,
        "workbooks": len(workbooks),
        "backups": len(backups),
    }
    return Check("sizes", OK, "용량 / sizes", ko, en, details)


def run_doctor(
    paths: ProjectPaths,
    *,
    now: datetime | None = None,
    thresholds: Thresholds | None = None,
    source: str | None = None,
) -> DoctorReport:
    """Every check, in display order. Never raises for a bad database: that is a FAIL line. `source`: the
    configured source (`source.identity`), None when it cannot be told (a server that does not answer)."""
    th = thresholds or Thresholds()
    now = now or now_kst()
    was_held = lock_holder(paths.database) if paths.database.is_file() else None
    db_checks, holder = _database_checks(paths, now, th, source)
    checks = [
        *db_checks,
        _writable_check(paths),
        _clock_check(paths, now.date()),
        _lock_check(holder, was_held, now, th),
        _backup_check(paths, now, th),
        _disk_check(paths, th),
        _temp_files_check(paths),
        _sizes_check(paths),
    ]
    return DoctorReport(paths.database, now, checks)
