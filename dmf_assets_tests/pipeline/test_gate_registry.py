"""The gate registry (`domain.gates.GATES`) is the one declaration of each gate (docs/DOMAIN.md §6): the
Dagster checks, the settings, the emulator's faults and the judgements against a comparison base all follow
from it, and nothing disagrees with it."""

from __future__ import annotations

import tomllib
from datetime import date

import polars as pl
import pytest

from dmf_assets.defs.checks import gate_spec, gate_specs
from dmf_assets.domain.gates import (
    BEFORE_DIFF,
    CHURN,
    DROP,
    GATE_BY_NUMBER,
    GATES,
    BaseFacts,
    Evidence,
    FetchFacts,
    GateOutcome,
    Needs,
    churn_against,
    gate_churn,
    gate_churn_without_base,
    gate_drop,
    gate_duplicates,
    rejection_reason,
)
from dmf_assets.emulator import faults as F
from dmf_assets.settings import PROJECT_ROOT, Gates

# partitioned check specs are a Dagster preview (silenced for users in defs/checks.py)
pytestmark = pytest.mark.filterwarnings("ignore:.*partitions_def on an AssetCheckSpec")


def test_numbers_names_and_check_names_are_unique_and_in_order():
    assert [g.number for g in GATES] == list(range(1, len(GATES) + 1))
    assert len({g.name for g in GATES}) == len({g.check_name for g in GATES}) == len(GATES)
    assert all(g.check_name == f"gate_{g.number}_{g.name}" for g in GATES)
    assert tuple(g for g in GATES if not g.after_diff) == GATES.needing(BEFORE_DIFF)


def test_each_gate_has_one_blocking_check_on_the_asset_that_judges_it():
    verdict, diff = gate_specs("integrity_verdict"), gate_specs("snapshot_diff")
    assert [s.name for s in verdict] == [g.check_name for g in GATES if not g.after_diff]
    assert [s.name for s in diff] == [g.check_name for g in GATES if g.after_diff]
    for g in GATES:
        spec = gate_spec(g)
        assert spec.blocking and spec.asset_key.path == [g.asset]
        assert spec.description == (
            f"게이트 {g.number} (차단) — {g.label_ko}: {g.rule_ko} ({g.name}). "
            "실패하면 그날은 거부되고 비교 기준일은 그대로입니다."
        )


def test_every_threshold_setting_belongs_to_one_gate_and_is_in_the_shipped_config():
    settings = [g.setting for g in GATES if g.setting is not None]
    assert sorted(settings) == sorted(Gates.model_fields)
    shipped = tomllib.loads((PROJECT_ROOT / "config" / "dmf.toml").read_text(encoding="utf-8"))["gates"]
    assert sorted(shipped) == sorted(settings)
    for g in GATES:
        if g.setting is not None:
            assert g.setting in g.rule_ko and g.setting_key == f"gates.{g.setting}"
        else:
            assert g.setting_key is None


def test_every_gate_fault_exists_is_claimed_once_and_says_which_gate():
    claimed = [kind for g in GATES for kind in g.faults]
    assert len(claimed) == len(set(claimed)), claimed
    for g in GATES:
        for kind in g.faults:
            assert kind in F.FAULT_KINDS, kind
            assert g.label_en in F.FAULT_KINDS[kind].expected, (g.number, kind)  # what `dmf emulator faults` says


def test_the_gate_functions_answer_for_their_registry_entry():
    facts = FetchFacts(True, total_count=90, rows_after_dedup=90)
    base = BaseFacts(day=date(2026, 10, 1), total_count=100, population=100)
    thresholds = Gates()
    assert gate_drop(facts, base, thresholds).number == DROP.number
    assert gate_churn({}, 10, thresholds).number == gate_churn_without_base(thresholds).number == CHURN.number
    assert DROP.name == "drop" and CHURN.name == "churn" and CHURN.after_diff and not DROP.after_diff


def test_duplicates_say_which_rows_they_are_counted_among():
    """Gate 5 counts repeated numbers among the rows that have one: its figure names them, so it is not read
    against the day's received rows (「수신 9,190건」 beside 「/ 9,188건」 read as two figures for one list)."""
    frame = pl.DataFrame({"permit_no": ["A", "A", "B", "C", None, None]})
    got = gate_duplicates(frame, Gates())
    assert got.observed == "중복 등록번호 초과분 1건 / 등록번호 있는 4건 (25.00 %)" and not got.passed


@pytest.mark.parametrize("population", [100, None])
def test_churn_against_a_base_is_the_churn_gate_with_the_base_population(population):
    thresholds = Gates()
    counts = {"NEW": 4, "CHANGED": 3, "WITHDRAWN": 2, "NUMBER_ASSIGNED": 1, "COSMETIC": 50}
    base = BaseFacts(day=date(2026, 10, 1), total_count=100, population=population)
    samples = ({"dmf_key": "k"},)
    got = churn_against(counts, base, thresholds, population=60, samples=samples)
    assert got == gate_churn(counts, population or 60, thresholds, samples)
    # without a base (the baseline) there is nothing to compare: the gate passes, whatever the counts
    assert churn_against(counts, BaseFacts(), thresholds, population=60) == gate_churn_without_base(thresholds)


def test_drop_against_a_base_judges_the_recorded_counts():
    thresholds = Gates()
    base = BaseFacts(day=date(2026, 10, 1), total_count=100, population=100)

    def drop_against(base, thresholds, *, total_count, rows):  # what the re-derivation and the workbook judge
        (outcome,) = GATES.judge(Evidence(FetchFacts.recorded(total_count, rows), base), thresholds, (Needs.BASE,))
        return outcome

    got = drop_against(base, thresholds, total_count=80, rows=80)
    assert got == gate_drop(FetchFacts(True, total_count=80, rows_after_dedup=80), base, thresholds)
    assert got.passed is False and got.number == DROP.number
    # a day recorded without totalCount is judged by its rows, as the verdict did
    assert drop_against(base, thresholds, total_count=None, rows=None) == gate_drop(
        FetchFacts(True, total_count=None, rows_after_dedup=0), base, thresholds
    )


def test_drop_says_why_it_did_not_compare():
    """Only a day without a base is the first day; a base whose count is missing or zero is named as such."""
    thresholds, today = Gates(), FetchFacts(True, total_count=100, rows_after_dedup=100)
    details = {
        base: (outcome.passed, outcome.detail)
        for base in (BaseFacts(), BaseFacts(day=date(2026, 10, 1)), BaseFacts(day=date(2026, 10, 1), total_count=0))
        for outcome in [gate_drop(today, base, thresholds)]
    }
    assert list(details.values()) == [
        (True, "첫 수집일이므로 감소율을 비교하지 않습니다."),
        (True, "기준일 2026-10-01의 등록 건수를 알 수 없어 감소율을 비교하지 않습니다."),
        (True, "기준일 2026-10-01의 등록 건수가 0건이어서 감소율을 비교하지 않습니다."),
    ]


def test_rejection_reason_names_the_gate_with_its_evidence():
    g = GateOutcome(DROP.number, False, 0.2, 0.05, "100건 → 80건 (20.00 % 감소)", "≤ 5.00 %", "20건이 사라졌습니다.")
    assert rejection_reason(g) == "3번 감소율 게이트 실패: 100건 → 80건 (20.00 % 감소) — 20건이 사라졌습니다."
    assert GATE_BY_NUMBER[g.number].title == "게이트 3 감소율(drop)"
