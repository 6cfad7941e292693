"""Telling people: the daily workbook by e-mail, alerts by e-mail and webhooks (Slack, Teams, JSON).

Pure of Dagster, so the sensor, the assets, the CLI and the outside watchdog all call the same code:

    notifier = notify.Notifier(settings, alerts_dir)
    notifier.deliver_day(notify.ReportDelivery.from_day_report(report, path), hold_until=None)
    notifier.send_alert(notify.Rejected(day=d, rejection=r, retry=outlook))   # None: raised before today
    notifier.flush()                                                           # re-send what is due

Every message is stored in the outbox before it is sent and re-sent on a backoff for
`[alerts] give_up_hours`. The texts come from one template module (`messages.py`). The SMTP password
comes only from the environment (DMF_SMTP_PASSWORD).
"""

from dmf_assets.notify.channels import CHANNELS, Channel, channel_settings_ko, configured_channels
from dmf_assets.notify.delivery import Notifier, Outcome
from dmf_assets.notify.messages import (
    ALERT_KINDS,
    Alert,
    Audience,
    DaemonDown,
    DeliveryGivenUp,
    Message,
    MessageContext,
    NoRetry,
    Overdue,
    Rejected,
    RejectedStreak,
    Replaced,
    ReportDelivery,
    RequestCap,
    RetriesExhausted,
    RetryOutlook,
    RunFailed,
    RunTimeout,
    SlowRun,
    WatchdogError,
    WatchlistHit,
    WithdrawalShare,
    alerts_for_day,
    compose_alert,
    compose_report,
    rejected_streak,
    report_digest,
    retries_failed_note,
    slow_run,
)
from dmf_assets.notify.outbox import STATE_KO, Outbox, OutboxError, Stored

__all__ = [
    "ALERT_KINDS",
    "CHANNELS",
    "STATE_KO",
    "Alert",
    "Audience",
    "Channel",
    "DaemonDown",
    "DeliveryGivenUp",
    "Message",
    "MessageContext",
    "NoRetry",
    "Notifier",
    "Outbox",
    "OutboxError",
    "Outcome",
    "Overdue",
    "Rejected",
    "RejectedStreak",
    "Replaced",
    "ReportDelivery",
    "RequestCap",
    "RetriesExhausted",
    "RetryOutlook",
    "RunFailed",
    "RunTimeout",
    "SlowRun",
    "Stored",
    "WatchdogError",
    "WatchlistHit",
    "WithdrawalShare",
    "alerts_for_day",
    "channel_settings_ko",
    "compose_alert",
    "compose_report",
    "configured_channels",
    "rejected_streak",
    "report_digest",
    "retries_failed_note",
    "slow_run",
]
