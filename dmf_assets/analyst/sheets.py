"""The analyst's answers as workbooks, written by the one table-sheet writer (`report.tables`): one registration's
history (`dmf history --format xlsx`) and the registry — as of a day (`dmf asof --format xlsx`) or what the web
page's search found."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

import polars as pl

from dmf_assets.analyst.queries import HistoryEvent, HistoryVersion, ListedSpan
from dmf_assets.domain.model import SEVERITY_LABEL_KO
from dmf_assets.report.columns import TEXT, columns
from dmf_assets.report.rows import EXPORT_COLUMNS, PERMIT_WIDTH, TARGET_CLASS_WIDTH
from dmf_assets.report.tables import TableSheet, colours, write_tables_workbook

#: the keys stay in view: a history is read by them
_KEYS_SHOWN = {"dmf_key": TEXT, "base_dmf_key": TEXT}
EVENT_COLUMNS = columns(
    {
        "day": 11,
        "base_day": 11,
        "severity": 9,
        "event_type": 14,
        "permit_no": PERMIT_WIDTH,
        "change_summary": 70,
        "flags": 12,
        "ingredient": 22,
        "applicant": 20,
        "dmf_key": 22,
        "base_dmf_key": 22,
    },
    kinds=_KEYS_SHOWN,
)
VERSION_COLUMNS = columns(
    {
        "dmf_key": 22,
        "version_no": 6,
        "first_day": 11,
        "last_day": 11,
        "days_observed": 8,
        "permit_no": PERMIT_WIDTH,
        "ingredient": 22,
        "applicant": 20,
        "bizrno": 13,
        "sites": 44,
        "address": 44,
        "countries": 14,
        "issue_date": 11,
        "target_class": TARGET_CLASS_WIDTH,
        "base_permit_no": 22,
        "cohort": 10,
    },
    headers={
        "first_day": "처음 관측",
        "last_day": "마지막 관측",
        "sites": "제조소 (사이트별)",
        "base_permit_no": "원 등록번호 (허여)",
        "cohort": "코호트",
    },
    kinds=_KEYS_SHOWN,
)
SPAN_COLUMNS = columns(
    {"dmf_key": 22, "first_day": 11, "last_day": 11, "state": 16, "accepted_days": 9, "detail": 70},
    headers={"first_day": "시작일", "last_day": "종료일"},
    kinds=_KEYS_SHOWN,
)


def write_history_workbook(
    path: Path,
    what: str,
    summary: str,
    events: Sequence[HistoryEvent],
    versions: Sequence[HistoryVersion] | None,
    spans: Sequence[ListedSpan] = (),
    *,
    scope: str = "",
) -> Path:
    """One registration's (or a pattern's) history: its events and — unless `versions` is None (changes only) — its
    versions and the spans in which it was listed or not. `what` names the registration, `scope` the period."""
    event_rows = [
        {
            "day": e.day,
            "base_day": e.base_day,
            "severity": SEVERITY_LABEL_KO.get(e.severity, e.severity),
            "event_type": e.label,
            "permit_no": e.permit_no,
            "change_summary": e.changes_text or None,
            "flags": ", ".join(e.flags) or None,
            "ingredient": e.ingredient,
            "applicant": e.applicant,
            "dmf_key": e.dmf_key,
            "base_dmf_key": e.base_dmf_key,
            "_severity_code": e.severity,
        }
        for e in events
    ]
    note = f"{scope}관측일 순. 표기 변경 행은 '(표기)'로 표시."
    sheets = [TableSheet("이벤트", f"등록 이력 · {what}", note, EVENT_COLUMNS, event_rows, colours(severity=3))]
    if versions is not None:
        # a row holds more than its sheet's columns: the table writer takes the columns' keys
        version_rows = [asdict(v) | v.values for v in versions]
        span_rows = [asdict(s) | {"state": s.state, "detail": s.text} for s in spans]
        sheets += [
            TableSheet(
                "버전",
                f"버전 · {what}",
                "같은 등록의 서로 다른 내용마다 1행 (정상 수집일 기준 관측 기간).",
                VERSION_COLUMNS,
                version_rows,
            ),
            TableSheet(
                "목록 기간",
                f"목록에 있던 기간 · {what}",
                "정상 반영일을 따라 같은 버전으로 목록에 있던 기간, 목록에 없던 기간(목록에서 삭제, 취하 등)과 재등장 — "
                "거부·미수집일은 기간을 끊지 않습니다.",
                SPAN_COLUMNS,
                span_rows,
            ),
        ]
    return write_tables_workbook(
        path, sheets, banner=f"등록 이력 — {what}: {summary}", doc_title=f"DMF 등록 이력 {what}"
    )


def write_registry_workbook(
    path: Path, frame: pl.DataFrame, *, sheet: str, title: str, note: str, banner: str, doc_title: str
) -> Path:
    """Registrations (the ledger's display columns: `report.rows.ledger_frame`) as one sheet of 전체현황's columns."""
    return write_tables_workbook(
        path, [TableSheet(sheet, title, note, EXPORT_COLUMNS, frame)], banner=banner, doc_title=doc_title
    )
