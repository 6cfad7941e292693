"""What the sensor decides each tick, read from Dagster's own records (never from DuckDB).

- **Complete a stopped day.** A blocking gate check stops the rest of its own run (DAGSTER_NOTES):
  a rejected day's snapshot_diff / events / xlsx_report are skipped there, yet the day needs its
  "collection failed" workbook. One follow-up run materializes exactly the missing tail.
- **Refresh a re-derived day.** Committing an earlier day re-derives the next accepted day's events
  in the history database; that day's events and workbook are materialized again.
- **Retry a transient failure the same morning.** Today's partition (KST), rejected today by gate 1 or 2
  or whose fetch failed today, is fetched again (default 3 times, 30 minutes apart, until 12:00 KST) —
  never an old day, whatever the source, and never a day rejected by gates 3–6, which needs a human.
  `retry_outlook` is the one rule: the sensor launches what it plans, and a message promises a retry
  only when it plans one *and* a Dagster daemon is beating to launch it.
- **Never touch a day that is in flight**: a queued or running run of that partition, or a backfill
  in progress that targets it, owns the day until it ends.

Each decision carries a run key naming the situation, so Dagster launches it at most once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta

import dagster as dg

from dmf_assets.clock import KST
from dmf_assets.domain.gates import Rejection
from dmf_assets.korean import josa
from dmf_assets.notify.messages import NoRetry, Redone, RetryOutlook
from dmf_assets.orchestration.verdict import plain, rederived_of, rejection_of, rejudge_of
from dmf_assets.settings import Settings

#: the daily asset chain in graph order — the one list of it (schedule, sensor, retries, `dmf run`)
CHAIN = ("raw_pages", "normalized_records", "integrity_verdict", "snapshot_diff", "events", "xlsx_report")
#: run tag: what started the run ("schedule", "sensor-complete", "cli-backfill", …)
TRIGGER_TAG = "dmf/trigger"
RETRY_TAG = "dmf/retry"  # value: "<day>#<n>"
#: run tag: ask the source again instead of replaying a complete archive (a same-morning retry)
REFETCH_TAG = "dmf/refetch"
#: run tag: what the run does again, as a correction of the day's earlier mail says it (a `notify.Redone` value)
REDONE_TAG = "dmf/redone"
#: run tag: the run follows one of a backfill of old days (or of the demo), so it mails nobody
QUIET_TAG = "dmf/quiet"
#: run tag of an in-process run (`dmf run`) stopped at its time limit, in seconds ([runs] max_minutes)
TIMED_OUT_TAG = "dmf/timed_out"
#: metadata of a step failure stopped by the daily request cap: the cap it reached (what the alert says)
REQUEST_CAP_KEY = "request_cap"
#: `dmf/trigger` values of runs that backfill old days
BULK_TRIGGERS = ("cli-backfill", "demo")
#: the daemons a planned retry needs: the sensor launches it (the scheduler runs the 06:00 collection)
RETRY_DAEMON = "SENSOR"
#: a daemon beats about every 30 s; this much silence means no daemon will launch a planned retry
HEARTBEAT_STALE = timedelta(minutes=5)
#: the statuses of a backfill still in progress (Dagster's BulkActionStatus names): it owns its days
BACKFILL_IN_PROGRESS = ("REQUESTED", "CANCELING", "FAILING")
IN_FLIGHT = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,
]


@dataclass(frozen=True)
class Latest:
    storage_id: int
    timestamp: float
    run_id: str
    metadata: dict


@dataclass(frozen=True)
class Plan:
    day: str
    assets: tuple[str, ...]
    reason: str
    run_key: str
    kind: str  # complete | refresh | retry | rejudge
    tags: dict = field(default_factory=dict)


def latest_by_partition(
    instance: dg.DagsterInstance, asset: str, partitions: list[str], *, observations: bool = False
) -> dict[str, Latest]:
    """The latest materialization (or, with `observations`, observation) of `asset` for each partition."""
    out: dict[str, Latest] = {}
    if not partitions:
        return out
    fetch = instance.fetch_observations if observations else instance.fetch_materializations
    result = fetch(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=partitions), limit=len(partitions) * 20
    )
    for record in result.records:  # newest first
        key = record.partition_key
        if key and key not in out:
            event = record.event_log_entry.asset_observation if observations else record.asset_materialization
            out[key] = Latest(
                record.storage_id,
                record.timestamp,
                record.run_id,
                plain(event.metadata if event else {}),
            )
    return out


def _newest(*records: Latest | None) -> Latest | None:
    present = [r for r in records if r is not None]
    return max(present, key=lambda r: r.storage_id) if present else None


@dataclass(frozen=True)
class DayState:
    """A day as Dagster recorded it. A rejection is an observation of the asset whose gate refused the
    day (integrity_verdict: gates 1–5, snapshot_diff: gate 6); an accepted step is a materialization."""

    raw: Latest | None
    judged: Latest | None  # the latest judgement: integrity_verdict materialization (passed) or observation (rejected)
    diffed: Latest | None  # the latest snapshot_diff outcome: materialization, or observation (rejected by gate 6)
    events: Latest | None
    report: Latest | None
    runs: tuple = ()  # the day's run records (dagster/partition = the day), newest first

    @property
    def retries(self) -> int:
        """Same-morning retries launched for the day so far: its run records tagged "<day>#<n>"."""
        return sum(
            1
            for r in self.runs
            if r.dagster_run.tags.get(RETRY_TAG, "").startswith(f"{r.dagster_run.tags.get('dagster/partition')}#")
        )

    @property
    def judgement(self) -> Latest | None:
        """The day's latest verdict, before the diff or on it."""
        return _newest(self.judged, self.diffed)

    @property
    def rejection(self) -> tuple[Latest, Rejection] | None:
        """The record of the day's current rejection and what it says, if the day is rejected."""
        if self.judged is not None and (r := rejection_of(self.judged.metadata)) is not None:
            return self.judged, r
        if (
            self.diffed is not None
            and (self.judged is None or self.diffed.storage_id > self.judged.storage_id)
            and (r := rejection_of(self.diffed.metadata)) is not None
        ):
            return self.diffed, r
        return None


def runs_by_day(instance: dg.DagsterInstance, days: list[str]) -> dict[str, list]:
    """Each day's run records, newest first — one query for all the days."""
    out: dict[str, list] = {d: [] for d in days}
    if days:
        for record in instance.get_run_records(filters=dg.RunsFilter(tags={"dagster/partition": list(days)})):
            out.setdefault(record.dagster_run.tags.get("dagster/partition", ""), []).append(record)
    return out


def day_states(instance: dg.DagsterInstance, days: list[str]) -> dict[str, DayState]:
    mats = {a: latest_by_partition(instance, a, days) for a in CHAIN}
    obs = {a: latest_by_partition(instance, a, days, observations=True) for a in ("integrity_verdict", "snapshot_diff")}
    runs = runs_by_day(instance, days)
    return {
        d: DayState(
            mats["raw_pages"].get(d),
            _newest(mats["integrity_verdict"].get(d), obs["integrity_verdict"].get(d)),
            _newest(mats["snapshot_diff"].get(d), obs["snapshot_diff"].get(d)),
            mats["events"].get(d),
            mats["xlsx_report"].get(d),
            tuple(runs[d]),
        )
        for d in days
    }


def _older(record: Latest | None, than: Latest) -> bool:
    return record is None or record.storage_id < than.storage_id


def missing_tail(state: DayState) -> tuple[tuple[str, ...], Latest] | None:
    """The steps of the day that have not followed its latest upstream record, and that record."""
    if (rejected := state.rejection) is not None:
        # a rejected day: nothing to commit; its snapshot_diff says so ("rejected — base carried forward",
        # unless gate 6 itself refused it), then its events (none) and its "collection failed" workbook
        record, rejection = rejected
        if not _older(state.report, record):
            return None
        by_gate_6 = rejection.spec.after_diff
        return (
            ("events", "xlsx_report")
            if by_gate_6 or not _older(state.diffed, record)
            else ("snapshot_diff", "events", "xlsx_report")
        ), record
    judged, diffed, events = state.judged, state.diffed, state.events
    if judged is None:
        return None
    if diffed is None or _older(diffed, judged):
        return ("snapshot_diff", "events", "xlsx_report"), judged
    if events is None or _older(events, diffed):
        return ("events", "xlsx_report"), diffed
    if _older(state.report, events):
        return ("xlsx_report",), events
    return None


def _range_days(start: str, end: str) -> set[str]:
    first, last = date.fromisoformat(start), date.fromisoformat(end)
    return {(first + timedelta(days=n)).isoformat() for n in range((last - first).days + 1)}


def _run_days(run: dg.DagsterRun) -> set[str]:
    tags = run.tags
    days = {tags["dagster/partition"]} if "dagster/partition" in tags else set()
    start, end = tags.get("dagster/asset_partition_range_start"), tags.get("dagster/asset_partition_range_end")
    return days | (_range_days(start, end) if start and end else set())


def in_flight_days(instance: dg.DagsterInstance) -> set[str]:
    """Days owned by a queued/running run or by a backfill still in progress."""
    busy: set[str] = set()
    for run in instance.get_runs(filters=dg.RunsFilter(statuses=IN_FLIGHT)):
        busy |= _run_days(run)
    # every backfill record, judged by its status name (a handful: one per UI or CLI backfill)
    backfills = [b for b in instance.get_backfills() if b.status.value in BACKFILL_IN_PROGRESS]
    for backfill in backfills:
        if backfill.asset_backfill_data is not None:
            for subset in backfill.asset_backfill_data.target_subset.partitions_subsets_by_asset_key.values():
                busy |= set(subset.get_partition_keys())
        busy |= set(backfill.partition_names or ())
    return busy


def recent_days(instance: dg.DagsterInstance, limit: int = 200) -> list[str]:
    """Days that recent runs worked on (newest first), failed fetches included."""
    seen: dict[str, None] = {}
    for run in instance.get_runs(limit=limit):
        for day in sorted(_run_days(run), reverse=True):
            seen.setdefault(day, None)
    return list(seen)


def is_bulk(tags: Mapping[str, str]) -> bool:
    """A run that backfills old days (a UI or CLI backfill, the demo) or follows one: it tells no one."""
    return "dagster/backfill" in tags or tags.get(TRIGGER_TAG) in BULK_TRIGGERS or tags.get(QUIET_TAG) == "true"


def _tags_of(state: DayState, record: Latest) -> Mapping[str, str]:
    """The tags of the run that wrote `record` (none when its run record is gone)."""
    run = next((r.dagster_run for r in state.runs if r.dagster_run.run_id == record.run_id), None)
    return run.tags if run is not None else {}


def _quiet_after(state: DayState, record: Latest) -> dict[str, str]:
    """The follow-up of a record written by a bulk run stays as quiet as that run."""
    return {QUIET_TAG: "true"} if is_bulk(_tags_of(state, record)) else {}


def _redone_after(state: DayState, record: Latest) -> dict[str, str]:
    """The follow-up that completes a stopped run says what that run did again (its `REDONE_TAG`)."""
    redone = _tags_of(state, record).get(REDONE_TAG)
    return {REDONE_TAG: redone} if redone else {}


def redone_of(run_tags: Mapping[str, str]) -> Redone:
    """What a run of a day does again, as a correction of the day's earlier mail says it: compares it again after
    another day (the sensor's follow-ups of steps 3 and 4), asks MFDS again (a same-morning retry), or — any other
    run, and a tag no release wrote — runs it again."""
    try:
        return Redone(run_tags.get(REDONE_TAG, Redone.RERUN.value))
    except ValueError:
        return Redone.RERUN


def retry_number(run_tags: dict[str, str]) -> int:
    """The same-morning retry a run is (its RETRY_TAG "<day>#<n>"), 0 for any other run."""
    tag = run_tags.get(RETRY_TAG, "")
    day, _, n = tag.partition("#")
    return int(n) if n.isdigit() and day == run_tags.get("dagster/partition") else 0


def fetch_failed_at(state: DayState) -> float | None:
    """When the latest run of the day failed before raw_pages materialized: that run's end time."""
    if not state.runs:
        return None
    record, raw = state.runs[0], state.raw
    selection = record.dagster_run.asset_selection
    if record.dagster_run.status != dg.DagsterRunStatus.FAILURE or (
        selection is not None and dg.AssetKey("raw_pages") not in selection
    ):
        return None
    if raw is not None and raw.run_id == record.dagster_run.run_id:
        return None
    return record.end_time


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 3
    interval: timedelta = timedelta(minutes=30)
    until: time = time(12, 0)  # KST

    @classmethod
    def of(cls, settings: Settings) -> RetryPolicy:
        r = settings.retry
        return cls(r.transient_attempts, timedelta(minutes=r.interval_minutes), r.until)

    def window_end(self, day: str) -> datetime:
        return datetime.combine(date.fromisoformat(day), self.until, KST)


def daemon_alive(instance: dg.DagsterInstance, now: datetime) -> bool:
    """Is a Dagster daemon beating that would launch a planned retry (its sensor daemon)?"""
    try:
        beat = instance.get_daemon_heartbeats().get(RETRY_DAEMON)
    except Exception:  # noqa: BLE001 - an instance without daemon storage: no daemon to count on
        return False
    return beat is not None and now.timestamp() - beat.timestamp < HEARTBEAT_STALE.total_seconds()


@dataclass(frozen=True)
class Tick:
    """What one sensor tick knows, read from Dagster's records once for the follow-ups and the alerts: the days
    recent runs worked on (newest first), those a run or a backfill owns (`busy`: never touched), the states of
    the others, the retry policy, and whether a daemon is beating to launch a planned retry."""

    now: datetime
    days: list[str]
    busy: set[str]
    states: dict[str, DayState]  # of each day of `days` not in `busy`
    retry: RetryPolicy = RetryPolicy()
    daemon_alive: bool = True

    @classmethod
    def read(cls, instance: dg.DagsterInstance, now: datetime, retry: RetryPolicy = RetryPolicy()) -> Tick:
        days, busy = recent_days(instance), in_flight_days(instance)
        states = day_states(instance, [d for d in days if d not in busy])
        return cls(now, days, busy, states, retry, daemon_alive(instance, now))

    def todo(self, days: Iterable[str]) -> list[str]:
        """`days` that no run or backfill owns, oldest first."""
        return sorted(d for d in days if d not in self.busy)


def retry_outlook(
    day: str, state: DayState, now: datetime, policy: RetryPolicy, *, daemon_alive: bool
) -> RetryOutlook | None:
    """The day's next automatic retry, or why there is none; None when nothing failed.

    The one rule (docs/DOMAIN.md §9): only today's partition (KST), rejected by gate 1 or 2 — or whose
    fetch failed — today, while attempts are left and the next one falls before `policy.until`; and only
    when a daemon is alive to launch it.
    """
    rejected = state.rejection
    failed_at = fetch_failed_at(state)
    since: float | None = None
    if rejected is not None and rejected[1].spec.transient and _older(state.raw, rejected[0]):
        since = rejected[0].timestamp
    if failed_at is not None:
        since = max(since or 0.0, failed_at)
    n = state.retries

    def nxt(why_not: NoRetry | None = None, at: datetime | None = None) -> RetryOutlook:
        return RetryOutlook(attempt=n + 1, of=policy.attempts, why_not=why_not, at=at)

    if since is None:
        return None if rejected is None else nxt(NoRetry.NOT_TRANSIENT)
    if policy.attempts <= 0:
        return nxt(NoRetry.OFF)
    failed = datetime.fromtimestamp(since, KST)
    if day != now.astimezone(KST).date().isoformat() or failed.date().isoformat() != day:
        return nxt(NoRetry.OLD_DAY)
    if n >= policy.attempts:
        return nxt(NoRetry.USED)
    at = failed + policy.interval
    if at > policy.window_end(day):
        return nxt(NoRetry.WINDOW)
    if not daemon_alive:
        return nxt(NoRetry.NO_DAEMON)
    return nxt(at=at)


def plan_followups(instance: dg.DagsterInstance, tick: Tick) -> list[Plan]:
    """The runs the sensor should request now, oldest day first. A retry is planned as if a daemon runs it:
    the sensor that asks is the daemon's (the `dmf` commands evaluate the same sensor and leave retries to the
    daemon)."""
    now, retry, busy = tick.now, tick.retry, tick.busy
    plans: dict[str, Plan] = {}
    for day in tick.todo(tick.days):
        state = tick.states[day]
        # 1. a chain stopped by a blocking gate (a rejected day) or by a failed step: complete its tail
        tail = missing_tail(state)
        if tail is not None:
            assets, after = tail
            plans[day] = Plan(
                day,
                assets,
                f"{day}: {josa(assets[0], '이/가')} 마지막 판정·처리를 아직 따라가지 않았습니다",
                f"complete:{day}:{assets[0]}:{after.storage_id}",
                "complete",
                {**_quiet_after(state, after), **_redone_after(state, after)},
            )
            continue  # its tail (the "collection failed" workbook) comes before any retry
        # 2. a transient rejection or a failed fetch of today: fetch again later the same morning
        outlook = retry_outlook(day, state, now, retry, daemon_alive=True)
        if outlook is None or outlook.at is None or outlook.at > now:
            continue
        n = outlook.attempt
        plans[day] = Plan(
            day,
            CHAIN,
            f"일시적 실패 — 같은 아침의 재시도 {n}/{retry.attempts}",
            f"retry:{day}:{n}",
            "retry",
            {RETRY_TAG: f"{day}#{n}", REFETCH_TAG: "true", REDONE_TAG: Redone.REFETCHED.value},
        )
    # 3. the days whose events the commit or the rejection of an earlier day recomputed (by its verdict, or at
    # its diff), each of a chain of them: their events and workbooks are written again
    for day, state in tick.states.items():
        for record in (r for r in (state.judged, state.diffed) if r is not None):
            for rederived in rederived_of(record.metadata):
                if rederived in busy or rederived in plans:
                    continue
                report = latest_by_partition(instance, "xlsx_report", [rederived]).get(rederived)
                if _older(report, record):
                    plans[rederived] = Plan(
                        rederived,
                        ("events", "xlsx_report"),
                        f"{day} 처리로 이 날의 이벤트가 다시 계산되었습니다",
                        f"rederived:{rederived}:{record.storage_id}",
                        "refresh",
                        {REDONE_TAG: Redone.RECOMPARED.value, **_quiet_after(state, record)},
                    )
            # 4. the rejected days whose comparison base it moved: judged again, their archives replayed
            for rejudge in rejudge_of(record.metadata):
                if rejudge in busy or rejudge in plans:
                    continue
                judged = (tick.states.get(rejudge) or day_states(instance, [rejudge])[rejudge]).judgement
                if _older(judged, record):
                    plans[rejudge] = Plan(
                        rejudge,
                        CHAIN,
                        f"{day} 처리로 비교 기준이 바뀌어 이 날을 다시 판정합니다",
                        f"rejudge:{rejudge}:{record.storage_id}",
                        "rejudge",
                        {REDONE_TAG: Redone.RECOMPARED.value, **_quiet_after(state, record)},
                    )
    return [plans[d] for d in sorted(plans)]
