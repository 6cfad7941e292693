"""Permit numbers (등록번호): normalization and parsing into tokens (docs/DOMAIN.md §2.2, §3).

Shapes (after `permit_no_expr`: NFKC, dashes folded, whitespace removed, upper-case):
- standard      `YYYYMMDD-<ingr no>-<group>-<serial>[-<seq>][(<grant>)]`   e.g. 20110531-71-B-317-05(A)
- new_substance `[Hangul prefix]<no>-<serial>-ND[(<grant>)]`              e.g. 수6580-16-ND(19), 116-1-ND
- unknown       anything else (the normalized text is kept, tokens are null)
- missing       null/blank
Parsing never raises. The vectorized form (`with_permit_columns`) is the only implementation; `parse_permit`
evaluates it on one value.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import polars as pl

from dmf_assets.domain.model import PERMIT_GROUPS
from dmf_assets.domain.text import FrameT, iso_date_expr, one_value_frame, permit_no_expr

STANDARD_RE = (
    r"^(?<date>[0-9]{8})-(?<ingr>[0-9]+)-(?<group>[A-Z]{1,2})-(?<serial>[0-9]+)"
    r"(?:-(?<seq>[0-9]+))?(?:\((?<grant>[0-9]+|[A-Z])\))?$"
)
NEW_SUBSTANCE_RE = r"^(?<prefix>[가-힣]*)(?<ingr>[0-9]+)-(?<serial>[0-9]+)-ND(?:\((?<grant>[0-9]+|[A-Z])\))?$"

#: output columns, in NORMALIZED_COLUMNS order
PERMIT_COLUMNS: tuple[str, ...] = (
    "permit_no",
    "permit_fmt",
    "permit_accept_date",
    "permit_ingr_no",
    "permit_group",
    "permit_serial",
    "permit_seq",
    "permit_grant",
    "permit_prefix",
    "permit_table",
    "permit_group_date",
    "base_permit_no",
    "cohort",
)

_GROUP_TABLE = {letter: table for letter, (table, _) in PERMIT_GROUPS.items()}
_GROUP_DATE = {letter: since for letter, (_, since) in PERMIT_GROUPS.items()}


def with_permit_columns(frame: FrameT, raw: str) -> FrameT:
    """Add PERMIT_COLUMNS computed from the raw DMF_PERMIT_NO column `raw`.

    Staged `with_columns` so each intermediate (normalized number, regex captures) is computed once.
    """
    frame = frame.with_columns(permit_no_expr(pl.col(raw)).alias("permit_no"))
    frame = frame.with_columns(
        pl.col("permit_no").str.extract_groups(STANDARD_RE).alias("_std"),
        pl.col("permit_no").str.extract_groups(NEW_SUBSTANCE_RE).alias("_new"),
    )
    std, new = pl.col("_std").struct, pl.col("_new").struct
    frame = frame.with_columns(
        std.field("date").is_not_null().alias("_is_std"),
        new.field("ingr").is_not_null().alias("_is_new"),
    )
    is_std, is_new = pl.col("_is_std"), pl.col("_is_new")

    def pick(std_field: str | None, new_field: str | None) -> pl.Expr:
        s = std.field(std_field) if std_field else pl.lit(None, pl.String)
        n = new.field(new_field) if new_field else pl.lit(None, pl.String)
        return pl.when(is_std).then(s).when(is_new).then(n).otherwise(pl.lit(None, pl.String))

    frame = frame.with_columns(
        pl.when(pl.col("permit_no").is_null())
        .then(pl.lit("missing"))
        .when(is_std)
        .then(pl.lit("standard"))
        .when(is_new)
        .then(pl.lit("new_substance"))
        .otherwise(pl.lit("unknown"))
        .alias("permit_fmt"),
        iso_date_expr(pick("date", None)).alias("permit_accept_date"),
        pick("ingr", "ingr").alias("permit_ingr_no"),
        pl.when(is_std).then(std.field("group")).when(is_new).then(pl.lit("ND")).alias("permit_group"),
        pick("serial", "serial").alias("permit_serial"),
        pick("seq", None).alias("permit_seq"),
        pick("grant", "grant").alias("permit_grant"),
        pick(None, "prefix").replace("", None).alias("permit_prefix"),
    )
    group = pl.col("permit_group")
    frame = frame.with_columns(
        group.replace_strict(_GROUP_TABLE, default=None, return_dtype=pl.String).alias("permit_table"),
        group.replace_strict(_GROUP_DATE, default=None, return_dtype=pl.String).alias("permit_group_date"),
        # grant-derived (자료공유 허여) numbers link to the original: the number without "(n)"/"(A)"
        pl.when(pl.col("permit_grant").is_not_null())
        .then(pl.col("permit_no").str.replace(r"\([0-9A-Z]+\)$", ""))
        .alias("base_permit_no"),
        # registrations of one 별표 ingredient and group: "{ingredient no}-{group}", e.g. "71-B", "6580-ND"
        pl.when(pl.col("permit_ingr_no").is_not_null() & group.is_not_null())
        .then(pl.col("permit_ingr_no").str.strip_chars_start("0").replace("", "0") + pl.lit("-") + group)
        .alias("cohort"),
    )
    return frame.drop("_std", "_new", "_is_std", "_is_new")


@dataclass(frozen=True)
class PermitParts:
    """One permit number, normalized and split into its tokens (see NORMALIZED_COLUMNS)."""

    permit_no: str | None
    fmt: str  # standard | new_substance | unknown | missing
    accept_date: str | None = None
    ingr_no: str | None = None
    group: str | None = None
    serial: str | None = None
    seq: str | None = None
    grant: str | None = None
    prefix: str | None = None
    table: str | None = None
    group_date: str | None = None
    base_permit_no: str | None = None  # grant-derived: the original registration's number
    cohort: str | None = None  # "{ingredient no}-{group}"

    @property
    def tokens(self) -> tuple[str | None, ...]:
        """(ingr_no, group, serial, seq, grant, prefix) — handy for comparisons in tests."""
        return (self.ingr_no, self.group, self.serial, self.seq, self.grant, self.prefix)


@lru_cache(maxsize=65536)
def parse_permit(s: str | None) -> PermitParts:
    """Parse one raw DMF_PERMIT_NO value. Never raises on string content."""
    frame = one_value_frame(s)
    if frame is None:
        return PermitParts(None, "missing")
    return PermitParts(*with_permit_columns(frame, "v").select(PERMIT_COLUMNS).row(0))
