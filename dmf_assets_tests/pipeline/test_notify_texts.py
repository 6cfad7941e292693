"""Every text a person receives, read as its reader would: built from typed facts, no placeholder, no
particle left open, no sheet that the workbook does not have, no promise the code will not keep."""

from __future__ import annotations

from dataclasses import replace
from datetime import date, datetime, time

import pytest

from dmf_assets import notify
from dmf_assets.domain.gates import GATES, Rejection
from dmf_assets.domain.model import DayStatus
from dmf_assets.korean import josa, particle, shorten
from dmf_assets.notify.messages import NoRetry, Redone, RetryOutlook, alerts_for_day, report_subject
from dmf_assets.report.model import DayReport, FieldChangeRow, GateRow
from dmf_assets.report.sentences import event_sentence, summary_sentences
from dmf_assets.report.summary import summarize
from dmf_assets_tests.message_rules import assert_readable, assert_team_words
from dmf_assets_tests.report_builders import event_row

KST_NOON = datetime.fromisoformat("2026-11-27T06:30:00+09:00")
DAY, BASE = date(2026, 11, 27), date(2026, 11, 26)


def _rejection(gate: int) -> Rejection:
    return Rejection(
        gate, "수신 8,893건 / totalCount 9,213건", "수신 건수 = totalCount", "320건이 누락되었습니다.", BASE
    )


OUTLOOKS = [RetryOutlook(attempt=1, of=3, at=KST_NOON)] + [RetryOutlook(attempt=2, of=3, why_not=w) for w in NoRetry]


def every_alert() -> list[notify.Alert]:
    out: list[notify.Alert] = []
    for g in GATES:
        out += [notify.Rejected(day=DAY, rejection=_rejection(g.number), retry=o) for o in OUTLOOKS]
    out += [
        notify.RetriesExhausted(day=DAY, attempts=3, why_stopped=NoRetry.USED, rejection=_rejection(2)),
        notify.RetriesExhausted(
            day=DAY, attempts=2, why_stopped=NoRetry.WINDOW, error="ConnectTimeout: apis.data.go.kr"
        ),
        notify.RunFailed(
            day=DAY, step="raw_pages", error="ConnectTimeout: apis.data.go.kr", retry=OUTLOOKS[0], run_id="r1"
        ),
        notify.RunFailed(day=DAY, step="xlsx_report", error="OSError: read-only", retry=OUTLOOKS[2]),
        notify.Overdue(day=DAY, expected_at=time(9), workbook="reports/DMF_리포트_2026-11-27.xlsx", latest_report=BASE),
        notify.Overdue(day=DAY, expected_at=time(9), workbook="reports/x.xlsx", latest_report=None, daemon_down=True),
        notify.WatchlistHit(day=DAY, hits=("★ [높음] (주)파마피아가 메트포르민을 신규 등록했습니다.",), events=1),
        notify.RejectedStreak(day=DAY, days=(date(2026, 11, 25), BASE, DAY), gates=(2, 2, 3), base=date(2026, 11, 24)),
        notify.RequestCap(day=DAY, cap=300),
        notify.SlowRun(day=DAY, seconds=95.0, median_s=30.0, samples=14, factor=3.0),
        notify.WithdrawalShare(day=DAY, withdrawn=300, registry_size=9_200, threshold=0.02),
        notify.RunTimeout(day=DAY, limit_minutes=30, retry=OUTLOOKS[0]),
        notify.DaemonDown(day=DAY, last_heartbeat=KST_NOON, limit_minutes=5.0, daemons=("SENSOR",)),
        notify.DaemonDown(day=DAY, last_heartbeat=None, limit_minutes=5.0, daemons=("SCHEDULER", "SENSOR")),
        notify.WatchdogError(
            day=DAY, dagster_home="/srv/dmf/dagster_home", error="DagsterInvalidConfigError: postgres_db"
        ),
        notify.DeliveryGivenUp(
            day=DAY,
            subject="[DMF] 2026-11-27 — 신규 1",
            channels=("smtp:25 → ra@x.kr",),
            attempts=27,
            last_error="SMTP 연결 실패",
            since=KST_NOON,
            hours=48,
        ),
    ]
    return out


CONTEXTS = [
    notify.MessageContext(emulator=True),
    notify.MessageContext(emulator=False, public_base_url="https://dmf.example.kr"),
]


@pytest.mark.parametrize("ctx", CONTEXTS, ids=["emulator", "real-api"])
def test_every_alert_is_readable_and_says_what_why_and_what_next(ctx):
    kinds = set()
    for alert in every_alert():
        m = notify.compose_alert(alert, ctx)
        kinds.add(alert.kind)
        assert [h for h, _ in m.sections] == ["무슨 일 / What happened", "원인 / Why", "조치 / What to do next"]
        assert all(text.strip() for _, text in m.sections), alert
        assert DAY.isoformat() in m.subject and m.subject.startswith("[DMF")
        assert_readable(m.text())
        assert_readable(m.subject)
    assert kinds == set(notify.ALERT_KINDS)  # every kind was rendered


def test_advice_depends_on_the_source():
    alert = notify.Rejected(day=DAY, rejection=_rejection(2), retry=OUTLOOKS[3])  # no retry: old day
    emulator = notify.compose_alert(alert, CONTEXTS[0]).text()
    real = notify.compose_alert(alert, CONTEXTS[1]).text()
    assert "에뮬레이터" in emulator and "data.go.kr" not in emulator
    assert "data.go.kr" in real and "에뮬레이터" not in real


def test_a_loopback_source_is_named_as_itself_not_as_the_built_in_emulator(tmp_path):
    """A rejection from a server on this machine said "the built-in emulator" and suggested --fault."""
    from dmf_assets.settings import load_settings

    config = tmp_path / "dmf.toml"
    config.write_text('[source]\nbase_url = "http://127.0.0.1:8089/1471000/MdcDmfInfoService01"\n', encoding="utf-8")
    ctx = notify.MessageContext.of(load_settings(config))
    alert = notify.Rejected(day=DAY, rejection=_rejection(2), retry=OUTLOOKS[3])
    text = notify.compose_alert(alert, ctx).text()
    assert "이 컴퓨터의 서버 127.0.0.1:8089" in text
    assert "내장" not in text and "`--fault`" not in text and "data.go.kr" not in text
    assert notify.MessageContext.of(load_settings()).emulator  # emulator://local: the built-in one


def test_a_retry_is_promised_only_when_one_is_planned():
    planned = notify.compose_alert(
        notify.Rejected(day=DAY, rejection=_rejection(2), retry=OUTLOOKS[0]), CONTEXTS[0]
    ).text()
    assert "06:30 KST에 자동으로 다시 수집합니다(재시도 1/3, Dagster 데몬 실행 중)" in planned
    for outlook in OUTLOOKS[1:]:
        text = notify.compose_alert(
            notify.Rejected(day=DAY, rejection=_rejection(2), retry=outlook), CONTEXTS[0]
        ).text()
        assert "자동으로 다시 수집합니다" not in text and "지금 할 일은 없습니다" not in text, outlook
        assert "`dmf run --date 2026-11-27`" in text
    human = notify.compose_alert(
        notify.Rejected(day=DAY, rejection=_rejection(3), retry=OUTLOOKS[0]), CONTEXTS[0]
    ).text()
    assert "자동 재시도하지 않습니다" in human and "config/dmf.local.toml의 [gates] drop_max_ratio를" in human
    assert "자동으로 다시 수집합니다" not in human


def test_facts_are_required():
    with pytest.raises(TypeError):
        notify.Rejected(day=DAY, retry=OUTLOOKS[0])  # type: ignore[call-arg] - no rejection: no alert
    with pytest.raises(ValueError):
        Rejection(2, "", "수신 건수 = totalCount", "누락", BASE)
    with pytest.raises(ValueError):
        RetryOutlook(attempt=1, of=3)
    with pytest.raises(ValueError):
        notify.RetriesExhausted(day=DAY, attempts=3, why_stopped=NoRetry.USED)


# --- the workbook mail and the sentences it shares with 요약 ---------------------------------------


def _event(
    kind, permit, ingredient, applicant, *, severity="INFO", changes=(), watch=False, reappear=False, number=False
):
    flags = {"watchlist_hit": watch, "is_reappearance": reappear, "number_assigned": number}
    return event_row(kind, permit, ingredient, applicant, severity=severity, changes=changes, **flags)


def _change(field, before, after):
    return FieldChangeRow("k", "p", "i", "a", field, before, after, False, "CRITICAL")


EVENTS = (
    _event("NEW", "20261126-1", "헤파린나트륨", "(주)메디정팜"),
    _event("NEW", "20261126-2", "메트포르민염산염", "대신무약(주)", severity="HIGH", watch=True),
    _event(
        "CHANGED",
        "20190101-5",
        "아토르바스타틴칼슘",
        "에이징생명과학(주)",
        severity="CRITICAL",
        changes=(
            _change("manufacturer", "MSN Laboratories", "Hetero Labs"),
            _change("countries", "인도", "인도, 중국"),
        ),
    ),
    _event("WITHDRAWN", "20110531-71-B-317-05", "세파클러", "(주)국전", severity="CRITICAL"),
    _event("NEW", "20100402-01-HP-22-17", "나프록센", "화일약품(주)", severity="HIGH", reappear=True),
    _event("CHANGED", "수6580-16-ND(19)", "신물질A", "(주)파마피아", changes=(), number=True),
)


def test_event_sentences_are_whole_sentences_with_the_right_particles():
    texts = [event_sentence(e) for e in EVENTS]
    assert texts[0] == (
        "(주)메디정팜이 헤파린나트륨(20261126-1 · 제조소 Zhejiang Huahai Pharmaceutical Co., Ltd., 중국)을 "
        "신규 등록했습니다."
    )
    assert texts[1].startswith("대신무약(주)가 메트포르민염산염(")
    assert texts[2] == (
        "에이징생명과학(주)의 아토르바스타틴칼슘 등록 20190101-5의 제조소명이 MSN Laboratories에서 Hetero Labs로, "
        "제조국이 인도에서 인도·중국으로 바뀌었습니다."
    )
    assert "등록(20110531-71-B-317-05 · 제조소" in texts[3] and texts[3].endswith("목록에서 삭제되었습니다.")
    assert texts[4].endswith("목록에서 삭제된 뒤 다시 목록에 올랐습니다.")
    assert texts[5] == "(주)파마피아의 신물질A 등록에 등록번호 수6580-16-ND(19)가 부여되었습니다."
    for t in texts:
        assert t.endswith("습니다.")
        assert_readable(t)


def test_a_renumbering_and_a_possible_one_are_said_as_such():
    """Issue 30: one registration under a corrected number is said as that, never as a disappearance; a
    disappearance that may be one half of a re-numbering says between which numbers."""
    old, new = "20130329-190-I-83-01(1)", "20260922-190-I-769-04"
    renumbered = replace(
        _event("CHANGED", new, "시롤리무스 분산용액", "한국화이자제약(주)", severity="MEDIUM"),
        base_dmf_key=old,
        number_changed=True,
        changes=(FieldChangeRow(new, new, "i", "a", "permit_no", old, new, False, "MEDIUM"),),
        changed_fields=("permit_no",),
    )
    assert event_sentence(renumbered) == (
        "한국화이자제약(주)의 시롤리무스 분산용액 등록(제조소 Zhejiang Huahai Pharmaceutical Co., Ltd., 중국)의 "
        f"등록번호가 {old}에서 {new}로 바뀌었습니다."
    )
    assert renumbered.label == f"등록번호 변경 {old} → {new}" and renumbered.previous_permit_no == old
    assert not renumbered.is_substantive_change
    gone = replace(
        _event("WITHDRAWN", old, "시롤리무스 분산용액", "한국화이자제약(주)", severity="CRITICAL"),
        renumber_candidates=(new, "20260922-190-I-769-05"),
    )
    text = event_sentence(gone)
    assert text.endswith(f"목록에서 삭제되었습니다. 등록번호 변경 가능성: {old} ↔ {new}, 20260922-190-I-769-05.")
    for t in (event_sentence(renumbered), text):
        assert_readable(t)
    # neither is grouped with alike events: each names its own numbers
    sentences, _ = summary_sentences([gone, *(replace(gone, dmf_key=f"k{i}", permit_no=f"p{i}") for i in range(3))])
    assert any("등록번호 변경 가능성" in x.text for x in sentences) and len(sentences) == 4


def test_alike_events_become_one_sentence():
    many = [_event("NEW", f"2026112{i}-9", f"성분{i}", "(주)삼오제약") for i in range(5)]
    sentences, total = summary_sentences(many)
    [one] = sentences
    assert total == 5 and one.count == 5
    assert one.text.startswith("(주)삼오제약이 5건(성분 성분0, ") and one.text.endswith(" 등)을 신규 등록했습니다.")
    assert_readable(one.text)


#: what the day's verdict recorded for a rejected day (as `report.day_data` reads it from the database)
REJECTED_REASON = "게이트 2 완전성(completeness): 20건이 누락되었습니다 (관측값: 수신 9,197건 / totalCount 9,217건 · 기준: 수신 건수 = totalCount)."
GATE_2 = GateRow(2, "completeness", "완전성", False, "수신 9,197건 / totalCount 9,217건", "수신 건수 = totalCount")


def _report(status=DayStatus.ACCEPTED, events=EVENTS):
    if status is DayStatus.REJECTED:  # the base day had 9,217 registrations; this day's fetch received 9,197
        rejected = summarize(
            DAY,
            status,
            (),
            comparison_base=BASE,
            base_registry_size=9_217,
            received=9_197,
            total_count=9_217,
            rejected_gate=2,
        )
        return DayReport.of(rejected, REJECTED_REASON, gates=(GATE_2,))
    summary = summarize(
        DAY,
        status,
        events,
        comparison_base=BASE,
        registry_size=9_169,
        base_registry_size=9_167,
        received=9_169,
        total_count=9_169,
    )
    return DayReport.of(summary, f"기준일 {BASE} 대비 {summary.counts_text}", events=events)


CASES = ["accepted", "rejected", "retried", "retries_failed", "baseline", "unchanged"]


def _delivery(case: str, workbook) -> notify.ReportDelivery:
    status = {
        "rejected": DayStatus.REJECTED,
        "retries_failed": DayStatus.REJECTED,
        "baseline": DayStatus.BASELINE,
        "unchanged": DayStatus.UNCHANGED,
    }.get(case, DayStatus.ACCEPTED)
    report = _report(status, events=() if case in ("baseline", "unchanged") else EVENTS)
    return notify.ReportDelivery.from_day_report(
        report,
        workbook,
        retry_attempt=2 if case == "retried" else 0,
        retries_failed=3 if case == "retries_failed" else 0,
        run_id="0f2dc668-7a41-4c1e-9a55-1b2c3d4e5f60",
    )


@pytest.mark.parametrize("case", CASES)
def test_every_workbook_mail_speaks_to_the_team_in_analyst_words(case, tmp_path):
    d = _delivery(case, tmp_path / "DMF_리포트_2026-11-27.xlsx")
    replaced = notify.Replaced("[DMF] 2026-11-27 — 수집 실패 (비교 기준 2026-11-26)", KST_NOON, DayStatus.REJECTED)
    for ctx in CONTEXTS:
        for replaces in (None, replaced):
            m = notify.compose_report(d, ctx, replaces=replaces)
            for attached in (None, True, False):  # a webhook, an e-mail with and without its workbook
                assert_team_words(m.text(attached=attached))
            assert_team_words(m.subject)
            assert m.audience is notify.Audience.TEAM
            assert (m.link == "https://dmf.example.kr/reports/DMF_%EB%A6%AC%ED%8F%AC%ED%8A%B8_2026-11-27.xlsx") == bool(
                ctx.public_base_url
            )
    text = notify.compose_report(d, CONTEXTS[0]).text()
    if case == "retried":
        assert "오늘 아침 2번째로 다시 받아 정상으로 반영했습니다" in text
        assert "재시도 2회째 반영" in notify.compose_report(d, CONTEXTS[0]).subject
    if case == "retries_failed":
        assert "오늘 아침 자동으로 3번 더 받아 보았지만 모두 반영하지 못했습니다" in text
    if case == "accepted":
        assert "제조소명이 MSN Laboratories에서 Hetero Labs로" in text
    if case in ("rejected", "retries_failed"):
        assert "따로 하실 일은 없습니다. 나중에 이 날이 반영되면 정정 메일을 보내 드립니다." in text


def test_a_rejected_days_mail_says_the_size_received_and_the_base_days_apart(tmp_path):
    """The base day's 9,217 was shown as the day's 「등록 수 / registry size」 while the run received 9,197."""
    text = notify.compose_report(_delivery("rejected", tmp_path / "x.xlsx"), CONTEXTS[0]).text(attached=True)
    assert "  - 이번에 받은 등록 수: 9,197건" in text
    assert "  - 식약처가 알린 전체 등록 수: 9,217건" in text
    assert "  - 기준일(2026-11-26) 등록 수: 9,217건" in text
    assert "받은 목록에 빠진 등록이 있었습니다(식약처가 알린 전체 건수와 맞지 않거나, 받는 사이 목록이 바뀜)" in text
    assert "  - 등록 수:" not in text and "registry size" not in text
    assert "첨부: x.xlsx" in text


def test_the_engineers_rejection_alert_says_gate_observed_threshold_run_setting_and_command():
    alert = notify.Rejected(
        day=DAY,
        rejection=_rejection(3),
        retry=RetryOutlook(attempt=1, of=3, why_not=NoRetry.NOT_TRANSIENT),
        run_id="0f2dc668-7a41-4c1e-9a55-1b2c3d4e5f60",
    )
    m = notify.compose_alert(alert, CONTEXTS[0])
    facts = dict(m.facts)
    assert m.audience is notify.Audience.ONCALL
    assert facts["게이트 / gate"] == "게이트 3 감소율(drop)"
    assert facts["관측값 / observed"] == "수신 8,893건 / totalCount 9,213건"
    assert facts["기준 / threshold"] == "수신 건수 = totalCount"
    assert facts["Dagster run"] == "0f2dc668-7a41-4c1e-9a55-1b2c3d4e5f60"
    assert facts["설정 / setting"] == "config/dmf.local.toml [gates] drop_max_ratio"
    assert facts["다시 실행 / re-run"] == "`dmf run --date 2026-11-27`"
    assert "`dmf run --date 2026-11-27`" in dict(m.sections)["조치 / What to do next"]


@pytest.mark.parametrize(
    "before, after, redone, says",
    [
        ("rejected", "accepted", Redone.REFETCHED, "그 뒤 이 날의 목록을 다시 받아 정상으로 반영했습니다"),
        ("rejected", "accepted", Redone.RERUN, "그 뒤 이 날을 다시 처리해 정상으로 반영했습니다"),
        (
            "rejected",
            "accepted",
            Redone.RECOMPARED,
            "그 뒤 다른 날이 처리되어 이 날을 2026-11-26 기준으로 다시 비교해 정상으로 반영했습니다",
        ),
        (
            "accepted",
            "rejected",
            Redone.REFETCHED,
            "그 뒤 이 날을 다시 수집했지만 반영하지 못해, 앞서 알린 이 날의 변경은 취소되었습니다. 등록 현황은 "
            "2026-11-26 기준으로 돌아갔습니다",
        ),
        ("accepted", "rejected", Redone.RERUN, "그 뒤 이 날을 다시 처리했지만 반영하지 못해, 앞서 알린 이 날의 변경은"),
        (
            "accepted",
            "rejected",
            Redone.RECOMPARED,
            "그 뒤 다른 날이 처리되어 이 날을 2026-11-26 기준으로 다시 비교했지만 반영하지 못해, 앞서 알린",
        ),
        ("accepted", "accepted", Redone.REFETCHED, "그 뒤 이 날의 비교를 다시 계산해 내용이 바뀌었습니다"),
        ("accepted", "accepted", Redone.RERUN, "그 뒤 이 날의 비교를 다시 계산해 내용이 바뀌었습니다"),
        (
            "accepted",
            "accepted",
            Redone.RECOMPARED,
            "그 뒤 다른 날이 처리되어 이 날을 2026-11-26 기준으로 다시 비교해 내용이 바뀌었습니다",
        ),
        ("rejected", "rejected", Redone.REFETCHED, "그 뒤 이 날을 다시 수집했지만 이번에도 반영하지 못했습니다"),
        ("rejected", "rejected", Redone.RERUN, "그 뒤 이 날을 다시 처리했지만 이번에도 반영하지 못했습니다"),
        (
            "rejected",
            "rejected",
            Redone.RECOMPARED,
            "그 뒤 다른 날이 처리되어 이 날을 2026-11-26 기준으로 다시 비교했지만 이번에도 반영하지 못했습니다",
        ),
    ],
)
def test_a_correction_names_the_mail_it_replaces_and_says_what_happened_since(before, after, redone, says, tmp_path):
    """What happened since says how: the list asked for again, the day run again, or compared again because
    another day was processed — never 「다시 받아」 for a day nobody asked MFDS for again."""
    old = notify.compose_report(_delivery(before, tmp_path / "w.xlsx"), CONTEXTS[0])
    replaced = notify.Replaced(old.subject, KST_NOON, DayStatus.of_value(before))
    d = replace(_delivery(after, tmp_path / "w.xlsx"), redone=redone)
    new = notify.compose_report(d, CONTEXTS[0], replaces=replaced)
    assert new.subject.startswith("[DMF 정정] 2026-11-27 — ")
    heading, first = new.sections[0]
    assert heading == "정정"
    assert first.startswith(f"이 메일은 2026-11-27 06:30 KST에 보낸 「{old.subject}」 메일을 바로잡습니다. ")
    assert says in first
    assert_team_words(first)
    if redone is not Redone.REFETCHED:
        assert "다시 받아" not in first and "다시 수집" not in first


def test_the_digest_ignores_the_run_and_the_hour_it_was_written():
    a = _report()
    b = DayReport(**{**a.__dict__, "run_info": {"리포트 생성 run": "another"}, "generated_at": KST_NOON})
    c = DayReport(**{**a.__dict__, "events": EVENTS[:2]})
    assert notify.report_digest(a) == notify.report_digest(b) != notify.report_digest(c)


# --- the particle and the cut ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "word, pair, expected",
    [
        ("(주)메디정팜", "이/가", "이"),
        ("대신무약(주)", "이/가", "가"),
        ("헤파린나트륨", "을/를", "을"),
        ("세파클러", "을/를", "를"),
        ("중국", "으로/로", "으로"),
        ("인도", "으로/로", "로"),
        ("신물질", "으로/로", "로"),
        ("제조소명", "과/와", "과"),
        ("제조국", "이/가", "이"),
        ("3건", "을/를", "을"),
        ("2", "이/가", "가"),
        ("10", "은/는", "은"),
        ("2026-11-20", "을/를", "을"),
        ("2026-11-20", "으로/로", "으로"),  # 이십 (issue 31: a date is read by its last number)
        ("Hetero Labs", "으로/로", "로"),
        ("Biocon Pharm", "으로/로", "으로"),
        ("Cipla Ltd.", "이/가", "가"),
        ("SAN", "이/가", "이"),
        ("drop_max_ratio", "을/를", "를"),
        ("events", "이/가", "가"),
        ("integrity_verdict", "을/를", "를"),
        ("Chemical", "으로/로", "로"),
        ("수6580-16-ND(19)", "이/가", "가"),
    ],
)
def test_particles_follow_the_word(word, pair, expected):
    assert particle(word, pair) == expected
    assert josa(word, pair) == word + expected


def test_lines_are_shortened_at_a_word_with_an_ellipsis():
    reason = "2번 완전성 게이트 실패: 수신 9,193건 / totalCount 9,213건 — 20건이 누락되었습니다 (55.19 %)이 사라졌습니다 — 원천"
    short = shorten(reason, 60)
    assert len(short) <= 60 and short.endswith("…") and reason.startswith(short[:-1])
    assert not short[:-1].endswith((" ", "—", ",")) and reason[len(short) - 1] == " "
    assert shorten("짧은 줄", 60) == "짧은 줄"


def test_no_open_particle_is_left_in_any_text_the_product_builds():
    """Every Korean particle is chosen by `josa` from the word it follows: no 「이(가)」-style placeholder in the
    package, its SQL or its config (CLI lines, settings errors and workbook cells are texts people read too)."""
    from pathlib import Path

    import dmf_assets
    from dmf_assets.settings import PROJECT_ROOT

    open_particles = ("이(가)", "가(이)", "을(를)", "를(을)", "은(는)", "는(은)", "와(과)", "과(와)", "(으)로")
    files = [
        *Path(dmf_assets.__file__).parent.rglob("*.py"),
        *(PROJECT_ROOT / "sql").rglob("*.sql"),
        PROJECT_ROOT / "config" / "dmf.toml",
    ]
    found = [
        f"{path.name}:{n}: {line.strip()}"
        for path in files
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if any(p in line for p in open_particles)
    ]
    assert len(files) > 100 and not found, found


def test_the_watchlist_alert_counts_the_events_the_mail_counts():
    """Four new registrations of one watched applicant read as one sentence: the alert said 「1건」 where the mail
    and the workbook said 4."""
    new = tuple(
        event_row("NEW", f"20261126-{i}", f"성분{i}", "(주)파마피아", severity="HIGH", watchlist_hit=True)
        for i in range(4)
    )
    summary = summarize(DAY, DayStatus.ACCEPTED, new, comparison_base=BASE, registry_size=9_204)
    delivery = notify.ReportDelivery.from_day_report(DayReport.of(summary, "", events=new), None)
    (alert,) = alerts_for_day(delivery, withdrawal_share_max=0.02)
    message = notify.compose_alert(alert, notify.MessageContext(emulator=True))
    assert len(alert.hits) == 1 and report_subject(delivery).endswith("· 관심목록 4")
    assert message.subject.endswith("관심목록 해당 4건 (watchlist hit)") and "이벤트가 4건 있습니다" in message.text()


def test_the_withdrawal_share_is_judged_once_for_the_workbook_and_the_alert():
    """184 of the 9,200 registrations of the base gone (9,016 left): 2.0 % of the base, which the workbook judged
    within 2 %, and 2.04 % of the day's registry, which the alert judged above it — and wrote 「2.0 % … 2.0 % 초과」."""
    gone = tuple(event_row("WITHDRAWN", f"2019-{i}", "성분", "대신무약(주)", severity="CRITICAL") for i in range(185))
    summary = summarize(
        DAY, DayStatus.ACCEPTED, gone, comparison_base=BASE, registry_size=9_015, base_registry_size=9_200
    )
    assert summary.withdrawal_share == pytest.approx(185 / 9_200)  # what the workbook's banner reads
    delivery = notify.ReportDelivery.from_day_report(DayReport.of(summary, "", events=gone), None)
    (alert,) = alerts_for_day(delivery, withdrawal_share_max=0.02)
    message = notify.compose_alert(alert, notify.MessageContext(emulator=True))
    assert "185건으로 등록 9,200건의 2.01 %입니다(기준 2.0 % 초과)" in message.text(), message.text()
    assert message.subject.endswith("대량 목록 삭제 2.01 % (withdrawals above 2.0 %)"), message.subject  # the same
    summary = summarize(DAY, DayStatus.ACCEPTED, gone[:184], comparison_base=BASE, base_registry_size=9_200)
    # exactly 2.0 % of the base: neither warns
    assert summary.withdrawal_share == pytest.approx(0.02)
    assert (
        alerts_for_day(
            notify.ReportDelivery.from_day_report(DayReport.of(summary, ""), None), withdrawal_share_max=0.02
        )
        == []
    )


@pytest.mark.parametrize(
    ("day", "said"),
    [(date(2026, 11, 30), "`dmf run --date 2026-11-30`으로"), (date(2026, 11, 29), "`dmf run --date 2026-11-29`로")],
)
def test_the_command_to_re_run_takes_the_particle_of_its_date(day, said):
    """「…-30`로」 read 「삼십로」: the particle after the command follows the date it ends with."""
    rejection = Rejection(2, "수신 8,893건 / totalCount 9,213건", "수신 건수 = totalCount", "320건 누락", None)
    alert = notify.Rejected(
        day=day, rejection=rejection, retry=RetryOutlook(attempt=1, of=3, why_not=NoRetry.NOT_TRANSIENT)
    )
    text = notify.compose_alert(alert, notify.MessageContext(emulator=True)).text()
    rerun = f"`dmf run --date {day}`{particle(str(day), '으로/로')} 다시 실행하세요"
    assert rerun in text and said in rerun, text


@pytest.mark.parametrize("base", [None, date(2026, 11, 28)])
def test_a_rejected_day_says_what_leaving_it_alone_does(base):
    """Before any accepted day there is no comparison to cover the gap: the next accepted day is the baseline. The
    alerts promised 「다음 정상 수집일의 비교가 그 사이의 변경을 모두 포함합니다」 all the same."""
    day = date(2026, 11, 30)
    rejection = Rejection(2, "수신 8,893건 / totalCount 9,213건", "수신 건수 = totalCount", "320건 누락", base)
    alerts = (
        notify.Rejected(
            day=day, rejection=rejection, retry=RetryOutlook(attempt=1, of=3, why_not=NoRetry.NOT_TRANSIENT)
        ),
        notify.RetriesExhausted(day=day, attempts=3, why_stopped=NoRetry.USED, rejection=rejection),
    )
    covered, baseline = (
        "다음 정상 수집일의 비교가 그 사이의 변경을 모두 포함합니다",
        "다음 정상 수집일이 비교 없이 기준일이 됩니다",
    )
    for alert in alerts:
        text = notify.compose_alert(alert, notify.MessageContext(emulator=True)).text()
        assert (covered in text, baseline in text) == ((False, True) if base is None else (True, False)), text
