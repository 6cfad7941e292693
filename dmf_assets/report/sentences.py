"""The 요약 sentences: one line per headline event (who, what, where, before → after), alike events
grouped into one sentence, the team's products and watchlist hits first."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dmf_assets.domain.model import EVENT_LABEL_KO, SEVERITY_RANK
from dmf_assets.report.model import EventRow
from dmf_assets.report.rows import change_lines, flags_text, sorted_events, value_text

#: sentences on 요약; a group of at least this many alike events is one sentence (mass changes)
TOP_SENTENCES = 15
MASS_GROUP_MIN = 3


@dataclass(frozen=True)
class Sentence:
    severity: str
    text: str
    products: tuple[str, ...] = ()
    watch: bool = False
    count: int = 1


def _short(text: str | None, n: int = 60) -> str:
    text = value_text(text)
    return text if len(text) <= n else text[: n - 1] + "…"


def event_sentence(ev: EventRow) -> str:
    """Who, what, where, before → after — one line an analyst reads on 요약."""
    num = ev.permit_no or ev.dmf_key
    what = _short(ev.ingredient, 40)
    who = _short(ev.applicant, 30)
    where = f"{_short(ev.manufacturer, 50)} ({_short(ev.countries, 20)})"
    if ev.event_type == "NEW":
        again = " (과거 취하 후 재등장)" if ev.is_reappearance else ""
        return f"신규 등록{again} {num} — {what} · 신청인 {who} · 제조소 {where}"
    if ev.event_type == "WITHDRAWN":
        return f"취하 {num} — {what} · 신청인 {who} · 제조소 {where}"
    flags = f" [{flags_text(ev)}]" if flags_text(ev) and not ev.watchlist_hit else ""
    return f"변경 {num} — {what} · 신청인 {who}{flags}: " + "; ".join(change_lines(ev, max_value=60))


def summary_sentences(events: Sequence[EventRow], limit: int = TOP_SENTENCES) -> tuple[list[Sentence], int]:
    """(top sentences, how many headline events they cover in total) — the team's products first, then
    watchlist hits, then severity; alike events (same change on many registrations, or many new /
    withdrawn registrations of one applicant) become one grouped sentence."""
    headline = [e for e in events if not e.is_cosmetic]
    groups: dict[tuple, list[EventRow]] = {}
    for ev in headline:
        if ev.event_type == "CHANGED":
            key = ("CHANGED", tuple((c.field, c.before, c.after) for c in ev.changes if not c.is_cosmetic))
        else:
            key = (ev.event_type, ev.applicant)
        groups.setdefault(key, []).append(ev)
    items: list[Sentence] = []
    for key, evs in groups.items():
        evs = sorted_events(evs)
        worst = evs[0].severity
        products = tuple(dict.fromkeys(p for e in evs for p in e.product_hits))
        watch = any(e.watchlist_hit for e in evs)
        if len(evs) < MASS_GROUP_MIN:
            items += [Sentence(e.severity, event_sentence(e), e.product_hits, e.watchlist_hit) for e in evs]
            continue
        examples = ", ".join(e.permit_no or e.dmf_key for e in evs[:3]) + (" …" if len(evs) > 3 else "")
        if key[0] == "CHANGED":
            what = "; ".join(change_lines(evs[0], max_value=60))
            text = f"일괄 변경 {len(evs):,}건 — {what} (예: {examples})"
        else:
            label = EVENT_LABEL_KO.get(key[0], key[0])
            ingredients = ", ".join(dict.fromkeys(_short(e.ingredient, 20) for e in evs[:5]))
            text = f"{label} {len(evs):,}건 — 신청인 {_short(key[1], 30)} (성분: {ingredients}{' …' if len(evs) > 5 else ''}; 예: {examples})"
        items.append(Sentence(worst, text, products, watch, len(evs)))
    items.sort(key=lambda x: (not x.products, not x.watch, -SEVERITY_RANK.get(x.severity, -1), -x.count, x.text))
    return items[:limit], len(headline)
