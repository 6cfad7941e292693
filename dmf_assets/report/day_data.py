"""Assemble a DayReport (and the day's event list) from the history database (storage reads and the
named report queries, sql/queries/report.sql)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import fields, replace
from datetime import date, timedelta
from typing import TYPE_CHECKING, Any

import duckdb
import polars as pl

from dmf_assets.clock import now_kst
from dmf_assets.domain.gates import GATES, reason_for_the_team
from dmf_assets.domain.model import (
    ACCEPTED_STATUSES,
    COMPARED_FIELDS,
    SEVERITY_RANK,
    SITES_FIELD,
    DayStatus,
    substantive_changes,
)
from dmf_assets.report.model import (
    AGGREGATES,
    AggregateRow,
    ChangeRate,
    DayCounts,
    DayReport,
    EventRow,
    FieldChangeRow,
    GateRow,
    HistoryPoint,
    NetChange,
    PeriodReport,
    QualityRow,
)
from dmf_assets.report.sentences import change_rate_text
from dmf_assets.report.summary import DaySummary, headline_text, summarize
from dmf_assets.settings import Settings
from dmf_assets.storage import history, reports

if TYPE_CHECKING:
    from dmf_assets.report.products import Product


class DayNotReady(RuntimeError):
    """The day has not been judged and committed yet."""


#: the λ̂ burst flag: the 14-day rate at least this many times the long-run rate
BURST_FACTOR = 3.0
RATE_WINDOW_DAYS = 14


def day_events_frame(conn: duckdb.DuckDBPyConnection, day: date) -> pl.DataFrame:
    """Events of an accepted day with display values and their field changes (list of structs)."""
    d = history.day_id(day)
    return _events_frame(*reports.day_events(conn, d))


def recent_events_frame(conn: duckdb.DuckDBPyConnection, start: date, end: date) -> pl.DataFrame:
    """Events of every accepted day in [start, end], newest day first (same shape as day_events_frame)."""
    return _events_frame(*reports.recent_events(conn, history.day_id(start), history.day_id(end)))


def _events_frame(events: pl.DataFrame, changes: pl.DataFrame) -> pl.DataFrame:
    if events.is_empty():
        return events.with_columns(changes=pl.lit(None, dtype=pl.List(pl.Struct({"field": pl.Utf8}))))
    nested = changes.group_by("event_id", maintain_order=True).agg(
        changes=pl.struct("field", "before", "after", "is_cosmetic", "severity")
    )
    return events.join(nested, on="event_id", how="left", maintain_order="left")


def _status(run: dict) -> DayStatus:
    events = sum(run.get(k) or 0 for k in ("new_count", "changed_count", "withdrawn_count", "cosmetic_count"))
    return DayStatus.of_run(run["status"], events)


def _summary(conn: duckdb.DuckDBPyConnection, run: dict, events: Sequence[EventRow]) -> DaySummary:
    """The day's figures (report/summary.py) from its run row and its stored events."""
    day = history.to_date(run["day_id"])
    assert day is not None  # a run row always has its day
    base_day = history.to_date(run["base_day_id"])
    base_run = history.run_row(conn, base_day) if base_day else None
    assert base_day is None or base_run is not None  # a base day is a stored, accepted day
    return summarize(
        day,
        _status(run),
        events,
        comparison_base=base_day,
        registry_size=run["population"],
        base_registry_size=base_run["population"] if base_run else None,
        received=run["rows_received"],
        total_count=run["total_count"],
        rejected_gate=run["rejected_gate"],
    )


def day_summary(conn: duckdb.DuckDBPyConnection, day: date, products: Sequence[Product] = ()) -> DaySummary | None:
    """The figures of one judged day (report/summary.py), read from the database: its `runs` row and its stored
    events. None for a day that was never run or is still being judged. What the CLI's per-day line and the
    Dagster metadata read; the day's report builds its own `summary` with the same function."""
    run = _judged_run(conn, day)
    return None if run is None else _summary(conn, run, _day_event_rows(conn, run, products))


def day_event_rows(conn: duckdb.DuckDBPyConnection, day: date) -> tuple[EventRow, ...]:
    """The day's stored events as report rows (none on a rejected or unjudged day)."""
    run = _judged_run(conn, day)
    return () if run is None else _day_event_rows(conn, run, ())


def _judged_run(conn: duckdb.DuckDBPyConnection, day: date) -> dict | None:
    """The day's `runs` row, None for a day never run or still being judged."""
    run = history.run_row(conn, day)
    return None if run is None or run["status"] == DayStatus.PENDING.value else run


def _day_event_rows(conn: duckdb.DuckDBPyConnection, run: dict, products: Sequence[Product]) -> tuple[EventRow, ...]:
    if run["status"] == DayStatus.REJECTED.value:
        return ()
    return _event_rows(_events_frame(*reports.day_events(conn, run["day_id"])), products)


def _stored_counts_problem(run: dict, summary: DaySummary) -> str | None:
    """The `runs` row's counts, written in the same transaction as the events, must say what the events say."""
    stored = (
        headline_text(
            new=run["new_count"] or 0,
            changed=substantive_changes(run["changed_count"], run["assigned_count"], run["renumbered_count"]),
            withdrawn=run["withdrawn_count"] or 0,
            number_assigned=run["assigned_count"] or 0,
            number_changed=run["renumbered_count"] or 0,
        )
        + f" · 표기 변경 {run['cosmetic_count'] or 0:,}"
    )
    counted = f"{summary.counts_text} · 표기 변경 {summary.cosmetic:,}"
    if summary.is_rejected or stored == counted:
        return None
    return f"실행 기록의 건수({stored})와 이벤트로 센 건수({counted})가 다릅니다 — 리포트는 이벤트로 센 값을 표시합니다"


#: EventRow fields read from an events row: as lists, and as day ids
_LISTS = ("changed_fields", "cosmetic_fields", "watch_reasons", "renumber_candidates")
_DAYS = {"day": "day_id", "base_day": "base_day_id", "gone_since": "gone_since_day_id"}
_AS_STORED = tuple(f.name for f in fields(EventRow) if f.name not in {*_LISTS, *_DAYS, "changes", "product_hits"})


def _event_rows(frame: pl.DataFrame, products: Sequence[Product]) -> tuple[EventRow, ...]:
    from dmf_assets.report.products import product_hits

    dicts = list(frame.iter_rows(named=True))
    hits = product_hits(dicts, products) if products else [()] * len(dicts)
    return tuple(_event_row(e, hit) for e, hit in zip(dicts, hits, strict=False))


def _event_row(e: dict[str, Any], product_hits: tuple[str, ...]) -> EventRow:
    values: dict[str, Any] = {name: e[name] for name in _AS_STORED}
    values.update({name: tuple(e[name] or ()) for name in _LISTS})
    values.update({name: history.to_date(e.get(column)) for name, column in _DAYS.items()})
    changes = tuple(
        FieldChangeRow(e["dmf_key"], e["permit_no"], e["ingredient"], e["applicant"], **c) for c in (e["changes"] or ())
    )
    return EventRow(**values, changes=changes, product_hits=product_hits)


def _aggregates(conn: duckdb.DuckDBPyConnection, name: str, day_id: int | None) -> tuple[AggregateRow, ...]:
    """The rows of the aggregate `name` (`report/model.AGGREGATES`), each count by its column's name."""
    if day_id is None:  # no accepted day yet
        return ()
    return tuple(AggregateRow(**row) for row in reports.aggregate_rows(conn, name, day_id))


#: a gate an earlier one made unnecessary: (passed, observed, threshold, detail, samples) of its row
_NOT_JUDGED = (None, "평가하지 않음", "해당 없음", "앞선 단계에서 판정이 끝났습니다.", ())


def _gates(conn: duckdb.DuckDBPyConnection, day: date, settings: Settings) -> tuple[tuple[GateRow, ...], list[str]]:
    """Gate rows for the workbook — the outcomes the commit and the re-derivation stored (`history.day_gates`) —
    and the stored rows found stale."""
    outcomes, stale = history.day_gates(conn, day, settings.gates)
    problems = [
        f"{now.number}번 게이트 저장값이 현재 비교 기준과 다름 (저장: {was.observed} → 현재: {now.observed})"
        for was, now in stale
    ]
    rows = []
    for gate in GATES:
        g = outcomes.get(gate.number)
        judged = (g.passed, g.observed, g.threshold, g.detail, g.samples) if g is not None else _NOT_JUDGED
        rows.append(GateRow(gate.number, gate.name, gate.label_ko, *judged))
    return tuple(rows), problems


def change_rate(conn: duckdb.DuckDBPyConnection, day: date, *, window_days: int = RATE_WINDOW_DAYS) -> ChangeRate:
    """λ̂ = −ln(1 − X/n)/I over the last `window_days` vs all accepted history up to `day`, X = 실질 변경.

    For a WARN asset check: `change_rate(conn, day).burst` (text in `.text_ko`).
    """
    rows = reports.rate_runs(conn, history.day_id(day))
    start = history.day_id(day - timedelta(days=window_days - 1))

    def estimate(sel: list[tuple]) -> tuple[float | None, int, int]:
        x = sum(r[2] for r in sel)
        n = sum(r[3] or 0 for r in sel)
        if not sel or n <= 0:
            return None, x, n
        interval = sum((r[3] or 0) * (history.to_date(r[0]) - history.to_date(r[1])).days for r in sel) / n
        share = min(x / n, 1 - 1e-9)
        return max(0.0, -math.log1p(-share)) / max(interval, 1e-9), x, n  # max: no −0.0 on a quiet history

    rate_all, x_all, _ = estimate(rows)
    rate_14, x_14, _ = estimate([r for r in rows if r[0] >= start])
    size = reports.population_on_or_before(conn, history.day_id(day))  # the latest accepted day's registry
    per_day = lambda rate: None if rate is None or size is None else rate * size  # noqa: E731 - a one-line helper, read where it is used
    burst = bool(rate_14 is not None and rate_all and rate_14 >= BURST_FACTOR * rate_all)
    text = change_rate_text(
        per_day(rate_14), per_day(rate_all), window_days=window_days, burst_factor=BURST_FACTOR, burst=burst
    )
    return ChangeRate(rate_14, rate_all, per_day(rate_14), per_day(rate_all), x_14, x_all, burst, text)


#: where a day's rows came from (runs.source: the endpoint kind, or a replay of the raw archive), for 메타
SOURCE_LABEL_KO: dict[str, str] = {
    "emulator": "내장 에뮬레이터 (emulator)",
    "http": "식약처 오픈API (http)",
    "archive": "보관된 원본 재처리 (archive)",
}


def _products(settings: Settings) -> tuple[tuple, str | None]:
    """(products, problem): a broken product list never stops the daily workbook — it is reported."""
    from dmf_assets.report.products import ProductsError, load_products

    try:
        return load_products(settings.products.resolve()), None
    except ProductsError as exc:
        return (), f"제품 목록 오류 — 자사 영향 표시 없음: {exc}"


def _status_reason(summary: DaySummary) -> str:
    """요약's 설명: why the day is what it is, in the team's words."""
    base_day, status, covers = summary.comparison_base, summary.status, summary.covers_text
    if status is DayStatus.REJECTED:
        return summary.rejection_text
    if status is DayStatus.BASELINE:
        return "첫 수집일입니다. 오늘의 등록 현황이 이후 비교의 기준이 되며, 이 날은 변경 이벤트가 없습니다."
    if status is DayStatus.UNCHANGED:
        return f"기준일 {base_day} 대비 변경이 없습니다{covers}."
    cosmetic = f" (표기만 바뀐 {summary.cosmetic:,}건은 별도)" if summary.cosmetic else ""
    return f"기준일 {base_day} 대비{covers} {summary.counts_text}{cosmetic}"


def _warnings(
    summary: DaySummary, quality: Sequence[QualityRow], rate: ChangeRate | None, settings: Settings
) -> list[str]:
    """The banner's warnings — active quality warnings, a large withdrawal share (where the alert warns too,
    docs/DOMAIN.md §9), a λ̂ burst."""
    warnings = [f"{q.label_ko} {q.value}" for q in quality if not q.ok]
    share = summary.withdrawal_share
    if share is not None:
        share_max = settings.alerts.withdrawal_share_max
        if share > share_max:
            warnings.append(f"목록에서 삭제 비율 {share * 100:.1f} % (> {share_max * 100:g} %) — 원천 확인 필요")
    if rate is not None and rate.burst:
        warnings.append(
            f"변경 급증 — 최근 {RATE_WINDOW_DAYS}일 하루 평균 변경이 평소(전체 기간)의 {BURST_FACTOR:g}배 이상"
        )
    return warnings


def _run_info(conn: duckdb.DuckDBPyConnection, run: dict, summary: DaySummary) -> dict[str, object]:
    """메타's 실행 정보: how the day was fetched and judged (a fact not recorded is left out, never shown as '-')."""
    rejected = summary.status is DayStatus.REJECTED
    pages = reports.day_fetch_pages(conn, run["day_id"])

    def number(key: str, spec: str = ",") -> str | None:
        return None if run[key] is None else format(run[key], spec)

    info: dict[str, object] = {
        "날짜": summary.day,
        "판정": summary.status.label_ko,
        "비교 기준일": summary.comparison_base or "없음 (첫 수집일)",
        "수집 출처": SOURCE_LABEL_KO.get(run["source"], run["source"]),
        "원천이 밝힌 전체 건수 (totalCount)": number("total_count"),
        "받은 건수": number("rows_received"),
        "요청 쪽수 / 시도": f"{pages[0] or 0} / {pages[1] or 0}",
        "수집 시간(초)": number("fetch_seconds", ".1f"),
        "처리 시간(초)": number("process_seconds", ".2f"),
        "판정 시각": run["judged_at"],
        # a rejected day committed nothing: its run row's time is when the rejection was recorded
        "반영 시각": "반영하지 않음 (거부된 날)" if rejected else run["committed_at"],
        "거부 기록 시각": run["committed_at"] if rejected else None,
        "거부 사유 (기술)": run["reason"] if rejected else None,
        "Dagster run": run["dagster_run_id"],
    }
    if run.get("rederived_at"):
        info["재계산"] = (
            f"{history.to_date(run['rederived_by'])} 처리로 {run['rederived_at']:%Y-%m-%d %H:%M}에 이벤트를 다시 계산함"
        )
    if counts_problem := _stored_counts_problem(run, summary):
        info["저장된 건수"] = counts_problem
    return info


def build_day_report(
    conn: duckdb.DuckDBPyConnection, day: date, settings: Settings, *, run_info: dict | None = None
) -> DayReport:
    from dmf_assets.storage.registry import registry_asof

    run = _judged_run(conn, day)
    if run is None:
        raise DayNotReady(
            f"{day}: 아직 판정·반영되지 않은 날짜입니다 (snapshot_diff 미실행). Run snapshot_diff for this day first."
        )
    products, products_problem = _products(settings)
    event_rows = _day_event_rows(conn, run, products)
    summary = _summary(conn, run, event_rows)
    last_accepted = summary.last_accepted_day
    shown_id = history.day_id(last_accepted) if last_accepted else None
    quality = tuple(
        QualityRow(name, label or name, _fmt_quality(value, expected), expected or "", bool(ok), detail or "")
        for name, label, value, expected, ok, detail in reports.day_quality(conn, run["day_id"])
    )
    gates, gate_problems = _gates(conn, day, settings)
    rate = change_rate(conn, last_accepted) if last_accepted else None
    warnings = _warnings(summary, quality, rate, settings)
    info = _run_info(conn, run, summary)
    if gate_problems:
        info["게이트 저장값"] = "; ".join(gate_problems) + " — 리포트는 runs 기준으로 다시 계산한 값을 표시합니다"
    if rate is not None:
        info["변경률"] = rate.text_ko
    info.update(run_info or {})
    # 이력: the events of the last RECENT_DAYS days, and how those days were processed
    recent_start = day - timedelta(days=RECENT_DAYS - 1)
    recent = recent_events_frame(conn, recent_start, day)
    started = history.to_date(reports.first_run_day(conn))
    recent_statuses = [p.status for p in _history_points(conn, recent_start, day)]
    return DayReport.of(
        summary,
        _status_reason(summary),
        events=event_rows,
        history=_history_points(conn, day - timedelta(days=settings.report.history_days - 1), day),
        **{a.statement: _aggregates(conn, a.statement, shown_id) for a in AGGREGATES},
        gates=gates,
        quality=quality,
        watchlist={k: tuple(v) for k, v in settings.watchlist.model_dump().items() if v},
        run_info={k: v for k, v in info.items() if v is not None},
        generated_at=now_kst().replace(microsecond=0),
        # 전체현황: the registry of the last accepted day
        ledger=registry_asof(conn, last_accepted)[1] if last_accepted is not None else pl.DataFrame(),
        recent_events=_event_rows(recent, products),
        recent_days=RECENT_DAYS,
        recent_counts=DayCounts.of(recent_start, day, recent_statuses, started),
        warnings=(*warnings, *([products_problem] if products_problem else [])),
        change_rate=rate,
        products=tuple(p.label for p in products),
        products_configured=bool(settings.products.file),
    )


def _history_points(conn: duckdb.DuckDBPyConnection, start: date, end: date) -> tuple[HistoryPoint, ...]:
    """Every processed day in [start, end] with its status and headline counts (the runs table)."""
    return tuple(
        HistoryPoint(history.to_date(r[0]), DayStatus.of_value(r[1]), *r[2:])
        for r in reports.history_points(conn, history.day_id(start), history.day_id(end))
    )


#: days of events on the 이력 sheet
RECENT_DAYS = 90


def _fmt_quality(value: float | None, expected: str | None) -> str:
    """Ratios (their threshold is a percentage) as percent, so 품질 uses one unit per metric."""
    if value is None:
        return "-"
    if expected and "%" in expected and 0 <= float(value) <= 1:
        return f"{float(value) * 100:.2f} %"
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:.4f}"


# --- period report -------------------------------------------------------------------------------


def _net_type(types: list[str], events: list[EventRow], changes: list[FieldChangeRow]) -> str:
    if types[0] == "NEW":
        return "NEW_WITHDRAWN" if types[-1] == "WITHDRAWN" else "NEW"
    if types[-1] == "WITHDRAWN":
        return "WITHDRAWN"
    if types[0] == "WITHDRAWN":
        return "REAPPEARED"
    if all(e.is_cosmetic for e in events):
        return "COSMETIC"
    return "CHANGED" if any(not c.is_cosmetic for c in changes) else "REVERTED"


def _net_changes(events: list[EventRow]) -> tuple[FieldChangeRow, ...]:
    """Per field: the first `before` and the last `after`; fields that came back are dropped.

    Site rows cannot be chained by field; an added site that was removed again (or the reverse)
    cancels out, the rest are kept in order.
    """
    first: dict[str, FieldChangeRow] = {}
    last: dict[str, FieldChangeRow] = {}
    cosmetic_only: dict[str, bool] = {}
    sites: list[FieldChangeRow] = []
    for e in events:
        for c in e.changes:
            if c.field == SITES_FIELD:
                twin = next((s for s in sites if (s.before, s.after) == (c.after, c.before)), None)
                if twin is not None:
                    sites.remove(twin)
                else:
                    sites.append(c)
                continue
            first.setdefault(c.field, c)
            last[c.field] = c
            cosmetic_only[c.field] = cosmetic_only.get(c.field, True) and c.is_cosmetic
    out = []
    for name in sorted(first, key=lambda f: list(COMPARED_FIELDS).index(f) if f in COMPARED_FIELDS else 99):
        a, b = first[name], last[name]
        if a.before == b.after:
            continue  # changed and changed back
        severity = (
            "COSMETIC"
            if cosmetic_only[name]
            else max(
                (c.severity for e in events for c in e.changes if c.field == name and not c.is_cosmetic),
                key=lambda s: SEVERITY_RANK.get(s, -1),
            )
        )
        out.append(replace(b, before=a.before, is_cosmetic=cosmetic_only[name], severity=severity))
    return tuple(out) + tuple(sites)


def _net(paired: list[tuple[dict, EventRow]]) -> list[NetChange]:
    """Each registration's net change over a period's events (oldest first, with their stored rows), the team's
    products first, then watchlist hits, then severity."""
    # one registration = its record, joined with the record it was numbered from (number assignment)
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x

    for raw, _ in paired:
        ids = [i for i in (raw["record_id"], raw["base_record_id"]) if i is not None]
        for i in ids[1:]:
            parent[find(i)] = find(ids[0])
    groups: dict[int, list[EventRow]] = {}
    for raw, ev in paired:
        rid = raw["record_id"] if raw["record_id"] is not None else raw["base_record_id"]
        groups.setdefault(find(rid), []).append(ev)

    net = []
    for evs in groups.values():
        last = evs[-1]
        changes = _net_changes(evs)
        first_day, last_day = evs[0].day, last.day
        assert first_day is not None and last_day is not None  # a period's events carry their day
        net.append(
            NetChange(
                dmf_key=last.dmf_key,
                permit_no=last.permit_no or next((e.permit_no for e in reversed(evs) if e.permit_no), None),
                net_type=_net_type([e.event_type for e in evs], evs, list(changes)),
                severity=max((e.severity for e in evs), key=lambda s: SEVERITY_RANK.get(s, -1)),
                first_day=first_day,
                last_day=last_day,
                n_events=len(evs),
                ingredient=last.ingredient,
                applicant=last.applicant,
                manufacturer=last.manufacturer,
                countries=last.countries,
                changes=changes,
                product_hits=tuple(dict.fromkeys(p for e in evs for p in e.product_hits)),
                watchlist_hit=any(e.watchlist_hit for e in evs),
            )
        )
    net.sort(key=lambda n: (not n.product_hits, not n.watchlist_hit, -SEVERITY_RANK.get(n.severity, -1), n.dmf_key))

    return net


def build_period_report(conn: duckdb.DuckDBPyConnection, start: date, end: date, settings: Settings) -> PeriodReport:
    """Every event of the accepted days in [start, end] and the net effect per registration."""
    from dmf_assets.report.products import load_products

    products = load_products(settings.products.resolve())  # the CLI reports a broken list as a `dmf:` error
    params = [history.day_id(start), history.day_id(end)]
    frame = recent_events_frame(conn, start, end)
    rows = list(frame.iter_rows(named=True))
    event_rows = _event_rows(frame, products)
    # oldest first, in stored order within a day
    paired = sorted(zip(rows, event_rows, strict=False), key=lambda p: (p[0]["day_id"], p[0]["event_id"]))

    net = _net(paired)
    runs = reports.period_runs(conn, *params)
    days = _history_points(conn, start, end)
    # as the day's own workbook says it, not the engineer's line with the observed value
    reasons = {
        history.to_date(r[0]): why
        for r in runs
        if r[1] == DayStatus.REJECTED.value and (why := reason_for_the_team(r[4], r[3]))
    }
    first_accepted = next((r for r in runs if r[1] in ACCEPTED_STATUSES), None)
    warnings = []
    if not runs:
        warnings.append(f"{start} ~ {end} 사이에 처리된 날이 없습니다")
    missing = (end - start).days + 1 - len(runs)
    if runs and missing > 0:
        warnings.append(f"기간 중 {missing}일은 처리 기록이 없습니다 (미수집)")
    return PeriodReport(
        start=start,
        end=end,
        events=tuple(ev for _, ev in paired),
        net=tuple(net),
        days=days,
        reasons=reasons,
        first_base=history.to_date(first_accepted[2]) if first_accepted else None,
        products=tuple(p.label for p in products),
        warnings=tuple(warnings),
        generated_at=now_kst().replace(microsecond=0),
    )
