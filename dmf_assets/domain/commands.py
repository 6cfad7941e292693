"""`dmf diff OLD NEW` — compare two registry dumps without Dagster or a database."""

from __future__ import annotations

import argparse
import json
import sys

from dmf_assets.cli import UserError
from dmf_assets.domain.model import EVENT_LABEL_KO, FIELD_LABEL_KO, SEVERITY_LABEL_KO


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "diff",
        help="두 등록 현황 덤프를 비교해 신규·변경·취하 이벤트를 출력 (items JSON, API 응답 쪽, 보관된 날짜 폴더)",
    )
    p.add_argument("old", help="이전 덤프: items JSON 파일, API 응답(JSON/XML), 또는 data/raw/YYYY-MM-DD 폴더")
    p.add_argument("new", help="새 덤프 (같은 형식들)")
    p.add_argument("--format", choices=("table", "jsonl"), default="table")
    p.add_argument("--include-cosmetic", action="store_true", help="표기만 바뀐 변경도 표에 표시 (jsonl은 항상 포함)")
    p.add_argument("--no-watchlist", action="store_true", help="config의 관심 목록을 적용하지 않음")
    p.set_defaults(handler=_diff)


def _diff(args) -> int:
    from dmf_assets.domain.diff import diff_snapshots
    from dmf_assets.domain.snapshot import build_snapshot
    from dmf_assets.orchestration.pipeline import watchlist_of
    from dmf_assets.settings import load_settings
    from dmf_assets.source.dumps import DumpError, load_items

    try:
        old_items, new_items = load_items(args.old), load_items(args.new)
    except DumpError as exc:
        raise UserError(str(exc)) from None
    watchlist = None if args.no_watchlist else watchlist_of(load_settings())
    result = diff_snapshots(build_snapshot(old_items), build_snapshot(new_items), watchlist=watchlist)
    events = result.to_events()
    out = sys.stdout
    if args.format == "jsonl":
        for e in events:
            out.write(json.dumps(_event_json(e), ensure_ascii=False) + "\n")
        return 0
    c = result.counts
    print(f"이전 {len(old_items):,}건 → 새 {len(new_items):,}건 | 신규 {c['NEW']:,} · 변경 {c['CHANGED']:,} · "
          f"취하 {c['WITHDRAWN']:,} · 표기 변경 {c['COSMETIC']:,} (별도) · 재등장 {c['REAPPEARED']:,} · 번호 부여 "
          f"{c['NUMBER_ASSIGNED']:,}", file=out)
    shown = [e for e in events if args.include_cosmetic or not e.is_cosmetic]
    if not shown:
        print("변경 없음 (no changes)", file=out)
    for e in shown:
        flags = [label for flag, label in ((e.number_assigned, "번호부여"), (e.is_reappearance, "재등장"),
                                           (e.is_transfer, "양도양수"), (e.is_rename, "상호변경"),
                                           (e.watchlist_hit, "관심목록")) if flag]
        key = e.dmf_key if not e.base_dmf_key or e.base_dmf_key == e.dmf_key else f"{e.base_dmf_key} → {e.dmf_key}"
        print(f"\n[{SEVERITY_LABEL_KO[e.severity.value]}] {EVENT_LABEL_KO[e.event_type.value]} {key}"
              + (f" ({', '.join(flags)})" if flags else ""), file=out)
        for ch in e.changes:
            mark = " (표기)" if ch.is_cosmetic else ""
            print(f"    {FIELD_LABEL_KO[ch.field]}{mark}: {ch.before!s} → {ch.after!s}", file=out)
    return 0


def _event_json(e) -> dict:
    return {
        "event_type": e.event_type.value,
        "severity": e.severity.value,
        "dmf_key": e.dmf_key,
        "base_dmf_key": e.base_dmf_key,
        "permit_no": e.permit_no,
        "is_cosmetic": e.is_cosmetic,
        "number_assigned": e.number_assigned,
        "is_reappearance": e.is_reappearance,
        "is_transfer": e.is_transfer,
        "is_rename": e.is_rename,
        "watchlist_hit": e.watchlist_hit,
        "watch_reasons": list(e.watch_reasons),
        "changed_fields": list(e.changed_fields),
        "cosmetic_fields": list(e.cosmetic_fields),
        "changes": [
            {"field": c.field, "before": c.before, "after": c.after, "is_cosmetic": c.is_cosmetic, "severity": c.severity.value}
            for c in e.changes
        ],
    }
