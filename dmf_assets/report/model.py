"""What one day's workbook shows — assembled from the history database, rendered by `workbook.py`.

Plain frozen dataclasses: the writer never touches the database, so it can be tested (and timed)
with a report built in memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Any

import polars as pl

from dmf_assets.domain.model import (
    ACCEPTED_STATUSES,
    FIELD_LABEL_KO,
    SEVERITY_RANK,
    DayStatus,
    event_title,
    previous_number,
    renumbering_note,
)

if TYPE_CHECKING:  # summary.py builds on this module's rows
    from dmf_assets.report.summary import DaySummary

# --- the daily workbook's sheets (messages name them from this list only) ------------------------

SHEET_SUMMARY = "요약"
SHEET_EVENTS = "변경 이벤트"
SHEET_FIELDS = "필드 변경"
SHEET_NEW_WITHDRAWN = "신규·삭제"  # '/' is not allowed in Excel sheet names
SHEET_BY_INGREDIENT = "성분별"
SHEET_BY_APPLICANT = "업체별"
SHEET_BY_COUNTRY = "제조국"
SHEET_QUALITY = "품질"
SHEET_META = "메타"
SHEET_LEDGER = "전체현황"
SHEET_RECENT = "이력"
#: Sheet order. The three aggregates are separate sheets so each table has its own auto-filter:
#: side-by-side tables on one sheet would hide each other's rows when one is filtered.
SHEET_NAMES: tuple[str, ...] = (
    SHEET_SUMMARY,
    SHEET_EVENTS,
    SHEET_FIELDS,
    SHEET_NEW_WITHDRAWN,
    SHEET_LEDGER,
    SHEET_RECENT,
    SHEET_BY_INGREDIENT,
    SHEET_BY_APPLICANT,
    SHEET_BY_COUNTRY,
    SHEET_QUALITY,
    SHEET_META,
)


@dataclass(frozen=True)
class Aggregate:
    """One count of the registry by a field, declared once: the statement `report.<statement>` that counts it (also
    the `DayReport` field that holds its rows), its sheet, what it counts registrations by (the first column; the
    web page's top list), the sheet's title, the other counts the sheet shows (in that order), the web page's
    search field that lists a row's registrations, and what the sheet's note adds."""

    statement: str
    sheet: str
    label_ko: str
    title: str
    counts: tuple[str, ...]
    group_search: str
    note: str = ""


AGGREGATES: tuple[Aggregate, ...] = (
    Aggregate(
        "by_ingredient",
        SHEET_BY_INGREDIENT,
        "성분 (기준명)",
        "성분별 등록 현황",
        ("manufacturers", "applicants", "countries"),
        "ingredient_base",
        "염·수화물·미분화 표기를 뗀 기준명으로 묶었습니다.",
    ),
    Aggregate(
        "by_applicant",
        SHEET_BY_APPLICANT,
        FIELD_LABEL_KO["applicant"],
        f"업체({FIELD_LABEL_KO['applicant']})별 등록 현황",
        ("ingredients", "manufacturers", "countries"),
        "applicant_group",
    ),
    Aggregate(
        "by_country",
        SHEET_BY_COUNTRY,
        FIELD_LABEL_KO["countries"],
        f"{FIELD_LABEL_KO['countries']}별 등록 현황",
        ("ingredients", "applicants", "manufacturers"),
        "country",
        "여러 제조국이 있는 등록은 각 국가에 모두 집계되므로 합계가 등록 현황보다 큽니다.",
    ),
)


def sheet_ref(name: str) -> str:
    """The text "'요약' 시트" — a reference to a sheet that the daily workbook really has."""
    if name not in SHEET_NAMES:
        raise ValueError(f"the daily workbook has no sheet {name!r}")
    return f"'{name}' 시트"


@dataclass(frozen=True)
class GateRow:
    number: int  # 1..6 (docs/DOMAIN.md §6)
    name: str  # transport | completeness | drop | nulls | duplicates | churn
    label_ko: str  # 전송 | 완전성 | 감소율 | 결측 | 중복 | 변동률
    passed: bool | None  # None = not evaluated (an earlier gate already rejected the day)
    observed: str  # human-readable observed value, e.g. "8,940 / 9,203 (97.1 %)"
    threshold: str  # e.g. "= totalCount", "≤ 5 %"
    detail: str = ""  # why, in Korean, with numbers
    samples: tuple[dict, ...] = ()  # the evidence of a failed gate (pages, rows, numbers); see rows.sample_table


@dataclass(frozen=True)
class QualityRow:
    name: str
    label_ko: str
    value: str
    expected: str
    ok: bool
    detail: str = ""


@dataclass(frozen=True)
class FieldChangeRow:
    dmf_key: str
    permit_no: str | None
    ingredient: str | None
    applicant: str | None
    field: str  # model.COMPARED_FIELDS name; label via model.FIELD_LABEL_KO
    before: str | None
    after: str | None
    is_cosmetic: bool
    severity: str  # model.Severity value ("COSMETIC" for cosmetic rows)


@dataclass(frozen=True)
class EventRow:
    event_type: str  # NEW | CHANGED | WITHDRAWN
    severity: str  # CRITICAL | HIGH | MEDIUM | INFO | COSMETIC
    dmf_key: str
    permit_no: str | None
    base_dmf_key: str | None
    ingredient: str | None
    ingredient_base: str | None
    applicant: str | None
    bizrno: str | None
    manufacturer: str | None
    address: str | None
    countries: str | None
    issue_date: str | None
    target_class: str | None
    changed_fields: tuple[str, ...] = ()  # substantive fields (CHANGED)
    cosmetic_fields: tuple[str, ...] = ()
    is_cosmetic: bool = False
    is_reappearance: bool = False
    number_assigned: bool = False
    number_changed: bool = False  # re-numbered: listed under another number (docs/DOMAIN.md §4)
    is_transfer: bool = False
    is_rename: bool = False
    watchlist_hit: bool = False
    watch_reasons: tuple[str, ...] = ()
    changes: tuple[FieldChangeRow, ...] = ()  # before/after per field (cosmetic ones flagged)
    product_hits: tuple[str, ...] = ()  # the team's products this event touches (config/products.csv)
    day: date | None = None  # the accepted day the event was observed (이력 sheet, period report)
    base_day: date | None = None  # its comparison base
    renumber_candidates: tuple[str, ...] = ()  # NEW / WITHDRAWN: a re-numbering with these is possible
    gone_since: date | None = None  # a reappearance: the first accepted day it was missing from the list

    @property
    def is_substantive_change(self) -> bool:
        """Counted in the headline 「변경」 (실질 변경, `domain.model.substantive_changes`)."""
        return (
            self.event_type == "CHANGED"
            and not self.is_cosmetic
            and not self.number_assigned
            and not self.number_changed
        )

    @property
    def previous_permit_no(self) -> str | None:
        """The number a re-numbered registration was listed under before (its 이전 번호)."""
        if not self.number_changed:
            return None
        return previous_number(self.changes, self.base_dmf_key)

    @property
    def label(self) -> str:
        """The event's name: 「등록번호 변경 A → B」 for a re-numbering, else 「신규」, 「변경」, 「목록에서 삭제」,
        「등록번호 부여」."""
        return event_title(
            self.event_type,
            self.permit_no,
            number_changed=self.number_changed,
            previous=self.previous_permit_no,
            number_assigned=self.number_assigned,
        )

    @property
    def note(self) -> str | None:
        """「등록번호 변경 가능성: A ↔ B」 on a NEW or a disappearance that may be one half of a re-numbering."""
        return renumbering_note(self.permit_no or self.dmf_key, self.renumber_candidates)


def sorted_events(events: Sequence[EventRow]) -> list[EventRow]:
    """The order events are listed in everywhere: the most severe first, then by key."""
    return sorted(events, key=lambda e: (-SEVERITY_RANK.get(e.severity, -1), e.dmf_key))


@dataclass(frozen=True)
class HistoryPoint:
    day: date
    status: DayStatus  # as stored: ACCEPTED, BASELINE, REJECTED or PENDING
    registry_size: int | None
    new: int
    changed: int  # 실질 변경 (`domain.model.substantive_changes`)
    withdrawn: int
    cosmetic: int
    number_assigned: int = 0
    number_changed: int = 0


@dataclass(frozen=True)
class DayCounts:
    """How the days of a window were processed, from the `runs` table (not from the events they had). Days
    before monitoring began (the first run of the history) are no missing runs: they are counted apart."""

    first: date
    last: date
    accepted: int  # accepted, unchanged and baseline days
    rejected: int
    pending: int  # a run started but not judged yet
    not_run: int  # no run at all, since monitoring began
    before_start: int = 0  # days of the window before monitoring began

    @classmethod
    def of(cls, first: date, last: date, statuses: Sequence[str], started: date | None = None) -> DayCounts:
        """`started`: the first day of the history (None: nothing was ever run — every day is before it)."""
        accepted = sum(1 for s in statuses if s in ACCEPTED_STATUSES)
        rejected = sum(1 for s in statuses if s == DayStatus.REJECTED)
        pending = len(statuses) - accepted - rejected
        watched_from = max(first, started) if started is not None else last + timedelta(days=1)
        before = (watched_from - first).days
        window = (last - first).days + 1
        return cls(first, last, accepted, rejected, pending, window - before - len(statuses), before)


@dataclass(frozen=True)
class AggregateRow:
    label: str  # ingredient base / applicant / country
    registrations: int
    group_key: str | None = None  # what the row counts by (the web page's search for its registrations)
    manufacturers: int = 0
    applicants: int = 0
    countries: int = 0
    ingredients: int = 0


@dataclass(frozen=True)
class ChangeRate:
    """Observed change rate λ̂ = −ln(1 − X/n) / I per registration and day (docs/DOMAIN.md §10).

    X = 실질 변경 (changed registrations), n = registrations compared (the bases' populations), I = the
    mean comparison interval in days — pooled over the accepted comparisons of the window. People read
    it as registrations changed per day at today's registry size (`text_ko`), never as λ̂ itself.
    """

    rate_14d: float | None  # None: no accepted comparison in the last 14 days
    rate_all: float | None  # None: no accepted comparison at all
    per_day_14d: float | None  # expected registrations changed per day at today's registry size
    per_day_all: float | None
    changed_14d: int = 0
    changed_all: int = 0
    burst: bool = False  # rate_14d >= BURST_FACTOR × rate_all
    text_ko: str = ""


class ReadsItsSummary:
    """What a record built on one day's `summary` (the day's report, its mail) says of the day: its summary's
    day, status and comparison base, said once there."""

    summary: DaySummary

    @property
    def day(self) -> date:
        return self.summary.day

    @property
    def status(self) -> DayStatus:
        return self.summary.status

    @property
    def comparison_base(self) -> date | None:
        """The latest accepted day before `day` (None on the baseline day)."""
        return self.summary.comparison_base

    @property
    def last_accepted_day(self) -> date | None:
        """`day` when accepted; the base when rejected."""
        return self.summary.last_accepted_day


@dataclass(frozen=True)
class DayReport(ReadsItsSummary):
    """One day's workbook. Its figures are `summary` (report/summary.py), the one `DaySummary` every sheet, the
    xlsx_report metadata, the mail and the webhook read; the day, status and comparison base are read there too."""

    summary: DaySummary
    status_reason: str  # Korean sentence in analyst words: why rejected / "변경 없음" / baseline explanation
    events: tuple[EventRow, ...] = ()  # every event incl. cosmetic (the writer filters per sheet)
    history: tuple[HistoryPoint, ...] = ()  # last N days for the chart, ascending
    by_ingredient: tuple[AggregateRow, ...] = ()  # active registry of last_accepted_day
    by_applicant: tuple[AggregateRow, ...] = ()
    by_country: tuple[AggregateRow, ...] = ()
    gates: tuple[GateRow, ...] = ()
    quality: tuple[QualityRow, ...] = ()
    watchlist: dict[str, tuple[str, ...]] = field(default_factory=dict)  # kind -> patterns
    run_info: dict[str, object] = field(default_factory=dict)  # label -> text, date or datetime (메타 '실행 정보')
    generated_at: datetime | None = None
    source_url: str = "https://nedrug.mfds.go.kr"  # 의약품안전나라 (search links per registration)
    # 전체현황: the registry of last_accepted_day, a row per registration (`storage.registry.registry_asof`)
    ledger: pl.DataFrame = field(default_factory=pl.DataFrame, compare=False)
    recent_events: tuple[EventRow, ...] = ()  # 이력: every event of the last `recent_days` days, newest first
    recent_days: int = 90
    recent_counts: DayCounts | None = None  # 이력: how the days of its window were processed
    warnings: tuple[str, ...] = ()  # active quality / share warnings, shown in the banner
    change_rate: ChangeRate | None = None
    products: tuple[str, ...] = ()  # labels of the configured products (empty = no product list)
    products_configured: bool = False  # `[products] file` is set (an empty or broken list is still configured)

    @classmethod
    def of(cls, summary: DaySummary, status_reason: str, **rest: Any) -> DayReport:
        """The report of `summary`'s day."""
        return cls(summary, status_reason, **rest)

    @property
    def withdrawal_share(self) -> float | None:
        return self.summary.withdrawal_share

    @property
    def is_rejected(self) -> bool:
        return self.status is DayStatus.REJECTED

    @property
    def headline_events(self) -> tuple[EventRow, ...]:
        return tuple(e for e in self.events if not e.is_cosmetic)

    @property
    def gap_days(self) -> int:
        return self.summary.gap_days


# --- period report (`dmf report --from D1 --to D2`) ----------------------------------------------

#: net effect of a registration over the period -> (Korean label, what it means: the period workbook's 메타)
NET_TYPES: dict[str, tuple[str, str]] = {
    "NEW": ("신규", "기간 중 새로 나타난 등록 (이후 변경이 있었다면 마지막 상태로 표시)"),
    "CHANGED": (
        "변경",
        "기간 처음의 값과 마지막 값이 다른 항목이 있는 등록 — 두 번 바뀌었으면 처음 전 → 마지막 후 한 행",
    ),
    "WITHDRAWN": ("목록에서 삭제", "기간 중 목록에서 사라진 등록 (취하 등 — 목록은 취하인지 취소인지 알려 주지 않음)"),
    "NEW_WITHDRAWN": ("신규 후 삭제", "기간 안에서 나타났다가 목록에서 사라진 등록"),
    "REAPPEARED": ("삭제 후 재등장", "기간 안에서 목록에서 사라졌다가 다시 나타난 등록"),
    "REVERTED": (
        "변경 후 원복",
        "바뀌었다가 기간 안에 원래 값으로 돌아온 등록 (순변경 없음, 이벤트는 '전체 이벤트' 시트)",
    ),
    "COSMETIC": ("표기 변경만", "띄어쓰기·문장부호 등 표기만 달라진 등록"),
}
NET_LABEL_KO: dict[str, str] = {kind: label for kind, (label, _) in NET_TYPES.items()}


@dataclass(frozen=True)
class NetChange:
    """One registration's net effect over the period: first before, last after, per field."""

    dmf_key: str
    permit_no: str | None
    net_type: str  # NET_TYPES key
    severity: str  # worst event severity in the period
    first_day: date
    last_day: date
    n_events: int
    ingredient: str | None
    applicant: str | None
    manufacturer: str | None
    countries: str | None
    changes: tuple[FieldChangeRow, ...] = ()  # net field changes (sites: the site rows that did not cancel out)
    product_hits: tuple[str, ...] = ()
    watchlist_hit: bool = False


@dataclass(frozen=True)
class PeriodReport:
    start: date
    end: date
    events: tuple[EventRow, ...]  # every event of the accepted days in [start, end], oldest first
    net: tuple[NetChange, ...]
    days: tuple[HistoryPoint, ...]  # every processed day in [start, end]
    reasons: dict[date, str] = field(default_factory=dict)  # rejected day -> why
    first_base: date | None = None  # comparison base of the first accepted day in the period
    products: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    generated_at: datetime | None = None

    @property
    def accepted_days(self) -> int:
        return sum(1 for d in self.days if DayStatus.of_value(d.status).is_accepted)

    @property
    def rejected_days(self) -> int:
        return sum(1 for d in self.days if d.status == DayStatus.REJECTED)
