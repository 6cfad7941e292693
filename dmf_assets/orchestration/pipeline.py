"""One day through the pipeline, step by step: what each asset does, without Dagster.

collect -> normalize -> judge (the gates before the diff, recorded in the database) -> diff_and_commit (the
gates that need the base, and gate 2 once more on the diff's withdrawals, asked of the source again; one
transaction). Each step loops over one gate registry (`domain.gates.GATES` unless given). Each step takes the
previous step's value and returns its own; the assets hand these values on through the day-store I/O
manager (`defs/io.py`), so a reader of an asset's signature sees exactly what it consumes. What `diff_and_commit` commits is the frame the gates judged: it is
part of the `JudgedDay` value, and before anything is written its row count and fingerprint are
compared with what `judge` recorded in the database (a damaged or replaced staged file is refused).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass, replace
from datetime import date
from typing import Any

import duckdb
import polars as pl

from dmf_assets.clock import require_not_behind
from dmf_assets.domain.diff import diff_snapshots
from dmf_assets.domain.gates import (
    BEFORE_DIFF,
    DROP,
    GATES,
    BaseFacts,
    Evidence,
    FetchFacts,
    GateOutcome,
    GateRegistry,
    Needs,
    QualityMetric,
    first_failure,
    gates_text,
    page_samples,
    quality_metrics,
    staleness_metric,
)
from dmf_assets.domain.model import API_FIELDS
from dmf_assets.domain.snapshot import build_snapshot
from dmf_assets.korean import josa
from dmf_assets.orchestration import commit
from dmf_assets.orchestration.commit import DayOutcome
from dmf_assets.settings import Settings
from dmf_assets.source.envelope import text_frame
from dmf_assets.source.fetch import FetchResult
from dmf_assets.source.identity import require_same
from dmf_assets.storage import history

log = logging.getLogger("dmf")


# --- the values handed from one asset to the next ------------------------------------------------


@dataclass(frozen=True)
class FetchedDay:
    """raw_pages: the day's rows as received (all strings) and what the fetch proved."""

    day: date
    facts: FetchFacts
    items: pl.DataFrame
    fetch: dict  # source, status, requests, retries, elapsed_s, archive_dir, pages (per-page stats)


@dataclass(frozen=True)
class NormalizedDay:
    """normalized_records: the keyed candidate snapshot and its quality metrics."""

    day: date
    facts: FetchFacts
    fetch: dict
    keyed: pl.DataFrame
    quality: list[QualityMetric]


@dataclass(frozen=True)
class JudgedDay:
    """integrity_verdict: the candidate snapshot together with the verdict of the gates before the diff on it."""

    day: date
    facts: FetchFacts
    keyed: pl.DataFrame
    gates: list[GateOutcome]
    quality: list[QualityMetric]
    base_day: date | None
    reason: str | None  # why the day was rejected (None = passed the gates before the diff)
    rederived_days: tuple[date, ...] = ()  # recomputed by its rejection (`DayOutcome.rederived_days`)
    rejudge_days: tuple[date, ...] = ()  # to be judged again after its rejection (`DayOutcome.rejudge_days`)

    @property
    def passed(self) -> bool:
        return self.reason is None

    @property
    def rejected_gate(self) -> int | None:
        return next((g.number for g in self.gates if g.passed is False), None)


# --- collect -------------------------------------------------------------------------------------


def facts_from_fetch(result: FetchResult) -> FetchFacts:
    """Adapt the client's FetchResult to what the gates need."""
    failed = sum(1 for p in result.pages if p.status != "ok")
    return FetchFacts(
        transport_ok=result.transport_ok,
        transport_errors=tuple(result.transport_errors),
        pages_ok=len(result.pages) - failed,
        pages_failed=failed or (0 if result.transport_ok else 1),
        total_count=result.total_count,
        total_count_note="; ".join(result.problems),
        rows_received=result.rows_received,
        rows_after_dedup=result.rows_after_dedup,
        duplicate_rows_dropped=result.duplicate_rows_dropped,
        unexpected_fields=tuple(result.unexpected_fields),
        missing_fields=tuple(result.missing_fields),
        stopped=result.stopped,
    )


def items_frame(items: list[dict]) -> pl.DataFrame:
    """API rows as an all-string frame (the nine fields first, then anything unexpected)."""
    frame = text_frame(items)
    absent = [pl.lit(None, pl.String).alias(f) for f in API_FIELDS if f not in frame.columns]
    return frame.with_columns(absent).select(*API_FIELDS, *sorted(set(frame.columns) - set(API_FIELDS)))


def collect(client: Any, day: date, logger: logging.Logger = log, *, resume: bool = True) -> FetchedDay:
    """Fetch (or replay from the archive) one day. `resume=False` asks the source again (a retry)."""
    started = time.monotonic()
    return fetched(client.fetch_day(day, log=logger, resume=resume), started)


def fetched(result: FetchResult, started: float) -> FetchedDay:
    """A fetch's (or an archive replay's) `FetchResult` as the value raw_pages hands on."""
    fetch = {
        "source": result.source,
        "status": result.status,
        "requests": result.requests,
        "retries": result.retries,
        "elapsed_s": round(time.monotonic() - started, 3),
        "archive_dir": str(result.archive_dir),
        "num_of_rows": result.num_of_rows,
        "source_id": result.source_id,
        "pages": [dataclasses.asdict(p) for p in result.pages],
    }
    return FetchedDay(result.day, facts_from_fetch(result), items_frame(list(result.items)), fetch)


# --- normalize -----------------------------------------------------------------------------------


def normalize(fetched: FetchedDay, settings: Settings) -> NormalizedDay:
    keyed = build_snapshot(fetched.items)
    quality = quality_metrics(keyed, fetched.facts, fetched.day, settings.quality)
    return NormalizedDay(fetched.day, fetched.facts, fetched.fetch, keyed, quality)


# --- judge (the gates before the diff) -----------------------------------------------------------


#: how the history database is named when a day it holds is later than today
HISTORY_DB_KO = "이력 DB"


def time_moves_forward(conn: duckdb.DuckDBPyConnection) -> None:
    """A run whose today (KST) is earlier than the newest day the history holds is refused (ClockBehind)
    before anything is judged or written: it would commit "today" before days already recorded."""
    require_not_behind(history.latest_recorded_day(conn), HISTORY_DB_KO)


def judge(
    conn: duckdb.DuckDBPyConnection,
    normalized: NormalizedDay,
    settings: Settings,
    run_id: str | None = None,
    *,
    registry: GateRegistry = GATES,
) -> JudgedDay:
    """Judge the registry's gates before the diff and record the verdict; a failed gate rejects the day in the
    database here. A day of another source than the history's is refused first (SourceMismatch): nothing is
    recorded."""
    day, facts, keyed, fetch = normalized.day, normalized.facts, normalized.keyed, normalized.fetch
    require_same(fetch.get("source_id"), history.history_source(conn), HISTORY_DB_KO)
    base = history.comparison_base(conn, day)
    pages = fetch.get("pages") or []
    evidence = Evidence(facts, base, keyed, page_samples(pages, fetch.get("num_of_rows"), facts.total_count))
    gates = [_with_drop_samples(conn, g, base, keyed) for g in registry.judge(evidence, settings.gates, BEFORE_DIFF)]
    quality = list(normalized.quality)
    if (stale := history.days_since_source_change(conn, base.day)) is not None:
        quality.append(staleness_metric(stale, settings.quality))
    judgement = history.Judgement(
        gates,
        quality,
        facts,
        pages,
        fetch.get("source", "?"),
        history.FrameIdentity.of(keyed),
        fetch.get("elapsed_s"),
        fetch.get("source_id"),
    )
    rejection = commit.record_judgement(
        conn, day, judgement, run_id=run_id, rules=commit.Rules.of(settings, registry), base=base
    )
    if rejection is None:
        return JudgedDay(day, facts, keyed, gates, quality, base.day, None)
    return JudgedDay(
        day, facts, keyed, gates, quality, base.day, rejection.reason, rejection.rederived_days, rejection.rejudge_days
    )


def _with_drop_samples(
    conn: duckdb.DuckDBPyConnection, gate: GateOutcome, base: BaseFacts, keyed: pl.DataFrame
) -> GateOutcome:
    """A failed drop gate shows which registrations of the base day are missing today."""
    if gate.number != DROP.number or gate.passed is not False or base.day is None:
        return gate
    return replace(gate, samples=tuple(history.missing_from_base(conn, base.day, keyed["dmf_key"].to_list(), limit=10)))


# --- diff and commit (the gates that need the base) ----------------------------------------------


class NotJudged(RuntimeError):
    """The history database holds no verdict for the day (integrity_verdict has not run on it)."""


class NotTheJudgedFrame(RuntimeError):
    """The frame handed to `diff_and_commit` is not the one the gates judged and recorded in the database (a
    damaged or replaced staged value, or a later judgement of the day): committing it could report rows it
    lacks as withdrawn."""

    def __init__(self, day: date, handed: history.FrameIdentity, recorded: history.FrameIdentity) -> None:
        self.day, self.handed, self.recorded = day, handed, recorded
        super().__init__(self.reason_ko)

    @property
    def reason_ko(self) -> str:
        def rows(identity: history.FrameIdentity) -> str:
            return "행 수 기록 없음" if identity.rows is None else f"{identity.rows:,}행"

        fingerprint = (
            f"지문 {(self.handed.fingerprint or '')[:12]} ≠ {(self.recorded.fingerprint or '기록 없음')[:12]}"
            if self.handed.fingerprint != self.recorded.fingerprint
            else "지문 같음"
        )
        judges = josa(gates_text(GATES.needing(BEFORE_DIFF)), "이/가")
        return (
            f"넘겨받은 값({rows(self.handed)})이 {judges} 판정하고 DB에 기록한 값({rows(self.recorded)})과 "
            f"다릅니다 ({fingerprint})"
        )


def _stored_failure(conn: duckdb.DuckDBPyConnection, day: date, registry: GateRegistry) -> dict | None:
    """The first gate judged before the diff that the database records as failed for `day` (None: none)."""
    before = {g.number for g in registry.needing(BEFORE_DIFF)}
    return next((g for g in history.gate_rows(conn, day) if g["gate_no"] in before and g["passed"] is False), None)


def carry_forward(conn: duckdb.DuckDBPyConnection, day: date, *, registry: GateRegistry = GATES) -> DayOutcome:
    """A day with no judged value to diff (its verdict rejected it, so none was handed on): what the
    database recorded for it — a rejection whose comparison base stays — or NotJudged."""
    run = history.run_row(conn, day)
    stored_failure = _stored_failure(conn, day, registry)
    if run is None or stored_failure is None:
        raise NotJudged(
            f"{day}: 넘겨받은 판정 값이 없고 이력 DB에도 이 날의 거부 판정이 없습니다 — 이 날짜를 raw_pages부터 다시 실행하세요. "
            "No judged value for this day and no rejection on record: re-run the day from raw_pages."
        )
    base = history.comparison_base(conn, day)
    return DayOutcome.carried(day, base.day, stored_failure["gate_no"], run.get("reason"))


def diff_and_commit(
    conn: duckdb.DuckDBPyConnection,
    judged: JudgedDay,
    settings: Settings,
    run_id: str | None = None,
    *,
    recheck: commit.Recheck | None = None,
    registry: GateRegistry = GATES,
) -> DayOutcome:
    """Diff the judged snapshot against the latest accepted day; commit it only if every gate passes.

    The gates that need the base are judged against the base the day is really compared with — another day
    may have been committed since the judgement: those that read the snapshot before the diff, the others on
    the diff — and stored with the day. `recheck` confirms every would-be WITHDRAWN with the source before the
    day is committed (gate 2 once more, `commit.recheck_gate`) — and those a re-derived later day gains; None: no
    source to ask (unit tests).

    Two verdicts must agree before anything is committed: the one carried by `judged` and the one in
    the database (a later judgement of the same day may have rejected it since). And the frame must be
    the one judged: its row count and fingerprint equal what the judgement recorded, else
    `NotTheJudgedFrame` and nothing is written.
    """
    started = time.monotonic()
    day, rules = judged.day, commit.Rules.of(settings, registry, recheck)
    run = history.run_row(conn, day)  # as the day's judgement recorded it
    if run is None:
        raise NotJudged(
            f"{day}: 이력 DB에 이 날짜의 판정이 없습니다 — integrity_verdict를 먼저 실행하세요. "
            "No verdict for this day in the history database; materialize integrity_verdict first."
        )
    base = history.comparison_base(conn, day)
    stored_failure = _stored_failure(conn, day, registry)  # the database's verdict, as the latest judgement stored it
    if not judged.passed or stored_failure is not None:
        gate = judged.rejected_gate or (stored_failure or {}).get("gate_no")
        return DayOutcome.carried(day, base.day, gate, judged.reason or run.get("reason"), time.monotonic() - started)
    handed, recorded = history.FrameIdentity.of(judged.keyed), history.judged_identity(run)
    if handed.fingerprint != recorded.fingerprint or recorded.rows not in (None, handed.rows):
        raise NotTheJudgedFrame(day, handed, recorded)

    def reject(gate: GateOutcome, judged_here: list[GateOutcome]) -> DayOutcome:
        return commit.reject_day(conn, day, gate, judged=judged_here, run_id=run_id, rules=rules, base=base)

    before = registry.judge(Evidence(judged.facts, base), settings.gates, (Needs.BASE,))
    if (failed := first_failure(before)) is not None:
        return replace(reject(failed, before), seconds=time.monotonic() - started)
    base_frame, seen = history.load_base(conn, base)
    diff = diff_snapshots(base_frame, judged.keyed, previously_seen=seen, watchlist=rules.watchlist)
    evidence = commit.diff_evidence(judged.facts, base, base_frame, judged.keyed, diff)
    gates = [*before, *registry.judge(evidence, settings.gates, (Needs.DIFF,))]
    confirmed, requests = None, 0
    if (failed := first_failure(gates)) is not None:
        out = reject(failed, gates)
    else:
        confirmed, requests = commit.recheck_gate(day, diff, base_frame, judged.keyed, recheck)
        if confirmed is not None and not confirmed.passed:  # stored with every gate judged before it
            out = reject(confirmed, gates)
        else:
            out = commit.commit_day(conn, day, judged.keyed, diff, base=base, gates=gates, run_id=run_id, rules=rules)
    return replace(
        out,
        counts=dict(diff.counts),
        gates=tuple(gates),
        diff=diff,
        seconds=time.monotonic() - started,
        recheck_requests=requests,
        recheck=confirmed,
    )
