"""The outside watchdog: `dmf doctor --alert`, run by a systemd timer, not by Dagster.

Everything that warns from *inside* Dagster dies with it. This runs in its own short process and asks:
  daemon      did the Dagster daemon (scheduler, sensors) send a heartbeat recently?
              (read from the Dagster instance at DAGSTER_HOME: `get_daemon_heartbeats()`)
  report      does reports/DMF_리포트_YYYY-MM-DD.xlsx exist for the expected day (today, KST — the 06:00
              schedule collects today's partition) by 09:00 KST ([alerts] overdue_at)?
  deliveries  did every notification get through? (failed ones are re-sent first, bounded)
Each problem becomes an alert through `dmf_assets.notify` (once per day and kind), and a doctor line.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import date, datetime, time
from pathlib import Path
from typing import Any

from dmf_assets.clock import KST, now_kst
from dmf_assets.ops.doctor import FAIL, OK, WARN, Check

#: the daemons the product cannot live without: the 06:00 schedule and the follow-up/retry sensor
REQUIRED_DAEMONS = ("SCHEDULER", "SENSOR")
DEFAULT_STALE_MINUTES = 5.0  # the daemon beats every ~30 s; 5 minutes of silence is not a hiccup


@dataclass
class WatchdogResult:
    checks: list[Check]
    alerts: list = field(default_factory=list)  # DeliveryRecord of alerts raised now (duplicates excluded)
    resent: list = field(default_factory=list)  # DeliveryRecord of failed deliveries re-sent now

    @property
    def ok(self) -> bool:
        return all(c.status == OK for c in self.checks)


def expected_day(now: datetime) -> date:
    """The partition the 06:00 KST schedule collects on the morning of `now`: today in Korea."""
    return now.astimezone(KST).date()


def workbook_path(reports_dir: Path, day: date) -> Path:
    return Path(reports_dir) / f"DMF_리포트_{day.isoformat()}.xlsx"


def _instance(dagster_home: Path | None):
    import dagster as dg

    env = os.environ.get("DAGSTER_HOME")
    if env and (dagster_home is None or Path(env).resolve() == Path(dagster_home).resolve()):
        return dg.DagsterInstance.get()
    if dagster_home is None:
        raise RuntimeError("DAGSTER_HOME이 설정되지 않았습니다 / DAGSTER_HOME is not set")
    if not (Path(dagster_home) / "dagster.yaml").is_file():
        raise FileNotFoundError(f"{dagster_home}/dagster.yaml이 없습니다 / no dagster.yaml there")
    return dg.DagsterInstance.from_config(str(dagster_home))


def daemon_check(dagster_home: Path | None, now: datetime, stale_minutes: float = DEFAULT_STALE_MINUTES,
                 required: tuple[str, ...] = REQUIRED_DAEMONS) -> tuple[Check, dict]:
    """(check, facts for an alert). FAIL when a required daemon's newest heartbeat is missing or old."""
    label = "Dagster 데몬"
    try:
        instance = _instance(dagster_home)
        try:
            beats = instance.get_daemon_heartbeats()
        finally:
            instance.dispose()
    except Exception as exc:  # an instance that cannot be read is itself the problem
        reason = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
        return (Check("daemon", FAIL, label, f"Dagster 인스턴스를 읽을 수 없습니다 ({dagster_home}) — {reason}",
                      f"cannot read the Dagster instance: {reason}", {"dagster_home": str(dagster_home)}),
                {"detail": f"인스턴스를 읽을 수 없음 / cannot read the instance: {reason}"})
    ages: dict[str, float | None] = {}
    for daemon in required:
        beat = beats.get(daemon)
        ages[daemon] = None if beat is None else (now.timestamp() - beat.timestamp) / 60.0
    newest = max((b.timestamp for b in beats.values()), default=None)
    last = datetime.fromtimestamp(newest, KST).isoformat(timespec="seconds") if newest else None
    stale = {d: a for d, a in ages.items() if a is None or a > stale_minutes}
    details = {"heartbeat_age_minutes": {d: None if a is None else round(a, 1) for d, a in ages.items()},
               "last_heartbeat": last, "stale_minutes": stale_minutes}
    facts = {"last_heartbeat": last, "limit_minutes": stale_minutes, "daemons": sorted(stale),
             "age_minutes": max((a for a in stale.values() if a is not None), default=None)}
    if not stale:
        worst = max(a for a in ages.values() if a is not None)
        return Check("daemon", OK, label, f"하트비트 정상 (가장 오래된 {worst:.1f}분 전)",
                     f"heartbeats fresh (oldest {worst:.1f} min ago)", details), facts
    if all(a is None for a in ages.values()) and not beats:
        ko, en = "하트비트 기록이 없습니다 — 데몬이 한 번도 실행되지 않았거나 다른 DAGSTER_HOME을 씁니다", "no daemon heartbeat recorded"
    else:
        parts = ", ".join(f"{d} {'없음' if a is None else f'{a:.0f}분 전'}" for d, a in stale.items())
        ko, en = f"하트비트가 {stale_minutes:g}분 넘게 없습니다: {parts}", f"no heartbeat for over {stale_minutes:g} min: {', '.join(stale)}"
    return Check("daemon", FAIL, label, ko, en, details), facts


def report_check(reports_dir: Path, now: datetime, overdue_at: time = time(9, 0)) -> tuple[Check, dict]:
    """(check, facts). FAIL when the expected day's workbook is missing at or after `overdue_at` KST."""
    from dmf_assets.report.retention import dated_workbooks

    local = now.astimezone(KST)
    day = expected_day(local)
    path = workbook_path(reports_dir, day)
    label = "오늘 리포트"
    dated = dated_workbooks(Path(reports_dir))
    latest = dated[-1][0].isoformat() if dated else None
    facts = {"expected_at": f"{overdue_at:%H:%M}", "latest_report": latest, "workbook": f"reports/{path.name}"}
    details = {"day": day.isoformat(), "path": str(path), "latest_report": latest}
    if path.is_file():
        return Check("report", OK, label, f"{path.name} 있음", f"{path.name} exists", details), facts
    if local.time() < overdue_at:
        return Check("report", OK, label, f"{day} 리포트 아직 없음 — {overdue_at:%H:%M} KST 전이라 정상",
                     f"no workbook yet for {day}, before the {overdue_at:%H:%M} KST deadline", details), facts
    return Check("report", FAIL, label, f"{day} 리포트가 {overdue_at:%H:%M} KST까지 만들어지지 않았습니다 (최근: {latest or '없음'})",
                 f"no workbook for {day} by {overdue_at:%H:%M} KST (report overdue)", details), facts


def delivery_check(settings: Any, root: Path | None = None) -> Check:
    """Did every notification get through? WARN with the latest failure; WARN when no channel is set.
    (`settings`: a Settings with the project `root`, or a notify.NotifyConfig.) Plain `dmf doctor` can
    show it too: `checks.append(delivery_check(settings, paths.root))`."""
    from dmf_assets import notify

    cfg = settings if isinstance(settings, notify.NotifyConfig) else notify.notify_config(
        settings, _alerts_dir(settings, Path(root)) if root else None)
    pending = notify.pending_failures(cfg)
    label = "알림 발송"
    channels = ("e-mail" if cfg.email.enabled else "") + (f" webhook×{len(cfg.webhook_urls)}" if cfg.webhook_urls else "")
    if pending:
        return Check("deliveries", WARN, label, f"발송 실패 {len(pending)}건 — 최근: {pending[-1].line()}",
                     f"{len(pending)} notification(s) not delivered", {"failures": [r.line() for r in pending[-10:]]})
    if not cfg.has_channels:
        return Check("deliveries", WARN, label, "알림 채널이 설정되지 않았습니다 ([alerts] webhook_urls, "
                     "[alerts.email] smtp_host/recipients) — 경보는 data/alerts/에만 기록됩니다",
                     "no notification channel configured: alerts are only written to the alerts folder")
    return Check("deliveries", OK, label, f"발송 실패 없음 ({channels.strip()})", "every notification delivered")


def _alerts_dir(settings: Any, root: Path) -> Path:
    p = Path(getattr(getattr(settings, "paths", None), "alerts_dir", "data/alerts"))
    return p if p.is_absolute() else root / p


def watch(settings: Any, paths: Any, *, now: datetime | None = None, alert: bool = True,
          stale_minutes: float = DEFAULT_STALE_MINUTES, **notify_overrides: Any) -> WatchdogResult:
    """Run the watchdog checks; with `alert`, raise the alerts and re-send failed deliveries.

    `paths`: an `ops.common.ProjectPaths` (root, reports_dir, dagster_home). Never raises for a
    delivery problem (the notify layer records those).
    """
    from dmf_assets import notify

    now = now or now_kst()
    # the timer's unit allows 300 s; sending (alerts + re-sends) gets at most 120 s of it
    cfg = notify.notify_config(settings, _alerts_dir(settings, Path(paths.root)), **{"budget_s": 120.0, **notify_overrides})
    day = expected_day(now).isoformat()
    result = WatchdogResult([])

    check, facts = daemon_check(paths.dagster_home, now, stale_minutes)
    result.checks.append(check)
    if alert and check.status == FAIL:
        record = notify.send_alert(cfg, notify.Alert(notify.DAEMON_DOWN, day, facts))
        if record is not None:
            result.alerts.append(record)

    check, facts = report_check(paths.reports_dir, now, cfg.overdue_at)
    result.checks.append(check)
    if alert and check.status == FAIL:
        note = "Dagster 데몬도 멈춰 있습니다 (위 알림 참조)." if result.checks[0].status == FAIL else ""
        record = notify.send_alert(cfg, notify.alert_overdue(day, note=note, **facts))
        if record is not None:
            result.alerts.append(record)

    if alert:
        result.resent = notify.retry_failed(cfg)
    result.checks.append(delivery_check(cfg))
    return result
