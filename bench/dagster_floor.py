"""The floor of `dmf run` and `dmf backfill`: what Dagster alone costs for the product's asset graph.

`python bench/dagster_floor.py SHAPE.json DAY [DAY ...]` — in a fresh process: `import dagster`, the
same six daily assets (keys, dependencies, partitions), the same asset checks (names, blocking or not, in
the same steps), one job, the instance of `DAGSTER_HOME` (the project's dagster.yaml), then one
`execute_in_process` run per DAY in order, as `dmf run` / `dmf backfill` do. Every step does nothing:
each asset materializes, each check passes. What is left is what any run of this graph pays — the
interpreter and Dagster's imports, the instance, the run's planned and stored events, the steps. `dmf bench`
reports `dmf run` and `dmf backfill` beside it (a ratio), as `bench/floor.py` is the floor of `dmf diff`.

SHAPE.json is written by `graph_shape()` (run by the parent, which may import the product): the product's
graph read from `dmf_assets.definitions.project()`, so the floor follows the graph when it changes. This
script itself imports only Dagster.
"""

import json
import sys
from collections.abc import Iterator
from typing import Any

import dagster as dg

JOB = "dmf_daily_job"


def graph_shape() -> dict[str, Any]:
    """The daily job's steps as plain data: each step's assets (with their upstream assets) and checks."""
    from dmf_assets.definitions import project

    graph = project().resolve_asset_graph()
    steps: list[dict[str, Any]] = []
    partitions: dict[str, str] = {}
    for assets_def in graph.assets_defs:
        if not assets_def.partitions_def and not assets_def.check_keys:
            continue
        part = assets_def.partitions_def
        if isinstance(part, dg.DailyPartitionsDefinition):
            partitions = {"start_date": part.start.strftime("%Y-%m-%d"), "timezone": part.timezone}
        checks = [
            {"asset": key.asset_key.to_user_string(), "name": key.name, "blocking": graph.get(key).blocking}
            for key in sorted(assets_def.check_keys, key=lambda k: (k.asset_key.to_user_string(), k.name))
        ]
        assets = [
            {"key": key.to_user_string(), "deps": sorted(p.to_user_string() for p in graph.get(key).parent_keys)}
            for key in sorted(assets_def.keys, key=lambda k: k.to_user_string())
            if graph.get(key).partitions_def is not None
        ]
        if assets or checks:
            steps.append({"name": assets_def.node_def.name, "assets": assets, "checks": checks})
    return {"job": JOB, "partitions": partitions, "steps": steps}


def _no_work(step: dict[str, Any]) -> Any:
    """A step body that materializes its assets and passes its checks (no parameters: nothing is loaded)."""

    def body() -> Iterator[Any]:
        for a in step["assets"]:
            yield dg.MaterializeResult(asset_key=a["key"])
        for c in step["checks"]:
            yield dg.AssetCheckResult(asset_key=c["asset"], check_name=c["name"], passed=True)

    return body


def _definitions(shape: dict[str, Any]) -> dg.Definitions:
    partitions = dg.DailyPartitionsDefinition(**shape["partitions"])
    nodes: list[Any] = []
    for step in shape["steps"]:
        check_specs = [dg.AssetCheckSpec(c["name"], asset=c["asset"], blocking=c["blocking"]) for c in step["checks"]]
        if step["assets"]:
            specs = [dg.AssetSpec(a["key"], deps=a["deps"], partitions_def=partitions) for a in step["assets"]]
            nodes.append(dg.multi_asset(name=step["name"], specs=specs, check_specs=check_specs)(_no_work(step)))
        else:
            nodes.append(dg.multi_asset_check(name=step["name"], specs=check_specs)(_no_work(step)))
    assets = [n for n in nodes if isinstance(n, dg.AssetsDefinition) and n.keys]
    checks = [n for n in nodes if n not in assets]
    job = dg.define_asset_job(shape["job"])
    return dg.Definitions(assets=assets, asset_checks=checks, jobs=[job])


def main(argv: list[str]) -> int:
    with open(argv[0], encoding="utf-8") as f:
        shape = json.load(f)
    defs = _definitions(shape)
    job = defs.resolve_job_def(shape["job"])
    with dg.DagsterInstance.get() as instance:
        for day in argv[1:]:
            result = job.execute_in_process(
                partition_key=day,
                instance=instance,
                run_config={"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}},
            )
            if not result.success:
                print(f"floor run for {day} failed", file=sys.stderr)
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
