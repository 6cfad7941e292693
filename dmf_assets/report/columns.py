"""The columns of every table people read — the workbooks, `dmf history` / `dmf asof` and the web page's
exports: one header per column key, a registration's fields named by `domain.model.FIELD_LABEL_KO`; a table
declares which columns and how wide (`columns`). Declared here, without openpyxl, so that the row builders
(`report.rows`, imported by the Dagster definitions for the checks' sample tables) load without the workbook
writer."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from dmf_assets.domain.model import COUNT_LABEL_KO, FIELD_LABEL_KO

# the kinds of a column's values (how a cell is written: `report.cells.cell_value`)
TEXT, WRAP, INT, PCT, DATE, LINK, SHEETLINK = "text", "wrap", "int", "pct", "date", "link", "sheetlink"
#: text kept for filters and the audit trail, not shown to the reader (an internal key)
HIDDEN = "hidden"
#: First characters that make Excel/LibreOffice (or a CSV re-import) treat text as a formula.
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: object) -> object:
    """A value as a CSV cell that a spreadsheet opens as the text it is: registry text starting like a formula
    ('=HYPERLINK(…)') gets an apostrophe before it, as the workbooks write such text as text."""
    return f"'{value}" if isinstance(value, str) and value.startswith(FORMULA_TRIGGERS) else value


@dataclass(frozen=True)
class Col:
    key: str
    header: str
    width: float
    kind: str = TEXT  # text | wrap | int | pct | date | datetime | link | sheetlink
    hidden: bool = False


_APPLICANT, _COUNTRIES = FIELD_LABEL_KO["applicant"], FIELD_LABEL_KO["countries"]

#: column key -> (header, kind): a registration's fields, then what tables show beside them
COLUMN_LABELS: dict[str, tuple[str, str]] = {
    "permit_no": (FIELD_LABEL_KO["permit_no"], TEXT),
    "ingredient": (FIELD_LABEL_KO["ingredient"], WRAP),
    "applicant": (_APPLICANT, WRAP),
    "bizrno": (FIELD_LABEL_KO["bizrno"], TEXT),
    "manufacturer": (FIELD_LABEL_KO["manufacturer"], WRAP),
    "address": (FIELD_LABEL_KO["address"], WRAP),
    "countries": (_COUNTRIES, WRAP),
    "issue_date": (FIELD_LABEL_KO["issue_date"], DATE),
    "target_class": (FIELD_LABEL_KO["target_class"], TEXT),
    # an event
    "severity": ("심각도", TEXT),
    "event_type": ("이벤트", WRAP),
    "changed_fields": ("변경 항목", WRAP),
    "change_summary": ("변경 내용 (전 → 후)", WRAP),
    "flags": ("표시", WRAP),
    "watch_reasons": ("관심목록 사유", WRAP),
    "product_hits": ("자사 영향", WRAP),
    "link": ("의약품안전나라", LINK),
    "dmf_key": ("관리 키", HIDDEN),
    "base_dmf_key": ("이전 관리 키", HIDDEN),
    "day": ("관측일", DATE),
    "base_day": ("비교 기준일", DATE),
    "previous_permit_no": ("이전 번호", TEXT),
    "kind": ("구분", TEXT),
    "field": ("항목", TEXT),
    "before": ("변경 전", WRAP),
    "after": ("변경 후", WRAP),
    # a registration in the ledger (전체현황)
    "permit_fmt": ("번호 형식", TEXT),
    "permit_accept_date": ("접수일", DATE),
    "permit_ingr_no": ("성분 번호", TEXT),
    "permit_group": ("그룹", TEXT),
    "permit_serial": ("일련번호", TEXT),
    "permit_seq": ("순번", TEXT),
    "permit_grant": ("허여", TEXT),
    "permit_table": ("별표", TEXT),
    "base_permit_no": ("원 등록번호 (허여 원본)", TEXT),
    "cohort": ("성분번호-그룹", TEXT),
    "ingredient_base": ("성분 기준명", WRAP),
    "site_count": ("제조소 수", INT),
    "sites": ("제조소 (사이트별: 이름·국가)", WRAP),
    "country_set": (f"{_COUNTRIES} (국가 목록)", WRAP),
    "first_seen": ("최초 관측일", DATE),
    "last_changed": ("최근 실질 변경일", DATE),
    "times_changed": ("변경 횟수", INT),
    "events_link": ("이벤트 (이력 시트)", SHEETLINK),
    # a day, and its figures
    "status": ("상태", TEXT),
    "registry_size": ("등록 현황", INT),
    **{kind.lower(): (label, INT) for kind, label in COUNT_LABEL_KO.items() if kind != "REAPPEARED"},
    "reason": ("표기 변경 / 실패 사유", WRAP),
    # the period report: a registration's net change, and the review columns
    "net_type": ("순변경", TEXT),
    "n_events": ("이벤트 수", INT),
    "first_day": ("처음 관측일", DATE),
    "last_day": ("마지막 관측일", DATE),
    "watch": ("관심목록", TEXT),
    "reviewer": ("검토자", TEXT),
    "reviewed_on": ("검토일", TEXT),
    "comment": ("의견", WRAP),
    # one registration's history (`dmf history`)
    "version_no": ("버전", INT),
    "days_observed": ("관측 일수", INT),
    "state": ("목록", TEXT),
    "accepted_days": ("정상 반영일 수", INT),
    # the aggregates (성분별, 업체별, 제조국)
    "rank": ("순위", INT),
    "registrations": ("등록 수", INT),
    "share": ("비율", PCT),
    "n_manufacturers": ("제조소 수", INT),
    "n_applicants": (f"{_APPLICANT} 수", INT),
    "n_countries": (f"{_COUNTRIES} 수", INT),
    "n_ingredients": ("성분 수", INT),
    # 품질 and 메타
    "number": ("번호", INT),
    "item": ("항목", WRAP),
    "result": ("결과", TEXT),
    "observed": ("관측값", WRAP),
    "threshold": ("기준", WRAP),
    "detail": ("설명", WRAP),
    "value": ("내용", WRAP),
}


def columns(
    widths: Mapping[str, float], *, headers: Mapping[str, str] | None = None, kinds: Mapping[str, str] | None = None
) -> tuple[Col, ...]:
    """A table's columns, in the order of `widths` (column key -> width): each column's header and kind are its
    key's (`COLUMN_LABELS`) unless this table words it its own way (`headers`, `kinds`)."""
    headers, kinds = headers or {}, kinds or {}
    out = []
    for key, width in widths.items():
        header, kind = COLUMN_LABELS[key] if key in COLUMN_LABELS else (headers[key], TEXT)
        kind = kinds.get(key, kind)
        out.append(Col(key, headers.get(key, header), width, TEXT if kind == HIDDEN else kind, kind == HIDDEN))
    return tuple(out)
