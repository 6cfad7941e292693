"""`korean.josa`: the particle after a number, a date, a Latin letter and a bracket follows how it is read aloud.

Issue 31: the banner read 「2026-12-04과」 — a date ends in its last number, 4, read 사, so it takes 와. Every
digit and every Latin letter is checked against its Korean reading, so a rule can never again be right for
some and wrong for the others.
"""

from __future__ import annotations

import string

import pytest

from dmf_assets.korean import display_width, josa, pad, particle

#: each digit read in Sino-Korean, and each letter by its name, as Korean writes them
DIGIT_READ = {
    "0": "영",
    "1": "일",
    "2": "이",
    "3": "삼",
    "4": "사",
    "5": "오",
    "6": "육",
    "7": "칠",
    "8": "팔",
    "9": "구",
}
LETTER_READ = dict(
    zip(
        string.ascii_uppercase,
        [
            "에이",
            "비",
            "씨",
            "디",
            "이",
            "에프",
            "지",
            "에이치",
            "아이",
            "제이",
            "케이",
            "엘",
            "엠",
            "엔",
            "오",
            "피",
            "큐",
            "알",
            "에스",
            "티",
            "유",
            "브이",
            "더블유",
            "엑스",
            "와이",
            "지",
        ],
        strict=True,
    )
)
PAIRS = ("이/가", "을/를", "은/는", "과/와", "으로/로")


def _after(reading: str, pair: str) -> str:
    """The particle of `pair` after a Korean reading, from its last syllable (the rule, spelled out)."""
    final = (ord(reading[-1]) - 0xAC00) % 28
    consonant, vowel = {"이/가": ("이", "가"), "을/를": ("을", "를"), "은/는": ("은", "는"), "과/와": ("과", "와")}.get(
        pair, ("으로", "로")
    )
    if pair == "으로/로":
        return "로" if final in (0, 8) else "으로"
    return consonant if final else vowel


@pytest.mark.parametrize("digit", sorted(DIGIT_READ))
@pytest.mark.parametrize("pair", PAIRS)
def test_every_digit_takes_the_particle_of_its_reading(digit, pair):
    want = _after(DIGIT_READ[digit], pair)
    for word in (
        digit,
        f"1{digit}건"[:-1],
        f"2026-12-0{digit}",
        f"20{digit}",
        f"9,2{digit}{digit}",
        f"수6580-16-ND(1{digit})",
    ):
        if word.endswith("00"):  # a number ending in zeros is read by its place (이백): checked below
            continue
        assert particle(word, pair) == want, (word, pair)
        assert josa(word, pair) == word + want


@pytest.mark.parametrize("pair", PAIRS)
def test_a_number_ending_in_zeros_is_read_by_its_place(pair):
    for word, reading in (("10", "십"), ("2026-11-20", "이십"), ("9,200", "이백"), ("3000", "삼천"), ("10,000", "만")):
        assert particle(word, pair) == _after(reading, pair), (word, pair)


def test_the_dates_the_issue_quotes():
    assert josa("2026-12-04", "과/와") == "2026-12-04와"  # 사: was 「2026-12-04과」
    assert josa("2026-11-20", "과/와") == "2026-11-20과"  # 이십
    assert josa("2026-12-01", "으로/로") == "2026-12-01로"  # 일 (ㄹ)


@pytest.mark.parametrize("letter", sorted(LETTER_READ))
@pytest.mark.parametrize("pair", PAIRS)
def test_every_latin_letter_takes_the_particle_of_its_name(letter, pair):
    want = _after(LETTER_READ[letter], pair)
    for word in (letter, letter.lower(), f"20100402-01-H{letter}", f"ND-{letter}"):
        assert particle(word, pair) == want, (word, pair)


@pytest.mark.parametrize(
    "word, pair, expected",
    [
        ("아세클로페낙(미분화)", "을/를", "을"),  # the aside is not read: 「…(미분화)(…)를」 was wrong
        ("세파클러(미분화)", "을/를", "를"),
        ("Yichang Huahai Fine Chemical Co., Ltd. (중국)", "이/가", "가"),
        ("Shilpa Pharm (인도)", "이/가", "이"),
        ("대신무약(주)", "이/가", "가"),  # (주) is read
        ("(주)메디정팜", "이/가", "이"),
        ("20140526-24-D-78-06(A)", "으로/로", "로"),  # a bracket of a code is read: 에이
        ("(없음)", "이/가", "이"),  # nothing before the bracket: its words are read
        ("Hetero Labs", "으로/로", "로"),
        ("Biocon Pharm", "으로/로", "으로"),
    ],
)
def test_brackets_words_and_codes(word, pair, expected):
    assert particle(word, pair) == expected


@pytest.mark.parametrize(
    "text, width, align, expected",
    [
        ("반영", 9, "<", "반영     "),  # two syllables take four columns
        ("변경 없음", 9, "<", "변경 없음"),
        ("9,203", 7, ">", "  9,203"),
        ("번호변경", 8, ">", "번호변경"),
        ("(주)삼오", 10, "<", "(주)삼오  "),
        ("너무 긴 글자입니다", 4, "<", "너무 긴 글자입니다"),  # never cut
    ],
)
def test_pad_counts_a_hangul_syllable_as_two_columns(text, width, align, expected):
    assert pad(text, width, align) == expected
    assert display_width(pad(text, width, align)) == max(width, display_width(text))
