"""Per-site split of a multi-manufacturer record (docs/DOMAIN.md §2.2, §3).

MNFCTR_NAME and MNFCTR_PLACE list several sites joined with ',' while names and addresses contain
commas themselves ("Co., Ltd.", "Plot No. 2,3,4 & 5"). The country field has exactly one entry per
site, so its length says how many parts to cut; which commas to cut at is scored:

    [role] follows the comma                          100   ",[베타메타손 제조소]Hunan …"
    no space, next char a letter/digit                 20   "Limited,Tianjin …"
    a space follows                                     5
    anything else                                       3
    digit,digit ("Plot No. 2,3,4")                      1
    address: an English country name precedes         +30   "…, India,No 19 …"
    name: a legal-form word precedes                  +15   "… S.R.L,Valdepharm"
    never: inside ()/[], a legal-form word follows ("Co., Ltd."), nothing alphanumeric before/after
    (leading/trailing commas), or another comma follows (",," counts once).

The best `site_count - 1` commas win (ties: earlier first). Too few usable commas -> the parts found
are kept, nothing is invented, and `ok` is False.

Rows with at most one site are handled by polars expressions in `normalize.py` (same result as
`split_display` here; a property test keeps them equal); this Python code runs only on the unique
multi-site combinations.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import lru_cache

import polars as pl

from dmf_assets.domain.model import SPEC_SIZES
from dmf_assets.domain.text import (
    LATIN_LEGAL_ABBREVIATIONS,
    LATIN_LEGAL_TOKEN,
    LATIN_LEGAL_WORDS,
    display_text,
    parse_country_display,
)

SITE_DTYPE = pl.Struct({"name": pl.String, "address": pl.String, "country": pl.String, "role": pl.String})
SITES_DTYPE = pl.List(SITE_DTYPE)

#: English country names as they end a manufacturer address, as lower-case word sequences
#: (dots and spaces between words do not matter: "P.R. China", "P.R.China", "U. S. A.")
ADDRESS_COUNTRY_NAMES: tuple[str, ...] = (
    "china",
    "india",
    "italy",
    "france",
    "spain",
    "germany",
    "japan",
    "switzerland",
    "taiwan",
    "r o c",
    "korea",
    "usa",
    "u s a",
    "united states",
    "america",
    "uk",
    "u k",
    "united kingdom",
    "england",
    "ireland",
    "netherlands",
    "belgium",
    "austria",
    "hungary",
    "czech republic",
    "czechia",
    "poland",
    "slovenia",
    "slovakia",
    "croatia",
    "finland",
    "denmark",
    "sweden",
    "norway",
    "portugal",
    "greece",
    "israel",
    "canada",
    "mexico",
    "brazil",
    "argentina",
    "singapore",
    "malaysia",
    "indonesia",
    "thailand",
    "vietnam",
    "viet nam",
    "bangladesh",
    "pakistan",
    "ukraine",
    "russia",
    "russian federation",
    "turkey",
    "türkiye",
    "egypt",
    "australia",
    "new zealand",
    "bulgaria",
    "romania",
    "latvia",
    "malta",
    "cyprus",
    "jordan",
    "chile",
    "colombia",
    "south africa",
)
_COUNTRY_TAILS: frozenset[tuple[str, ...]] = frozenset(tuple(name.split()) for name in ADDRESS_COUNTRY_NAMES)
_LEGAL_TAILS: frozenset[tuple[str, ...]] = frozenset(
    [(w,) for w in LATIN_LEGAL_WORDS]
    + [(a,) for a in LATIN_LEGAL_ABBREVIATIONS]
    + [tuple(a) for a in LATIN_LEGAL_ABBREVIATIONS]  # S.R.L -> ("s", "r", "l")
)
_TAIL_WORDS = re.compile(r"[^\W\d_]+")
_LEGAL_AFTER = re.compile(r"\s*" + LATIN_LEGAL_TOKEN, re.IGNORECASE)
_ROLE_PREFIX = re.compile(r"^\[([^\]]*)\]")


def _ends_with(
    text: str, comma: int, words: list[tuple[int, str]], word_ends: list[int], tails: frozenset[tuple[str, ...]]
) -> bool:
    """Whether the text left of `comma` ends with one of the word sequences in `tails`.

    `words` are (end position, lower-cased word) of every letter run of `text`. Only spaces and
    dots may follow the last word: "India 415 722," does not end with India.
    """
    j = comma
    while j > 0 and text[j - 1] in " .":
        j -= 1
    if j == 0 or not text[j - 1].isalpha():
        return False
    last = bisect_right(word_ends, j) - 1
    if last < 0 or words[last][0] != j:
        return False
    tail = [w for _, w in words[max(0, last - 2) : last + 1]]
    return any(tuple(tail[-k:]) in tails for k in (1, 2, 3) if len(tail) >= k)


#: how far right of a comma the legal-form/role look-ahead reads (keeps hostile 100 KB values linear)
_WINDOW = 60

SCORE_ROLE = 100
SCORE_TIGHT = 20
SCORE_SPACED = 5
SCORE_OTHER = 3
SCORE_DIGITS = 1
BONUS_COUNTRY = 30
BONUS_LEGAL = 15


@dataclass(frozen=True)
class Site:
    name: str | None
    address: str | None
    country: str | None
    role: str | None


@dataclass(frozen=True)
class SiteSplit:
    sites: tuple[Site, ...]
    ok: bool  # name and address each split into exactly len(country entries) parts


def _enclosed_commas(text: str, commas: list[int]) -> set[int]:
    """Commas that sit inside a *closed* (…) or […] pair.

    An opener that is never closed does not count, so one stray '(' cannot hide every later comma.
    """
    if "(" not in text and "[" not in text:
        return set()
    depth_change: dict[int, int] = {}
    open_at: dict[str, list[int]] = {")": [], "]": []}  # one stack per bracket type: linear time
    for match in _BRACKETS.finditer(text):
        ch, i = match.group(), match.start()
        if ch == "(":
            open_at[")"].append(i)
        elif ch == "[":
            open_at["]"].append(i)
        elif open_at[ch]:  # unmatched closers are ignored
            opened = open_at[ch].pop()
            depth_change[opened] = depth_change.get(opened, 0) + 1
            depth_change[i] = depth_change.get(i, 0) - 1
    events = sorted(depth_change.items())
    enclosed, depth, k = set(), 0, 0
    for comma in commas:  # commas are sorted; sweep the bracket events alongside
        while k < len(events) and events[k][0] < comma:
            depth += events[k][1]
            k += 1
        if depth > 0:
            enclosed.add(comma)
    return enclosed


_BRACKETS = re.compile(r"[()\[\]]")


def _comma_scores(text: str, is_address: bool) -> list[tuple[int, int]]:
    """(score, position) for every comma that may separate two sites."""
    commas = [m.start() for m in re.finditer(",", text)]
    if not commas:
        return []
    first_alnum = next((i for i, ch in enumerate(text) if ch.isalnum()), None)
    if first_alnum is None:
        return []
    last_alnum = next(i for i in range(len(text) - 1, -1, -1) if text[i].isalnum())
    enclosed = _enclosed_commas(text, commas)
    words = [(m.end(), m.group().lower()) for m in _TAIL_WORDS.finditer(text)]
    word_ends = [end for end, _ in words]
    tails = _COUNTRY_TAILS if is_address else _LEGAL_TAILS
    bonus = BONUS_COUNTRY if is_address else BONUS_LEGAL
    out: list[tuple[int, int]] = []
    for i in commas:
        if i in enclosed or i < first_alnum or i > last_alnum:
            continue
        after = text[i + 1 : i + 1 + _WINDOW]
        after_stripped = after.lstrip(" ")
        if after_stripped.startswith(","):
            continue  # ",," -- only the last comma of a run can be a boundary
        if after_stripped.startswith("["):
            out.append((SCORE_ROLE, i))
            continue
        if _LEGAL_AFTER.match(after):
            continue  # "Co., Ltd." -- the comma belongs to the company name
        nxt = after[:1]
        if nxt.isalnum():
            score = SCORE_DIGITS if (nxt.isdigit() and text[i - 1 : i].isdigit()) else SCORE_TIGHT
        elif nxt == " ":
            score = SCORE_SPACED
        else:
            score = SCORE_OTHER
        if _ends_with(text, i, words, word_ends, tails):
            score += bonus
        out.append((score, i))
    return out


@lru_cache(maxsize=16384)  # the same name/address recurs across combinations and days
def split_field(text: str | None, n_sites: int, is_address: bool) -> tuple[tuple[str, ...], bool]:
    """Cut one display value into `n_sites` raw parts; (parts, exact). Null -> ((), False)."""
    if text is None:
        return (), False
    if n_sites <= 1:
        return (text,), n_sites == 1
    candidates = _comma_scores(text, is_address)
    chosen = sorted(candidates, key=lambda c: (-c[0], c[1]))[: n_sites - 1]
    cuts = sorted(pos for _, pos in chosen)
    parts, start = [], 0
    for pos in cuts:
        parts.append(text[start:pos])
        start = pos + 1
    parts.append(text[start:])
    return tuple(parts), len(cuts) == n_sites - 1


def _clean_part(part: str | None) -> tuple[str | None, str | None]:
    """(value without its role prefix, role) of one part; blanks -> None."""
    if part is None:
        return None, None
    part = part.strip(" ,")
    role = None
    match = _ROLE_PREFIX.match(part)
    if match:
        role = match.group(1).strip(" ") or None
        part = part[match.end() :].strip(" ,")
    return (part or None), role


def split_display(name: str | None, address: str | None, countries: tuple[str, ...]) -> SiteSplit:
    """Split *display* values of the manufacturer and address fields, one site per country entry."""
    n = len(countries)
    name_parts, name_ok = split_field(name, n, is_address=False)
    addr_parts, addr_ok = split_field(address, n, is_address=True)
    count = max(n, len(name_parts), len(addr_parts))
    sites = []
    for j in range(count):
        site_name, name_role = _clean_part(name_parts[j] if j < len(name_parts) else None)
        site_addr, addr_role = _clean_part(addr_parts[j] if j < len(addr_parts) else None)
        sites.append(Site(site_name, site_addr, countries[j] if j < n else None, name_role or addr_role))
    return SiteSplit(tuple(sites), name_ok and addr_ok)


def split_sites(names: str | None, addresses: str | None, countries: str | None) -> SiteSplit:
    """Split raw MNFCTR_NAME / MNFCTR_PLACE / MANUF_COUNTRY_CODE_NM values into sites."""
    country_field = parse_country_display(display_text(countries, "country"))
    return split_display(display_text(names, "company"), display_text(addresses, "text"), country_field.per_site)


def sites_as_dicts(split: SiteSplit) -> list[dict[str, str | None]]:
    return [asdict(s) for s in split.sites]


# --- site-level changes (docs/DOMAIN.md §5: a site added or removed is never cosmetic) -----------------

#: SiteChange.kind -> Korean label used in every sheet and in `dmf history`
SITE_CHANGE_LABEL_KO: dict[str, str] = {"added": "제조소 추가", "removed": "제조소 삭제", "changed": "제조소 변경"}


@dataclass(frozen=True)
class KeyedSite(Site):
    """One site with the matching keys of its name and address (computed by the caller, vectorized)."""

    name_key: str | None
    address_key: str | None


@dataclass(frozen=True)
class SiteChange:
    kind: str  # added | removed | changed
    before: KeyedSite | None
    after: KeyedSite | None


def site_label(site: KeyedSite | None, with_address: bool = False) -> str | None:
    """'[role] Name (country)' — optionally '— address' — as shown to people."""
    if site is None:
        return None
    text = f"[{site.role}] " if site.role else ""
    text += site.name or "(제조소명 없음)"
    text += f" ({site.country or '국가 미상'})"
    if with_address and site.address:
        text += f" — {site.address}"
    return text


def site_changes(before: list[KeyedSite], after: list[KeyedSite]) -> list[SiteChange]:
    """Which sites were added, removed or changed between two versions of one registration.

    Sites are matched as multisets, most certain first: identical (name, address, country) keys,
    then the same name key (the address or country changed), then the same address key (the
    manufacturer was renamed at the same address). Whatever is left was added or removed — also
    when its country is already listed, which the country set alone would hide.
    """
    free_b, free_a = list(before), list(after)
    out: list[SiteChange] = []

    def pair(same: Callable[[KeyedSite, KeyedSite], bool]) -> None:
        for b in list(free_b):
            a = next((x for x in free_a if same(b, x)), None)
            if a is not None:
                free_b.remove(b)
                free_a.remove(a)
                if (b.name_key, b.address_key, b.country) != (a.name_key, a.address_key, a.country):
                    out.append(SiteChange("changed", b, a))

    pair(lambda b, a: (b.name_key, b.address_key, b.country) == (a.name_key, a.address_key, a.country))
    pair(lambda b, a: b.name_key is not None and b.name_key == a.name_key)
    pair(lambda b, a: b.address_key is not None and b.address_key == a.address_key)
    out += [SiteChange("removed", b, None) for b in free_b]
    out += [SiteChange("added", None, a) for a in free_a]
    return out


def describe_site_change(before: str | None, after: str | None) -> str:
    """One stored `sites` change row as a sentence: '제조소 추가: Name (중국)'."""
    if before is None:
        return f"{SITE_CHANGE_LABEL_KO['added']}: {after}"
    if after is None:
        return f"{SITE_CHANGE_LABEL_KO['removed']}: {before}"
    return f"{SITE_CHANGE_LABEL_KO['changed']}: {before} → {after}"


# --- spec sizes are per site for the manufacturer and address fields ------------------------------

#: API fields that join one value per site: their documented size (docs/DOMAIN.md §2.1) holds per site
PER_SITE_SPEC_FIELDS: dict[str, str] = {"MNFCTR_NAME": "manufacturer", "MNFCTR_PLACE": "address"}


def oversize_expr() -> pl.Expr:
    """True for rows that really exceed the spec sizes (the `oversize_fields` quality metric).

    `oversize_fields` compares each raw value with its spec size; but MNFCTR_NAME (150) and
    MNFCTR_PLACE (2000) hold every site of a registration joined with ',', so four sites of 45
    characters legitimately make 180. Those two fields count only when longer than spec × sites.
    """
    sites = pl.col("site_count").clip(lower_bound=1)
    within = pl.all_horizontal(
        [
            pl.col(col).fill_null("").str.len_chars() <= SPEC_SIZES[api] * sites
            for api, col in PER_SITE_SPEC_FIELDS.items()
        ]
    )
    only_per_site = pl.col("oversize_fields").list.eval(pl.element().is_in(list(PER_SITE_SPEC_FIELDS))).list.all()
    return (pl.col("oversize_fields").list.len() > 0) & ~(only_per_site & within)
