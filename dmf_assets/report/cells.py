"""How values become cells: the text safety rules (`store_text`: text from the source is always a literal string,
never a formula, error or number), the typed cell writers, tables and row heights. A long hook-free table body is
rendered straight as sheet XML (`xlsx_body`), column by column as a polars frame (the 9k-row 전체현황), instead of
cell by cell; both paths read back the same.
"""

from __future__ import annotations

import copy
import math
import re
import unicodedata
from collections.abc import Callable, Sequence
from datetime import date, datetime
from functools import lru_cache
from typing import Any, NamedTuple

import polars as pl
from openpyxl.cell.cell import Cell, MergedCell
from openpyxl.styles import Border
from openpyxl.styles.cell_style import StyleArray
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.hyperlink import Hyperlink
from openpyxl.worksheet.merge import MergedCellRange
from openpyxl.worksheet.worksheet import Worksheet

from dmf_assets.clock import KST  # the one declaration of Korean time
from dmf_assets.report import styles as st
from dmf_assets.report import xlsx_body
from dmf_assets.report.columns import FORMULA_TRIGGERS, Col

EXCEL_MAX_CHARS = 32_767
TRUNCATION_MARK = "…(잘림)"


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


# --- cell writers --------------------------------------------------------------------------------


def _style_array(ws: Worksheet, name: str) -> StyleArray:
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


class CellValue(NamedTuple):
    """What one cell holds: its named style, its value (None: an empty, styled cell), whether the value
    is text (already `store_text`-safe), and a link (external `url`, or an internal `location`)."""

    style: str
    value: Any
    is_text: bool = True
    url: str | None = None
    location: str | None = None
    display: str | None = None


#: the style a column kind gets when the caller names none
_KIND_STYLE = {
    "text": st.TEXT,
    "wrap": st.TEXT_WRAP,
    "int": st.INT,
    "pct": st.PCT,
    "date": st.DATE,
    "datetime": st.DATETIME,
    "link": st.LINK,
    "sheetlink": st.LINK,
}


def cell_value(kind: str, value: Any, style: str | None = None) -> CellValue:
    """The one set of rules for a value of column kind `kind`; both writers follow it — cell objects
    (`put_*`) and the streamed long-table XML (`_stream_cell`)."""
    if kind not in _KIND_STYLE:
        raise ValueError(f"unknown column kind {kind!r}")
    style = style or _KIND_STYLE[kind]
    if kind in ("text", "wrap"):
        return CellValue(style, store_text(value))
    if kind in ("int", "pct"):
        return CellValue(style, None if value is None else (int(value) if kind == "int" else float(value)), False)
    if kind == "date":
        day = _as_date(value)
        # Excel's date system starts in 1900 (and 1900-02-29 is fictitious): older dates stay text.
        if day is None or day < date(1900, 3, 1):
            return CellValue(style, store_text(value))
        return CellValue(style, day, False)
    if kind == "datetime":
        if value is None:
            return CellValue(st.TEXT, None)
        if value.tzinfo is not None:  # Excel has no time zones: show Korean local time
            value = value.astimezone(KST).replace(tzinfo=None)
        return CellValue(style, value, False)
    if not value:  # link / sheetlink: (text, URL) or (text, "'Sheet'!A5")
        return CellValue(st.TEXT, None)
    text, target = value
    if kind == "link":
        return CellValue(style, store_text(text), url=target)
    return CellValue(style, store_text(text), location=target, display=text)


def put_cell(ws: Worksheet, row: int, col: int, c: CellValue) -> Cell:
    cell = ws.cell(row=row, column=col)
    cell._style = copy.copy(_style_array(ws, c.style))  # `cell.style = c.style`, but fast
    if c.value is not None and c.is_text:
        # Set the stored value directly: store_text already replaced what XML forbids, so openpyxl's own
        # per-cell check (a regex scan, ~1 s over the 9k-row ledger) is redundant; and openpyxl would infer
        # "=…" as a formula and "#N/A" as an error — this is always a literal string.
        cell._value = c.value
        cell.data_type = "s"
        if c.value.startswith(FORMULA_TRIGGERS):
            cell.quotePrefix = True  # Excel keeps it text even after the user edits the cell
    elif c.value is not None:
        cell.value = c.value
    if c.url:
        cell.hyperlink = c.url
    elif c.location:
        cell.hyperlink = Hyperlink(ref=cell.coordinate, location=c.location, display=c.display)
    return cell


def put_text(ws: Worksheet, row: int, col: int, value: Any, style: str = st.TEXT) -> Cell:
    return put_cell(ws, row, col, cell_value("text", value, style))


def put_int(ws: Worksheet, row: int, col: int, value: int | None) -> Cell:
    return put_cell(ws, row, col, cell_value("int", value))


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


def put_date(ws: Worksheet, row: int, col: int, value: Any) -> Cell:
    return put_cell(ws, row, col, cell_value("date", value))


def put_datetime(ws: Worksheet, row: int, col: int, value: datetime | None) -> Cell:
    return put_cell(ws, row, col, cell_value("datetime", value))


# --- merged cells --------------------------------------------------------------------------------


def merge_cells(ws: Worksheet, row: int, first_col: int, last_col: int) -> None:
    """`ws.merge_cells(...)` over one row, with the same cells, borders and protection as a result.

    openpyxl gives every edge cell of a merge the top-left cell's border side by side (`cell.border +=
    Border(top=…)`) and every cell its protection: each is a new style object hashed into the
    workbook's style tables, ≈0.2 ms a cell — a third of the daily workbook's time over its ≈60
    merges. The result is a function of the style ids involved, so it is computed by openpyxl once
    per (side, top-left border, cell border) in this workbook and then reused as an id."""
    cr = MergedCellRange(ws, f"{get_column_letter(first_col)}{row}:{get_column_letter(last_col)}{row}")
    ws.merged_cells.add(cr)
    cells = ws._cells
    for col in range(first_col + 1, last_col + 1):
        cells[row, col] = MergedCell(ws, row, col)
    start = cr.start_cell
    memo: dict[tuple, int | None] = ws.parent.__dict__.setdefault("_dmf_merge_ids", {})
    # MergedCellRange.format(), side by side in its order (top, left, right, bottom)
    for side_name, edge in (("top", cr.top), ("left", cr.left), ("right", cr.right), ("bottom", cr.bottom)):
        start_border = start._style.borderId if start._style else 0
        for coord in edge:
            cell = cells[coord]
            key = (side_name, start_border, cell._style.borderId if cell._style else 0)
            if key not in memo:
                side = getattr(start.border, side_name)
                if side and side.style is None:  # openpyxl skips a side without a line
                    memo[key] = None
                else:
                    cell.border += Border(**{side_name: side})
                    memo[key] = cell._style.borderId
            border_id = memo[key]
            if border_id is None:
                break
            _style_ids(cell).borderId = border_id
    protection_key = ("protection", _style_ids(start).protectionId)
    if protection_key not in memo:
        start.protection = copy.copy(start.protection)
        memo[protection_key] = start._style.protectionId
    for col in range(first_col, last_col + 1):
        _style_ids(cells[row, col]).protectionId = memo[protection_key]


def _style_ids(cell: Cell | MergedCell) -> StyleArray:
    """A cell's style ids, created as openpyxl's style descriptors create them on first use."""
    if not cell._style:
        cell._style = StyleArray()
    return cell._style


# --- long table bodies ---------------------------------------------------------------------------

#: a hook-free table body of at least this many rows is rendered as XML (`xlsx_body`), not cell by cell
STREAM_MIN_ROWS = 200
_STREAMED_KINDS = frozenset({"text", "wrap", "int", "pct", "date", "datetime", "sheetlink"})


def _stream_cell(w: xlsx_body.BodyWriter, r: int, j: int, kind: str, value: Any) -> str:
    """The cell `put_cell` would have written, as XML."""
    c = cell_value(kind, value)
    if c.url:
        raise ValueError(f"column kind {kind!r} cannot be streamed")  # external links need relationships
    if c.location:
        assert c.display is not None  # cell_value gives a sheet link both
        w.link(r, j, c.location, c.display)
    if c.is_text or c.value is None:
        return w.text(r, j, c.value, c.style, c.value is not None and c.value.startswith(FORMULA_TRIGGERS))
    if isinstance(c.value, date):  # datetime too
        return w.day(r, j, c.value, c.style)
    return w.number(r, j, c.value, c.style)


def _tail(xml: str) -> str:
    """A cell's XML after its reference (` s="3" t="inlineStr">…</c>` of `<c r="B12" s="3" …`)."""
    return xml[xml.index('"', 6) + 1 :]


#: text a cell stores as it is, apart from the XML escapes of & < > (`store_text` would change nothing):
#: anything else (OOXML look-alikes, CR, XML-illegal characters, an edge space, a possible truncation, an
#: empty text) is rendered by `_stream_cell`, the one rule, once per distinct value
_NEEDS_THE_RULE = r"_x|\r|[\x00-\x08\x0B\x0C\x0E-\x1F\x{FFFE}\x{FFFF}]|^\s|\s$"
_PLAIN_MAX_CHARS = EXCEL_MAX_CHARS // 2  # ≤ 2 UTF-16 units a character: never truncated


def _rendered_by_rule(w: xlsx_body.BodyWriter, j: int, kind: str, values: pl.Series) -> pl.Series:
    """`values` as the XML after each cell's reference, rendered by `_stream_cell` once per distinct value."""

    def tail(value: Any) -> str:
        return _tail(_stream_cell(w, 1, j, kind, value))

    if values.dtype.is_nested() or values.dtype == pl.Object:  # unhashable values: each on its own
        return pl.Series([tail(v) for v in values.to_list()], dtype=pl.Utf8)
    mapping = {value: tail(value) for value in values.unique().to_list()}
    null_tail = mapping.pop(None, None)
    if not mapping:
        return pl.Series([null_tail] * len(values), dtype=pl.Utf8)
    mapped = values.replace_strict(list(mapping), list(mapping.values()), default=None, return_dtype=pl.Utf8)
    return mapped if null_tail is None else mapped.fill_null(null_tail)


class _ColumnTails(NamedTuple):
    """One column's cells as the XML after their reference, as an expression over the table's columns
    (`tail`) and the columns it reads beyond the values (`extra`: names → series)."""

    tail: pl.Expr
    extra: dict[str, pl.Series]


_ESCAPED_CHARS, _ESCAPES = ["&", "<", ">"], ["&amp;", "&lt;", "&gt;"]


def _plain_or_rule(
    w: xlsx_body.BodyWriter, j: int, kind: str, values: pl.Series, plain: pl.Series, fast: pl.Expr
) -> _ColumnTails:
    """`fast` where `plain`; every other value rendered by the rule (`_stream_cell`) once per distinct value."""
    if plain.all():
        return _ColumnTails(fast, {})
    ruled = f"_ruled{j}"
    rule = pl.Series(ruled, [None] * len(values), dtype=pl.Utf8).scatter(
        (~plain).arg_true(), _rendered_by_rule(w, j, kind, values.filter(~plain))
    )
    return _ColumnTails(pl.when(pl.lit(plain)).then(fast).otherwise(pl.col(ruled)), {ruled: rule})


def _column_tail_expr(w: xlsx_body.BodyWriter, j: int, kind: str, values: pl.Series, name: str) -> _ColumnTails:
    """Each cell of column `name` (holding `values`) as the XML after its reference (` s="3" t="inlineStr">…</c>`).
    Styles are registered in the order the cell-by-cell rule would register them."""
    value = pl.col(name)
    if kind == "date" and values.dtype == pl.Utf8:
        # "YYYY-MM-DD" that is a real day from 1900-03-01 on is a date cell (its serial number); anything else
        # goes by the rule (kept as text)
        parsed = value.str.to_date("%Y-%m-%d", strict=False)
        plain = (
            values.to_frame(name)
            .select((value.str.contains(r"^\d{4}-\d{2}-\d{2}$") & (parsed >= date(1900, 3, 1))).fill_null(False))
            .to_series()
        )
        serial = (parsed.cast(pl.Int32) + (date(1970, 1, 1) - _EXCEL_DAY_ZERO).days).cast(pl.Utf8)  # days since 1970
        sid = w.style_id(_KIND_STYLE["date"])
        fast = pl.concat_str([pl.lit(f' s="{sid}" t="n"><v>'), serial, pl.lit("</v></c>")])
        return _plain_or_rule(w, j, "date", values, plain, fast)
    if kind not in ("text", "wrap") or values.dtype != pl.Utf8:
        tails = f"_tails{j}"
        return _ColumnTails(pl.col(tails), {tails: _rendered_by_rule(w, j, kind, values).alias(tails)})
    # plain text (almost all of it): the same XML built column-wise
    masks = values.to_frame(name).select(
        plain=(value.str.len_chars().is_between(1, _PLAIN_MAX_CHARS) & ~value.str.contains(_NEEDS_THE_RULE)).fill_null(
            False
        ),
        quoted=value.str.contains(r"^[=+\-@]"),  # formula triggers: \t and \r start with a space or are odd
    )
    plain, quoted = masks.get_column("plain"), masks.get_column("quoted")
    style = _KIND_STYLE[kind]
    style_attr = pl.lit(f' s="{w.style_id(style)}"')
    if (quoted & plain).any():  # the quote-prefixed style is registered only when a cell needs it
        style_attr = pl.when(pl.lit(quoted)).then(pl.lit(f' s="{w.style_id(style, True)}"')).otherwise(style_attr)
    escaped = value.str.replace_many(_ESCAPED_CHARS, _ESCAPES)
    fast = pl.concat_str([style_attr, pl.lit(' t="inlineStr"><is><t>'), escaped, pl.lit("</t></is></c>")])
    return _plain_or_rule(w, j, kind, values, plain, fast)


_EXCEL_DAY_ZERO = date(1899, 12, 30)  # serial 0 of Excel's 1900 date system, valid from 1900-03-01 on


def _line_counts(values: pl.Series, width: float) -> pl.Series:
    """`text_lines` of each value (as `str(value or "")`), measured once per distinct text."""
    text = values.cast(pl.Utf8).fill_null("")
    distinct = text.unique().to_list()
    return text.replace_strict(distinct, [text_lines(t, width) for t in distinct], return_dtype=pl.Int64)


def _stream_frame(
    ws: Worksheet, top: int, cols: Sequence[Col], frame: pl.DataFrame, *, sparse: bool, wrapped: list[tuple[str, float]]
) -> int:
    """A long table body as the sheet XML the cell-by-cell writer would make, built column by column as one
    expression per column and then every row in one select (polars' per-call cost, not the strings, was most of
    the 9k-row 전체현황). A distinct value of a column is rendered once (by `_stream_cell`, the one rule): a
    registry repeats its companies, countries and dates thousands of times."""
    n, first = frame.height, top + 1
    if n == 0:
        return top
    w = xlsx_body.BodyWriter(ws, first, len(cols), _style_array)
    table: dict[str, pl.Series] = {"_ref": pl.int_range(first, first + n, eager=True).cast(pl.Utf8).alias("_ref")}
    ref = pl.col("_ref")
    cells: list[pl.Expr] = []
    for j, col in enumerate(cols, 1):
        name = f"_value{j}"
        values = frame.get_column(col.key) if col.key in frame.columns else pl.Series([None] * n)
        table[name] = values.alias(name)
        if col.kind == "sheetlink":  # an internal link differs per row (its target): the rule, row by row
            # sparse: only rows with a link have a cell
            rows = values.is_not_null().arg_true().to_list() if sparse else list(range(n))
            links = values.gather(rows).to_list() if sparse else values.to_list()
            xml = pl.Series([""] * n, dtype=pl.Utf8)
            rendered = [
                "" if sparse and v == "" else _stream_cell(w, first + i, j, col.kind, v)
                for i, v in zip(rows, links, strict=True)
            ]
            if rendered:
                xml = xml.scatter(rows, rendered)
            table[f"_xml{j}"] = xml.alias(f"_xml{j}")
            cells.append(pl.col(f"_xml{j}"))
            continue
        tails = _column_tail_expr(w, j, col.kind, values, name)
        table.update(tails.extra)
        cell = pl.concat_str([pl.lit(f'<c r="{get_column_letter(j)}'), ref, pl.lit('"'), tails.tail])
        if sparse:
            empty = pl.col(name).is_null()
            if values.dtype == pl.Utf8:
                empty = empty | (pl.col(name) == "")
            cell = pl.when(empty).then(pl.lit("")).otherwise(cell)
        cells.append(cell)
    height: pl.Expr = pl.lit("")
    if wrapped:
        lines = pl.select(
            pl.max_horizontal([pl.lit(_line_counts(frame.get_column(key), width)) for key, width in wrapped])
        ).to_series()
        distinct = lines.unique().to_list()
        attr = [xlsx_body.height_attr(_row_height(k)) for k in distinct]
        table["_height"] = lines.replace_strict(distinct, attr, return_dtype=pl.Utf8).alias("_height")
        height = pl.col("_height")
    rows_xml = (
        pl.DataFrame(list(table.values()))
        .select(pl.concat_str([pl.lit('<row r="'), ref, pl.lit('"'), height, pl.lit(">"), *cells, pl.lit("</row>")]))
        .to_series()
    )
    w.add_rows(first, rows_xml.to_list())
    return first + n - 1


# --- tables --------------------------------------------------------------------------------------


RowHook = Callable[[Worksheet, int, dict], None]


_LINE_PT = 13.5  # one line of 10-pt 맑은 고딕
_MAX_ROW_PT = 409.0  # Excel's maximum row height


def _display_width(text: str) -> int:
    if text.isascii():
        return len(text)
    # Hangul/CJK glyphs are ~1.85 '0'-widths in 맑은 고딕 10 pt
    return math.ceil(sum(1.85 if unicodedata.east_asian_width(ch) in "WF" else 1.0 for ch in text))


@lru_cache(maxsize=32_768)  # a registry's site lists repeat from day to day: a backfill measures each once
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


def _row_height(lines: int) -> float | None:
    # Neither LibreOffice nor every Excel build re-measures wrapped rows of a generated file, so
    # set the height; otherwise multi-line cells overprint the rows below.
    return min(_MAX_ROW_PT, lines * _LINE_PT + 3) if lines > 1 else None


def fit_row_height(ws: Worksheet, row: int, lines: int) -> None:
    height = _row_height(lines)
    if height is not None:
        ws.row_dimensions[row].height = height


def write_table(
    ws: Worksheet,
    top: int,
    cols: Sequence[Col],
    rows: Sequence[dict] | pl.DataFrame,
    *,
    row_hook: RowHook | None = None,
    set_widths: bool = True,
    sparse: bool = False,
) -> int:
    """Header at row `top`, data below; returns the last row written (the header if no data).
    `rows`: dicts, or a frame with a column per `Col.key` (a long one is rendered column by column).

    `sparse`: empty values get no cell at all (the 9k-row ledger: a third fewer cells to write)."""
    for j, col in enumerate(cols, 1):
        cell = ws.cell(row=top, column=j, value=col.header)
        cell.style = st.HEADER
        if set_widths:
            ws.column_dimensions[get_column_letter(j)].width = col.width
        if col.hidden:
            ws.column_dimensions[get_column_letter(j)].hidden = True
    fit_row_height(ws, top, max(text_lines(c.header, c.width) for c in cols))
    wrapped = [(col.key, col.width) for col in cols if col.kind == "wrap"]
    r = top
    if row_hook is None and len(rows) >= STREAM_MIN_ROWS and all(c.kind in _STREAMED_KINDS for c in cols):
        if not isinstance(rows, pl.DataFrame):  # rows of dicts: their columns
            rows = pl.DataFrame({c.key: [row.get(c.key) for row in rows] for c in cols}, strict=False)
        r = _stream_frame(ws, top, cols, rows, sparse=sparse, wrapped=wrapped)
        rows = ()
    elif isinstance(rows, pl.DataFrame):
        rows = rows.to_dicts()
    for r, row in enumerate(rows, top + 1):
        for j, col in enumerate(cols, 1):
            value = row.get(col.key)
            if sparse and (value is None or value == ""):
                continue
            put_cell(ws, r, j, cell_value(col.kind, value))
        if wrapped:
            lines = max(text_lines(str(row.get(key) or ""), width) for key, width in wrapped)
            fit_row_height(ws, r, lines)
        if row_hook is not None:
            row_hook(ws, r, row)
    ws.auto_filter.ref = f"A{top}:{get_column_letter(len(cols))}{max(r, top)}"
    return r


# --- values as display text ----------------------------------------------------------------------


def day_text(day: date | None) -> str:
    return day.isoformat() if day else "—"
