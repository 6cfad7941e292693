"""`dmf history`, `dmf asof`, `dmf report` on real history databases (docs/DOMAIN.md §10, issue 12).

On the two histories of `histories.py` (the fixtures `emulated` and `edited`: the emulator's 2026-10-01..08 with
10-06 rejected, and the 151 real MFDS rows edited day by day by hand so every expectation is exact) and the
re-numbered registration of issue 30 among the real rows.
"""

from __future__ import annotations

import copy
import json
from datetime import date, datetime, timedelta
from pathlib import Path

import pytest
from openpyxl import load_workbook

from dmf_assets.cli import main
from dmf_assets.domain.model import EventType
from dmf_assets.domain.text import display_text
from dmf_assets.emulator.registry import RegistrySimulator
from dmf_assets.storage import history
from dmf_assets.storage.db import open_database
from dmf_assets_tests.histories import REJECTED, commit_items

R_DAYS = [date(2026, 9, 21) + timedelta(days=i) for i in range(5)]
OLD_NO, NEW_NO = "20130329-190-I-83-01(1)", "20260922-190-I-769-04"


@pytest.fixture(scope="module")
def renumbered(tmp_path_factory, real_items, renumbered_rows) -> Path:
    """The registration re-numbered in issue 30 among the real rows: listed under its grant-style number on
    day 1, under its own number from day 2, gone on day 4, back on day 5."""
    before, after = renumbered_rows
    database = tmp_path_factory.mktemp("renumbered") / "h.duckdb"
    with open_database(database) as conn:
        for d, row in zip(R_DAYS, (before, after, after, None, after), strict=True):
            commit_items(conn, d, [*copy.deepcopy(real_items), *([dict(row)] if row else [])])
    return database


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def jsonl(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


# --- dmf history ---------------------------------------------------------------------------------


def test_history_has_a_changed_line_on_every_day_the_emulator_changed_a_registration(emulated, capsys):
    """Per `dmf emulator truth --old B --new D` for every accepted day D (B = its comparison base)."""
    sim = RegistrySimulator()
    with open_database(emulated) as conn:
        accepted = [
            history.to_date(d)
            for (d,) in conn.execute("SELECT day_id FROM runs WHERE status = 'accepted' ORDER BY 1").fetchall()
        ]
        bases = {d: history.run_row(conn, d)["base_day_id"] for d in accepted}
    assert REJECTED not in accepted and len(accepted) == 6
    checked = 0
    for day in accepted:
        base = history.to_date(bases[day])
        truth = sim.truth(base, day)
        for change in truth.of_type(EventType.CHANGED):
            if not change.substantive_fields or not change.permit_no:
                continue
            # any spelling that normalizes to the number: lower case, spaces around the dashes
            spelled = change.permit_no.lower().replace("-", " - ")
            code, out, _ = run_cli(capsys, "history", spelled, "--format", "jsonl", "--database", str(emulated))
            assert code == 0
            lines = jsonl(out)
            changed = [
                ln
                for ln in lines
                if ln["kind"] == "event" and ln["event_type"] == "CHANGED" and ln["day"] == day.isoformat()
            ]
            assert changed, (day, change)
            assert {c["field"] for c in changed[0]["changes"] if not c["is_cosmetic"]} >= set(change.substantive_fields)
            assert changed[0]["base_day"] == base.isoformat()
            versions = [ln for ln in lines if ln["kind"] == "version"]
            assert len(versions) >= 2 and versions[-1]["first_seen"] == day.isoformat()
            checked += 1
    assert checked >= 3  # the emulator changes a few registrations per week


def test_history_of_a_registration_changed_twice_lists_both_versions_in_order(edited, capsys):
    code, out, _ = run_cli(capsys, "history", edited.twice, "--format", "jsonl", "--database", str(edited.database))
    assert code == 0
    lines = jsonl(out)
    versions = [ln for ln in lines if ln["kind"] == "version"]
    events = [ln for ln in lines if ln["kind"] == "event"]
    assert [v["first_seen"] for v in versions] == [d.isoformat() for d in edited.days[:3]]
    assert [v["last_seen"] for v in versions] == [
        edited.days[0].isoformat(),
        edited.days[1].isoformat(),
        edited.days[4].isoformat(),
    ]
    assert [(e["day"], e["event_type"], e["severity"]) for e in events] == [
        (edited.days[1].isoformat(), "CHANGED", "CRITICAL"),
        (edited.days[2].isoformat(), "CHANGED", "CRITICAL"),
    ]
    second = {c["field"]: (c["before"], c["after"]) for c in events[1]["changes"]}
    assert second["address"] == ("Plot 1, Phase I, Hyderabad, India", "Plot 99, Phase III, Visakhapatnam, India")
    assert second["issue_date"][1] == "2016-01-01"
    # the table format says the same in words
    code, out, _ = run_cli(capsys, "history", edited.twice, "--database", str(edited.database))
    assert (
        code == 0
        and "제조소 소재지: Plot 1, Phase I, Hyderabad, India → Plot 99, Phase III, Visakhapatnam, India" in out
    )


def test_history_shows_an_added_site_as_a_site(edited, capsys):
    code, out, _ = run_cli(capsys, "history", edited.site_added, "--database", str(edited.database))
    assert code == 0
    assert f"제조소 추가: {edited.site_name} (중국)" in out
    assert "(표기)" not in out  # 제조국 「인도,중국 → 인도,중국,중국」 is not a re-typing


def test_history_by_pattern_and_xlsx(edited, capsys, tmp_path):
    code, out, _ = run_cli(
        capsys,
        "history",
        "--applicant",
        "하이플",
        "--ingredient",
        "메트 포르민",
        "--format",
        "jsonl",
        "--database",
        str(edited.database),
    )
    assert code == 0
    keys = {ln["dmf_key"] for ln in jsonl(out)}
    assert edited.twice in keys and all(k.startswith(("2", "수")) for k in keys)
    target = tmp_path / "h.xlsx"
    code, out, _ = run_cli(
        capsys, "history", edited.twice, "--format", "xlsx", "--out", str(target), "--database", str(edited.database)
    )
    assert code == 0 and str(target) in out
    wb = load_workbook(target)
    assert wb.sheetnames == ["이벤트", "버전", "목록 기간"]
    rows = [r for r in wb["이벤트"].iter_rows(min_row=5, values_only=True) if r[0]]
    assert len(rows) == 2 and all(r[3] == "변경" for r in rows)
    assert len([r for r in wb["버전"].iter_rows(min_row=5, values_only=True) if r[0]]) == 3
    # three versions one after another, each listed on its days: three spans, none of them a gap
    spans = [r for r in wb["목록 기간"].iter_rows(min_row=5, values_only=True) if r[0]]
    assert [r[3] for r in spans] == ["버전 1", "버전 2", "버전 3"] and all(isinstance(r[1], datetime) for r in spans)


@pytest.mark.parametrize(
    "argv, message",
    [
        (("history",), "하나가 필요합니다"),
        (("history", "19990101-1-A-1-01"), "이력에 해당 등록이 없습니다"),
        (("history", "   "), "빈 등록번호"),
        (("asof", "2020-01-01"), "정상 수집(반영)된 날이 없습니다"),
        (("report", "--from", "2026-09-05", "--to", "2026-09-01"), "앞섭니다"),
        (("report", "--from", "2020-01-01", "--to", "2020-01-31"), "처리(수집·판정)된 날이 없습니다"),
    ],
)
def test_bad_arguments_are_one_line_dmf_errors(edited, capsys, argv, message):
    code, _out, err = run_cli(capsys, *argv, "--database", str(edited.database))
    assert code == 2 and err.startswith("dmf: ") and message in err and "Traceback" not in err


def test_missing_database_is_a_clear_error(capsys, tmp_path):
    code, _, err = run_cli(capsys, "asof", "2026-10-01", "--database", str(tmp_path / "none.duckdb"))
    assert code == 2 and "이력 DB가 없습니다" in err
    assert not (tmp_path / "none.duckdb").exists()  # asking never creates an empty database


# --- dmf asof ------------------------------------------------------------------------------------


def test_asof_returns_the_registry_the_source_served_that_day(emulated, capsys):
    sim = RegistrySimulator()
    served = len(sim.items(date(2026, 10, 5)))
    code, out, _err = run_cli(capsys, "asof", "2026-10-05", "--format", "jsonl", "--database", str(emulated))
    assert code == 0
    rows = jsonl(out)
    assert abs(len(rows) - served) <= 2, (len(rows), served)
    assert len({r["dmf_key"] for r in rows}) == len(rows)
    assert all(r["asof_day"] == "2026-10-05" for r in rows)
    grants = [r for r in rows if r["permit_grant"]]
    assert grants and all(r["permit_no"].startswith(r["base_permit_no"]) for r in grants)
    assert all(r["cohort"] == f"{int(r['permit_ingr_no'])}-{r['permit_group']}" for r in rows if r["permit_group"])
    multi = [r for r in rows if r["site_count"] > 1]
    assert multi and all(len(r["sites"]) == r["site_count"] for r in multi)
    assert all(r["first_seen"] <= "2026-10-05" for r in rows)


def test_asof_a_rejected_day_is_the_last_accepted_day_before_it(emulated, capsys):
    code, out, err = run_cli(capsys, "asof", REJECTED.isoformat(), "--format", "jsonl", "--database", str(emulated))
    assert code == 0 and "2026-10-05" in err and "반영되지 않은 날" in err
    assert {r["asof_day"] for r in jsonl(out)} == {"2026-10-05"}
    # the particle follows the date as it is read: 2026-10-09 (…구) takes 「는」, 2026-10-06 (…육) 「은」
    assert "(요청일 2026-10-06은 반영되지 않은 날" in err
    code, _, err = run_cli(capsys, "asof", "2026-10-09", "--format", "jsonl", "--database", str(emulated))
    assert (
        code == 0 and err.startswith("2026-10-08 정상 수집분 기준") and "(요청일 2026-10-09는 반영되지 않은 날" in err
    )


def test_asof_values_follow_the_day(edited, capsys, tmp_path):
    """The registry exactly as accepted: day 2 shows the first new address, day 4 the second."""

    def row_on(day: date) -> dict:
        code, out, _ = run_cli(capsys, "asof", day.isoformat(), "--format", "jsonl", "--database", str(edited.database))
        assert code == 0
        return next(r for r in jsonl(out) if r["dmf_key"] == edited.twice)

    assert row_on(edited.days[0])["address"] != "Plot 1, Phase I, Hyderabad, India"
    r2 = row_on(edited.days[1])
    assert r2["address"] == "Plot 1, Phase I, Hyderabad, India" and r2["last_changed"] == edited.days[1].isoformat()
    r4 = row_on(edited.days[3])
    assert (
        r4["address"] == "Plot 99, Phase III, Visakhapatnam, India" and r4["last_changed"] == edited.days[2].isoformat()
    )
    assert r4["times_changed"] == 2 and r4["first_seen"] == edited.days[0].isoformat()
    # csv (Excel-friendly BOM) and xlsx carry the same rows

    def asof_to(path: Path, fmt: str) -> int:
        day = edited.days[4].isoformat()
        return run_cli(capsys, "asof", day, "--format", fmt, "--out", str(path), "--database", str(edited.database))[0]

    csv_path, xlsx_path = tmp_path / "a.csv", tmp_path / "a.xlsx"
    assert asof_to(csv_path, "csv") == 0
    text = csv_path.read_bytes()
    assert text.startswith("\ufeff".encode()) and len(text.decode("utf-8-sig").splitlines()) == 1 + 146
    assert asof_to(xlsx_path, "xlsx") == 0
    ws = load_workbook(xlsx_path)["전체현황"]
    assert ws.max_row - 4 == 146 and ws.auto_filter.ref.startswith("A4:")
    # jsonl goes to --out as well (no BOM: one JSON object a line); the terminal table has no file to write
    jsonl_path = tmp_path / "a.jsonl"
    assert asof_to(jsonl_path, "jsonl") == 0
    assert len(jsonl(jsonl_path.read_text(encoding="utf-8"))) == 146
    code, _, err = run_cli(
        capsys, "asof", edited.days[4].isoformat(), "--out", str(tmp_path / "t.txt"), "--database", str(edited.database)
    )
    assert code == 2 and "--format csv·jsonl·xlsx" in err and not (tmp_path / "t.txt").exists()


# --- dmf report ----------------------------------------------------------------------------------


def _report(first: str, last: str, out_file: Path) -> tuple[str, ...]:
    return ("report", "--from", first, "--to", last, "--out", str(out_file))


def test_period_report_on_the_emulated_week_opens_in_openpyxl(emulated, capsys, tmp_path):
    out_file = tmp_path / "week.xlsx"
    code, out, _ = run_cli(capsys, *_report("2026-10-02", "2026-10-08", out_file), "--database", str(emulated))
    assert code == 0 and str(out_file) in out
    wb = load_workbook(out_file)
    assert wb.sheetnames == ["요약", "순변경", "전체 이벤트", "필드 변경", "메타"]
    with open_database(emulated) as conn:
        n_events = conn.execute("SELECT count(*) FROM events WHERE day_id BETWEEN 20261002 AND 20261008").fetchone()[0]
    events = [r for r in wb["전체 이벤트"].iter_rows(min_row=5, values_only=True) if r[0]]
    assert len(events) == n_events > 0
    header = [c.value for c in wb["순변경"][4]]
    assert header[-3:] == ["검토자", "검토일", "의견"]
    net = [r for r in wb["순변경"].iter_rows(min_row=5, values_only=True) if r[0]]
    assert net and all(r[-3:] == (None, None, None) for r in net)  # left empty for the reviewer
    assert "수집 실패 1일" in wb["요약"]["A1"].value


def test_period_report_nets_a_registration_changed_twice_into_one_row(edited, capsys, tmp_path):
    out_file = tmp_path / "p.xlsx"
    period = _report(edited.days[1].isoformat(), edited.days[4].isoformat(), out_file)
    code, _, _ = run_cli(capsys, *period, "--database", str(edited.database))
    assert code == 0
    ws = load_workbook(out_file)["순변경"]
    header = [c.value for c in ws[4]]
    rows = [dict(zip(header, r, strict=True)) for r in ws.iter_rows(min_row=5, values_only=True) if r[0]]
    twice = [r for r in rows if r["관리 키"] == edited.twice]
    assert len(twice) == 1 and twice[0]["이벤트 수"] == 2 and twice[0]["순변경"] == "변경"
    text = twice[0]["순변경 내용 (기간 처음 전 → 마지막 후)"]
    original = next(i for i in edited.items[edited.days[0]] if i["DMF_PERMIT_NO"] == edited.twice)
    assert f"제조소 소재지: {display_text(original['MNFCTR_PLACE'])} → Plot 99, Phase III, Visakhapatnam, India" in text
    assert "Plot 1, Phase I" not in text  # the intermediate value is not a net change
    withdrawn = {r["관리 키"] for r in rows if r["순변경"] == "목록에서 삭제"}
    assert withdrawn == set(edited.withdrawn)
    site = next(r for r in rows if r["관리 키"] == edited.site_added)
    assert f"제조소 추가: {edited.site_name} (중국)" in site["순변경 내용 (기간 처음 전 → 마지막 후)"]
    assert len(rows) == 1 + 1 + len(edited.withdrawn)


def test_history_follows_a_registration_that_received_its_number(emulated, capsys):
    """Published without a number, numbered later: one registration, found by either key."""
    with open_database(emulated) as conn:
        row = conn.execute(
            "SELECT permit_no, base_dmf_key, day_id FROM events WHERE number_assigned ORDER BY day_id LIMIT 1"
        ).fetchone()
    assert row, "the emulated week assigns a number"
    permit, syn, day = row
    assert syn.startswith("SYN-")
    by_number = jsonl(run_cli(capsys, "history", permit, "--format", "jsonl", "--database", str(emulated))[1])
    by_syn = jsonl(run_cli(capsys, "history", syn.lower(), "--format", "jsonl", "--database", str(emulated))[1])
    assert by_number == by_syn
    assert {v["dmf_key"] for v in by_number if v["kind"] == "version"} == {permit, syn}
    numbered = [(v["dmf_key"], v["version_no"]) for v in by_number if v["kind"] == "version"]
    assert [n for _, n in numbered] == list(range(1, len(numbered) + 1)) and numbered[0][0] == syn
    (assigned,) = [e for e in by_number if e["kind"] == "event" and "번호 부여" in e["flags"]]
    assert assigned["day"] == history.to_date(day).isoformat() and assigned["event_type"] == "CHANGED"
    assert not [e for e in by_number if e["kind"] == "event" and e["event_type"] == "WITHDRAWN"]


# --- a registration re-numbered (issue 30, docs/DOMAIN.md §4) -----------------------------------------


def test_history_by_the_old_and_by_the_new_number_is_one_history(renumbered, capsys):
    """Versions under both numbers, the re-numbering as one MEDIUM CHANGED event, the later disappearance of
    the new number and its return — whichever number is asked."""
    by_old = jsonl(run_cli(capsys, "history", OLD_NO, "--format", "jsonl", "--database", str(renumbered))[1])
    by_new = jsonl(run_cli(capsys, "history", NEW_NO, "--format", "jsonl", "--database", str(renumbered))[1])
    assert by_old == by_new
    assert {v["dmf_key"] for v in by_new if v["kind"] == "version"} == {OLD_NO, NEW_NO}
    # one registration, its versions counted on across its numbers: the old number's is 1, the new number's 2
    assert [(v["dmf_key"], v["version_no"]) for v in by_new if v["kind"] == "version"] == [(OLD_NO, 1), (NEW_NO, 2)]
    events = [e for e in by_new if e["kind"] == "event"]
    assert [(e["day"], e["event_type"], e["permit_no"]) for e in events] == [
        (R_DAYS[1].isoformat(), "CHANGED", NEW_NO),
        (R_DAYS[3].isoformat(), "WITHDRAWN", NEW_NO),
        (R_DAYS[4].isoformat(), "NEW", NEW_NO),
    ]
    renumbering, gone, back = events
    assert renumbering["label"] == f"등록번호 변경 {OLD_NO} → {NEW_NO}" and renumbering["severity"] == "MEDIUM"
    assert "번호 변경" in renumbering["flags"] and renumbering["base_dmf_key"] == OLD_NO
    assert gone["label"] == "목록에서 삭제" and "재등장" in back["flags"] and back["severity"] == "HIGH"
    spans = {(s["dmf_key"], s["first_day"]): s for s in by_new if s["kind"] == "span"}
    moved = spans[(OLD_NO, R_DAYS[1].isoformat())]
    assert moved["continued_as"] == NEW_NO and moved["renumbered"]
    assert moved["text"] == f"{R_DAYS[1]}부터 {NEW_NO}로 이어짐 (등록번호 변경)"
    returned = spans[(NEW_NO, R_DAYS[4].isoformat())]
    assert returned["reappeared"] and returned["gone_since"] == R_DAYS[3].isoformat()
    assert f"{R_DAYS[3]}부터 목록에 없다가 {R_DAYS[4]}에 다시 목록에 오름 (재등장)" in returned["text"]
    assert returned["text"].startswith("버전 2: ") and spans[(OLD_NO, R_DAYS[0].isoformat())]["text"].startswith(
        "버전 1: "
    )
    # the table a person reads names the old number under the new one
    table = run_cli(capsys, "history", NEW_NO, "--database", str(renumbered))[1]
    assert (
        f"등록번호 변경 {OLD_NO} → {NEW_NO}" in table
        and f"→ {R_DAYS[1]}에 등록번호가 바뀌어 {NEW_NO}로 이어짐" in table
    )
    assert "[보통] 등록번호 변경" in table and "[심각] 목록에서 삭제" in table


def test_asof_lists_the_old_number_before_the_renumbering_and_the_new_one_after(renumbered, capsys):
    def rows_on(day: date) -> dict[str, dict]:
        code, out, _ = run_cli(capsys, "asof", day.isoformat(), "--format", "jsonl", "--database", str(renumbered))
        assert code == 0
        return {r["dmf_key"]: r for r in jsonl(out)}

    before, after = rows_on(R_DAYS[0]), rows_on(R_DAYS[1])
    assert OLD_NO in before and NEW_NO not in before and before[OLD_NO]["previous_permit_no"] is None
    assert NEW_NO in after and OLD_NO not in after and len(after) == len(before)
    # one registration: first seen under its old number, which is its previous number
    assert after[NEW_NO]["previous_permit_no"] == OLD_NO
    assert after[NEW_NO]["first_seen"] == before[OLD_NO]["first_seen"] == R_DAYS[0].isoformat()
    # a number corrected is no 실질 변경 (its own figure, 번호 변경): the lifecycle's change count leaves it out
    assert after[NEW_NO]["times_changed"] == 0 and after[NEW_NO]["last_changed"] is None
    assert rows_on(R_DAYS[4])[NEW_NO]["first_seen"] == R_DAYS[0].isoformat()


def test_asof_shows_the_first_seen_day_of_a_registration_that_got_its_number_later(emulated, capsys):
    """Before the day its number arrived, the registration is its synthetic key — first seen the day it was
    published (was null: the lifecycle was grouped under the record the number went to)."""
    with open_database(emulated) as conn:
        syn, permit, day_id = conn.execute(
            "SELECT base_dmf_key, dmf_key, day_id FROM events WHERE number_assigned ORDER BY day_id LIMIT 1"
        ).fetchone()
        published = conn.execute("SELECT first_day FROM records WHERE dmf_key = ?", [syn]).fetchone()[0]
    day = history.to_date(day_id)
    published_on = history.to_date(published).isoformat()
    for asked, key in ((day - timedelta(days=1), syn), (day, permit)):
        code, out, _ = run_cli(capsys, "asof", asked.isoformat(), "--format", "jsonl", "--database", str(emulated))
        assert code == 0
        (row,) = [r for r in jsonl(out) if r["dmf_key"] == key]
        assert row["first_seen"] == published_on, (asked, key)
        assert all(r["first_seen"] is not None for r in jsonl(out))


def test_period_report_says_why_a_day_was_rejected_in_the_teams_words(emulated, capsys, tmp_path):
    """The period's 요약 listed the rejected day with the engineer's line (「2번 완전성 게이트 실패: 수신 … / totalCount
    …」) where the day's own workbook gives the team's sentence."""
    from dmf_assets.domain.gates import GATE_BY_NUMBER

    out_file = tmp_path / "week.xlsx"
    code, _, _ = run_cli(capsys, *_report("2026-10-02", "2026-10-08", out_file), "--database", str(emulated))
    cells = [str(c) for row in load_workbook(out_file)["요약"].iter_rows(values_only=True) for c in row if c]
    assert GATE_BY_NUMBER[2].reader_ko in cells
    assert code == 0 and not [c for c in cells if "totalCount" in c or "게이트" in c], cells
