"""Assemble a DayReport (and the day's event list) from the history database."""

from __future__ import annotations

from collections import defaultdict
from datetime import date, datetime, timedelta

import duckdb
import polars as pl

from dmf_assets.clock import now_kst
from dmf_assets.domain.gates import GATE_LABELS
from dmf_assets.report.model import (
    AggregateRow,
    DayReport,
    DayStatus,
    EventRow,
    FieldChangeRow,
    GateRow,
    HistoryPoint,
    Kpis,
    QualityRow,
)
from dmf_assets.settings import Settings
from dmf_assets.storage import history
from dmf_assets.storage.db import fetch_one, query


class DayNotReady(RuntimeError):
    """The day has not been judged and committed yet."""


def day_events_frame(conn: duckdb.DuckDBPyConnection, day: date) -> pl.DataFrame:
    """Events of an accepted day with display values and their field changes (list of structs)."""
    d = history.day_id(day)
    events = conn.sql(query("report.day_events"), params=[d]).pl()
    changes = conn.sql(query("report.day_changes"), params=[d]).pl()
    if events.is_empty():
        return events.with_columns(changes=pl.lit(None, dtype=pl.List(pl.Struct({"field": pl.Utf8}))))
    nested = changes.group_by("event_id", maintain_order=True).agg(
        changes=pl.struct("field", "before", "after", "is_cosmetic", "severity")
    )
    return events.join(nested, on="event_id", how="left", maintain_order="left")


def _status(run: dict) -> DayStatus:
    if run["status"] == "rejected":
        return DayStatus.REJECTED
    if run["status"] == "baseline":
        return DayStatus.BASELINE
    total = sum(run.get(k) or 0 for k in ("new_count", "changed_count", "withdrawn_count", "cosmetic_count"))
    return DayStatus.UNCHANGED if total == 0 else DayStatus.ACCEPTED


def _event_rows(frame: pl.DataFrame) -> tuple[EventRow, ...]:
    rows = []
    for e in frame.iter_rows(named=True):
        changes = tuple(
            FieldChangeRow(
                dmf_key=e["dmf_key"],
                permit_no=e["permit_no"],
                ingredient=e["ingredient"],
                applicant=e["applicant"],
                field=c["field"],
                before=c["before"],
                after=c["after"],
                is_cosmetic=c["is_cosmetic"],
                severity=c["severity"],
            )
            for c in (e["changes"] or ())
        )
        rows.append(
            EventRow(
                event_type=e["event_type"],
                severity=e["severity"],
                dmf_key=e["dmf_key"],
                permit_no=e["permit_no"],
                base_dmf_key=e["base_dmf_key"],
                ingredient=e["ingredient"],
                ingredient_base=e["ingredient_base"],
                applicant=e["applicant"],
                bizrno=e["bizrno"],
                manufacturer=e["manufacturer"],
                address=e["address"],
                countries=e["countries"],
                issue_date=e["issue_date"],
                target_class=e["target_class"],
                changed_fields=tuple(e["changed_fields"] or ()),
                cosmetic_fields=tuple(e["cosmetic_fields"] or ()),
                is_cosmetic=e["is_cosmetic"],
                is_reappearance=e["is_reappearance"],
                number_assigned=e["number_assigned"],
                is_transfer=e["is_transfer"],
                is_rename=e["is_rename"],
                watchlist_hit=e["watchlist_hit"],
                watch_reasons=tuple(e["watch_reasons"] or ()),
                changes=changes,
            )
        )
    return tuple(rows)


def _aggregates(conn, name: str, day_id: int, shape: str) -> tuple[AggregateRow, ...]:
    out = []
    for label, regs, a, b, c in conn.execute(query(f"report.{name}"), [day_id]).fetchall():
        if shape == "ingredient":
            out.append(AggregateRow(label, regs, manufacturers=a, applicants=b, countries=c))
        elif shape == "applicant":
            out.append(AggregateRow(label, regs, manufacturers=a, ingredients=b, countries=c))
        else:
            out.append(AggregateRow(label, regs, manufacturers=a, applicants=b, ingredients=c))
    return tuple(out)


def _gates(conn, day: date) -> tuple[GateRow, ...]:
    stored = {g["gate_no"]: g for g in history.gate_rows(conn, day)}
    rows = []
    for number, (name, label) in GATE_LABELS.items():
        g = stored.get(number)
        if g is None:
            rows.append(GateRow(number, name, label, None, "평가하지 않음", "-", "앞선 단계에서 판정이 끝났습니다."))
        else:
            rows.append(GateRow(number, name, label, g["passed"], g["observed"] or "", g["threshold"] or "", g["detail"] or ""))
    return tuple(rows)


def build_day_report(conn: duckdb.DuckDBPyConnection, day: date, settings: Settings, *, run_info: dict | None = None) -> DayReport:
    run = history.run_row(conn, day)
    if run is None or run["status"] == "pending":
        raise DayNotReady(
            f"{day}: 아직 판정·반영되지 않은 날짜입니다 (snapshot_diff 미실행). Run snapshot_diff for this day first."
        )
    status = _status(run)
    d = history.day_id(day)
    base_day = history.to_date(run["base_day_id"])
    last_accepted = base_day if status is DayStatus.REJECTED else day
    shown_id = history.day_id(last_accepted) if last_accepted else None

    events = day_events_frame(conn, day) if status is not DayStatus.REJECTED else pl.DataFrame()
    event_rows = _event_rows(events) if not events.is_empty() else ()
    by_severity: dict[str, int] = defaultdict(int)
    for e in event_rows:
        if e.event_type == "CHANGED" and not e.is_cosmetic:
            by_severity[e.severity] += 1

    population = run["population"]
    if status is DayStatus.REJECTED and shown_id is not None:
        population = history.run_row(conn, last_accepted)["population"]
    kpis = Kpis(
        registry_size=population,
        new=run["new_count"] or 0,
        changed=run["changed_count"] or 0,
        changed_by_severity=dict(by_severity),
        withdrawn=run["withdrawn_count"] or 0,
        reappeared=run["reappeared_count"] or 0,
        number_assigned=run["assigned_count"] or 0,
        cosmetic=run["cosmetic_count"] or 0,
        watchlist_hits=sum(1 for e in event_rows if e.watchlist_hit and not e.is_cosmetic),
    )

    if status is DayStatus.REJECTED:
        reason = run["reason"] or "수집 실패"
    elif status is DayStatus.BASELINE:
        reason = "첫 수집일입니다. 오늘의 등록 현황이 이후 비교의 기준이 되며, 이 날은 변경 이벤트가 없습니다."
    elif status is DayStatus.UNCHANGED:
        reason = f"기준일 {base_day} 대비 변경이 없습니다."
    else:
        reason = (
            f"기준일 {base_day} 대비 신규 {kpis.new:,} · 변경 {kpis.changed:,} · 취하 {kpis.withdrawn:,}"
            f" (표기만 바뀐 {kpis.cosmetic:,}건은 별도)"
        )

    start = history.day_id(day - timedelta(days=settings.report.history_days - 1))
    points = tuple(
        HistoryPoint(history.to_date(r[0]), r[1], r[2], r[3], r[4], r[5], r[6])
        for r in conn.execute(query("report.history_points"), [start, d]).fetchall()
    )
    quality = tuple(
        QualityRow(name, label or name, _fmt(value), expected or "", bool(ok), detail or "")
        for name, label, value, expected, ok, detail in conn.execute(query("report.day_quality"), [d]).fetchall()
    )
    pages = fetch_one(conn, query("report.day_fetch_pages"), [d])
    info = {
        "날짜": day.isoformat(),
        "판정": status.label_ko,
        "비교 기준일": str(base_day or "-"),
        "수집 출처": run["source"] or "-",
        "totalCount": f"{run['total_count']:,}" if run["total_count"] is not None else "-",
        "수신 건수": f"{run['rows_received']:,}" if run["rows_received"] is not None else "-",
        "요청 쪽수 / 시도": f"{pages[0] or 0} / {pages[1] or 0}",
        "수집 시간(초)": f"{run['fetch_seconds']:.1f}" if run["fetch_seconds"] is not None else "-",
        "처리 시간(초)": f"{run['process_seconds']:.2f}" if run["process_seconds"] is not None else "-",
        "판정 시각": str(run["judged_at"] or "-"),
        "반영 시각": str(run["committed_at"] or "-"),
        "Dagster run": run["dagster_run_id"] or "-",
    }
    if run.get("rederived_at"):
        info["재계산"] = f"{history.to_date(run['rederived_by'])} 처리로 {run['rederived_at']}에 이벤트를 다시 계산함"
    info.update(run_info or {})
    w = settings.watchlist
    return DayReport(
        day=day,
        status=status,
        status_reason=reason,
        comparison_base=base_day,
        last_accepted_day=last_accepted,
        kpis=kpis,
        events=event_rows,
        history=points,
        by_ingredient=_aggregates(conn, "by_ingredient", shown_id, "ingredient") if shown_id else (),
        by_applicant=_aggregates(conn, "by_applicant", shown_id, "applicant") if shown_id else (),
        by_country=_aggregates(conn, "by_country", shown_id, "country") if shown_id else (),
        gates=_gates(conn, day),
        quality=quality,
        watchlist={k: tuple(v) for k, v in w.model_dump().items() if v},
        run_info=info,
        generated_at=now_kst().replace(microsecond=0),
    )


def _fmt(value) -> str:
    if value is None:
        return "-"
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:.4f}"


def stored_events(conn: duckdb.DuckDBPyConnection, day: date) -> list:
    """A day's committed events as domain Events (for scoring and the CLI)."""
    from dmf_assets.domain.model import Event

    return [Event.from_row(e, e["changes"] or ()) for e in day_events_frame(conn, day).iter_rows(named=True)]
