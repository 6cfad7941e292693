"""Score detected events against the emulator's ground truth (precision / recall per event type).

An event and a truth entry agree when they have the same type and number (registrations without a
number compare by type only) and — for CHANGED — the same substantive fields, the same cosmetic
verdict and the same number-assigned / transfer flags; a re-numbering (one CHANGED, never WITHDRAWN +
NEW) also the number it had before; NEW also compares the reappearance flag.
Compared as multisets, so duplicate numbers count once per registration.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from dmf_assets.domain.model import Event, EventType, GroundTruth, TruthChange


def _signature_of_truth(t: TruthChange) -> tuple:
    if t.event_type is EventType.CHANGED:
        return (
            "CHANGED",
            t.permit_no,
            tuple(sorted(t.substantive_fields)),
            not t.substantive_fields,
            t.number_assigned,
            t.is_transfer,
            t.base_permit_no if t.number_changed else None,
        )
    if t.event_type is EventType.NEW:
        return ("NEW", t.permit_no, t.is_reappearance)
    return ("WITHDRAWN", t.permit_no)


def _signature_of_event(e: Event) -> tuple:
    if e.event_type is EventType.CHANGED:
        return (
            "CHANGED",
            e.permit_no,
            tuple(sorted(e.changed_fields)),
            e.is_cosmetic,
            e.number_assigned,
            e.is_transfer,
            # the key it had: its number, "#2" and on for a duplicate
            (e.base_dmf_key or "").partition("#")[0] if e.number_changed else None,
        )
    if e.event_type is EventType.NEW:
        return ("NEW", e.permit_no, e.is_reappearance)
    return ("WITHDRAWN", e.permit_no)


@dataclass(frozen=True)
class Score:
    true_positive: Counter = field(default_factory=Counter)
    false_positive: Counter = field(default_factory=Counter)
    false_negative: Counter = field(default_factory=Counter)
    missed: tuple[tuple, ...] = ()  # truth signatures not detected
    spurious: tuple[tuple, ...] = ()  # detected signatures not in the truth

    def precision(self, kind: str) -> float:
        tp, fp = self.true_positive[kind], self.false_positive[kind]
        return 1.0 if tp + fp == 0 else tp / (tp + fp)

    def recall(self, kind: str) -> float:
        tp, fn = self.true_positive[kind], self.false_negative[kind]
        return 1.0 if tp + fn == 0 else tp / (tp + fn)

    def __add__(self, other: Score) -> Score:
        return Score(
            self.true_positive + other.true_positive,
            self.false_positive + other.false_positive,
            self.false_negative + other.false_negative,
            self.missed + other.missed,
            self.spurious + other.spurious,
        )

    @property
    def perfect(self) -> bool:
        return not self.missed and not self.spurious


def score(events: Iterable[Event], truth: GroundTruth) -> Score:
    detected = Counter(_signature_of_event(e) for e in events)
    expected = Counter(_signature_of_truth(t) for t in truth.changes)
    tp, fp, fn = Counter(), Counter(), Counter()
    for sig, n in (detected & expected).items():
        tp[sig[0]] += n
    spurious = detected - expected
    missed = expected - detected
    for sig, n in spurious.items():
        fp[sig[0]] += n
    for sig, n in missed.items():
        fn[sig[0]] += n
    return Score(tp, fp, fn, tuple(sorted(missed.elements(), key=str)), tuple(sorted(spurious.elements(), key=str)))
