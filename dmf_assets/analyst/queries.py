"""What analysts ask the history (docs/DOMAIN.md §10): one registration's history, the registry as of a day.

Read-only: every function takes an open connection and returns plain data (dataclasses / polars), so
the CLI, the workbooks and tests share one implementation. SQL lives in sql/queries/analyst.sql, run by
`storage/analyst.py`. The
registry as of a day is a plain storage read (`storage.registry`, also used by the daily report).
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_left
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import date

import duckdb

from dmf_assets.domain.diff import SUMMARY_COLUMNS
from dmf_assets.domain.keys import SYNTHETIC_PREFIX
from dmf_assets.domain.model import (
    NUMBER_ASSIGNED_LABEL_KO,
    NUMBER_CHANGED_LABEL_KO,
    event_title,
    previous_number,
    renumbering_note,
)
from dmf_assets.domain.permit import parse_permit
from dmf_assets.domain.text import match_key
from dmf_assets.korean import josa
from dmf_assets.report.rows import FLAG_LABELS
from dmf_assets.report.sentences import change_line
from dmf_assets.storage import analyst as storage
from dmf_assets.storage import history

#: --ingredient / --applicant / --manufacturer -> the kind of matching key the pattern is turned into
PATTERN_KINDS: dict[str, str] = {"ingredient": "text", "applicant": "company", "manufacturer": "company"}


# --- finding registrations ------------------------------------------------------------------------


def normalize_key(text: str) -> str:
    """What a user typed -> the stored key: any spelling of a permit number, '…#2', or 'SYN-…'."""
    raw = text.strip()
    if raw.upper().startswith(SYNTHETIC_PREFIX):
        return SYNTHETIC_PREFIX + raw[len(SYNTHETIC_PREFIX) :].strip().lower()
    number, sep, dup = raw.partition("#")
    normalized = parse_permit(number).permit_no or number
    return f"{normalized}#{dup.strip()}" if sep else normalized


def find_records(
    conn: duckdb.DuckDBPyConnection,
    key: str | None = None,
    *,
    ingredient: str | None = None,
    applicant: str | None = None,
    manufacturer: str | None = None,
) -> list[int]:
    """record_ids of the registrations a key and/or patterns name (all given criteria must hold).

    Patterns match like the watchlist: the pattern's matching key is a substring of the field's key in
    any version, so spacing, punctuation, case and legal-form words never matter.
    """
    found: list[set[int]] = []
    if key:
        k = normalize_key(key)
        ids = storage.records_by_key(conn, k)
        if not ids and (compact := compact_key(key)):  # typed with other spacing or punctuation
            ids = storage.records_by_compact_key(conn, compact)
        found.append(ids)
    for column, pattern in (("ingredient", ingredient), ("applicant", applicant), ("manufacturer", manufacturer)):
        if pattern:
            needle = match_key(pattern, PATTERN_KINDS[column]) or ""
            found.append(storage.records_by_pattern(conn, column, needle) if needle else set())
    return sorted(set.intersection(*found)) if found else []


#: what a compact permit number leaves out: all but digits, capitals and Hangul (sql/queries/analyst.sql says it too)
NOT_COMPACT = r"[^0-9A-Z가-힣]"


def compact_key(text: str) -> str:
    """A permit number with everything but letters and digits removed ("20240418 54 C 374 06" ->
    "2024041854C37406"), as `analyst.records_by_compact_key` compares the stored numbers."""
    return re.sub(NOT_COMPACT, "", unicodedata.normalize("NFKC", text).upper())


# --- one registration's history -------------------------------------------------------------------


def sites_text(sites: Sequence[Mapping[str, str | None]] | None) -> str | None:
    """Sites as numbered lines: '1. [role] Name (country)'."""
    if not sites:
        return None
    lines = []
    for i, s in enumerate(sites, 1):
        role = f"[{s['role']}] " if s.get("role") else ""
        lines.append(f"{i}. {role}{s.get('name') or '(제조소명 없음)'} ({s.get('country') or '국가 미상'})")
    return "\n".join(lines)


def site_addresses(sites: Sequence[Mapping[str, str | None]] | None) -> tuple[str, ...]:
    """Each site's address, in the sites' order, when the record has several sites and every one of them has an
    address of its own (the split of MNFCTR_PLACE held); () otherwise — then the field is shown as MFDS wrote it."""
    addresses = tuple(s.get("address") or "" for s in sites or ())
    return addresses if len(addresses) > 1 and all(addresses) else ()


@dataclass(frozen=True)
class HistoryChange:
    field: str
    before: str | None
    after: str | None
    is_cosmetic: bool
    severity: str

    @property
    def text(self) -> str:
        return change_line(self.field, self.before, self.after)


@dataclass(frozen=True)
class HistoryEvent:
    day: date
    base_day: date | None
    event_type: str
    severity: str
    dmf_key: str
    base_dmf_key: str | None
    permit_no: str | None
    is_cosmetic: bool
    flags: tuple[str, ...]
    watch_reasons: tuple[str, ...]
    ingredient: str | None
    applicant: str | None
    manufacturer: str | None
    countries: str | None
    changes: tuple[HistoryChange, ...] = ()
    number_assigned: bool = False
    number_changed: bool = False
    renumber_candidates: tuple[str, ...] = ()  # NEW / WITHDRAWN: a re-numbering with these is possible

    @property
    def label(self) -> str:
        """The event's name as people read it: 「등록번호 변경 A → B」, 「신규」, 「변경」, 「목록에서 삭제」, 「등록번호 부여」."""
        before = previous_number(self.changes, self.base_dmf_key)  # the workbook's rule
        return event_title(
            self.event_type,
            self.permit_no,
            number_changed=self.number_changed,
            previous=before,
            number_assigned=self.number_assigned,
        )

    @property
    def note(self) -> str | None:
        """「등록번호 변경 가능성: A ↔ B」 when this NEW or WITHDRAWN may be one half of a re-numbering."""
        return renumbering_note(self.permit_no, self.renumber_candidates)

    @property
    def changes_text(self) -> str:
        """Its changes as lines (a cosmetic one marked 「(표기)」) and its note: `dmf history`'s csv and workbook."""
        lines = [c.text + (" (표기)" if c.is_cosmetic else "") for c in self.changes]
        return "\n".join(lines + ([self.note] if self.note else []))


@dataclass(frozen=True)
class HistoryVersion:
    dmf_key: str
    version_no: int  # 1, 2, … per registration (across the numbers it was listed under), in the order first observed
    first_day: date | None
    last_day: date | None
    days_observed: int
    values: dict = field(default_factory=dict)
    addresses: tuple[str, ...] = ()  # per site (`site_addresses`)


@dataclass(frozen=True)
class ListedSpan:
    """A stretch of consecutive accepted days in which one registration was listed as one version — or,
    with `version_no` None, was not listed at all (gone from the list; `continued_as` when it received its
    number, or was listed under another number — `renumbered` — and lives on under that key). Rejected and
    unprocessed days neither start nor end a span."""

    dmf_key: str
    version_no: int | None
    first_day: date
    last_day: date
    accepted_days: int
    continued_as: str | None = None
    reappeared: bool = False  # listed again after a span in which it was not
    renumbered: bool = False  # `continued_as` is a corrected number, not the number received
    gone_since: date | None = None  # reappeared: the first accepted day it was missing from the list

    @property
    def listed(self) -> bool:
        return self.version_no is not None

    @property
    def state(self) -> str:
        """What the span's registration was in it: 「버전 N」, 「등록번호 변경」/「등록번호 부여」, or 「목록에 없음」."""
        if self.version_no is not None:
            return f"버전 {self.version_no}"
        if self.continued_as:
            return NUMBER_CHANGED_LABEL_KO if self.renumbered else NUMBER_ASSIGNED_LABEL_KO
        return "목록에 없음"

    @property
    def text(self) -> str:
        days = f"정상 반영일 {self.accepted_days:,}일"
        if self.version_no is not None:
            since = f" {self.gone_since}부터 목록에 없다가" if self.gone_since else ""
            again = f" —{since} {self.first_day}에 다시 목록에 오름 (재등장)" if self.reappeared else ""
            return f"버전 {self.version_no}: {self.first_day} ~ {self.last_day} ({days} 목록에 있음){again}"
        if self.continued_as:
            return f"{self.first_day}부터 {josa(self.continued_as, '으로/로')} 이어짐 ({self.state})"
        return f"목록에서 삭제: {self.first_day} ~ {self.last_day} 목록에 없음 ({days})"


@dataclass(frozen=True)
class RegistrationHistory:
    record_ids: tuple[int, ...]
    versions: tuple[HistoryVersion, ...]
    events: tuple[HistoryEvent, ...]
    spans: tuple[ListedSpan, ...] = ()


#: what a registration says, in the order the analyst's outputs list it (`dmf asof`, a version of `dmf history`): the
#: diff's summary columns without the number, with the count of sites after the countries
CONTENT_COLUMNS = tuple(
    column
    for summary in SUMMARY_COLUMNS
    if summary != "permit_no"
    for column in ((summary, "site_count") if summary == "countries" else (summary,))
)
#: the fields of a `HistoryEvent` that a row of `analyst.record_events` holds as they are, and those built from it
_BUILT = ("day", "base_day", "flags", "watch_reasons", "changes", "renumber_candidates")
_EVENT_AS_STORED = tuple(f.name for f in fields(HistoryEvent) if f.name not in _BUILT)
#: a version's values: its number, what it says (without the base name, which only counts) and its grant
_VERSION_VALUES = ("permit_no", *(c for c in CONTENT_COLUMNS if c != "ingredient_base"), "base_permit_no", "cohort")


def registration_history(
    conn: duckdb.DuckDBPyConnection, record_ids: list[int], *, start: date | None = None, end: date | None = None
) -> RegistrationHistory:
    """Every version (with the accepted days it was seen), the spans in which it was listed or not, and
    every event of the registrations — the events observed in [start, end] when given."""
    per_registration: Counter[int] = Counter()
    version_no: dict[int, int] = {}
    versions = []
    for v in storage.record_versions(conn, record_ids):
        per_registration[v["registration_id"]] += 1
        version_no[v["version_id"]] = n = per_registration[v["registration_id"]]
        values = {k: v[k] for k in _VERSION_VALUES} | {"sites": sites_text(v["sites"])}
        first, last = history.to_date(v["first_day"]), history.to_date(v["last_day"])
        versions.append(
            HistoryVersion(v["dmf_key"], n, first, last, v["days_observed"], values, site_addresses(v["sites"]))
        )
    day_range = [history.day_id(start) if start else 0, history.day_id(end) if end else 99_991_231]
    events_raw = storage.record_events(conn, record_ids, *day_range)
    changes: dict[int, list[HistoryChange]] = {}
    if events_raw:
        for c in storage.event_changes(conn, [e["event_id"] for e in events_raw]):
            changes.setdefault(c["event_id"], []).append(
                HistoryChange(c["field"], c["before"], c["after"], c["is_cosmetic"], c["severity"])
            )
    events = tuple(
        HistoryEvent(
            **{name: e[name] for name in _EVENT_AS_STORED},
            day=history.to_date(e["day_id"]),
            base_day=history.to_date(e["base_day_id"]),
            flags=tuple(label for attr, label in FLAG_LABELS.items() if e[attr]),
            watch_reasons=tuple(e["watch_reasons"] or ()),
            changes=tuple(changes.get(e["event_id"], ())),
            renumber_candidates=tuple(e["renumber_candidates"] or ()),
        )
        for e in events_raw
    )
    # (key, day) -> (the key it continued as that day, re-numbered?): a number received, or listed under another
    links = {
        (key, history.to_date(day)): (to, renumbered)
        for key, to, day, renumbered in storage.number_links(conn, record_ids)
    }
    spans = _listed_spans(conn, record_ids, version_no, links)
    return RegistrationHistory(tuple(record_ids), tuple(versions), events, spans)


def _listed_spans(
    conn: duckdb.DuckDBPyConnection,
    record_ids: list[int],
    version_no: dict[int, int],
    links: dict[tuple[str, date], tuple[str, bool]],
) -> tuple[ListedSpan, ...]:
    """Walk the accepted days from each registration's first listing to the last accepted day: a run of
    days with the same version (or with none) is one span, so a withdrawal between two listings shows."""
    accepted = storage.accepted_days(conn)
    listed: dict[str, dict[int, int]] = {}
    for key, day_id, version_id in storage.record_presence(conn, record_ids):
        listed.setdefault(key, {})[day_id] = version_no[version_id]
    spans: list[ListedSpan] = []
    for key, days in listed.items():
        mine: list[ListedSpan] = []
        current: list = []  # [version_no, first day_id, last day_id, accepted days]
        for day_id in accepted[bisect_left(accepted, min(days)) :]:
            version = days.get(day_id)
            if current and current[0] == version:
                current[2], current[3] = day_id, current[3] + 1
                continue
            if current:
                mine.append(_span(key, current, links, mine))
            current = [version, day_id, day_id, 1]
        mine.append(_span(key, current, links, mine))
        spans += mine
    return tuple(spans)


def _span(
    key: str, current: list, links: dict[tuple[str, date], tuple[str, bool]], before: list[ListedSpan]
) -> ListedSpan:
    version, first, last, n = current
    first_day = history.to_date(first)
    # a span off the list starts on the day the registration was gone — or continued under another key
    continued_as, renumbered = links.get((key, first_day), (None, False)) if version is None else (None, False)
    gone = bool(before) and before[-1].version_no is None and before[-1].continued_as is None
    return ListedSpan(
        key,
        version,
        first_day,
        history.to_date(last),
        n,
        continued_as,
        reappeared=version is not None and gone,
        renumbered=renumbered,
        gone_since=before[-1].first_day if version is not None and gone else None,
    )
