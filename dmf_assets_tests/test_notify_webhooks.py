"""Alerts over a real HTTP receiver on 127.0.0.1: generic JSON, Slack and Teams shapes, de-duplication,
retries, escalation — and the wording of every alert kind (what happened, why, what to do next)."""

from __future__ import annotations

import json
import threading

import pytest

from dmf_assets import notify
from dmf_assets.notify import channels
from dmf_assets_tests.notify_servers import free_port, settings_for, smtp_server, webhook_receiver

FAST = {"delivery_backoff_s": (0.05,)}
DAY = "2026-11-27"


def _rejected(day=DAY, gate=2, retry_at="2026-11-27T06:30:00+09:00"):
    return notify.alert_rejected(day, gate=gate, observed="8,940 / 9,203 (97.1 %)", threshold="= totalCount",
                                 comparison_base="2026-11-26", retry_at=retry_at, attempt=1, attempts_max=3)


def test_rejected_day_alert_goes_to_webhook_and_email_and_is_written_once(tmp_path):
    with webhook_receiver() as hook, smtp_server() as smtp:
        settings = settings_for(tmp_path / "alerts", webhooks=[hook.url()], smtp_port=smtp.port)
        record = notify.send_alert(settings, _rejected(), **FAST)
        post = hook.next()
        _, mail = smtp.next_message()
        # the same (day, kind) again: nothing is sent; a different kind still is
        assert notify.send_alert(settings, _rejected(retry_at=None), **FAST) is None
        other = notify.send_alert(settings, notify.alert_request_cap(DAY, cap=300, used=300), **FAST)
        second = hook.next()
        smtp.next_message()
        assert hook.received.empty() and smtp.received.empty()

    assert record.status == "sent" and {c.channel for c in record.channels} == {"email", "webhook"}
    assert other.status == "sent" and second["json"]["kind"] == "request_cap"
    body = post["json"]
    assert post["path"] == "/hook" and body["source"] == "dmf-watch" and body["type"] == "alert"
    assert (body["kind"], body["day"], body["level"]) == ("rejected", DAY, "warning")
    assert DAY in body["subject"] and "게이트 2 완전성(completeness)" in body["subject"]
    assert "8,940 / 9,203 (97.1 %)" in body["text"] and "= totalCount" in body["text"]
    assert "비교 기준(comparison base)은 2026-11-26" in body["text"]
    assert "06:30 KST에 자동 재시도" in body["text"] and "(재시도 1/3)" in body["text"]
    assert body["facts"]["비교 기준 / comparison base"] == "2026-11-26"
    assert mail["Subject"] == body["subject"] and DAY in mail.get_body(("plain",)).get_content()

    # the per-alert file keeps its old fields (day, kind, message, key, raised_at) for the sensor/UI
    stored = json.loads((tmp_path / "alerts" / f"{DAY}-rejected.json").read_text(encoding="utf-8"))
    assert {"day", "kind", "message", "key", "raised_at"} <= set(stored)
    assert stored["key"] == f"{DAY}-rejected" and stored["delivery"]["status"] == "sent"
    log = (tmp_path / "alerts" / "alerts.log").read_text(encoding="utf-8").splitlines()
    assert [line.split("\t")[1] for line in log] == ["rejected", "request_cap"]


def test_concurrent_senders_raise_one_alert(tmp_path):
    with webhook_receiver() as hook:
        settings = settings_for(tmp_path / "alerts", webhooks=[hook.url()])
        results, barrier = [], threading.Barrier(6)

        def send():
            barrier.wait(timeout=10)
            results.append(notify.send_alert(settings, notify.alert_overdue("2026-11-28"), **FAST))

        threads = [threading.Thread(target=send) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        hook.next()
        assert hook.received.empty()
    assert sum(r is not None for r in results) == 1 and len(results) == 6


def test_webhook_http_500_is_retried_then_delivered(tmp_path):
    with webhook_receiver(fail_first=2) as hook:
        settings = settings_for(tmp_path / "alerts", webhooks=[hook.url("/services/T000/B000/secretpath")])
        record = notify.send_alert(settings, notify.alert_slow_run(DAY, seconds=95.0, median_s=30.0, samples=14), **FAST)
        post = hook.next()
    [result] = record.channels
    assert (result.status, result.attempts) == ("sent", 3) and hook.failed == 2
    assert "3.2배" in post["json"]["text"]
    assert result.target == f"http://127.0.0.1:{hook.port}/…"  # the secret path is never recorded


def test_webhook_permanent_error_and_dead_port_are_recorded_not_raised(tmp_path):
    dead = f"http://127.0.0.1:{free_port()}/hook"
    with webhook_receiver(fail_first=99, fail_status=404) as hook:
        settings = settings_for(tmp_path / "alerts", webhooks=[hook.url("/hook/abc?sig=SECRETSIG"), dead])
        record = notify.send_alert(settings, notify.alert_run_timeout(DAY, limit_minutes=30, elapsed_minutes=31), **FAST)
    gone, refused = record.channels
    assert record.status == "failed"
    assert (gone.status, gone.attempts) == ("failed", 1) and "HTTP 404" in gone.error
    assert (refused.status, refused.attempts) == ("failed", 3) and "ConnectError" in refused.error
    ledger = (tmp_path / "alerts" / "deliveries.jsonl").read_text(encoding="utf-8")
    assert "SECRETSIG" not in ledger and "/hook" not in ledger
    assert [r.id for r in notify.pending_failures(settings)] == [f"alert:{DAY}-run_timeout"]
    summary = notify.delivery_summary(settings)
    assert summary["failed"] == 1 and "발송 실패" in summary["failures"][0]


def test_slack_and_teams_payload_shapes_through_a_real_receiver(tmp_path):
    with webhook_receiver() as hook:
        settings = settings_for(tmp_path / "alerts", webhooks=[f"slack+{hook.url('/slack')}", f"teams+{hook.url('/teams')}"])
        alert = notify.alert_watchlist_hit(DAY, hits=[{"event_type": "NEW", "severity": "HIGH", "permit_no": "20261127-1",
                                                      "ingredient": "메트포르민염산염", "applicant": "(주)파마피아",
                                                      "manufacturer": "Zhejiang Huahai", "countries": "중국",
                                                      "watchlist_hit": True, "watch_reasons": ["성분: 메트포르민"]}])
        record = notify.send_alert(settings, alert, **FAST)
        posts = {p["path"]: p["json"] for p in (hook.next(), hook.next())}
    assert [c.channel for c in record.channels] == ["slack", "teams"] and record.status == "sent"
    slack = posts["/slack"]
    assert DAY in slack["text"] and "관심목록 해당 1건" in slack["text"]
    assert slack["blocks"][0]["type"] == "header" and any(
        "메트포르민염산염" in b.get("text", {}).get("text", "") for b in slack["blocks"] if b["type"] == "section")
    teams = posts["/teams"]
    assert teams["type"] == "message"
    [att] = teams["attachments"]
    assert att["contentType"] == "application/vnd.microsoft.card.adaptive"
    card = att["content"]
    assert card["type"] == "AdaptiveCard" and card["version"] == "1.4"
    assert card["body"][0]["text"].startswith("[DMF 경보] 2026-11-27 관심목록")
    facts = next(b for b in card["body"] if b["type"] == "FactSet")["facts"]
    assert {"title": "날짜 / day", "value": DAY} in facts


@pytest.mark.parametrize("url, flavour", [
    ("https://hooks.slack.com/services/T0/B0/xyz", "slack"),
    ("https://contoso.webhook.office.com/webhookb2/abc/IncomingWebhook/def", "teams"),
    ("https://prod-12.koreacentral.logic.azure.com:443/workflows/abc/triggers/manual/paths/invoke?sig=x", "teams"),
    ("https://chat.example.co.kr/hooks/abc", "webhook"),
    ("slack+https://mattermost.example.co.kr/hooks/abc", "slack"),
])
def test_webhook_flavour_is_recognised_by_host(url, flavour):
    assert channels.webhook_flavour(url) == flavour
    assert "abc" not in channels.redact_url(url) and "xyz" not in channels.redact_url(url)


def test_three_rejected_days_in_a_row_escalate(tmp_path):
    statuses = {"2026-11-24": "accepted", "2026-11-25": "rejected", "2026-11-26": "rejected", "2026-11-27": "rejected"}
    days = notify.rejected_streak(statuses, n=3)
    assert days == ["2026-11-25", "2026-11-26", "2026-11-27"]
    assert notify.rejected_streak({**statuses, "2026-11-25": "accepted"}, n=3) == []
    with webhook_receiver() as hook:
        settings = settings_for(tmp_path / "alerts", webhooks=[hook.url()])
        alert = notify.alert_rejected_streak(days[-1], days=days, comparison_base="2026-11-24",
                                             gates={"2026-11-25": 2, "2026-11-26": 1, "2026-11-27": 6})
        notify.send_alert(settings, alert, **FAST)
        body = hook.next()["json"]
    assert body["level"] == "critical" and body["kind"] == "rejected_streak"
    assert body["subject"] == "[DMF 긴급] 2026-11-27 — 3일 연속 수집 거부 (escalation: rejected days in a row)"
    assert "ESCALATION" in body["text"] and "오늘 담당자가 직접 확인" in body["text"]
    assert "2026-11-26 게이트 1 전송(transport)" in body["text"] and "마지막 반영일 2026-11-24" in body["text"]
    # a plain rejected day does not use the escalated wording
    plain = notify.compose_alert(_rejected())
    assert "긴급" not in plain.subject and "ESCALATION" not in plain.text()


def test_churn_rejection_says_no_automatic_retry():
    text = notify.compose_alert(_rejected(gate="churn", retry_at=None)).text()
    assert "자동 재시도하지 않습니다" in text and "churn_max_ratio" in text and "dmf run --date 2026-11-27" in text


EVERY_KIND = [
    _rejected(),
    notify.alert_retry_succeeded(DAY, attempt=2, first_failure="게이트 2 완전성", counts={"new": 3}),
    notify.alert_retries_exhausted(DAY, attempts=3, gate=2, observed="8,940 / 9,203", threshold="= totalCount",
                                   comparison_base="2026-11-26"),
    notify.alert_run_failed(DAY, error="ReadTimeout", step="raw_pages"),
    notify.alert_overdue(DAY, latest_report="2026-11-26"),
    notify.alert_watchlist_hit(DAY, hits=["신규 등록: 메트포르민"]),
    notify.alert_rejected_streak(DAY, days=["2026-11-25", "2026-11-26", DAY], comparison_base="2026-11-24"),
    notify.alert_request_cap(DAY, cap=300, used=300),
    notify.alert_slow_run(DAY, seconds=100, median_s=30, samples=14),
    notify.alert_withdrawal_share(DAY, withdrawn=400, registry_size=9_167),
    notify.alert_run_timeout(DAY, limit_minutes=30, elapsed_minutes=30.5),
    notify.alert_daemon_down(DAY, last_heartbeat="2026-11-27T05:00:00+09:00", age_minutes=240, limit_minutes=10),
]


@pytest.mark.parametrize("alert", EVERY_KIND, ids=lambda a: a.kind)
def test_every_alert_says_what_why_and_what_next(alert):
    message = notify.compose_alert(alert)
    assert DAY in message.subject and message.subject.startswith("[DMF")
    headings = [h for h, _ in message.sections]
    assert headings == ["무슨 일 / What happened", "원인 / Why", "조치 / What to do next"]
    assert all(len(text) > 20 for _, text in message.sections), message.sections
    assert any(ch.isascii() and ch.isalpha() for ch in message.title)  # the English term is there
    assert "Traceback" not in message.text()


def test_kinds_cover_the_design():
    assert {a.kind for a in EVERY_KIND} == set(notify.ALERT_KINDS)
    with pytest.raises(ValueError):
        notify.Alert("something_else", DAY)
    share = notify.compose_alert(notify.alert_withdrawal_share(DAY, withdrawn=400, registry_size=9_167)).subject
    assert "4.4 %" in share and "2.0 %" in share
    assert notify.withdrawal_share_exceeded(184, 9_167, 0.02) and not notify.withdrawal_share_exceeded(183, 9_167, 0.02)
    assert notify.slow_run(91, [30] * 14, 3.0) == 30 and notify.slow_run(89, [30] * 14, 3.0) is None
    assert notify.slow_run(500, [30] * 3) is None  # too few samples to judge


def test_a_finished_day_delivers_its_report_and_raises_its_own_alerts(tmp_path):
    watched = notify.EventLine("NEW", "HIGH", "20261127-3", "메트포르민염산염", "(주)파마피아", "Zhejiang Huahai", "중국",
                               watchlist_hit=True, watch_reasons=("성분: 메트포르민",))
    quiet = notify.ReportDelivery(DAY, "accepted", None, "2026-11-26", new=1, registry_size=9_170, watchlist_hits=1,
                                  events=(watched,))
    heavy = notify.ReportDelivery("2026-11-28", "accepted", None, DAY, withdrawn=200, registry_size=9_000)
    rejected = notify.ReportDelivery("2026-11-29", "rejected", None, DAY, registry_size=9_000, withdrawn=0)
    with webhook_receiver() as hook:
        settings = settings_for(tmp_path / "alerts", webhooks=[hook.url()])
        report, alerts = notify.deliver_day(settings, quiet, **FAST)
        got = [hook.next()["json"] for _ in range(2)]
        _, heavy_alerts = notify.deliver_day(settings, heavy, **FAST)
        got += [hook.next()["json"] for _ in range(2)]
        _, none = notify.deliver_day(settings, rejected, **FAST)
        got.append(hook.next()["json"])
        assert hook.received.empty()
    assert report.status == "sent" and [a.kind for a in alerts] == ["watchlist_hit"]
    assert [a.kind for a in heavy_alerts] == ["withdrawal_share"] and none == []
    kinds = [(g["type"], g["kind"], g["day"]) for g in got]
    assert kinds == [("report", "report", DAY), ("alert", "watchlist_hit", DAY),
                     ("report", "report", "2026-11-28"), ("alert", "withdrawal_share", "2026-11-28"),
                     ("report", "report", "2026-11-29")]
    assert got[0]["subject"] == "[DMF] 2026-11-27 — 신규 1 · 변경 0 · 취하 0 · 관심목록 1"
    assert "(주)파마피아이(가) 메트포르민염산염을(를) 등록했습니다" in got[1]["text"]
    assert "2.2 %" in got[3]["subject"]


def test_an_unwritable_alerts_folder_is_a_failed_record_not_an_exception(tmp_path):
    blocker = tmp_path / "alerts"
    blocker.write_text("a file where the folder should be", encoding="utf-8")
    settings = settings_for(blocker, webhooks=[f"http://127.0.0.1:{free_port()}/hook"])
    record = notify.send_alert(settings, _rejected(), **FAST)
    assert record is not None and record.status == "failed" and "cannot record the alert" in record.error
    report = notify.deliver_report(settings, notify.ReportDelivery(DAY, "accepted", tmp_path / "missing.xlsx"), **FAST)
    assert report.status == "failed" and report.channels and report.channels[0].attempts == 3


def test_rejected_alert_from_the_verdict_metadata():
    meta = {"verdict": "rejected", "rejected_gate": 2, "comparison_base": "2026-11-26",
            "reason": "완전성 게이트 실패: 8,940 / 9,203행 수신 (97.1 %)"}
    alert = notify.alert_rejected_from_metadata(DAY, meta, retry_at="2026-11-27T06:35:00+09:00", attempt=1)
    text = notify.compose_alert(alert).text()
    assert "게이트 2 완전성(completeness)" in text and "8,940 / 9,203행 수신" in text and "06:35 KST" in text
    assert "observed -" not in text  # no empty observed/threshold line when the metadata has none
    churn = notify.alert_rejected_from_metadata(DAY, {**meta, "rejected_gate": 6, "reason": "-"})
    assert "자동 재시도하지 않습니다" in notify.compose_alert(churn).text()


def test_a_time_budget_bounds_a_round_and_the_rest_is_resent_later(tmp_path):
    """A sensor tick must not hang on a mail server that accepts the connection and never answers."""
    import socket
    import time

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # the kernel completes the TCP handshake; nobody ever says "220"
    try:
        with webhook_receiver() as hook:
            settings = settings_for(tmp_path / "alerts", webhooks=[hook.url()], smtp_port=silent.getsockname()[1])
            started = time.monotonic()
            record = notify.send_alert(settings, notify.alert_overdue("2026-11-30"), budget_s=2.0, **FAST)
            elapsed = time.monotonic() - started
            email, webhook = record.channels
            assert elapsed < 6.0, elapsed
            assert email.status == "failed" and "timed out" in email.error.lower()
            assert webhook.status == "failed" and webhook.attempts == 0 and "time budget" in webhook.error
            assert hook.received.empty()
            silent.close()  # the mail server is gone for good: refused at once from now on
            [again] = notify.retry_failed(settings, **FAST)
            assert hook.next()["json"]["kind"] == "overdue"
    finally:
        silent.close()
    assert again.status == "partial"
    assert {c.channel: c.status for c in again.channels} == {"webhook": "sent", "email": "failed"}
    [still] = notify.pending_failures(settings)
    assert [c.channel for c in still.failed_channels] == ["email"]
