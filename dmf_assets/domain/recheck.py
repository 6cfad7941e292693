"""A withdrawal is confirmed before it is committed (docs/DOMAIN.md §5): which questions to ask the source
again, and what its answers prove. Pure — asking, and archiving the answers with the day, is the source
client's job (`source.recheck`).

Offset paging cannot prove that a row is gone while the source changes under the fetch: a row deleted
before the cursor moves every later row up by one, and the row that crosses the cursor is never served —
it looks withdrawn while the source still lists it. So every would-be WITHDRAWN is looked up with a
filter the API offers (`ingr_kor_name`, else `entp_name`) on a word of its ingredient (or applicant): the
API matches a filter as a substring, and a word — letters and digits only — reads the same in the
display value we keep and in the raw value the source holds.

An answer is consistent with the day when every row the source lists for the filter is in the day's
snapshot (compared by content). A row it lists that the snapshot lacks is a listed registration the
fetch missed: the day must not be committed (a completeness failure, transient — fetched again). A
question without an answer (the request failed, or it cannot be asked any more) leaves the withdrawal
unconfirmed: the day is not committed either.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import polars as pl

from dmf_assets.domain.model import field_labels
from dmf_assets.domain.snapshot import build_snapshot

#: (keyed column, API filter parameter), in the order a withdrawn registration is looked up by
FILTERS: tuple[tuple[str, str], ...] = (("ingredient", "ingr_kor_name"), ("applicant", "entp_name"))
#: a shorter word matches too much of the registry to be a targeted question
MIN_WORD = 2
_WORD = re.compile(r"[^\W_]+")
#: what a listed or unconfirmed sample shows of a registration
SAMPLE_COLUMNS = ("permit_no", "ingredient", "applicant")


def query_word(text: str | None) -> str | None:
    """The longest run of letters and digits in `text` (the first of equals), if it has MIN_WORD or more."""
    words = _WORD.findall(text or "")
    best = max(words, key=len, default="")
    return best if len(best) >= MIN_WORD else None


@dataclass(frozen=True)
class Query:
    """One targeted question: the rows whose `column` contains `word` (the API's `param` filter)."""

    column: str
    param: str
    word: str

    @property
    def params(self) -> dict[str, str]:
        return {self.param: self.word}

    @property
    def key(self) -> str:
        """How an answer is filed (and found again in the archive)."""
        return f"{self.param}={self.word}"


def query_for(row: Mapping) -> Query | None:
    """The question that finds `row` (a keyed registration) if the source still lists it; None: none can."""
    for column, param in FILTERS:
        word = query_word(row.get(column))
        if word is not None:
            return Query(column, param, word)
    return None


@dataclass(frozen=True)
class RecheckPlan:
    queries: tuple[Query, ...]  # distinct, in the order of the withdrawals
    unaskable: tuple[dict, ...]  # withdrawals no question can find (no word in ingredient or applicant)


def plan_recheck(withdrawn: pl.DataFrame) -> RecheckPlan:
    """The questions that confirm the withdrawals `withdrawn` (the base day's keyed rows)."""
    queries: dict[str, Query] = {}
    unaskable = []
    for row in withdrawn.iter_rows(named=True):
        q = query_for(row)
        if q is None:
            unaskable.append({c: row.get(c) for c in SAMPLE_COLUMNS})
        else:
            queries.setdefault(q.key, q)
    return RecheckPlan(tuple(queries.values()), tuple(unaskable))


@dataclass(frozen=True)
class Answer:
    """The source's answer to one query: its rows (all pages), or None with why there is none."""

    items: list[dict] | None
    error: str = ""


@dataclass(frozen=True)
class RecheckVerdict:
    withdrawals: int
    queries: int
    listed: tuple[dict, ...]  # registrations the source lists that the day's snapshot lacks
    unconfirmed: tuple[dict, ...]  # questions without a usable answer, withdrawals no question can find

    @property
    def confirmed(self) -> bool:
        return not (self.listed or self.unconfirmed)


def judge_recheck(
    snapshot: pl.DataFrame, withdrawals: int, plan: RecheckPlan, answers: Mapping[str, Answer]
) -> RecheckVerdict:
    """What the answers prove about the day's snapshot (the keyed frame about to be committed)."""
    have = set(snapshot["content_hash"].to_list())
    listed: dict[str, dict] = {}
    unconfirmed = [
        {**row, "error": f"{field_labels('ingredient', 'applicant')}으로 찾을 수 없음"} for row in plan.unaskable
    ]
    for q in plan.queries:
        answer = answers.get(q.key)
        if answer is None or answer.items is None:
            unconfirmed.append({q.column: q.word, "error": (answer.error if answer else "") or "답 없음"})
            continue
        if not answer.items:
            if _holds_word(snapshot, q):
                # the snapshot holds rows this filter must match, the source answered none: it does not read the
                # filter as we do (or lost them since), so its silence proves nothing
                unconfirmed.append(
                    {q.column: q.word, "error": "원천이 이 검색어로 한 건도 돌려주지 않았는데 수집본에는 있음"}
                )
            continue
        rows = build_snapshot(answer.items)
        lacking = rows.filter(~pl.col("content_hash").is_in(list(have)))
        for row in lacking.iter_rows(named=True):
            listed.setdefault(row["content_hash"], {c: row.get(c) for c in SAMPLE_COLUMNS})
    return RecheckVerdict(withdrawals, len(plan.queries), tuple(listed.values()), tuple(unconfirmed))


def _holds_word(snapshot: pl.DataFrame, q: Query) -> bool:
    return snapshot.filter(pl.col(q.column).str.contains(q.word, literal=True)).height > 0
