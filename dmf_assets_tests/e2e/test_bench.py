"""`dmf bench --quick` end to end: every figure present, whole-process, with numbers that make sense.

The speed targets themselves are not asserted (they depend on the machine and its load); the JSON
must be complete and internally consistent (each figure agrees with the figures, files and database
rows it is derived from), and the comparison with the previous result file printed: the previous
value beside the new one and the change between the two files. One run, shared by the module.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import NamedTuple

import duckdb
import pytest

from dmf_assets.cli.bench import load_bench
from dmf_assets.storage.history import day_id

run = load_bench()  # bench/run.py: the benchmark lives outside the product package

ASSET_STEPS = {"raw_pages", "normalized_records", "xlsx_report"}

#: the previous result file: distinct values per figure, far from anything measured (no rounding edge in the
#: change), a figure the quick run skips but the file has, and figures the file does not have
PREVIOUS_STARTED = "2026-01-01T00:00:00+00:00"
PREVIOUS_LOAD = [1.25, 0.5, 0.75]
PREVIOUS = {
    "diff.9k.wall_s": 41.0,
    "diff.100k.wall_s": 52.0,
    "diff.100k.peak_rss_mb": 4_300.0,
    "diff.1m.wall_s": 73.0,
    "daily_step.total_s": 24.0,
    "graph.one_day.wall_s": 95.0,
    "graph.workbook_s": 36.0,
}


def _previous_doc() -> dict:
    doc: dict = {
        "schema_version": run.SCHEMA_VERSION,
        "started_at": PREVIOUS_STARTED,
        "machine": {"load_average_start": PREVIOUS_LOAD},
    }
    for dotted, value in PREVIOUS.items():
        node = doc
        *parents, leaf = dotted.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return doc


class QuickRun(NamedTuple):
    """One `dmf bench --quick`, shared by the module."""

    proc: subprocess.CompletedProcess
    out: Path  # the results folder
    workdir: Path
    seconds: float  # the process's life, on the monotonic clock


@pytest.fixture(scope="module")
def quick(tmp_path_factory) -> QuickRun:
    """`dmf bench --quick`, run once."""
    tmp = tmp_path_factory.mktemp("bench")
    out = tmp / "results"
    out.mkdir()
    # a previous result in the same schema: the new figures are printed beside it
    (out / "latest-quick.json").write_text(json.dumps(_previous_doc()), encoding="utf-8")
    cmd = [sys.executable, "-m", "dmf_assets", "bench", "--quick", "--output", str(out), "--workdir", str(tmp / "work")]
    started = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    took_s = time.monotonic() - started
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return QuickRun(proc, out, tmp / "work", took_s)


def _doc(quick: QuickRun) -> dict:
    return json.loads((quick.out / "latest-quick.json").read_text(encoding="utf-8"))


def test_results_written_twice_and_the_comparison_printed(quick):
    proc, out, workdir = quick.proc, quick.out, quick.workdir
    dated = [p for p in out.glob("*-quick.json") if p.name != "latest-quick.json"]
    assert len(dated) == 1
    assert dated[0].read_text(encoding="utf-8") == (out / "latest-quick.json").read_text(encoding="utf-8")
    doc = _doc(quick)
    assert dated[0].name == f"{datetime.fromisoformat(doc['started_at']):%Y-%m-%dT%H%M%S%z}-quick.json"
    assert datetime.fromisoformat(doc["started_at"]).utcoffset() == timedelta(hours=9)  # KST, like every timestamp
    assert not (out / "latest.json").exists()  # a quick run never replaces the full results
    printed = proc.stdout.splitlines()
    assert doc["comparison"] and all(line in printed for line in doc["comparison"])
    for t in run.TARGETS:
        assert t.label in proc.stdout
    assert (workdir / "graph" / "data" / "dmf.duckdb").is_file()  # --workdir keeps the project folders


def test_comparison_shows_the_previous_file_beside_the_new_one_with_the_change(quick):
    proc = quick.proc
    doc = _doc(quick)
    lines = {t.label: next(line for line in proc.stdout.splitlines() if line.startswith(t.label)) for t in run.TARGETS}
    for t in run.TARGETS:
        now, before = run.lookup(doc, t.metric), PREVIOUS.get(t.metric)
        goal = next(x["target"] for x in doc["targets"] if x["metric"] == t.metric)  # "≤ 1.25 x" is no figure
        rest = lines[t.label][len(t.label) :].replace(goal, "", 1)
        shown = [float(v.replace(",", "")) for v in re.findall(rf"(\d[\d,]*\.\d\d) {t.unit}\b", rest)]
        expected = [v for v in (now, before) if v is not None]  # now, then before (printed to 2 decimals)
        assert shown == pytest.approx(expected, abs=0.0051) and len(shown) == len(expected), (t.metric, rest)
        change = re.search(r"([+-]\d+) %", rest)
        if now is None or before is None:
            assert change is None, (t.metric, rest)
            assert rest.rstrip().endswith("skipped") == (now is None), (t.metric, rest)
        else:
            assert change is not None, (t.metric, rest)
            assert int(change.group(1)) == pytest.approx((now - before) / before * 100, abs=0.5), (t.metric, rest)
    assert f"(before = {PREVIOUS_STARTED}, load average {PREVIOUS_LOAD})" in proc.stdout


def test_document_header_and_no_errors(quick):
    doc = _doc(quick)
    assert doc["schema_version"] == run.SCHEMA_VERSION and doc["mode"] == "quick"
    assert doc["errors"] == []
    assert doc["machine"]["cpu_count"] == os.cpu_count() and len(doc["machine"]["load_average_end"]) == 3
    assert doc["previous"] == {
        "started_at": PREVIOUS_STARTED,
        "measured": {t.metric: PREVIOUS.get(t.metric) for t in run.TARGETS},
    }
    # the whole run's time is within the process's life, on the same kind of clock (not the stamps: a machine's
    # wall clock may be stepped during the run — a VM's was by 4.5 s once, and the stamps disagreed with it)
    assert 0 < doc["total_seconds"] <= round(quick.seconds, 1) + 0.05
    assert datetime.fromisoformat(doc["finished_at"]).utcoffset() == timedelta(hours=9)
    # … and contains every timed process it reports
    parts = [sum(m["all_wall_s"]) for m in doc["diff"].values()]
    parts += [doc["graph"]["baseline_day"]["wall_s"], sum(doc["graph"]["one_day"]["all_wall_s"])]
    assert sum(parts) < doc["total_seconds"]


@pytest.mark.parametrize("size", ["9k", "100k"])
def test_diff_figures_are_whole_process(quick, size):
    m = _doc(quick)["diff"][size]
    assert m["command"].startswith("dmf diff ") and m["exit_codes"] == [0, 0, 0] and m["repeats"] == 3
    assert m["wall_s"] == sorted(m["all_wall_s"])[1] > 0  # the median of three
    assert len(m["all_wall_s"]) == m["repeats"]
    # a whole Python process with polars loaded, but nowhere near the machine's memory
    assert 50 < m["peak_rss_mb"] < 16_000
    assert "1m" not in _doc(quick)["diff"]  # 1 M rows: full runs only
    # the floor on the same inputs in the same run, and dmf diff's time as a ratio to it
    floor = m["floor"]
    assert floor["command"].startswith("python bench/floor.py ") and floor["exit_codes"] == [0, 0, 0]
    assert floor["wall_s"] == sorted(floor["all_wall_s"])[1] > 0 and floor["error_tail"] == []
    assert m["floor_ratio"] == pytest.approx(m["wall_s"] / floor["wall_s"], abs=0.006)
    assert m["floor_cpu_ratio"] == pytest.approx(m["cpu_s"] / floor["cpu_s"], abs=0.006)
    assert m["cpu_s"] > 0 and floor["cpu_s"] > 0


def test_graph_figures_agree_with_the_project_they_ran_in(quick):
    workdir = quick.workdir
    g = _doc(quick)["graph"]
    base, one = g["baseline_day"], g["one_day"]
    assert base["exit_code"] == 0 and base["status"] == "baseline"
    assert one["exit_codes"] == [0] and one["status"] == "accepted" and 8_000 <= one["population"] <= 12_000
    assert one["wall_s"] == statistics.median(one["all_wall_s"]) and len(one["all_wall_s"]) == one["repeats"] == 1
    assert set(g["step_seconds"]) >= ASSET_STEPS and g["workbook_s"] > 0 and g["workbook_bytes"] > 10_000
    # the workbook figure is the xlsx_report step's; the steps ran inside the timed process
    assert g["workbook_s"] == g["step_seconds"]["xlsx_report"]
    assert sum(g["step_seconds"].values()) < one["wall_s"]
    # the workbook's size is the file's, the populations are the stored snapshots'
    (workbook,) = (workdir / "graph" / "reports").glob(f"*{run.GRAPH_DAY}*.xlsx")
    assert g["workbook_bytes"] == workbook.stat().st_size
    conn = duckdb.connect(str(workdir / "graph" / "data" / "dmf.duckdb"), read_only=True)
    try:
        stored = dict(conn.execute("SELECT day_id, count(*) FROM snapshots GROUP BY day_id").fetchall())
    finally:
        conn.close()
    assert stored == {day_id(run.GRAPH_BASE_DAY): base["population"], day_id(run.GRAPH_DAY): one["population"]}
    # CPU seconds of the timed process (its tree), events the Dagster event log holds per run of the daily job
    assert one["cpu_s"] > 0 and base["cpu_s"] > 0
    daily = [r for r in g["runs"] if r["job"] == "dmf_daily_job"]
    counts = [r["events"] for r in daily if r["partition"] == run.GRAPH_DAY.isoformat()]
    assert len(counts) == 1 and g["events_per_run"]["one_day"] == counts[0] > 20
    assert (
        g["events_per_run"]["baseline_day"]
        == next(r["events"] for r in daily if r["partition"] == run.GRAPH_BASE_DAY.isoformat())
        > 20
    )


def test_daily_step_figures_add_up(quick):
    doc = _doc(quick)
    step = doc["daily_step"]
    assert step["status"] == "accepted" and step["base_day"] == run.GRAPH_DAY.isoformat()
    assert step["day"] == run.STEP_DAY.isoformat()
    assert step["total_s"] == pytest.approx(step["normalize_s"] + step["judge_s"] + step["diff_commit_s"], abs=0.003)
    assert step["collect_s"] > 0  # the archived pages were replayed, not fetched (daily_step checks the source)
    assert 8_000 <= step["rows"] <= 12_000 and step["repeats"] == 3
    events = step["events"]  # NEW, CHANGED and WITHDRAWN are what a reader acts on
    assert events["substantive"] == events["NEW"] + events["CHANGED"] + events["WITHDRAWN"]


def test_targets_list_every_goal_and_mark_quick_skips(quick):
    doc = _doc(quick)
    targets = {t["metric"]: t for t in doc["targets"]}
    assert [t["metric"] for t in doc["targets"]] == [t.metric for t in run.TARGETS]
    skipped = {"diff.1m.wall_s", "diff.1m.floor_ratio", "diff.1m.peak_rss_mb", "backfill_30.wall_s"}
    for metric, t in targets.items():
        assert t["measured"] == run.lookup(doc, metric), t  # each target's figure is the document's own
        if metric in skipped:
            assert t["measured"] is None and t["met"] is None, t
        else:
            assert t["measured"] > 0 and t["met"] is (t["measured"] <= t["limit"]), t


def test_a_process_is_measured_on_its_own(tmp_path):
    # wall time and the child's own peak RSS; a failing command keeps its exit code and error tail
    ok = run.run_process(["diff", "--help"])
    assert ok["exit_code"] == 0 and ok["wall_s"] > 0 and ok["peak_rss_mb"] > 5 and ok["error_tail"] == []
    missing = tmp_path / "missing.json"
    bad = run.run_process(["diff", str(missing), str(missing)])
    assert bad["exit_code"] == 2
    assert any(str(missing) in line for line in bad["error_tail"]), bad


def test_dagster_floor_is_the_products_graph_with_no_work(quick):
    # `dmf run` beside what Dagster alone costs for the same graph: the same assets, dependencies and checks
    # (read from the definitions), every step doing nothing; runs alternating with dmf run's, in an instance
    # of its own
    workdir = quick.workdir
    g = _doc(quick)["graph"]
    one, floor = g["one_day"], g["floor"]
    assert floor["command"] == f"python bench/dagster_floor.py {workdir / 'graph_shape.json'} {run.GRAPH_DAY}"
    assert floor["exit_codes"] == [0] and floor["error_tail"] == [] and floor["cpu_s"] > 0
    assert one["floor_cpu_ratio"] == pytest.approx(one["cpu_s"] / floor["cpu_s"], abs=0.006)
    assert one["floor_ratio"] == pytest.approx(one["wall_s"] / floor["wall_s"], abs=0.006)
    # the floor's run stored fewer events than the product's (no inputs loaded, no observations, no logs)
    assert 20 < g["events_per_run"]["floor"] < g["events_per_run"]["one_day"]

    from dmf_assets.definitions import project

    graph = project().resolve_asset_graph()
    shape = json.loads((workdir / "graph_shape.json").read_text(encoding="utf-8"))
    assert {a["key"]: a["deps"] for s in shape["steps"] for a in s["assets"]} == {
        k.to_user_string(): sorted(p.to_user_string() for p in graph.get(k).parent_keys)
        for k in graph.get_all_asset_keys()
    }
    assert {(c["asset"], c["name"], c["blocking"]) for s in shape["steps"] for c in s["checks"]} == {
        (k.asset_key.to_user_string(), k.name, graph.get(k).blocking) for k in graph.asset_check_keys
    }
    # … and the floor's instance holds the same partitions materialized and every check evaluated
    import dagster as dg

    with dg.DagsterInstance.from_config(str(workdir / "graph_floor" / "dagster_home")) as instance:
        for key in graph.get_all_asset_keys():
            assert instance.get_materialized_partitions(key) == {
                run.GRAPH_BASE_DAY.isoformat(),
                run.GRAPH_DAY.isoformat(),
            }
        (last,) = instance.get_runs(limit=1)
        evaluations = instance.all_logs(last.run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION)
        assert len(evaluations) == len(graph.asset_check_keys)


@pytest.mark.parametrize("size", ["9k", "100k"])
def test_web_search_figures_are_loopback_requests_to_a_real_dmf_web(quick, size):
    m = _doc(quick)["web"][f"search_{size}"]
    assert m["requests"] == len(run.WEB_QUERIES) * run.WEB_ROUNDS == 50
    assert m["statuses"] == [200] and m["first_status"] == 200
    assert 0 < m["median_ms"] <= m["p95_ms"] <= m["max_ms"]
    found = m["found"]
    assert found['{"q": "아세트아미노펜"}'] > 0 and found['{"q": "㈜ 삼오 제약"}'] > 0  # searches that find something
    assert found['{"q": "인도"}'] > found['{"q": "나프록센", "country": "중국"}']
