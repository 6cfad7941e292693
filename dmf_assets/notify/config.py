"""Notification settings read off `Settings`, with the documented defaults while a section is absent.

The names are the contract with `dmf_assets/settings.py` (`[alerts]`, `[alerts.email]`, `[retry]`,
`[runs]` in config/dmf.toml). `getattr` with a default keeps this module working against a settings
object that does not have a section yet. The SMTP password is never configuration: it is read from
the environment variable DMF_SMTP_PASSWORD at the moment of sending, and never stored or logged.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import time
from pathlib import Path
from typing import Any

PASSWORD_ENV = "DMF_SMTP_PASSWORD"


def _get(obj: Any, name: str, default: Any) -> Any:
    value = getattr(obj, name, None) if obj is not None else None
    if value is None and isinstance(obj, dict):
        value = obj.get(name)
    return default if value is None else value


@dataclass(frozen=True)
class EmailConfig:
    smtp_host: str = ""
    smtp_port: int = 25
    starttls: bool = False
    username: str = ""
    sender: str = ""
    recipients: tuple[str, ...] = ()
    timeout_s: float = 30.0

    @property
    def enabled(self) -> bool:
        return bool(self.smtp_host and self.recipients)

    @property
    def from_address(self) -> str:
        return self.sender or self.username or "dmf-watch@localhost"

    def password(self) -> str | None:
        """The SMTP password, from the environment only (None when no login is configured)."""
        if not self.username:
            return None
        return os.environ.get(PASSWORD_ENV, "")


@dataclass(frozen=True)
class NotifyConfig:
    alerts_dir: Path
    webhook_urls: tuple[str, ...] = ()
    email: EmailConfig = field(default_factory=EmailConfig)
    slow_run_factor: float = 3.0
    withdrawal_share_max: float = 0.02
    rejected_streak: int = 3
    overdue_at: time = time(9, 0)
    transient_attempts: int = 3
    retry_interval_minutes: int = 30
    run_max_minutes: int = 30
    report_base_url: str = ""
    #: delivery attempts per channel and the pause before each retry (seconds): short and bounded,
    #: because a sensor tick or a run step is waiting
    delivery_attempts: int = 3
    delivery_backoff_s: tuple[float, ...] = (1.0, 3.0)
    webhook_timeout_s: float = 10.0
    #: wall-time budget of one delivery round (all channels, attempts and pauses), None = unbounded.
    #: A sensor tick passes e.g. 20 s: what does not get through in time is recorded as failed and
    #: re-sent by `retry_failed` (the next tick, or the watchdog timer).
    budget_s: float | None = None

    @property
    def has_channels(self) -> bool:
        return bool(self.webhook_urls) or self.email.enabled


def _overdue_time(value: Any) -> time:
    if isinstance(value, time):
        return value
    try:
        hh, mm = str(value).split(":")
        return time(int(hh), int(mm))
    except (ValueError, TypeError):
        return time(9, 0)


def notify_config(settings: Any, alerts_dir: str | Path | None = None, **overrides: Any) -> NotifyConfig:
    """The notification settings of `settings` (a `dmf_assets.settings.Settings`).

    `alerts_dir` overrides `settings.paths.alerts_dir` (e.g. a workspace root other than the project);
    keyword overrides replace single fields (tests use `delivery_backoff_s=(0.05,)`).
    """
    alerts = _get(settings, "alerts", None)
    email = _get(alerts, "email", None)
    retry = _get(settings, "retry", None)
    runs = _get(settings, "runs", None)
    report = _get(settings, "report", None)
    if alerts_dir is None:
        paths = _get(settings, "paths", None)
        resolve = getattr(paths, "resolve", None)
        alerts_dir = resolve("alerts_dir") if resolve else Path(_get(paths, "alerts_dir", "data/alerts"))
    base_url = ""
    if report is not None:
        base_url = str(getattr(report, "base_url", "") or "")
    cfg = NotifyConfig(
        alerts_dir=Path(alerts_dir),
        webhook_urls=tuple(u for u in _get(alerts, "webhook_urls", ()) if u),
        email=EmailConfig(
            smtp_host=str(_get(email, "smtp_host", "")),
            smtp_port=int(_get(email, "smtp_port", 25)),
            starttls=bool(_get(email, "starttls", False)),
            username=str(_get(email, "username", "")),
            sender=str(_get(email, "sender", "")),
            recipients=tuple(r for r in _get(email, "recipients", ()) if r),
            timeout_s=float(_get(email, "timeout_s", 30.0)),
        ),
        slow_run_factor=float(_get(alerts, "slow_run_factor", 3.0)),
        withdrawal_share_max=float(_get(alerts, "withdrawal_share_max", 0.02)),
        rejected_streak=int(_get(alerts, "rejected_streak", 3)),
        overdue_at=_overdue_time(_get(alerts, "overdue_at", "09:00")),
        transient_attempts=int(_get(retry, "transient_attempts", 3)),
        retry_interval_minutes=int(_get(retry, "interval_minutes", 30)),
        run_max_minutes=int(_get(runs, "max_minutes", 30)),
        report_base_url=base_url,
    )
    if overrides:
        import dataclasses

        cfg = dataclasses.replace(cfg, **overrides)
    return cfg
