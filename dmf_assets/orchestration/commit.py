"""Committing a judged day to the history and keeping the chain of days consistent (docs/DOMAIN.md §7).

Each public function here is one transaction (`storage.history.transaction`): the day's verdict or
history is written together with the re-derivation of the next accepted day after it, so days may
be committed in any order and the chain still ends up exactly as if they had run in date order.
The decisions are made here — what the next accepted day's diff against its new base is, whether
its base-dependent gates (3 drop, 6 churn) still pass — and `storage.history` writes the outcome.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import date

import duckdb
import polars as pl

from dmf_assets.domain.diff import DiffResult, Watchlist, diff_snapshots
from dmf_assets.domain.gates import (
    BaseFacts,
    FetchFacts,
    GateOutcome,
    GateThresholds,
    QualityMetric,
    churn_against,
    drop_against,
    rejection_reason,
)
from dmf_assets.storage import history


@dataclass(frozen=True)
class CommitOutcome:
    day: date
    status: str  # accepted | baseline | rejected
    base_day: date | None
    counts: dict[str, int]
    rederived_day: date | None  # the next accepted day whose events were recomputed
    seconds: float
    reason: str | None = None  # a rejected day: the reason its run row records (`gates.rejection_reason`)


def _rederive_next(
    conn: duckdb.DuckDBPyConnection, day: date, watchlist: Watchlist | None, gates: GateThresholds | None
) -> date | None:
    """Recompute the events of the next accepted day after `day` against its (new) base.

    The base-dependent gates (3 drop, 6 churn) are judged again against the new base and stored, so the
    day's gate rows never contradict its comparison base; should one now fail, that day is rejected
    (its history removed) and the day after it is re-derived in turn.
    """
    nxt = history.next_accepted_after(conn, day)
    if nxt is None:
        return None
    base = history.comparison_base(conn, nxt)
    new_frame = history.load_snapshot(conn, nxt)
    base_frame, seen = history.load_base(conn, base)
    diff = diff_snapshots(base_frame, new_frame, previously_seen=seen, watchlist=watchlist)
    if gates is not None:
        run = history.run_row(conn, nxt)
        if run is None:  # an accepted day always has its run row
            raise RuntimeError(f"{nxt}: accepted day without a run row")
        drop = drop_against(base, gates, total_count=run["total_count"], rows=run["rows_received"])
        churn = churn_against(diff.counts, base, gates, population=new_frame.height)
        history.write_gate(conn, nxt, drop)
        history.write_gate(conn, nxt, churn)
        failed = next((g for g in (drop, churn) if not g.passed), None)
        if failed is not None:
            _reject(conn, nxt, failed, None, time.monotonic(), watchlist, gates, base)
            return nxt
    history.write_rederived(conn, nxt, by=day, base=base, diff=diff)
    return nxt


def _finish(
    conn: duckdb.DuckDBPyConnection, day: date, watchlist: Watchlist | None, gates: GateThresholds | None
) -> date | None:
    rederived = _rederive_next(conn, day, watchlist, gates)
    history.tidy_records(conn)
    return rederived


def _reject(
    conn: duckdb.DuckDBPyConnection,
    day: date,
    gate: GateOutcome,
    run_id: str | None,
    started: float,
    watchlist: Watchlist | None,
    gates: GateThresholds | None,
    base: BaseFacts | None,
) -> CommitOutcome:
    """`base`: the day's comparison base as the caller chose it under this lock (None: read it here)."""
    base = history.write_rejection(conn, day, gate, run_id=run_id, started=started, base=base)
    rederived = _finish(conn, day, watchlist, gates)
    return CommitOutcome(day, "rejected", base.day, {}, rederived, time.monotonic() - started, rejection_reason(gate))


def record_judgement(
    conn: duckdb.DuckDBPyConnection,
    day: date,
    *,
    gates: list[GateOutcome],
    quality: list[QualityMetric],
    fetch: FetchFacts,
    pages: list[dict],
    source: str,
    judged: history.FrameIdentity,
    run_id: str | None,
    fetch_seconds: float | None,
    watchlist: Watchlist | None,
    gate_settings: GateThresholds | None = None,
    base: BaseFacts | None = None,
    source_id: str | None = None,
) -> CommitOutcome | None:
    """Store gates 1–5 and the quality metrics; a failed gate rejects the day right here.

    `base`: the comparison base the gates were judged against (read once by the caller; None: read here).
    Returns the rejection's CommitOutcome (with its reason), or None when the day may proceed to the diff.
    """
    started = time.monotonic()
    failed = next((g for g in gates if g.passed is False), None)

    def work() -> CommitOutcome | None:
        history.write_judgement(
            conn,
            day,
            gates=gates,
            quality=quality,
            fetch=fetch,
            pages=pages,
            source=source,
            judged=judged,
            run_id=run_id,
            fetch_seconds=fetch_seconds,
            source_id=source_id,
        )
        if failed is None:
            return None
        return _reject(conn, day, failed, run_id, started, watchlist, gate_settings, base)

    return history.transaction(conn, work)


def reject_day(
    conn: duckdb.DuckDBPyConnection,
    day: date,
    gate: GateOutcome,
    *,
    run_id: str | None = None,
    watchlist: Watchlist | None = None,
    gates: GateThresholds | None = None,
    base: BaseFacts | None = None,
) -> CommitOutcome:
    """Reject a day after the diff (gate 6, or a gate re-checked against a moved base); `base`: the
    comparison base the caller diffed against (None: read here)."""
    started = time.monotonic()

    def work() -> CommitOutcome:
        history.write_gate(conn, day, gate)
        return _reject(conn, day, gate, run_id, started, watchlist, gates, base)

    return history.transaction(conn, work)


def commit_day(
    conn: duckdb.DuckDBPyConnection,
    day: date,
    keyed: pl.DataFrame,
    diff: DiffResult,
    *,
    base: BaseFacts,
    churn: GateOutcome,
    run_id: str | None = None,
    watchlist: Watchlist | None = None,
    gates: GateThresholds | None = None,
) -> CommitOutcome:
    """Write an accepted day: snapshot, versions, events — one transaction, replacing any earlier run."""
    started = time.monotonic()

    def work() -> CommitOutcome:
        status = history.write_accepted(conn, day, keyed, diff, base=base, churn=churn, run_id=run_id, started=started)
        rederived = _finish(conn, day, watchlist, gates)
        return CommitOutcome(day, status, base.day, dict(diff.counts), rederived, time.monotonic() - started)

    return history.transaction(conn, work)
