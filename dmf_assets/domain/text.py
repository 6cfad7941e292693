"""Two-layer text normalization (docs/DOMAIN.md §3): the display value people read, the matching key the diff
compares.

Every rule is written once, as a polars expression, and the scalar helpers (`display_text`,
`match_key`) evaluate that same expression on a one-value frame (cached), so the vectorized pipeline
and the scalar helpers cannot disagree about what a key is.

- display: drop control/format characters (line breaks become spaces first), NFKC, fold look-alike
  punctuation, collapse whitespace, trim; empty -> null. Case and punctuation are otherwise kept.
- text key: display without any whitespace, punctuation (P*) or symbol (S*), lower-cased; empty -> null.
- company key: the text key after removing role prefixes (`[… 제조소]`) and legal-form words
  (주식회사, (주), 유한회사, Co., Ltd., Inc, GmbH, S.p.A, …).
- country key: each comma/slash/semicolon separated entry mapped to its canonical Korean name,
  de-duplicated, sorted, joined with `|`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal, TypeVar, get_args

import polars as pl

from dmf_assets.domain.countries import COUNTRY_VARIANTS, canonical_country

Kind = Literal["text", "company", "country", "permit", "date"]
KINDS: tuple[str, ...] = get_args(Kind)

# --- display ---------------------------------------------------------------------------------------

#: characters that separate lines or columns: they become a space before control characters go.
_LINE_BREAKS = r"[\r\n\t\x0B\x0C\x{85}\x{2028}\x{2029}]"
#: Cc (controls) and Cf (format: RTL/LTR marks, zero-width space/joiners, BOM, soft hyphen).
#: Dropped *before* NFKC so that a removed mark can never leave an un-normalized sequence behind
#: (which would make display() non-idempotent).
_CONTROLS = r"[\p{Cc}\p{Cf}]"

#: look-alike punctuation NFKC leaves alone -> its ASCII twin. NFKC already turns ㈜ into (주),
#: Ⅲ into III and full-width forms into half-width; the explicit ㈜/㈔ entries document the intent.
PUNCTUATION_FOLDS: dict[str, str] = {
    "\u2013": "-",  # – en dash
    "\u2014": "-",  # — em dash
    "\u2015": "-",  # ― horizontal bar
    "\u2010": "-",  # ‐ hyphen
    "\u2011": "-",  # ‑ non-breaking hyphen (NFKC maps it to U+2010 anyway)
    "\u2012": "-",  # ‒ figure dash
    "\u2212": "-",  # − minus sign
    "\u2018": "'",  # ‘
    "\u2019": "'",  # ’
    "\u201a": "'",  # ‚
    "\u201b": "'",  # ‛
    "\u2032": "'",  # ′ prime
    "`": "'",
    "\u201c": '"',  # “
    "\u201d": '"',  # ”
    "\u201e": '"',  # „
    "\u201f": '"',  # ‟
    "\u321c": "(주)",  # ㈜
    "\u3214": "(사)",  # ㈔
}


def _null_if_empty(expr: pl.Expr) -> pl.Expr:
    # replace() evaluates `expr` once; when/then would evaluate the whole chain twice in eager mode
    return expr.replace("", None)


def display_expr(value: pl.Expr) -> pl.Expr:
    """Display value of a text column (Utf8 in, Utf8 out; blank -> null)."""
    out = (
        value.str.replace_all(_LINE_BREAKS, " ")
        .str.replace_all(_CONTROLS, "")
        .str.normalize("NFKC")
        .str.replace_many(PUNCTUATION_FOLDS)
        .str.replace_all(r"\s+", " ")
        .str.strip_chars(" ")
    )
    return _null_if_empty(out)


# --- matching keys ---------------------------------------------------------------------------------


def text_key_expr(display: pl.Expr) -> pl.Expr:
    """Key of a display value: no whitespace, punctuation or symbols, lower-cased; empty -> null."""
    return _null_if_empty(display.str.replace_all(r"[\s\p{P}\p{S}]", "").str.to_lowercase())


def _spaced(word: str) -> str:
    # Hangul legal forms are matched whitespace-insensitively: "주식 회사" is still 주식회사.
    return r"\s*".join(re.escape(ch) for ch in word)


def _dotted(letters: str) -> str:
    # "spa" matches SpA, S.p.A, S.p.A., S. p. A, S .p.A, S p A and S, p A: a re-typing that turns the dots
    # into spaces or commas ("S.R.L" -> "S R L", "S.p.A" -> "S, p A") is still the same legal form, so the
    # spellings keep one key (found by the cosmetic-retyping property: "OLON S.p.A." / " OLON S, p A "); so is a
    # dash, apostrophe or middle dot typed after a letter ("S- p A", found the same way)
    return r"(?:[\s.,\-–'’·]*[.,\-–'’·][\s.,\-–'’·]*|\s+)?".join(re.escape(ch) for ch in letters)


#: Korean legal-form words (removed anywhere, whitespace-insensitive).
KOREAN_LEGAL_FORMS: tuple[str, ...] = (
    "유한책임회사",
    "주식회사",
    "유한회사",
    "합자회사",
    "합명회사",
    "사단법인",
    "재단법인",
)
#: Parenthesized abbreviations: (주) (유) (합) (사) (재) — ㈜/㈔ arrive here through NFKC.
KOREAN_LEGAL_ABBREVIATIONS: tuple[str, ...] = ("주", "유", "합", "사", "재")

_KOREAN_LEGAL_RE = (
    "(?:"
    + "|".join(
        [_spaced(w) for w in KOREAN_LEGAL_FORMS]
        + [r"\(\s*" + a + r"\s*\)" for a in KOREAN_LEGAL_ABBREVIATIONS]
        + [r"^\s*주\s*\)"]  # "주)하이플": the opening parenthesis lost
    )
    + ")"
)

#: Latin legal-form tokens, matched case-insensitively as whole words; dotted abbreviations with or
#: without their dots. "company" is included so that Co./Company stay equivalent like Ltd/Limited.
LATIN_LEGAL_WORDS: tuple[str, ...] = (
    "incorporated",
    "corporation",
    "company",
    "limited",
    "private",
    "gmbh",
    "corp",
    "ltda",
    "ltd",
    "inc",
    "pvt",
    "pte",
    "pty",
    "kft",
    "sdn",
    "bhd",
    "co",
)
LATIN_LEGAL_ABBREVIATIONS: tuple[str, ...] = (
    "spa",
    "srl",
    "sro",
    "llc",
    "plc",
    "sa",
    "sl",
    "bv",
    "nv",
    "as",
    "se",
    "kg",
    "ag",
)

_LATIN_LEGAL_ALTERNATION = "|".join(
    [re.escape(w) for w in LATIN_LEGAL_WORDS] + [_dotted(a) for a in LATIN_LEGAL_ABBREVIATIONS]
)
#: one legal-form token as a whole word (also used by the site splitter, with IGNORECASE)
LATIN_LEGAL_TOKEN = r"\b(?:" + _LATIN_LEGAL_ALTERNATION + r")\b"
LATIN_LEGAL_RE = r"(?i)" + LATIN_LEGAL_TOKEN

#: a role prefix at the start of a site entry: "[베타메타손 제조소]…", ",[출발물질제조소]…"
ROLE_PREFIX_RE = r"(?:^|,)\s*\[[^\]]*\]"


def company_key_expr(display: pl.Expr) -> pl.Expr:
    """Key of a company name (applicant, manufacturer): role prefixes and legal forms removed.

    A name that is nothing but legal forms ("(주)") falls back to its plain text key, so a value is
    never keyed to null just because it is a legal form.
    """
    stripped = (
        display.str.replace_all(ROLE_PREFIX_RE, ",")
        .str.replace_all(_KOREAN_LEGAL_RE, " ")
        .str.replace_all(LATIN_LEGAL_RE, " ")
    )
    return pl.coalesce(text_key_expr(stripped), text_key_expr(display))


# --- permit numbers, dates, business numbers --------------------------------------------------------


#: a permit number already in normalized form: ASCII digits, upper-case letters, '-', '(', ')' and
#: precomposed Hangul syllables only — the display rule, whitespace removal and upper-casing leave
#: such a value unchanged (NFKC keeps these characters; nothing to fold, trim or collapse)
_CLEAN_PERMIT_RE = r"^[0-9A-Z()\-가-힣]+$"


def permit_no_expr(value: pl.Expr) -> pl.Expr:
    """Normalized permit number: display rule, all whitespace removed, upper-case; blank -> null.

    Nearly every real number is already clean and passes through untouched (≈3× faster at 1 M rows).
    """
    return pl.when(value.str.contains(_CLEAN_PERMIT_RE)).then(value).otherwise(_permit_rule(value))


def _permit_rule(value: pl.Expr) -> pl.Expr:
    return _null_if_empty(display_expr(value).str.replace_all(r"\s", "").str.to_uppercase())


def permit_no_series(values: pl.Series) -> pl.Series:
    """`permit_no_expr` over a column (named `permit_no`), the rule evaluated only on the values that are
    not clean already — an expression evaluates both branches on every row."""
    dirty = (~values.str.contains(_CLEAN_PERMIT_RE).fill_null(False)).arg_true()  # null: the rule gives null
    fixed = values.gather(dirty).to_frame("v").select(_permit_rule(pl.col("v"))).to_series()
    return values.clone().scatter(dirty, fixed).alias("permit_no")


#: accepted issue-date shapes (after whitespace removal) -> their 8 digits. A shape that is not
#: accepted is left as it was and then fails the 8-digit test.
_DATE_SHAPES: tuple[str, ...] = (
    r"^([0-9]{4})-([0-9]{2})-([0-9]{2})$",
    r"^([0-9]{4})/([0-9]{2})/([0-9]{2})$",
)
#: the Korean dotted style, as Korean official documents write a date: a trailing '.' and a one-digit
#: month or day ("2011. 6. 15.", "2020.01.05.") — the one shape whose parts are padded to two digits
_DOTTED_DATE = r"^([0-9]{4})\.([0-9]{1,2})\.([0-9]{1,2})\.?$"
#: 8 digits whose year is within 1900..2100
_DIGITS8_IN_RANGE = r"^((?:19[0-9]{2}|20[0-9]{2}|2100)[0-9]{4})$"


def iso_date_expr(digits8: pl.Expr) -> pl.Expr:
    """'YYYYMMDD' -> 'YYYY-MM-DD' when it is a real calendar date in 1900..2100, else null."""
    candidate = digits8.str.extract(_DIGITS8_IN_RANGE, 1)
    return candidate.str.to_date("%Y%m%d", strict=False).dt.strftime("%Y-%m-%d")


def issue_date_expr(value: pl.Expr) -> pl.Expr:
    """Issue date in ISO form: YYYY-MM-DD, YYYY.M(M).D(D)(.), YYYY/MM/DD or YYYYMMDD, stray spaces ignored."""
    compact = display_expr(value).str.replace_all(r"\s", "")
    for shape in _DATE_SHAPES:
        compact = compact.str.replace(shape, "${1}${2}${3}")
    dotted = pl.concat_str(compact.str.extract(_DOTTED_DATE, part).str.zfill(2) for part in (1, 2, 3))
    return iso_date_expr(pl.coalesce(dotted, compact))


def bizrno_expr(value: pl.Expr) -> pl.Expr:
    """Business registration number: separators (-, whitespace) removed; blank -> null."""
    return _null_if_empty(display_expr(value).str.replace_all(r"[\s\-]", ""))


def bizrno_valid_expr(bizrno: pl.Expr) -> pl.Expr:
    return bizrno.str.contains(r"^[0-9]{10}$").fill_null(False)


# --- countries -------------------------------------------------------------------------------------

#: separators between per-site country entries (、 is the ideographic comma; ， becomes , by NFKC)
COUNTRY_SEPARATORS_RE = re.compile(r"[,/;、]")


@dataclass(frozen=True)
class CountryField:
    """MANUF_COUNTRY_CODE_NM parsed: one entry per manufacturing site, in source order."""

    per_site: tuple[str, ...]  # canonical name per site (display text of the entry when unknown)
    key: str | None  # canonical names, de-duplicated, sorted, joined with '|'
    unresolved: tuple[str, ...]  # entries not in the alias table (display text, first occurrence)


@lru_cache(maxsize=1)
def _alias_by_text_key() -> dict[str, str]:
    table: dict[str, str] = {}
    for canonical, variants in COUNTRY_VARIANTS.items():
        for spelling in (canonical, *variants):
            key = match_key(spelling, "text")
            if key:
                table[key] = canonical
    return table


@lru_cache(maxsize=65536)
def resolve_country(entry: str) -> tuple[str | None, str | None]:
    """(canonical name or None, key token). Unknown names keep their text key as the token.

    `canonical_country` is tried first; the same alias table keyed by the text rule also catches
    punctuation variants ('중국 (China)', '대한민국.').
    """
    canonical = canonical_country(entry) or _alias_by_text_key().get(match_key(entry, "text") or "")
    if canonical is not None:
        return canonical, canonical
    return None, match_key(entry, "text")


def parse_country_display(display: str | None) -> CountryField:
    """Parse the *display* value of the country field (see `display_text`)."""
    if display is None:
        return CountryField((), None, ())
    per_site: list[str] = []
    tokens: set[str] = set()
    unresolved: dict[str, None] = {}
    for raw_entry in COUNTRY_SEPARATORS_RE.split(display):
        entry = raw_entry.strip(" ")
        if not entry:
            continue  # "인도," — a trailing separator is not a site
        canonical, token = resolve_country(entry)
        per_site.append(canonical if canonical is not None else entry)
        if canonical is None:
            unresolved.setdefault(entry, None)
        if token:
            tokens.add(token)
    key = "|".join(sorted(tokens)) if tokens else None
    return CountryField(tuple(per_site), key, tuple(unresolved))


# --- scalar helpers (same expressions, one value) --------------------------------------------------


#: a rule written once for an eager frame and a lazy one (the normalizer's and a scalar helper's)
FrameT = TypeVar("FrameT", pl.DataFrame, pl.LazyFrame)


def one_value_frame(value: object) -> pl.DataFrame | None:
    """`value` as a one-row frame (column `v`) for a scalar helper to evaluate a frame rule on; None for None.
    A lone surrogate (an undecodable byte of a command-line argument) becomes U+FFFD, as in a fetched row."""
    if value is not None and not isinstance(value, str):
        raise TypeError(f"expected str or None, got {type(value).__name__}")
    return None if value is None else pl.DataFrame({"v": [without_lone_surrogates(value)]}, schema={"v": pl.String})


def without_lone_surrogates(text: str) -> str:
    """`text` as UTF-8 can hold it: lone surrogates from a broken JSON escape (`\\ud800`) become U+FFFD, so they
    stay visible instead of failing every later encode."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _evaluate(build: Callable[[pl.Expr], pl.Expr], frame: pl.DataFrame) -> str | None:
    return frame.select(build(pl.col("v")).alias("out")).item()


def _scalar_expr(kind: str, layer: str) -> Callable[[pl.Expr], pl.Expr]:
    if kind == "permit":
        return permit_no_expr
    if kind == "date":
        return issue_date_expr
    if layer == "display":
        return display_expr
    if kind == "company":
        return lambda v: company_key_expr(display_expr(v))
    return lambda v: text_key_expr(display_expr(v))


def _scalar_frame(value: object, kind: str) -> pl.DataFrame | None:
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; expected one of {', '.join(KINDS)}")
    return one_value_frame(value)


@lru_cache(maxsize=65536)
def display_text(s: str | None, kind: Kind = "text") -> str | None:
    """Display value of one field value ('permit' -> normalized number, 'date' -> ISO or None)."""
    frame = _scalar_frame(s, kind)
    return None if frame is None else _evaluate(_scalar_expr(kind, "display"), frame)


@lru_cache(maxsize=65536)
def match_key(s: str | None, kind: Kind = "text") -> str | None:
    """Matching key of one field value; equal keys = the same meaning (docs/DOMAIN.md §3)."""
    if kind == "country":  # from its display value (display_text checks `s`)
        return None if s is None else parse_country_display(display_text(s, "country")).key
    frame = _scalar_frame(s, kind)
    return None if frame is None else _evaluate(_scalar_expr(kind, "key"), frame)
