"""The benchmark: what a user waits for, measured whole-process — `dmf diff` at 9.2 k / 100 k / 1 M rows
(and beside it the floor, `bench/floor.py`: the same comparison with polars alone, as a ratio), one day
through the whole graph (`dmf run --date D`: wall, CPU seconds, events stored per Dagster run), a 30-day
`dmf backfill`, the daily workbook, the daily step (the pipeline's normalize + judge + diff_and_commit
against yesterday in DuckDB), and the team's page's search (`dmf web`, 9.2 k and 100 k registrations).

Not part of the product package: `dmf bench` loads this file (`cli/bench.py`), and its child parts run
it as a script (`python bench/run.py PART`).

Every figure except the daily step is the real CLI in a fresh subprocess (`python -m dmf_assets …`):
wall time from spawn to exit, peak RSS of that process from `os.wait4` (its own `ru_maxrss`). The
byte-code cache is warm (one untimed run first); figures with repeats report the median. The graph
and backfill runs use a throw-away project folder (its own config, database, reports and
DAGSTER_HOME) and the in-process emulator, so they survive any rewrite of the orchestration as long
as `dmf run` / `dmf backfill` keep their command line. Inputs (archived emulator days, synthetic
dumps from `bench/synthetic.py`: `synthetic_registry` + `churn_day`) are made before timing starts.

bench/README.md explains every number; results go to bench/results/latest.json (+ a dated copy) and
each figure is printed beside the previous result.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import platform
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

from dmf_assets.clock import now_kst
from dmf_assets.settings import EMULATOR_URL, PROJECT_ROOT

SCHEMA_VERSION = 2
BENCH_DIR = Path(__file__).resolve().parent
DEFAULT_OUTPUT = PROJECT_ROOT / "bench" / "results"
#: the floor of `dmf diff`: polars' JSON reader, one hash over the nine fields, anti-joins both ways
FLOOR_SCRIPT = BENCH_DIR / "floor.py"
#: the floor of `dmf run` / `dmf backfill`: Dagster alone, the product's graph with steps that do nothing
GRAPH_FLOOR_SCRIPT = BENCH_DIR / "dagster_floor.py"
BENCH_SERVICE_KEY = "bench-emulator-key"  # the in-process emulator accepts any non-empty key

#: `dmf diff` inputs: two real-size emulator days (archived like `dmf run` archives them) …
DIFF_OLD_DAY, DIFF_NEW_DAY = date(2026, 10, 7), date(2026, 10, 8)
#: … and synthetic registries of these sizes (full run; --quick skips 1 M)
DIFF_SIZES_FULL: tuple[int, ...] = (100_000, 1_000_000)
DIFF_SIZES_QUICK: tuple[int, ...] = (100_000,)
# the graph: a baseline day, the timed day, and the day the daily-step figure commits in-process
GRAPH_BASE_DAY, GRAPH_DAY, STEP_DAY = date(2026, 9, 28), date(2026, 9, 29), date(2026, 9, 30)
BACKFILL_END, BACKFILL_DAYS = date(2026, 11, 28), 30
#: the searches `dmf web` is timed with (as typed: spacing, legal forms), each asked WEB_ROUNDS times
WEB_QUERIES: tuple[dict[str, str], ...] = (
    {"q": "아세트아미노펜"},
    {"q": "  이부 프로펜 "},
    {"q": "㈜ 삼오 제약"},
    {"q": "인도"},
    {"q": "Unimark Biotech"},
    {"q": "20110531"},
    {"q": "나프록센", "country": "중국"},
    {"applicant": "(주)파마피아", "sort": "issued"},
    {"q": "디클로페낙", "page": "2"},
    {"target_class": "신물질"},
)
WEB_ROUNDS = 5
WEB_SYNTHETIC_ROWS = 100_000
WEB_SYNTHETIC_DAY = date(2026, 10, 7)


@dataclass(frozen=True)
class Target:
    metric: str  # dotted path into the result document
    label: str
    limit: float
    unit: str


#: the three `dmf diff` sizes: (metric key, the two days compared, their rows, limits: wall s, floor ratio, peak RSS MB
#: — None: not a target for the small day)
DIFF_SIZES: tuple[tuple[str, str, str, float, float, float | None], ...] = (
    ("9k", "two emulator days (≈9.2 k rows)", "9.2 k rows", 0.8, 2.0, None),
    ("100k", "two 100 k-row days", "100 k rows", 3.0, 1.4, 400.0),
    ("1m", "two 1 M-row days", "1 M rows", 12.0, 1.25, 2048.0),
)

TARGETS: tuple[Target, ...] = (
    *(
        target
        for key, days, rows, wall_s, ratio, rss_mb in DIFF_SIZES
        for target in (
            Target(f"diff.{key}.wall_s", f"dmf diff, {days}, whole process", wall_s, "s"),
            Target(f"diff.{key}.floor_ratio", f"dmf diff / floor (polars alone, same run), {rows}", ratio, "x"),
            *([Target(f"diff.{key}.peak_rss_mb", f"dmf diff, {rows}, peak RSS", rss_mb, "MB")] if rss_mb else []),
        )
    ),
    Target(
        "daily_step.total_s", "daily step: normalize + gates + diff + commit (9.2 k rows, base from DuckDB)", 0.5, "s"
    ),
    Target("graph.one_day.wall_s", "dmf run --date D (one day, whole graph), whole process", 15.0, "s"),
    Target("graph.one_day.cpu_s", "dmf run --date D, CPU seconds (user + sys, whole process tree)", 3.0, "s"),
    Target("graph.workbook_s", "daily workbook step (xlsx_report)", 5.0, "s"),
    Target("backfill_30.wall_s", "dmf backfill, 30 days, whole process", 45.0, "s"),
    Target(
        "web.search_9k.median_ms", "dmf web: /search on the 9.2 k registry, median of 50 loopback requests", 50.0, "ms"
    ),
    Target("web.search_9k.p95_ms", "dmf web: /search on the 9.2 k registry, 95th percentile of the 50", 150.0, "ms"),
    Target("web.search_100k.median_ms", "dmf web: /search on a 100 k-row registry, median of 50 requests", 300.0, "ms"),
)

#: figures printed beside the previous result without a goal (what a change costs, not a promise)
FIGURES: tuple[tuple[str, str, str], ...] = (
    *((f"diff.{key}.floor.wall_s", f"floor (bench/floor.py), {rows}", "s") for key, _, rows, *_ in DIFF_SIZES),
    ("graph.floor.cpu_s", "Dagster's floor for one day (bench/dagster_floor.py), CPU seconds", "s"),
    ("graph.one_day.floor_cpu_ratio", "dmf run --date D / Dagster's floor, CPU seconds", "x"),
    ("graph.events_per_run.one_day", "dmf run --date D, events stored in the Dagster event log per run", "rows"),
    ("graph.events_per_run.floor", "Dagster's floor, events stored per run", "rows"),
    ("backfill_30.floor.wall_s", "Dagster's floor for the 30 days (bench/dagster_floor.py), one process", "s"),
    ("backfill_30.floor_ratio", "dmf backfill / Dagster's floor, wall", "x"),
    ("web.search_9k.first_ms", "dmf web: first search after start (its registry read from DuckDB), 9.2 k", "ms"),
    ("web.search_100k.first_ms", "dmf web: first search after start, 100 k rows", "ms"),
)


def _r(x: float | None, nd: int = 3) -> float | None:
    return None if x is None else round(float(x), nd)


# --- one process, measured -----------------------------------------------------------------------


def run_process(
    args: Sequence[object],
    *,
    env: dict[str, str] | None = None,
    timeout_s: float = 900,
    log: Path | None = None,
    script: Path | None = None,
) -> dict:
    """`python -m dmf_assets ARGS` (or `python SCRIPT ARGS`) in a fresh process: wall time, CPU seconds
    (user + sys of the process and the children it waited for, from `os.wait4`), peak RSS (its own
    ru_maxrss), exit code."""
    cmd = [sys.executable, *([str(script)] if script else ["-m", "dmf_assets"]), *map(str, args)]
    log_file = open(log, "ab") if log else None  # noqa: SIM115 - closed below
    out = log_file if log_file is not None else subprocess.DEVNULL
    try:
        t = time.perf_counter()
        proc = subprocess.Popen(
            cmd,
            stdout=out,
            stderr=subprocess.STDOUT if log else subprocess.PIPE,
            env={**os.environ, **(env or {})},
            cwd=PROJECT_ROOT,
        )
        timer = threading.Timer(timeout_s, proc.kill)
        timer.start()
        try:
            stderr = b""
            if proc.stderr is not None:  # drain stderr while waiting (a full pipe would block the child)
                pipe = proc.stderr
                drain = threading.Thread(target=lambda: setattr(proc, "_bench_err", pipe.read()), daemon=True)
                drain.start()
            _, status, usage = os.wait4(proc.pid, 0)
            wall = time.perf_counter() - t
            proc.returncode = os.waitstatus_to_exitcode(status)
            if proc.stderr is not None:
                drain.join(5)
                stderr = getattr(proc, "_bench_err", b"")
        finally:
            timer.cancel()
    finally:
        if log_file is not None:
            log_file.close()
    tail = stderr.decode("utf-8", "replace").strip().splitlines()[-5:] if stderr else []
    if log and proc.returncode not in (0, 3):
        tail = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-8:]
    return {
        "wall_s": _r(wall),
        "cpu_s": _r(usage.ru_utime + usage.ru_stime),
        "peak_rss_mb": _r(usage.ru_maxrss / 1024, 1),
        "exit_code": proc.returncode,
        "error_tail": tail if proc.returncode not in (0, 3) else [],
    }


def measure_alternating(
    args: Sequence[object],
    other_args: Sequence[object],
    *,
    other_script: Path,
    repeats: int,
    warmup: bool = True,
    timeout_s: float = 900,
) -> tuple[dict, dict]:
    """Median wall and CPU time and the largest peak RSS of two commands whose runs alternate (A B A B …), so both see the same machine load:
    the ratio of their medians holds up on a busy machine better than either figure alone."""
    if warmup:
        run_process(args, timeout_s=timeout_s)
        run_process(other_args, timeout_s=timeout_s, script=other_script)
    runs: list[dict] = []
    other_runs: list[dict] = []
    for _ in range(repeats):
        runs.append(run_process(args, timeout_s=timeout_s))
        other_runs.append(run_process(other_args, timeout_s=timeout_s, script=other_script))
    return _summary(args, runs, None), _summary(other_args, other_runs, other_script)


def _summary(args: Sequence[object], runs: list[dict], script: Path | None) -> dict:
    repeats = len(runs)
    return {
        "command": (
            f"python {script.relative_to(PROJECT_ROOT) if script.is_relative_to(PROJECT_ROOT) else script} "
            if script
            else "dmf "
        )
        + " ".join(map(str, args)),
        "wall_s": _r(statistics.median(r["wall_s"] for r in runs)),
        "all_wall_s": [r["wall_s"] for r in runs],
        "cpu_s": _r(statistics.median(r["cpu_s"] for r in runs)),
        "peak_rss_mb": max(r["peak_rss_mb"] for r in runs),
        "exit_codes": [r["exit_code"] for r in runs],
        "repeats": repeats,
        "error_tail": next((r["error_tail"] for r in runs if r["error_tail"]), []),
    }


# --- inputs --------------------------------------------------------------------------------------


def archive_days(raw_dir: Path, days: tuple[date, ...]) -> None:
    """The emulator's registry of each day, archived exactly as `dmf run` archives it (data/raw/D)."""
    from dmf_assets.emulator.client import mfds_client_from_settings
    from dmf_assets.settings import load_settings
    from dmf_assets.source.fetch import fetch_day

    config = mfds_client_from_settings(
        load_settings(), service_key=BENCH_SERVICE_KEY, raw_dir=str(raw_dir), base_url=EMULATOR_URL, emulator_faults={}
    )
    for d in days:
        result = fetch_day(config, d)
        if result.status != "complete":
            raise RuntimeError(f"emulator fetch of {d} did not complete: {result.status}")


def synthetic_dumps(workdir: Path, rows: int) -> tuple[Path, Path]:
    """A `rows`-row synthetic registry and its churned next day as items JSON files (like a saved dump)."""
    from dmf_assets.cli.bench import load_bench

    synthetic = load_bench("synthetic")  # bench/synthetic.py
    churn_day, synthetic_registry = synthetic.churn_day, synthetic.synthetic_registry

    old_path, new_path = workdir / f"dump_{rows}_old.json", workdir / f"dump_{rows}_new.json"
    base = synthetic_registry(rows, seed=1)
    nxt, _ = churn_day(base, seed=2)
    for frame, path in ((base, old_path), (nxt, new_path)):
        with open(path, "w", encoding="utf-8") as fh:
            fh.write('{"items": [')
            for i in range(0, frame.height, 50_000):  # stream: a 1 M-row day never sits in memory as text twice
                chunk = json.dumps(frame.slice(i, 50_000).to_dicts(), ensure_ascii=False)[1:-1]
                fh.write(("," if i else "") + chunk)
            fh.write("]}")
    return old_path, new_path


@dataclass
class Project:
    """A throw-away project folder: config with absolute paths, database, reports, DAGSTER_HOME."""

    root: Path

    def __post_init__(self) -> None:
        from dmf_assets.settings import Paths

        self.root.mkdir(parents=True, exist_ok=True)
        home = self.root / "dagster_home"
        home.mkdir(exist_ok=True)
        shutil.copy(PROJECT_ROOT / "dagster_home" / "dagster.yaml", home / "dagster.yaml")
        paths = Paths()
        lines = ["# written by dmf bench: every path stays inside this folder", "[paths]"]
        lines += [f'{name} = "{(self.root / getattr(paths, name)).as_posix()}"' for name in type(paths).model_fields]
        lines += ["", "[source]", f'base_url = "{EMULATOR_URL}"', ""]
        self.config.write_text("\n".join(lines), encoding="utf-8")

    @property
    def config(self) -> Path:
        return self.root / "bench.toml"

    @property
    def env(self) -> dict[str, str]:
        return {
            "DMF_CONFIG": str(self.config),
            "DAGSTER_HOME": str(self.root / "dagster_home"),
            "MFDS_SERVICE_KEY": BENCH_SERVICE_KEY,
        }

    def path(self, name: str) -> Path:
        from dmf_assets.settings import Paths

        return self.root / getattr(Paths(), name)


class GraphFloor:
    """Dagster's floor for the product's graph (`bench/dagster_floor.py`) in an instance of its own: the
    graph's shape is read once from the definitions, in a child (the parent stays small)."""

    def __init__(self, root: Path, workdir: Path) -> None:
        self.home = root / "dagster_home"
        self.home.mkdir(parents=True, exist_ok=True)
        shutil.copy(PROJECT_ROOT / "dagster_home" / "dagster.yaml", self.home / "dagster.yaml")
        self.shape = workdir / "graph_shape.json"
        if not self.shape.exists():
            _child("graph_shape", {"path": str(self.shape)}, workdir)

    def run(self, days: Sequence[date], *, log: Path) -> dict:
        return run_process(
            [self.shape, *days], env={"DAGSTER_HOME": str(self.home)}, log=log, script=GRAPH_FLOOR_SCRIPT
        )


def _runs_rows(db: Path) -> dict[str, dict]:
    """The `runs` table by day (read-only), or {} if the database is missing or has another shape."""
    code = (
        "import json, sys, duckdb\n"
        "con = duckdb.connect(sys.argv[1], read_only=True)\n"
        "cur = con.execute('SELECT * FROM runs ORDER BY day_id')\n"
        "names = [c[0] for c in cur.description]\n"
        "print(json.dumps([dict(zip(names, r)) for r in cur.fetchall()], default=str))\n"
    )
    try:  # in a child: the parent stays small (a forked child's peak RSS starts at the parent's)
        proc = subprocess.run([sys.executable, "-c", code, str(db)], capture_output=True, text=True, timeout=120)
        rows = json.loads(proc.stdout.strip().splitlines()[-1]) if proc.returncode == 0 else []
    except Exception:  # noqa: BLE001 - informational: the figures stand without it
        return {}
    keep = ("status", "population", "new_count", "changed_count", "withdrawn_count", "fetch_seconds", "process_seconds")
    out = {}
    for row in rows:
        d = str(row["day_id"])
        out[f"{d[:4]}-{d[4:6]}-{d[6:]}"] = {
            k: (_r(row[k]) if isinstance(row.get(k), float) else row.get(k)) for k in keep if k in row
        }
    return out


def _dagster_runs(home: Path) -> dict:
    """Per-asset-step wall times of every run in this Dagster instance (oldest run first), and every run's
    job, partition and number of events stored in the instance's event log (`steps`, `runs`)."""
    code = (
        "import json, sys, dagster as dg\n"
        "inst = dg.DagsterInstance.from_config(sys.argv[1])\n"
        "steps, runs = {}, []\n"
        "for run in reversed(inst.get_runs()):\n"
        "    logs = inst.all_logs(run.run_id)\n"
        "    runs.append({'run_id': run.run_id, 'job': run.job_name, 'partition': run.tags.get('dagster/partition'),\n"
        "                 'status': run.status.value, 'events': len(logs)})\n"
        "    for e in logs:\n"
        "        ev = e.dagster_event\n"
        "        if ev is None or ev.event_type != dg.DagsterEventType.STEP_SUCCESS: continue\n"
        "        ms = getattr(ev.event_specific_data, 'duration_ms', None)\n"
        "        if ms is not None: steps.setdefault(ev.step_key, []).append(round(ms / 1000, 3))\n"
        "inst.dispose()\n"
        "print(json.dumps({'steps': steps, 'runs': runs}))\n"
    )
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code, str(home)],
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "DAGSTER_HOME": str(home)},
        )
        return json.loads(proc.stdout.strip().splitlines()[-1]) if proc.returncode == 0 else {}
    except Exception:  # noqa: BLE001 - informational
        return {}


def _events_per_run(runs: list[dict], day: date) -> list[int]:
    """Events stored per run of the daily job for `day` (oldest first)."""
    return [r["events"] for r in runs if r.get("partition") == day.isoformat() and r.get("job") == "dmf_daily_job"]


# --- the daily step (in-process, in a child process of its own) --------------------------------------


def daily_step(db: str, raw_dir: str, day: str, repeats: int = 3) -> dict:
    """One day through the pipeline's own steps (`orchestration.pipeline`), against the history in DuckDB.

    The same functions the assets call, minus Dagster: `collect` (replays the archived pages),
    `normalize`, `judge` (gates 1–5, verdict recorded), `diff_and_commit` (base read from DuckDB, diff,
    gate 6, one transaction). Each repetition re-commits the same day (a re-run replaces its rows).
    The first repetition pays one-time costs (regex compilation, DuckDB start-up) and is reported apart.
    """
    import polars as pl  # noqa: F401 - imported before timing, like the pipeline's process has it

    from dmf_assets.emulator.client import mfds_client_from_settings
    from dmf_assets.orchestration import pipeline
    from dmf_assets.settings import load_settings
    from dmf_assets.storage.db import open_database

    settings = load_settings()
    d = date.fromisoformat(day)
    client = mfds_client_from_settings(
        settings, service_key=BENCH_SERVICE_KEY, raw_dir=raw_dir, base_url=EMULATOR_URL, emulator_faults={}
    )
    quiet = logging.getLogger("dmf.bench")
    quiet.disabled = True
    runs: list[dict[str, Any]] = []
    with open_database(Path(db), purpose="dmf bench") as conn:
        for _ in range(repeats):
            t0 = time.perf_counter()
            fetched = pipeline.collect(client, d, quiet)
            t1 = time.perf_counter()
            normalized = pipeline.normalize(fetched, settings)
            t2 = time.perf_counter()
            judged = pipeline.judge(conn, normalized, settings)
            t3 = time.perf_counter()
            outcome = pipeline.diff_and_commit(conn, judged, settings)
            t4 = time.perf_counter()
            if fetched.fetch.get("source") != "archive":
                raise RuntimeError(f"{day}: expected a replay of the archived pages, got {fetched.fetch.get('source')}")
            runs.append(
                {
                    "collect_s": t1 - t0,
                    "normalize_s": t2 - t1,
                    "judge_s": t3 - t2,
                    "diff_commit_s": t4 - t3,
                    "status": outcome.status,
                    "rows": judged.keyed.height,
                    "events": {k: v for k, v in outcome.counts.items() if k != "population"},
                }
            )
    for r in runs:
        r["total_s"] = r["normalize_s"] + r["judge_s"] + r["diff_commit_s"]
    timed = runs[1:] or runs
    best = min(timed, key=lambda r: r["total_s"])
    return {
        "day": day,
        "base_day": str(outcome.base_day),
        "what": "normalize + judge + diff_and_commit of orchestration.pipeline (total_s); collect (replaying the "
        "archived pages) is timed apart",
        "rows": best["rows"],
        "status": best["status"],
        "events": best["events"],
        **{k: _r(v) for k, v in best.items() if k.endswith("_s")},
        "total_median_s": _r(statistics.median(r["total_s"] for r in timed)),
        "first_total_s": _r(runs[0]["total_s"]),
        "repeats": len(timed),
    }


# --- the parts -----------------------------------------------------------------------------------


def make_inputs(workdir: str, raw_dir: str, days: list[str], sizes: list[int]) -> dict:
    """Child part: archive emulator days and write synthetic dump pairs (kept out of the parent, whose
    memory a forked child would otherwise start with)."""
    archive_days(Path(raw_dir), tuple(date.fromisoformat(d) for d in days))
    return {str(n): [str(p) for p in synthetic_dumps(Path(workdir), n)] for n in sizes}


def _child(part: str, kwargs: dict, workdir: Path, *, env: dict | None = None, timeout_s: float = 1200) -> dict:
    out = workdir / f"{part}.json"
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), part, "--out", str(out), "--kwargs", json.dumps(kwargs)],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env={**os.environ, **(env or {})},
        cwd=PROJECT_ROOT,
    )
    if proc.returncode != 0 or not out.exists():
        raise RuntimeError(f"{part}: exit {proc.returncode}: " + "\n".join(proc.stderr.strip().splitlines()[-6:]))
    return json.loads(out.read_text(encoding="utf-8"))


def bench_diff(doc: dict, workdir: Path, *, quick: bool, progress: Callable[[str], None]) -> None:
    raw = workdir / "raw"
    sizes = list(DIFF_SIZES_QUICK if quick else DIFF_SIZES_FULL)
    progress(
        f"… inputs: emulator days {DIFF_OLD_DAY}, {DIFF_NEW_DAY}; synthetic {', '.join(f'{n:,}' for n in sizes)}-row "
        "dump pairs (not timed)"
    )
    dumps = _child(
        "inputs",
        {
            "workdir": str(workdir),
            "raw_dir": str(raw),
            "days": [DIFF_OLD_DAY.isoformat(), DIFF_NEW_DAY.isoformat()],
            "sizes": sizes,
        },
        workdir,
    )
    cases = [("9k", [raw / DIFF_OLD_DAY.isoformat(), raw / DIFF_NEW_DAY.isoformat()], 3)]
    for n in sizes:
        cases.append(
            ("1m" if n == 1_000_000 else f"{n // 1000}k", [Path(p) for p in dumps[str(n)]], 1 if n >= 1_000_000 else 3)
        )
    for name, (old, new), repeats in cases:
        warmup = name != "1m"  # 1 M rows: the byte-code cache is warm from the smaller sizes already
        progress(
            f"… dmf diff {name} and the floor, alternating ({repeats}× each{' after a warm-up run' if warmup else ''})"
        )
        # the floor on the same inputs, its runs alternating with dmf diff's (same load): what polars alone
        # needs for the comparison
        res, floor = measure_alternating(
            ["diff", old, new, "--no-watchlist"],
            [old, new],
            other_script=FLOOR_SCRIPT,
            repeats=repeats,
            warmup=warmup,
            timeout_s=600,
        )
        res["input"] = {
            "old": old.name,
            "new": new.name,
            "bytes": old.stat().st_size + new.stat().st_size if old.is_file() else None,
        }
        res["floor"] = floor
        usable = floor["wall_s"] and floor["cpu_s"] and not floor["error_tail"]
        res["floor_ratio"] = _r(res["wall_s"] / floor["wall_s"], 2) if usable else None
        res["floor_cpu_ratio"] = _r(res["cpu_s"] / floor["cpu_s"], 2) if usable else None
        if floor["error_tail"]:
            doc["errors"].append({"part": f"floor {name}", "error": "\n".join(floor["error_tail"])})
        doc["diff"][name] = res
        progress(
            f"   {res['wall_s']:.2f} s ({res['cpu_s']:.2f} s CPU), peak RSS {res['peak_rss_mb']:.0f} MB "
            f"(exit {res['exit_codes']}); floor {floor['wall_s']:.2f} s, {floor['peak_rss_mb']:.0f} MB → "
            f"ratio {res['floor_ratio']} (CPU {res['floor_cpu_ratio']})"
        )


def bench_graph(doc: dict, workdir: Path, *, quick: bool, progress: Callable[[str], None]) -> None:
    proj = Project(workdir / "graph")
    log = workdir / "graph.log"
    progress(f"… dmf run --date {GRAPH_BASE_DAY} (baseline, first run of a fresh project)")
    base = run_process(["run", "--date", GRAPH_BASE_DAY], env=proj.env, log=log)
    if base["exit_code"] != 0:
        doc["graph"] = {"skipped": "`dmf run` failed — the orchestration may be mid-rewrite", "baseline_day": base}
        doc["errors"].append({"part": "graph", "error": "\n".join(base["error_tail"])})
        progress(f"   FAILED (exit {base['exit_code']}): graph figures skipped")
        return
    repeats = 1 if quick else 3
    floor = GraphFloor(workdir / "graph_floor", workdir)
    floor.run([GRAPH_BASE_DAY], log=log)  # its baseline day too: both instances hold one earlier run
    progress(
        f"… dmf run --date {GRAPH_DAY} and Dagster's floor for the same graph, alternating ({repeats}× each; "
        "a re-run replaces the day)"
    )
    day_runs, floor_runs = [], []
    for _ in range(repeats):
        day_runs.append(run_process(["run", "--date", GRAPH_DAY], env=proj.env, log=log))
        floor_runs.append(floor.run([GRAPH_DAY], log=log))
    one = _summary(["run", "--date", GRAPH_DAY], day_runs, None)
    floor_one = _summary([floor.shape, GRAPH_DAY], floor_runs, GRAPH_FLOOR_SCRIPT)
    usable = bool(floor_one["cpu_s"]) and not floor_one["error_tail"]
    one["floor_ratio"] = _r(one["wall_s"] / floor_one["wall_s"], 2) if usable else None
    one["floor_cpu_ratio"] = _r(one["cpu_s"] / floor_one["cpu_s"], 2) if usable else None
    if floor_one["error_tail"]:
        doc["errors"].append({"part": "graph floor", "error": "\n".join(floor_one["error_tail"])})
    floor_events = _events_per_run(_dagster_runs(floor.home).get("runs", []), GRAPH_DAY)
    dagster_runs = _dagster_runs(proj.root / "dagster_home")
    steps = dagster_runs.get("steps", {})
    base_events = _events_per_run(dagster_runs.get("runs", []), GRAPH_BASE_DAY)
    day_events = _events_per_run(dagster_runs.get("runs", []), GRAPH_DAY)
    runs = _runs_rows(proj.path("database"))
    workbook_steps = steps.get("xlsx_report") or []
    doc["graph"] = {
        "baseline_day": {**base, "day": GRAPH_BASE_DAY.isoformat(), **runs.get(GRAPH_BASE_DAY.isoformat(), {})},
        "one_day": {**one, "day": GRAPH_DAY.isoformat(), **runs.get(GRAPH_DAY.isoformat(), {})},
        "floor": floor_one,
        # the steps of the timed runs: the baseline run is the first of each list
        "step_seconds": {k: (statistics.median(v[1:]) if len(v) > 1 else v[0]) for k, v in steps.items() if v},
        "workbook_s": _r(statistics.median(workbook_steps[1:] or workbook_steps)) if workbook_steps else None,
        "workbook_bytes": next((p.stat().st_size for p in proj.path("reports_dir").glob(f"*{GRAPH_DAY}*.xlsx")), None),
        # rows each daily-job run left in the Dagster event log (every run of the instance in `runs`)
        "events_per_run": {
            "baseline_day": base_events[0] if base_events else None,
            "one_day": _r(statistics.median(day_events), 1) if day_events else None,
            "floor": _r(statistics.median(floor_events), 1) if floor_events else None,
        },
        "runs": dagster_runs.get("runs", []),
    }
    progress(
        f"   {one['wall_s']:.2f} s ({one['cpu_s']:.2f} s CPU), peak RSS {one['peak_rss_mb']:.0f} MB; workbook step "
        f"{doc['graph']['workbook_s']} s; {doc['graph']['events_per_run']['one_day']} events stored per run; "
        f"Dagster's floor {floor_one['wall_s']:.2f} s ({floor_one['cpu_s']:.2f} s CPU, "
        f"{doc['graph']['events_per_run']['floor']} events) → CPU ratio {one['floor_cpu_ratio']}"
    )
    # the daily step, in-process, on a copy of this database (the day after GRAPH_DAY)
    db_copy = workdir / "daily_step.duckdb"
    shutil.copy(proj.path("database"), db_copy)
    progress(f"… daily step {STEP_DAY} in-process (the pipeline's normalize + judge + diff_and_commit against DuckDB)")
    try:
        _child(
            "inputs",
            {
                "workdir": str(workdir),
                "raw_dir": str(proj.path("raw_dir")),
                "days": [STEP_DAY.isoformat()],
                "sizes": [],
            },
            workdir,
        )
        s = doc["daily_step"] = _child(
            "daily_step",
            {"db": str(db_copy), "raw_dir": str(proj.path("raw_dir")), "day": STEP_DAY.isoformat(), "repeats": 4},
            workdir,
            env=proj.env,
        )
        progress(
            f"   {s['total_s']:.3f} s = normalize {s['normalize_s']:.3f} + judge {s['judge_s']:.3f} + "
            f"diff and commit {s['diff_commit_s']:.3f} (replaying the pages {s['collect_s']:.3f})"
        )
    except RuntimeError as exc:
        doc["errors"].append({"part": "daily_step", "error": str(exc)})
        progress(f"   FAILED: {exc}")


def _web_searches(env: dict[str, str], log: Path) -> dict:
    """`dmf web --port P` in a process of its own, asked every WEB_QUERIES search WEB_ROUNDS times over loopback
    (one keep-alive client, as a browser): per request the wall time from sending to the last byte. The first
    request (its registry read from DuckDB into the page's memory) is timed apart."""
    import httpx

    with contextlib.closing(socket.socket()) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "dmf_assets", "web", "--port", str(port)],
            stdout=subprocess.PIPE,
            stderr=out,
            env={**os.environ, **env},
            cwd=PROJECT_ROOT,
        )
    try:
        assert proc.stdout is not None
        if f":{port}/".encode() not in proc.stdout.readline():
            raise RuntimeError(f"dmf web did not start (see {log})")
        base = f"http://127.0.0.1:{port}"
        with httpx.Client(timeout=60) as client:
            t = time.perf_counter()
            first = client.get(f"{base}/search", params={"q": "세파"})
            cold = time.perf_counter() - t
            times, statuses, found = [], [], []
            for _ in range(WEB_ROUNDS):
                for params in WEB_QUERIES:
                    t = time.perf_counter()
                    r = client.get(f"{base}/search", params=params)
                    times.append(time.perf_counter() - t)
                    statuses.append(r.status_code)
                    m = re.search(r"<strong>([\d,]+)건</strong>", r.text)
                    found.append(int(m.group(1).replace(",", "")) if m else None)
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    ms = sorted(x * 1000 for x in times)
    return {
        "requests": len(ms),
        "median_ms": _r(statistics.median(ms), 1),
        "p95_ms": _r(ms[max(0, round(0.95 * len(ms)) - 1)], 1),
        "max_ms": _r(ms[-1], 1),
        "first_ms": _r(cold * 1000, 1),
        "first_status": first.status_code,
        "statuses": sorted(set(statuses)),
        "found": {json.dumps(q, ensure_ascii=False): n for q, n in zip(WEB_QUERIES, found, strict=False)},
    }


def web_registry(db: str, rows: int, day: str) -> dict:
    """Child part: a history database holding one accepted day of a `synthetic_registry(rows)` — committed with
    the pipeline's own steps (build the snapshot, diff against nothing, one commit) — for `dmf web` to search."""
    from dmf_assets.cli.bench import load_bench
    from dmf_assets.domain.diff import diff_snapshots
    from dmf_assets.domain.gates import GateOutcome
    from dmf_assets.domain.snapshot import build_snapshot
    from dmf_assets.orchestration import commit
    from dmf_assets.storage import history
    from dmf_assets.storage.db import open_database

    d = date.fromisoformat(day)
    items = load_bench("synthetic").synthetic_registry(rows).to_dicts()
    keyed = build_snapshot(items)
    with open_database(Path(db), purpose="dmf bench") as conn:
        conn.execute(
            "INSERT INTO runs (day_id, status, total_count, rows_received) VALUES (?, 'pending', ?, ?)",
            [history.day_id(d), len(items), len(items)],
        )
        commit.commit_day(
            conn,
            d,
            keyed,
            diff_snapshots(None, keyed),
            base=history.comparison_base(conn, d),
            gates=[GateOutcome(6, True, 0.0, 0.1, "기준일", "≤ 10 %", "bench")],
        )
    return {"rows": len(items), "day": day}


def bench_web(doc: dict, workdir: Path, *, progress: Callable[[str], None]) -> None:
    """`dmf web`'s search, as people wait for it: on the 9.2 k registry the graph figures committed, and on a
    100 k-row synthetic registry."""
    graph = Project(workdir / "graph")
    if not graph.path("database").is_file():
        doc["web"] = {"skipped": "no history database: the graph part did not run"}
        return
    doc["web"] = {}
    progress(f"… dmf web: {len(WEB_QUERIES) * WEB_ROUNDS} searches on the 9.2 k registry (one keep-alive client)")
    res = doc["web"]["search_9k"] = _web_searches(graph.env, workdir / "web.log")
    progress(
        f"   median {res['median_ms']} ms, p95 {res['p95_ms']} ms, max {res['max_ms']} ms (first {res['first_ms']} ms)"
    )
    big = Project(workdir / "web_100k")
    progress(f"… a history of one {WEB_SYNTHETIC_ROWS:,}-row synthetic registry (not timed)")
    _child(
        "web_registry",
        {"db": str(big.path("database")), "rows": WEB_SYNTHETIC_ROWS, "day": WEB_SYNTHETIC_DAY.isoformat()},
        workdir,
        env=big.env,
    )
    progress(f"… dmf web: {len(WEB_QUERIES) * WEB_ROUNDS} searches on the {WEB_SYNTHETIC_ROWS:,}-row registry")
    res = doc["web"]["search_100k"] = _web_searches(big.env, workdir / "web.log")
    progress(
        f"   median {res['median_ms']} ms, p95 {res['p95_ms']} ms, max {res['max_ms']} ms (first {res['first_ms']} ms)"
    )


def bench_backfill(doc: dict, workdir: Path, *, progress: Callable[[str], None]) -> None:
    proj = Project(workdir / "backfill")
    start = BACKFILL_END - timedelta(days=BACKFILL_DAYS - 1)
    progress(f"… dmf backfill --start {start} --end {BACKFILL_END} (fresh project)")
    res = run_process(
        ["backfill", "--start", start, "--end", BACKFILL_END],
        env=proj.env,
        log=workdir / "backfill.log",
        timeout_s=1800,
    )
    runs = _runs_rows(proj.path("database"))
    statuses: dict[str, int] = {}
    for row in runs.values():
        statuses[str(row.get("status"))] = statuses.get(str(row.get("status")), 0) + 1
    doc["backfill_30"] = {
        **res,
        "start": start.isoformat(),
        "end": BACKFILL_END.isoformat(),
        "days": BACKFILL_DAYS,
        "seconds_per_day": _r(res["wall_s"] / BACKFILL_DAYS),
        "statuses": statuses,
        "workbooks": len(list(proj.path("reports_dir").glob("DMF_*_2*.xlsx"))),
    }
    if res["exit_code"] not in (0, 3):
        doc["errors"].append({"part": "backfill", "error": "\n".join(res["error_tail"])})
    progress(
        f"   {res['wall_s']:.1f} s ({res['wall_s'] / BACKFILL_DAYS:.2f} s/day), peak RSS {res['peak_rss_mb']:.0f} MB, "
        f"{statuses}"
    )
    progress(f"… Dagster's floor for the same {BACKFILL_DAYS} days (the graph with steps that do nothing, one process)")
    days = [start + timedelta(days=i) for i in range(BACKFILL_DAYS)]
    floor = GraphFloor(workdir / "backfill_floor", workdir).run(days, log=workdir / "backfill.log")
    doc["backfill_30"]["floor"] = floor
    if floor["error_tail"]:
        doc["errors"].append({"part": "backfill floor", "error": "\n".join(floor["error_tail"])})
    else:
        doc["backfill_30"]["floor_ratio"] = _r(res["wall_s"] / floor["wall_s"], 2)
        doc["backfill_30"]["floor_cpu_ratio"] = _r(res["cpu_s"] / floor["cpu_s"], 2)
    progress(f"   {floor['wall_s']:.1f} s ({floor['cpu_s']:.1f} s CPU) → ratio {doc['backfill_30'].get('floor_ratio')}")


# --- the document --------------------------------------------------------------------------------


def _machine() -> dict:
    mem = None
    with contextlib.suppress(OSError, ValueError, IndexError):
        mem = int(Path("/proc/meminfo").read_text().split()[1]) / 1024 / 1024
    versions: dict[str, str | None] = {}
    for name in ("polars", "duckdb", "dagster"):
        try:
            from importlib.metadata import version

            versions[name] = version(name)
        except Exception:  # noqa: BLE001 - informational only
            versions[name] = None
    return {
        "cpu_count": os.cpu_count(),
        "memory_gb": _r(mem, 1),
        "platform": platform.platform(),
        "python": platform.python_version(),
        **versions,
        "load_average_start": [round(x, 2) for x in os.getloadavg()],
    }


def lookup(doc: dict | None, dotted: str) -> Any:
    node = doc
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def target_summary(doc: dict) -> list[dict]:
    rows = []
    for t in TARGETS:
        value = lookup(doc, t.metric)
        rows.append(
            {
                "metric": t.metric,
                "label": t.label,
                "target": f"≤ {t.limit:g} {t.unit}",
                "limit": t.limit,
                "measured": value,
                "unit": t.unit,
                "met": None if value is None else bool(value <= t.limit),
            }
        )
    return rows


def previous_results(output_dir: Path, quick: bool) -> dict | None:
    """The result this run is compared with: latest[-quick].json, else latest.json (same schema only)."""
    for name in (["latest-quick.json"] if quick else []) + ["latest.json"]:
        try:
            doc = json.loads((output_dir / name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if doc.get("schema_version") == SCHEMA_VERSION:
            return doc
    return None


def comparison_lines(doc: dict, previous: dict | None) -> list[str]:
    """One line per target: goal, now, before (and the change), verdict."""
    lines = [f"{'figure':<70} {'goal':>10} {'now':>10} {'before':>10} {'change':>8}  result"]

    def line(label: str, goal: str, now: float | None, before: float | None, unit: str, verdict: str) -> str:
        change = f"{(now - before) / before * 100:+.0f} %" if now is not None and before else ""
        shown = ["-" if v is None else f"{v:,.2f} {unit}" for v in (now, before)]
        return f"{label:<70} {goal:>10} {shown[0]:>10} {shown[1]:>10} {change:>8}  {verdict}"

    for t in doc["targets"]:
        verdict = "skipped" if t["met"] is None else ("met" if t["met"] else "MISSED")
        lines.append(
            line(
                t["label"],
                t["target"],
                t["measured"],
                lookup(previous, t["metric"]) if previous else None,
                t["unit"],
                verdict,
            )
        )
    for metric, label, unit in FIGURES:
        now = lookup(doc, metric)
        lines.append(
            line(
                label,
                "-",
                now,
                lookup(previous, metric) if previous else None,
                unit,
                "skipped" if now is None else "figure",
            )
        )
    if previous:
        lines.append(
            f"(before = {previous.get('started_at')}, load average {previous['machine'].get('load_average_start')})"
        )
    return lines


def compile_sources() -> None:
    """Byte-compile the project and bench/ before timing anything. An editable install is not compiled by the
    installer, and where PYTHONDONTWRITEBYTECODE is set every measured process would compile the package again
    (≈1.8 s of CPU a `dmf run`): the figures are of the code as users run it, byte-code warm."""
    import compileall

    for folder in (PROJECT_ROOT / "dmf_assets", PROJECT_ROOT / "bench"):
        compileall.compile_dir(folder, quiet=1)


def run_benchmark(
    *,
    quick: bool,
    output_dir: Path = DEFAULT_OUTPUT,
    workdir: Path | None = None,
    keep_workdir: bool = False,
    progress: Callable[[str], None] = print,
) -> tuple[dict, list[Path]]:
    """Run every part, write the JSON files, return (document, written paths)."""
    compile_sources()
    own_workdir = workdir is None
    workdir = Path(workdir or tempfile.mkdtemp(prefix="dmf-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    started = now_kst()
    t_all = time.perf_counter()
    doc: dict = {
        "schema_version": SCHEMA_VERSION,
        "mode": "quick" if quick else "full",
        "started_at": started.isoformat(timespec="seconds"),
        "machine": _machine(),
        "diff": {},
        "errors": [],
    }
    try:
        for label, part in (
            ("diff", lambda: bench_diff(doc, workdir, quick=quick, progress=progress)),
            ("graph", lambda: bench_graph(doc, workdir, quick=quick, progress=progress)),
            ("web", lambda: bench_web(doc, workdir, progress=progress)),
            ("backfill", None if quick else lambda: bench_backfill(doc, workdir, progress=progress)),
        ):
            if part is None:
                continue
            try:
                part()
            except Exception as exc:  # noqa: BLE001 - one broken part never hides the others' figures
                doc["errors"].append({"part": label, "error": f"{type(exc).__name__}: {exc}"})
                progress(f"   FAILED: {label}: {type(exc).__name__}: {exc}")
    finally:
        if own_workdir and not keep_workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    doc["machine"]["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    doc["finished_at"] = now_kst().isoformat(timespec="seconds")
    doc["total_seconds"] = _r(time.perf_counter() - t_all, 1)
    doc["targets"] = target_summary(doc)
    previous = previous_results(Path(output_dir), quick)
    doc["previous"] = (
        {"started_at": previous.get("started_at"), "measured": {t.metric: lookup(previous, t.metric) for t in TARGETS}}
        if previous
        else None
    )
    doc["comparison"] = comparison_lines(doc, previous)
    return doc, write_results(doc, Path(output_dir), quick=quick, started=started)


def write_results(doc: dict, output_dir: Path, *, quick: bool, started: datetime) -> list[Path]:
    """latest[-quick].json and a dated copy, written atomically."""
    output_dir.mkdir(parents=True, exist_ok=True)
    suffix = "-quick" if quick else ""
    text = json.dumps(doc, ensure_ascii=False, indent=2, default=str) + "\n"
    paths = [output_dir / f"latest{suffix}.json", output_dir / f"{started:%Y-%m-%dT%H%M%S%z}{suffix}.json"]
    for p in paths:
        tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, p)
    return paths


# --- child entry point (inputs, the in-process daily step) --------------------------------------------------


def graph_shape(path: str) -> dict:
    """Child part: the daily job's shape for the Dagster floor (`bench/dagster_floor.py`)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("dagster_floor", GRAPH_FLOOR_SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    doc: dict = module.graph_shape()
    Path(path).write_text(json.dumps(doc, indent=1), encoding="utf-8")
    return doc


PARTS: dict[str, Callable[..., dict]] = {
    "daily_step": daily_step,
    "inputs": make_inputs,
    "graph_shape": graph_shape,
    "web_registry": web_registry,
}


def _child_main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python bench/run.py")
    parser.add_argument("part", choices=sorted(PARTS))
    parser.add_argument("--out", required=True)
    parser.add_argument("--kwargs", default="{}")
    args = parser.parse_args(argv)
    result = PARTS[args.part](**json.loads(args.kwargs))
    out = Path(args.out)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(result, ensure_ascii=False, indent=1, default=str), encoding="utf-8")
    os.replace(tmp, out)
    return 0


if __name__ == "__main__":
    sys.exit(_child_main())
