"""The daily Excel workbook: `reports/DMF_리포트_YYYY-MM-DD.xlsx` and the always-current 최신 copy.

Input is a `DayReport` (report/model.py) built in memory; this module never touches the database.
What it guarantees:

* every sheet's first row is a status banner — on a rejected day a red "수집 실패 — 비교 기준은 여전히
  YYYY-MM-DD입니다" — and the event sheets then say the day's changes were not applied instead of showing
  an empty table that reads as "no changes";
* text that came from the source is stored by `cells`' safety rules (never a formula);
* the file is written atomically (temp file in the same folder + `os.replace`), and the 최신 copy is
  only refreshed by a day at least as new as the one it holds (a backfill never replaces it).
"""

from __future__ import annotations

import contextlib
import re
import shutil
import time
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path

import polars as pl
from openpyxl import Workbook
from openpyxl.chart import BarChart, Reference
from openpyxl.chart.series import SeriesLabel
from openpyxl.styles import Alignment
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.pagebreak import Break
from openpyxl.worksheet.worksheet import Worksheet

from dmf_assets.domain.gates import GATE_BY_NUMBER, GATES
from dmf_assets.domain.model import (
    SEVERITY_LABEL_KO,
    SEVERITY_RANK,
    WITHDRAWN_FIRST_MENTION_KO,
    DayStatus,
    Severity,
)
from dmf_assets.korean import josa
from dmf_assets.report import styles as st
from dmf_assets.report import xlsx_body
from dmf_assets.report.cells import (
    day_text,
    fit_row_height,
    merge_cells,
    put_date,
    put_datetime,
    put_int,
    put_text,
    text_lines,
    write_table,
)
from dmf_assets.report.columns import COLUMN_LABELS, WRAP, columns
from dmf_assets.report.meta import day_meta_sheet, fields_of
from dmf_assets.report.model import (
    AGGREGATES,
    SHEET_BY_APPLICANT,
    SHEET_EVENTS,
    SHEET_FIELDS,
    SHEET_LEDGER,
    SHEET_NAMES,
    SHEET_NEW_WITHDRAWN,
    SHEET_QUALITY,
    SHEET_RECENT,
    SHEET_SUMMARY,
    Aggregate,
    AggregateRow,
    DayCounts,
    DayReport,
    sorted_events,
)
from dmf_assets.report.output import WorkbookError, atomic_write, ensure_dir
from dmf_assets.report.retention import LATEST_NAME, dated_workbook_name, dated_workbooks
from dmf_assets.report.rows import (
    DAY_COLUMNS,
    EVENT_COLUMNS,
    FIELD_COLUMNS,
    LEDGER_COLUMNS,
    NEW_WITHDRAWN_COLUMNS,
    RECENT_COLUMNS,
    day_rows,
    event_row,
    events_by_company,
    field_rows,
    ledger_frame,
    new_withdrawn_rows,
    recent_rows,
    sample_table,
)
from dmf_assets.report.sentences import (
    CHANGED_DEFINITION,
    NO_NUMBER,
    NUMBER_ASSIGNED_DEFINITION,
    NUMBER_CHANGED_DEFINITION,
    event_sentence,
    summary_sentences,
)
from dmf_assets.report.summary import CHANGE_KIND_LABEL_KO, COMPANY_KINDS, EVENT_KIND_LABEL_KO
from dmf_assets.report.tables import (
    SUMMARY_WIDTHS,
    Look,
    Page,
    TableSheet,
    colours,
    paint,
    put_severity,
    tables_workbook,
)

# --- names and fixed texts -----------------------------------------------------------------------

NOT_REFLECTED = "이 날짜의 변경 내역은 반영되지 않았습니다"
_WEEKDAYS_KO = "월화수목금토일"

#: KPI key -> (label in column A of the 요약 sheet, what it counts; the two sizes' notes depend on the day). Tests
#: and users find rows by these labels. The headline figures come first — 신규 · 변경 (실질 변경) · 목록에서 삭제 ·
#: 번호 부여 · 번호 변경 — as in the banner and the mail; then their sum, 이벤트, split by severity (withdrawals
#: included), as 변경 이벤트 counts them. Every value is a figure of the day's `DaySummary`.
KPIS: dict[str, tuple[str, str]] = {
    "registry_size": ("등록 현황 (건)", ""),
    "received": ("받은 목록 (건)", ""),
    "new": (EVENT_KIND_LABEL_KO["NEW"], "비교 기준일에 없던 등록 (재등장 포함)"),
    "changed": (f"{EVENT_KIND_LABEL_KO['CHANGED']} (실질 변경)", CHANGED_DEFINITION),
    "withdrawn": (
        WITHDRAWN_FIRST_MENTION_KO,
        "비교 기준일에 있었으나 오늘 목록에 없는 등록 — 취하인지 취소인지는 목록이 알려 주지 않음",
    ),
    "number_assigned": (EVENT_KIND_LABEL_KO["NUMBER_ASSIGNED"], NUMBER_ASSIGNED_DEFINITION),
    "number_changed": (EVENT_KIND_LABEL_KO["NUMBER_CHANGED"], NUMBER_CHANGED_DEFINITION),
    "reappeared": ("재등장 (신규 중)", "목록에서 삭제된 뒤 다시 나타난 등록 (신규에 포함)"),
    "headline_events": (
        "이벤트 (표기 변경 제외)",
        "신규·변경·목록에서 삭제·번호 부여·번호 변경의 합 — 아래는 심각도별 ('변경 이벤트' 시트의 행)",
    ),
    "severity_CRITICAL": (
        f"  · {SEVERITY_LABEL_KO['CRITICAL']}",
        f"{fields_of(Severity.CRITICAL)} 변경, 목록에서 삭제된 등록",
    ),
    "severity_HIGH": (f"  · {SEVERITY_LABEL_KO['HIGH']}", f"{fields_of(Severity.HIGH)} 변경, 재등장, 관심목록 해당"),
    "severity_MEDIUM": (f"  · {SEVERITY_LABEL_KO['MEDIUM']}", f"{fields_of(Severity.MEDIUM)} 변경, 번호 변경"),
    "severity_INFO": (f"  · {SEVERITY_LABEL_KO['INFO']}", "신규 등록, 번호 부여"),
    "watchlist_hits": ("관심목록 해당", "관심 성분·업체·제조소·국가에 해당하는 이벤트"),
    "product_hits": ("자사 제품 해당", "자사 제품 목록의 등록번호 또는 성분+제조소에 해당하는 이벤트"),
    "cosmetic": (
        f"{EVENT_KIND_LABEL_KO['COSMETIC']} (별도 집계)",
        "띄어쓰기·문장부호·법인격 표기만 달라진 변경 — 위 건수에 포함하지 않음",
    ),
}
KPI_LABELS: dict[str, str] = {key: label for key, (label, _) in KPIS.items()}


@dataclass(frozen=True)
class WorkbookResult:
    path: Path
    latest_path: Path
    latest_updated: bool
    bytes: int
    seconds: float
    sheet_rows: dict[str, int] = field(default_factory=dict)  # data rows per table sheet


# --- report-wide texts ---------------------------------------------------------------------------


def banner_text(report: DayReport) -> str:
    """The first row of every sheet: the day's verdict, then any active warning."""
    return _banner_core(report) + (f" · ⚠ 경고: {'; '.join(report.warnings)}" if report.warnings else "")


def _banner_core(report: DayReport) -> str:
    k = report.summary
    size = f"{k.registry_size:,}건" if k.registry_size is not None else "미상"
    if report.status is DayStatus.REJECTED:
        reason = k.rejection_text  # the team's words, from the day's figures
        base = report.last_accepted_day
        if base is None:
            return f"수집 실패 — 아직 정상 수집된 비교 기준일이 없습니다 (사유: {reason})"
        return f"수집 실패 — 비교 기준은 여전히 {base.isoformat()}입니다. {reason}"
    if report.status is DayStatus.BASELINE:
        return (
            f"기준일 — {josa(report.day.isoformat(), '은/는')} 최초 정상 수집일입니다. 비교할 이전 자료가 없으므로 "
            f"변경 이벤트가 없습니다(설계상). 등록 현황 {size}"
        )
    if report.status is DayStatus.UNCHANGED:
        return (
            f"변경 없음 — {report.day.isoformat()} 수집분이 비교 기준 {josa(day_text(report.comparison_base), '과/와')} "
            f"동일합니다{k.covers_text}. 등록 현황 {size}"
        )
    text = f"정상 수집 · 비교 기준 {day_text(report.comparison_base)} — {k.counts_text}{k.covers_text}"
    if k.cosmetic:
        text += f" (표기 변경 {k.cosmetic:,}건 별도)"
    if k.product_hits:
        text += f" · 자사 제품 해당 {k.product_hits:,}건"
    return text + f" · 등록 현황 {size}"


def _event_sheet_note(report: DayReport) -> str:
    k = report.summary
    if report.status is DayStatus.BASELINE:
        return "기준일 — 최초 수집일이므로 변경 이벤트가 없습니다 (설계상). 다음 정상 수집일부터 비교합니다."
    if report.status is DayStatus.UNCHANGED:
        return f"변경 없음 — 비교 기준 {day_text(report.comparison_base)} 대비 달라진 등록이 없습니다."
    if k.headline_events == 0:
        return f"실질 이벤트 없음 — 표기 변경 {k.cosmetic:,}건만 있습니다 ('{SHEET_FIELDS}' 시트 참고)."
    return (
        f"이벤트 {k.headline_events:,}건 ({k.counts_text}; {k.severity_text}) — "
        f"심각도, 등록번호 순. 비교 기준 {day_text(report.comparison_base)}. 표기 변경 {k.cosmetic:,}건은 '{SHEET_FIELDS}' 시트에 표시."
    )


# --- 요약 ------------------------------------------------------------------------------------------


#: the trend table's last columns (번호 변경, 표기 변경), beyond the 요약 grid; the chart's hidden helper column after them
_TREND_EXTRA_WIDTH = 12.0
#: rows kept free for the trend chart (9.5 cm high) above its table
_CHART_ROWS = 20
#: the 요약 trend table (newest first); its status column holds words only
TREND_COLUMNS = (
    *DAY_COLUMNS,
    *columns({"number_assigned": 40, "number_changed": _TREND_EXTRA_WIDTH, "cosmetic": _TREND_EXTRA_WIDTH}),
)
GATE_VERDICT_KO = {"ok": "통과", "fail": "실패", "na": "미평가"}


def _verdict(passed: bool | None) -> str:
    return "ok" if passed else "fail" if passed is False else "na"


class _Summary(Page):
    """The 요약 sheet, section by section, top to bottom."""

    def __init__(self, wb: Workbook, look: Look, report: DayReport):
        day = report.day
        title = f"DMF 일일 리포트 · {day.isoformat()} ({_WEEKDAYS_KO[day.weekday()]})"
        note = "식품의약품안전처 원료의약품 등록(DMF) 현황 — 비교 기준일 대비 신규·변경·목록에서 삭제 요약"
        super().__init__(wb, look, title, note)
        self.report = report

    def status(self) -> None:
        report, ws = self.report, self.ws
        self.section("수집 상태")
        self.fact("보고일", report.day)
        self.label("상태")
        paint(
            self.merged_text(2, report.status.label_ko, last_col=5, style=st.TEXT),
            st.banner_style(report.status, st.FONT_SIZE),
        )
        self.label("설명")
        self.merged_text(2, report.status_reason, last_col=5)
        for label, day, missing in (
            ("비교 기준일", report.comparison_base, "없음 (기준일)"),
            ("마지막 정상 수집일", report.last_accepted_day, "없음"),
        ):
            self.label(label)
            put_date(ws, self.row, 2, day) if day is not None else put_text(ws, self.row, 2, missing)
        self.label("생성 시각 (KST)")
        put_datetime(ws, self.row, 2, report.generated_at)

        def line(name: str, text: str, alarm: bool = False) -> None:
            self.label(name)
            cell = self.merged_text(2, text)
            if alarm:
                paint(cell, st.verdict_style("warn"))

        if report.gap_days > 1:
            line(
                "비교 범위",
                f"{report.gap_days}일치 변경 — {day_text(report.comparison_base)} 이후 "
                f"{report.gap_days - 1}일은 반영되지 않아(수집 실패 또는 미수집) 오늘 비교에 모두 포함됩니다",
            )
        if report.change_rate is not None:
            line("변경률", report.change_rate.text_ko, report.change_rate.burst)
        if report.warnings:
            line("경고", "\n".join(report.warnings), alarm=True)

    def top_events(self) -> None:
        """The day's events as the sentences the morning mail has (accepted days only)."""
        report, k = self.report, self.report.summary
        sentences, _ = summary_sentences(report.events)
        if not sentences:
            self.section("주요 이벤트 — 없음")
            self.note(_event_sheet_note(report))
            return
        shown, total = sum(x.count for x in sentences), k.headline_events
        scope = "모두 표시" if shown >= total else f"{shown:,}건 표시"
        self.section(f"주요 이벤트 {total:,}건 ({k.counts_text}) — 자사 제품·관심목록 우선, 심각도 순, {scope}")
        self.sentences(sentences, watch=True)
        if total > shown:
            self.note(f"… 나머지 {total - shown:,}건은 '{SHEET_EVENTS}' 시트 (전체 내용·전 → 후)")

    def kpis(self) -> None:
        report, ws, k = self.report, self.ws, self.report.summary
        rejected = report.is_rejected
        self.section("핵심 지표")
        self.header([(1, "지표"), (2, "건수"), (3, "설명")], merges=[(3, 7)])
        # every figure but the sizes: a `DaySummary` attribute, or a severity's count
        values = {
            key: k.by_severity.get(key.removeprefix("severity_"), 0) if key.startswith("severity_") else getattr(k, key)
            for key in KPI_LABELS
            if key not in ("registry_size", "received")
        }
        self.label(KPI_LABELS["registry_size"])
        put_int(ws, self.row, 2, k.shown_registry_size)
        if rejected:
            size_note = (
                f"마지막 정상 수집일 {day_text(report.last_accepted_day)}의 등록 (이 날 받은 목록은 반영하지 않음)"
            )
        else:
            size_note = f"{report.day.isoformat()} 정상 수집분 기준 (현재 공개된 등록 전체)"
        self.merged_text(3, size_note, style=st.TEXT)
        if rejected and k.received is not None:  # what came that day, apart from the base's registry
            self.label(KPI_LABELS["received"])
            put_int(ws, self.row, 2, k.received)
            announced = f"원천이 밝힌 전체 {k.total_count:,}건 중 " if k.total_count is not None else ""
            self.merged_text(
                3, f"{report.day.isoformat()}에 받은 목록: {announced}{k.received:,}건 — 반영하지 않음", style=st.TEXT
            )
        for key, value in values.items():
            if key == "cosmetic":
                self.row += 1  # shown apart: not part of the headline counts
            self.label(KPI_LABELS[key])
            label_cell = ws.cell(row=self.row, column=1)
            no_list = key == "product_hits" and not report.products_configured
            if rejected or report.status is DayStatus.BASELINE or no_list:
                # no count exists for this day: say why instead of showing a zero
                value_cell = put_text(
                    ws, self.row, 2, "미반영" if rejected else "목록 없음" if no_list else "해당 없음"
                )
                value_cell.alignment = Alignment(horizontal="center", vertical="top")
            else:
                value_cell = put_int(ws, self.row, 2, value)
            self.merged_text(3, KPIS[key][1], style=st.TEXT)
            sev = key.removeprefix("severity_")
            if sev in SEVERITY_RANK and not rejected and (value or 0) > 0:
                paint(value_cell, st.severity_style(sev))
            if key == "cosmetic":
                paint(label_cell, st.severity_style("COSMETIC"))

    def gates(self) -> None:
        """수용 게이트 in the reader's words: each gate's verdict and what it means. The observed values and
        thresholds (API field names, settings) are the administrator's: they are on the 품질 sheet."""
        report, ws = self.report, self.ws
        self.section(f"수용 게이트 ({len(GATES)}개 모두 통과해야 반영)")
        self.header([(1, "게이트"), (2, "결과"), (3, "설명")], merges=[(3, 7)])
        if not report.gates:
            self.note("게이트 결과 없음")
        for g in report.gates:
            self.label(f"{g.number}. {g.label_ko}")
            verdict = _verdict(g.passed)
            cell = put_text(ws, self.row, 2, GATE_VERDICT_KO[verdict])
            paint(cell, st.verdict_style(verdict))
            cell.alignment = Alignment(horizontal="center", vertical="top", wrap_text=False)  # never 「통/과」
            # a failed gate in the team's words (its technical detail may name a setting); the rest say what held
            if g.passed is False:
                sizes = report.summary.sizes_text
                detail = (
                    f"이 검사에서 거부되었습니다{f' ({sizes})' if sizes else ''}. 값과 기준은 '{SHEET_QUALITY}' 시트."
                )
            else:
                detail = g.detail
            self.merged_text(3, detail)

    def rejection_samples(self) -> None:
        """The evidence of the gate that refused the day: its sample rows, under Korean headers."""
        failed = next((g for g in self.report.gates if g.passed is False and g.samples), None)
        if failed is None:
            return
        headers, rows = sample_table(failed.samples)
        headers, rows = headers[:7], [row[:7] for row in rows]  # the 요약 grid; the rest is in the UI's check
        self.section(f"거부 근거 — {failed.number}. {failed.label_ko} 게이트의 표본 {len(rows):,}행")
        self.header(list(enumerate(headers, 1)))
        for row in rows:
            self.row += 1
            for col, value in enumerate(row, 1):
                if isinstance(value, int):
                    put_int(self.ws, self.row, col, value)
                else:
                    put_text(self.ws, self.row, col, value, st.TEXT_WRAP)
            fit_row_height(
                self.ws, self.row, max(text_lines(str(v or ""), SUMMARY_WIDTHS[i]) for i, v in enumerate(row))
            )

    def watchlist(self) -> None:
        """관심목록 해당 (accepted days only: a rejected day's events were not applied)."""
        report, ws = self.report, self.ws
        hits = [e for e in sorted_events(report.events) if e.watchlist_hit and not e.is_cosmetic]
        if not hits:
            return
        self.section(f"관심목록 해당 이벤트 ({len(hits):,}건)")
        named = ("permit_no", "severity", "event_type", "ingredient", "applicant")
        self.header(list(enumerate((*(COLUMN_LABELS[c][0] for c in named), "사유"), 1)), merges=[(6, 7)])
        for ev in hits[:50]:
            self.row += 1
            put_text(ws, self.row, 1, ev.permit_no or NO_NUMBER)
            put_severity(ws, self.row, 2, ev.severity)
            for col, value in enumerate((ev.label, ev.ingredient, ev.applicant, ", ".join(ev.watch_reasons)), 3):
                put_text(ws, self.row, col, value)
            merge_cells(ws, self.row, 6, 7)
        if len(hits) > 50:
            self.note(f"… 외 {len(hits) - 50:,}건 — '{SHEET_EVENTS}' 시트에서 '표시' 열을 '관심목록'으로 필터")

    def trend(self) -> None:
        """최근 추이 on a page of its own: a chart, then the table, newest first (it answers "what happened
        lately"). A day's status is a word in its own column; a rejected day has no counts (blank, never a
        zero) and is marked in the chart by its own series on a hidden 0–1 axis — never a bar on the count
        axis."""
        report, ws = self.report, self.ws
        ws.row_breaks.append(Break(id=self.row + 1))  # a chart cut by a page break cannot be read on paper
        self.section(f"최근 {len(report.history):,}일 추이")
        rows = day_rows(sorted(report.history, key=lambda p: p.day, reverse=True))
        if not rows:
            self.note("추이 자료 없음")
            return
        top = self.row + _CHART_ROWS + 1  # the chart takes the rows above the table
        for extra in range(len(SUMMARY_WIDTHS) + 1, len(TREND_COLUMNS) + 1):
            ws.column_dimensions[get_column_letter(extra)].width = _TREND_EXTRA_WIDTH
        last = write_table(ws, top, TREND_COLUMNS, rows, row_hook=colours(verdict=2), set_widths=False)
        # the chart's rejected-day series reads a hidden column beside the table (outside it and its filter)
        marker_col = len(TREND_COLUMNS) + 1
        ws.cell(row=top, column=marker_col, value="차트용: 거부일 표시 (1)")
        for i, row in enumerate(rows, top + 1):
            if row["_verdict"]:
                ws.cell(row=i, column=marker_col, value=1)
        ws.column_dimensions[get_column_letter(marker_col)].hidden = True
        _history_chart(ws, top, last, marker_col, anchor=f"A{self.row + 1}")
        self.row = last


def _summary_sheet(wb: Workbook, look: Look, report: DayReport) -> None:
    """요약: what an analyst forwards. An accepted day leads with its events as sentences; a rejected
    day with the gate that refused it and that gate's sample rows."""
    page = _Summary(wb, look, report)
    page.status()
    if report.is_rejected:
        page.gates()
        page.rejection_samples()
        page.kpis()
    else:
        if report.status is not DayStatus.BASELINE:
            page.top_events()
        page.kpis()
        page.gates()
        page.watchlist()
    page.trend()


def _bar_chart(kind: str, title: str) -> BarChart:
    """A bar ("bar") or column ("col") chart of a table listed first to last: its category axis runs the other
    way, so the first row is at the top (bars) or time runs left to right (columns), and the value axis stays at
    the bottom or on the left; both axes shown (openpyxl's default hides them in recent Excel versions)."""
    chart = BarChart()
    chart.type = kind
    chart.title = title
    chart.x_axis.scaling.orientation = "maxMin"
    chart.y_axis.crosses = "max"
    chart.x_axis.delete = False
    chart.y_axis.delete = False
    chart.y_axis.majorGridlines = None
    return chart


def _history_chart(ws: Worksheet, top: int, last: int, marker_col: int, anchor: str) -> None:
    chart = _bar_chart("col", f"일별 신규·변경·삭제 (최근 {last - top}일)")  # the table is newest-first
    chart.grouping = "stacked"
    chart.overlap = 100
    chart.y_axis.title = "건수"
    chart.x_axis.number_format = "mm-dd"
    categories = Reference(ws, min_col=1, min_row=top + 1, max_row=last)
    chart.add_data(Reference(ws, min_col=4, max_col=6, min_row=top, max_row=last), titles_from_data=True)
    chart.set_categories(categories)
    for series, colour in zip(chart.series, ("4472C4", "ED7D31", "C00000"), strict=False):
        series.graphicalProperties.solidFill = colour
        series.graphicalProperties.line.solidFill = colour
    # a rejected day: a full-height pale-red band on a second axis fixed to 0–1 whose labels are hidden,
    # so it is never read as a count; its values come from the hidden marker column
    rejected = BarChart()
    rejected.type = "col"
    rejected.add_data(Reference(ws, min_col=marker_col, min_row=top, max_row=last), titles_from_data=True)
    rejected.set_categories(categories)
    rejected.series[0].tx = SeriesLabel(v="거부 (미반영)")
    rejected.series[0].graphicalProperties.solidFill = "F4CCCC"
    rejected.series[0].graphicalProperties.line.solidFill = "C00000"
    rejected.y_axis.axId = 200
    rejected.y_axis.scaling.min, rejected.y_axis.scaling.max = 0, 1
    rejected.y_axis.number_format = ";;;"  # no labels: this axis is not a count
    rejected.y_axis.majorGridlines = None
    rejected.y_axis.majorTickMark = "none"
    rejected.y_axis.delete = False  # LibreOffice draws a deleted secondary axis's series on the primary one
    rejected.y_axis.crosses = "min"
    chart += rejected
    chart.visible_cells_only = False  # the marker column is hidden
    chart.height = 9.5
    chart.width = 20
    chart.legend.position = "b"
    ws.add_chart(chart, anchor)


# --- the table sheets ----------------------------------------------------------------------------


def _notice(sheet: TableSheet, report: DayReport) -> TableSheet:
    """A sheet of a rejected day's changes: a red sentence that they were not applied, never an empty table."""
    base = report.last_accepted_day
    text = f"{NOT_REFLECTED} — 수집분이 수용 게이트를 통과하지 못해 비교 결과를 기록하지 않았습니다."
    if base is not None:
        text += f" 마지막 정상 수집일 {base.isoformat()}의 리포트를 참고하십시오."
    if report.events:
        text += f" (거부된 비교 결과 {len(report.events):,}건은 반영되지 않음 — '{SHEET_QUALITY}' 시트 참고)"
    return TableSheet(sheet.name, sheet.title, None, notice=text)


def _events_sheet(report: DayReport) -> TableSheet:
    title = f"변경 이벤트 · {report.day.isoformat()}"
    rows = [event_row(e, report.source_url) for e in sorted_events(report.headline_events)]
    # printed up to 대상의약품; the audit columns stay on screen
    hook = colours(severity=1, watch=10)
    return TableSheet(SHEET_EVENTS, title, _event_sheet_note(report), EVENT_COLUMNS, rows, hook, 14, empty=None)


def _days_processed(counts: DayCounts | None) -> str:
    """「이 기간: 정상 반영 9일 · 거부 1일 · 실행 기록 없음 0일 (감시 시작 전 80일).」 — counted from the runs, not
    the events; days before monitoring began are no missing runs."""
    if counts is None:
        return ""
    parts = [f"정상 반영 {counts.accepted:,}일", f"거부 {counts.rejected:,}일"]
    if counts.pending:
        parts.append(f"{DayStatus.PENDING.word_ko} {counts.pending:,}일")
    parts.append(f"실행 기록 없음 {counts.not_run:,}일")
    before = f" (감시 시작 전 {counts.before_start:,}일)" if counts.before_start else ""
    return f"이 기간: {' · '.join(parts)}{before}."


def _recent_sheet(report: DayReport, rows: list[dict]) -> TableSheet:
    days = report.recent_days
    note = (
        f"최근 {days}일({day_text(report.day - timedelta(days=days - 1))} ~ {day_text(report.day)})의 모든 이벤트 "
        f"{len(rows):,}건 (표기 변경 포함 — 회색) · 최신 관측일, 심각도 순. {_days_processed(report.recent_counts)} "
        f"'{SHEET_LEDGER}' 시트의 '이벤트' 링크가 등록별 첫 행으로 연결됩니다."
    )
    title = f"이력 · 최근 {days}일 이벤트"
    empty = f"최근 {days}일 동안 반영된 이벤트가 없습니다"
    return TableSheet(SHEET_RECENT, title, note, RECENT_COLUMNS, rows, colours(severity=3), 12, empty=empty)


def _ledger_sheet(report: DayReport, recent_rows: list[dict]) -> TableSheet:
    # the first 이력 row of each registration (events of either its key or its earlier key)
    first_row: dict[str, tuple[int, int]] = {}
    for i, row in enumerate(recent_rows, 5):
        for key in {row["dmf_key"], row.get("base_dmf_key")} - {None}:
            at, n = first_row.get(key, (i, 0))
            first_row[key] = (at, n + 1)
    day = report.last_accepted_day
    rows = ledger_frame(report.ledger) if report.ledger.height else pl.DataFrame()
    if rows.height:
        links = [
            [f"이벤트 {hit[1]}건", f"'{SHEET_RECENT}'!A{hit[0]}"] if (hit := first_row.get(key)) else None
            for key in rows.get_column("dmf_key").to_list()
        ]
        rows = rows.with_columns(events_link=pl.Series(links, dtype=pl.List(pl.Utf8)))
    if report.is_rejected:
        note = f"마지막 정상 수집일 {day_text(day)} 기준 전체 등록 (오늘 수집분 미반영)."
    else:
        note = f"{day_text(day)} 정상 수집분의 전체 등록 {len(rows):,}건."
    note += (
        " 머리글의 필터로 성분·업체·제조국·성분번호-그룹을 골라 보십시오. 허여(n)/(A) 등록은 '원 등록번호'로 원본과 연결되고, "
        f"'이벤트' 링크는 최근 {report.recent_days}일 '{SHEET_RECENT}' 시트로 갑니다."
    )
    return TableSheet(
        SHEET_LEDGER,
        f"전체현황 · {day_text(day)}",
        note,
        LEDGER_COLUMNS,
        rows,
        print_cols=len(LEDGER_COLUMNS),
        empty="정상 수집된 등록 현황이 아직 없습니다",
        freeze="B5",  # keep the registration number in view while scrolling right
        sparse=True,
    )


def _fields_sheet(report: DayReport) -> TableSheet:
    title = f"필드 변경 · {report.day.isoformat()}"
    k = report.summary
    if report.status in (DayStatus.BASELINE, DayStatus.UNCHANGED):
        note = _event_sheet_note(report)
    else:
        cosmetic = k.field_rows.get("COSMETIC", 0)
        inside = cosmetic - sum(len(e.changes) for e in report.events if e.is_cosmetic)
        kinds = ", ".join(
            f"{label} {k.field_rows.get(kind, 0):,}행"
            for kind, label in CHANGE_KIND_LABEL_KO.items()
            if kind != "COSMETIC"
        )
        note = (
            f"바뀐 항목별 1행 — {kinds}, {CHANGE_KIND_LABEL_KO['COSMETIC']} {cosmetic:,}행 (회색, 헤드라인 건수 제외): "
            f"표기만 바뀐 이벤트 {k.cosmetic:,}건(요약의 '표기 변경' 건수)의 행과, 실질 변경 이벤트 안의 표기 항목 "
            f"{inside:,}행. 번호 부여는 실질 변경이 아닙니다. 제조소가 더해지거나 빠진 변경은 '제조소 추가/삭제' 행으로 표시. "
            f"비교 기준 {day_text(report.comparison_base)}{k.covers_text}."
        )
    hook = colours(severity=1, cosmetic=2)
    return TableSheet(SHEET_FIELDS, title, note, FIELD_COLUMNS, field_rows(report), hook, empty=None)


def _new_withdrawn_sheet(report: DayReport) -> TableSheet:
    title = f"신규 · 목록에서 삭제 · {report.day.isoformat()}"
    if report.status in (DayStatus.BASELINE, DayStatus.UNCHANGED):
        note = _event_sheet_note(report)
    else:
        k = report.summary
        note = (
            f"{EVENT_KIND_LABEL_KO['NEW']} {k.new:,}건, {WITHDRAWN_FIRST_MENTION_KO} {k.withdrawn:,}건 — 등록 전체 정보. "
            f"비교 기준 {day_text(report.comparison_base)}."
        )
    rows = new_withdrawn_rows(report)
    return TableSheet(SHEET_NEW_WITHDRAWN, title, note, NEW_WITHDRAWN_COLUMNS, rows, colours(severity=2), empty=None)


#: the aggregate sheets' bar chart: this many of the top rows
TOP_N_CHART = 20
#: 업체별: at most this many event rows per list (applicants, manufacturers); the rest is on 변경 이벤트
COMPANY_EVENTS_MAX = 300


def _company_events(ws: Worksheet, report: DayReport, widths: Sequence[float]) -> int:
    """업체별's first part: the day's events of each applicant and each manufacturer, the most severe
    first, as the sentences of 요약 (a sourcing team asks which company's registrations changed).
    Returns the last row written."""
    r = 3
    if report.is_rejected:
        text = f"{NOT_REFLECTED} — 업체별 이벤트 없음 (아래는 마지막 정상 수집일 기준 등록 현황)."
    elif not report.headline_events:
        text = "오늘 반영된 이벤트가 없습니다 (아래는 오늘 기준 등록 현황)."
    else:
        text = None
    if text is not None:
        put_text(ws, r + 2, 1, text, st.NOTE)
        return r + 2
    k = report.summary
    counted = {"applicant": k.applicants, "manufacturer": k.manufacturers}
    for kind, companies in events_by_company(report.events).items():
        # 건 = the day's events: an event of a registration with three sites is listed under each, counted once
        r += 2
        who = COMPANY_KINDS[kind]
        put_text(
            ws,
            r,
            1,
            f"오늘의 이벤트 — {who}별 ({counted[kind]:,}곳, {k.headline_events:,}건) · 가장 심각한 이벤트가 있는 업체부터",
            st.SECTION,
        )
        r += 1
        for col, header in ((1, COLUMN_LABELS["severity"][0]), (2, who), (3, COLUMN_LABELS["event_type"][0])):
            ws.cell(row=r, column=col, value=header).style = st.HEADER
        merge_cells(ws, r, 3, len(widths))
        shown = 0
        for company, evs in companies:
            for ev in evs:
                if shown == COMPANY_EVENTS_MAX:
                    break
                shown += 1
                r += 1
                put_severity(ws, r, 1, ev.severity)
                put_text(ws, r, 2, company, st.TEXT_WRAP)
                sentence = event_sentence(ev)
                put_text(ws, r, 3, sentence, st.TEXT_WRAP)
                merge_cells(ws, r, 3, len(widths))
                fit_row_height(ws, r, max(text_lines(sentence, sum(widths[2:])), text_lines(company, widths[1])))
        n_rows = sum(len(evs) for _, evs in companies)
        if shown < n_rows:
            r += 1
            column = COLUMN_LABELS[kind][0]  # the 변경 이벤트 column of these companies
            put_text(ws, r, 1, f"… 외 {n_rows - shown:,}행 — '{SHEET_EVENTS}' 시트에서 '{column}' 열로 필터", st.NOTE)
    return r


def _aggregate_sheet(report: DayReport, aggregate: Aggregate) -> TableSheet:
    name, title, counts = aggregate.sheet, aggregate.title, aggregate.counts
    by_company = name == SHEET_BY_APPLICANT  # its columns also hold the day's events per company
    data: Sequence[AggregateRow] = getattr(report, aggregate.statement)
    cols = columns(
        {
            "rank": 9 if by_company else 6,
            "label": 36,
            "registrations": 10,
            "share": 9,
            **{f"n_{attr}": 14 if by_company else 11 for attr in counts},
        },
        headers={"label": aggregate.label_ko},
        kinds={"label": WRAP},
    )
    base = report.last_accepted_day
    size = report.summary.shown_registry_size
    if report.is_rejected:
        note = f"마지막 정상 수집일 {day_text(base)} 기준 현황 (오늘 수집분 미반영)."
    else:
        note = f"{report.day.isoformat()} 정상 수집분의 현재 등록 기준."
    if aggregate.note:
        note += " " + aggregate.note
    ordered = sorted(data, key=lambda a: (-a.registrations, a.label))
    rows = [
        {
            "rank": i,
            "label": a.label,
            "registrations": a.registrations,
            "share": (a.registrations / size) if size else None,
            **{f"n_{attr}": getattr(a, attr) for attr in counts},
        }
        for i, a in enumerate(ordered, 1)
    ]

    def above(ws: Worksheet) -> int:
        header = _company_events(ws, report, [c.width for c in cols]) + 3
        put_text(ws, header - 1, 1, f"{title} (순위: 등록 수)", st.SECTION)
        return header

    def chart(ws: Worksheet, header: int) -> None:
        top_n = min(TOP_N_CHART, len(rows))
        chart = _bar_chart("bar", f"상위 {top_n}개 · 등록 수")  # rank 1 at the top
        chart.legend = None
        chart.add_data(Reference(ws, min_col=3, min_row=header, max_row=header + top_n), titles_from_data=True)
        chart.set_categories(Reference(ws, min_col=2, min_row=header + 1, max_row=header + top_n))
        chart.series[0].graphicalProperties.solidFill = "2F5597"
        chart.height = max(8.0, 0.55 * top_n + 2)
        chart.width = 18
        ws.add_chart(chart, f"{get_column_letter(len(cols) + 2)}{header}")

    return TableSheet(
        name,
        f"{title} · {day_text(base if report.is_rejected else report.day)}",
        note,
        cols,
        rows,
        empty="집계 자료 없음",
        # the event lists above the table can be long: only the banner stays in view and on every page
        freeze="A4" if by_company else None,
        above=above if by_company else None,
        after=chart,
    )


def _quality_sheet(report: DayReport) -> TableSheet:
    cols = columns({"kind": 12, "number": 6, "item": 26, "result": 9, "observed": 24, "threshold": 18, "detail": 60})
    failed = [g for g in report.gates if g.passed is False]
    warned = [q for q in report.quality if not q.ok]
    note = (
        f"수용 게이트 {len(report.gates)}개 중 실패 {len(failed)}개"
        + (f" ({', '.join(g.label_ko for g in failed)})" if failed else "")
        + f" · 품질 지표 {len(report.quality)}개 중 경고 {len(warned)}개. 게이트 실패 시 그날 수집분은 반영되지 않습니다."
    )
    # a row per gate, then per metric: its cells in the columns' order, then its colour (`_verdict`)
    checks = [
        (
            "수용 게이트",
            g.number,
            f"{g.label_ko} ({GATE_BY_NUMBER[g.number].label_en})",
            GATE_VERDICT_KO[_verdict(g.passed)],
        )
        + (g.observed, g.threshold, g.detail, _verdict(g.passed))
        for g in report.gates
    ]
    checks += [
        (
            "품질 지표",
            i,
            q.label_ko,
            "정상" if q.ok else "경고",
            q.value,
            q.expected,
            q.detail,
            "ok" if q.ok else "warn",
        )
        for i, q in enumerate(report.quality, 1)
    ]
    rows = [dict(zip((*(c.key for c in cols), "_verdict"), check, strict=True)) for check in checks]
    title = f"수집 품질 · {report.day.isoformat()}"
    return TableSheet(SHEET_QUALITY, title, note, cols, rows, colours(verdict=4), empty="게이트·품질 지표 자료 없음")


# --- assembling and writing ----------------------------------------------------------------------


def build_workbook(report: DayReport) -> tuple[Workbook, dict[str, int]]:
    """The whole workbook in memory (no I/O) and the data-row count of each table sheet."""
    if not isinstance(report, DayReport):
        raise TypeError(f"build_workbook needs a DayReport, got {type(report).__name__}")
    day = report.day.isoformat()
    look = Look(banner_text(report), report.status, f"DMF 리포트 {day}", report.status.label_ko, report.is_rejected)
    recent = recent_rows(report)
    changes = [_events_sheet(report), _fields_sheet(report), _new_withdrawn_sheet(report)]
    if report.is_rejected:  # the day's changes were not applied
        changes = [_notice(sheet, report) for sheet in changes]
    tables = {
        sheet.name: sheet
        for sheet in (
            *changes,
            _ledger_sheet(report, recent),
            _recent_sheet(report, recent),
            *(_aggregate_sheet(report, aggregate) for aggregate in AGGREGATES),
            _quality_sheet(report),
            day_meta_sheet(report),
        )
    }
    sheets = [tables[name] for name in SHEET_NAMES if name != SHEET_SUMMARY]
    # 요약 first: the one page that is not a table; the 최신 copy's day is read back from the keywords (see
    # `workbook_day`)
    wb = tables_workbook(
        look,
        sheets,
        f"DMF 리포트 {day}",
        page=lambda wb: _summary_sheet(wb, look, report),
        subject="원료의약품 등록(DMF) 일일 변경 리포트",
        keywords=f"dmf-day={day}; status={report.status.value}",
    )
    return wb, {SHEET_SUMMARY: len(report.history), **{sheet.name: len(sheet.rows) for sheet in sheets}}


_DAY_IN_CORE = re.compile(rb"dmf-day=(\d{4}-\d{2}-\d{2})")


def workbook_day(path: Path) -> date | None:
    """The report day stored in a workbook's document properties, or None if unreadable."""
    try:
        with zipfile.ZipFile(path) as zf:
            core = zf.read("docProps/core.xml")
    except (OSError, KeyError, zipfile.BadZipFile):
        return None
    m = _DAY_IN_CORE.search(core)
    try:
        return date.fromisoformat(m.group(1).decode()) if m else None
    except ValueError:
        return None


@contextlib.contextmanager
def _dir_lock(reports_dir: Path) -> Iterator[None]:
    """Serialise the 최신 decision between concurrent runs (POSIX advisory lock; no-op elsewhere)."""
    try:
        import fcntl
    except ImportError:  # Windows: single-writer assumption
        yield
        return
    with open(reports_dir / ".DMF_리포트.lock", "a+b") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _newest_other(reports_dir: Path, exclude: Path) -> tuple[date, Path] | None:
    others = [(d, p) for d, p in dated_workbooks(reports_dir) if p != exclude]
    return others[-1] if others else None


def write_workbook(report: DayReport, reports_dir: Path) -> WorkbookResult:
    """Write `DMF_리포트_YYYY-MM-DD.xlsx` atomically and refresh `DMF_리포트_최신.xlsx` when this day
    is at least as new as the day the 최신 copy holds (a backfill never replaces a newer latest)."""
    started = time.perf_counter()
    reports_dir = Path(reports_dir)
    ensure_dir(reports_dir)
    wb, rows = build_workbook(report)
    target = reports_dir / dated_workbook_name(report.day)
    latest = reports_dir / LATEST_NAME
    try:
        with _dir_lock(reports_dir):
            atomic_write(target, lambda tmp: xlsx_body.save(wb, tmp))
            held = workbook_day(latest) if latest.exists() else None
            newest = _newest_other(reports_dir, exclude=target)
            # 최신 missing or unreadable: judge against the newest dated workbook instead
            current = held if held is not None else (newest[0] if newest else None)
            update_latest = current is None or report.day >= current
            if update_latest:
                atomic_write(latest, lambda tmp: shutil.copyfile(target, tmp))
            elif held is None and newest is not None:
                # a backfill found no 최신: restore it from the newest day, never from this one
                atomic_write(latest, lambda tmp: shutil.copyfile(newest[1], tmp))
    except OSError as exc:  # the lock file itself
        raise WorkbookError(f"리포트 폴더에 쓸 수 없습니다: {reports_dir} ({exc.strerror or exc})") from exc
    return WorkbookResult(
        path=target,
        latest_path=latest,
        latest_updated=update_latest,
        bytes=target.stat().st_size,
        seconds=time.perf_counter() - started,
        sheet_rows=rows,
    )
