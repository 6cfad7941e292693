"""`dmf fetch` — fetch (or replay) one day's registry into the raw archive and print a summary."""

from __future__ import annotations

import argparse
import logging
import os
from typing import TYPE_CHECKING

from dmf_assets.cli.arguments import FAULT_NEEDS_THE_EMULATOR, day, out_folder, said_in_one_line, whole

if TYPE_CHECKING:  # imported by the handler itself: `dmf --help` stays instant
    from dmf_assets.source.fetch import FetchResult

STATUS_KO = {"complete": "완료", "incomplete": "불완전", "failed": "실패"}


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "fetch",
        help="하루치 DMF 목록 수집 (원본 보관) / fetch one day into the raw archive",
        description="Fetch the whole registry for one day (or replay it from data/raw/). "
        "Exit code 0 if the fetch is complete, 1 if not. The service key is read from MFDS_SERVICE_KEY.",
    )
    p.add_argument("--date", type=day, help="YYYY-MM-DD, 2025-01-01 … today (default: today in Asia/Seoul)")
    p.add_argument("--base-url", help="emulator://local (default from config) or the MFDS service base URL")
    p.add_argument("--no-resume", action="store_true", help="fetch again even if the archive is complete")
    p.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="YYYY-MM-DD=KIND",
        help="emulator fault for a date (repeatable; see `dmf emulator faults`)",
    )
    p.add_argument(
        "--num-of-rows",
        type=whole(1, 1000, "페이지당 행 수", "number of rows"),
        help="rows per page, 1–1000 (default from config)",
    )
    p.add_argument("--raw-dir", type=out_folder, help="archive root (default from config)")
    p.add_argument("-v", "--verbose", action="store_true", help="log every page")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from dmf_assets.clock import outside_run_days, today_kst
    from dmf_assets.emulator.client import EmulatorMfdsClient, mfds_client_from_settings
    from dmf_assets.emulator.faults import FaultPlan
    from dmf_assets.errors import UserError
    from dmf_assets.settings import load_settings
    from dmf_assets.source.endpoint import resolve_endpoint
    from dmf_assets.source.errors import SourceError
    from dmf_assets.source.fetch import fetch_day

    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(message)s")
    day = args.date or today_kst()
    if why := outside_run_days(day):  # the same days `dmf run` takes: no archive of a day no run can be for
        raise UserError(why)
    s = load_settings()
    given = {"base_url": args.base_url, "num_of_rows": args.num_of_rows, "raw_dir": args.raw_dir and str(args.raw_dir)}
    overrides: dict = {"service_key": os.environ.get("MFDS_SERVICE_KEY", ""), **{k: v for k, v in given.items() if v}}
    with said_in_one_line(SourceError, ValueError):
        config = mfds_client_from_settings(s, **overrides)
        endpoint = resolve_endpoint(config.base_url)
        if args.fault:
            if endpoint.kind != "emulator":
                raise UserError(FAULT_NEEDS_THE_EMULATOR)
            assert isinstance(config, EmulatorMfdsClient)  # client_class: the emulator twin for emulator://
            plan = FaultPlan.parse(config.emulator_faults).merged(FaultPlan.from_cli(args.fault))
            config = mfds_client_from_settings(s, **overrides, emulator_faults=plan.to_config())
        result = fetch_day(config, day, resume=not args.no_resume)
    _print_summary(result)
    return 0 if result.complete else 1


def _print_summary(r: FetchResult) -> None:
    from dmf_assets.source.identity import label as source_label

    print(f"DMF fetch {r.day} — {r.status} ({STATUS_KO.get(r.status, r.status)})")
    registry = f" ({source_label(r.source_id)})" if r.source_id else ""
    print(f"  source 출처: {r.source}{registry}   pages 페이지: {len(r.pages)}   numOfRows: {r.num_of_rows}")
    print(
        f"  rows 행: {r.rows_received} received, {r.rows_after_dedup} after de-dup "
        f"({r.duplicate_rows_dropped} repeated rows dropped)   totalCount: {r.total_count}"
        + (f" (per page: {sorted(set(r.total_counts))})" if len(set(r.total_counts)) > 1 else "")
    )
    print(f"  requests 요청: {r.requests}   retries 재시도: {r.retries}   time 시간: {r.elapsed_s:.1f} s")
    print(f"  transport 전송: {'OK' if r.transport_ok else 'FAILED 실패'}")
    for err in r.transport_errors[:10]:
        print(f"    - {err}")
    if r.stopped:
        print(f"  stopped 중단: {r.stopped}")
    for problem in r.problems[:10]:
        print(f"  problem 문제: {problem}")
    if r.unexpected_fields or r.missing_fields:
        print(f"  schema drift 스키마 변화: unexpected {r.unexpected_fields}, missing {r.missing_fields}")
    print(f"  archive 보관: {r.archive_dir}")
