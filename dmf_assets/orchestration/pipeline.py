"""One day through the pipeline, step by step: what each asset does, without Dagster.

collect -> normalize -> judge (gates 1–5, recorded in the database) -> diff_and_commit (gate 6, and gate 2
once more on the diff's withdrawals, asked of the source again; one transaction). Each step takes the
previous step's value and returns its own; the assets hand these values on through the day-store I/O
manager (`defs/io.py`), so a reader of an asset's signature sees exactly what it consumes. What `diff_and_commit` commits is the frame the gates judged: it is
part of the `JudgedDay` value, and before anything is written its row count and fingerprint are
compared with what `judge` recorded in the database (a damaged or replaced staged file is refused).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from typing import Any

import duckdb
import polars as pl

from dmf_assets.clock import require_not_behind
from dmf_assets.domain.diff import DiffResult, Watchlist, diff_snapshots
from dmf_assets.domain.gates import (
    DROP,
    GATE_BY_NUMBER,
    BaseFacts,
    FetchFacts,
    GateOutcome,
    QualityMetric,
    churn_against,
    gate_drop,
    gate_recheck,
    pre_diff_gates,
    quality_metrics,
)
from dmf_assets.domain.model import API_FIELDS
from dmf_assets.domain.normalize import without_lone_surrogates
from dmf_assets.domain.recheck import Query, judge_recheck, plan_recheck
from dmf_assets.domain.snapshot import build_snapshot
from dmf_assets.orchestration import commit
from dmf_assets.settings import Settings
from dmf_assets.source.identity import require_same
from dmf_assets.source.recheck import RecheckAnswers
from dmf_assets.storage import history

#: asks the source about would-be withdrawals (`MfdsClient.recheck` bound to the day, or the archive alone)
Recheck = Callable[[list[Query]], RecheckAnswers]

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
    """integrity_verdict: the candidate snapshot together with the verdict of gates 1–5 on it."""

    day: date
    facts: FetchFacts
    keyed: pl.DataFrame
    gates: list[GateOutcome]
    quality: list[QualityMetric]
    base_day: date | None
    reason: str | None  # why the day was rejected (None = passed gates 1–5)

    @property
    def passed(self) -> bool:
        return self.reason is None

    @property
    def rejected_gate(self) -> int | None:
        return next((g.number for g in self.gates if g.passed is False), None)


# --- collect -------------------------------------------------------------------------------------


def facts_from_fetch(result: Any) -> FetchFacts:
    """Adapt the client's FetchResult to what the gates need."""
    pages = list(result.pages)
    failed = [p for p in pages if not _page_ok(p)]
    return FetchFacts(
        transport_ok=bool(result.transport_ok),
        transport_errors=tuple(result.transport_errors),
        pages_ok=len(pages) - len(failed),
        pages_failed=len(failed) if failed else (0 if result.transport_ok else 1),
        total_count=result.total_count,
        total_count_note="; ".join(getattr(result, "problems", []) or []),
        rows_received=int(result.rows_received),
        rows_after_dedup=int(result.rows_after_dedup),
        duplicate_rows_dropped=int(result.duplicate_rows_dropped),
        unexpected_fields=tuple(result.unexpected_fields),
        missing_fields=tuple(result.missing_fields),
        stopped=str(getattr(result, "stopped", "") or ""),
    )


def _page_ok(page: Any) -> bool:
    status = page.get("status") if isinstance(page, dict) else getattr(page, "status", None)
    return status in ("ok", 200, "200")


def _page_dict(page: Any) -> dict:
    return page if isinstance(page, dict) else dict(vars(page))


def items_frame(items: list[dict]) -> pl.DataFrame:
    """API rows as an all-string frame (the nine fields first, then anything unexpected)."""
    columns = list(API_FIELDS) + sorted({k for it in items for k in it} - set(API_FIELDS))
    values = {c: [None if it.get(c) is None else str(it.get(c)) for it in items] for c in columns}
    try:
        return pl.DataFrame(values, schema=dict.fromkeys(columns, pl.Utf8))
    except UnicodeEncodeError:  # a lone surrogate, in an archive fetched before the fetch refused such pages
        shown = {c: [v if v is None else without_lone_surrogates(v) for v in vs] for c, vs in values.items()}
        return pl.DataFrame(shown, schema=dict.fromkeys(columns, pl.Utf8))


def collect(client: Any, day: date, logger: logging.Logger = log, *, resume: bool = True) -> FetchedDay:
    """Fetch (or replay from the archive) one day. `resume=False` asks the source again (a retry)."""
    started = time.monotonic()
    return fetched(client.fetch_day(day, log=logger, resume=resume), started)


def fetched(result: Any, started: float) -> FetchedDay:
    """A fetch's (or an archive replay's) `FetchResult` as the value raw_pages hands on."""
    fetch = {
        "source": result.source,
        "status": result.status,
        "requests": result.requests,
        "retries": result.retries,
        "elapsed_s": round(time.monotonic() - started, 3),
        "archive_dir": str(result.archive_dir),
        "num_of_rows": getattr(result, "num_of_rows", None),
        "source_id": getattr(result, "source_id", None),
        "pages": [_page_dict(p) for p in result.pages],
    }
    return FetchedDay(result.day, facts_from_fetch(result), items_frame(list(result.items)), fetch)


# --- normalize -----------------------------------------------------------------------------------


def normalize(fetched: FetchedDay, settings: Settings) -> NormalizedDay:
    keyed = build_snapshot(fetched.items)
    quality = quality_metrics(keyed, fetched.facts, fetched.day, settings.quality)
    return NormalizedDay(fetched.day, fetched.facts, fetched.fetch, keyed, quality)


# --- judge (gates 1–5) ---------------------------------------------------------------------------


#: how the history database is named when a day it holds is later than today
HISTORY_DB_KO = "이력 DB"


def time_moves_forward(conn: duckdb.DuckDBPyConnection) -> None:
    """A run whose today (KST) is earlier than the newest day the history holds is refused (ClockBehind)
    before anything is judged or written: it would commit "today" before days already recorded."""
    require_not_behind(history.latest_recorded_day(conn), HISTORY_DB_KO)


def judge(
    conn: duckdb.DuckDBPyConnection, normalized: NormalizedDay, settings: Settings, run_id: str | None = None
) -> JudgedDay:
    """Evaluate gates 1–5 and record the verdict; a failed gate rejects the day in the database here. A day of
    another source than the history's is refused first (SourceMismatch): nothing is recorded."""
    day, facts, keyed = normalized.day, normalized.facts, normalized.keyed
    require_same(normalized.fetch.get("source_id"), history.history_source(conn), HISTORY_DB_KO)
    base = history.comparison_base(conn, day)
    gates = pre_diff_gates(
        keyed,
        facts,
        base,
        settings.gates,
        pages=normalized.fetch.get("pages") or [],
        num_of_rows=normalized.fetch.get("num_of_rows"),
    )
    gates = [_with_drop_samples(conn, g, base, keyed) for g in gates]
    quality = list(normalized.quality)
    stale = history.days_since_source_change(conn, base.day)
    if stale is not None:
        quality.append(
            QualityMetric(
                "days_since_source_change",
                "원천 무변동 일수",
                stale,
                f"≤ {settings.quality.stale_source_days}",
                stale <= settings.quality.stale_source_days,
                f"기준일까지 {stale}일 연속 변경 없음",
            )
        )
    rejection = commit.record_judgement(
        conn,
        day,
        gates=gates,
        quality=quality,
        fetch=facts,
        pages=normalized.fetch.get("pages") or [],
        source=normalized.fetch.get("source", "?"),
        judged=history.FrameIdentity.of(keyed),
        run_id=run_id,
        fetch_seconds=normalized.fetch.get("elapsed_s"),
        watchlist=Watchlist.of(settings.watchlist),
        gate_settings=settings.gates,
        base=base,
        source_id=normalized.fetch.get("source_id"),
    )
    reason = None if rejection is None else rejection.reason
    return JudgedDay(day, facts, keyed, gates, quality, base.day, reason)


def _with_drop_samples(
    conn: duckdb.DuckDBPyConnection, gate: GateOutcome, base: BaseFacts, keyed: pl.DataFrame
) -> GateOutcome:
    """A failed drop gate shows which registrations of the base day are missing today."""
    if gate.number != DROP.number or gate.passed is not False or base.day is None:
        return gate
    missing = history.missing_from_base(conn, base.day, keyed["dmf_key"].to_list(), limit=10)
    return GateOutcome(
        gate.number,
        gate.passed,
        gate.observed_value,
        gate.threshold_value,
        gate.observed,
        gate.threshold,
        gate.detail,
        tuple(missing),
    )


# --- diff and commit (gate 6) --------------------------------------------------------------------


@dataclass(frozen=True)
class DayOutcome:
    day: date
    status: str  # accepted | baseline | rejected
    base_day: date | None
    counts: dict[str, int] = field(default_factory=dict)
    rejected_gate: int | None = None
    reason: str | None = None
    churn: GateOutcome | None = None
    failed_gate: GateOutcome | None = None  # the gate that refused the day here (drop re-judged, or churn)
    rederived_day: date | None = None
    carried_forward: bool = False  # rejected already by gates 1–5: nothing to diff
    diff: DiffResult | None = None
    seconds: float = 0.0
    recheck_requests: int = 0  # requests sent to confirm the day's withdrawals (0: none, or all archived)


def _churn_samples(diff: DiffResult) -> tuple[dict, ...]:
    top = diff.events.filter(~pl.col("is_cosmetic")).head(10)
    return tuple(top.select("event_type", "severity", "dmf_key", "ingredient_summary", "applicant_summary").to_dicts())


class NotJudged(RuntimeError):
    """The history database holds no verdict for the day (integrity_verdict has not run on it)."""


class NotTheJudgedFrame(RuntimeError):
    """The frame handed to `diff_and_commit` is not the one gates 1–5 judged and recorded in the database (a
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
        return (
            f"넘겨받은 값({rows(self.handed)})이 게이트 1–5가 판정하고 DB에 기록한 값({rows(self.recorded)})과 "
            f"다릅니다 ({fingerprint})"
        )


def _stored_pre_diff_failure(conn: duckdb.DuckDBPyConnection, day: date) -> dict | None:
    """The first gate judged before the diff that the database records as failed for `day` (None: none)."""
    return next(
        (
            g
            for g in history.gate_rows(conn, day)
            if not GATE_BY_NUMBER[g["gate_no"]].after_diff and g["passed"] is False
        ),
        None,
    )


def carry_forward(conn: duckdb.DuckDBPyConnection, day: date) -> DayOutcome:
    """A day with no judged value to diff (its verdict rejected it, so none was handed on): what the
    database recorded for it — a rejection whose comparison base stays — or NotJudged."""
    run = history.run_row(conn, day)
    stored_failure = _stored_pre_diff_failure(conn, day)
    if run is None or stored_failure is None:
        raise NotJudged(
            f"{day}: 넘겨받은 판정 값이 없고 이력 DB에도 이 날의 거부 판정이 없습니다 — 이 날짜를 raw_pages부터 다시 실행하세요. "
            "No judged value for this day and no rejection on record: re-run the day from raw_pages."
        )
    base = history.comparison_base(conn, day)
    return DayOutcome(
        day,
        "rejected",
        base.day,
        rejected_gate=stored_failure["gate_no"],
        reason=run.get("reason"),
        carried_forward=True,
    )


def diff_and_commit(
    conn: duckdb.DuckDBPyConnection,
    judged: JudgedDay,
    settings: Settings,
    run_id: str | None = None,
    *,
    recheck: Recheck | None = None,
) -> DayOutcome:
    """Diff the judged snapshot against the latest accepted day; commit it only if every gate passes.

    `recheck` confirms every would-be WITHDRAWN with the source before the day is committed (gate 2 once
    more, `_recheck_gate`); None: no source to ask (`dmf diff`-like callers and unit tests).

    Two verdicts must agree before anything is committed: the one carried by `judged` and the one in
    the database (a later judgement of the same day may have rejected it since). And the frame must be
    the one judged: its row count and fingerprint equal what the judgement recorded, else
    `NotTheJudgedFrame` and nothing is written.
    """
    started = time.monotonic()
    day = judged.day
    run = history.run_row(conn, day)
    if run is None:
        raise NotJudged(
            f"{day}: 이력 DB에 이 날짜의 판정이 없습니다 — integrity_verdict를 먼저 실행하세요. "
            "No verdict for this day in the history database; materialize integrity_verdict first."
        )
    base = history.comparison_base(conn, day)
    # the database's verdict: gates 1–5 as the latest judgement of this day stored them
    stored_failure = _stored_pre_diff_failure(conn, day)
    if not judged.passed or stored_failure is not None:
        return DayOutcome(
            day,
            "rejected",
            base.day,
            rejected_gate=judged.rejected_gate or (stored_failure or {}).get("gate_no"),
            reason=judged.reason or run.get("reason"),
            carried_forward=True,
            seconds=time.monotonic() - started,
        )

    handed, recorded = history.FrameIdentity.of(judged.keyed), history.judged_identity(run)
    if handed.fingerprint != recorded.fingerprint or recorded.rows not in (None, handed.rows):
        raise NotTheJudgedFrame(day, handed, recorded)

    watchlist = Watchlist.of(settings.watchlist)
    if base.day != judged.base_day:
        # another day was committed between the judgement and now: the drop gate is judged again
        # against the base this day will really be compared with
        drop = gate_drop(judged.facts, base, settings.gates)
        if not drop.passed:
            out = commit.reject_day(
                conn, day, drop, run_id=run_id, watchlist=watchlist, gates=settings.gates, base=base
            )
            return DayOutcome(
                day,
                "rejected",
                base.day,
                rejected_gate=drop.number,
                reason=drop.detail,
                failed_gate=drop,
                rederived_day=out.rederived_day,
                seconds=time.monotonic() - started,
            )

    base_frame, seen = history.load_base(conn, base)
    diff = diff_snapshots(base_frame, judged.keyed, previously_seen=seen, watchlist=watchlist)
    churn = churn_against(
        diff.counts,
        base,
        settings.gates,
        population=base_frame.height if base_frame is not None else judged.keyed.height,
        samples=_churn_samples(diff) if base.day is not None else (),
    )
    if not churn.passed:
        out = commit.reject_day(conn, day, churn, run_id=run_id, watchlist=watchlist, gates=settings.gates, base=base)
        return DayOutcome(
            day,
            "rejected",
            base.day,
            dict(diff.counts),
            rejected_gate=churn.number,
            reason=churn.detail,
            churn=churn,
            failed_gate=churn,
            rederived_day=out.rederived_day,
            diff=diff,
            seconds=time.monotonic() - started,
        )
    recheck_gate, requests = _recheck_gate(diff, base_frame, judged.keyed, recheck)
    if recheck_gate is not None:
        out = commit.reject_day(
            conn, day, recheck_gate, run_id=run_id, watchlist=watchlist, gates=settings.gates, base=base
        )
        return DayOutcome(
            day,
            "rejected",
            base.day,
            dict(diff.counts),
            rejected_gate=recheck_gate.number,
            reason=recheck_gate.detail,
            churn=churn,
            failed_gate=recheck_gate,
            rederived_day=out.rederived_day,
            diff=diff,
            seconds=time.monotonic() - started,
            recheck_requests=requests,
        )
    out = commit.commit_day(
        conn, day, judged.keyed, diff, base=base, churn=churn, run_id=run_id, watchlist=watchlist, gates=settings.gates
    )
    return DayOutcome(
        day,
        out.status,
        base.day,
        dict(diff.counts),
        churn=churn,
        rederived_day=out.rederived_day,
        diff=diff,
        seconds=time.monotonic() - started,
        recheck_requests=requests,
    )


def _recheck_gate(
    diff: DiffResult, base_frame: pl.DataFrame | None, snapshot: pl.DataFrame, recheck: Recheck | None
) -> tuple[GateOutcome | None, int]:
    """Gate 2 once more, on the withdrawals the diff found: each is asked of the source again (`domain.recheck`).
    Returns (the failed gate, or None when every one is confirmed or there is none; the requests it took)."""
    if recheck is None or base_frame is None:
        return None, 0
    gone = diff.events.filter(pl.col("event_type") == "WITHDRAWN")["dmf_key"].to_list()
    if not gone:
        return None, 0
    withdrawn = base_frame.filter(pl.col("dmf_key").is_in(gone))
    plan = plan_recheck(withdrawn)
    got = recheck(list(plan.queries))
    if got.legacy and all(a.items is None for a in got.answers.values()):
        # archived before withdrawals were re-checked, and the source cannot be asked now: accepted as it was then
        return None, got.requests
    verdict = judge_recheck(snapshot, withdrawn.height, plan, got.answers)
    log.info(
        "recheck: %d withdrawal(s), %d question(s), %d request(s): %s",
        verdict.withdrawals,
        verdict.queries,
        got.requests,
        "confirmed" if verdict.confirmed else f"{len(verdict.listed)} listed, {len(verdict.unconfirmed)} unconfirmed",
    )
    return (None if verdict.confirmed else gate_recheck(verdict)), got.requests
