"""The detector against the emulator's ground truth over 60 consecutive days (pure domain, no Dagster):
precision and recall 1.0 for NEW, CHANGED and WITHDRAWN, every cosmetic edit classified COSMETIC,
zero false WITHDRAWN. Includes number assignments, re-numberings (one CHANGED each, never WITHDRAWN + NEW),
transfers, reappearances and cosmetic re-typings."""

from __future__ import annotations

from datetime import date, timedelta

from dmf_assets.domain.diff import diff_snapshots
from dmf_assets.domain.snapshot import build_snapshot, seen_markers
from dmf_assets.emulator.registry import RegistrySimulator
from dmf_assets_tests.scoring import Score, score

START = date(2026, 9, 1)


def test_sixty_consecutive_days_score_perfectly():
    sim = RegistrySimulator()
    previous = build_snapshot(sim.items(START))
    ever_seen = seen_markers(previous)
    days = [START]
    total = Score()
    kinds = set()
    for i in range(1, 61):
        day = START + timedelta(days=i)
        current = build_snapshot(sim.items(day))
        diff = diff_snapshots(previous, current, previously_seen=ever_seen - seen_markers(previous))
        truth = sim.truth(days[-1], day, seen=days[:-1])
        s = score(diff.to_events(), truth)
        assert s.perfect, (day, s.missed, s.spurious)
        total = total + s
        for t in truth.changes:
            kinds.add(
                "cosmetic" if t.event_type.value == "CHANGED" and not t.substantive_fields else t.event_type.value
            )
            kinds |= {
                flag
                for flag in ("number_assigned", "number_changed", "is_transfer", "is_reappearance")
                if getattr(t, flag)
            }
        ever_seen |= seen_markers(current)
        previous = current
        days.append(day)
    for kind in ("NEW", "CHANGED", "WITHDRAWN"):
        assert total.precision(kind) == 1.0 and total.recall(kind) == 1.0
    assert total.false_positive["WITHDRAWN"] == 0
    # the window really contains every hard case
    assert {"NEW", "CHANGED", "WITHDRAWN", "cosmetic", "number_assigned", "number_changed", "is_transfer"} <= kinds
    assert sum(total.true_positive.values()) >= 100
