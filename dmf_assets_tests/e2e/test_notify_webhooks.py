"""Alerts over a real HTTP receiver on 127.0.0.1: generic JSON, Slack and Teams shapes, once per day and
kind even with concurrent senders, re-sends on the outbox's schedule (a fake clock), secrets never stored,
and a time budget that keeps a sensor tick short."""

from __future__ import annotations

import json
import re
import socket
import threading
from datetime import date, datetime, timedelta

import pytest

from dmf_assets import notify
from dmf_assets.clock import frozen_at
from dmf_assets.domain.gates import Rejection
from dmf_assets.domain.model import DayStatus
from dmf_assets.notify import channels
from dmf_assets.notify.messages import NoRetry, RetryOutlook
from dmf_assets_tests.notify_servers import free_port, notifier_for, smtp_server, webhook_receiver

DAY, BASE = date(2026, 11, 27), date(2026, 11, 26)
T0 = datetime.fromisoformat("2026-11-27T06:05:00+09:00")
REJECTION = Rejection(2, "수신 8,940건 / totalCount 9,203건", "수신 건수 = totalCount", "263건이 누락되었습니다.", BASE)


def _rejected(retry=None):
    return notify.Rejected(
        day=DAY, rejection=REJECTION, retry=retry or RetryOutlook(attempt=1, of=3, at=T0 + timedelta(minutes=30))
    )


def test_rejected_day_alert_goes_to_webhook_and_email_and_is_written_once(tmp_path):
    with webhook_receiver() as hook, smtp_server() as smtp:
        notifier = notifier_for(tmp_path / "alerts", webhooks=[hook.url()], smtp_port=smtp.port)
        outcome = notifier.send_alert(_rejected())
        post = hook.next()
        _, mail = smtp.next_message()
        # the same (day, kind) again: nothing is sent; a different kind still is
        assert notifier.send_alert(_rejected(RetryOutlook(attempt=1, of=3, why_not=NoRetry.OLD_DAY))) is None
        other = notifier.send_alert(notify.RequestCap(day=DAY, cap=300))
        second = hook.next()
        smtp.next_message()
        assert hook.received.empty() and smtp.received.empty()

    assert outcome.state == "delivered" and {s.channel.split(":")[0] for s in outcome.stored.sends} == {
        "email",
        "webhook",
    }
    assert other.state == "delivered" and second["json"]["kind"] == "request_cap"
    body = post["json"]
    assert post["path"] == "/hook" and body["source"] == "dmf-watch" and body["type"] == "alert"
    assert (body["kind"], body["day"], body["level"]) == ("rejected", DAY.isoformat(), "warning")
    assert "게이트 2 완전성(completeness)" in body["subject"]
    assert "수신 8,940건 / totalCount 9,203건" in body["text"] and "수신 건수 = totalCount" in body["text"]
    assert "비교 기준일(comparison base)은 2026-11-26 그대로입니다" in body["text"]
    assert "06:35 KST에 자동으로 다시 수집합니다(재시도 1/3" in body["text"]
    assert body["facts"]["비교 기준 / comparison base"] == "2026-11-26"
    assert mail["Subject"] == body["subject"]

    stored = json.loads((tmp_path / "alerts" / f"{DAY}-rejected.json").read_text(encoding="utf-8"))
    assert {"day", "kind", "message", "key", "raised_at", "facts", "text"} <= set(stored)
    assert stored["facts"]["rejection"]["observed"] == "수신 8,940건 / totalCount 9,203건"
    log = (tmp_path / "alerts" / "alerts.log").read_text(encoding="utf-8").splitlines()
    assert [line.split("\t")[1] for line in log] == ["rejected", "request_cap"]


def test_concurrent_senders_raise_one_alert(tmp_path):
    with webhook_receiver() as hook:
        results, barrier = [], threading.Barrier(6)

        def send():
            notifier = notifier_for(tmp_path / "alerts", webhooks=[hook.url()])  # each its own connection, as processes
            barrier.wait(timeout=10)
            results.append(notifier.send_alert(notify.RequestCap(day=DAY, cap=300)))

        threads = [threading.Thread(target=send) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        hook.next()
        assert hook.received.empty()
    assert sum(r is not None for r in results) == 1 and len(results) == 6


def test_webhook_http_500_is_resent_on_the_schedule(tmp_path):
    with webhook_receiver(fail_first=2) as hook:
        notifier = notifier_for(tmp_path / "alerts", webhooks=[hook.url("/services/T000/B000/secretpath")])
        slow = notify.SlowRun(day=DAY, seconds=95.0, median_s=30.0, samples=14, factor=3.0)
        with frozen_at(T0):
            first = notifier.send_alert(slow)
        with frozen_at(T0 + timedelta(minutes=1)):
            notifier.flush()
        with frozen_at(T0 + timedelta(minutes=7)):
            [done] = notifier.flush()
        post = hook.next()
    assert first.state == "pending" and "HTTP 500" in first.stored.last_error
    [send] = done.stored.sends
    assert (done.state, send.attempts) == ("delivered", 3) and hook.failed == 2
    assert "3.2배" in post["json"]["text"]
    assert send.target == f"http://127.0.0.1:{hook.port}/…"  # the secret path is never recorded


def test_a_permanent_error_and_a_dead_port_wait_in_the_outbox_without_their_secrets(tmp_path):
    dead = f"http://127.0.0.1:{free_port()}/hook"
    with webhook_receiver(fail_first=99, fail_status=404) as hook:
        notifier = notifier_for(tmp_path / "alerts", webhooks=[hook.url("/hook/abc?sig=SECRETSIG"), dead])
        outcome = notifier.send_alert(
            notify.RunTimeout(day=DAY, limit_minutes=30, retry=RetryOutlook(attempt=1, of=3, why_not=NoRetry.OLD_DAY))
        )
    gone, refused = sorted(outcome.stored.sends, key=lambda s: s.last_error or "")
    assert outcome.state == "pending"
    assert "HTTP 404" in (gone.last_error + refused.last_error) and "ConnectError" in (
        gone.last_error + refused.last_error
    )
    for path in (tmp_path / "alerts").iterdir():
        assert b"SECRETSIG" not in path.read_bytes() and b"/hook/abc" not in path.read_bytes(), path
    [line] = [m.line() for m in notifier.status()]
    assert "대기(재발송 예정)" in line and "SECRETSIG" not in line


def test_slack_and_teams_payload_shapes_through_a_real_receiver(tmp_path):
    with webhook_receiver() as hook:
        notifier = notifier_for(
            tmp_path / "alerts", webhooks=[f"slack+{hook.url('/slack')}", f"teams+{hook.url('/teams')}"]
        )
        hit = "★ [높음] (주)파마피아가 메트포르민염산염(20261127-1 · 제조소 Zhejiang Huahai, 중국)을 신규 등록했습니다."
        outcome = notifier.send_alert(notify.WatchlistHit(day=DAY, hits=(hit,), events=1))
        posts = {p["path"]: p["json"] for p in (hook.next(), hook.next())}
    assert outcome.state == "delivered" and sorted(c.kind for c in notifier.channels) == ["slack", "teams"]
    slack = posts["/slack"]
    assert "2026-11-27" in slack["text"] and "관심목록 해당 1건" in slack["text"]
    assert slack["blocks"][0]["type"] == "header" and any(
        "메트포르민염산염" in b.get("text", {}).get("text", "") for b in slack["blocks"] if b["type"] == "section"
    )
    teams = posts["/teams"]
    assert teams["type"] == "message"
    [att] = teams["attachments"]
    assert att["contentType"] == "application/vnd.microsoft.card.adaptive"
    card = att["content"]
    assert card["type"] == "AdaptiveCard" and card["version"] == "1.4"
    assert card["body"][0]["text"].startswith("[DMF 경보] 2026-11-27 관심목록")
    facts = next(b for b in card["body"] if b["type"] == "FactSet")["facts"]
    assert {"title": "날짜 / day", "value": "2026-11-27"} in facts


@pytest.mark.parametrize(
    "url, flavour",
    [
        ("https://hooks.slack.com/services/T0/B0/xyz", "slack"),
        ("https://contoso.webhook.office.com/webhookb2/abc/IncomingWebhook/def", "teams"),
        ("https://prod-12.koreacentral.logic.azure.com:443/workflows/abc/triggers/manual/paths/invoke?sig=x", "teams"),
        ("https://chat.example.co.kr/hooks/abc", "webhook"),
        ("slack+https://mattermost.example.co.kr/hooks/abc", "slack"),
    ],
)
def test_webhook_flavour_is_recognised_by_host(url, flavour):
    assert channels.webhook_flavour(url) == flavour
    assert "abc" not in channels.redact_url(url) and "xyz" not in channels.redact_url(url)


def test_three_rejected_days_in_a_row_escalate(tmp_path):
    days = [date(2026, 11, d) for d in (24, 25, 26, 27)]
    statuses = dict(zip(days, ("accepted", "rejected", "rejected", "rejected"), strict=True))
    streak = notify.rejected_streak(statuses, n=3)
    assert streak == days[1:]
    assert notify.rejected_streak({**statuses, days[1]: "accepted"}, n=3) == []
    with webhook_receiver() as hook:
        notifier = notifier_for(tmp_path / "alerts", webhooks=[hook.url()])
        notifier.send_alert(notify.RejectedStreak(day=streak[-1], days=tuple(streak), gates=(2, 1, 6), base=days[0]))
        body = hook.next()["json"]
    assert body["level"] == "critical" and body["kind"] == "rejected_streak"
    assert body["subject"] == "[DMF 긴급] 2026-11-27 — 3일 연속 수집 거부 (escalation)"
    assert "ESCALATION" in body["text"] and "오늘 담당자가 직접 확인" in body["text"]
    assert "2026-11-26 게이트 1 전송(transport)" in body["text"] and "마지막 반영일 2026-11-24" in body["text"]
    plain = notify.compose_alert(_rejected(), notify.MessageContext(emulator=True))
    assert "긴급" not in plain.subject and "ESCALATION" not in plain.text()


def test_rules_the_sensor_uses():
    assert notify.slow_run(91, [30] * 14, 3.0) == 30 and notify.slow_run(89, [30] * 14, 3.0) is None
    assert notify.slow_run(500, [30] * 3) is None  # too few samples to judge


def test_a_finished_day_delivers_its_report_and_raises_its_own_alerts(tmp_path):
    from dataclasses import replace

    from dmf_assets.domain.model import DayStatus
    from dmf_assets.report.model import DayReport, EventRow
    from dmf_assets.report.summary import summarize

    watched = EventRow(
        "NEW",
        "HIGH",
        "20261127-3",
        "20261127-3",
        None,
        "메트포르민염산염",
        "메트포르민",
        "(주)파마피아",
        None,
        "Zhejiang Huahai",
        "주소",
        "중국",
        "2026-11-27",
        "별표1",
        watchlist_hit=True,
        watch_reasons=("성분: 메트포르민",),
    )
    gone = tuple(
        replace(watched, event_type="WITHDRAWN", severity="CRITICAL", dmf_key=f"g{i}", watchlist_hit=False)
        for i in range(200)
    )
    heavy_day = date(2026, 11, 28)
    quiet = DayReport.of(
        summarize(DAY, DayStatus.ACCEPTED, (watched,), comparison_base=BASE, registry_size=9_170), "", events=(watched,)
    )
    heavy = DayReport.of(
        summarize(heavy_day, DayStatus.ACCEPTED, gone, comparison_base=DAY, registry_size=9_000), "", events=gone
    )
    rejected = DayReport.of(
        summarize(date(2026, 11, 29), DayStatus.REJECTED, (), comparison_base=heavy_day, base_registry_size=9_000),
        "거부",
    )
    with webhook_receiver() as hook:
        notifier = notifier_for(tmp_path / "alerts", webhooks=[hook.url()])
        got, kinds = [], []
        for report in (quiet, heavy, rejected):
            _mail, alerts = notifier.deliver_day(notify.ReportDelivery.from_day_report(report, None))
            kinds.append([a.stored.kind for a in alerts])
            got += [hook.next()["json"] for _ in range(1 + len(alerts))]
        assert hook.received.empty()
    assert kinds == [["watchlist_hit"], ["withdrawal_share"], []]
    assert [(g["type"], g["kind"], g["day"]) for g in got] == [
        ("report", "report", "2026-11-27"),
        ("alert", "watchlist_hit", "2026-11-27"),
        ("report", "report", "2026-11-28"),
        ("alert", "withdrawal_share", "2026-11-28"),
        ("report", "report", "2026-11-29"),
    ]
    assert got[0]["subject"] == "[DMF] 2026-11-27 — 신규 1 · 변경 0 · 삭제 0 · 관심목록 1"
    assert (
        "(주)파마피아가 메트포르민염산염(20261127-3 · 제조소 Zhejiang Huahai, 중국)을 신규 등록했습니다."
        in got[1]["text"]
    )
    assert "2.2 %" in got[3]["subject"]


def test_an_unwritable_alerts_folder_still_tells_people_and_says_it_could_not_store(tmp_path):
    blocker = tmp_path / "alerts"
    blocker.write_text("a file where the folder should be", encoding="utf-8")
    with webhook_receiver() as hook:
        notifier = notifier_for(blocker, webhooks=[hook.url()])
        outcome = notifier.send_alert(_rejected())
        assert hook.next()["json"]["kind"] == "rejected"  # sent once, although it could not be stored
    assert outcome.state == "failed" and "발송함" in outcome.line and "sent" in outcome.line
    assert notifier.status() == []


def test_a_time_budget_bounds_a_round_and_the_rest_is_sent_later(tmp_path):
    """A sensor tick must not hang on a mail server that accepts the connection and never answers."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # the kernel completes the TCP handshake; nobody ever says "220"
    try:
        with webhook_receiver() as hook:
            settings_kw = {"webhooks": [hook.url()], "smtp_port": silent.getsockname()[1]}
            notifier = notifier_for(tmp_path / "alerts", **settings_kw)
            notifier.budget_s = 2.0
            with frozen_at(T0):
                outcome = notifier.send_alert(notify.RequestCap(day=DAY, cap=300))
            errors = {s.channel.split(":")[0]: s.last_error for s in outcome.stored.sends}
            # the mail server was given what was left of the round's 2 s (not its own timeout), and the webhook,
            # asked after it, found the budget spent: the round ends instead of waiting on every channel
            waited = re.search(r"timed out \(([\d.]+) s\)", errors["email"])
            assert waited and 0 < float(waited.group(1)) <= notifier.budget_s, errors["email"]
            assert "time budget" in errors["webhook"]
            assert hook.received.empty()
            silent.close()  # the mail server is gone for good: refused at once from now on
            with frozen_at(T0 + timedelta(minutes=2)):
                [again] = notifier.flush()
            assert hook.next()["json"]["kind"] == "request_cap"
    finally:
        silent.close()
    assert again.state == "pending"
    assert {s.channel.split(":")[0]: s.state for s in again.stored.sends} == {"webhook": "sent", "email": "pending"}


# --- the workbook in chat: a link that downloads it, or no word about a file -------------------------


def _workbook_report(tmp_path):
    from dmf_assets.report.model import DayReport
    from dmf_assets.report.summary import summarize
    from dmf_assets.report.workbook import write_workbook

    summary = summarize(DAY, DayStatus.ACCEPTED, (), comparison_base=BASE, registry_size=9_170)
    report = DayReport.of(summary, f"기준일 {BASE} 대비 변경 없음")
    return report, write_workbook(report, tmp_path / "reports").path


def test_the_report_post_links_the_workbook_on_the_download_server_and_the_link_downloads_it(tmp_path):
    import httpx

    from dmf_assets_tests.web_support import serving

    report, workbook = _workbook_report(tmp_path)
    with serving(workbook.parent, tmp_path / "none.duckdb") as (base_url, _), webhook_receiver() as hook:
        notifier = notifier_for(tmp_path / "alerts", webhooks=[hook.url()], public_base_url=base_url)
        notifier.deliver_report(notify.ReportDelivery.from_day_report(report, workbook))
        post = hook.next()["json"]
        download = httpx.get(post["link"], timeout=10)
    assert post["type"] == "report" and post["link"].startswith(base_url + "/reports/DMF_")
    assert download.status_code == 200 and download.content == workbook.read_bytes()
    assert "첨부" not in post["text"] and f"리포트 내려받기: {post['link']}" in post["text"]


def test_without_a_public_address_the_report_post_claims_no_attachment(tmp_path):
    report, workbook = _workbook_report(tmp_path)
    with webhook_receiver() as hook:
        notifier = notifier_for(tmp_path / "alerts", webhooks=[hook.url(), f"slack+{hook.url('/slack')}"])
        notifier.deliver_report(notify.ReportDelivery.from_day_report(report, workbook))
        posts = {p["path"]: p["json"] for p in (hook.next(), hook.next())}
    generic, slack = posts["/hook"], posts["/slack"]
    assert generic["link"] is None and "첨부" not in generic["text"] and workbook.name not in generic["text"]
    assert "첨부" not in json.dumps(slack, ensure_ascii=False)


def test_a_correction_reaches_a_webhook_that_was_down_when_it_was_made(tmp_path):
    """Same for webhooks: accepted, re-run rejected, re-run accepted → three posts, the last 정정."""
    from dataclasses import replace

    report, workbook = _workbook_report(tmp_path)
    accepted = notify.ReportDelivery.from_day_report(report, workbook)
    rejected_day = replace(accepted.summary, status=DayStatus.REJECTED, received=9_150, total_count=9_170)
    rejected = replace(accepted, summary=rejected_day, digest="another")
    with webhook_receiver() as hook:
        notifier = notifier_for(tmp_path / "alerts", webhooks=[hook.url()])
        with frozen_at(T0):
            notifier.deliver_report(accepted)
            notifier.deliver_report(rejected)
            first, second = hook.next()["json"], hook.next()["json"]
            hook.fail_first = 1  # down (HTTP 500) when the correction is made
            assert notifier.deliver_report(accepted).state == "pending"
        with frozen_at(T0 + timedelta(minutes=2)):
            [sent] = notifier.flush()
            third = hook.next()["json"]
            assert notifier.deliver_report(accepted) is None
        assert hook.received.empty()
    assert sent.state == "delivered"
    assert [p["subject"].split(" — ")[0] for p in (first, second, third)] == [
        "[DMF] 2026-11-27",
        "[DMF 정정] 2026-11-27",
        "[DMF 정정] 2026-11-27",
    ]
    assert f"「{second['subject']}」 메일을 바로잡습니다" in third["text"]
