"""The daily delivery over a real SMTP server on 127.0.0.1 (aiosmtpd): subject, body, the workbook attached.

The workbook is written by the product's own writer (dmf_assets.report.workbook) from a small day.
"""

from __future__ import annotations

import io
import json
import shutil
import ssl
import subprocess
from datetime import date

import pytest
from openpyxl import load_workbook

from dmf_assets import notify
from dmf_assets.report.model import DayReport, DayStatus, EventRow, Kpis
from dmf_assets.report.workbook import write_workbook
from dmf_assets_tests.notify_servers import free_port, settings_for, smtp_server

DAY, BASE = date(2026, 11, 26), date(2026, 11, 25)
FAST = {"delivery_backoff_s": (0.05,)}
pytestmark = pytest.mark.filterwarnings("ignore:Requiring AUTH while not requiring TLS:UserWarning")


def _event(kind, permit, ingredient, applicant, manufacturer, country, severity, *, fields=(), watch=False):
    return EventRow(kind, severity, f"K-{permit}", permit, None, ingredient, ingredient, applicant, "1234567890",
                    manufacturer, "주소", country, "2026-11-26", "별표1", changed_fields=tuple(fields),
                    watchlist_hit=watch, watch_reasons=("성분: 메트포르민",) if watch else ())


EVENTS = (
    _event("NEW", "20261126-1", "세파클러", "(주)삼오제약", "Aurobindo Pharma Ltd", "인도", "INFO"),
    _event("NEW", "20261126-2", "메트포르민염산염", "(주)파마피아", "Zhejiang Huahai", "중국", "HIGH", watch=True),
    _event("CHANGED", "20190101-5", "아토르바스타틴칼슘", "대신무약(주)", "MSN Laboratories", "인도", "CRITICAL",
           fields=("manufacturer",)),
)


def _report(status=DayStatus.ACCEPTED) -> DayReport:
    if status is DayStatus.REJECTED:
        return DayReport(DAY, status, "완전성 게이트 실패: 8,940 / 9,203행 수신 (97.1 %)", BASE, BASE, Kpis(registry_size=9_167))
    kpis = Kpis(registry_size=9_169, new=2, changed=1, withdrawn=0, watchlist_hits=1)
    return DayReport(DAY, status, "6개 게이트 모두 통과", BASE, DAY, kpis, events=EVENTS)


@pytest.fixture
def workbook(tmp_path):
    return write_workbook(_report(), tmp_path / "reports").path


def test_daily_workbook_is_emailed_with_korean_subject_body_and_attachment(tmp_path, workbook):
    with smtp_server() as smtp:
        settings = settings_for(tmp_path / "alerts", smtp_port=smtp.port)
        delivery = notify.ReportDelivery.from_day_report(_report(), workbook, url="http://127.0.0.1:8765/x.xlsx")
        record = notify.deliver_report(settings, delivery, **FAST)
        rcpts, msg = smtp.next_message()

    assert record.status == "sent", record.line()
    assert [(c.channel, c.status, c.attempts) for c in record.channels] == [("email", "sent", 1)]
    assert rcpts == ["ra-team@example.co.kr", "sourcing@example.co.kr"]
    assert msg["Subject"] == "[DMF] 2026-11-26 — 신규 2 · 변경 1 · 취하 0 · 관심목록 1"
    body = msg.get_body(("plain",)).get_content()
    assert "정상 수집" in body and "비교 기준 / comparison base: 2026-11-25" in body
    # watchlist hits first, then the other top events, each as a sentence
    watch_at, top_at = body.index("관심목록 해당 / Watchlist hits"), body.index("주요 이벤트 / Top events")
    assert watch_at < top_at
    assert "(주)파마피아이(가) 메트포르민염산염을(를) 등록했습니다" in body[watch_at:top_at]
    assert "대신무약(주)의 아토르바스타틴칼슘 — 제조소명 변경" in body[top_at:]
    assert "http://127.0.0.1:8765/x.xlsx" in body

    [attachment] = list(msg.iter_attachments())
    assert attachment.get_filename() == "DMF_리포트_2026-11-26.xlsx"
    assert attachment.get_content_type() == "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    data = attachment.get_content()
    assert data == workbook.read_bytes()
    wb = load_workbook(io.BytesIO(data), read_only=True)
    assert len(wb.sheetnames) >= 2
    text = " ".join(str(c) for ws in wb.worksheets for row in ws.iter_rows(values_only=True) for c in row if c)
    assert "메트포르민염산염" in text and "2026-11-26" in text

    ledger = notify.read_ledger(notify.notify_config(settings))
    assert [r.id for r in ledger] == ["report:2026-11-26"]


def test_rejected_day_subject_and_second_delivery_is_marked_updated(tmp_path):
    rejected = _report(DayStatus.REJECTED)
    path = write_workbook(rejected, tmp_path / "reports").path
    with smtp_server() as smtp:
        settings = settings_for(tmp_path / "alerts", smtp_port=smtp.port)
        first = notify.deliver_report(settings, notify.ReportDelivery.from_day_report(rejected, path), **FAST)
        _, msg1 = smtp.next_message()
        second = notify.deliver_report(settings, notify.ReportDelivery.from_day_report(rejected, path), **FAST)
        _, msg2 = smtp.next_message()
    assert first.ok and second.ok
    assert msg1["Subject"] == "[DMF] 2026-11-26 — 수집 실패 (비교 기준 2026-11-25)"
    assert msg2["Subject"] == "[DMF] 2026-11-26 — 수집 실패 (비교 기준 2026-11-25) (갱신 / updated)"
    body = msg1.get_body(("plain",)).get_content()
    assert "결과가 반영되지 않았습니다" in body and "완전성 게이트 실패" in body


def test_smtp_temporary_refusal_is_retried_then_delivered(tmp_path, workbook):
    with smtp_server(refuse_first=1) as smtp:
        settings = settings_for(tmp_path / "alerts", smtp_port=smtp.port)
        record = notify.deliver_report(settings, notify.ReportDelivery.from_day_report(_report(), workbook), **FAST)
        smtp.next_message()
        assert smtp.received.empty() and smtp.refused == 1
    [email] = record.channels
    assert (email.status, email.attempts, email.error) == ("sent", 2, "")
    assert notify.pending_failures(settings) == []


def test_dead_smtp_port_is_recorded_as_failed_without_raising_then_resent(tmp_path):
    port = free_port()  # nothing listens here
    settings = settings_for(tmp_path / "alerts", smtp_port=port)
    alert = notify.alert_run_failed("2026-11-27", error="ConnectError: apis.data.go.kr\nTraceback…", step="raw_pages")
    record = notify.send_alert(settings, alert, **FAST)
    assert record is not None and record.status == "failed"
    [email] = record.channels
    assert email.attempts == 3 and "연결 실패" in email.error and "ConnectionRefusedError" in email.error
    [pending] = notify.pending_failures(settings)
    assert pending.id == "alert:2026-11-27-run_failed"
    stored = json.loads((tmp_path / "alerts" / "2026-11-27-run_failed.json").read_text(encoding="utf-8"))
    assert stored["delivery"]["status"] == "failed" and stored["day"] == "2026-11-27"
    # the same alert is not raised twice…
    assert notify.send_alert(settings, alert, **FAST) is None
    # …but its failed delivery is re-sent once the server is back
    with smtp_server(port=port) as smtp:
        [again] = notify.retry_failed(settings, **FAST)
        _, msg = smtp.next_message()
    assert again.status == "sent" and again.round == 2
    assert msg["Subject"] == "[DMF 경보] 2026-11-27 실행 실패 (failed run)"
    assert "Traceback" not in msg.get_body(("plain",)).get_content()
    assert notify.pending_failures(settings) == []


def test_smtp_login_uses_the_password_from_the_environment_only(tmp_path, workbook, monkeypatch):
    secret = "s3cret-Pa55!"
    monkeypatch.setenv("DMF_SMTP_PASSWORD", secret)
    with smtp_server(password=secret) as smtp:
        settings = settings_for(tmp_path / "alerts", smtp_port=smtp.port, username="dmf")
        record = notify.send_alert(settings, notify.alert_overdue("2026-11-26"), **FAST)
        _, msg = smtp.next_message()
    assert record.status == "sent" and smtp.logins == [True]
    assert "2026-11-26" in msg["Subject"] and "리포트 지연" in msg["Subject"]
    for path in (tmp_path / "alerts").iterdir():
        assert secret not in path.read_text(encoding="utf-8"), path


def test_missing_smtp_password_fails_once_with_a_clear_reason(tmp_path, monkeypatch):
    monkeypatch.delenv("DMF_SMTP_PASSWORD", raising=False)
    with smtp_server(password="x") as smtp:
        settings = settings_for(tmp_path / "alerts", smtp_port=smtp.port, username="dmf")
        record = notify.send_alert(settings, notify.alert_overdue("2026-11-26"), **FAST)
    [email] = record.channels
    assert record.status == "failed" and email.attempts == 1 and "DMF_SMTP_PASSWORD" in email.error
    assert smtp.received.empty()


@pytest.mark.skipif(shutil.which("openssl") is None, reason="the openssl command is needed to make a test certificate")
def test_starttls_then_login_with_a_verified_certificate(tmp_path, monkeypatch):
    """STARTTLS with certificate verification (the server's self-signed cert is made trusted through
    SSL_CERT_FILE, as a company CA would be), then AUTH — the password only ever crosses TLS."""
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True, timeout=60)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    monkeypatch.setenv("DMF_SMTP_PASSWORD", "tls-only-secret")
    with smtp_server(password="tls-only-secret", tls=context) as smtp:
        settings = settings_for(tmp_path / "alerts", smtp_port=smtp.port, username="dmf", starttls=True)
        record = notify.send_alert(settings, notify.alert_request_cap("2026-11-26", cap=300, used=300), **FAST)
        _, msg = smtp.next_message()
        plain = settings_for(tmp_path / "alerts2", smtp_port=smtp.port, username="dmf", starttls=False)
        refused = notify.send_alert(plain, notify.alert_request_cap("2026-11-26", cap=300), **FAST)
    assert record.status == "sent" and smtp.logins == [True]
    assert "요청 한도" in msg["Subject"]
    # without STARTTLS the server refuses the login (530 must issue STARTTLS first): recorded, not raised
    assert refused.status == "failed" and "SMTP" in refused.channels[0].error


def test_a_missing_workbook_is_said_in_the_mail_not_a_crash(tmp_path):
    with smtp_server() as smtp:
        settings = settings_for(tmp_path / "alerts", smtp_port=smtp.port)
        gone = tmp_path / "reports" / "DMF_리포트_2026-11-26.xlsx"
        record = notify.deliver_report(settings, notify.ReportDelivery.from_day_report(_report(), gone), **FAST)
        _, msg = smtp.next_message()
    assert record.status == "sent" and list(msg.iter_attachments()) == []
    assert "첨부 없음" in msg.get_body(("plain",)).get_content()
