"""Permit-number normalization and parsing (docs/DOMAIN.md §2.2): real shapes, tokens, tables, never raising."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dmf_assets.domain.model import PERMIT_GROUPS
from dmf_assets.domain.normalize import items_to_frame, normalize_items
from dmf_assets.domain.permit import PermitParts, parse_permit

# (raw, fmt, accept_date, (ingr_no, group, serial, seq, grant, prefix), table, group_date)
REAL_SHAPES = [
    ("20100402-01-HP-22-17", "standard", "2010-04-02", ("01", "HP", "22", "17", None, None), None, None),
    ("20110615-131-H-85-05", "standard", "2011-06-15", ("131", "H", "85", "05", None, None), "별표1", "2011-01-01"),
    ("20050831-37-C-34-05(4)", "standard", "2005-08-31", ("37", "C", "34", "05", "4", None), "별표1", "2003-01-01"),
    ("20070504-4-B-240-14(13)", "standard", "2007-05-04", ("4", "B", "240", "14", "13", None), "별표1", "2003-01-01"),
    ("20200723-210-J-699(A)", "standard", "2020-07-23", ("210", "J", "699", None, "A", None), "별표1", "2017-12-25"),
    ("20251010-94-E-193-18(B)", "standard", "2025-10-10", ("94", "E", "193", "18", "B", None), "별표1", "2008-01-01"),
    ("20130322-96-E-109-34(C)", "standard", "2013-03-22", ("96", "E", "109", "34", "C", None), "별표1", "2008-01-01"),
    ("20260901-209-J-2268", "standard", "2026-09-01", ("209", "J", "2268", None, None, None), "별표1", "2017-12-25"),
    ("20171208-209-J-23(4)", "standard", "2017-12-08", ("209", "J", "23", None, "4", None), "별표1", "2017-12-25"),
    ("20200102-2-K-50-02(5)", "standard", "2020-01-02", ("2", "K", "50", "02", "5", None), "별표1의2", "2018-01-01"),
    ("20120601-107-F-64-02(1)", "standard", "2012-06-01", ("107", "F", "64", "02", "1", None), "별표1", "2009-01-01"),
    ("20100616-122-G-60-22(11)", "standard", "2010-06-16", ("122", "G", "60", "22", "11", None), "별표1", "2010-01-01"),
    ("20130522-167-I-135-04", "standard", "2013-05-22", ("167", "I", "135", "04", None, None), "별표1", "2013-01-01"),
    ("20050831-9-A-2-02(18)", "standard", "2005-08-31", ("9", "A", "2", "02", "18", None), "별표1", "2003-01-01"),
    ("수6580-16-ND(19)", "new_substance", None, ("6580", "ND", "16", None, "19", "수"), None, None),
    ("수30-2-ND", "new_substance", None, ("30", "ND", "2", None, None, "수"), None, None),
    ("3595-1-ND(1)", "new_substance", None, ("3595", "ND", "1", None, "1", None), None, None),
    ("수469-9-ND(A)", "new_substance", None, ("469", "ND", "9", None, "A", "수"), None, None),
    ("수674-7-ND(3)", "new_substance", None, ("674", "ND", "7", None, "3", "수"), None, None),
    # shapes from docs/DOMAIN.md that are not in the fixture file
    ("116-1-ND", "new_substance", None, ("116", "ND", "1", None, None, None), None, None),
    ("수812-25-ND(A)", "new_substance", None, ("812", "ND", "25", None, "A", "수"), None, None),
    ("20110531-71-B-317-05", "standard", "2011-05-31", ("71", "B", "317", "05", None, None), "별표1", "2003-01-01"),
]


@pytest.mark.parametrize(("raw", "fmt", "accept", "tokens", "table", "since"), REAL_SHAPES)
def test_real_shapes_parse_to_their_tokens(raw, fmt, accept, tokens, table, since):
    parts = parse_permit(raw)
    assert parts.permit_no == raw
    assert parts.fmt == fmt
    assert parts.accept_date == accept
    assert parts.tokens == tokens
    assert (parts.table, parts.group_date) == (table, since)


def test_no_fixture_row_is_unknown(real_items):
    formats = {}
    for item in real_items:
        parts = parse_permit(item["DMF_PERMIT_NO"])
        formats[parts.fmt] = formats.get(parts.fmt, 0) + 1
        assert parts.fmt in ("standard", "new_substance"), item["DMF_PERMIT_NO"]
        assert parts.serial is not None and parts.ingr_no is not None
        if parts.fmt == "standard":
            assert parts.accept_date == f"{raw_date(item)}", item["DMF_PERMIT_NO"]
    assert formats == {"standard": 125, "new_substance": 26}


def raw_date(item):
    d = item["DMF_PERMIT_NO"][:8]
    return f"{d[:4]}-{d[4:6]}-{d[6:]}"


@pytest.mark.parametrize(
    ("raw", "normalized"),
    [
        (" 20110531-71-B-317-05 ", "20110531-71-B-317-05"),
        ("20110531 - 71 - B - 317 - 05", "20110531-71-B-317-05"),
        ("２０１１０５３１－７１－Ｂ－３１７－０５", "20110531-71-B-317-05"),
        ("20110531–71–b–317–05", "20110531-71-B-317-05"),
        ("20110531-71-B-317-05（１）", "20110531-71-B-317-05(1)"),
        ("20110531-71-B-317-05(a)", "20110531-71-B-317-05(A)"),
        ("20110531\u200b-71-B-317-05\r\n", "20110531-71-B-317-05"),
        ("수 6580-16-nd(19)", "수6580-16-ND(19)"),
    ],
)
def test_malformed_but_recoverable_numbers_normalize_to_the_standard_text(raw, normalized):
    parts = parse_permit(raw)
    assert parts.permit_no == normalized
    assert parts.fmt in ("standard", "new_substance")


@pytest.mark.parametrize(
    "raw",
    [
        "DMF-2011-0001",
        "20110531-71",
        "20110531-71-B",
        "20110531-71-ABC-317-05",
        "20110531-71-B-317-05(AB)",
        "20110531-71-B-317-05-01",
        "2011053-71-B-317-05",
        "6580-16-NX",
        "abc수6580-16-ND",
        "=cmd|' /C calc'!A0",
    ],
)
def test_other_shapes_are_unknown_and_keep_the_text(raw):
    parts = parse_permit(raw)
    assert parts.fmt == "unknown"
    assert parts.permit_no == re.sub(r"\s", "", raw).upper()
    assert parts.tokens == (None,) * 6
    assert parts.accept_date is None and parts.table is None


def test_invalid_acceptance_date_is_still_standard_with_a_null_date():
    parts = parse_permit("20110231-71-B-317-05")
    assert (parts.fmt, parts.accept_date, parts.group, parts.table) == ("standard", None, "B", "별표1")
    assert parse_permit("18991231-71-B-317-05").accept_date is None


def test_unknown_group_letters_parse_without_table():
    for group in ("HP", "L", "Z", "ND"):
        parts = parse_permit(f"20200101-1-{group}-2-03")
        assert (parts.fmt, parts.group, parts.table, parts.group_date) == ("standard", group, None, None)


def test_every_group_letter_maps_to_its_table():
    for letter, (table, since) in PERMIT_GROUPS.items():
        parts = parse_permit(f"20200101-1-{letter}-2-03")
        assert (parts.table, parts.group_date) == (table, since)


@pytest.mark.parametrize("raw", [None, "", "   ", "\r\n", "\u200b"])
def test_blank_numbers_are_missing(raw):
    assert parse_permit(raw) == PermitParts(None, "missing")


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.one_of(st.none(), st.text(max_size=30), st.sampled_from([r[0] for r in REAL_SHAPES])), min_size=1, max_size=8
    )
)
def test_frame_and_scalar_parsers_agree(values):
    frame = normalize_items(items_to_frame([{"DMF_PERMIT_NO": v} for v in values]))
    for value, row in zip(values, frame.iter_rows(named=True), strict=True):
        parts = parse_permit(value)
        assert row["permit_no_raw"] == value
        assert (row["permit_no"], row["permit_fmt"], row["permit_accept_date"]) == (
            parts.permit_no,
            parts.fmt,
            parts.accept_date,
        )
        assert (
            row["permit_ingr_no"],
            row["permit_group"],
            row["permit_serial"],
            row["permit_seq"],
            row["permit_grant"],
            row["permit_prefix"],
        ) == parts.tokens
        assert (row["permit_table"], row["permit_group_date"]) == (parts.table, parts.group_date)


# --- grant links: base_permit_no and cohort (docs/DOMAIN.md §10) --------------------------------------


@pytest.mark.parametrize("raw", [r[0] for r in REAL_SHAPES])
def test_grant_derived_numbers_link_to_their_original(raw):
    p = parse_permit(raw)
    if p.grant is None:
        assert p.base_permit_no is None
    else:
        assert p.base_permit_no == p.permit_no[: -len(f"({p.grant})")]
        # the original parses as the same registration family, without a grant
        base = parse_permit(p.base_permit_no)
        assert base.grant is None and base.fmt == p.fmt and base.cohort == p.cohort
    assert p.cohort == f"{int(p.ingr_no)}-{p.group}"


def test_real_rows_carry_grant_links_in_the_frame(real_items):
    frame = normalize_items(real_items)
    grants = frame.filter(frame["permit_grant"].is_not_null())
    assert grants.height > 10, "the real rows include many grant-derived numbers"
    for row in grants.iter_rows(named=True):
        assert row["permit_no"].startswith(row["base_permit_no"]) and row["permit_no"].endswith(
            f"({row['permit_grant']})"
        )
    unknown = frame.filter(frame["permit_fmt"].is_in(["unknown", "missing"]))
    assert unknown["cohort"].null_count() == unknown.height and unknown["base_permit_no"].null_count() == unknown.height


def test_migration_fills_grant_links_of_existing_versions_like_the_normalizer(tmp_path, real_items):
    """0002 adds the columns and derives them in SQL for versions written before it: same answer."""
    import duckdb

    from dmf_assets.storage.db import MIGRATIONS_DIR

    frame = normalize_items(real_items).select(
        "permit_no", "permit_grant", "permit_ingr_no", "permit_group", "base_permit_no", "cohort"
    )
    con = duckdb.connect(str(tmp_path / "m.duckdb"))
    con.execute(
        "CREATE TABLE record_versions (permit_no VARCHAR, permit_grant VARCHAR, permit_ingr_no VARCHAR, "
        "permit_group VARCHAR)"
    )
    con.register("f", frame.to_arrow())
    con.execute("INSERT INTO record_versions SELECT permit_no, permit_grant, permit_ingr_no, permit_group FROM f")
    con.execute((MIGRATIONS_DIR / "0002_grant_links.sql").read_text(encoding="utf-8"))
    got = con.execute("SELECT permit_no, base_permit_no, cohort FROM record_versions ORDER BY ALL").fetchall()
    want = sorted(
        frame.select("permit_no", "base_permit_no", "cohort").rows(), key=lambda r: tuple((x is None, x) for x in r)
    )
    assert sorted(got, key=lambda r: tuple((x is None, x) for x in r)) == want
