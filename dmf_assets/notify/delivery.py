"""Telling people, with a memory: store first, send, and keep re-sending what did not get through.

`Notifier` is bound to one `Settings` and one alerts folder. Every alert and workbook mail goes into the
outbox (`outbox.py`) before anything is sent, then each channel is tried once; what fails is re-sent by
`flush()` on the backoff schedule — from the sensor tick, the watchdog timer or `dmf notify flush` — for
`[alerts] give_up_hours`. A message given up raises one `delivery_given_up` alert on the other channels.

Besides the outbox the alerts folder keeps, for people and other systems:
  {day}-{kind}.json   each alert (subject, text, facts) as it was raised
  alerts.log          one line per alert
Nothing here raises into the pipeline: a failure to store or send is logged and returned.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta
from pathlib import Path

from dmf_assets.clock import now_kst
from dmf_assets.domain.model import DayStatus
from dmf_assets.fsutil import atomic_write_text
from dmf_assets.notify.channels import Channel, DeliveryError, configured_channels, scrub
from dmf_assets.notify.messages import (
    RETRIES_FAILED_HEADING,
    Alert,
    Audience,
    DeliveryGivenUp,
    Message,
    MessageContext,
    Replaced,
    ReportDelivery,
    alerts_for_day,
    compose_alert,
    compose_report,
    retries_failed_note,
    test_message,
)
from dmf_assets.notify.outbox import (
    DELIVERED,
    GIVEN_UP,
    HELD,
    PENDING,
    RECORDED,
    SEND_GIVEN_UP,
    SENT,
    Outbox,
    OutboxError,
    Stored,
)
from dmf_assets.settings import Settings

log = logging.getLogger("dmf_assets.notify")

ALERT_LOG = "alerts.log"


@dataclass(frozen=True)
class Outcome:
    """What became of one message now: stored (and how it stands), or why it could not be stored."""

    subject: str
    state: str  # an outbox state, or "failed" when it could not even be stored
    line: str
    stored: Stored | None = None

    def metadata(self) -> dict[str, str]:
        """Plain values for a materialization's metadata (the Dagster UI shows them)."""
        return {"delivery_status": self.state, "delivery": self.line}


class Notifier:
    def __init__(
        self,
        settings: Settings,
        alerts_dir: Path,
        *,
        budget_s: float | None = None,
        clock: Callable[[], datetime] = now_kst,
        config_file: str | None = None,
    ) -> None:
        self.settings = settings
        self.alerts_dir = Path(alerts_dir)
        self.outbox = Outbox(self.alerts_dir, give_up_after=timedelta(hours=settings.alerts.give_up_hours))
        self.budget_s = budget_s
        self.clock = clock
        self.context = MessageContext.of(settings, config_file)

    @property
    def channels(self) -> list[Channel]:
        return configured_channels(self.settings)

    def channels_for(self, audience: Audience) -> list[Channel]:
        return [c for c in self.channels if c.carries(audience)]

    # --- alerts --------------------------------------------------------------------------------

    def send_alert(self, alert: Alert, *, only: set[str] | None = None) -> Outcome | None:
        """Tell people about `alert` once: None if this (day, kind) was raised before. `only`: the channel
        keys to use (a given-up message is reported on the other channels)."""
        message = compose_alert(alert, self.context)
        now = self.clock()
        chans = [c for c in self.channels_for(message.audience) if only is None or c.key in only]
        try:
            message_id = self.outbox.add(
                message.to_dict(),
                channels=[(c.key, c.target) for c in chans],
                now=now,
                dedupe=alert.key,
                run_id=alert.run_id,
            )
        except OutboxError as exc:
            return self._unstored(message, str(exc))
        if message_id is None:
            return None
        self._write_alert_file(alert, message, now)
        return self._settle(message_id)

    def _write_alert_file(self, alert: Alert, message: Message, now: datetime) -> None:
        try:
            record = {
                "day": alert.day.isoformat(),
                "kind": alert.kind,
                "key": alert.key,
                "subject": message.subject,
                "message": message.title,
                "raised_at": now.isoformat(timespec="seconds"),
                "run_id": alert.run_id,
                "facts": alert.facts(),
                "text": message.text(),
            }
            atomic_write_text(self.alerts_dir / f"{alert.key}.json", json.dumps(record, ensure_ascii=False, indent=1))
            with open(self.alerts_dir / ALERT_LOG, "a", encoding="utf-8") as fh:
                fh.write(f"{record['raised_at']}\t{alert.kind}\t{record['day']}\t{message.subject}\n")
        except OSError as exc:  # the outbox has it; the human-readable copy is a convenience
            log.warning("알림 파일을 쓰지 못했습니다 / cannot write the alert file: %s", exc)

    # --- the workbook mail -----------------------------------------------------------------------

    def deliver_report(
        self, delivery: ReportDelivery, *, hold_until: datetime | None = None, corrections_only: bool = False
    ) -> Outcome | None:
        """Store the day's workbook mail and send it — or hold it until `hold_until` while a same-morning
        retry may still change the day. None: nothing to send — the day's last mail already says exactly this
        (same digest), or one that does is on its way. A mail that reads differently from one that already
        reached people is a correction (정정) naming it (docs/DOMAIN.md §9). `corrections_only` (a backfill, the
        demo: they fill no inbox): send only such a correction."""
        day = delivery.day.isoformat()
        try:
            previous = self.outbox.day_reports(day)
        except OutboxError as exc:
            previous, problem = [], str(exc)
        else:
            problem = ""
        told = [r for r in previous if _told(r)]
        waiting = [r for r in previous if r.state in (HELD, PENDING) and r not in told]
        same = next((r for r in reversed(waiting) if r.digest == delivery.digest), None)
        if same is not None:  # on its way already
            if hold_until is None and same.state == HELD:  # the day is decided: the held mail goes out as it is
                note = retries_failed_note(delivery.retries_failed) if delivery.retries_failed else None
                self.outbox.release(same.id, now=self.clock(), note=note)
                return self._settle(same.id)
            return None
        if told and told[-1].digest == delivery.digest:
            if waiting:  # they would replace the mail people have, which is right again, with a stale one
                self.outbox.supersede_day_reports(day, now=self.clock())
            return None
        reached = next((r for r in reversed(told) if _reached(r)), None)
        if corrections_only and reached is None:
            return None
        message = compose_report(delivery, self.context, replaces=_replaced(reached) if reached else None)
        attachment = delivery.workbook
        if attachment is not None and not attachment.is_file():  # the mail says so; no link to a missing file
            log.warning("리포트 파일이 없어 첨부 없이 보냅니다 / workbook missing, sending without it: %s", attachment)
            attachment, message = None, replace(message, link="")
        if problem:
            return self._unstored(message, problem, attachment)
        try:
            message_id = self.outbox.add(
                message.to_dict(),
                channels=[(c.key, c.target) for c in self.channels_for(message.audience)],
                now=self.clock(),
                digest=delivery.digest,
                attachment=str(attachment) if attachment else None,
                hold_until=hold_until,
                run_id=delivery.run_id,
            )
        except OutboxError as exc:
            return self._unstored(message, str(exc), attachment)
        assert message_id is not None
        return self._settle(message_id)

    def deliver_day(
        self, delivery: ReportDelivery, *, hold_until: datetime | None = None, corrections_only: bool = False
    ) -> tuple[Outcome | None, list[Outcome]]:
        """The workbook mail, then the alerts the day raises by itself (watchlist hit, withdrawal share) —
        with `corrections_only` (a backfill), only the correction of a mail that went out, and no alert."""
        report = self.deliver_report(delivery, hold_until=hold_until, corrections_only=corrections_only)
        if corrections_only:
            return report, []
        alerts = alerts_for_day(delivery, withdrawal_share_max=self.settings.alerts.withdrawal_share_max)
        raised = [o for o in (self.send_alert(a) for a in alerts) if o is not None]
        return report, raised

    def held_reports(self) -> list[Stored]:
        try:
            return self.outbox.held()
        except OutboxError:
            return []

    def release(self, message_id: int, note: str | None = None) -> Outcome | None:
        """Send a held workbook mail now (its day is decided), with `note` added to it."""
        if not self.outbox.release(message_id, now=self.clock(), note=note):
            return None
        return self._settle(message_id)

    # --- sending and re-sending --------------------------------------------------------------------

    def _settle(self, message_id: int) -> Outcome:
        """Try the new message's sends now (once each) and say how it stands."""
        self._send_due(message_id=message_id, force=True)
        stored = self.outbox.get(message_id)
        return Outcome(stored.subject, stored.state, stored.line(), stored)

    def flush(self, *, force: bool = False, given_up: bool = False) -> list[Outcome]:
        """Send what is due now (with `force`: everything pending; with `given_up`: given-up messages
        too), and release held mails whose hold has ended. Never raises."""
        try:
            now = self.clock()
            if given_up:
                self.outbox.requeue_given_up(now=now)
            for held in self.outbox.held():
                if held.hold_until and held.hold_until <= now.isoformat(timespec="seconds"):
                    self.outbox.release(held.id, now=now)
            return self._send_due(force=force)
        except OutboxError as exc:
            log.warning("%s", exc)
            return []

    def _send_due(self, *, force: bool, message_id: int | None = None) -> list[Outcome]:
        deadline = None if self.budget_s is None else time.monotonic() + self.budget_s
        by_key = {c.key: c for c in self.channels}
        touched: dict[int, Stored] = {}
        for stored, send in self.outbox.claim_due(now=self.clock(), force=force, message_id=message_id):
            channel = by_key.get(send.channel)
            left = None if deadline is None else deadline - time.monotonic()
            error: str | None = None  # a channel no longer configured: its send is dropped
            if channel is not None and left is not None and left < 0.5:
                error = "시간 예산 소진 — 다음 차례에 보냅니다 / time budget used up"
            elif channel is not None:
                message = Message.from_dict(stored.message)
                if stored.note:
                    message = replace(message, sections=(*message.sections, (RETRIES_FAILED_HEADING, stored.note)))
                attachment = Path(stored.attachment) if stored.attachment else None
                if attachment is not None and not attachment.is_file():
                    attachment = None
                try:
                    channel.send(message, attachment, 30.0 if left is None else max(0.5, left))
                except DeliveryError as exc:
                    error = str(exc)
                except Exception as exc:  # noqa: BLE001 - never into the pipeline
                    error = scrub(f"{type(exc).__name__}: {exc}", *channel.secrets)
            touched[stored.id] = self.outbox.record_attempt(
                stored.id, send.channel, now=self.clock(), error=error, dropped=channel is None
            )
        out = []
        for stored in touched.values():
            (log.info if stored.state == DELIVERED else log.warning)("%s", stored.line())
            if stored.state == GIVEN_UP:
                self._given_up(stored)
            out.append(Outcome(stored.subject, stored.state, stored.line(), stored))
        return out

    def _given_up(self, stored: Stored) -> None:
        failed = [s for s in stored.sends if s.state == SEND_GIVEN_UP]
        if not failed:  # every send was dropped (its channel is no longer configured): no delivery failed to report
            return
        others = {c.key for c in self.channels_for(Audience.ONCALL)} - {s.channel for s in failed}
        since = datetime.fromisoformat(stored.created_at)
        alert = DeliveryGivenUp(
            day=date.fromisoformat(stored.day),
            subject=stored.subject,
            channels=tuple(s.target for s in failed),
            attempts=max(s.attempts for s in failed),
            last_error=failed[-1].last_error or "알 수 없음",
            since=since,
            hours=int((self.clock() - since).total_seconds() // 3600),
        )
        if stored.kind != DeliveryGivenUp.kind:  # a given-up notice about a given-up notice would loop
            self.send_alert(alert, only=others)

    def _unstored(self, message: Message, problem: str, attachment: Path | None = None) -> Outcome:
        """The outbox cannot be written: still try every channel once, so people are told anyway."""
        log.warning("%s — 저장하지 못한 채 한 번만 보냅니다 / sending once without storing", problem)
        results = [
            f"{channel.target} sent" if error is None else f"{channel.target} failed ({error})"
            for channel, error in _send_once(self.channels_for(message.audience), message, attachment)
        ]
        line = f"{message.day} {message.kind}: 저장 실패(발송함) — {problem}; " + "; ".join(results)
        return Outcome(message.subject, "failed", line)

    # --- reading -----------------------------------------------------------------------------------

    def status(self, days: int = 7) -> list[Stored]:
        try:
            return self.outbox.recent(self.clock() - timedelta(days=days))
        except OutboxError as exc:
            log.warning("%s", exc)
            return []

    def send_test(self) -> list[tuple[Channel, str | None]]:
        """A test message to every channel, once, not stored: (channel, error or None)."""
        return _send_once(self.channels, test_message(self.clock()), None)


def _send_once(channels: list[Channel], message: Message, attachment: Path | None) -> list[tuple[Channel, str | None]]:
    """`message` sent once to each channel, unstored: (channel, error or None) — one channel's failure, whatever
    went wrong, never stops the others."""
    out: list[tuple[Channel, str | None]] = []
    for channel in channels:
        try:
            channel.send(message, attachment, 30.0)
            out.append((channel, None))
        except Exception as exc:  # noqa: BLE001 - every channel's answer is reported
            out.append((channel, scrub(str(exc))))
    return out


def _told(stored: Stored) -> bool:
    """The mail went out (to some channel at least), or was recorded where no channel is configured."""
    return stored.state in (DELIVERED, RECORDED) or _reached(stored)


def _reached(stored: Stored) -> bool:
    """The mail reached people: some channel accepted it."""
    return any(s.state == SENT for s in stored.sends)


def _replaced(stored: Stored) -> Replaced:
    """A mail that reached people, as a correction names it."""
    sent = max((s.sent_at for s in stored.sends if s.sent_at), default=stored.updated_at)
    status = stored.message.get("status")
    return Replaced(stored.subject, datetime.fromisoformat(sent), DayStatus.of_value(status) if status else None)
