"""What a registration's change is: the comparison behind the ground truth, and the substantive edits.

Shared by the simulation (`registry.py`) and the benchmark frames (`bench/synthetic.py`). Edits are pure:
row in, (row, description, target fields) out.
"""

from __future__ import annotations

import random
from datetime import date, timedelta

from dmf_assets.domain.countries import canonical_country
from dmf_assets.domain.model import EventType, TruthChange
from dmf_assets.emulator import _keys, _vocab
from dmf_assets.emulator._records import (
    ADDR,
    APP,
    BIZ,
    COMPARED_POSITIONS,
    CTRY,
    DATE,
    ING,
    MFR,
    NOTICE,
    Factory,
    P,
    Row,
    site_count,
    with_field,
)
from dmf_assets.emulator._vocab import COUNTRIES, COUNTRY_BY_NAME, Country

SUBSTANTIVE_KINDS = (
    "mfr_add",
    "mfr_replace",
    "address",
    "country",
    "transfer",
    "rename",
    "ingredient",
    "issue_date",
    "notice",
)

# --- comparison (ground truth) ---------------------------------------------------------------------


def compare_rows(old: Row, new: Row) -> tuple[frozenset[str], frozenset[str]]:
    """(substantive fields, cosmetic fields) between two renderings of one registration."""
    subst, cosm = [], []
    for fld, i in COMPARED_POSITIONS.items():
        a, b = old[i], new[i]
        # DESIGN §5: versions are told apart by display values; a re-typing that normalizes away
        # (extra spaces, a trailing CR/LF) is not a change at all
        if a == b or _keys.field_display(fld, a) == _keys.field_display(fld, b):
            continue
        # a site added/removed (even in a country already listed) is never cosmetic (DESIGN §5, issue 12)
        if _keys.field_key(fld, a) != _keys.field_key(fld, b) or (
            fld == "countries" and site_count(old) != site_count(new)
        ):
            subst.append(fld)
        else:
            cosm.append(fld)
    return frozenset(subst), frozenset(cosm)


def truth_change(eid: int, old: Row | None, new: Row | None, reappeared: bool = False) -> TruthChange | None:
    if old is None:
        if new is None:
            return None
        return TruthChange(eid, EventType.NEW, _keys.permit_key(new[P]), is_reappearance=reappeared)
    if new is None:
        return TruthChange(eid, EventType.WITHDRAWN, _keys.permit_key(old[P]), base_permit_no=_keys.permit_key(old[P]))
    if old == new:
        return None
    subst, cosm = compare_rows(old, new)
    if not subst and not cosm:
        return None
    return TruthChange(
        eid,
        EventType.CHANGED,
        _keys.permit_key(new[P]),
        base_permit_no=_keys.permit_key(old[P]),
        substantive_fields=subst,
        cosmetic_fields=cosm,
        number_assigned=old[P] is None and new[P] is not None,
        number_changed=old[P] is not None and new[P] is not None and "permit_no" in subst,
        is_transfer="bizrno" in subst,
    )


# --- substantive edits (pure: row in, (row, description, target fields) out) ----------------------------

Edit = tuple[Row, str, tuple[str, ...]]


def single_site(row: Row) -> bool:
    return site_count(row) == 1 and not (row[MFR] or "").rstrip().endswith(",")


def is_valid_substantive(old: Row, edit: Edit) -> bool:
    """Every target field changes its matching key under every key variant (see _keys.py)."""
    new, _, fields = edit
    return all(
        _keys.is_substantive_edit(fld, old[COMPARED_POSITIONS[fld]], new[COMPARED_POSITIONS[fld]]) for fld in fields
    )


def _edit_mfr_add(rng: random.Random, f: Factory, row: Row, today: date) -> Edit | None:
    c = f.pick_country()
    m = f.pick_manufacturer(c)
    role = rng.choice(_vocab.ROLE_PREFIXES).format(ingr=(row[ING] or "").strip()) if rng.random() < 0.3 else ""
    sep = "," if rng.random() < 0.55 else ", "
    mfr = (row[MFR] or "").rstrip().rstrip(",")
    new = with_field(
        row,
        manufacturer=f"{mfr}{sep}{role}{m.name}",
        address=f"{(row[ADDR] or '').rstrip()}{sep}{role}{m.address}",
        countries=f"{row[CTRY]},{c.spell(rng)}",
    )
    return new, f"manufacturer added: {role}{m.name} ({c.canonical})", ("manufacturer", "address")


def _country_of(row: Row) -> Country | None:
    return COUNTRY_BY_NAME.get(canonical_country(row[CTRY] or "") or "")


def _edit_mfr_replace(rng: random.Random, f: Factory, row: Row, today: date) -> Edit | None:
    current = _country_of(row)
    c = current if current and rng.random() < 0.7 else f.pick_country()
    m = f.pick_manufacturer(c)
    new = with_field(row, manufacturer=m.name, address=m.address, countries=c.spell(rng))
    return new, f"manufacturer replaced: {row[MFR]!r} -> {m.name!r}", ("manufacturer", "address")


def _edit_address(rng: random.Random, f: Factory, row: Row, today: date) -> Edit | None:
    addr = _vocab.manufacturer_address(rng, _country_of(row) or COUNTRIES[0])
    return with_field(row, address=addr), f"address changed: {row[ADDR]!r} -> {addr!r}", ("address",)


def _edit_country(rng: random.Random, f: Factory, row: Row, today: date) -> Edit | None:
    spelling = f.pick_country().spell(rng)
    return with_field(row, countries=spelling), f"country corrected: {row[CTRY]!r} -> {spelling!r}", ("countries",)


def _edit_transfer(rng: random.Random, f: Factory, row: Row, today: date) -> Edit | None:
    a = f.pick_applicant(row[BIZ])
    new = with_field(row, applicant=a.name, bizrno=a.bizrno)
    return new, f"transferred (양도양수): {row[APP]} [{row[BIZ]}] -> {a.name} [{a.bizrno}]", ("applicant", "bizrno")


def _edit_rename(rng: random.Random, f: Factory, row: Row, today: date) -> Edit | None:
    name = _vocab.korean_company_name(rng)
    return with_field(row, applicant=name), f"applicant renamed: {row[APP]} -> {name}", ("applicant",)


def _edit_ingredient(rng: random.Random, f: Factory, row: Row, today: date) -> Edit | None:
    name = (row[ING] or "").strip()
    r = rng.random()
    if r < 0.4:
        fixed = name + rng.choice(_vocab.CORRECTION_SUFFIXES)
    elif r < 0.7:
        fixed = name[3:] if name.startswith("미분화") else "미분화" + name
    else:
        salts = [s for s in _vocab.CORRECTION_SUFFIXES if name.endswith(s) and len(name) > len(s) + 1]
        if not salts:
            return None
        fixed = name[: -len(salts[0])]
    return with_field(row, ingredient=fixed), f"ingredient corrected: {row[ING]!r} -> {fixed!r}", ("ingredient",)


def _edit_issue_date(rng: random.Random, f: Factory, row: Row, today: date) -> Edit | None:
    if row[DATE] is None:
        return None
    old = date.fromisoformat(row[DATE])
    new_date = min(today, old + timedelta(days=rng.choice((-1, 1)) * rng.randint(1, 45)))
    if new_date == old:
        return None
    return (
        with_field(row, issue_date=new_date.isoformat()),
        f"issue date corrected: {row[DATE]} -> {new_date.isoformat()}",
        ("issue_date",),
    )


def _edit_notice(rng: random.Random, f: Factory, row: Row, today: date) -> Edit | None:
    value = rng.choices(("별표1", "기타", "신물질", "별표1의2", ""), (0.35, 0.35, 0.15, 0.1, 0.05))[0]
    return with_field(row, target_class=value), f"target class changed: {row[NOTICE]!r} -> {value!r}", ("target_class",)


SUBSTANTIVE_EDITS = {
    "mfr_add": _edit_mfr_add,
    "mfr_replace": _edit_mfr_replace,
    "address": _edit_address,
    "country": _edit_country,
    "transfer": _edit_transfer,
    "rename": _edit_rename,
    "ingredient": _edit_ingredient,
    "issue_date": _edit_issue_date,
    "notice": _edit_notice,
}
SINGLE_SITE_EDITS = frozenset({"mfr_replace", "address", "country"})
