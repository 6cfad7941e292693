"""The table rows of events and registrations: column sets and the cell values of each row (labels in
Korean, change lines before → after) shared by the daily and the period workbooks."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from dmf_assets.domain.model import (
    COMPARED_FIELDS,
    COUNT_LABEL_KO,
    EVENT_LABEL_KO,
    FIELD_LABEL_KO,
    SEVERITY_LABEL_KO,
    SEVERITY_RANK,
    SITES_FIELD,
    DayStatus,
    event_label,
    missing,
)
from dmf_assets.domain.sites import describe_site_change
from dmf_assets.report.columns import COLUMN_LABELS, TEXT, columns
from dmf_assets.report.model import DayReport, EventRow, FieldChangeRow, HistoryPoint, sorted_events
from dmf_assets.report.nedrug import SOURCE_BASE_FALLBACK, nedrug_search
from dmf_assets.report.sentences import (
    NUMBER_ASSIGNED_DEFINITION,
    NUMBER_CHANGED_DEFINITION,
    change_lines,
    field_label,
)
from dmf_assets.report.summary import CHANGE_KIND_LABEL_KO, COMPANY_KINDS, FIGURES, change_kind, companies

#: an event's flag (its attribute) -> (the word of the 표시 column, what it means: 메타's legend)
FLAGS: dict[str, tuple[str, str]] = {
    "is_reappearance": (COUNT_LABEL_KO["REAPPEARED"], "과거에 목록에서 삭제된 적이 있는 등록이 다시 나타남"),
    "number_assigned": (COUNT_LABEL_KO["NUMBER_ASSIGNED"], NUMBER_ASSIGNED_DEFINITION),
    "number_changed": (COUNT_LABEL_KO["NUMBER_CHANGED"], NUMBER_CHANGED_DEFINITION),
    "is_transfer": ("양도양수", f"{FIELD_LABEL_KO['bizrno']}가 바뀜 (등록의 양도양수)"),
    "is_rename": (
        "명칭 변경",
        f"{FIELD_LABEL_KO['bizrno']}는 같고 {FIELD_LABEL_KO['applicant']} 이름만 바뀜 (상호 변경)",
    ),
    "watchlist_hit": ("관심목록", "설정의 관심목록(성분·업체·제조소·국가)에 해당 — 최소 '높음'"),
}
FLAG_LABELS: dict[str, str] = {flag: label for flag, (label, _) in FLAGS.items()}


# --- event texts ---------------------------------------------------------------------------------


def _change_summary(ev: EventRow) -> str | None:
    lines = change_lines(ev.changes)
    if ev.cosmetic_fields:
        lines.append("표기 변경: " + ", ".join(field_label(f) for f in ev.cosmetic_fields))
    if ev.gone_since:
        lines.append(f"{ev.gone_since}부터 목록에 없다가 다시 오름")
    if ev.note:
        lines.append(ev.note)
    return "\n".join(lines) or None


# --- 변경 이벤트 / 신규·삭제 / 이력 ---------------------------------------------------------------------

#: the longest real number, 「20121220-144-I-186-02(10)」, fits on one line; so does 「인태반 유래」
PERMIT_WIDTH = 25
TARGET_CLASS_WIDTH = 11


EVENT_COLUMNS = columns(
    {
        "severity": 9,
        "event_type": 11,
        "permit_no": PERMIT_WIDTH,
        "ingredient": 24,
        "applicant": 20,
        "manufacturer": 30,
        "countries": 12,
        "changed_fields": 16,
        "change_summary": 50,
        "flags": 12,
        "watch_reasons": 18,
        "product_hits": 18,
        "issue_date": 11,
        "target_class": TARGET_CLASS_WIDTH,
        "bizrno": 13,
        "address": 40,
        "link": 13,
        # internal keys: kept (hidden) for the audit trail and to match rows across sheets, never shown to a reader
        "dmf_key": 24,
        "base_dmf_key": 24,
    }
)


def event_row(ev: EventRow, base_url: str = SOURCE_BASE_FALLBACK) -> dict:
    """One event as every event table shows it (변경 이벤트, 신규·삭제, 이력, the period's 전체 이벤트): each table
    writes the columns it declares."""
    return {
        "severity": SEVERITY_LABEL_KO.get(ev.severity, ev.severity),
        "event_type": event_label(ev.event_type, number_changed=ev.number_changed, number_assigned=ev.number_assigned),
        "permit_no": ev.permit_no,
        "previous_permit_no": ev.previous_permit_no,
        "ingredient": ev.ingredient,
        "ingredient_base": ev.ingredient_base,
        "applicant": ev.applicant,
        "manufacturer": ev.manufacturer,
        "countries": ev.countries,
        "changed_fields": ", ".join(field_label(f) for f in ev.changed_fields) or None,
        "change_summary": _change_summary(ev),
        "flags": ", ".join(label for attr, label in FLAG_LABELS.items() if getattr(ev, attr)) or None,
        "watch_reasons": "\n".join(ev.watch_reasons) or None,
        "issue_date": ev.issue_date,
        "target_class": ev.target_class,
        "bizrno": ev.bizrno,
        "address": ev.address,
        "dmf_key": ev.dmf_key,
        "base_dmf_key": ev.base_dmf_key,
        "link": nedrug_search(ev.ingredient, ev.ingredient_base, base_url or SOURCE_BASE_FALLBACK),
        "_severity_code": ev.severity,
        "_watch": ev.watchlist_hit,
        "product_hits": "\n".join(ev.product_hits) or None,
        "day": ev.day,
        "base_day": ev.base_day,
    }


NEW_WITHDRAWN_COLUMNS = columns(
    {
        "event_type": 11,
        "severity": 9,
        "permit_no": PERMIT_WIDTH,
        "ingredient": 24,
        "ingredient_base": 18,
        "applicant": 20,
        "bizrno": 13,
        "manufacturer": 30,
        "address": 40,
        "countries": 12,
        "issue_date": 11,
        "target_class": TARGET_CLASS_WIDTH,
        "flags": 12,
        "product_hits": 18,
        "link": 13,
        "dmf_key": 24,
    },
    headers={"event_type": COLUMN_LABELS["kind"][0]},
)


def new_withdrawn_rows(report: DayReport) -> list[dict]:
    chosen = [e for e in report.events if e.event_type in ("NEW", "WITHDRAWN")]
    chosen.sort(key=lambda e: (e.event_type != "NEW", -SEVERITY_RANK.get(e.severity, -1), e.dmf_key))
    return [event_row(e, report.source_url) for e in chosen]


RECENT_COLUMNS = columns(
    {
        "day": 11,
        "base_day": 11,
        "severity": 9,
        "event_type": 11,
        "permit_no": PERMIT_WIDTH,
        "previous_permit_no": PERMIT_WIDTH,
        "ingredient": 22,
        "applicant": 18,
        "manufacturer": 26,
        "countries": 11,
        "change_summary": 50,
        "flags": 11,
        "product_hits": 16,
        "watch_reasons": 16,
        "dmf_key": 22,
    }
)


def recent_rows(report: DayReport) -> list[dict]:
    ordered = sorted(
        report.recent_events,
        key=lambda e: (-(e.day.toordinal() if e.day else 0), -SEVERITY_RANK.get(e.severity, -1), e.dmf_key),
    )
    return [event_row(e, report.source_url) for e in ordered]


# --- 필드 변경 -------------------------------------------------------------------------------------


FIELD_COLUMNS = columns(
    {
        "severity": 9,
        "kind": 9,
        "permit_no": PERMIT_WIDTH,
        "ingredient": 24,
        "applicant": 20,
        "field": 13,
        "before": 45,
        "after": 45,
        "dmf_key": 24,
    }
)
_FIELD_ORDER = {name: i for i, name in enumerate(COMPARED_FIELDS)}


def site_kind(c: FieldChangeRow) -> str:
    """「제조소 추가」 | 「제조소 삭제」 | 「제조소 변경」 — the label of a site row (the line's head)."""
    return describe_site_change(c.before, c.after).split(":", 1)[0]


def field_rows(report: DayReport) -> list[dict]:
    changes: list[tuple[EventRow, FieldChangeRow]] = [(ev, c) for ev in report.events for c in ev.changes]
    changes.sort(
        key=lambda p: (
            p[1].is_cosmetic,
            -SEVERITY_RANK.get(p[1].severity, -1),
            p[1].dmf_key,
            _FIELD_ORDER.get(p[1].field, 99),
        )
    )
    return [change_row(ev, c) for ev, c in changes]


def change_row(ev: EventRow, c: FieldChangeRow) -> dict:
    """One field change `c` of event `ev` as the 필드 변경 sheets show it (the day's workbook and the period report)."""
    return {
        "severity": SEVERITY_LABEL_KO.get(c.severity, c.severity),
        "kind": CHANGE_KIND_LABEL_KO[change_kind(ev, c)],
        "permit_no": c.permit_no,
        "ingredient": c.ingredient,
        "applicant": c.applicant,
        "field": site_kind(c) if c.field == SITES_FIELD else field_label(c.field),
        "before": c.before,
        "after": c.after,
        "dmf_key": c.dmf_key,
        "_severity_code": "COSMETIC" if c.is_cosmetic else c.severity,
        "_cosmetic": c.is_cosmetic,
    }


# --- a day's figures (the 요약 trend, the period report's days) -----------------------------------------

DAY_COLUMNS = columns(
    {"day": 28, "status": 14, "registry_size": 24, "new": 16, "changed": 18, "withdrawn": 14}, headers={"day": "날짜"}
)


def day_rows(points: Sequence[HistoryPoint]) -> list[dict]:
    """Each day's status in words and, on an accepted day, its figures — a rejected or baseline day has none (blank,
    never a misleading zero); a rejected day is marked as failed (`_verdict`)."""
    return [
        {
            "day": p.day,
            "status": DayStatus.of_value(p.status).word_ko,
            "registry_size": p.registry_size,
            **({name: getattr(p, name) for name in FIGURES} if p.status == DayStatus.ACCEPTED else {}),
            "_verdict": "fail" if p.status == DayStatus.REJECTED else None,
        }
        for p in points
    ]


# --- 업체별: the day's events per applicant and per manufacturer ------------------------------------


def events_by_company(events: Sequence[EventRow]) -> dict[str, list[tuple[str, list[EventRow]]]]:
    """{"applicant": [(name, events)…], "manufacturer": […]}: the headline events of each applicant and of each
    manufacturer (`summary.companies`: the names the day's figures count), the company with the most severe
    event first (then the most events, then the name); inside a company, by severity. Cosmetic events are
    left out, as from every headline."""
    groups: dict[str, dict[str, list[EventRow]]] = {kind: {} for kind in COMPANY_KINDS}
    for ev in events:
        if ev.is_cosmetic:
            continue
        for kind, names in companies(ev).items():
            for name in names:
                groups[kind].setdefault(name, []).append(ev)

    def order(item: tuple[str, list[EventRow]]) -> tuple:
        name, evs = item
        return -max(SEVERITY_RANK.get(e.severity, -1) for e in evs), -len(evs), name

    return {
        kind: sorted(((name, sorted_events(evs)) for name, evs in by_name.items()), key=order)
        for kind, by_name in groups.items()
    }


# --- a gate's or quality metric's sample rows (요약 of a rejected day, the UI's check pages) ---------

#: sample keys (domain/gates.py) -> Korean headers; a key not listed keeps its name
SAMPLE_LABELS_KO: dict[str, str] = {
    "page_no": "쪽 번호",
    "rows": "받은 행",
    "expected_rows": "받아야 할 행",
    "page_total_count": "그 쪽이 밝힌 전체 건수",
    "error": "오류",
    "row_no": "행 번호",
    "permit_no_raw": f"{FIELD_LABEL_KO['permit_no']} (원문)",
    "count": "반복 횟수",
    **{
        key: COLUMN_LABELS[key][0]
        for key in (
            "status",
            "permit_no",
            "dmf_key",
            "event_type",
            "severity",
            "ingredient",
            "applicant",
            "issue_date",
            "permit_accept_date",
            "countries",
        )
    },
    "ingredient_summary": FIELD_LABEL_KO["ingredient"],
    "applicant_summary": FIELD_LABEL_KO["applicant"],
}
_SAMPLE_VALUES_KO: dict[str, dict[str, str]] = {
    "event_type": EVENT_LABEL_KO,
    "severity": SEVERITY_LABEL_KO,
    "status": {"ok": "정상", "failed": "실패"},
}


def sample_table(samples: Sequence[dict]) -> tuple[list[str], list[list]]:
    """(Korean headers, rows) of sample rows. 관리 키 is left out where it only repeats 등록번호."""
    keys = list(dict.fromkeys(k for s in samples for k in s))
    if "dmf_key" in keys and "permit_no" in keys and all(s.get("dmf_key") == s.get("permit_no") for s in samples):
        keys.remove("dmf_key")

    def shown(key: str, value: object) -> object:
        return (
            _SAMPLE_VALUES_KO[key].get(value, value) if key in _SAMPLE_VALUES_KO and isinstance(value, str) else value
        )

    rows = [[shown(k, s.get(k)) for k in keys] for s in samples]
    return [SAMPLE_LABELS_KO.get(k, k) for k in keys], rows


# --- the ledger (전체현황): the full registry of one accepted day ---------------------------------

PERMIT_FMT_LABEL_KO: dict[str, str] = {
    "standard": "표준",
    "new_substance": "신물질",
    "unknown": "해석 불가",
    "missing": "번호 없음",
}

LEDGER_COLUMNS = columns(
    {
        "permit_no": PERMIT_WIDTH,
        "previous_permit_no": PERMIT_WIDTH,
        "permit_fmt": 8,
        "permit_accept_date": 11,
        "permit_ingr_no": 7,
        "permit_group": 6,
        "permit_serial": 8,
        "permit_seq": 6,
        "permit_grant": 6,
        "permit_table": 9,
        "base_permit_no": 22,
        "cohort": 11,
        "ingredient": 26,
        "ingredient_base": 18,
        "applicant": 22,
        "bizrno": 13,
        "site_count": 7,
        "sites": 46,
        "country_set": 16,
        "address": 40,
        "issue_date": 11,
        "target_class": TARGET_CLASS_WIDTH,
        "first_seen": 11,
        "last_changed": 11,
        "times_changed": 7,
        "events_link": 14,
        "dmf_key": 24,
    },
    headers={"address": f"{FIELD_LABEL_KO['address']} (원문)"},
    kinds={"address": TEXT},
)
#: the ledger as exported (`dmf asof`, the web page's search): without its links into the daily workbook's 이력
EXPORT_COLUMNS = tuple(c for c in LEDGER_COLUMNS if c.key != "events_link")


def ledger_frame(registry: pl.DataFrame) -> pl.DataFrame:
    """The registry (`storage.registry.registry_asof`) with the ledger's display columns, column by column
    (no Python per row: the 9k-row 전체현황 is most of the daily workbook):

    - 제조소: one line per site, numbered when there are several — 「1. [역할] 이름 (국가)」 — the
      manufacturer when a single site has no name, the manufacturer alone when no site was split out;
    - 제조국: the distinct countries in order, or the country text as given when none was resolved;
    - 번호 형식: the Korean label."""

    def given(expr: pl.Expr) -> pl.Expr:  # neither null nor empty (Python's `x or …`)
        return expr.is_not_null() & (expr != "")

    def site_label(site: pl.Expr, name: pl.Expr) -> pl.Expr:
        """「[역할] 이름 (국가)」 of one site, `name` standing for its name."""
        role, country = site.struct.field("role"), site.struct.field("country")
        return pl.concat_str(
            [
                pl.when(given(role)).then(pl.concat_str([pl.lit("["), role, pl.lit("] ")])).otherwise(pl.lit("")),
                name,
                pl.lit(" ("),
                pl.when(given(country)).then(country).otherwise(pl.lit("국가 미상")),
                pl.lit(")"),
            ]
        )

    site, only = pl.element(), pl.col("sites").list.first()
    name, only_name, manufacturer = site.struct.field("name"), only.struct.field("name"), pl.col("manufacturer")
    numbered = pl.concat_str(
        [
            pl.int_range(1, pl.len() + 1).cast(pl.Utf8),
            pl.lit(". "),
            site_label(site, pl.when(given(name)).then(name).otherwise(pl.lit(missing("manufacturer")))),
        ]
    )
    single = site_label(
        only,
        pl.when(given(only_name)).then(only_name).when(given(manufacturer)).then(manufacturer).otherwise(pl.lit("")),
    )
    sites, n_sites = pl.col("sites"), pl.col("sites").list.len()
    site_text = (
        pl.when(n_sites > 1)
        .then(sites.list.eval(numbered).list.join("\n"))
        .when(n_sites == 1)
        .then(single)
        .otherwise(manufacturer)
    )
    country_set = pl.col("country_list").list.unique(maintain_order=True).list.join(", ")
    fmt = pl.col("permit_fmt")
    return registry.with_columns(
        permit_fmt=fmt.replace(PERMIT_FMT_LABEL_KO),
        sites=site_text,
        country_set=pl.when(given(country_set)).then(country_set).otherwise(pl.col("countries")),
    )
