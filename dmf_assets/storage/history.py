"""Reading and writing the day-by-day history (docs/DOMAIN.md §7). The only module that writes SQL history.

Rules its writes keep (the decisions — which gate failed, what the next accepted day's diff is — are
made by `orchestration.commit`, which runs these writes inside one `transaction`):
- a day is written in one transaction: its snapshot, new versions and events together, or nothing;
- only an accepted day gets history; judging a day rejected removes whatever an earlier run of that
  day had written, so a day is never both rejected and in the history;
- the comparison base of day D is the latest accepted day before D;
- whenever a day's history changes, the next accepted day after it is re-derived against its new
  base in the same transaction, so days may be committed in any order (a backfill running while the
  schedule fires) and the chain still ends up exactly as if they had run in date order.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import time
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import TypeVar, overload

import duckdb
import polars as pl

from dmf_assets.domain.diff import DiffResult
from dmf_assets.domain.gates import (
    GATES,
    ON_BASE,
    BaseFacts,
    Evidence,
    FetchFacts,
    GateOutcome,
    GateRegistry,
    GateThresholds,
    QualityMetric,
    rejection_reason,
)
from dmf_assets.domain.keys import with_group_columns, with_identity_columns
from dmf_assets.domain.model import ACCEPTED_STATUSES as ACCEPTED_STATUSES  # re-exported: the SQL's `status IN (…)`
from dmf_assets.domain.model import NORMALIZED_COLUMNS, DayStatus
from dmf_assets.faultpoints import crash_point
from dmf_assets.storage.db import dict_rows, fetch_one, one_row, query

T = TypeVar("T")

#: columns of record_versions that come from the keyed day frame
VERSION_COLUMNS: tuple[str, ...] = (
    "content_hash",
    "identity_hash",
    "syn_basis_hash",
    *(c for c in NORMALIZED_COLUMNS if c != "row_no"),
)
#: a run row's count columns and the diff's counts they hold, in the order the SQL binds them
COUNT_COLUMNS: dict[str, str] = {
    "new_count": "NEW",
    "changed_count": "CHANGED",
    "withdrawn_count": "WITHDRAWN",
    "cosmetic_count": "COSMETIC",
    "reappeared_count": "REAPPEARED",
    "assigned_count": "NUMBER_ASSIGNED",
    "renumbered_count": "NUMBER_CHANGED",
}


def day_id(d: date) -> int:
    return d.year * 10000 + d.month * 100 + d.day


@overload
def to_date(value: int) -> date: ...
@overload
def to_date(value: None) -> None: ...
@overload
def to_date(value: int | None) -> date | None: ...
def to_date(value: int | None) -> date | None:
    return None if value is None else date(value // 10000, value // 100 % 100, value % 100)


def frame_fingerprint(keyed: pl.DataFrame) -> str:
    """Identity of a normalized snapshot: which rows with which content (order-independent)."""
    # one line per row, "key\x1fcontent\n" in key order (a null written "None"), hashed as one text: the
    # fingerprints stored by earlier runs were made line by line from the same text
    lines = (
        keyed.select("dmf_key", "content_hash")
        .sort("dmf_key")
        .select(
            pl.concat_str(
                pl.col("dmf_key").fill_null("None"),
                pl.lit("\x1f"),
                pl.col("content_hash").fill_null("None"),
                pl.lit("\n"),
            )
        )
    )
    return hashlib.sha256("".join(lines.to_series()).encode()).hexdigest()[:32]


@dataclass(frozen=True)
class FrameIdentity:
    """Which normalized snapshot a judgement was about: its row count and content fingerprint."""

    rows: int | None  # None: judged before the count was recorded (migration 0003)
    fingerprint: str | None

    @classmethod
    def of(cls, keyed: pl.DataFrame) -> FrameIdentity:
        return cls(keyed.height, frame_fingerprint(keyed))


# --- reads ---------------------------------------------------------------------------------------


def comparison_base(conn: duckdb.DuckDBPyConnection, day: date) -> BaseFacts:
    row = fetch_one(conn, query("history.latest_accepted_before"), [day_id(day)])
    if row is None:
        return BaseFacts()
    return BaseFacts(day=to_date(row[0]), total_count=row[1], population=row[2])


def load_snapshot(conn: duckdb.DuckDBPyConnection, day: date) -> pl.DataFrame:
    """An accepted day's snapshot as a keyed frame, ready for `diff_snapshots`."""
    frame = conn.sql(query("history.load_snapshot"), params=[day_id(day)]).pl()
    frame = (
        frame.drop("version_id", "record_id", "first_day")
        .with_row_index("row_no")
        .with_columns(pl.col("row_no").cast(pl.Int32))
    )
    return with_group_columns(with_identity_columns(frame))


def previously_seen(conn: duckdb.DuckDBPyConnection, base_day: date) -> list[str]:
    d = day_id(base_day)
    return [r[0] for r in conn.execute(query("history.previously_seen"), [d, d, d, d]).fetchall()]


def load_base(conn: duckdb.DuckDBPyConnection, base: BaseFacts) -> tuple[pl.DataFrame | None, list[str]]:
    """What a day is diffed against: the base day's snapshot and the keys seen before it (none: baseline)."""
    if not base.day:
        return None, []
    return load_snapshot(conn, base.day), previously_seen(conn, base.day)


def rejected_on_a_moved_base(conn: duckdb.DuckDBPyConnection, day: date, gates: Collection[int]) -> tuple[date, ...]:
    """The days after `day` (up to the next accepted one) refused by one of `gates` against another base than they
    would be compared with now — `day` was committed or refused since: judged again, they may pass."""
    nxt = next_accepted_after(conn, day)
    rows = conn.execute(query("history.rejected_between"), [day_id(day), day_id(nxt or date.max)]).fetchall()
    now = comparison_base(conn, to_date(rows[0][0])).day if rows else None  # one base for all of them
    base_id = day_id(now) if now else None
    return tuple(to_date(r[0]) for r in rows if r[1] in gates and r[2] != base_id)


def next_accepted_after(conn: duckdb.DuckDBPyConnection, day: date) -> date | None:
    row = fetch_one(conn, query("history.next_accepted_after"), [day_id(day)])
    return None if row is None else to_date(row[0])


def missing_from_base(conn: duckdb.DuckDBPyConnection, base_day: date, keys: list[str], limit: int = 10) -> list[dict]:
    """Registrations of the base day whose key is not among `keys` (samples for a failed drop gate)."""
    present = pl.DataFrame({"dmf_key": keys}, schema={"dmf_key": pl.Utf8})
    conn.register("present_keys", present.to_arrow())
    try:
        return dict_rows(conn.execute(query("history.missing_from_base"), [day_id(base_day), limit]))
    finally:
        conn.unregister("present_keys")


def reappearance_candidates(conn: duckdb.DuckDBPyConnection, *, after: date, listed_on: date) -> list[date]:
    """Accepted days after `after` whose NEW events are read as reappearances by what accepted days before their
    base listed — which the commit or the rejection of `listed_on` may have changed (`sql/queries/history.sql`)."""
    rows = conn.execute(query("history.reappearance_candidates"), [day_id(after), day_id(listed_on)]).fetchall()
    return [to_date(r[0]) for r in rows]


def run_row(conn: duckdb.DuckDBPyConnection, day: date) -> dict | None:
    rows = dict_rows(conn.execute(query("history.run_row"), [day_id(day)]))
    return rows[0] if rows else None


def history_source(conn: duckdb.DuckDBPyConnection) -> str | None:
    """The source the history is built from (`source.identity`), or None before any day recorded one."""
    row = fetch_one(conn, query("history.history_source"))
    return row[0] if row else None


def latest_recorded_day(conn: duckdb.DuckDBPyConnection) -> date | None:
    """The newest day the history has judged (any outcome), or None."""
    return to_date(one_row(conn, query("history.latest_recorded_day"))[0])


def judged_identity(run: dict) -> FrameIdentity:
    """The snapshot the day's latest judgement recorded (`run`: its `run_row`)."""
    return FrameIdentity(run.get("judged_rows"), run.get("judged_fingerprint"))


def gate_rows(conn: duckdb.DuckDBPyConnection, day: date) -> list[dict]:
    return dict_rows(conn.execute(query("history.gate_rows"), [day_id(day)]))


def recorded_evidence(conn: duckdb.DuckDBPyConnection, run: Mapping) -> Evidence:
    """What an accepted day's gates that need the base are judged on, as its run row recorded it: its fetch
    figures, its counts, and the comparison base it names (that base's own run row)."""
    base_day = to_date(run["base_day_id"])
    base_run = run_row(conn, base_day) if base_day else None
    base = BaseFacts(base_day, *((base_run["total_count"], base_run["population"]) if base_run else (None, None)))
    return Evidence(
        FetchFacts.recorded(run["total_count"], run["rows_received"]),
        base,
        counts={count: run[column] or 0 for column, count in COUNT_COLUMNS.items()},
        population=run["population"] or 0,
    )


def _stored_outcome(row: dict, registry: GateRegistry) -> GateOutcome:
    samples = json.loads(row["samples"]) if isinstance(row["samples"], str) else (row["samples"] or [])
    return GateOutcome(
        row["gate_no"],
        row["passed"],
        row["observed_value"],
        row["threshold_value"],
        row["observed"] or "",
        row["threshold"] or "",
        row["detail"] or "",
        tuple(samples),
        registry.get(row["gate_no"]),
    )


def day_gates(
    conn: duckdb.DuckDBPyConnection, day: date, thresholds: GateThresholds, registry: GateRegistry = GATES
) -> tuple[dict[int, GateOutcome], list[tuple[GateOutcome, GateOutcome]]]:
    """The day's gate outcomes as the commit and the re-derivation stored them (by gate number), and the stored
    ones found stale, each with what it says now.

    An accepted day's gates that need the base are judged once more on what its run row recorded, against the
    base it names — the judgement the re-derivation stores: a history written before the re-derivation stored
    them (issue 9) may hold rows judged against another base, so the workbook can never say 「비교 기준
    2026-11-01」 in its title and 「비교 기준 없음」 in a gate row. A stored row whose numbers differ is stale."""
    run = run_row(conn, day)
    outcomes = {row["gate_no"]: _stored_outcome(row, registry) for row in gate_rows(conn, day)}
    stale = []
    if run is not None and DayStatus.of_value(run["status"]).is_accepted:
        for now in registry.judge(recorded_evidence(conn, run), thresholds, ON_BASE):
            was = outcomes.get(now.number)
            # judged by the numbers: the wording of an observed value may differ between releases
            if was is not None and (
                not math.isclose(was.observed_value or 0.0, now.observed_value or 0.0) or bool(was.passed) != now.passed
            ):
                stale.append((was, now))
            outcomes[now.number] = now
    return outcomes, stale


def days_since_source_change(conn: duckdb.DuckDBPyConnection, base_day: date | None) -> int | None:
    if base_day is None:
        return None
    d = day_id(base_day)
    return int(one_row(conn, query("history.days_since_change"), [d, d])[0])


@dataclass(frozen=True)
class HistoryContent:
    """What a history says, without run ids, event ids or times: each day's outcome and its events (with
    their field changes) — two histories that say the same have equal contents."""

    outcomes: dict[date, tuple]  # day -> (status, rejected gate, base day, population, the seven counts)
    events: dict[date, Counter]  # day -> its events, each a tuple of every column but the id, changes last


def history_content(conn: duckdb.DuckDBPyConnection) -> HistoryContent:
    outcomes = {to_date(row[0]): tuple(row[1:]) for row in conn.execute(query("history.run_outcomes")).fetchall()}
    changes: dict[int, list[tuple]] = {}
    for event_id, *change in conn.execute(query("history.change_contents")).fetchall():
        changes.setdefault(event_id, []).append(tuple(change))
    events: dict[date, Counter] = {}
    for event_id, day, *columns in conn.execute(query("history.event_contents")).fetchall():
        content = tuple(tuple(v) if isinstance(v, list) else v for v in columns)
        events.setdefault(to_date(day), Counter())[(*content, tuple(sorted(changes.get(event_id, []), key=repr)))] += 1
    return HistoryContent(outcomes, events)


# --- writes (each inside the caller's `transaction`) ------------------------------------------------


def transaction(conn: duckdb.DuckDBPyConnection, work: Callable[[], T]) -> T:
    """Run `work` (a series of the writes below) in one transaction: all of it is committed, or none."""
    conn.execute("BEGIN TRANSACTION")
    try:
        result = work()
        conn.execute("COMMIT")
        return result
    except BaseException:
        # a COMMIT that failed (e.g. no space left for the WAL) has already ended the transaction: the
        # ROLLBACK's "no transaction is active" must not hide why
        with contextlib.suppress(duckdb.TransactionException):
            conn.execute("ROLLBACK")
        raise


def write_gates(conn: duckdb.DuckDBPyConnection, day: date, outcomes: Sequence[GateOutcome]) -> None:
    """Store these gates' outcomes of the day, each replacing its earlier one."""
    d = day_id(day)
    for g in outcomes:
        conn.execute(query("history.delete_gate"), [d, g.number])
        conn.execute(
            query("history.insert_gate"),
            [
                d,
                g.number,
                g.name,
                g.passed,
                g.observed_value,
                g.threshold_value,
                g.observed,
                g.threshold,
                g.detail,
                json.dumps(list(g.samples), ensure_ascii=False, default=str),
            ],
        )


def _delete_day_history(conn: duckdb.DuckDBPyConnection, d: int) -> None:
    conn.execute(query("history.delete_day_changes"), [d])
    conn.execute(query("history.delete_day_events"), [d])
    conn.execute(query("history.delete_day_snapshot"), [d])


def _insert_snapshot(conn: duckdb.DuckDBPyConnection, d: int, keyed: pl.DataFrame) -> None:
    day_frame = keyed.select("dmf_key", "is_synthetic", *VERSION_COLUMNS)
    conn.register("day_frame", day_frame.to_arrow())
    try:
        conn.execute(query("history.insert_new_records"))
        conn.execute(query("history.insert_new_versions"), [d])
        conn.execute(query("history.insert_snapshot"), [d])
    finally:
        conn.unregister("day_frame")


def _insert_events(conn: duckdb.DuckDBPyConnection, d: int, base: int, diff: DiffResult) -> None:
    if diff.events.is_empty():
        return
    events = diff.events.with_row_index("ordinal")
    conn.register("day_events", events.to_arrow())
    conn.register("day_changes", diff.changes.to_arrow())
    try:
        conn.execute(query("history.insert_events"), [d, d, base, d, base])
        conn.execute(query("history.insert_changes"), [d])
    finally:
        conn.unregister("day_events")
        conn.unregister("day_changes")


def _counts_params(counts: Mapping[str, int]) -> list[int]:
    return [counts.get(count, 0) for count in COUNT_COLUMNS.values()]


def _set_outcome(
    conn: duckdb.DuckDBPyConnection,
    d: int,
    status: DayStatus,
    base: BaseFacts,
    population: int | None,
    counts: Mapping[str, int],
    *,
    started: float,
    run_id: str | None,
    rejected_by: GateOutcome | None = None,
) -> None:
    """The day's run row after its commit, or its rejection `rejected_by` a gate."""
    conn.execute(
        query("history.set_run_outcome"),
        [
            status.value,
            None if rejected_by is None else rejected_by.number,
            None if rejected_by is None else rejection_reason(rejected_by),
            day_id(base.day) if base.day else None,
            population,
            *_counts_params(counts),
            time.monotonic() - started,
            run_id,
            d,
        ],
    )


@dataclass(frozen=True)
class Judgement:
    """What the verdict before the diff records of a day: the fetch and where it came from, the snapshot judged,
    the gates' outcomes, the quality metrics and the page statistics."""

    gates: Sequence[GateOutcome]
    quality: Sequence[QualityMetric]
    fetch: FetchFacts
    pages: Sequence[dict]
    source: str
    judged: FrameIdentity
    fetch_seconds: float | None
    source_id: str | None = None


def write_judgement(conn: duckdb.DuckDBPyConnection, day: date, j: Judgement, run_id: str | None) -> None:
    """The day's run row (with the identity of the judged snapshot and the registry it came from), the gates
    judged before the diff (the others removed: not yet known), quality metrics and page stats."""
    d = day_id(day)
    conn.execute(
        query("history.upsert_run_judgement"),
        [
            d,
            j.source,
            j.source_id,
            j.fetch.total_count,
            j.fetch.rows_received,
            run_id,
            j.fetch_seconds,
            j.judged.fingerprint,
            j.judged.rows,
        ],
    )
    conn.execute(query("history.delete_day_gates"), [d])
    write_gates(conn, day, j.gates)
    conn.execute(query("history.delete_quality"), [d])
    for m in j.quality:
        conn.execute(
            query("history.insert_quality"),
            [
                d,
                m.name,
                m.label_ko,
                float(m.value),
                m.expected,
                m.ok,
                m.detail,
                json.dumps(list(m.samples), ensure_ascii=False, default=str),
            ],
        )
    conn.execute(query("history.delete_fetch_stats"), [d])
    for p in j.pages:
        conn.execute(
            query("history.insert_fetch_stat"),
            [
                d,
                p.get("page_no"),
                p.get("status"),
                p.get("rows"),
                p.get("total_count"),
                p.get("attempts"),
                p.get("elapsed_ms"),
                p.get("bytes"),
                p.get("sha256"),
            ],
        )


def write_rejection(
    conn: duckdb.DuckDBPyConnection,
    day: date,
    gate: GateOutcome,
    *,
    run_id: str | None,
    started: float,
    base: BaseFacts | None = None,
) -> BaseFacts:
    """Mark the day rejected by `gate` and remove its history; returns its comparison base (`base`: as the
    caller already chose it under the same lock; None: read here)."""
    d = day_id(day)
    base = comparison_base(conn, day) if base is None else base
    _delete_day_history(conn, d)
    _set_outcome(conn, d, DayStatus.REJECTED, base, None, {}, started=started, run_id=run_id, rejected_by=gate)
    return base


def write_accepted(
    conn: duckdb.DuckDBPyConnection,
    day: date,
    keyed: pl.DataFrame,
    diff: DiffResult,
    *,
    base: BaseFacts,
    gates: Sequence[GateOutcome],
    run_id: str | None,
    started: float,
) -> DayStatus:
    """Write an accepted day — the gates judged with its diff, snapshot, versions, events, run outcome —
    replacing any earlier run of it; returns its status (baseline | accepted)."""
    d = day_id(day)
    status = DayStatus.BASELINE if base.day is None else DayStatus.ACCEPTED
    write_gates(conn, day, gates)
    _delete_day_history(conn, d)
    _insert_snapshot(conn, d, keyed)
    crash_point("history_write")  # crash-safety tests: half a day must never be visible
    if base.day is not None:
        _insert_events(conn, d, day_id(base.day), diff)
    _set_outcome(conn, d, status, base, keyed.height, diff.counts, started=started, run_id=run_id)
    return status


def write_rederived(conn: duckdb.DuckDBPyConnection, day: date, *, by: date, base: BaseFacts, diff: DiffResult) -> None:
    """Replace the events of accepted `day` by `diff` against its (new) base; `by` = the day whose commit
    or rejection moved that base."""
    n = day_id(day)
    conn.execute(query("history.delete_day_changes"), [n])
    conn.execute(query("history.delete_day_events"), [n])
    if base.day is not None:
        _insert_events(conn, n, day_id(base.day), diff)
    conn.execute(
        query("history.set_rederived"),
        [
            (DayStatus.ACCEPTED if base.day else DayStatus.BASELINE).value,
            day_id(base.day) if base.day else None,
            *_counts_params(diff.counts),
            day_id(by),
            n,
        ],
    )


def tidy_records(conn: duckdb.DuckDBPyConnection) -> None:
    """After a day's history changed: refresh the records' summary, drop versions and records no snapshot uses."""
    conn.execute(query("history.refresh_records"))
    conn.execute(query("history.delete_orphan_versions"))
    conn.execute(query("history.delete_orphan_records"))
