"""`dmf bench --quick` end to end: every figure present, whole-process, with numbers that make sense.

The speed targets themselves are not asserted (they depend on the machine and its load); the JSON
must be complete and internally consistent, and the comparison with the previous result printed.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from dmf_assets.bench import run

ASSET_STEPS = {"raw_pages", "normalized_records", "xlsx_report"}


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bench")
    out = tmp / "results"
    out.mkdir()
    # a previous result in the same schema: the new figures are printed beside it
    (out / "latest-quick.json").write_text(json.dumps({
        "schema_version": run.SCHEMA_VERSION, "started_at": "2026-01-01T00:00:00+00:00",
        "machine": {"load_average_start": [0.0, 0.0, 0.0]}, "diff": {"9k": {"wall_s": 1.0}},
    }), encoding="utf-8")
    cmd = [sys.executable, "-m", "dmf_assets", "bench", "--quick", "--output", str(out), "--workdir", str(tmp / "work")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc, out, tmp / "work"


def _doc(quick) -> dict:
    return json.loads((quick[1] / "latest-quick.json").read_text(encoding="utf-8"))


def test_results_written_twice_and_the_comparison_printed(quick):
    proc, out, workdir = quick
    dated = [p for p in out.glob("*-quick.json") if p.name != "latest-quick.json"]
    assert len(dated) == 1
    assert dated[0].read_text(encoding="utf-8") == (out / "latest-quick.json").read_text(encoding="utf-8")
    assert not (out / "latest.json").exists()  # a quick run never replaces the full results
    assert "before" in proc.stdout and "1.00 s" in proc.stdout  # the previous 9k figure, beside the new one
    for t in run.TARGETS:
        assert t.label in proc.stdout
    assert (workdir / "graph" / "data" / "dmf.duckdb").is_file()  # --workdir keeps the project folders


def test_document_header_and_no_errors(quick):
    doc = _doc(quick)
    assert doc["schema_version"] == run.SCHEMA_VERSION and doc["mode"] == "quick"
    assert doc["errors"] == []
    assert doc["machine"]["cpu_count"] >= 1 and len(doc["machine"]["load_average_end"]) == 3
    assert doc["previous"]["measured"]["diff.9k.wall_s"] == 1.0


@pytest.mark.parametrize("size", ["9k", "100k"])
def test_diff_figures_are_whole_process(quick, size):
    m = _doc(quick)["diff"][size]
    assert m["command"].startswith("dmf diff ") and m["exit_codes"] == [0, 0, 0] and m["repeats"] == 3
    assert m["wall_s"] == sorted(m["all_wall_s"])[1] > 0  # the median of three
    # a whole Python process with polars loaded, but nowhere near the machine's memory
    assert 50 < m["peak_rss_mb"] < 16_000
    assert "1m" not in _doc(quick)["diff"]  # 1 M rows: full runs only


def test_graph_and_daily_step(quick):
    doc = _doc(quick)
    g = doc["graph"]
    assert g["baseline_day"]["exit_code"] == 0 and g["baseline_day"]["status"] == "baseline"
    one = g["one_day"]
    assert one["exit_codes"] == [0] and one["status"] == "accepted" and 8_000 <= one["population"] <= 12_000
    assert set(g["step_seconds"]) >= ASSET_STEPS and g["workbook_s"] > 0 and g["workbook_bytes"] > 10_000
    step = doc["daily_step"]
    assert step["status"] == "accepted" and step["base_day"] == run.GRAPH_DAY.isoformat()
    assert step["total_s"] == pytest.approx(step["normalize_s"] + step["diff_s"] + step["commit_s"], abs=0.003)
    assert 8_000 <= step["rows"] <= 12_000 and step["repeats"] == 3


def test_targets_list_every_goal_and_mark_quick_skips(quick):
    targets = {t["metric"]: t for t in _doc(quick)["targets"]}
    assert set(targets) == {t.metric for t in run.TARGETS}
    skipped = {"diff.1m.wall_s", "diff.1m.peak_rss_mb", "backfill_30.wall_s"}
    for metric, t in targets.items():
        if metric in skipped:
            assert t["measured"] is None and t["met"] is None, t
        else:
            assert t["measured"] > 0 and t["met"] is (t["measured"] <= t["limit"]), t


def test_a_process_is_measured_on_its_own(tmp_path):
    # wall time and the child's own peak RSS; a failing command keeps its exit code and error tail
    ok = run.run_process(["diff", "--help"])
    assert ok["exit_code"] == 0 and ok["wall_s"] > 0 and ok["peak_rss_mb"] > 5
    bad = run.run_process(["diff", str(tmp_path / "missing.json"), str(tmp_path / "missing.json")])
    assert bad["exit_code"] == 2
