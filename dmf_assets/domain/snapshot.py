"""One day's rows -> the keyed snapshot the diff compares (pure: no DB, no network).

raw rows -> drop identical rows repeated across pages (a paging artifact, DESIGN.md §6 gate 2) ->
normalize (display values, matching keys) -> keys and hashes.
"""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

from dmf_assets.domain.keys import assign_keys
from dmf_assets.domain.model import API_FIELDS
from dmf_assets.domain.normalize import items_to_frame, normalize_items


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


def seen_markers(snapshot: pl.DataFrame) -> set[str]:
    """What makes a later NEW registration a reappearance: its number/synthetic key or its identity."""
    return set(snapshot["group_key"].to_list()) | set(snapshot["identity_hash"].to_list())
