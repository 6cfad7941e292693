"""Record factory and edits for the emulated registry: permit numbers, sites, text quirks.

A row is a 9-tuple in API field order (`model.API_FIELDS`). The factory draws new registrations
(originals, grant-derived copies, new-substance numbers, the odd malformed number); the edit
functions produce a *cosmetic* re-typing (no matching key changes under any key variant, see
`_keys.py`) or one *substantive* change (the key of the target field changes under every variant).
"""

from __future__ import annotations

import bisect
import random
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta

from dmf_assets.domain.model import PERMIT_GROUPS
from dmf_assets.emulator import _keys, _vocab
from dmf_assets.emulator._sampling import cumulative, pick
from dmf_assets.emulator._vocab import COUNTRIES, Country

Row = tuple  # (permit, ingredient, applicant, manufacturer, address, countries, date, bizrno, notice)
P, ING, APP, MFR, ADDR, CTRY, DATE, BIZ, NOTICE = range(9)
#: model.COMPARED_FIELDS name -> position in a row (API field order)
COMPARED_POSITIONS: dict[str, int] = {
    "permit_no": P,
    "ingredient": ING,
    "applicant": APP,
    "bizrno": BIZ,
    "manufacturer": MFR,
    "address": ADDR,
    "countries": CTRY,
    "issue_date": DATE,
    "target_class": NOTICE,
}

#: when each number group came into use: the 별표 groups' effective dates (model.PERMIT_GROUPS), and HP / ND
GROUP_DATES: dict[str, date] = {g: date.fromisoformat(since) for g, (_, since) in PERMIT_GROUPS.items()} | {
    "HP": date(2005, 1, 1),
    "ND": date(2005, 1, 1),
}
#: serial reached by each group on 2026-10-08 (per-group running serial, interpolated by date)
_GROUP_SERIAL_MAX = {
    "A": 380,
    "B": 500,
    "C": 420,
    "D": 160,
    "E": 200,
    "F": 95,
    "G": 175,
    "H": 380,
    "I": 700,
    "K": 60,
    "HP": 30,
}
_SERIAL_REF = date(2026, 10, 8)
#: group J runs one serial across 209/210/211; anchored on real numbers (seed rows)
_J_ANCHORS = (
    (date(2017, 12, 25), 1),
    (date(2020, 8, 1), 600),
    (date(2024, 11, 7), 1623),
    (date(2025, 1, 24), 1751),
    (date(2026, 9, 1), 2268),
    (date(2028, 1, 1), 2700),
)
_YEAR_WEIGHTS = {
    2003: 0.3,
    2004: 0.5,
    2005: 1.2,
    2006: 0.9,
    2007: 0.9,
    2008: 1.0,
    2009: 1.0,
    2010: 1.1,
    2011: 1.1,
    2012: 1.0,
    2013: 1.0,
    2014: 0.9,
    2015: 0.9,
    2016: 1.0,
    2017: 1.0,
    2018: 1.1,
    2019: 1.1,
    2020: 1.2,
    2021: 1.2,
    2022: 1.2,
    2023: 1.2,
    2024: 1.3,
}
#: generated applicants below the named top seven, and the records they hold on 2026-10-08
#: (9,167 − top seven − the 151 seed rows)
N_TAIL_APPLICANTS = 400
TAIL_RECORDS = 9167 - sum(c for _, c, _ in _vocab.TOP_APPLICANTS) - 151
_GRANT_RE = re.compile(r"^(.*?)\((\d{1,2}|[A-Z])\)$")
_STD_RE = re.compile(r"^(\d{8})-(\d{1,3})-([A-Z]{1,2})-(\d+)(?:-(\d{2}))?$")
_ND_RE = re.compile(r"^(수?)(\d+)-(\d+)-ND$")


@dataclass
class Ingredient:
    base: str
    salts: tuple[str, ...]
    weight: float
    kind: str  # std | J | K | ND | HP | herbal
    ingr_no: str
    group: str
    nd_no: int = 0
    nd_prefix: bool = True
    seq: int = 0  # same-ingredient sequence (standard) / second number (new substance)

    def name(self, rng: random.Random) -> str:
        salt = self.salts[0] if rng.random() < 0.7 else rng.choice(self.salts)
        n = self.base + salt
        r = rng.random()
        if self.kind != "herbal" and r < 0.02:
            return "미분화" + n
        if self.kind != "herbal" and r < 0.03:
            return n + "(미분화)"
        if self.kind != "herbal" and r < 0.033:
            return "초미분화" + n
        return n


@dataclass(frozen=True)
class Applicant:
    name: str
    bizrno: str
    weight: float


@dataclass(frozen=True)
class Manufacturer:
    name: str
    address: str
    country: Country


@dataclass
class Draft:
    """A registration before it is numbered and rendered."""

    ingredient: Ingredient
    ingr_text: str
    applicant: Applicant
    sites: list[tuple[str | None, Manufacturer, str]]  # (role prefix, manufacturer, country spelling)
    issue: date
    accept: date
    notice: str | None
    base_no: str | None = None  # grant-derived: the original's number
    number: str | None = None
    name_sep: str = ","
    trailing_comma: bool = False
    meta: dict = field(default_factory=dict)


def _interp(anchors: Sequence[tuple[date, float]], d: date) -> float:
    xs = [a[0].toordinal() for a in anchors]
    x = d.toordinal()
    i = max(1, min(len(xs) - 1, bisect.bisect_left(xs, x)))
    (d0, v0), (d1, v1) = anchors[i - 1], anchors[i]
    return v0 + (v1 - v0) * (x - d0.toordinal()) / max(1, d1.toordinal() - d0.toordinal())


def split_grant(number: str) -> tuple[str, str | None]:
    m = _GRANT_RE.match(number)
    return (m.group(1), m.group(2)) if m else (number, None)


class Factory:
    """Draws registrations from one `random.Random`; keeps every number it hands out unique."""

    def __init__(self, rng: random.Random, seed_rows: list[dict] | None = None) -> None:
        self.rng = rng
        self.used: set[str | None] = set()  # normalized permit numbers in use
        self.grants: dict[str, list[str]] = {}  # base number -> suffixes used
        self.nd_seq: dict[int, int] = {}  # new-substance first number -> last second number
        self.ingredients = self._build_ingredients(seed_rows or [])
        self._ingr_weights = cumulative([i.weight for i in self.ingredients])
        self.applicants = self._build_applicants()
        self._app_weights = cumulative([a.weight for a in self.applicants])
        self.manufacturers = self._build_manufacturers()
        self._country_weights = cumulative([c.entries for c in COUNTRIES])
        self._nd_used = {i.nd_no for i in self.ingredients if i.kind == "ND"}

    # --- vocabularies ------------------------------------------------------------------------
    def _build_ingredients(self, seed_rows: list[dict]) -> list[Ingredient]:
        rng = self.rng
        table = _vocab.ingredient_table()
        out: list[Ingredient] = []
        by_base: dict[str, Ingredient] = {}
        nd_numbers = rng.sample(range(40, 7000), len(table) + 20)
        for rank, (base, salts) in enumerate(table):
            weight = 60.0 / (rank + 8) ** 0.9 * rng.uniform(0.5, 1.5)
            r = rng.random()
            if r < 0.30:
                kind, no, group = "J", str(rng.choice((209, 209, 210, 211))), "J"
            elif r < 0.42:
                kind, no, group = "ND", "", "ND"
            elif r < 0.47:
                kind, no, group = "K", str(rng.randint(1, 40)), "K"
            else:
                kind = "std"
                no_i = rng.randint(1, 208)
                no, group = str(no_i), _group_for(no_i, rng)
            ing = Ingredient(
                base, salts, weight, kind, no, group, nd_no=nd_numbers[rank], nd_prefix=rng.random() < 0.75
            )
            out.append(ing)
            by_base[base] = ing
        for herbal in _vocab.HERBAL_INGREDIENTS:
            ing = Ingredient(herbal, ("",), 0.4, "herbal", "211", "J")
            out.append(ing)
            by_base[herbal] = ing
        placenta = Ingredient("인태반", ("",), 0.6, "HP", "01", "HP")
        out.append(placenta)
        by_base["인태반"] = placenta
        # the real rows fix (ingredient no, group) for the ingredients they mention
        bases = sorted(by_base, key=len, reverse=True)
        for row in seed_rows:
            text = (row.get("INGR_KOR_NAME") or "").replace("미분화", "").replace("()", "")
            num = _keys.permit_key(row.get("DMF_PERMIT_NO")) or ""
            base_no, _ = split_grant(num)
            hit = next((b for b in bases if text.startswith(b)), None)
            if hit is None:
                continue
            ing = by_base[hit]
            m = _STD_RE.match(base_no)
            if m and m.group(3) not in ("HP",):
                ing.ingr_no, ing.group = m.group(2), m.group(3)
                ing.kind = "J" if m.group(3) == "J" else ("K" if m.group(3) == "K" else "std")
            m = _ND_RE.match(base_no)
            if m:
                ing.kind, ing.group, ing.ingr_no = "ND", "ND", ""
                ing.nd_no, ing.nd_prefix = int(m.group(2)), bool(m.group(1))
        return out

    def _build_applicants(self) -> list[Applicant]:
        rng = self.rng
        out = [Applicant(n, b, float(c)) for n, c, b in _vocab.TOP_APPLICANTS]
        seen_keys = {_keys.text_key("applicant", n) for n, _, _ in _vocab.TOP_APPLICANTS}
        seen_keys |= {_keys.text_key("applicant", _vocab.HIPL_NAME), _keys.text_key("applicant", _vocab.HIPL_LIFE_NAME)}
        seen_biz = {b for _, _, b in _vocab.TOP_APPLICANTS} | set(_vocab.SEED_APPLICANT_BIZRNOS)
        k = 1
        tail: list[Applicant] = []
        while len(tail) < N_TAIL_APPLICANTS:
            name = _vocab.korean_company_name(rng)
            key = _keys.text_key("applicant", name, "korean_only")
            if key in seen_keys or _keys.text_key("applicant", name) in seen_keys:
                continue
            b = _vocab.bizrno(rng)
            if b in seen_biz:
                continue
            seen_keys.add(key)
            seen_biz.add(b)
            # heavy tail below the named top seven: 180, 170, … down to a few records each
            weight = 1.0 / (k + 9.5) * rng.lognormvariate(0, 0.45)
            tail.append(Applicant(name, b, weight))
            k += 1
        # scale the tail so that the whole registry (minus the seed group) has the real size
        scale = (TAIL_RECORDS) / sum(a.weight for a in tail)
        out += [Applicant(a.name, a.bizrno, min(a.weight * scale, 160.0)) for a in tail]
        return out

    def _build_manufacturers(self) -> dict[str, list[tuple[Manufacturer, float]]]:
        rng = self.rng
        pools: dict[str, list[tuple[Manufacturer, float]]] = {}
        seen: set[str | None] = set()
        for c in COUNTRIES:
            n = max(1, round(c.entries / 4.2))
            pool: list[tuple[Manufacturer, float]] = []
            tries = 0
            while len(pool) < n and tries < n * 20:
                tries += 1
                name = _vocab.manufacturer_name(rng, c.style)
                key = _keys.text_key("manufacturer", name, "compact_strip")
                if key in seen:
                    continue
                seen.add(key)
                pool.append((Manufacturer(name, _vocab.manufacturer_address(rng, c), c), rng.paretovariate(1.4)))
            pools[c.canonical] = pool
        self._mfr_cum = {k: cumulative([w for _, w in v]) for k, v in pools.items()}
        return pools

    # --- drawing -----------------------------------------------------------------------------
    def pick_ingredient(self) -> Ingredient:
        return self.ingredients[pick(self.rng, self._ingr_weights)]

    def pick_applicant(self, exclude_bizrno: str | None = None) -> Applicant:
        while True:
            a = self.applicants[pick(self.rng, self._app_weights)]
            if a.bizrno != exclude_bizrno:
                return a

    def pick_country(self) -> Country:
        return COUNTRIES[pick(self.rng, self._country_weights)]

    def pick_manufacturer(self, country: Country) -> Manufacturer:
        pool = self.manufacturers[country.canonical]
        return pool[pick(self.rng, self._mfr_cum[country.canonical])][0]

    def draw_sites(
        self, ingredient: Ingredient, first_country: Country | None = None
    ) -> list[tuple[str | None, Manufacturer, str]]:
        rng = self.rng
        c0 = first_country or self.pick_country()
        sites: list[tuple[str | None, Manufacturer, str]] = [(None, self.pick_manufacturer(c0), c0.spell(rng))]
        if rng.random() < 0.105:
            extra = 1 if rng.random() < 0.8 else (2 if rng.random() < 0.75 else 3)
            for _ in range(extra):
                c = c0 if rng.random() < 0.6 else self.pick_country()
                m = self.pick_manufacturer(c)
                if rng.random() < 0.15:  # same company, second plant
                    m = Manufacturer(sites[0][1].name, _vocab.manufacturer_address(rng, c), c)
                role = None
                if rng.random() < 0.3:
                    role = rng.choice(_vocab.ROLE_PREFIXES).format(ingr=ingredient.base)
                sites.append((role, m, c.spell(rng)))
        return sites

    def random_issue_date(self, earliest: date, latest: date) -> date:
        rng = self.rng
        years = [y for y in _YEAR_WEIGHTS if earliest.year <= y <= latest.year] or [latest.year]
        y = years[pick(rng, cumulative([_YEAR_WEIGHTS.get(y, 1.0) for y in years]))]
        lo = max(earliest, date(y, 1, 1))
        hi = min(latest, date(y, 12, 31))
        d = lo + timedelta(days=rng.randint(0, max(0, (hi - lo).days)))
        while d.weekday() >= 5 and d < hi:
            d += timedelta(days=1)
        return d

    def notice_for(self, ingredient: Ingredient) -> str | None:
        r = self.rng.random()
        if ingredient.kind == "K":
            return "별표1의2"
        if ingredient.kind == "HP":
            return "인태반 유래"
        if ingredient.kind == "ND":
            return "신물질" if r < 0.9 else "별표1"
        if r < 0.06:
            return "기타"
        if r < 0.07:
            return ""
        return "별표1"

    def original(
        self,
        issue: date,
        applicant: Applicant,
        *,
        ingredient: Ingredient | None = None,
        first_country: Country | None = None,
        accept: date | None = None,
    ) -> Draft:
        """A new (non-derived) registration; number assigned later by `assign_number`."""
        rng = self.rng
        ing = ingredient or self.pick_ingredient()
        gd = GROUP_DATES.get(ing.group, date(2003, 1, 1))
        if accept is None:
            accept = issue if rng.random() < 0.7 else issue - timedelta(days=rng.randint(1, 90))
            if accept < gd and rng.random() < 0.995:  # acceptance before the group existed: rare
                accept = issue
        sites = self.draw_sites(ing, first_country)
        d = Draft(ing, ing.name(rng), applicant, sites, issue, accept, self.notice_for(ing))
        d.name_sep = "," if rng.random() < 0.55 else ", "
        d.trailing_comma = len(sites) == 1 and rng.random() < 0.006
        return d

    def grant(
        self, base_row: Row, base_no: str, base_ing: Ingredient, issue: date, applicant: Applicant
    ) -> Draft | None:
        """A grant-derived (자료공유 허여) copy: same ingredient and sites, base number + (n)/(A);
        None when that original has no free grant number left."""
        rng = self.rng
        used = self.grants.setdefault(base_no, [])
        letters = [s for s in used if s.isalpha()]
        numbers = [int(s) for s in used if s.isdigit()]
        nxt = max(numbers, default=0) + 1
        if len(letters) < 3 and (rng.random() < 0.12 or nxt > 25):
            suffix = "ABC"[len(letters)]
        elif nxt <= 25:
            suffix = str(nxt)
        else:
            return None
        number = f"{base_no}({suffix})"
        if _keys.permit_key(number) in self.used:
            return None
        used.append(suffix)
        self.used.add(_keys.permit_key(number))
        d = Draft(
            base_ing, base_row[ING], applicant, [], issue, issue, base_row[NOTICE], base_no=base_no, number=number
        )
        d.meta["copy"] = base_row
        if rng.random() < 0.1:
            d.notice = self.notice_for(base_ing)
        return d

    def assign_number(self, d: Draft, accept: date | None = None) -> str:
        """Give an original draft a fresh standard / J / K / HP / new-substance number."""
        rng = self.rng
        ing = d.ingredient
        acc = accept or d.accept
        for attempt in range(1000):
            if ing.kind == "ND":
                seq = self.nd_seq[ing.nd_no] = self.nd_seq.get(ing.nd_no, 0) + 1
                number = f"{'수' if ing.nd_prefix else ''}{ing.nd_no}-{seq}-ND"
            elif ing.group == "J":
                number = f"{acc:%Y%m%d}-{ing.ingr_no}-J-{_serial_at('J', acc, rng, attempt)}"
            else:
                serial = _serial_at(ing.group, acc, rng, attempt)
                ing.seq += 1
                seq = ing.seq if ing.seq < 100 else rng.randint(1, 99)
                number = f"{acc:%Y%m%d}-{ing.ingr_no}-{ing.group}-{serial}-{seq:02d}"
            key = _keys.permit_key(number)
            if key not in self.used:
                self.used.add(key)
                d.number = number
                d.accept = acc
                return number
        raise RuntimeError(f"could not find a free permit number for {ing.base}")  # pragma: no cover

    def render(self, d: Draft, *, with_number: bool = True, with_date: bool = True) -> Row:
        rng = self.rng
        if "copy" in d.meta:
            src = d.meta["copy"]
            mfr, addr, ctry = src[MFR], src[ADDR], src[CTRY]
        else:
            names, addrs, ctrys = [], [], []
            for role, m, spelling in d.sites:
                names.append((role or "") + quirk(rng, m.name, "manufacturer"))
                addrs.append((role or "") + quirk(rng, m.address, "address"))
                ctrys.append(spelling)
            mfr = d.name_sep.join(names) + ("," if d.trailing_comma else "")
            addr = d.name_sep.join(addrs)
            ctry = ",".join(ctrys)
        bizrno = d.applicant.bizrno
        biz: str | None = bizrno
        if rng.random() < 0.002:  # a handful of records carry a blank or odd BIZRNO
            biz = rng.choice(("", None, f"{bizrno[:3]}-{bizrno[3:5]}-{bizrno[5:]}", bizrno[:9]))
        return (
            d.number if with_number else None,
            quirk(rng, d.ingr_text, "ingredient"),
            d.applicant.name,
            mfr,
            addr,
            ctry,
            d.issue.isoformat() if with_date else None,
            biz,
            d.notice,
        )


# --- numbers corrected after publication (re-numbering, docs/DOMAIN.md §4) ------------------------------


def _serial_at(group: str, accept: date, rng: random.Random, attempt: int = 0) -> int | None:
    """A serial the group would be handing out on `accept` (None: a group without a running serial); `attempt`:
    how many tries at a free number came before (each moves the serial on)."""
    if group == "J":
        return int(_interp(_J_ANCHORS, accept)) + rng.randint(0, 6) + attempt * 3
    if group not in _GROUP_SERIAL_MAX:
        return None
    gd = GROUP_DATES[group]
    frac = max(0.0, (accept - gd).days / max(1, (_SERIAL_REF - gd).days))
    return max(1, int(_GROUP_SERIAL_MAX[group] * frac) + rng.randint(-3, 3) + attempt)


def own_number(number: str, issue: date, rng: random.Random) -> str | None:
    """The registration's own standard number for a grant-style one, as in the real case
    20130329-190-I-83-01(1) → 20260922-190-I-769-04: its issue date, the same ingredient number and group, the
    group's serial on that date and a same-ingredient sequence. None for a number of another shape."""
    base, suffix = split_grant(number)
    m = _STD_RE.match(base)
    if suffix is None or m is None:
        return None
    _, ingr, group, _, seq = m.groups()
    serial = _serial_at(group, issue, rng)
    if serial is None:
        return None
    return f"{issue:%Y%m%d}-{ingr}-{group}-{serial}" + ("" if seq is None else f"-{rng.randint(1, 99):02d}")


def corrected_serial(number: str, rng: random.Random) -> str | None:
    """A standard number with its serial corrected by a few (None for a number of another shape)."""
    m = _STD_RE.match(number)
    if m is None:
        return None
    accept, ingr, group, serial, seq = m.groups()
    fixed = int(serial) + rng.choice((-3, -2, -1, 1, 2, 3))
    fixed = fixed if fixed >= 1 else int(serial) + 1
    return f"{accept}-{ingr}-{group}-{fixed}" + ("" if seq is None else f"-{seq}")


def _group_for(no: int, rng: random.Random) -> str:
    if no <= 88:
        return rng.choice("ABCD")
    for limit, g in ((100, "E"), (115, "F"), (125, "G"), (140, "H")):
        if no <= limit:
            return g
    return "I"


def group_date(ing: Ingredient) -> date:
    """The earliest issue date an ingredient's registration group allows."""
    return GROUP_DATES.get(ing.group, date(2003, 1, 1))


# --- static text quirks (at creation) -------------------------------------------------------------

_FULLWIDTH = {c: chr(ord(c) + 0xFEE0) for c in "0123456789()ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz.,-"}


def to_fullwidth(text: str, rng: random.Random, share: float = 1.0) -> str:
    return "".join(_FULLWIDTH.get(c, c) if rng.random() < share else c for c in text)


def quirk(rng: random.Random, value: str, kind: str) -> str:
    """Occasionally add one of the real data's typing quirks (never changes any matching key)."""
    r = rng.random()
    if kind == "ingredient":
        if r < 0.004:
            return value + " "
        if r < 0.005:
            return to_fullwidth(value, rng)
        return value
    if r < 0.025:
        return value + " "
    if r < 0.033:
        return " " + value
    if r < 0.048 and " " in value:
        i = _nth_space(value, rng)
        return value[:i] + "  " + value[i + 1 :]
    if kind == "address":
        if r < 0.051:
            return value + "\r\n"
        if r < 0.053 and " " in value:
            i = _nth_space(value, rng)
            return value[:i] + "\r\n" + value[i + 1 :]
        if r < 0.056:
            m = re.search(r"\d+", value)
            if m:
                return value[: m.start()] + to_fullwidth(m.group(), rng) + value[m.end() :]
    if kind == "manufacturer" and r < 0.052 and "'" in value:
        return value.replace("'", "’")
    return value


def _nth_space(value: str, rng: random.Random) -> int:
    spaces = [i for i, c in enumerate(value) if c == " "]
    return rng.choice(spaces)


def malform_number(number: str, rng: random.Random) -> str:
    """The registry's few malformed numbers: stray spaces, full-width, lower case, en dash."""
    kind = rng.randrange(5)
    if kind == 0:
        i = number.index("-")
        return number[:i] + " " + number[i:] if rng.random() < 0.5 else number + " "
    if kind == 1:
        return to_fullwidth(number, rng)
    if kind == 2 and re.search(r"[A-Z]", number):
        return re.sub(r"[A-Z]+", lambda m: m.group().lower(), number, count=1)
    if kind == 3:
        return number.replace("-", "–", 1)
    return " " + number


# --- cosmetic re-typings (evolution) ---------------------------------------------------------------


def _korean_form_swaps(v: str) -> list[str]:
    m = re.match(r"^\s*(\(주\)|㈜|주식회사\s?)(.+?)\s*$", v)
    out = []
    if m:
        core = m.group(2)
        out += [f"(주){core}", f"㈜{core}", f"{core}(주)", f"{core}주식회사", f"주식회사 {core}", f"{core}㈜"]
    m = re.match(r"^\s*(.+?)\s?(\(주\)|㈜|주식회사)\s*$", v)
    if m:
        core = m.group(1)
        out += [f"(주){core}", f"㈜{core}", f"{core}(주)", f"{core}주식회사", f"주식회사 {core}", f"{core} (주)"]
    return out


def cosmetic_candidates(rng: random.Random, fld: str, value: str, sites: int) -> list[str]:
    """Re-typings of `value` a person might produce; the caller keeps one that every key variant
    considers equal."""
    c: list[str] = []
    if fld == "countries":
        parts = value.split(",")
        for i, p in enumerate(parts):
            alt = _vocab.COSMETIC_COUNTRY_SWAPS.get(p.strip())
            if alt:
                c.append(",".join(parts[:i] + [alt] + parts[i + 1 :]))
        if value.endswith(" "):
            c.append(value.rstrip())
        rng.shuffle(c)
        return c
    if fld in ("applicant", "manufacturer"):
        c += _korean_form_swaps(value)
    c.append(value + " ")
    c.append(" " + value)
    if value != value.strip():
        c.append(value.strip())
    if "  " in value:
        c.append(value.replace("  ", " ", 1))
    if " " in value.strip():
        i = _nth_space(value.strip(), rng) + (len(value) - len(value.lstrip()))
        c.append(value[:i] + "  " + value[i + 1 :])
        if fld == "address":
            c.append(value[:i] + "\r\n" + value[i + 1 :])
    if fld == "address":
        c.append(value.rstrip() + "\r\n")
    if "\r\n" in value:
        c.append(value.replace("\r\n", " ", 1))
    if re.search(r"[a-z]", value):
        c.append(value.upper())
    if re.search(r"[A-Z]{4,}", value):
        c.append(re.sub(r"[A-Za-z]+", lambda m: m.group().capitalize(), value))
    if sites == 1 or fld in ("ingredient",):
        if "Co., Ltd." in value:
            c += [value.replace("Co., Ltd.", "Co.,Ltd."), value.replace("Co., Ltd.", "Co., Ltd")]
        if "Co.,Ltd" in value:
            c.append(value.replace("Co.,Ltd", "Co., Ltd"))
        if value.rstrip().endswith("."):
            c.append(value.rstrip()[:-1])
        elif fld != "ingredient":
            c.append(value.rstrip() + ".")
    if " - " in value:
        c.append(value.replace(" - ", " – ", 1))
    if "–" in value:
        c.append(value.replace("–", "-", 1))
    if "'" in value:
        c.append(value.replace("'", "’"))
    if "’" in value:
        c.append(value.replace("’", "'"))
    for a, b in (("Ⅱ", "II"), ("Ⅲ", "III"), ("Ⅰ", "I")):
        if a in value:
            c.append(value.replace(a, b))
    m = re.search(r"Phase-(III|II|I)\b", value)
    if m:
        c.append(value.replace(m.group(), "Phase-" + {"I": "Ⅰ", "II": "Ⅱ", "III": "Ⅲ"}[m.group(1)], 1))
    m = re.search(r"\d+", value)
    if m:
        c.append(value[: m.start()] + to_fullwidth(m.group(), rng) + value[m.end() :])
    if any("\uff01" <= ch <= "\uff5e" for ch in value):
        c.append("".join(unicodedata.normalize("NFKC", ch) if "\uff01" <= ch <= "\uff5e" else ch for ch in value))
    if "(" in value and fld == "ingredient":
        c.append(value.replace("(", "（").replace(")", "）"))
    rng.shuffle(c)
    return c


def cosmetic_edit(rng: random.Random, row: Row, fld: str) -> str | None:
    """A re-typing of one field that keeps every matching key, or None when none applies."""
    i = COMPARED_POSITIONS[fld]
    value = row[i]
    if not value or not value.strip():
        return None
    sites = site_count(row)
    for cand in cosmetic_candidates(rng, fld, value, sites):
        if cand != value and _keys.is_cosmetic_edit(fld, value, cand):
            if fld == "countries" and len(cand.split(",")) != len(value.split(",")):
                continue
            return cand
    return None


def site_count(row: Row) -> int:
    return len(row[CTRY].split(",")) if row[CTRY] else 1


def with_field(row: Row, **changes: str | None) -> Row:
    """`row` with the named fields (model.COMPARED_FIELDS names) set to new values."""
    r = list(row)
    for fld, v in changes.items():
        r[COMPARED_POSITIONS[fld]] = v
    return tuple(r)
