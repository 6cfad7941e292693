"""Sending with a memory: one alert per (day, kind), bounded retries, and a delivery log.

Files under the alerts folder (`settings.paths.alerts_dir`, default data/alerts/):
  {day}-{kind}.json   the alert (same fields as before: day, kind, message, key, raised_at — plus subject,
                      facts, run_id, text and the delivery outcome). Its existence is the de-duplication:
                      it is claimed under a file lock before anything is sent, so two processes (sensor,
                      CLI, watchdog) never send the same alert twice.
  alerts.log          one line per new alert (as before)
  deliveries.jsonl    one JSON line per delivery round (alert or report): status, per channel the target
                      (secret-free), attempts, error. `pending_failures` and `dmf doctor` read it.
  .notify.lock        the lock file

Nothing here raises into the pipeline: every failure — SMTP down, webhook 500, disk full — becomes a
`DeliveryRecord` with status "failed" and is logged.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from dmf_assets.clock import now_kst
from dmf_assets.fsutil import atomic_write_text
from dmf_assets.notify import channels
from dmf_assets.notify.config import NotifyConfig, notify_config
from dmf_assets.notify.messages import Alert, Message, ReportDelivery, compose_alert, compose_report

log = logging.getLogger("dmf_assets.notify")

LEDGER = "deliveries.jsonl"
ALERT_LOG = "alerts.log"
LOCK = ".notify.lock"
SENT, PARTIAL, FAILED, NO_CHANNELS, SENDING = "sent", "partial", "failed", "no_channels", "sending"
#: a claim older than this without an outcome belongs to a process that died while sending
STALE_CLAIM = timedelta(minutes=15)
#: retry_failed() re-sends a failed delivery at most this many rounds in all
MAX_ROUNDS = 5


@dataclass(frozen=True)
class ChannelResult:
    channel: str  # email | webhook | slack | teams
    target: str  # secret-free: SMTP host:port -> recipients, or the webhook's scheme://host/…
    status: str  # sent | failed
    attempts: int
    error: str = ""
    note: str = ""
    index: int = 0  # position in [alerts] webhook_urls (-1 = e-mail), to re-send the same target


@dataclass(frozen=True)
class DeliveryRecord:
    id: str  # alert:{day}-{kind} | report:{day}
    type: str  # alert | report
    day: str
    kind: str  # alert kind, or "report"
    subject: str
    status: str  # sent | partial | failed | no_channels
    channels: tuple[ChannelResult, ...] = ()
    at: str = ""
    round: int = 1  # 1 = first delivery; 2.. = retry_failed() rounds
    error: str = ""  # a failure outside any channel (e.g. the alerts folder is not writable)
    attachment: str = ""  # report workbook path
    message: dict = field(default_factory=dict, repr=False)

    @property
    def ok(self) -> bool:
        return self.status in (SENT, NO_CHANNELS)

    @property
    def failed_channels(self) -> tuple[ChannelResult, ...]:
        return tuple(c for c in self.channels if c.status != SENT)

    def line(self) -> str:
        """One Korean + English line for logs, the UI and `dmf doctor`."""
        label = {SENT: "발송됨", PARTIAL: "일부 실패", FAILED: "발송 실패", NO_CHANNELS: "채널 없음(기록만)"}.get(self.status, self.status)
        parts = [f"{self.day} {self.kind}: {label} ({self.status})"]
        for c in self.channels:
            parts.append(f"{c.channel} {c.target} {c.status} x{c.attempts}" + (f" — {c.error}" if c.error else ""))
        if self.error:
            parts.append(self.error)
        return "; ".join(parts)

    def metadata(self) -> dict[str, str]:
        """Plain values for a materialization's metadata (the Dagster UI shows them)."""
        return {"delivery_status": self.status, "delivery": self.line()}

    def to_dict(self) -> dict:
        d = asdict(self)
        d["channels"] = [asdict(c) for c in self.channels]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> DeliveryRecord:
        chans = tuple(ChannelResult(**c) for c in d.get("channels", ()))
        known = {k: v for k, v in d.items() if k in cls.__dataclass_fields__ and k != "channels"}
        return cls(**{**known, "channels": chans})


# --- files --------------------------------------------------------------------------------------


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / LOCK, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def alert_path(alerts_dir: Path, day: str, kind: str) -> Path:
    return alerts_dir / f"{day}-{kind}.json"


def _append(path: Path, line: str) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(line if line.endswith("\n") else line + "\n")
        fh.flush()


def _append_record(cfg: NotifyConfig, record: DeliveryRecord) -> None:
    with _locked(cfg.alerts_dir):
        _append(cfg.alerts_dir / LEDGER, json.dumps(record.to_dict(), ensure_ascii=False, default=str))


def read_ledger(cfg: NotifyConfig) -> list[DeliveryRecord]:
    path = cfg.alerts_dir / LEDGER
    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(DeliveryRecord.from_dict(json.loads(line)))
        except (json.JSONDecodeError, TypeError):
            continue  # a torn last line after a power cut: skip it
    return out


# --- sending ------------------------------------------------------------------------------------


BUDGET_USED = "시간 예산 소진 — 다음 재발송 때 보냅니다 / time budget used up; re-sent later"


def _attempt(cfg: NotifyConfig, deadline: float | None, call) -> tuple[str, int, str, str]:
    """(status, attempts, error, note): up to cfg.delivery_attempts tries of `call(timeout_cap)` with a
    short backoff, never past `deadline` (time.monotonic())."""
    error, made = "", 0
    for attempt in range(1, max(1, cfg.delivery_attempts) + 1):
        remaining = None if deadline is None else deadline - time.monotonic()
        if remaining is not None and remaining < 0.5:
            return FAILED, made, error or BUDGET_USED, ""
        made = attempt
        try:
            return SENT, attempt, "", call(remaining)
        except channels.DeliveryError as exc:
            error = str(exc)
            if exc.permanent:
                return FAILED, attempt, error, ""
        except Exception as exc:  # never into the pipeline
            error = channels.scrub(f"{type(exc).__name__}: {exc}", cfg.email.password())
        if attempt < cfg.delivery_attempts and cfg.delivery_backoff_s:
            pause = cfg.delivery_backoff_s[min(attempt - 1, len(cfg.delivery_backoff_s) - 1)]
            if deadline is not None:
                pause = min(pause, max(0.0, deadline - time.monotonic()))
            time.sleep(pause)
    return FAILED, made, error, ""


def _deadline(cfg: NotifyConfig) -> float | None:
    return None if cfg.budget_s is None else time.monotonic() + cfg.budget_s


def _deliver(cfg: NotifyConfig, message: Message, *, kind: str, attachment: Path | None,
             only: set[int] | None = None, deadline: float | None = None) -> tuple[ChannelResult, ...]:
    deadline = deadline if deadline is not None else _deadline(cfg)
    results = []
    if cfg.email.enabled and (only is None or -1 in only):
        target = f"{cfg.email.smtp_host}:{cfg.email.smtp_port} → {', '.join(cfg.email.recipients)}"
        attach = attachment if attachment and attachment.is_file() else None

        def email(cap: float | None) -> str:
            timeout = cfg.email.timeout_s if cap is None else max(0.5, min(cfg.email.timeout_s, cap))
            return channels.send_email(replace(cfg.email, timeout_s=timeout), message, attach)

        status, attempts, error, note = _attempt(cfg, deadline, email)
        results.append(ChannelResult("email", target, status, attempts, error, note, -1))
    for i, url in enumerate(cfg.webhook_urls):
        if only is not None and i not in only:
            continue

        def hook(cap: float | None, url: str = url) -> str:
            timeout = cfg.webhook_timeout_s if cap is None else max(0.5, min(cfg.webhook_timeout_s, cap))
            return channels.send_webhook(url, message, kind=kind, timeout_s=timeout)

        status, attempts, error, note = _attempt(cfg, deadline, hook)
        results.append(ChannelResult(channels.webhook_flavour(url), channels.redact_url(url), status, attempts, error,
                                     note, i))
    return tuple(results)


def _overall(results: tuple[ChannelResult, ...]) -> str:
    if not results:
        return NO_CHANNELS
    ok = sum(1 for r in results if r.status == SENT)
    return SENT if ok == len(results) else FAILED if ok == 0 else PARTIAL


def _log_record(record: DeliveryRecord) -> None:
    (log.info if record.ok else log.warning)("%s", record.line())


def _config(settings: Any, alerts_dir: str | Path | None, overrides: dict) -> NotifyConfig:
    return settings if isinstance(settings, NotifyConfig) else notify_config(settings, alerts_dir, **overrides)


def send_alert(settings: Any, alert: Alert, *, alerts_dir: str | Path | None = None, link: str = "",
               **overrides: Any) -> DeliveryRecord | None:
    """Tell people about `alert` once: None if this (day, kind) was raised before.

    `settings`: a Settings (or a NotifyConfig); `alerts_dir` overrides settings.paths.alerts_dir.
    Never raises; a failed delivery is returned (status failed/partial), logged and kept for
    `retry_failed` / `pending_failures`.
    """
    now = now_kst()
    try:
        cfg = _config(settings, alerts_dir, overrides)
        message = compose_alert(alert, link=link)
        path = alert_path(cfg.alerts_dir, alert.day, alert.kind)
        payload = {
            "day": alert.day, "kind": alert.kind, "message": message.title, "key": alert.key,
            "raised_at": now.isoformat(timespec="seconds"), "subject": message.subject, "facts": dict(alert.facts),
            "run_id": alert.run_id, "text": message.text(), "delivery": {"status": SENDING},
        }
        with _locked(cfg.alerts_dir):
            if path.exists():
                return None
            atomic_write_text(path, json.dumps(payload, ensure_ascii=False, indent=1))
            _append(cfg.alerts_dir / ALERT_LOG, f"{payload['raised_at']}\t{alert.kind}\t{alert.day}\t{message.title}")
    except Exception as exc:
        record = DeliveryRecord(f"alert:{alert.key}", "alert", alert.day, alert.kind, "", FAILED, at=now.isoformat(),
                                error=f"알림을 기록할 수 없습니다 / cannot record the alert: {type(exc).__name__}: {exc}")
        _log_record(record)
        return record
    results = _deliver(cfg, message, kind="alert", attachment=None)
    record = DeliveryRecord(f"alert:{alert.key}", "alert", alert.day, alert.kind, message.subject, _overall(results),
                            results, now_kst().isoformat(timespec="seconds"), message=message.to_dict())
    _finish_alert(cfg, path, payload, record)
    return record


def _finish_alert(cfg: NotifyConfig, path: Path, payload: dict, record: DeliveryRecord) -> None:
    try:
        payload = {**payload, "delivery": {"status": record.status, "at": record.at, "round": record.round,
                                           "channels": [asdict(c) for c in record.channels]}}
        with _locked(cfg.alerts_dir):
            atomic_write_text(path, json.dumps(payload, ensure_ascii=False, indent=1))
            _append(cfg.alerts_dir / LEDGER, json.dumps(record.to_dict(), ensure_ascii=False, default=str))
    except Exception as exc:
        log.warning("알림 발송 결과를 기록하지 못했습니다 / cannot record the delivery: %s: %s", type(exc).__name__, exc)
    _log_record(record)


def deliver_report(settings: Any, delivery: ReportDelivery, *, alerts_dir: str | Path | None = None,
                   **overrides: Any) -> DeliveryRecord:
    """E-mail the day's workbook (attached) and post its summary to the webhooks. Never raises.

    Sent every time it is called (a re-made workbook is news); a day delivered before gets
    "(갱신 / updated)" in the subject.
    """
    now = now_kst()
    try:
        cfg = _config(settings, alerts_dir, overrides)
        if delivery.workbook is not None and not delivery.workbook.is_file():
            log.warning("리포트 파일이 없어 첨부 없이 보냅니다 / workbook missing, sending without it: %s", delivery.workbook)
            delivery = replace(delivery, workbook=None)
        if not delivery.url and cfg.report_base_url and delivery.workbook is not None:
            from urllib.parse import quote

            delivery = replace(delivery, url=f"{cfg.report_base_url.rstrip('/')}/{quote(delivery.workbook.name)}")
        revision = any(r.type == "report" and r.day == delivery.day and r.status in (SENT, PARTIAL)
                       for r in read_ledger(cfg))
        message = compose_report(delivery, revision=revision)
        results = _deliver(cfg, message, kind="report", attachment=delivery.workbook)
        record = DeliveryRecord(f"report:{delivery.day}", "report", delivery.day, "report", message.subject,
                                _overall(results), results, now_kst().isoformat(timespec="seconds"),
                                attachment=str(delivery.workbook or ""), message=message.to_dict())
    except Exception as exc:
        record = DeliveryRecord(f"report:{delivery.day}", "report", delivery.day, "report", "", FAILED,
                                at=now.isoformat(timespec="seconds"),
                                error=f"리포트 발송 준비 실패 / cannot prepare the delivery: {type(exc).__name__}: {exc}")
        _log_record(record)
        return record
    try:
        _append_record(cfg, record)
    except Exception as exc:
        log.warning("발송 결과를 기록하지 못했습니다 / cannot record the delivery: %s: %s", type(exc).__name__, exc)
    _log_record(record)
    return record


# --- what still needs attention -----------------------------------------------------------------


def _latest_by_id(records: list[DeliveryRecord]) -> dict[str, DeliveryRecord]:
    latest: dict[str, DeliveryRecord] = {}
    for r in records:  # file order = time order
        latest[r.id] = r
    return latest


def pending_failures(settings: Any, *, alerts_dir: str | Path | None = None, **overrides: Any) -> list[DeliveryRecord]:
    """Deliveries whose latest round failed (fully or partly), oldest first — plus alerts whose sender
    died mid-delivery (claimed more than 15 minutes ago, no outcome)."""
    cfg = _config(settings, alerts_dir, overrides)
    latest = _latest_by_id(read_ledger(cfg))
    out = [r for r in latest.values() if r.status in (FAILED, PARTIAL)]
    cutoff = now_kst() - STALE_CLAIM
    if cfg.alerts_dir.is_dir():
        for path in sorted(cfg.alerts_dir.glob("*-*.json")):
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                if (data.get("delivery") or {}).get("status") != SENDING:
                    continue
                if datetime.fromisoformat(data["raised_at"]) > cutoff or f"alert:{data['key']}" in latest:
                    continue
            except (OSError, ValueError, KeyError, TypeError):
                continue
            out.append(DeliveryRecord(f"alert:{data['key']}", "alert", data["day"], data["kind"], data.get("subject", ""),
                                      FAILED, at=data["raised_at"], error="발송 중 프로세스가 종료됨 / sender died mid-delivery"))
    return sorted(out, key=lambda r: r.at)


def retry_failed(settings: Any, *, alerts_dir: str | Path | None = None, **overrides: Any) -> list[DeliveryRecord]:
    """Re-send the failed channels of pending failures (each at most MAX_ROUNDS rounds in all)."""
    cfg = _config(settings, alerts_dir, overrides)
    deadline = _deadline(cfg)
    out = []
    for old in pending_failures(cfg):
        if old.round >= MAX_ROUNDS or not old.message:
            continue
        if deadline is not None and deadline - time.monotonic() < 0.5:
            break
        try:
            message = Message.from_dict(old.message)
            only = {c.index for c in old.failed_channels} if old.channels else None
            attachment = Path(old.attachment) if old.attachment else None
            results = _deliver(cfg, message, kind=old.type, attachment=attachment, only=only, deadline=deadline)
            merged = tuple(c for c in old.channels if c.status == SENT) + results
            record = replace(old, status=_overall(merged), channels=merged, round=old.round + 1,
                             at=now_kst().isoformat(timespec="seconds"))
            if old.type == "alert":
                path = alert_path(cfg.alerts_dir, old.day, old.kind)
                payload = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
                _finish_alert(cfg, path, payload, record)
            else:
                _append_record(cfg, record)
                _log_record(record)
            out.append(record)
        except Exception as exc:
            log.warning("재발송 실패 / retry failed for %s: %s: %s", old.id, type(exc).__name__, exc)
    return out


def deliver_day(settings: Any, delivery: ReportDelivery, *, alerts_dir: str | Path | None = None,
                **overrides: Any) -> tuple[DeliveryRecord, list[DeliveryRecord]]:
    """After a day's workbook: deliver it, then raise the alerts the day itself calls for
    (watchlist hit, withdrawal share). Returns (the report's record, the new alerts' records)."""
    from dmf_assets.notify.messages import alerts_for_day

    record = deliver_report(settings, delivery, alerts_dir=alerts_dir, **overrides)
    cfg = _config(settings, alerts_dir, overrides)
    sent = [send_alert(cfg, a) for a in alerts_for_day(delivery, withdrawal_share_max=cfg.withdrawal_share_max)]
    return record, [r for r in sent if r is not None]


def send_test(settings: Any, *, alerts_dir: str | Path | None = None, **overrides: Any) -> DeliveryRecord:
    """A test message to every configured channel (`dmf notify-test`); not de-duplicated, not in the ledger."""
    cfg = _config(settings, alerts_dir, overrides)
    now = now_kst()
    message = Message(
        subject=f"[DMF] 알림 시험 / test — {now:%Y-%m-%d %H:%M} KST", title="DMF Watch 알림 채널 시험 발송입니다 (test message).",
        level="info", kind="test", day=now.date().isoformat(),
        sections=(("무슨 일 / What happened", "DMF Watch 알림 채널 시험 발송입니다 (test message)."),
                  ("원인 / Why", "`dmf notify-test`를 실행했습니다."),
                  ("조치 / What to do next", "이 메시지를 받았다면 설정이 맞습니다. 할 일은 없습니다.")),
    )
    results = _deliver(cfg, message, kind="test", attachment=None)
    return DeliveryRecord("test", "test", message.day, "test", message.subject, _overall(results), results,
                          now_kst().isoformat(timespec="seconds"))


def delivery_summary(settings: Any, *, alerts_dir: str | Path | None = None, days: int = 7, **overrides: Any) -> dict:
    """For `dmf doctor` and the UI: channels configured, recent deliveries and failures."""
    cfg = _config(settings, alerts_dir, overrides)
    since = (now_kst() - timedelta(days=days)).isoformat()
    recent = [r for r in _latest_by_id(read_ledger(cfg)).values() if r.at >= since]
    failures = pending_failures(cfg)
    return {
        "email": cfg.email.enabled,
        "webhooks": [channels.redact_url(u) for u in cfg.webhook_urls],
        "recent": len(recent),
        "sent": sum(1 for r in recent if r.status == SENT),
        "failed": len(failures),
        "failures": [r.line() for r in failures[-5:]],
    }
