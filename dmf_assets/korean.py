"""Korean text rules every message needs: the particle after a word, and a line shortened at a word.

A particle follows the sound of the word's last syllable: 이/을/은/과/으로 after a final consonant
(받침), 가/를/는/와/로 after a vowel, and 로 (not 으로) after ㄹ. Digits and Latin letters are read as
spoken: a number by its last digit or, ending in zeros, by its place (1 일, 4 사, 10 십, 9,200 이백; a date
2026-12-04 ends in 사 and takes 와), a letter by its name ("M" 엠), a word as Korean writes it ("Ltd" …드), so
"3건", "2026-12-04" and "Pharm Ltd" take the right particle too.
A bracket that holds Korean words is an aside: the particle follows the word before it (「아세클로페낙(미분화)을」,
「Yichang Ltd. (중국)가」), as Korean spelling wants; a trailing "(주)" is read (대신무약(주)가), and a bracket of
letters or digits is part of a code and read ("…-ND(19)가"). Other closing punctuation is skipped.
"""

from __future__ import annotations

import re
import unicodedata

#: particle pairs: (after a final consonant, after a vowel)
_PAIRS = {
    "이/가": ("이", "가"),
    "을/를": ("을", "를"),
    "은/는": ("은", "는"),
    "과/와": ("과", "와"),
    "으로/로": ("으로", "로"),
    "이다/다": ("이다", ""),
    "이나/나": ("이나", "나"),
}
_RIEUL = 8  # index of ㄹ among the final consonants of a Hangul syllable

# digits as read in Sino-Korean: the final consonant index of each reading (0 = none)
#  0 영(ㅇ) 1 일(ㄹ) 2 이 3 삼(ㅁ) 4 사 5 오 6 육(ㄱ) 7 칠(ㄹ) 8 팔(ㄹ) 9 구
_DIGIT_FINAL = {"0": 21, "1": 8, "2": 0, "3": 16, "4": 0, "5": 0, "6": 1, "7": 8, "8": 8, "9": 0}
# a trailing zero is read by its place: 십(ㅂ) 백(ㄱ) 천(ㄴ) 만(ㄴ)
_PLACE_FINAL = {1: 17, 2: 1, 3: 4, 4: 4}
# Latin letters spelled out: 엘(ㄹ) 엠(ㅁ) 엔(ㄴ) 알(ㄹ); every other letter name ends in a vowel
_LETTER_FINAL = {"l": 8, "m": 16, "n": 4, "r": 8}
# the end of an English word as Korean writes it: -l 엘/ㄹ, -m ㅁ, -n/-ng ㄴ/ㅇ; other endings take 으 (-k 크, -d 드)
_WORD_FINAL = (("ng", 21), ("l", 8), ("m", 16), ("n", 4))
_SKIP_END = " \t\n.,;:!?'\"’”」』)]}>…·-–—/"


#: a closing aside in brackets that holds Hangul: 「(미분화)」, 「(중국)」, 「(없음)」 — never "(주)" (read) or "(19)" (a code)
_ASIDE = re.compile(r"\s*\((?!주\))[^()]*[가-힣][^()]*\)$")


def _final(word: str) -> int | None:
    """The final consonant index (0 = a vowel) of how `word` ends when read aloud; None if unreadable."""
    text = word.rstrip()
    while (aside := _ASIDE.search(text)) and aside.start() > 0:  # the particle follows the word before an aside
        text = text[: aside.start()].rstrip()
    if text.endswith(("(주)", "㈜")):  # 대신무약(주): the abbreviation is read (주)
        return 0
    text = text.rstrip(_SKIP_END)
    if not text:
        return None
    last = text[-1]
    if "가" <= last <= "힣":
        return (ord(last) - 0xAC00) % 28
    if last.isdigit():
        number = re.search(r"\d[\d,]*$", text)  # 9,200 is one number (이백), 2026-12-04 ends in 04 (사)
        assert number is not None  # the last character is a digit
        digits = number[0].replace(",", "").lstrip("0") or "0"
        zeros = len(digits) - len(digits.rstrip("0"))
        if digits != "0" and zeros:
            return _PLACE_FINAL.get(zeros if zeros < 4 else 4, 4)
        return _DIGIT_FINAL[digits[-1]]
    if last.isascii() and last.isalpha():
        letters = re.search(r"[A-Za-z]+$", text)
        assert letters is not None  # the last character is an ASCII letter
        token = letters[0]
        if (token.isupper() and len(token) <= 5) or len(token) == 1:  # an acronym: letter names
            return _LETTER_FINAL.get(token[-1].lower(), 0)
        low = token.lower()
        return next((f for end, f in _WORD_FINAL if low.endswith(end)), 0)
    return None


def particle(word: str, pair: str) -> str:
    """The particle of `pair` ("이/가", "을/를", "은/는", "과/와", "으로/로", …) that follows `word`."""
    consonant, vowel = _PAIRS[pair]
    final = _final(word)
    if final is None:  # nothing readable (a symbol): the form after a vowel reads least oddly
        return vowel
    if pair == "으로/로":
        return "로" if final in (0, _RIEUL) else "으로"
    return consonant if final else vowel


def josa(word: str, pair: str) -> str:
    """`word` followed by its particle: josa("(주)메디정팜", "이/가") == "(주)메디정팜이"."""
    return f"{word}{particle(word, pair)}"


def shorten(text: str, width: int) -> str:
    """`text` cut to at most `width` characters at a word boundary, ending in 「…」 when cut.

    Never mid-word and never after a dangling separator ("— ", ", "); a single word longer than
    `width` is cut inside it as the only way to fit.
    """
    text = " ".join(str(text).split())
    if len(text) <= width:
        return text
    room = max(1, width - 1)
    cut = text[: room + 1]
    space = cut.rfind(" ")
    head = cut[:space] if space > 0 else text[:room]
    head = head.rstrip(" ,;:·—–-/(")
    return (head or text[:room]) + "…"


def display_width(text: str) -> int:
    """Columns `text` takes in a terminal: a Hangul syllable or another wide character takes two."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def pad(text: str, width: int, align: str = "<") -> str:
    """`text` padded to `width` terminal columns (`<` left, `>` right) — str.ljust counts a Hangul syllable as one
    column, so a table of Korean words would not line up."""
    fill = " " * max(width - display_width(text), 0)
    return text + fill if align == "<" else fill + text
