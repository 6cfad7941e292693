"""The sentences people read — on 요약 (daily and period workbook), in the morning mail and in the
watchlist alert: one builder for all of them.

- Events: each a whole Korean sentence (who, what, which registration, before → after) ending in
  「습니다.」; alike events (one change on many registrations, many new or withdrawn registrations of one
  applicant) become one sentence; the team's products and watchlist hits come first.
- The day's headline figures (`headline_counts`): 신규 · 변경 · 삭제, and 번호 부여 / 번호 변경 apart — 변경 is
  실질 변경 (`domain.model.substantive_changes`) wherever a count is shown; the words are `COUNT_LABEL_KO`.
- The change rate in words (`change_rate_text`): registrations changed per day, and how that compares
  with the whole history — never λ̂, never scientific notation, never −0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from dmf_assets.domain.model import (
    COUNT_LABEL_KO,
    NUMBER_CHANGED_LABEL_KO,
    SEVERITY_LABEL_KO,
    SEVERITY_RANK,
    SITES_FIELD,
    WITHDRAWN_FIRST_MENTION_KO,
    substantive_changes,
)
from dmf_assets.korean import josa, particle, shorten
from dmf_assets.report.model import EventRow, FieldChangeRow, Kpis
from dmf_assets.report.rows import field_label, sorted_events

#: the file a user edits for local settings (README; the alerts name the same one)
LOCAL_CONFIG_FILE = "config/dmf.local.toml"
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
    def full_text(self) -> str:
        """The sentence and, when it touches the team's products, a second one naming them (요약's line)."""
        return self.text + (f" 자사 제품 {', '.join(self.products)}에 해당합니다." if self.products else "")

    @property
    def marked(self) -> str:
        """요약's line with its severity and, for a watchlist hit, a star: '★ [심각] …' (the mail's line)."""
        star = "★ " if self.watch else ""
        return f"{star}[{SEVERITY_LABEL_KO.get(self.severity, self.severity)}] {self.full_text}"


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


def _clauses(changes: Sequence[FieldChangeRow], *, skip: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """(label, before → after) per substantive change (fields in `skip` left out); the site rows of an
    event as one '제조소' clause (they replace the long joined manufacturer/address values)."""
    changes = [c for c in changes if c.field not in skip]
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


def _maybe_renumbered(ev: EventRow) -> str:
    """「 등록번호 변경 가능성: A ↔ B.」 after the sentence of a NEW or a disappearance that may be one."""
    return f" {ev.note}." if ev.note else ""


def event_sentence(ev: EventRow) -> str:
    """One event as the sentence an analyst forwards as it is."""
    number, who, what = _number(ev), _who(ev), _what(ev)
    if ev.event_type == "NEW":
        if ev.is_reappearance:
            since = f" {ev.gone_since}부터 목록에 없다가" if ev.gone_since else " 목록에서 삭제된 뒤"
            return f"{who}의 {what} 등록({number} · {_site(ev)})이{since} 다시 목록에 올랐습니다."
        added = f"{josa(who, '이/가')} {what}({number} · {_site(ev)}){particle(what, '을/를')} 신규 등록했습니다."
        return added + _maybe_renumbered(ev)
    if ev.event_type == "WITHDRAWN":
        return f"{who}의 {what} 등록({number} · {_site(ev)})이 목록에서 삭제되었습니다." + _maybe_renumbered(ev)
    if ev.number_changed:
        renumbered = (
            f"{who}의 {what} 등록({_site(ev)})의 등록번호가 {ev.previous_permit_no}에서 "
            f"{josa(number, '으로/로')} 바뀌었"
        )
        others = _clauses(ev.changes, skip=("permit_no",))
        return f"{renumbered}고, {_listed(others)} 바뀌었습니다." if others else f"{renumbered}습니다."
    if ev.number_assigned:
        assigned = f"{who}의 {what} 등록에 등록번호 {josa(number, '이/가')} 부여되었"
        others = _clauses(ev.changes, skip=("permit_no",))
        return f"{assigned}고, {_listed(others)} 바뀌었습니다." if others else f"{assigned}습니다."
    return f"{who}의 {what} 등록({number})에서 {_listed(_clauses(ev.changes))} 바뀌었습니다."


def _examples(evs: Sequence[EventRow]) -> str:
    return ", ".join(e.permit_no or e.dmf_key for e in evs[:3]) + (" 등" if len(evs) > 3 else "")


def _group_sentence(kind: str, evs: list[EventRow]) -> str:
    """One sentence for alike events, ending in 「습니다.」 like every other: the examples go inside it."""
    n = f"{len(evs):,}건"
    if kind == "CHANGED":
        return f"등록 {n}({_examples(evs)})에서 {_listed(_clauses(evs[0].changes))} 똑같이 바뀌었습니다."
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


# --- the day's headline figures and its change rate ------------------------------------------------

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
    "하므로 보통(MEDIUM). 짝이 하나로 정해지지 않으면 삭제와 신규로 두고 '등록번호 변경 가능성'을 적음"
)
WITHDRAWN_DEFINITION = (
    f"{WITHDRAWN_FIRST_MENTION_KO}: 비교 기준일 목록에 있던 등록이 오늘 목록에 없음 — 목록은 신청인의 취하인지 "
    "식약처의 취소인지 알려 주지 않으므로 관측한 대로 적음"
)


class HeadlineFigures(Protocol):
    """What has the day's headline figures: `Kpis`, a trend `HistoryPoint`, the mail's `ReportDelivery`."""

    # read-only members: a frozen dataclass (`Kpis`) has them too
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
    """「신규 5 · 변경 6 · 삭제 0」, with 「· 번호 부여 1」 / 「· 번호 변경 1」 on a day that has one. `changed` is
    실질 변경 (`domain.model.substantive_changes`): a number event is its own figure, never in 변경 or 삭제."""
    w = COUNT_LABEL_KO
    text = f"{w['NEW']} {c.new:,} · {w['CHANGED']} {c.changed:,} · {w['WITHDRAWN']} {c.withdrawn:,}"
    text += f" · {w['NUMBER_ASSIGNED']} {c.number_assigned:,}" if c.number_assigned else ""
    return text + (f" · {w['NUMBER_CHANGED']} {c.number_changed:,}" if c.number_changed else "")


def headline_counts_of_run(
    new: int | None,
    changed_count: int | None,
    withdrawn: int | None,
    assigned_count: int | None,
    renumbered_count: int | None,
) -> str:
    """`headline_counts` from the stored counts (`changed_count` includes the number events)."""
    return headline_counts(
        Kpis(
            None,
            new=new or 0,
            changed=substantive_changes(changed_count, assigned_count, renumbered_count),
            withdrawn=withdrawn or 0,
            number_assigned=assigned_count or 0,
            number_changed=renumbered_count or 0,
        )
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


def products_hint() -> str:
    """요약's one-line hint while no product list is configured (`[products] file` empty)."""
    from dmf_assets.report.products import EXAMPLE_FILE, SUGGESTED_FILE

    setting = f'[products] file = "{SUGGESTED_FILE}"'
    return (
        f"자사 제품 목록을 설정하면 자사 제품에 해당하는 변경을 맨 앞에 표시합니다: {josa(EXAMPLE_FILE, '을/를')} "
        f"{josa(SUGGESTED_FILE, '으로/로')} 복사해 품목을 적고, {LOCAL_CONFIG_FILE}에 {josa(setting, '을/를')} "
        "넣으십시오."
    )
