"""The house sheet frame shared by every workbook: status banner, title, note, column widths, print
setup (running header/footer with the attribution), frozen header rows and severity colouring."""

from __future__ import annotations

from collections.abc import Sequence

from openpyxl import Workbook
from openpyxl.styles import Alignment
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.worksheet import Worksheet

from dmf_assets.domain.model import DayStatus
from dmf_assets.report import styles as st
from dmf_assets.report.cells import RowHook, fit_row_height, merge_cells, put_text, text_lines

ATTRIBUTION = "출처: 식품의약품안전처 원료의약품등록(DMF)현황, 공공데이터포털 오픈API"


def frame_sheet(
    wb: Workbook,
    name: str,
    banner_str: str,
    status: DayStatus,
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
        ws.sheet_properties.tabColor = status.colour
    for j, width in enumerate(widths, 1):
        ws.column_dimensions[get_column_letter(j)].width = width
    ncols = len(widths)
    span = sum(widths)
    banner = put_text(ws, 1, 1, banner_str, st.PLAIN)
    banner.fill = st.banner_fill(status)
    banner.font = st.banner_font()
    banner.alignment = Alignment(wrap_text=True, vertical="center", indent=1)
    merge_cells(ws, 1, 1, ncols)
    ws.row_dimensions[1].height = max(30.0, text_lines(banner_str, span / 1.25) * 17.0 + 8)
    put_text(ws, 2, 1, title, st.TITLE)
    ws.row_dimensions[2].height = 26
    if note:
        cell = put_text(ws, 3, 1, note, st.NOTE)
        cell.alignment = Alignment(wrap_text=True, vertical="top")
        merge_cells(ws, 3, 1, ncols)
        fit_row_height(ws, 3, text_lines(note, span))
    _print_setup(ws, *print_header)
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


def finish_table_sheet(ws: Worksheet, header_row: int) -> None:
    ws.freeze_panes = f"A{header_row + 1}"  # a coordinate, not ws.cell(): that would create a cell
    ws.print_title_rows = f"1:{header_row}"


def severity_hook(col_index: int, bold_flag_col: int | None = None) -> RowHook:
    def hook(ws: Worksheet, r: int, row: dict) -> None:
        sev = row["_severity_code"]
        cell = ws.cell(row=r, column=col_index)
        cell.fill = st.severity_fill(sev)
        cell.font = st.severity_font(sev)
        if bold_flag_col and row.get("_watch"):
            ws.cell(row=r, column=bold_flag_col).font = st.severity_font("HIGH")

    return hook
