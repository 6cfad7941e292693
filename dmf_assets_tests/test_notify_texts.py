"""Every text a person receives, read as its reader would: built from typed facts, no placeholder, no
particle left open, no sheet that the workbook does not have, no promise the code will not keep."""

from __future__ import annotations

import re
from datetime import date, datetime, time

import pytest

from dmf_assets import notify
from dmf_assets.domain.gates import GATES, Rejection
from dmf_assets.korean import josa, particle, shorten
from dmf_assets.notify.messages import NoRetry, RetryOutlook
from dmf_assets.report.model import SHEET_NAMES, DayReport, DayStatus, EventRow, FieldChangeRow, Kpis
from dmf_assets.report.sentences import event_sentence, summary_sentences

KST_NOON = datetime.fromisoformat("2026-11-27T06:30:00+09:00")
DAY, BASE = date(2026, 11, 27), date(2026, 11, 26)
#: what a finished text never contains: open particles, missing values, unformatted code
FORBIDDEN = (
    "이(가)",
    "을(를)",
    "은(는)",
    "와(과)",
    "(으)로",
    "None",
    "nan",
    " - — ",
    "{",
    "}",
    "관측값 -",
    "기준 -",
    "--date …",
    "상태를, ",
)


def assert_readable(text: str) -> None:
    for bad in FORBIDDEN:
        assert bad not in text, (bad, text)
    for sheet in re.findall(r"'([^']+)' 시트", text):
        assert sheet in SHEET_NAMES, (sheet, text)


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
        notify.WatchlistHit(day=DAY, hits=("★ [높음] (주)파마피아가 메트포르민을 신규 등록했습니다.",)),
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
    return EventRow(
        kind,
        severity,
        permit,
        permit,
        None,
        ingredient,
        ingredient,
        applicant,
        "1234567890",
        "Zhejiang Huahai Pharmaceutical Co., Ltd.",
        "주소",
        "중국",
        "2026-11-26",
        "별표1",
        changed_fields=tuple(c.field for c in changes),
        changes=tuple(changes),
        watchlist_hit=watch,
        is_reappearance=reappear,
        number_assigned=number,
    )


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
        "에이징생명과학(주)의 아토르바스타틴칼슘 등록(20190101-5)에서 제조소명(MSN Laboratories → Hetero Labs)과 "
        "제조국(인도 → 인도, 중국)이 바뀌었습니다."
    )
    assert "등록(20110531-71-B-317-05 · 제조소" in texts[3] and texts[3].endswith(
        "목록에서 사라져 취하로 기록했습니다."
    )
    assert texts[4].endswith("취하 후 다시 목록에 올랐습니다.")
    assert texts[5] == "(주)파마피아의 신물질A 등록에 등록번호 수6580-16-ND(19)가 부여되었습니다."
    for t in texts:
        assert t.endswith("습니다.")
        assert_readable(t)


def test_alike_events_become_one_sentence():
    many = [_event("NEW", f"2026112{i}-9", f"성분{i}", "(주)삼오제약") for i in range(5)]
    sentences, total = summary_sentences(many)
    [one] = sentences
    assert total == 5 and one.count == 5
    assert one.text.startswith("(주)삼오제약이 5건(성분 성분0, ") and one.text.endswith(" 등)을 신규 등록했습니다.")
    assert_readable(one.text)


def _report(status=DayStatus.ACCEPTED, events=EVENTS):
    if status is DayStatus.REJECTED:
        return DayReport(
            DAY, status, "게이트 2 완전성(completeness): 320건이 누락되었습니다.", BASE, BASE, Kpis(registry_size=9_167)
        )
    kpis = Kpis(registry_size=9_169, new=3, changed=2, withdrawn=1, watchlist_hits=1)
    return DayReport(DAY, status, "6개 게이트 모두 통과", BASE, DAY, kpis, events=events)


@pytest.mark.parametrize("case", ["accepted", "rejected", "retried", "retries_failed", "baseline", "unchanged"])
def test_every_workbook_mail_is_readable(case, tmp_path):
    status = {
        "rejected": DayStatus.REJECTED,
        "retries_failed": DayStatus.REJECTED,
        "baseline": DayStatus.BASELINE,
        "unchanged": DayStatus.UNCHANGED,
    }.get(case, DayStatus.ACCEPTED)
    report = _report(status, events=() if case in ("baseline", "unchanged") else EVENTS)
    workbook = tmp_path / "DMF_리포트_2026-11-27.xlsx"
    d = notify.ReportDelivery.from_day_report(
        report,
        workbook,
        retry_attempt=2 if case == "retried" else 0,
        retries_failed=3 if case == "retries_failed" else 0,
    )
    for ctx in CONTEXTS:
        m = notify.compose_report(d, ctx)
        assert_readable(m.text())
        assert_readable(m.subject)
        assert (m.link == "https://dmf.example.kr/DMF_%EB%A6%AC%ED%8F%AC%ED%8A%B8_2026-11-27.xlsx") == bool(
            ctx.public_base_url
        )
    text = notify.compose_report(d, CONTEXTS[0]).text()
    if case == "retried":
        assert "자동 재시도 2회째에 정상 반영되었습니다" in text
        assert "재시도 2회째 반영" in notify.compose_report(d, CONTEXTS[0]).subject
    if case == "retries_failed":
        assert "자동 재시도 3회도 모두 거부되었습니다" in text
    if case == "accepted":
        assert "제조소명(MSN Laboratories → Hetero Labs)" in text


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
        ("2026-11-20", "으로/로", "로"),
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
