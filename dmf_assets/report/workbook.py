"""The daily Excel workbook: `reports/DMF_리포트_YYYY-MM-DD.xlsx` and the always-current 최신 copy.

Input is a `DayReport` (report/model.py) built in memory; this module never touches the database.
What it guarantees:

* every sheet's first row is a status banner — on a rejected day a red "수집 실패 — 비교 기준은 여전히
  YYYY-MM-DD입니다" — and the event sheets then say the day's changes were not applied instead of showing
  an empty table that reads as "no changes";
* text that came from the source is always stored as a literal string (never a formula, error or
  number), with XML-illegal characters replaced by U+FFFD and Excel's 32,767-character cell limit
  respected (marked "…(잘림)");
* the file is written atomically (temp file in the same folder + `os.replace`), and the 최신 copy is
  only refreshed by a day at least as new as the one it holds (a backfill never replaces it).
"""

from __future__ import annotations

import contextlib
import copy
import math
import os
import re
import shutil
import time
import unicodedata
import zipfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from openpyxl import Workbook, load_workbook
from openpyxl.cell.cell import Cell
from openpyxl.chart import BarChart, Reference
from openpyxl.styles import Alignment
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.hyperlink import Hyperlink
from openpyxl.worksheet.worksheet import Worksheet

from dmf_assets.errors import UserError
from dmf_assets.faultpoints import crash_point
from dmf_assets.fsutil import atomic_output
from dmf_assets.domain.model import (
    COMPARED_FIELDS,
    EVENT_LABEL_KO,
    FIELD_LABEL_KO,
    SEVERITY_LABEL_KO,
    SEVERITY_RANK,
    SITE_FIELDS,
    SITES_FIELD,
)
from dmf_assets.domain.sites import describe_site_change
from dmf_assets.report import styles as st
from dmf_assets.report import xlsx_body
from dmf_assets.report.model import AggregateRow, DayReport, DayStatus, EventRow, FieldChangeRow
from dmf_assets.report.retention import LATEST_NAME, dated_workbook_name, dated_workbooks

# --- names and fixed texts -----------------------------------------------------------------------

SHEET_SUMMARY = "요약"
SHEET_EVENTS = "변경 이벤트"
SHEET_FIELDS = "필드 변경"
SHEET_NEW_WITHDRAWN = "신규·취하"  # '/' is not allowed in Excel sheet names
SHEET_BY_INGREDIENT = "성분별"
SHEET_BY_APPLICANT = "업체별"
SHEET_BY_COUNTRY = "제조국"
SHEET_QUALITY = "품질"
SHEET_META = "메타"
SHEET_LEDGER = "전체현황"
SHEET_RECENT = "이력"
#: Sheet order. The three aggregates are separate sheets so each table has its own auto-filter:
#: side-by-side tables on one sheet would hide each other's rows when one is filtered.
SHEET_NAMES: tuple[str, ...] = (
    SHEET_SUMMARY,
    SHEET_EVENTS,
    SHEET_FIELDS,
    SHEET_NEW_WITHDRAWN,
    SHEET_LEDGER,
    SHEET_RECENT,
    SHEET_BY_INGREDIENT,
    SHEET_BY_APPLICANT,
    SHEET_BY_COUNTRY,
    SHEET_QUALITY,
    SHEET_META,
)

ATTRIBUTION = "출처: 식품의약품안전처 원료의약품등록(DMF)현황, 공공데이터포털 오픈API"
NOT_REFLECTED = "이 날짜의 변경 내역은 반영되지 않았습니다"
EXCEL_MAX_CHARS = 32_767
TRUNCATION_MARK = "…(잘림)"
#: First characters that make Excel/LibreOffice (or a CSV re-import) treat text as a formula.
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")

#: 의약품안전나라 DMF list (원료의약품 등록 현황) search. `searchIngrKorName` is the ingredient filter
#: used by public scrapers of this page; no by-number parameter could be verified, so each link
#: searches the registration's ingredient and the permit number is found in that short list.
SOURCE_BASE_FALLBACK = "https://nedrug.mfds.go.kr"
NEDRUG_DMF_SEARCH_PATH = "/pbp/CCBAC03/getList"
NEDRUG_INGREDIENT_PARAM = "searchIngrKorName"
_MAX_URL = 2000  # Excel refuses to follow hyperlinks longer than ~2,079 characters

from dmf_assets.clock import KST  # noqa: E402 — the one declaration of Korean time
_WEEKDAYS_KO = "월화수목금토일"

FLAG_LABELS: dict[str, str] = {
    "is_reappearance": "재등장",
    "number_assigned": "번호 부여",
    "is_transfer": "양도양수",
    "is_rename": "명칭 변경",
    "watchlist_hit": "관심목록",
}

#: KPI key -> label in column A of the 요약 sheet (tests and users find rows by these labels).
KPI_LABELS: dict[str, str] = {
    "registry_size": "등록 현황 (건)",
    "new": "신규",
    "changed": "변경 (실질)",
    "changed_CRITICAL": "  · 심각",
    "changed_HIGH": "  · 높음",
    "changed_MEDIUM": "  · 보통",
    "changed_INFO": "  · 정보",
    "withdrawn": "취하",
    "reappeared": "재등장",
    "number_assigned": "등록번호 부여",
    "watchlist_hits": "관심목록 해당",
    "product_hits": "자사 제품 해당",
    "cosmetic": "표기 변경 (별도 집계)",
}
_KPI_NOTES: dict[str, str] = {
    "new": "비교 기준일에 없던 등록 (재등장 포함)",
    "changed": "같은 등록의 내용이 실질적으로 달라짐 (표기 변경 제외)",
    "changed_CRITICAL": "제조소명·제조소 소재지·제조국 변경",
    "changed_HIGH": "성분명·신청인·사업자등록번호 변경, 관심목록 해당",
    "changed_MEDIUM": "발급일자·대상의약품 변경",
    "changed_INFO": "등록번호 부여 등",
    "withdrawn": "비교 기준일에 있었으나 오늘 목록에서 사라진 등록",
    "reappeared": "과거에 취하된 뒤 다시 나타난 등록 (신규에 포함)",
    "number_assigned": "번호 없이 공개됐던 등록이 번호를 받음 (취하+신규가 아님)",
    "watchlist_hits": "관심 성분·업체·제조소·국가에 해당하는 이벤트",
    "product_hits": "자사 제품 목록(config/products.csv)의 등록번호 또는 성분+제조소에 해당하는 이벤트",
    "cosmetic": "띄어쓰기·문장부호·법인격 표기만 달라진 변경 — 위 건수에 포함하지 않음",
}

_STATUS_TAB_COLOUR = {"rejected": "C00000", "baseline": "2F5597", "unchanged": "548235", "accepted": st.NAVY}


class WorkbookError(UserError):
    """The workbook could not be written (folder not writable, disk full, …): a one-line message."""


class RejectedDayError(ValueError):
    """The workbook is for a rejected day: it deliberately has no events table to read."""


@dataclass(frozen=True)
class WorkbookResult:
    path: Path
    latest_path: Path
    latest_updated: bool
    bytes: int
    seconds: float
    sheet_rows: dict[str, int] = field(default_factory=dict)  # data rows per table sheet


# --- text safety ---------------------------------------------------------------------------------

# XML 1.0 forbids C0 controls except tab/LF/CR, lone surrogates, U+FFFE and U+FFFF.
_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
# OOXML stores characters as _xHHHH_; a literal look-alike must itself be escaped (_x005F_ = "_").
_ESCAPE_LIKE = re.compile(r"_(?=x[0-9A-Fa-f]{4}_)")
_ESCAPED = re.compile(r"_x([0-9A-Fa-f]{4})_")


def _ooxml_escape(text: str) -> str:
    if "_x" in text:
        text = _ESCAPE_LIKE.sub("_x005F_", text)
    if "\r" in text:  # a raw CR would come back as LF (XML end-of-line handling)
        text = text.replace("\r", "_x000D_")
    return text


def ooxml_unescape(text: str) -> str:
    """Decode `_xHHHH_` sequences as Excel does (openpyxl's reader leaves them as they are)."""
    return _ESCAPED.sub(lambda m: chr(int(m.group(1), 16)), text) if "_x" in text else text


def _utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def store_text(value: Any) -> str | None:
    """The exact string written into a cell for `value` (None for nothing).

    XML-illegal characters become U+FFFD (the writer never crashes on source text); the text is
    OOXML-escaped; a value longer than Excel's 32,767 characters (UTF-16 units, as Excel counts) is
    cut and marked with "…(잘림)".
    """
    if value is None:
        return None
    text = value if isinstance(value, str) else str(value)
    if text == "":
        return None
    text = _XML_ILLEGAL.sub("\ufffd", text)
    stored = _ooxml_escape(text)
    if len(stored) * 2 <= EXCEL_MAX_CHARS or _utf16_len(stored) <= EXCEL_MAX_CHARS:
        return stored
    # Longest prefix whose escaped form fits with the mark (binary search: escapes change lengths).
    budget = EXCEL_MAX_CHARS - len(TRUNCATION_MARK)
    lo, hi = 0, min(len(text), budget)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _utf16_len(_ooxml_escape(text[:mid])) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return _ooxml_escape(text[:lo]) + TRUNCATION_MARK


def cell_text(value: Any) -> str | None:
    """What reading the cell back (with `ooxml_unescape`) yields for a source value."""
    stored = store_text(value)
    return None if stored is None else ooxml_unescape(stored)


# --- cell writers --------------------------------------------------------------------------------


def _style_array(ws: Worksheet, name: str):
    """The resolved style of a named style in this workbook (a named-style lookup costs ~10 µs, which
    is seconds over the 9k-row 전체현황 sheet, so it is resolved once per workbook)."""
    wb = ws.parent
    cache = wb.__dict__.setdefault("_dmf_style_arrays", {})
    arr = cache.get(name)
    if arr is None:
        probe = Cell(ws)
        probe.style = name
        arr = cache[name] = copy.copy(probe._style)
    return arr


def _set_style(cell, name: str) -> None:
    """`cell.style = name`, but fast (see `_style_array`)."""
    cell._style = copy.copy(_style_array(cell.parent, name))


def _put_text(ws: Worksheet, row: int, col: int, value: Any, style: str = st.TEXT):
    cell = ws.cell(row=row, column=col)
    _set_style(cell, style)
    stored = store_text(value)
    if stored is None:
        return cell
    # Set the stored value directly: store_text already replaced what XML forbids, so openpyxl's own
    # per-cell check (a regex scan, ~1 s over the 9k-row ledger) is redundant; and openpyxl would infer
    # "=…" as a formula and "#N/A" as an error — this is always a literal string.
    cell._value = stored
    cell.data_type = "s"
    if stored.startswith(FORMULA_TRIGGERS):
        cell.quotePrefix = True  # Excel keeps it text even after the user edits the cell
    return cell


def _put_int(ws: Worksheet, row: int, col: int, value: int | None, style: str = st.INT):
    cell = ws.cell(row=row, column=col)
    _set_style(cell, style)
    if value is not None:
        cell.value = int(value)
    return cell


def _put_float(ws: Worksheet, row: int, col: int, value: float | None, style: str = st.PCT):
    cell = ws.cell(row=row, column=col)
    _set_style(cell, style)
    if value is not None:
        cell.value = float(value)
    return cell


def _as_date(value: Any) -> date | None:
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    if isinstance(value, str) and len(value) == 10:
        try:
            return date.fromisoformat(value)
        except ValueError:
            return None
    return None


def _put_date(ws: Worksheet, row: int, col: int, value: Any):
    day = _as_date(value)
    # Excel's date system starts in 1900 (and 1900-02-29 is fictitious): older dates stay text.
    if day is None or day < date(1900, 3, 1):
        return _put_text(ws, row, col, value, st.DATE)
    cell = ws.cell(row=row, column=col)
    _set_style(cell, st.DATE)
    cell.value = day
    return cell


def _put_datetime(ws: Worksheet, row: int, col: int, value: datetime | None):
    if value is None:
        return _put_text(ws, row, col, None)
    if value.tzinfo is not None:  # Excel has no time zones: show Korean local time
        value = value.astimezone(KST).replace(tzinfo=None)
    cell = ws.cell(row=row, column=col)
    _set_style(cell, st.DATETIME)
    cell.value = value
    return cell


def _put_link(ws: Worksheet, row: int, col: int, value: tuple[str, str] | None):
    if not value:
        return _put_text(ws, row, col, None)
    text, url = value
    cell = _put_text(ws, row, col, text, st.LINK)
    cell.hyperlink = url
    return cell


def _put_any(ws: Worksheet, row: int, col: int, kind: str, value: Any):
    if kind == "text":
        return _put_text(ws, row, col, value)
    if kind == "wrap":
        return _put_text(ws, row, col, value, st.TEXT_WRAP)
    if kind == "int":
        return _put_int(ws, row, col, value)
    if kind == "pct":
        return _put_float(ws, row, col, value)
    if kind == "date":
        return _put_date(ws, row, col, value)
    if kind == "datetime":
        return _put_datetime(ws, row, col, value)
    if kind == "link":
        return _put_link(ws, row, col, value)
    if kind == "sheetlink":  # (text, "'Sheet'!A5"): a link inside the workbook
        if not value:
            return _put_text(ws, row, col, None)
        cell = _put_text(ws, row, col, value[0], st.LINK)
        cell.hyperlink = Hyperlink(ref=cell.coordinate, location=value[1], display=value[0])
        return cell
    raise ValueError(f"unknown column kind {kind!r}")


# --- long table bodies ---------------------------------------------------------------------------

#: a hook-free table body of at least this many rows is rendered as XML (`xlsx_body`), not cell by cell
STREAM_MIN_ROWS = 200
_STREAMED_KINDS = frozenset({"text", "wrap", "int", "pct", "date", "datetime", "sheetlink"})


def _stream_text(w: xlsx_body.BodyWriter, r: int, j: int, value: Any, style: str) -> str:
    stored = store_text(value)
    return w.text(r, j, stored, style, stored is not None and stored.startswith(FORMULA_TRIGGERS))


def _stream_cell(w: xlsx_body.BodyWriter, r: int, j: int, kind: str, value: Any) -> str:
    """The cell `_put_any` would have written, as XML."""
    if kind == "text":
        return _stream_text(w, r, j, value, st.TEXT)
    if kind == "wrap":
        return _stream_text(w, r, j, value, st.TEXT_WRAP)
    if kind == "int":
        return w.number(r, j, None if value is None else int(value), st.INT)
    if kind == "pct":
        return w.number(r, j, None if value is None else float(value), st.PCT)
    if kind == "date":
        day = _as_date(value)
        if day is None or day < date(1900, 3, 1):
            return _stream_text(w, r, j, value, st.DATE)
        return w.day(r, j, day, st.DATE)
    if kind == "datetime":
        if value is None:
            return _stream_text(w, r, j, None, st.TEXT)
        if value.tzinfo is not None:
            value = value.astimezone(KST).replace(tzinfo=None)
        return w.day(r, j, value, st.DATETIME)
    if kind == "sheetlink":
        if not value:
            return _stream_text(w, r, j, None, st.TEXT)
        cell = _stream_text(w, r, j, value[0], st.LINK)
        w.link(r, j, value[1], value[0])
        return cell
    raise ValueError(f"column kind {kind!r} cannot be streamed")


def _stream_body(ws: Worksheet, top: int, cols: Sequence[Col], rows: Sequence[dict], *, sparse: bool,
                 wrapped: list[tuple[str, float]]) -> int:
    w = xlsx_body.BodyWriter(ws, top + 1, len(cols), _style_array)
    r = top
    for r, row in enumerate(rows, top + 1):
        cells = []
        for j, col in enumerate(cols, 1):
            value = row.get(col.key)
            if sparse and (value is None or value == ""):
                continue
            cells.append(_stream_cell(w, r, j, col.kind, value))
        lines = max((_text_lines(str(row.get(key) or ""), width) for key, width in wrapped), default=1)
        w.add_row(r, cells, _row_height(lines))
    return r


# --- tables --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Col:
    key: str
    header: str
    width: float
    kind: str = "text"  # text | wrap | int | pct | date | datetime | link


RowHook = Callable[[Worksheet, int, dict], None]


_LINE_PT = 13.5  # one line of 10-pt 맑은 고딕
_MAX_ROW_PT = 409.0  # Excel's maximum row height


def _display_width(text: str) -> int:
    if text.isascii():
        return len(text)
    # Hangul/CJK glyphs are ~1.85 '0'-widths in 맑은 고딕 10 pt
    return math.ceil(sum(1.85 if unicodedata.east_asian_width(ch) in "WF" else 1.0 for ch in text))


def _text_lines(text: str, width: float) -> int:
    """Estimated wrapped line count of `text` in a column `width` characters wide."""
    usable = max(width - 1.5, 1.0)
    if "\n" not in text and len(text) * 2 <= usable:
        return 1
    lines = 0
    for part in text.split("\n"):
        lines += max(1, math.ceil(_display_width(part) * 1.05 / usable))
        if lines * _LINE_PT >= _MAX_ROW_PT:
            break
    return lines


def _row_height(lines: int, line_pt: float = _LINE_PT) -> float | None:
    # Neither LibreOffice nor every Excel build re-measures wrapped rows of a generated file, so
    # set the height; otherwise multi-line cells overprint the rows below.
    return min(_MAX_ROW_PT, lines * line_pt + 3) if lines > 1 else None


def _fit_row_height(ws: Worksheet, row: int, lines: int, line_pt: float = _LINE_PT) -> None:
    height = _row_height(lines, line_pt)
    if height is not None:
        ws.row_dimensions[row].height = height


def _write_table(
    ws: Worksheet,
    top: int,
    cols: Sequence[Col],
    rows: Sequence[dict],
    *,
    row_hook: RowHook | None = None,
    autofilter: bool = True,
    set_widths: bool = True,
    sparse: bool = False,
) -> int:
    """Header at row `top`, data below; returns the last row written (the header if no data).

    `sparse`: empty values get no cell at all (the 9k-row ledger: a third fewer cells to write)."""
    for j, col in enumerate(cols, 1):
        cell = ws.cell(row=top, column=j, value=col.header)
        cell.style = st.HEADER
        if set_widths:
            ws.column_dimensions[get_column_letter(j)].width = col.width
    _fit_row_height(ws, top, max(_text_lines(c.header, c.width) for c in cols))
    wrapped = [(col.key, col.width) for col in cols if col.kind == "wrap"]
    r = top
    if row_hook is None and len(rows) >= STREAM_MIN_ROWS and all(c.kind in _STREAMED_KINDS for c in cols):
        r = _stream_body(ws, top, cols, rows, sparse=sparse, wrapped=wrapped)
        rows = ()
    for r, row in enumerate(rows, top + 1):
        for j, col in enumerate(cols, 1):
            value = row.get(col.key)
            if sparse and (value is None or value == ""):
                continue
            _put_any(ws, r, j, col.kind, value)
        if wrapped:
            lines = max(_text_lines(str(row.get(key) or ""), width) for key, width in wrapped)
            _fit_row_height(ws, r, lines)
        if row_hook is not None:
            row_hook(ws, r, row)
    if autofilter:
        ws.auto_filter.ref = f"A{top}:{get_column_letter(len(cols))}{max(r, top)}"
    return r


# --- report-wide texts ---------------------------------------------------------------------------


def _d(day: date | None) -> str:
    return day.isoformat() if day else "—"


def _day_label(day: date) -> str:
    return f"{day.isoformat()} ({_WEEKDAYS_KO[day.weekday()]})"


def _base_day(report: DayReport) -> date | None:
    return report.last_accepted_day or report.comparison_base


def _covers(report: DayReport) -> str:
    """「N일치 변경」 when the comparison base is more than one day back."""
    return f" ({report.gap_days}일치 변경)" if report.gap_days > 1 else ""


def banner_text(report: DayReport) -> str:
    """The first row of every sheet: the day's verdict, then any active warning."""
    return _banner_core(report) + (f" · ⚠ 경고: {'; '.join(report.warnings)}" if report.warnings else "")


def _banner_core(report: DayReport) -> str:
    k = report.kpis
    size = f"{k.registry_size:,}건" if k.registry_size is not None else "미상"
    if report.status is DayStatus.REJECTED:
        reason = (report.status_reason or "").strip() or "사유 미상"
        base = _base_day(report)
        if base is None:
            return f"수집 실패 — 아직 정상 수집된 비교 기준일이 없습니다 (사유: {reason})"
        return f"수집 실패 — 비교 기준은 여전히 {base.isoformat()}입니다 (사유: {reason})"
    if report.status is DayStatus.BASELINE:
        return (
            f"기준일 — {report.day.isoformat()}은(는) 최초 정상 수집일입니다. 비교할 이전 자료가 없으므로 "
            f"변경 이벤트가 없습니다(설계상). 등록 현황 {size}"
        )
    if report.status is DayStatus.UNCHANGED:
        return (
            f"변경 없음 — {report.day.isoformat()} 수집분이 비교 기준 {_d(report.comparison_base)}과(와) "
            f"동일합니다{_covers(report)}. 등록 현황 {size}"
        )
    text = (
        f"정상 수집 · 비교 기준 {_d(report.comparison_base)} — 신규 {k.new:,} · 변경 {k.changed:,} · "
        f"취하 {k.withdrawn:,}{_covers(report)}"
    )
    if k.cosmetic:
        text += f" (표기 변경 {k.cosmetic:,}건 별도)"
    if k.product_hits:
        text += f" · 자사 제품 해당 {k.product_hits:,}건"
    return text + f" · 등록 현황 {size}"


def _event_sheet_note(report: DayReport) -> str:
    k = report.kpis
    if report.status is DayStatus.BASELINE:
        return "기준일 — 최초 수집일이므로 변경 이벤트가 없습니다 (설계상). 다음 정상 수집일부터 비교합니다."
    if report.status is DayStatus.UNCHANGED:
        return f"변경 없음 — 비교 기준 {_d(report.comparison_base)} 대비 달라진 등록이 없습니다."
    headline = len(report.headline_events)
    if headline == 0:
        return f"실질 변경 없음 — 표기 변경 {k.cosmetic:,}건만 있습니다 ('{SHEET_FIELDS}' 시트 참고)."
    by_sev = " · ".join(
        f"{SEVERITY_LABEL_KO[s]} {sum(1 for e in report.headline_events if e.severity == s):,}"
        for s in ("CRITICAL", "HIGH", "MEDIUM", "INFO")
    )
    return (
        f"실질 변경 이벤트 {headline:,}건 ({by_sev}) — 심각도, 관리 키 순. 비교 기준 {_d(report.comparison_base)}. "
        f"표기 변경 {k.cosmetic:,}건은 '{SHEET_FIELDS}' 시트에 표시."
    )


def _rejected_note(report: DayReport) -> str:
    base = _base_day(report)
    text = f"{NOT_REFLECTED} — 수집분이 수용 게이트를 통과하지 못해 비교 결과를 기록하지 않았습니다."
    if base is not None:
        text += f" 마지막 정상 수집일 {base.isoformat()}의 리포트를 참고하십시오."
    if report.events:
        text += f" (거부된 비교 결과 {len(report.events):,}건은 반영되지 않음 — '{SHEET_QUALITY}' 시트 참고)"
    return text


# --- sheet frame ---------------------------------------------------------------------------------


def _frame(
    wb: Workbook, name: str, report: DayReport, widths: Sequence[float], title: str, note: str | None
) -> Worksheet:
    """Banner (row 1), title (row 2), note (row 3), column widths and print setup of every sheet."""
    ws = frame_sheet(
        wb, name, banner_text(report), report.status.value, widths, title, note,
        print_header=(f"DMF 리포트 {report.day.isoformat()} — {name}", report.status.label_ko),
        tab=report.is_rejected or name == SHEET_SUMMARY,
    )
    return ws


def frame_sheet(
    wb: Workbook,
    name: str,
    banner_str: str,
    status: str,
    widths: Sequence[float],
    title: str,
    note: str | None,
    *,
    print_header: tuple[str, str],
    tab: bool = False,
) -> Worksheet:
    """The house sheet frame (banner, title, note, widths, print setup) — shared by every workbook."""
    ws = wb.create_sheet(name)
    if tab:
        ws.sheet_properties.tabColor = _STATUS_TAB_COLOUR[status]
    for j, width in enumerate(widths, 1):
        ws.column_dimensions[get_column_letter(j)].width = width
    ncols = len(widths)
    span = sum(widths)
    banner = _put_text(ws, 1, 1, banner_str, st.PLAIN)
    banner.fill = st.banner_fill(status)
    banner.font = st.banner_font(status)
    banner.alignment = Alignment(wrap_text=True, vertical="center", indent=1)
    ws.merge_cells(start_row=1, start_column=1, end_row=1, end_column=ncols)
    ws.row_dimensions[1].height = max(30.0, _text_lines(banner_str, span / 1.25) * 17.0 + 8)
    _put_text(ws, 2, 1, title, st.TITLE)
    ws.row_dimensions[2].height = 26
    if note:
        cell = _put_text(ws, 3, 1, note, st.NOTE)
        cell.alignment = Alignment(wrap_text=True, vertical="top")
        ws.merge_cells(start_row=3, start_column=1, end_row=3, end_column=ncols)
        _fit_row_height(ws, 3, _text_lines(note, span))
    _print_setup(ws, *print_header)
    return ws


#: Layout of a sheet that deliberately has no table (its data was not applied on a rejected day).
_NOTICE_WIDTHS = (18.0,) * 8


def _rejected_table_sheet(wb: Workbook, name: str, report: DayReport, title: str) -> None:
    ws = _frame(wb, name, report, _NOTICE_WIDTHS, title, None)
    note = _rejected_note(report)
    cell = _put_text(ws, 3, 1, note, st.PLAIN)
    cell.fill = st.solid(st.FAIL_FILL)
    cell.font = st.font(size=12, bold=True, color=st.FAIL_FONT)
    cell.alignment = Alignment(wrap_text=True, vertical="center", indent=1)
    ws.merge_cells(start_row=3, start_column=1, end_row=3, end_column=len(_NOTICE_WIDTHS))
    ws.row_dimensions[3].height = max(36.0, _text_lines(note, sum(_NOTICE_WIDTHS) / 1.25) * 17.0 + 8)
    ws.freeze_panes = "A4"
    ws.print_title_rows = "1:3"


def _print_setup(ws: Worksheet, header_left: str, header_right: str) -> None:
    ws.page_setup.orientation = ws.ORIENTATION_LANDSCAPE
    ws.page_setup.paperSize = ws.PAPERSIZE_A4
    ws.page_setup.fitToWidth = 1
    ws.page_setup.fitToHeight = 0  # as many pages tall as needed
    ws.sheet_properties.pageSetUpPr.fitToPage = True
    ws.page_margins.left = ws.page_margins.right = 0.4
    ws.page_margins.top = ws.page_margins.bottom = 0.8  # room for the running header/footer
    ws.print_options.horizontalCentered = True
    ws.oddHeader.left.text = header_left
    ws.oddHeader.right.text = header_right
    ws.oddFooter.left.text = ATTRIBUTION
    ws.oddFooter.right.text = "&P / &N"


def _finish_table_sheet(ws: Worksheet, header_row: int) -> None:
    ws.freeze_panes = f"A{header_row + 1}"  # a coordinate, not ws.cell(): that would create a cell
    ws.print_title_rows = f"1:{header_row}"


# --- rows for the tables -------------------------------------------------------------------------


def _sorted_events(events: Sequence[EventRow]) -> list[EventRow]:
    return sorted(events, key=lambda e: (-SEVERITY_RANK.get(e.severity, -1), e.dmf_key))


def _field_label(name: str) -> str:
    return FIELD_LABEL_KO.get(name, name)


def _flags(ev: EventRow) -> str | None:
    return ", ".join(label for attr, label in FLAG_LABELS.items() if getattr(ev, attr)) or None


def nedrug_link(ev: EventRow, base_url: str) -> tuple[str, str]:
    """(cell text, URL) of the 의약품안전나라 DMF search for one registration."""
    base = base_url.rstrip("/") + NEDRUG_DMF_SEARCH_PATH
    for term in (ev.ingredient, ev.ingredient_base):
        if term:
            url = f"{base}?{urlencode({NEDRUG_INGREDIENT_PARAM: term}, quote_via=quote)}"
            if len(url) <= _MAX_URL:
                return "조회", url
    return "조회", base


def _value(v: str | None) -> str:
    return v if v not in (None, "") else "(없음)"


def change_lines(ev: EventRow, *, max_value: int | None = None) -> list[str]:
    """Substantive changes as lines; sites as '제조소 추가: Name (country)' instead of whole lists.

    When an event has site rows, the manufacturer/address before → after (often hundreds of
    characters) is replaced by the site lines; the full values stay on the '필드 변경' sheet.
    """
    def short(v: str | None) -> str:
        v = _value(v)
        return v if max_value is None or len(v) <= max_value else v[: max_value - 1] + "…"

    site_rows = [c for c in ev.changes if c.field == SITES_FIELD]
    lines = [describe_site_change(c.before, c.after) if max_value is None else
             describe_site_change(c.before and short(c.before), c.after and short(c.after)) for c in site_rows]
    for c in ev.changes:
        if c.is_cosmetic or c.field == SITES_FIELD:
            continue
        if site_rows and c.field in ("manufacturer", "address"):
            continue
        lines.append(f"{_field_label(c.field)}: {short(c.before)} → {short(c.after)}")
    return lines


def _change_summary(ev: EventRow) -> str | None:
    lines = change_lines(ev)
    if ev.cosmetic_fields:
        lines.append("표기 변경: " + ", ".join(_field_label(f) for f in ev.cosmetic_fields))
    return "\n".join(lines) or None


EVENT_COLUMNS: tuple[Col, ...] = (
    Col("severity", "심각도", 9),
    Col("event_type", "이벤트", 7),
    Col("permit_no", "등록번호", 22),
    Col("ingredient", "성분명", 24, "wrap"),
    Col("applicant", "신청인", 20, "wrap"),
    Col("manufacturer", "제조소명", 30, "wrap"),
    Col("countries", "제조국", 12, "wrap"),
    Col("changed_fields", "변경 항목", 16, "wrap"),
    Col("change_summary", "변경 내용 (전 → 후)", 50, "wrap"),
    Col("flags", "표시", 12, "wrap"),
    Col("watch_reasons", "관심목록 사유", 18, "wrap"),
    Col("product_hits", "자사 영향", 18, "wrap"),
    Col("issue_date", "발급일자", 11, "date"),
    Col("target_class", "대상의약품", 10),
    Col("bizrno", "사업자등록번호", 13),
    Col("address", "제조소 소재지", 40, "wrap"),
    Col("dmf_key", "관리 키", 24),
    Col("base_dmf_key", "이전 관리 키", 24),
    Col("link", "의약품안전나라", 13, "link"),
)
_EVENT_PRINT_COLS = 14  # print up to 대상의약품; the audit columns stay on screen


def _event_row(ev: EventRow, base_url: str) -> dict:
    return {
        "severity": SEVERITY_LABEL_KO.get(ev.severity, ev.severity),
        "event_type": EVENT_LABEL_KO.get(ev.event_type, ev.event_type),
        "permit_no": ev.permit_no,
        "ingredient": ev.ingredient,
        "applicant": ev.applicant,
        "manufacturer": ev.manufacturer,
        "countries": ev.countries,
        "changed_fields": ", ".join(_field_label(f) for f in ev.changed_fields) or None,
        "change_summary": _change_summary(ev),
        "flags": _flags(ev),
        "watch_reasons": "\n".join(ev.watch_reasons) or None,
        "issue_date": ev.issue_date,
        "target_class": ev.target_class,
        "bizrno": ev.bizrno,
        "address": ev.address,
        "dmf_key": ev.dmf_key,
        "base_dmf_key": ev.base_dmf_key,
        "link": nedrug_link(ev, base_url or SOURCE_BASE_FALLBACK),
        "_severity_code": ev.severity,
        "_watch": ev.watchlist_hit,
        "product_hits": "\n".join(ev.product_hits) or None,
    }



def _severity_hook(col_index: int, bold_flag_col: int | None = None) -> RowHook:
    def hook(ws: Worksheet, r: int, row: dict) -> None:
        sev = row["_severity_code"]
        cell = ws.cell(row=r, column=col_index)
        cell.fill = st.severity_fill(sev)
        cell.font = st.severity_font(sev)
        if bold_flag_col and row.get("_watch"):
            ws.cell(row=r, column=bold_flag_col).font = st.severity_font("HIGH")

    return hook


FIELD_COLUMNS: tuple[Col, ...] = (
    Col("severity", "심각도", 9),
    Col("kind", "구분", 9),
    Col("permit_no", "등록번호", 22),
    Col("ingredient", "성분명", 24, "wrap"),
    Col("applicant", "신청인", 20, "wrap"),
    Col("field", "항목", 13),
    Col("before", "변경 전", 45, "wrap"),
    Col("after", "변경 후", 45, "wrap"),
    Col("dmf_key", "관리 키", 24),
)
_FIELD_ORDER = {name: i for i, name in enumerate(COMPARED_FIELDS)}


def _site_kind(c: FieldChangeRow) -> str:
    return describe_site_change(c.before, c.after).split(":", 1)[0]  # 제조소 추가 | 제조소 삭제 | 제조소 변경


def _field_rows(report: DayReport) -> list[dict]:
    changes: list[FieldChangeRow] = [c for ev in report.events for c in ev.changes]
    changes.sort(
        key=lambda c: (c.is_cosmetic, -SEVERITY_RANK.get(c.severity, -1), c.dmf_key, _FIELD_ORDER.get(c.field, 99))
    )
    return [
        {
            "severity": SEVERITY_LABEL_KO.get(c.severity, c.severity),
            "kind": "표기 변경" if c.is_cosmetic else "실질 변경",
            "permit_no": c.permit_no,
            "ingredient": c.ingredient,
            "applicant": c.applicant,
            "field": _site_kind(c) if c.field == SITES_FIELD else _field_label(c.field),
            "before": c.before,
            "after": c.after,
            "dmf_key": c.dmf_key,
            "_severity_code": "COSMETIC" if c.is_cosmetic else c.severity,
            "_cosmetic": c.is_cosmetic,
        }
        for c in changes
    ]


NEW_WITHDRAWN_COLUMNS: tuple[Col, ...] = (
    Col("event_type", "구분", 7),
    Col("severity", "심각도", 9),
    Col("permit_no", "등록번호", 22),
    Col("ingredient", "성분명", 24, "wrap"),
    Col("ingredient_base", "성분 기준명", 18, "wrap"),
    Col("applicant", "신청인", 20, "wrap"),
    Col("bizrno", "사업자등록번호", 13),
    Col("manufacturer", "제조소명", 30, "wrap"),
    Col("address", "제조소 소재지", 40, "wrap"),
    Col("countries", "제조국", 12, "wrap"),
    Col("issue_date", "발급일자", 11, "date"),
    Col("target_class", "대상의약품", 10),
    Col("flags", "표시", 12, "wrap"),
    Col("product_hits", "자사 영향", 18, "wrap"),
    Col("dmf_key", "관리 키", 24),
    Col("link", "의약품안전나라", 13, "link"),
)


def _new_withdrawn_rows(report: DayReport, base_url: str) -> list[dict]:
    chosen = [e for e in report.events if e.event_type in ("NEW", "WITHDRAWN")]
    chosen.sort(key=lambda e: (e.event_type != "NEW", -SEVERITY_RANK.get(e.severity, -1), e.dmf_key))
    rows = []
    for e in chosen:
        row = _event_row(e, base_url)
        row["ingredient_base"] = e.ingredient_base
        rows.append(row)
    return rows


# --- the ledger (전체현황): the full registry of one accepted day ---------------------------------

PERMIT_FMT_LABEL_KO: dict[str, str] = {"standard": "표준", "new_substance": "신물질", "unknown": "해석 불가", "missing": "번호 없음"}

LEDGER_COLUMNS: tuple[Col, ...] = (
    Col("permit_no", "등록번호", 24),
    Col("permit_fmt", "번호 형식", 8),
    Col("permit_accept_date", "접수일", 11, "date"),
    Col("permit_ingr_no", "성분 번호", 7),
    Col("permit_group", "그룹", 6),
    Col("permit_serial", "일련번호", 8),
    Col("permit_seq", "순번", 6),
    Col("permit_grant", "허여", 6),
    Col("permit_table", "별표", 9),
    Col("base_permit_no", "원 등록번호 (허여 원본)", 22),
    Col("cohort", "코호트 (성분번호-그룹)", 11),
    Col("ingredient", "성분명", 26),
    Col("ingredient_base", "성분 기준명", 18),
    Col("applicant", "신청인", 22),
    Col("bizrno", "사업자등록번호", 13),
    Col("site_count", "제조소 수", 7, "int"),
    Col("sites", "제조소 (사이트별: 이름·국가)", 46, "wrap"),
    Col("country_set", "제조국 (국가 목록)", 16),
    Col("address", "제조소 소재지 (원문)", 40),
    Col("issue_date", "발급일자", 11, "date"),
    Col("target_class", "대상의약품", 10),
    Col("first_seen", "최초 관측일", 11, "date"),
    Col("last_changed", "최근 실질 변경일", 11, "date"),
    Col("times_changed", "변경 횟수", 7, "int"),
    Col("events_link", "이벤트 (이력 시트)", 14, "sheetlink"),
    Col("dmf_key", "관리 키", 24),
)


def ledger_row(reg: dict) -> dict:
    """A registry row (analyst.queries.registry_asof) -> the ledger's cell values."""
    sites = reg.get("sites") or ()
    if len(sites) > 1:
        site_text = "\n".join(
            f"{i}. {'[' + s['role'] + '] ' if s.get('role') else ''}{s.get('name') or '(제조소명 없음)'} ({s.get('country') or '국가 미상'})"
            for i, s in enumerate(sites, 1)
        )
    elif sites:
        s = sites[0]
        site_text = f"{'[' + s['role'] + '] ' if s.get('role') else ''}{s.get('name') or reg.get('manufacturer') or ''} ({s.get('country') or '국가 미상'})"
    else:
        site_text = reg.get("manufacturer")
    countries = list(dict.fromkeys(reg.get("country_list") or ()))
    return {
        **reg,
        "permit_fmt": PERMIT_FMT_LABEL_KO.get(reg.get("permit_fmt") or "", reg.get("permit_fmt")),
        "sites": site_text,
        "country_set": ", ".join(countries) or reg.get("countries"),
    }


# --- sheets --------------------------------------------------------------------------------------


_SUMMARY_WIDTHS = (28.0, 14.0, 24.0, 16.0, 18.0, 14.0, 40.0)
#: sentences on 요약; a group of at least this many alike events is one sentence (mass changes)
TOP_SENTENCES = 15
MASS_GROUP_MIN = 3


@dataclass(frozen=True)
class Sentence:
    severity: str
    text: str
    products: tuple[str, ...] = ()
    watch: bool = False
    count: int = 1


def _short(text: str | None, n: int = 60) -> str:
    text = _value(text)
    return text if len(text) <= n else text[: n - 1] + "…"


def event_sentence(ev: EventRow) -> str:
    """Who, what, where, before → after — one line an analyst reads on 요약."""
    num = ev.permit_no or ev.dmf_key
    what = _short(ev.ingredient, 40)
    who = _short(ev.applicant, 30)
    where = f"{_short(ev.manufacturer, 50)} ({_short(ev.countries, 20)})"
    if ev.event_type == "NEW":
        again = " (과거 취하 후 재등장)" if ev.is_reappearance else ""
        return f"신규 등록{again} {num} — {what} · 신청인 {who} · 제조소 {where}"
    if ev.event_type == "WITHDRAWN":
        return f"취하 {num} — {what} · 신청인 {who} · 제조소 {where}"
    flags = f" [{_flags(ev)}]" if _flags(ev) and not ev.watchlist_hit else ""
    return f"변경 {num} — {what} · 신청인 {who}{flags}: " + "; ".join(change_lines(ev, max_value=60))


def summary_sentences(events: Sequence[EventRow], limit: int = TOP_SENTENCES) -> tuple[list[Sentence], int]:
    """(top sentences, how many headline events they cover in total) — the team's products first, then
    watchlist hits, then severity; alike events (same change on many registrations, or many new /
    withdrawn registrations of one applicant) become one grouped sentence."""
    headline = [e for e in events if not e.is_cosmetic]
    groups: dict[tuple, list[EventRow]] = {}
    for ev in headline:
        if ev.event_type == "CHANGED":
            key = ("CHANGED", tuple((c.field, c.before, c.after) for c in ev.changes if not c.is_cosmetic))
        else:
            key = (ev.event_type, ev.applicant)
        groups.setdefault(key, []).append(ev)
    items: list[Sentence] = []
    for key, evs in groups.items():
        evs = _sorted_events(evs)
        worst = evs[0].severity
        products = tuple(dict.fromkeys(p for e in evs for p in e.product_hits))
        watch = any(e.watchlist_hit for e in evs)
        if len(evs) < MASS_GROUP_MIN:
            items += [Sentence(e.severity, event_sentence(e), e.product_hits, e.watchlist_hit) for e in evs]
            continue
        examples = ", ".join(e.permit_no or e.dmf_key for e in evs[:3]) + (" …" if len(evs) > 3 else "")
        if key[0] == "CHANGED":
            what = "; ".join(change_lines(evs[0], max_value=60))
            text = f"일괄 변경 {len(evs):,}건 — {what} (예: {examples})"
        else:
            label = EVENT_LABEL_KO.get(key[0], key[0])
            ingredients = ", ".join(dict.fromkeys(_short(e.ingredient, 20) for e in evs[:5]))
            text = f"{label} {len(evs):,}건 — 신청인 {_short(key[1], 30)} (성분: {ingredients}{' …' if len(evs) > 5 else ''}; 예: {examples})"
        items.append(Sentence(worst, text, products, watch, len(evs)))
    items.sort(key=lambda x: (not x.products, not x.watch, -SEVERITY_RANK.get(x.severity, -1), -x.count, x.text))
    return items[:limit], len(headline)


def _summary_sheet(wb: Workbook, report: DayReport) -> int:
    ws = _frame(
        wb,
        SHEET_SUMMARY,
        report,
        widths=_SUMMARY_WIDTHS,
        title=f"DMF 일일 리포트 · {_day_label(report.day)}",
        note="식품의약품안전처 원료의약품 등록(DMF) 현황 — 비교 기준일 대비 신규·변경·취하 요약",
    )
    k = report.kpis
    rejected = report.is_rejected

    def section(r: int, text: str) -> None:
        _put_text(ws, r, 1, text, st.SECTION)
        ws.row_dimensions[r].height = 22

    def label(r: int, text: str) -> None:
        _put_text(ws, r, 1, text, st.LABEL)

    def merge_value(r: int) -> None:
        ws.merge_cells(start_row=r, start_column=2, end_row=r, end_column=5)

    # 수집 상태
    section(5, "수집 상태")
    label(6, "보고일")
    _put_date(ws, 6, 2, report.day)
    label(7, "상태")
    status_cell = _put_text(ws, 7, 2, report.status.label_ko)
    status_cell.fill = st.banner_fill(report.status.value)
    status_cell.font = st.font(bold=True, color=st.BANNER_COLOURS[report.status.value][1])
    merge_value(7)
    label(8, "설명")
    _put_text(ws, 8, 2, report.status_reason, st.TEXT_WRAP)
    merge_value(8)
    _fit_row_height(ws, 8, _text_lines(report.status_reason or "", sum(_SUMMARY_WIDTHS[1:5])))
    label(9, "비교 기준일")
    if report.comparison_base is not None:
        _put_date(ws, 9, 2, report.comparison_base)
    else:
        _put_text(ws, 9, 2, "없음 (기준일)")
    label(10, "마지막 정상 수집일")
    if report.last_accepted_day is not None:
        _put_date(ws, 10, 2, report.last_accepted_day)
    else:
        _put_text(ws, 10, 2, "없음")
    label(11, "생성 시각 (KST)")
    _put_datetime(ws, 11, 2, report.generated_at)
    r = 11
    extra: list[tuple[str, str, bool]] = []
    if report.gap_days > 1:
        extra.append(("비교 범위", f"{report.gap_days}일치 변경 — {_d(report.comparison_base)} 이후 "
                      f"{report.gap_days - 1}일은 반영되지 않아(수집 실패 또는 미수집) 오늘 비교에 모두 포함됩니다", False))
    if report.change_rate is not None:
        extra.append(("변경률 λ̂", report.change_rate.text_ko, report.change_rate.burst))
    if report.warnings:
        extra.append(("경고", "\n".join(report.warnings), True))
    for name, text, alarm in extra:
        r += 1
        label(r, name)
        cell = _put_text(ws, r, 2, text, st.TEXT_WRAP)
        ws.merge_cells(start_row=r, start_column=2, end_row=r, end_column=7)
        _fit_row_height(ws, r, _text_lines(text, sum(_SUMMARY_WIDTHS[1:])))
        if alarm:
            cell.fill, cell.font = st.verdict_style("warn")

    # 핵심 지표
    r += 2
    section(r, "핵심 지표")
    r += 1
    for j, header in enumerate(("지표", "건수", "설명"), 1):
        ws.cell(row=r, column=j, value=header).style = st.HEADER
    ws.merge_cells(start_row=r, start_column=3, end_row=r, end_column=7)
    kpi_values: dict[str, int | None] = {
        "new": k.new,
        "changed": k.changed,
        **{f"changed_{s}": k.changed_by_severity.get(s, 0) for s in ("CRITICAL", "HIGH", "MEDIUM", "INFO")},
        "withdrawn": k.withdrawn,
        "reappeared": k.reappeared,
        "number_assigned": k.number_assigned,
        "watchlist_hits": k.watchlist_hits,
        "product_hits": k.product_hits,
        "cosmetic": k.cosmetic,
    }
    base = _base_day(report)
    r += 1
    _put_text(ws, r, 1, KPI_LABELS["registry_size"], st.LABEL)
    _put_int(ws, r, 2, k.registry_size)
    if rejected:
        size_note = f"마지막 정상 수집일 {_d(base)} 기준 (오늘 수집분 미반영)"
    else:
        size_note = f"{report.day.isoformat()} 정상 수집분 기준 (현재 공개된 등록 전체)"
    _put_text(ws, r, 3, size_note)
    ws.merge_cells(start_row=r, start_column=3, end_row=r, end_column=7)
    for key in KPI_LABELS:
        if key == "registry_size":
            continue
        r += 1
        if key == "cosmetic":
            r += 1  # shown apart: not part of the headline counts
        label_cell = _put_text(ws, r, 1, KPI_LABELS[key], st.LABEL)
        if rejected or report.status is DayStatus.BASELINE:
            # no count exists for this day: say why instead of showing a zero
            value_cell = _put_text(ws, r, 2, "미반영" if rejected else "해당 없음")
            value_cell.alignment = Alignment(horizontal="center", vertical="top")
        else:
            value_cell = _put_int(ws, r, 2, kpi_values[key])
        _put_text(ws, r, 3, _KPI_NOTES[key])
        ws.merge_cells(start_row=r, start_column=3, end_row=r, end_column=7)
        sev = key.removeprefix("changed_")
        if sev in SEVERITY_RANK and not rejected and (kpi_values[key] or 0) > 0:
            value_cell.fill = st.severity_fill(sev)
            value_cell.font = st.severity_font(sev)
        if key == "cosmetic":
            label_cell.fill = st.severity_fill("COSMETIC")
            label_cell.font = st.severity_font("COSMETIC")

    # 주요 변경 — sentences (accepted days only)
    if not rejected and report.status is not DayStatus.BASELINE:
        sentences, total = summary_sentences(report.events)
        r += 2
        section(r, f"주요 변경 — 자사 제품·관심목록 우선, 심각도 순 (실질 변경 {total:,}건 중 {sum(x.count for x in sentences):,}건)")
        if not sentences:
            r += 1
            _put_text(ws, r, 1, "실질 변경 없음" + (f" (표기 변경 {k.cosmetic:,}건은 '{SHEET_FIELDS}' 시트)" if k.cosmetic else ""), st.NOTE)
        for x in sentences:
            r += 1
            tag = SEVERITY_LABEL_KO.get(x.severity, x.severity)
            if x.products:
                tag += " · 자사"
            elif x.watch:
                tag += " · 관심"
            cell = _put_text(ws, r, 1, tag)
            cell.fill, cell.font = st.severity_fill(x.severity), st.severity_font(x.severity)
            text = x.text + (f"\n자사 영향: {', '.join(x.products)}" if x.products else "")
            _put_text(ws, r, 2, text, st.TEXT_WRAP)
            ws.merge_cells(start_row=r, start_column=2, end_row=r, end_column=7)
            _fit_row_height(ws, r, _text_lines(text, sum(_SUMMARY_WIDTHS[1:])))
        if total > sum(x.count for x in sentences):
            r += 1
            _put_text(ws, r, 1, f"… 나머지는 '{SHEET_EVENTS}' 시트 (전체 내용·전 → 후)", st.NOTE)

    # 수용 게이트 — observed values and thresholds wrap in wide cells: never cut on screen or paper
    r += 2
    section(r, "수용 게이트 (6개 모두 통과해야 반영)")
    r += 1
    for col, header in ((1, "게이트"), (2, "결과"), (3, "관측값"), (5, "기준"), (6, "설명")):
        ws.cell(row=r, column=col, value=header).style = st.HEADER
    ws.merge_cells(start_row=r, start_column=3, end_row=r, end_column=4)
    ws.merge_cells(start_row=r, start_column=6, end_row=r, end_column=7)
    if not report.gates:
        r += 1
        _put_text(ws, r, 1, "게이트 결과 없음", st.NOTE)
    w_obs, w_thr, w_det = sum(_SUMMARY_WIDTHS[2:4]), _SUMMARY_WIDTHS[4], sum(_SUMMARY_WIDTHS[5:7])
    for g in report.gates:
        r += 1
        _put_text(ws, r, 1, f"{g.number}. {g.label_ko} ({g.name})", st.LABEL)
        verdict = "통과" if g.passed else "실패" if g.passed is False else "미평가"
        cell = _put_text(ws, r, 2, verdict)
        fill, font = st.verdict_style("ok" if g.passed else "fail" if g.passed is False else "na")
        cell.fill, cell.font = fill, font
        _put_text(ws, r, 3, g.observed, st.TEXT_WRAP)
        ws.merge_cells(start_row=r, start_column=3, end_row=r, end_column=4)
        _put_text(ws, r, 5, g.threshold, st.TEXT_WRAP)
        _put_text(ws, r, 6, g.detail, st.TEXT_WRAP)
        ws.merge_cells(start_row=r, start_column=6, end_row=r, end_column=7)
        _fit_row_height(ws, r, max(_text_lines(g.observed or "", w_obs), _text_lines(g.threshold or "", w_thr),
                                   _text_lines(g.detail or "", w_det)))

    # 관심목록 해당 (accepted days only: a rejected day's events were not applied)
    hits = [e for e in _sorted_events(report.events) if e.watchlist_hit and not e.is_cosmetic]
    if hits and not rejected:
        r += 2
        section(r, f"관심목록 해당 이벤트 ({len(hits):,}건)")
        r += 1
        for j, header in enumerate(("등록번호", "심각도", "이벤트", "성분명", "신청인", "사유"), 1):
            ws.cell(row=r, column=j, value=header).style = st.HEADER
        ws.merge_cells(start_row=r, start_column=6, end_row=r, end_column=7)
        for ev in hits[:50]:
            r += 1
            _put_text(ws, r, 1, ev.permit_no or ev.dmf_key)
            cell = _put_text(ws, r, 2, SEVERITY_LABEL_KO.get(ev.severity, ev.severity))
            cell.fill, cell.font = st.severity_fill(ev.severity), st.severity_font(ev.severity)
            _put_text(ws, r, 3, EVENT_LABEL_KO.get(ev.event_type, ev.event_type))
            _put_text(ws, r, 4, ev.ingredient)
            _put_text(ws, r, 5, ev.applicant)
            _put_text(ws, r, 6, ", ".join(ev.watch_reasons))
            ws.merge_cells(start_row=r, start_column=6, end_row=r, end_column=7)
        if len(hits) > 50:
            r += 1
            _put_text(ws, r, 1, f"… 외 {len(hits) - 50:,}건 — '{SHEET_EVENTS}' 시트에서 '표시' 열을 '관심목록'으로 필터", st.NOTE)

    # 최근 추이 (table + chart)
    r += 2
    section(r, f"최근 {len(report.history):,}일 추이")
    r += 1
    hist_cols = (
        Col("day", "날짜", 26, "date"),
        Col("status", "상태", 14),
        Col("registry_size", "등록 현황", 20, "int"),
        Col("new", "신규", 14, "int"),
        Col("changed", "변경", 14, "int"),
        Col("withdrawn", "취하", 12, "int"),
        Col("cosmetic", "표기 변경", 12, "int"),
    )
    hist_rows = []
    # newest first: the table answers "what happened lately"; the chart flips it back to a timeline
    for h in sorted(report.history, key=lambda p: p.day, reverse=True):
        counted = h.status in (DayStatus.ACCEPTED.value, DayStatus.UNCHANGED.value)
        # A rejected or baseline day has no counts: blank, never a misleading zero.
        hist_rows.append(
            {
                "day": h.day,
                "status": HISTORY_STATUS_KO.get(h.status, h.status),
                "registry_size": h.registry_size,
                "new": h.new if counted else None,
                "changed": h.changed if counted else None,
                "withdrawn": h.withdrawn if counted else None,
                "cosmetic": h.cosmetic if counted else None,
                "_rejected": h.status == DayStatus.REJECTED.value,
            }
        )

    def hist_hook(ws: Worksheet, row_no: int, row: dict) -> None:
        if row["_rejected"]:
            fill, font = st.verdict_style("fail")
            cell = ws.cell(row=row_no, column=2)
            cell.fill, cell.font = fill, font

    hist_top = r
    last = _write_table(ws, hist_top, hist_cols, hist_rows, row_hook=hist_hook, set_widths=False)
    if not hist_rows:
        _put_text(ws, hist_top + 1, 1, "추이 자료 없음", st.NOTE)
    else:
        # a rejected day gets a full-height pale-red bar in the chart (its own series, column H), so it
        # never looks like a quiet day; the column sits outside the table's filter
        peak = max([(row["new"] or 0) + (row["changed"] or 0) + (row["withdrawn"] or 0) for row in hist_rows] + [1])
        marker = ws.cell(row=hist_top, column=8, value="수집 실패 (미반영)")
        marker.style = st.HEADER
        ws.column_dimensions["H"].width = 18
        for i, row in enumerate(hist_rows, hist_top + 1):
            if row["_rejected"]:
                _put_int(ws, i, 8, peak).font = st.font(color=st.FAIL_FONT)
        _history_chart(ws, hist_top, last, anchor="I5")
    ws.freeze_panes = "A4"
    ws.print_title_rows = "1:3"
    return len(hist_rows)


#: short day labels for the 요약 history table (its column is narrow; the full labels are in the banner)
HISTORY_STATUS_KO: dict[str, str] = {"accepted": "정상 반영", "unchanged": "변경 없음", "baseline": "기준일 (최초)",
                                     "rejected": "수집 실패", "pending": "판정 전"}


def _history_chart(ws: Worksheet, top: int, last: int, anchor: str) -> None:
    chart = BarChart()
    chart.type = "col"
    chart.grouping = "stacked"
    chart.overlap = 100
    chart.title = f"일별 신규·변경·취하 (최근 {last - top}일)"
    chart.y_axis.title = "건수"
    chart.y_axis.majorGridlines = None
    chart.x_axis.number_format = "mm-dd"
    chart.x_axis.scaling.orientation = "maxMin"  # the table is newest-first; time runs left to right
    chart.y_axis.crosses = "max"  # keep the value axis on the left after the flip
    chart.x_axis.delete = False  # openpyxl default hides axes in recent Excel versions
    chart.y_axis.delete = False
    data = Reference(ws, min_col=4, max_col=6, min_row=top, max_row=last)
    chart.add_data(data, titles_from_data=True)
    chart.set_categories(Reference(ws, min_col=1, min_row=top + 1, max_row=last))
    chart.add_data(Reference(ws, min_col=8, min_row=top, max_row=last), titles_from_data=True)
    for series, colour in zip(chart.series, ("4472C4", "ED7D31", "C00000", "F4CCCC")):
        series.graphicalProperties.solidFill = colour
        series.graphicalProperties.line.solidFill = colour
    chart.series[-1].graphicalProperties.line.solidFill = "C00000"  # outlined: 수집 실패, not a count
    chart.height = 9.5
    chart.width = 20
    chart.legend.position = "b"
    ws.add_chart(chart, anchor)


def _events_sheet(wb: Workbook, report: DayReport) -> int:
    cols = EVENT_COLUMNS
    if report.is_rejected:
        _rejected_table_sheet(wb, SHEET_EVENTS, report, f"변경 이벤트 · {report.day.isoformat()}")
        return 0
    ws = _frame(wb, SHEET_EVENTS, report, _widths(cols), f"변경 이벤트 · {report.day.isoformat()}", _event_sheet_note(report))
    rows = [_event_row(e, report.source_url) for e in _sorted_events(report.headline_events)]
    header = 4
    last = _write_table(ws, header, cols, rows, row_hook=_severity_hook(1, bold_flag_col=10))
    _finish_table_sheet(ws, header)
    ws.print_area = f"A1:{get_column_letter(_EVENT_PRINT_COLS)}{max(last, header)}"
    return len(rows)


RECENT_COLUMNS: tuple[Col, ...] = (
    Col("day", "관측일", 11, "date"),
    Col("base_day", "비교 기준일", 11, "date"),
    Col("severity", "심각도", 9),
    Col("event_type", "이벤트", 7),
    Col("permit_no", "등록번호", 22),
    Col("ingredient", "성분명", 22, "wrap"),
    Col("applicant", "신청인", 18, "wrap"),
    Col("manufacturer", "제조소명", 26, "wrap"),
    Col("countries", "제조국", 11, "wrap"),
    Col("change_summary", "변경 내용 (전 → 후)", 50, "wrap"),
    Col("flags", "표시", 11, "wrap"),
    Col("product_hits", "자사 영향", 16, "wrap"),
    Col("watch_reasons", "관심목록 사유", 16, "wrap"),
    Col("dmf_key", "관리 키", 22),
)


def _recent_rows(report: DayReport) -> list[dict]:
    ordered = sorted(report.recent_events, key=lambda e: (-(e.day.toordinal() if e.day else 0),
                                                          -SEVERITY_RANK.get(e.severity, -1), e.dmf_key))
    rows = []
    for e in ordered:
        row = _event_row(e, report.source_url)
        row.update(day=e.day, base_day=e.base_day)
        rows.append(row)
    return rows


def _recent_sheet(wb: Workbook, report: DayReport, rows: list[dict]) -> int:
    days = len({r["day"] for r in rows})
    note = (
        f"최근 {report.recent_days}일({_d(report.day - timedelta(days=report.recent_days - 1))} ~ {_d(report.day)})의 모든 이벤트 "
        f"{len(rows):,}건 (정상 반영일 {days}일, 표기 변경 포함 — 회색) · 최신 관측일, 심각도 순. "
        f"'{SHEET_LEDGER}' 시트의 '이벤트' 링크가 등록별 첫 행으로 연결됩니다."
    )
    ws = _frame(wb, SHEET_RECENT, report, _widths(RECENT_COLUMNS), f"이력 · 최근 {report.recent_days}일 이벤트", note)
    last = _write_table(ws, 4, RECENT_COLUMNS, rows, row_hook=_severity_hook(3))
    _finish_table_sheet(ws, 4)
    ws.print_area = f"A1:{get_column_letter(12)}{max(last, 4)}"
    if not rows:
        _put_text(ws, 5, 1, f"최근 {report.recent_days}일 동안 반영된 이벤트가 없습니다", st.NOTE)
    return len(rows)


def _ledger_sheet(wb: Workbook, report: DayReport, recent_rows: list[dict]) -> int:
    # the first 이력 row of each registration (events of either its key or its earlier key)
    first_row: dict[str, tuple[int, int]] = {}
    for i, row in enumerate(recent_rows, 5):
        for key in {row["dmf_key"], row.get("base_dmf_key")} - {None}:
            at, n = first_row.get(key, (i, 0))
            first_row[key] = (at, n + 1)
    day = _base_day(report)
    rows = []
    for reg in report.ledger:
        row = ledger_row(reg)
        hit = first_row.get(reg["dmf_key"])
        row["events_link"] = (f"이벤트 {hit[1]}건", f"'{SHEET_RECENT}'!A{hit[0]}") if hit else None
        rows.append(row)
    if report.is_rejected:
        note = f"마지막 정상 수집일 {_d(day)} 기준 전체 등록 (오늘 수집분 미반영)."
    else:
        note = f"{_d(day)} 정상 수집분의 전체 등록 {len(rows):,}건."
    note += (" 머리글의 필터로 성분·업체·제조국·코호트를 골라 보십시오. 허여(n)/(A) 등록은 '원 등록번호'로 원본과 연결되고, "
             f"'이벤트' 링크는 최근 {report.recent_days}일 '{SHEET_RECENT}' 시트로 갑니다.")
    ws = _frame(wb, SHEET_LEDGER, report, _widths(LEDGER_COLUMNS), f"전체현황 · {_d(day)}", note)
    last = _write_table(ws, 4, LEDGER_COLUMNS, rows, sparse=True)
    _finish_table_sheet(ws, 4)
    ws.freeze_panes = "B5"  # keep the registration number in view while scrolling right
    ws.print_area = f"A1:{get_column_letter(len(LEDGER_COLUMNS))}{max(last, 4)}"
    if not rows:
        _put_text(ws, 5, 1, "정상 수집된 등록 현황이 아직 없습니다", st.NOTE)
    return len(rows)


def _widths(cols: Sequence[Col]) -> tuple[float, ...]:
    return tuple(col.width for col in cols)


def _fields_sheet(wb: Workbook, report: DayReport) -> int:
    cols = FIELD_COLUMNS
    title = f"필드 변경 · {report.day.isoformat()}"
    if report.is_rejected:
        _rejected_table_sheet(wb, SHEET_FIELDS, report, title)
        return 0
    rows = _field_rows(report)
    cosmetic = sum(1 for row in rows if row["_cosmetic"])
    if report.status in (DayStatus.BASELINE, DayStatus.UNCHANGED):
        note = _event_sheet_note(report)
    else:
        inside = cosmetic - sum(len(e.changes) for e in report.events if e.is_cosmetic)
        note = (
            f"바뀐 항목별 1행 — 실질 변경 {len(rows) - cosmetic:,}행, 표기 변경 {cosmetic:,}행 (회색, 헤드라인 건수 제외): "
            f"표기만 바뀐 이벤트 {report.kpis.cosmetic:,}건(요약의 '표기 변경' 건수)의 행과, 실질 변경 이벤트 안의 표기 항목 "
            f"{inside:,}행. 제조소가 더해지거나 빠진 변경은 '제조소 추가/삭제' 행으로 표시. 비교 기준 {_d(report.comparison_base)}{_covers(report)}."
        )
    ws = _frame(wb, SHEET_FIELDS, report, _widths(cols), title, note)

    def hook(ws: Worksheet, r: int, row: dict) -> None:
        _severity_hook(1)(ws, r, row)
        if row["_cosmetic"]:
            cell = ws.cell(row=r, column=2)
            cell.fill, cell.font = st.severity_fill("COSMETIC"), st.severity_font("COSMETIC")

    _write_table(ws, 4, cols, rows, row_hook=hook)
    _finish_table_sheet(ws, 4)
    return len(rows)


def _new_withdrawn_sheet(wb: Workbook, report: DayReport) -> int:
    cols = NEW_WITHDRAWN_COLUMNS
    title = f"신규 · 취하 · {report.day.isoformat()}"
    if report.is_rejected:
        _rejected_table_sheet(wb, SHEET_NEW_WITHDRAWN, report, title)
        return 0
    rows = _new_withdrawn_rows(report, report.source_url)
    if report.status in (DayStatus.BASELINE, DayStatus.UNCHANGED):
        note = _event_sheet_note(report)
    else:
        new = sum(1 for e in report.events if e.event_type == "NEW")
        note = f"신규 {new:,}건, 취하 {len(rows) - new:,}건 — 등록 전체 정보. 비교 기준 {_d(report.comparison_base)}."
    ws = _frame(wb, SHEET_NEW_WITHDRAWN, report, _widths(cols), title, note)
    _write_table(ws, 4, cols, rows, row_hook=_severity_hook(2))
    _finish_table_sheet(ws, 4)
    return len(rows)


_AGG_EXTRA: dict[str, tuple[tuple[str, str], ...]] = {
    SHEET_BY_INGREDIENT: (("manufacturers", "제조소 수"), ("applicants", "신청인 수"), ("countries", "제조국 수")),
    SHEET_BY_APPLICANT: (("ingredients", "성분 수"), ("manufacturers", "제조소 수"), ("countries", "제조국 수")),
    SHEET_BY_COUNTRY: (("ingredients", "성분 수"), ("applicants", "신청인 수"), ("manufacturers", "제조소 수")),
}
_AGG_LABEL = {SHEET_BY_INGREDIENT: "성분 (기준명)", SHEET_BY_APPLICANT: "신청인", SHEET_BY_COUNTRY: "제조국"}
_AGG_TITLE = {
    SHEET_BY_INGREDIENT: "성분별 등록 현황",
    SHEET_BY_APPLICANT: "업체(신청인)별 등록 현황",
    SHEET_BY_COUNTRY: "제조국별 등록 현황",
}
TOP_N_CHART = 20


def _aggregate_sheet(wb: Workbook, report: DayReport, name: str, data: Sequence[AggregateRow]) -> int:
    cols = (
        Col("rank", "순위", 6, "int"),
        Col("label", _AGG_LABEL[name], 36, "wrap"),
        Col("registrations", "등록 수", 10, "int"),
        Col("share", "비율", 9, "pct"),
        *(Col(attr, header, 11, "int") for attr, header in _AGG_EXTRA[name]),
    )
    base = _base_day(report)
    size = report.kpis.registry_size
    if report.is_rejected:
        note = f"마지막 정상 수집일 {_d(base)} 기준 현황 (오늘 수집분 미반영)."
    else:
        note = f"{report.day.isoformat()} 정상 수집분의 현재 등록 기준."
    if name == SHEET_BY_COUNTRY:
        note += " 여러 제조국이 있는 등록은 각 국가에 모두 집계되므로 합계가 등록 현황보다 큽니다."
    elif name == SHEET_BY_INGREDIENT:
        note += " 염·수화물·미분화 표기를 뗀 기준명으로 묶었습니다."
    ws = _frame(wb, name, report, _widths(cols), f"{_AGG_TITLE[name]} · {_d(base if report.is_rejected else report.day)}", note)
    ordered = sorted(data, key=lambda a: (-a.registrations, a.label))
    rows = [
        {
            "rank": i,
            "label": a.label,
            "registrations": a.registrations,
            "share": (a.registrations / size) if size else None,
            **{attr: getattr(a, attr) for attr, _ in _AGG_EXTRA[name]},
        }
        for i, a in enumerate(ordered, 1)
    ]
    header = 4
    _write_table(ws, header, cols, rows)
    _finish_table_sheet(ws, header)
    if rows:
        top_n = min(TOP_N_CHART, len(rows))
        chart = BarChart()
        chart.type = "bar"
        chart.title = f"상위 {top_n}개 · 등록 수"
        chart.legend = None
        chart.x_axis.scaling.orientation = "maxMin"  # rank 1 at the top
        chart.y_axis.crosses = "max"  # …and the value axis stays at the bottom
        chart.x_axis.delete = False
        chart.y_axis.delete = False
        chart.y_axis.majorGridlines = None
        chart.add_data(Reference(ws, min_col=3, min_row=header, max_row=header + top_n), titles_from_data=True)
        chart.set_categories(Reference(ws, min_col=2, min_row=header + 1, max_row=header + top_n))
        chart.series[0].graphicalProperties.solidFill = "2F5597"
        chart.height = max(8.0, 0.55 * top_n + 2)
        chart.width = 18
        ws.add_chart(chart, f"{get_column_letter(len(cols) + 2)}{header}")
    else:
        _put_text(ws, header + 1, 1, "집계 자료 없음", st.NOTE)
    return len(rows)


def _quality_sheet(wb: Workbook, report: DayReport) -> int:
    cols = (
        Col("kind", "구분", 12),
        Col("number", "번호", 6, "int"),
        Col("name", "항목", 26, "wrap"),
        Col("result", "결과", 9),
        Col("observed", "관측값", 24, "wrap"),
        Col("threshold", "기준", 18, "wrap"),
        Col("detail", "설명", 60, "wrap"),
    )
    failed = [g for g in report.gates if g.passed is False]
    warned = [q for q in report.quality if not q.ok]
    note = (
        f"수용 게이트 {len(report.gates)}개 중 실패 {len(failed)}개"
        + (f" ({', '.join(g.label_ko for g in failed)})" if failed else "")
        + f" · 품질 지표 {len(report.quality)}개 중 경고 {len(warned)}개. 게이트 실패 시 그날 수집분은 반영되지 않습니다."
    )
    ws = _frame(wb, SHEET_QUALITY, report, _widths(cols), f"수집 품질 · {report.day.isoformat()}", note)
    rows: list[dict] = []
    for g in report.gates:
        verdict = "ok" if g.passed else "fail" if g.passed is False else "na"
        rows.append(
            {
                "kind": "수용 게이트",
                "number": g.number,
                "name": f"{g.label_ko} ({g.name})",
                "result": {"ok": "통과", "fail": "실패", "na": "미평가"}[verdict],
                "observed": g.observed,
                "threshold": g.threshold,
                "detail": g.detail,
                "_verdict": verdict,
            }
        )
    for i, q in enumerate(report.quality, 1):
        rows.append(
            {
                "kind": "품질 지표",
                "number": i,
                "name": f"{q.label_ko} ({q.name})",
                "result": "정상" if q.ok else "경고",
                "observed": q.value,
                "threshold": q.expected,
                "detail": q.detail,
                "_verdict": "ok" if q.ok else "warn",
            }
        )

    def hook(ws: Worksheet, r: int, row: dict) -> None:
        cell = ws.cell(row=r, column=4)
        cell.fill, cell.font = st.verdict_style(row["_verdict"])

    _write_table(ws, 4, cols, rows, row_hook=hook)
    _finish_table_sheet(ws, 4)
    if not rows:
        _put_text(ws, 5, 1, "게이트·품질 지표 자료 없음", st.NOTE)
    return len(rows)


SEVERITY_DEFINITIONS: dict[str, str] = {
    "CRITICAL": "제조소명·제조소 소재지·제조국의 실질 변경, 취하(목록에서 사라짐)",
    "HIGH": "성분명·신청인·사업자등록번호 변경(양도양수 포함), 취하 후 재등장한 신규, 관심목록 해당(최소 높음)",
    "MEDIUM": "발급일자·대상의약품 변경",
    "INFO": "신규 등록, 등록번호 부여",
    "COSMETIC": "띄어쓰기·문장부호·대소문자·법인격 표기((주), 주식회사 등)만 달라진 변경 — 헤드라인 건수에서 제외하고 '필드 변경' 시트에 회색으로 표시",
}
EVENT_DEFINITIONS: dict[str, str] = {
    "NEW": "오늘 목록에만 있는 등록. 과거에 취하됐다 다시 나타나면 '재등장'(높음)",
    "CHANGED": "비교 기준일과 오늘 모두 있으나 내용이 달라진 등록. 가장 심각한 항목의 심각도를 따름",
    "WITHDRAWN": "비교 기준일 목록에 있었으나 오늘 목록에 없는 등록 (완전성이 증명된 수집분에서만 판정)",
}
FLAG_DEFINITIONS: dict[str, str] = {
    "is_reappearance": "과거 취하 이력이 있는 등록이 다시 나타남",
    "number_assigned": "등록번호 없이 공개됐던 등록이 번호를 받음 — 취하+신규가 아닌 한 건의 변경",
    "is_transfer": "사업자등록번호가 바뀜 (등록의 양도양수)",
    "is_rename": "사업자등록번호는 같고 신청인 이름만 바뀜 (상호 변경)",
    "watchlist_hit": "설정의 관심목록(성분·업체·제조소·국가)에 해당 — 최소 '높음'",
}
NOTES: tuple[str, ...] = (
    "출처 API는 현재 상태만 제공하므로, 변경은 매일 전체 목록을 받아 직전 정상 수집일과 비교해 판정합니다.",
    "수용 게이트 6개(전송·완전성·감소율·결측·중복·변동률)를 모두 통과한 수집분만 반영합니다. 실패한 날은 비교 기준이 그대로이며, 다음 정상 수집일의 비교가 그 사이 변경을 모두 포함합니다.",
    "표기 변경(COSMETIC)은 헤드라인 건수(신규·변경·취하)에 포함하지 않습니다.",
    "제조국은 제조소별로 하나씩 기록되므로 제조국별 집계의 합은 등록 수보다 클 수 있습니다.",
    "의약품안전나라 '조회' 링크는 원료의약품 등록 현황에서 해당 성분명을 검색합니다 (등록번호로 바로 여는 공개 주소가 없어 결과 목록에서 등록번호를 확인하십시오).",
    "원문 텍스트는 모두 문자열로 저장되며 수식으로 해석되지 않습니다. XML에 쓸 수 없는 제어 문자는 U+FFFD(�)로 바꾸고, 32,767자를 넘는 값은 잘라 '…(잘림)'으로 표시합니다.",
)


def _meta_sheet(wb: Workbook, report: DayReport) -> int:
    cols = (Col("group", "구분", 14), Col("item", "항목", 30, "wrap"), Col("value", "내용", 100, "wrap"))
    ws = _frame(wb, SHEET_META, report, _widths(cols), "메타 정보 · 출처 · 정의", ATTRIBUTION)
    rows: list[dict] = [
        {"group": "출처", "item": "출처 표시", "value": ATTRIBUTION},
        {"group": "출처", "item": "데이터 서비스", "value": "식품의약품안전처_원료의약품등록(DMF)현황 (data.go.kr/data/15057075), 오퍼레이션 getMdcDmfList01"},
        {"group": "출처", "item": "의약품안전나라", "value": f"{report.source_url.rstrip('/')}{NEDRUG_DMF_SEARCH_PATH} (등록 건별 조회 링크)"},
        {"group": "보고서", "item": "보고일", "value": report.day.isoformat()},
        {"group": "보고서", "item": "상태", "value": f"{report.status.label_ko} ({report.status.value})"},
        {"group": "보고서", "item": "상태 설명", "value": report.status_reason},
        {"group": "보고서", "item": "비교 기준일", "value": _d(report.comparison_base)},
        {"group": "보고서", "item": "마지막 정상 수집일", "value": _d(report.last_accepted_day)},
        {
            "group": "보고서",
            "item": "생성 시각 (KST)",
            "value": _fmt_dt(report.generated_at),
        },
        {"group": "보고서", "item": "생성 프로그램", "value": "DMF Watch"},
    ]
    rows += [{"group": "실행 정보", "item": k, "value": v} for k, v in report.run_info.items()]
    rows += [
        {"group": "심각도", "item": f"{SEVERITY_LABEL_KO[s]} ({s})", "value": text, "_severity_code": s}
        for s, text in SEVERITY_DEFINITIONS.items()
    ]
    rows += [{"group": "이벤트", "item": f"{EVENT_LABEL_KO[t]} ({t})", "value": text} for t, text in EVENT_DEFINITIONS.items()]
    rows += [{"group": "표시", "item": FLAG_LABELS[f], "value": text} for f, text in FLAG_DEFINITIONS.items()]
    rows += [{"group": "항목", "item": f"{label} ({name})", "value": f"비교 항목 — 실질 변경 시 심각도 {SEVERITY_LABEL_KO[COMPARED_FIELDS[name].value]}"} for name, label in FIELD_LABEL_KO.items() if name in COMPARED_FIELDS]
    watch = {kind: pats for kind, pats in report.watchlist.items() if pats}
    if watch:
        rows += [{"group": "관심목록", "item": kind, "value": ", ".join(pats)} for kind, pats in watch.items()]
    else:
        rows.append({"group": "관심목록", "item": "설정", "value": "관심목록 없음 (config/dmf.toml [watchlist])"})
    rows += [{"group": "참고", "item": f"참고 {i}", "value": text} for i, text in enumerate(NOTES, 1)]

    def hook(ws: Worksheet, r: int, row: dict) -> None:
        if "_severity_code" in row:
            _severity_hook(2)(ws, r, row)

    _write_table(ws, 4, cols, rows, row_hook=hook)
    _finish_table_sheet(ws, 4)
    return len(rows)


def _fmt_dt(value: datetime | None) -> str:
    if value is None:
        return "—"
    if value.tzinfo is not None:
        value = value.astimezone(KST)
    return value.strftime("%Y-%m-%d %H:%M:%S")


# --- assembling and writing ----------------------------------------------------------------------


def build_workbook(report: DayReport) -> tuple[Workbook, dict[str, int]]:
    """The whole workbook in memory (no I/O) and the data-row count of each table sheet."""
    if not isinstance(report, DayReport):
        raise TypeError(f"build_workbook needs a DayReport, got {type(report).__name__}")
    wb = Workbook()
    wb.remove(wb.active)
    st.register_styles(wb)
    recent = _recent_rows(report)
    rows = {
        SHEET_SUMMARY: _summary_sheet(wb, report),
        SHEET_EVENTS: _events_sheet(wb, report),
        SHEET_FIELDS: _fields_sheet(wb, report),
        SHEET_NEW_WITHDRAWN: _new_withdrawn_sheet(wb, report),
        SHEET_LEDGER: _ledger_sheet(wb, report, recent),
        SHEET_RECENT: _recent_sheet(wb, report, recent),
        SHEET_BY_INGREDIENT: _aggregate_sheet(wb, report, SHEET_BY_INGREDIENT, report.by_ingredient),
        SHEET_BY_APPLICANT: _aggregate_sheet(wb, report, SHEET_BY_APPLICANT, report.by_applicant),
        SHEET_BY_COUNTRY: _aggregate_sheet(wb, report, SHEET_BY_COUNTRY, report.by_country),
        SHEET_QUALITY: _quality_sheet(wb, report),
        SHEET_META: _meta_sheet(wb, report),
    }
    wb.active = 0
    props = wb.properties
    props.title = f"DMF 리포트 {report.day.isoformat()}"
    props.subject = "원료의약품 등록(DMF) 일일 변경 리포트"
    props.creator = "DMF Watch"
    props.description = ATTRIBUTION
    # The 최신 copy's day is read back from here (see `workbook_day`).
    props.keywords = f"dmf-day={report.day.isoformat()}; status={report.status.value}"
    return wb, rows


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


def _ensure_dir(reports_dir: Path) -> None:
    try:
        reports_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WorkbookError(f"리포트 폴더를 만들 수 없습니다: {reports_dir} ({exc.strerror or exc})") from exc
    if not os.access(reports_dir, os.W_OK | os.X_OK):
        raise WorkbookError(f"리포트 폴더에 쓸 수 없습니다 (권한 없음): {reports_dir}")


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


def _atomic_write(target: Path, write: Callable[[Path], None]) -> None:
    """The product's one atomic write (umask permissions: colleagues can open the shared folder's
    workbooks; fsync; the temp file removed on any failure)."""
    try:
        with atomic_output(target) as tmp:
            write(tmp)
            crash_point("workbook_write")  # crash-safety tests: the old workbook must survive this
    except OSError as exc:
        raise WorkbookError(f"리포트 파일을 쓸 수 없습니다: {target} ({exc.strerror or exc})") from exc


def _newest_other(reports_dir: Path, exclude: Path) -> tuple[date, Path] | None:
    others = [(d, p) for d, p in dated_workbooks(reports_dir) if p != exclude]
    return others[-1] if others else None


def write_workbook(report: DayReport, reports_dir: Path) -> WorkbookResult:
    """Write `DMF_리포트_YYYY-MM-DD.xlsx` atomically and refresh `DMF_리포트_최신.xlsx` when this day
    is at least as new as the day the 최신 copy holds (a backfill never replaces a newer latest)."""
    started = time.perf_counter()
    reports_dir = Path(reports_dir)
    _ensure_dir(reports_dir)
    wb, rows = build_workbook(report)
    target = reports_dir / dated_workbook_name(report.day)
    latest = reports_dir / LATEST_NAME
    try:
        with _dir_lock(reports_dir):
            _atomic_write(target, lambda tmp: xlsx_body.save(wb, tmp))
            held = workbook_day(latest) if latest.exists() else None
            newest = _newest_other(reports_dir, exclude=target)
            # 최신 missing or unreadable: judge against the newest dated workbook instead
            current = held if held is not None else (newest[0] if newest else None)
            update_latest = current is None or report.day >= current
            if update_latest:
                _atomic_write(latest, lambda tmp: shutil.copyfile(target, tmp))
            elif held is None and newest is not None:
                # a backfill found no 최신: restore it from the newest day, never from this one
                _atomic_write(latest, lambda tmp: shutil.copyfile(newest[1], tmp))
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


# --- table workbooks (dmf history / asof / report) ---------------------------------------------


@dataclass(frozen=True)
class TableSheet:
    """One table sheet in the house look; `severity_col` (1-based) is coloured by row['_severity_code']."""

    name: str
    title: str
    note: str | None
    cols: tuple[Col, ...]
    rows: Sequence[dict]
    severity_col: int | None = None
    print_cols: int | None = None  # print only the first N columns (audit columns stay on screen)


def add_table_sheet(wb: Workbook, sheet: TableSheet, banner: str, status: str, header_left: str) -> Worksheet:
    ws = frame_sheet(wb, sheet.name, banner, status, _widths(sheet.cols), sheet.title, sheet.note,
                     print_header=(f"{header_left} — {sheet.name}", ATTRIBUTION))
    hook = None
    if sheet.severity_col:
        col = sheet.severity_col

        def hook(ws: Worksheet, r: int, row: dict) -> None:
            if row.get("_severity_code"):
                _severity_hook(col)(ws, r, row)

    last = _write_table(ws, 4, sheet.cols, sheet.rows, row_hook=hook)
    _finish_table_sheet(ws, 4)
    if sheet.print_cols:
        ws.print_area = f"A1:{get_column_letter(sheet.print_cols)}{max(last, 4)}"
    if not sheet.rows:
        _put_text(ws, 5, 1, "해당 자료 없음", st.NOTE)
    return ws


def write_tables_workbook(path: Path, sheets: Sequence[TableSheet], *, banner: str, status: str = "accepted",
                          doc_title: str) -> Path:
    """A workbook of table sheets (same styles, banner and print setup as the daily one), atomically."""
    path = Path(path)
    _ensure_dir(path.parent)
    wb = Workbook()
    wb.remove(wb.active)
    st.register_styles(wb)
    for sheet in sheets:
        add_table_sheet(wb, sheet, banner, status, doc_title)
    wb.active = 0
    wb.properties.title = doc_title
    wb.properties.creator = "DMF Watch"
    wb.properties.description = ATTRIBUTION
    _atomic_write(path, lambda tmp: xlsx_body.save(wb, tmp))
    return path


# --- the period workbook (dmf report --from D1 --to D2) --------------------------------------------

REVIEW_COLUMNS: tuple[Col, ...] = (Col("reviewer", "검토자", 10), Col("reviewed_on", "검토일", 11), Col("comment", "의견", 30, "wrap"))
NET_COLUMNS: tuple[Col, ...] = (
    Col("severity", "심각도", 9),
    Col("net_type", "순변경", 11),
    Col("permit_no", "등록번호", 22),
    Col("ingredient", "성분명", 22, "wrap"),
    Col("applicant", "신청인", 18, "wrap"),
    Col("manufacturer", "제조소명", 26, "wrap"),
    Col("countries", "제조국", 11, "wrap"),
    Col("change_summary", "순변경 내용 (기간 처음 전 → 마지막 후)", 50, "wrap"),
    Col("n_events", "이벤트 수", 7, "int"),
    Col("event_days", "관측일", 12, "wrap"),
    Col("product_hits", "자사 영향", 16, "wrap"),
    Col("watch", "관심목록", 8),
    Col("dmf_key", "관리 키", 22),
    *REVIEW_COLUMNS,
)
PERIOD_FIELD_COLUMNS: tuple[Col, ...] = (Col("day", "관측일", 11, "date"), *FIELD_COLUMNS)
NET_DEFINITIONS: dict[str, str] = {
    "신규": "기간 중 새로 나타난 등록 (이후 변경이 있었다면 마지막 상태로 표시)",
    "변경": "기간 처음의 값과 마지막 값이 다른 항목이 있는 등록 — 두 번 바뀌었으면 처음 전 → 마지막 후 한 행",
    "취하": "기간 중 목록에서 사라진 등록",
    "신규 후 취하": "기간 안에서 나타났다가 사라진 등록",
    "취하 후 재등장": "기간 안에서 사라졌다가 다시 나타난 등록",
    "변경 후 원복": "바뀌었다가 기간 안에 원래 값으로 돌아온 등록 (순변경 없음, 이벤트는 '전체 이벤트' 시트)",
    "표기 변경만": "띄어쓰기·문장부호 등 표기만 달라진 등록",
}


def _period_banner(period) -> str:
    text = (f"기간 리포트 {period.start} ~ {period.end} — 정상 반영 {period.accepted_days}일 · 수집 실패 "
            f"{period.rejected_days}일 · 이벤트 {len(period.events):,}건 · 순변경 등록 {len(period.net):,}건")
    if period.first_base:
        text += f" (첫 비교 기준 {period.first_base})"
    return text + (f" · ⚠ 경고: {'; '.join(period.warnings)}" if period.warnings else "")


def build_period_workbook(period) -> Workbook:
    """The period review workbook in memory (see report.model.PeriodReport)."""
    from dmf_assets.report.model import NET_LABEL_KO

    wb = Workbook()
    wb.remove(wb.active)
    st.register_styles(wb)
    banner = _period_banner(period)
    status = "rejected" if period.accepted_days == 0 else "accepted"
    header = f"DMF 기간 리포트 {period.start}~{period.end}"
    by_type: dict[str, int] = {}
    for n in period.net:
        by_type[n.net_type] = by_type.get(n.net_type, 0) + 1

    # 요약
    widths = _SUMMARY_WIDTHS
    ws = frame_sheet(wb, SHEET_SUMMARY, banner, status, widths, f"DMF 기간 리포트 · {period.start} ~ {period.end}",
                     "주간·월간 검토용: 기간의 모든 이벤트, 등록별 순변경, 검토자·검토일·의견 열 (감사 추적용, 비워 둠)",
                     print_header=(header, ATTRIBUTION), tab=True)
    r = 4
    _put_text(ws, r + 1, 1, "기간 개요", st.SECTION)
    r += 1
    facts = [
        ("기간", f"{period.start} ~ {period.end} ({(period.end - period.start).days + 1}일)"),
        ("정상 반영일 / 수집 실패일", f"{period.accepted_days}일 / {period.rejected_days}일"),
        ("첫 비교 기준일", _d(period.first_base)),
        ("이벤트 (표기 변경 포함)", f"{len(period.events):,}건"),
        ("순변경 등록", ", ".join(f"{NET_LABEL_KO[t]} {c:,}" for t, c in sorted(by_type.items())) or "없음"),
        ("자사 제품 해당 등록", f"{sum(1 for n in period.net if n.product_hits):,}건" if period.products else "제품 목록 없음"),
        ("생성 시각 (KST)", _fmt_dt(period.generated_at)),
    ]
    for name, value in facts:
        r += 1
        _put_text(ws, r, 1, name, st.LABEL)
        _put_text(ws, r, 2, value, st.TEXT_WRAP)
        ws.merge_cells(start_row=r, start_column=2, end_row=r, end_column=7)
    sentences, total = summary_sentences(period.events)
    r += 2
    _put_text(ws, r, 1, f"주요 변경 (실질 변경 이벤트 {total:,}건 중)", st.SECTION)
    for x in sentences:
        r += 1
        cell = _put_text(ws, r, 1, SEVERITY_LABEL_KO.get(x.severity, x.severity) + (" · 자사" if x.products else ""))
        cell.fill, cell.font = st.severity_fill(x.severity), st.severity_font(x.severity)
        _put_text(ws, r, 2, x.text, st.TEXT_WRAP)
        ws.merge_cells(start_row=r, start_column=2, end_row=r, end_column=7)
        _fit_row_height(ws, r, _text_lines(x.text, sum(widths[1:])))
    if not sentences:
        r += 1
        _put_text(ws, r, 1, "실질 변경 없음", st.NOTE)
    r += 2
    _put_text(ws, r, 1, "일별 처리", st.SECTION)
    day_cols = (Col("day", "날짜", 28, "date"), Col("status", "상태", 14), Col("registry_size", "등록 현황", 24, "int"),
                Col("new", "신규", 16, "int"), Col("changed", "변경", 18, "int"), Col("withdrawn", "취하", 14, "int"),
                Col("reason", "표기 변경 / 실패 사유", 40, "wrap"))
    day_rows = [{
        "day": d.day, "status": DayStatus(d.status).label_ko if d.status in DayStatus._value2member_map_ else d.status,
        "registry_size": d.registry_size,
        "new": d.new if d.status == "accepted" else None, "changed": d.changed if d.status == "accepted" else None,
        "withdrawn": d.withdrawn if d.status == "accepted" else None,
        "reason": period.reasons.get(d.day) or (f"표기 변경 {d.cosmetic}" if d.status == "accepted" else None),
        "_rejected": d.status == "rejected",
    } for d in period.days]

    def day_hook(ws: Worksheet, row_no: int, row: dict) -> None:
        if row["_rejected"]:
            cell = ws.cell(row=row_no, column=2)
            cell.fill, cell.font = st.verdict_style("fail")

    _write_table(ws, r + 1, day_cols, day_rows, row_hook=day_hook, set_widths=False)
    ws.freeze_panes = "A4"
    ws.print_title_rows = "1:3"

    net_rows = [{
        "severity": SEVERITY_LABEL_KO.get(n.severity, n.severity), "net_type": NET_LABEL_KO[n.net_type],
        "permit_no": n.permit_no, "ingredient": n.ingredient, "applicant": n.applicant,
        "manufacturer": n.manufacturer, "countries": n.countries,
        "change_summary": "\n".join(change_lines(n)) or None, "n_events": n.n_events,
        "event_days": ", ".join(d.isoformat() for d in n.event_days), "product_hits": "\n".join(n.product_hits) or None,
        "watch": "예" if n.watchlist_hit else None, "dmf_key": n.dmf_key, "reviewer": "", "reviewed_on": "", "comment": "",
        "_severity_code": n.severity,
    } for n in period.net]
    event_rows = []
    for e in sorted(period.events, key=lambda e: (e.day, -SEVERITY_RANK.get(e.severity, -1), e.dmf_key)):
        row = _event_row(e, SOURCE_BASE_FALLBACK)
        row.update(day=e.day, base_day=e.base_day, reviewer="", reviewed_on="", comment="")
        event_rows.append(row)
    field_rows = []
    for e in period.events:
        for c in e.changes:
            field_rows.append({
                "day": e.day, "severity": SEVERITY_LABEL_KO.get(c.severity, c.severity),
                "kind": "표기 변경" if c.is_cosmetic else "실질 변경", "permit_no": c.permit_no,
                "ingredient": c.ingredient, "applicant": c.applicant,
                "field": _site_kind(c) if c.field == SITES_FIELD else _field_label(c.field),
                "before": c.before, "after": c.after, "dmf_key": c.dmf_key,
                "_severity_code": "COSMETIC" if c.is_cosmetic else c.severity,
            })
    sheets = [
        TableSheet("순변경", f"등록별 순변경 · {period.start} ~ {period.end}",
                   "등록마다 1행: 기간 처음의 값 → 마지막 값 (두 번 바뀌었으면 처음 전 → 마지막 후). 자사 제품·관심목록 우선, 심각도 순. "
                   "검토자·검토일·의견은 검토 기록용으로 비워 두었습니다.", NET_COLUMNS, net_rows, severity_col=1, print_cols=len(NET_COLUMNS)),
        TableSheet("전체 이벤트", f"전체 이벤트 · {period.start} ~ {period.end}",
                   "기간의 모든 이벤트 (표기 변경 포함), 관측일 순.", (*RECENT_COLUMNS, *REVIEW_COLUMNS), event_rows, severity_col=3),
        TableSheet("필드 변경", f"필드 변경 · {period.start} ~ {period.end}", "바뀐 항목별 1행 (관측일 순).",
                   PERIOD_FIELD_COLUMNS, field_rows, severity_col=2),
    ]
    for sheet in sheets:
        add_table_sheet(wb, sheet, banner, status, header)
    meta = [{"group": "출처", "item": "출처 표시", "value": ATTRIBUTION}]
    meta += [{"group": "순변경", "item": k, "value": v} for k, v in NET_DEFINITIONS.items()]
    meta += [{"group": "제품 목록", "item": f"제품 {i}", "value": p} for i, p in enumerate(period.products, 1)]
    meta += [{"group": "참고", "item": f"참고 {i}", "value": t} for i, t in enumerate(NOTES, 1)]
    add_table_sheet(wb, TableSheet(SHEET_META, "메타 정보 · 정의", ATTRIBUTION,
                                   (Col("group", "구분", 14), Col("item", "항목", 30, "wrap"), Col("value", "내용", 100, "wrap")),
                                   meta), banner, status, header)
    wb.active = 0
    wb.properties.title = header
    wb.properties.creator = "DMF Watch"
    wb.properties.description = ATTRIBUTION
    return wb


def write_period_workbook(period, path: Path) -> Path:
    path = Path(path)
    _ensure_dir(path.parent)
    wb = build_period_workbook(period)
    _atomic_write(path, lambda tmp: xlsx_body.save(wb, tmp))
    return path


# --- reading back --------------------------------------------------------------------------------

_SEVERITY_BY_LABEL = {v: k for k, v in SEVERITY_LABEL_KO.items()}
_EVENT_BY_LABEL = {v: k for k, v in EVENT_LABEL_KO.items()}
_FIELD_BY_LABEL = {v: k for k, v in FIELD_LABEL_KO.items()}
_FLAG_BY_LABEL = {v: k for k, v in FLAG_LABELS.items()}


def _read_value(cell) -> Any:
    value = cell.value
    if isinstance(value, str):
        return ooxml_unescape(value)
    if isinstance(value, datetime):
        return value.date().isoformat()
    if isinstance(value, date):
        return value.isoformat()
    return value


def read_events_sheet(path: Path) -> list[dict]:
    """The 변경 이벤트 table as dicts keyed like `EventRow` fields (codes, not Korean labels).

    Keys: every `EVENT_COLUMNS` key; `severity`/`event_type` as codes, `changed_fields` and
    `watch_reasons` as tuples, the five flags as booleans, `issue_date` as ISO text, `link` as the
    hyperlink URL. Empty cells read as None. Raises RejectedDayError for a rejected day's workbook.
    """
    wb = load_workbook(path)
    try:
        ws = wb[SHEET_EVENTS]
        header_row = next((r for r in range(1, 11) if ws.cell(row=r, column=1).value == EVENT_COLUMNS[0].header), None)
        if header_row is None:
            note = " ".join(str(ws.cell(row=r, column=1).value or "") for r in range(1, 5))
            if NOT_REFLECTED in note:
                raise RejectedDayError(f"{path}: 수집 실패일의 리포트입니다 — 변경 이벤트 표가 없습니다")
            raise ValueError(f"{path}: '{SHEET_EVENTS}' 시트에서 표 머리글을 찾을 수 없습니다")
        by_header = {ws.cell(row=header_row, column=j).value: j for j in range(1, ws.max_column + 1)}
        positions = {col.key: by_header[col.header] for col in EVENT_COLUMNS}
        out: list[dict] = []
        for r in range(header_row + 1, ws.max_row + 1):
            cells = {key: ws.cell(row=r, column=j) for key, j in positions.items()}
            values = {key: _read_value(c) for key, c in cells.items()}
            if all(v is None for v in values.values()):
                break
            flags = tuple(f for f in (values["flags"] or "").split(", ") if f)
            link = cells["link"].hyperlink
            values.update(
                severity=_SEVERITY_BY_LABEL.get(values["severity"], values["severity"]),
                event_type=_EVENT_BY_LABEL.get(values["event_type"], values["event_type"]),
                changed_fields=tuple(
                    _FIELD_BY_LABEL.get(f, f) for f in (values["changed_fields"] or "").split(", ") if f
                ),
                watch_reasons=tuple((values["watch_reasons"] or "").split("\n")) if values["watch_reasons"] else (),
                link=link.target if link is not None else None,
                **{attr: label in flags for label, attr in _FLAG_BY_LABEL.items()},
            )
            out.append(values)
        return out
    finally:
        wb.close()
