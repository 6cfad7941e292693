"""API rows -> the normalized frame (`model.NORMALIZED_COLUMNS`), vectorized with polars.

Values repeat a lot (9k rows, 441 applicants, a few hundred manufacturers), so every field is
normalized once per *unique* raw value and joined back. Only the multi-site split runs Python code,
once per unique (manufacturer, address, countries) combination with two or more sites.

The rules live in `text.py` (display/keys/dates/BIZRNO/countries), `permit.py`, `ingredients.py` and
`sites.py`; this module wires them into one frame and never raises on string content.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping

import polars as pl

from dmf_assets.domain.ingredients import with_ingredient_base
from dmf_assets.domain.model import API_FIELDS, NORMALIZED_COLUMNS, SOURCE_FIELDS, SPEC_SIZES
from dmf_assets.domain.permit import PERMIT_COLUMNS, with_permit_columns
from dmf_assets.domain.sites import SITE_DTYPE, SITES_DTYPE, split_display
from dmf_assets.domain.text import (
    bizrno_expr,
    bizrno_valid_expr,
    company_key_expr,
    display_expr,
    issue_date_expr,
    parse_country_display,
    permit_no_series,
    text_key_expr,
    without_lone_surrogates,
)

#: dtype of every output column (NORMALIZED_COLUMNS gives the order and the meaning)
NORMALIZED_SCHEMA: dict[str, pl.DataType] = {
    name: (
        pl.Int32()
        if name in ("row_no", "site_count")
        else pl.Boolean()
        if name in ("is_micronized", "sites_split_ok", "issue_date_invalid", "bizrno_valid", "has_replacement_char")
        else pl.List(pl.String())
        if name in ("country_list", "oversize_fields", "unresolved_countries")
        else SITES_DTYPE
        if name == "sites"
        else pl.String()
    )
    for name in NORMALIZED_COLUMNS
}

_RAW_SCHEMA = dict.fromkeys(API_FIELDS, pl.String)


# --- input -----------------------------------------------------------------------------------------


def _to_text(value: object) -> str | None:
    """A JSON value as text: None stays None, numbers become their digits, lone surrogates U+FFFD."""
    if value is None:
        return None
    if isinstance(value, str):
        text = value
    elif isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, float) and value.is_integer():
        text = str(int(value))
    elif isinstance(value, (int, float)):
        text = str(value)
    else:
        text = json.dumps(value, ensure_ascii=False, default=str)
    return without_lone_surrogates(text)


def items_to_frame(items: Iterable[Mapping[str, object]]) -> pl.DataFrame:
    """API item dicts -> a frame with exactly the nine API columns (Utf8, nullable), in order.

    Missing keys become null, extra keys are ignored, non-string values are turned into text.
    """
    columns: dict[str, list[str | None]] = {field: [] for field in API_FIELDS}
    for position, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise ValueError(f"API item #{position} is a {type(item).__name__}, expected a JSON object")
        for field in API_FIELDS:
            columns[field].append(_to_text(item.get(field)))
    return pl.DataFrame(columns, schema=_RAW_SCHEMA)


def _coerce(raw: pl.DataFrame) -> pl.DataFrame:
    """The nine API columns as Utf8 (absent ones all-null), plus row_no; other columns dropped."""
    out: dict[str, pl.Series] = {}
    for field in API_FIELDS:
        if field not in raw.columns:
            out[field] = pl.Series(field, [None] * raw.height, dtype=pl.String)
            continue
        column = raw.get_column(field)
        if column.dtype != pl.String:
            try:
                column = column.cast(pl.String)
            except Exception:  # noqa: BLE001 - nested/object values (any polars error): render them as text, like items_to_frame
                column = pl.Series(field, [_to_text(v) for v in column.to_list()], dtype=pl.String)
        out[field] = column.alias(field)
    frame = pl.DataFrame(out)
    return frame.with_columns(pl.int_range(0, frame.height, dtype=pl.Int32).alias("row_no"))


# --- per-field tables ------------------------------------------------------------------------------
# Each builder gets a LazyFrame holding one raw API column (`values`) and adds the derived columns.
# Usually `values` is that column's unique values and the result is joined back; when most values
# are distinct anyway (permit numbers) the builder runs on the column itself and no join is needed.

#: above this distinct/rows ratio, normalizing the unique values and joining back costs more
DIRECT_RATIO = 0.5
#: a per-field table builder (see above)
Builder = Callable[[pl.LazyFrame], pl.LazyFrame]


def site_part_exprs(display: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """(value, role) of a single-site name/address — the polars twin of `sites._clean_part`."""
    part = display.str.strip_chars(" ,")
    role = part.str.extract(r"^\[([^\]]*)\]", 1).str.strip_chars(" ")
    value = part.str.replace(r"^\[[^\]]*\]", "").str.strip_chars(" ,")
    return value.replace("", None), role.replace("", None)


def _permit_table(values: pl.LazyFrame) -> pl.LazyFrame:
    return with_permit_columns(values, "DMF_PERMIT_NO")


def _text_table(field: str, *, company: bool = False, site_part: str | None = None) -> Builder:
    """The builder of a text field: its display value (`SOURCE_FIELDS` names it) and matching key `<name>_key`
    — a company key for `company` — and, `site_part`, the single-site value and role of a name/address."""
    display = SOURCE_FIELDS[field]

    def build(values: pl.LazyFrame) -> pl.LazyFrame:
        table = values.with_columns(display_expr(pl.col(field)).alias(display))
        key_expr = company_key_expr(pl.col(display)) if company else text_key_expr(pl.col(display))
        table = table.with_columns(key_expr.alias(f"{display}_key"))
        if site_part is None:
            return table
        value, role = site_part_exprs(pl.col(display))
        return table.with_columns(value.alias(site_part), role.alias(f"{site_part}_role"))

    return build


def _ingredient_table(values: pl.LazyFrame) -> pl.LazyFrame:
    table = _text_table("INGR_KOR_NAME")(values)
    return with_ingredient_base(table, "ingredient", "ingredient_base", "is_micronized")


def _country_display_table(values: pl.LazyFrame) -> pl.LazyFrame:
    return values.with_columns(display_expr(pl.col("MANUF_COUNTRY_CODE_NM")).alias("countries"))


def _with_parsed_countries(displays: pl.DataFrame) -> pl.DataFrame:
    """Country fields parsed in Python: a registry has only a few hundred distinct ones."""
    parsed = {d: parse_country_display(d) for d in displays.get_column("countries").unique().drop_nulls().to_list()}
    by_display = pl.DataFrame(
        {
            "countries": list(parsed),
            "countries_key": [p.key for p in parsed.values()],
            "country_list": [list(p.per_site) for p in parsed.values()],
            "unresolved_countries": [list(p.unresolved) for p in parsed.values()],
        },
        schema={
            "countries": pl.String,
            "countries_key": pl.String,
            "country_list": pl.List(pl.String),
            "unresolved_countries": pl.List(pl.String),
        },
    )
    return displays.join(by_display, on="countries", how="left", maintain_order="left")


def _date_table(values: pl.LazyFrame) -> pl.LazyFrame:
    field = "DMF_PERMIT_DATE"
    table = values.with_columns(
        issue_date_expr(pl.col(field)).alias("issue_date"),
        display_expr(pl.col(field)).is_not_null().alias("_date_present"),
    )
    return table.with_columns((pl.col("_date_present") & pl.col("issue_date").is_null()).alias("issue_date_invalid"))


def _bizrno_table(values: pl.LazyFrame) -> pl.LazyFrame:
    table = values.with_columns(bizrno_expr(pl.col("BIZRNO")).alias("bizrno"))
    return table.with_columns(bizrno_valid_expr(pl.col("bizrno")).alias("bizrno_valid"))


_BUILDERS: dict[str, Builder] = {
    "DMF_PERMIT_NO": _permit_table,
    "INGR_KOR_NAME": _ingredient_table,
    "ENTP_NAME": _text_table("ENTP_NAME", company=True),
    "MNFCTR_NAME": _text_table("MNFCTR_NAME", company=True, site_part="_site_name"),
    "MNFCTR_PLACE": _text_table("MNFCTR_PLACE", site_part="_site_address"),
    "MANUF_COUNTRY_CODE_NM": _country_display_table,
    "DMF_PERMIT_DATE": _date_table,
    "BIZRNO": _bizrno_table,
    "NOTICE_CODE": _text_table("NOTICE_CODE"),
}


#: `full=False`: names and addresses without their single-site parts (and the permit number without its
#: parts: `permit_no_series`, outside the plans)
_COMPARISON_BUILDERS: dict[str, Builder] = {
    "MNFCTR_NAME": _text_table("MNFCTR_NAME", company=True),
    "MNFCTR_PLACE": _text_table("MNFCTR_PLACE"),
}


def _field_columns(frame: pl.DataFrame, full: bool = True) -> list[pl.DataFrame]:
    """Derived columns of every API field, one frame per field, aligned with `frame`'s rows
    (`full=False`: only what a comparison reads, see COMPARISON_OMITS)."""
    builders = (
        _BUILDERS if full else {f: b for f, b in {**_BUILDERS, **_COMPARISON_BUILDERS}.items() if f != "DMF_PERMIT_NO"}
    )
    distinct = frame.select(pl.col(f).n_unique() for f in builders).row(0)
    direct = {f: d > DIRECT_RATIO * frame.height for f, d in zip(builders, distinct, strict=True)}
    plans = [
        build(
            frame.lazy().select(field) if direct[field] else frame.lazy().select(pl.col(field).unique()).drop_nulls()
        ).with_columns(_flag_exprs(field) if full else [])
        for field, build in builders.items()
    ]
    tables = dict(zip(builders, pl.collect_all(plans), strict=True))
    tables["MANUF_COUNTRY_CODE_NM"] = _with_parsed_countries(tables["MANUF_COUNTRY_CODE_NM"])
    aligned = [
        table.drop(field) if direct[field] else _per_row(frame.get_column(field), table, field)
        for field, table in tables.items()
    ]
    permit = [] if full else [permit_no_series(frame.get_column("DMF_PERMIT_NO")).to_frame()]
    return aligned + permit


def _per_row(values: pl.Series, table: pl.DataFrame, field: str) -> pl.DataFrame:
    """The derived columns of `table` (one row per distinct non-null value, `table[field]`) for each of
    `values`, in order; null values get nulls. The values' positions in the table come from a cast to an
    Enum of the table's values — cheaper than a left join that keeps the row order."""
    position = values.cast(pl.Enum(table.get_column(field))).to_physical()
    return table.drop(field)[position]


# --- sites -----------------------------------------------------------------------------------------

_SITE_KEYS = ["manufacturer", "address", "countries"]


def _multi_site_columns(frame: pl.DataFrame) -> pl.DataFrame:
    """Python split for each unique multi-site (manufacturer, address, countries) combination;
    returns row_no + `_multi_sites`/`_multi_ok` for the multi-site rows only."""
    rows = frame.filter(pl.col("site_count") >= 2).select("row_no", *_SITE_KEYS, "country_list")
    combos = rows.unique(subset=_SITE_KEYS).drop("row_no")
    # flat per-site columns + one length per combination: building nested Python objects for polars
    # would cost more than the split itself
    flat: dict[str, list[str | None]] = {"name": [], "address": [], "country": [], "role": []}
    lengths, oks = [], []
    for name, address, _countries, country_list in combos.iter_rows():
        split = split_display(name, address, tuple(country_list))
        for site in split.sites:
            flat["name"].append(site.name)
            flat["address"].append(site.address)
            flat["country"].append(site.country)
            flat["role"].append(site.role)
        lengths.append(len(split.sites))
        oks.append(split.ok)
    per_site = pl.DataFrame(flat, schema=dict(SITE_DTYPE.to_schema())).select(pl.struct(pl.all()).alias("site"))
    table = combos.select(_SITE_KEYS).with_columns(
        _regroup(per_site.get_column("site"), lengths).alias("_multi_sites"),
        pl.Series("_multi_ok", oks, dtype=pl.Boolean),
    )
    joined = rows.select("row_no", *_SITE_KEYS).join(table, on=_SITE_KEYS, how="left", nulls_equal=True)
    return joined.drop(_SITE_KEYS)


def _regroup(flat: pl.Series, lengths: list[int]) -> pl.Series:
    """Cut a flat Series into consecutive lists of the given lengths (List[dtype], one per length)."""
    groups = pl.Series("g", range(len(lengths)), dtype=pl.Int64)
    group_of_item = groups.to_frame().select(pl.col("g").repeat_by(pl.Series(lengths, dtype=pl.UInt32))).explode("g")
    grouped = (
        pl.DataFrame({"g": group_of_item.get_column("g").drop_nulls(), "item": flat})
        .group_by("g", maintain_order=True)
        .agg(pl.col("item"))
    )
    # combinations with zero sites would have no group at all: join them back as empty lists
    full = groups.to_frame().join(grouped, on="g", how="left", maintain_order="left")
    return full.get_column("item").fill_null(pl.lit([], dtype=pl.List(flat.dtype)))


def _site_columns(frame: pl.DataFrame) -> pl.DataFrame:
    multi = _multi_site_columns(frame)
    frame = frame.hstack(
        frame.select("row_no").join(multi, on="row_no", how="left", maintain_order="left").drop("row_no")
    )
    has_content = pl.col("manufacturer").is_not_null() | pl.col("address").is_not_null()
    one_site = pl.concat_list(
        pl.struct(
            pl.col("_site_name").alias("name"),
            pl.col("_site_address").alias("address"),
            pl.col("country_list").list.first().alias("country"),
            pl.coalesce("_site_name_role", "_site_address_role").alias("role"),
        ).cast(SITE_DTYPE)
    )
    single_sites = one_site.list.head(pl.when((pl.col("site_count") == 1) | has_content).then(1).otherwise(0))
    single_ok = (pl.col("site_count") == 1) & pl.col("manufacturer").is_not_null() & pl.col("address").is_not_null()
    multiple = pl.col("site_count") >= 2
    return frame.with_columns(
        pl.when(multiple).then(pl.col("_multi_sites")).otherwise(single_sites).alias("sites"),
        pl.when(multiple).then(pl.col("_multi_ok")).otherwise(single_ok).fill_null(False).alias("sites_split_ok"),
    )


# --- quality flags ---------------------------------------------------------------------------------
# Computed per distinct raw value with the field's other columns (`_flag_exprs`), then per row.

_LONG = "_long_"  # _long_<FIELD>: the raw value is longer than SPEC_SIZES allows
_FFFD = "_fffd_"  # _fffd_<FIELD>: the raw value holds U+FFFD


def _flag_exprs(field: str) -> list[pl.Expr]:
    raw = pl.col(field)
    flags = [raw.str.contains("\ufffd", literal=True).fill_null(False).alias(_FFFD + field)]
    if field in SPEC_SIZES:
        flags.append((raw.str.len_chars() > SPEC_SIZES[field]).fill_null(False).alias(_LONG + field))
    return flags


def _quality_columns(frame: pl.DataFrame) -> pl.DataFrame:
    """oversize_fields and has_replacement_char from the per-field flag columns (which are dropped).

    Over-size values are rare, so the per-row field lists are built only for the rows that have one
    (a list per row for all rows would cost more than the rest of the field checks together).
    """
    long_cols = [_LONG + f for f in SPEC_SIZES]
    flags = frame.select("row_no", *[pl.col(_LONG + f).fill_null(False).alias(f) for f in SPEC_SIZES])
    hits = flags.filter(pl.any_horizontal(list(SPEC_SIZES)))
    per_row = (
        hits.unpivot(index="row_no", on=list(SPEC_SIZES), variable_name="field", value_name="hit")
        .filter("hit")  # unpivot stacks field by field, so each row's list keeps SPEC_SIZES order
        .group_by("row_no", maintain_order=True)
        .agg(pl.col("field").alias("oversize_fields"))
    )
    replacement = pl.any_horizontal([pl.col(_FFFD + f).fill_null(False) for f in API_FIELDS])
    oversize = (
        frame.select("row_no")
        .join(per_row, on="row_no", how="left", maintain_order="left")
        .get_column("oversize_fields")
    )
    return frame.with_columns(
        replacement.alias("has_replacement_char"),
        oversize.fill_null(pl.lit([], dtype=pl.List(pl.String))),
    ).drop(*long_cols, *[_FFFD + f for f in API_FIELDS])


# --- the frame -------------------------------------------------------------------------------------


def normalize_items(raw: pl.DataFrame | list[Mapping[str, object]]) -> pl.DataFrame:
    """Normalize API rows: exactly NORMALIZED_COLUMNS (in order, with NORMALIZED_SCHEMA dtypes),
    one row per input row in input order. Missing API columns count as all-null; extras are ignored.
    A list of item dicts is accepted too (see `items_to_frame`)."""
    return normalize_taking([raw if isinstance(raw, pl.DataFrame) else items_to_frame(raw)])


def site_columns(displays: pl.DataFrame) -> pl.DataFrame:
    """`sites` and `sites_split_ok` (NORMALIZED_SCHEMA dtypes) of rows given by their `manufacturer`,
    `address` and `countries` display values — what `normalize_taking` derives them from, so the same
    result. For a comparison that needs the sites of a few changed rows only (`normalize_taking(full=False)`)."""
    frame = _with_parsed_countries(displays.select("manufacturer", "address", "countries"))
    name, name_role = site_part_exprs(pl.col("manufacturer"))
    address, address_role = site_part_exprs(pl.col("address"))
    frame = frame.with_columns(
        pl.int_range(0, pl.len(), dtype=pl.Int32).alias("row_no"),
        pl.col("country_list").fill_null(pl.lit([], dtype=pl.List(pl.String))),
        name.alias("_site_name"),
        name_role.alias("_site_name_role"),
        address.alias("_site_address"),
        address_role.alias("_site_address_role"),
    ).with_columns(pl.col("country_list").list.len().cast(pl.Int32).alias("site_count"))
    return _site_columns(frame).select(pl.col(c).cast(NORMALIZED_SCHEMA[c]) for c in _SITE_OUTPUTS)


#: the columns `_site_columns` adds (the only Python-heavy part of the normalization)
_SITE_OUTPUTS = ("sites", "sites_split_ok")
#: what `normalize_taking(full=False)` leaves out: the sites and the permit number's parts
COMPARISON_OMITS: frozenset[str] = (
    frozenset(_SITE_OUTPUTS) | (frozenset(PERMIT_COLUMNS) - {"permit_no"}) | {"oversize_fields", "has_replacement_char"}
)


def normalize_taking(holder: list[pl.DataFrame], *, full: bool = True) -> pl.DataFrame:
    """`normalize_items(holder.pop())`: if the caller keeps no other reference to the frame, its raw
    columns are released as soon as every field is derived from them (before sites, keys, hashes).

    `full=False` (a comparison that is never stored, `dmf diff`): none of COMPARISON_OMITS — the permit
    number's parts and the quality flags are never compared, and the diff derives the sites from the display values of the few
    rows it compares (`site_columns`)."""
    frame = _coerce(holder.pop())
    columns = [frame.select("row_no", pl.col("DMF_PERMIT_NO").alias("permit_no_raw")), *_field_columns(frame, full)]
    del frame  # the raw values are all derived now
    out = pl.concat(columns, how="horizontal")
    out = (_quality_columns(out) if full else out).with_columns(
        pl.col("country_list", "unresolved_countries").fill_null(pl.lit([], dtype=pl.List(pl.String))),
        pl.col("is_micronized", "issue_date_invalid", "bizrno_valid").fill_null(False),
        *([pl.col("permit_fmt").fill_null("missing")] if full else []),
    )
    out = out.with_columns(pl.col("country_list").list.len().cast(pl.Int32).alias("site_count"))
    if full:
        out = _site_columns(out)
    # one chunk per column: gathers and joins on a multi-chunk nested column (sites) are many times slower
    return out.select(
        [pl.col(name).cast(dtype) for name, dtype in NORMALIZED_SCHEMA.items() if full or name not in COMPARISON_OMITS]
    ).rechunk()


assert tuple(NORMALIZED_SCHEMA) == tuple(NORMALIZED_COLUMNS)
assert set(PERMIT_COLUMNS) <= set(NORMALIZED_COLUMNS)
