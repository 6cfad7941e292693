"""Reading and writing the day-by-day history (docs/DOMAIN.md §7). The only module that writes SQL history.

Rules its writes keep (the decisions — which gate failed, what the next accepted day's diff is — are
made by `orchestration.commit`, which runs these writes inside one `transaction`):
- a day is written in one transaction: its snapshot, new versions and events together, or nothing;
- only an accepted day gets history; judging a day rejected removes whatever an earlier run of that
  day had written, so "rejected" and "has a snapshot" can never both be true;
- the comparison base of day D is the latest accepted day before D;
- whenever a day's history changes, the next accepted day after it is re-derived against its new
  base in the same transaction, so days may be committed in any order (a backfill running while the
  schedule fires) and the chain still ends up exactly as if they had run in date order.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from typing import TypeVar, overload

import duckdb
import polars as pl

from dmf_assets.domain.diff import DiffResult
from dmf_assets.domain.gates import GATES, BaseFacts, FetchFacts, GateOutcome, QualityMetric, rejection_reason
from dmf_assets.domain.keys import with_group_columns, with_identity_columns
from dmf_assets.domain.model import NORMALIZED_COLUMNS
from dmf_assets.faultpoints import crash_point
from dmf_assets.storage.db import fetch_one, one_row, query

T = TypeVar("T")

#: columns of record_versions that come from the keyed day frame
VERSION_COLUMNS: tuple[str, ...] = (
    "content_hash",
    "identity_hash",
    "syn_basis_hash",
    *(c for c in NORMALIZED_COLUMNS if c != "row_no"),
)
ACCEPTED_STATUSES = ("accepted", "baseline")


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
    digest = hashlib.sha256()
    for key, content in keyed.select("dmf_key", "content_hash").sort("dmf_key").iter_rows():
        digest.update(f"{key}\x1f{content}\n".encode())
    return digest.hexdigest()[:32]


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


def next_accepted_after(conn: duckdb.DuckDBPyConnection, day: date) -> date | None:
    row = fetch_one(conn, query("history.next_accepted_after"), [day_id(day)])
    return None if row is None else to_date(row[0])


def missing_from_base(conn: duckdb.DuckDBPyConnection, base_day: date, keys: list[str], limit: int = 10) -> list[dict]:
    """Registrations of the base day whose key is not among `keys` (samples for a failed drop gate)."""
    present = pl.DataFrame({"dmf_key": keys}, schema={"dmf_key": pl.Utf8})
    conn.register("present_keys", present.to_arrow())
    try:
        cur = conn.execute(query("history.missing_from_base"), [day_id(base_day), limit])
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    finally:
        conn.unregister("present_keys")


def run_row(conn: duckdb.DuckDBPyConnection, day: date) -> dict | None:
    cur = conn.execute(query("history.run_row"), [day_id(day)])
    rows = cur.fetchall()
    return dict(zip([d[0] for d in cur.description], rows[0], strict=True)) if rows else None


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
    cur = conn.execute(query("history.gate_rows"), [day_id(day)])
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


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


def write_gate(conn: duckdb.DuckDBPyConnection, day: date, g: GateOutcome) -> None:
    d = day_id(day)
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


def _counts_params(counts: dict[str, int]) -> list[int]:
    return [
        counts.get("NEW", 0),
        counts.get("CHANGED", 0),
        counts.get("WITHDRAWN", 0),
        counts.get("COSMETIC", 0),
        counts.get("REAPPEARED", 0),
        counts.get("NUMBER_ASSIGNED", 0),
        counts.get("NUMBER_CHANGED", 0),
    ]


def write_judgement(
    conn: duckdb.DuckDBPyConnection,
    day: date,
    *,
    gates: list[GateOutcome],
    quality: list[QualityMetric],
    fetch: FetchFacts,
    pages: list[dict],
    source: str,
    judged: FrameIdentity,
    run_id: str | None,
    fetch_seconds: float | None,
    source_id: str | None = None,
) -> None:
    """The day's run row (with the identity of the judged snapshot and the registry it came from), gates 1–5
    (gate 6 removed: not yet known), quality metrics and page stats."""
    d = day_id(day)
    conn.execute(
        query("history.upsert_run_judgement"),
        [
            d,
            source,
            source_id,
            fetch.total_count,
            fetch.rows_received,
            run_id,
            fetch_seconds,
            judged.fingerprint,
            judged.rows,
        ],
    )
    for gate in gates:
        write_gate(conn, day, gate)
    for later in (g for g in GATES if g.after_diff):  # judged again -> the gates after the diff not yet known
        conn.execute(query("history.delete_gate"), [d, later.number])
    conn.execute(query("history.delete_quality"), [d])
    for m in quality:
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
    for p in pages:
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
    reason = rejection_reason(gate)
    conn.execute(
        query("history.set_run_outcome"),
        [
            "rejected",
            gate.number,
            reason,
            day_id(base.day) if base.day else None,
            None,
            *_counts_params({}),
            time.monotonic() - started,
            run_id,
            d,
        ],
    )
    return base


def write_accepted(
    conn: duckdb.DuckDBPyConnection,
    day: date,
    keyed: pl.DataFrame,
    diff: DiffResult,
    *,
    base: BaseFacts,
    churn: GateOutcome,
    run_id: str | None,
    started: float,
) -> str:
    """Write an accepted day — gate 6, snapshot, versions, events, run outcome — replacing any earlier
    run of it; returns its status (baseline | accepted)."""
    d = day_id(day)
    status = "baseline" if base.day is None else "accepted"
    write_gate(conn, day, churn)
    _delete_day_history(conn, d)
    _insert_snapshot(conn, d, keyed)
    crash_point("history_write")  # crash-safety tests: half a day must never be visible
    if base.day is not None:
        _insert_events(conn, d, day_id(base.day), diff)
    conn.execute(
        query("history.set_run_outcome"),
        [
            status,
            None,
            None,
            day_id(base.day) if base.day else None,
            keyed.height,
            *_counts_params(diff.counts),
            time.monotonic() - started,
            run_id,
            d,
        ],
    )
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
            "accepted" if base.day else "baseline",
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
