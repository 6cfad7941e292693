"""「DMF 조회」 as the team meets it (issue 32's "Must show"): a 10-day emulator backfill with one rejected day made by
the real `dmf backfill`, then the real `dmf web --port P` in its own process, asked over loopback HTTP — and driven
by a real browser (Playwright on Debian's chromium).

The figures are checked against the database itself (the `runs` row, the snapshot), the search against the exact
spelling, the downloads byte for byte, the traversals as raw request lines, the token rule with the real command.
"""

from __future__ import annotations

import contextlib
import csv
import html
import io
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from urllib.parse import quote, unquote

import httpx
import pytest
from openpyxl import load_workbook

from dmf_assets.domain.gates import GATE_BY_NUMBER
from dmf_assets.domain.model import EVENT_LABEL_KO, FIELD_LABEL_KO, NUMBER_ASSIGNED_LABEL_KO, DayStatus
from dmf_assets.domain.text import match_key
from dmf_assets.korean import particle
from dmf_assets.settings import PROJECT_ROOT
from dmf_assets.storage import history
from dmf_assets.storage.db import database_lock, lock_path, read_only_database
from dmf_assets_tests.notify_servers import free_port
from dmf_assets_tests.project_support import TEN_DAYS, TEN_DAYS_REJECTED, TEN_DAYS_SERVICE_KEY, ten_days_one_short
from dmf_assets_tests.web_support import raw_get

pytestmark = pytest.mark.slow

START, END, REJECTED = TEN_DAYS[0], TEN_DAYS[-1], TEN_DAYS_REJECTED
SERVICE_KEY = TEN_DAYS_SERVICE_KEY
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@dataclass(frozen=True)
class Project:
    root: Path
    env: dict[str, str]
    built_in: Path  # where the backfill ran: no page may name it either

    @property
    def database(self) -> Path:
        return self.root / "data" / "database"

    @property
    def reports(self) -> Path:
        return self.root / "data" / "reports_dir"


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Project:
    """What `dmf backfill` leaves behind: 10 emulator days, the sixth rejected by the completeness gate (the
    backfill test_one_figure reads: built once, each module gets a copy), every folder named in the config."""
    done = ten_days_one_short(tmp_path_factory)
    assert done.returncode == 3, done.stdout[-2000:] + done.stderr[-2000:]  # one day rejected by a gate
    return Project(done.root, done.env | {"PYTHONUNBUFFERED": "1"}, done.built_in)


@contextlib.contextmanager
def _dmf_web(env: dict[str, str], *args: str) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "dmf_assets", "web", "--port", str(port), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=PROJECT_ROOT,
    )
    try:
        first = proc.stdout.readline()  # printed once the socket is listening
        assert f":{port}/" in first, (first, proc.stderr.read() if proc.poll() is not None else "")
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            _, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
        assert "Traceback" not in err, err


@pytest.fixture(scope="module")
def web(project) -> Iterator[str]:
    with _dmf_web(project.env) as base:
        yield base


def _get(url: str, **kw) -> httpx.Response:
    return httpx.get(url, timeout=60, **kw)


def _tiles(page: str) -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for value, label in re.findall(r'<div class="v">([\d,]+)</div><div class="k">([^<]+)</div>', page):
        found.setdefault(label, []).append(int(value.replace(",", "")))
    return found


def _visible(page: str) -> str:
    """What a reader sees of a page: its text without the tags (and the addresses inside them)."""
    return html.unescape(re.sub(r"<[^>]*>", " ", page))


def _csv(response: httpx.Response) -> list[dict[str, str]]:
    assert response.status_code == 200, response.text[:500]
    assert response.content.startswith("\ufeff".encode()), "no BOM: Excel would misread the Hangul"
    return list(csv.DictReader(io.StringIO(response.content.decode("utf-8-sig"))))


# --- the figures -----------------------------------------------------------------------------------


def test_home_shows_the_latest_accepted_day_with_the_database_figures(project, web):
    with read_only_database(project.database) as conn:
        run = dict(
            zip(
                ("day_id", "population", "new", "changed", "withdrawn", "assigned"),
                conn.execute(
                    "SELECT day_id, population, new_count, changed_count, withdrawn_count, assigned_count FROM runs "
                    "WHERE status IN ('accepted', 'baseline') ORDER BY day_id DESC LIMIT 1"
                ).fetchone(),
                strict=True,
            )
        )
        d = run["day_id"]
        registrations, applicants = conn.execute(
            "SELECT count(*), count(DISTINCT coalesce(v.bizrno, v.applicant_key)) FROM snapshots s "
            "JOIN record_versions v USING (version_id) WHERE s.day_id = ?",
            [d],
        ).fetchone()
        countries = conn.execute(
            "SELECT count(DISTINCT c) FROM (SELECT unnest(v.country_list) AS c FROM snapshots s "
            "JOIN record_versions v USING (version_id) WHERE s.day_id = ?) WHERE c IS NOT NULL",
            [d],
        ).fetchone()[0]
        sites = conn.execute(
            "SELECT v.sites, v.manufacturer FROM snapshots s JOIN record_versions v USING (version_id) WHERE s.day_id = ?",
            [d],
        ).fetchall()
    names = [s["name"] for row, manufacturer in sites for s in row] + [m for row, m in sites if not row]
    manufacturers = len({k for n in names if n and (k := match_key(n, "company"))})
    page = _get(f"{web}/").text
    tiles = _tiles(page)
    assert f"{END}" in page and d == history.day_id(END)  # the latest accepted day
    assert tiles["등록"] == [registrations] and registrations == run["population"]
    assert tiles["신청인"] == [applicants] and tiles["제조국"] == [countries] and tiles["제조소"] == [manufacturers]
    assert manufacturers < len({n for n in names if n})  # spellings of one company counted once
    # and the page says how it counts them, as counted above (applicants by 사업자등록번호, else by name)
    assert "신청인은 사업자등록번호로(번호가 없으면 이름으로), 제조소는 이름으로 셉니다." in _visible(page)
    assert tiles[EVENT_LABEL_KO["NEW"]] == [run["new"]]
    assert tiles[EVENT_LABEL_KO["CHANGED"]] == [run["changed"] - run["assigned"]]  # 실질 변경, as the workbook
    assert tiles[EVENT_LABEL_KO["WITHDRAWN"]] == [run["withdrawn"]]
    assert tiles["번호 부여"] == [run["assigned"]]
    assert sum(tiles[EVENT_LABEL_KO[k]][0] for k in ("NEW", "CHANGED")) > 0  # a day with changes, not an empty page
    # the last rejected day and why, and the day's workbook
    assert f'<a href="/day/{REJECTED}">{REJECTED}</a>' in page and GATE_BY_NUMBER[2].title in page
    # why, in the team's words: the API's field names and the gate's technical line are for the day's page
    assert html.escape(GATE_BY_NUMBER[2].reader_ko) in page
    assert "totalCount" not in page and "게이트 실패" not in page
    assert f"/reports/DMF_리포트_{END}.xlsx" in page


def test_search_ignores_spacing_legal_forms_case_and_punctuation(web):
    exact = _csv(_get(f"{web}/search.csv", params={"q": "아세트아미노펜"}))
    typed = _csv(_get(f"{web}/search.csv", params={"q": "  아세트  아미노펜 ㈜ "}))
    assert len(exact) > 20 and {r["등록번호"] for r in typed} == {r["등록번호"] for r in exact}
    assert all("아세트아미노펜" in r["성분명"].replace(" ", "") for r in exact)
    company = {
        frozenset(r["등록번호"] for r in _csv(_get(f"{web}/search.csv", params={"q": q})))
        for q in ("(주)삼오제약", "㈜ 삼오 제약", "삼오제약 주식회사", "삼오 제약")
    }
    assert len(company) == 1 and len(next(iter(company))) > 100  # one company, however it is typed
    # the on-screen page agrees with the export and says how many
    page = _get(f"{web}/search", params={"q": "  아세트  아미노펜 ㈜ "}).text
    assert f"<strong>{len(exact):,}건</strong>" in page
    # a permit number typed with spaces, a country, the filters
    number = exact[0]["등록번호"]
    spaced = " ".join(re.split(r"[-()]", number)).strip()
    assert number in {r["등록번호"] for r in _csv(_get(f"{web}/search.csv", params={"q": spaced}))}
    india = _csv(_get(f"{web}/search.csv", params={"q": "아세트아미노펜", "country": "인도"}))
    assert 0 < len(india) < len(exact) and all("인도" in r["제조국 (국가 목록)"] for r in india)
    # the XLSX export: the same rows, through the house table writer
    xlsx = _get(f"{web}/search.xlsx", params={"q": "아세트아미노펜"})
    assert xlsx.status_code == 200 and xlsx.content[:2] == b"PK"
    sheet = load_workbook(io.BytesIO(xlsx.content), read_only=True).worksheets[0]
    cells = {str(c) for row in sheet.iter_rows(values_only=True) for c in row if c}
    assert {r["등록번호"] for r in exact} <= cells


def test_words_no_registration_holds_as_one_phrase_are_looked_for_one_by_one(web):
    """「인도 이부프로펜」 is no ingredient, applicant, maker or number: the box then looks for each word anywhere in a
    registration — ibuprofen made in India — and says so; a phrase found as typed is never split."""
    listed = _csv(_get(f"{web}/search.csv", params={"q": "이부프로펜"}))
    ibuprofen = {r["등록번호"] for r in listed}
    india = {r["등록번호"] for r in _csv(_get(f"{web}/search.csv", params={"q": "이부프로펜", "country": "인도"}))}
    rows = _csv(_get(f"{web}/search.csv", params={"q": "인도 이부프로펜"}))
    assert india and india <= {r["등록번호"] for r in rows} <= ibuprofen
    assert all("인도" in " ".join(r.values()) for r in rows)
    page = _get(f"{web}/search", params={"q": "인도 이부프로펜"}).text
    assert f"<strong>{len(rows):,}건</strong>" in page
    said = "「인도 이부프로펜」을 한 덩어리로 가진 등록이 없어, 낱말 「인도」·「이부프로펜」이 모두 들어 있는 등록을 찾았습니다."
    assert said in page
    spaced = _get(f"{web}/search", params={"q": "이부 프로펜"}).text
    assert f"<strong>{len(listed):,}건</strong>" in spaced and "낱말" not in spaced
    # a word that is only a legal form is no word to look for: 「삼오 ㈜」 is the phrase 「삼오」 alone
    assert "낱말" not in _get(f"{web}/search", params={"q": "삼오 ㈜"}).text
    # words that are nowhere together: said as such, never "found"
    nowhere = _get(f"{web}/search", params={"q": "이부프로펜 zzzq"}).text
    assert "<strong>0건</strong>" in nowhere
    assert "낱말 「이부프로펜」·「zzzq」가 모두 들어 있는 등록을 찾아보았지만 없습니다." in nowhere


def test_a_number_no_longer_listed_says_what_became_of_it(project, web):
    """A number typed from an old document — the number a registration had before MFDS corrected it, or one gone
    from the list — finds no registration listed under it; the page says what became of it, as the registration's
    page does, and links that page. A listed number or one never seen says nothing of the kind."""
    with read_only_database(project.database) as conn:
        old, new, day_id = conn.execute(
            "SELECT base_dmf_key, dmf_key, day_id FROM events WHERE number_changed ORDER BY event_id LIMIT 1"
        ).fetchone()
        gone, gone_day = conn.execute(
            "SELECT e.permit_no, e.day_id FROM events e WHERE e.event_type = 'WITHDRAWN' AND e.permit_no IS NOT NULL "
            "AND NOT EXISTS (SELECT 1 FROM events l WHERE l.dmf_key = e.dmf_key AND l.day_id > e.day_id) "
            "ORDER BY e.event_id LIMIT 1"
        ).fetchone()
    for number, what in (
        (old, f"{history.to_date(day_id)}부터 {new}{particle(new, '으로/로')} 이어짐 (등록번호 변경)"),
        (gone, f"목록에서 삭제: {history.to_date(gone_day)} ~ {END} 목록에 없음"),
    ):
        page = " ".join(_visible(_get(f"{web}/search", params={"q": number}).text).split())
        said = f"「{number}」{particle(f'「{number}」', '은/는')} {END} 목록에 그 번호로는 없지만 등록 이력에 있는 번호입니다 — "
        assert said + what in page, page[:2000]
        link = re.search(r'<a href="([^"]+)">등록 이력 보기</a>', _get(f"{web}/search", params={"q": number}).text)
        assert link and unquote(link[1]) == f"/dmf/{number}" and _get(f"{web}{link[1]}").status_code == 200
    for number in (new, "99999999-1-A-1-01"):
        assert "등록 이력에 있는 번호" not in _get(f"{web}/search", params={"q": number}).text


def _top_rows(page: str) -> list[tuple[str, str, str, int]]:
    """(list title, row label, the row's link, its count) of every row of the home's top lists."""
    rows = []
    for table in re.findall(r"<table[^>]*>(.*?)</table>", page, re.S):
        title = re.search(r"<tr><th>([^<]+)</th><th class=\"n\">등록</th></tr>", table)
        for href, label, n in re.findall(
            r'<tr><td><a href="([^"]+)">([^<]+)</a></td><td class="n">([\d,]+)</td></tr>', table
        ):
            rows.append((title[1] if title else "", html.unescape(label), html.unescape(href), int(n.replace(",", ""))))
    return rows


def test_every_row_of_the_home_lists_links_to_exactly_the_registrations_it_counts(web):
    """A count on the home and the list behind its link are one figure: 「디클로페낙 247」 opens 247 registrations,
    not every registration that mentions the word (a search of the box finds 「아세클로페낙」's combinations too)."""
    rows = _top_rows(_get(f"{web}/").text)
    titles = {title for title, *_ in rows}
    assert titles == {"성분 (기준명)", FIELD_LABEL_KO["applicant"], "제조소", FIELD_LABEL_KO["countries"]}, titles
    assert len(rows) == 40
    for title, label, href, n in rows:
        page = _get(f"{web}{href}").text
        assert f"<strong>{n:,}건</strong>" in page, (title, label, href, re.findall(r"<strong>[^<]*</strong>", page))
        seen = _visible(page)
        if title != FIELD_LABEL_KO["countries"]:  # a country is the form's own filter, shown selected
            assert f"{title} {label}의 등록만" in " ".join(seen.split()), (title, label)
            # the export says what it holds, and holds the same registrations
            assert len(_csv(_get(f"{web}/search.csv", params=dict(httpx.URL(href).params)))) == n
        # the form keeps the limit when the search is refined; 「이 조건 풀기」 lifts it
        for name, value in httpx.URL(href).params.items():
            if name != "country":
                assert f'<input type="hidden" name="{name}" value="{html.escape(value)}">' in page
        lifted = re.search(r'<a href="([^"]+)">이 조건 풀기</a>', page)
        if title != FIELD_LABEL_KO["countries"]:
            assert lifted and html.unescape(lifted[1]) == "/search", lifted
    # a limit no registration has lists none, and says which
    nothing = _get(f"{web}/search", params={"manufacturer": "없는업체"}).text
    assert "<strong>0건</strong>" in nothing and "제조소 없는업체의 등록만" in " ".join(_visible(nothing).split())


def test_as_of_a_rejected_day_searches_the_registry_of_the_day_before(project, web):
    page = _get(f"{web}/search", params={"as_of": str(REJECTED), "q": "아세트아미노펜"}).text
    assert f"{REJECTED - timedelta(days=1)} 정상 수집분 기준" in page and "반영되지 않은 날" in page
    # the particle follows the date as it is read: 「…-21은」, 「…-29는」
    assert f"(요청한 {REJECTED}{particle(str(REJECTED), '은/는')} 반영되지 않은 날이라" in page
    later = next(END + timedelta(days=n) for n in range(1, 11) if str(END + timedelta(days=n))[-1] in "2459")
    page = _get(f"{web}/search", params={"as_of": str(later), "q": "아세트아미노펜"}).text
    assert f"{END} 정상 수집분 기준 (요청한 {later}는 반영되지 않은 날이라" in page
    before = _get(f"{web}/search", params={"as_of": "2026-10-01"})
    assert before.status_code == 404 and "정상 수집된 날이 없습니다" in before.text


# --- one registration, one day ---------------------------------------------------------------------


def test_a_registration_lists_its_events_before_and_after(project, web):
    with read_only_database(project.database) as conn:
        permit, field, before, after, day_id = conn.execute(
            "SELECT e.permit_no, c.field, c.before, c.after, e.day_id FROM events e JOIN event_changes c USING (event_id) "
            "WHERE e.event_type = 'CHANGED' AND NOT c.is_cosmetic AND c.field <> 'sites' AND e.permit_no IS NOT NULL "
            "AND c.before IS NOT NULL AND c.after IS NOT NULL ORDER BY e.event_id LIMIT 1"
        ).fetchone()
    spaced = permit.replace("-", " ")  # any spelling of the number finds it
    for key in (permit, spaced):
        r = _get(f"{web}/dmf/{quote(key, safe='')}")
        assert r.status_code == 200, r.text[:300]
        page = r.text
        box = page[page.index(f'<a href="/day/{history.to_date(day_id)}">') :]
        assert EVENT_LABEL_KO["CHANGED"] in box and FIELD_LABEL_KO[field] in box
        b, a = box.index(html.escape(before)), box.index(html.escape(after))
        assert b < a, "before comes before after"
        assert "변경 전" in page and "변경 후" in page and "목록에 있던 기간" in page
        assert "nedrug.mfds.go.kr" in page  # the official lookup (a search by ingredient, and it says so)
    missing = _get(f"{web}/dmf/{quote('99999999-1-A-1-01')}")
    assert missing.status_code == 404 and "등록을 찾을 수 없습니다" in missing.text


def test_a_registration_with_several_sites_gives_each_site_its_address(project, web):
    """MFDS writes the sites' addresses as one field, joined with commas that the addresses have inside them too; the
    page showed it so (「…, People's Republic of China,No. 78, Tianxin Road, …」). Now one numbered line a site, in the
    order of the numbered sites above it — and a single site's address as written."""
    with read_only_database(project.database) as conn:
        permit, sites = conn.execute(
            "SELECT r.dmf_key, v.sites FROM records r JOIN record_versions v ON v.version_id = r.current_version_id "
            "WHERE r.status = 'active' AND NOT r.is_synthetic AND v.sites_split_ok AND v.site_count > 1 "
            "AND v.address LIKE '%,%,%' ORDER BY r.record_id LIMIT 1"
        ).fetchone()
        single, address = conn.execute(
            "SELECT r.dmf_key, v.address FROM records r JOIN record_versions v ON v.version_id = r.current_version_id "
            "WHERE r.status = 'active' AND NOT r.is_synthetic AND v.site_count = 1 AND v.address LIKE '%,%' "
            "ORDER BY r.record_id LIMIT 1"
        ).fetchone()
    page = _get(f"{web}/dmf/{quote(permit, safe='')}").text
    row = page.split(f"<th>{FIELD_LABEL_KO['address']}</th>", 1)[1].split("</tr>", 1)[0]
    lines = [html.unescape(line) for line in re.findall(r"(?:<td>)?([^<]+)<br>", row)]
    assert lines == [f"{i}. {s['address']}" for i, s in enumerate(sites, 1)], row
    page = _get(f"{web}/dmf/{quote(single, safe='')}").text
    row = page.split(f"<th>{FIELD_LABEL_KO['address']}</th>", 1)[1].split("</tr>", 1)[0]
    assert html.unescape(row) == f"<td>{address}</td>"


def test_a_number_assignment_is_named_as_such_on_its_registration(project, web):
    """A registration that received its number shows that event under its own name, 「등록번호 부여」 — the name the
    workbook's 이벤트 column gives it and the headline counts apart from 변경 — not as a 「변경」."""
    with read_only_database(project.database) as conn:
        permit, day_id = conn.execute(
            "SELECT permit_no, day_id FROM events WHERE number_assigned ORDER BY event_id LIMIT 1"
        ).fetchone()
    day = history.to_date(day_id)
    page = _get(f"{web}/dmf/{quote(permit, safe='')}").text
    names = re.findall(
        rf'<a href="/day/{day}">{day}</a></strong>\s*<span[^>]*>[^<]*</span>\s*<strong>([^<]*)</strong>', page
    )
    assert names == [NUMBER_ASSIGNED_LABEL_KO], names
    # the listing it had before its number is linked in the team's words, never by the key the history gives it
    number = FIELD_LABEL_KO["permit_no"]
    line = re.search(rf'<div class="small">{number}: <a href="([^"]+)">([^<]+)</a> → <a href="[^"]+">([^<]+)</a>', page)
    assert line and line.group(2) == f"({number} 없음)" and line.group(3) == permit, line
    earlier = _get(f"{web}{line.group(1)}")
    assert earlier.status_code == 200 and NUMBER_ASSIGNED_LABEL_KO in earlier.text
    assert "SYN-" not in _visible(page) and "SYN-" not in _visible(earlier.text)


def test_a_registration_listed_without_a_number_is_shown_as_such_never_by_its_key(project, web):
    """The search box names what it searches, in the same words on every page; a registration the list shows without a
    number is 「(등록번호 없음)」 in the results and on its own page (the history's key for it stays in the link)."""
    with read_only_database(project.database) as conn:
        key, ingredient = conn.execute(
            "SELECT r.dmf_key, v.ingredient FROM records r JOIN record_versions v ON v.version_id = r.current_version_id "
            "WHERE r.is_synthetic AND r.status = 'active' ORDER BY r.record_id LIMIT 1"
        ).fetchone()
    hint = ", ".join(FIELD_LABEL_KO[f] for f in ("permit_no", "ingredient", "applicant", "manufacturer", "countries"))
    results = _get(f"{web}/search", params={"q": ingredient}).text
    assert results.count(f'placeholder="{hint}"') == 1  # the page's own box: the top bar leaves its box out here
    number = FIELD_LABEL_KO["permit_no"]
    assert f'<a href="/dmf/{quote(key, safe="")}">({number} 없음)</a>' in results
    page = _get(f"{web}/dmf/{quote(key, safe='')}").text
    assert f'<span class="muted">· ({number} 없음)</span>' in page
    assert page.count(f'placeholder="{hint}"') == 1  # the top bar's box, in the same words
    assert "SYN-" not in _visible(results) and "SYN-" not in _visible(page)


def test_the_rejected_day_shows_the_gate_its_observed_value_and_samples(project, web):
    with read_only_database(project.database) as conn:
        observed, threshold = conn.execute(
            "SELECT observed, threshold FROM gate_results WHERE day_id = ? AND NOT passed",
            [history.day_id(REJECTED)],
        ).fetchone()
    page = _get(f"{web}/day/{REJECTED}").text
    assert DayStatus.REJECTED.word_ko == "거부" and "거부" in page
    assert GATE_BY_NUMBER[2].title in page
    assert html.escape(observed) in page and html.escape(threshold) in page
    assert "표본" in page and "480" in page  # the short page: 480 of 500 rows
    # every count in a cell is written as the observed value writes it (9,205, not 9205)
    assert re.search(r"<td>\d{1,3}(,\d{3})+</td>", page) and not re.search(r"<td>\d{4,}</td>", page)
    assert f'<a href="/day/{REJECTED - timedelta(days=1)}">' in page  # its comparison base
    accepted = _get(f"{web}/day/{END}").text
    assert "무엇이 바뀌었나" in accepted and "습니다." in accepted  # the workbook's sentences
    calendar = _get(f"{web}/days").text
    assert f'class="rejected"><a href="/day/{REJECTED}"' in calendar
    assert f'class="accepted"><a href="/day/{END}"' in calendar
    assert f"{DayStatus.REJECTED.word_ko} 1일" in calendar and f"{DayStatus.ACCEPTED.word_ko} 8일" in calendar
    assert _get(f"{web}/day/2026-02-30").status_code == 400
    assert "날짜는 2026-11-30처럼 YYYY-MM-DD로 입력하십시오." in _get(f"{web}/day/abc").text  # not 「날짜은」


# --- files and who may look --------------------------------------------------------------------------


def test_the_workbook_downloads_byte_for_byte_and_nothing_outside(project, web):
    name = f"DMF_리포트_{END}.xlsx"
    r = _get(f"{web}/reports/{quote(name)}")
    assert r.status_code == 200 and r.content == (project.reports / name).read_bytes()
    port = int(web.rsplit(":", 1)[1])
    for path in (
        b"/reports/../pyproject.toml",
        b"/reports/%2e%2e/pyproject.toml",
        b"/reports/%2E%2E%2Fpyproject.toml",
        b"/reports/..%2fpyproject.toml",
        b"/reports/%252e%252e%252fpyproject.toml",
        b"/reports/..%5cpyproject.toml",
        b"/../pyproject.toml",
        b"/%2e%2e/pyproject.toml",
    ):
        status, data = raw_get(port, path)
        assert 400 <= status < 500, (path, data[:200])
        assert b"[project]" not in data and b"dmf-watch" not in data


def test_no_page_shows_a_local_path_or_the_service_key(project, web):
    with read_only_database(project.database) as conn:
        permit = conn.execute("SELECT permit_no FROM records WHERE permit_no IS NOT NULL LIMIT 1").fetchone()[0]
    for path in (
        "/",
        "/search?q=%EC%9D%B8%EB%8F%84",
        f"/dmf/{quote(permit)}",
        f"/day/{REJECTED}",
        f"/day/{END}",
        "/day/2026-10-01",
        "/days",
        "/reports/",
        "/no/such/page",
        "/search?page=x",
    ):
        r = _get(f"{web}{path}")
        assert r.status_code < 500, (path, r.status_code)
        for secret in (SERVICE_KEY, str(project.root), str(project.built_in), str(PROJECT_ROOT), "Traceback"):
            assert secret not in r.text, (path, secret)
        assert (
            r.headers["x-content-type-options"] == "nosniff"
            and "default-src 'none'" in r.headers["content-security-policy"]
        )


def test_a_page_asked_while_a_run_writes_says_busy_instead_of_hanging(project, web):
    """A run holds the database lock (here: the test holds it, as every writer does): an uncached page answers 503
    with the reason while the lock is still held — it does not wait for the run; once the lock is free the same page
    is there."""
    path = f"/day/{START + timedelta(days=2)}"
    with database_lock(lock_path(project.database), 10, "test: a run writing"):
        r = _get(f"{web}{path}")  # the lock is released only after this answer: a page waiting for it never answers
        assert r.status_code == 503 and "기록하는 중" in r.text and r.headers["retry-after"] == "5"
    assert _get(f"{web}{path}").status_code == 200


def test_another_address_needs_a_token_and_then_every_request_carries_it(project):
    refused = subprocess.run(
        [sys.executable, "-m", "dmf_assets", "web", "--host", "0.0.0.0", "--port", str(free_port())],
        env=project.env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=PROJECT_ROOT,
    )
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr.count("\n") == 1 and refused.stderr.startswith("dmf: ") and "DMF_WEB_TOKEN" in refused.stderr
    token = "team-token-0123456789abcdef"
    with _dmf_web({**project.env, "DMF_WEB_TOKEN": token}, "--host", "0.0.0.0") as base:
        assert _get(f"{base}/").status_code == 401
        assert _get(f"{base}/reports/{quote(f'DMF_리포트_{END}.xlsx')}").status_code == 401
        assert _get(f"{base}/", headers={"Authorization": "Bearer wrong-token-0123456789"}).status_code == 401
        assert _get(f"{base}/", headers={"Authorization": f"Bearer {token}"}).status_code == 200
        with httpx.Client(timeout=60) as browser:  # one visit with ?token=, then the cookie
            first = browser.get(f"{base}/search?q=%EC%9D%B8%EB%8F%84&token={token}")
            assert first.status_code == 303 and "token" not in first.headers["location"]
            assert first.headers["location"].startswith("/search?q=")
            assert "httponly" in first.headers["set-cookie"].lower()
            assert browser.get(f"{base}/search?q=%EC%9D%B8%EB%8F%84").status_code == 200
            assert token not in browser.get(f"{base}/").text
        assert _get(f"{base}/?token=wrong-token-0123456789").status_code == 401


# --- in a browser ----------------------------------------------------------------------------------


@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed (.ci/run installs it)")
def test_in_a_browser_a_query_a_registration_and_a_workbook(project, web, tmp_path):
    """Playwright driving Debian's chromium: type a query, open a registration from the results, download a
    workbook. Screenshots of the three pages go to tmp_path (or DMF_WEB_SCREENSHOTS when set)."""
    from playwright.sync_api import sync_playwright

    shots = Path(os.environ.get("DMF_WEB_SCREENSHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(locale="ko-KR", viewport={"width": 1280, "height": 900}, accept_downloads=True)
            page.goto(f"{web}/")
            assert page.title().startswith("오늘의 현황")
            page.screenshot(path=str(shots / "web_home.png"), full_page=True)
            assert page.locator("input[type=search]").count() == 1  # the page's own box, not the header's beside it
            box = page.locator("main form.search input[name=q]")
            box.fill("  아세트  아미노펜 ㈜ ")
            box.press("Enter")
            page.wait_for_url("**/search?**")
            assert "찾음" in page.locator("main p.sub").inner_text()
            assert page.locator("input[type=search]").count() == 1
            page.screenshot(path=str(shots / "web_search.png"), full_page=True)
            first = page.locator("main table a").first
            permit = first.inner_text()
            first.click()
            page.wait_for_url("**/dmf/**")
            assert permit in page.locator("h1").inner_text() and "현재 내용" in page.content()
            assert page.locator("header input[type=search]").count() == 1  # other pages keep the header's box
            page.screenshot(path=str(shots / "web_registration.png"), full_page=True)
            page.goto(f"{web}/reports/")
            name = f"DMF_리포트_{END}.xlsx"
            with page.expect_download() as download:
                page.locator(f"a:text-is('{name}')").click()
            saved = tmp_path / "downloaded.xlsx"
            download.value.save_as(saved)
            assert download.value.suggested_filename == name
            assert saved.read_bytes() == (project.reports / name).read_bytes()
        finally:
            browser.close()
    for shot in ("web_home.png", "web_search.png", "web_registration.png"):
        assert (shots / shot).stat().st_size > 20_000  # a page, not a blank
