"""`dmf bench --quick` end to end: every metric present, with numbers that make sense.

The speed targets themselves are not asserted (they depend on the machine and its load); the JSON
must be complete and internally consistent, and the diff must find the churn's ground truth.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from dmf_assets.bench import run
from dmf_assets.cli import main

QUICK_SIZES = ("10000", "100000")
ASSET_STEPS = {"raw_pages", "normalized_records", "integrity_verdict", "snapshot_diff", "events", "xlsx_report"}


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bench")
    out = tmp / "results"
    cmd = [sys.executable, "-c", "import sys; from dmf_assets.cli import main; sys.exit(main())",
           "bench", "--quick", "--output", str(out), "--workdir", str(tmp / "work")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc, out, tmp / "work"


def _doc(quick) -> dict:
    return json.loads((quick[1] / "latest-quick.json").read_text(encoding="utf-8"))


def test_results_are_written_twice_and_the_summary_printed(quick):
    proc, out, workdir = quick
    dated = [p for p in out.glob("*-quick.json") if p.name != "latest-quick.json"]
    assert len(dated) == 1
    assert dated[0].read_text(encoding="utf-8") == (out / "latest-quick.json").read_text(encoding="utf-8")
    assert not (out / "latest.json").exists()  # a quick run never replaces the full results
    for label in ("normalize + diff, 100 k rows", "one day through the whole graph", "workbook write"):
        assert label in proc.stdout
    # --workdir keeps the parts' logs and databases for inspection
    assert (workdir / "logs" / "graph_day.log").is_file()
    assert (workdir / "graph_day" / "data" / "dmf.duckdb").is_file()


def test_document_header_and_no_errors(quick):
    doc = _doc(quick)
    assert doc["schema_version"] == run.SCHEMA_VERSION and doc["mode"] == "quick"
    assert doc["errors"] == []
    assert doc["machine"]["cpu_count"] >= 1 and len(doc["machine"]["load_average_end"]) == 3
    assert 0 < doc["total_seconds"] < 600


@pytest.mark.parametrize("size", QUICK_SIZES)
def test_normalize_diff_numbers_are_consistent(quick, size):
    m = _doc(quick)["normalize_diff"][size]
    n = int(size)
    assert m["rows"] == n and m["repeats"] == 1
    assert abs(m["rows_next_day"] - n) <= n * 0.01  # one day of churn moves ≈0.1 % of rows
    parts = m["normalize_base_s"] + m["normalize_next_s"] + m["diff_s"]
    assert m["total_s"] > 0 and abs(m["total_s"] - parts) <= 0.005
    assert m["normalize_s"] == pytest.approx(m["normalize_base_s"] + m["normalize_next_s"], abs=0.002)
    assert m["cpu_s"] > 0 and m["warmup_s"] > 0
    assert m["rows_per_s"] == pytest.approx(2 * n / m["total_s"], rel=0.02)
    # memory: the section's peak is above what the process held before it (kernel RSS counters lag by
    # a few MB across threads), not above the whole process's peak, and within the machine
    assert 50 < m["rss_before_section_mb"] <= m["peak_rss_section_mb"] + 16
    assert m["peak_rss_section_mb"] <= m["peak_rss_mb"] < 16_000
    # the churn really happened and the diff found exactly it
    assert 0.5 * n / 1000 <= m["truth_changes"] <= 1.5 * n / 1000
    ev = m["events"]
    assert ev["substantive"] == ev["NEW"] + ev["CHANGED"] + ev["WITHDRAWN"] > 0
    sc = m["score"]
    for kind in ("NEW", "CHANGED", "WITHDRAWN", "overall"):
        assert 0.0 <= sc[kind]["precision"] <= 1.0 and 0.0 <= sc[kind]["recall"] <= 1.0
    assert sc["overall"]["true_positive"] + sc["overall"]["false_negative"] == m["truth_changes"]
    # every mismatch must be explained by rows the data cannot tell apart
    mismatches = sc["overall"]["false_positive"] + sc["overall"]["false_negative"]
    assert mismatches <= 2 * m["indistinguishable_truth_changes"], (sc["missed_samples"], sc["spurious_samples"])


def test_graph_day_numbers(quick):
    g = _doc(quick)["graph"]
    base, one, gap = g["baseline_day"], g["one_day"], g["gap_day"]
    assert base["status"] == "baseline" and base["day"] == run.GRAPH_BASE_DAY.isoformat()
    assert one["status"] == "accepted" and one["base_day"] == base["day"] and one["day"] == run.GRAPH_DAY.isoformat()
    assert gap["status"] == "accepted" and gap["base_day"] == one["day"]
    for day in (base, one, gap):
        assert day["run_success"] and day["failure"] is None
        assert 8_000 <= day["population"] <= 12_000 and day["population"] == day["total_count"]
        assert set(day["step_seconds"]) >= ASSET_STEPS
        assert 0 < sum(day["step_seconds"].values()) <= day["seconds"]
    assert g["seconds"] == one["seconds"] > 0
    # a 60-day gap collects weeks of registry activity
    assert gap["new_count"] + gap["changed_count"] + gap["withdrawn_count"] >= 30


def test_workbook_numbers(quick):
    g = _doc(quick)["graph"]
    wb = g["workbook"]
    assert wb["day"] == g["gap_day"]["day"] and wb["comparison_base"] == g["one_day"]["day"]
    assert wb["registry_rows"] == g["gap_day"]["population"]
    gap = g["gap_day"]
    assert wb["events"] == gap["new_count"] + gap["changed_count"] + gap["withdrawn_count"] + gap["cosmetic_count"]
    assert wb["events"] >= 50 and wb["headline_events"] < wb["events"]
    assert 0 < wb["write_s"] <= wb["write_median_s"] and wb["report_build_s"] > 0
    assert wb["bytes"] > 10_000
    assert wb["sheet_rows"] and all(isinstance(v, int) and v >= 0 for v in wb["sheet_rows"].values())


def test_targets_list_every_goal_and_mark_quick_skips(quick):
    targets = {t["metric"]: t for t in _doc(quick)["targets"]}
    assert set(targets) == {t.metric for t in run.TARGETS}
    measured = {"normalize_diff.100000.total_s", "graph.one_day.seconds", "graph.workbook.write_s"}
    for metric, t in targets.items():
        if metric in measured:
            assert t["measured"] > 0 and t["met"] is (t["measured"] <= t["limit"]), t
        else:  # 1 M rows, backfills and the 365-day database are full-run only
            assert t["measured"] is None and t["met"] is None, t


def test_bad_sizes_are_a_clean_error(capsys):
    assert main(["bench", "--sizes", "ten"]) == 2
    assert main(["bench", "--sizes", "50"]) == 2
    err = capsys.readouterr().err
    assert "--sizes" in err and "Traceback" not in err


def test_a_failing_part_reports_its_cause(tmp_path):
    # parts run in their own process; a crash there comes back as PartFailed with the log's last lines
    with pytest.raises(run.PartFailed, match="n_rows must be a non-negative integer"):
        run.run_part("domain", {"rows": -5, "repeats": 1}, logs_dir=tmp_path, timeout_s=120)
    assert (tmp_path / "domain_1_-5.log").is_file()
