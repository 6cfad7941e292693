"""Reading and writing the day-by-day history (DESIGN.md §7). The only module that writes SQL history.

Rules it keeps:
- a day is written in one transaction: its snapshot, new versions and events together, or nothing;
- only an accepted day gets history; judging a day rejected removes whatever an earlier run of that
  day had written, so "rejected" and "has a snapshot" can never both be true;
- the comparison base of day D is the latest accepted day before D;
- whenever a day's history changes, the next accepted day after it is re-derived against its new
  base in the same transaction, so days may be committed in any order (a backfill running while the
  schedule fires) and the chain still ends up exactly as if they had run in date order.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from datetime import date

import duckdb
import polars as pl

from dmf_assets.domain.diff import DiffResult, Watchlist, diff_snapshots
from dmf_assets.domain.gates import BaseFacts, FetchFacts, GateOutcome, QualityMetric, gate_churn, gate_drop
from dmf_assets.settings import Gates
from dmf_assets.domain.keys import with_group_columns, with_identity_columns
from dmf_assets.domain.model import NORMALIZED_COLUMNS
from dmf_assets.faultpoints import crash_point
from dmf_assets.storage.db import fetch_one, query

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


def to_date(value: int | None) -> date | None:
    return None if value is None else date(value // 10000, value // 100 % 100, value % 100)


def frame_fingerprint(keyed: pl.DataFrame) -> str:
    """Identity of a normalized snapshot: which rows with which content (order-independent)."""
    digest = hashlib.sha256()
    for key, content in keyed.select("dmf_key", "content_hash").sort("dmf_key").iter_rows():
        digest.update(f"{key}\x1f{content}\n".encode())
    return digest.hexdigest()[:32]


# --- reads ---------------------------------------------------------------------------------------


def comparison_base(conn: duckdb.DuckDBPyConnection, day: date) -> BaseFacts:
    row = fetch_one(conn, query("history.latest_accepted_before"), [day_id(day)])
    if row is None:
        return BaseFacts()
    return BaseFacts(day=to_date(row[0]), total_count=row[1], population=row[2])


def load_snapshot(conn: duckdb.DuckDBPyConnection, day: date) -> pl.DataFrame:
    """An accepted day's snapshot as a keyed frame, ready for `diff_snapshots`."""
    frame = conn.sql(query("history.load_snapshot"), params=[day_id(day)]).pl()
    frame = frame.drop("version_id", "record_id", "first_day").with_row_index("row_no").with_columns(
        pl.col("row_no").cast(pl.Int32)
    )
    return with_group_columns(with_identity_columns(frame))


def previously_seen(conn: duckdb.DuckDBPyConnection, base_day: date) -> list[str]:
    d = day_id(base_day)
    return [r[0] for r in conn.execute(query("history.previously_seen"), [d, d, d, d]).fetchall()]


def missing_from_base(conn: duckdb.DuckDBPyConnection, base_day: date, keys: list[str], limit: int = 10) -> list[dict]:
    """Registrations of the base day whose key is not among `keys` (samples for a failed drop gate)."""
    present = pl.DataFrame({"dmf_key": keys}, schema={"dmf_key": pl.Utf8})
    conn.register("present_keys", present.to_arrow())
    try:
        cur = conn.execute(query("history.missing_from_base"), [day_id(base_day), limit])
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]
    finally:
        conn.unregister("present_keys")


def run_row(conn: duckdb.DuckDBPyConnection, day: date) -> dict | None:
    cur = conn.execute(query("history.run_row"), [day_id(day)])
    rows = cur.fetchall()
    return dict(zip([d[0] for d in cur.description], rows[0])) if rows else None


def gate_rows(conn: duckdb.DuckDBPyConnection, day: date) -> list[dict]:
    cur = conn.execute(query("history.gate_rows"), [day_id(day)])
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]


def days_since_source_change(conn: duckdb.DuckDBPyConnection, base_day: date | None) -> int | None:
    if base_day is None:
        return None
    d = day_id(base_day)
    return int(fetch_one(conn, query("history.days_since_change"), [d, d])[0])


# --- writes --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CommitOutcome:
    day: date
    status: str  # accepted | baseline | rejected
    base_day: date | None
    counts: dict[str, int]
    rederived_day: date | None  # the next accepted day whose events were recomputed
    seconds: float


def _write_gate(conn: duckdb.DuckDBPyConnection, d: int, g: GateOutcome) -> None:
    conn.execute(query("history.delete_gate"), [d, g.number])
    conn.execute(
        query("history.insert_gate"),
        [d, g.number, g.name, g.passed, g.observed_value, g.threshold_value, g.observed, g.threshold, g.detail,
         json.dumps(list(g.samples), ensure_ascii=False, default=str)],
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
    ]


def _rederive_next(conn: duckdb.DuckDBPyConnection, day: date, watchlist: Watchlist | None,
                   gates: Gates | None) -> date | None:
    """Recompute the events of the next accepted day after `day` against its (new) base.

    The base-dependent gates (3 drop, 6 churn) are judged again against the new base and stored, so the
    day's gate rows never contradict its comparison base; should one now fail, that day is rejected
    (its history removed) and the day after it is re-derived in turn.
    """
    row = fetch_one(conn, query("history.next_accepted_after"), [day_id(day)])
    if row is None:
        return None
    nxt = to_date(row[0])
    base = comparison_base(conn, nxt)
    new_frame = load_snapshot(conn, nxt)
    base_frame = load_snapshot(conn, base.day) if base.day else None
    seen = previously_seen(conn, base.day) if base.day else []
    diff = diff_snapshots(base_frame, new_frame, previously_seen=seen, watchlist=watchlist)
    n = day_id(nxt)
    if gates is not None:
        run = run_row(conn, nxt)
        facts = FetchFacts(True, total_count=run["total_count"], rows_after_dedup=run["rows_received"] or 0)
        drop = gate_drop(facts, base, gates)
        churn = (gate_churn(diff.counts, base.population or new_frame.height, gates) if base.day is not None
                 else GateOutcome(6, True, 0.0, gates.churn_max_ratio, "비교 기준 없음", f"≤ {gates.churn_max_ratio * 100:.2f} %",
                                  "첫 수집일(기준일)이므로 변동률을 비교하지 않습니다."))
        _write_gate(conn, n, drop)
        _write_gate(conn, n, churn)
        failed = next((g for g in (drop, churn) if not g.passed), None)
        if failed is not None:
            _reject(conn, nxt, failed, None, time.monotonic(), watchlist, gates)
            return nxt
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
            day_id(day),
            n,
        ],
    )
    return nxt


def _finish(conn: duckdb.DuckDBPyConnection, day: date, watchlist: Watchlist | None, gates: Gates | None) -> date | None:
    rederived = _rederive_next(conn, day, watchlist, gates)
    conn.execute(query("history.refresh_records"))
    conn.execute(query("history.delete_orphan_versions"))
    conn.execute(query("history.delete_orphan_records"))
    return rederived


def _in_transaction(conn: duckdb.DuckDBPyConnection, work):
    conn.execute("BEGIN TRANSACTION")
    try:
        result = work()
        conn.execute("COMMIT")
        return result
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def record_judgement(
    conn: duckdb.DuckDBPyConnection,
    day: date,
    *,
    gates: list[GateOutcome],
    quality: list[QualityMetric],
    fetch: FetchFacts,
    pages: list[dict],
    source: str,
    fingerprint: str,
    run_id: str | None,
    fetch_seconds: float | None,
    watchlist: Watchlist | None,
    gate_settings: Gates | None = None,
) -> CommitOutcome | None:
    """Store gates 1–5 and the quality metrics; a failed gate rejects the day right here.

    Returns the rejection's CommitOutcome, or None when the day may proceed to the diff.
    """
    d = day_id(day)
    started = time.monotonic()
    failed = next((g for g in gates if g.passed is False), None)

    def work():
        conn.execute(
            query("history.upsert_run_judgement"),
            [d, source, fetch.total_count, fetch.rows_received, run_id, fetch_seconds, fingerprint],
        )
        for gate in gates:
            _write_gate(conn, d, gate)
        conn.execute(query("history.delete_gate"), [d, 6])  # judged again -> churn not yet known
        conn.execute(query("history.delete_quality"), [d])
        for m in quality:
            conn.execute(
                query("history.insert_quality"),
                [d, m.name, m.label_ko, float(m.value), m.expected, m.ok, m.detail,
                 json.dumps(list(m.samples), ensure_ascii=False, default=str)],
            )
        conn.execute(query("history.delete_fetch_stats"), [d])
        for p in pages:
            conn.execute(
                query("history.insert_fetch_stat"),
                [d, p.get("page_no"), p.get("status"), p.get("rows"), p.get("total_count"), p.get("attempts"),
                 p.get("elapsed_ms"), p.get("bytes"), p.get("sha256")],
            )
        if failed is None:
            return None
        return _reject(conn, day, failed, run_id, started, watchlist, gate_settings)

    return _in_transaction(conn, work)


def _reject(
    conn: duckdb.DuckDBPyConnection,
    day: date,
    gate: GateOutcome,
    run_id: str | None,
    started: float,
    watchlist: Watchlist | None,
    gates: Gates | None,
) -> CommitOutcome:
    d = day_id(day)
    base = comparison_base(conn, day)
    _delete_day_history(conn, d)
    reason = f"{gate.number}번 {gate.label_ko} 게이트 실패: {gate.observed} — {gate.detail}"
    conn.execute(
        query("history.set_run_outcome"),
        ["rejected", gate.number, reason, day_id(base.day) if base.day else None, None,
         0, 0, 0, 0, 0, 0, time.monotonic() - started, run_id, d],
    )
    rederived = _finish(conn, day, watchlist, gates)
    return CommitOutcome(day, "rejected", base.day, {}, rederived, time.monotonic() - started)


def reject_day(
    conn: duckdb.DuckDBPyConnection,
    day: date,
    gate: GateOutcome,
    *,
    run_id: str | None = None,
    watchlist: Watchlist | None = None,
    gates: Gates | None = None,
) -> CommitOutcome:
    """Reject a day after the diff (gate 6, or a gate re-checked against a moved base)."""
    started = time.monotonic()

    def work():
        _write_gate(conn, day_id(day), gate)
        return _reject(conn, day, gate, run_id, started, watchlist, gates)

    return _in_transaction(conn, work)


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
    gates: Gates | None = None,
) -> CommitOutcome:
    """Write an accepted day: snapshot, versions, events — one transaction, replacing any earlier run."""
    started = time.monotonic()
    d = day_id(day)
    status = "baseline" if base.day is None else "accepted"

    def work():
        _write_gate(conn, d, churn)
        _delete_day_history(conn, d)
        _insert_snapshot(conn, d, keyed)
        crash_point("history_write")  # crash-safety tests: half a day must never be visible
        if base.day is not None:
            _insert_events(conn, d, day_id(base.day), diff)
        conn.execute(
            query("history.set_run_outcome"),
            [status, None, None, day_id(base.day) if base.day else None, keyed.height,
             *_counts_params(diff.counts), time.monotonic() - started, run_id, d],
        )
        rederived = _finish(conn, day, watchlist, gates)
        return CommitOutcome(day, status, base.day, dict(diff.counts), rederived, time.monotonic() - started)

    return _in_transaction(conn, work)
