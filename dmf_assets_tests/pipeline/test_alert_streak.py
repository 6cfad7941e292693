"""The sensor's "rejected days in a row" alert (docs/DOMAIN.md §9) counts days in a row: an accepted day between
rejected ones ends the run. The sensor reads each day's outcome from Dagster's records (`orchestration.alerting`)."""

from __future__ import annotations

from datetime import date, datetime, timedelta

import dagster as dg

from dmf_assets import notify
from dmf_assets.clock import KST
from dmf_assets.domain.gates import COMPLETENESS, GateOutcome, Rejection
from dmf_assets.domain.model import DayStatus
from dmf_assets.orchestration import alerting, followups, verdict
from dmf_assets.settings import load_settings

DAYS = [date(2026, 11, 2) + timedelta(days=i) for i in range(4)]
SHORT = GateOutcome(
    COMPLETENESS.number,
    False,
    9_144.0,
    9_164.0,
    "수신 9,144건 / totalCount 9,164건",
    "수신 건수 = totalCount",
    "20건이 누락되었습니다.",
)


def _state(day: date, storage_id: int, status: DayStatus, committed: dict | None = None) -> followups.DayState:
    """A day as Dagster records it: rejected by its verdict, or committed by snapshot_diff with `status` (its
    metadata `committed`, when an earlier release wrote it otherwise)."""
    if status is DayStatus.REJECTED:
        said = verdict.rejection_metadata(Rejection.of(SHORT, DAYS[0] - timedelta(days=1)), "")
        return followups.DayState(None, followups.Latest(storage_id, 0.0, f"run-{day}", said), None, None, None)
    judged = followups.Latest(storage_id, 0.0, f"run-{day}", {verdict.VERDICT: verdict.PASSED_TEXT})
    metadata = verdict.committed_metadata(status) if committed is None else committed
    diffed = followups.Latest(storage_id + 1, 0.0, f"run-{day}", metadata)
    return followups.DayState(None, judged, diffed, None, None)


def _streaks(statuses: list[DayStatus], committed: dict | None = None) -> list[notify.Alert]:
    settings = load_settings()
    states = {
        d.isoformat(): _state(d, 10 * i, s, committed) for i, (d, s) in enumerate(zip(DAYS, statuses, strict=True))
    }
    tick = followups.Tick(datetime(2026, 11, 6, 8, tzinfo=KST), list(states), set(), states)
    alerts = alerting.alerts_for_tick(dg.DagsterInstance.ephemeral(), tick, settings)
    return [a for a in alerts if isinstance(a, notify.RejectedStreak)]


def test_an_accepted_day_between_rejected_days_ends_the_streak():
    rejected, accepted = DayStatus.REJECTED, DayStatus.ACCEPTED
    (streak,) = _streaks([accepted, rejected, rejected, rejected])
    assert streak.days == tuple(DAYS[1:])
    assert _streaks([rejected, accepted, rejected, rejected]) == []
    assert _streaks([rejected, DayStatus.UNCHANGED, rejected, rejected]) == []


def test_an_accepted_day_recorded_by_an_earlier_release_still_ends_the_streak():
    """Dagster keeps every release's records: the sensor reads a committed day's status by its value, not by the
    label the UI shows (a release may reword it), and reads records from before the value by their label."""
    rejected, accepted = DayStatus.REJECTED, DayStatus.ACCEPTED
    reworded = {verdict.STATUS: "반영 (예전 표기 / accepted, as once worded)", verdict.STATUS_VALUE: accepted.value}
    assert _streaks([rejected, accepted, rejected, rejected], reworded) == []
    label_only = {verdict.STATUS: accepted.label_ko_en}
    assert _streaks([rejected, accepted, rejected, rejected], label_only) == []
    (streak,) = _streaks([accepted, rejected, rejected, rejected], {verdict.STATUS: "알 수 없음 (unknown)"})
    assert streak.days == tuple(DAYS[1:])
