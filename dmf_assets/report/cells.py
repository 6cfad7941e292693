"""How values become cells: the text safety rules, the typed cell writers, tables and row heights.

Text from the source is always stored as a literal string (never a formula, error or number), with
XML-illegal characters replaced by U+FFFD and Excel's 32,767-character cell limit respected (marked
"…(잘림)"). A long hook-free table body is rendered straight as sheet XML (`xlsx_body`) instead of cell
by cell; both paths read back the same.
"""

from __future__ import annotations

import copy
import math
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from openpyxl.cell.cell import Cell
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.hyperlink import Hyperlink
from openpyxl.worksheet.worksheet import Worksheet

from dmf_assets.clock import KST  # the one declaration of Korean time
from dmf_assets.report import styles as st
from dmf_assets.report import xlsx_body

EXCEL_MAX_CHARS = 32_767
TRUNCATION_MARK = "…(잘림)"
#: First characters that make Excel/LibreOffice (or a CSV re-import) treat text as a formula.
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


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


def put_text(ws: Worksheet, row: int, col: int, value: Any, style: str = st.TEXT):
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


def _put_number(ws: Worksheet, row: int, col: int, value: float | None, style: str, kind: type):
    cell = ws.cell(row=row, column=col)
    _set_style(cell, style)
    if value is not None:
        cell.value = kind(value)
    return cell


def put_int(ws: Worksheet, row: int, col: int, value: int | None, style: str = st.INT):
    return _put_number(ws, row, col, value, style, int)


def _put_float(ws: Worksheet, row: int, col: int, value: float | None, style: str = st.PCT):
    return _put_number(ws, row, col, value, style, float)


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


def put_date(ws: Worksheet, row: int, col: int, value: Any):
    day = _as_date(value)
    # Excel's date system starts in 1900 (and 1900-02-29 is fictitious): older dates stay text.
    if day is None or day < date(1900, 3, 1):
        return put_text(ws, row, col, value, st.DATE)
    cell = ws.cell(row=row, column=col)
    _set_style(cell, st.DATE)
    cell.value = day
    return cell


def put_datetime(ws: Worksheet, row: int, col: int, value: datetime | None):
    if value is None:
        return put_text(ws, row, col, None)
    if value.tzinfo is not None:  # Excel has no time zones: show Korean local time
        value = value.astimezone(KST).replace(tzinfo=None)
    cell = ws.cell(row=row, column=col)
    _set_style(cell, st.DATETIME)
    cell.value = value
    return cell


def _put_link(ws: Worksheet, row: int, col: int, value: tuple[str, str] | None):
    if not value:
        return put_text(ws, row, col, None)
    text, url = value
    cell = put_text(ws, row, col, text, st.LINK)
    cell.hyperlink = url
    return cell


def _put_any(ws: Worksheet, row: int, col: int, kind: str, value: Any):
    if kind == "text":
        return put_text(ws, row, col, value)
    if kind == "wrap":
        return put_text(ws, row, col, value, st.TEXT_WRAP)
    if kind == "int":
        return put_int(ws, row, col, value)
    if kind == "pct":
        return _put_float(ws, row, col, value)
    if kind == "date":
        return put_date(ws, row, col, value)
    if kind == "datetime":
        return put_datetime(ws, row, col, value)
    if kind == "link":
        return _put_link(ws, row, col, value)
    if kind == "sheetlink":  # (text, "'Sheet'!A5"): a link inside the workbook
        if not value:
            return put_text(ws, row, col, None)
        cell = put_text(ws, row, col, value[0], st.LINK)
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
        lines = max((text_lines(str(row.get(key) or ""), width) for key, width in wrapped), default=1)
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


def text_lines(text: str, width: float) -> int:
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


def fit_row_height(ws: Worksheet, row: int, lines: int, line_pt: float = _LINE_PT) -> None:
    height = _row_height(lines, line_pt)
    if height is not None:
        ws.row_dimensions[row].height = height


def write_table(
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
    fit_row_height(ws, top, max(text_lines(c.header, c.width) for c in cols))
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
            lines = max(text_lines(str(row.get(key) or ""), width) for key, width in wrapped)
            fit_row_height(ws, r, lines)
        if row_hook is not None:
            row_hook(ws, r, row)
    if autofilter:
        ws.auto_filter.ref = f"A{top}:{get_column_letter(len(cols))}{max(r, top)}"
    return r


def column_widths(cols: Sequence[Col]) -> tuple[float, ...]:
    return tuple(col.width for col in cols)


# --- values as display text ----------------------------------------------------------------------


def day_text(day: date | None) -> str:
    return day.isoformat() if day else "—"


def datetime_text(value: datetime | None) -> str:
    if value is None:
        return "—"
    if value.tzinfo is not None:
        value = value.astimezone(KST)
    return value.strftime("%Y-%m-%d %H:%M:%S")
