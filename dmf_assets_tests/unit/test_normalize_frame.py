"""The normalized frame: schema, order, schema drift, quality flags, hostile rows, and the vectorized
pipeline against the scalar helpers on real and random rows."""

from __future__ import annotations

import random

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dmf_assets.domain.ingredients import ingredient_base
from dmf_assets.domain.model import API_FIELDS, NORMALIZED_COLUMNS, SPEC_SIZES
from dmf_assets.domain.normalize import NORMALIZED_SCHEMA, items_to_frame, normalize_items
from dmf_assets.domain.permit import parse_permit
from dmf_assets.domain.sites import sites_as_dicts, split_sites
from dmf_assets.domain.text import display_text, match_key, parse_country_display

EXPECTED_DTYPES = {
    "row_no": pl.Int32,
    "site_count": pl.Int32,
    "is_micronized": pl.Boolean,
    "sites_split_ok": pl.Boolean,
    "issue_date_invalid": pl.Boolean,
    "bizrno_valid": pl.Boolean,
    "has_replacement_char": pl.Boolean,
    "country_list": pl.List(pl.String),
    "oversize_fields": pl.List(pl.String),
    "unresolved_countries": pl.List(pl.String),
    "sites": pl.List(pl.Struct({"name": pl.String, "address": pl.String, "country": pl.String, "role": pl.String})),
}


def scalar_row(position: int, item: dict) -> dict:
    """The normalized row built from the scalar helpers only (the reference for the frame)."""
    get = item.get
    permit = parse_permit(get("DMF_PERMIT_NO"))
    base, micronized = ingredient_base(get("INGR_KOR_NAME"))
    countries = parse_country_display(display_text(get("MANUF_COUNTRY_CODE_NM"), "country"))
    split = split_sites(get("MNFCTR_NAME"), get("MNFCTR_PLACE"), get("MANUF_COUNTRY_CODE_NM"))
    date_shown = display_text(get("DMF_PERMIT_DATE"))
    issue_date = display_text(get("DMF_PERMIT_DATE"), "date")
    bizrno = display_text(get("BIZRNO"))
    bizrno = bizrno.replace(" ", "").replace("-", "") or None if bizrno else None
    return {
        "row_no": position,
        "permit_no_raw": get("DMF_PERMIT_NO"),
        "permit_no": permit.permit_no,
        "permit_fmt": permit.fmt,
        "permit_accept_date": permit.accept_date,
        "permit_ingr_no": permit.ingr_no,
        "permit_group": permit.group,
        "permit_serial": permit.serial,
        "permit_seq": permit.seq,
        "permit_grant": permit.grant,
        "permit_prefix": permit.prefix,
        "permit_table": permit.table,
        "permit_group_date": permit.group_date,
        "base_permit_no": permit.base_permit_no,
        "cohort": permit.cohort,
        "ingredient": display_text(get("INGR_KOR_NAME")),
        "ingredient_key": match_key(get("INGR_KOR_NAME"), "text"),
        "ingredient_base": base,
        "is_micronized": micronized,
        "applicant": display_text(get("ENTP_NAME")),
        "applicant_key": match_key(get("ENTP_NAME"), "company"),
        "manufacturer": display_text(get("MNFCTR_NAME")),
        "manufacturer_key": match_key(get("MNFCTR_NAME"), "company"),
        "address": display_text(get("MNFCTR_PLACE")),
        "address_key": match_key(get("MNFCTR_PLACE"), "text"),
        "countries": display_text(get("MANUF_COUNTRY_CODE_NM"), "country"),
        "countries_key": match_key(get("MANUF_COUNTRY_CODE_NM"), "country"),
        "country_list": list(countries.per_site),
        "site_count": len(countries.per_site),
        "sites": sites_as_dicts(split),
        "sites_split_ok": split.ok,
        "issue_date": issue_date,
        "issue_date_invalid": date_shown is not None and issue_date is None,
        "bizrno": bizrno,
        "bizrno_valid": bool(bizrno and len(bizrno) == 10 and bizrno.isascii() and bizrno.isdigit()),
        "target_class": display_text(get("NOTICE_CODE")),
        "target_class_key": match_key(get("NOTICE_CODE"), "text"),
        "oversize_fields": [f for f, size in SPEC_SIZES.items() if get(f) is not None and len(get(f)) > size],
        "has_replacement_char": any("\ufffd" in (get(f) or "") for f in API_FIELDS),
        "unresolved_countries": list(countries.unresolved),
    }


def assert_frame_matches_scalars(items: list[dict]) -> pl.DataFrame:
    frame = normalize_items(items_to_frame(items))
    assert frame.height == len(items)
    for position, (item, row) in enumerate(zip(items, frame.iter_rows(named=True), strict=True)):
        expected = scalar_row(position, item)
        assert row == expected, {k: (row[k], expected[k]) for k in row if row[k] != expected[k]}
    return frame


# --- schema ---------------------------------------------------------------------------------------


def _thousand_rows(real_items: list[dict]) -> list[dict]:
    rng = random.Random(7)
    rows = []
    for i in range(1000):
        item = dict(rng.choice(real_items))
        item["DMF_PERMIT_NO"] = f"{item['DMF_PERMIT_NO']}-{i}" if i % 7 == 0 else item["DMF_PERMIT_NO"]
        item["ENTP_NAME"] = rng.choice(["㈜하이플", "(주)하이플", "하이플 주식회사", f"회사{i % 13}(주)"])
        if i % 11 == 0:
            item["MNFCTR_NAME"] = None
        rows.append(item)
    return rows


def test_thousand_row_frame_has_exactly_the_normalized_schema(real_items):
    frame = normalize_items(items_to_frame(_thousand_rows(real_items)))
    assert frame.columns == list(NORMALIZED_COLUMNS)
    assert tuple(NORMALIZED_SCHEMA) == tuple(NORMALIZED_COLUMNS)
    for name, dtype in frame.schema.items():
        assert dtype == EXPECTED_DTYPES.get(name, pl.String), name
    assert frame["row_no"].to_list() == list(range(1000))
    assert frame["applicant_key"].value_counts().filter(pl.col("applicant_key") == "하이플")["count"][0] > 200


def test_empty_input_has_the_schema_too():
    for frame in (normalize_items(items_to_frame([])), normalize_items(pl.DataFrame())):
        assert frame.height == 0
        assert dict(frame.schema) == {name: EXPECTED_DTYPES.get(name, pl.String) for name in NORMALIZED_COLUMNS}


# --- the real rows ----------------------------------------------------------------------------------


def test_every_real_row_matches_the_scalar_helpers(real_items):
    frame = assert_frame_matches_scalars(real_items)
    assert frame["permit_fmt"].value_counts().sort("permit_fmt").rows() == [("new_substance", 26), ("standard", 125)]
    assert frame["applicant_key"].unique().sort().to_list() == ["하이플", "하이플생명과학"]
    assert frame["bizrno_valid"].all() and not frame["issue_date_invalid"].any()
    assert frame["issue_date"].null_count() == 0
    assert frame["target_class"].null_count() == 1  # one row with an empty NOTICE_CODE
    assert frame["unresolved_countries"].list.len().sum() == 0
    assert frame["oversize_fields"].list.len().sum() == 0
    assert not frame["has_replacement_char"].any()
    assert frame["sites_split_ok"].all()
    assert frame["site_count"].sum() == 151 + 8 + 1  # eight two-or-more-site rows, one of them three


def test_row_order_follows_the_input_with_repeats_and_nulls(real_items):
    rng = random.Random(3)
    items = [dict(rng.choice(real_items)) for _ in range(300)]
    for i in range(0, 300, 9):
        items[i]["INGR_KOR_NAME"] = None
        items[i]["DMF_PERMIT_NO"] = None
    frame = normalize_items(items_to_frame(items))
    assert frame["permit_no_raw"].to_list() == [i["DMF_PERMIT_NO"] for i in items]
    assert frame["ingredient"].to_list() == [display_text(i["INGR_KOR_NAME"]) for i in items]
    assert frame["manufacturer"].to_list() == [display_text(i["MNFCTR_NAME"]) for i in items]
    assert (frame["permit_fmt"] == "missing").sum() == 34


def test_mostly_distinct_values_take_the_direct_path_with_the_same_result(real_items):
    # every permit number distinct: normalized on the column itself instead of unique+join
    items = [dict(item, DMF_PERMIT_NO=f" {item['DMF_PERMIT_NO']}–{n} ") for n, item in enumerate(real_items * 3)]
    frame = normalize_items(items_to_frame(items))
    assert frame["permit_no"].to_list() == [parse_permit(i["DMF_PERMIT_NO"]).permit_no for i in items]
    assert frame["permit_no"][0] == "20100402-01-HP-22-17-0"


# --- schema drift and input coercion ------------------------------------------------------------------


def test_missing_columns_are_null_and_extra_columns_ignored():
    raw = pl.DataFrame({"DMF_PERMIT_NO": ["수30-2-ND"], "ENTP_NAME": ["㈜하이플"], "NEW_FIELD": ["x"]})
    row = normalize_items(raw).row(0, named=True)
    assert (row["permit_fmt"], row["applicant_key"]) == ("new_substance", "하이플")
    assert row["ingredient"] is None and row["countries_key"] is None and row["issue_date"] is None
    assert (row["site_count"], row["sites"], row["sites_split_ok"]) == (0, [], False)
    assert "NEW_FIELD" not in normalize_items(raw).columns


def test_non_string_columns_are_cast():
    raw = pl.DataFrame({"BIZRNO": [4338600179, None], "DMF_PERMIT_DATE": [20100402, 1], "NOTICE_CODE": [None, None]})
    frame = normalize_items(raw)
    assert frame["bizrno"].to_list() == ["4338600179", None]
    assert frame["bizrno_valid"].to_list() == [True, False]
    assert frame["issue_date"].to_list() == ["2010-04-02", None]
    assert frame["issue_date_invalid"].to_list() == [False, True]


def test_items_to_frame_is_robust():
    frame = items_to_frame(
        [
            {"DMF_PERMIT_NO": "수30-2-ND", "EXTRA": 1},
            {"BIZRNO": 4338600179, "DMF_PERMIT_DATE": None, "INGR_KOR_NAME": 12.0},
            {"NOTICE_CODE": True, "ENTP_NAME": {"nested": ["가"]}, "MNFCTR_NAME": 1.5},
            {"MNFCTR_PLACE": "broken \ud800 surrogate"},
            {},
        ]
    )
    assert frame.columns == list(API_FIELDS)
    assert all(dtype == pl.String for dtype in frame.dtypes)
    assert frame["DMF_PERMIT_NO"].to_list() == ["수30-2-ND", None, None, None, None]
    assert frame["BIZRNO"][1] == "4338600179" and frame["INGR_KOR_NAME"][1] == "12"
    assert frame["NOTICE_CODE"][2] == "true" and frame["ENTP_NAME"][2] == '{"nested": ["가"]}'
    assert frame["MNFCTR_NAME"][2] == "1.5"
    assert frame["MNFCTR_PLACE"][3] == "broken \ufffd surrogate"
    assert normalize_items(frame)["has_replacement_char"].to_list() == [False, False, False, True, False]
    with pytest.raises(ValueError, match="item #1 is a str"):
        items_to_frame([{}, "not an object"])


# --- quality flags --------------------------------------------------------------------------------


def test_quality_flags():
    items = [
        {"MNFCTR_NAME": "x" * 151, "DMF_PERMIT_NO": "1" * 201, "MNFCTR_PLACE": "y" * 2000},
        {"INGR_KOR_NAME": "성분\ufffd", "MANUF_COUNTRY_CODE_NM": "인도,Neverland,아틀란티스,Neverland"},
        {"BIZRNO": "433-86-00179", "DMF_PERMIT_DATE": "2010-02-30"},
        {"BIZRNO": "43386001", "DMF_PERMIT_DATE": "  "},
    ]
    frame = assert_frame_matches_scalars(items)
    assert frame["oversize_fields"].to_list() == [["DMF_PERMIT_NO", "MNFCTR_NAME"], [], [], []]
    assert frame["has_replacement_char"].to_list() == [False, True, False, False]
    assert frame["ingredient"][1] == "성분\ufffd"
    assert frame["unresolved_countries"].to_list() == [[], ["Neverland", "아틀란티스"], [], []]
    assert frame["country_list"][1].to_list() == ["인도", "Neverland", "아틀란티스", "Neverland"]
    assert frame["countries_key"][1] == "neverland|아틀란티스|인도"
    assert frame["bizrno"].to_list() == [None, None, "4338600179", "43386001"]
    assert frame["bizrno_valid"].to_list() == [False, False, True, False]
    assert frame["issue_date_invalid"].to_list() == [False, False, True, False]


# --- hostile and random rows ----------------------------------------------------------------------

HOSTILE_VALUES = [
    "x" * 100_000,
    "\x00\x01\x1f\x7f",
    "\ufffd",
    "\u202e\u200f가나\u200e",
    "😀🇰🇷",
    "=cmd|' /C calc'!A0",
    "'; DROP TABLE records; --",
    "",
    "   ",
    ",,,[[[(((",
    "인도," * 2_000,
]


@pytest.mark.parametrize("value", HOSTILE_VALUES, ids=range(len(HOSTILE_VALUES)))
def test_hostile_values_in_every_field(value):
    frame = assert_frame_matches_scalars([dict.fromkeys(API_FIELDS, value), {}])
    assert frame.height == 2
    if "\ufffd" in value:
        assert frame["has_replacement_char"][0] and "\ufffd" in frame["ingredient"][0]


_FIELD_VALUES = st.one_of(
    st.none(),
    st.text(max_size=25),
    st.sampled_from(HOSTILE_VALUES[1:-1]),
    st.sampled_from(
        [
            "인도,중국",
            "중국,중국",
            "체코공화국",
            "Avik Pharmaceutical Limited,Tianjin Co., Ltd",
            "A-1/7, India,No 19, China",
            "2010.04.02",
            "2011. 6. 15.",
            "20100231",
            "433-86-00179",
            "수30-2-ND",
            "20050831-37-C-34-05(4)",
            "로수바스타틴칼슘(미분화)",
            "㈜하이플",
        ]
    ),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.fixed_dictionaries({}, optional=dict.fromkeys(API_FIELDS, _FIELD_VALUES)), max_size=6))
def test_vectorized_equals_scalar_on_random_rows(items):
    assert_frame_matches_scalars(items)
