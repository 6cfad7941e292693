"""Benchmark-sized registries: `synthetic_registry(n)` and one day of `churn_day` on it.

Drawn from the emulator's record factory and its substantive edits, but independent of the
simulation: nothing here changes what `RegistrySimulator` serves. Only the benchmark (`bench/run.py`) and the
tests use it, so it lives outside the product package; load it with `dmf_assets.cli.bench.load_bench("synthetic")`.
"""

from __future__ import annotations

import random
import re
from datetime import date

import polars as pl

from dmf_assets.domain.model import API_FIELDS, GroundTruth, TruthChange
from dmf_assets.emulator import _keys, _vocab
from dmf_assets.emulator import _records as rec
from dmf_assets.emulator._edits import (
    COMPARED_POSITIONS,
    SINGLE_SITE_EDITS,
    SUBSTANTIVE_EDITS,
    SUBSTANTIVE_KINDS,
    is_valid_substantive,
    single_site,
    truth_change,
)
from dmf_assets.emulator._sampling import cumulative, pick

__all__ = ["SYNTHETIC_NEW_DATE", "SYNTHETIC_OLD_DATE", "churn_day", "synthetic_registry"]

#: the two days a `churn_day` ground truth is labelled with
SYNTHETIC_OLD_DATE = "2026-10-07"
SYNTHETIC_NEW_DATE = "2026-10-08"
_POOL_MAX = 20_000
_BUMP_RE = (re.compile(r"^(\d{8}-\d{1,3}-[A-Z]{1,2}-)(\d+)(.*)$"), re.compile(r"^(수?)(\d+)(-\d+-ND.*)$"))
_SCHEMA = dict.fromkeys(API_FIELDS, pl.Utf8)


def _draw_pool(f: rec.Factory, rng: random.Random, n: int) -> tuple[list[rec.Row], set[int]]:
    """n registry rows from the record factory (originals, grants, duplicates, pending numbers),
    with clean numbers; also the indices that will be rendered with a malformed number."""
    latest = date.fromisoformat(SYNTHETIC_OLD_DATE)
    n_null = max(1 if n >= 2000 else 0, round(n * 0.0005))
    n_dup = round(n * 0.002)
    n_grant = int(n * 0.3)
    n_orig = max(1, n - n_null - n_dup - n_grant)
    drafts = []
    for _ in range(n_orig):
        ing = f.pick_ingredient()
        issue = f.random_issue_date(max(date(2003, 6, 1), rec.group_date(ing)), latest)
        drafts.append(f.original(issue, f.pick_applicant(), ingredient=ing))
    drafts.sort(key=lambda d: (d.accept, d.issue))
    originals = []
    for d in drafts:
        f.assign_number(d)
        originals.append((f.render(d), d))
    weights = cumulative([rng.paretovariate(1.1) for _ in originals])
    rows: list[rec.Row] = [r for r, _ in originals]
    for _ in range(n_grant):
        for _ in range(20):
            brow, bd = originals[pick(rng, weights)]
            g = f.grant(
                brow,
                bd.number,
                bd.ingredient,
                f.random_issue_date(bd.issue, latest),
                f.pick_applicant(bd.applicant.bizrno),
            )
            if g is not None:
                rows.append(f.render(g))
                break
    for _ in range(n_dup):
        brow, bd = originals[rng.randrange(len(originals))]
        d = f.original(bd.issue, f.pick_applicant(bd.applicant.bizrno), ingredient=bd.ingredient)
        d.number, d.ingr_text = bd.number, bd.ingr_text
        rows.append(f.render(d))
    for _ in range(n_null):
        d = f.original(latest, f.pick_applicant())
        rows.append(f.render(d, with_number=False, with_date=rng.random() < 0.6))
    while len(rows) < n:  # grants may run out of free numbers on tiny pools
        d = f.original(latest, f.pick_applicant())
        f.assign_number(d)
        rows.append(f.render(d))
    malformed = set(rng.sample(range(len(originals)), int(len(originals) * 0.003)))
    return rows[:n], malformed


def _bump(number: str | None, k: int) -> str | None:
    """The k-th copy of a pool number: same shape, a serial no other row uses."""
    if number is None or k == 0:
        return number
    for rx in _BUMP_RE:
        m = rx.match(number)
        if m:
            return f"{m.group(1)}{int(m.group(2)) + 10_000 * k}{m.group(3)}"
    return f"{number}-{k}"  # pragma: no cover - every factory number matches one shape


def synthetic_registry(n_rows: int, seed: int = 1) -> pl.DataFrame:
    """A registry of `n_rows` rows drawn from the emulator's record factory (benchmarks).

    Up to 20,000 rows are drawn one by one; larger frames repeat that pool with fresh serial numbers
    (so numbers stay unique apart from the planned ≈0.3 % duplicates) and re-drawn applicants.
    Columns: the 9 API fields, Utf8, nullable.
    """
    if not isinstance(n_rows, int) or n_rows < 0:
        raise ValueError(f"n_rows must be a non-negative integer, got {n_rows!r}")
    if n_rows == 0:
        return pl.DataFrame(schema=_SCHEMA)
    rng = random.Random(seed)
    f = rec.Factory(rng, _vocab.load_seed_rows())
    pool, malformed = _draw_pool(f, rng, min(n_rows, _POOL_MAX))
    size = len(pool)
    columns: list[list[str | None]] = [[] for _ in API_FIELDS]
    for i in range(n_rows):
        k, j = divmod(i, size)
        row = pool[j]
        number = _bump(row[rec.P], k)
        if number is None and k:
            # a copy of a pending registration would be an exact twin of it (indistinguishable for
            # any observer): copies get a number of their own, only the pool keeps the pending ones
            number = f"20260101-209-J-{800000 + i}"
        if j in malformed and number is not None:
            number = rec.malform_number(number, rng)
        if k:
            a = f.pick_applicant(row[rec.BIZ])
            row = (number, row[rec.ING], a.name, *row[rec.MFR : rec.BIZ], a.bizrno, row[rec.NOTICE])
        else:
            row = (number,) + row[1:]
        for c, v in zip(columns, row, strict=False):
            c.append(v)
    return pl.DataFrame(
        {name: pl.Series(name, col, dtype=pl.Utf8) for name, col in zip(API_FIELDS, columns, strict=False)}
    )


def churn_day(frame: pl.DataFrame, seed: int = 2, rate: float = 0.001) -> tuple[pl.DataFrame, GroundTruth]:
    """One day of churn on a synthetic registry: about `rate` × rows registrations are touched —
    new (≈35 %, a quarter of them grant-derived), substantive changes (≈25 %), cosmetic re-typings
    (≈20 %), withdrawals (≈10 %) and number assignments (≈10 %, as many as rows without a number).

    Returns the next day's frame (surviving rows in their old order, changed in place, new rows
    appended) and its ground truth: `entity_id` is the old row index, or len(frame) + k for the k-th
    new row.
    """
    missing = [c for c in API_FIELDS if c not in frame.columns]
    if missing:
        raise ValueError(f"churn_day needs the 9 API columns; missing: {', '.join(missing)}")
    if not 0 <= rate <= 0.5:
        raise ValueError(f"rate must be between 0 and 0.5, got {rate!r}")
    frame = frame.select(API_FIELDS)
    n = frame.height
    rng = random.Random(seed)
    f = rec.Factory(rng, _vocab.load_seed_rows())
    today = date.fromisoformat(SYNTHETIC_NEW_DATE)
    f.used = set(frame.get_column("DMF_PERMIT_NO").drop_nulls().to_list())
    total = round(rate * n)
    null_idx = frame.with_row_index("_i").filter(pl.col("DMF_PERMIT_NO").is_null()).get_column("_i").to_list()
    n_assign = min(len(null_idx), round(total * 0.10))
    n_sub, n_cos, n_wd = round(total * 0.25), round(total * 0.20), round(total * 0.10)
    n_new = max(0, total - n_assign - n_sub - n_cos - n_wd)
    nulls = set(null_idx)
    eligible = n - len(nulls)
    picked: list[int] = []
    seen_idx: set[int] = set()
    while len(picked) < min(eligible, n_sub + n_cos + n_wd):
        i = rng.randrange(n)
        if i not in nulls and i not in seen_idx:
            seen_idx.add(i)
            picked.append(i)
    sub_idx, cos_idx = picked[:n_sub], picked[n_sub : n_sub + n_cos]
    wd_idx = picked[n_sub + n_cos :]
    assign_idx = sorted(rng.sample(null_idx, n_assign)) if n_assign else []
    touched = sorted(set(sub_idx) | set(cos_idx) | set(assign_idx))
    old_rows = dict(zip(touched, frame[touched].rows(), strict=False)) if touched else {}
    new_rows: dict[int, rec.Row] = {}
    kinds = list(SUBSTANTIVE_KINDS)
    for i in sub_idx:
        row = old_rows[i]
        for _ in range(20):
            kind = rng.choice(kinds)
            if kind in SINGLE_SITE_EDITS and not single_site(row):
                continue
            edit = SUBSTANTIVE_EDITS[kind](rng, f, row, today)
            if edit is not None and is_valid_substantive(row, edit):
                new_rows[i] = edit[0]
                break
    for i in cos_idx:
        row = old_rows[i]
        for _ in range(20):
            fld = rng.choice(("applicant", "manufacturer", "address", "countries", "ingredient"))
            value = rec.cosmetic_edit(rng, row, fld)
            if value is not None:
                pos = COMPARED_POSITIONS[fld]
                new_rows[i] = row[:pos] + (value,) + row[pos + 1 :]
                break
    for i in assign_idx:
        row = old_rows[i]
        d = f.original(today, f.pick_applicant())
        number = f.assign_number(d, accept=today)
        new_rows[i] = (number,) + row[1 : rec.DATE] + (row[rec.DATE] or today.isoformat(),) + row[rec.DATE + 1 :]
    added: list[rec.Row] = []
    originals = frame.get_column("DMF_PERMIT_NO")
    for _ in range(n_new):
        if rng.random() < 0.25 and n:
            j = rng.randrange(n)
            base = originals[j]
            if base and rec.split_grant(base)[1] is None and base == _keys.permit_key(base):
                for s in range(1, 26):
                    number = f"{base}({s})"
                    if number not in f.used:
                        f.used.add(number)
                        brow = frame.row(j)
                        a = f.pick_applicant(brow[rec.BIZ])
                        added.append(
                            (
                                number,
                                brow[rec.ING],
                                a.name,
                                brow[rec.MFR],
                                brow[rec.ADDR],
                                brow[rec.CTRY],
                                today.isoformat(),
                                a.bizrno,
                                brow[rec.NOTICE],
                            )
                        )
                        break
                else:
                    base = None
                if base:
                    continue
        d = f.original(today, f.pick_applicant(), accept=today)
        f.assign_number(d)
        added.append(f.render(d))
    changes: list[TruthChange] = []
    for i in sorted(new_rows):
        c = truth_change(i, old_rows[i], new_rows[i])
        if c is not None:
            changes.append(c)
    wd_rows = dict(zip(sorted(wd_idx), frame[sorted(wd_idx)].rows(), strict=False)) if wd_idx else {}
    for i in sorted(wd_rows):
        changes.append(truth_change(i, wd_rows[i], None))
    for k, row in enumerate(added):
        changes.append(truth_change(n + k, None, row))
    changes.sort(key=lambda c: c.entity_id)
    drop = sorted(set(wd_idx) | set(new_rows))
    indexed = frame.with_row_index("_i").with_columns(pl.col("_i").cast(pl.Int64))
    parts = [indexed.filter(~pl.col("_i").is_in(drop))] if drop else [indexed]
    if new_rows:
        keep = [i for i in sorted(new_rows) if i not in wd_rows]
        parts.append(
            pl.DataFrame([new_rows[i] for i in keep], schema=_SCHEMA, orient="row")
            .with_columns(pl.Series("_i", keep, dtype=pl.Int64))
            .select(indexed.columns)
        )
    out = pl.concat(parts).sort("_i").drop("_i")
    if added:
        out = pl.concat([out, pl.DataFrame(added, schema=_SCHEMA, orient="row")])
    return out, GroundTruth(SYNTHETIC_OLD_DATE, SYNTHETIC_NEW_DATE, tuple(changes))
