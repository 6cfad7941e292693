"""The record hashes stay byte-identical to the ones stored in existing databases (docs/DOMAIN.md §5).

The values below were computed by the earlier implementation (DuckDB's `left(md5(a || chr(31) || b …), 16)`
with NULL as chr(0)) before the hashing moved to hashlib; a change of any of them would relabel every
stored version.
"""

from __future__ import annotations

import hashlib

import polars as pl

from dmf_assets.domain.keys import CONTENT_COLUMNS, IDENTITY_COLUMNS, SYN_BASIS_COLUMNS, stable_hashes
from dmf_assets.domain.snapshot import build_snapshot

_HASHED = sorted(set(CONTENT_COLUMNS) | set(IDENTITY_COLUMNS) | set(SYN_BASIS_COLUMNS))


def _frame(rows: list[dict]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=dict.fromkeys(_HASHED, pl.String))


def test_stable_hashes_match_the_stored_values() -> None:
    frame = _frame(
        [
            {c: f"{c}-값" for c in _HASHED},
            dict.fromkeys(_HASHED),
            {c: ("" if i % 2 else None) for i, c in enumerate(_HASHED)},
            {c: ("a\x1fb" if i == 0 else "\x00") for i, c in enumerate(_HASHED)},  # chr(0) text hashes like NULL
        ]
    )
    assert stable_hashes(frame).rows() == [
        ("b7a54becbfcda5fb", "697231f43c50c2da", "a728c61af067d7bc"),
        ("bd4032cf693c5067", "bd4032cf693c5067", "a238a8d1ade08d33"),
        ("c7df7dbd59738af8", "06d56ffb92e414e8", "dbebcb92bcf4a4a0"),
        ("19fdd78d75f1fcc5", "bd4032cf693c5067", "a238a8d1ade08d33"),
    ]


def test_stable_hashes_of_no_rows() -> None:
    out = stable_hashes(_frame([]))
    assert out.columns == ["content_hash", "identity_hash", "syn_basis_hash"] and out.height == 0
    assert all(dtype == pl.String for dtype in out.dtypes)


def test_snapshot_hashes_match_the_stored_values() -> None:
    api = [
        "DMF_PERMIT_NO",
        "INGR_KOR_NAME",
        "ENTP_NAME",
        "BIZRNO",
        "MNFCTR_NAME",
        "MNFCTR_PLACE",
        "MANUF_COUNTRY_CODE_NM",
        "DMF_PERMIT_DATE",
        "NOTICE_CODE",
    ]
    rows = [
        dict(
            zip(
                api,
                [
                    "제123-45-ND",
                    "아세트아미노펜",
                    "(주)한국제약",
                    "1234567890",
                    "Zhejiang Co., Ltd.",
                    "No.1 Road, Hangzhou",
                    "중국",
                    "2020-01-02",
                    "별표1",
                ],
                strict=True,
            )
        ),
        dict(zip(api, [None, "Ibuprofen", "대웅", None, "X", None, None, None, None], strict=True)),
        dict.fromkeys(api, ""),
    ]
    snap = build_snapshot(pl.DataFrame(rows, schema=dict.fromkeys(api, pl.String)))
    assert snap.select("content_hash", "identity_hash", "syn_basis_hash").rows() == [
        ("7a1d8d3bd4e460d2", "3f1da2c8e3407c3d", "3ffae267fc3525a0"),
        ("747eff490ab0e6ee", "53e303c610ad68c3", "24604a5f74520095"),
        ("bd4032cf693c5067", "bd4032cf693c5067", "a238a8d1ade08d33"),
    ]


def test_synthetic_registry_hashes_are_unchanged() -> None:
    from dmf_assets.cli.bench import load_bench

    snap = build_snapshot(load_bench("synthetic").synthetic_registry(20_000, seed=1))
    text = "".join(snap["content_hash"].to_list() + snap["identity_hash"].to_list() + snap["syn_basis_hash"].to_list())
    assert (
        hashlib.sha256(text.encode()).hexdigest() == "8a5d45aad95bc34fb2c9ce727de4786c40dbbec289fe1efae61ab12ae2797ae2"
    )
