"""The event sentences people read — on 요약, in the morning mail and in the watchlist alert: one
builder for all of them. Each is a whole Korean sentence (who, what, which registration, before → after)
ending in 「습니다.」; alike events (one change on many registrations, many new or withdrawn registrations
of one applicant) become one sentence; the team's products and watchlist hits come first."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dmf_assets.domain.model import SEVERITY_LABEL_KO, SEVERITY_RANK, SITES_FIELD
from dmf_assets.korean import josa, particle, shorten
from dmf_assets.report.model import EventRow, FieldChangeRow
from dmf_assets.report.rows import field_label, sorted_events

#: sentences on 요약 and in the mail; a group of at least this many alike events is one sentence
TOP_SENTENCES = 15
MASS_GROUP_MIN = 3
#: a value inside a sentence is cut at a word after this many characters (the full value is on '필드 변경');
#: a site ("name (country)") gets more room so its country is never cut off
VALUE_WIDTH = 40
SITE_WIDTH = 90


@dataclass(frozen=True)
class Sentence:
    severity: str
    text: str
    products: tuple[str, ...] = ()
    watch: bool = False
    count: int = 1

    @property
    def marked(self) -> str:
        """The sentence with its severity and, for a watchlist hit, a star: '★ [심각] …'."""
        star = "★ " if self.watch else ""
        return f"{star}[{SEVERITY_LABEL_KO.get(self.severity, self.severity)}] {self.text}"


def _v(value: str | None) -> str:
    return shorten(value, VALUE_WIDTH) if value not in (None, "") else "(없음)"


def _who(ev: EventRow) -> str:
    return _v(ev.applicant) if ev.applicant else "(신청인 없음)"


def _what(ev: EventRow) -> str:
    return _v(ev.ingredient) if ev.ingredient else "(성분명 없음)"


def _number(ev: EventRow) -> str:
    return ev.permit_no or f"등록번호 없음, 키 {ev.dmf_key}"


def _site(ev: EventRow) -> str:
    countries = f", {_v(ev.countries)}" if ev.countries else ""
    return f"제조소 {_v(ev.manufacturer)}{countries}"


def _clauses(changes: Sequence[FieldChangeRow]) -> list[tuple[str, str]]:
    """(label, before → after) per substantive change; the site rows of an event as one '제조소' clause
    (they replace the long joined manufacturer/address values)."""
    sites = [c for c in changes if c.field == SITES_FIELD and not c.is_cosmetic]
    out: list[tuple[str, str]] = []
    if sites:
        parts = []
        for c in sites:
            if c.before is None:
                parts.append(f"추가 {shorten(c.after or '', SITE_WIDTH)}")
            elif c.after is None:
                parts.append(f"삭제 {shorten(c.before, SITE_WIDTH)}")
            else:
                parts.append(f"{shorten(c.before, SITE_WIDTH)} → {shorten(c.after, SITE_WIDTH)}")
        out.append(("제조소", "; ".join(parts)))
    for c in changes:
        if c.is_cosmetic or c.field == SITES_FIELD or (sites and c.field in ("manufacturer", "address")):
            continue
        out.append((field_label(c.field), f"{_v(c.before)} → {_v(c.after)}"))
    return out


def _listed(clauses: list[tuple[str, str]]) -> str:
    """'제조소명(A → B)과 제조국(인도 → 중국)이' — the particle follows each label, not its aside."""
    if not clauses:
        return "내용이"
    texts = [f"{label}({aside})" for label, aside in clauses]
    labels = [label for label, _ in clauses]
    if len(texts) == 1:
        return texts[0] + particle(labels[0], "이/가")
    head = ", ".join(texts[:-2] + [texts[-2] + particle(labels[-2], "과/와")])
    return f"{head} {texts[-1]}{particle(labels[-1], '이/가')}"


def event_sentence(ev: EventRow) -> str:
    """One event as the sentence an analyst forwards as it is."""
    number, who, what = _number(ev), _who(ev), _what(ev)
    if ev.event_type == "NEW":
        if ev.is_reappearance:
            return f"{who}의 {what} 등록({number} · {_site(ev)})이 취하 후 다시 목록에 올랐습니다."
        return f"{josa(who, '이/가')} {what}({number} · {_site(ev)}){particle(what, '을/를')} 신규 등록했습니다."
    if ev.event_type == "WITHDRAWN":
        return f"{who}의 {what} 등록({number} · {_site(ev)})이 목록에서 사라져 취하로 기록했습니다."
    if ev.number_assigned:
        return f"{who}의 {what} 등록에 등록번호 {josa(number, '이/가')} 부여되었습니다."
    return f"{who}의 {what} 등록({number})에서 {_listed(_clauses(ev.changes))} 바뀌었습니다."


def _examples(evs: Sequence[EventRow]) -> str:
    return ", ".join(e.permit_no or e.dmf_key for e in evs[:3]) + (" 등" if len(evs) > 3 else "")


def _group_sentence(kind: str, evs: list[EventRow]) -> str:
    n = f"{len(evs):,}건"
    if kind == "CHANGED":
        return f"등록 {n}에서 {_listed(_clauses(evs[0].changes))} 똑같이 바뀌었습니다(예: {_examples(evs)})."
    ingredients = ", ".join(dict.fromkeys(_v(e.ingredient) for e in evs[:5])) + (" 등" if len(evs) > 5 else "")
    if kind == "NEW":
        return f"{josa(_who(evs[0]), '이/가')} {n}을 신규 등록했습니다(성분 {ingredients}; 예: {_examples(evs)})."
    return f"{_who(evs[0])}의 등록 {n}이 목록에서 사라져 취하로 기록했습니다(성분 {ingredients}; 예: {_examples(evs)})."


def summary_sentences(events: Sequence[EventRow], limit: int = TOP_SENTENCES) -> tuple[list[Sentence], int]:
    """(top sentences, how many headline events there are in all) — the team's products first, then
    watchlist hits, then severity; alike events become one grouped sentence."""
    headline = [e for e in events if not e.is_cosmetic]
    groups: dict[tuple, list[EventRow]] = {}
    for ev in headline:
        if ev.event_type == "CHANGED" and not ev.number_assigned:
            key: tuple = ("CHANGED", tuple((c.field, c.before, c.after) for c in ev.changes if not c.is_cosmetic))
        elif ev.event_type == "CHANGED" or ev.is_reappearance:
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
