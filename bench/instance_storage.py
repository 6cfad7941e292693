"""Dagster instance storage: SQLite (dagster_home/dagster.yaml) vs PostgreSQL (dagster.postgres.yaml).

The same in-process method for both: a 30-day backfill as one `dagster.materialize(...)` run per day
(what a per-day backfill launches) over the real asset graph, the in-process emulator, a fresh temp
project each. PostgreSQL is a real server started for the run (dmf_assets_tests/pg_server.py; as root
it runs as the `postgres` account). Each storage runs in its own fresh Python process.

    .venv/bin/python bench/instance_storage.py            # both, 30 days -> bench/results/instance_storage-*.json
    .venv/bin/python bench/instance_storage.py --days 5
    .venv/bin/python bench/instance_storage.py --noop     # the instance's own cost: six no-op daily assets

`--noop` runs the same number of runs over six empty partitioned assets with a blocking check, so the
difference between the storages is what recording runs and events costs, without the product's work.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
START = date(2026, 10, 30)
QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


def _cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime + c.ru_utime + c.ru_stime


def _noop_graph():
    import dagster as dg

    parts = dg.DailyPartitionsDefinition(start_date="2026-01-01", timezone="Asia/Seoul")
    out, prev = [], None
    for name in ("raw_pages", "normalized_records", "integrity_verdict", "snapshot_diff", "events", "xlsx_report"):
        deps = [prev] if prev else []

        @dg.asset(
            name=f"noop_{name}",
            partitions_def=parts,
            deps=deps,
            check_specs=[dg.AssetCheckSpec("gate", asset=f"noop_{name}", blocking=True)],
        )
        def _a(context):
            yield dg.MaterializeResult(metadata={"rows": 1})
            yield dg.AssetCheckResult(passed=True)

        out.append(_a)
        prev = _a
    return out


def run_one(storage: str, days: int, noop: bool = False) -> dict:
    warnings.filterwarnings("ignore")
    sys.path.insert(0, str(ROOT))
    import shutil

    import dagster as dg

    from dmf_assets.defs import assets as a
    from dmf_assets.defs.resources import build_resources
    from dmf_assets.settings import load_settings
    from dmf_assets_tests import pg_server

    os.environ.setdefault("MFDS_SERVICE_KEY", "bench-key")
    graph = (
        _noop_graph()
        if noop
        else [a.raw_pages, a.normalized_records, a.integrity_verdict, a.snapshot_diff, a.events, a.xlsx_report]
    )
    with tempfile.TemporaryDirectory(prefix=f"dmf-bench-{storage}-") as tmp:
        project = Path(tmp)
        home = project / "dagster_home"
        home.mkdir()

        def backfill(server=None) -> dict:
            instance = dg.DagsterInstance.from_config(str(home))
            resources = build_resources(load_settings(), root=project, emulator_faults={})
            per_day, failures = [], []
            cpu0, t0 = _cpu_s(), time.perf_counter()
            server0 = server.server_cpu_s() if server else None
            for i in range(days):
                day = (START + timedelta(days=i)).isoformat()
                t = time.perf_counter()
                result = dg.materialize(
                    graph,
                    partition_key=day,
                    instance=instance,
                    resources=None if noop else resources,
                    raise_on_error=False,
                    run_config=QUIET,
                )
                per_day.append(time.perf_counter() - t)
                if not result.success:
                    failures.append(day)
            wall, cpu = time.perf_counter() - t0, _cpu_s() - cpu0
            events = sum(len(instance.all_logs(r.run_id)) for r in instance.get_runs())
            instance.dispose()
            server_cpu = None
            if server is not None and server0 is not None:
                end = server.server_cpu_s()  # backends of the disposed instance have exited: counted
                server_cpu = round(end - server0, 2) if end is not None else None
            return {
                "seconds": round(wall, 2),
                "cpu_s": round(cpu, 2),
                "per_day_median_s": round(statistics.median(per_day), 3),
                "per_day_min_s": round(min(per_day), 3),
                "per_day_max_s": round(max(per_day), 3),
                "failures": failures,
                "runs": days,
                "event_log_entries": events,
                "postgres_server_cpu_s": server_cpu,
                "workbooks": len(list((project / "reports").glob("DMF_리포트_????-??-??.xlsx"))),
                "noop": noop,
            }

        if storage == "sqlite":
            shutil.copy(ROOT / "dagster_home" / "dagster.yaml", home / "dagster.yaml")
            out = backfill()
        else:
            with pg_server.postgres_server() as server:
                os.environ.update(server.env)
                pg_server.write_postgres_home(home, ROOT)
                out = backfill(server)
    return {"storage": storage, "days": days, **out}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--noop", action="store_true", help="six empty assets: the instance's own cost per run")
    parser.add_argument("--only", choices=("sqlite", "postgres"), default=None, help=argparse.SUPPRESS)
    parser.add_argument("--output", default=str(ROOT / "bench" / "results"))
    args = parser.parse_args()
    if args.only:
        print(json.dumps(run_one(args.only, args.days, args.noop)))
        return 0
    results = {}
    for storage in ("sqlite", "postgres"):
        load0 = os.getloadavg()[0]
        proc = subprocess.run(
            [sys.executable, __file__, "--only", storage, "--days", str(args.days), *(["--noop"] if args.noop else [])],
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        if proc.returncode != 0:
            print(proc.stderr[-3000:], file=sys.stderr)
            return 1
        results[storage] = {
            **json.loads(proc.stdout.strip().splitlines()[-1]),
            "load_average_start": round(load0, 2),
            "load_average_end": round(os.getloadavg()[0], 2),
        }
        r = results[storage]
        print(
            f"{storage:>8}: {r['days']} days in {r['seconds']:.1f} s wall, {r['cpu_s']:.1f} s CPU, "
            f"median {r['per_day_median_s']:.2f} s/day, failures {len(r['failures'])}, load {r['load_average_start']}"
            f"→{r['load_average_end']}"
        )
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H%M%SZ")
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"instance_storage{'-noop' if args.noop else ''}-{stamp}.json"
    path.write_text(
        json.dumps({"measured_at": stamp, "cpu_count": os.cpu_count(), **results}, indent=1), encoding="utf-8"
    )
    print(f"→ {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
