"""메타, the last sheet of the daily and of the period workbook: the source and its attribution, the report's facts,
and what every severity, event, flag and compared field means."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import date, datetime

from openpyxl.styles import Alignment
from openpyxl.worksheet.worksheet import Worksheet

from dmf_assets.domain.gates import GATES
from dmf_assets.domain.model import (
    COMPARED_FIELDS,
    EVENT_LABEL_KO,
    FIELD_LABEL_KO,
    SEVERITY_LABEL_KO,
    WITHDRAWN_FIRST_MENTION_KO,
    Severity,
    field_labels,
)
from dmf_assets.report.cells import put_date, put_datetime
from dmf_assets.report.columns import columns
from dmf_assets.report.model import SHEET_META, DayReport
from dmf_assets.report.nedrug import NEDRUG_DMF_SEARCH_PATH, NEDRUG_LINK_TEXT
from dmf_assets.report.rows import FLAG_LABELS, FLAGS
from dmf_assets.report.sentences import (
    CHANGED_DEFINITION,
    LOCAL_CONFIG_FILE,
    WITHDRAWN_DEFINITION,
    products_hint,
)
from dmf_assets.report.tables import ATTRIBUTION, TableSheet, colours


def fields_of(severity: Severity) -> str:
    """「제조소명·제조소 소재지·제조국」: the compared fields a substantive change of which is `severity`."""
    return field_labels(*(f for f, s in COMPARED_FIELDS.items() if s is severity and f != "permit_no"))


SEVERITY_DEFINITIONS: dict[str, str] = {
    "CRITICAL": f"{fields_of(Severity.CRITICAL)}의 실질 변경, {WITHDRAWN_FIRST_MENTION_KO}",
    "HIGH": f"{fields_of(Severity.HIGH)} 변경(양도양수 포함), 목록에서 삭제된 뒤 재등장한 신규, 관심목록 해당(최소 높음)",
    "MEDIUM": f"{fields_of(Severity.MEDIUM)} 변경, 등록번호 변경",
    "INFO": "신규 등록, 등록번호 부여",
    "COSMETIC": "띄어쓰기·문장부호·대소문자·법인격 표기((주), 주식회사 등)만 달라진 변경 — 헤드라인 건수에서 제외하고 '필드 변경' 시트에 회색으로 표시",
}
EVENT_DEFINITIONS: dict[str, str] = {
    "NEW": "오늘 목록에만 있는 등록. 과거에 목록에서 삭제됐다 다시 나타나면 '재등장'(높음)",
    "CHANGED": "비교 기준일과 오늘 모두 있으나 내용이 달라진 등록. 가장 심각한 항목의 심각도를 따름. 건수의 '변경'은 "
    + CHANGED_DEFINITION
    + "; 번호 부여와 번호 변경은 각각의 건수로 따로 셈",
    "WITHDRAWN": WITHDRAWN_DEFINITION + " (완전성이 증명된 수집분에서만 판정)",
}
NOTES: tuple[str, ...] = (
    "출처 API는 현재 상태만 제공하므로, 변경은 매일 전체 목록을 받아 직전 정상 수집일과 비교해 판정합니다.",
    f"수용 게이트 {len(GATES)}개({'·'.join(g.label_ko for g in GATES)})를 모두 통과한 수집분만 반영합니다. 실패한 날은 비교 기준이 그대로이며, 다음 정상 수집일의 비교가 그 사이 변경을 모두 포함합니다.",
    "표기 변경(COSMETIC)은 헤드라인 건수(신규·변경·삭제)에 포함하지 않습니다.",
    "제조국은 제조소별로 하나씩 기록되므로 제조국별 집계의 합은 등록 수보다 클 수 있습니다.",
    f"의약품안전나라 '{NEDRUG_LINK_TEXT}' 링크는 등록 한 건이 아니라 원료의약품 등록 현황에서 그 등록의 성분명을 검색합니다 — 등록번호로 바로 여는 공개 주소를 확인할 수 없어서입니다. 결과 목록에서 등록번호를 찾으십시오.",
    "원문 텍스트는 모두 문자열로 저장되며 수식으로 해석되지 않습니다. XML에 쓸 수 없는 제어 문자는 U+FFFD(�)로 바꾸고, 32,767자를 넘는 값은 잘라 '…(잘림)'으로 표시합니다.",
)
#: (word, definition) of the two number events, counted apart from 변경
NUMBER_DEFINITIONS = (FLAGS["number_assigned"], FLAGS["number_changed"])
META_COLUMNS = columns({"kind": 14, "item": 30, "value": 100})
_SEVERITY_AT_2 = colours(severity=2)


def _meta_hook(ws: Worksheet, r: int, row: dict) -> None:
    _SEVERITY_AT_2(ws, r, row)
    value = row["value"]
    if isinstance(value, datetime):  # dates and times as dates, in the text column
        put_datetime(ws, r, 3, value).alignment = Alignment(horizontal="left", vertical="top")
    elif isinstance(value, date):
        put_date(ws, r, 3, value).alignment = Alignment(horizontal="left", vertical="top")


def meta_rows(group: str, items: Iterable[tuple[str, object]]) -> list[dict]:
    """메타's rows of one group: (item, value) pairs."""
    return [{"kind": group, "item": item, "value": value} for item, value in items]


def meta_sheet(title: str, rows: Sequence[dict]) -> TableSheet:
    """메타 (the daily and the period workbook): the attribution first, then `rows`, then the notes."""
    notes = meta_rows("참고", ((f"참고 {i}", text) for i, text in enumerate(NOTES, 1)))
    rows = [*meta_rows("출처", [("출처 표시", ATTRIBUTION)]), *rows, *notes]
    return TableSheet(SHEET_META, title, ATTRIBUTION, META_COLUMNS, rows, _meta_hook, empty=None)


def day_meta_sheet(report: DayReport) -> TableSheet:
    """The daily workbook's 메타: the source, the report's facts, the run, and every definition."""
    service = "식품의약품안전처_원료의약품등록(DMF)현황 (data.go.kr/data/15057075), 오퍼레이션 getMdcDmfList01"
    nedrug = (
        f"{report.source_url.rstrip('/')}{NEDRUG_DMF_SEARCH_PATH} — 각 시트의 '{NEDRUG_LINK_TEXT}' 링크: 등록의 "
        "성분명으로 검색한 목록 (등록 건별 주소가 아님, 아래 참고)"
    )
    rows = meta_rows("출처", [("데이터 서비스", service), ("의약품안전나라", nedrug)])
    rows += meta_rows(
        "보고서",
        [
            ("보고일", report.day),
            ("상태", f"{report.status.label_ko} ({report.status.label_en})"),
            ("상태 설명", report.status_reason),
            ("비교 기준일", report.comparison_base or "없음 (첫 수집일)"),
            ("마지막 정상 수집일", report.last_accepted_day or "없음"),
            ("생성 시각 (KST)", report.generated_at),
            ("생성 프로그램", "DMF Watch"),
        ],
    )
    rows += meta_rows("실행 정보", report.run_info.items())
    rows += [
        {"kind": "심각도", "item": f"{SEVERITY_LABEL_KO[s]} ({s})", "value": text, "_severity_code": s}
        for s, text in SEVERITY_DEFINITIONS.items()
    ]
    events = [(f"{EVENT_LABEL_KO[t]} ({t})", text) for t, text in EVENT_DEFINITIONS.items()]
    rows += meta_rows("이벤트", [*events, *NUMBER_DEFINITIONS])
    rows += meta_rows("표시", FLAGS.values())
    rows += meta_rows(
        "항목", ((f"{FIELD_LABEL_KO[name]} ({name})", _field_definition(name)) for name in COMPARED_FIELDS)
    )
    watch = [(kind, ", ".join(pats)) for kind, pats in report.watchlist.items() if pats]
    setup = (
        f"관심목록 없음 — {LOCAL_CONFIG_FILE}의 [watchlist]에 성분·업체·제조소·국가를 적으면 해당 이벤트를 "
        "'높음' 이상으로 올립니다"
    )
    rows += meta_rows("관심목록", watch or [("설정", setup)])
    if not report.products_configured:  # setup is the administrator's: never on an analyst's sheet
        rows += meta_rows("자사 제품", [("설정 (관리자)", products_hint())])
    return meta_sheet("메타 정보 · 출처 · 정의", rows)


def _field_definition(name: str) -> str:
    if name == "permit_no":
        return f"비교 항목 — 번호 없이 공개됐던 등록이 번호를 받을 때만 바뀜: '{FLAG_LABELS['number_assigned']}' (실질 변경 아님)"
    return f"비교 항목 — 실질 변경 시 심각도 {SEVERITY_LABEL_KO[COMPARED_FIELDS[name].value]}"
