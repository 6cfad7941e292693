"""Where messages go: one class per kind of channel — SMTP e-mail (standard library) and webhooks (httpx):
generic JSON, Slack, Teams — registered in `CHANNELS` as the alert kinds register in `ALERT_KINDS`.

A channel class declares its settings (`section`: its key under [alerts]), the channels those settings name
(`configured`), whose messages each carries (`audiences`), how it sends (`send`) and how a text names it
(`setting_ko`, `enable_ko`); `configured_channels`, the "no channel" lines of `dmf notify test` and `dmf doctor`
and the given-up alert loop over the registry. A new channel = one class here and its settings in `settings.Alerts`.

Each `send` makes ONE attempt and raises `DeliveryError` with a short, secret-free reason; retrying and
recording is `delivery.py`'s job. A webhook's flavour is recognised by host:
  hooks.slack.com                         -> Slack incoming-webhook payload (text + blocks)
  *.webhook.office.com, *.logic.azure.com, *.powerplatform.com
                                          -> Teams: a message with an Adaptive Card attachment (accepted by
                                             the classic connector URLs and by Workflows/Power Automate)
  anything else                           -> generic JSON {source, type, kind, day, level, subject, text, facts}
A `slack+` / `teams+` / `json+` prefix forces the flavour for other hosts (Mattermost and Rocket.Chat take
Slack's format; a Teams relay behind a proxy): `slack+https://chat.example.co.kr/hooks/abc`.
"""

from __future__ import annotations

import hashlib
import html
import mimetypes
import os
import re
import smtplib
import ssl
from dataclasses import dataclass
from email import encoders
from email.header import Header
from email.message import Message as Message_
from email.mime.base import MIMEBase
from email.mime.multipart import MIMEMultipart
from email.mime.text import MIMEText
from email.utils import format_datetime, make_msgid
from pathlib import Path
from typing import Any, ClassVar, dataclass_transform
from urllib.parse import urlsplit

import httpx

from dmf_assets.clock import now_kst
from dmf_assets.notify.messages import CRITICAL, FOOTER, INFO, REPORT, TEST, WARNING, Audience, Message
from dmf_assets.report.output import XLSX
from dmf_assets.settings import SMTP_PASSWORD_ENV, WEBHOOK_PREFIXES, AlertEmail, Settings

USER_AGENT = "DMF-Watch-notify/1"
WEBHOOK_TIMEOUT_S = 10.0
_URL = re.compile(r"https?://\S+")


class DeliveryError(Exception):
    """One failed attempt; the message is safe to store (no secret, no URL path)."""

    def __init__(self, reason: str, *, permanent: bool = False):
        super().__init__(reason)
        self.permanent = permanent  # retrying will not help (e.g. 400 Bad Request, auth refused)


def redact_url(url: str) -> str:
    """scheme://host/… — webhook paths and queries are credentials (Slack, Teams sig=)."""
    prefix, url = split_webhook(url)
    parts = urlsplit(url)
    host = parts.hostname or "?"
    port = f":{parts.port}" if parts.port else ""
    path = "/…" if parts.path not in ("", "/") or parts.query else ""
    return f"{prefix}{parts.scheme}://{host}{port}{path}"


def scrub(text: str, *secrets: str | None) -> str:
    """An error text with URLs reduced to their host and every secret removed."""
    out = _URL.sub(lambda m: redact_url(m.group(0)), str(text))
    for s in secrets:
        if s:
            out = out.replace(s, "***")
    return out.strip().splitlines()[0][:300] if out.strip() else ""


# --- the registry ------------------------------------------------------------------------------------

#: every kind of channel by name, in the order `configured_channels` lists them and the texts name them
CHANNELS: dict[str, type[Channel]] = {}


@dataclass_transform(kw_only_default=True, frozen_default=True)
@dataclass(frozen=True, kw_only=True)
class Channel:
    """One configured place messages go; a subclass is a kind of channel, declared in its class statement (module
    docstring). `name` is also the kind a status line shows; `enable_ko` is what a person sets to switch it on
    (`setting_ko` when that says it)."""

    name: ClassVar[str] = ""
    section: ClassVar[str] = ""
    setting_ko: ClassVar[str] = ""
    enable_ko: ClassVar[str] = ""

    key: str  # what a stored send is matched to: "email" | "email:oncall" | "webhook:<hash>"
    target: str  # secret-free
    audiences: frozenset[Audience] = frozenset(Audience)  # whose messages it carries

    def __init_subclass__(cls, *, name: str, section: str, setting_ko: str, enable_ko: str = "", **kw: Any) -> None:
        super().__init_subclass__(**kw)
        cls.name, cls.section, cls.setting_ko, cls.enable_ko = name, section, setting_ko, enable_ko or setting_ko
        dataclass(frozen=True, kw_only=True)(cls)
        CHANNELS[name] = cls

    @classmethod
    def configured(cls, section: Any) -> list[Channel]:  # pragma: no cover - every kind overrides it
        """The channels of this kind that `section` (`settings.alerts.<section>`) names."""
        raise NotImplementedError

    @property
    def kind(self) -> str:
        return self.name

    @property
    def secrets(self) -> tuple[str | None, ...]:
        """What an unexpected error's text must not show."""
        return ()

    def carries(self, audience: Audience) -> bool:
        return audience is Audience.EVERYONE or audience in self.audiences

    def send(self, message: Message, attachment: Path | None, timeout_s: float) -> str:  # pragma: no cover
        """One attempt within `timeout_s`; returns a short note, raises DeliveryError."""
        raise NotImplementedError


def configured_channels(settings: Settings) -> list[Channel]:
    """The channels the settings name now, kind by kind in the registry's order."""
    return [c for kind in CHANNELS.values() for c in kind.configured(getattr(settings.alerts, kind.section))]


def channel_settings_ko(sep: str, *, to_enable: bool = False) -> str:
    """Every kind's settings as a text names them: `[alerts.email], [alerts] webhook_urls`; `to_enable`: with the
    keys that switch each on."""
    return sep.join(kind.enable_ko if to_enable else kind.setting_ko for kind in CHANNELS.values())


# --- e-mail (`email`: the settings' [alerts.email] section) -----------------------------------------


def from_address(email: AlertEmail) -> str:
    return email.sender or (email.username if "@" in email.username else "") or "dmf-watch@localhost"


def smtp_password(email: AlertEmail) -> str | None:
    """The SMTP password, from the environment only (None when no login is configured)."""
    return os.environ.get(SMTP_PASSWORD_ENV, "") if email.username else None


def build_email(cfg: AlertEmail, message: Message, attachment: Path | None, to: list[str]) -> Message_:
    """The e-mail: plain text and, beside it, HTML (multipart/alternative), the workbook attached under a name
    every mail program shows — RFC 2231 `filename*` on Content-Disposition for the standards, and an RFC 2047
    `name=` on Content-Type for Outlook, which otherwise shows a Korean file name as "ATT00001". Built with
    the `email.mime` classes, which write these parameters as given (the default policy would re-encode the
    RFC 2047 word as RFC 2231)."""
    attached = None if not message.workbook else attachment is not None
    body = MIMEMultipart("alternative")
    body.attach(MIMEText(message.text(attached=attached), "plain", "utf-8"))
    body.attach(MIMEText(message_html(message, attached=attached), "html", "utf-8"))
    msg: Message_ = body
    if attachment is not None:
        data = attachment.read_bytes()
        ctype = (
            XLSX
            if attachment.suffix == ".xlsx"
            else (mimetypes.guess_type(attachment.name)[0] or "application/octet-stream")
        )
        maintype, _, subtype = ctype.partition("/")
        part = MIMEBase(maintype, subtype, name=Header(attachment.name, "utf-8").encode())
        part.set_payload(data)
        encoders.encode_base64(part)
        part.add_header("Content-Disposition", "attachment", filename=("utf-8", "", attachment.name))
        msg = MIMEMultipart("mixed")
        msg.attach(body)
        msg.attach(part)
    msg["Subject"] = Header(message.subject, "utf-8")  # type: ignore[assignment]  # compat32 encodes a Header
    msg["From"] = from_address(cfg)
    msg["To"] = ", ".join(to)
    msg["Date"] = format_datetime(now_kst())  # Korea time, +0900, as every timestamp the project writes
    domain = from_address(cfg).rpartition("@")[2] or "localhost"
    msg["Message-ID"] = make_msgid("dmf", domain=domain)
    if message.level == CRITICAL:
        msg["X-Priority"] = "1"
        msg["Importance"] = "high"
    return msg


def message_html(message: Message, *, attached: bool | None) -> str:
    """The HTML alternative: the headline table (the facts) and the sections (the top events) as the text says
    them, escaped; the link clickable."""
    e = html.escape
    parts = [f"<p><b>{e(message.title)}</b></p>"]
    sections = (
        message.sections[1:] if message.sections and message.sections[0][1] == message.title else message.sections
    )
    for heading, text in sections:
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        body = "<br>".join(e(line) for line in lines)
        parts.append(f'<h3 style="margin:14px 0 4px">{e(heading)}</h3><p style="margin:0">{body}</p>')
    if message.facts:
        rows = "".join(
            f'<tr><th style="text-align:left;padding:2px 12px 2px 0;font-weight:normal;color:#555">{e(k)}</th>'
            f'<td style="text-align:right;padding:2px 0">{e(v)}</td></tr>'
            for k, v in message.facts
        )
        heading = "세부 정보" if message.for_team else "세부 정보 / Details"
        parts.append(f'<h3 style="margin:14px 0 4px">{e(heading)}</h3><table>{rows}</table>')
    if workbook := message.workbook_line(attached):
        parts.append(f"<p>{e(workbook)}</p>")
    if message.link:
        parts.append(f'<p><a href="{e(message.link, quote=True)}">{e(message.link_label)}</a></p>')
    parts.append(f'<p style="color:#777;font-size:smaller">{e(FOOTER)}</p>')
    body = "\n".join(parts)
    return (
        '<!DOCTYPE html><html lang="ko"><head><meta charset="utf-8"></head>'
        f'<body style="font-family:sans-serif">{body}</body></html>'
    )


class EmailChannel(
    Channel, name="email", section="email", setting_ko="[alerts.email]", enable_ko="[alerts.email] smtp_host·recipients"
):
    """One list of recipients on the configured SMTP server: the team's (`recipients`: the workbook mail; the
    alerts too when no other on-call engineer is named) or the on-call engineers' (`oncall_recipients`: the
    alerts) — README, Telling people."""

    email: AlertEmail
    to: tuple[str, ...]

    @classmethod
    def configured(cls, section: Any) -> list[Channel]:
        email: AlertEmail = section
        if not email.smtp_host:
            return []
        team, oncall = list(email.recipients), list(email.oncall_recipients or email.recipients)
        lists = [("email", team, {Audience.TEAM} | ({Audience.ONCALL} if oncall == team else set()))]
        if oncall != team:
            lists.append(("email:oncall", oncall, {Audience.ONCALL}))
        target = f"{email.smtp_host}:{email.smtp_port} → "
        return [
            cls(key=key, target=target + ", ".join(to), audiences=frozenset(whose), email=email, to=tuple(to))
            for key, to, whose in lists
            if to
        ]

    @property
    def secrets(self) -> tuple[str | None, ...]:
        return (smtp_password(self.email),)

    def send(self, message: Message, attachment: Path | None, timeout_s: float) -> str:
        cfg, to, timeout_s = self.email, list(self.to), min(self.email.timeout_s, timeout_s)
        password = smtp_password(cfg)
        try:
            email = build_email(cfg, message, attachment, to)
        except OSError as exc:
            raise DeliveryError(
                f"첨부 파일을 읽을 수 없습니다 / cannot read attachment: {exc.strerror or exc}", permanent=True
            ) from None
        try:
            with smtplib.SMTP(cfg.smtp_host, cfg.smtp_port, timeout=timeout_s) as smtp:
                smtp.ehlo()
                if cfg.starttls:
                    smtp.starttls(context=ssl.create_default_context())
                    smtp.ehlo()
                if cfg.username:
                    if not password:
                        raise DeliveryError(
                            "SMTP 로그인에 필요한 비밀번호가 없습니다: 환경 변수 DMF_SMTP_PASSWORD를 설정하세요 "
                            "/ DMF_SMTP_PASSWORD is not set",
                            permanent=True,
                        )
                    smtp.login(cfg.username, password)
                refused = smtp.send_message(email)
        except smtplib.SMTPAuthenticationError as exc:
            raise DeliveryError(f"SMTP 인증 실패 / authentication refused ({exc.smtp_code})", permanent=True) from None
        except smtplib.SMTPRecipientsRefused as exc:
            raise DeliveryError(
                f"모든 수신자가 거부됨 / all recipients refused: {', '.join(exc.recipients)}", permanent=True
            ) from None
        except smtplib.SMTPResponseException as exc:
            text = (
                exc.smtp_error.decode("utf-8", "replace") if isinstance(exc.smtp_error, bytes) else str(exc.smtp_error)
            )
            raise DeliveryError(
                f"SMTP {exc.smtp_code} {scrub(text, password)}", permanent=500 <= exc.smtp_code < 600
            ) from None
        except (OSError, smtplib.SMTPException) as exc:
            reason = scrub(str(exc) or type(exc).__name__, password)
            if any(isinstance(e, TimeoutError) for e in (exc, exc.__context__)):  # smtplib: "disconnected"
                reason += f" ({timeout_s:.1f} s)"  # how long it waited: its own timeout, or what the round had left
            raise DeliveryError(
                f"SMTP {cfg.smtp_host}:{cfg.smtp_port} 연결 실패 / cannot deliver: {type(exc).__name__}: {reason}"
            ) from None
        accepted = [r for r in to if r not in (refused or {})]
        return f"{len(accepted)}명에게 발송 / sent to {len(accepted)}" + (f", 거부 {len(refused)}" if refused else "")


# --- webhooks -----------------------------------------------------------------------------------

GENERIC, SLACK, TEAMS = "webhook", "slack", "teams"


#: a prefix that forces the flavour whatever the host
_FORCED = dict(zip(WEBHOOK_PREFIXES, (SLACK, TEAMS, GENERIC), strict=True))


def split_webhook(url: str) -> tuple[str, str]:
    """(the forcing prefix or "", the URL to POST to)."""
    prefix = next((p for p in _FORCED if url.lower().startswith(p)), "")
    return prefix, url[len(prefix) :]


def webhook_flavour(url: str) -> str:
    prefix, url = split_webhook(url)
    host = (urlsplit(url).hostname or "").lower()
    if prefix:
        return _FORCED[prefix]
    if host == "hooks.slack.com":
        return SLACK
    if host.endswith((".webhook.office.com", ".logic.azure.com", ".powerplatform.com")):
        return TEAMS
    return GENERIC


_EMOJI = {INFO: ":information_source:", WARNING: ":warning:", CRITICAL: ":rotating_light:"}
_TEAMS_COLOR = {INFO: "Good", WARNING: "Warning", CRITICAL: "Attention"}


def generic_payload(message: Message) -> dict:
    return {
        "source": "dmf-watch",
        "type": message.kind if message.kind in (REPORT, TEST) else "alert",
        "kind": message.kind,
        "day": message.day,
        "level": message.level,
        "subject": message.subject,
        "title": message.title,
        "text": message.text(),  # a webhook carries no file: only the link, when there is one
        "sections": [{"heading": h, "text": t} for h, t in message.sections],
        "facts": dict(message.facts),
        "link": message.link or None,
    }


def slack_payload(message: Message) -> dict:
    """Slack incoming-webhook format: `text` (notification fallback) + Block Kit blocks."""
    blocks: list[dict] = [
        {"type": "header", "text": {"type": "plain_text", "text": message.subject[:150], "emoji": True}}
    ]
    for heading, text in message.sections:
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": f"*{heading}*\n{text}"[:3000]}})
    if message.facts:
        blocks.append(
            {
                "type": "section",
                "fields": [{"type": "mrkdwn", "text": f"*{k}*\n{v}"[:2000]} for k, v in message.facts[:10]],
            }
        )
    if message.link:
        label = "리포트 내려받기" if message.for_team else "리포트 / open"
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": f"<{message.link}|{label}>"}})
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": "DMF Watch"}]})
    return {"text": f"{_EMOJI.get(message.level, '')} {message.subject}".strip(), "blocks": blocks}


def teams_payload(message: Message) -> dict:
    """A Teams message with one Adaptive Card (1.4): title, sections, a FactSet, an optional link."""
    body: list[dict] = [
        {
            "type": "TextBlock",
            "text": message.subject,
            "weight": "Bolder",
            "size": "Medium",
            "wrap": True,
            "color": _TEAMS_COLOR.get(message.level, "Default"),
        },
    ]
    for heading, text in message.sections:
        body.append({"type": "TextBlock", "text": heading, "weight": "Bolder", "wrap": True, "spacing": "Medium"})
        body.append({"type": "TextBlock", "text": text, "wrap": True})
    if message.facts:
        body.append({"type": "FactSet", "facts": [{"title": k, "value": v} for k, v in message.facts]})
    card: dict = {
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "type": "AdaptiveCard",
        "version": "1.4",
        "body": body,
        "msteams": {"width": "Full"},
    }
    if message.link:
        title = "리포트 내려받기" if message.for_team else "리포트 열기 / Open"
        card["actions"] = [{"type": "Action.OpenUrl", "title": title, "url": message.link}]
    return {
        "type": "message",
        "summary": message.subject,
        "attachments": [
            {"contentType": "application/vnd.microsoft.card.adaptive", "contentUrl": None, "content": card}
        ],
    }


def webhook_payload(url: str, message: Message) -> dict:
    return {SLACK: slack_payload, TEAMS: teams_payload}.get(webhook_flavour(url), generic_payload)(message)


class WebhookChannel(Channel, name="webhook", section="webhook_urls", setting_ko="[alerts] webhook_urls"):
    """One webhook URL ([alerts] webhook_urls): every message, both audiences, no attachment."""

    url: str

    @classmethod
    def configured(cls, section: Any) -> list[Channel]:
        return [
            cls(key="webhook:" + hashlib.sha256(url.encode()).hexdigest()[:12], target=redact_url(url), url=url)
            for url in section
        ]

    @property
    def kind(self) -> str:
        return webhook_flavour(self.url)

    def send(self, message: Message, attachment: Path | None, timeout_s: float) -> str:
        payload = webhook_payload(self.url, message)
        _, url = split_webhook(self.url)
        timeout = min(WEBHOOK_TIMEOUT_S, timeout_s)
        try:
            with httpx.Client(timeout=timeout, headers={"User-Agent": USER_AGENT}, follow_redirects=False) as client:
                response = client.post(url, json=payload)
        except httpx.HTTPError as exc:
            waited = f" ({timeout:.1f} s)" if isinstance(exc, httpx.TimeoutException) else ""
            raise DeliveryError(
                f"{redact_url(url)} 연결 실패 / request failed: {type(exc).__name__}: {scrub(str(exc))}{waited}"
            ) from None
        if response.status_code >= 300:
            body = scrub(response.text[:200]) if response.text else ""
            permanent = response.status_code in (400, 401, 403, 404, 410)
            raise DeliveryError(
                f"{redact_url(url)} HTTP {response.status_code}" + (f": {body}" if body else ""), permanent=permanent
            )
        return f"HTTP {response.status_code}"
