"""A channel registers like an alert kind (issue 33): one class — its settings, the channels they name, whose
messages it carries, how it sends, how texts name it — and its settings section. Nothing else is edited: the
notifier, the outbox, `dmf doctor`'s delivery check and the texts loop over `notify.CHANNELS`."""

from __future__ import annotations

from datetime import date, datetime
from pathlib import Path

import httpx
import pytest
from pydantic import BaseModel, ConfigDict, Field

from dmf_assets import notify
from dmf_assets.domain.gates import Rejection
from dmf_assets.notify import channels
from dmf_assets.notify.messages import NoRetry, RetryOutlook
from dmf_assets.ops.watchdog import delivery_check
from dmf_assets.settings import Alerts, Settings
from dmf_assets_tests.notify_servers import webhook_receiver

DAY = date(2026, 11, 27)


def _pager_settings(alerts_dir: Path, **alerts: object) -> Settings:
    """The settings a new channel brings: its own section under [alerts] ([alerts.pager] url = …), typed and
    strict like every other (here a subclass of the settings; in the product, a field of `settings.Alerts`)."""

    class PagerSection(BaseModel):
        model_config = ConfigDict(extra="forbid", frozen=True, strict=True)
        url: str = ""

    class AlertsWithPager(Alerts):
        pager: PagerSection = Field(default_factory=PagerSection)

    class SettingsWithPager(Settings):
        alerts: AlertsWithPager = Field(default_factory=AlertsWithPager)

    return SettingsWithPager.model_validate({"alerts": alerts, "paths": {"alerts_dir": str(alerts_dir)}})


@pytest.fixture
def own_registry():
    """A channel class a test defines is registered for that test only."""
    before = dict(notify.CHANNELS)
    yield
    notify.CHANNELS.clear()
    notify.CHANNELS.update(before)


def test_a_channel_class_registered_in_a_test_is_configured_used_and_named(tmp_path, own_registry):
    class Pager(
        channels.Channel, name="pager", section="pager", setting_ko="[alerts.pager]", enable_ko="[alerts.pager] url"
    ):
        """The on-call engineer's pager: a JSON POST of the subject, alerts only."""

        url: str

        @classmethod
        def configured(cls, section):
            audiences = frozenset({notify.Audience.ONCALL})
            return [cls(key="pager", target="pager", url=section.url, audiences=audiences)] if section.url else []

        def send(self, message, attachment, timeout_s):
            response = httpx.post(self.url, json={"page": message.subject}, timeout=timeout_s)
            if response.status_code >= 300:
                raise channels.DeliveryError(f"pager HTTP {response.status_code}")
            return f"HTTP {response.status_code}"

    assert notify.CHANNELS["pager"] is Pager

    # named: with no channel configured, doctor says which settings switch one on — the pager's among them
    quiet = notify.Notifier(_pager_settings(tmp_path / "quiet"), tmp_path / "quiet")
    check = delivery_check(quiet)
    assert check.status == "WARN" and "[alerts.pager] url" in check.message_ko, check
    given_up = notify.DeliveryGivenUp(
        day=DAY,
        subject="[DMF] x",
        channels=("pager",),
        attempts=3,
        last_error="HTTP 503",
        since=datetime(2026, 11, 27),
        hours=6,
    )
    text = notify.compose_alert(given_up, notify.MessageContext(emulator=True)).text()
    assert "이 채널의 설정([alerts.email], [alerts] webhook_urls, [alerts.pager])과 서버 상태를" in text
    assert "부터 6시간 동안 3번 보냈지만" in text  # how long it was tried, as the alert says it

    with webhook_receiver() as pager, webhook_receiver() as hook:
        settings = _pager_settings(
            tmp_path / "alerts", pager={"url": pager.url("/page")}, webhook_urls=[f"json+{hook.url()}"]
        )
        notifier = notify.Notifier(settings, tmp_path / "alerts")
        # configured: its settings name it, beside the webhook, in the registry's order
        assert [c.kind for c in notifier.channels] == ["webhook", "pager"]
        assert notify.configured_channels(settings)[1] == Pager(
            key="pager", target="pager", url=pager.url("/page"), audiences=frozenset({notify.Audience.ONCALL})
        )

        # used: an alert (the on-call engineer's) is paged and stored as sent on it …
        rejection = Rejection(2, "수신 8,893건 / totalCount 9,213건", "수신 건수 = totalCount", "320건 누락", None)
        retry = RetryOutlook(attempt=1, of=3, why_not=NoRetry.NOT_TRANSIENT)
        outcome = notifier.send_alert(notify.Rejected(day=DAY, rejection=rejection, retry=retry))
        assert outcome is not None and outcome.state == "delivered", outcome
        assert pager.next()["json"] == {"page": outcome.subject} and hook.next()["json"]["kind"] == "rejected"
        assert {s.channel for s in outcome.stored.sends} == {"pager", settings_key(notifier, "webhook")}
        # … the team's message is not (its audience)
        assert [c.kind for c in notifier.channels_for(notify.Audience.TEAM)] == ["webhook"]

        # named again: doctor's line lists the kinds configured
        assert delivery_check(notifier).message_ko == "발송 실패 없음 (webhook, pager)"


def settings_key(notifier: notify.Notifier, kind: str) -> str:
    return next(c.key for c in notifier.channels if c.kind == kind)
