"""The team's product list (config/products.csv): validation with file+line errors, and which events it marks."""

from __future__ import annotations

import pytest
from openpyxl import load_workbook

from dmf_assets.domain.text import match_key
from dmf_assets.errors import UserError
from dmf_assets.report.day_data import build_day_report
from dmf_assets.report.products import ProductsError, load_products, parse_products, product_hits
from dmf_assets.report.workbook import KPI_LABELS, SHEET_EVENTS, SHEET_SUMMARY, write_workbook
from dmf_assets.settings import PROJECT_ROOT, load_settings
from dmf_assets.storage.db import open_database
from dmf_assets_tests.histories import E_DAYS
from dmf_assets_tests.workbook_reader import rows_of

HEADER = "품목명,성분,DMF 등록번호,제조소\n"


def test_the_documented_example_file_is_valid():
    products = load_products(PROJECT_ROOT / "config" / "products.example.csv")
    assert [p.name for p in products] == ["예시정500밀리그램", "예시캡슐", "예시주사"]
    assert products[0].permit_no == "20050831-37-C-34-05(4)" and products[1].manufacturer_key


@pytest.mark.parametrize(
    "text, where, what",
    [
        ("", ":", "비어 있습니다"),
        ("품목명,성분,제조소\nA,B,C\n", ":1:", "DMF 등록번호 열이 없습니다"),
        (HEADER + ",메트포르민,,\n", ":2:", "품목명이 비어 있습니다"),
        (HEADER + "우리정,,,\n", ":2:", "DMF 등록번호나 성분 중 하나는"),
        (HEADER + "\n# 주석\n우리정,,ABC-1,\n", ":4:", "형식을 알 수 없습니다"),
        (HEADER + "우리정,,,Some Maker\n", ":2:", "제조소만으로는 찾지 않습니다"),
        (HEADER + "우리정,성분,,Maker, Co., Ltd.\n", ":2:", "큰따옴표로 감싸십시오"),
    ],
)
def test_errors_name_the_file_and_line(text, where, what):
    with pytest.raises(ProductsError) as exc:
        parse_products(text, "config/products.csv")
    message = str(exc.value)
    assert message.startswith("config/products.csv" + where) and what in message
    assert isinstance(exc.value, UserError)  # printed as a one-line `dmf:` error by the CLI


def test_file_errors(tmp_path):
    bad = tmp_path / "p.csv"
    bad.write_bytes((HEADER + "우리정,메트포르민,,\n").encode("cp949"))
    with pytest.raises(ProductsError, match=r"p.csv:1: UTF-8이 아닙니다"):
        load_products(bad)
    with pytest.raises(ProductsError, match="제품 목록 파일이 없습니다"):
        load_products(tmp_path / "none.csv")
    assert load_products(None) == () and load_products("") == ()
    ok = tmp_path / "ok.csv"
    ok.write_text(
        "\ufeff" + HEADER + '"우리정, 500mg", 메트포르민 염산염 ,,\n', encoding="utf-8"
    )  # Excel's BOM, quoted comma
    (p,) = load_products(ok)
    assert p.name == "우리정, 500mg" and p.ingredient == "메트포르민 염산염" and p.line == 2


def test_product_hits_by_number_or_ingredient_and_manufacturer():
    products = parse_products(
        HEADER + "A정,,20050831 - 37 - c - 34 - 05 (4),\nB캡슐,아시클로버,,Zhejiang Charioteer\nC주,반코마이신,,\n",
        "t.csv",
    )
    ev = lambda **kw: {"permit_no": None, "ingredient_key": None, "manufacturer_key": None, **kw}  # noqa: E731 - a one-line helper, read where it is used
    events = [
        ev(permit_no="20050831-37-C-34-05(4)"),  # by number (any spelling in the file)
        ev(
            permit_no="X",
            ingredient_key=match_key("아시클로버"),
            manufacturer_key=match_key("ZHEJIANG CHARIOTEER PHARMACEUTICAL CO., LTD.", "company"),
        ),
        ev(permit_no="Y", ingredient_key=match_key("아시클로버"), manufacturer_key=match_key("Other Maker", "company")),
        # the manufacturer was replaced: the base version still names ours
        ev(
            permit_no="Z",
            ingredient_key=match_key("아시클로버"),
            manufacturer_key=match_key("New Maker", "company"),
            base_ingredient_key=match_key("아시클로버"),
            base_manufacturer_key=match_key("Zhejiang Charioteer Co., Ltd.", "company"),
        ),
        ev(permit_no="W", ingredient_key=match_key("반코마이신염산염")),  # ingredient alone, salt name included
        ev(permit_no="V", ingredient_key=match_key("세파클러")),
    ]
    hits = product_hits(events, products)
    assert [len(h) for h in hits] == [1, 1, 0, 1, 1, 0]
    assert hits[0] == ("A정 (20050831-37-C-34-05(4))",) and hits[4][0].startswith("C주")


def test_workbook_marks_and_counts_events_of_our_products(edited, tmp_path):
    csv = tmp_path / "products.csv"
    csv.write_text(HEADER + f"우리정,,{edited.twice},\n", encoding="utf-8")
    base = load_settings()
    settings = base.model_copy(update={"products": base.products.model_copy(update={"file": str(csv)})})
    with open_database(edited.database) as conn:
        report = build_day_report(conn, E_DAYS[1], settings)
    wb = load_workbook(write_workbook(report, tmp_path / "out").path)
    summary = wb[SHEET_SUMMARY]
    assert next(r[1].value for r in summary.iter_rows(max_col=2) if r[0].value == KPI_LABELS["product_hits"]) == 1
    assert "자사 제품 해당 1건" in summary["A1"].value
    first = next(
        r
        for r in summary.iter_rows(min_row=4, max_col=2)
        if isinstance(r[0].value, str) and r[0].value.endswith("· 자사")
    )
    assert edited.twice in first[1].value and first[1].value.endswith(
        f"자사 제품 우리정 ({edited.twice})에 해당합니다."
    )
    marked = [r for r in rows_of(wb[SHEET_EVENTS]) if r["자사 영향"]]
    assert [r["관리 키"] for r in marked] == [edited.twice]
    # a broken list never stops the daily workbook: it is a banner warning instead
    csv.write_text(HEADER + "우리정,,,\n", encoding="utf-8")
    with open_database(edited.database) as conn:
        broken = build_day_report(conn, E_DAYS[1], settings)
    assert broken.summary.product_hits == 0 and any(
        "제품 목록 오류" in w and "products.csv:2" in w for w in broken.warnings
    )
