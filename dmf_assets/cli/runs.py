"""`dmf demo | run | backfill | ui` — the product's everyday commands.

Exit codes of `run`, `backfill` and `demo`: 0 every day accepted (or baseline); 3 at least one day
rejected by a gate (its workbook says so, the comparison base did not move); 1 a step failed (the
cause is printed); 2 bad arguments or configuration.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import functools
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from datetime import date, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from dmf_assets.cli.arguments import FAULT_NEEDS_THE_EMULATOR, day, listen_host, port, whole
from dmf_assets.domain.model import DayStatus
from dmf_assets.errors import UserError
from dmf_assets.korean import josa, pad, shorten

if TYPE_CHECKING:  # for annotations only: each command imports what it needs when it runs (docs/ARCHITECTURE.md, cli/)
    import dagster as dg

    from dmf_assets.runs.launch import DayRun
    from dmf_assets.settings import Settings

EXIT_REJECTED = 3
EXIT_FAILED = 1


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="에뮬레이터로 최근 30일을 실행하고 요약을 보여 줍니다 (README의 첫 명령)")
    p.add_argument(
        "--days",
        type=whole(1, 366, "일 수", "number of days"),
        default=None,
        help="몇 일을 실행할지 1–366 (기본: config의 demo.days=30)",
    )
    p.add_argument("--end", type=day, default=None, help="마지막 날짜 (기본: 오늘, KST)")
    p.add_argument("--no-fault", action="store_true", help="고장 주입 없이 실행")
    p.set_defaults(handler=_demo)

    p = sub.add_parser(
        "run", help="한 날짜를 전체 그래프로 실행 (거부되어도 리포트까지). 종료 코드 0 반영 · 3 거부 · 1 실패"
    )
    p.add_argument("--date", type=day, default=None, help="YYYY-MM-DD (기본: 오늘, KST)")
    p.add_argument(
        "--fault", action="append", default=[], metavar="DATE=KIND", help="에뮬레이터 고장 주입 (dmf emulator faults)"
    )
    p.set_defaults(handler=_run)

    p = sub.add_parser(
        "backfill", help="기간을 날짜 순서대로 하루 1회씩 실행. 종료 코드 0 모두 반영 · 3 거부일 있음 · 1 실패"
    )
    p.add_argument("--start", type=day, required=True)
    p.add_argument("--end", type=day, required=True)
    p.add_argument("--fault", action="append", default=[], metavar="DATE=KIND")
    p.set_defaults(handler=_backfill)

    p = sub.add_parser("ui", help="Dagster UI(dg dev)와 팀 조회 페이지 「DMF 조회」(리포트 내려받기 포함)를 함께 시작")
    p.add_argument("--port", type=port, default=3000, help="Dagster UI 포트 (기본 3000)")
    p.add_argument("--host", type=listen_host, default="127.0.0.1", help="Dagster UI 주소 (기본 127.0.0.1)")
    p.add_argument("--web-port", type=port, default=None, help="조회 페이지 포트 (기본: config web.port, 8765)")
    p.set_defaults(handler=_ui)


# --- set-up shared by the commands ---------------------------------------------------------------


def _prepare() -> tuple[Settings, Path]:
    """The settings, and DAGSTER_HOME: the project's dagster_home/ (with its pools and run queue), unless set
    already."""
    from dmf_assets.settings import PROJECT_ROOT, load_settings

    settings = load_settings()
    home = Path(os.environ.setdefault("DAGSTER_HOME", str(PROJECT_ROOT / "dagster_home")))
    home.mkdir(parents=True, exist_ok=True)
    if not (home / "dagster.yaml").exists():
        raise UserError(
            f"DAGSTER_HOME={home}에 dagster.yaml이 없습니다 — 프로젝트의 dagster_home/dagster.yaml을 복사하세요. "
            "(no dagster.yaml in DAGSTER_HOME)"
        )
    return settings, home


def _check_days(*days: date) -> None:
    from dmf_assets.clock import outside_run_days

    for d in days:
        if why := outside_run_days(d):
            raise UserError(why)


def outside_the_emulator(first: date, last: date) -> str | None:
    """Why the built-in emulator cannot serve the days `first`…`last` — it holds a registry for its own years
    only — or None. Said before the run: at gate 1 the day would be rejected as a failing source, with advice to
    wait for the source to recover, which never happens."""
    from dmf_assets.emulator.registry import FIRST_DATE, LAST_DATE

    outside = [d for d in (first, last) if not FIRST_DATE <= d <= LAST_DATE]
    if not outside:
        return None
    return (
        f"{outside[0]}: 내장 MFDS 에뮬레이터에는 {FIRST_DATE} ~ {LAST_DATE}의 목록만 있습니다 — 그 사이의 날짜로 "
        f"실행하세요 / the built-in emulator holds the registry of {FIRST_DATE}..{LAST_DATE} only"
    )


def _faults(values: list[str]) -> dict[str, str]:
    from dmf_assets.emulator.faults import FaultPlan

    try:
        return FaultPlan.from_cli(values).to_config()
    except ValueError as exc:
        raise UserError(f"--fault: {exc}") from None


def _resources(settings: Settings, faults: dict[str, str], base_url: str | None = None) -> dict[str, object]:
    from dmf_assets.defs.resources import build_resources

    return build_resources(settings, emulator_faults={**settings.emulator.faults, **faults}, base_url=base_url)


def _instance() -> dg.DagsterInstance:
    from dmf_assets.ops.instance import cannot_open, open_instance

    try:
        return open_instance()
    except Exception as exc:  # whatever Dagster raises (storage unreachable, schema damaged): one line, no traceback
        raise UserError(cannot_open(exc)) from exc


class _StderrWithoutEventLogEchoes:
    """sys.stderr without Dagster's echo of a failed write to its event log ("Exception while writing logger
    call to event log: …" and the SQL, straight to sys.stderr): the write fails again when the run records its
    outcome, and that failure is said once, as one `dmf:` line (e.g. DAGSTER_HOME's disk is full)."""

    ECHO = "Exception while writing logger call to event log"

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        return len(text) if text.startswith(self.ECHO) else self._stream.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


# --- what the day became (read from the history database) -----------------------------------------


def _check_clock(settings: Settings) -> None:
    """Time only moves forward: today (KST) earlier than the newest archived day is one line, before any day
    or the database is looked at (`_check_history` asks the database the same)."""
    from dmf_assets.clock import require_not_behind
    from dmf_assets.source.archive import newest_archived_day

    raw = settings.paths.resolve("raw_dir")
    require_not_behind(newest_archived_day(raw), str(raw))


def _check_history(settings: Settings, days: list[date], resources: dict[str, object]) -> None:
    """Open the history database as the day's run will, before it runs: a lost database (files of earlier
    days exist) or a damaged one is one line naming `dmf restore` / `dmf rebuild`; a history holding a day
    later than today (a clock set back) one line about the clock; a source other than the one the archives and
    the history come from (when the configuration names it) one line saying how to start anew — all before
    anything is fetched."""
    from dmf_assets.orchestration.pipeline import HISTORY_DB_KO, time_moves_forward
    from dmf_assets.source.client import MfdsClient
    from dmf_assets.source.identity import folder_source, require_same
    from dmf_assets.storage.db import HistoryTraces, open_database
    from dmf_assets.storage.history import history_source

    p = settings.paths
    mfds = resources["mfds"]
    assert isinstance(mfds, MfdsClient)  # defs.resources.build_resources
    traces = HistoryTraces(
        p.resolve("raw_dir"), p.resolve("events_dir"), p.resolve("reports_dir"), settings.runs.max_minutes * 60
    )
    with open_database(
        p.resolve("database"), backups_dir=p.resolve("backups_dir"), purpose="dmf check", traces=traces, writing=days
    ) as conn:
        time_moves_forward(conn)
        held: list[tuple[str, str]] = []
        if archived := folder_source(p.resolve("raw_dir")):
            held.append((archived[0], str(p.resolve("raw_dir") / archived[1].isoformat())))
        if recorded := history_source(conn):
            held.append((recorded, HISTORY_DB_KO))
        source = mfds.answering_source(days[-1]) if held else None  # a server on this machine is asked once
        for holds, where in held:
            require_same(source, holds, where)


def _summary_rows(settings: Settings, days: list[date]) -> list[dict]:
    """Each day's run row with its `status` (a DayStatus) and figures: `summary`, the `DaySummary` the workbook
    and the mail read (None for a day not judged)."""
    from dmf_assets.report.day_data import day_summary
    from dmf_assets.storage import history
    from dmf_assets.storage.db import open_database

    with open_database(
        settings.paths.resolve("database"), backups_dir=settings.paths.resolve("backups_dir"), purpose="dmf summary"
    ) as conn:
        runs = {d: history.run_row(conn, d) or {} for d in days}
        return [
            {"day": d, **run, "status": DayStatus.of_value(run.get("status")), "summary": day_summary(conn, d)}
            for d, run in runs.items()
        ]


def _status_word(row: dict) -> str:
    summary = row["summary"]
    return (summary.status if summary is not None else row["status"]).word_ko


def _day_line(row: dict) -> str:
    """One day as `dmf run / backfill / demo` print it: the figures of its `DaySummary`, as 요약 says them."""
    summary = row["summary"]
    if summary is None:
        return _status_word(row)
    if summary.is_rejected:
        return f"{summary.status.word_ko} — {shorten(row.get('reason') or '', 90)}"
    size = f"{summary.registry_size:,}" if summary.registry_size is not None else "-"
    return f"{summary.status.word_ko} · 등록 {size} · {summary.counts_text} · 표기 {summary.cosmetic:,}"


def _progress(settings: Settings, report: DayRun, seconds: float) -> None:
    # a failed day's own line first: the database may be what failed (a read-only or full disk)
    line = f"실패 / FAILED: {report.failure}" if report.failure else _day_line(_summary_rows(settings, [report.day])[0])
    extra = f"  (+{report.followups} 후속 실행)" if report.followups else ""
    print(f"  {report.day}  {seconds:5.1f}s  {line}{extra}", flush=True)
    if report.failure:
        print(
            f"      → 원인을 고친 뒤 다시 실행하세요: dmf run --date {report.day}  (Dagster UI의 run {report.run_id[:8]} 로그에 "
            "자세한 내용이 있습니다)",
            flush=True,
        )


#: the summary table's columns: header, width in terminal columns (a Hangul syllable takes two), alignment —
#: the figures in the order of the day lines above the table and of its legend, 표기 (apart) last
_COLUMNS = (
    ("날짜", 11, "<"),
    ("판정", 9, "<"),
    ("등록 수", 7, ">"),
    ("신규", 4, ">"),
    ("변경", 4, ">"),
    ("삭제", 4, ">"),
    ("번호", 4, ">"),
    ("번호변경", 8, ">"),
    ("표기", 4, ">"),
)


def _table_line(cells: Sequence[str]) -> str:
    return " ".join(pad(c, width, align) for c, (_, width, align) in zip(cells, _COLUMNS, strict=True))


def _print_summary(settings: Settings, days: list[date]) -> list[dict]:
    rows = _summary_rows(settings, days)
    print()
    print(_table_line([header for header, _, _ in _COLUMNS]) + "  비고 / reason")
    print("-" * 100)
    for r in rows:
        status, k = r["status"], r["summary"]
        note = {
            DayStatus.REJECTED: shorten(r.get("reason") or "", 90),
            DayStatus.BASELINE: "첫 수집일 — 이후 비교의 기준 (이벤트 없음)",
        }.get(status, "")
        if status is DayStatus.ACCEPTED and r.get("rederived_at"):
            note = "이후 처리로 이벤트 재계산됨"
        size = k.registry_size if k is not None else None
        # a rejected or unjudged day compared nothing: "-", as the workbook leaves it blank, never a 0
        figures = (
            tuple(map(str, (k.new, k.changed, k.withdrawn, k.number_assigned, k.number_changed, k.cosmetic)))
            if k is not None and not k.is_rejected
            else ("-",) * 6
        )
        cells = (r["day"].isoformat(), _status_word(r), f"{size:,}" if size else "-", *figures)
        print(f"{_table_line(cells)}  {note}".rstrip())
    accepted = sum(1 for r in rows if r["status"].is_accepted)
    rejected = sum(1 for r in rows if r["status"] is DayStatus.REJECTED)
    print("-" * 100)
    print(
        f"반영 {accepted}일 · 거부 {rejected}일 (accepted {accepted}, rejected {rejected}) — 변경 = 실질 변경, 삭제 = "
        "목록에서 삭제(취하 등), 번호 = 번호 부여, 번호변경 = 등록번호 변경, 표기 = 표기만 바뀐 변경(별도)"
    )
    return rows


def _exit_code(
    settings: Settings, reports: list[DayRun], rows: list[dict], expected_rejections: frozenset[date] = frozenset()
) -> int:
    """0 all accepted, 3 a day rejected by a gate, 1 a step failed. `expected_rejections`: days the demo
    injects a fault into on purpose."""
    if any(r.failure for r in reports) or any(
        not (r["status"].is_accepted or r["status"] is DayStatus.REJECTED) for r in rows
    ):
        return EXIT_FAILED
    rejected = [r["day"] for r in rows if r["status"] is DayStatus.REJECTED and r["day"] not in expected_rejections]
    if rejected:
        print(
            "거부된 날이 있습니다: 그날의 리포트는 '수집 실패'이고 비교 기준일은 그대로입니다 (exit 3).",
            file=sys.stderr,
        )
        for day, todo in _what_next(settings, rejected):
            print(f"  {day}: {todo}", file=sys.stderr)
        return EXIT_REJECTED
    return 0


def _what_next(settings: Settings, days: list[date]) -> list[tuple[date, str]]:
    """For each rejected day, the 'what to do next' of its rejection alert — the same sentence the team is
    mailed: an automatic retry only when one is planned and a daemon runs it, otherwise the command to run."""
    from dmf_assets import notify
    from dmf_assets.clock import now_kst
    from dmf_assets.orchestration import followups

    instance, now = _instance(), now_kst()
    states = followups.day_states(instance, [d.isoformat() for d in days])
    policy, alive = followups.RetryPolicy.of(settings), followups.daemon_alive(instance, now)
    context = notify.MessageContext.of(settings)
    out = []
    for rejected in days:
        state = states[rejected.isoformat()]
        if state.rejection is None:  # recorded in the database, but Dagster has no verdict of it (never here)
            continue
        outlook = followups.retry_outlook(rejected.isoformat(), state, now, policy, daemon_alive=alive)
        assert outlook is not None  # a rejected day always has one: the retry, or why there is none
        alert = notify.Rejected(day=rejected, rejection=state.rejection[1], retry=outlook)
        out.append((rejected, alert.parts(context).todo))  # the on-call alert's "what to do next", as it says it
    return out


# --- Ctrl-C: one line, and nothing left running ----------------------------------------------------

#: set in the child process that does the work of `run`, `backfill` and `demo` (`_in_a_session_of_its_own`)
WORKER_ENV = "DMF_WORKER"
#: how long the work may take to stop after Ctrl-C before whatever is left of it is killed
STOP_GRACE_S = 30.0


def _in_a_session_of_its_own(args: argparse.Namespace) -> int | None:
    """Run this command's work again in a child process of a session of its own, and wait for it.

    Dagster starts helper processes for every step it executes (a `tail` and its Python watcher). In the
    terminal's process group they received Ctrl-C too, and each watcher printed a KeyboardInterrupt traceback.
    In a session of its own the work receives only what this process forwards: the first Ctrl-C, SIGTERM or
    SIGHUP, as one SIGINT to the child alone. The child stops after the step it is in, says so in one line and
    exits 130; whatever is left in its group is then stopped (SIGTERM, then SIGKILL after `STOP_GRACE_S`).
    None: this is that child — or the output is not the terminal's (an in-process call capturing it). A child
    ended by a signal nobody asked for (SIGKILL) ends this process the same way; a child whose parent is killed
    kills itself and its helpers (`_die_with_parent`)."""
    if os.environ.get(WORKER_ENV):
        _die_with_parent()
        return None
    try:
        sys.stdout.fileno(), sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return None
    received: list[int] = []
    child: list[subprocess.Popen] = []

    def forward(signum: int, _frame: Any) -> None:
        received.append(signum)
        if len(received) == 1 and child:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child[0].pid, signal.SIGINT)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        sys.stdout.flush()
        cmd = [sys.executable, "-m", "dmf_assets", *args.argv]
        child.append(subprocess.Popen(cmd, env={**os.environ, WORKER_ENV: "1"}, start_new_session=True))
        proc = child[0]
        if received:  # a signal came before the child existed
            os.kill(proc.pid, signal.SIGINT)
        deadline = None
        while proc.poll() is None:
            if received and deadline is None:
                deadline = time.monotonic() + STOP_GRACE_S
            if deadline is not None and time.monotonic() > deadline:  # asked to stop and still running
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                break
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=0.2)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if child:
            _stop_group(child[0].pid)
    code = child[0].returncode
    if code < 0 and not received:  # killed from outside (a crash, `kill -9`): end the same way
        with contextlib.suppress(OSError, ValueError):  # SIGKILL has no handler to reset
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    if code < 0:  # stopped after Ctrl-C by the kill that ends the grace: the child could not say it
        print("dmf: interrupted", file=sys.stderr)
        return 130
    return code


def _die_with_parent() -> None:
    """In the child of `_in_a_session_of_its_own`: when the parent is killed (SIGKILL cannot be forwarded), stop
    this process and its helpers at once, as the one process of before would have been stopped."""
    import threading

    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        if os.getpgrp() == os.getpid():  # the group of its own the parent started it in
            os.killpg(os.getpgrp(), signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="dmf-die-with-parent", daemon=True).start()


def _stop_group(pgid: int, grace_s: float = 5.0, running: Callable[[], bool] | None = None) -> None:
    """SIGTERM to what is left of a process group (helpers of a child that has exited), SIGKILL after `grace_s`
    unless nothing is `running` any more (default: no process is left in the group)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGTERM)
    deadline, left = time.monotonic() + grace_s, running or functools.partial(_group_alive, pgid)
    while left() and time.monotonic() < deadline:
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


# --- the commands --------------------------------------------------------------------------------


def _run_days(settings: Settings, days: list[date], resources: dict[str, object], *, trigger: str) -> list[DayRun]:
    """The days one after another, in order; each day's line is printed as it ends."""
    from dmf_assets.runs import launch

    stderr, sys.stderr = sys.stderr, _StderrWithoutEventLogEchoes(sys.stderr)
    try:
        return launch.run_days(
            days,
            instance=_instance(),
            resources=resources,
            trigger=trigger,
            run_config=launch.QUIET,
            progress=functools.partial(_progress, settings),
        )
    finally:
        sys.stderr = stderr


def _run(args: argparse.Namespace) -> int:
    if (code := _in_a_session_of_its_own(args)) is not None:  # before anything heavy: the child does it all
        return code
    from dmf_assets.clock import today_kst

    day = args.date or today_kst()
    return _days_with_faults(args, day, day, trigger="cli")


def _backfill(args: argparse.Namespace) -> int:
    if (code := _in_a_session_of_its_own(args)) is not None:
        return code
    if args.end < args.start:
        raise UserError(f"--end({args.end})가 --start({args.start})보다 앞입니다 (--end is before --start)")
    return _days_with_faults(args, args.start, args.end, trigger="cli-backfill")


def _days_with_faults(args: argparse.Namespace, first: date, last: date, *, trigger: str) -> int:
    """`dmf run` (one day) and `dmf backfill`: the days `first`…`last` with the --fault plan, then the summary."""
    from dmf_assets.source.endpoint import resolve_endpoint

    settings, _ = _prepare()  # a bad config is refused before Dagster is even imported (≈0.2 s, not 1.2 s)
    _check_clock(settings)
    _check_days(first, last)
    days = [first + timedelta(days=i) for i in range((last - first).days + 1)]
    endpoint = resolve_endpoint(settings.source.base_url)
    if args.fault and not endpoint.in_process:
        raise UserError(FAULT_NEEDS_THE_EMULATOR)  # a plan nobody would apply
    if endpoint.in_process and (why := outside_the_emulator(first, last)):
        raise UserError(why)
    resources = _resources(settings, _faults(args.fault))
    _check_history(settings, days, resources)
    reports = _run_days(settings, days, resources, trigger=trigger)
    return _exit_code(settings, reports, _print_summary(settings, days))


def demo_end(asked: date | None, today: date) -> tuple[date, bool]:
    """The demo's last day: the one asked for, else today — or the emulator's last day once today is past it (the
    README's first command keeps working), with True when it was moved there."""
    from dmf_assets.emulator.registry import LAST_DATE

    if asked is None and today > LAST_DATE:
        return LAST_DATE, True
    return asked or today, False


def _demo(args: argparse.Namespace) -> int:
    if (code := _in_a_session_of_its_own(args)) is not None:
        return code
    from dmf_assets import links
    from dmf_assets.clock import today_kst
    from dmf_assets.report.retention import LATEST_NAME
    from dmf_assets.settings import EMULATOR_URL

    settings, home = _prepare()
    _check_clock(settings)
    n = args.days or settings.demo.days
    today = today_kst()
    end, moved = demo_end(args.end, today)
    days = [end - timedelta(days=i) for i in range(n - 1, -1, -1)]
    _check_days(days[0], days[-1])
    if why := outside_the_emulator(days[0], days[-1]):
        raise UserError(why)
    fault_day = end - timedelta(days=settings.demo.fault_days_ago)
    faults = {} if args.no_fault or fault_day < days[0] else {fault_day.isoformat(): settings.demo.fault_kind}
    resources = _resources(settings, faults, EMULATOR_URL)
    _check_history(settings, days, resources)
    print("DMF Watch 데모 — 로컬 MFDS 에뮬레이터 (키·네트워크 불필요)")
    print(f"  기간 {days[0]} ~ {days[-1]} ({n}일), Dagster 인스턴스 {home}")
    if moved:
        print(f"  오늘({today})은 에뮬레이터의 목록 밖이라 그 마지막 날까지 실행합니다 (the emulator's last day)")
    if faults:
        ((fd, fk),) = faults.items()
        print(f"  고장 주입: {fd} = {fk} (그날은 게이트가 거부하고, 다음 날이 그 공백까지 포함해 비교합니다)")
    started = time.monotonic()
    reports = _run_days(settings, days, resources, trigger="demo")
    rows = _print_summary(settings, days)
    reports_dir = settings.paths.resolve("reports_dir")
    print(f"\n총 {time.monotonic() - started:.0f}초.")
    print(f"최신 리포트 / latest workbook: {reports_dir / LATEST_NAME}")
    print(f"날짜별 리포트 / daily workbooks: {reports_dir}/DMF_리포트_YYYY-MM-DD.xlsx")
    print(
        f"UI 열기 / open the UI:  .venv/bin/dmf ui   → http://127.0.0.1:3000 (조회 페이지·리포트: {links.base_url(settings.web)})"
    )
    return _exit_code(settings, reports, rows, frozenset(date.fromisoformat(d) for d in faults))


def _ui_port_must_be_free(host: str, port: int) -> None:
    """`dg dev` whose webserver cannot bind keeps running with no UI: find out before starting it."""
    from dmf_assets.web.ports import busy_port_text

    try:
        family, _, _, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the webserver binds
            probe.bind(address)
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE:
            raise UserError(
                f"Dagster UI를 {host}:{port}에서 열 수 없습니다 / cannot listen on {host}:{port}: "
                f"{exc.strerror or exc} — dmf ui --host 127.0.0.1 --port 3000"
            ) from None
        raise UserError(busy_port_text("Dagster UI", "Dagster UI", host, port, "dmf ui --port {port}")) from None


def _stat(pid: int) -> tuple[str, int, str] | None:
    """(state, parent pid, start time) of `pid` from /proc/PID/stat; None when it is gone (or not on Linux)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[0], int(fields[1]), fields[19]  # the start time tells a reused pid apart


def _process_table() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, start time) of every live process, from /proc (Linux; empty elsewhere)."""
    table = {}
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if entry.isdigit() and (stat := _stat(int(entry))) and stat[0] != "Z":  # a zombie has exited already
            table[int(entry)] = stat[1:]
    return table


def process_start(pid: int) -> str | None:
    """The start time of `pid` while it runs (None once it has exited, a zombie included)."""
    stat = _stat(pid)
    return stat[2] if stat is not None and stat[0] != "Z" else None


def descendants(pid: int) -> dict[int, str]:
    """pid -> start time of every process below `pid`, however deep and whichever process group or session."""
    table = _process_table()
    found: dict[int, str] = {}
    parents = {pid}
    while parents:
        children = {p for p, (ppid, _) in table.items() if ppid in parents and p not in found}
        found.update((p, table[p][1]) for p in children)
        parents = children
    return found


def _still_running(tree: dict[int, str]) -> list[int]:
    table = _process_table()
    return [p for p, started in tree.items() if p in table and table[p][1] == started]


def stop_tree(pid: int, exited: Callable[[], bool], grace_s: float = 30.0) -> None:
    """Stop `dg dev` (`pid`, leader of its process group) and everything it started (webserver, daemon, code server,
    runs) within `grace_s`; `exited` says whether `dg dev` has exited. SIGTERM to `dg dev` alone first: it stops the
    webserver and the daemon, then its code server. (A SIGTERM to the whole group stopped the code server under a
    sensor tick the daemon was still evaluating, whose traceback reached the terminal.) Then SIGTERM to what is left
    of the group (a run in progress), for the rest of `grace_s` but at least 5 s; then SIGKILL — the group and any
    descendant that left it. `dmf ui` stops its tree with it, and so does its watch when `dmf ui` was killed
    (cli/ui_watch.py)."""
    tree, deadline = descendants(pid), time.monotonic() + grace_s
    if not exited():  # an exited, reaped pid may be another process's already
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    while not exited() and time.monotonic() < deadline - 5.0:
        time.sleep(0.05)
    left_s = max(5.0, deadline - time.monotonic())
    _stop_group(pid, left_s, lambda: not exited() or bool(_still_running(tree)))
    for descendant in _still_running(tree):
        with contextlib.suppress(ProcessLookupError):
            os.kill(descendant, signal.SIGKILL)


def _ui(args: argparse.Namespace) -> int:
    from dmf_assets.cli.web import start_web
    from dmf_assets.settings import PROJECT_ROOT

    settings, home = _prepare()
    web_port = args.web_port or settings.web.port
    if web_port == args.port:
        other = args.port + 1 if args.port < 65535 else args.port - 1
        raise UserError(
            f"Dagster UI 포트와 조회 페이지 포트가 같습니다 ({args.port}) / the UI and the web page port "
            f"must differ: dmf ui --port {args.port} --web-port {other}"
        )
    _ui_port_must_be_free(args.host, args.port)
    _instance().dispose()  # a new home's storage created now, in turn with other `dmf` commands (ops/instance.py)
    web, lines = start_web(settings, None, web_port, fix="dmf ui --web-port {port}")
    web.start()  # in this process: one process tree, stopped with it
    # `dg dev` with a workspace file runs `dagster dev` itself, without the advice `dagster dev` prints as it starts
    # (a Python warning, "… is superseded … Use 'dg dev' instead", in the terminal of whoever started the UI)
    cmd = [
        sys.executable,
        "-m",
        "dagster_dg_cli.cli",
        "dev",
        "-w",
        str(PROJECT_ROOT / "workspace.yaml"),
        "-h",
        args.host,
        "-p",
        str(args.port),
    ]
    print(f"Dagster UI: http://{args.host}:{args.port}   (DAGSTER_HOME={home})")
    for line in lines:
        print(line, flush=True)
    # Ctrl-C, a service manager's stop, a closed terminal — once or many times: each only marks the stop,
    # so a second signal can never cut the stop short and leave the webserver or the daemon behind
    received: list[int] = []
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda signum, _frame: received.append(signum))
    try:
        # dg dev in its own process group (it ignores SIGINT when started from a script): stopped as a group
        proc = subprocess.Popen(cmd, cwd=PROJECT_ROOT, start_new_session=True)
        watch: subprocess.Popen | None = None
        try:
            # and a watch that stops it should this process be killed outright (cli/ui_watch.py)
            watch = subprocess.Popen(
                [sys.executable, "-m", "dmf_assets.cli.ui_watch", str(os.getpid()), str(proc.pid)],
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
            while not received and proc.poll() is None:
                time.sleep(0.2)
            if received:
                print("\n종료 중… (stopping)", flush=True)
        finally:
            stop_tree(proc.pid, lambda: proc.poll() is not None)
            proc.wait()
            if watch is not None:
                watch.terminate()
                watch.wait()
    finally:
        web.stop()
    if received or proc.returncode == 0:
        return 0
    print(
        f"dmf: dg dev가 {josa(f'코드 {proc.returncode}', '으로/로')} 끝났습니다 — 위의 출력을 확인하세요 / dg dev exited with "
        f"code {proc.returncode}: see its output above",
        file=sys.stderr,
    )
    return EXIT_FAILED
