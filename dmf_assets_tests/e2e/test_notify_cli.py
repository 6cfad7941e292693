"""People are told without opening anything: `dmf run` e-mails the day's workbook, and a rejected day is
alerted by e-mail and as a webhook POST — through the real CLI, a real SMTP server and a real HTTP receiver
on 127.0.0.1, the way the daemon's sensor does it (the CLI evaluates the same sensor after its run)."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from openpyxl import load_workbook

from dmf_assets_tests.message_rules import assert_team_words
from dmf_assets_tests.notify_servers import email_config, free_port, smtp_server, webhook_receiver
from dmf_assets_tests.project_support import dmf, temp_project

pytestmark = pytest.mark.slow

GOOD, BAD = "2026-11-26", "2026-11-27"


def _project(root: Path, smtp_port: int, hook: str, *, oncall: str = "") -> dict[str, str]:
    alerts = f'[alerts]\nwebhook_urls = ["{hook}"]\n\n' + email_config(smtp_port)
    return temp_project(root, alerts + (f'oncall_recipients = ["{oncall}"]\n' if oncall else ""))


def _drain(queue_get) -> list:
    out = []
    while True:
        try:
            out.append(queue_get(timeout=1.0))
        except Exception:  # noqa: BLE001 - queue.Empty: nothing more arrived
            return out


def test_dmf_run_emails_the_workbook_and_alerts_a_rejected_day(tmp_path):
    with smtp_server() as smtp, webhook_receiver() as hook:
        env = _project(tmp_path, smtp.port, hook.url("/hook"))

        good = dmf(env, "run", "--date", GOOD)
        assert good.returncode == 0, good.stdout[-2000:] + good.stderr[-2000:]
        mails = _drain(smtp.next_message)
        reports = [m for _, m in mails if m.get_filename() is None and list(m.iter_attachments())]
        assert len(reports) == 1, [m["Subject"] for _, m in mails]
        assert GOOD in reports[0]["Subject"] and reports[0]["Subject"].startswith("[DMF]")
        (attachment,) = list(reports[0].iter_attachments())
        assert attachment.get_filename() == f"DMF_리포트_{GOOD}.xlsx"
        assert load_workbook(io.BytesIO(attachment.get_content()), read_only=True).sheetnames
        _drain(hook.next)  # the day's summary post

        bad = dmf(env, "run", "--date", BAD, "--fault", f"{BAD}=page_missing_rows")
        assert bad.returncode == 3, bad.stdout[-2000:] + bad.stderr[-2000:]  # rejected by a gate
        assert "Traceback" not in bad.stdout + bad.stderr
        mails = [m for _, m in _drain(smtp.next_message)]
        alerts = [m for m in mails if BAD in m["Subject"] and not list(m.iter_attachments())]
        assert [m["Subject"] for m in alerts] == [
            f"[DMF 경보] {BAD} 수집 거부 (rejected) — 게이트 2 완전성(completeness)"
        ]
        body = alerts[0].get_body(("plain",)).get_content()
        assert BAD in body and "완전성" in body and GOOD in body  # the gate, and the base that still holds
        assert "자동으로 다시 수집합니다" not in body  # an old day: no retry is promised, none will come
        # the command's closing lines give the same advice as the alert, word for word
        todo = body.split("■ 조치 / What to do next")[1].split("■")[0].strip()
        assert f"  {BAD}: {todo}" in bad.stderr.splitlines() and f"`dmf run --date {BAD}`" in todo
        posts = _drain(hook.next)
        assert any(BAD in str(p["json"]) and "완전성" in str(p["json"]) for p in posts), posts
        # the rejected day's workbook was delivered too (it says the collection failed)
        assert [m["Subject"] for m in mails if list(m.iter_attachments())] == [
            f"[DMF] {BAD} — 수집 실패 (비교 기준 {GOOD})"
        ]

        again = dmf(env, "run", "--date", BAD, "--fault", f"{BAD}=page_missing_rows")
        assert again.returncode == 3
        # once per day and kind, and the same "collection failed" workbook is not mailed again
        assert [m["Subject"] for _, m in _drain(smtp.next_message)] == []


def test_smtp_down_the_workbook_mail_waits_and_dmf_notify_flush_delivers_it(tmp_path):
    port = free_port()  # no mail server yet; the webhook works
    with webhook_receiver() as hook:
        env = _project(tmp_path, port, hook.url("/hook"))
        run = dmf(env, "run", "--date", GOOD)
        assert run.returncode == 0 and "Traceback" not in run.stdout + run.stderr, run.stderr[-2000:]
        status = dmf(env, "notify", "status")
        assert status.returncode == 1 and "대기(재발송 예정)" in status.stdout and f"[DMF] {GOOD}" in status.stdout
        with smtp_server(port=port) as smtp:
            flushed = dmf(env, "notify", "flush")
            mails = _drain(smtp.next_message)
        after = dmf(env, "notify", "status")
    assert flushed.returncode == 0 and "Traceback" not in flushed.stdout + flushed.stderr, flushed.stdout
    reports = [m for _, m in mails if list(m.iter_attachments())]
    assert len(reports) == 1 and GOOD in reports[0]["Subject"]
    assert [a.get_filename() for a in reports[0].iter_attachments()] == [f"DMF_리포트_{GOOD}.xlsx"]
    lines = [line for line in after.stdout.splitlines() if f"{GOOD} report" in line]
    assert lines and all("발송됨" in line for line in lines), after.stdout


def test_a_day_accepted_rerun_rejected_rerun_accepted_mails_the_team_three_times_the_last_a_correction(tmp_path):
    """Issue 31's sequence on one day, through `dmf run` as a user types it, with the team and the on-call engineer
    set apart: the team gets three workbook mails (the last 정정, naming the rejected one) in analyst words, the
    engineer the rejection alert with the command and the gate's observed value; once more sends nothing."""
    base, day = "2026-11-25", "2026-11-26"
    with smtp_server() as smtp, webhook_receiver() as hook:
        env = _project(tmp_path, smtp.port, hook.url("/hook"), oncall="oncall@example.co.kr")
        assert dmf(env, "run", "--date", base).returncode == 0
        _drain(smtp.next_message), _drain(hook.next)
        config = Path(env["DMF_CONFIG"])
        settings = config.read_text(encoding="utf-8")
        runs = [dmf(env, "run", "--date", day)]
        # a person re-runs the day with a threshold set too low by mistake (the day replays from its archive,
        # so only the settings can change its verdict), then puts it back and re-runs it, as the alert advises
        config.write_text(settings + "\n[gates]\nchurn_max_ratio = 0.00001\n", encoding="utf-8")
        runs.append(dmf(env, "run", "--date", day))
        config.write_text(settings, encoding="utf-8")
        runs.append(dmf(env, "run", "--date", day))
        assert [r.returncode for r in runs] == [0, 3, 0], [r.stderr[-1500:] for r in runs]
        mails = _drain(smtp.next_message)
        posts = [p["json"] for p in _drain(hook.next)]
        again = dmf(env, "run", "--date", day)
        assert again.returncode == 0 and _drain(smtp.next_message) == [] and _drain(hook.next) == []
    team = [m for to, m in mails if to == ["ra-team@example.co.kr"]]
    oncall = [m for to, m in mails if to == ["oncall@example.co.kr"]]
    assert len(team) + len(oncall) == len(mails)
    subjects = [m["Subject"] for m in team]
    assert subjects[0] == f"[DMF] {day} — " + subjects[2].split(" — ", 1)[1]
    assert subjects[1] == f"[DMF 정정] {day} — 수집 실패 (비교 기준 {base})"
    assert subjects[2].startswith(f"[DMF 정정] {day} — 신규 ") and len(subjects) == 3
    bodies = [m.get_body(("plain",)).get_content() for m in team]
    assert (
        f"에 보낸 「{subjects[1]}」 메일을 바로잡습니다. 그 뒤 이 날을 다시 처리해 정상으로 반영했습니다." in bodies[2]
    )
    for mail, body in zip(team, bodies, strict=True):  # the accepted and the rejected day, in the team's words
        assert_team_words(mail["Subject"])
        assert_team_words(body)
        assert [a.get_filename() for a in mail.iter_attachments()] == [f"DMF_리포트_{day}.xlsx"]
    assert (
        "하루 사이 바뀐 등록이 너무 많았습니다" in bodies[1] and "앞서 알린 이 날의 변경은 취소되었습니다" in bodies[1]
    )
    # the re-runs replayed the day's archive: nobody asked MFDS again, and the corrections do not say so
    assert "그 뒤 이 날을 다시 처리했지만 반영하지 못해" in bodies[1]
    assert not any("다시 받아" in body or "다시 수집" in body for body in bodies)
    assert re.search(r"받은 등록은 9,\d{3}건, 식약처가 알린 전체는 9,\d{3}건입니다", bodies[1])
    [alert] = [m for m in oncall if "수집 거부" in m["Subject"]]
    text = alert.get_body(("plain",)).get_content()
    assert f"`dmf run --date {day}`" in text and "Dagster run: " in text
    assert "관측값 / observed: " in text and "[gates] churn_max_ratio" in text
    assert not any("수집 거부" in m["Subject"] for m in team)  # the alert went to the engineer only
    reports = [p for p in posts if p["type"] == "report"]
    assert [p["subject"] for p in reports] == subjects  # the same three in chat


def test_notify_flush_says_a_message_it_gives_up_is_given_up_once_on_stdout(tmp_path):
    """A message whose time ran out during the flush was summed up as "still waiting", and each line came twice:
    on stdout, and on stderr through the notifier's log record."""
    from datetime import date, timedelta

    from dmf_assets import notify
    from dmf_assets.clock import frozen_at, now_kst
    from dmf_assets.settings import load_settings

    env = _project(tmp_path, free_port(), f"http://127.0.0.1:{free_port()}/hook")  # nobody listens on either
    config = Path(env["DMF_CONFIG"])
    text = config.read_text(encoding="utf-8").replace("[alerts]\n", "[alerts]\ngive_up_hours = 1\n")
    config.write_text(text, encoding="utf-8")
    outlook = notify.RetryOutlook(attempt=1, of=3, why_not=notify.NoRetry.OLD_DAY)
    with frozen_at(now_kst() - timedelta(hours=2)):  # stored two hours ago: its hour of re-sending is over
        settings = load_settings(config)
        stored = notify.Notifier(settings, settings.paths.resolve("alerts_dir")).send_alert(
            notify.RunFailed(day=date(2026, 11, 26), step="raw_pages", error="OSError", retry=outlook)
        )
    assert stored is not None and stored.state == "pending"
    flushed = dmf(env, "notify", "flush")
    again = dmf(env, "notify", "flush")
    assert flushed.returncode == 1 and flushed.stderr == "", flushed.stderr
    lines = flushed.stdout.splitlines()
    assert len(lines) == 2 and "run_failed: 발송 포기 —" in lines[0], flushed.stdout
    assert lines[1].startswith("0건 발송, 1건 발송 포기, 0건 다시 대기 / 0 delivered, 1 given up, 0 still waiting")
    assert "dmf notify flush --given-up" in lines[1]
    assert again.returncode == 0 and "보낼 메시지가 없습니다" in again.stdout  # said once
