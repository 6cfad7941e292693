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

from dmf_assets.notify.channels import CHANNELS as CHANNELS
from dmf_assets.notify.channels import channel_settings_ko as channel_settings_ko
from dmf_assets.notify.channels import configured_channels as configured_channels
from dmf_assets.notify.delivery import Notifier as Notifier
from dmf_assets.notify.delivery import Outcome as Outcome
from dmf_assets.notify.messages import ALERT_KINDS as ALERT_KINDS
from dmf_assets.notify.messages import Alert as Alert
from dmf_assets.notify.messages import Audience as Audience
from dmf_assets.notify.messages import DaemonDown as DaemonDown
from dmf_assets.notify.messages import DeliveryGivenUp as DeliveryGivenUp
from dmf_assets.notify.messages import MessageContext as MessageContext
from dmf_assets.notify.messages import NoRetry as NoRetry
from dmf_assets.notify.messages import Overdue as Overdue
from dmf_assets.notify.messages import Redone as Redone
from dmf_assets.notify.messages import Rejected as Rejected
from dmf_assets.notify.messages import RejectedStreak as RejectedStreak
from dmf_assets.notify.messages import Replaced as Replaced
from dmf_assets.notify.messages import ReportDelivery as ReportDelivery
from dmf_assets.notify.messages import RequestCap as RequestCap
from dmf_assets.notify.messages import RetriesExhausted as RetriesExhausted
from dmf_assets.notify.messages import RetryOutlook as RetryOutlook
from dmf_assets.notify.messages import RunFailed as RunFailed
from dmf_assets.notify.messages import RunTimeout as RunTimeout
from dmf_assets.notify.messages import SlowRun as SlowRun
from dmf_assets.notify.messages import WatchdogError as WatchdogError
from dmf_assets.notify.messages import WatchlistHit as WatchlistHit
from dmf_assets.notify.messages import WithdrawalShare as WithdrawalShare
from dmf_assets.notify.messages import compose_alert as compose_alert
from dmf_assets.notify.messages import compose_report as compose_report
from dmf_assets.notify.messages import rejected_streak as rejected_streak
from dmf_assets.notify.messages import report_digest as report_digest
from dmf_assets.notify.messages import retries_failed_note as retries_failed_note
from dmf_assets.notify.messages import slow_run as slow_run
from dmf_assets.notify.outbox import STATE_KO as STATE_KO
