"""A table column as the workbook writes it: declared here, without openpyxl, so that the row builders
(`report.rows`, imported by the Dagster definitions for the checks' sample tables) load without the
workbook writer; openpyxl is imported only where a workbook is written (`report.workbook`, `report.cells`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Col:
    key: str
    header: str
    width: float
    kind: str = "text"  # text | wrap | int | pct | date | datetime | link
    hidden: bool = False  # kept for filters and the audit trail, not shown to the reader (an internal key)
