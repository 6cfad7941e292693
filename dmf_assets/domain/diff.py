"""The diff between the comparison base and today's snapshot (docs/DOMAIN.md §4–§5), vectorized.

Matching, in order — each step only sees what earlier steps left unmatched:
1. a number (or synthetic key) present once on each side: a direct pair;
2. duplicate-number groups: group-to-group, identical content first, then the most similar remaining
   record if more than half the fields agree — so a reordering of duplicates never makes events;
3. registrations without a number (synthetic keys) on either side: the same registration if its
   ingredient and applicant agree and most other fields do — a registration receiving its number is
   one CHANGED event (`number_assigned`), never WITHDRAWN + NEW;
4. re-numbering: a numbered registration left on the base side and a numbered one left today whose
   eight other fields have equal matching keys, when each is the other's only such candidate, are one
   registration listed under a corrected number — one CHANGED event (`number_changed`, MEDIUM), never
   WITHDRAWN + NEW. Candidates that do not pair up uniquely stay WITHDRAWN and NEW, each naming the
   numbers it may have been re-numbered from or to (`renumber_candidates`);
5. whatever is left: NEW (a reappearance if the number was seen on an earlier accepted day) or
   WITHDRAWN.
A pair differs per field: equal matching keys with different display values = COSMETIC — except for
the manufacturer / address / country fields when the number of sites changed: a site added in a
country already listed leaves the country *set* alone, but it is never a re-typing. Such pairs also
get one `sites` row per added / removed / changed site (CRITICAL), e.g. "제조소 추가: Name (중국)". The
same sites (equal name, address and country keys) listed in another order are COSMETIC: nothing changed
at any site.
Change rows are sorted (key, field order, before, after) so identical runs store identical rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

import polars as pl

from dmf_assets.domain.model import (
    COMPARED_FIELDS,
    FIELD_COLUMNS,
    FIELD_LABEL_KO,
    RENUMBERED_SEVERITY,
    SEVERITY_RANK,
    SITE_FIELDS,
    SITES_FIELD,
    Event,
    EventType,
    Severity,
)
from dmf_assets.domain.normalize import site_columns
from dmf_assets.domain.sites import KeyedSite, site_changes, site_label
from dmf_assets.domain.text import Kind, bizrno_valid_expr, company_key_expr, match_key, text_key_expr

#: fields scored when matching inside duplicate groups / pending registrations; all equal (every field but
#: the number) when pairing a re-numbered registration
SIMILARITY_KEYS: tuple[str, ...] = tuple(key for name, (_, key) in FIELD_COLUMNS.items() if name != "permit_no")
SUMMARY_COLUMNS: tuple[str, ...] = (
    "permit_no",
    "ingredient",
    "ingredient_base",
    "applicant",
    "bizrno",
    "manufacturer",
    "address",
    "countries",
    "issue_date",
    "target_class",
)
_RANK_TO_SEVERITY = {rank: name for name, rank in SEVERITY_RANK.items()}
_WATCH_COLUMNS = ("ingredient_key", "applicant_key", "manufacturer_key", "countries_key")
_SITE_VALUE_COLS = ("site_count", "sites", "sites_split_ok")
#: every snapshot column the diff reads; a caller holding big snapshots may keep just these
DIFF_COLUMNS: tuple[str, ...] = tuple(
    dict.fromkeys(
        [
            "dmf_key",
            "group_key",
            "content_hash",
            "identity_hash",
            "is_synthetic",
            "dup_count",
            "ingredient_key",
            "applicant_identity",
            *SIMILARITY_KEYS,
            *sorted({c for pair in FIELD_COLUMNS.values() for c in pair}),
            *_SITE_VALUE_COLS,
            *SUMMARY_COLUMNS,
            *_WATCH_COLUMNS,
        ]
    )
)

EVENT_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "event_type": pl.Utf8,
    "severity": pl.Utf8,
    "dmf_key": pl.Utf8,
    "base_dmf_key": pl.Utf8,
    "permit_no": pl.Utf8,
    "is_cosmetic": pl.Boolean,
    "is_reappearance": pl.Boolean,
    "number_assigned": pl.Boolean,
    "number_changed": pl.Boolean,
    "is_transfer": pl.Boolean,
    "is_rename": pl.Boolean,
    "watchlist_hit": pl.Boolean,
    "watch_reasons": pl.List(pl.Utf8),
    "changed_fields": pl.List(pl.Utf8),
    "cosmetic_fields": pl.List(pl.Utf8),
    "renumber_candidates": pl.List(pl.Utf8),
    **{f"{c}_summary": pl.Utf8 for c in SUMMARY_COLUMNS if c != "permit_no"},
}
CHANGE_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "dmf_key": pl.Utf8,
    "base_dmf_key": pl.Utf8,
    "field": pl.Utf8,
    "before": pl.Utf8,
    "after": pl.Utf8,
    "is_cosmetic": pl.Boolean,
    "severity": pl.Utf8,
}


class WatchlistLists(Protocol):
    """The four lists a watchlist is made of (the settings' `[watchlist]` section satisfies it)."""

    @property
    def ingredients(self) -> Iterable[str]: ...
    @property
    def applicants(self) -> Iterable[str]: ...
    @property
    def manufacturers(self) -> Iterable[str]: ...
    @property
    def countries(self) -> Iterable[str]: ...


@dataclass(frozen=True)
class Watchlist:
    """Case-insensitive substrings, matched against matching keys (so spacing/case never matter)."""

    ingredients: tuple[str, ...] = ()
    applicants: tuple[str, ...] = ()
    manufacturers: tuple[str, ...] = ()
    countries: tuple[str, ...] = ()

    @classmethod
    def of(cls, config: WatchlistLists) -> Watchlist:
        """From anything with the four lists as attributes (the settings' `[watchlist]` section)."""
        return cls(
            tuple(config.ingredients), tuple(config.applicants), tuple(config.manufacturers), tuple(config.countries)
        )


@dataclass(frozen=True)
class DiffResult:
    events: pl.DataFrame  # EVENT_SCHEMA, sorted by severity (worst first) then key
    changes: pl.DataFrame  # CHANGE_SCHEMA, one row per changed field (cosmetic included)
    baseline: bool = False
    counts: dict[str, int] = field(default_factory=dict)

    def to_events(self) -> list[Event]:
        """Events as dataclasses (for the CLI and tests; the pipeline keeps frames)."""
        by_key: dict[tuple[str | None, str | None], list[dict]] = {}
        for row in self.changes.iter_rows(named=True):
            by_key.setdefault((row["dmf_key"], row["base_dmf_key"]), []).append(row)
        return [
            Event.from_row(
                row, by_key.get((row["dmf_key"], row["base_dmf_key"]), ()) if row["event_type"] == "CHANGED" else ()
            )
            for row in self.events.iter_rows(named=True)
        ]


# --- matching ------------------------------------------------------------------------------------


def _similarity(a: Mapping, b: Mapping) -> float:
    return sum(1 for k in SIMILARITY_KEYS if a.get(k) == b.get(k)) / len(SIMILARITY_KEYS)


def _greedy_match(
    base_rows: list[dict],
    new_rows: list[dict],
    *,
    min_score: float,
    compatible: Callable[[dict, dict], bool] | None = None,
) -> list[tuple[str, str]]:
    """Content-identical pairs first, then best-similarity pairs above `min_score` (among the `compatible` ones),
    deterministic."""
    pairs: list[tuple[str, str]] = []
    free_base = sorted(base_rows, key=lambda r: r["dmf_key"])
    free_new = sorted(new_rows, key=lambda r: r["dmf_key"])
    for b in list(free_base):
        twin = next((n for n in free_new if n["content_hash"] == b["content_hash"]), None)
        if twin is not None:
            pairs.append((b["dmf_key"], twin["dmf_key"]))
            free_base.remove(b)
            free_new.remove(twin)
    scored = sorted(
        (
            (-_similarity(b, n), b["dmf_key"], n["dmf_key"])
            for b in free_base
            for n in free_new
            if compatible is None or compatible(b, n)
        ),
    )
    used_b: set[str] = set()
    used_n: set[str] = set()
    for neg_score, bk, nk in scored:
        if -neg_score <= min_score:
            break
        if bk in used_b or nk in used_n:
            continue
        pairs.append((bk, nk))
        used_b.add(bk)
        used_n.add(nk)
    return pairs


def _group_size(snapshot: pl.DataFrame) -> pl.Expr:
    """How many rows of this snapshot share the row's group_key. A keyed snapshot carries it as
    `dup_count` (`keys.with_snapshot_keys`), which saves hashing a million keys twice; a snapshot
    read back from the history has no such column and is counted."""
    return (pl.col("dup_count") if "dup_count" in snapshot.columns else pl.len().over("group_key")).alias("_size")


def _match(base: pl.DataFrame, new: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """All matched pairs as (base_dmf_key, dmf_key, match, _b_hash, _n_hash), the rows of each side left
    unmatched (what becomes WITHDRAWN and NEW; the new rows with the group_key and identity_hash that say
    whether they reappear), and the possible re-numberings among those (_side, dmf_key, renumber_candidates)."""
    match_cols = list(
        dict.fromkeys(
            [
                "dmf_key",
                "group_key",
                "content_hash",
                "is_synthetic",
                "ingredient_key",
                "applicant_identity",
                *SIMILARITY_KEYS,
            ]
        )
    )
    b = base.select(*match_cols, _group_size(base))
    n = new.select(*match_cols, "identity_hash", _group_size(new))
    # 1. one on each side, 2. duplicate groups, group-to-group
    matched = pl.concat([_direct_pairs(b, n), *_duplicate_group_pairs(b, n)])
    b_left = b.join(matched.select(pl.col("base_dmf_key").alias("dmf_key")), on="dmf_key", how="anti")
    n_left = n.join(matched.select("dmf_key"), on="dmf_key", how="anti")
    # 3. registrations without a number, on either side
    if pending := _pending_pairs(b_left, n_left):
        matched, b_left, n_left = _take(matched, b_left, n_left, _with_hashes(_pairs_frame(pending, "pending"), b, n))
    # 4. numbered registrations listed under another number
    renumbered, candidates = _renumbering(b_left, n_left, base, new)
    if renumbered.height:
        matched, b_left, n_left = _take(matched, b_left, n_left, _with_hashes(renumbered, b, n))
    return matched, b_left, n_left, candidates


def _take(
    matched: pl.DataFrame, b_left: pl.DataFrame, n_left: pl.DataFrame, pairs: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """`pairs` added to the matched pairs, their rows taken from those left on each side."""
    return (
        pl.concat([matched, pairs]),
        b_left.filter(~pl.col("dmf_key").is_in(pairs.get_column("base_dmf_key").implode())),
        n_left.filter(~pl.col("dmf_key").is_in(pairs.get_column("dmf_key").implode())),
    )


def _direct_pairs(b: pl.DataFrame, n: pl.DataFrame) -> pl.DataFrame:
    """A number (or synthetic key) present once on each side.

    The pair's content hashes come along: `_compare_pairs` needs only the pairs whose hashes differ,
    and joining a million pairs to both snapshots again for them costs seconds and ~0.3 GB
    (the three columns are selected before the filter: an eager filter copies every column it is given)."""
    return (
        b.select("group_key", "_size", base_dmf_key="dmf_key", _b_hash="content_hash")
        .filter(pl.col("_size") == 1)
        .drop("_size")
        .join(
            n.select("group_key", "dmf_key", "_size", _n_hash="content_hash")
            .filter(pl.col("_size") == 1)
            .drop("_size"),
            on="group_key",
        )
        .select("base_dmf_key", "dmf_key", pl.lit("direct").alias("match"), "_b_hash", "_n_hash")
    )


def _duplicate_group_pairs(b: pl.DataFrame, n: pl.DataFrame) -> list[pl.DataFrame]:
    """Duplicate-number groups, group-to-group (few rows: plain Python is clearer here)."""
    multi = pl.concat(
        [b.filter(pl.col("_size") > 1).get_column("group_key"), n.filter(pl.col("_size") > 1).get_column("group_key")]
    ).unique()
    if not multi.len():
        return []
    b_multi = b.filter(pl.col("group_key").is_in(multi.implode()))
    n_multi = n.filter(pl.col("group_key").is_in(multi.implode()))
    # `_greedy_match`'s first pass, for all groups at once: taking base rows in dmf_key order, each pairs
    # with the first free new row of its content, i.e. the i-th base row of a (group, content) with the
    # i-th new row of it (dmf_key order on both sides). Usually that pairs every row of every group.
    twin_keys = ["group_key", "content_hash", "_twin"]
    twin_rank = pl.col("dmf_key").rank("ordinal").over("group_key", "content_hash").alias("_twin")
    twins = b_multi.select("group_key", "content_hash", twin_rank, base_dmf_key="dmf_key").join(
        n_multi.select("group_key", "content_hash", twin_rank, "dmf_key"), on=twin_keys, nulls_equal=True
    )
    pairs = [
        twins.select(
            "base_dmf_key",
            "dmf_key",
            pl.lit("duplicate_group").alias("match"),
            pl.col("content_hash").alias("_b_hash"),
            pl.col("content_hash").alias("_n_hash"),
        )
    ]
    # the rest of the greedy match (similarity) for the groups with rows left on both sides
    b_rest = b_multi.join(twins.select(dmf_key="base_dmf_key"), on="dmf_key", how="anti")
    n_rest = n_multi.join(twins.select("dmf_key"), on="dmf_key", how="anti")
    both = b_rest.join(n_rest.select("group_key").unique(), on="group_key", how="semi", nulls_equal=True)
    group_pairs = []
    if both.height:
        n_groups = n_rest.partition_by("group_key", as_dict=True)
        for gk, b_rows in both.partition_by("group_key", as_dict=True).items():
            group_pairs += _greedy_match(b_rows.to_dicts(), n_groups[gk].to_dicts(), min_score=0.5)
    if group_pairs:
        pairs.append(_with_hashes(_pairs_frame(group_pairs, "duplicate_group"), b, n))
    return pairs


def _pending_pairs(b_left: pl.DataFrame, n_left: pl.DataFrame) -> list[tuple[str, str]]:
    """A registration without a number on either side: the base's unnumbered rows against every new row left,
    then — the mirror case — a numbered base row that lost its number."""
    pending_pairs: list[tuple[str, str]] = []
    b_cand = b_left.filter(pl.col("is_synthetic"))
    if b_cand.height and n_left.height:
        pending_pairs += _pending_match(b_cand, n_left)
    n_syn = n_left.filter(pl.col("is_synthetic"))
    if n_syn.height:
        taken_b = {p[0] for p in pending_pairs}
        taken_n = {p[1] for p in pending_pairs}
        b_num = b_left.filter(~pl.col("is_synthetic") & ~pl.col("dmf_key").is_in(list(taken_b)))
        n_syn = n_syn.filter(~pl.col("dmf_key").is_in(list(taken_n)))
        if b_num.height and n_syn.height:
            pending_pairs += _pending_match(b_num, n_syn)
    return pending_pairs


#: the display values and the matching keys of the fields that list the sites, in the sites' order
_SITE_DISPLAYS: tuple[str, ...] = tuple(FIELD_COLUMNS[f][0] for f in SITE_FIELDS)
_SITE_KEYS: tuple[str, ...] = tuple(FIELD_COLUMNS[f][1] for f in SITE_FIELDS)
#: what a re-numbered registration keeps: every field's key but the number's, its sites as a set (`_site_sets`)
_RENUMBER_KEYS: tuple[str, ...] = (*(k for k in SIMILARITY_KEYS if k not in _SITE_KEYS), "_sites")


def _site_keys() -> dict[str, pl.Expr]:
    """A site's matching keys, by which the comparison tells sites apart (with its country): its name's company key
    (`nk`) and its address's text key (`ak`) — of a frame with the sites' `name` and `address`."""
    return {"nk": company_key_expr(pl.col("name")), "ak": text_key_expr(pl.col("address"))}


def _site_sets(rows: pl.DataFrame, displays: pl.DataFrame) -> pl.DataFrame:
    """`rows` with `_sites`: their sites as a set — each site's name, address and country keys, sorted — so the same
    sites listed in another order are equal (as the comparison finds them, docs/DOMAIN.md §5); the fields' own keys,
    in order, for a row whose sites could not be split. `displays`: the side's rows with their display values (and
    the sites the normalizer split, but for a comparison-only snapshot, as `_site_candidates` finds them)."""
    shown = displays.join(rows.select("dmf_key"), on="dmf_key", how="semi")
    if "sites" in shown.columns:
        split = shown.select("dmf_key", "sites", "sites_split_ok")
    else:  # a comparison-only snapshot: the few rows' sites split here
        split = shown.select("dmf_key").hstack(site_columns(shown.select(*_SITE_DISPLAYS)))
    sets = (
        split.filter("sites_split_ok")
        .explode("sites")
        .unnest("sites")
        .group_by("dmf_key")
        .agg(
            _set=pl.concat_str(
                [
                    part.fill_null("")  # a part missing stays in its place: never read as the next one
                    for part in (*_site_keys().values(), pl.col("country"))
                ],
                separator="\x1e",
            )
            .sort()
            .str.join("\x1f")
        )
    )
    in_order = pl.concat_str([pl.col(k).fill_null("") for k in _SITE_KEYS], separator="\x1e")
    return rows.join(sets, on="dmf_key", how="left").with_columns(
        _sites=pl.coalesce("_set", pl.lit("\x1d") + in_order)  # a split set never equals the fields' own keys
    )


def _renumbering(
    b_left: pl.DataFrame, n_left: pl.DataFrame, base: pl.DataFrame, new: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(pairs re-numbered, possible re-numberings by side "b"/"n") among the numbered rows left on both sides
    (docs/DOMAIN.md §4).

    Rows are grouped by the matching keys of every field but the number (equal keys: cosmetic differences
    allowed, nulls equal; the sites as a set, so a registration re-numbered with its sites listed in another
    order is still one). A group with one row on each side is one registration re-numbered; a group with
    more on either side is ambiguous: each of its rows names the other side's numbers as candidates. Only the
    few unmatched rows are grouped — one group_by, no pairwise comparison."""
    empty = (
        _pairs_frame([], "renumbered"),
        pl.DataFrame(schema={"_side": pl.Utf8, "dmf_key": pl.Utf8, "renumber_candidates": pl.List(pl.Utf8)}),
    )
    left = [side.filter(~pl.col("is_synthetic")) for side in (b_left, n_left)]
    if not (left[0].height and left[1].height):
        return empty
    left = [
        _site_sets(side, displays).select("dmf_key", "group_key", *_RENUMBER_KEYS, _side=pl.lit(name))
        for name, side, displays in (("b", left[0], base), ("n", left[1], new))
    ]
    is_base = pl.col("_side") == "b"
    groups = (
        pl.concat(left, how="vertical_relaxed")  # a base read back from the history may type a column otherwise
        .group_by(_RENUMBER_KEYS)
        .agg(
            b_keys=pl.col("dmf_key").filter(is_base).sort(),
            n_keys=pl.col("dmf_key").filter(~is_base).sort(),
            b_numbers=pl.col("group_key").filter(is_base).unique().sort(),
            n_numbers=pl.col("group_key").filter(~is_base).unique().sort(),
        )
        .filter((pl.col("b_keys").list.len() > 0) & (pl.col("n_keys").list.len() > 0))
        .drop(_RENUMBER_KEYS)
    )
    if not groups.height:
        return empty
    unique = (pl.col("b_keys").list.len() == 1) & (pl.col("n_keys").list.len() == 1)
    pairs = groups.filter(unique).select(
        base_dmf_key=pl.col("b_keys").list.first(), dmf_key=pl.col("n_keys").list.first(), match=pl.lit("renumbered")
    )
    ambiguous = groups.filter(~unique)
    candidates = pl.concat(
        [
            ambiguous.select(_side=pl.lit("b"), dmf_key="b_keys", renumber_candidates="n_numbers").explode("dmf_key"),
            ambiguous.select(_side=pl.lit("n"), dmf_key="n_keys", renumber_candidates="b_numbers").explode("dmf_key"),
        ]
    )
    return pairs, candidates


def _same_applicant(b: Mapping, n: Mapping) -> bool:
    """The same applicant by BIZRNO or by name: a BIZRNO filled in, corrected or transferred (same name) on a row
    without a number is still its registration — its synthetic key changes with the BIZRNO, so only this finds it."""
    return b["applicant_identity"] == n["applicant_identity"] or b["applicant_key"] == n["applicant_key"]


def _pending_match(base_rows: pl.DataFrame, new_rows: pl.DataFrame) -> list[tuple[str, str]]:
    """Same ingredient and applicant, then the most similar record (more than half the fields)."""
    on = ["ingredient_key"]
    candidates = base_rows.join(new_rows.select(on).unique(), on=on, how="semi")
    if not candidates.height:
        return []
    pairs: list[tuple[str, str]] = []
    base_groups = candidates.partition_by(on, as_dict=True)
    new_groups = new_rows.join(candidates.select(on).unique(), on=on, how="semi").partition_by(on, as_dict=True)
    for gk, b_rows in base_groups.items():
        n_rows = new_groups.get(gk)
        if n_rows is not None:
            pairs += _greedy_match(b_rows.to_dicts(), n_rows.to_dicts(), min_score=0.5, compatible=_same_applicant)
    return pairs


def _with_hashes(pairs: pl.DataFrame, b: pl.DataFrame, n: pl.DataFrame) -> pl.DataFrame:
    """A few pairs with both sides' content hashes (`_b_hash`, `_n_hash`), like the direct pairs."""
    b_hash = _rows_for(
        b, pairs["base_dmf_key"], [pl.col("dmf_key").alias("base_dmf_key"), pl.col("content_hash").alias("_b_hash")]
    )
    n_hash = _rows_for(n, pairs["dmf_key"], ["dmf_key", pl.col("content_hash").alias("_n_hash")])
    return pairs.join(b_hash, on="base_dmf_key", how="left", maintain_order="left").join(
        n_hash, on="dmf_key", how="left", maintain_order="left"
    )


def _pairs_frame(pairs: list[tuple[str, str]], kind: str) -> pl.DataFrame:
    return pl.DataFrame(
        {"base_dmf_key": [p[0] for p in pairs], "dmf_key": [p[1] for p in pairs], "match": [kind] * len(pairs)},
        schema={"base_dmf_key": pl.Utf8, "dmf_key": pl.Utf8, "match": pl.Utf8},
    )


# --- comparison ----------------------------------------------------------------------------------


_FIELD_ORDER: dict[str, int] = {name: i for i, name in enumerate([*FIELD_COLUMNS, SITES_FIELD])}


def _site_rows(joined: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """`sites` change rows of the pairs whose manufacturer/address/countries changed (CHANGE_SCHEMA), and
    `joined` with `_reordered`: true for the pairs whose sites are the same ones, listed in another order."""
    cand = _site_candidates(joined)
    rows, reordered = _site_changes(cand) if cand.height else ([], [])
    pair_schema = {"dmf_key": pl.Utf8, "base_dmf_key": pl.Utf8}
    flagged = joined.join(
        pl.DataFrame(reordered, schema=pair_schema, orient="row").with_columns(_reordered=pl.lit(True)),
        on=["dmf_key", "base_dmf_key"],
        how="left",
        maintain_order="left",
    ).with_columns(pl.col("_reordered").fill_null(False))
    return pl.DataFrame(rows, schema={**pair_schema, "before": pl.Utf8, "after": pl.Utf8}).select(
        "dmf_key",
        "base_dmf_key",
        pl.lit(SITES_FIELD).alias("field"),
        "before",
        "after",
        pl.lit(False).alias("is_cosmetic"),
        pl.lit(Severity.CRITICAL.value).alias("severity"),
    ), flagged


def _site_candidates(joined: pl.DataFrame) -> pl.DataFrame:
    """The pairs whose site fields changed and that have more than one site on a side, with both sides' sites."""
    display_changed = pl.any_horizontal(
        [~pl.col(f"b.{FIELD_COLUMNS[f][0]}").eq_missing(pl.col(f"n.{FIELD_COLUMNS[f][0]}")) for f in SITE_FIELDS]
    )
    # single site on both sides: the field rows already say it all
    multi = (
        (pl.col("b.site_count") != pl.col("n.site_count")) | (pl.col("b.site_count") > 1) | (pl.col("n.site_count") > 1)
    )
    cand = joined.filter(display_changed & multi.fill_null(False))
    for side in ("b", "n"):
        if f"{side}.sites" not in cand.columns:  # a comparison-only snapshot: the candidates' sites only
            cand = cand.hstack(
                site_columns(cand.select(pl.col(f"{side}.{c}").alias(c) for c in _SITE_DISPLAYS)).rename(
                    lambda c, side=side: f"{side}.{c}"  # type: ignore[misc]  # polars types the mapper as one argument
                )
            )
    return cand.select(
        "dmf_key",
        "base_dmf_key",
        "b.sites",
        "n.sites",
        "b.site_count",
        "n.site_count",
        "b.sites_split_ok",
        "n.sites_split_ok",
    )


def _site_changes(cand: pl.DataFrame) -> tuple[list[dict], list[tuple[str, str]]]:
    """One row per added / removed / changed site of each candidate pair (only the count when a split
    failed), and the pairs whose sites all match by their keys: the same sites, listed in another order."""
    # matching keys of every site name/address, computed once with the normalizer's own rules
    flat = (
        pl.concat([cand.select(pl.col(c).alias("s")).explode("s").unnest("s") for c in ("b.sites", "n.sites")])
        .select("name", "address")
        .unique()
    )
    keys = {
        (r["name"], r["address"]): (r["nk"], r["ak"]) for r in flat.with_columns(**_site_keys()).iter_rows(named=True)
    }

    def keyed(sites: list[dict] | None) -> list[KeyedSite]:
        return [
            KeyedSite(s["name"], s["address"], s["country"], s["role"], *keys[(s["name"], s["address"])])
            for s in (sites or [])
        ]

    rows: list[dict] = []
    reordered: list[tuple[str, str]] = []
    for r in cand.iter_rows(named=True):
        pair = {"dmf_key": r["dmf_key"], "base_dmf_key": r["base_dmf_key"]}
        if r["b.sites_split_ok"] and r["n.sites_split_ok"]:
            changes = site_changes(keyed(r["b.sites"]), keyed(r["n.sites"]))
            if not changes:
                reordered.append((r["dmf_key"], r["base_dmf_key"]))
            for ch in changes:
                detail = ch.kind == "changed"
                rows.append({**pair, "before": site_label(ch.before, detail), "after": site_label(ch.after, detail)})
        elif r["b.site_count"] != r["n.site_count"]:
            # the split could not be trusted: say only how many sites there are
            rows.append({**pair, "before": f"제조소 {r['b.site_count']}곳", "after": f"제조소 {r['n.site_count']}곳"})
    return rows, reordered


def _sort_changes(changes: pl.DataFrame) -> pl.DataFrame:
    """A total order: the same diff always stores its change rows in the same order."""
    return (
        changes.with_columns(_order=pl.col("field").replace_strict(_FIELD_ORDER, default=99, return_dtype=pl.Int16))
        .sort(["dmf_key", "base_dmf_key", "_order", "before", "after"], nulls_last=False)
        .drop("_order")
    )


def _compare_pairs(base: pl.DataFrame, new: pl.DataFrame, pairs: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Per-field changes of matched pairs -> (CHANGED events without watchlist, field changes)."""
    value_cols = sorted({c for pair in FIELD_COLUMNS.values() for c in pair} | set(_SITE_VALUE_COLS))
    # (a comparison-only snapshot has no sites: `_site_rows` derives them for the rows it compares)
    b_cols, n_cols = ([c for c in value_cols if c in f.columns] for f in (base, new))
    # content_hash covers exactly the compared display values, so a pair with equal hashes has no
    # field change: compare only the (few) pairs whose hashes differ instead of every pair.
    pairs = pairs.filter(~pl.col("_b_hash").eq_missing(pl.col("_n_hash"))).drop("_b_hash", "_n_hash")
    joined = pairs.join(
        base.select("dmf_key", *b_cols).rename({c: f"b.{c}" for c in ["dmf_key", *b_cols]}),
        left_on="base_dmf_key",
        right_on="b.dmf_key",
    ).join(new.select("dmf_key", *n_cols).rename({c: f"n.{c}" for c in n_cols}), on="dmf_key")

    site_rows, joined = _site_rows(joined)
    sites_differ = ~pl.col("b.site_count").eq_missing(pl.col("n.site_count"))
    renumbered = (
        pl.col("b.permit_no").is_not_null()
        & pl.col("n.permit_no").is_not_null()
        & (pl.col("b.permit_no") != pl.col("n.permit_no"))
    )
    change_frames = []
    for name, (display, key) in FIELD_COLUMNS.items():
        display_changed = ~pl.col(f"b.{display}").eq_missing(pl.col(f"n.{display}"))
        key_changed = ~pl.col(f"b.{key}").eq_missing(pl.col(f"n.{key}"))
        if name in SITE_FIELDS:
            # a different number of sites is never a re-typing; the same sites in another order always is
            key_changed = (key_changed | sites_differ) & ~pl.col("_reordered")
        severity = pl.lit(COMPARED_FIELDS[name].value)
        if name == "permit_no":  # a published number corrected, not one received (docs/DOMAIN.md §4)
            severity = pl.when(renumbered).then(pl.lit(RENUMBERED_SEVERITY.value)).otherwise(severity)
        change_frames.append(
            joined.filter(display_changed).select(
                "dmf_key",
                "base_dmf_key",
                pl.lit(name).alias("field"),
                pl.col(f"b.{display}").alias("before"),
                pl.col(f"n.{display}").alias("after"),
                (~key_changed).alias("is_cosmetic"),
                pl.when(key_changed).then(severity).otherwise(pl.lit(Severity.COSMETIC.value)).alias("severity"),
            )
        )
    change_frames.append(site_rows)
    changes = _sort_changes(pl.concat(change_frames).cast(CHANGE_SCHEMA))  # type: ignore[arg-type]  # polars' own alias is private

    rank = pl.col("severity").replace_strict(SEVERITY_RANK, return_dtype=pl.Int8)
    compared = pl.col("field") != SITES_FIELD  # changed_fields name compared fields only
    per_event = changes.group_by("dmf_key", "base_dmf_key", maintain_order=True).agg(
        changed_fields=pl.col("field").filter(~pl.col("is_cosmetic") & compared),
        cosmetic_fields=pl.col("field").filter(pl.col("is_cosmetic")),
        worst=rank.max(),
    )
    flags = joined.select(
        "dmf_key",
        "base_dmf_key",
        number_assigned=pl.col("b.permit_no").is_null() & pl.col("n.permit_no").is_not_null(),
        number_changed=renumbered,
        # an invalid BIZRNO made valid (or the reverse) under the same name is a correction (docs/DOMAIN.md §4)
        is_transfer=pl.col("b.bizrno").is_not_null()
        & pl.col("n.bizrno").is_not_null()
        & (pl.col("b.bizrno") != pl.col("n.bizrno"))
        & ~(
            ~(bizrno_valid_expr(pl.col("b.bizrno")) & bizrno_valid_expr(pl.col("n.bizrno")))
            & pl.col("b.applicant_key").eq_missing(pl.col("n.applicant_key"))
        ),
        is_rename=pl.col("b.bizrno").is_not_null()
        & pl.col("b.bizrno").eq_missing(pl.col("n.bizrno"))
        & ~pl.col("b.applicant_key").eq_missing(pl.col("n.applicant_key")),
    )
    events = per_event.join(flags, on=["dmf_key", "base_dmf_key"], how="left").with_columns(
        event_type=pl.lit(EventType.CHANGED.value),
        severity=pl.col("worst").replace_strict(_RANK_TO_SEVERITY, return_dtype=pl.Utf8),
        is_cosmetic=pl.col("changed_fields").list.len() == 0,
        is_reappearance=pl.lit(False),
    )
    return events.drop("worst"), changes


def _rows_for(snapshot: pl.DataFrame, keys: pl.Series, columns: list) -> pl.DataFrame:
    """The few snapshot rows an event list refers to, filtered before any join: a join against the
    whole snapshot would hash all of its rows (seconds and a gigabyte at 1 M rows)."""
    return snapshot.filter(pl.col("dmf_key").is_in(keys.drop_nulls().unique().implode())).select(columns)


def _attach_summary(events: pl.DataFrame, base: pl.DataFrame, new: pl.DataFrame) -> pl.DataFrame:
    """Display values of the registration (today's; the base's for WITHDRAWN) for people and files,
    and the matching keys the watchlist reads (`_w_*`; like each side's `_n_*` / `_b_*`, dropped after
    `_apply_watchlist`)."""
    read = (*SUMMARY_COLUMNS, *_WATCH_COLUMNS)
    n_side, b_side = (
        _rows_for(frame, events[key], [pl.col("dmf_key").alias(key), *[pl.col(c).alias(f"_{side}_{c}") for c in read]])
        for side, frame, key in (("n", new, "dmf_key"), ("b", base, "base_dmf_key"))
    )
    withdrawn = pl.col("event_type") == EventType.WITHDRAWN.value
    out = events.join(n_side, on="dmf_key", how="left").join(b_side, on="base_dmf_key", how="left")
    named = {c: c if c == "permit_no" else f"{c}_summary" for c in SUMMARY_COLUMNS} | {
        c: f"_w_{c}" for c in _WATCH_COLUMNS
    }
    return out.with_columns(
        **{name: pl.when(withdrawn).then(pl.col(f"_b_{c}")).otherwise(pl.col(f"_n_{c}")) for c, name in named.items()}
    )


def _apply_watchlist(events: pl.DataFrame, watchlist: Watchlist | None) -> pl.DataFrame:
    """Each pattern matched against the normalizer's key of its own kind (`match_key`)."""
    watchlist = watchlist or Watchlist()
    reasons = []
    lists: tuple[tuple[str, str, tuple[str, ...], Kind], ...] = (
        ("성분", "ingredient_key", watchlist.ingredients, "text"),
        (FIELD_LABEL_KO["applicant"], "applicant_key", watchlist.applicants, "company"),
        ("제조소", "manufacturer_key", watchlist.manufacturers, "company"),
        (FIELD_LABEL_KO["countries"], "countries_key", watchlist.countries, "country"),
    )
    for label, column, patterns, kind in lists:
        for pattern in patterns:
            needle = match_key(pattern, kind)
            if needle:
                reasons.append(
                    pl.when(pl.col(f"_w_{column}").fill_null("").str.contains(needle, literal=True)).then(
                        pl.lit(f"{label}: {pattern}")
                    )
                )
    if not reasons:  # no watchlist, or no pattern with a key
        return events.with_columns(watchlist_hit=pl.lit(False), watch_reasons=pl.lit([], dtype=pl.List(pl.Utf8)))
    events = events.with_columns(watch_reasons=pl.concat_list(reasons).list.drop_nulls())
    hit = pl.col("watch_reasons").list.len() > 0
    raise_to_high = (
        hit
        & ~pl.col("is_cosmetic")
        & (pl.col("severity").replace_strict(SEVERITY_RANK, return_dtype=pl.Int8) < SEVERITY_RANK["HIGH"])
    )
    return events.with_columns(
        watchlist_hit=hit,
        severity=pl.when(raise_to_high).then(pl.lit("HIGH")).otherwise(pl.col("severity")),
    )


def diff_snapshots(
    base: pl.DataFrame | None,
    new: pl.DataFrame,
    *,
    previously_seen: Iterable[str] = (),
    watchlist: Watchlist | None = None,
) -> DiffResult:
    """Events turning `base` into `new`; both are keyed frames (`keys.assign_keys` output).

    `base` None = the first accepted day: a baseline with no events. `previously_seen` = numbers (or
    synthetic keys) and identity hashes present on an accepted day before the base but not in it: a
    NEW registration matching one of those is a reappearance (HIGH).
    """
    if base is None:
        return DiffResult(
            events=pl.DataFrame(schema=EVENT_SCHEMA),
            changes=pl.DataFrame(schema=CHANGE_SCHEMA),
            baseline=True,
            counts={"NEW": 0, "CHANGED": 0, "WITHDRAWN": 0, "COSMETIC": 0, "substantive": 0, "population": new.height},
        )
    # only DIFF_COLUMNS from here on (so the list stays complete: a missing one fails every test)
    base, new = (f.select([c for c in DIFF_COLUMNS if c in f.columns]) for f in (base, new))
    pairs, base_left, new_left, candidates = _match(base, new)
    changed, changes = _compare_pairs(base, new, pairs)
    del pairs  # a million rows at 1 M; nothing below needs them
    events = _with_unmatched(changed, new_left, base_left, candidates, previously_seen)
    events = _attach_summary(events, base, new)
    events = _apply_watchlist(events, watchlist)
    events = _in_order(events.drop([c for c in events.columns if c.startswith("_")]))
    return DiffResult(events=events, changes=changes, counts=_counts(events, base.height))


def _with_unmatched(
    changed: pl.DataFrame,
    new_left: pl.DataFrame,
    base_left: pl.DataFrame,
    candidates: pl.DataFrame,
    previously_seen: Iterable[str],
) -> pl.DataFrame:
    """The CHANGED events and, from the rows left unmatched, the NEW and WITHDRAWN ones (each naming the numbers
    it may have been re-numbered from or to)."""
    seen = pl.Series("seen", list(previously_seen), dtype=pl.Utf8)
    new_rows = new_left.select(
        "dmf_key",
        base_dmf_key=pl.lit(None, dtype=pl.Utf8),
        event_type=pl.lit(EventType.NEW.value),
        # the number came back, or (inside a duplicate-number group) the very same registration did
        # (identity_hash is null where a comparison-only snapshot did not need it: snapshot.build_snapshot_pair_taking)
        is_reappearance=pl.col("group_key").is_in(seen) | pl.col("identity_hash").is_in(seen).fill_null(False),
    )
    new_rows = new_rows.with_columns(
        severity=pl.when(pl.col("is_reappearance")).then(pl.lit("HIGH")).otherwise(pl.lit("INFO"))
    )
    withdrawn = base_left.select(
        "dmf_key",
        base_dmf_key=pl.col("dmf_key"),
        event_type=pl.lit(EventType.WITHDRAWN.value),
        is_reappearance=pl.lit(False),
        severity=pl.lit("CRITICAL"),
    )
    no_strings = pl.lit([], dtype=pl.List(pl.Utf8))
    # a NEW or WITHDRAWN event has no flag and no field change
    plain = dict.fromkeys(
        ("is_cosmetic", "number_assigned", "number_changed", "is_transfer", "is_rename"), pl.lit(False)
    ) | dict.fromkeys(("changed_fields", "cosmetic_fields"), no_strings)
    columns = sorted([*changed.columns, "renumber_candidates"])
    return pl.concat(
        [
            changed.with_columns(renumber_candidates=no_strings).select(columns),
            *(
                rows.with_columns(**plain)
                .join(candidates.filter(pl.col("_side") == side).drop("_side"), on="dmf_key", how="left")
                .with_columns(pl.col("renumber_candidates").fill_null(no_strings))
                .select(columns)
                for side, rows in (("n", new_rows), ("b", withdrawn))
            ),
        ]
    )


def _in_order(events: pl.DataFrame) -> pl.DataFrame:
    """Worst severity first, then by key: the order every reader of a diff sees."""
    return (
        events.with_columns(_rank=pl.col("severity").replace_strict(SEVERITY_RANK, return_dtype=pl.Int8))
        .sort(
            ["_rank", "dmf_key", "event_type", "base_dmf_key"], descending=[True, False, False, False], nulls_last=True
        )
        .drop("_rank")
        .select(list(EVENT_SCHEMA))
        .cast(EVENT_SCHEMA)  # type: ignore[arg-type]  # polars' schema alias is private (polars._typing)
    )


def _counts(events: pl.DataFrame, base_rows: int) -> dict[str, int]:
    counts = {
        "NEW": int((events["event_type"] == "NEW").sum()),
        "CHANGED": int(((events["event_type"] == "CHANGED") & ~events["is_cosmetic"]).sum()),
        "WITHDRAWN": int((events["event_type"] == "WITHDRAWN").sum()),
        "COSMETIC": int(events["is_cosmetic"].sum()),
        "REAPPEARED": int(events["is_reappearance"].sum()),
        "NUMBER_ASSIGNED": int(events["number_assigned"].sum()),
        "NUMBER_CHANGED": int(events["number_changed"].sum()),
        "population": max(base_rows, 1),
    }
    counts["substantive"] = counts["NEW"] + counts["CHANGED"] + counts["WITHDRAWN"]
    return counts
