"""Ingredient base name (성분 기본명): for aggregation only, never for identity (docs/DOMAIN.md §3).

`에스오메프라졸마그네슘삼수화물(미분화)` -> (`에스오메프라졸`, micronized). From the display value: a
`미분화`/`초미분화` prefix goes, then salt / hydrate / cation / micronized suffixes are stripped from the
end one at a time. A strip that would leave nothing is not applied (the previous form is kept).
"""

from __future__ import annotations

import re
from functools import lru_cache

import polars as pl

from dmf_assets.domain.text import FrameT, display_expr, one_value_frame

#: salt, hydrate and cation suffixes (Korean pharmacopoeia spellings seen in the registry)
SALT_SUFFIXES: tuple[str, ...] = (
    "브롬화수소산염",
    "세스키히드레이트",
    "타르타르산염",
    "푸마르산염",
    "시트르산염",
    "아세트산염",
    "아세테이트",
    "베실산염",
    "메실산염",
    "말레산염",
    "토실산염",
    "숙신산염",
    "일수화물",
    "이수화물",
    "삼수화물",
    "사수화물",
    "반수화물",
    "마그네슘",
    "(환원형)",
    "염산염",
    "황산염",
    "인산염",
    "탄산염",
    "질산염",
    "나트륨",
    "수화물",
    "무수물",
    "칼륨",
    "칼슘",
)

_MICRONIZED_PREFIX = r"^(?:초\s*)?미분화\s*"
_MICRONIZED_SUFFIX = r"\(\s*(?:초\s*)?미분화\s*\)"
_SALT_ALTERNATION = "|".join(re.escape(s).replace(r"\(", r"\(\s*").replace(r"\)", r"\s*\)") for s in SALT_SUFFIXES)
_SUFFIX_RE = r"\s*(?:" + _MICRONIZED_SUFFIX + "|" + _SALT_ALTERNATION + r")\s*$"
_MICRONIZED_SUFFIX_AT_END = r"\s*" + _MICRONIZED_SUFFIX + r"\s*$"

#: suffixes are stripped one per pass; real names carry at most four (나트륨세스키히드레이트무수물)
MAX_SUFFIX_PASSES = 8


def with_ingredient_base(frame: FrameT, display: str, base: str, micronized: str) -> FrameT:
    """Add `base` and `micronized` columns computed from the ingredient display column `display`.

    One `with_columns` per step keeps every pass a flat expression (nesting the passes in one
    expression would grow it exponentially).
    """
    d = pl.col(display)
    frame = frame.with_columns(
        d.str.replace(_MICRONIZED_PREFIX, "").replace("", None).fill_null(d).alias(base),
        d.str.contains(_MICRONIZED_PREFIX).fill_null(False).alias(micronized),
    )
    current = pl.col(base)
    for _ in range(MAX_SUFFIX_PASSES):
        frame = frame.with_columns(current.str.replace(_SUFFIX_RE, "").alias("_stripped"))
        stripped = pl.col("_stripped")
        applies = ((stripped.str.len_bytes() > 0) & (stripped != current)).fill_null(False)
        frame = frame.with_columns(
            pl.when(applies).then(stripped).otherwise(current).alias(base),
            (pl.col(micronized) | (applies & current.str.contains(_MICRONIZED_SUFFIX_AT_END))).alias(micronized),
        )
    return frame.drop("_stripped")


@lru_cache(maxsize=65536)
def ingredient_base(s: str | None) -> tuple[str | None, bool]:
    """(base name, is_micronized) of one raw ingredient value; (None, False) when blank."""
    frame = one_value_frame(s)
    if frame is None:
        return None, False
    displayed = frame.select(display_expr(pl.col("v")).alias("d"))
    base, micronized = with_ingredient_base(displayed, "d", "b", "m").select("b", "m").row(0)
    return base, bool(micronized)
