"""Fault-injection acceptance matrix: every fault kind the emulator offers, through the real Dagster graph.

For each kind in `FAULT_KINDS`: good day (2026-10-06) → faulty day (2026-10-07) → good day (2026-10-08),
run day by day with `launch.run_days` (follow-up runs included, as under the sensor). Asserted per kind:
- the faulty day reaches its expected outcome: recovered transparently (retried / de-duplicated and
  accepted with the true events — and the fault demonstrably happened), or rejected by the expected
  gate with its observed value and threshold recorded in `gate_results`;
- a rejected day moves nothing: no snapshot, no events, and the recovery day's base is the first day;
- every accepted day's stored events equal the emulator's ground truth for its whole span;
- zero false WITHDRAWN across the matrix;
- the doc rendered from these results (in memory) lists every kind with a passing outcome.

The matrix, its expected outcomes and the doc renderer live in `fault_matrix_cases` (shared with the
command that writes `docs/fault_matrix.md`: `python -m dmf_assets_tests.fault_matrix_doc`). This test
never writes into the repository.
"""

from __future__ import annotations

import json
import time

import pytest

from dmf_assets.emulator import faults as F
from dmf_assets_tests.fault_matrix_cases import (
    COMMAND,
    DOC,
    EXPECTED,
    GATE_NAMES,
    problems_of,
    render_doc,
    run_matrix,
    timing_line,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def matrix(tmp_path_factory) -> dict[str, dict]:
    base = tmp_path_factory.mktemp("fault_matrix")
    started = time.monotonic()
    # in this worker: the suite's other workers keep both cores busy meanwhile, and two spawned processes
    # would each pay the start-up and the baseline day again (the doc command uses two)
    results = run_matrix(base, workers=1)
    print("\n" + timing_line(results, time.monotonic() - started))
    return results


def test_every_fault_kind_has_an_expected_outcome():
    assert set(EXPECTED) == set(F.FAULT_KINDS)


@pytest.mark.parametrize("kind", list(F.FAULT_KINDS))
def test_fault_kind_reaches_its_expected_outcome(matrix, kind):
    res = matrix[kind]
    assert problems_of(kind, res) == [], json.dumps(res, ensure_ascii=False, indent=1, default=str)[:4000]


def test_zero_false_withdrawn_across_the_matrix(matrix):
    scored = [s for r in matrix.values() for s in r.get("scores", {}).values()]
    assert len(scored) >= len(F.FAULT_KINDS)  # every kind has at least its recovery day scored
    assert sum(s["fp"].get("WITHDRAWN", 0) for s in scored) == 0
    # and the days really had events to get wrong
    assert sum(sum(s["tp"].values()) for s in scored) >= 2 * len(F.FAULT_KINDS)


def test_matrix_doc_lists_every_kind_with_a_passing_outcome(matrix):
    before = DOC.stat().st_mtime_ns if DOC.exists() else None
    text = render_doc(matrix)
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    listed = {line.split("`")[1].split(":")[0]: line for line in rows}
    assert set(listed) == set(F.FAULT_KINDS) and len(rows) == len(F.FAULT_KINDS)
    failing = {k: line for k, line in listed.items() if not line.rstrip(" |").endswith("✅")}
    assert not failing, failing
    for kind, line in listed.items():
        exp = EXPECTED[kind]
        assert ("반영 accepted" in line) == exp.accepted, line
        if not exp.accepted:
            assert f"| {exp.gate} {GATE_NAMES[exp.gate]} |" in line, line
    assert "false WITHDRAWN across the matrix: **0**" in text
    assert f"`{COMMAND}`" in text.splitlines()[3]  # the header names the command that writes the doc
    # rendering is all the test does: the committed doc is written by the command, never by a test run
    assert (DOC.stat().st_mtime_ns if DOC.exists() else None) == before
