"""Run days from the command line through the same Dagster definitions the daemon uses.

The definitions are the code location's own (`dmf_assets.definitions.project`: the defs folder that
`load_from_defs_folder` loads, merged with the resources, executor and sensor), with the command's
resources (its project folders, `--fault`, a test's temporary project) in place of the configured ones.
A day is one in-process run of `dmf_daily_job` for its partition, recorded in the project's Dagster
instance (the UI shows it). Afterwards the CLI evaluates the very sensor the daemon runs, `dmf_watch_sensor`, and executes the follow-up runs it asks for (a rejected day's workbook, a
re-derived day's refresh) — so `dmf run` ends in the same state as the schedule under `dagster dev`.
Retries that the sensor would launch later (30 minutes on) are left to the daemon.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import signal
import socket
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any

import dagster as dg

from dmf_assets.defs.automation import WATCH_SENSOR, dmf_daily_job, run_tags
from dmf_assets.defs.resources import DmfWorkspace
from dmf_assets.fsutil import refused_write_in_texts
from dmf_assets.orchestration.followups import CHAIN, RETRY_TAG, TIMED_OUT_TAG
from dmf_assets.orchestration.verdict import rejecting_steps

#: Dagster's step-by-step log stays in the instance (the UI shows it); the terminal gets the
#: command's own one-line-per-day summary
QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


class _Gate6LeftUnevaluated(logging.Filter):
    """A rejected day's follow-up leaves gate 6 unevaluated on purpose (docs/DOMAIN.md §6: a day refused by
    gates 1–5 changes nothing and is compared with nothing; the UI shows the check as skipped). Dagster's planner warns about that
    through a module logger of its own, whose record would reach the terminal through Python's handler of
    last resort (the commands configure no logging handler): this filter drops that one warning there."""

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        return not (
            record.name.startswith("dagster")
            and text.startswith("Blocking asset check")
            and "emitted no result" in text
        )


if logging.lastResort is not None:
    logging.lastResort.addFilter(_Gate6LeftUnevaluated())


@dataclass(frozen=True)
class DayRun:
    day: date
    run_id: str
    success: bool
    failure: str | None  # the root cause of a failed step (None when only a gate check failed)
    followups: int


def _root_cause(error: Any) -> str:  # a SerializableErrorInfo and its causes
    chain: list[str] = []
    while error is not None:
        chain.append(next(iter((error.message or "").strip().splitlines()), ""))  # its first line
        error = getattr(error, "cause", None)
    # a write the file system refused (full, read-only) anywhere in the chain: the README's line, naming the path
    return refused_write_in_texts(chain) or (chain[-1] if chain else "")


def interrupted(result: dg.JobExecutionResult) -> bool:
    """Ctrl-C reached a step: Dagster records it as that step's failure (DagsterExecutionInterruptedError, or the
    KeyboardInterrupt `open_database` raises for a query DuckDB stopped) and returns, as if the run had merely
    failed."""
    return any(
        e.is_step_failure
        and e.step_failure_data is not None
        and e.step_failure_data.error is not None
        and e.step_failure_data.error.cls_name in ("DagsterExecutionInterruptedError", "KeyboardInterrupt")
        for e in result.all_events
    )


def failure_of(result: dg.JobExecutionResult) -> str | None:
    """Why a run failed, in one line — None when the only failure was a gate's verdict (a rejected day)."""
    if (limit := _TIMED_OUT.get(result.run_id)) is not None:
        return _timed_out_line(result, limit)
    verdicts = rejecting_steps(
        (e.step_key, e.asset_observation_data.asset_observation.metadata)
        for e in result.all_events
        if e.is_asset_observation
    )
    for event in result.all_events:
        if not (event.is_step_failure and event.step_failure_data is not None):
            continue
        data = event.step_failure_data
        if event.step_key in verdicts:  # the step that said the day's verdict: a rejected day, not an error
            continue
        if data.user_failure_data is not None and data.user_failure_data.description:
            return f"{event.step_key}: {data.user_failure_data.description}"
        return f"{event.step_key}: {_root_cause(data.error)}"
    return None


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    # Dagster's sensor logger hands its records to a console logger of its own (setting the level of
    # logging.getLogger("dagster") does not reach it): below ERROR, no record is made at all meanwhile
    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        yield
    finally:
        logging.disable(previous)


#: the run tag of a run's time limit in seconds ([runs] max_minutes): Dagster's run monitoring enforces it on the
#: runs its daemon launches; `execute_day` enforces it on the runs it executes in this process
MAX_RUNTIME_TAG = "dagster/max_runtime"
#: run id -> its limit in seconds, for the runs of this process that `execute_day` stopped at their limit
_TIMED_OUT: dict[str, float] = {}


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[threading.Event]:
    """Interrupt the in-process run still going after `seconds`, as Ctrl-C would: Dagster fails the running step
    there and then (a page, a staged file, a workbook are each written atomically; a day's history is one
    transaction — nothing is left half-written, and an interrupted fetch resumes from its archived pages).
    Only where signals can be handled: the main thread (every `dmf` command)."""
    fired = threading.Event()
    if seconds <= 0 or threading.current_thread() is not threading.main_thread():
        yield fired
        return
    lock, running = threading.Lock(), [True]

    def stop() -> None:
        with lock:
            if running[0]:
                fired.set()
                os.kill(os.getpid(), signal.SIGINT)

    timer = threading.Timer(seconds, stop)
    timer.daemon = True
    timer.start()
    try:
        yield fired
    finally:
        with lock:
            running[0] = False
        timer.cancel()


@contextlib.contextmanager
def _ctrl_c_seen() -> Iterator[Callable[[], bool]]:
    """Whether SIGINT reached this process while the block ran, whatever the handlers in between made of it: Dagster
    keeps a Ctrl-C that comes between two steps for the next step and forgets it when the run ends; DuckDB turns one
    into a query error; Python ignores one in a finalizer. Python writes each signal's number to the wake-up file
    descriptor either way. Only where signals are handled: the main thread (every `dmf` command)."""
    if threading.current_thread() is not threading.main_thread():
        yield lambda: False
        return
    receiver, sender = socket.socketpair()
    receiver.setblocking(False)
    sender.setblocking(False)
    previous = signal.set_wakeup_fd(sender.fileno(), warn_on_full_buffer=False)

    def seen() -> bool:
        signals = b""
        with contextlib.suppress(BlockingIOError):
            while chunk := receiver.recv(512):
                signals += chunk
        return signal.SIGINT in signals

    try:
        yield seen
    finally:
        signal.set_wakeup_fd(previous)
        receiver.close()
        sender.close()


def _timed_out_line(result: dg.JobExecutionResult, limit_s: float) -> str:
    step = next((e.step_key for e in result.all_events if e.is_step_failure and e.step_key), None) or "run"
    limit = f"{limit_s / 60:g}분" if limit_s >= 60 else f"{limit_s:g}초"
    return (
        f"{step}: 실행 시간 한도({limit}, [runs] max_minutes)를 넘어 멈췄습니다 — 이 날은 반영되지 않았고 이력은 그대로입니다"
        f"(받던 원본은 다음 실행이 이어받습니다). 원천이 느리면 한도를 늘리거나 다시 실행하세요 / the run exceeded its "
        f"time limit ([runs] max_minutes) and was stopped; nothing of the day was committed"
    )


def definitions_with(resources: Mapping[str, object]) -> dg.Definitions:
    """The code location's definitions (`dmf_assets.definitions`) with `resources` (a temp project, `--fault`,
    tests) in place of the configured ones."""
    from dmf_assets.definitions import project

    return project(resources)


@functools.cache
def code_location_origin() -> Any:
    """Where `dagster dev` loads `dmf_daily_job` from: the code location of the project's workspace.yaml, its
    repository and the job — a `RemoteJobOrigin`. Dagster records it on every run it launches; the UI's Overview
    timeline and the job's Runs tab list only runs that carry it (dagster-io/dagster#17707: runs of
    `execute_in_process` / `dagster job execute` carry none). No public API creates an in-process run with an
    origin, so the few private names needed are here, and only here."""
    from dagster._core.definitions.repository_definition.valid_definitions import SINGLETON_REPOSITORY_NAME
    from dagster._core.remote_origin import RemoteJobOrigin, RemoteRepositoryOrigin
    from dagster._core.workspace.load import location_origins_from_yaml_paths

    from dmf_assets.settings import PROJECT_ROOT

    [location] = location_origins_from_yaml_paths([str(PROJECT_ROOT / "workspace.yaml")])
    return RemoteJobOrigin(RemoteRepositoryOrigin(location, SINGLETON_REPOSITORY_NAME), dmf_daily_job.name)


def execute_day(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    day: str,
    *,
    assets: tuple[str, ...] = CHAIN,
    tags: dict | None = None,
    run_config: dict | None = None,
) -> dg.JobExecutionResult:
    """One run of `dmf_daily_job` for `day` (of `assets` only, when given), executed here in this process, as
    `execute_in_process` would — but created with the code location's origin (`code_location_origin`), so it
    shows in the UI beside the schedule's runs, and the UI can re-execute it."""
    from dagster._core.definitions.job_base import InMemoryJob
    from dagster._core.execution.api import execute_run
    from dagster._core.execution.execute_in_process import merge_run_tags

    job = defs.resolve_job_def(dmf_daily_job.name)
    selection = None if tuple(assets) == CHAIN else [dg.AssetKey(x) for x in assets]
    config = run_config or (
        job.partitioned_config.get_run_config_for_partition_key(day) if job.partitioned_config else {}
    )
    run = instance.create_run_for_job(
        job_def=job,
        run_config=config,
        # the partition's tags as execute_in_process adds them (dagster/partition, its partition set), then ours
        tags=merge_run_tags(job, day, tags, selection, instance, config),
        asset_selection=frozenset(selection) if selection else None,
        remote_job_origin=code_location_origin(),
    )
    limit = float((tags or {}).get(MAX_RUNTIME_TAG) or 0)
    with _time_limit(limit) as stopped, _ctrl_c_seen() as ctrl_c:
        result = execute_run(InMemoryJob(job), run, instance)
        pressed = ctrl_c() and not stopped.is_set()  # the time limit stops a run with a SIGINT of its own
    if stopped.is_set() and not result.success:  # said in the run's record, for the UI and the sensor's alert
        _TIMED_OUT[result.run_id] = limit
        instance.add_run_tags(result.run_id, {TIMED_OUT_TAG: f"{limit:g}"})
    elif pressed or interrupted(result):  # the person stopped the command: no further day, no follow-up
        raise KeyboardInterrupt
    return result


def _workspace(defs: dg.Definitions) -> DmfWorkspace:
    return (defs.resources or {})["workspace"]


def tick(defs: dg.Definitions, instance: dg.DagsterInstance) -> dg.SensorResult:
    """One evaluation of the definitions' `dmf_watch_sensor`, as a tick of the daemon would run it: given the
    instance, and the resources it reads."""
    with dg.build_sensor_context(
        instance=instance, definitions=defs, resources={"workspace": _workspace(defs)}
    ) as context:  # its resources released here, not whenever the garbage collector comes by
        result = defs.resolve_sensor_def(WATCH_SENSOR)(context)
    assert isinstance(result, dg.SensorResult)  # `automation.watch` returns one on every tick
    return result


def follow_up(
    defs: dg.Definitions, instance: dg.DagsterInstance, *, run_config: dict | None = None, max_rounds: int = 6
) -> list[dg.JobExecutionResult]:
    """Evaluate `dmf_watch_sensor` and execute what it requests now, until it requests nothing new."""
    done: set[str] = set()
    results = []
    for _ in range(max_rounds):
        with _quiet():  # the sensor's log lines belong in the daemon's log, not in the command's table
            outcome = tick(defs, instance)
        for event in getattr(outcome, "asset_events", None) or []:
            instance.report_runless_asset_event(event)
        requests = [r for r in (getattr(outcome, "run_requests", None) or []) if r.run_key not in done]
        requests = [r for r in requests if not r.tags.get(RETRY_TAG)]  # a retry: later, by the daemon
        if not requests:
            break
        for request in requests:
            done.add(request.run_key)
            assets = tuple(k.path[-1] for k in request.asset_selection) if request.asset_selection else CHAIN
            results.append(
                execute_day(
                    defs,
                    instance,
                    request.partition_key,
                    assets=assets,
                    tags={**request.tags, "dmf/run_key": request.run_key},
                    run_config=run_config,
                )
            )
    return results


def run_day(
    day: date,
    *,
    instance: dg.DagsterInstance,
    resources: Mapping[str, object],
    trigger: str = "cli",
    run_config: dict | None = None,
    extra_tags: dict | None = None,
    defs: dg.Definitions | None = None,
) -> DayRun:
    """One day through the whole graph, then the sensor's follow-ups. `defs`: `definitions_with(resources)`,
    when the caller has built it already (one for all the days of a backfill)."""
    defs = defs or definitions_with(resources)
    tags = {**run_tags(trigger, _workspace(defs).settings()), **(extra_tags or {})}
    result = execute_day(defs, instance, day.isoformat(), tags=tags, run_config=run_config)
    followups = follow_up(defs, instance, run_config=run_config)
    failure = failure_of(result) or next((f for f in map(failure_of, followups) if f), None)
    return DayRun(day, result.run_id, result.success, failure, len(followups))


def run_days(
    days: list[date],
    *,
    instance: dg.DagsterInstance,
    resources: Mapping[str, object],
    trigger: str = "cli",
    run_config: dict | None = None,
    progress: Callable[[DayRun, float], None] | None = None,
) -> list[DayRun]:
    import time

    out = []
    defs = definitions_with(resources)
    for day in sorted(days):
        started = time.monotonic()
        report = run_day(day, instance=instance, resources=resources, trigger=trigger, run_config=run_config, defs=defs)
        out.append(report)
        if progress:
            progress(report, time.monotonic() - started)
    return out
