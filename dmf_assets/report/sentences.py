"""The words people read of an event — on 요약 (daily and period workbook), on 업체별, in the morning mail and
the watchlist alert, and the change lines of the workbook's tables, `dmf history` and `dmf diff`: one builder
for all of them.

- A change as a line (`change_line`, `change_lines`): 「제조국: 인도 → 일본」, 「제조소 추가: Name (중국)」 — the same
  wording for one kind of change in every table and command.
- An event as a whole Korean sentence (`event_sentence`: who, what, which registration, what happened) ending in
  「습니다.」: 「…에 중국 제조소 Yichang …가 추가되었습니다」, 「…의 제조국이 인도에서 일본으로 바뀌었습니다」, 「…의
  등록번호가 A에서 B로 바뀌었습니다」 — no value in nested brackets; a registration without a number is named by its
  applicant, ingredient and manufacturer, never by its internal key; countries are named once each. Alike events
  (one change on many registrations, many new or withdrawn registrations of one applicant) become one sentence;
  the team's products and watchlist hits come first.
- The day's headline figures: `summary.headline_counts` (신규 · 변경 · 삭제, 번호 부여 and 번호 변경 apart — 변경 is
  실질 변경 wherever a count is shown; the words are `domain.model.COUNT_LABEL_KO`).
- The change rate in words (`change_rate_text`): registrations changed per day, and how that compares
  with the whole history — never λ̂, never scientific notation, never −0.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from dmf_assets.domain.model import (
    FIELD_LABEL_KO,
    NUMBER_CHANGED_LABEL_KO,
    SEVERITY_LABEL_KO,
    SEVERITY_RANK,
    SITE_FIELDS,
    SITES_FIELD,
    WITHDRAWN_FIRST_MENTION_KO,
    missing,
)
from dmf_assets.domain.sites import describe_site_change
from dmf_assets.korean import josa, particle, shorten
from dmf_assets.report.model import EventRow, sorted_events
from dmf_assets.report.summary import headline_counts  # noqa: F401 - the mail imports the headline from here

#: sentences on 요약 and in the mail; a group of at least this many alike events is one sentence
TOP_SENTENCES = 15
MASS_GROUP_MIN = 3
#: a value inside a sentence is cut at a word after this many characters (the full value is on '필드 변경');
#: a site's name gets more room
VALUE_WIDTH = 40
SITE_WIDTH = 90
#: what a sentence calls a registration published without a number (its key is internal)
NO_NUMBER = "등록번호 없음"


class ChangeLike(Protocol):
    """One field change: `FieldChangeRow` (the workbook), `domain.model.FieldChange` (`dmf diff`), a history row."""

    @property
    def field(self) -> str: ...
    @property
    def before(self) -> str | None: ...
    @property
    def after(self) -> str | None: ...
    @property
    def is_cosmetic(self) -> bool: ...


@dataclass(frozen=True)
class Sentence:
    severity: str
    text: str
    products: tuple[str, ...] = ()
    watch: bool = False
    count: int = 1

    @property
    def full_text(self) -> str:
        """The sentence and, when it touches the team's products, a second one naming them (요약's line)."""
        return self.text + (f" 자사 제품 {', '.join(self.products)}에 해당합니다." if self.products else "")

    @property
    def marked(self) -> str:
        """요약's line with its severity and, for a watchlist hit, a star: '★ [심각] …' (the mail's line)."""
        star = "★ " if self.watch else ""
        return f"{star}[{SEVERITY_LABEL_KO.get(self.severity, self.severity)}] {self.full_text}"


# --- a change as a line ----------------------------------------------------------------------------


def field_label(name: str) -> str:
    return FIELD_LABEL_KO.get(name, name)


def value_text(v: str | None) -> str:
    return v if v not in (None, "") else "(없음)"


def countries_text(value: str | None, sep: str = ", ") -> str | None:
    """A countries value with each country once, in order: 「인도,인도,중국」 -> 「인도, 중국」 (the source has one per
    site; people read each country once). A sentence joins them with 「·」: 「인도·중국으로」."""
    if not value:
        return value
    return sep.join(dict.fromkeys(c.strip() for c in value.split(",") if c.strip()))


def change_line(field_name: str, before: str | None, after: str | None) -> str:
    """One change as a line: 「제조국: 인도 → 일본」, 「제조소 추가: Name (중국)」 — what every table and command prints."""
    if field_name == SITES_FIELD:
        return describe_site_change(before, after)
    if field_name == "countries":
        before, after = countries_text(before), countries_text(after)
    return f"{field_label(field_name)}: {value_text(before)} → {value_text(after)}"


def _shown(
    changes: Sequence[ChangeLike], *, cosmetic: bool, sep: str = ", "
) -> Iterator[tuple[ChangeLike, str | None, str | None]]:
    """The changes people read of one event, with their before and after: the site rows first, standing for the
    manufacturer, address and country values they detail (often hundreds of characters; the full values are on
    필드 변경); a country list (each country once, joined by `sep`) that only repeats a country is no change.
    `cosmetic`: also the cosmetic ones."""
    sites = [c for c in changes if c.field == SITES_FIELD]
    yield from ((c, c.before, c.after) for c in sites)
    for c in changes:
        if c.field == SITES_FIELD or (sites and c.field in SITE_FIELDS) or (c.is_cosmetic and not cosmetic):
            continue
        before, after = c.before, c.after
        if c.field == "countries":
            before, after = countries_text(before, sep), countries_text(after, sep)
            if before == after and not c.is_cosmetic:
                continue
        yield c, before, after


def change_lines(changes: Sequence[ChangeLike], *, cosmetic: bool = False) -> list[str]:
    """The substantive changes of one event as lines (`_shown`); `cosmetic`: also the cosmetic ones, marked
    「(표기)」."""
    return [
        change_line(c.field, before, after) + (" (표기)" if c.is_cosmetic and c.field != SITES_FIELD else "")
        for c, before, after in _shown(changes, cosmetic=cosmetic)
    ]


# --- an event as a sentence ------------------------------------------------------------------------


def _v(value: str | None) -> str:
    return shorten(value, VALUE_WIDTH) if value not in (None, "") else "(없음)"


def _who(ev: EventRow) -> str:
    return _v(ev.applicant) if ev.applicant else missing("applicant")


def _what(ev: EventRow) -> str:
    return _v(ev.ingredient) if ev.ingredient else missing("ingredient")


def _number(ev: EventRow) -> str:
    return ev.permit_no or NO_NUMBER


def _site(ev: EventRow) -> str:
    countries = f", {countries_text(ev.countries, '·')}" if ev.countries else ""
    return f"제조소 {_v(ev.manufacturer)}{countries}"


def _registration(ev: EventRow) -> str:
    """「(주)삼오제약의 타목시펜 등록 20220117-211-J-952」 (a number may hold brackets of its own: none around it);
    without a number, its manufacturer names it: 「…등록(등록번호 없음 · 제조소 Name, 인도)」."""
    if ev.permit_no:
        return f"{_who(ev)}의 {_what(ev)} 등록 {ev.permit_no}"
    return f"{_who(ev)}의 {_what(ev)} 등록({NO_NUMBER} · {_site(ev)})"


_SITE = re.compile(r"^(?:\[(?P<role>[^\]]*)\] )?(?P<name>.*?)(?: \((?P<country>[^()]*)\))?$")


def _site_phrase(label: str) -> str:
    """A stored site label 「[역할] Name (중국)」 as 「중국 제조소 Name(역할)」."""
    m = _SITE.match(label)
    assert m is not None  # every text matches: the role and the country are optional
    name = shorten(m["name"], SITE_WIDTH)
    role = f"({m['role']})" if m["role"] else ""
    country = m["country"] if m["country"] and m["country"] != "국가 미상" else None
    return f"{country} 제조소 {name}{role}" if country else f"제조소 {name}{role}"


#: a clause's verb: (the stem before 「고」 when another clause follows, the past form before 「습니다」)
_VERBS = {
    "changed": ("바뀌", "바뀌었"),
    "added": ("추가되", "추가되었"),
    "removed": ("삭제되", "삭제되었"),
    "filled": ("새로 기재되", "새로 기재되었"),
    "emptied": ("지워지", "지워졌"),
    "assigned": ("부여되", "부여되었"),
}


@dataclass(frozen=True)
class _Clause:
    text: str  # the subject and what it became: 「제조국이 인도에서 일본으로」
    verb: str  # a _VERBS key


def _site_clause(before: str | None, after: str | None) -> _Clause:
    if before is None:
        return _Clause(josa(_site_phrase(after or ""), "이/가"), "added")
    if after is None:
        return _Clause(josa(_site_phrase(before), "이/가"), "removed")
    if before == after:  # the same name and country: the address moved
        return _Clause(f"{_site_phrase(before)}의 {josa('소재지', '이/가')}", "changed")
    return _Clause(f"{josa(_site_phrase(before), '이/가')} {josa(_site_phrase(after), '으로/로')}", "changed")


def _field_clause(name: str, before: str | None, after: str | None) -> _Clause:
    label = field_label(name)
    if before in (None, ""):
        return _Clause(f"{label} {josa(_v(after), '이/가')}", "filled")
    if after in (None, ""):
        return _Clause(f"{label} {josa(_v(before), '이/가')}", "emptied")
    return _Clause(f"{josa(label, '이/가')} {_v(before)}에서 {josa(_v(after), '으로/로')}", "changed")


def _clauses(changes: Sequence[ChangeLike], *, skip: tuple[str, ...] = ()) -> list[_Clause]:
    """The substantive changes as clauses; the site rows stand for the manufacturer, address and countries."""
    kept = [c for c in changes if c.field not in skip and not c.is_cosmetic]
    return [
        _site_clause(before, after) if c.field == SITES_FIELD else _field_clause(c.field, before, after)
        for c, before, after in _shown(kept, cosmetic=False, sep="·")
    ]


def _predicate(clauses: list[_Clause]) -> str:
    """「A가 추가되고, B가 X에서 Y로, C가 Z에서 W로 바뀌었습니다.」 — clauses of one verb share it."""
    groups: list[tuple[str, list[str]]] = []
    for c in clauses:
        if groups and groups[-1][0] == c.verb == "changed":
            groups[-1][1].append(c.text)
        else:
            groups.append((c.verb, [c.text]))
    parts = [
        ", ".join(texts) + " " + (_VERBS[verb][1] + "습니다." if i == len(groups) - 1 else _VERBS[verb][0] + "고")
        for i, (verb, texts) in enumerate(groups)
    ]
    return ", ".join(parts)


def _linked(registration: str, clauses: list[_Clause]) -> str:
    """The registration and what happened to it: 「…등록(…)에 A가 추가되었습니다」 / 「…에서 A가 삭제되었습니다」 /
    「…의 A가 X에서 Y로 바뀌었습니다」 — the particle the first clause asks for."""
    if not clauses:
        return f"{registration}의 내용이 바뀌었습니다."
    link = {"added": "에", "removed": "에서", "assigned": "에"}.get(clauses[0].verb, "의")
    return f"{registration}{link} {_predicate(clauses)}"


def _maybe_renumbered(ev: EventRow) -> str:
    """「 등록번호 변경 가능성: A ↔ B.」 after the sentence of a NEW or a disappearance that may be one."""
    return f" {ev.note}." if ev.note else ""


def event_sentence(ev: EventRow) -> str:
    """One event as the sentence an analyst forwards as it is."""
    who, what = _who(ev), _what(ev)
    if ev.event_type == "NEW":
        aside = f"{_number(ev)} · {_site(ev)}"
        if ev.is_reappearance:
            since = f" {ev.gone_since}부터 목록에 없다가" if ev.gone_since else " 목록에서 삭제된 뒤"
            return f"{who}의 {what} 등록({aside})이{since} 다시 목록에 올랐습니다."
        added = f"{josa(who, '이/가')} {what}({aside}){particle(what, '을/를')} 신규 등록했습니다."
        return added + _maybe_renumbered(ev)
    if ev.event_type == "WITHDRAWN":
        return f"{who}의 {what} 등록({_number(ev)} · {_site(ev)})이 목록에서 삭제되었습니다." + _maybe_renumbered(ev)
    if ev.number_changed:  # named by its applicant, ingredient and site: both numbers are in the clause
        renumbered = _field_clause("permit_no", ev.previous_permit_no, ev.permit_no)
        others = _clauses(ev.changes, skip=("permit_no",))
        return _linked(f"{who}의 {what} 등록({_site(ev)})", [renumbered, *others])
    if ev.number_assigned:
        assigned = _Clause(f"등록번호 {josa(_number(ev), '이/가')}", "assigned")
        return f"{who}의 {what} 등록에 {_predicate([assigned, *_clauses(ev.changes, skip=('permit_no',))])}"
    return _linked(_registration(ev), _clauses(ev.changes))


def _examples(evs: Sequence[EventRow]) -> str:
    return ", ".join(_number(e) for e in evs[:3]) + (" 등" if len(evs) > 3 else "")


def _group_sentence(kind: str, evs: list[EventRow]) -> str:
    """One sentence for alike events, ending in 「습니다.」 like every other: the examples go inside it."""
    n = f"{len(evs):,}건"
    if kind == "CHANGED":
        return f"등록 {n}({_examples(evs)})에서 모두 {_predicate(_clauses(evs[0].changes))}"
    ingredients = ", ".join(dict.fromkeys(_v(e.ingredient) for e in evs[:5])) + (" 등" if len(evs) > 5 else "")
    detail = f"성분 {ingredients} · {_examples(evs)}"
    if kind == "NEW":
        return f"{josa(_who(evs[0]), '이/가')} {n}({detail})을 신규 등록했습니다."
    return f"{_who(evs[0])}의 등록 {n}({detail})이 목록에서 삭제되었습니다."


def summary_sentences(events: Sequence[EventRow], limit: int = TOP_SENTENCES) -> tuple[list[Sentence], int]:
    """(top sentences, how many headline events there are in all) — the team's products first, then
    watchlist hits, then severity; alike events become one grouped sentence."""
    headline = [e for e in events if not e.is_cosmetic]
    groups: dict[tuple, list[EventRow]] = {}
    for ev in headline:
        if ev.event_type == "CHANGED" and not (ev.number_assigned or ev.number_changed):
            key: tuple = ("CHANGED", tuple((c.field, c.before, c.after) for c in ev.changes if not c.is_cosmetic))
        elif ev.event_type == "CHANGED" or ev.is_reappearance or ev.renumber_candidates:
            key = ("ONE", ev.dmf_key)
        else:
            key = (ev.event_type, ev.applicant)
        groups.setdefault(key, []).append(ev)
    items: list[Sentence] = []
    for key, evs in groups.items():
        evs = sorted_events(evs)
        products = tuple(dict.fromkeys(p for e in evs for p in e.product_hits))
        watch = any(e.watchlist_hit for e in evs)
        if len(evs) < MASS_GROUP_MIN or key[0] == "ONE":
            items += [Sentence(e.severity, event_sentence(e), e.product_hits, e.watchlist_hit) for e in evs]
        else:
            items.append(Sentence(evs[0].severity, _group_sentence(key[0], evs), products, watch, len(evs)))
    items.sort(key=lambda x: (not x.products, not x.watch, -SEVERITY_RANK.get(x.severity, -1), -x.count, x.text))
    return items[:limit], len(headline)


# --- definitions and the change rate ------------------------------------------------

#: 실질 변경, said once: the KPI row, 메타's definitions and the period report use this text
CHANGED_DEFINITION = (
    "실질 변경: 같은 등록의 내용이 실질적으로 달라짐 — 표기만 바뀐 변경(표기 변경)과 등록번호를 새로 받거나"
    "(번호 부여) 다른 번호로 바뀐 것(번호 변경)은 제외"
)
NUMBER_ASSIGNED_DEFINITION = (
    "번호 없이 공개됐던 등록이 등록번호를 받음 — 삭제+신규가 아니며 변경 건수에도 넣지 않는 별도 건수"
)
NUMBER_CHANGED_DEFINITION = (
    f"{NUMBER_CHANGED_LABEL_KO}: 다른 항목이 모두 같은 등록이 다른 등록번호로 목록에 오름 (예: 허여 번호 (1)이 "
    "자체 번호로) — 삭제+신규가 아닌 한 등록이며, 변경·삭제 건수에 넣지 않는 별도 건수. 문서의 등록번호를 고쳐야 "
    "하므로 심각도 '보통'. 짝이 하나로 정해지지 않으면 삭제와 신규로 두고 '등록번호 변경 가능성'을 적음"
)
WITHDRAWN_DEFINITION = (
    f"{WITHDRAWN_FIRST_MENTION_KO}: 비교 기준일 목록에 있던 등록이 오늘 목록에 없음 — 목록은 {FIELD_LABEL_KO['applicant']}의 취하인지 "
    "식약처의 취소인지 알려 주지 않으므로 관측한 대로 적음"
)


def _per_day(value: float) -> str:
    return f"{value:z,.1f}건"  # 'z': a rate that rounds to zero is 0.0, never -0.0


def change_rate_text(
    per_day_14d: float | None, per_day_all: float | None, *, window_days: int, burst_factor: float, burst: bool
) -> str:
    """The change rate as an analyst reads it: 「최근 14일 하루 평균 0.9건 변경 — 평소(전체 기간)의 1.0배」."""
    if per_day_all is None:
        return "아직 비교한 날이 없어 변경률을 낼 수 없습니다"
    usual = f"전체 기간 하루 평균 {_per_day(per_day_all)}"
    if per_day_14d is None:
        return f"최근 {window_days}일에는 비교한 날이 없습니다 — {usual} 변경"
    recent = f"최근 {window_days}일 하루 평균 {_per_day(per_day_14d)} 변경"
    if per_day_all <= 0:
        return f"{recent} — 전체 기간에도 변경이 없었습니다"
    text = f"{recent} — 평소(전체 기간)의 {per_day_14d / per_day_all:z,.1f}배 ({usual})"
    return text + (f" · 급증: 평소의 {burst_factor:g}배 이상" if burst else "")


# --- the administrator's texts (메타, never an analyst's sheet) -------------------------------------------

#: the file a user edits for local settings (README; the alerts name the same one)
LOCAL_CONFIG_FILE = "config/dmf.local.toml"


def products_hint() -> str:
    """메타's setup hint for the administrator while no product list is configured (`[products] file` empty)."""
    from dmf_assets.report.products import EXAMPLE_FILE, SUGGESTED_FILE

    setting = f'[products] file = "{SUGGESTED_FILE}"'
    return (
        f"자사 제품 목록을 설정하면 자사 제품에 해당하는 변경을 맨 앞에 표시합니다: {josa(EXAMPLE_FILE, '을/를')} "
        f"{josa(SUGGESTED_FILE, '으로/로')} 복사해 품목을 적고, {LOCAL_CONFIG_FILE}에 {josa(setting, '을/를')} "
        "넣으십시오."
    )
