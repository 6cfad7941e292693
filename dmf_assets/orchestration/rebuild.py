"""`dmf rebuild`: the history database made again from the raw archives (docs/DOMAIN.md §9 — the archives are
the event log, the database is derived from them).

Every archived day (`raw_dir/YYYY-MM-DD/`, optionally only `first`…`last`; an archive of a day no run can be
for — `outside_run_days` — is left out and named) is replayed in date order
through the project's own day pipeline — the archive alone, never a request (`source.fetch.replay_archive`)
→ normalize → gates 1–5 → diff and gate 6 → commit — with today's settings, into a new database beside the
old one (`<database>.rebuild`). A day the gates rejected is rejected again by the same gate; a day with no
archive is a gap, as it was. The whole rebuild holds the database lock, so no run writes the old file
meanwhile (runs wait for it, as for any long write).

When the old database can still be read, the new one must say the same — every day's outcome and every
event (ids and times aside) — or nothing is swapped unless `force` (re-processing with changed rules or
settings, a history older than the kept archives). Then the new file replaces the old one in one rename;
the old one stays beside it (`storage.db.replace_database`). Dagster's records are not touched.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from functools import partial
from pathlib import Path

import duckdb

from dmf_assets.clock import outside_run_days
from dmf_assets.domain.model import DayStatus
from dmf_assets.errors import UserError
from dmf_assets.orchestration import pipeline
from dmf_assets.orchestration.commit import DayOutcome
from dmf_assets.settings import Settings
from dmf_assets.source.archive import published_days
from dmf_assets.source.errors import SourceError
from dmf_assets.source.fetch import replay_archive
from dmf_assets.source.recheck import replay_recheck
from dmf_assets.storage import history
from dmf_assets.storage.db import database_lock, lock_path, open_database, replace_database
from dmf_assets.storage.ops import checkpoint

log = logging.getLogger("dmf.rebuild")

#: how many differences a refusal lists
SHOWN_DIFFERENCES = 5


@dataclass(frozen=True)
class RebuildResult:
    database: Path
    kept_aside: Path | None  # the replaced file, kept beside the new one (None: there was none)
    days: list[DayOutcome]  # in date order
    compared: bool  # the old database was readable and the new one says the same (else: `differences`)
    differences: list[str]
    seconds: float


def archived_days(raw_dir: Path, first: date | None = None, last: date | None = None) -> list[date]:
    """The days with a published archive (`YYYY-MM-DD/manifest.json`) that a run can be for, in date order."""
    return [
        day
        for day in published_days(raw_dir)
        if (first is None or day >= first) and (last is None or day <= last) and outside_run_days(day) is None
    ]


def unrunnable_archives(raw_dir: Path) -> list[date]:
    """Archived days no run can be for (before the first day, or after today: an earlier `dmf fetch --date
    2999-12-31` made them) — never replayed, never a difference."""
    return [day for day in published_days(raw_dir) if outside_run_days(day) is not None]


def _old_content(database: Path) -> history.HistoryContent | None:
    """What the database being replaced says, if it can still be read (None: missing or damaged)."""
    if not database.is_file():
        return None
    try:
        conn = duckdb.connect(str(database), read_only=True)
    except duckdb.Error:
        return None
    try:
        return history.history_content(conn)
    except duckdb.Error:
        return None
    finally:
        conn.close()


def _outcome_text(outcome: tuple) -> str:
    status, gate, *_ = outcome
    return DayStatus.of_value(status).word_ko + (f"(게이트 {gate})" if gate else "")


def differences(old: history.HistoryContent, new: history.HistoryContent, replayed: list[date]) -> list[str]:
    """Each day on which the two histories disagree, in words (`replayed`: the days the new one replayed)."""
    found = []
    for day in sorted(set(old.outcomes) | set(new.outcomes)):
        before, after = old.outcomes.get(day), new.outcomes.get(day)
        if before is None:
            assert after is not None  # the day is a key of one of the two histories
            found.append(f"{day}: 원래 이력에 없던 날이 생김 ({_outcome_text(after)}) / not in the old history")
        elif after is None:
            why = (
                "원본 보관이 없습니다 / no raw archive"
                if replayed[0] <= day <= replayed[-1]
                else f"다시 만든 범위({replayed[0]} ~ {replayed[-1]}) 밖입니다 / outside the rebuilt days"
            )
            found.append(f"{day}: 원래 이력({_outcome_text(before)})에만 있음 — {why}")
        elif before != after:
            found.append(
                f"{day}: {_outcome_text(before)} → {_outcome_text(after)} (판정 또는 건수가 다름 / outcome differs)"
            )
        elif old.events.get(day) != new.events.get(day):
            found.append(f"{day}: 이벤트 내용이 다름 / events differ")
    return found


def _replay(conn: duckdb.DuckDBPyConnection, raw_dir: Path, day: date, settings: Settings) -> DayOutcome:
    started = time.monotonic()
    try:
        fetched = pipeline.fetched(replay_archive(raw_dir, day, log), started)
    except SourceError as exc:  # a damaged archive: skipping the day would change the days after it
        raise UserError(
            f"{day}: 원본 보관을 읽을 수 없어 다시 만들 수 없습니다 — {exc}. 이 날을 빼려면 --from/--to로 범위를 "
            f"정하세요 (기존 DB는 그대로입니다) / cannot replay this day's archive; nothing was replaced"
        ) from None
    judged = pipeline.judge(conn, pipeline.normalize(fetched, settings), settings)
    if not judged.passed:
        return pipeline.carry_forward(conn, day)
    # the withdrawals are confirmed by the answers archived with the day, as the run that committed it saw them
    return pipeline.diff_and_commit(conn, judged, settings, recheck=partial(replay_recheck, raw_dir))


def rebuild_history(
    settings: Settings,
    *,
    database: Path,
    raw_dir: Path,
    backups_dir: Path,
    first: date | None = None,
    last: date | None = None,
    force: bool = False,
    lock_timeout_s: float = 900.0,
    progress: Callable[[DayOutcome], None] | None = None,
) -> RebuildResult:
    """Replay every archived day (`first`…`last`) into a new database and put it in place of `database`.
    Raises UserError when there is nothing to replay, an archive is damaged, or the old database is
    readable and says otherwise (unless `force`); the old database is then untouched."""
    started = time.monotonic()
    days = archived_days(raw_dir, first, last)
    if not days:
        span = f" ({first or '처음'} ~ {last or '끝'})" if first or last else ""
        raise UserError(f"다시 만들 원본 보관이 없습니다{span}: {raw_dir}/YYYY-MM-DD/ / no archived day to replay")
    work = database.with_name(database.name + ".rebuild")
    with database_lock(lock_path(database), lock_timeout_s, "dmf rebuild"):
        for leftover in (work, work.with_name(work.name + ".wal")):  # an earlier rebuild that was stopped
            leftover.unlink(missing_ok=True)
        outcomes = []
        try:
            with open_database(work, backups_dir=backups_dir, purpose="dmf rebuild") as conn:
                for day in days:
                    outcomes.append(_replay(conn, raw_dir, day, settings))
                    if progress:
                        progress(outcomes[-1])
                new = history.history_content(conn)
                checkpoint(conn)  # everything in the file itself: it moves without a WAL
            old = _old_content(database)
            found = differences(old, new, days) if old is not None else []
            if found and not force:
                shown = "; ".join(found[:SHOWN_DIFFERENCES]) + (
                    f" … 외 {len(found) - SHOWN_DIFFERENCES}일" if len(found) > SHOWN_DIFFERENCES else ""
                )
                raise UserError(
                    f"다시 만든 이력이 지금 DB와 {len(found)}일 다릅니다: {shown}. 기존 DB는 그대로 두었습니다 — 설정이나 규칙이 "
                    f"바뀌어 다시 처리하려는 것이면 --force로 바꾸세요 / the rebuilt history differs from the current "
                    "database on these days; nothing was replaced (use --force to replace it anyway)"
                )
            aside = replace_database(work, database, "rebuild")
        finally:
            for leftover in (work, work.with_name(work.name + ".wal"), lock_path(work)):
                leftover.unlink(missing_ok=True)
    return RebuildResult(database, aside, outcomes, old is not None and not found, found, time.monotonic() - started)
