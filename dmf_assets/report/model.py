"""What one day's workbook shows — assembled from the history database, rendered by `workbook.py`.

Plain frozen dataclasses: the writer never touches the database, so it can be tested (and timed)
with a report built in memory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime
from enum import Enum


class DayStatus(str, Enum):
    ACCEPTED = "accepted"  # all six gates passed; events are against the comparison base
    BASELINE = "baseline"  # first accepted day: the history starts here, no events by design
    UNCHANGED = "unchanged"  # accepted, and the registry is identical to the comparison base
    REJECTED = "rejected"  # a gate failed: nothing written, the comparison base did not move

    @property
    def label_ko(self) -> str:
        return {
            "accepted": "정상 수집 · 비교 완료",
            "baseline": "기준일 (최초 수집 — 비교 대상 없음)",
            "unchanged": "정상 수집 · 변경 없음",
            "rejected": "수집 실패 — 결과 미반영",
        }[self.value]


@dataclass(frozen=True)
class GateRow:
    number: int  # 1..6 (DESIGN.md §6)
    name: str  # transport | completeness | drop | nulls | duplicates | churn
    label_ko: str  # 전송 | 완전성 | 감소율 | 결측 | 중복 | 변동률
    passed: bool | None  # None = not evaluated (an earlier gate already rejected the day)
    observed: str  # human-readable observed value, e.g. "8,940 / 9,203 (97.1 %)"
    threshold: str  # e.g. "= totalCount", "≤ 5 %"
    detail: str = ""  # why, in Korean, with numbers


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
    is_transfer: bool = False
    is_rename: bool = False
    watchlist_hit: bool = False
    watch_reasons: tuple[str, ...] = ()
    changes: tuple[FieldChangeRow, ...] = ()  # before/after per field (cosmetic ones flagged)


@dataclass(frozen=True)
class HistoryPoint:
    day: date
    status: str  # DayStatus value
    registry_size: int | None
    new: int
    changed: int  # substantive CHANGED only
    withdrawn: int
    cosmetic: int


@dataclass(frozen=True)
class AggregateRow:
    label: str  # ingredient base / applicant / country
    registrations: int
    manufacturers: int = 0
    applicants: int = 0
    countries: int = 0
    ingredients: int = 0


@dataclass(frozen=True)
class Kpis:
    registry_size: int | None  # size of the day's accepted snapshot (or the base's on a rejected day)
    new: int = 0
    changed: int = 0  # substantive
    changed_by_severity: dict[str, int] = field(default_factory=dict)  # CRITICAL/HIGH/MEDIUM/INFO
    withdrawn: int = 0
    reappeared: int = 0
    number_assigned: int = 0
    cosmetic: int = 0  # CHANGED events that are cosmetic only (shown apart, not in headline counts)
    watchlist_hits: int = 0


@dataclass(frozen=True)
class DayReport:
    day: date
    status: DayStatus
    status_reason: str  # Korean sentence: why rejected / "변경 없음" / baseline explanation
    comparison_base: date | None  # the latest accepted day before `day` (None on the baseline day)
    last_accepted_day: date | None  # equals `day` when accepted; the base when rejected
    kpis: Kpis
    events: tuple[EventRow, ...] = ()  # every event incl. cosmetic (the writer filters per sheet)
    history: tuple[HistoryPoint, ...] = ()  # last N days for the chart, ascending
    by_ingredient: tuple[AggregateRow, ...] = ()  # active registry of last_accepted_day
    by_applicant: tuple[AggregateRow, ...] = ()
    by_country: tuple[AggregateRow, ...] = ()
    gates: tuple[GateRow, ...] = ()
    quality: tuple[QualityRow, ...] = ()
    watchlist: dict[str, tuple[str, ...]] = field(default_factory=dict)  # kind -> patterns
    run_info: dict[str, str] = field(default_factory=dict)  # label -> value (run id, source, timings…)
    generated_at: datetime | None = None
    source_url: str = "https://nedrug.mfds.go.kr"  # 의약품안전나라 (search links per registration)

    @property
    def is_rejected(self) -> bool:
        return self.status is DayStatus.REJECTED

    @property
    def headline_events(self) -> tuple[EventRow, ...]:
        return tuple(e for e in self.events if not e.is_cosmetic)
