"""Three-layer identity (docs/DOMAIN.md §4) and the two record hashes (§5), vectorized.

permit_no_raw (audit) -> permit_no (normalized) -> dmf_key (unique within one snapshot):
- a number seen once is its own key;
- duplicate numbers get `#2`, `#3` … in a content-determined order (never fetch order), so a page
  reshuffle cannot relabel them (a longer separator on a day that lists a number holding `#`); the diff
  matches duplicate groups group-to-group anyway;
- a missing number gets `SYN-<hash of ingredient key, applicant (BIZRNO if valid), manufacturer key,
  issue date>`; cosmetic re-typings keep it, because it is built from matching keys.

Hashes are MD5 (hashlib, read in place from the Arrow buffers) truncated to 64 bits as hex: stable
across library versions, unlike polars' own hash, and equal to the values stored by earlier versions.
"""

from __future__ import annotations

from hashlib import md5
from itertools import pairwise
from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type information

from dmf_assets.domain.model import FIELD_COLUMNS

#: display columns hashed into content_hash (version identity)
CONTENT_COLUMNS: tuple[str, ...] = tuple(display for display, _ in FIELD_COLUMNS.values())
#: matching-key columns hashed into identity_hash (substantive identity)
IDENTITY_COLUMNS: tuple[str, ...] = tuple(key for _, key in FIELD_COLUMNS.values())
#: what a registration without a number is recognised by (also when the number arrives later)
SYN_BASIS_COLUMNS: tuple[str, ...] = ("ingredient_key", "applicant_identity", "manufacturer_key", "issue_date")

SYNTHETIC_PREFIX = "SYN-"


#: rows hashed per batch: the joined text of a batch is a few MB, never a copy of a whole 1 M-row day
HASH_BATCH_ROWS = 1 << 16
#: up to this many rows, a batch is hashed from Python strings (same UTF-8 bytes) instead of Arrow buffers
PYTHON_HASH_ROWS = 1 << 12


def _md5_16(frame: pl.DataFrame, columns: tuple[str, ...]) -> pl.Series:
    """The left 16 hex digits of MD5 over the columns' values joined by chr(31), NULL as chr(0) — the
    values stored since the first database (docs/DOMAIN.md §4, §5): chr(0) marks NULL so (NULL, "a") and
    ("a", NULL) hash differently."""
    joined = frame.select(_joined(columns)).to_series()
    digests: list[bytes] = []
    if joined.len() <= PYTHON_HASH_ROWS:  # a few rows: no pyarrow import (≈0.1 s), same bytes
        digests = [md5(text.encode()).digest() for text in joined.to_list()]
    else:
        for chunk in _arrow_chunks(joined):
            _, offsets_buf, data_buf = chunk.buffers()
            offsets = memoryview(offsets_buf).cast("q")[chunk.offset : chunk.offset + len(chunk) + 1].tolist()
            data = memoryview(b"" if data_buf is None else data_buf)  # None: only empty strings (or no rows)
            # the UTF-8 bytes of each value, read in place from the Arrow buffer (no Python string per row)
            digests += [md5(data[a:b]).digest() for a, b in pairwise(offsets)]
    # (a Binary series from the list: building it from Arrow would import pyarrow.compute, ≈0.1 s)
    return pl.Series(digests, dtype=pl.Binary).bin.encode("hex").str.slice(0, 16)


def _arrow_chunks(series: pl.Series) -> list[pa.LargeStringArray]:
    """The series as Arrow large_string arrays (polars' oldest compat level: offsets + bytes, no views)."""
    import pyarrow as pa  # lazily: `dmf diff` hashes few rows (PYTHON_HASH_ROWS)

    arrow = series.to_arrow(compat_level=pl.CompatLevel.oldest())
    chunks = arrow.chunks if isinstance(arrow, pa.ChunkedArray) else [arrow]
    if any(c.type != pa.large_string() for c in chunks):
        raise TypeError(f"expected large_string from polars, got {chunks[0].type}")
    return chunks


def _md5_column(frame: pl.DataFrame, columns: tuple[str, ...], where: pl.Series | None = None) -> pl.Series:
    """`_md5_16` of every row in batches, or only of the rows `where` is true (null elsewhere)."""
    rows = frame.select(columns) if where is None else frame.select(columns).filter(where)
    parts = [
        _md5_16(rows.slice(offset, HASH_BATCH_ROWS), columns)
        for offset in range(0, max(rows.height, 1), HASH_BATCH_ROWS)
    ]
    hashed = pl.concat(parts) if len(parts) > 1 else parts[0]
    if where is None:
        return hashed
    return pl.repeat(None, frame.height, dtype=pl.String, eager=True).scatter(where.arg_true(), hashed)


def stable_hashes(frame: pl.DataFrame) -> pl.DataFrame:
    """content_hash, identity_hash and syn_basis_hash for every row (same order)."""
    return pl.DataFrame(
        [
            _md5_column(frame, CONTENT_COLUMNS).alias("content_hash"),
            _md5_column(frame, IDENTITY_COLUMNS).alias("identity_hash"),
            _md5_column(frame, SYN_BASIS_COLUMNS).alias("syn_basis_hash"),
        ]
    )


def with_identity_columns(frame: pl.DataFrame) -> pl.DataFrame:
    """applicant_identity (BIZRNO when valid, else the name key): it identifies an applicant better."""
    return frame.with_columns(
        applicant_identity=pl.when(pl.col("bizrno_valid")).then(pl.col("bizrno")).otherwise(pl.col("applicant_key"))
    )


def with_group_columns(frame: pl.DataFrame) -> pl.DataFrame:
    """is_synthetic and group_key (the number, or the synthetic key) from the stored hashes."""
    return frame.with_columns(
        is_synthetic=pl.col("permit_no").is_null(),
        group_key=pl.coalesce(
            pl.col("permit_no"), pl.lit(SYNTHETIC_PREFIX) + pl.col("syn_basis_hash").str.slice(0, 12)
        ),
    )


def with_row_keys(normalized: pl.DataFrame, *, only_needed_hashes: bool = False) -> pl.DataFrame:
    """The per-row half of `assign_keys`: applicant_identity, the three hashes, is_synthetic, group_key.

    Each depends on the row's own values only, so rows shared by two snapshots can be keyed once.
    `only_needed_hashes` (a comparison that is never stored, `dmf diff`): syn_basis_hash only for rows
    without a number (their synthetic key) and identity_hash only for rows whose group_key is repeated
    (the duplicate ranks sort by it); null elsewhere. content_hash is always complete.
    """
    frame = with_identity_columns(normalized)
    if not only_needed_hashes:
        return with_group_columns(pl.concat([frame, stable_hashes(frame)], how="horizontal"))
    frame = frame.with_columns(
        pl.lit(None, dtype=pl.String).alias("content_hash"),
        pl.lit(None, dtype=pl.String).alias("identity_hash"),
        _md5_column(frame, SYN_BASIS_COLUMNS, frame.get_column("permit_no").is_null()).alias("syn_basis_hash"),
    )
    frame = with_group_columns(frame)
    repeated = frame.get_column("group_key").is_duplicated()
    # content_hash: MD5 where its value orders duplicates (`with_snapshot_keys`), else only compared for
    # equality — polars' hash of the same values (nulls included), marked so it never equals an MD5. Equal
    # content means an equal group_key, so two rows with equal content always carry the same kind of hash.
    quick = pl.lit(_QUICK_MARK) + pl.struct(CONTENT_COLUMNS).hash(seed=0x444D46).cast(pl.String)
    return frame.with_columns(
        _md5_column(frame, IDENTITY_COLUMNS, repeated).alias("identity_hash"),
        pl.when(pl.lit(repeated))
        .then(pl.lit(_md5_column(frame, CONTENT_COLUMNS, repeated)))
        .otherwise(quick)
        .alias("content_hash"),
    )


#: starts the comparison-only content hash (`with_row_keys(only_needed_hashes=True)`): never a hex digit
_QUICK_MARK = "~"


def _joined(columns: tuple[str, ...]) -> pl.Expr:
    """The columns' values joined by chr(31), NULL as chr(0): what the record hashes digest."""
    return pl.concat_str([pl.col(c).cast(pl.String).fill_null("\x00") for c in columns], separator="\x1f")


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
        .otherwise(pl.col("group_key") + pl.lit(_duplicate_separator(frame)) + pl.col("dup_rank").cast(pl.Utf8))
    )


def _duplicate_separator(frame: pl.DataFrame) -> str:
    """`#` — or, on a day listing a number that holds `#` itself ("X#2"), one `#` more than its longest
    run: then no "<number><separator><rank>" can equal a listed number or another row's key."""
    keys = frame.get_column("group_key")
    if not keys.str.contains("#", literal=True).any():
        return "#"
    longest = keys.str.extract_all("#+").list.eval(pl.element().str.len_chars()).list.max().max()
    return "#" * (int(longest) + 1)  # type: ignore[arg-type]  # a count, since some key holds '#'


def assign_keys(normalized: pl.DataFrame) -> pl.DataFrame:
    """Add the keys and hashes to a normalized frame (`domain.normalize.normalize_items` output): applicant_identity,
    group_key, dmf_key, is_synthetic, dup_count, dup_rank, content_hash, identity_hash and syn_basis_hash.

    Row order is preserved. Pure and deterministic: same rows in any order -> same keys.
    """
    return with_snapshot_keys(with_row_keys(normalized))
