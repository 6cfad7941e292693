"""One day's figures, counted once: every count a person reads of a day comes from one `DaySummary`.

Issue 31: the sheets, the mail, the CLI and the Dagster UI each counted for themselves, and disagreed (업체별
「제조소별 (9곳, 9건)」 on a day of 7 events; 요약 「심각 1」 beside 변경 이벤트 「심각 2」; 필드 변경 counting a 번호
부여 among its 「실질 변경」 rows). Now one frozen value holds them, built once per day:

* from the database — `report.day_data.day_summary(conn, day, products=())` (None for a day never judged): the
  CLI's per-day line and the events / snapshot_diff metadata;
* inside the day's report — `DayReport.summary`: every workbook sheet, the xlsx_report metadata, the workbook mail
  and webhook;
* in memory — `summarize(day, status, events, …)`, the pure function both of the above call.

Every count is an `int`, never None; the sizes are None when unknown. The texts (`counts_text`, `sizes_text`,
`rejection_text`, `severity_text`) are the one way each is said.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Protocol

from dmf_assets.domain.gates import GATE_BY_NUMBER
from dmf_assets.domain.model import COUNT_LABEL_KO, FIELD_LABEL_KO, SEVERITY_LABEL_KO, SEVERITY_RANK, DayStatus, missing
from dmf_assets.domain.sites import split_sites
from dmf_assets.report.model import EventRow, FieldChangeRow

#: the kinds of event a day's figures count, with their short words (`COUNT_LABEL_KO`): 변경 is 실질 변경, a number
#: assigned or changed is its own figure, and a cosmetic change is shown apart. `event_kind` puts every event in
#: exactly one.
EVENT_KIND_LABEL_KO: dict[str, str] = {
    kind: COUNT_LABEL_KO[kind]
    for kind in ("NEW", "CHANGED", "WITHDRAWN", "NUMBER_ASSIGNED", "NUMBER_CHANGED", "COSMETIC")
}
#: the headline figures, in the order every text says them (the number events only on a day that has one)
HEADLINE_KINDS: tuple[str, ...] = ("NEW", "CHANGED", "WITHDRAWN", "NUMBER_ASSIGNED", "NUMBER_CHANGED")
#: the figures by name, as a `DaySummary`, a `HistoryPoint` and the runs table call them ('new' counts NEW …)
FIGURES: tuple[str, ...] = tuple(kind.lower() for kind in EVENT_KIND_LABEL_KO)
HEADLINE_FIGURES: tuple[str, ...] = tuple(kind.lower() for kind in HEADLINE_KINDS)
#: headline kinds said only when they happened
OPTIONAL_KINDS: tuple[str, ...] = ("NUMBER_ASSIGNED", "NUMBER_CHANGED")
#: severities of headline events, most severe first (COSMETIC is a kind, not a headline severity)
HEADLINE_SEVERITIES: tuple[str, ...] = tuple(s for s in SEVERITY_RANK if s != "COSMETIC")

#: the kinds of a field-change row (필드 변경): the 등록번호 row of a number event is never a 실질 변경
CHANGE_KIND_LABEL_KO: dict[str, str] = {
    "SUBSTANTIVE": "실질 변경",
    "NUMBER_ASSIGNED": EVENT_KIND_LABEL_KO["NUMBER_ASSIGNED"],
    "NUMBER_CHANGED": EVENT_KIND_LABEL_KO["NUMBER_CHANGED"],
    "COSMETIC": EVENT_KIND_LABEL_KO["COSMETIC"],
}
#: 업체별's two lists: applicants, and manufacturers (one per site), with their words
COMPANY_KINDS: dict[str, str] = {"applicant": FIELD_LABEL_KO["applicant"], "manufacturer": "제조소"}


def event_kind(ev: EventRow) -> str:
    """The one figure an event counts in (an `EVENT_KIND_LABEL_KO` key)."""
    if ev.is_cosmetic:
        return "COSMETIC"
    if ev.event_type == "CHANGED" and ev.number_assigned:
        return "NUMBER_ASSIGNED"
    if ev.event_type == "CHANGED" and ev.number_changed:
        return "NUMBER_CHANGED"
    return ev.event_type


def change_kind(ev: EventRow, c: FieldChangeRow) -> str:
    """The kind of one field-change row of `ev` (a `CHANGE_KIND_LABEL_KO` key). 등록번호 changes only when a
    registration receives its number or has it corrected (docs/DOMAIN.md §4): that row is the number event, never
    a 실질 변경."""
    if c.is_cosmetic:
        return "COSMETIC"
    if c.field != "permit_no":
        return "SUBSTANTIVE"
    return "NUMBER_CHANGED" if ev.number_changed else "NUMBER_ASSIGNED"


def companies(ev: EventRow) -> dict[str, list[str]]:
    """The companies an event belongs to on 업체별: its applicant, and the manufacturer of each of its sites (a
    multi-site registration names several; the field as published when no site was split out)."""
    sites = [site.name for site in split_sites(ev.manufacturer, ev.address, ev.countries).sites if site.name]
    names = list(dict.fromkeys(sites)) or ([ev.manufacturer] if ev.manufacturer else [])
    return {"applicant": [ev.applicant or missing("applicant")], "manufacturer": names or [missing("manufacturer")]}


class _Figure:
    """A figure of `DaySummary` read from its `by_kind`: the count of the kind it is named after (`new` -> NEW)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.kind = name.upper()

    def __get__(self, summary: DaySummary, owner: type | None = None) -> int:
        return summary.by_kind.get(self.kind, 0)


@dataclass(frozen=True)
class DaySummary:
    """Every figure of one day (the module docstring says who builds and reads it). Frozen: it is made once and
    read everywhere."""

    day: date
    status: DayStatus
    comparison_base: date | None = None
    registry_size: int | None = None  # the day's accepted snapshot; None on a rejected day
    base_registry_size: int | None = None  # the comparison base's snapshot
    received: int | None = None  # rows the source sent that day (after removing identical rows received twice)
    total_count: int | None = None  # the size the source announced that day
    rejected_gate: int | None = None  # the gate that refused the day
    by_kind: Mapping[str, int] = field(default_factory=dict)  # EVENT_KIND_LABEL_KO key -> events
    by_severity: Mapping[str, int] = field(default_factory=dict)  # headline events per severity (sums to them)
    by_kind_severity: Mapping[tuple[str, str], int] = field(default_factory=dict)  # (kind, severity) -> events
    reappeared: int = 0  # NEW events of registrations that had left the list before (counted in `new`)
    applicants: int = 0  # applicants with a headline event
    manufacturers: int = 0  # manufacturers (per site) with a headline event
    field_rows: Mapping[str, int] = field(default_factory=dict)  # CHANGE_KIND_LABEL_KO key -> 필드 변경 rows
    watchlist_hits: int = 0  # headline events matching the watchlist
    product_hits: int = 0  # headline events touching the team's products

    # -- the headline figures: each its kind's count (변경 is 실질 변경: neither cosmetic nor a number event; a
    # re-numbered registration is one 번호 변경, never a 삭제 and a 신규) --
    new = _Figure()
    changed = _Figure()
    withdrawn = _Figure()
    number_assigned = _Figure()
    number_changed = _Figure()
    cosmetic = _Figure()

    @property
    def headline_events(self) -> int:
        return sum(self.by_kind.get(k, 0) for k in HEADLINE_KINDS)

    @property
    def events(self) -> int:
        """Every event of the day, cosmetic ones included."""
        return sum(self.by_kind.values())

    @property
    def is_rejected(self) -> bool:
        return self.status is DayStatus.REJECTED

    @property
    def last_accepted_day(self) -> date | None:
        return self.comparison_base if self.is_rejected else self.day

    @property
    def gap_days(self) -> int:
        """Days the comparison covers (1 = yesterday's base; more after rejected or missing days; 0 without one)."""
        if self.comparison_base is None or self.is_rejected:
            return 0
        return (self.day - self.comparison_base).days

    @property
    def covers_text(self) -> str:
        """「 (N일치 변경)」 when the comparison base is more than one day back."""
        return f" ({self.gap_days}일치 변경)" if self.gap_days > 1 else ""

    @property
    def withdrawal_registry_size(self) -> int | None:
        """The registry the withdrawals left: the base's, the day's when the base's size is unknown."""
        return self.base_registry_size or self.registry_size

    @property
    def withdrawal_share(self) -> float | None:
        """The withdrawals as a share of `withdrawal_registry_size`, on a day whose diff was committed — what the
        workbook's banner and the alert both judge."""
        size = self.withdrawal_registry_size
        committed = self.status in (DayStatus.ACCEPTED, DayStatus.UNCHANGED)
        return self.withdrawn / size if committed and size else None

    @property
    def shown_registry_size(self) -> int | None:
        """The registry the sheets list (전체현황, the aggregates): the day's, or the base's on a rejected day."""
        return self.base_registry_size if self.is_rejected else self.registry_size

    # -- the figures in words --

    @property
    def counts_text(self) -> str:
        """「신규 5 · 변경 6 · 삭제 0」, with 「 · 번호 부여 1」 / 「 · 번호 변경 1」 on a day that has one."""
        return headline_counts(self)

    @property
    def sizes_text(self) -> str:
        """「받은 목록 9,197건 · 원천이 밝힌 전체 9,217건 · 비교 기준일 2026-11-20 등록 9,217건」 (the parts known)."""
        parts = []
        if self.received is not None:
            parts.append(f"받은 목록 {self.received:,}건")
        if self.total_count is not None:
            parts.append(f"원천이 밝힌 전체 {self.total_count:,}건")
        if self.comparison_base is not None and self.base_registry_size is not None:
            parts.append(f"비교 기준일 {self.comparison_base.isoformat()} 등록 {self.base_registry_size:,}건")
        return " · ".join(parts)

    @property
    def rejection_text(self) -> str:
        """Why a rejected day was not applied, as the team reads it: 「완전성 검사에서 거부되어 이 날 받은 목록을
        반영하지 않았습니다 (받은 목록 9,197건 · …).」 Empty for a day that was not rejected. The technical reason
        (observed value, threshold, config key) is the engineer's alert, not the team's."""
        if not self.is_rejected:
            return ""
        gate = GATE_BY_NUMBER.get(self.rejected_gate or 0)
        text = f"{gate.label_ko} 검사에서 거부되어" if gate else "수집이 거부되어"
        sizes = f" ({self.sizes_text})" if self.sizes_text else ""
        return f"{text} 이 날 받은 목록을 반영하지 않았습니다{sizes}."

    @property
    def severity_text(self) -> str:
        """「심각 2 · 높음 1 · 보통 0 · 정보 4」 — the headline events per severity (withdrawals included)."""
        return " · ".join(f"{SEVERITY_LABEL_KO[s]} {self.by_severity.get(s, 0):,}" for s in HEADLINE_SEVERITIES)


class HeadlineFigures(Protocol):
    """What has the headline figures: a `DaySummary`, a trend `HistoryPoint`, the mail's `ReportDelivery`."""

    # read-only members: a frozen dataclass has them too
    @property
    def new(self) -> int: ...
    @property
    def changed(self) -> int: ...  # 실질 변경
    @property
    def withdrawn(self) -> int: ...
    @property
    def number_assigned(self) -> int: ...
    @property
    def number_changed(self) -> int: ...


def headline_counts(c: HeadlineFigures) -> str:
    """「신규 5 · 변경 6 · 삭제 0」, with 「· 번호 부여 1」 / 「· 번호 변경 1」 on a day that has one — the one way every
    text says the headline. `changed` is 실질 변경: a number event is its own figure, never in 변경 or 삭제."""
    return headline_text(**{kind.lower(): getattr(c, kind.lower()) for kind in HEADLINE_KINDS})


def headline_text(*, new: int, changed: int, withdrawn: int, number_assigned: int, number_changed: int) -> str:
    """`headline_counts` of figures that no single value holds (a period's sums, a `runs` row)."""
    figures = dict(zip(HEADLINE_KINDS, (new, changed, withdrawn, number_assigned, number_changed), strict=True))
    return " · ".join(
        f"{EVENT_KIND_LABEL_KO[k]} {figures[k]:,}" for k in HEADLINE_KINDS if k not in OPTIONAL_KINDS or figures[k]
    )


def summarize(
    day: date,
    status: DayStatus,
    events: Sequence[EventRow],
    *,
    comparison_base: date | None = None,
    registry_size: int | None = None,
    base_registry_size: int | None = None,
    received: int | None = None,
    total_count: int | None = None,
    rejected_gate: int | None = None,
) -> DaySummary:
    """The day's figures from its events (`EventRow`, with their field changes and product hits) and its run's
    facts. A rejected day committed nothing: its events are not counted, whatever is passed."""
    rejected = status is DayStatus.REJECTED
    counted = () if rejected else tuple(events)
    headline = [e for e in counted if not e.is_cosmetic]
    by_kind = Counter(event_kind(e) for e in counted)
    names: dict[str, set[str]] = {kind: set() for kind in COMPANY_KINDS}
    for ev in headline:
        for kind, found in companies(ev).items():
            names[kind].update(found)
    return DaySummary(
        day=day,
        status=status,
        comparison_base=comparison_base,
        registry_size=None if rejected else registry_size,
        base_registry_size=base_registry_size,
        received=received,
        total_count=total_count,
        rejected_gate=rejected_gate if rejected else None,
        by_kind={k: by_kind[k] for k in EVENT_KIND_LABEL_KO if by_kind[k]},
        by_severity=_count(e.severity for e in headline),
        by_kind_severity=_count((event_kind(e), e.severity) for e in counted),
        reappeared=sum(1 for e in headline if e.is_reappearance),
        applicants=len(names["applicant"]),
        manufacturers=len(names["manufacturer"]),
        field_rows=_count(change_kind(e, c) for e in counted for c in e.changes),
        watchlist_hits=sum(1 for e in headline if e.watchlist_hit),
        product_hits=sum(1 for e in headline if e.product_hits),
    )


def _count(values: Iterable) -> dict:
    return dict(Counter(values))
