"""A day's verdict as Dagster records it — written by the assets, read by the sensor and the alerts.

A rejected day is said once: an observation of the asset whose gate refused it (integrity_verdict for
the gates before the diff, snapshot_diff for those on it), whose metadata is the typed `Rejection`, next to Dagster's own
failed blocking check. The keys are labelled for the person who opens the run log or the asset's
events in the UI; this module is the only place that knows them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import date
from typing import Any

from dmf_assets.domain.gates import GATES, GateRegistry, Rejection
from dmf_assets.domain.model import DayStatus
from dmf_assets.korean import shorten

VERDICT = "판정 / verdict"
GATE = "게이트 / gate"
GATE_NAME = "게이트 이름 / gate name"
OBSERVED = "관측값 / observed"
THRESHOLD = "기준 / threshold"
REASON = "사유 / reason"
BASE = "비교 기준일 / comparison base"
SAMPLES = "표본 행 / sample rows"
WHAT_NEXT = "다음 / what happens next"
#: the days whose events a day's commit or rejection recomputed, ISO dates joined by ", " (the sensor writes their
#: events and workbooks again); "rederived_day" (one day) in records written before
REDERIVED = "rederived_days"
#: the later rejected days whose comparison base a day's commit or rejection moved, ISO dates joined by ", " (the
#: sensor runs each again: its archive judged against the base it has now)
REJUDGE = "rejudge_days"

#: a committed day's status, as snapshot_diff states it: its label for the person reading the UI, and its value for
#: the sensor — a release may reword a label, and Dagster keeps the records of earlier releases (label only)
STATUS, STATUS_VALUE = "status", "status_value"

#: the run tag a rejected day's run carries: the Korean reason, in the Runs list beside the run
REJECTED_TAG = "dmf/rejected"

PASSED_TEXT = "통과 (pass)"
REJECTED_TEXT = "거부 (rejected)"
NO_BASE = "없음 (첫 반영 전)"


def rejection_metadata(r: Rejection, next_step: str) -> dict[str, Any]:
    """Plain values (the samples as a markdown table under SAMPLES, for the caller to wrap)."""
    return {
        VERDICT: REJECTED_TEXT,
        GATE: r.gate,
        GATE_NAME: r.spec.title,
        OBSERVED: r.observed,
        THRESHOLD: r.threshold,
        REASON: r.detail,
        BASE: r.base_day.isoformat() if r.base_day else NO_BASE,
        WHAT_NEXT: next_step,
    }


def committed_metadata(status: DayStatus) -> dict[str, str]:
    """What snapshot_diff states of a day it committed (`committed_of` reads it back)."""
    return {STATUS: status.label_ko_en, STATUS_VALUE: status.value}


def committed_of(metadata: Mapping[str, Any]) -> DayStatus | None:
    """The accepted status (accepted, unchanged, baseline) a snapshot_diff materialization states, else None."""
    value, label = metadata.get(STATUS_VALUE), metadata.get(STATUS)
    said = next((s for s in DayStatus if (s.value == value if value else s.label_ko_en == label)), None)
    return said if said is not None and said.is_accepted else None


def rederived_metadata(days: Iterable[date], rejudge: Iterable[date] = ()) -> dict[str, str]:
    """The days a commit or rejection recomputed, and those it leaves to be judged again (when there are any)."""
    again = ", ".join(d.isoformat() for d in rejudge)
    return {REDERIVED: ", ".join(d.isoformat() for d in days), **({REJUDGE: again} if again else {})}


def _days(text: object) -> list[str]:
    return [d.strip() for d in str(text or "").split(",") if d.strip()]


def rederived_of(metadata: Mapping[str, Any]) -> list[str]:
    """The re-derived days a record's plain metadata names (ISO dates)."""
    return _days(metadata.get(REDERIVED) or metadata.get("rederived_day"))


def rejudge_of(metadata: Mapping[str, Any]) -> list[str]:
    """The rejected days a record's plain metadata leaves to be judged again (ISO dates)."""
    return _days(metadata.get(REJUDGE))


def rejection_tag(r: Rejection) -> str:
    """The value of `REJECTED_TAG`: '게이트 2 완전성: 20건이 누락되었습니다 (관측값: … · 기준: …).' — what the gate saw
    first, since the Runs list shows a tag's first 40 characters or so."""
    return shorten(f"게이트 {r.gate} {r.spec.label_ko}: {r.evidence}", 250)


def rejection_of(metadata: Mapping[str, Any], registry: GateRegistry = GATES) -> Rejection | None:
    """The rejection a record's metadata states, or None (a passing verdict, any other record)."""
    if metadata.get(VERDICT) != REJECTED_TEXT:
        return None
    gate = metadata.get(GATE)
    if not isinstance(gate, int) or gate not in registry:
        return None
    observed, threshold, reason, base = (metadata.get(k) for k in (OBSERVED, THRESHOLD, REASON, BASE))
    if not (observed and threshold and reason and base):
        return None  # not written by this module (a record of an earlier release): no half-known rejection
    base_day = None if base == NO_BASE else date.fromisoformat(str(base))
    return Rejection(gate, str(observed), str(threshold), str(reason), base_day, entry=registry[gate])


def plain(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """A record's metadata as plain values (what `rejection_of` and the sensor's `followups.Latest` read)."""
    return {k: getattr(v, "value", v) for k, v in metadata.items()}


def rejecting_steps(observations: Iterable[tuple[str | None, Mapping[str, Any]]]) -> set[str]:
    """The steps whose observation states a rejection, of (step key, metadata) pairs of one run's observations:
    a failure of such a step is the day's verdict, not an error (the blocking check, or the step, that stopped it)."""
    return {step for step, metadata in observations if step and rejection_of(plain(metadata)) is not None}
