"""One day through the pipeline, step by step. Assets call these; so do tests and the CLI.

collect -> normalize -> judge (gates 1–5) -> diff_and_commit (gate 6, one transaction).
Each step reads what the previous one staged, so any step can be re-run on its own.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

import duckdb
import polars as pl

from dmf_assets.domain.diff import DiffResult, Watchlist, diff_snapshots
from dmf_assets.domain.gates import (
    BaseFacts,
    FetchFacts,
    GateOutcome,
    QualityMetric,
    gate_churn,
    gate_drop,
    pre_diff_gates,
    quality_metrics,
)
from dmf_assets.domain.snapshot import build_snapshot
from dmf_assets.orchestration import staging
from dmf_assets.settings import Settings
from dmf_assets.storage import history

log = logging.getLogger("dmf")


def watchlist_of(settings: Settings) -> Watchlist:
    w = settings.watchlist
    return Watchlist(tuple(w.ingredients), tuple(w.applicants), tuple(w.manufacturers), tuple(w.countries))


# --- collect -------------------------------------------------------------------------------------


def facts_from_fetch(result) -> FetchFacts:
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
    )


def _page_ok(page) -> bool:
    status = page.get("status") if isinstance(page, dict) else getattr(page, "status", None)
    return status in ("ok", 200, "200")


def _page_dict(page) -> dict:
    return page if isinstance(page, dict) else dict(vars(page))


def collect(client, day: date, staging_dir: Path, logger: logging.Logger = log) -> tuple[FetchFacts, dict]:
    started = time.monotonic()
    result = client.fetch_day(day, log=logger)
    facts = facts_from_fetch(result)
    extra = {
        "source": result.source,
        "status": result.status,
        "requests": result.requests,
        "retries": result.retries,
        "elapsed_s": round(time.monotonic() - started, 3),
        "archive_dir": str(result.archive_dir),
        "pages": [_page_dict(p) for p in result.pages],
    }
    staging.write_fetch(staging_dir, day, facts, items=list(result.items), extra=extra)
    return facts, extra


# --- normalize -----------------------------------------------------------------------------------


def normalize(staging_dir: Path, day: date, settings: Settings) -> tuple[pl.DataFrame, list[QualityMetric]]:
    facts, _ = staging.read_fetch(staging_dir, day)
    keyed = build_snapshot(staging.read_items(staging_dir, day))
    quality = quality_metrics(keyed, facts, day, settings.quality)
    staging.write_normalized(staging_dir, day, keyed, quality)
    return keyed, quality


# --- judge (gates 1–5) ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Judgement:
    day: date
    gates: list[GateOutcome]
    base: BaseFacts
    quality: list[QualityMetric]
    rejection: history.CommitOutcome | None
    rows: int

    @property
    def passed(self) -> bool:
        return self.rejection is None


def judge(
    conn: duckdb.DuckDBPyConnection, staging_dir: Path, day: date, settings: Settings, run_id: str | None = None
) -> Judgement:
    facts, extra = staging.read_fetch(staging_dir, day)
    keyed = staging.read_normalized(staging_dir, day)
    quality = staging.read_quality(staging_dir, day)
    base = history.comparison_base(conn, day)
    gates = pre_diff_gates(keyed, facts, base, settings.gates)
    stale = history.days_since_source_change(conn, base.day)
    if stale is not None:
        quality = quality + [
            QualityMetric(
                "days_since_source_change",
                "원천 무변동 일수",
                stale,
                f"≤ {settings.quality.stale_source_days}",
                stale <= settings.quality.stale_source_days,
                f"기준일까지 {stale}일 연속 변경 없음",
            )
        ]
    rejection = history.record_judgement(
        conn,
        day,
        gates=gates,
        quality=quality,
        fetch=facts,
        pages=extra.get("pages", []),
        source=extra.get("source", "?"),
        fingerprint=history.frame_fingerprint(keyed),
        run_id=run_id,
        fetch_seconds=extra.get("elapsed_s"),
        watchlist=watchlist_of(settings),
    )
    return Judgement(day, gates, base, quality, rejection, keyed.height)


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
    rederived_day: date | None = None
    carried_forward: bool = False  # rejected already by gates 1–5: nothing to diff
    diff: DiffResult | None = None
    seconds: float = 0.0


class JudgementMismatch(RuntimeError):
    """The staged snapshot is not the one gates 1–5 judged."""


def _churn_samples(diff: DiffResult) -> tuple[dict, ...]:
    top = diff.events.filter(~pl.col("is_cosmetic")).head(10)
    return tuple(top.select("event_type", "severity", "dmf_key", "ingredient_summary", "applicant_summary").to_dicts())


def diff_and_commit(
    conn: duckdb.DuckDBPyConnection, staging_dir: Path, day: date, settings: Settings, run_id: str | None = None
) -> DayOutcome:
    started = time.monotonic()
    gates = {g["gate_no"]: g for g in history.gate_rows(conn, day)}
    run = history.run_row(conn, day)
    if run is None or any(n not in gates for n in range(1, 6)):
        raise staging.StagingMissing(
            f"{day}: integrity_verdict가 이 날짜를 아직 판정하지 않았습니다. integrity_verdict를 먼저 실행하세요. "
            "Materialize 'integrity_verdict' for this partition first."
        )
    failed = next((gates[n] for n in range(1, 6) if gates[n]["passed"] is False), None)
    if failed is not None:
        base = history.comparison_base(conn, day)
        return DayOutcome(
            day, "rejected", base.day, rejected_gate=failed["gate_no"], reason=run.get("reason"),
            carried_forward=True, seconds=time.monotonic() - started,
        )

    keyed = staging.read_normalized(staging_dir, day)
    if history.frame_fingerprint(keyed) != run.get("judged_fingerprint"):
        raise JudgementMismatch(
            f"{day}: normalized_records가 integrity_verdict 판정 이후 바뀌었습니다 — integrity_verdict를 다시 실행하세요. "
            "The staged snapshot differs from the one the gates judged; re-run integrity_verdict."
        )
    facts, _ = staging.read_fetch(staging_dir, day)
    watchlist = watchlist_of(settings)
    base = history.comparison_base(conn, day)

    # The base may have moved since the judgement (another day committed meanwhile): re-check gate 3.
    drop = gate_drop(facts, base, settings.gates)
    if not drop.passed:
        out = history.reject_day(conn, day, drop, run_id=run_id, watchlist=watchlist)
        return DayOutcome(day, "rejected", base.day, rejected_gate=3, reason=drop.detail, rederived_day=out.rederived_day,
                          seconds=time.monotonic() - started)

    base_frame = history.load_snapshot(conn, base.day) if base.day else None
    seen = history.previously_seen(conn, base.day) if base.day else []
    diff = diff_snapshots(base_frame, keyed, previously_seen=seen, watchlist=watchlist)
    if base.day is None:
        churn = GateOutcome(6, True, 0.0, settings.gates.churn_max_ratio, "비교 기준 없음",
                            f"≤ {settings.gates.churn_max_ratio * 100:.2f} %", "첫 수집일(기준일)이므로 변동률을 비교하지 않습니다.")
    else:
        population = base.population or (base_frame.height if base_frame is not None else keyed.height)
        churn = gate_churn(diff.counts, population, settings.gates, _churn_samples(diff))
    if not churn.passed:
        out = history.reject_day(conn, day, churn, run_id=run_id, watchlist=watchlist)
        return DayOutcome(day, "rejected", base.day, dict(diff.counts), rejected_gate=6, reason=churn.detail,
                          churn=churn, rederived_day=out.rederived_day, diff=diff, seconds=time.monotonic() - started)
    out = history.commit_day(conn, day, keyed, diff, base=base, churn=churn, run_id=run_id, watchlist=watchlist)
    return DayOutcome(day, out.status, base.day, dict(diff.counts), churn=churn, rederived_day=out.rederived_day,
                      diff=diff, seconds=time.monotonic() - started)
