"""A 30-day backfill launched the way a user launches it in the UI, timed until every day is done.

    .venv/bin/python bench/ui_backfill.py                 # 30 days -> bench/results/ui_backfill-<KST stamp>.json
    .venv/bin/python bench/ui_backfill.py --days 5 --output /tmp/x

Starts `dagster dev` (webserver + daemon, the project's workspace.yaml) in a throw-away project folder (the
in-process emulator, its own database, reports and DAGSTER_HOME with the project's dagster.yaml), waits until the
code location is loaded, then launches an asset backfill of the whole graph over the same days as `dmf bench`'s
`dmf backfill` figure ("Materialize → partitions" in the UI sends this GraphQL mutation), and polls until the
backfill is complete and every run has ended. The daemon starts one run per day, one at a time (the instance's
`dagster/backfill` tag limit), each in a new process — what this figure adds to `dmf backfill`'s one process.

Reported: `wall_s` from the launch to the end of the last run, the runs (day, status, seconds from the run's
start to its end, seconds it waited after the previous run ended), their median, and the machine's load. Not part
of `dmf bench` (it takes minutes); bench/README.md lists its results.
"""

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
KST = timezone(timedelta(hours=9))
END = date(2026, 11, 28)  # bench/run.py BACKFILL_END: the days `dmf bench` backfills in one process
CHAIN = ["raw_pages", "normalized_records", "integrity_verdict", "snapshot_diff", "events", "xlsx_report"]
TERMINAL = {"SUCCESS", "FAILURE", "CANCELED"}

M_BACKFILL = """
mutation($params: LaunchBackfillParams!) { launchPartitionBackfill(backfillParams: $params) { __typename
  ... on LaunchBackfillSuccess { backfillId } ... on PythonError { message } } }
"""
Q_BACKFILL = """
query($id: String!) { partitionBackfillOrError(backfillId: $id) { __typename
  ... on PartitionBackfill { status runs { runId status startTime endTime tags { key value } } } } }
"""
Q_WORKSPACE = """
query { workspaceOrError { ... on Workspace { locationEntries { name loadStatus } } } }
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _project(folder: Path) -> dict[str, str]:
    """Config with every path inside `folder` and the in-process emulator; the environment `dagster dev` gets."""
    names = ("database", "raw_dir", "staging_dir", "alerts_dir", "backups_dir", "reports_dir", "events_dir", "logs_dir")
    lines = ["[paths]"] + [f'{n} = "{(folder / "data" / n).as_posix()}"' for n in names]
    lines += ["", "[source]", 'base_url = "emulator://local"', "", "[report]", 'file_server_host = "127.0.0.1"']
    lines += [f"file_server_port = {_free_port()}", 'public_base_url = ""']
    config = folder / "dmf.bench.toml"
    config.write_text("\n".join(lines) + "\n", encoding="utf-8")
    home = folder / "dagster_home"
    home.mkdir()
    shutil.copy(ROOT / "dagster_home" / "dagster.yaml", home / "dagster.yaml")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DAGSTER_", "DMF_", "MFDS_"))}
    return {**env, "DAGSTER_HOME": str(home), "DMF_CONFIG": str(config)}


def _gql(client: httpx.Client, base: str, query: str, **variables: object) -> dict:
    body = client.post(f"{base}/graphql", json={"query": query, "variables": variables}).json()
    if body.get("errors"):
        raise RuntimeError(body["errors"])
    return dict(body["data"])


def measure(days: int, folder: Path, timeout_s: float) -> dict:
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    env = _project(folder)
    log = open(folder / "dagster-dev.log", "wb")  # noqa: SIM115 - closed in finally
    cmd = [sys.executable, "-m", "dagster", "dev", "-w", str(ROOT / "workspace.yaml")]
    cmd += ["-h", "127.0.0.1", "-p", str(port)]
    proc = subprocess.Popen(cmd, cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    client = httpx.Client(timeout=30.0)
    load_start = os.getloadavg()
    try:
        t0 = time.monotonic()
        while True:
            if proc.poll() is not None or time.monotonic() - t0 > 180:
                raise RuntimeError(f"dagster dev did not come up: see {folder / 'dagster-dev.log'}")
            try:
                entries = _gql(client, base, Q_WORKSPACE)["workspaceOrError"]["locationEntries"]
                if any(e["name"] == "dmf_assets" and e["loadStatus"] == "LOADED" for e in entries):
                    break
            except (httpx.TransportError, ValueError):
                pass
            time.sleep(1.0)
        ready_s = time.monotonic() - t0
        partitions = [(END - timedelta(days=days - 1 - i)).isoformat() for i in range(days)]
        params = {"assetSelection": [{"path": [a]} for a in CHAIN], "partitionNames": partitions, "fromFailure": False}
        launched_at = time.time()
        launched = _gql(client, base, M_BACKFILL, params=params)["launchPartitionBackfill"]
        if launched["__typename"] != "LaunchBackfillSuccess":
            raise RuntimeError(f"backfill not launched: {launched}")
        while True:
            backfill = _gql(client, base, Q_BACKFILL, id=launched["backfillId"])["partitionBackfillOrError"]
            runs = backfill["runs"]
            if backfill["status"].startswith("COMPLETED") and all(r["status"] in TERMINAL for r in runs):
                break
            if time.time() - launched_at > timeout_s:
                raise RuntimeError(f"backfill not done after {timeout_s} s: {backfill['status']}, {len(runs)} runs")
            time.sleep(2.0)
    finally:
        client.close()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        log.close()
    runs = sorted(runs, key=lambda r: r["startTime"] or 0)
    rows, previous_end = [], launched_at
    for r in runs:
        tag = {t["key"]: t["value"] for t in r["tags"]}
        rows.append(
            {
                "day": tag.get("dagster/partition"),
                "status": r["status"],
                "run_s": round(r["endTime"] - r["startTime"], 2),
                "waited_s": round(r["startTime"] - previous_end, 2),
            }
        )
        previous_end = r["endTime"]
    wall = max(r["endTime"] for r in runs) - launched_at
    return {
        "days": days,
        "first_day": partitions[0],
        "last_day": partitions[-1],
        "dagster_dev_ready_s": round(ready_s, 1),
        "wall_s": round(wall, 1),
        "seconds_per_day": round(wall / days, 2),
        "run_s_median": round(statistics.median(r["run_s"] for r in rows), 2),
        "waited_s_median": round(statistics.median(r["waited_s"] for r in rows), 2),
        "statuses": {s: sum(r["status"] == s for r in rows) for s in sorted({r["status"] for r in rows})},
        "runs": rows,
        "cpu_count": os.cpu_count(),
        "load_average_start": [round(x, 2) for x in load_start],
        "load_average_end": [round(x, 2) for x in os.getloadavg()],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, default=30, choices=range(1, 91), metavar="1..90")
    parser.add_argument("--output", type=Path, default=ROOT / "bench" / "results")
    parser.add_argument("--timeout-s", type=float, default=3600.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="dmf-ui-backfill-") as tmp:
        result = measure(args.days, Path(tmp), args.timeout_s)
    result["measured_at"] = datetime.now(KST).isoformat(timespec="seconds")
    args.output.mkdir(parents=True, exist_ok=True)
    path = args.output / f"ui_backfill-{datetime.now(KST):%Y-%m-%dT%H%M%S%z}.json"
    path.write_text(json.dumps(result, indent=1, ensure_ascii=False), encoding="utf-8")
    print(
        f"UI backfill of {result['days']} days: {result['wall_s']} s ({result['seconds_per_day']} s/day; a run "
        f"{result['run_s_median']} s, {result['waited_s_median']} s between runs, medians) → {path}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
