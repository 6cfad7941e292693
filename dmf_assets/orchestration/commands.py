"""`dmf demo | run | backfill | ui` — the product's everyday commands."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from datetime import date, timedelta
from pathlib import Path

from dmf_assets.cli import UserError
from dmf_assets.settings import EMULATOR_URL, PROJECT_ROOT, load_settings


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="에뮬레이터로 최근 30일을 실행하고 요약을 보여 줍니다 (README의 첫 명령)")
    p.add_argument("--days", type=int, default=None, help="몇 일을 실행할지 (기본: config의 demo.days=30)")
    p.add_argument("--end", type=date.fromisoformat, default=None, help="마지막 날짜 (기본: 오늘, KST)")
    p.add_argument("--no-fault", action="store_true", help="고장 주입 없이 실행")
    p.set_defaults(handler=_demo)

    p = sub.add_parser("run", help="한 날짜를 전체 그래프로 실행 (거부되어도 리포트까지)")
    p.add_argument("--date", type=date.fromisoformat, default=None, help="YYYY-MM-DD (기본: 오늘, KST)")
    p.add_argument("--fault", action="append", default=[], metavar="DATE=KIND", help="에뮬레이터 고장 주입")
    p.set_defaults(handler=_run)

    p = sub.add_parser("backfill", help="기간을 날짜 순서대로 실행 (하루 1회 실행 또는 --single-run)")
    p.add_argument("--start", type=date.fromisoformat, required=True)
    p.add_argument("--end", type=date.fromisoformat, required=True)
    p.add_argument("--single-run", action="store_true", help="기간 전체를 한 번의 실행으로 (날짜 순서로 처리)")
    p.add_argument("--fault", action="append", default=[], metavar="DATE=KIND")
    p.set_defaults(handler=_backfill)

    p = sub.add_parser("ui", help="Dagster UI(dagster dev)와 리포트 다운로드 서버를 함께 시작")
    p.add_argument("--port", type=int, default=3000)
    p.add_argument("--host", default="127.0.0.1")
    p.set_defaults(handler=_ui)


def _prepare(base_url: str | None = None) -> tuple:
    from dmf_assets.orchestration import runner

    runner.load_dotenv()
    settings = load_settings()
    url = base_url or settings.source.base_url
    defaulted = runner.ensure_service_key(url)
    if not os.environ.get("MFDS_SERVICE_KEY"):
        raise UserError(
            "MFDS_SERVICE_KEY가 없습니다. 실제 API를 쓰려면 공공데이터포털에서 받은 서비스 키를 .env 파일이나 "
            "환경 변수 MFDS_SERVICE_KEY로 지정하세요. (set MFDS_SERVICE_KEY for the real API)"
        )
    home = runner.use_project_instance()
    return settings, url, defaulted, home


def _parse_faults(values: list[str]) -> dict[str, str]:
    faults = {}
    for v in values:
        day, sep, kind = v.partition("=")
        if not sep:
            raise UserError(f"--fault는 DATE=KIND 형식입니다: {v!r}")
        date.fromisoformat(day.strip())
        faults[day.strip()] = kind.strip()
    return faults


def _resources(settings, url: str, faults: dict[str, str]):
    import dagster as dg

    from dmf_assets.defs.resources import build_resources

    return build_resources(settings, emulator_faults={**settings.emulator.faults, **faults}, base_url=url,
                           service_key=dg.EnvVar("MFDS_SERVICE_KEY"))


def _summary_rows(days: list[date]) -> list[dict]:
    from dmf_assets.storage import history
    from dmf_assets.storage.db import open_database

    settings = load_settings()
    db = settings.paths.resolve("database")
    rows = []
    with open_database(db, backups_dir=settings.paths.resolve("backups_dir"), purpose="dmf summary") as conn:
        for d in days:
            rows.append({"day": d, **(history.run_row(conn, d) or {"status": "not run"})})
    return rows


STATUS_KO = {"accepted": "반영", "baseline": "기준일", "rejected": "거부", "pending": "판정만", "not run": "미실행"}


def _print_summary(days: list[date]) -> None:
    rows = _summary_rows(days)
    print()
    print(f"{'날짜':<11} {'판정':<5} {'등록 수':>7} {'신규':>4} {'변경':>4} {'표기':>4} {'취하':>4}  비고 / reason")
    print("-" * 100)
    for r in rows:
        status = r.get("status")
        size = r.get("population")
        note = ""
        if status == "rejected":
            note = (r.get("reason") or "")[:90]
        elif status == "baseline":
            note = "첫 수집일 — 이후 비교의 기준 (이벤트 없음)"
        elif r.get("rederived_at"):
            note = "이후 처리로 이벤트 재계산됨"
        print(
            f"{r['day'].isoformat():<11} {STATUS_KO.get(status, status):<5} "
            f"{(f'{size:,}' if size else '-'):>7} {r.get('new_count') or 0:>4} {r.get('changed_count') or 0:>4} "
            f"{r.get('cosmetic_count') or 0:>4} {r.get('withdrawn_count') or 0:>4}  {note}"
        )
    accepted = sum(1 for r in rows if r.get("status") in ("accepted", "baseline"))
    rejected = sum(1 for r in rows if r.get("status") == "rejected")
    print("-" * 100)
    print(f"반영 {accepted}일 · 거부 {rejected}일 (accepted {accepted}, rejected {rejected})")


def _day_line(day: str) -> str:
    """The day's verdict from the history database, in one line."""
    rows = _summary_rows([date.fromisoformat(day)])
    r = rows[0]
    status = r.get("status")
    if status == "rejected":
        return f"거부 — {(r.get('reason') or '')[:80]}"
    if status in ("accepted", "baseline"):
        return (f"{STATUS_KO[status]} · 등록 {r.get('population') or 0:,} · 신규 {r.get('new_count') or 0} · "
                f"변경 {r.get('changed_count') or 0} · 표기 {r.get('cosmetic_count') or 0} · 취하 {r.get('withdrawn_count') or 0}")
    return STATUS_KO.get(status, str(status))


def _progress(report, seconds: float) -> None:
    if report.failure is not None:
        line = f"실패 / FAILED: {report.failure}"
    elif "." in report.day:  # a single run over a range
        line = "완료 / done" if report.success else "게이트 거부일 포함 — 나머지는 후속 실행으로 완료"
    else:
        line = _day_line(report.day)
    extra = f"  (+{report.followups} 후속 실행)" if report.followups else ""
    print(f"  {report.day}  {seconds:5.1f}s  {line}{extra}", flush=True)


def _demo(args) -> int:
    import dagster as dg

    from dmf_assets.orchestration import runner

    settings, _, defaulted, home = _prepare(EMULATOR_URL)
    n = args.days or settings.demo.days
    end = args.end or runner.kst_today()
    days = [end - timedelta(days=i) for i in range(n - 1, -1, -1)]
    faults = {} if args.no_fault else {(end - timedelta(days=settings.demo.fault_days_ago)).isoformat(): settings.demo.fault_kind}
    print("DMF Watch 데모 — 로컬 MFDS 에뮬레이터 (키·네트워크 불필요)")
    print(f"  기간 {days[0]} ~ {days[-1]} ({n}일), Dagster 인스턴스 {home}")
    if faults:
        (fd, fk), = faults.items()
        print(f"  고장 주입: {fd} = {fk} (그날은 게이트가 거부하고, 다음 날이 그 공백까지 포함해 비교합니다)")
    if defaulted:
        print("  MFDS_SERVICE_KEY 미설정 → 에뮬레이터용 데모 키 사용")
    started = time.monotonic()
    instance = dg.DagsterInstance.get()
    runner.run_days(days, instance=instance, resources=_resources(settings, EMULATOR_URL, faults),
                    tags={"dmf/trigger": "demo"}, progress=_progress, run_config=runner.QUIET)
    _print_summary(days)
    reports = settings.paths.resolve("reports_dir")
    latest = reports / "DMF_리포트_최신.xlsx"
    print(f"\n총 {time.monotonic() - started:.0f}초.")
    print(f"최신 리포트 / latest workbook: {latest}")
    print(f"날짜별 리포트 / daily workbooks: {reports}/DMF_리포트_YYYY-MM-DD.xlsx")
    print("UI 열기 / open the UI:  .venv/bin/dmf ui   → http://127.0.0.1:3000 (리포트 다운로드: "
          f"{settings.report.base_url})")
    return 0


def _run(args) -> int:
    import dagster as dg

    from dmf_assets.orchestration import runner

    settings, url, _, _ = _prepare()
    day = args.date or runner.kst_today()
    started = time.monotonic()
    report = runner.run_day(day, instance=dg.DagsterInstance.get(), run_config=runner.QUIET,
                            resources=_resources(settings, url, _parse_faults(args.fault)), tags={"dmf/trigger": "cli"})
    _progress(report, time.monotonic() - started)
    _print_summary([day])
    return 0 if report.failure is None else 1


def _backfill(args) -> int:
    import dagster as dg

    from dmf_assets.orchestration import runner

    if args.end < args.start:
        raise UserError("--end가 --start보다 앞입니다")
    settings, url, _, _ = _prepare()
    resources = _resources(settings, url, _parse_faults(args.fault))
    instance = dg.DagsterInstance.get()
    days = [args.start + timedelta(days=i) for i in range((args.end - args.start).days + 1)]
    tags = {"dmf/trigger": "cli-backfill"}
    if args.single_run:
        started = time.monotonic()
        report = runner.run_range_single(args.start, args.end, instance=instance, resources=resources, tags=tags,
                                         run_config=runner.QUIET)
        _progress(report, time.monotonic() - started)
        failed = report.failure is not None
    else:
        reports = runner.run_days(days, instance=instance, resources=resources, tags=tags, progress=_progress,
                                  run_config=runner.QUIET)
        failed = any(r.failure for r in reports)
    _print_summary(days)
    return 1 if failed else 0


def _ui(args) -> int:
    from dmf_assets.report.fileserver import make_server

    settings, _, defaulted, home = _prepare()
    reports = settings.paths.resolve("reports_dir")
    server = make_server(reports, settings.report.file_server_host, settings.report.file_server_port)
    import threading

    threading.Thread(target=server.serve_forever, daemon=True).start()
    cmd = [sys.executable, "-m", "dagster", "dev", "-w", str(PROJECT_ROOT / "workspace.yaml"),
           "-h", args.host, "-p", str(args.port)]
    print(f"Dagster UI: http://{args.host}:{args.port}   (DAGSTER_HOME={home})")
    print(f"리포트 다운로드 / workbook downloads: {settings.report.base_url}")
    if defaulted:
        print("MFDS_SERVICE_KEY 미설정 → 에뮬레이터용 데모 키 사용")
    proc = subprocess.Popen(cmd, cwd=PROJECT_ROOT, start_new_session=True)

    def stop(*_):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)  # a service manager's stop is handled like Ctrl-C
    try:
        return proc.wait()
    except KeyboardInterrupt:
        print("\n종료 중… (stopping)")
        return 0
    finally:
        # dagster dev runs in its own process group (it ignores SIGINT when started from a script):
        # stop the whole group so no webserver or daemon is left behind
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        server.shutdown()
        server.server_close()
