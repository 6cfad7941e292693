"""Day reports built in memory for the workbook tests (test_workbook, test_workbook_render,
test_workbook_retention): every event type, severity and flag, hostile source text, the four kinds of day."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta

from dmf_assets.domain.model import COMPARED_FIELDS, DayStatus
from dmf_assets.report.model import AggregateRow, DayReport, EventRow, FieldChangeRow, GateRow, HistoryPoint, QualityRow
from dmf_assets.report.summary import DaySummary, summarize

DAY = date(2026, 10, 8)
BASE = date(2026, 10, 7)

BIG_TEXT = ("가나다라마바사 ABC 💊 " * 8000)[:100_000]  # ~100 k characters, emoji included
HOSTILE: tuple[str, ...] = (
    "=1+1",
    "+SUM(A1)",
    "-2",
    "@x",
    "\t=x",
    "\r=cr",
    '"큰따옴표" \'작은따옴표\' ""',
    "#N/A",
    "ctrl\x00\x01\x08\x0b\x0c\x1f end",
    "replacement \ufffd char",
    "\u200f\u202e RTL mark אבג",
    "emoji 💊🧪👩‍🔬",
    "_x000D_ literal escape",
    "line1\nline2",
    " leading and trailing ",
    BIG_TEXT,
)


def event_row(
    kind: str,
    permit: str,
    ingredient: str,
    applicant: str,
    *,
    severity: str = "INFO",
    manufacturer: str = "Zhejiang Huahai Pharmaceutical Co., Ltd.",
    country: str = "중국",
    changes: tuple[FieldChangeRow, ...] = (),
    **flags,
) -> EventRow:
    """One event of 2026-11-26 (the mail's and 요약's sentences are built from these): its changed fields are those
    of `changes`; `flags` are EventRow's (watchlist_hit=True, is_reappearance=True, …)."""
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
        manufacturer,
        "주소",
        country,
        "2026-11-26",
        "별표1",
        changed_fields=tuple(c.field for c in changes),
        changes=tuple(changes),
        **flags,
    )


def _change(
    ev_key: str, permit: str | None, ingr: str | None, appl: str | None, field: str, before, after, cosmetic=False
):
    severity = "COSMETIC" if cosmetic else COMPARED_FIELDS[field].value
    return FieldChangeRow(
        dmf_key=ev_key,
        permit_no=permit,
        ingredient=ingr,
        applicant=appl,
        field=field,
        before=before,
        after=after,
        is_cosmetic=cosmetic,
        severity=severity,
    )


def _changed(base: dict, severity: str, *changes: FieldChangeRow, **flags) -> EventRow:
    """A CHANGED event: its substantive and cosmetic fields are those of its changes."""
    return EventRow(
        event_type="CHANGED",
        severity=severity,
        changed_fields=tuple(c.field for c in changes if not c.is_cosmetic),
        cosmetic_fields=tuple(c.field for c in changes if c.is_cosmetic),
        changes=changes,
        **{**base, **flags},
    )


def make_events(n: int = 100, *, hostile: bool = True, seed: int = 7) -> tuple[EventRow, ...]:
    """`n` events covering every type, severity and flag; hostile source text in some of them."""
    rng = random.Random(seed)
    events: list[EventRow] = []
    hostile_iter = iter(HOSTILE if hostile else ())
    for i in range(n):
        kind = i % 10
        key = f"2026{(i * 37) % 10000:04d}-{i % 300}-{'ABCDEFGHIJK'[i % 11]}-{i}-0{i % 9}"
        permit: str | None = key
        ingr = f"성분{rng.randint(1, 900)}염산염"
        appl = f"(주)테스트제약{i % 40}"
        manu = f"Maker {i} Co., Ltd.,Second Plant {i}"
        addr = f"{i} Industrial Area, Hyderabad, Telangana, India"
        countries = "인도,중국" if i % 3 else "인도"
        issue = (date(2010, 1, 1) + timedelta(days=i * 31)).isoformat()
        text = next(hostile_iter, None) if kind != 8 else None  # kind 8 is cosmetic (not a headline)
        if text is not None:  # rotate hostile text over the source-text fields
            slot = i % 4
            if slot == 0:
                ingr = text
            elif slot == 1:
                appl = text
            elif slot == 2:
                manu = text
            else:
                addr = text
        base = {
            "dmf_key": key,
            "permit_no": permit,
            "base_dmf_key": None,
            "ingredient": ingr,
            "ingredient_base": (ingr or "")[:20] or None,
            "applicant": appl,
            "bizrno": f"{1000000000 + i * 7919}",
            "manufacturer": manu,
            "address": addr,
            "countries": countries,
            "issue_date": issue,
            "target_class": ("별표1", "별표1의2", "신물질", "기타", "인태반 유래")[i % 5],
        }

        if kind in (0, 1):
            ev = EventRow(event_type="NEW", severity="INFO", **base)
            if i % 20 == 1:
                ev = replace(ev, severity="HIGH", is_reappearance=True)
        elif kind == 2:
            ch = _change(key, permit, ingr, appl, "manufacturer", manu + " (old)", manu)
            ev = _changed(base, "CRITICAL", ch, _change(key, permit, ingr, appl, "countries", "인도", countries))
        elif kind == 3:
            ch = _change(key, permit, ingr, appl, "address", "Old address " + str(i), addr)
            cos = _change(key, permit, ingr, appl, "applicant", appl.replace("(주)", "주식회사 "), appl, cosmetic=True)
            ev = _changed(base, "CRITICAL", ch, cos)
        elif kind == 4:
            ch = _change(key, permit, ingr, appl, "bizrno", "1111111111", base["bizrno"])
            ev = _changed(base, "HIGH", ch, is_transfer=True)
        elif kind == 5:
            ch = _change(key, permit, ingr, appl, "applicant", "(주)옛이름", appl)
            reasons = ("신청인: 테스트제약", "성분: 성분")
            ev = _changed(base, "HIGH", ch, is_rename=True, watchlist_hit=True, watch_reasons=reasons)
        elif kind == 6:
            ev = _changed(base, "MEDIUM", _change(key, permit, ingr, appl, "issue_date", "2010-01-01", issue))
        elif kind == 7:
            ch = _change(key, permit, ingr, appl, "permit_no", None, permit)
            ev = _changed(base, "INFO", ch, number_assigned=True, base_dmf_key=f"SYN-{i:08x}")
        elif kind == 8:
            cos = _change(key, permit, ingr, appl, "manufacturer", manu.replace(",", ", "), manu, cosmetic=True)
            ev = _changed(base, "COSMETIC", cos, is_cosmetic=True)
        else:
            ev = EventRow(event_type="WITHDRAWN", severity="CRITICAL", **base)
        events.append(ev)
    return tuple(events)


def summary_for(events: tuple[EventRow, ...], registry_size: int, day: date = DAY) -> DaySummary:
    """An accepted day's figures, counted from its events as the product counts them."""
    return summarize(
        day,
        DayStatus.ACCEPTED,
        events,
        comparison_base=day - timedelta(days=1),
        registry_size=registry_size,
        base_registry_size=registry_size,
    )


def aggregates(registry: int, n: int, prefix: str, seed: int) -> tuple[AggregateRow, ...]:
    rng = random.Random(seed)
    weights = [1 / (i + 1) ** 0.9 for i in range(n)]
    total = sum(weights)
    return tuple(
        AggregateRow(
            label=f"{prefix}{i:04d}",
            registrations=max(1, round(registry * w / total)),
            manufacturers=rng.randint(1, 40),
            applicants=rng.randint(1, 30),
            countries=rng.randint(1, 8),
            ingredients=rng.randint(1, 200),
        )
        for i, w in enumerate(weights)
    )


def history(day: date, n: int = 90, rejected_days: tuple[int, ...] = (12,)) -> tuple[HistoryPoint, ...]:
    points = []
    for k in range(n, 0, -1):
        d = day - timedelta(days=k)
        status = "rejected" if k in rejected_days else "accepted"
        points.append(
            HistoryPoint(
                day=d,
                status=status,
                registry_size=9100 + (n - k) if status != "rejected" else None,
                new=(k * 7) % 9,
                changed=(k * 3) % 4,
                withdrawn=1 if k % 17 == 0 else 0,
                cosmetic=k % 3,
            )
        )
    return tuple(points)


def gates(failed: int | None = None) -> tuple[GateRow, ...]:
    names = [
        ("transport", "전송"),
        ("completeness", "완전성"),
        ("drop", "감소율"),
        ("nulls", "결측"),
        ("duplicates", "중복"),
        ("churn", "변동률"),
    ]
    rows = []
    for i, (name, label) in enumerate(names, 1):
        if failed is None or i < failed:
            passed: bool | None = True
        elif i == failed:
            passed = False
        else:
            passed = None
        observed = "8,940 / 9,203 (97.1 %)" if (failed == i == 2) else "정상"
        rows.append(GateRow(i, name, label, passed, observed, "= totalCount" if i == 2 else "≤ 5 %", "테스트 설명"))
    return tuple(rows)


QUALITY = (
    QualityRow("row_count", "행 수 범위", "9,203", "8,000–12,000", True),
    QualityRow("permit_parse", "등록번호 해석률", "99.2 %", "≥ 98 %", True),
    QualityRow("unresolved_countries", "미해결 국가명", "2", "0", False, "말레이지아, 체코공화국"),
)


def accepted_report(n_events: int = 100, *, registry: int = 9_203, hostile: bool = True, day: date = DAY) -> DayReport:
    events = make_events(n_events, hostile=hostile)
    return DayReport.of(
        summary_for(events, registry, day),
        "6개 게이트 모두 통과",
        events=events,
        history=history(day),
        by_ingredient=aggregates(registry, 3000, "성분", 1),
        by_applicant=aggregates(registry, 450, "업체", 2),
        by_country=aggregates(registry, 50, "국가", 3),
        gates=gates(),
        quality=QUALITY,
        watchlist={"ingredients": ("메트포르민",), "applicants": ("테스트제약",), "manufacturers": (), "countries": ()},
        run_info={"실행 ID": "run-abc123", "수집 페이지": "19", "소요 시간": "41.2 s"},
        generated_at=datetime(2026, 10, 7, 21, 12, 5, tzinfo=UTC),
    )


REJECT_REASON = "완전성 게이트 실패: 8,940 / 9,203행 수신 (97.1 %)"


def rejected_report(day: date = DAY, base: date = BASE, base_size: int = 9_167) -> DayReport:
    summary = summarize(
        day,
        DayStatus.REJECTED,
        (),
        comparison_base=base,
        base_registry_size=base_size,
        received=8_940,
        total_count=9_203,
        rejected_gate=2,
    )
    return DayReport.of(
        summary,
        REJECT_REASON,
        history=history(day),
        by_ingredient=aggregates(base_size, 300, "성분", 1),
        by_applicant=aggregates(base_size, 45, "업체", 2),
        by_country=aggregates(base_size, 10, "국가", 3),
        gates=gates(failed=2),
        quality=QUALITY,
        generated_at=datetime(2026, 10, 8, 6, 3),
    )


def baseline_report(day: date = DAY) -> DayReport:
    return DayReport.of(
        summarize(day, DayStatus.BASELINE, (), registry_size=9_167),
        "최초 정상 수집일 — 비교 대상 없음",
        by_ingredient=aggregates(9_167, 100, "성분", 1),
        by_applicant=aggregates(9_167, 40, "업체", 2),
        by_country=aggregates(9_167, 10, "국가", 3),
        gates=gates(),
    )


def unchanged_report(day: date = DAY, base: date = BASE) -> DayReport:
    return DayReport.of(
        summarize(day, DayStatus.UNCHANGED, (), comparison_base=base, registry_size=9_167, base_registry_size=9_167),
        "변경 없음",
        history=history(day, n=30),
        by_ingredient=aggregates(9_167, 100, "성분", 1),
        by_applicant=aggregates(9_167, 40, "업체", 2),
        by_country=aggregates(9_167, 10, "국가", 3),
        gates=gates(),
    )
