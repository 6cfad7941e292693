"""Write `docs/fault_matrix.md`: run the fault-injection matrix and render its doc (maintainer tooling).

    python -m dmf_assets_tests.fault_matrix_doc [--out docs/fault_matrix.md] [--workers 2] [--check]

Runs exactly the matrix `dmf_assets_tests/pipeline/test_fault_matrix.py` asserts (`fault_matrix_cases`), in a
scratch folder, and replaces the doc atomically — only when its content changed (the numbers are
deterministic, so an unchanged matrix leaves no git churn). Exit 0 when every kind reached its expected
outcome, 1 otherwise (the doc is written either way: its ❌ rows say what went wrong). `--check` writes
nothing and exits 1 when the doc on disk differs from what this run renders.

The test suite never writes this file; run this command after changing a fault kind, a gate or the
recovery rules, and commit the doc.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from dmf_assets_tests import fault_matrix_cases as M


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m dmf_assets_tests.fault_matrix_doc", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--out", type=Path, default=M.DOC, help=f"the doc to write (default: {M.DOC})")
    parser.add_argument(
        "--workers", type=int, default=M.WORKERS, help="spawned worker processes (default: %(default)s)"
    )
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if the doc on disk is out of date")
    args = parser.parse_args(argv)

    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="dmf-fault-matrix-") as scratch:
        results = M.run_matrix(Path(scratch), workers=args.workers)
    print(M.timing_line(results, time.monotonic() - started))
    failing = {k: p for k in results if (p := M.problems_of(k, results[k]))}
    for kind, problems in failing.items():
        print(f"FAILED {kind}: " + "; ".join(p.splitlines()[-1][:300] for p in problems), file=sys.stderr)
    text = M.render_doc(results)
    if args.check:
        current = args.out.read_text(encoding="utf-8") if args.out.exists() else None
        if current != text:
            print(f"{args.out} is out of date — run: {M.COMMAND}", file=sys.stderr)
            return 1
        print(f"{args.out} is up to date")
    else:
        changed = M.write_doc_atomically(args.out, text)
        print(f"{args.out}: {'written' if changed else 'unchanged'}")
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
