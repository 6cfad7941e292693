"""`dmf history`, `dmf asof`, `dmf report` — the analyst's questions, answered from the history DB."""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import re
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from dmf_assets.cli.arguments import day, file_in_existing_folder, out_file, said_in_one_line, seconds
from dmf_assets.domain.model import FIELD_LABEL_KO
from dmf_assets.errors import UserError
from dmf_assets.korean import josa

if TYPE_CHECKING:  # imported by the handlers themselves: `dmf --help` stays instant
    import duckdb

    from dmf_assets.analyst.queries import HistoryEvent, HistoryVersion, ListedSpan, RegistrationHistory
    from dmf_assets.settings import Settings


def _location(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--database", type=file_in_existing_folder, default=None, help="DB 파일 (기본: config의 paths.database)"
    )
    p.add_argument("--config", default=None, help="설정 파일 (기본: config/dmf.toml + dmf.local.toml 또는 $DMF_CONFIG)")
    p.add_argument("--lock-wait", type=seconds(3600), default=30.0, help="DB 잠금을 기다리는 최대 초 (기본 30)")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "history", help="한 등록의 전체 이력: 버전·목록 기간·이벤트·변경 전 → 후 (등록번호, SYN- 키, 또는 패턴)"
    )
    p.add_argument(
        "key",
        nargs="?",
        help="등록번호 (띄어쓰기·문장부호·대소문자·전각 무관: '20240418 54 C 374 06'), '…#2', 또는 SYN-… 키",
    )
    p.add_argument("--ingredient", help="성분명 패턴 (부분 일치, 띄어쓰기·문장부호 무시)")
    p.add_argument("--applicant", help=f"{FIELD_LABEL_KO['applicant']} 패턴 (법인격 표기 무시)")
    p.add_argument("--manufacturer", help="제조소명 패턴 (법인격 표기 무시)")
    p.add_argument(
        "--from", dest="start", type=day, metavar="D1", help="이 날짜(YYYY-MM-DD) 이후 관측된 이벤트만 (포함)"
    )
    p.add_argument("--to", dest="end", type=day, metavar="D2", help="이 날짜(YYYY-MM-DD)까지 관측된 이벤트만 (포함)")
    p.add_argument(
        "--changes-only", action="store_true", help="이벤트만: 버전·목록 기간 없이, 기간 안에 이벤트가 있는 등록만"
    )
    p.add_argument(
        "--format",
        choices=("table", "jsonl", "csv", "xlsx"),
        default="table",
        help="table (기본) | jsonl | csv (이벤트 1건 1행; --out 파일은 Excel용 UTF-8 BOM) | xlsx",
    )
    p.add_argument(
        "--out",
        type=out_file,
        help="csv·jsonl·xlsx 파일 경로 (csv·jsonl 기본: 표준 출력, xlsx 기본: reports/DMF_이력_<키>.xlsx)",
    )
    p.add_argument(
        "--include-cosmetic",
        action="store_true",
        help="표(table)에 표기 변경도 표시 (jsonl·csv·xlsx는 항상 포함, is_cosmetic으로 구분)",
    )
    _location(p)
    p.set_defaults(handler=_history)

    p = sub.add_parser("asof", help="그날 정상 수집(반영)된 그대로의 등록 현황 (그날이 실패면 그 전 마지막 반영일)")
    p.add_argument("date", type=day, help="YYYY-MM-DD")
    p.add_argument("--format", choices=("table", "jsonl", "csv", "xlsx"), default="table")
    p.add_argument(
        "--out",
        type=out_file,
        help="csv·jsonl·xlsx 파일 경로 (csv·jsonl 기본: 표준 출력, xlsx 기본: reports/DMF_등록현황_<날짜>.xlsx)",
    )
    _location(p)
    p.set_defaults(handler=_asof)

    p = sub.add_parser("report", help="기간 리포트 (주간·월간 검토): 기간의 모든 이벤트 + 등록별 순변경 + 검토 열")
    p.add_argument("--from", dest="start", type=day, required=True, help="시작일 YYYY-MM-DD (포함)")
    p.add_argument("--to", dest="end", type=day, required=True, help="종료일 YYYY-MM-DD (포함)")
    p.add_argument("--out", type=out_file, help="xlsx 파일 경로 (기본: reports/DMF_기간리포트_<시작>_<종료>.xlsx)")
    _location(p)
    p.set_defaults(handler=_report)


@contextlib.contextmanager
def _connect(args: argparse.Namespace) -> Iterator[tuple[Settings, duckdb.DuckDBPyConnection]]:
    from dmf_assets.settings import load_settings
    from dmf_assets.storage.db import DatabaseBusy, MigrationError, open_database

    settings = load_settings(args.config)
    path = Path(args.database).resolve() if args.database else settings.paths.resolve("database")
    if not path.is_file():
        raise UserError(f"이력 DB가 없습니다: {path} — 먼저 `dmf backfill` 또는 `dmf run`으로 수집하십시오")
    try:
        with open_database(path, lock_timeout_s=args.lock_wait, purpose=f"dmf {args.command}") as conn:
            yield settings, conn
    except DatabaseBusy as exc:
        raise UserError(
            f"이력 DB를 다른 작업이 사용 중입니다 ({exc}) — 잠시 후 다시 실행하거나 --lock-wait를 늘리십시오"
        ) from None
    except MigrationError as exc:
        raise UserError(str(exc)) from None


def _safe_name(text: str) -> str:
    return re.sub(r"[^\w\-()가-힣#]+", "_", text).strip("_")[:80] or "결과"


def _iso(value: object) -> object:
    """A date as ISO text (for JSON and CSV); any other value as it is."""
    return value.isoformat() if isinstance(value, date) else value


# --- dmf history ----------------------------------------------------------------------------------


def _history(args: argparse.Namespace) -> int:
    from dmf_assets.analyst import queries as q

    _out_fits_the_format(args)
    if not (args.key or args.ingredient or args.applicant or args.manufacturer):
        raise UserError("등록번호(또는 SYN- 키)나 --ingredient / --applicant / --manufacturer 중 하나가 필요합니다")
    if args.key is not None and not args.key.strip():
        raise UserError("빈 등록번호입니다")
    if args.start and args.end and args.end < args.start:
        raise UserError(f"--to({args.end})가 --from({args.start})보다 앞섭니다")
    what = args.key or " / ".join(p for p in (args.ingredient, args.applicant, args.manufacturer) if p)
    with _connect(args) as (settings, conn):
        ids = q.find_records(
            conn, args.key, ingredient=args.ingredient, applicant=args.applicant, manufacturer=args.manufacturer
        )
        if not ids:
            typed = f" (정규화: {q.normalize_key(args.key)})" if args.key else ""
            raise UserError(f"이력에 해당 등록이 없습니다: {what!r}{typed}")
        hist = q.registration_history(conn, ids, start=args.start, end=args.end)
    view = _HistoryView(hist, args)
    if args.format == "jsonl":
        _write_rows(args.out, None, view.json_lines())
    elif args.format == "csv":
        _write_rows(args.out, HISTORY_CSV_COLUMNS, map(_event_csv, view.events))
    elif args.format == "xlsx":
        path = _workbook_path(args, settings, f"DMF_이력_{_safe_name(args.key or 'pattern')}.xlsx")
        from dmf_assets.analyst.sheets import write_history_workbook

        versions = None if args.changes_only else view.versions
        write_history_workbook(path, what, view.summary, view.events, versions, view.spans, scope=view.range_text)
        print(f"{path} — {view.summary}")
    else:
        view.print_table(sys.stdout, include_cosmetic=args.include_cosmetic)
    return 0


def _write_rows(path: str | None, header: Sequence[str] | None, rows: Iterable[Any]) -> None:
    """`--format jsonl` (no header: each row a JSON object, one a line) or `--format csv` (the header, then the
    rows) to standard output or the --out file, written whole or not at all (UTF-8; with a BOM for csv, so
    Excel reads Hangul)."""
    from dmf_assets.fsutil import atomic_output

    with contextlib.ExitStack() as stack:
        target: TextIO = sys.stdout
        if path:
            tmp = stack.enter_context(atomic_output(path))
            encoding = "utf-8" if header is None else "utf-8-sig"
            target = stack.enter_context(open(tmp, "w", encoding=encoding, newline=""))
        if header is None:
            target.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
        else:
            w = csv.writer(target)
            w.writerow(header)
            w.writerows(rows)


def _workbook_path(args: argparse.Namespace, settings: Settings, name: str) -> Path:
    """--out, or the workbook `name` in the reports folder."""
    return Path(args.out) if args.out else settings.paths.resolve("reports_dir") / name


def _out_fits_the_format(args: argparse.Namespace) -> None:
    """--out names a file for csv, jsonl and xlsx; the table is for the terminal, and an ignored option would
    leave the user looking for a file that was never written."""
    if args.out and args.format == "table":
        raise UserError(f"--out은 --format csv·jsonl·xlsx와 함께 씁니다 (표는 화면에만 나옵니다): --out {args.out}")


class _HistoryView:
    """What `dmf history` shows of a RegistrationHistory: the range's events, and unless --changes-only
    the versions and listed spans that overlap the range."""

    versions: tuple[HistoryVersion, ...]
    spans: tuple[ListedSpan, ...]

    def __init__(self, hist: RegistrationHistory, args: argparse.Namespace) -> None:
        self.hist, self.args = hist, args
        self.events = hist.events  # already those of the range
        self.keys = list(dict.fromkeys(v.dmf_key for v in hist.versions))
        if args.changes_only:  # only the registrations the range's events name, and no versions
            named = {k for e in hist.events for k in (e.dmf_key, e.base_dmf_key) if k}
            self.keys = [k for k in self.keys if k in named]
            self.versions, self.spans = (), ()
            return
        start, end = args.start or date.min, args.end or date.max

        def overlaps(first: date | None, last: date | None) -> bool:
            return (first or date.min) <= end and (last or date.max) >= start

        self.versions = tuple(v for v in hist.versions if overlaps(v.first_day, v.last_day))
        self.spans = tuple(s for s in hist.spans if overlaps(s.first_day, s.last_day))

    @property
    def range_text(self) -> str:
        a = self.args
        if not (a.start or a.end):
            return ""
        return f"기간 {a.start or '처음'} ~ {a.end or '마지막'} · "

    @property
    def summary(self) -> str:
        what = f"등록 {len(self.keys):,}건"
        if not self.args.changes_only:
            what += f" · 버전 {len(self.versions):,}개"
        return f"{self.range_text}{what} · 이벤트 {len(self.events):,}건"

    def json_lines(self) -> Iterator[dict[str, Any]]:  # JSON objects
        for v in self.versions:
            yield {
                "kind": "version",
                "dmf_key": v.dmf_key,
                "version_no": v.version_no,
                "first_seen": _iso(v.first_day),
                "last_seen": _iso(v.last_day),
                "days_observed": v.days_observed,
                **v.values,
            }
        for s in self.spans:
            yield {"kind": "span", **_record(s, _SPAN_KEYS)}
        for e in self.events:
            changes = [{**asdict(c), "text": c.text} for c in e.changes]
            yield {"kind": "event", **_record(e, _EVENT_KEYS), "changes": changes}

    def print_table(self, out: TextIO, *, include_cosmetic: bool) -> None:
        from dmf_assets.domain.model import SEVERITY_LABEL_KO, missing
        from dmf_assets.korean import josa
        from dmf_assets.report.sentences import change_lines

        print(self.summary, file=out)
        for key in self.keys:
            last = [v for v in self.hist.versions if v.dmf_key == key][-1].values
            about = " · ".join(last[f] or missing(f) for f in ("ingredient", "applicant", "countries"))
            print(f"\n■ {key} — {about}", file=out)
            continued = next((e for e in self.hist.events if e.base_dmf_key == key and e.dmf_key != key), None)
            if continued:
                how = "등록번호가 바뀌어" if continued.number_changed else "등록번호를 받아"
                print(f"  → {continued.day}에 {how} {josa(continued.dmf_key, '으로/로')} 이어짐", file=out)
            if last.get("base_permit_no") or last.get("cohort"):
                grant = " · ".join(
                    f"{label}: {last[f]}"
                    for f, label in (("base_permit_no", "원 등록번호(허여)"), ("cohort", "코호트"))
                    if last.get(f)
                )
                print(f"  {grant}", file=out)
            for s in self.spans:
                if s.dmf_key == key:
                    print(f"  {s.text}", file=out)
            shown = hidden = 0
            for e in self.events:
                # an event of two keys (a number assigned) is listed once, under the key it led to
                if not (e.dmf_key == key or (e.base_dmf_key == key and e.dmf_key not in self.keys)):
                    continue
                if e.is_cosmetic and not include_cosmetic:
                    hidden += 1
                    continue
                shown += 1
                base = f" (기준 {e.base_day})" if e.base_day else ""
                flags = f" [{', '.join(e.flags)}]" if e.flags else ""
                print(f"  {e.day} [{SEVERITY_LABEL_KO.get(e.severity, e.severity)}] {e.label}{base}{flags}", file=out)
                if e.note:
                    print(f"      {e.note}", file=out)
                for line in change_lines(e.changes, cosmetic=include_cosmetic):  # the workbook's wording
                    print(f"      {line}", file=out)
            if hidden:
                print(f"  (표기 변경 {hidden}건 생략 — --include-cosmetic으로 표시)", file=out)
            elif not shown and (self.args.start or self.args.end):
                print("  (이 기간에 이벤트 없음)", file=out)


def _record(item: object, keys: Sequence[str]) -> dict[str, Any]:
    """The attributes `keys` of `item` as JSON values (a date as ISO text, a tuple as a list)."""
    values = {key: _iso(getattr(item, key)) for key in keys}
    return {key: list(v) if isinstance(v, tuple) else v for key, v in values.items()}


#: `dmf history --format jsonl`: what a listed span and an event say (an event's changes follow)
_SPAN_KEYS = (
    "dmf_key",
    "version_no",
    "listed",
    "first_day",
    "last_day",
    "accepted_days",
    "continued_as",
    "renumbered",
    "reappeared",
    "gone_since",
    "text",
)
_EVENT_KEYS = (
    "day",
    "base_day",
    "event_type",
    "label",
    "severity",
    "dmf_key",
    "base_dmf_key",
    "permit_no",
    "is_cosmetic",
    "flags",
    "renumber_candidates",
    "note",
    "watch_reasons",
    "ingredient",
    "applicant",
)


#: `dmf history --format csv`: one row per event (the keys of `--format jsonl`; changes as text lines)
HISTORY_CSV_COLUMNS = (
    "day",
    "base_day",
    "event_type",
    "label",
    "severity",
    "permit_no",
    "dmf_key",
    "base_dmf_key",
    "ingredient",
    "applicant",
    "manufacturer",
    "countries",
    "is_cosmetic",
    "flags",
    "changes",
)


def _event_csv(e: HistoryEvent) -> list[object]:
    return [_iso(getattr(e, c)) for c in HISTORY_CSV_COLUMNS[:-2]] + [", ".join(e.flags), e.changes_text]


# --- dmf asof -------------------------------------------------------------------------------------


def _asof_columns() -> tuple[str, ...]:
    """The flat columns of `dmf asof` (csv, jsonl; jsonl adds the per-site list): the number, the one listed
    before it and the key, the number's parts (`domain.permit`; the group's effective date is not one), what
    the registration says, and its lifecycle."""
    from dmf_assets.analyst.queries import CONTENT_COLUMNS  # lazily: polars and DuckDB (`dmf --help` stays instant)
    from dmf_assets.domain.permit import PERMIT_COLUMNS

    parts = tuple(c for c in PERMIT_COLUMNS if c not in ("permit_no", "permit_group_date"))
    return (
        "permit_no",
        "previous_permit_no",
        "dmf_key",
        *parts,
        *CONTENT_COLUMNS,
        "first_seen",
        "last_changed",
        "times_changed",
    )


def _asof(args: argparse.Namespace) -> int:
    from dmf_assets.storage.registry import NoHistory, registry_asof

    _out_fits_the_format(args)
    with _connect(args) as (settings, conn), said_in_one_line(NoHistory):
        accepted, frame = registry_asof(conn, args.date)
    note = (
        ""
        if accepted == args.date
        else f" (요청일 {josa(str(args.date), '은/는')} 반영되지 않은 날 — 그 전 마지막 반영일)"
    )
    print(f"{accepted} 정상 수집분 기준 등록 {frame.height:,}건{note}", file=sys.stderr)
    if args.format == "xlsx":
        from dmf_assets.analyst.sheets import write_registry_workbook
        from dmf_assets.report.rows import ledger_frame

        path = _workbook_path(args, settings, f"DMF_등록현황_{accepted}.xlsx")
        write_registry_workbook(
            path,
            ledger_frame(frame),
            sheet="전체현황",
            title=f"등록 현황 · {accepted}",
            note=f"{accepted} 정상 수집분 그대로 — 등록 {frame.height:,}건{note}",
            banner=f"{accepted} 기준 등록 현황 {frame.height:,}건{note}",
            doc_title=f"DMF 등록 현황 {accepted}",
        )
        print(path)
        return 0
    rows, columns = frame.to_dicts(), _asof_columns()
    if args.format == "jsonl":
        _write_rows(args.out, None, (_asof_json(r, columns, accepted) for r in rows))
        return 0
    if args.format == "csv":
        _write_rows(
            args.out, [*columns, "sites"], ([_iso(r[c]) for c in columns] + [_sites_line(r["sites"])] for r in rows)
        )
        return 0
    from dmf_assets.report.columns import COLUMN_LABELS

    shown = ("permit_no", "previous_permit_no", "ingredient", "applicant", "countries", "site_count")
    print("\t".join([*(COLUMN_LABELS[c][0] for c in shown), "최초 관측", "최근 실질 변경"]))
    for r in rows:
        print("\t".join(str(_iso(r[c]) or "-") for c in (*shown, "first_seen", "last_changed")))
    return 0


def _asof_json(r: dict[str, Any], columns: Sequence[str], accepted: date) -> dict[str, object]:
    """One registration of `dmf asof --format jsonl`: the flat columns, the day, the countries and the sites."""
    return {
        **{c: _iso(r[c]) for c in columns},
        "asof_day": accepted.isoformat(),
        "countries_list": list(dict.fromkeys(r["country_list"] or ())),
        "sites": [dict(s) for s in (r["sites"] or ())],
    }


def _sites_line(sites: Iterable[Mapping[str, str | None]] | None) -> str:
    return " | ".join(f"{s['name'] or ''} ({s['country'] or ''})" for s in (sites or ()))


# --- dmf report -----------------------------------------------------------------------------------


def _report(args: argparse.Namespace) -> int:
    from dmf_assets.report.day_data import build_period_report
    from dmf_assets.report.period_workbook import write_period_workbook

    if args.end < args.start:
        raise UserError(f"--to({args.end})가 --from({args.start})보다 앞섭니다")
    with _connect(args) as (settings, conn):
        period = build_period_report(conn, args.start, args.end, settings)
    if not period.days:  # an empty workbook must never look like "nothing changed"
        raise UserError(f"{args.start} ~ {args.end}에 처리(수집·판정)된 날이 없습니다 — 기간을 확인하십시오")
    path = _workbook_path(args, settings, f"DMF_기간리포트_{args.start}_{args.end}.xlsx")
    write_period_workbook(period, path)
    print(
        f"{path} — 이벤트 {len(period.events):,}건, 등록별 순변경 {len(period.net):,}건, "
        f"정상 반영일 {period.accepted_days:,}일 / 실패일 {period.rejected_days:,}일"
    )
    return 0
