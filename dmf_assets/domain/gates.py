"""The acceptance gates and the quality metrics (docs/DOMAIN.md §6), as pure functions.

Each gate is declared once, as an entry of the registry `GATES`: its rule (a function of the day's
`Evidence`), what it needs — the fetch, the rows, the comparison base, or the diff against that base —
and the texts that name it. The pipeline loops over the registry: the gates that judge the fetched
snapshot before the diff, the ones that judge the diff after it, and — whenever the comparison base of
an accepted day moves — every gate that needs the base again. A day is accepted only if all pass. Every
outcome carries the observed value, the threshold and a Korean sentence with the numbers, so the UI and
the workbook explain themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import date
from enum import Enum
from typing import Protocol

import polars as pl

from dmf_assets.domain.model import COUNT_LABEL_KO, FIELD_LABEL_KO, field_labels, substantive_changes
from dmf_assets.domain.recheck import RecheckVerdict
from dmf_assets.domain.sites import oversize_expr


class GateThresholds(Protocol):
    """The thresholds the gates read (the settings' `[gates]` section satisfies it)."""

    @property
    def drop_max_ratio(self) -> float: ...
    @property
    def null_max_ratio(self) -> float: ...
    @property
    def duplicate_max_ratio(self) -> float: ...
    @property
    def churn_max_ratio(self) -> float: ...


class QualityThresholds(Protocol):
    """The expectations the quality metrics read (the settings' `[quality]` section satisfies it)."""

    @property
    def row_count_min(self) -> int: ...
    @property
    def row_count_max(self) -> int: ...
    @property
    def permit_parse_min_ratio(self) -> float: ...
    @property
    def new_substance_max_ratio(self) -> float: ...
    @property
    def synthetic_key_max(self) -> int: ...
    @property
    def unresolved_country_max(self) -> int: ...
    @property
    def oversize_max(self) -> int: ...
    @property
    def replacement_char_max(self) -> int: ...
    @property
    def stale_source_days(self) -> int: ...


# --- what a gate judges ----------------------------------------------------------------------------


class Needs(Enum):
    """What a gate reads of a day, which also says when it is judged (docs/DOMAIN.md §6)."""

    FETCH = "fetch"  # what the transfer proved (pages, totalCount): before the diff
    ROWS = "rows"  # the rows received: before the diff, unless nothing usable arrived
    BASE = "base"  # the snapshot against the comparison base: before the diff, and again when the base moves
    DIFF = "diff"  # the diff against the comparison base: after the diff, and again when the base moves


#: the gates judged on the fetched snapshot, before the diff
BEFORE_DIFF = (Needs.FETCH, Needs.ROWS, Needs.BASE)
#: the gates judged again whenever a day's comparison base moves
ON_BASE = (Needs.BASE, Needs.DIFF)


@dataclass(frozen=True)
class FetchFacts:
    """What the fetch proved about the day's transfer (built from the client's FetchResult)."""

    transport_ok: bool
    transport_errors: tuple[str, ...] = ()
    pages_ok: int = 0
    pages_failed: int = 0
    total_count: int | None = None  # consistent totalCount across pages; None when unknown/inconsistent
    total_count_note: str = ""  # why total_count is None, when it is
    rows_received: int = 0
    rows_after_dedup: int = 0
    duplicate_rows_dropped: int = 0
    unexpected_fields: tuple[str, ...] = ()
    missing_fields: tuple[str, ...] = ()
    stopped: str = ""  # why the fetch stopped before the last page totalCount promises (a sentence), if it did

    @classmethod
    def recorded(cls, total_count: int | None, rows: int | None) -> FetchFacts:
        """What a day's run row recorded of its fetch: what its gates that need the base are judged on again."""
        return cls(True, total_count=total_count, rows_after_dedup=rows or 0)

    @property
    def transport_passed(self) -> bool:
        return self.transport_ok and self.pages_failed == 0

    @property
    def nothing_usable(self) -> bool:
        """The transfer failed and no row arrived: the gates that read rows are not evaluated."""
        return not self.transport_passed and self.rows_after_dedup == 0


@dataclass(frozen=True)
class BaseFacts:
    """The comparison base: the latest accepted day before the day being judged."""

    day: date | None = None
    total_count: int | None = None
    population: int | None = None


@dataclass(frozen=True)
class Evidence:
    """What the gates judge a day on; each gate reads the part its `Needs` names. A day judged again against a
    moved base has no snapshot here (`snapshot` None): only the gates that need the base are judged then."""

    fetch: FetchFacts
    base: BaseFacts = BaseFacts()
    snapshot: pl.DataFrame | None = None  # ROWS: the keyed snapshot
    page_samples: tuple[dict, ...] = ()  # FETCH: the pages whose rows disagree with totalCount (`page_samples`)
    counts: Mapping[str, int] = field(default_factory=dict)  # DIFF: the diff's counts
    population: int = 0  # DIFF: stands in when the base's population is not on record
    changes: tuple[dict, ...] = ()  # DIFF: sample events

    @property
    def rows(self) -> pl.DataFrame:
        if self.snapshot is None:
            raise ValueError("a gate that reads rows is judged on the fetched snapshot only")
        return self.snapshot


@dataclass(frozen=True)
class GateOutcome:
    number: int
    passed: bool | None  # None = not evaluated (an earlier gate already rejected the day)
    observed_value: float | None
    threshold_value: float | None
    observed: str
    threshold: str
    detail: str
    samples: tuple[dict, ...] = ()
    #: the gate's entry when a registry judged it (None: looked up in GATES by number)
    entry: Gate | None = field(default=None, compare=False, repr=False)

    @property
    def gate(self) -> Gate:
        return self.entry or GATES[self.number]

    @property
    def name(self) -> str:
        return self.gate.name

    @property
    def label_ko(self) -> str:
        return self.gate.label_ko


@dataclass(frozen=True)
class QualityMetric:
    name: str
    label_ko: str
    value: float
    expected: str
    ok: bool
    detail: str = ""
    samples: tuple[dict, ...] = ()


# --- the registry ----------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Gate:
    """One acceptance gate, declared once (docs/DOMAIN.md §6): its rule, what it needs, which setting holds its
    threshold, whether a same-morning retry can help, what a person should check, and which emulator faults it
    must refuse. Everything else that names a gate (the Dagster check and the asset it sits on, the messages,
    the workbook, the fault matrix) derives from this entry."""

    number: int
    name: str  # check name suffix: gate_{number}_{name}
    label_ko: str
    rule_ko: str  # the rule, without numbers (the thresholds are configuration)
    rule: Callable[[Evidence, GateThresholds], GateOutcome]  # returns an outcome numbered `number`
    needs: Needs
    setting: str | None  # the key in [gates] that sets the threshold (None: an exact rule)
    transient: bool  # a source hiccup: retried the same morning; otherwise a person decides
    check_ko: str  # what to look at before raising the threshold or re-running
    reader_ko: str  # why the day was not used, for the team's mail: no setting, no API field, no gate number
    faults: tuple[str, ...] = ()  # the emulator fault kinds (emulator/faults.py) this gate must refuse
    label_en: str = ""  # default: the name, in words ('new_cap' -> 'new cap')

    def __post_init__(self) -> None:
        if not self.label_en:
            object.__setattr__(self, "label_en", self.name.replace("_", " "))
        if not self.reader_ko:
            raise ValueError(f"gate {self.number} needs the sentence its rejection says to the team (reader_ko)")

    @property
    def after_diff(self) -> bool:
        return self.needs is Needs.DIFF

    @property
    def check_name(self) -> str:
        """The Dagster asset check of this gate: 'gate_3_drop'."""
        return f"gate_{self.number}_{self.name}"

    @property
    def asset(self) -> str:
        """The asset whose step judges the gate: the diff for a gate judged after it, else the verdict."""
        return "snapshot_diff" if self.after_diff else "integrity_verdict"

    @property
    def title(self) -> str:
        """'게이트 2 완전성(completeness)' — how every message names a gate."""
        return f"게이트 {self.number} {self.label_ko}({self.name})"

    @property
    def rule_text(self) -> str:
        """'감소율: 마지막 정상 수집일 대비 … ≤ [gates] drop_max_ratio (drop)' — the rule as the UI states it."""
        return f"{self.label_ko}: {self.rule_ko} ({self.name})"

    @property
    def setting_key(self) -> str | None:
        """'gates.drop_max_ratio': where a person raises the threshold (None: an exact rule)."""
        return None if self.setting is None else f"gates.{self.setting}"


@dataclass(frozen=True)
class GateRegistry:
    """The gates in the order they are judged and listed. The pipeline, the checks and the texts that name gates
    loop over one registry: `GATES`, or — in a test — `GATES.registered(another)`."""

    gates: tuple[Gate, ...]

    def __post_init__(self) -> None:
        for attr in ("number", "name"):
            values = [getattr(g, attr) for g in self.gates]
            if len(set(values)) != len(values):
                raise ValueError(f"two gates with one {attr}: {values}")

    def __iter__(self) -> Iterator[Gate]:
        return iter(self.gates)

    def __len__(self) -> int:
        return len(self.gates)

    def __contains__(self, number: object) -> bool:
        return any(g.number == number for g in self.gates)

    def __getitem__(self, number: int) -> Gate:
        gate = self.get(number)
        if gate is None:
            raise KeyError(f"no gate {number}")
        return gate

    def get(self, number: int) -> Gate | None:
        return next((g for g in self.gates if g.number == number), None)

    def registered(self, gate: Gate) -> GateRegistry:
        """This registry with one more gate, in number order."""
        return GateRegistry(tuple(sorted((*self.gates, gate), key=lambda g: g.number)))

    def needing(self, needs: Collection[Needs]) -> tuple[Gate, ...]:
        return tuple(g for g in self.gates if g.needs in needs)

    def judge(self, evidence: Evidence, thresholds: GateThresholds, needs: Collection[Needs]) -> list[GateOutcome]:
        """Each gate that needs one of `needs`, in order, judged on `evidence` by its rule. The gates that read
        the rows are not evaluated when nothing usable arrived (docs/DOMAIN.md §6)."""
        out = []
        for gate in self.needing(needs):
            if gate.needs in (Needs.ROWS, Needs.BASE) and evidence.fetch.nothing_usable:
                out.append(not_evaluated(gate, f"{TRANSPORT.label_ko} 게이트에서 이미 거부되었습니다."))
                continue
            outcome = gate.rule(evidence, thresholds)
            if outcome.number != gate.number:
                raise ValueError(f"gate {gate.number}'s rule returned the outcome of gate {outcome.number}")
            out.append(replace(outcome, entry=gate))
        return out


def gates_text(gates: Iterable[Gate], word: str = "게이트") -> str:
    """'게이트 1–5', '게이트 6', '게이트 1–5·7' (`word` 'Gates': 'Gates 1–5') — how a text names gates by number."""
    runs: list[list[int]] = []
    for n in sorted(g.number for g in gates):
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return f"{word} " + "·".join(f"{r[0]}–{r[-1]}" if len(r) > 2 else "·".join(map(str, r)) for r in runs)


def gates_labelled(gates: Iterable[Gate]) -> str:
    """'게이트 1–5(전송·완전성·감소율·결측·중복)'."""
    gates = tuple(gates)
    return f"{gates_text(gates)}({'·'.join(g.label_ko for g in gates)})"


# --- the rules -------------------------------------------------------------------------------------


def _pct(x: float) -> str:
    return f"{x * 100:.2f} %"


def _ratio_within(
    gate: Gate,
    value: float,
    threshold: float,
    observed: str,
    ok: str,
    bad: str,
    samples: tuple[dict, ...] = (),
    *,
    each: bool = False,
) -> GateOutcome:
    """The outcome of a gate that holds a ratio (`each`: of several fields) to at most its threshold."""
    passed = value <= threshold
    bound = f"{'각 ' if each else ''}≤ {_pct(threshold)}"
    return GateOutcome(gate.number, passed, value, threshold, observed, bound, ok if passed else bad, samples)


def _without_base(gate: Gate, threshold: float, detail: str) -> GateOutcome:
    """A gate that compares with the base, on a day without one: nothing to compare, so it passes."""
    return GateOutcome(gate.number, True, 0.0, threshold, "비교 기준 없음", f"≤ {_pct(threshold)}", detail)


def gate_transport(f: FetchFacts) -> GateOutcome:
    passed = f.transport_passed
    errors = "; ".join(f.transport_errors[:3])
    return GateOutcome(
        TRANSPORT.number,
        passed,
        float(f.pages_failed),
        0.0,
        f"정상 {f.pages_ok:,}쪽 / 실패 {f.pages_failed:,}쪽",
        "모든 쪽 HTTP 200 · resultCode 00 · 올바른 응답 · API의 9개 항목",
        "모든 쪽을 정상 수신했습니다." if passed else f"수신 실패: {errors or '원인 미상'}",
        tuple({"error": e} for e in f.transport_errors[:10]),
    )


def page_samples(pages: list[dict], num_of_rows: int | None, total_count: int | None) -> tuple[dict, ...]:
    """Pages whose row count is not what totalCount and the page size promise (the evidence of gate 2)."""
    out = []
    for p in pages:
        rows, page_no = int(p.get("rows") or 0), int(p.get("page_no") or 0)
        expected = None
        if num_of_rows and total_count is not None and page_no:
            expected = max(0, min(num_of_rows, total_count - (page_no - 1) * num_of_rows))
        if p.get("status") != "ok" or (expected is not None and rows != expected):
            out.append(
                {
                    "page_no": page_no,
                    "rows": rows,
                    "expected_rows": expected,
                    "status": p.get("status"),
                    "page_total_count": p.get("total_count"),
                    "error": p.get("error"),
                }
            )
    return tuple(out[:20])


def gate_completeness(f: FetchFacts, samples: tuple[dict, ...] = ()) -> GateOutcome:
    if f.total_count is None:
        return GateOutcome(
            COMPLETENESS.number,
            False,
            float(f.rows_after_dedup),
            None,
            f"수신 {f.rows_after_dedup:,}건 / totalCount 확인 불가",
            "수신 건수 = totalCount",
            f"totalCount를 확정할 수 없어 완전성을 증명할 수 없습니다. {f.total_count_note}".strip(),
            samples,
        )
    passed = f.rows_after_dedup == f.total_count and f.total_count > 0
    note = f" (반복된 동일 행 {f.duplicate_rows_dropped:,}건 제외)" if f.duplicate_rows_dropped else ""
    gap = f.rows_after_dedup - f.total_count
    if passed:
        detail = "전체 목록을 빠짐없이 받았습니다."
    elif f.total_count == 0:
        detail = "totalCount가 0입니다 — 빈 목록은 받아들이지 않습니다."
    elif gap < 0:
        detail = f"{-gap:,}건이 누락되었습니다."
    else:
        detail = f"totalCount보다 {gap:,}건 더 받았습니다 — 목록이 불안정합니다."
    if f.stopped and not passed:
        detail = f"{detail} {f.stopped}"
    return GateOutcome(
        COMPLETENESS.number,
        passed,
        float(f.rows_after_dedup),
        float(f.total_count),
        f"수신 {f.rows_after_dedup:,}건 / totalCount {f.total_count:,}건{note}",
        "수신 건수 = totalCount",
        detail,
        () if passed else samples,
    )


#: the rule of gate 2 judged again after the diff, as its check and its rows state it
RECHECK_RULE = "삭제 후보마다 원천에 다시 물어 목록에 없음을 확인"


def gate_recheck(v: RecheckVerdict) -> GateOutcome:
    """Gate 2 judged again after the diff, on its would-be withdrawals asked of the source once more
    (`domain.recheck`): a snapshot that lacks a registration the source still lists is incomplete, and a
    withdrawal the source could not confirm is not committed. Passes when every one is confirmed."""
    listed, unconfirmed = len(v.listed), len(v.unconfirmed)
    observed = f"삭제 후보 {v.withdrawals:,}건 · 원천 목록에 아직 있는데 수집본에 없는 등록 {listed:,}건" + (
        f" · 답을 받지 못한 확인 {unconfirmed:,}건" if unconfirmed else ""
    )
    if v.confirmed:
        detail = f"삭제 후보 {v.withdrawals:,}건 모두 원천 목록에 없음을 다시 확인했습니다."
    elif listed:
        detail = (
            "수집하는 동안 원천 목록이 바뀌어 원천이 아직 싣고 있는 등록이 수집본에서 빠졌습니다 — 목록에서 삭제로 기록하지 않고 "
            "이 날을 거부합니다."
        )
    else:
        detail = "목록에서 삭제될 후보를 원천에 다시 확인하지 못했습니다 — 확인되지 않은 삭제는 기록하지 않고 이 날을 거부합니다."
    return GateOutcome(
        COMPLETENESS.number,
        v.confirmed,
        float(listed + unconfirmed),
        0.0,
        observed,
        RECHECK_RULE,
        detail,
        (*v.listed, *v.unconfirmed)[:10],
    )


def gate_recheck_nothing_to_ask() -> GateOutcome:
    """Gate 2 after the diff on a day with no would-be withdrawal: nothing to ask the source again."""
    return GateOutcome(
        COMPLETENESS.number,
        True,
        0.0,
        0.0,
        "삭제 후보 0건",
        RECHECK_RULE,
        "목록에서 삭제될 후보가 없어 다시 물을 것이 없습니다.",
    )


def gate_drop(f: FetchFacts, base: BaseFacts, gates: GateThresholds) -> GateOutcome:
    threshold = gates.drop_max_ratio
    if base.day is None:
        return _without_base(DROP, threshold, "첫 수집일이므로 감소율을 비교하지 않습니다.")
    if not base.total_count:  # a base without its run's record (an old history), or an empty old dump (`dmf diff`)
        count = "가 0건이어서" if base.total_count == 0 else "를 알 수 없어"
        return _without_base(
            DROP, threshold, f"기준일 {base.day.isoformat()}의 등록 건수{count} 감소율을 비교하지 않습니다."
        )
    current = f.total_count if f.total_count is not None else f.rows_after_dedup
    drop = max(0.0, (base.total_count - current) / base.total_count)
    return _ratio_within(
        DROP,
        drop,
        threshold,
        f"{base.total_count:,}건 → {current:,}건 ("
        + (f"{_pct(drop)} 감소)" if current < base.total_count else "감소 없음)"),
        f"기준일 {base.day.isoformat()} 대비 감소율이 허용 범위 안입니다.",
        f"기준일 {base.day.isoformat()} 대비 {base.total_count - current:,}건({_pct(drop)})이 사라졌습니다 — 부분 목록으로 보고 거부합니다.",
    )


#: the fields gate 4 counts empty values of (a key field: a row without one cannot be tracked)
NULL_CHECKED_FIELDS = ("permit_no", "ingredient", "applicant")


def gate_nulls(frame: pl.DataFrame, gates: GateThresholds) -> GateOutcome:
    threshold = gates.null_max_ratio
    n = frame.height
    if n == 0:
        return GateOutcome(
            NULLS.number, False, 1.0, threshold, "행 없음", f"각 ≤ {_pct(threshold)}", "받은 행이 없습니다."
        )
    ratios = {FIELD_LABEL_KO[f]: frame[f].null_count() / n for f in NULL_CHECKED_FIELDS}
    worst_label, worst = max(ratios.items(), key=lambda kv: kv[1])
    failing = [k for k, v in ratios.items() if v > threshold]
    samples = (
        frame.filter(pl.col("permit_no").is_null() | pl.col("ingredient").is_null() | pl.col("applicant").is_null())
        .select("row_no", "permit_no_raw", "ingredient", "applicant")
        .head(10)
        .to_dicts()
    )
    return _ratio_within(
        NULLS,
        worst,
        threshold,
        " · ".join(f"{k} {_pct(v)}" for k, v in ratios.items()),
        "핵심 필드 결측이 허용 범위 안입니다.",
        f"{', '.join(failing)} 결측 비율이 높습니다 (최대 {worst_label} {_pct(worst)}) — 응답 형식이 바뀌었을 수 있습니다.",
        tuple(samples),
        each=True,
    )


def gate_duplicates(frame: pl.DataFrame, gates: GateThresholds) -> GateOutcome:
    threshold = gates.duplicate_max_ratio
    numbered = frame.filter(pl.col("permit_no").is_not_null())
    n = numbered.height
    surplus = n - numbered["permit_no"].n_unique() if n else 0
    ratio = surplus / n if n else 0.0
    dup_numbers = (
        numbered.group_by("permit_no")
        .len()
        .filter(pl.col("len") > 1)
        .sort("len", "permit_no", descending=[True, False])
        .head(10)
    )
    return _ratio_within(
        DUPLICATES,
        ratio,
        threshold,
        f"중복 등록번호 초과분 {surplus:,}건 / 등록번호 있는 {n:,}건 ({_pct(ratio)})",  # the rows without one aside
        "중복 등록번호가 허용 범위 안입니다.",
        "같은 등록번호가 비정상적으로 많이 반복됩니다 — 페이지가 중복 제공되었을 수 있습니다.",
        tuple({"permit_no": r["permit_no"], "count": r["len"]} for r in dup_numbers.to_dicts()),
    )


def gate_churn(
    counts: Mapping[str, int], population: int, gates: GateThresholds, samples: tuple[dict, ...] = ()
) -> GateOutcome:
    threshold = gates.churn_max_ratio
    new, changed, withdrawn, assigned, renumbered = (
        counts.get(k, 0) for k in ("NEW", "CHANGED", "WITHDRAWN", "NUMBER_ASSIGNED", "NUMBER_CHANGED")
    )
    ratio = (new + changed + withdrawn) / max(population, 1)
    # the churn counts a number event as a change; the text names it apart, as every headline does
    w = COUNT_LABEL_KO
    return _ratio_within(
        CHURN,
        ratio,
        threshold,
        f"{w['NEW']} {new:,} · "
        f"{w['CHANGED']} {substantive_changes(changed, assigned, renumbered):,} · "
        f"{w['WITHDRAWN']} {withdrawn:,}"
        + (f" · {w['NUMBER_ASSIGNED']} {assigned:,}" if assigned else "")
        + (f" · {w['NUMBER_CHANGED']} {renumbered:,}" if renumbered else "")
        + f" / {population:,}건 ({_pct(ratio)})",
        "변동이 허용 범위 안입니다.",
        # read by the team too (the workbook's gate table, the page): no setting named here — the check's rule does
        "하루 변동이 비정상적으로 큽니다 — 원천 데이터 이상으로 보고 거부합니다. 실제 대규모 변경이면 담당 "
        "엔지니어가 기준을 조정해 이 날짜를 다시 처리합니다.",
        samples,
    )


def gate_churn_without_base(gates: GateThresholds) -> GateOutcome:
    """Gate 6 on the first accepted day (the baseline): nothing to compare, so it passes."""
    return _without_base(CHURN, gates.churn_max_ratio, "첫 수집일(기준일)이므로 변동률을 비교하지 않습니다.")


def churn_against(
    counts: Mapping[str, int],
    base: BaseFacts,
    gates: GateThresholds,
    *,
    population: int,
    samples: tuple[dict, ...] = (),
) -> GateOutcome:
    """Gate 6 of a day diffed against `base` (docs/DOMAIN.md §6). `population` stands in when the base day's
    population is not on record; without a base (the baseline) there is nothing to compare and the gate passes."""
    if base.day is None:
        return gate_churn_without_base(gates)
    return gate_churn(counts, base.population or population, gates, samples)


TRANSPORT = Gate(
    number=1,
    name="transport",
    label_ko="전송",
    rule_ko="모든 쪽이 HTTP 200, resultCode 00, 읽을 수 있는 응답 본문, API의 9개 항목 그대로",
    rule=lambda e, _: gate_transport(e.fetch),
    needs=Needs.FETCH,
    setting=None,
    transient=True,
    check_ko="원천 API가 오류를 돌려주었습니다",
    faults=(
        "truncated_json",
        "xml_key_error",
        "xml_quota_error",
        "outage",
        "schema_drift_renamed",
        "schema_drift_missing",
        "field_renamed_on_page",
        "field_missing_on_page",
        "field_renamed_on_rows",
    ),
    reader_ko="식약처 서버가 오류를 돌려주었거나 응답의 형식이 달라 목록을 끝까지 받지 못했습니다",
)
COMPLETENESS = Gate(
    number=2,
    name="completeness",
    label_ko="완전성",
    rule_ko="수신 건수(페이지 간 반복 제거 후) = totalCount, 삭제 후보는 원천에 다시 물어 목록에 없음을 확인",
    rule=lambda e, _: gate_completeness(e.fetch, e.page_samples),
    needs=Needs.FETCH,
    setting=None,
    transient=True,
    check_ko="원천이 목록 일부만 돌려주었습니다",
    faults=(
        "total_count_inflated",
        "total_count_deflated",
        "page_missing_rows",
        "page_order_unstable",
        "empty_page",
        "registry_shift",
    ),
    reader_ko="받은 목록에 빠진 등록이 있었습니다(식약처가 알린 전체 건수와 맞지 않거나, 받는 사이 목록이 바뀜)",
)
DROP = Gate(
    number=3,
    name="drop",
    label_ko="감소율",
    rule_ko="마지막 정상 수집일 대비 totalCount 감소율 ≤ [gates] drop_max_ratio",
    rule=lambda e, t: gate_drop(e.fetch, e.base, t),
    needs=Needs.BASE,
    setting="drop_max_ratio",
    transient=False,
    check_ko="원천이 목록 일부만 돌려준 것인지, 실제로 등록이 대량으로 빠진 것인지",
    faults=("mass_disappearance",),
    reader_ko="전체 등록 수가 기준일보다 크게 줄었습니다 — 목록 일부만 왔을 수 있습니다",
)
NULLS = Gate(
    number=4,
    name="nulls",
    label_ko="결측",
    rule_ko=f"{field_labels(*NULL_CHECKED_FIELDS)} 결측 비율 각 ≤ [gates] null_max_ratio",
    rule=lambda e, t: gate_nulls(e.rows, t),
    needs=Needs.ROWS,
    setting="null_max_ratio",
    transient=False,
    check_ko="응답 형식이 바뀌어 필드가 비어 온 것인지",
    reader_ko=f"{field_labels(*NULL_CHECKED_FIELDS)}이 빈 행이 너무 많았습니다 — 응답 형식이 바뀌었을 수 있습니다",
)
DUPLICATES = Gate(
    number=5,
    name="duplicates",
    label_ko="중복",
    rule_ko="중복 등록번호 비율 ≤ [gates] duplicate_max_ratio",
    rule=lambda e, t: gate_duplicates(e.rows, t),
    needs=Needs.ROWS,
    setting="duplicate_max_ratio",
    transient=False,
    check_ko="같은 쪽이 반복 제공된 것인지, 실제로 번호가 겹치는지",
    reader_ko="같은 등록번호가 너무 많이 겹쳤습니다 — 같은 목록이 되풀이되어 왔을 수 있습니다",
)
CHURN = Gate(
    number=6,
    name="churn",
    label_ko="변동률",
    rule_ko="(신규+변경+삭제)/전체 ≤ [gates] churn_max_ratio, 비교 후 평가",
    rule=lambda e, t: churn_against(e.counts, e.base, t, population=e.population, samples=e.changes),
    needs=Needs.DIFF,
    setting="churn_max_ratio",
    transient=False,
    check_ko="원천 데이터 이상인지, 실제 대규모 변경인지",
    faults=("garbled_text",),
    reader_ko="하루 사이 바뀐 등록이 너무 많았습니다 — 원천 데이터 이상일 수 있습니다",
)

GATES = GateRegistry((TRANSPORT, COMPLETENESS, DROP, NULLS, DUPLICATES, CHURN))
GATE_BY_NUMBER: dict[int, Gate] = {g.number: g for g in GATES}


def not_evaluated(gate: Gate, reason: str) -> GateOutcome:
    return GateOutcome(gate.number, None, None, None, "평가하지 않음", "-", reason, entry=gate)


def first_failure(outcomes: Iterable[GateOutcome]) -> GateOutcome | None:
    return next((o for o in outcomes if o.passed is False), None)


def rejection_reason(g: GateOutcome) -> str:
    """'3번 감소율 게이트 실패: … — …': the reason a refused day's run row records and its report shows."""
    return f"{g.number}번 {g.label_ko} 게이트 실패: {g.observed} — {g.detail}"


def reason_for_the_team(gate: int | None, recorded: str | None) -> str | None:
    """Why a day was refused, as the team reads it: its gate's reader sentence (no gate number, no observed value),
    else the reason its run row `recorded` (a gate this registry does not know)."""
    entry = GATE_BY_NUMBER.get(gate) if gate is not None else None
    return entry.reader_ko if entry is not None else recorded


@dataclass(frozen=True)
class Rejection:
    """Why a day was refused: the gate that failed, what it saw against what it allows, and the base
    that therefore stays. The one value every consumer of a rejected day reads (UI, sensor, alerts)."""

    gate: int
    observed: str
    threshold: str
    detail: str  # the gate's Korean sentence, with the numbers
    base_day: date | None
    samples: tuple[dict, ...] = ()
    #: the gate's entry when a registry judged it (None: looked up in GATES by number)
    entry: Gate | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.entry is None and self.gate not in GATES:
            raise ValueError(f"unknown gate {self.gate!r}")
        if not (self.observed and self.threshold and self.detail):
            raise ValueError(f"a rejection by gate {self.gate} needs its observed value, threshold and detail")

    @classmethod
    def of(cls, outcome: GateOutcome, base_day: date | None) -> Rejection:
        return cls(
            outcome.number,
            outcome.observed,
            outcome.threshold,
            outcome.detail,
            base_day,
            tuple(outcome.samples),
            outcome.entry,
        )

    @property
    def spec(self) -> Gate:
        return self.entry or GATES[self.gate]

    @property
    def sentence(self) -> str:
        """'게이트 2 완전성(completeness): 320건이 누락되었습니다 (관측값: … · 기준: …)'"""
        return f"{self.spec.title}: {self.evidence}"

    @property
    def evidence(self) -> str:
        """'320건이 누락되었습니다 (관측값: 수신 8,893건 / totalCount 9,213건 · 기준: 수신 건수 = totalCount)'"""
        return f"{self.detail.rstrip('. ')} (관측값: {self.observed} · 기준: {self.threshold})."


# --- quality metrics (warnings only) -------------------------------------------------------------

#: the metrics of a normalized day (`quality_metrics`), in the order the UI lists them: name -> label
QUALITY_LABELS: dict[str, str] = {
    "row_count": "수집 건수 범위",
    "permit_parse_rate": "등록번호 해석률",
    "new_substance_ratio": "신물질 비율",
    "unknown_groups": "미확인 그룹 문자",
    "synthetic_keys": "등록번호 미부여(합성 키)",
    "invalid_dates": "발급일자 형식 오류",
    "future_dates": "미래 발급일자",
    "ancient_dates": "1990년 이전 발급일자",
    "issue_before_acceptance": "접수일 이전 발급일자",
    "unresolved_countries": "미확인 국가명",
    "oversize_fields": "규격 초과 길이",
    "replacement_chars": "깨진 문자(U+FFFD)",
    "site_split_failures": "제조소 분리 실패",
    "schema_drift": "응답 필드 변화",
    "page_repeats": "페이지 간 반복 행",
}
#: the metric `judge` adds once the comparison base is known
STALENESS = "days_since_source_change"

#: what a count of rows is held to: (the expectation as people read it, whether a count meets it)
Expectation = tuple[str, Callable[[int], bool]]
_INFO: Expectation = ("정보", lambda n: True)
_NONE: Expectation = ("0", lambda n: n == 0)


def _at_most(limit: int) -> Expectation:
    return f"≤ {limit}", lambda n: n <= limit


def _metric(name: str, value: float, expected: str, ok: bool, detail: str, samples: tuple = ()) -> QualityMetric:
    return QualityMetric(name, QUALITY_LABELS[name], value, expected, ok, detail, samples)


def _counted(name: str, rows: pl.DataFrame, expect: Expectation, *columns: str, note: str = "") -> QualityMetric:
    """A metric that counts the rows with a problem, with up to five of them as samples."""
    expected, meets = expect
    n = rows.height
    samples = tuple(rows.select("row_no", *columns).head(5).to_dicts()) if columns else ()
    return _metric(name, n, expected, meets(n), f"{n:,}건{note}", samples)


def _row_metrics(
    frame: pl.DataFrame, numbered: pl.DataFrame, day: date, quality: QualityThresholds
) -> list[QualityMetric]:
    """The metrics that count rows of the snapshot (`numbered`: its rows with a number)."""
    issued = pl.col("issue_date")
    return [
        _counted(
            "unknown_groups",
            numbered.filter((pl.col("permit_fmt") == "standard") & pl.col("permit_table").is_null()),
            _INFO,
            "permit_no",
            note=" (예: HP 등 표에 없는 그룹)",
        ),
        _counted(
            "synthetic_keys",
            frame.filter(pl.col("permit_no").is_null()),
            _at_most(quality.synthetic_key_max),
            "ingredient",
            "applicant",
        ),
        _counted("invalid_dates", frame.filter(pl.col("issue_date_invalid")), _NONE, "permit_no"),
        _counted("future_dates", frame.filter(issued > day.isoformat()), _NONE, "permit_no", "issue_date"),
        _counted("ancient_dates", frame.filter(issued < "1990-01-01"), _NONE, "permit_no", "issue_date"),
        _counted(
            "issue_before_acceptance",
            frame.filter(
                pl.col("permit_accept_date").is_not_null()
                & issued.is_not_null()
                & (issued < pl.col("permit_accept_date"))
            ),
            _INFO,
            "permit_no",
            "issue_date",
            "permit_accept_date",
        ),
        _counted(
            "unresolved_countries",
            frame.filter(pl.col("unresolved_countries").list.len() > 0),
            _at_most(quality.unresolved_country_max),
            "countries",
        ),
        # a multi-site registration joins its sites in one field: the spec size holds per site
        _counted("oversize_fields", frame.filter(oversize_expr()), _at_most(quality.oversize_max), "permit_no"),
        _counted(
            "replacement_chars",
            frame.filter(pl.col("has_replacement_char")),
            _at_most(quality.replacement_char_max),
            "permit_no",
        ),
        _counted(
            "site_split_failures",
            frame.filter((pl.col("site_count") > 1) & ~pl.col("sites_split_ok")),
            _INFO,
            "permit_no",
        ),
    ]


def quality_metrics(
    frame: pl.DataFrame, fetch: FetchFacts, day: date, quality: QualityThresholds
) -> list[QualityMetric]:
    """The non-blocking quality metrics of a normalized day (docs/DOMAIN.md §6), in `QUALITY_LABELS`' order."""
    rows = frame.height
    numbered = frame.filter(pl.col("permit_no").is_not_null())
    unknown = numbered.filter(pl.col("permit_fmt") == "unknown")
    parse_rate = 1 - unknown.height / max(numbered.height, 1)
    new_substance = frame.filter(pl.col("permit_fmt") == "new_substance").height / max(rows, 1)
    drift = (f"예상 밖 필드: {', '.join(fetch.unexpected_fields)} " if fetch.unexpected_fields else "") + (
        f"누락 필드: {', '.join(fetch.missing_fields)}" if fetch.missing_fields else ""
    )
    return [
        _metric(
            "row_count",
            rows,
            f"{quality.row_count_min:,}–{quality.row_count_max:,}",
            quality.row_count_min <= rows <= quality.row_count_max,
            f"{rows:,}건",
        ),
        _metric(
            "permit_parse_rate",
            round(parse_rate, 6),
            f"≥ {_pct(quality.permit_parse_min_ratio)}",
            parse_rate >= quality.permit_parse_min_ratio,
            f"해석 불가 {unknown.height:,}건",
            tuple(unknown.select("row_no", "permit_no_raw").head(5).to_dicts()),
        ),
        _metric(
            "new_substance_ratio",
            round(new_substance, 6),
            f"≤ {_pct(quality.new_substance_max_ratio)}",
            new_substance <= quality.new_substance_max_ratio,
            _pct(new_substance),
        ),
        *_row_metrics(frame, numbered, day, quality),
        _metric(
            "schema_drift",
            len(fetch.unexpected_fields) + len(fetch.missing_fields),
            "0",
            not (fetch.unexpected_fields or fetch.missing_fields),
            drift or "변화 없음",
        ),
        _metric("page_repeats", fetch.duplicate_rows_dropped, "정보", True, f"{fetch.duplicate_rows_dropped:,}건 제거"),
    ]


def staleness_metric(days: int, quality: QualityThresholds) -> QualityMetric:
    """How long the source has listed the same registry, up to the comparison base (`judge` adds it)."""
    return QualityMetric(
        STALENESS,
        "원천 무변동 일수",
        days,
        f"≤ {quality.stale_source_days}",
        days <= quality.stale_source_days,
        f"기준일까지 {days}일 연속 변경 없음",
    )
