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
from dmf_assets.report.day_data import day_events_frame


def _signature(
    kind: EventType,
    permit_no: str | None,
    *,
    changed: Iterable[str],
    cosmetic: bool,
    number_assigned: bool,
    transfer: bool,
    previous: str | None,
    reappeared: bool,
) -> tuple:
    """What an event and a truth entry of one registration must agree on (the module's docstring)."""
    if kind is EventType.CHANGED:
        return ("CHANGED", permit_no, tuple(sorted(changed)), cosmetic, number_assigned, transfer, previous)
    if kind is EventType.NEW:
        return ("NEW", permit_no, reappeared)
    return ("WITHDRAWN", permit_no)


def _signature_of_truth(t: TruthChange) -> tuple:
    return _signature(
        t.event_type,
        t.permit_no,
        changed=t.substantive_fields,
        cosmetic=not t.substantive_fields,
        number_assigned=t.number_assigned,
        transfer=t.is_transfer,
        previous=t.base_permit_no if t.number_changed else None,
        reappeared=t.is_reappearance,
    )


def _signature_of_event(e: Event) -> tuple:
    return _signature(
        e.event_type,
        e.permit_no,
        changed=e.changed_fields,
        cosmetic=e.is_cosmetic,
        number_assigned=e.number_assigned,
        transfer=e.is_transfer,
        # the key it had: its number, "#2" and on for a duplicate
        previous=(e.base_dmf_key or "").partition("#")[0] if e.number_changed else None,
        reappeared=e.is_reappearance,
    )


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


def stored_events(conn, day) -> list[Event]:
    """A day's committed events as domain Events, as `score` compares them."""
    return [Event.from_row(e, e["changes"] or ()) for e in day_events_frame(conn, day).iter_rows(named=True)]
