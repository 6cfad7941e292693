"""The period review workbook (`dmf report --from D1 --to D2`): 요약, 순변경, 전체 이벤트, 필드 변경, 메타."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from openpyxl import Workbook

from dmf_assets.domain.model import COUNT_LABEL_KO, SEVERITY_LABEL_KO, SEVERITY_RANK, DayStatus
from dmf_assets.report.cells import write_table
from dmf_assets.report.columns import columns
from dmf_assets.report.meta import NUMBER_DEFINITIONS, meta_rows, meta_sheet
from dmf_assets.report.model import NET_LABEL_KO, NET_TYPES, NetChange, PeriodReport
from dmf_assets.report.rows import (
    DAY_COLUMNS,
    FIELD_COLUMNS,
    PERMIT_WIDTH,
    RECENT_COLUMNS,
    change_row,
    day_rows,
    event_row,
)
from dmf_assets.report.sentences import (
    CHANGED_DEFINITION,
    change_lines,
    summary_sentences,
)
from dmf_assets.report.summary import HEADLINE_FIGURES, headline_text
from dmf_assets.report.tables import (
    Look,
    Page,
    TableSheet,
    colours,
    save_workbook,
    tables_workbook,
)

REVIEW_COLUMNS = columns({"reviewer": 10, "reviewed_on": 11, "comment": 30})
NET_COLUMNS = (
    *columns(
        {
            "severity": 9,
            "net_type": 14,
            "permit_no": PERMIT_WIDTH,
            "ingredient": 22,
            "applicant": 18,
            "manufacturer": 26,
            "countries": 11,
            "change_summary": 50,
            "n_events": 7,
            "first_day": 11,
            "last_day": 11,
            "product_hits": 16,
            "watch": 8,
            "dmf_key": 22,
        },
        headers={"change_summary": "순변경 내용 (기간 처음 전 → 마지막 후)"},
    ),
    *REVIEW_COLUMNS,
)
PERIOD_FIELD_COLUMNS = (*columns({"day": 11}), *FIELD_COLUMNS)
PERIOD_DAY_COLUMNS = (*DAY_COLUMNS, *columns({"reason": 40}))
_REVIEW = {"reviewer": "", "reviewed_on": "", "comment": ""}


def _period_banner(period: PeriodReport) -> str:
    text = (
        f"기간 리포트 {period.start} ~ {period.end} — 정상 반영 {period.accepted_days}일 · 수집 실패 "
        f"{period.rejected_days}일 · 이벤트 {len(period.events):,}건 · 순변경 등록 {len(period.net):,}건"
    )
    if period.first_base:
        text += f" (첫 비교 기준 {period.first_base})"
    return text + (f" · ⚠ 경고: {'; '.join(period.warnings)}" if period.warnings else "")


def _summary_page(wb: Workbook, look: Look, period: PeriodReport) -> None:
    """요약: the period's facts, its events as sentences, and how each day was processed."""
    title = f"DMF 기간 리포트 · {period.start} ~ {period.end}"
    note = "주간·월간 검토용: 기간의 모든 이벤트, 등록별 순변경, 검토자·검토일·의견 열 (감사 추적용, 비워 둠)"
    page = Page(wb, look, title, note)
    accepted = [d for d in period.days if d.status == DayStatus.ACCEPTED]
    by_type = Counter(NET_LABEL_KO[n.net_type] for n in sorted(period.net, key=lambda n: n.net_type))
    page.section("기간 개요")
    for name, value in (
        ("시작일", period.start),
        ("종료일", period.end),
        (
            "일수",
            f"{(period.end - period.start).days + 1}일 — 정상 반영 {period.accepted_days}일 · 수집 실패 "
            f"{period.rejected_days}일",
        ),
        ("첫 비교 기준일", period.first_base or "없음 (기간 안에 정상 반영일이 없음)"),
        (
            "건수 (정상 반영일 합계)",
            headline_text(**{k: sum(getattr(d, k) for d in accepted) for k in HEADLINE_FIGURES})
            + f" · 표기 변경 {sum(d.cosmetic for d in accepted):,}",
        ),
        ("순변경 등록", ", ".join(f"{label} {count:,}" for label, count in by_type.items()) or "없음"),
        (
            "자사 제품 해당 등록",
            f"{sum(1 for n in period.net if n.product_hits):,}건" if period.products else "제품 목록 없음",
        ),
        ("생성 시각 (KST)", period.generated_at),
    ):
        page.fact(name, value)
    sentences, total = summary_sentences(period.events)
    shown = sum(x.count for x in sentences)
    page.section(
        f"주요 이벤트 {total:,}건{f' 중 {shown:,}건' if shown < total else ''} — 자사 제품·관심목록 우선, 심각도 순"
    )
    page.sentences(sentences, watch=False)
    if not sentences:
        page.note("기간 중 실질 이벤트 없음")
    page.section("일별 처리")
    rows = day_rows(period.days)
    for row, d in zip(rows, period.days, strict=True):
        if d.status == DayStatus.ACCEPTED:
            row["reason"] = (
                f"표기 변경 {d.cosmetic:,}"
                + (f" · {COUNT_LABEL_KO['NUMBER_ASSIGNED']} {d.number_assigned:,}" if d.number_assigned else "")
                + (f" · {COUNT_LABEL_KO['NUMBER_CHANGED']} {d.number_changed:,}" if d.number_changed else "")
            )
        row["reason"] = period.reasons.get(d.day) or row.get("reason")
    write_table(page.ws, page.row + 1, PERIOD_DAY_COLUMNS, rows, row_hook=colours(verdict=2), set_widths=False)


def _net_row(n: NetChange) -> dict:
    return {
        "severity": SEVERITY_LABEL_KO.get(n.severity, n.severity),
        "net_type": NET_LABEL_KO[n.net_type],
        "permit_no": n.permit_no,
        "ingredient": n.ingredient,
        "applicant": n.applicant,
        "manufacturer": n.manufacturer,
        "countries": n.countries,
        "change_summary": "\n".join(change_lines(n.changes)) or None,
        "n_events": n.n_events,
        "first_day": n.first_day,
        "last_day": n.last_day,
        "product_hits": "\n".join(n.product_hits) or None,
        "watch": "예" if n.watchlist_hit else None,
        "dmf_key": n.dmf_key,
        **_REVIEW,
        "_severity_code": n.severity,
    }


def _sheets(period: PeriodReport) -> list[TableSheet]:
    span = f"{period.start} ~ {period.end}"
    events = sorted(period.events, key=lambda e: (e.day, -SEVERITY_RANK.get(e.severity, -1), e.dmf_key))
    meta = [
        *meta_rows("건수", [("변경", CHANGED_DEFINITION), *NUMBER_DEFINITIONS]),
        *meta_rows("순변경", NET_TYPES.values()),
        *meta_rows("제품 목록", ((f"제품 {i}", p) for i, p in enumerate(period.products, 1))),
    ]
    return [
        TableSheet(
            "순변경",
            f"등록별 순변경 · {span}",
            "등록마다 1행: 기간 처음의 값 → 마지막 값 (두 번 바뀌었으면 처음 전 → 마지막 후). 자사 제품·관심목록 우선, 심각도 순. "
            "검토자·검토일·의견은 검토 기록용으로 비워 두었습니다.",
            NET_COLUMNS,
            [_net_row(n) for n in period.net],
            colours(severity=1),
            print_cols=len(NET_COLUMNS),
        ),
        TableSheet(
            "전체 이벤트",
            f"전체 이벤트 · {span}",
            "기간의 모든 이벤트 (표기 변경 포함), 관측일 순.",
            (*RECENT_COLUMNS, *REVIEW_COLUMNS),
            [{**event_row(e), **_REVIEW} for e in events],
            colours(severity=3),
        ),
        TableSheet(
            "필드 변경",
            f"필드 변경 · {span}",
            "바뀐 항목별 1행 (관측일 순).",
            PERIOD_FIELD_COLUMNS,
            [{"day": e.day, **change_row(e, c)} for e in period.events for c in e.changes],
            colours(severity=2),
        ),
        meta_sheet("메타 정보 · 정의", meta),
    ]


def write_period_workbook(period: PeriodReport, path: Path) -> Path:
    """The period review workbook (see report.model.PeriodReport), written atomically."""
    header = f"DMF 기간 리포트 {period.start}~{period.end}"
    status = DayStatus.REJECTED if period.accepted_days == 0 else DayStatus.ACCEPTED
    look = Look(_period_banner(period), status, header)
    wb = tables_workbook(look, _sheets(period), header, page=lambda wb: _summary_page(wb, look, period))
    return save_workbook(wb, path)
