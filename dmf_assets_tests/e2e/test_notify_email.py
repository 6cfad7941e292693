"""The workbook mail and the outbox over a real SMTP server on 127.0.0.1 (aiosmtpd): what arrives, and
that a message that could not be sent is re-sent on its schedule — with a fake clock, not a sleep —
until it gets through or is given up after [alerts] give_up_hours."""

from __future__ import annotations

import io
import re
import shutil
import ssl
import subprocess
from datetime import date, datetime, timedelta
from email import message_from_bytes, policy
from email.header import decode_header, make_header
from pathlib import Path

import pytest
from openpyxl import load_workbook

from dmf_assets import notify
from dmf_assets.clock import frozen_at
from dmf_assets.domain.gates import Rejection
from dmf_assets.domain.model import DayStatus
from dmf_assets.notify.messages import NoRetry, RetryOutlook
from dmf_assets.ops.watchdog import delivery_check
from dmf_assets.report.model import DayReport, FieldChangeRow, GateRow
from dmf_assets.report.summary import summarize
from dmf_assets.report.workbook import write_workbook
from dmf_assets_tests.message_rules import assert_team_words
from dmf_assets_tests.notify_servers import free_port, notifier_for, smtp_server, webhook_receiver
from dmf_assets_tests.report_builders import event_row

DAY, BASE = date(2026, 11, 26), date(2026, 11, 25)
T0 = datetime.fromisoformat("2026-11-26T06:20:00+09:00")
pytestmark = pytest.mark.filterwarnings("ignore:Requiring AUTH while not requiring TLS:UserWarning")


EVENTS = (
    event_row("NEW", "20261126-1", "세파클러", "(주)삼오제약", manufacturer="Aurobindo Pharma Ltd", country="인도"),
    event_row(
        "NEW",
        "20261126-2",
        "메트포르민염산염",
        "(주)파마피아",
        severity="HIGH",
        manufacturer="Zhejiang Huahai",
        watchlist_hit=True,
        watch_reasons=("성분: 메트포르민",),
    ),
    event_row(
        "CHANGED",
        "20190101-5",
        "아토르바스타틴칼슘",
        "대신무약(주)",
        severity="CRITICAL",
        manufacturer="MSN Laboratories",
        country="인도",
        changes=(
            FieldChangeRow("k", "p", "i", "a", "manufacturer", "Hetero Labs", "MSN Laboratories", False, "CRITICAL"),
        ),
    ),
)


GATE_2 = GateRow(2, "completeness", "완전성", False, "수신 8,904건 / totalCount 9,167건", "수신 건수 = totalCount")


def _report(status=DayStatus.ACCEPTED, events=EVENTS) -> DayReport:
    """A day as `report.day_data` builds it: the verdict's reason (the engineer's words, as recorded) and figures."""
    if status is DayStatus.REJECTED:
        rejected = summarize(
            DAY,
            status,
            (),
            comparison_base=BASE,
            base_registry_size=9_167,
            received=8_904,
            total_count=9_167,
            rejected_gate=2,
        )
        reason = "게이트 2 완전성(completeness): 263건이 누락되었습니다 (관측값: 수신 8,904건 / totalCount 9,167건)"
        return DayReport.of(rejected, reason, gates=(GATE_2,))
    summary = summarize(DAY, status, events, comparison_base=BASE, registry_size=9_169, base_registry_size=9_167)
    return DayReport.of(summary, f"기준일 {BASE} 대비 신규 2 · 변경 1 · 삭제 0", events=events)


@pytest.fixture
def workbook(tmp_path) -> Path:
    return write_workbook(_report(), tmp_path / "reports").path


def _body(msg) -> str:
    return msg.get_body(("plain",)).get_content()


def test_the_daily_workbook_is_mailed_with_subject_sentences_and_attachment(tmp_path, workbook):
    with smtp_server() as smtp:
        notifier = notifier_for(tmp_path / "alerts", smtp_port=smtp.port, public_base_url="https://dmf.example.kr/r")
        outcome = notifier.deliver_report(notify.ReportDelivery.from_day_report(_report(), workbook))
        rcpts, msg = smtp.next_message()

    assert outcome.state == "delivered" and outcome.stored.sends[0].attempts == 1
    assert rcpts == ["ra-team@example.co.kr", "sourcing@example.co.kr"]
    assert msg["Subject"] == "[DMF] 2026-11-26 — 신규 2 · 변경 1 · 삭제 0 · 관심목록 1"
    assert msg["Date"].endswith("+0900")  # Korea time, as every timestamp the project writes
    body = _body(msg)
    assert_team_words(body)
    watch_at, top_at = body.index("■ 관심목록 해당 (1건)"), body.index("■ 주요 변경")
    assert watch_at < top_at
    assert (
        "(주)파마피아가 메트포르민염산염(20261126-2 · 제조소 Zhejiang Huahai, 중국)을 신규 등록했습니다."
        in body[watch_at:top_at]
    )
    assert (
        "대신무약(주)의 아토르바스타틴칼슘 등록 20190101-5의 제조소명이 Hetero Labs에서 MSN Laboratories로 바뀌었습니다."
        in body
    )
    assert "https://dmf.example.kr/r/reports/DMF_%EB%A6%AC%ED%8F%AC%ED%8A%B8_2026-11-26.xlsx" in body

    [attachment] = list(msg.iter_attachments())
    assert attachment.get_filename() == "DMF_리포트_2026-11-26.xlsx"
    assert attachment.get_content_type() == "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    assert attachment.get_content() == workbook.read_bytes()
    assert load_workbook(io.BytesIO(attachment.get_content()), read_only=True).sheetnames[0] == "요약"
    assert [m.state for m in notifier.status()] == ["delivered"]


def test_without_a_public_address_the_mail_has_no_link_and_doctor_says_so(tmp_path, workbook):
    with smtp_server() as smtp:
        notifier = notifier_for(tmp_path / "alerts", smtp_port=smtp.port)
        notifier.deliver_report(notify.ReportDelivery.from_day_report(_report(), workbook))
        _, msg = smtp.next_message()
    assert "링크 / Link" not in _body(msg) and "127.0.0.1" not in _body(msg)
    check = delivery_check(notifier)
    assert check.status == "WARN" and "public_base_url" in check.message_ko


def test_an_identical_report_is_not_sent_again_and_a_changed_one_is_a_correction(tmp_path, workbook):
    with smtp_server() as smtp:
        notifier = notifier_for(tmp_path / "alerts", smtp_port=smtp.port)
        first = notifier.deliver_report(notify.ReportDelivery.from_day_report(_report(), workbook))
        _, original = smtp.next_message()
        # the same day re-run: the same content (another run id, another hour) sends nothing
        again = DayReport(**{**_report().__dict__, "run_info": {"리포트 생성 run": "other"}})
        assert notifier.deliver_report(notify.ReportDelivery.from_day_report(again, workbook)) is None
        changed = notifier.deliver_report(notify.ReportDelivery.from_day_report(_report(events=EVENTS[:1]), workbook))
        _, msg = smtp.next_message()
        assert smtp.received.empty()
    assert first.state == changed.state == "delivered"
    assert msg["Subject"].startswith("[DMF 정정] 2026-11-26 — ")
    assert f"「{original['Subject']}」 메일을 바로잡습니다" in _body(msg)


def test_smtp_down_the_mail_waits_in_the_outbox_and_goes_out_when_it_is_back(tmp_path, workbook):
    port = free_port()  # nothing listens here yet
    notifier = notifier_for(tmp_path / "alerts", smtp_port=port)
    with frozen_at(T0):
        outcome = notifier.deliver_report(notify.ReportDelivery.from_day_report(_report(), workbook))
    assert outcome.state == "pending" and "ConnectionRefusedError" in outcome.stored.last_error
    [send] = outcome.stored.sends
    assert send.attempts == 1 and send.next_attempt_at == "2026-11-26T06:21:00+09:00"  # 1 minute after the failure
    with smtp_server(port=port) as smtp:
        with frozen_at(T0 + timedelta(seconds=30)):
            assert notifier.flush() == []  # not due yet: the schedule, not the caller's tick, decides
        with frozen_at(T0 + timedelta(minutes=3)):
            [sent] = notifier.flush()
        _, msg = smtp.next_message()
    assert sent.state == "delivered" and sent.stored.sends[0].attempts == 2
    assert [a.get_filename() for a in msg.iter_attachments()] == ["DMF_리포트_2026-11-26.xlsx"]
    assert delivery_check(notifier).status != "FAIL"


def test_a_mail_that_never_gets_through_is_given_up_once_and_told_on_the_other_channel(tmp_path):
    port = free_port()
    with webhook_receiver() as hook:
        notifier = notifier_for(tmp_path / "alerts", smtp_port=port, webhooks=[hook.url()])
        with frozen_at(T0):
            notifier.send_alert(notify.RequestCap(day=DAY, cap=300))
        assert hook.next()["json"]["kind"] == "request_cap"  # the webhook took it at once; the e-mail did not
        moments = [T0 + timedelta(minutes=m) for m in (1, 6, 21, 81, 141, 600, 1439)]
        for at in moments:
            with frozen_at(at):
                notifier.flush()
        # the outbox is read at the scenario's own moments: status() lists the last seven days of the clock
        with frozen_at(moments[-1]):
            [waiting] = [m for m in notifier.status() if m.kind == "request_cap"]
            assert waiting.state == "pending" and waiting.sends[0].attempts == 1 + len(moments)
            assert delivery_check(notifier).status == "WARN"
        day_after = T0 + timedelta(hours=24, minutes=1)
        with frozen_at(day_after):
            notifier.flush()
            notifier.flush()
        notice = hook.next()["json"]
        assert hook.received.empty()  # told once, on the webhook only
    with frozen_at(day_after):
        [given_up] = [m for m in notifier.status() if m.kind == "request_cap"]
        [told] = [m for m in notifier.status() if m.kind == "delivery_given_up"]
        assert delivery_check(notifier).status == "FAIL"
    assert given_up.state == "given_up"
    assert (
        notice["kind"] == "delivery_given_up"
        and "요청 한도" in notice["text"]
        and "부터 24시간 동안 9번 보냈지만" in notice["text"]  # the hours it was tried: T0 to 24 h 1 min later
        and "dmf notify flush --given-up" in notice["text"]
    )
    assert [s.channel for s in told.sends] == [given_up.sends[1].channel]  # not the e-mail that gave up
    # the server comes back: the given-up mail can be sent again by hand
    with smtp_server(port=port) as smtp:
        outcomes = notifier.flush(force=True, given_up=True)
        _, msg = smtp.next_message()
    assert "요청 한도" in msg["Subject"] and any(o.state == "delivered" for o in outcomes)


def test_a_message_whose_every_channel_was_removed_is_given_up_quietly(tmp_path):
    """Its only channel was taken out of the settings: the send is dropped, the message is given up (it reached
    nobody), and no "delivery given up" notice goes out — no delivery failed. The flush used to raise here."""
    with webhook_receiver() as hook:
        notifier = notifier_for(tmp_path / "alerts", webhooks=[hook.url()])
        with frozen_at(T0):
            stored_id = notifier.outbox.add(
                {"kind": "request_cap", "day": DAY.isoformat(), "subject": "[DMF 경보] 요청 한도"},
                channels=[("email:removed", "smtp:25 → ra@x.kr")],
                now=T0,
            )
            [outcome] = notifier.flush(force=True)
            assert stored_id is not None and outcome.state == "given_up"
            assert [s.state for s in outcome.stored.sends] == ["dropped"]
            assert [m.kind for m in notifier.status()] == ["request_cap"]  # no delivery_given_up notice stored
        assert hook.received.empty()  # and none sent


def test_a_held_mail_goes_out_once_when_its_day_is_decided(tmp_path):
    rejected = _report(DayStatus.REJECTED)
    path = write_workbook(rejected, tmp_path / "reports").path
    with smtp_server() as smtp:
        notifier = notifier_for(tmp_path / "alerts", smtp_port=smtp.port)
        hold = T0 + timedelta(hours=6)
        with frozen_at(T0):
            held = notifier.deliver_report(notify.ReportDelivery.from_day_report(rejected, path), hold_until=hold)
            # a failed retry re-makes the same "collection failed" workbook: still held, nothing sent
            assert (
                notifier.deliver_report(notify.ReportDelivery.from_day_report(rejected, path), hold_until=hold) is None
            )
            assert notifier.flush() == [] and smtp.received.empty()
        # the retry was accepted: its workbook mail replaces the held one — one mail for the morning
        accepted = notify.ReportDelivery.from_day_report(_report(), path, retry_attempt=1)
        with frozen_at(T0 + timedelta(minutes=31)):
            sent = notifier.deliver_report(accepted)
            notifier.flush(force=True)
        _, msg = smtp.next_message()
        assert smtp.received.empty()
    assert held.state == "held" and sent.state == "delivered"
    assert "재시도 1회째 반영" in msg["Subject"] and "오늘 아침 1번째로 다시 받아 정상으로 반영했습니다" in _body(msg)
    assert "정정" not in msg["Subject"]  # the held mail never went out: nothing to correct
    with frozen_at(T0 + timedelta(minutes=31)):  # status() lists the last seven days of the clock
        assert {m.state for m in notifier.status()} == {"superseded", "delivered"}


def test_a_held_mail_whose_hold_ends_is_released_by_flush(tmp_path):
    rejected = _report(DayStatus.REJECTED)
    path = write_workbook(rejected, tmp_path / "reports").path
    with smtp_server() as smtp:
        notifier = notifier_for(tmp_path / "alerts", smtp_port=smtp.port)
        with frozen_at(T0):
            notifier.deliver_report(
                notify.ReportDelivery.from_day_report(rejected, path), hold_until=T0 + timedelta(hours=1)
            )
        with frozen_at(T0 + timedelta(minutes=59)):
            assert notifier.flush() == []
        with frozen_at(T0 + timedelta(hours=1, minutes=1)):
            [released] = notifier.flush()
        _, msg = smtp.next_message()
    assert released.state == "delivered" and "수집 실패" in msg["Subject"]


def test_smtp_login_uses_the_password_from_the_environment_only(tmp_path, monkeypatch):
    secret = "s3cret-Pa55!"
    monkeypatch.setenv("DMF_SMTP_PASSWORD", secret)
    with smtp_server(password=secret) as smtp:
        notifier = notifier_for(tmp_path / "alerts", smtp_port=smtp.port, username="dmf")
        outcome = notifier.send_alert(notify.RequestCap(day=DAY, cap=300))
        _, msg = smtp.next_message()
    assert outcome.state == "delivered" and smtp.logins == [True]
    assert "요청 한도" in msg["Subject"]
    for path in (tmp_path / "alerts").iterdir():
        assert secret.encode() not in path.read_bytes(), path


def test_missing_smtp_password_is_a_clear_reason_not_a_crash(tmp_path, monkeypatch):
    monkeypatch.delenv("DMF_SMTP_PASSWORD", raising=False)
    with smtp_server(password="x") as smtp:
        notifier = notifier_for(tmp_path / "alerts", smtp_port=smtp.port, username="dmf")
        outcome = notifier.send_alert(notify.RequestCap(day=DAY, cap=300))
    assert outcome.state == "pending" and "DMF_SMTP_PASSWORD" in outcome.stored.last_error
    assert smtp.received.empty()


@pytest.mark.skipif(shutil.which("openssl") is None, reason="the openssl command is needed to make a test certificate")
def test_starttls_then_login_with_a_verified_certificate(tmp_path, monkeypatch):
    """STARTTLS with certificate verification (the server's self-signed cert is made trusted through
    SSL_CERT_FILE, as a company CA would be), then AUTH — the password only ever crosses TLS."""
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    monkeypatch.setenv("DMF_SMTP_PASSWORD", "tls-only-secret")
    with smtp_server(password="tls-only-secret", tls=context) as smtp:
        notifier = notifier_for(tmp_path / "alerts", smtp_port=smtp.port, username="dmf", starttls=True)
        outcome = notifier.send_alert(notify.RequestCap(day=DAY, cap=300))
        _, msg = smtp.next_message()
        plain = notifier_for(tmp_path / "alerts2", smtp_port=smtp.port, username="dmf", starttls=False)
        refused = plain.send_alert(notify.RequestCap(day=DAY, cap=300))
    assert outcome.state == "delivered" and smtp.logins == [True]
    assert "요청 한도" in msg["Subject"]
    # without STARTTLS the server refuses the login (530 must issue STARTTLS first): recorded, not raised
    assert refused.state == "pending" and "SMTP" in refused.stored.last_error


def test_a_missing_workbook_is_said_in_the_mail_not_a_crash(tmp_path):
    with smtp_server() as smtp:
        notifier = notifier_for(tmp_path / "alerts", smtp_port=smtp.port)
        gone = tmp_path / "reports" / "DMF_리포트_2026-11-26.xlsx"
        outcome = notifier.deliver_report(notify.ReportDelivery.from_day_report(_report(), gone))
        _, msg = smtp.next_message()
    assert outcome.state == "delivered" and list(msg.iter_attachments()) == []
    assert "첨부 없음 — 리포트 파일을 찾을 수 없습니다." in _body(msg)


# --- two audiences, corrections, and what a mail program shows ---------------------------------------

TEAM = ["ra-team@example.co.kr", "sourcing@example.co.kr"]
ONCALL = ["oncall@example.co.kr"]
REJECTION = Rejection(2, "수신 8,904건 / totalCount 9,167건", "수신 건수 = totalCount", "263건이 누락되었습니다.", BASE)


def _rejected_alert() -> notify.Rejected:
    outlook = RetryOutlook(attempt=1, of=3, why_not=NoRetry.OLD_DAY)
    return notify.Rejected(day=DAY, rejection=REJECTION, retry=outlook, run_id="0f2dc668-7a41-4c1e-9a55-1b2c3d4e5f60")


def _html(msg) -> str:
    return msg.get_body(("html",)).get_content()


def test_the_team_gets_the_workbook_mails_and_the_oncall_engineer_the_alerts(tmp_path, workbook):
    rejected = _report(DayStatus.REJECTED)
    with smtp_server() as smtp:
        notifier = notifier_for(tmp_path / "alerts", smtp_port=smtp.port, recipients=TEAM, oncall_recipients=ONCALL)
        notifier.deliver_report(notify.ReportDelivery.from_day_report(_report(), workbook))
        accepted_to, accepted = smtp.next_message()
        notifier.send_alert(_rejected_alert())
        alert_to, alert = smtp.next_message()
        notifier.deliver_report(notify.ReportDelivery.from_day_report(rejected, workbook))
        rejected_to, rejected_mail = smtp.next_message()
        assert smtp.received.empty()
    assert accepted_to == rejected_to == TEAM and alert_to == ONCALL
    for mail in (accepted, rejected_mail):  # the team's words only, in both parts
        assert_team_words(mail["Subject"])
        assert_team_words(_body(mail))
        assert_team_words(re.sub(r"<[^>]+>", " ", _html(mail)))
    assert "받은 등록은 8,904건, 식약처가 알린 전체는 9,167건입니다" in _body(rejected_mail)
    text = _body(alert)
    assert alert["Subject"] == "[DMF 경보] 2026-11-26 수집 거부 (rejected) — 게이트 2 완전성(completeness)"
    assert "`dmf run --date 2026-11-26`" in text and "관측값 / observed: 수신 8,904건 / totalCount 9,167건" in text
    assert "Dagster run: 0f2dc668-7a41-4c1e-9a55-1b2c3d4e5f60" in text


def test_without_oncall_recipients_the_alerts_go_to_the_team(tmp_path):
    with smtp_server() as smtp:
        notifier = notifier_for(tmp_path / "alerts", smtp_port=smtp.port, recipients=TEAM)
        notifier.send_alert(_rejected_alert())
        to, alert = smtp.next_message()
    assert to == TEAM and "수집 거부" in alert["Subject"]
    assert [(c.key, sorted(a.value for a in c.audiences)) for c in notifier.channels] == [("email", ["oncall", "team"])]


def test_the_raw_mail_names_its_attachment_for_outlook_and_has_an_html_alternative(tmp_path, workbook):
    with smtp_server() as smtp:
        notifier = notifier_for(tmp_path / "alerts", smtp_port=smtp.port, public_base_url="https://dmf.example.kr/r")
        notifier.deliver_report(notify.ReportDelivery.from_day_report(_report(), workbook))
        _, msg = smtp.next_message()
        raw = smtp.raw_of(msg)
    # read the raw bytes with the old parser, which leaves every header parameter as it was written
    old = message_from_bytes(raw, policy=policy.compat32)
    assert old.get_content_type() == "multipart/mixed"
    [alternative, attachment] = old.get_payload()
    assert [p.get_content_type() for p in alternative.get_payload()] == ["text/plain", "text/html"]
    name = attachment.get_param("name")  # Content-Type: …; name="=?utf-8?b?…?=" (RFC 2047, what Outlook reads)
    assert name.startswith("=?utf-8?b?") and str(make_header(decode_header(name))) == "DMF_리포트_2026-11-26.xlsx"
    disposition = attachment["Content-Disposition"]  # attachment; filename*=utf-8''DMF_%EB%A6… (RFC 2231)
    assert "filename*=utf-8''DMF_%EB%A6%AC%ED%8F%AC%ED%8A%B8_2026-11-26.xlsx" in disposition
    assert attachment.get_filename() == "DMF_리포트_2026-11-26.xlsx"
    assert attachment.get_payload(decode=True) == workbook.read_bytes()
    html = _html(msg)  # the headline table and the top events
    assert "<table>" in html and ">신규</th><td" in html and ">2</td>" in html
    assert "대신무약(주)의 아토르바스타틴칼슘 등록 20190101-5의 제조소명이 Hetero Labs에서 MSN Laboratories로" in html
    assert '<a href="https://dmf.example.kr/r/reports/DMF_%EB%A6%AC%ED%8F%AC%ED%8A%B8_2026-11-26.xlsx">' in html


def test_accepted_then_rejected_then_accepted_is_three_mails_the_last_a_correction(tmp_path, workbook):
    """A mail is skipped only when it equals the LAST one sent: the inbox never ends on 수집 실패. The mail
    server is down when the correction is made and comes back: it waits in the outbox and goes out. Each time the
    day's list was asked of MFDS again (a retry), which the corrections say."""
    again = notify.Redone.REFETCHED
    accepted = notify.ReportDelivery.from_day_report(_report(), workbook, redone=again)
    rejected = notify.ReportDelivery.from_day_report(_report(DayStatus.REJECTED), workbook, redone=again)
    port = free_port()
    notifier = notifier_for(tmp_path / "alerts", smtp_port=port, recipients=TEAM, oncall_recipients=ONCALL)
    with smtp_server(port=port) as smtp, frozen_at(T0):
        notifier.deliver_report(accepted)
        _, first = smtp.next_message()
    with smtp_server(port=port) as smtp, frozen_at(T0 + timedelta(minutes=40)):
        notifier.deliver_report(rejected)
        _, second = smtp.next_message()
    with frozen_at(T0 + timedelta(minutes=80)):  # nothing listens: the correction waits
        waiting = notifier.deliver_report(accepted)
    assert waiting is not None and waiting.state == "pending"
    with smtp_server(port=port) as smtp, frozen_at(T0 + timedelta(minutes=82)):
        [sent] = notifier.flush()
        _, third = smtp.next_message()
        assert notifier.deliver_report(accepted) is None  # once more: the inbox already says this
        assert notifier.flush() == [] and smtp.received.empty()
    assert sent.state == "delivered"
    assert first["Subject"] == "[DMF] 2026-11-26 — 신규 2 · 변경 1 · 삭제 0 · 관심목록 1"
    assert second["Subject"] == "[DMF 정정] 2026-11-26 — 수집 실패 (비교 기준 2026-11-25)"
    assert third["Subject"] == "[DMF 정정] 2026-11-26 — 신규 2 · 변경 1 · 삭제 0 · 관심목록 1"
    assert (
        f"이 메일은 2026-11-26 07:00 KST에 보낸 「{second['Subject']}」 메일을 바로잡습니다. 그 뒤 이 날의 목록을 다시 "
        "받아 정상으로 반영했습니다." in _body(third)
    )
    assert "앞서 알린 이 날의 변경은 취소되었습니다" in _body(second)
    for mail in (first, second, third):
        assert_team_words(_body(mail))


def test_a_correction_not_yet_sent_is_dropped_when_the_day_reads_as_the_mail_people_have(tmp_path, workbook):
    accepted = notify.ReportDelivery.from_day_report(_report(), workbook)
    rejected = notify.ReportDelivery.from_day_report(_report(DayStatus.REJECTED), workbook)
    port = free_port()
    notifier = notifier_for(tmp_path / "alerts", smtp_port=port)
    with smtp_server(port=port) as smtp, frozen_at(T0):
        notifier.deliver_report(accepted)
        smtp.next_message()
    with frozen_at(T0 + timedelta(minutes=10)):
        assert notifier.deliver_report(rejected).state == "pending"  # the server is down
        assert notifier.deliver_report(accepted) is None  # the day reads as the mail people have again
    with smtp_server(port=port) as smtp, frozen_at(T0 + timedelta(minutes=30)):
        assert notifier.flush(force=True) == [] and smtp.received.empty()
        assert [m.state for m in notifier.status()] == ["delivered", "superseded"]


def test_dmf_notify_status_lists_one_line_per_message_when_no_channel_is_set(tmp_path, workbook):
    """Without a channel a report is recorded; re-running the day recorded it again with the same digest, and
    `dmf notify status` listed the one report twice."""
    notifier = notifier_for(tmp_path / "alerts")
    assert notifier.channels == []
    first = notifier.deliver_report(notify.ReportDelivery.from_day_report(_report(), workbook))
    assert first is not None and first.state == "recorded"
    assert notifier.deliver_report(notify.ReportDelivery.from_day_report(_report(), workbook)) is None
    assert [m.line() for m in notifier.status()] == [first.line]
