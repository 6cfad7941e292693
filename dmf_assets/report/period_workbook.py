"""The period review workbook (`dmf report --from D1 --to D2`): 요약, 순변경, 전체 이벤트, 필드 변경, 메타."""

from __future__ import annotations

from datetime import date, datetime
from pathlib import Path

from openpyxl import Workbook
from openpyxl.worksheet.worksheet import Worksheet

from dmf_assets.domain.model import COUNT_LABEL_KO, SEVERITY_LABEL_KO, SEVERITY_RANK, DayStatus
from dmf_assets.report import styles as st
from dmf_assets.report import xlsx_body
from dmf_assets.report.cells import Col, fit_row_height, put_date, put_datetime, put_text, text_lines, write_table
from dmf_assets.report.model import PeriodReport
from dmf_assets.report.nedrug import SOURCE_BASE_FALLBACK
from dmf_assets.report.output import atomic_write, ensure_dir
from dmf_assets.report.rows import (
    FIELD_COLUMNS,
    PERMIT_WIDTH,
    RECENT_COLUMNS,
    change_row,
    event_row,
)
from dmf_assets.report.sentences import (
    CHANGED_DEFINITION,
    NUMBER_ASSIGNED_DEFINITION,
    NUMBER_CHANGED_DEFINITION,
    change_lines,
    summary_sentences,
)
from dmf_assets.report.sheet_frame import ATTRIBUTION, frame_sheet
from dmf_assets.report.summary import headline_text
from dmf_assets.report.tables import TableSheet, add_table_sheet
from dmf_assets.report.workbook import NOTES, SHEET_META, SHEET_SUMMARY, SUMMARY_WIDTHS

REVIEW_COLUMNS: tuple[Col, ...] = (
    Col("reviewer", "검토자", 10),
    Col("reviewed_on", "검토일", 11),
    Col("comment", "의견", 30, "wrap"),
)
NET_COLUMNS: tuple[Col, ...] = (
    Col("severity", "심각도", 9),
    Col("net_type", "순변경", 14),
    Col("permit_no", "등록번호", PERMIT_WIDTH),
    Col("ingredient", "성분명", 22, "wrap"),
    Col("applicant", "신청인", 18, "wrap"),
    Col("manufacturer", "제조소명", 26, "wrap"),
    Col("countries", "제조국", 11, "wrap"),
    Col("change_summary", "순변경 내용 (기간 처음 전 → 마지막 후)", 50, "wrap"),
    Col("n_events", "이벤트 수", 7, "int"),
    Col("first_day", "처음 관측일", 11, "date"),
    Col("last_day", "마지막 관측일", 11, "date"),
    Col("product_hits", "자사 영향", 16, "wrap"),
    Col("watch", "관심목록", 8),
    Col("dmf_key", "관리 키", 22, hidden=True),
    *REVIEW_COLUMNS,
)
PERIOD_FIELD_COLUMNS: tuple[Col, ...] = (Col("day", "관측일", 11, "date"), *FIELD_COLUMNS)
NET_DEFINITIONS: dict[str, str] = {
    "신규": "기간 중 새로 나타난 등록 (이후 변경이 있었다면 마지막 상태로 표시)",
    "변경": "기간 처음의 값과 마지막 값이 다른 항목이 있는 등록 — 두 번 바뀌었으면 처음 전 → 마지막 후 한 행",
    "목록에서 삭제": "기간 중 목록에서 사라진 등록 (취하 등 — 목록은 취하인지 취소인지 알려 주지 않음)",
    "신규 후 삭제": "기간 안에서 나타났다가 목록에서 사라진 등록",
    "삭제 후 재등장": "기간 안에서 목록에서 사라졌다가 다시 나타난 등록",
    "변경 후 원복": "바뀌었다가 기간 안에 원래 값으로 돌아온 등록 (순변경 없음, 이벤트는 '전체 이벤트' 시트)",
    "표기 변경만": "띄어쓰기·문장부호 등 표기만 달라진 등록",
}


def _period_banner(period: PeriodReport) -> str:
    text = (
        f"기간 리포트 {period.start} ~ {period.end} — 정상 반영 {period.accepted_days}일 · 수집 실패 "
        f"{period.rejected_days}일 · 이벤트 {len(period.events):,}건 · 순변경 등록 {len(period.net):,}건"
    )
    if period.first_base:
        text += f" (첫 비교 기준 {period.first_base})"
    return text + (f" · ⚠ 경고: {'; '.join(period.warnings)}" if period.warnings else "")


def build_period_workbook(period: PeriodReport) -> Workbook:
    """The period review workbook in memory (see report.model.PeriodReport)."""
    from dmf_assets.report.model import NET_LABEL_KO

    wb = Workbook()
    wb.remove(wb.active)
    st.register_styles(wb)
    banner = _period_banner(period)
    status = DayStatus.REJECTED if period.accepted_days == 0 else DayStatus.ACCEPTED
    header = f"DMF 기간 리포트 {period.start}~{period.end}"
    by_type: dict[str, int] = {}
    for n in period.net:
        by_type[n.net_type] = by_type.get(n.net_type, 0) + 1

    # 요약
    widths = SUMMARY_WIDTHS
    ws = frame_sheet(
        wb,
        SHEET_SUMMARY,
        banner,
        status,
        widths,
        f"DMF 기간 리포트 · {period.start} ~ {period.end}",
        "주간·월간 검토용: 기간의 모든 이벤트, 등록별 순변경, 검토자·검토일·의견 열 (감사 추적용, 비워 둠)",
        print_header=(header, ATTRIBUTION),
        tab=True,
    )
    r = 4
    put_text(ws, r + 1, 1, "기간 개요", st.SECTION)
    r += 1
    headline = [d for d in period.days if d.status == "accepted"]
    facts: list[tuple[str, object]] = [
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
            headline_text(
                **{
                    k: sum(getattr(d, k) for d in headline)
                    for k in ("new", "changed", "withdrawn", "number_assigned", "number_changed")
                }
            )
            + f" · 표기 변경 {sum(d.cosmetic for d in headline):,}",
        ),
        ("순변경 등록", ", ".join(f"{NET_LABEL_KO[t]} {c:,}" for t, c in sorted(by_type.items())) or "없음"),
        (
            "자사 제품 해당 등록",
            f"{sum(1 for n in period.net if n.product_hits):,}건" if period.products else "제품 목록 없음",
        ),
        ("생성 시각 (KST)", period.generated_at),
    ]
    for name, value in facts:
        r += 1
        put_text(ws, r, 1, name, st.LABEL)
        if isinstance(value, datetime):
            put_datetime(ws, r, 2, value)
        elif isinstance(value, date):
            put_date(ws, r, 2, value)
        else:
            put_text(ws, r, 2, value, st.TEXT_WRAP)
            ws.merge_cells(start_row=r, start_column=2, end_row=r, end_column=7)
    sentences, total = summary_sentences(period.events)
    r += 2
    shown = sum(x.count for x in sentences)
    put_text(
        ws,
        r,
        1,
        f"주요 이벤트 {total:,}건"
        + (f" 중 {shown:,}건" if shown < total else "")
        + " — 자사 제품·관심목록 우선, 심각도 순",
        st.SECTION,
    )
    for x in sentences:
        r += 1
        cell = put_text(ws, r, 1, SEVERITY_LABEL_KO.get(x.severity, x.severity) + (" · 자사" if x.products else ""))
        cell.fill, cell.font = st.severity_fill(x.severity), st.severity_font(x.severity)
        put_text(ws, r, 2, x.full_text, st.TEXT_WRAP)
        ws.merge_cells(start_row=r, start_column=2, end_row=r, end_column=7)
        fit_row_height(ws, r, text_lines(x.full_text, sum(widths[1:])))
    if not sentences:
        r += 1
        put_text(ws, r, 1, "기간 중 실질 이벤트 없음", st.NOTE)
    r += 2
    put_text(ws, r, 1, "일별 처리", st.SECTION)
    day_cols = (
        Col("day", "날짜", 28, "date"),
        Col("status", "상태", 14),
        Col("registry_size", "등록 현황", 24, "int"),
        Col("new", "신규", 16, "int"),
        Col("changed", "변경", 18, "int"),
        Col("withdrawn", COUNT_LABEL_KO["WITHDRAWN"], 14, "int"),
        Col("reason", "표기 변경 / 실패 사유", 40, "wrap"),
    )
    day_rows = [
        {
            "day": d.day,
            "status": DayStatus.of_value(d.status).word_ko,
            "registry_size": d.registry_size,
            "new": d.new if d.status == "accepted" else None,
            "changed": d.changed if d.status == "accepted" else None,
            "withdrawn": d.withdrawn if d.status == "accepted" else None,
            "reason": period.reasons.get(d.day)
            or (
                f"표기 변경 {d.cosmetic:,}"
                + (f" · {COUNT_LABEL_KO['NUMBER_ASSIGNED']} {d.number_assigned:,}" if d.number_assigned else "")
                + (f" · {COUNT_LABEL_KO['NUMBER_CHANGED']} {d.number_changed:,}" if d.number_changed else "")
                if d.status == "accepted"
                else None
            ),
            "_rejected": d.status == "rejected",
        }
        for d in period.days
    ]

    def day_hook(ws: Worksheet, row_no: int, row: dict) -> None:
        if row["_rejected"]:
            cell = ws.cell(row=row_no, column=2)
            cell.fill, cell.font = st.verdict_style("fail")

    write_table(ws, r + 1, day_cols, day_rows, row_hook=day_hook, set_widths=False)
    ws.freeze_panes = "A4"
    ws.print_title_rows = "1:3"

    net_rows = [
        {
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
            "reviewer": "",
            "reviewed_on": "",
            "comment": "",
            "_severity_code": n.severity,
        }
        for n in period.net
    ]
    event_rows = []
    for e in sorted(period.events, key=lambda e: (e.day, -SEVERITY_RANK.get(e.severity, -1), e.dmf_key)):
        row = event_row(e, SOURCE_BASE_FALLBACK)
        row.update(day=e.day, base_day=e.base_day, reviewer="", reviewed_on="", comment="")
        event_rows.append(row)
    field_rows = [{"day": e.day, **change_row(e, c)} for e in period.events for c in e.changes]
    sheets = [
        TableSheet(
            "순변경",
            f"등록별 순변경 · {period.start} ~ {period.end}",
            "등록마다 1행: 기간 처음의 값 → 마지막 값 (두 번 바뀌었으면 처음 전 → 마지막 후). 자사 제품·관심목록 우선, 심각도 순. "
            "검토자·검토일·의견은 검토 기록용으로 비워 두었습니다.",
            NET_COLUMNS,
            net_rows,
            severity_col=1,
            print_cols=len(NET_COLUMNS),
        ),
        TableSheet(
            "전체 이벤트",
            f"전체 이벤트 · {period.start} ~ {period.end}",
            "기간의 모든 이벤트 (표기 변경 포함), 관측일 순.",
            (*RECENT_COLUMNS, *REVIEW_COLUMNS),
            event_rows,
            severity_col=3,
        ),
        TableSheet(
            "필드 변경",
            f"필드 변경 · {period.start} ~ {period.end}",
            "바뀐 항목별 1행 (관측일 순).",
            PERIOD_FIELD_COLUMNS,
            field_rows,
            severity_col=2,
        ),
    ]
    for sheet in sheets:
        add_table_sheet(wb, sheet, banner, status, header)
    meta = [{"group": "출처", "item": "출처 표시", "value": ATTRIBUTION}]
    meta += [
        {"group": "건수", "item": "변경", "value": CHANGED_DEFINITION},
        {"group": "건수", "item": COUNT_LABEL_KO["NUMBER_ASSIGNED"], "value": NUMBER_ASSIGNED_DEFINITION},
        {"group": "건수", "item": COUNT_LABEL_KO["NUMBER_CHANGED"], "value": NUMBER_CHANGED_DEFINITION},
    ]
    meta += [{"group": "순변경", "item": k, "value": v} for k, v in NET_DEFINITIONS.items()]
    meta += [{"group": "제품 목록", "item": f"제품 {i}", "value": p} for i, p in enumerate(period.products, 1)]
    meta += [{"group": "참고", "item": f"참고 {i}", "value": t} for i, t in enumerate(NOTES, 1)]
    add_table_sheet(
        wb,
        TableSheet(
            SHEET_META,
            "메타 정보 · 정의",
            ATTRIBUTION,
            (Col("group", "구분", 14), Col("item", "항목", 30, "wrap"), Col("value", "내용", 100, "wrap")),
            meta,
        ),
        banner,
        status,
        header,
    )
    wb.active = 0
    wb.properties.title = header
    wb.properties.creator = "DMF Watch"
    wb.properties.description = ATTRIBUTION
    return wb


def write_period_workbook(period: PeriodReport, path: Path) -> Path:
    path = Path(path)
    ensure_dir(path.parent)
    wb = build_period_workbook(period)
    atomic_write(path, lambda tmp: xlsx_body.save(wb, tmp))
    return path
