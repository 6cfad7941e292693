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


#: rows hashed per DuckDB query (the Arrow export is zero-copy; DuckDB splits a batch over its threads)
HASH_BATCH_ROWS = 1 << 20

_connection = None


def _duckdb():
    """One in-memory DuckDB for the hashes of this process (connecting costs more than hashing 9 k rows)."""
    global _connection
    if _connection is None:
        import duckdb

        # hand freed memory back instead of caching up to 128 MiB of it (peak RSS of `dmf diff`)
        _connection = duckdb.connect(config={"allocator_flush_threshold": "8MB"})
    return _connection


def stable_hashes(frame: pl.DataFrame) -> pl.DataFrame:
    """content_hash, identity_hash and syn_basis_hash for every row (same order)."""
    needed = sorted(set(CONTENT_COLUMNS) | set(IDENTITY_COLUMNS) | set(SYN_BASIS_COLUMNS))
    sql = (
        f"SELECT {_hash_sql(CONTENT_COLUMNS)} AS content_hash, "
        f"{_hash_sql(IDENTITY_COLUMNS)} AS identity_hash, "
        f"{_hash_sql(SYN_BASIS_COLUMNS)} AS syn_basis_hash FROM hash_input"
    )
    con = _duckdb().cursor()  # a cursor of its own: safe if two threads hash at once
    parts = []
    try:
        for offset in range(0, max(frame.height, 1), HASH_BATCH_ROWS):
            # string views go to DuckDB as they are (the default export copies every string into a new buffer)
            batch = frame.slice(offset, HASH_BATCH_ROWS).select(needed).to_arrow(compat_level=pl.CompatLevel.newest())
            con.register("hash_input", batch)
            parts.append(con.sql(sql).pl())
            con.unregister("hash_input")
    finally:
        con.close()
    return pl.concat(parts) if len(parts) > 1 else parts[0]


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


def with_row_keys(normalized: pl.DataFrame) -> pl.DataFrame:
    """The per-row half of `assign_keys`: applicant_identity, the three hashes, is_synthetic, group_key.

    Each depends on the row's own values only, so rows shared by two snapshots can be keyed once.
    """
    frame = with_identity_columns(normalized)
    return with_group_columns(pl.concat([frame, stable_hashes(frame)], how="horizontal"))


def with_snapshot_keys(frame: pl.DataFrame) -> pl.DataFrame:
    """The per-snapshot half: dup_rank, dup_count and dmf_key (needs `row_no` = position in the snapshot)."""
    columns = frame.columns
    frame = frame.with_columns(dup_count=pl.len().over("group_key").cast(pl.Int32))
    # Only duplicate numbers (≈0.3 % of rows) need a rank; sorting just those keeps 1 M rows cheap.
    ranked = (
        frame.filter(pl.col("dup_count") > 1)
        .select("row_no", "group_key", "identity_hash", "content_hash")
        .sort("group_key", "identity_hash", "content_hash", "row_no")
        .select("row_no", dup_rank=pl.int_range(1, pl.len() + 1, dtype=pl.Int32).over("group_key"))
    )
    # only the rank column is joined: a join of the whole frame would copy every column
    dup_rank = (
        frame.select("row_no")
        .join(ranked, on="row_no", how="left", maintain_order="left")
        .get_column("dup_rank")
        .fill_null(1)  # a number seen once is rank 1 of 1
    )
    frame = frame.with_columns(dup_rank).select(*columns, "dup_rank", "dup_count")
    return frame.with_columns(
        dmf_key=pl.when(pl.col("dup_rank") == 1)
        .then(pl.col("group_key"))
        .otherwise(pl.col("group_key") + pl.lit("#") + pl.col("dup_rank").cast(pl.Utf8))
    )


def assign_keys(normalized: pl.DataFrame) -> pl.DataFrame:
    """Add KEY_COLUMNS to a normalized frame (`domain.normalize.normalize_items` output).

    Row order is preserved. Pure and deterministic: same rows in any order -> same keys.
    """
    return with_snapshot_keys(with_row_keys(normalized))
