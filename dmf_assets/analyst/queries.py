"""What analysts ask the history (DESIGN.md §10): one registration's history, the registry as of a day.

Read-only: every function takes an open connection and returns plain data (dataclasses / polars), so
the CLI, the workbooks and tests share one implementation. SQL lives in sql/queries/analyst.sql. The
registry as of a day is a plain storage read (`storage.registry`, also used by the daily report).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date

import duckdb

from dmf_assets.domain.keys import SYNTHETIC_PREFIX
from dmf_assets.domain.model import FIELD_LABEL_KO, SITES_FIELD
from dmf_assets.domain.permit import parse_permit
from dmf_assets.domain.sites import describe_site_change
from dmf_assets.domain.text import match_key
from dmf_assets.storage import history
from dmf_assets.storage.db import query

#: --ingredient / --applicant / --manufacturer -> the kind of matching key the pattern is turned into
PATTERN_KINDS: dict[str, str] = {"ingredient": "text", "applicant": "company", "manufacturer": "company"}


# --- finding registrations ------------------------------------------------------------------------


def normalize_key(text: str) -> str:
    """What a user typed -> the stored key: any spelling of a permit number, '…#2', or 'SYN-…'."""
    raw = text.strip()
    if raw.upper().startswith(SYNTHETIC_PREFIX):
        return SYNTHETIC_PREFIX + raw[len(SYNTHETIC_PREFIX):].strip().lower()
    number, sep, dup = raw.partition("#")
    normalized = parse_permit(number).permit_no or number
    return f"{normalized}#{dup.strip()}" if sep else normalized


def find_records(conn: duckdb.DuckDBPyConnection, key: str | None = None, *, ingredient: str | None = None,
                 applicant: str | None = None, manufacturer: str | None = None) -> list[int]:
    """record_ids of the registrations a key and/or patterns name (all given criteria must hold).

    Patterns match like the watchlist: the pattern's matching key is a substring of the field's key in
    any version, so spacing, punctuation, case and legal-form words never matter.
    """
    found: list[set[int]] = []
    if key:
        k = normalize_key(key)
        found.append({r[0] for r in conn.execute(query("analyst.records_by_key"), [k, k]).fetchall()})
    for column, pattern in (("ingredient", ingredient), ("applicant", applicant), ("manufacturer", manufacturer)):
        if pattern:
            needle = match_key(pattern, PATTERN_KINDS[column]) or ""  # type: ignore[arg-type]
            rows = conn.execute(query("analyst.records_by_pattern"), [column, needle] * 3).fetchall() if needle else []
            found.append({r[0] for r in rows})
    return sorted(set.intersection(*found)) if found else []


# --- one registration's history -------------------------------------------------------------------


def sites_text(sites) -> str | None:
    """Sites as numbered lines: '1. [role] Name (country)'."""
    if not sites:
        return None
    lines = []
    for i, s in enumerate(sites, 1):
        role = f"[{s['role']}] " if s.get("role") else ""
        lines.append(f"{i}. {role}{s.get('name') or '(제조소명 없음)'} ({s.get('country') or '국가 미상'})")
    return "\n".join(lines)


def change_text(field_name: str, before: str | None, after: str | None) -> str:
    """One change row as people read it: '제조소명: A → B' or '제조소 추가: Name (중국)'."""
    if field_name == SITES_FIELD:
        return describe_site_change(before, after)
    label = FIELD_LABEL_KO.get(field_name, field_name)
    return f"{label}: {before if before not in (None, '') else '(없음)'} → {after if after not in (None, '') else '(없음)'}"


@dataclass(frozen=True)
class HistoryChange:
    field: str
    before: str | None
    after: str | None
    is_cosmetic: bool
    severity: str

    @property
    def text(self) -> str:
        return change_text(self.field, self.before, self.after)


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


@dataclass(frozen=True)
class HistoryVersion:
    dmf_key: str
    version_no: int  # 1, 2, … per registration, in the order first observed
    first_day: date | None
    last_day: date | None
    days_observed: int
    values: dict = field(default_factory=dict)


@dataclass(frozen=True)
class RegistrationHistory:
    record_ids: tuple[int, ...]
    versions: tuple[HistoryVersion, ...]
    events: tuple[HistoryEvent, ...]


_FLAGS = (("is_reappearance", "재등장"), ("number_assigned", "번호 부여"), ("is_transfer", "양도양수"),
          ("is_rename", "명칭 변경"), ("watchlist_hit", "관심목록"))
_VERSION_VALUES = ("permit_no", "ingredient", "applicant", "bizrno", "manufacturer", "address", "countries",
                   "site_count", "issue_date", "target_class", "base_permit_no", "cohort")


def _dicts(cur) -> list[dict]:
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]


def registration_history(conn: duckdb.DuckDBPyConnection, record_ids: list[int]) -> RegistrationHistory:
    """Every version (with the accepted days it was seen) and every event of the registrations."""
    versions_raw = _dicts(conn.execute(query("analyst.record_versions"), [record_ids]))
    per_key: dict[str, int] = {}
    versions = []
    for v in versions_raw:
        per_key[v["dmf_key"]] = per_key.get(v["dmf_key"], 0) + 1
        values = {k: v[k] for k in _VERSION_VALUES}
        values["sites"] = sites_text(v["sites"])
        versions.append(HistoryVersion(v["dmf_key"], per_key[v["dmf_key"]], history.to_date(v["first_day"]),
                                       history.to_date(v["last_day"]), v["days_observed"], values))
    events_raw = _dicts(conn.execute(query("analyst.record_events"), [record_ids, record_ids]))
    changes: dict[int, list[HistoryChange]] = {}
    if events_raw:
        for c in _dicts(conn.execute(query("analyst.event_changes_of"), [[e["event_id"] for e in events_raw]])):
            changes.setdefault(c["event_id"], []).append(
                HistoryChange(c["field"], c["before"], c["after"], c["is_cosmetic"], c["severity"]))
    events = tuple(
        HistoryEvent(
            day=history.to_date(e["day_id"]),
            base_day=history.to_date(e["base_day_id"]),
            event_type=e["event_type"],
            severity=e["severity"],
            dmf_key=e["dmf_key"],
            base_dmf_key=e["base_dmf_key"],
            permit_no=e["permit_no"],
            is_cosmetic=e["is_cosmetic"],
            flags=tuple(label for attr, label in _FLAGS if e[attr]),
            watch_reasons=tuple(e["watch_reasons"] or ()),
            ingredient=e["ingredient"],
            applicant=e["applicant"],
            manufacturer=e["manufacturer"],
            countries=e["countries"],
            changes=tuple(changes.get(e["event_id"], ())),
        )
        for e in events_raw
    )
    return RegistrationHistory(tuple(record_ids), tuple(versions), events)
