"""Three-layer identity (DESIGN.md §4) and the two record hashes (§5), vectorized.

permit_no_raw (audit) -> permit_no (normalized) -> dmf_key (unique within one snapshot):
- a number seen once is its own key;
- duplicate numbers get `#2`, `#3` … in a content-determined order (never fetch order), so a page
  reshuffle cannot relabel them; the diff matches duplicate groups group-to-group anyway;
- a missing number gets `SYN-<hash of ingredient key, applicant (BIZRNO if valid), manufacturer key,
  issue date>`; cosmetic re-typings keep it, because it is built from matching keys.

Hashes are MD5 (via an in-memory DuckDB) truncated to 64 bits as hex: stable across library versions,
unlike polars' own hash.
"""

from __future__ import annotations

import duckdb
import polars as pl

from dmf_assets.domain.model import FIELD_COLUMNS

#: display columns hashed into content_hash (version identity)
CONTENT_COLUMNS: tuple[str, ...] = tuple(display for display, _ in FIELD_COLUMNS.values())
#: matching-key columns hashed into identity_hash (substantive identity)
IDENTITY_COLUMNS: tuple[str, ...] = tuple(key for _, key in FIELD_COLUMNS.values())
#: what a registration without a number is recognised by (also when the number arrives later)
SYN_BASIS_COLUMNS: tuple[str, ...] = ("ingredient_key", "applicant_identity", "manufacturer_key", "issue_date")

KEY_COLUMNS: tuple[str, ...] = (
    "applicant_identity",
    "group_key",
    "dmf_key",
    "is_synthetic",
    "dup_count",
    "dup_rank",
    "content_hash",
    "identity_hash",
    "syn_basis_hash",
)

SYNTHETIC_PREFIX = "SYN-"


def _hash_sql(columns: tuple[str, ...]) -> str:
    # Column names are constants of this module, never data; values are read from the frame.
    # chr(0) marks NULL so (NULL, "a") and ("a", NULL) hash differently.
    parts = " || chr(31) || ".join(f'coalesce("{c}", chr(0))' for c in columns)
    return f"left(md5({parts}), 16)"


def stable_hashes(frame: pl.DataFrame) -> pl.DataFrame:
    """content_hash, identity_hash and syn_basis_hash for every row (same order)."""
    needed = sorted(set(CONTENT_COLUMNS) | set(IDENTITY_COLUMNS) | set(SYN_BASIS_COLUMNS))
    cols = frame.select(needed)
    con = duckdb.connect()
    try:
        con.register("f", cols.to_arrow())
        return con.sql(
            f"SELECT {_hash_sql(CONTENT_COLUMNS)} AS content_hash, "
            f"{_hash_sql(IDENTITY_COLUMNS)} AS identity_hash, "
            f"{_hash_sql(SYN_BASIS_COLUMNS)} AS syn_basis_hash FROM f"
        ).pl()
    finally:
        con.close()


def with_identity_columns(frame: pl.DataFrame) -> pl.DataFrame:
    """applicant_identity (BIZRNO when valid, else the name key): it identifies an applicant better."""
    return frame.with_columns(
        applicant_identity=pl.when(pl.col("bizrno_valid")).then(pl.col("bizrno")).otherwise(pl.col("applicant_key"))
    )


def with_group_columns(frame: pl.DataFrame) -> pl.DataFrame:
    """is_synthetic and group_key (the number, or the synthetic key) from the stored hashes."""
    return frame.with_columns(
        is_synthetic=pl.col("permit_no").is_null(),
        group_key=pl.coalesce(pl.col("permit_no"), pl.lit(SYNTHETIC_PREFIX) + pl.col("syn_basis_hash").str.slice(0, 12)),
    )


def assign_keys(normalized: pl.DataFrame) -> pl.DataFrame:
    """Add KEY_COLUMNS to a normalized frame (`domain.normalize.normalize_items` output).

    Row order is preserved. Pure and deterministic: same rows in any order -> same keys.
    """
    frame = with_identity_columns(normalized)
    frame = with_group_columns(pl.concat([frame, stable_hashes(frame)], how="horizontal"))
    columns = frame.columns
    frame = frame.with_columns(dup_count=pl.len().over("group_key").cast(pl.Int32))
    # Only duplicate numbers (≈0.3 % of rows) need a rank; sorting just those keeps 1 M rows cheap.
    ranked = (
        frame.filter(pl.col("dup_count") > 1)
        .select("row_no", "group_key", "identity_hash", "content_hash")
        .sort("group_key", "identity_hash", "content_hash", "row_no")
        .select("row_no", dup_rank=pl.int_range(1, pl.len() + 1, dtype=pl.Int32).over("group_key"))
    )
    frame = (
        frame.join(ranked, on="row_no", how="left", maintain_order="left")
        .with_columns(pl.col("dup_rank").fill_null(1))  # a number seen once is rank 1 of 1
        .select(*columns, "dup_rank", "dup_count")
    )
    return frame.with_columns(
        dmf_key=pl.when(pl.col("dup_rank") == 1)
        .then(pl.col("group_key"))
        .otherwise(pl.col("group_key") + pl.lit("#") + pl.col("dup_rank").cast(pl.Utf8))
    )
