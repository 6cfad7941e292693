"""Entry point for `dagster dev -w workspace.yaml` / `dagster definitions validate` — and for `dmf run`.

The one `Definitions` the project constructs: the defs folder (`load_from_defs_folder`: assets, checks,
jobs, schedules) merged with what depends on the configuration — the resources, the executor and the
sensor (its interval, `[runs] sensor_interval_s`). config/dmf.toml (+ dmf.local.toml or $DMF_CONFIG) is
read when the code location loads, never when a module is imported; each run still reads the settings
again through the `workspace` resource, so a changed threshold needs no restart of the UI.
`dmf run`, `dmf backfill` and the tests execute this same object with their own resources (a temporary
project, `--fault`) in place of the configured ones (`runs/launch.py`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path

import dagster as dg

from dmf_assets.defs.automation import watch_sensor
from dmf_assets.defs.resources import build_resources
from dmf_assets.settings import Settings, load_settings


@functools.cache
def _defs_folder() -> dg.Definitions:
    return dg.load_from_defs_folder(path_within_project=Path(__file__).parent)


def project(resources: Mapping[str, object] | None = None, settings: Settings | None = None) -> dg.Definitions:
    """The project's definitions, bound to `resources` (default: the ones `settings` describe)."""
    settings = settings or load_settings()
    # `executor`: every run — the schedule's, a UI backfill's, the sensor's, `dagster asset materialize` —
    # executes its steps one after another in the run's own process. The chain is strictly sequential
    # (each asset reads the one before), so a process per step (Dagster's default) would only add a
    # Python start-up, ≈2 s, to each of the six steps.
    configured = dg.Definitions(
        resources=resources or build_resources(settings),
        executor=dg.in_process_executor,
        sensors=[watch_sensor(settings.runs.sensor_interval_s)],
    )
    return dg.Definitions.merge(_defs_folder(), configured)


@dg.definitions
def defs() -> dg.Definitions:
    return project()
