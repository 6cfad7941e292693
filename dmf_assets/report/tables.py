"""Workbooks of table sheets in the house look (`dmf history`, `dmf asof`, the period workbook's tables)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl
from openpyxl import Workbook
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.worksheet import Worksheet

from dmf_assets.domain.model import DayStatus
from dmf_assets.report import styles as st
from dmf_assets.report import xlsx_body
from dmf_assets.report.cells import Col, column_widths, put_text, write_table
from dmf_assets.report.output import atomic_write, ensure_dir
from dmf_assets.report.sheet_frame import ATTRIBUTION, finish_table_sheet, frame_sheet, severity_hook


@dataclass(frozen=True)
class TableSheet:
    """One table sheet in the house look; `severity_col` (1-based) is coloured by row['_severity_code']."""

    name: str
    title: str
    note: str | None
    cols: tuple[Col, ...]
    rows: Sequence[dict] | pl.DataFrame
    severity_col: int | None = None
    print_cols: int | None = None  # print only the first N columns (audit columns stay on screen)


def add_table_sheet(wb: Workbook, sheet: TableSheet, banner: str, status: DayStatus, header_left: str) -> Worksheet:
    ws = frame_sheet(
        wb,
        sheet.name,
        banner,
        status,
        column_widths(sheet.cols),
        sheet.title,
        sheet.note,
        print_header=(f"{header_left} — {sheet.name}", ATTRIBUTION),
    )
    hook = None
    if sheet.severity_col:
        col = sheet.severity_col

        def hook(ws: Worksheet, r: int, row: dict) -> None:
            if row.get("_severity_code"):
                severity_hook(col)(ws, r, row)

    last = write_table(ws, 4, sheet.cols, sheet.rows, row_hook=hook)
    finish_table_sheet(ws, 4)
    if sheet.print_cols:
        ws.print_area = f"A1:{get_column_letter(sheet.print_cols)}{max(last, 4)}"
    if len(sheet.rows) == 0:
        put_text(ws, 5, 1, "해당 자료 없음", st.NOTE)
    return ws


def write_tables_workbook(
    path: Path, sheets: Sequence[TableSheet], *, banner: str, status: DayStatus = DayStatus.ACCEPTED, doc_title: str
) -> Path:
    """A workbook of table sheets (same styles, banner and print setup as the daily one), atomically."""
    path = Path(path)
    ensure_dir(path.parent)
    wb = Workbook()
    wb.remove(wb.active)
    st.register_styles(wb)
    for sheet in sheets:
        add_table_sheet(wb, sheet, banner, status, doc_title)
    wb.active = 0
    wb.properties.title = doc_title
    wb.properties.creator = "DMF Watch"
    wb.properties.description = ATTRIBUTION
    atomic_write(path, lambda tmp: xlsx_body.save(wb, tmp))
    return path
