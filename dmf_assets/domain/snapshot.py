"""One day's rows -> the keyed snapshot the diff compares (pure: no DB, no network).

raw rows -> drop identical rows received twice (a paging artifact, docs/DOMAIN.md §6 gate 2; the fetch counts
the same rows for gate 2) ->
normalize (display values, matching keys) -> keys and hashes.
"""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

from dmf_assets.domain.keys import assign_keys, with_row_keys, with_snapshot_keys
from dmf_assets.domain.model import API_FIELDS
from dmf_assets.domain.normalize import items_to_frame, normalize_items, normalize_taking


def drop_repeated_rows(raw: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    """Keep the first of rows identical in every API field; returns (frame, rows dropped)."""
    cols = [c for c in API_FIELDS if c in raw.columns]
    if not cols:
        return raw, 0
    kept = raw.unique(subset=cols, keep="first", maintain_order=True)
    return kept, raw.height - kept.height


def build_snapshot(rows: pl.DataFrame | Iterable[dict]) -> pl.DataFrame:
    raw = rows if isinstance(rows, pl.DataFrame) else items_to_frame(list(rows))
    raw, _ = drop_repeated_rows(raw)
    return assign_keys(normalize_items(raw))


def build_snapshot_pair_taking(rows: list[pl.DataFrame]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """`(build_snapshot(old_rows), build_snapshot(new_rows))` of `rows` = [old_rows, new_rows], normalizing rows
    the two days share once. It empties `rows`: when the caller keeps no other reference, the raw frames are
    released as soon as they are matched and normalized (peak memory of `dmf diff`).

    Two consecutive days share ≈99.9 % of their rows, and every normalized and per-row key column
    depends on the row's own nine values only (`row_no` and the duplicate ranks are the exceptions,
    computed per snapshot afterwards). So the old day's distinct rows and the new day's rows that are
    not among them are normalized and hashed together, and the new day takes its rows from there.
    For a comparison only (never stored): identity_hash and syn_basis_hash are filled where the diff
    reads them (`keys.with_row_keys(only_needed_hashes=True)`), null elsewhere, and the columns the diff
    never reads are left out (`normalize.COMPARISON_OMITS`): the diff derives the sites of the pairs it
    compares from their display values (`normalize.site_columns`).
    """
    old_rows, new_rows = rows.pop(0), rows.pop(0)
    if not (_plain_text(old_rows) and _plain_text(new_rows)):  # odd inputs: the one-day path converts them
        return build_snapshot(old_rows), build_snapshot(new_rows)
    cols = list(API_FIELDS)
    old_rows, new_rows = old_rows.select(cols), new_rows.select(cols)
    matched = _match_rows(old_rows, new_rows)
    if matched is None:  # a 64-bit row-hash collision: exact (slower) matching on the nine columns
        old_raw, _ = drop_repeated_rows(old_rows)
        new_raw, _ = drop_repeated_rows(new_rows)
        fresh = new_raw.join(old_raw, on=cols, how="anti", nulls_equal=True, maintain_order="left")
        union = pl.concat([old_raw, fresh])
        union_ix = (
            new_raw.with_row_index("_n")
            .join(union.with_row_index("_u"), on=cols, how="left", nulls_equal=True)
            .sort("_n")
            .get_column("_u")
        )
        old_height = old_raw.height
        del old_raw, new_raw, fresh
    else:
        union, union_ix, old_height = matched
    del old_rows, new_rows, matched  # the union holds every row still needed
    handed_over = [union]
    del union
    keyed = with_row_keys(normalize_taking(handed_over, full=False), only_needed_hashes=True)
    old = with_snapshot_keys(keyed.slice(0, old_height))
    return old, _new_snapshot(keyed, union_ix, old.columns)


#: the new day is put together from slices of the union when it is at most this many runs of
#: consecutive union rows (plus one per 1,000 rows); otherwise it is gathered row by row
MAX_RUNS = 64


def _new_snapshot(keyed: pl.DataFrame, union_ix: pl.Series, columns: list[str]) -> pl.DataFrame:
    """The new day's snapshot: its union rows (`union_ix`, in order) plus its own row_no and duplicate ranks.

    A new day is mostly the old day's rows in the old order, i.e. a few long runs of consecutive union
    rows: those become zero-copy slices of `keyed` (one chunk each), so the two snapshots share their
    memory. Many short runs (a shuffled day) are gathered instead.
    """
    # the per-snapshot columns, computed on the three columns they need
    ranks = with_snapshot_keys(
        keyed.select("group_key", "identity_hash", "content_hash")[union_ix].with_columns(
            pl.int_range(0, pl.len(), dtype=pl.Int32).alias("row_no")
        )
    ).select("row_no", "dup_rank", "dup_count", "dmf_key")
    rows = keyed.drop("row_no")
    breaks = (union_ix.diff() != 1).fill_null(True).arg_true()
    if breaks.len() > MAX_RUNS + union_ix.len() // 1000:
        return rows[union_ix].hstack(ranks).select(columns)
    starts = union_ix.gather(breaks).to_list()
    offsets = breaks.to_list() + [union_ix.len()]
    parts = [
        rows.slice(start, offsets[i + 1] - offsets[i])
        .hstack(ranks.slice(offsets[i], offsets[i + 1] - offsets[i]))
        .select(columns)
        for i, start in enumerate(starts)
    ]
    return pl.concat(parts, rechunk=False) if parts else rows.clear().hstack(ranks.clear()).select(columns)


def _match_rows(old: pl.DataFrame, new: pl.DataFrame) -> tuple[pl.DataFrame, pl.Series, int] | None:
    """(union of distinct rows: old's first, then new-only; union index of each distinct new row in order;
    number of old rows in the union) — matched by a 64-bit hash of the nine values, then verified
    value by value. None if two different rows share a hash (the caller then matches exactly)."""

    def distinct(frame: pl.DataFrame) -> tuple[pl.DataFrame, pl.Series] | None:
        h = frame.select(pl.struct(API_FIELDS).hash(seed=0x444D46)).to_series()
        first = h.is_first_distinct()
        if first.all():
            return frame, h  # no repeated rows (the usual case): no copy
        kept, kept_h = frame.filter(first), h.filter(first)
        # every dropped row must be a true repeat of the row kept for its hash (else: a collision)
        representative = (
            h.to_frame("_h")
            .join(kept_h.to_frame("_h").with_row_index("_k"), on="_h", how="left", maintain_order="left")
            .get_column("_k")
        )
        return (kept, kept_h) if _same_rows(frame, kept, representative) else None

    old_d, new_d = distinct(old), distinct(new)
    if old_d is None or new_d is None:
        return None
    (old_raw, old_h), (new_raw, new_h) = old_d, new_d
    is_fresh = ~new_h.is_in(old_h.implode())
    union = pl.concat([old_raw, new_raw.filter(is_fresh)], rechunk=False)
    lookup = pl.concat([old_h, new_h.filter(is_fresh)]).to_frame("_h").with_row_index("_u")
    union_ix = new_h.to_frame("_h").join(lookup, on="_h", how="left", maintain_order="left").get_column("_u")
    if not _same_rows(new_raw, union, union_ix):
        return None
    return union, union_ix, old_raw.height


def _same_rows(a: pl.DataFrame, b: pl.DataFrame, b_index: pl.Series) -> bool:
    """Row i of `a` equals row b_index[i] of `b` in all nine API fields (null equals null).
    One column at a time, so the check never holds a gathered copy of a whole frame."""
    if a.height != b_index.len() or b_index.null_count():
        return False
    return all(bool(a.get_column(c).eq_missing(b.get_column(c).gather(b_index)).all()) for c in API_FIELDS)


def _plain_text(rows: pl.DataFrame) -> bool:
    """All nine API columns present as String (what the dump readers produce)."""
    return all(rows.schema.get(c) == pl.String for c in API_FIELDS)


def seen_markers(snapshot: pl.DataFrame) -> set[str]:
    """What makes a later NEW registration a reappearance: its number/synthetic key or its identity."""
    return set(snapshot["group_key"].to_list()) | set(snapshot["identity_hash"].to_list())
