"""The emulator's own reading of docs/DOMAIN.md §3 (display value / matching key), used for ground truth.

The real normalizer lives elsewhere; the emulator must not depend on it, yet its truth must agree
with it. So every simulated edit is checked against several *plausible* key implementations
(`VARIANTS`): a cosmetic edit must leave all of them equal, a substantive edit must change all of
them. Whatever reasonable choices the normalizer makes (drop vs. space for control characters,
legal-form words removed before or after punctuation, a short or a long legal-form list), it then
classifies every simulated edit the same way the truth does. Truth itself uses `OFFICIAL`.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from functools import cache

from dmf_assets.domain.countries import canonical_country

#: look-alike punctuation folded for display (NFKC leaves these alone)
_LOOKALIKE = str.maketrans(
    {
        "‘": "'",
        "’": "'",
        "‚": "'",
        "‛": "'",
        "′": "'",
        "`": "'",
        "“": '"',
        "”": '"',
        "„": '"',
        "″": '"',
        "‐": "-",
        "‑": "-",
        "‒": "-",
        "–": "-",
        "—": "-",
        "―": "-",
        "−": "-",
        "﹣": "-",
    }
)

#: legal-form words, matched case-insensitively on the display value (company names only)
_LEGAL_KOREAN = r"주식회사|\(주\)|유한책임회사|유한회사"
_LEGAL_SHORT = (
    _LEGAL_KOREAN + r"|\bco\.?\s*,?\s*ltd\b\.?|\binc\b\.?|\bgmbh\b|\bs\.?\s*p\.?\s*a\b\.?|\bs\.?\s*r\.?\s*l\b\.?"
)
_LEGAL_LONG = (
    _LEGAL_SHORT
    + r"|\bco\b\.?|\bltd\b\.?|\blimited\b|\bpvt\b\.?|\bprivate\b|\bcorp\b\.?|\bcorporation\b"
    + r"|\bincorporated\b|\bllc\b|\bplc\b|\bag\b|\bs\.?\s*a\b\.?|\bs\.?\s*l\b\.?|\bsas\b|\bb\.?\s*v\b\.?"
    + r"|\bn\.?\s*v\b\.?|\bkg\b|\bcompany\b|\bsdn\.?\s*bhd\b\.?|\ba\.?\s*s\b\.?"
)
_RE_KOREAN = re.compile(_LEGAL_KOREAN, re.IGNORECASE)
_RE_SHORT = re.compile(_LEGAL_SHORT, re.IGNORECASE)
_RE_LONG = re.compile(_LEGAL_LONG, re.IGNORECASE)
#: the same words as they look once whitespace and punctuation are gone (suffix/prefix stripping)
_COMPACT_SUFFIXES = (
    "privatelimited",
    "pvtltd",
    "coltd",
    "limited",
    "ltd",
    "inc",
    "gmbh",
    "spa",
    "srl",
    "corporation",
    "corp",
    "llc",
    "주식회사",
    "유한회사",
    "주",
)
_COMPACT_PREFIXES = ("주식회사", "유한회사", "주")

COMPANY_FIELDS = frozenset({"applicant", "manufacturer"})

OFFICIAL = "official"
#: (control characters -> space or dropped, legal-form handling)
VARIANTS: dict[str, tuple[str, str]] = {
    OFFICIAL: ("space", "long"),
    "drop_ctrl": ("drop", "long"),
    "short_list": ("space", "short"),
    "korean_only": ("space", "korean"),
    "compact_strip": ("drop", "compact"),
}


def _is_punct(ch: str) -> bool:
    return unicodedata.category(ch)[0] == "P"


@cache
def display(value: str | None, ctrl: str = "space") -> str | None:
    """NFKC, look-alikes folded, control characters removed, whitespace collapsed, trimmed."""
    if value is None:
        return None
    t = unicodedata.normalize("NFKC", value).translate(_LOOKALIKE)
    sub = " " if ctrl == "space" else ""
    t = "".join(sub if unicodedata.category(ch)[0] == "C" else ch for ch in t)
    t = " ".join(t.split())
    return t or None


def _compact(text: str) -> str:
    return "".join(ch for ch in text if not ch.isspace() and not _is_punct(ch)).lower()


@cache
def text_key(field: str, value: str | None, variant: str = OFFICIAL) -> str | None:
    """Matching key of one text field under one key variant (None when blank)."""
    ctrl, legal = VARIANTS[variant]
    d = display(value, ctrl)
    if d is None:
        return None
    if field in COMPANY_FIELDS and legal != "compact":
        d = {"long": _RE_LONG, "short": _RE_SHORT, "korean": _RE_KOREAN}[legal].sub(" ", d)
    k = _compact(d)
    if field in COMPANY_FIELDS and legal == "compact":
        changed = True
        while changed and k:
            changed = False
            for s in _COMPACT_SUFFIXES:
                if k.endswith(s) and len(k) > len(s):
                    k, changed = k[: -len(s)], True
            for p in _COMPACT_PREFIXES:
                if k.startswith(p) and len(k) > len(p):
                    k, changed = k[len(p) :], True
    return k or None


@cache
def countries_key(value: str | None) -> str | None:
    """Canonical country names, de-duplicated and sorted (order and spelling are cosmetic)."""
    d = display(value)
    if d is None:
        return None
    names = set()
    for part in d.split(","):
        if part.strip():
            names.add(canonical_country(part) or _compact(part))
    return "|".join(sorted(names)) or None


@cache
def permit_key(value: str | None) -> str | None:
    """Normalized permit number: NFKC, punctuation folded, whitespace removed, upper-case."""
    if value is None:
        return None
    t = unicodedata.normalize("NFKC", value).translate(_LOOKALIKE)
    t = "".join(ch for ch in t if not ch.isspace() and unicodedata.category(ch)[0] != "C").upper()
    return t or None


def date_key(value: str | None) -> str | None:
    d = display(value)
    return d if d and re.fullmatch(r"\d{4}-\d{2}-\d{2}", d) else None


def bizrno_key(value: str | None) -> str | None:
    if value is None:
        return None
    digits = re.sub(r"\D", "", unicodedata.normalize("NFKC", value))
    return digits or None


#: the fields whose display value is already their matching key (no key variant applies)
_EXACT_KEYS: dict[str, Callable[[str | None], str | None]] = {
    "permit_no": permit_key,
    "bizrno": bizrno_key,
    "issue_date": date_key,
}


def field_key(field: str, value: str | None, variant: str = OFFICIAL) -> str | None:
    """Matching key of a COMPARED_FIELDS field (model.py names)."""
    if field == "countries":
        return countries_key(value)
    exact = _EXACT_KEYS.get(field)
    return exact(value) if exact else text_key(field, value, variant)


def field_display(field: str, value: str | None) -> str | None:
    """What people read for a COMPARED_FIELDS field: re-typings invisible here are no change at all."""
    exact = _EXACT_KEYS.get(field)
    return exact(value) if exact else display(value)


def is_cosmetic_edit(field: str, before: str | None, after: str | None) -> bool:
    """The text changed but no key variant sees a difference."""
    if before == after:
        return False
    return all(field_key(field, before, v) == field_key(field, after, v) for v in VARIANTS)


def is_substantive_edit(field: str, before: str | None, after: str | None) -> bool:
    """Every key variant sees a difference."""
    return all(field_key(field, before, v) != field_key(field, after, v) for v in VARIANTS)
