"""Telling people: the daily workbook by e-mail, alerts by e-mail and webhooks (Slack, Teams, JSON).

Pure of Dagster, so the sensor, the assets, the CLI and the outside watchdog all call the same code:

    from dmf_assets import notify
    notify.deliver_report(settings, notify.ReportDelivery.from_day_report(report, path, url=url))
    notify.send_alert(settings, notify.alert_rejected(day, gate=2, observed=..., threshold=...,
                                                      comparison_base=base, retry_at=when))
    notify.pending_failures(settings)   # what did not get through (doctor, UI)
    notify.retry_failed(settings)       # try those again (sensor tick, watchdog timer)

`send_alert` returns None for a duplicate (one alert per day and kind). Nothing here raises into the
pipeline; failures are records. The SMTP password comes only from the environment (DMF_SMTP_PASSWORD).
"""

from dmf_assets.notify.config import EmailConfig, NotifyConfig, notify_config
from dmf_assets.notify.delivery import (
    ChannelResult,
    DeliveryRecord,
    deliver_day,
    deliver_report,
    delivery_summary,
    pending_failures,
    read_ledger,
    retry_failed,
    send_alert,
    send_test,
)
from dmf_assets.notify.messages import (
    ALERT_KINDS,
    DAEMON_DOWN,
    OVERDUE,
    REJECTED,
    REJECTED_STREAK,
    REQUEST_CAP,
    RETRIES_EXHAUSTED,
    RETRY_SUCCEEDED,
    RUN_FAILED,
    RUN_TIMEOUT,
    SLOW_RUN,
    TRANSIENT_GATES,
    WATCHLIST_HIT,
    WITHDRAWAL_SHARE,
    Alert,
    EventLine,
    Message,
    ReportDelivery,
    alert_daemon_down,
    alerts_for_day,
    alert_overdue,
    alert_rejected,
    alert_rejected_from_metadata,
    alert_rejected_streak,
    alert_request_cap,
    alert_retries_exhausted,
    alert_retry_succeeded,
    alert_run_failed,
    alert_run_timeout,
    alert_slow_run,
    alert_watchlist_hit,
    alert_withdrawal_share,
    compose_alert,
    compose_report,
    event_sentence,
    rejected_streak,
    slow_run,
    withdrawal_share_exceeded,
)

__all__ = [name for name in dir() if not name.startswith("_")]
