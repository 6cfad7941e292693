"""The outside watchdog: `dmf doctor --alert`, run by a systemd timer, not by Dagster.

Everything that warns from *inside* Dagster dies with it. This runs in its own short process and asks:
  daemon      did the Dagster daemon (scheduler, sensors) send a heartbeat recently?
              (read from the Dagster instance at DAGSTER_HOME: `get_daemon_heartbeats()`)
  report      does reports/DMF_리포트_YYYY-MM-DD.xlsx exist for the expected day (today, KST — the 06:00
              schedule collects today's partition) by 09:00 KST ([alerts] overdue_at)?
  deliveries  did every message get through? (what is due is re-sent first; a message given up FAILs)
Each problem becomes an alert through `dmf_assets.notify` (once per day and kind), and a doctor line.
An instance that cannot be read is its own alert (`watchdog_error`), never a false "daemon down".
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import date, datetime, time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dmf_assets.clock import KST, now_kst
from dmf_assets.ops.doctor import FAIL, OK, WARN, Check
from dmf_assets.ops.instance import open_instance

if TYPE_CHECKING:
    from dmf_assets.notify import Alert, Notifier
    from dmf_assets.ops.common import ProjectPaths
    from dmf_assets.settings import Settings

#: the daemons the product cannot live without: the 06:00 schedule and the follow-up/retry sensor
REQUIRED_DAEMONS = ("SCHEDULER", "SENSOR")
DEFAULT_STALE_MINUTES = 5.0  # the daemon beats every ~30 s; 5 minutes of silence is not a hiccup


@dataclass
class WatchdogResult:
    checks: list[Check]
    alerts: list = field(default_factory=list)  # notify.Outcome of alerts raised now (duplicates excluded)
    resent: list = field(default_factory=list)  # notify.Outcome of messages re-sent now


def expected_day(now: datetime) -> date:
    """The partition the 06:00 KST schedule collects on the morning of `now`: today in Korea."""
    return now.astimezone(KST).date()


def daemon_check(
    dagster_home: Path | None, now: datetime, stale_minutes: float = DEFAULT_STALE_MINUTES
) -> tuple[Check, Alert | None]:
    """(check, the alert it calls for or None). FAIL when a required daemon's newest heartbeat is missing
    or old — a `daemon_down` alert; FAIL too when the instance cannot be read — a `watchdog_error` alert,
    never `daemon_down`: not knowing is not the same as knowing the daemon stopped."""
    from dmf_assets import notify

    check = Check.named("daemon", "Dagster 데몬")
    day = expected_day(now)
    try:
        instance = open_instance(dagster_home)
        try:
            beats = instance.get_daemon_heartbeats()
        finally:
            instance.dispose()
    except Exception as exc:  # noqa: BLE001 - an instance that cannot be read is itself the problem
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        reason = f"{type(exc).__name__}: {text}"[:300]
        ko = f"Dagster 인스턴스를 읽을 수 없습니다 ({dagster_home}) — {reason}"
        failed = check(FAIL, ko, f"cannot read the Dagster instance: {reason}", {"dagster_home": str(dagster_home)})
        return failed, notify.WatchdogError(day=day, dagster_home=str(dagster_home), error=reason)
    ages: dict[str, float | None] = {}
    for daemon in REQUIRED_DAEMONS:
        beat = beats.get(daemon)
        ages[daemon] = None if beat is None else (now.timestamp() - beat.timestamp) / 60.0
    newest = max((b.timestamp for b in beats.values()), default=None)
    last = datetime.fromtimestamp(newest, KST) if newest else None
    stale = {d: a for d, a in ages.items() if a is None or a > stale_minutes}
    details = {
        "heartbeat_age_minutes": {d: None if a is None else round(a, 1) for d, a in ages.items()},
        "last_heartbeat": last.isoformat(timespec="seconds") if last else None,
        "stale_minutes": stale_minutes,
    }
    if not stale:
        worst = max(a for a in ages.values() if a is not None)
        ko, en = f"하트비트 정상 (가장 오래된 {worst:.1f}분 전)", f"heartbeats fresh (oldest {worst:.1f} min ago)"
        return check(OK, ko, en, details), None
    if all(a is None for a in ages.values()) and not beats:
        ko, en = (
            "하트비트 기록이 없습니다 — 데몬이 한 번도 실행되지 않았거나 다른 DAGSTER_HOME을 씁니다",
            "no daemon heartbeat recorded",
        )
    else:
        parts = ", ".join(f"{d} {'없음' if a is None else f'{a:.0f}분 전'}" for d, a in stale.items())
        ko, en = (
            f"하트비트가 {stale_minutes:g}분 넘게 없습니다: {parts}",
            f"no heartbeat for over {stale_minutes:g} min: {', '.join(stale)}",
        )
    alert = notify.DaemonDown(day=day, last_heartbeat=last, limit_minutes=stale_minutes, daemons=tuple(sorted(stale)))
    return check(FAIL, ko, en, details), alert


def report_check(reports_dir: Path, now: datetime, overdue_at: time = time(9, 0)) -> tuple[Check, Any]:
    """(check, the overdue alert or None). FAIL when the expected day's workbook is missing at or after
    `overdue_at` KST."""
    from dmf_assets.orchestration.alerting import overdue_alert
    from dmf_assets.report.retention import dated_workbook_name, dated_workbooks

    local = now.astimezone(KST)
    day = expected_day(local)
    path = Path(reports_dir) / dated_workbook_name(day)
    check = Check.named("report", "오늘 리포트")
    dated = dated_workbooks(Path(reports_dir))
    latest = dated[-1][0] if dated else None
    details = {"day": day.isoformat(), "path": str(path), "latest_report": latest.isoformat() if latest else None}
    if path.is_file():
        return check(OK, f"{path.name} 있음", f"{path.name} exists", details), None
    if local.time() < overdue_at:
        return check(
            OK,
            f"{day} 리포트 아직 없음 — {overdue_at:%H:%M} KST 전이라 정상",
            f"no workbook yet for {day}, before the {overdue_at:%H:%M} KST deadline",
            details,
        ), None
    overdue = check(
        FAIL,
        f"{day} 리포트가 {overdue_at:%H:%M} KST까지 만들어지지 않았습니다 (최근: {latest or '없음'})",
        f"no workbook for {day} by {overdue_at:%H:%M} KST (report overdue)",
        details,
    )
    return overdue, overdue_alert(day.isoformat(), overdue_at, latest_report=latest)


def delivery_check(notifier: Notifier, *, days: int = 7) -> Check:
    """Did every message get through? FAIL for one given up in the last `days`; WARN while some wait for
    a re-send, when no channel is set, or when e-mail goes out without a public link to the workbooks."""
    check = Check.named("deliveries", "알림 발송")
    stored = notifier.status(days)
    given_up = [m for m in stored if m.state == "given_up"]
    waiting = [m for m in stored if m.state == "pending"]
    details = {"given_up": [m.line() for m in given_up[-10:]], "pending": [m.line() for m in waiting[-10:]]}
    if given_up:
        return check(
            FAIL,
            f"발송 포기 {len(given_up)}건 — {given_up[-1].line()} (`dmf notify flush --given-up`으로 다시 보내기)",
            f"{len(given_up)} message(s) given up",
            details,
        )
    if waiting:
        return check(
            WARN,
            f"재발송 대기 {len(waiting)}건 — {waiting[-1].line()} (`dmf notify flush`로 지금 보내기)",
            f"{len(waiting)} message(s) waiting to be re-sent",
            details,
        )
    chans = notifier.channels
    if not chans:
        from dmf_assets.notify import channel_settings_ko

        return check(
            WARN,
            f"알림 채널이 설정되지 않았습니다 ({channel_settings_ko(', ', to_enable=True)}) — 경보는 data/alerts/에만 "
            "기록됩니다",
            "no notification channel configured: alerts are only written to the alerts folder",
        )
    if any(c.kind == "email" for c in chans) and not notifier.context.public_base_url:
        return check(
            WARN,
            "메일은 보내지만 [web] public_base_url이 비어 있어 메일에 리포트 링크가 "
            "없습니다(첨부만) — 받는 사람이 열 수 있는 주소를 설정하세요",
            "e-mail is configured without [web] public_base_url: mails carry no link to the workbook",
        )
    names = ", ".join(dict.fromkeys(c.kind for c in chans))
    return check(OK, f"발송 실패 없음 ({names})", "every message delivered")


def watch(settings: Settings, paths: ProjectPaths, *, now: datetime | None = None) -> WatchdogResult:
    """Run the watchdog checks, raise the alerts, release held mails whose hold ended and re-send what is due.
    Never raises for a delivery problem."""
    from dmf_assets import notify

    now = now or now_kst()
    # the timer's unit allows 300 s; sending (alerts + re-sends) gets at most 120 s of it
    notifier = notify.Notifier(settings, paths.alerts_dir, budget_s=120.0, clock=now_kst)
    result = WatchdogResult([])
    daemon, daemon_alert = daemon_check(paths.dagster_home, now)
    report, overdue = report_check(paths.reports_dir, now, settings.alerts.overdue_at)
    result.checks += [daemon, report]
    if overdue is not None and daemon_alert is not None and daemon_alert.kind == notify.DaemonDown.kind:
        overdue = replace(overdue, daemon_down=True)
    for a in (daemon_alert, overdue):
        if a is not None and (outcome := notifier.send_alert(a)) is not None:
            result.alerts.append(outcome)
    result.resent = notifier.flush()
    return result
