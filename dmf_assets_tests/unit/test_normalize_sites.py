"""Per-site split of manufacturer / address lists (docs/DOMAIN.md §2.2, §3) and ingredient base names."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dmf_assets.domain.ingredients import ingredient_base
from dmf_assets.domain.normalize import items_to_frame, normalize_items
from dmf_assets.domain.sites import Site, sites_as_dicts, split_sites

#: every multi-site fixture row: permit number -> (site names, roles, countries)
MULTI_SITE_ROWS = {
    "20050831-33-A-81-08(11)": (
        ["Zhejiang Charioteer Pharmaceutical Co., Ltd.", "Zhejiang Charioteer Pharmaceutical Co., Ltd."],
        [None, None],
        ["중국", "중국"],
    ),
    "20200722-93-E-160-09": (
        ["Avik Pharmaceutical Limited", "Hunan Yuxin Pharmaceutical Co. Ltd."],
        [None, "베타메타손 제조소"],
        ["인도", "중국"],
    ),
    "20200813-150-I-575-12": (
        ["North China Pharmaceutical Group Semisyntech Co., Ltd", "Jiangxi Fushine Pharmaceutical Co., Ltd"],
        [None, "'설박탐' 제조소"],
        ["중국", "중국"],
    ),
    "수30-4-ND": (
        ["Vasudha Pharma Chem Limited", "Vasudha Pharma Chem Limited", "Vasudha Pharma Chem Limited Unit-II"],
        [None, "데스로라타딘 제조원", "데스로라타딘 제조원"],
        ["인도", "인도", "인도"],
    ),
    "20210626-211-J-1002": (
        ["Avik Pharmaceutical Limited", "Tianjin Tianyao Pharmaceuticals Co., Ltd"],
        [None, None],
        ["인도", "중국"],
    ),
    "20230504-210-J-1486": (
        ["Sichuan Renan Pharmaceutical Co., Ltd.", "Shenyang Dongrui Fine Chemical Co, Ltd."],
        [None, None],
        ["중국", "중국"],
    ),
    "20230512-210-J-1491": (
        ["Sichuan Renan Pharmaceutical Co, Ltd", "North China Pharmaceutical Group Semisyntech Co., Ltd"],
        [None, "출발물질제조소"],
        ["중국", "중국"],
    ),
    "20241015-209-J-1903(1)": (
        ["Sicor Societa' Italiana Corticosteroidi S.R.L", "Valdepharm"],
        [None, None],
        ["이탈리아", "프랑스"],
    ),
}

#: the address each multi-site row's *last* site starts with (the cut is at the right comma)
LAST_ADDRESS_STARTS = {
    "20050831-33-A-81-08(11)": "Fengxi West Road No. 5",
    "20200722-93-E-160-09": "Longxutang, Shuangqing District",
    "20200813-150-I-575-12": "No.2 Yuli Industrial Zone",
    "수30-4-ND": "Unit-II, Plot No.79",
    "20210626-211-J-1002": "No 19 Xinye 9th",
    "20230504-210-J-1486": "No.20, Shenxisi Dong Road",
    "20230512-210-J-1491": "No. 20 Yangzi Road",
    "20241015-209-J-1903(1)": "Parc Industriel d'Incarville",
}


def test_every_multi_site_fixture_row_splits_into_its_sites(real_items):
    multi = [item for item in real_items if "," in (item["MANUF_COUNTRY_CODE_NM"] or "")]
    assert {item["DMF_PERMIT_NO"] for item in multi} == set(MULTI_SITE_ROWS)
    frame = normalize_items(items_to_frame(multi))
    for item, row in zip(multi, frame.iter_rows(named=True), strict=True):
        names, roles, countries = MULTI_SITE_ROWS[item["DMF_PERMIT_NO"]]
        split = split_sites(item["MNFCTR_NAME"], item["MNFCTR_PLACE"], item["MANUF_COUNTRY_CODE_NM"])
        assert split.ok and row["sites_split_ok"]
        assert row["site_count"] == len(countries) == len(split.sites) == len(row["sites"])
        assert [s.name for s in split.sites] == names
        assert [s.role for s in split.sites] == roles
        assert [s.country for s in split.sites] == countries == row["country_list"]
        assert split.sites[-1].address.startswith(LAST_ADDRESS_STARTS[item["DMF_PERMIT_NO"]])
        assert all(s.address and not s.address.startswith(("[", ",", " ")) for s in split.sites)
        assert row["sites"] == sites_as_dicts(split)


def test_first_address_of_the_three_site_row(real_items):
    item = next(i for i in real_items if i["DMF_PERMIT_NO"] == "수30-4-ND")
    split = split_sites(item["MNFCTR_NAME"], item["MNFCTR_PLACE"], item["MANUF_COUNTRY_CODE_NM"])
    assert [s.address[:32] for s in split.sites] == [
        "Unit-II, Plot No. 79, Jawaharlal",
        "Unit-I, Plot No. 37/A, 38, 39 A ",
        "Unit-II, Plot No.79, Jawaharlal ",
    ]
    assert split.sites[0].address.endswith("Andhra Pradesh, India")


def test_every_single_site_fixture_row_is_one_whole_site(real_items):
    single = [item for item in real_items if "," not in (item["MANUF_COUNTRY_CODE_NM"] or "")]
    frame = normalize_items(items_to_frame(single))
    assert frame["site_count"].to_list() == [1] * len(single)
    assert frame["sites_split_ok"].all()
    for row in frame.iter_rows(named=True):
        (site,) = row["sites"]
        assert site["name"] == row["manufacturer"].rstrip(",")
        assert site["address"] == row["address"].strip(" ,")
        assert site["country"] == row["country_list"][0]


def test_trailing_commas_are_not_boundaries(real_items):
    by_permit = {item["DMF_PERMIT_NO"]: item for item in real_items}
    item = by_permit["20180130-13-B-404-13(1)"]  # "Zhejiang East-Asia Pharmaceutical Co., Ltd,"
    split = split_sites(item["MNFCTR_NAME"], item["MNFCTR_PLACE"], item["MANUF_COUNTRY_CODE_NM"])
    assert split.sites == (
        Site(
            "Zhejiang East-Asia Pharmaceutical Co., Ltd",
            "Coastal Industrial City, Pubagangtown, Sanmen county, Zhejiang, P.R.China",
            "중국",
            None,
        ),
    )
    item = by_permit["20130122-173-I-229-01(17)"]  # address ends with "China,"
    split = split_sites(item["MNFCTR_NAME"], item["MNFCTR_PLACE"], item["MANUF_COUNTRY_CODE_NM"])
    assert split.ok
    assert split.sites[0].address == "No.7, Changbaishan Road, Yantai Development Zone, Shandong, China"
    # two countries but one company name (its only comma belongs to "Co., Ltd."): nothing is invented
    split = split_sites(item["MNFCTR_NAME"], item["MNFCTR_PLACE"], "중국,중국")
    assert not split.ok
    assert [s.name for s in split.sites] == ["Yantai Dongcheng Biochemicals Co., Ltd.", None]
    assert [s.country for s in split.sites] == ["중국", "중국"]


@pytest.mark.parametrize(
    ("names", "addresses", "countries", "expected_names", "ok"),
    [
        # legal-form words after a comma keep it inside the name
        (
            "Alpha Co., Ltd.,Beta Co.,Ltd.",
            "Road 1, China,Road 2, China",
            "중국,중국",
            ["Alpha Co., Ltd.", "Beta Co.,Ltd."],
            True,
        ),
        # the strongest boundaries win: a role bracket beats a tight comma
        (
            "Alpha Limited,Beta Unit,[원료 제조소]Gamma Ltd",
            "A, India,B, India",
            "인도,인도",
            ["Alpha Limited,Beta Unit", "Gamma Ltd"],
            True,
        ),
        # commas inside parentheses are never cut
        (
            "Alpha (Unit 1, Unit 2) Ltd,Beta Ltd",
            "A, India,B, India",
            "인도,인도",
            ["Alpha (Unit 1, Unit 2) Ltd", "Beta Ltd"],
            True,
        ),
        # a stray '(' that is never closed does not hide later commas
        ("Alpha (Unit 1 Ltd,Beta Ltd", "A, India,B, India", "인도,인도", ["Alpha (Unit 1 Ltd", "Beta Ltd"], True),
        # more countries than sites in the text
        ("Alpha Ltd", "A, India", "인도,인도,인도", ["Alpha Ltd", None, None], False),
        # no country: one whole site, but not a confirmed split
        ("Alpha Ltd,Beta Ltd", "A, India", None, ["Alpha Ltd,Beta Ltd"], False),
        # nothing at all
        (None, None, None, [], False),
        # a country but no manufacturer text
        (None, "A, India", "인도", [None], False),
    ],
)
def test_split_rules(names, addresses, countries, expected_names, ok):
    split = split_sites(names, addresses, countries)
    assert [s.name for s in split.sites] == expected_names
    assert split.ok is ok
    frame = normalize_items(
        items_to_frame([{"MNFCTR_NAME": names, "MNFCTR_PLACE": addresses, "MANUF_COUNTRY_CODE_NM": countries}])
    )
    assert frame["sites"][0].to_list() == sites_as_dicts(split)
    assert frame["sites_split_ok"][0] is ok


def test_address_cut_prefers_the_comma_after_a_country_name():
    address = "Unit-1,Sy.No.:291,346P,Telangana State, India,Plot 5,6, Road, China"
    split = split_sites("A Ltd,B Ltd", address, "인도,중국")
    assert [s.address for s in split.sites] == [
        "Unit-1,Sy.No.:291,346P,Telangana State, India",
        "Plot 5,6, Road, China",
    ]


_PIECES = st.sampled_from(
    ["Alpha", "Co.", "Ltd", ",", ", ", "[역할]", "(", ")", "India", " ", "1", "2,3", "Inc", "주식회사"]
)


@settings(max_examples=150, deadline=None)
@given(
    names=st.one_of(st.none(), st.lists(_PIECES, max_size=12).map("".join), st.text(max_size=30)),
    addresses=st.one_of(st.none(), st.lists(_PIECES, max_size=12).map("".join), st.text(max_size=30)),
    countries=st.one_of(st.none(), st.sampled_from(["인도", "인도,중국", "중국,중국,중국", "", ",", "Neverland,인도"])),
)
def test_frame_split_agrees_with_scalar_split(names, addresses, countries):
    frame = normalize_items(
        items_to_frame([{"MNFCTR_NAME": names, "MNFCTR_PLACE": addresses, "MANUF_COUNTRY_CODE_NM": countries}])
    )
    split = split_sites(names, addresses, countries)
    assert frame["sites"][0].to_list() == sites_as_dicts(split)
    assert frame["sites_split_ok"][0] is split.ok
    assert len(split.sites) >= frame["site_count"][0]


def test_hostile_site_fields_stay_linear_and_never_raise():
    many = ",".join(["Alpha Ltd"] * 5_000)
    split = split_sites(many, ",".join(["Road, India"] * 5_000), ",".join(["인도"] * 5_000))
    assert split.ok and len(split.sites) == 5_000
    assert split_sites("(" * 50_000 + ",", ")" * 50_000, "인도,인도").ok is False
    assert split_sites(",,,,", ",,,", "인도,중국").ok is False


# --- ingredient base ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "base", "micronized"),
    [
        ("에스오메프라졸마그네슘삼수화물", "에스오메프라졸", False),
        ("에스오메프라졸마그네슘삼수화물(미분화)", "에스오메프라졸", True),
        ("암로디핀베실산염", "암로디핀", False),
        ("로수바스타틴칼슘(미분화)", "로수바스타틴", True),
        ("판토프라졸나트륨세스키히드레이트무수물", "판토프라졸", False),
        ("판토프라졸나트륨수화물", "판토프라졸", False),
        ("모사프리드시트르산염수화물", "모사프리드", False),
        ("도네페질염산염수화물", "도네페질", False),
        ("에독사반토실산염수화물", "에독사반", False),
        ("아트로핀황산염수화물", "아트로핀", False),
        ("류프로렐린아세트산염", "류프로렐린", False),
        ("류프로렐린아세테이트", "류프로렐린", False),
        ("루파타딘푸마르산염", "루파타딘", False),
        ("브리모니딘타르타르산염", "브리모니딘", False),
        ("펜톨라민메실산염", "펜톨라민", False),
        ("트리메부틴말레산염", "트리메부틴", False),
        ("로사르탄칼륨", "로사르탄", False),
        ("글루타티온(환원형)", "글루타티온", False),
        ("미분화리나글립틴", "리나글립틴", True),
        ("미분화프로게스테론", "프로게스테론", True),
        ("초미분화 부데소니드", "부데소니드", True),
        ("두타스테리드(미분화)", "두타스테리드", True),
        ("피네레논베실산염(미분화)", "피네레논", True),
        ("레보플록사신수화물", "레보플록사신", False),
        ("세레콕시브", "세레콕시브", False),
        ("인태반", "인태반", False),
        ("후박75%에탄올 연조엑스(5→1)", "후박75%에탄올 연조엑스(5→1)", False),
        # never stripped to nothing
        ("나트륨", "나트륨", False),
        ("칼슘나트륨", "칼슘", False),
        ("미분화", "미분화", True),
        ("", None, False),
        (None, None, False),
    ],
)
def test_ingredient_base(raw, base, micronized):
    assert ingredient_base(raw) == (base, micronized)


def test_fixture_ingredients_have_bases_and_frame_agrees(real_items):
    frame = normalize_items(items_to_frame(real_items))
    for item, row in zip(real_items, frame.iter_rows(named=True), strict=True):
        assert (row["ingredient_base"], row["is_micronized"]) == ingredient_base(item["INGR_KOR_NAME"])
        assert row["ingredient_base"]
    assert frame["is_micronized"].sum() == 7


# --- over-size fields: the spec size of manufacturer/address is per site (issue 12) --------------


def test_multi_site_values_longer_than_the_spec_are_not_oversize_per_site(real_items):
    from datetime import date

    import polars as pl

    from dmf_assets.domain.sites import oversize_expr
    from dmf_assets.domain.snapshot import build_snapshot
    from dmf_assets.emulator.registry import RegistrySimulator

    sim = RegistrySimulator()
    for day in (date(2026, 10, 8), date(2026, 11, 20)):
        frame = build_snapshot(sim.items(day))
        listed = frame.filter(pl.col("oversize_fields").list.len() > 0)
        # today's warning fires every day: all of them are several sites joined in MNFCTR_NAME
        assert listed.height > 0 and listed["site_count"].min() >= 3
        assert set(listed["oversize_fields"].explode()) == {"MNFCTR_NAME"}
        assert frame.filter(oversize_expr()).height == 0
    base = dict(real_items[0])
    rows = [
        {**base, "MNFCTR_NAME": "A" * 200, "MANUF_COUNTRY_CODE_NM": "인도"},  # one site, 200 > 150
        {**base, "MNFCTR_NAME": "B" * 140 + "," + "C" * 180, "MANUF_COUNTRY_CODE_NM": "인도,중국"},  # 321 > 2 × 150
        {**base, "MNFCTR_NAME": "D" * 100 + "," + "E" * 100, "MANUF_COUNTRY_CODE_NM": "인도,중국"},  # 201 ≤ 300
        {**base, "DMF_PERMIT_NO": "1" * 250},  # not a per-site field
        {
            **base,
            "INGR_KOR_NAME": "가" * 3001,
            "MNFCTR_NAME": "D" * 100 + "," + "E" * 100,
            "MANUF_COUNTRY_CODE_NM": "인도,중국",
        },
    ]
    got = build_snapshot(rows).with_columns(real=oversize_expr())["real"].to_list()
    assert got == [True, True, False, True, True]
