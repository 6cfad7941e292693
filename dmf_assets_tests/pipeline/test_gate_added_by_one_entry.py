"""A gate is added by registering one entry (issue 33; docs/ARCHITECTURE.md "Adding a gate").

The test registers one more gate — "at most N new registrations a day", judged on the diff — in a registry of
its own and runs emulator days through the real Dagster assets built from that registry: its blocking check is
declared from the entry, it passes a quiet day, it refuses a busy one exactly like a built-in gate (nothing
written, the comparison base kept), and every text that says why names it. No product file knows this gate.
"""

from __future__ import annotations

from datetime import date

import dagster as dg
import pytest

from dmf_assets.defs.assets import diff_asset, normalized_records, raw_pages, verdict_asset
from dmf_assets.domain.gates import GATES, Evidence, Gate, GateOutcome, GateThresholds, Needs
from dmf_assets.domain.model import DayStatus, EventType
from dmf_assets.emulator.registry import RegistrySimulator
from dmf_assets.orchestration import verdict
from dmf_assets.storage import history
from dmf_assets_tests.graph_support import make_workspace

BASELINE, QUIET, BUSY = date(2026, 10, 5), date(2026, 10, 6), date(2026, 10, 7)

pytestmark = pytest.mark.filterwarnings("ignore:.*partitions_def on an AssetCheckSpec")


def _new_registrations(old: date, new: date) -> int:
    truth = RegistrySimulator().truth(old, new)
    return sum(1 for c in truth.changes if c.event_type is EventType.NEW)


#: the busy day brings more new registrations than the quiet one: the cap lies between them
CAP = _new_registrations(BASELINE, QUIET)


def _at_most_new(e: Evidence, _: GateThresholds) -> GateOutcome:
    new = e.counts.get("NEW", 0) if e.base.day else 0
    return GateOutcome(
        7,
        new <= CAP,
        float(new),
        float(CAP),
        f"신규 {new:,}건",
        f"≤ {CAP:,}건",
        "신규 등록이 상한 안입니다." if new <= CAP else f"신규 등록이 {new:,}건으로 상한 {CAP:,}건을 넘었습니다.",
    )


NEW_CAP = Gate(
    number=7,
    name="new_cap",
    label_ko="신규 상한",
    label_en="new cap",
    rule_ko=f"하루 신규 등록 ≤ {CAP}건",
    rule=_at_most_new,
    needs=Needs.DIFF,
    setting=None,
    transient=False,
    check_ko="신규 등록이 실제로 몰린 것인지",
    reader_ko="하루에 새로 오른 등록이 평소보다 많았습니다",
)


def test_a_gate_registered_in_one_entry_is_checked_rejects_a_day_and_is_named(tmp_path):
    assert _new_registrations(QUIET, BUSY) > CAP  # the emulator's truth: the busy day is over the cap
    registry = GATES.registered(NEW_CAP)
    verdict_def, diff_def = verdict_asset(registry), diff_asset(registry)

    # its blocking check, declared from the entry on the asset that judges it; the asset says it judges it
    (spec,) = [s for s in diff_def.check_specs if s.name == "gate_7_new_cap"]
    assert spec.blocking and spec.asset_key == dg.AssetKey("snapshot_diff")
    assert spec.description.startswith(f"게이트 7 (차단) — 신규 상한: 하루 신규 등록 ≤ {CAP}건 (new_cap).")
    assert "게이트 6·7(변동률·신규 상한)을 통과하면" in diff_def.specs_by_key[dg.AssetKey("snapshot_diff")].description
    assert not [s for s in verdict_def.check_specs if s.name == "gate_7_new_cap"]

    ws = make_workspace(tmp_path, records_in_memory=True)
    assets = [raw_pages, normalized_records, verdict_def, diff_def]

    def run(day: date) -> dg.ExecuteInProcessResult:
        return dg.materialize(
            assets, partition_key=day.isoformat(), resources=ws.resources, instance=ws.instance, raise_on_error=False
        )

    def evaluation(result: dg.ExecuteInProcessResult) -> dg.AssetCheckEvaluation:
        return next(e for e in result.get_asset_check_evaluations() if e.check_name == "gate_7_new_cap")

    for day in (BASELINE, QUIET):
        result = run(day)
        assert result.success, day
        assert evaluation(result).passed
    busy = run(BUSY)
    assert not busy.success  # the day's partition is red, as for any gate

    # it rejected the day: nothing written, the base kept, its numbers stored
    check = evaluation(busy)
    assert not check.passed and check.severity == dg.AssetCheckSeverity.ERROR
    with ws.connect() as conn:
        run_row = history.run_row(conn, BUSY)
        assert DayStatus.of_value(run_row["status"]) is DayStatus.REJECTED and run_row["rejected_gate"] == 7
        assert history.day_id(BUSY) not in {r[0] for r in conn.execute("SELECT day_id FROM snapshots").fetchall()}
        assert history.comparison_base(conn, date(2026, 10, 8)).day == QUIET
        stored = {g["gate_no"]: g for g in history.gate_rows(conn, BUSY)}
    new = _new_registrations(QUIET, BUSY)
    assert (stored[7]["passed"], stored[7]["observed_value"], stored[7]["threshold_value"]) == (False, new, CAP)

    # the texts that say why name it: the run's reason, the rejection the sensor and the alerts read, the run tag
    assert (
        run_row["reason"]
        == f"7번 신규 상한 게이트 실패: 신규 {new:,}건 — 신규 등록이 {new:,}건으로 상한 {CAP:,}건을 넘었습니다."
    )
    (observation,) = [o for o in busy.asset_observations_for_node("snapshot_diff") if verdict.VERDICT in o.metadata]
    said = verdict.plain(observation.metadata)
    assert said[verdict.GATE] == 7 and said[verdict.GATE_NAME] == "게이트 7 신규 상한(new_cap)"
    assert said[verdict.BASE] == QUIET.isoformat()
    tags = ws.instance.get_run_by_id(busy.run_id).tags
    assert tags[verdict.REJECTED_TAG].startswith(f"게이트 7 신규 상한: 신규 등록이 {new:,}건으로 상한")
    assert check.description.startswith(f"신규 상한: 신규 {new:,}건 (기준 ≤ {CAP:,}건)")
