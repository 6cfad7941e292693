"""The one way a sheet is written, for every workbook — the daily one, the period report, `dmf history` / `dmf asof`
and the web page's exports. A workbook is a list of `TableSheet` specs (name, title, note, columns, rows, colours)
that `add_table_sheet` writes in the house look: status banner, title, note, column widths, print setup (running
header and footer with the attribution), the table under frozen header rows. The two pages that are not one table
(요약 of the daily and of the period workbook) are written on the same frame, section by section (`Page`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import date, datetime
from pathlib import Path

import polars as pl
from openpyxl import Workbook
from openpyxl.cell.cell import Cell
from openpyxl.styles import Alignment, Font, PatternFill
from openpyxl.utils import get_column_letter
from openpyxl.utils.cell import coordinate_from_string
from openpyxl.worksheet.worksheet import Worksheet

from dmf_assets.domain.model import SEVERITY_LABEL_KO, DayStatus
from dmf_assets.report import styles as st
from dmf_assets.report import xlsx_body
from dmf_assets.report.cells import (
    RowHook,
    fit_row_height,
    merge_cells,
    put_date,
    put_datetime,
    put_text,
    text_lines,
    write_table,
)
from dmf_assets.report.columns import Col
from dmf_assets.report.model import SHEET_SUMMARY
from dmf_assets.report.output import atomic_write, ensure_dir
from dmf_assets.report.sentences import Sentence

ATTRIBUTION = "출처: 식품의약품안전처 원료의약품등록(DMF)현황, 공공데이터포털 오픈API"
#: the layout of a sheet that deliberately has no table (a rejected day's changes were not applied)
_NOTICE_WIDTHS = (18.0,) * 8


@dataclass(frozen=True)
class Look:
    """What every sheet of one workbook shares: the banner (the day's or the period's verdict, in its status
    colour), the printed pages' running header — 「<header_left> — <sheet>」 on the left, `header_right` on the
    right — and whether the sheet tabs take the status colour."""

    banner: str
    status: DayStatus
    header_left: str
    header_right: str = ATTRIBUTION
    tab: bool = False


@dataclass(frozen=True)
class TableSheet:
    """One sheet of one table: `rows` are dicts (or a frame) with a value per `Col.key`; keys starting with "_"
    drive its colours (`colours`)."""

    name: str
    title: str
    note: str | None
    cols: tuple[Col, ...] = ()
    rows: Sequence[dict] | pl.DataFrame = ()
    hook: RowHook | None = None  # colours a written row (see `colours`)
    print_cols: int | None = None  # print only the first N columns (the audit columns stay on screen)
    empty: str | None = "해당 자료 없음"  # said below the header when there are no rows (None: nothing)
    freeze: str | None = None  # the first cell that scrolls (default: the row below the header)
    sparse: bool = False  # empty values get no cell at all (the 9k-row ledger)
    notice: str | None = None  # instead of the table, this sentence in red (a rejected day's unapplied changes)
    above: Callable[[Worksheet], int] | None = None  # writes above the table; returns the header row
    after: Callable[[Worksheet, int], None] | None = None  # given the header row, after a table with rows


def paint(cell: Cell, fill_font: tuple[PatternFill, Font]) -> None:
    cell.fill, cell.font = fill_font


def put_severity(ws: Worksheet, row: int, col: int, severity: str, mark: str = "") -> Cell:
    """A severity in its words and colours (`mark` after the word)."""
    cell = put_text(ws, row, col, SEVERITY_LABEL_KO.get(severity, severity) + mark)
    paint(cell, st.severity_style(severity))
    return cell


def colours(
    *, severity: int | None = None, watch: int | None = None, cosmetic: int | None = None, verdict: int | None = None
) -> RowHook:
    """A row's colours by its markers: the severity's at column `severity` (`_severity_code`), a watchlist hit in
    bold at `watch` (`_watch`), grey at `cosmetic` (`_cosmetic`), a verdict's at `verdict` (`_verdict`)."""

    def hook(ws: Worksheet, r: int, row: dict) -> None:
        if severity and row.get("_severity_code"):
            paint(ws.cell(row=r, column=severity), st.severity_style(row["_severity_code"]))
        if watch and row.get("_watch"):
            ws.cell(row=r, column=watch).font = st.severity_style("HIGH")[1]
        if cosmetic and row.get("_cosmetic"):
            paint(ws.cell(row=r, column=cosmetic), st.severity_style("COSMETIC"))
        if verdict and row.get("_verdict"):
            paint(ws.cell(row=r, column=verdict), st.verdict_style(row["_verdict"]))

    return hook


def _wide_cell(ws: Worksheet, row: int, text: str, widths: Sequence[float], look: tuple[PatternFill, Font]) -> None:
    """A coloured sentence merged over every column (the banner, a rejected day's notice), at least two lines high."""
    cell = put_text(ws, row, 1, text, st.PLAIN)
    paint(cell, look)
    cell.alignment = Alignment(wrap_text=True, vertical="center", indent=1)
    merge_cells(ws, row, 1, len(widths))
    lowest = 30.0 if row == 1 else 36.0
    ws.row_dimensions[row].height = max(lowest, text_lines(text, sum(widths) / 1.25) * 17.0 + 8)


def frame_sheet(
    wb: Workbook,
    look: Look,
    name: str,
    widths: Sequence[float],
    title: str,
    note: str | None,
) -> Worksheet:
    """The house sheet frame: banner (row 1), title (row 2), note (row 3), column widths and print setup."""
    ws = wb.create_sheet(name)
    if look.tab:
        ws.sheet_properties.tabColor = look.status.colour
    for j, width in enumerate(widths, 1):
        ws.column_dimensions[get_column_letter(j)].width = width
    _wide_cell(ws, 1, look.banner, widths, st.banner_style(look.status))
    put_text(ws, 2, 1, title, st.TITLE)
    ws.row_dimensions[2].height = 26
    if note:
        cell = put_text(ws, 3, 1, note, st.NOTE)
        cell.alignment = Alignment(wrap_text=True, vertical="top")
        merge_cells(ws, 3, 1, len(widths))
        fit_row_height(ws, 3, text_lines(note, sum(widths)))
    _print_setup(ws, f"{look.header_left} — {name}", look.header_right)
    return ws


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


def keep_in_view(ws: Worksheet, freeze: str) -> None:
    """Rows above `freeze` stay in view while scrolling and are printed on every page (and its columns to the
    left stay in view)."""
    ws.freeze_panes = freeze  # a coordinate, not ws.cell(): that would create a cell
    ws.print_title_rows = f"1:{coordinate_from_string(freeze)[1] - 1}"


def add_table_sheet(wb: Workbook, look: Look, sheet: TableSheet) -> Worksheet:
    """Write one `TableSheet` (the header on row 4, unless `sheet.above` wrote something there first)."""
    if sheet.notice is not None:
        ws = frame_sheet(wb, look, sheet.name, _NOTICE_WIDTHS, sheet.title, None)
        notice = st.verdict_style("fail", size=12)
        _wide_cell(ws, 3, sheet.notice, _NOTICE_WIDTHS, notice)
        keep_in_view(ws, "A4")
        return ws
    ws = frame_sheet(wb, look, sheet.name, [c.width for c in sheet.cols], sheet.title, sheet.note)
    header = sheet.above(ws) if sheet.above else 4
    last = write_table(ws, header, sheet.cols, sheet.rows, row_hook=sheet.hook, sparse=sheet.sparse)
    keep_in_view(ws, sheet.freeze or f"A{header + 1}")
    if sheet.print_cols:
        ws.print_area = f"A1:{get_column_letter(sheet.print_cols)}{max(last, header)}"
    if len(sheet.rows) and sheet.after:
        sheet.after(ws, header)
    elif not len(sheet.rows) and sheet.empty:
        put_text(ws, header + 1, 1, sheet.empty, st.NOTE)
    return ws


def tables_workbook(
    look: Look,
    sheets: Sequence[TableSheet],
    title: str,
    *,
    page: Callable[[Workbook], object] | None = None,
    **properties: str,
) -> Workbook:
    """A workbook of `sheets` in memory — after `page` (a 요약 written section by section), if any — its first sheet
    active and its document's properties set (title, creator, the attribution, any other)."""
    wb = Workbook()
    wb.remove(wb.active)
    st.register_styles(wb)
    if page is not None:
        page(wb)
    for sheet in sheets:
        add_table_sheet(wb, look, sheet)
    wb.active = 0
    props = wb.properties
    props.title = title
    for name, value in properties.items():
        setattr(props, name, value)
    props.creator = "DMF Watch"
    props.description = ATTRIBUTION
    return wb


def save_workbook(wb: Workbook, path: Path) -> Path:
    """Write `wb` to `path` atomically (its folder made if missing)."""
    path = Path(path)
    ensure_dir(path.parent)
    atomic_write(path, lambda tmp: xlsx_body.save(wb, tmp))
    return path


def write_tables_workbook(path: Path, sheets: Sequence[TableSheet], *, banner: str, doc_title: str) -> Path:
    """A workbook of table sheets (same styles, banner and print setup as the daily one), written atomically."""
    return save_workbook(tables_workbook(Look(banner, DayStatus.ACCEPTED, doc_title), sheets, doc_title), path)


#: the 요약 grid (its tables' first columns line up with it)
SUMMARY_WIDTHS = (28.0, 14.0, 24.0, 16.0, 18.0, 14.0, 40.0)


class Page:
    """요약, the first sheet of the daily and of the period workbook, written top to bottom in sections on the house
    frame (its tab in the status colour; banner, title and note stay in view); `row` is the last row written."""

    def __init__(self, wb: Workbook, look: Look, title: str, note: str) -> None:
        self.ws = frame_sheet(wb, replace(look, tab=True), SHEET_SUMMARY, SUMMARY_WIDTHS, title, note)
        keep_in_view(self.ws, "A4")
        self.row = 3

    def section(self, text: str) -> None:
        self.row += 2
        put_text(self.ws, self.row, 1, text, st.SECTION)
        self.ws.row_dimensions[self.row].height = 22

    def label(self, text: str) -> None:
        self.row += 1
        put_text(self.ws, self.row, 1, text, st.LABEL)

    def merged_text(self, col: int, text: str | None, last_col: int | None = None, style: str = st.TEXT_WRAP) -> Cell:
        last_col = last_col or len(SUMMARY_WIDTHS)
        cell = put_text(self.ws, self.row, col, text, style)
        merge_cells(self.ws, self.row, col, last_col)
        if style == st.TEXT_WRAP:  # a text that does not wrap stays one line high
            fit_row_height(self.ws, self.row, text_lines(text or "", sum(SUMMARY_WIDTHS[col - 1 : last_col])))
        return cell

    def header(self, headers: Sequence[tuple[int, str]], merges: Sequence[tuple[int, int]] = ()) -> None:
        self.row += 1
        for col, text in headers:
            self.ws.cell(row=self.row, column=col, value=text).style = st.HEADER
        for first, last in merges:
            merge_cells(self.ws, self.row, first, last)

    def note(self, text: str) -> None:
        self.row += 1
        put_text(self.ws, self.row, 1, text, st.NOTE)

    def fact(self, label: str, value: object) -> Cell:
        """A labelled value: a date or a time in its format, a text merged over the rest of the row."""
        self.label(label)
        if isinstance(value, datetime):
            return put_datetime(self.ws, self.row, 2, value)
        if isinstance(value, date):
            return put_date(self.ws, self.row, 2, value)
        return self.merged_text(2, None if value is None else str(value))

    def sentences(self, sentences: Sequence[Sentence], *, watch: bool) -> None:
        """The events as the sentences of the mail, under their severity (and 「자사」, or 「관심」 when `watch`)."""
        for x in sentences:
            self.row += 1
            mark = " · 자사" if x.products else " · 관심" if watch and x.watch else ""
            put_severity(self.ws, self.row, 1, x.severity, mark)
            self.merged_text(2, x.full_text)
