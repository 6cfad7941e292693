"""`dmf bench` — what users wait for, whole-process: `dmf diff` (9.2 k / 100 k / 1 M rows), `dmf run`, `dmf backfill`,
the daily workbook, the daily step and the team's page's search (`dmf web`); each figure beside the previous result."""

from __future__ import annotations

import argparse
from types import ModuleType

from dmf_assets.cli.arguments import out_folder


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "bench",
        help="성능 측정 (프로세스 전체): dmf diff 9.2k/100k/1M행, dmf run 하루, 30일 백필, 엑셀, 일일 처리 단계, 조회 페이지 검색",
        description=(
            "Benchmark on this machine, every figure a real `dmf` process (wall time, peak RSS); results as JSON in "
            "bench/results/ (see bench/README.md), printed beside the previous result. Full run ≈ 3 min on 2 cores "
            "(more on a busy machine); --quick ≈ 35 s."
        ),
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="9.2k·100k행 diff + dmf run 하루 + 일일 처리 단계 + 조회 페이지 검색만 (1M행·백필 제외). Writes latest-quick.json",
    )
    p.add_argument(
        "--output", type=out_folder, default=None, metavar="DIR", help="결과 JSON 폴더 (기본: bench/results/)"
    )
    p.add_argument(
        "--workdir",
        type=out_folder,
        default=None,
        metavar="DIR",
        help="임시 작업 폴더 (기본: 새 임시 폴더, 끝나면 삭제)",
    )
    p.add_argument("--keep-workdir", action="store_true", help="작업 폴더(로그·DB·덤프)를 지우지 않음")
    p.set_defaults(handler=_bench)


def load_bench(name: str = "run") -> ModuleType:
    """`bench/NAME.py` of this project as a module: the benchmark (`run`) and its synthetic registries
    (`synthetic`) live beside the results, outside the product package."""
    import importlib.util
    import sys

    from dmf_assets.settings import PROJECT_ROOT

    module_name = f"dmf_bench_{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, PROJECT_ROOT / "bench" / f"{name}.py")
    if spec is None or spec.loader is None:
        raise ImportError(f"bench/{name}.py not found under {PROJECT_ROOT}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # before running it: its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _bench(args: argparse.Namespace) -> int:
    from dmf_assets.errors import UserError

    run = load_bench()

    output = args.output or run.DEFAULT_OUTPUT
    if args.workdir is not None and args.workdir.exists() and any(args.workdir.iterdir()):
        raise UserError(
            f"--workdir {args.workdir}가 비어 있지 않습니다 — 새 폴더나 빈 폴더를 주세요 "
            "(--workdir is not empty; give a new or empty folder)"
        )
    for name, folder in (("--output", output), ("--workdir", args.workdir)):
        if folder is None:
            continue
        try:  # before minutes of measuring, not after
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(
                f"{name} {folder}: 폴더를 만들 수 없습니다 (cannot create the folder: {exc.strerror or exc})"
            ) from None
    print(f"DMF Watch benchmark ({'quick' if args.quick else 'full'}) — every figure is a fresh `dmf` process")
    doc, paths = run.run_benchmark(
        quick=args.quick,
        output_dir=output,
        workdir=args.workdir,
        keep_workdir=args.keep_workdir or args.workdir is not None,
    )
    print()
    for line in doc["comparison"]:
        print(line)
    print(f"\n{doc['total_seconds']:.0f} s; results: " + ", ".join(str(p) for p in paths))
    if doc["errors"]:
        print(f"{len(doc['errors'])} part(s) failed — see 'errors' in the JSON")
        return 1
    return 0
