"""`dmf bench` — measure normalize + diff, the daily graph, backfills, history size and the workbook."""

from __future__ import annotations

import argparse
from pathlib import Path

from dmf_assets.cli import UserError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "bench",
        help="성능 측정: 정규화+비교(10k/100k/1M행), 하루 전체 그래프, 30일 백필, 365일 DB 크기, 엑셀 작성 시간",
        description=(
            "Benchmark on this machine; results as JSON in bench/results/ (see bench/README.md). "
            "Full run ≈ 5–10 min on 2 cores (more on a busy machine); --quick ≈ 20–30 s."
        ),
    )
    p.add_argument("--quick", action="store_true",
                   help="10k/100k행 + 그래프 하루만 (테스트용, 약 30초). Writes latest-quick.json")
    p.add_argument("--output", type=Path, default=None, metavar="DIR",
                   help="결과 JSON 폴더 (기본: bench/results/)")
    p.add_argument("--sizes", default=None, metavar="N,N,…",
                   help="정규화+비교 행 수 (기본: 10000,100000,1000000; --quick은 10000,100000)")
    p.add_argument("--workdir", type=Path, default=None, metavar="DIR",
                   help="임시 작업 폴더 (기본: 새 임시 폴더, 끝나면 삭제)")
    p.add_argument("--keep-workdir", action="store_true", help="작업 폴더(로그·DB)를 지우지 않음")
    p.set_defaults(handler=_bench)


def _parse_sizes(text: str | None) -> tuple[int, ...] | None:
    if not text:
        return None
    try:
        sizes = tuple(int(x.replace("_", "").strip()) for x in text.split(",") if x.strip())
    except ValueError:
        raise UserError(f"--sizes는 쉼표로 구분한 정수입니다 (예: 10000,100000): {text!r}") from None
    if not sizes or any(n < 1_000 or n > 5_000_000 for n in sizes):
        raise UserError(f"--sizes: 각 값은 1,000 ~ 5,000,000 사이여야 합니다: {text!r}")
    return sizes


def _bench(args) -> int:
    from dmf_assets.bench import run

    sizes = _parse_sizes(args.sizes)
    output = args.output or run.DEFAULT_OUTPUT
    if args.workdir is not None and args.workdir.exists() and any(args.workdir.iterdir()):
        raise UserError(f"--workdir {args.workdir} is not empty; give a new or empty folder")
    print(f"DMF Watch benchmark ({'quick' if args.quick else 'full'}) — every part in a fresh process")
    doc, paths = run.run_benchmark(quick=args.quick, output_dir=output, sizes=sizes, workdir=args.workdir,
                                   keep_workdir=args.keep_workdir or args.workdir is not None)
    print()
    print(f"{'target':<52} {'goal':>10} {'measured':>12}  result")
    for t in doc["targets"]:
        measured = "-" if t["measured"] is None else f"{t['measured']:,.2f} {t['unit']}"
        verdict = "skipped" if t["met"] is None else ("met" if t["met"] else "MISSED")
        print(f"{t['label']:<52} {t['target']:>10} {measured:>12}  {verdict}")
    print(f"\n{doc['total_seconds']:.0f} s; results: " + ", ".join(str(p) for p in paths))
    if doc["errors"]:
        print(f"{len(doc['errors'])} part(s) failed — see 'errors' in the JSON")
        return 1
    return 0
