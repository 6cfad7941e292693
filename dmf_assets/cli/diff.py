"""`dmf diff OLD NEW` — compare two registry dumps without Dagster or a database.

The judging and diffing is `orchestration.compare`: the same acceptance gates as the pipeline
(docs/DOMAIN.md §6) judge the NEW dump against the OLD one before anything is listed. A dump that fails
one is refused (exit 3) instead of listing a mass withdrawal; `--force` lists the events anyway
under a warning banner. A NEW without a totalCount cannot prove it is complete: the output says so
first, and more withdrawals than the `[diff]` bound are refused (exit 3) unless `--force`. This
module parses the arguments and prints.

Only argparse work happens at import time: `dmf` imports every command module to build its parser,
so polars, DuckDB, pydantic and the pipeline are imported inside the handler, and never Dagster.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:  # annotations only: `dmf diff` imports what it runs when it runs (no Dagster, fast start)
    from dmf_assets.domain.diff import DiffResult
    from dmf_assets.domain.model import Event
    from dmf_assets.orchestration.compare import UnprovenCompleteness
    from dmf_assets.settings import Diff as DiffSettings

EXIT_OK = 0
EXIT_UNREADABLE = 2  # an input that is not a usable dump, or a configuration error (cli.main)
EXIT_REJECTED = 3  # a gate refused the NEW dump (nothing listed unless --force)

FORCE_BANNER = "⚠ 게이트 실패를 무시하고 표시 (--force)"


_EPILOG = """\
종료 코드 / exit codes:
  0  비교 완료 (게이트 통과, 또는 --force로 표시) / compared
  2  읽을 수 없는 입력 또는 설정 오류 (빈 파일, [], {"items": []}, 실패한 수집 폴더, API 오류 응답 …)
     / an input that is not a usable registry dump, or a configuration error
  3  게이트 거부: 새 덤프가 완전성·감소율·결측·중복·변동률 게이트 중 하나를 통과하지 못함, 또는
     totalCount가 없는 새 덤프의 목록에서 삭제가 한도([diff])를 넘음 — 이벤트를 표시하지 않음 (--force로 표시 가능)
     / rejected by an acceptance gate, or too many withdrawals in a NEW without totalCount; nothing is listed
게이트 기준값은 config의 [gates] (docs/DOMAIN.md §6), totalCount 없는 덤프의 삭제 한도는 [diff]를 따릅니다
/ thresholds come from the [gates] and [diff] settings."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "diff",
        help="두 등록 현황 덤프를 비교해 신규·변경·목록에서 삭제 이벤트를 출력 (items JSON, API 응답 쪽, 보관된 날짜 폴더)",
        description="두 등록 현황 덤프를 파이프라인과 같은 게이트로 검사한 뒤 비교합니다 / compare two registry "
        "dumps after the pipeline's acceptance gates.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("old", help="이전 덤프: items JSON 파일, API 응답(JSON/XML), 또는 data/raw/YYYY-MM-DD 폴더")
    p.add_argument("new", help="새 덤프 (같은 형식들)")
    p.add_argument("--format", choices=("table", "jsonl"), default="table")
    p.add_argument("--include-cosmetic", action="store_true", help="표기만 바뀐 변경도 표에 표시 (jsonl은 항상 포함)")
    p.add_argument("--no-watchlist", action="store_true", help="config의 관심 목록을 적용하지 않음")
    p.add_argument(
        "--force",
        action="store_true",
        help="게이트에 실패하거나 totalCount 없는 덤프의 목록에서 삭제가 한도를 넘어도 이벤트를 표시 (경고 표시와 함께) "
        "/ list the events even if a gate or the unproven-completeness bound refuses them",
    )
    p.set_defaults(handler=_diff)


# --- printing --------------------------------------------------------------------------------------


def _refusal(failed: list) -> str:
    from dmf_assets.domain.gates import GATE_BY_NUMBER  # lazily: polars (see the module's docstring)

    lines = [
        f"게이트 {g.number} {g.label_ko}({g.name}) 실패 [{who} 덤프] — 관측 {g.observed} / 기준 {g.threshold}: {g.detail}"
        for who, g in failed
    ]
    numbers = {g.number for _, g in failed}
    keys = (GATE_BY_NUMBER[n].setting_key for n in sorted(numbers))  # where each threshold is set (None: exact)
    settings_hint = ", ".join(k for k in keys if k)
    hint = (
        "불완전하거나 의심스러운 목록이므로 이벤트(특히 목록에서 삭제)를 표시하지 않습니다. 실제 대규모 변경이면 "
        + (f"config의 {settings_hint}를 조정하거나 " if settings_hint else "")
        + "--force로 표시하세요 / rejected by an acceptance gate: nothing listed (use --force to list anyway)"
    )
    return "게이트 거부 / rejected by a gate:\n  " + "\n  ".join(lines) + "\n  " + hint


def _unproven_note(new: str, unproven: UnprovenCompleteness) -> list[str]:
    """What the output says first when NEW cannot prove it is complete."""
    lines = [
        f"⚠ 완전성 미확인: 새 덤프({new})에 totalCount가 없어 목록 전체인지 증명할 수 없습니다 — 목록에서 "
        f"삭제 {unproven.withdrawn:,}건은 수집에서 빠진 행일 수 있습니다 / completeness unproven: NEW carries no "
        "totalCount, so a withdrawal may be a missing row"
    ]
    if unproven.exceeded:
        lines.append(
            f"  목록에서 삭제 {unproven.withdrawn:,}건이 한도 {unproven.bound:,}건을 넘지만 --force로 표시합니다 / "
            f"{unproven.withdrawn:,} withdrawals exceed the bound of {unproven.bound:,}; listed because of --force"
        )
    return lines


def _unproven_refusal(new: str, unproven: UnprovenCompleteness, old_rows: int, limits: DiffSettings) -> str:
    return (
        f"완전성 미확인: 새 덤프({new})에 totalCount가 없는데 목록에서 삭제가 {unproven.withdrawn:,}건으로 한도 "
        f"{unproven.bound:,}건(이전 {old_rows:,}건의 {limits.unproven_max_withdrawn_ratio * 100:g} % 또는 "
        f"{limits.unproven_max_withdrawn_rows:,}건 중 큰 값, config [diff])을 넘어 아무것도 표시하지 않습니다. totalCount가 "
        "있는 덤프(API 응답 쪽, data/raw/YYYY-MM-DD 폴더)로 비교하거나 --force로 표시하세요 / completeness unproven "
        f"(NEW has no totalCount): {unproven.withdrawn:,} withdrawals exceed the bound of {unproven.bound:,}; nothing "
        "listed (use --force to list anyway)"
    )


# --- the command ---------------------------------------------------------------------------------


def _diff(args: argparse.Namespace) -> int:
    from dmf_assets.cli.arguments import said_in_one_line
    from dmf_assets.settings import load_settings

    settings = load_settings()  # a bad config is one clean message before any big file is read
    from dmf_assets.domain.diff import Watchlist
    from dmf_assets.orchestration.compare import compare_dumps
    from dmf_assets.source.dumps import DumpError

    watchlist = None if args.no_watchlist else Watchlist.of(settings.watchlist)
    with said_in_one_line(DumpError):
        compared = compare_dumps(args.old, args.new, settings.gates, watchlist, settings.diff, force=args.force)
    failed, result, unproven = compared.failed, compared.result, compared.unproven
    if result is None and failed:
        print(f"dmf: {_refusal(failed)}", file=sys.stderr)
        return EXIT_REJECTED
    if result is None:
        assert unproven is not None  # no result and no failed gate: unproven completeness refused it
        print(f"dmf: {_unproven_refusal(args.new, unproven, compared.old_rows, settings.diff)}", file=sys.stderr)
        return EXIT_REJECTED
    events = result.to_events()
    out = sys.stdout
    notes = out if args.format == "table" else sys.stderr  # warnings first, where the user looks; jsonl stays data
    if unproven is not None:
        print("\n".join(_unproven_note(args.new, unproven)), file=notes)
    if failed:  # --force: say so first, where the user looks, and why
        print(FORCE_BANNER, file=notes)
        for who, g in failed:
            print(
                f"  게이트 {g.number} {g.label_ko}({g.name}) 실패 [{who} 덤프]: {g.observed} / 기준 {g.threshold}",
                file=notes,
            )
    if args.format == "jsonl":
        for e in events:
            row = _event_json(e)
            if failed or (unproven is not None and unproven.exceeded):
                row["forced"] = True  # listed although the dump was refused
            if unproven is not None:
                row["completeness_unproven"] = True
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
        return EXIT_OK
    _print_table(result, events, compared.old_rows, compared.new_rows, args.include_cosmetic, out)
    return EXIT_OK


def _print_table(
    result: DiffResult, events: list[Event], old_rows: int, new_rows: int, include_cosmetic: bool, out: TextIO
) -> None:
    from dmf_assets.domain.model import (
        COUNT_LABEL_KO,
        SEVERITY_LABEL_KO,
        possible_renumbering_text,
        substantive_changes,
    )
    from dmf_assets.report.sentences import change_lines

    c = result.counts
    counts = {**c, "CHANGED": substantive_changes(c["CHANGED"], c["NUMBER_ASSIGNED"], c["NUMBER_CHANGED"])}
    kinds = ("NEW", "CHANGED", "WITHDRAWN", "NUMBER_ASSIGNED", "NUMBER_CHANGED", "REAPPEARED", "COSMETIC")
    figures = " · ".join(f"{COUNT_LABEL_KO[k]} {counts[k]:,}" for k in kinds)
    print(f"이전 {old_rows:,}건 → 새 {new_rows:,}건 | {figures} (별도)", file=out)
    shown = [e for e in events if include_cosmetic or not e.is_cosmetic]
    if not shown:
        print("변경 없음 (no changes)", file=out)
    for e in shown:
        flags = [
            label
            for flag, label in (
                (e.number_assigned, "번호부여"),
                (e.is_reappearance, "재등장"),
                (e.is_transfer, "양도양수"),
                (e.is_rename, "상호변경"),
                (e.watchlist_hit, "관심목록"),
            )
            if flag
        ]
        key = e.dmf_key if not e.base_dmf_key or e.base_dmf_key == e.dmf_key else f"{e.base_dmf_key} → {e.dmf_key}"
        what = e.label_ko if e.number_changed else f"{e.label_ko} {key}"
        print(
            f"\n[{SEVERITY_LABEL_KO[e.severity.value]}] {what}" + (f" ({', '.join(flags)})" if flags else ""),
            file=out,
        )
        if e.renumber_candidates:
            print(f"    {possible_renumbering_text(e.permit_no, e.renumber_candidates)}", file=out)
        for line in change_lines(e.changes, cosmetic=True):  # the wording of `dmf history` and the workbook
            print(f"    {line}", file=out)


def _event_json(e: Event) -> dict:
    return {
        "event_type": e.event_type.value,
        "severity": e.severity.value,
        "dmf_key": e.dmf_key,
        "base_dmf_key": e.base_dmf_key,
        "permit_no": e.permit_no,
        "is_cosmetic": e.is_cosmetic,
        "number_assigned": e.number_assigned,
        "number_changed": e.number_changed,
        "renumber_candidates": list(e.renumber_candidates),
        "is_reappearance": e.is_reappearance,
        "is_transfer": e.is_transfer,
        "is_rename": e.is_rename,
        "watchlist_hit": e.watchlist_hit,
        "watch_reasons": list(e.watch_reasons),
        "changed_fields": list(e.changed_fields),
        "cosmetic_fields": list(e.cosmetic_fields),
        "changes": [
            {
                "field": c.field,
                "before": c.before,
                "after": c.after,
                "is_cosmetic": c.is_cosmetic,
                "severity": c.severity.value,
            }
            for c in e.changes
        ],
    }
