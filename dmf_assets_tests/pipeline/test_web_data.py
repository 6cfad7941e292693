"""The team's page's figures and sentences for a history whose first day was rejected: before any accepted day no
later comparison covers a day's changes, so the page must not promise one."""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta

import httpx

from dmf_assets.clock import KST, frozen_at
from dmf_assets.settings import load_settings
from dmf_assets.storage.db import open_database
from dmf_assets.web import data
from dmf_assets_tests.histories import build_emulated_history
from dmf_assets_tests.web_support import serving

FIRST, SECOND, THIRD = date(2026, 11, 30), date(2026, 12, 1), date(2026, 12, 2)


def test_a_first_day_rejected_is_not_said_to_be_covered_by_a_later_comparison(tmp_path):
    database = build_emulated_history(tmp_path / "dmf.duckdb", [FIRST], rejected=(FIRST,))
    with open_database(database, purpose="test") as conn:
        home = data.home(conn)
        # no accepted day yet: the reason is still given (it was dropped), and no comparison is promised
        assert home.latest is None and home.rejected_day == FIRST
        assert home.rejected_reason and home.rejected_gate and not home.rejected_covered
    build_emulated_history(database, [SECOND, THIRD])  # a baseline, then a compared day
    with open_database(database, purpose="test") as conn:
        assert data.home(conn).latest == THIRD and not data.home(conn).rejected_covered  # nothing came before it
        settings = load_settings()
        # a day not run before the first accepted day: its changes are in the baseline, not covered by a comparison
        assert not data.day_page(conn, date(2026, 11, 29), settings).covered
        assert data.day_page(conn, date(2026, 12, 5), settings).covered  # after it: the next comparison covers it


def test_each_row_of_a_duplicated_number_opens_its_own_registration(tmp_path):
    """Two registrations listed under one number ('X' and 'X#2'): the page of 'X' showed whichever was listed
    last, so the search row of one opened the other's heading and current values."""
    database = build_emulated_history(tmp_path / "dmf.duckdb", [SECOND])
    with open_database(database, purpose="test") as conn:
        rows = conn.execute(
            "SELECT r.dmf_key, r.permit_no, v.applicant, v.manufacturer FROM records r "
            "JOIN record_versions v ON v.record_id = r.record_id WHERE r.permit_no IN "
            "(SELECT permit_no FROM records WHERE dmf_key LIKE '%#2') ORDER BY r.dmf_key"
        ).fetchall()
        groups: dict[str, list[tuple]] = {}
        for key, number, applicant, manufacturer in rows:
            groups.setdefault(number, []).append((key, (applicant, manufacturer)))
        assert len(groups) >= 3, "the emulated registry lists some numbers twice"
        for members in groups.values():
            assert len({content for _, content in members}) == len(members)  # told apart by their content
            for key, (applicant, manufacturer) in members:
                reg = data.registration(conn, key, None)
                assert reg is not None, key
                assert (reg.current["applicant"], reg.current["manufacturer"]) == (applicant, manufacturer), key
    # and the search page's rows link to them: each row's link opens the page of that row's registration
    (tmp_path / "reports").mkdir()
    number, members = next(iter(groups.items()))
    with serving(tmp_path / "reports", database) as (base, _):
        page = httpx.get(f"{base}/search", params={"q": number}, timeout=30).text
        found = re.findall(r'<a href="(/dmf/[^"]+)">([^<]*)</a></td>\s*<td>[^<]*</td>\s*<td>([^<]*)</td>', page)
        rows_shown = [(link, applicant) for link, shown, applicant in found if shown == number]  # not its grants
        assert len(rows_shown) == len(members)
        current = {}
        for link, applicant in rows_shown:
            opened = httpx.get(base + link, timeout=30).text
            current[link] = opened.split("<h2>현재 내용</h2>", 1)[1].split("<h2", 1)[0]
            assert f"<td>{applicant}</td>" in current[link], (link, applicant)
        assert len(set(current.values())) == len(members)  # two rows, two registrations


def test_the_first_and_last_dates_there_are_have_a_day_page(tmp_path):
    """Its 「전날 / 다음 날」 links were computed past the calendar's ends: a 500 for /day/9999-12-31."""
    database = build_emulated_history(tmp_path / "dmf.duckdb", [SECOND])
    (tmp_path / "reports").mkdir()
    with serving(tmp_path / "reports", database) as (base, _):
        last = httpx.get(f"{base}/day/9999-12-31", timeout=30)
        first = httpx.get(f"{base}/day/0001-01-01", timeout=30)
    assert (last.status_code, first.status_code) == (200, 200)
    assert "다음 날" not in last.text and "/day/9999-12-30" in last.text
    assert "전날" not in first.text and "/day/0001-01-02" in first.text


def test_a_day_still_to_come_and_a_nul_in_a_query_read_as_what_they_are(tmp_path):
    """A future day was 「수집하지 않았습니다」 as if it had been missed; %00 went back into the title and the box."""
    database = build_emulated_history(tmp_path / "dmf.duckdb", [SECOND])
    (tmp_path / "reports").mkdir()
    with serving(tmp_path / "reports", database) as (base, _):
        future = httpx.get(f"{base}/day/9999-01-01", timeout=30).text
        past = httpx.get(f"{base}/day/{SECOND - timedelta(days=1)}", timeout=30).text
        nul = httpx.get(f"{base}/search", params={"q": "아세트\x00아미노펜"}, timeout=30)
        today = date(2026, 12, 7)
        with frozen_at(datetime(2026, 12, 7, 10, 0, tzinfo=KST)):  # the page's clock (the server runs in this process)
            today_page, yesterday_page = (
                httpx.get(f"{base}/day/{d}", timeout=30).text for d in (today, today - timedelta(1))
            )
    assert "아직 오지 않은 날입니다" in future and "수집하지 않았습니다" not in future
    # 「다음 날」 leads up to today, never into the days to come (it went on, one empty day after another)
    assert f'<a href="/day/{today}">다음 날 →</a>' in yesterday_page
    assert "다음 날" not in today_page and "다음 날" not in future
    assert "수집하지 않았습니다" in past and "아직 오지 않은" not in past
    assert nul.status_code == 200 and "\x00" not in nul.text and 'value="아세트아미노펜"' in nul.text


def test_a_first_day_rejected_shows_no_blank_figure_and_no_base_that_is_not_there(tmp_path):
    """Before any accepted day its page said 「등록 수 (비교 기준일의 목록)」 with no figure, 「비교 기준이 그대로」
    of a base that does not exist, and the home 「마지막 정상 수집일(없음) 그대로」."""
    database = build_emulated_history(tmp_path / "dmf.duckdb", [FIRST], rejected=(FIRST,))
    (tmp_path / "reports").mkdir()
    with serving(tmp_path / "reports", database) as (base, _):
        day = httpx.get(f"{base}/day/{FIRST}", timeout=30).text
        home = httpx.get(f"{base}/", timeout=30).text
    assert "비교 기준일의 목록" not in day and "비교 기준이 그대로" not in day
    assert "없음 — 이 날보다 앞서 반영된 날이 없습니다" in day
    assert "(없음) 그대로" not in home and "반영된 날이 아직 없어 보여 드릴 등록 현황이 없습니다" in home
