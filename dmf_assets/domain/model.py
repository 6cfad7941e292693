"""The shared vocabulary of DMF Watch: source fields, internal field names, severities, events.

Everything else (emulator, normalizer, diff, storage, workbook) speaks these names, so a field is
called the same thing from the API row to the Excel column. Pure data, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

# --- source --------------------------------------------------------------------------------------

#: API item field -> internal field name (docs/DOMAIN.md §2.1). Order is the API's documented order.
SOURCE_FIELDS: dict[str, str] = {
    "DMF_PERMIT_NO": "permit_no_raw",
    "INGR_KOR_NAME": "ingredient",
    "ENTP_NAME": "applicant",
    "MNFCTR_NAME": "manufacturer",
    "MNFCTR_PLACE": "address",
    "MANUF_COUNTRY_CODE_NM": "countries",
    "DMF_PERMIT_DATE": "issue_date",
    "BIZRNO": "bizrno",
    "NOTICE_CODE": "target_class",
}
API_FIELDS: tuple[str, ...] = tuple(SOURCE_FIELDS)

#: Documented maximum sizes (characters). Many values longer than this = the source changed shape.
SPEC_SIZES: dict[str, int] = {
    "DMF_PERMIT_NO": 200,
    "INGR_KOR_NAME": 3000,
    "ENTP_NAME": 200,
    "MNFCTR_NAME": 150,
    "MNFCTR_PLACE": 2000,
    "MANUF_COUNTRY_CODE_NM": 1000,
    "DMF_PERMIT_DATE": 30,
}

#: NOTICE_CODE values seen in the registry (empty is also normal).
TARGET_CLASSES: tuple[str, ...] = ("별표1", "별표1의2", "신물질", "기타", "인태반 유래")

#: Permit-number group letter -> (별표 table, effective date). Sort by date, not by letter.
PERMIT_GROUPS: dict[str, tuple[str, str]] = {
    "A": ("별표1", "2003-01-01"),
    "B": ("별표1", "2003-01-01"),
    "C": ("별표1", "2003-01-01"),
    "D": ("별표1", "2003-01-01"),
    "E": ("별표1", "2008-01-01"),
    "F": ("별표1", "2009-01-01"),
    "G": ("별표1", "2010-01-01"),
    "H": ("별표1", "2011-01-01"),
    "I": ("별표1", "2013-01-01"),
    "J": ("별표1", "2017-12-25"),
    "K": ("별표1의2", "2018-01-01"),
}

# --- compared fields and severity ----------------------------------------------------------------


class Severity(str, Enum):  # noqa: UP042 - StrEnum would change str() and f-strings of a member ("Severity.X" -> "X")
    CRITICAL = "CRITICAL"
    HIGH = "HIGH"
    MEDIUM = "MEDIUM"
    INFO = "INFO"
    COSMETIC = "COSMETIC"


SEVERITY_RANK: dict[str, int] = {"CRITICAL": 4, "HIGH": 3, "MEDIUM": 2, "INFO": 1, "COSMETIC": 0}
SEVERITY_LABEL_KO: dict[str, str] = {
    "CRITICAL": "심각",
    "HIGH": "높음",
    "MEDIUM": "보통",
    "INFO": "정보",
    "COSMETIC": "표기 변경",
}


class EventType(str, Enum):  # noqa: UP042 - StrEnum would change str() and f-strings of a member ("EventType.X" -> "X")
    NEW = "NEW"
    CHANGED = "CHANGED"
    WITHDRAWN = "WITHDRAWN"

    @property
    def label_ko(self) -> str:
        return EVENT_LABEL_KO[self.value]


#: What people read for an event. A registration gone from the list is said as observed: the registry does not
#: say whether the applicant withdrew it (취하) or MFDS cancelled it (docs/DOMAIN.md §5).
EVENT_LABEL_KO: dict[str, str] = {"NEW": "신규", "CHANGED": "변경", "WITHDRAWN": "목록에서 삭제"}
#: the first mention of a disappearance in a text (a legend, a definition) may say what it usually is
WITHDRAWN_FIRST_MENTION_KO = "목록에서 삭제 (취하 등)"
#: the two number events (docs/DOMAIN.md §4), each CHANGED and each counted apart from 변경
NUMBER_ASSIGNED_LABEL_KO = "등록번호 부여"
NUMBER_CHANGED_LABEL_KO = "등록번호 변경"

#: The short words of the headline figures (mail subject, 요약, the UI, CLI lines): 「신규 2 · 변경 1 · 삭제 0」,
#: with 「번호 부여 N」 and 「번호 변경 N」 only on a day that has one (`domain.diff` counts, runs table columns).
COUNT_LABEL_KO: dict[str, str] = {
    "NEW": "신규",
    "CHANGED": "변경",
    "WITHDRAWN": "삭제",
    "NUMBER_ASSIGNED": "번호 부여",
    "NUMBER_CHANGED": "번호 변경",
    "REAPPEARED": "재등장",
    "COSMETIC": "표기 변경",
}


def event_label(event_type: str, *, number_changed: bool = False, number_assigned: bool = False) -> str:
    """An event's own name: 「등록번호 변경」 for a re-numbering and 「등록번호 부여」 for a number assignment (CHANGED
    events, but not a change of the registration: each is counted apart from 변경, so each has its own name), else
    EVENT_LABEL_KO."""
    if event_type == EventType.CHANGED.value and number_changed:
        return NUMBER_CHANGED_LABEL_KO
    if event_type == EventType.CHANGED.value and number_assigned:
        return NUMBER_ASSIGNED_LABEL_KO
    return EVENT_LABEL_KO.get(event_type, event_type)


def possible_renumbering_text(number: str | None, candidates: tuple[str, ...] | list[str]) -> str:
    """「등록번호 변경 가능성: A ↔ B, C」 — a disappearance and a new registration alike in everything but the
    number, not paired because the pairing was not unique (docs/DOMAIN.md §4)."""
    return f"{NUMBER_CHANGED_LABEL_KO} 가능성: {number} ↔ {', '.join(candidates)}"


def event_title(
    event_type: str, permit_no: str | None, *, number_changed: bool, previous: str | None, number_assigned: bool = False
) -> str:
    """The event's name as people read it: 「등록번호 변경 A → B」 for a re-numbering — one registration, its
    published number corrected (docs/DOMAIN.md §4; A: its `previous` number) — else `event_label`'s 「신규」, 「변경」,
    「목록에서 삭제」, 「등록번호 부여」."""
    if number_changed:
        return f"{NUMBER_CHANGED_LABEL_KO} {previous} → {permit_no}"
    return event_label(event_type, number_assigned=number_assigned)


def previous_number(changes: Iterable[Any], base_dmf_key: str | None) -> str | None:
    """The number a re-numbered registration was listed under before: its permit_no change's before value (the
    base's key when the event carries no such change)."""
    return next((c.before for c in changes if c.field == "permit_no"), base_dmf_key)


def renumbering_note(number: str | None, candidates: tuple[str, ...] | list[str]) -> str | None:
    """「등록번호 변경 가능성: A ↔ B」 on a NEW or a disappearance that may be one half of a re-numbering; None
    when it has no candidates."""
    return possible_renumbering_text(number, candidates) if candidates else None


class DayStatus(str, Enum):  # noqa: UP042 - StrEnum would change str() and f-strings of a member ("DayStatus.X" -> "X")
    """What became of a day, declared once with everything people read of it: the stored value (also the English
    term), the short Korean word, the sentence of 요약's 상태 row and its colour (the workbook's banner and tab, the
    web page's tag). `label_ko_en` — 「거부 (rejected)」 — is how the Dagster UI's metadata says it. Every layer passes
    a member, never the bare string; the database stores `value` (`runs.status`: accepted | baseline | rejected |
    pending; UNCHANGED is an accepted day without events, NOT_RUN a day without a row)."""

    word_ko: str
    label_ko: str
    colour: str  # RGB hex

    ACCEPTED = ("accepted", "반영", "정상 수집 · 비교 완료", "1F3864")  # all six gates passed; events against the base
    BASELINE = ("baseline", "기준일", "기준일 (최초 수집 — 비교 대상 없음)", "2F5597")  # first accepted day: no events
    UNCHANGED = ("unchanged", "변경 없음", "정상 수집 · 변경 없음", "548235")  # accepted, identical to the base
    REJECTED = ("rejected", "거부", "수집 실패 — 결과 미반영", "C00000")  # a gate failed: nothing written, base kept
    PENDING = ("pending", "판정만", "판정만 — 아직 반영 전", "7F7F7F")  # judged by gates 1–5, not yet committed
    NOT_RUN = ("not_run", "미실행", "실행 기록 없음", "BFBFBF")  # no run recorded at all

    def __new__(cls, value: str, word_ko: str, label_ko: str, colour: str) -> DayStatus:
        member = str.__new__(cls, value)
        member._value_ = value
        member.word_ko = word_ko
        member.label_ko = label_ko
        member.colour = colour
        return member

    @property
    def label_en(self) -> str:
        return self.value

    @property
    def label_ko_en(self) -> str:
        """「거부 (rejected)」: the Korean word with the English term in brackets (the UI's metadata)."""
        return f"{self.word_ko} ({self.label_en})"

    @property
    def is_accepted(self) -> bool:
        """All six gates passed: the day is in the history (with or without events)."""
        return self in (DayStatus.ACCEPTED, DayStatus.BASELINE, DayStatus.UNCHANGED)

    @classmethod
    def of_value(cls, value: str | None) -> DayStatus:
        """The member stored as `value` (None: no run recorded — NOT_RUN); ValueError names an unknown one."""
        if value is None:
            return cls.NOT_RUN
        for member in cls:
            if member.value == value:
                return member
        raise ValueError(f"{value!r} is not a valid DayStatus")

    @classmethod
    def of_run(cls, status: str, events: int) -> DayStatus:
        """The day's status from its stored run status and how many events (cosmetic included) it recorded: an
        accepted day without any is UNCHANGED."""
        if status == cls.ACCEPTED.value and events == 0:
            return cls.UNCHANGED
        return cls.of_value(status)


#: the stored run statuses of a day in the history (the SQL's `status IN (…)`)
ACCEPTED_STATUSES: tuple[str, ...] = (DayStatus.ACCEPTED.value, DayStatus.BASELINE.value)


def substantive_changes(changed: int | None, number_assigned: int | None, number_changed: int | None) -> int:
    """실질 변경 (the headline 「변경」): CHANGED events that are neither cosmetic nor a number event.

    The one definition every count people read follows — the workbook, the mail, the UI's metadata and
    gate 6's observed text. A number assignment (번호 부여) and a number change (번호 변경) are headline
    figures of their own. The stored `changed_count` (and the diff's `counts["CHANGED"]`) counts every
    non-cosmetic CHANGED event, number events included; sql/queries/report.sql subtracts `assigned_count`
    and `renumbered_count` the same way."""
    return (changed or 0) - (number_assigned or 0) - (number_changed or 0)


#: Fields compared by the diff, in display order, with the severity of a substantive change
#: (docs/DOMAIN.md §5). `permit_no` changes when a registration receives its number (INFO) or when its
#: published number is corrected (`RENUMBERED_SEVERITY`).
COMPARED_FIELDS: dict[str, Severity] = {
    "permit_no": Severity.INFO,
    "ingredient": Severity.HIGH,
    "applicant": Severity.HIGH,
    "bizrno": Severity.HIGH,
    "manufacturer": Severity.CRITICAL,
    "address": Severity.CRITICAL,
    "countries": Severity.CRITICAL,
    "issue_date": Severity.MEDIUM,
    "target_class": Severity.MEDIUM,
}

#: a registration re-numbered: a record the team must copy into its documents, not a supply risk (§4)
RENUMBERED_SEVERITY = Severity.MEDIUM

FIELD_LABEL_KO: dict[str, str] = {
    "permit_no": "등록번호",
    "ingredient": "성분명",
    "applicant": "신청인",
    "bizrno": "사업자등록번호",
    "manufacturer": "제조소명",
    "address": "제조소 소재지",
    "countries": "제조국",
    "issue_date": "발급일자",
    "target_class": "대상의약품",
    "sites": "제조소(사이트)",
}


def field_labels(*fields: str, sep: str = "·") -> str:
    """「등록번호·성분명·신청인」: several fields named in a text, from the one label table."""
    return sep.join(FIELD_LABEL_KO[f] for f in fields)


def missing(field: str) -> str:
    """「(신청인 없음)」: how a text names a field that has no value."""
    return f"({FIELD_LABEL_KO[field]} 없음)"


#: Field name of site-level change rows (one row per added/removed/changed site, always CRITICAL).
#: Not a compared field of its own: it details manufacturer/address/countries changes site by site,
#: so `Event.changed_fields` (and the emulator's ground truth) keep naming only COMPARED_FIELDS.
SITES_FIELD = "sites"
SITE_FIELDS: tuple[str, ...] = ("manufacturer", "address", "countries")

#: For every compared field: the column holding its display value and the column holding its
#: matching key in the normalized frame. Equal keys with different display values = COSMETIC.
FIELD_COLUMNS: dict[str, tuple[str, str]] = {
    "permit_no": ("permit_no", "permit_no"),
    "ingredient": ("ingredient", "ingredient_key"),
    "applicant": ("applicant", "applicant_key"),
    "bizrno": ("bizrno", "bizrno"),
    "manufacturer": ("manufacturer", "manufacturer_key"),
    "address": ("address", "address_key"),
    "countries": ("countries", "countries_key"),
    "issue_date": ("issue_date", "issue_date"),
    "target_class": ("target_class", "target_class_key"),
}

# --- the normalized frame ------------------------------------------------------------------------
#: Columns produced by `domain.normalize.normalize_items` (polars), one row per API item.
#: Display values are what people read; *_key columns are the matching keys (docs/DOMAIN.md §3).
NORMALIZED_COLUMNS: dict[str, str] = {
    "row_no": "Int32 — position in the fetched order (after page concatenation), for audit",
    "permit_no_raw": "Utf8? — DMF_PERMIT_NO exactly as received",
    "permit_no": "Utf8? — NFKC, punctuation folded, whitespace removed, upper-case; null if blank",
    "permit_fmt": "Utf8 — standard | new_substance | unknown | missing",
    "permit_accept_date": "Utf8? — ISO date of the 8-digit acceptance-date prefix (standard)",
    "permit_ingr_no": "Utf8? — 별표1 ingredient no. (standard) / first number (new_substance)",
    "permit_group": "Utf8? — group letters: A..K, HP, …, ND for new substances",
    "permit_serial": "Utf8? — serial token",
    "permit_seq": "Utf8? — same-ingredient sequence (absent for group J)",
    "permit_grant": "Utf8? — grant suffix without parentheses: '1', '14', 'A', …",
    "permit_prefix": "Utf8? — Hangul prefix of new-substance numbers ('수')",
    "permit_table": "Utf8? — 별표1 | 별표1의2 from the group letter",
    "permit_group_date": "Utf8? — ISO effective date of the group",
    "base_permit_no": "Utf8? — grant-derived (n)/(A) numbers: the original number without the grant suffix",
    "cohort": "Utf8? — '{ingredient no}-{group}' (leading zeros dropped), e.g. '71-B', '6580-ND'",
    "ingredient": "Utf8? display",
    "ingredient_key": "Utf8? matching key",
    "ingredient_base": "Utf8? base name (aggregation only)",
    "is_micronized": "Boolean",
    "applicant": "Utf8? display",
    "applicant_key": "Utf8? key (legal-form words removed)",
    "manufacturer": "Utf8? display",
    "manufacturer_key": "Utf8? key (legal-form words removed)",
    "address": "Utf8? display",
    "address_key": "Utf8? key",
    "countries": "Utf8? display (normalized text, source order kept)",
    "countries_key": "Utf8? canonical names, de-duplicated, sorted, joined with '|'",
    "country_list": "List[Utf8] canonical country per site, in source order",
    "site_count": "Int32 — number of sites = number of country entries",
    "sites": "List[Struct{name, address, country, role}] per-site split",
    "sites_split_ok": "Boolean — manufacturer/address split into exactly site_count parts",
    "issue_date": "Utf8? ISO YYYY-MM-DD; null if missing or invalid",
    "issue_date_invalid": "Boolean — a value was present but not a valid date",
    "bizrno": "Utf8? 10 digits, separators removed; null if blank",
    "bizrno_valid": "Boolean — exactly 10 digits",
    "target_class": "Utf8? display",
    "target_class_key": "Utf8? key",
    "oversize_fields": "List[Utf8] — API fields whose raw value exceeds SPEC_SIZES",
    "has_replacement_char": "Boolean — U+FFFD anywhere in the raw row",
    "unresolved_countries": "List[Utf8] — country names not in the alias table",
}

# --- events --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FieldChange:
    field: str
    before: str | None
    after: str | None
    is_cosmetic: bool
    severity: Severity


@dataclass(frozen=True)
class Event:
    """One registration-level change between the comparison base and the day (docs/DOMAIN.md §5)."""

    event_type: EventType
    dmf_key: str  # today's key (NEW/CHANGED) or the base key (WITHDRAWN)
    permit_no: str | None
    severity: Severity  # worst non-cosmetic field, raised by flags/watchlist; COSMETIC if only cosmetic
    base_dmf_key: str | None = None  # base key when it differs (number assigned, duplicate group)
    is_cosmetic: bool = False  # CHANGED where every field change is cosmetic
    is_reappearance: bool = False  # NEW that was withdrawn before
    number_assigned: bool = False  # CHANGED: a synthetic-key registration received its number
    number_changed: bool = False  # CHANGED: a numbered registration listed under another number (re-numbered)
    is_transfer: bool = False  # BIZRNO changed (양도양수)
    is_rename: bool = False  # applicant name changed, BIZRNO unchanged
    watchlist_hit: bool = False
    watch_reasons: tuple[str, ...] = ()
    changes: tuple[FieldChange, ...] = ()
    #: NEW / WITHDRAWN: the numbers a re-numbering with this one is possible with (not paired: not unique)
    renumber_candidates: tuple[str, ...] = ()

    @classmethod
    def from_row(cls, row: dict, changes: tuple[dict, ...] | list[dict] = ()) -> Event:
        """From an events row (frame or database) and its field-change rows."""
        return cls(
            event_type=EventType(row["event_type"]),
            dmf_key=row["dmf_key"],
            permit_no=row["permit_no"],
            severity=Severity(row["severity"]),
            base_dmf_key=row["base_dmf_key"],
            is_cosmetic=row["is_cosmetic"],
            is_reappearance=row["is_reappearance"],
            number_assigned=row["number_assigned"],
            number_changed=row["number_changed"],
            is_transfer=row["is_transfer"],
            is_rename=row["is_rename"],
            watchlist_hit=row["watchlist_hit"],
            watch_reasons=tuple(row["watch_reasons"] or ()),
            renumber_candidates=tuple(row["renumber_candidates"] or ()),
            changes=tuple(
                FieldChange(c["field"], c["before"], c["after"], c["is_cosmetic"], Severity(c["severity"]))
                for c in changes
            ),
        )

    @property
    def changed_fields(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(c.field for c in self.changes if not c.is_cosmetic and c.field in COMPARED_FIELDS))

    @property
    def site_changes(self) -> tuple[FieldChange, ...]:
        return tuple(c for c in self.changes if c.field == SITES_FIELD)

    @property
    def cosmetic_fields(self) -> tuple[str, ...]:
        return tuple(c.field for c in self.changes if c.is_cosmetic)

    @property
    def label_ko(self) -> str:
        """「등록번호 변경 A → B」 for a re-numbering, else the event's name (`event_title`)."""
        before = previous_number(self.changes, self.base_dmf_key)
        return event_title(
            self.event_type.value,
            self.permit_no,
            number_changed=self.number_changed,
            previous=before,
            number_assigned=self.number_assigned,
        )


# --- ground truth (emulator) ---------------------------------------------------------------------


@dataclass(frozen=True)
class TruthChange:
    """What really happened to one registration between two emulator dates.

    `permit_no` is the registration's number on the later date (NEW/CHANGED) or on the earlier
    date (WITHDRAWN); None while it has no number. `entity_id` is the emulator's own identity.
    """

    entity_id: int
    event_type: EventType
    permit_no: str | None
    base_permit_no: str | None = None  # number on the earlier date (None if it had none)
    substantive_fields: frozenset[str] = frozenset()  # COMPARED_FIELDS names whose meaning changed
    cosmetic_fields: frozenset[str] = frozenset()  # re-typed only (same matching key)
    is_reappearance: bool = False
    number_assigned: bool = False
    number_changed: bool = False  # listed under another number, everything else the same registration
    is_transfer: bool = False


@dataclass(frozen=True)
class GroundTruth:
    old_date: str
    new_date: str
    changes: tuple[TruthChange, ...] = field(default_factory=tuple)

    def of_type(self, event_type: EventType) -> tuple[TruthChange, ...]:
        return tuple(c for c in self.changes if c.event_type is event_type)
