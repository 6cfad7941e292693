"""Committing a judged day to the history and keeping the chain of days consistent (docs/DOMAIN.md §7).

Each public function here is one transaction (`storage.history.transaction`): the day's verdict or
history is written together with the re-derivation of the next accepted day after it, so days may
be committed in any order and the chain still ends up exactly as if they had run in date order.
The decisions are made here — what the next accepted day's diff against its new base is, whether
its gates that need the base still pass (the registry's rules, stored for the workbook to read) —
and `storage.history` writes the outcome.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date

import duckdb
import polars as pl

from dmf_assets.domain.diff import DiffResult, Watchlist, diff_snapshots
from dmf_assets.domain.gates import (
    GATES,
    ON_BASE,
    BaseFacts,
    Evidence,
    FetchFacts,
    GateOutcome,
    GateRegistry,
    GateThresholds,
    first_failure,
    gate_recheck,
    gate_recheck_nothing_to_ask,
    rejection_reason,
)
from dmf_assets.domain.model import DayStatus
from dmf_assets.domain.recheck import Query, judge_recheck, plan_recheck
from dmf_assets.settings import Settings
from dmf_assets.source.recheck import RecheckAnswers
from dmf_assets.storage import history

#: asks the source about a day's would-be withdrawals (`MfdsClient.recheck`, or the day's archive alone)
Recheck = Callable[[date, list[Query]], RecheckAnswers]

log = logging.getLogger("dmf")


@dataclass(frozen=True)
class Rules:
    """What a day is judged and diffed by: the gate registry, its thresholds, the watchlist and who confirms
    withdrawals. Without thresholds, a re-derived day is diffed again but its gates are not judged again, and
    without `recheck` its withdrawals are not asked again (storage tests)."""

    thresholds: GateThresholds | None = None
    watchlist: Watchlist | None = None
    registry: GateRegistry = GATES
    recheck: Recheck | None = None

    @classmethod
    def of(cls, settings: Settings, registry: GateRegistry = GATES, recheck: Recheck | None = None) -> Rules:
        return cls(settings.gates, Watchlist.of(settings.watchlist), registry, recheck)


@dataclass(frozen=True)
class DayOutcome:
    """What became of a day: committed (accepted, or the baseline) or rejected — by a gate judged here, or
    already by its verdict (carried forward). The one value the commit, the pipeline and `dmf rebuild` return."""

    day: date
    status: DayStatus
    base_day: date | None
    counts: dict[str, int] = field(default_factory=dict)
    gates: tuple[GateOutcome, ...] = ()  # the gates judged with the diff (those that need the base), in order
    failed_gate: GateOutcome | None = None  # the gate that refused the day here
    rejected_gate: int | None = None
    reason: str | None = None  # a rejected day: the reason its run row records (`gates.rejection_reason`)
    #: the days whose history this one changed: the next accepted day, recomputed against it — and, when that day is
    #: now refused, the day recomputed after it in turn (each needs its events and workbook written again)
    rederived_days: tuple[date, ...] = ()
    #: the later days refused against another base than they have now (`history.rejected_on_a_moved_base`): their
    #: archives are judged again by a run of their own, as if the days had run in date order
    rejudge_days: tuple[date, ...] = ()
    carried_forward: bool = False  # rejected already by its verdict: nothing to diff
    diff: DiffResult | None = None
    seconds: float = 0.0
    recheck_requests: int = 0  # requests sent to confirm the day's withdrawals (0: none, or all archived)
    #: gate 2 judged again on the diff's withdrawals (`recheck_gate`): passed, failed, or None — not judged
    recheck: GateOutcome | None = None

    @property
    def rederived_day(self) -> date | None:
        """The next accepted day whose events were recomputed (the first of `rederived_days`)."""
        return self.rederived_days[0] if self.rederived_days else None

    @classmethod
    def carried(
        cls, day: date, base_day: date | None, gate: int | None, reason: str | None, seconds: float = 0.0
    ) -> DayOutcome:
        """Refused already by its verdict (gate `gate`): nothing to diff, the comparison base stays."""
        return cls(
            day, DayStatus.REJECTED, base_day, rejected_gate=gate, reason=reason, carried_forward=True, seconds=seconds
        )


def diff_evidence(
    fetch: FetchFacts, base: BaseFacts, base_frame: pl.DataFrame | None, snapshot: pl.DataFrame, diff: DiffResult
) -> Evidence:
    """What the gates that need the base judge a day diffed against `base` on — at its commit and whenever
    its base moves: its fetch figures, the diff's counts and its top events; the base's population where the
    base day's is not on record."""
    top = diff.events.filter(~pl.col("is_cosmetic")).head(10)
    return Evidence(
        fetch,
        base,
        counts=diff.counts,
        population=(snapshot if base_frame is None else base_frame).height,
        changes=tuple(
            top.select("event_type", "severity", "dmf_key", "ingredient_summary", "applicant_summary").to_dicts()
        ),
    )


def recheck_gate(
    day: date, diff: DiffResult, base_frame: pl.DataFrame | None, snapshot: pl.DataFrame, recheck: Recheck | None
) -> tuple[GateOutcome | None, int]:
    """Gate 2 once more, on the withdrawals the day's diff found: each is asked of the source again
    (`domain.recheck`). Returns (its outcome — None when there is no source to ask, or an archive from before
    withdrawals were asked; the requests it took)."""
    if recheck is None:
        return None, 0
    gone = diff.events.filter(pl.col("event_type") == "WITHDRAWN")["dmf_key"].to_list()
    if base_frame is None or not gone:  # the baseline has no base, and no withdrawal
        return gate_recheck_nothing_to_ask(), 0
    withdrawn = base_frame.filter(pl.col("dmf_key").is_in(gone))
    plan = plan_recheck(withdrawn)
    got = recheck(day, list(plan.queries))
    if got.legacy and all(a.items is None for a in got.answers.values()):
        # archived before withdrawals were re-checked, and the source cannot be asked now: accepted as it was then
        return None, got.requests
    verdict = judge_recheck(snapshot, withdrawn.height, plan, got.answers)
    log.info(
        "%s recheck: %d withdrawal(s), %d question(s), %d request(s): %s",
        day,
        verdict.withdrawals,
        verdict.queries,
        got.requests,
        "confirmed" if verdict.confirmed else f"{len(verdict.listed)} listed, {len(verdict.unconfirmed)} unconfirmed",
    )
    return gate_recheck(verdict), got.requests


def _rederive_next(conn: duckdb.DuckDBPyConnection, day: date, rules: Rules) -> tuple[date, ...]:
    """Recompute the events of the next accepted day after `day` against its (new) base (`_rederive`)."""
    nxt = history.next_accepted_after(conn, day)
    return () if nxt is None else _rederive(conn, nxt, day, rules)


def _rederive(conn: duckdb.DuckDBPyConnection, nxt: date, day: date, rules: Rules) -> tuple[date, ...]:
    """Recompute the events of accepted day `nxt` against its base, after the commit or rejection of `day`.

    The gates that need the base are judged again against the new base and stored, so the day's gate rows
    never contradict its comparison base, and every withdrawal the new diff finds is confirmed with the source
    (gate 2, as at a commit: a registration the day's fetch lost that the new base lists must never become a
    WITHDRAWN); should one now fail, that day is rejected (its history removed) and the day after it is
    re-derived in turn.
    """
    base = history.comparison_base(conn, nxt)
    new_frame = history.load_snapshot(conn, nxt)
    base_frame, seen = history.load_base(conn, base)
    diff = diff_snapshots(base_frame, new_frame, previously_seen=seen, watchlist=rules.watchlist)
    if rules.thresholds is not None:
        run = history.run_row(conn, nxt)
        if run is None:  # an accepted day always has its run row
            raise RuntimeError(f"{nxt}: accepted day without a run row")
        fetch = FetchFacts.recorded(run["total_count"], run["rows_received"])
        gates = rules.registry.judge(diff_evidence(fetch, base, base_frame, new_frame, diff), rules.thresholds, ON_BASE)
        if (failed := first_failure(gates)) is None:
            confirmed, _ = recheck_gate(nxt, diff, base_frame, new_frame, rules.recheck)
            failed = confirmed if confirmed is not None and not confirmed.passed else None
            gates = gates if failed is None else [*gates, failed]
        history.write_gates(conn, nxt, gates)
        if failed is not None:
            return (nxt, *_reject(conn, nxt, failed, None, time.monotonic(), rules, base).rederived_days)
    history.write_rederived(conn, nxt, by=day, base=base, diff=diff)
    return (nxt,)


def _finish(conn: duckdb.DuckDBPyConnection, day: date, rules: Rules) -> tuple[date, ...]:
    """The days after `day` recomputed now that it was committed or refused: the next accepted day (its base
    moved), then each later one whose NEW events it may turn into reappearances or back (what accepted days
    before a day's base listed decides that) — so the history ends as if the days had run in date order."""
    rederived = _rederive_next(conn, day, rules)
    after = max(rederived, default=day)
    for later in history.reappearance_candidates(conn, after=after, listed_on=day):
        run = history.run_row(conn, later)  # a chain above may have refused it since
        if later not in rederived and run is not None and DayStatus.of_value(run["status"]) is DayStatus.ACCEPTED:
            rederived += _rederive(conn, later, day, rules)
    history.tidy_records(conn)
    return rederived


def _reject(
    conn: duckdb.DuckDBPyConnection,
    day: date,
    gate: GateOutcome,
    run_id: str | None,
    started: float,
    rules: Rules,
    base: BaseFacts | None,
) -> DayOutcome:
    """`base`: the day's comparison base as the caller chose it under this lock (None: read it here)."""
    base = history.write_rejection(conn, day, gate, run_id=run_id, started=started, base=base)
    rederived = _finish(conn, day, rules)
    return DayOutcome(
        day,
        DayStatus.REJECTED,
        base.day,
        failed_gate=gate,
        rejected_gate=gate.number,
        reason=rejection_reason(gate),
        rederived_days=rederived,
        rejudge_days=_to_rejudge(conn, day, rules),
        seconds=time.monotonic() - started,
    )


def _to_rejudge(conn: duckdb.DuckDBPyConnection, day: date, rules: Rules) -> tuple[date, ...]:
    """The later days a gate that reads the base refused against another base than `day`'s commit or rejection
    gives them now (their snapshots are not kept: only a run of their own can judge their archives again)."""
    on_base = [g.number for g in rules.registry if g.needs in ON_BASE]
    return history.rejected_on_a_moved_base(conn, day, on_base)


def record_judgement(
    conn: duckdb.DuckDBPyConnection,
    day: date,
    judgement: history.Judgement,
    *,
    run_id: str | None,
    rules: Rules,
    base: BaseFacts | None = None,
) -> DayOutcome | None:
    """Store the verdict before the diff (`judgement`); a failed gate rejects the day right here.

    `base`: the comparison base the gates were judged against (read once by the caller; None: read here).
    Returns the rejection's DayOutcome, or None when the day may proceed to the diff.
    """
    started = time.monotonic()
    failed = first_failure(judgement.gates)

    def work() -> DayOutcome | None:
        history.write_judgement(conn, day, judgement, run_id)
        return None if failed is None else _reject(conn, day, failed, run_id, started, rules, base)

    return history.transaction(conn, work)


def reject_day(
    conn: duckdb.DuckDBPyConnection,
    day: date,
    gate: GateOutcome,
    *,
    judged: Sequence[GateOutcome] = (),
    run_id: str | None = None,
    rules: Rules = Rules(),
    base: BaseFacts | None = None,
) -> DayOutcome:
    """Reject a day by `gate` after its verdict: a gate that needs the base (judged with the diff, or again
    against a base that moved), or gate 2 on the withdrawals. `judged`: the gates judged with it, stored beside
    it; `base`: the comparison base the caller diffed against (None: read here)."""
    started = time.monotonic()

    def work() -> DayOutcome:
        history.write_gates(conn, day, [*judged, gate])
        return _reject(conn, day, gate, run_id, started, rules, base)

    return history.transaction(conn, work)


def commit_day(
    conn: duckdb.DuckDBPyConnection,
    day: date,
    keyed: pl.DataFrame,
    diff: DiffResult,
    *,
    base: BaseFacts,
    gates: Sequence[GateOutcome],
    run_id: str | None = None,
    rules: Rules = Rules(),
) -> DayOutcome:
    """Write an accepted day: the gates judged with its diff, snapshot, versions, events — one transaction,
    replacing any earlier run."""
    started = time.monotonic()

    def work() -> DayOutcome:
        status = history.write_accepted(conn, day, keyed, diff, base=base, gates=gates, run_id=run_id, started=started)
        rederived = _finish(conn, day, rules)
        seconds = time.monotonic() - started
        return DayOutcome(
            day,
            status,
            base.day,
            dict(diff.counts),
            tuple(gates),
            rederived_days=rederived,
            rejudge_days=_to_rejudge(conn, day, rules),
            seconds=seconds,
        )

    return history.transaction(conn, work)
