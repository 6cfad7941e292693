"""Reading the daily workbook's 변경 이벤트 table back (tests only: the product never reads its workbooks).

Only that sheet is read: its values with openpyxl's read-only parser, its hyperlinks from the sheet's
own `<hyperlinks>` element and `_rels` file in the zip. A full `load_workbook` would also build every
cell of the 9k-row 전체현황 sheet (≈5 s a workbook) for nothing. What comes back is what a full load
would give: a cell with a hyperlink but no value reads as the link's target, as openpyxl binds it.
"""

from __future__ import annotations

import posixpath
import zipfile
from datetime import date, datetime
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import polars as pl
from openpyxl import load_workbook
from openpyxl.utils.cell import coordinate_to_tuple, range_boundaries

from dmf_assets.domain.model import (
    EVENT_LABEL_KO,
    FIELD_LABEL_KO,
    NUMBER_ASSIGNED_LABEL_KO,
    NUMBER_CHANGED_LABEL_KO,
    SEVERITY_LABEL_KO,
)
from dmf_assets.report import cells, xlsx_body
from dmf_assets.report.cells import ooxml_unescape, store_text
from dmf_assets.report.rows import EVENT_COLUMNS, FLAG_LABELS
from dmf_assets.report.workbook import NOT_REFLECTED, SHEET_EVENTS


def cell_text(value: Any) -> str | None:
    """What reading the cell back (with `ooxml_unescape`) yields for a source value."""
    stored = store_text(value)
    return None if stored is None else ooxml_unescape(stored)


def column_tails(w: xlsx_body.BodyWriter, j: int, kind: str, values: pl.Series) -> pl.Series:
    """Each cell of one column as the streamed table writes it: the XML after its reference (` s="3" …</c>`)."""
    tails = cells._column_tail_expr(w, j, kind, values, "value")
    return values.to_frame("value").with_columns(**tails.extra).select(tails.tail).to_series()


_SEVERITY_BY_LABEL = {v: k for k, v in SEVERITY_LABEL_KO.items()}
_EVENT_BY_LABEL = {v: k for k, v in EVENT_LABEL_KO.items()} | dict.fromkeys(
    (NUMBER_CHANGED_LABEL_KO, NUMBER_ASSIGNED_LABEL_KO), "CHANGED"
)
_FIELD_BY_LABEL = {v: k for k, v in FIELD_LABEL_KO.items()}
_FLAG_BY_LABEL = {v: k for k, v in FLAG_LABELS.items()}

_MAIN = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
_REL = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
_PKG_REL = "{http://schemas.openxmlformats.org/package/2006/relationships}"


class RejectedDayError(ValueError):
    """The workbook is for a rejected day: it deliberately has no events table to read."""


def _read_value(value: Any) -> Any:
    if isinstance(value, str):
        return ooxml_unescape(value)
    if isinstance(value, datetime):
        return value.date().isoformat()
    if isinstance(value, date):
        return value.isoformat()
    return value


def _relationships(zf: zipfile.ZipFile, rels_path: str) -> dict[str, tuple[str, str | None]]:
    """Id -> (Target, TargetMode), internal targets made absolute as openpyxl's `get_dependents` does."""
    if rels_path not in zf.NameToInfo:
        return {}
    parent = posixpath.split(posixpath.dirname(rels_path))[0]
    out = {}
    for rel in ElementTree.fromstring(zf.read(rels_path)).iter(f"{_PKG_REL}Relationship"):
        target, mode = rel.get("Target"), rel.get("TargetMode")
        if mode != "External":
            target = target[1:] if target.startswith("/") else posixpath.normpath(posixpath.join(parent, target))
        out[rel.get("Id")] = (target, mode)
    return out


def _sheet_path(zf: zipfile.ZipFile, name: str) -> str:
    rels = _relationships(zf, "xl/_rels/workbook.xml.rels")
    for sheet in ElementTree.fromstring(zf.read("xl/workbook.xml")).iter(f"{_MAIN}sheet"):
        if sheet.get("name") == name:
            return rels[sheet.get(f"{_REL}id")][0]
    raise KeyError(f"Worksheet {name} does not exist.")


def _hyperlinks(zf: zipfile.ZipFile, sheet_path: str) -> dict[tuple[int, int], list[tuple[str | None, str | None]]]:
    """(row, column) -> the (target, location) of each hyperlink on that cell, in file order."""
    folder, file = posixpath.split(sheet_path)
    rels = _relationships(zf, f"{folder}/_rels/{file}.rels")
    links: dict[tuple[int, int], list[tuple[str | None, str | None]]] = {}
    with zf.open(sheet_path) as src:
        for _, elem in ElementTree.iterparse(src):
            if elem.tag == f"{_MAIN}hyperlink":
                rid = elem.get(f"{_REL}id")
                link = (rels[rid][0] if rid else None, elem.get("location"))
                ref = elem.get("ref")
                if ":" in ref:
                    min_col, min_row, max_col, max_row = range_boundaries(ref)
                    cells = [(r, c) for r in range(min_row, max_row + 1) for c in range(min_col, max_col + 1)]
                else:
                    cells = [coordinate_to_tuple(ref)]
                for cell in cells:
                    links.setdefault(cell, []).append(link)
            elif elem.tag == f"{_MAIN}row":
                elem.clear()  # the cells: read by openpyxl below
    return links


def _sheet_rows(path: Path) -> tuple[list[list[Any]], dict[tuple[int, int], list[tuple[str | None, str | None]]]]:
    """The 변경 이벤트 sheet's values (row by row, 1-based positions as lists from index 0) and hyperlinks."""
    with zipfile.ZipFile(path) as zf:
        links = _hyperlinks(zf, _sheet_path(zf, SHEET_EVENTS))
    wb = load_workbook(path, read_only=True)
    try:
        ws = wb[SHEET_EVENTS]
        ws.reset_dimensions()  # every row and cell the file holds, whatever its <dimension> says
        rows = [list(row) for row in ws.iter_rows(values_only=True)]
    finally:
        wb.close()
    for (r, c), cell_links in links.items():  # openpyxl gives a linked empty cell its link's text
        while len(rows) < r:
            rows.append([])
        row = rows[r - 1]
        row.extend([None] * (c - len(row)))
        if row[c - 1] is None:
            target, location = cell_links[0]
            row[c - 1] = target or location
    return rows, links


def read_events_sheet(path: Path) -> list[dict]:
    """The 변경 이벤트 table as dicts keyed like `EventRow` fields (codes, not Korean labels).

    Keys: every `EVENT_COLUMNS` key; `severity`/`event_type` as codes, `changed_fields` and
    `watch_reasons` as tuples, the five flags as booleans, `issue_date` as ISO text, `link` as the
    hyperlink URL. Empty cells read as None. Raises RejectedDayError for a rejected day's workbook.
    """
    rows, links = _sheet_rows(path)

    def value(r: int, c: int) -> Any:
        row = rows[r - 1] if r <= len(rows) else ()
        return row[c - 1] if c <= len(row) else None

    header_row = next((r for r in range(1, 11) if value(r, 1) == EVENT_COLUMNS[0].header), None)
    if header_row is None:
        note = " ".join(str(value(r, 1) or "") for r in range(1, 5))
        if NOT_REFLECTED in note:
            raise RejectedDayError(f"{path}: 수집 실패일의 리포트입니다 — 변경 이벤트 표가 없습니다")
        raise ValueError(f"{path}: '{SHEET_EVENTS}' 시트에서 표 머리글을 찾을 수 없습니다")
    by_header = {v: j for j, v in enumerate(rows[header_row - 1], 1)}
    positions = {col.key: by_header[col.header] for col in EVENT_COLUMNS}
    out: list[dict] = []
    for r in range(header_row + 1, len(rows) + 1):
        values = {key: _read_value(value(r, j)) for key, j in positions.items()}
        if all(v is None for v in values.values()):
            break
        flags = tuple(f for f in (values["flags"] or "").split(", ") if f)
        link = links.get((r, positions["link"]))
        values.update(
            severity=_SEVERITY_BY_LABEL.get(values["severity"], values["severity"]),
            event_type=_EVENT_BY_LABEL.get(values["event_type"], values["event_type"]),
            changed_fields=tuple(_FIELD_BY_LABEL.get(f, f) for f in (values["changed_fields"] or "").split(", ") if f),
            watch_reasons=tuple((values["watch_reasons"] or "").split("\n")) if values["watch_reasons"] else (),
            link=link[-1][0] if link else None,
            **{attr: label in flags for label, attr in _FLAG_BY_LABEL.items()},
        )
        out.append(values)
    return out


# --- any sheet, as values ---------------------------------------------------------------------------


def sheet_values(path: Path, name: str, max_row: int | None = None) -> list[list[Any]]:
    """Every row of one sheet as values (1-based row r is index r - 1), read-only: other sheets are not parsed.
    Dates read as ISO text, as in `read_events_sheet`; `max_row` stops early (the 9k-row 전체현황)."""
    wb = load_workbook(path, read_only=True)
    try:
        ws = wb[name]
        ws.reset_dimensions()
        return [[_read_value(v) for v in row] for row in ws.iter_rows(max_row=max_row, values_only=True)]
    finally:
        wb.close()


def hidden_columns(path: Path, name: str) -> set[int]:
    """The 1-based columns of a sheet hidden from its reader (`<col hidden="1">`)."""
    hidden: set[int] = set()
    with zipfile.ZipFile(path) as zf, zf.open(_sheet_path(zf, name)) as src:
        for event, elem in ElementTree.iterparse(src, events=("start", "end")):
            if event == "start" and elem.tag == f"{_MAIN}sheetData":
                break  # the columns are declared before the cells
            if event == "end" and elem.tag == f"{_MAIN}col" and elem.get("hidden") in ("1", "true"):
                hidden.update(range(int(elem.get("min")), int(elem.get("max")) + 1))
    return hidden


def table_rows(rows: list[list[Any]], first_header: str, start: int = 0) -> list[dict[str, Any]]:
    """The table whose header row starts with `first_header` (at or after row index `start`), as dicts keyed
    by header, up to its first empty row."""
    top = next(i for i, r in enumerate(rows) if i >= start and r and r[0] == first_header)
    header = rows[top]
    out = []
    for r in rows[top + 1 :]:
        if not any(v is not None for v in r):
            break
        out.append({h: v for h, v in zip(header, r, strict=False) if h is not None})
    return out


def rows_of(ws, header_row: int = 4) -> list[dict]:
    """An openpyxl sheet's rows below its header row (the 4th: under the banner) as dicts keyed by header; empty rows left out."""
    header = [c.value for c in ws[header_row]]
    out = []
    for r in ws.iter_rows(min_row=header_row + 1, values_only=True):
        if all(v is None for v in r):
            continue
        out.append(dict(zip(header, r, strict=True)))
    return out
