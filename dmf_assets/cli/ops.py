"""`dmf doctor | prune | backup | restore | rebuild` — operations commands."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from dmf_assets.cli.arguments import day, existing_folder, file_in_existing_folder, said_in_one_line, seconds, whole
from dmf_assets.errors import UserError
from dmf_assets.settings import MAX_DAYS

if TYPE_CHECKING:  # imported by the handlers themselves: `dmf --help` stays instant
    from dmf_assets.ops.common import ProjectPaths
    from dmf_assets.orchestration.commit import DayOutcome
    from dmf_assets.settings import Settings

_DAYS = whole(0, MAX_DAYS, "일 수", "number of days")
T = TypeVar("T")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "doctor", help="설치 상태 점검: DB 무결성·스키마·최신성·디스크·백업 (문제 시 0이 아닌 종료 코드)"
    )
    _location_args(p)
    p.add_argument("--json", action="store_true", help="기계가 읽는 JSON으로 출력")
    p.add_argument("--strict", action="store_true", help="WARN도 실패로 (종료 코드 1)")
    p.add_argument("--today", type=day, default=None, help="최신성 기준 날짜 (기본: 오늘, KST)")
    p.add_argument("--stale-warn-days", type=_DAYS, default=1, help="마지막 반영일이 이보다 오래면 WARN (기본 1)")
    p.add_argument("--stale-fail-days", type=_DAYS, default=3, help="마지막 반영일이 이보다 오래면 FAIL (기본 3)")
    _lock_wait(p, 5.0, "DB 잠금을")
    p.add_argument(
        "--alert",
        action="store_true",
        help="감시(watchdog): Dagster 데몬 하트비트·09:00 리포트·알림 발송 실패를 점검하고 문제를 알림으로 보냄 (systemd timer용)",
    )
    p.set_defaults(handler=_doctor)

    p = sub.add_parser("prune", help="보존 기간이 지난 원본·리포트·백업·로그 정리 (마지막 반영일의 데이터는 항상 보존)")
    _location_args(p)
    p.add_argument("--dry-run", action="store_true", help="지우지 않고 지울 목록만 보여 줌")
    p.add_argument("--today", type=day, default=None, help="기준 날짜 (기본: 오늘, KST)")
    _lock_wait(p, 60.0, "DB 잠금을")
    p.set_defaults(handler=_prune)

    for name, help_, handler in (
        ("backup", "DB를 잠근 채 일관된 사본을 data/backups/에 만들고 검증", _backup),
        ("restore", "검증되는 가장 최근 백업으로 DB를 되돌림 (바뀌는 DB 파일은 옆에 남김)", _restore),
    ):
        p = sub.add_parser(name, help=help_)
        _location_args(p)
        _lock_wait(p, 900.0)
        p.set_defaults(handler=handler)

    p = sub.add_parser(
        "rebuild",
        help="원본 보관(data/raw)의 모든 날을 날짜 순서로 다시 처리해 이력 DB를 새로 만들고 교체 "
        "(바뀌는 DB 파일은 옆에 남김)",
    )
    _location_args(p)
    p.add_argument("--from", dest="first", type=day, default=None, help="이 날부터 (기본: 가장 오래된 보관일)")
    p.add_argument("--to", dest="last", type=day, default=None, help="이 날까지 (기본: 가장 최근 보관일)")
    p.add_argument(
        "--force",
        action="store_true",
        help="지금 DB가 읽히는데 다시 만든 이력과 다를 때도 교체 (설정·규칙을 바꿔 다시 처리할 때)",
    )
    _lock_wait(p, 900.0)
    p.set_defaults(handler=_rebuild)


def _location_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--root", type=existing_folder, default=None, help="프로젝트 폴더 (상대 경로의 기준; 기본: 이 프로젝트)"
    )
    p.add_argument(
        "--database", type=file_in_existing_folder, default=None, help="DB 파일 경로 (기본: config의 paths.database)"
    )
    p.add_argument("--config", default=None, help="설정 파일 (기본: config/dmf.toml + dmf.local.toml 또는 $DMF_CONFIG)")


def _lock_wait(p: argparse.ArgumentParser, default: float, waits_for: str = "실행 중인 작업을") -> None:
    p.add_argument(
        "--lock-wait", type=seconds(86400), default=default, help=f"{waits_for} 기다리는 최대 초 (기본 {default:g})"
    )


def _paths(args: argparse.Namespace) -> tuple[Settings, ProjectPaths]:
    from dmf_assets.ops.common import project_paths
    from dmf_assets.settings import load_settings

    settings = load_settings(args.config)  # a ConfigError names file, line and key; cli.main prints it
    # paths typed on the command line are relative to where the user is, not to the project
    root = Path(args.root).resolve() if args.root else None
    database = Path(args.database).resolve() if args.database else None
    return settings, project_paths(settings, root, database=database)


def _now(day: date | None) -> datetime:
    from dmf_assets.clock import KST, now_kst

    now = now_kst()
    return now if day is None else datetime.combine(day, now.time(), tzinfo=KST)


def _doctor(args: argparse.Namespace) -> int:
    from dmf_assets.notify import Notifier
    from dmf_assets.ops.doctor import Thresholds, run_doctor
    from dmf_assets.ops.watchdog import delivery_check, watch
    from dmf_assets.source.endpoint import resolve_endpoint
    from dmf_assets.source.identity import ask_source, configured_source

    if args.stale_fail_days < args.stale_warn_days:
        raise UserError("--stale-fail-days는 --stale-warn-days 이상이어야 합니다")
    settings, paths = _paths(args)
    thresholds = Thresholds(
        stale_warn_days=args.stale_warn_days, stale_fail_days=args.stale_fail_days, lock_wait_s=args.lock_wait
    )
    endpoint = resolve_endpoint(settings.source.base_url)
    source = configured_source(endpoint, settings.emulator.seed)
    if source is None:  # a server on this machine: asked which registry it serves
        key = os.environ.get("MFDS_SERVICE_KEY", "").strip() or "dmf-doctor"
        source = ask_source(endpoint, key=key, timeout_s=settings.source.connect_timeout_s)
    report = run_doctor(paths, now=_now(args.today), thresholds=thresholds, source=source)
    if args.alert:  # the outside watchdog (dmf_assets/ops/watchdog.py): its checks join the report
        report.checks.extend(watch(settings, paths, now=report.now).checks)
    report.checks.append(delivery_check(Notifier(settings, paths.alerts_dir)))
    if args.json:
        print(json.dumps(report.to_dict(args.strict), ensure_ascii=False, indent=1, default=str))
    else:
        print(report.table(args.strict))
    return report.exit_code(args.strict)


def _prune(args: argparse.Namespace) -> int:
    from dmf_assets.ops.retention import prune

    settings, paths = _paths(args)
    report = prune(paths, settings.retention, now=_now(args.today), dry_run=args.dry_run, lock_timeout_s=args.lock_wait)
    print("\n".join(report.lines()))
    return 0


def _on_backups(args: argparse.Namespace, step: Callable[..., T]) -> tuple[ProjectPaths, T]:
    """`step` (a backup or a restore) on the project's database and backups folder; its refusal (no backup
    verifies, a run keeps the database) is the one line `dmf` prints."""
    from dmf_assets.ops.backup import BackupError
    from dmf_assets.storage.db import DatabaseBusy

    _, paths = _paths(args)
    with said_in_one_line(BackupError, DatabaseBusy):
        return paths, step(paths.database, paths.backups_dir, lock_timeout_s=args.lock_wait)


def _backup(args: argparse.Namespace) -> int:
    from dmf_assets.ops.backup import backup_database
    from dmf_assets.ops.common import human_size

    _, result = _on_backups(args, backup_database)
    waited = f", 잠금 대기 {result.waited_s:.1f}초" if result.waited_s >= 0.5 else ""
    print(f"백업 완료 / backup written: {result.path}")
    print(
        f"  {human_size(result.bytes)}, 실행 기록 {result.runs}일, 표 {len(result.table_counts)}개 검증됨 "
        f"({result.seconds:.1f}초{waited})"
    )
    return 0


def _restore(args: argparse.Namespace) -> int:
    from dmf_assets.ops.backup import restore_database
    from dmf_assets.orchestration.rebuild import archived_days

    paths, result = _on_backups(args, restore_database)
    for path, why in result.skipped:
        print(f"건너뜀 / skipped {path.name}: {why}")
    print(
        f"복원 완료 / restored: {paths.database} ← {result.backup.path.name} "
        f"({result.backup.taken_at:%Y-%m-%d %H:%M} KST, 실행 기록 {result.runs}일, 마지막 반영일 {result.last_accepted or '없음'})"
    )
    _kept_aside(result.kept_aside)
    first = result.last_accepted + timedelta(days=1) if result.last_accepted else None
    if later := archived_days(paths.raw_dir, first=first):
        print(
            f"  백업 뒤의 날 {len(later)}일은 원본 보관({later[0]} ~ {later[-1]})에 있습니다: dmf backfill --start {later[0]} "
            f"--end {later[-1]} 로 다시 처리하세요 / re-run the days after the backup from their archives"
        )
    return 0


def _kept_aside(path: Path | None) -> None:
    """Where `dmf restore` and `dmf rebuild` left the database file they replaced."""
    if path:
        print(f"  바뀌기 전 파일은 {path}에 남겨 두었습니다 (필요 없으면 지우세요) / the replaced file is kept there")


def _rebuild(args: argparse.Namespace) -> int:
    from dmf_assets.domain.model import DayStatus
    from dmf_assets.orchestration.rebuild import rebuild_history, unrunnable_archives
    from dmf_assets.storage.db import DatabaseBusy

    if args.first and args.last and args.last < args.first:
        raise UserError(f"--to({args.last})가 --from({args.first})보다 앞입니다 (--to is before --from)")
    settings, paths = _paths(args)
    print(f"이력 다시 만들기 / rebuild: {paths.raw_dir} → {paths.database}")

    def progress(out: DayOutcome) -> None:
        c = out.counts
        gate = f" (게이트 {out.rejected_gate})" if out.rejected_gate else ""
        counts = (
            f" · 신규 {c.get('NEW', 0)} · 변경 {c.get('CHANGED', 0)} · 표기 {c.get('COSMETIC', 0)} · 삭제 "
            f"{c.get('WITHDRAWN', 0)}"
            if out.status is DayStatus.ACCEPTED
            else ""
        )
        print(f"  {out.day}  {out.status.word_ko}{gate}{counts}", flush=True)

    with said_in_one_line(DatabaseBusy):
        result = rebuild_history(
            settings,
            database=paths.database,
            raw_dir=paths.raw_dir,
            backups_dir=paths.backups_dir,
            first=args.first,
            last=args.last,
            force=args.force,
            lock_timeout_s=args.lock_wait,
            progress=progress,
        )
    days = result.days
    rejected = sum(1 for d in days if d.status is DayStatus.REJECTED)
    print(
        f"완료 / done: {len(days)}일 ({days[0].day} ~ {days[-1].day}) 반영 {len(days) - rejected}일 · 거부 {rejected}일, "
        f"{result.seconds:.0f}초"
    )
    if result.compared:
        print("  이전 DB와 같은 이력입니다 (날마다 판정·건수·이벤트 일치) / the same history as the replaced database")
    elif result.differences:
        print(
            f"  --force: 이전 DB와 {len(result.differences)}일 다른 이력으로 바꾸었습니다 / replaced a history that differed"
        )
    _kept_aside(result.kept_aside)
    print(
        "  Dagster의 실행 기록·리포트·이벤트 파일은 그대로입니다 / Dagster's records, workbooks and events files are unchanged"
    )
    if ignored := unrunnable_archives(paths.raw_dir):
        print(
            f"  실행할 수 있는 날짜가 아닌 원본 보관은 다시 처리하지 않았습니다 / archives of days no run can be for were "
            f"left out: {', '.join(map(str, ignored))} ({paths.raw_dir})"
        )
    return 0
