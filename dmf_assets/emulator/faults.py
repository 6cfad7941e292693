"""Fault injection for the MFDS emulator: which date misbehaves, and exactly how.

A `FaultPlan` maps an ISO date to one `Fault` (kind + optional params). Everything a fault does is
decided by pure functions seeded with (date, kind, …), so the same plan always produces the same
misbehaviour — a rejected demo day can be replayed and explained. No I/O here: the app applies the
decisions, the transport/server realise delays.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any


@dataclass(frozen=True)
class FaultKind:
    name: str
    ko: str  # what the emulator does, for Korean users
    en: str  # the same, for engineers
    expected: str  # the outcome the product must reach
    defaults: Mapping[str, Any] = field(default_factory=dict)


#: Every fault kind, in the order `dmf emulator faults` prints them.
FAULT_KINDS: dict[str, FaultKind] = {
    k.name: k
    for k in (
        FaultKind(
            "http_5xx_burst",
            "일부 페이지가 처음 2번 500/502/503 응답 후 정상 응답",
            "some pages answer 500/502/503 on their first 2 attempts, then normally",
            "client retries; day complete",
            {"share": 0.3, "attempts": 2},
        ),
        FaultKind(
            "rate_limit_429",
            "일부 페이지가 첫 시도에 429 + Retry-After 응답",
            "some pages answer 429 with Retry-After on the first attempt",
            "client waits >= Retry-After; day complete",
            {"share": 0.3, "retry_after": 1},
        ),
        FaultKind(
            "slow_responses",
            "모든 페이지 응답이 delay_s초 지연",
            "every page is delayed by delay_s seconds",
            "complete; adaptive slow-down visible in the manifest",
            {"delay_s": 1.0},
        ),
        FaultKind(
            "timeouts",
            "일부 페이지의 첫 시도가 delay_s초 동안 응답 없음",
            "the first attempt of some pages sleeps delay_s seconds before answering",
            "read timeout < delay: retried, complete",
            {"share": 0.3, "delay_s": 3.0},
        ),
        FaultKind(
            "truncated_json",
            "한 페이지의 JSON 본문이 매번 절반에서 잘림",
            "one page's JSON body is cut in half, on every attempt",
            "transport failure on that page (retried, then recorded)",
        ),
        FaultKind(
            "total_count_inflated",
            "totalCount를 실제보다 크게 보고 (행은 실제 수만큼)",
            "totalCount reported = real + delta, rows served = real",
            "rows < totalCount (completeness gate)",
            {"delta": 150},
        ),
        FaultKind(
            "total_count_deflated",
            "totalCount를 실제보다 작게 보고 (행은 모두 제공)",
            "totalCount reported = real - delta, all rows still served",
            "client keeps paging while pages are full: rows > totalCount (completeness gate)",
            {"delta": 150},
        ),
        FaultKind(
            "page_missing_rows",
            "중간 한 페이지가 조용히 rows개 적은 행을 반환",
            "one middle page silently returns `rows` fewer rows",
            "completeness gate",
            {"rows": 20},
        ),
        FaultKind(
            "row_repeated",
            "한 행이 다음 페이지에 다시 나옴 (totalCount는 실제 값)",
            "one row appears again on the next page (extra row; totalCount = real)",
            "client de-duplicates identical rows: complete and correct",
        ),
        FaultKind(
            "page_order_unstable",
            "페이지 요청마다 정렬 순서가 바뀜 (중복 행과 누락 행 발생)",
            "the underlying order reshuffles between page requests (duplicates and never-served rows)",
            "completeness gate (distinct rows < totalCount)",
        ),
        FaultKind(
            "empty_page",
            "중간 한 페이지가 매번 빈 목록을 반환 (totalCount는 일관됨)",
            "one middle page returns an empty items list (totalCount consistent), every attempt",
            "completeness gate",
        ),
        FaultKind(
            "xml_key_error",
            "모든 요청에 XML SERVICE_KEY_IS_NOT_REGISTERED_ERROR",
            "every request -> XML SERVICE_KEY_IS_NOT_REGISTERED_ERROR",
            "typed error, no retry; transport gate",
        ),
        FaultKind(
            "xml_quota_error",
            "모든 요청에 XML LIMITED_NUMBER_OF_SERVICE_REQUESTS_EXCEEDS_ERROR",
            "every request -> XML LIMITED_NUMBER_OF_SERVICE_REQUESTS_EXCEEDS_ERROR",
            "typed error, no retry; transport gate",
        ),
        FaultKind(
            "schema_drift_renamed",
            "모든 행의 필드 ENTP_NAME 이름이 ENTP_NM으로 바뀜",
            "field ENTP_NAME renamed ENTP_NM in every item",
            "transport gate: no page has the API's nine fields (the page and the fields named)",
            {"field": "ENTP_NAME", "to": "ENTP_NM"},
        ),
        FaultKind(
            "schema_drift_missing",
            "모든 행에서 필드 MNFCTR_NAME 누락",
            "field MNFCTR_NAME absent from every item",
            "transport gate: no page has the API's nine fields (the page and the fields named)",
            {"field": "MNFCTR_NAME"},
        ),
        FaultKind(
            "field_renamed_on_page",
            "가운데 한 페이지에서만 모든 행의 필드 MNFCTR_NAME 이름이 MNFCTR_NM으로 바뀜",
            "on one middle page only, field MNFCTR_NAME is renamed MNFCTR_NM in every item",
            "transport gate: that page's fields differ from the API's nine — never CHANGED events",
            {"field": "MNFCTR_NAME", "to": "MNFCTR_NM"},
        ),
        FaultKind(
            "field_missing_on_page",
            "가운데 한 페이지에서만 모든 행에서 필드 MNFCTR_PLACE 누락",
            "on one middle page only, field MNFCTR_PLACE is absent from every item",
            "transport gate: that page's fields differ from the API's nine — never CHANGED events",
            {"field": "MNFCTR_PLACE"},
        ),
        FaultKind(
            "field_renamed_on_rows",
            "rows개 행에서만 필드 ENTP_NAME 이름이 ENTP_NM으로 바뀜",
            "field ENTP_NAME renamed ENTP_NM on `rows` items only",
            "transport gate: the pages holding them differ from the API's nine — never CHANGED events",
            {"field": "ENTP_NAME", "to": "ENTP_NM", "rows": 50},
        ),
        FaultKind(
            "registry_shift",
            "after_page쪽을 준 뒤 원천 목록이 바뀜: 커서 앞의 한 행이 지워지고 새 등록 하나가 끝에 붙음 (totalCount 그대로) — "
            "오프셋 페이징이 한 행을 건너뜀",
            "after page `after_page` is served the registry changes: a row before the cursor is deleted and a new "
            "registration appended (totalCount unchanged), so offset paging skips one row",
            "completeness gate: the withdrawal re-check finds the skipped registration still listed — no false "
            "WITHDRAWN",
            {"after_page": 5},
        ),
        FaultKind(
            "garbled_text",
            "약 35 % 행의 한글이 U+FFFD로 깨짐 (잘못된 문자셋 디코딩)",
            "~35 % of rows get Korean text replaced by U+FFFD (wrong-charset decode)",
            "churn gate; U+FFFD quality metric",
            {"share": 0.35},
        ),
        FaultKind(
            "mass_disappearance",
            "30–60 % 행이 사라짐 (totalCount는 제공된 행 수와 일치)",
            "30-60 % of rows vanish; totalCount consistent with what is served",
            "drop gate",
            {"min_share": 0.3, "max_share": 0.6},
        ),
        FaultKind(
            "outage",
            "모든 요청에 503 (모든 재시도 포함)",
            "every request answers 503 (all attempts)",
            "transport gate",
        ),
        FaultKind(
            "hostile_text",
            "8개 행에 악성·비정상 값 (100 KB 주소, 제어문자, U+FFFD, =·+·-·@·탭으로 시작하는 수식형 텍스트, "
            "SQL형 따옴표 텍스트, RTL 기호, 이모지)",
            "8 rows get hostile values (100 KB address, control characters, U+FFFD, formula-like text "
            "starting with = + - @ or tab, SQL-like text with quotes, RTL override, emoji)",
            "not a transport fault: accepted, a few CHANGED events; values stored verbatim-but-safe "
            "(never formulas), counted by the quality metrics (oversize, U+FFFD)",
        ),
        FaultKind(
            "dates_restyled",
            "모든 행의 발급일자를 공문서에 쓰는 방식으로 씀 (2011-06-15 → 「2011. 6. 15.」)",
            "every issue date written the way Korean official documents write a date (2011-06-15 -> 「2011. 6. 15.」)",
            "not a transport fault: accepted with the day's true events — the same dates in another style, no "
            "issue date changed",
        ),
    )
}


@dataclass(frozen=True)
class Fault:
    kind: str
    params: tuple[tuple[str, Any], ...] = ()

    def param(self, name: str) -> Any:
        for key, value in self.params:
            if key == name:
                return value
        return FAULT_KINDS[self.kind].defaults[name]

    def spec(self) -> str:
        """Back to the config form: "kind" or "kind:param=value,..."."""
        if not self.params:
            return self.kind
        return self.kind + ":" + ",".join(f"{k}={v}" for k, v in self.params)


#: a parameter every kind accepts: the fault clears at this time (ISO 8601 with offset), e.g. to show a
#: transient outage that a same-morning retry gets past: "page_missing_rows:until=2026-12-01T07:00+09:00"
UNTIL = "until"


def parse_fault(spec: str) -> Fault:
    """Parse "kind" or "kind:param=value,...". Raises ValueError with the known kinds listed."""
    kind, _, rest = spec.strip().partition(":")
    kind = kind.strip()
    if kind not in FAULT_KINDS:
        raise ValueError(f"unknown fault kind {kind!r}; known kinds: {', '.join(FAULT_KINDS)}")
    defaults = FAULT_KINDS[kind].defaults
    params: list[tuple[str, Any]] = []
    for part in filter(None, (p.strip() for p in rest.split(","))):
        name, eq, raw = part.partition("=")
        name = name.strip()
        if eq and name == UNTIL:
            try:
                until = datetime.fromisoformat(raw.strip())
            except ValueError:
                raise ValueError(
                    f"fault {kind}: until={raw.strip()!r} is not an ISO time like 2026-12-01T07:00+09:00"
                ) from None
            if until.tzinfo is None:
                raise ValueError(f"fault {kind}: until={raw.strip()!r} needs a UTC offset, e.g. +09:00")
            params.append((UNTIL, until.isoformat()))
            continue
        if not eq or name not in defaults:
            allowed = ", ".join(defaults) or "none"
            raise ValueError(f"fault {kind}: bad parameter {part!r} (allowed: {allowed})")
        params.append((name, _coerce(raw.strip(), defaults[name])))
    return Fault(kind, tuple(params))


def _coerce(raw: str, default: Any) -> Any:
    try:
        if isinstance(default, int) and not isinstance(default, bool):
            return int(raw)
        if isinstance(default, float):
            return float(raw)
    except ValueError:
        raise ValueError(f"fault parameter value {raw!r} is not a number") from None
    return raw


_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def _iso_day(value: str | date) -> str:
    if isinstance(value, date):
        return value.isoformat()
    text = str(value).strip()
    if not _ISO.match(text):
        raise ValueError(f"fault date {value!r} is not YYYY-MM-DD")
    date.fromisoformat(text)  # raises ValueError for 2026-02-30
    return text


@dataclass(frozen=True)
class FaultPlan:
    """ISO date -> Fault. Empty plan = a well-behaved API."""

    by_date: Mapping[str, Fault] = field(default_factory=dict)

    @classmethod
    def parse(cls, mapping: Mapping[str, str] | None) -> FaultPlan:
        """From config (`settings().emulator.faults`): {"YYYY-MM-DD": "kind[:p=v,...]"}."""
        return cls({_iso_day(d): parse_fault(s) for d, s in (mapping or {}).items()})

    @classmethod
    def from_cli(cls, specs: Iterable[str]) -> FaultPlan:
        """From repeatable `--fault YYYY-MM-DD=kind[:p=v,...]` options."""
        plan: dict[str, Fault] = {}
        for spec in specs:
            day, eq, kind = spec.partition("=")
            if not eq:
                raise ValueError(f"--fault {spec!r}: expected YYYY-MM-DD=KIND")
            plan[_iso_day(day)] = parse_fault(kind)
        return cls(plan)

    def merged(self, other: FaultPlan) -> FaultPlan:
        """`other` wins for dates present in both (CLI over config)."""
        return FaultPlan({**self.by_date, **other.by_date})

    def for_day(self, day: date | str) -> Fault | None:
        fault = self.by_date.get(_iso_day(day))
        until = dict(fault.params).get(UNTIL) if fault else None
        if until and datetime.now(UTC) >= datetime.fromisoformat(until):
            return None  # the fault has cleared
        return fault

    def to_config(self) -> dict[str, str]:
        return {d: f.spec() for d, f in sorted(self.by_date.items())}

    def __bool__(self) -> bool:
        return bool(self.by_date)


# --- the decisions -------------------------------------------------------------------------------


def rng_for(day: str, kind: str, *extra: object) -> random.Random:
    """A private RNG per (date, kind, …): reproducible across processes (no hash randomisation)."""
    text = "|".join([day, kind, *map(str, extra)])
    return random.Random(int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big"))


def page_count(rows: int, num_of_rows: int) -> int:
    return max(1, -(-rows // num_of_rows))


def middle_page(n_pages: int) -> int:
    """The page a single-page fault hits: in the middle, never the last one when there are two+."""
    return max(1, (n_pages + 1) // 2) if n_pages != 2 else 1


def affected_pages(fault: Fault, day: str, n_pages: int) -> frozenset[int]:
    """'Some pages': a reproducible sample of about `share` of the pages (at least one)."""
    share = float(fault.param("share"))
    k = min(n_pages, max(1, round(n_pages * share)))
    return frozenset(rng_for(day, fault.kind, "pages", n_pages).sample(range(1, n_pages + 1), k))


@dataclass(frozen=True)
class RequestEffect:
    """How one request misbehaves before (or instead of) serving its page."""

    status: int | None = None  # answer with this HTTP status and a short error body
    retry_after: str | None = None
    delay_s: float = 0.0
    truncate: bool = False


NO_EFFECT = RequestEffect()


def request_effect(fault: Fault | None, day: str, page_no: int, n_pages: int, attempt: int) -> RequestEffect:
    """Decide what request number `attempt` (1-based, per page) of `page_no` gets. (An outage and the gateway
    errors answer every request alike, before any page is served: the app answers them itself.)"""
    if fault is None:
        return NO_EFFECT
    kind = fault.kind
    if kind == "slow_responses":
        return RequestEffect(delay_s=float(fault.param("delay_s")))
    if kind == "http_5xx_burst":
        if page_no in affected_pages(fault, day, n_pages) and attempt <= int(fault.param("attempts")):
            return RequestEffect(status=rng_for(day, kind, page_no, attempt).choice((500, 502, 503)))
    elif kind == "rate_limit_429":
        if page_no in affected_pages(fault, day, n_pages) and attempt == 1:
            return RequestEffect(status=429, retry_after=str(fault.param("retry_after")))
    elif kind == "timeouts":
        if page_no in affected_pages(fault, day, n_pages) and attempt == 1:
            return RequestEffect(delay_s=float(fault.param("delay_s")))
    elif kind == "truncated_json" and page_no == middle_page(n_pages):
        return RequestEffect(truncate=True)
    return NO_EFFECT


Row = dict[str, str | None]


def served_sequence(fault: Fault | None, day: str, rows: list[Row], num_of_rows: int) -> tuple[list[Row], int]:
    """The row sequence the API pages through and the totalCount it reports (sequence-level faults)."""
    if fault is None:
        return rows, len(rows)
    kind = fault.kind
    if kind == "total_count_inflated":
        return rows, len(rows) + int(fault.param("delta"))
    if kind == "total_count_deflated":
        return rows, max(0, len(rows) - int(fault.param("delta")))
    if kind == "row_repeated":
        # Offset paging over a list that grew by one between two page requests: the last row of
        # the middle page is served again as the first row of the next page; nothing is lost.
        cut = min(len(rows), middle_page(page_count(len(rows), num_of_rows)) * num_of_rows)
        if cut == 0:
            return rows, len(rows)
        return rows[:cut] + [rows[cut - 1]] + rows[cut:], len(rows)
    if kind == "mass_disappearance":
        rng = rng_for(day, kind)
        share = rng.uniform(float(fault.param("min_share")), float(fault.param("max_share")))
        gone = set(rng.sample(range(len(rows)), int(len(rows) * share)))
        kept = [r for i, r in enumerate(rows) if i not in gone]
        return kept, len(kept)
    if kind == "schema_drift_renamed":
        return [_renamed(fault, r) for r in rows], len(rows)
    if kind == "schema_drift_missing":
        return [_without_field(fault, r) for r in rows], len(rows)
    if kind == "field_renamed_on_rows":
        hit = set(rng_for(day, kind).sample(range(len(rows)), min(len(rows), int(fault.param("rows")))))
        return [_renamed(fault, r) if i in hit else r for i, r in enumerate(rows)], len(rows)
    if kind == "garbled_text":
        rng = rng_for(day, kind)
        share = float(fault.param("share"))
        return [_garble(r) if rng.random() < share else r for r in rows], len(rows)
    if kind == "hostile_text":
        hostile = hostile_rows(day, rows)
        return [{**r, **hostile[i]} if i in hostile else r for i, r in enumerate(rows)], len(rows)
    if kind == "dates_restyled":
        return [{**r, "DMF_PERMIT_DATE": official_style(r.get("DMF_PERMIT_DATE"))} for r in rows], len(rows)
    return rows, len(rows)


def official_style(value: str | None) -> str | None:
    """An ISO date as Korean official documents write it: 2011-06-15 -> 「2011. 6. 15.」 (anything else as it was)."""
    found = re.fullmatch(r"\s*([0-9]{4})-([0-9]{2})-([0-9]{2})\s*", value or "")
    return f"{found[1]}. {int(found[2])}. {int(found[3])}." if found else value


#: 100 KB of address text: 50x MNFCTR_PLACE's spec size (2000), far beyond Excel's 32,767-char cell.
HOSTILE_LONG_ADDRESS = ("Plot 7, Hostile Industrial Estate, Phase II, " * 2300)[:100_000]
#: every C0 control character and DEL, between visible text (display drops them, the archive keeps them)
HOSTILE_CONTROLS = "Ctrl" + "".join(map(chr, range(0x20))) + "\x7f" + "Pharma Ltd."

#: What `hostile_text` writes, one mapping per affected row (field -> the value served, verbatim).
HOSTILE_PAYLOADS: tuple[dict[str, str], ...] = (
    {"MNFCTR_PLACE": HOSTILE_LONG_ADDRESS},
    {"MNFCTR_NAME": HOSTILE_CONTROLS, "ENTP_NAME": "'; DROP TABLE records; --"},
    {"INGR_KOR_NAME": "깨진\ufffd\ufffd성분명"},
    {"MNFCTR_NAME": '=HYPERLINK("http://x","y")'},
    {"ENTP_NAME": "+SUM(A1)", "MNFCTR_PLACE": "-2+3"},
    {"MNFCTR_NAME": "@cmd", "INGR_KOR_NAME": "\t=1+1"},
    {"MNFCTR_PLACE": "\u202eRTL 주소 gnp.exe"},
    {"INGR_KOR_NAME": "💊 알약 성분"},
)


def hostile_rows(day: str, rows: list[Row]) -> dict[int, dict[str, str]]:
    """Which rows `hostile_text` rewrites on `day` (row index -> the fields it overwrites).

    Only rows whose permit number occurs once that day, so each hostile row is one registration a
    test can follow by number. Reproducible per date.
    """
    counts: dict[str, int] = {}
    for r in rows:
        number = (r.get("DMF_PERMIT_NO") or "").strip()
        counts[number] = counts.get(number, 0) + 1
    candidates = [i for i, r in enumerate(rows) if (n := (r.get("DMF_PERMIT_NO") or "").strip()) and counts[n] == 1]
    chosen = sorted(rng_for(day, "hostile_text").sample(candidates, min(len(candidates), len(HOSTILE_PAYLOADS))))
    return {
        i: dict(p) for i, p in zip(chosen, HOSTILE_PAYLOADS, strict=False)
    }  # fewer candidates than payloads: the first ones


_HANGUL = re.compile(r"[\u1100-\u11ff\u3130-\u318f\uac00-\ud7a3]")


def _garble(row: Row) -> Row:
    """What a UTF-8 → wrong charset → UTF-8 round trip leaves of Korean text: U+FFFD per syllable."""
    return {k: (_HANGUL.sub("\ufffd", v) if isinstance(v, str) else v) for k, v in row.items()}


def page_slice(
    fault: Fault | None, day: str, served: list[Row], page_no: int, num_of_rows: int, attempt: int
) -> list[Row]:
    """The rows of one page (page-level faults applied)."""
    start = (page_no - 1) * num_of_rows
    kind = fault.kind if fault else None
    if kind == "page_order_unstable":
        # The server sorts on a non-unique column: every request sees another order.
        order = list(range(len(served)))
        rng_for(day, kind, page_no, attempt).shuffle(order)
        return [served[i] for i in order[start : start + num_of_rows]]
    rows = served[start : start + num_of_rows]
    n_pages = page_count(len(served), num_of_rows)
    if kind == "empty_page" and page_no == middle_page(n_pages) and n_pages > 0:
        return []
    if kind == "page_missing_rows" and fault is not None and page_no == middle_page(n_pages):
        missing = min(len(rows), int(fault.param("rows")))
        drop = set(rng_for(day, kind, page_no).sample(range(len(rows)), missing))
        return [r for i, r in enumerate(rows) if i not in drop]
    if kind == "field_renamed_on_page" and fault is not None and page_no == middle_page(n_pages):
        return [_renamed(fault, r) for r in rows]
    if kind == "field_missing_on_page" and fault is not None and page_no == middle_page(n_pages):
        return [_without_field(fault, r) for r in rows]
    return rows


def _renamed(fault: Fault, row: Row) -> Row:
    old, new = str(fault.param("field")), str(fault.param("to"))
    return {(new if k == old else k): v for k, v in row.items()}


def _without_field(fault: Fault, row: Row) -> Row:
    gone = str(fault.param("field"))
    return {k: v for k, v in row.items() if k != gone}


def shift_page(fault: Fault | None) -> int | None:
    """registry_shift: the page after which the registry changes (None: no such fault)."""
    return int(fault.param("after_page")) if fault is not None and fault.kind == "registry_shift" else None


def shifted_registry(fault: Fault, day: str, rows: list[Row], num_of_rows: int) -> list[Row]:
    """registry_shift: the registry once it has changed under a fetch of `num_of_rows`-row pages that had read
    `after_page` pages — one row before that cursor deleted, one new registration (issued that day) appended.
    Offset paging then skips the row that moved up across the cursor; totalCount stays the same."""
    cursor = min(len(rows), int(fault.param("after_page")) * num_of_rows)
    if cursor == 0:
        return rows
    gone = rng_for(day, fault.kind, "deleted").randrange(cursor)
    template = rows[gone]
    appended = {
        **template,
        "DMF_PERMIT_NO": f"{day.replace('-', '')}-9999-K-9999-01",
        "DMF_PERMIT_DATE": day,
    }
    return rows[:gone] + rows[gone + 1 :] + [appended]


def describe_table() -> list[tuple[str, str, str, str, str]]:
    """(kind, 설명, description, expected outcome, params) rows for `dmf emulator faults`."""
    return [
        (k.name, k.ko, k.en, k.expected, ", ".join(f"{p}={v}" for p, v in k.defaults.items()) or "-")
        for k in FAULT_KINDS.values()
    ]
