"""Issue 31: an event is told in Korean an analyst forwards as it is, and a change has one wording everywhere.

The values are the real registry's (the MFDS rows in fixtures/real, normalized as the pipeline does); each
sentence is rendered and the whole string asserted: a site added reads 「…에 중국 제조소 X가 추가되었습니다」 (not
「제조소(추가 X (중국))와 제조국(인도 → 인도,중국)이 바뀌었습니다」), no bracket nests in another, the particle
after a bracket follows the word before it, a country is named once, a registration without a number is
named by its applicant, ingredient and manufacturer (never 「키 SYN-…」).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import date

import pytest

from dmf_assets.domain.model import DayStatus
from dmf_assets.domain.snapshot import build_snapshot
from dmf_assets.report.model import EventRow, FieldChangeRow
from dmf_assets.report.sentences import change_line, change_lines, event_sentence
from dmf_assets.report.summary import summarize

OPEN = ("이(가)", "을(를)", "과(와)", "은(는)", "(으)로", "((", "))", "None", "SYN-")


@pytest.fixture(scope="module")
def registry(real_items) -> dict[str, dict]:
    frame = build_snapshot(real_items)
    return {r["permit_no"]: r for r in frame.iter_rows(named=True) if r["permit_no"]}


def _event(row: dict, event_type: str = "CHANGED", severity: str = "CRITICAL", **kw) -> EventRow:
    return EventRow(
        event_type=event_type,
        severity=severity,
        dmf_key=row["dmf_key"],
        permit_no=row["permit_no"],
        base_dmf_key=row["dmf_key"],
        ingredient=row["ingredient"],
        ingredient_base=row["ingredient_base"],
        applicant=row["applicant"],
        bizrno=row["bizrno"],
        manufacturer=row["manufacturer"],
        address=row["address"],
        countries=row["countries"],
        issue_date=row["issue_date"],
        target_class=row["target_class"],
        **kw,
    )


def _change(row: dict, field: str, before: str | None, after: str | None, severity: str = "CRITICAL") -> FieldChangeRow:
    return FieldChangeRow(
        row["dmf_key"], row["permit_no"], row["ingredient"], row["applicant"], field, before, after, False, severity
    )


def _readable(text: str) -> str:
    assert text.endswith("습니다.") and not any(bad in text for bad in OPEN), text
    return text


def test_a_site_added_is_one_clause_in_its_country(registry):
    """「(주)하이플의 아시클로버 등록 …에 중국 제조소 X가 추가되었습니다.」 — the manufacturer, address and country
    values the site row stands for are not told again (the country list only repeats 중국)."""
    row = registry["20050831-33-A-81-08(11)"]  # two sites in 중국,중국
    site = "Zhejiang Huahai Pharmaceutical Co., Ltd. (중국)"
    ev = _event(
        row,
        changes=(
            _change(row, "manufacturer", "Zhejiang Charioteer Pharmaceutical Co., Ltd.", row["manufacturer"]),
            _change(row, "countries", "중국", row["countries"]),
            _change(row, "sites", None, site),
        ),
    )
    assert _readable(event_sentence(ev)) == (
        "(주)하이플의 아시클로버 등록 20050831-33-A-81-08(11)에 중국 제조소 Zhejiang Huahai Pharmaceutical Co., "
        "Ltd.가 추가되었습니다."
    )
    # the same change as a line: what 변경 이벤트, 이력, dmf history and dmf diff print
    assert change_lines(ev.changes) == [f"제조소 추가: {site}"]


def test_removed_renamed_and_moved_sites(registry):
    row = registry["20050831-33-A-81-08(11)"]
    name = "Zhejiang Charioteer Pharmaceutical Co., Ltd."
    removed = _event(row, changes=(_change(row, "sites", f"[출발물질제조소] {name} (중국)", None),))
    assert _readable(event_sentence(removed)).endswith(f"에서 중국 제조소 {name}(출발물질제조소)가 삭제되었습니다.")
    renamed = _event(row, changes=(_change(row, "sites", f"{name} (중국)", "Charioteer Pharma (인도)"),))
    assert _readable(event_sentence(renamed)).endswith(
        f"의 중국 제조소 {name}가 인도 제조소 Charioteer Pharma로 바뀌었습니다."
    )
    moved = _event(row, changes=(_change(row, "sites", f"{name} (중국)", f"{name} (중국)"),))
    assert _readable(event_sentence(moved)).endswith(f"의 중국 제조소 {name}의 소재지가 바뀌었습니다.")


def test_values_without_nested_brackets_and_particles_of_their_reading(registry):
    row = registry["20211209-127-H-397-43(1)"]  # 에스오메프라졸마그네슘삼수화물(미분화)
    filled = _event(row, severity="MEDIUM", changes=(_change(row, "issue_date", None, "2026-12-04", "MEDIUM"),))
    assert _readable(event_sentence(filled)).endswith(
        "등록 20211209-127-H-397-43(1)의 발급일자 2026-12-04가 새로 기재되었습니다."
    )  # not 「발급일자((없음) → 2026-12-04)가」
    emptied = _event(row, severity="MEDIUM", changes=(_change(row, "issue_date", "2022-01-21", None, "MEDIUM"),))
    assert _readable(event_sentence(emptied)).endswith("의 발급일자 2022-01-21이 지워졌습니다.")
    both = _event(
        row,
        severity="HIGH",
        changes=(
            _change(row, "applicant", "(주)하이플", "대신무약(주)", "HIGH"),
            _change(row, "target_class", "별표1", "기타", "MEDIUM"),
        ),
    )
    assert _readable(event_sentence(both)).endswith(
        "의 신청인이 (주)하이플에서 대신무약(주)로, 대상의약품이 별표1에서 기타로 바뀌었습니다."
    )
    # the particle after a bracketed aside follows the word before it: 삼수화물(미분화)을, not 를
    new = _event(row, event_type="NEW", severity="INFO")
    assert _readable(event_sentence(new)) == (
        "(주)하이플이 에스오메프라졸마그네슘삼수화물(미분화)(20211209-127-H-397-43(1) · 제조소 Lee Pharma Limited, "
        "인도)을 신규 등록했습니다."
    )


def test_a_registration_without_a_number_is_named_by_who_what_and_where(registry):
    row = registry["20050831-33-A-81-08(11)"]
    unnumbered = replace(_event(row), dmf_key="SYN-ac21adbab5e7", permit_no=None, base_dmf_key="SYN-ac21adbab5e7")
    ev = replace(unnumbered, changes=(_change(row, "countries", "중국,중국", "중국,인도"),))
    text = _readable(event_sentence(ev))
    assert text == (
        "(주)하이플의 아시클로버 등록(등록번호 없음 · 제조소 Zhejiang Charioteer Pharmaceutical Co.…, 중국)의 "
        "제조국이 중국에서 중국·인도로 바뀌었습니다."
    )  # 「중국,중국」 is named once
    new = replace(unnumbered, event_type="NEW", severity="INFO")
    assert "등록번호 없음 · 제조소 Zhejiang" in _readable(event_sentence(new))


def test_one_wording_of_a_change_for_every_table_and_command():
    assert (
        change_line("sites", None, "Liaoning Pharma Co., Ltd. (중국)")
        == "제조소 추가: Liaoning Pharma Co., Ltd. (중국)"
    )
    assert change_line("sites", "A (인도)", None) == "제조소 삭제: A (인도)"
    assert change_line("countries", "인도,인도", "인도,중국") == "제조국: 인도 → 인도, 중국"
    assert change_line("issue_date", None, "2026-12-04") == "발급일자: (없음) → 2026-12-04"


def test_the_summary_counts_each_event_once_in_one_kind(registry):
    row = registry["20050831-33-A-81-08(11)"]
    assigned = _event(
        row, severity="INFO", number_assigned=True, changes=(_change(row, "permit_no", None, row["permit_no"], "INFO"),)
    )
    renumbered = _event(
        row,
        severity="MEDIUM",
        number_changed=True,
        changes=(_change(row, "permit_no", "20050831-33-A-81-08(1)", row["permit_no"], "MEDIUM"),),
    )
    gone = _event(row, event_type="WITHDRAWN")
    site = _event(row, changes=(_change(row, "sites", None, "X (중국)"),))
    s = summarize(date(2026, 12, 4), DayStatus.ACCEPTED, (assigned, renumbered, gone, site))
    assert (s.changed, s.number_assigned, s.number_changed, s.withdrawn, s.headline_events) == (1, 1, 1, 1, 4)
    assert s.by_severity == {"CRITICAL": 2, "MEDIUM": 1, "INFO": 1}
    assert s.severity_text == "심각 2 · 높음 0 · 보통 1 · 정보 1"
    assert s.field_rows == {"NUMBER_ASSIGNED": 1, "NUMBER_CHANGED": 1, "SUBSTANTIVE": 1}
    assert s.counts_text == "신규 0 · 변경 1 · 삭제 1 · 번호 부여 1 · 번호 변경 1"
    assert s.manufacturers == 1 and s.applicants == 1  # one registration's two sites of one name
