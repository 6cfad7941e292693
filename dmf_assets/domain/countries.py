"""Country names in MANUF_COUNTRY_CODE_NM: one canonical Korean name per country.

The registry writes the same country several ways (`체코공화국`, `말레이지아`, `한국`). A variant
that maps to the same canonical name is a cosmetic difference, never a change of country.
The emulator draws its non-canonical spellings from this table too, so both sides agree.
"""

from __future__ import annotations

import unicodedata

#: canonical name -> known variant spellings (all compared after NFKC + whitespace removal)
COUNTRY_VARIANTS: dict[str, tuple[str, ...]] = {
    "인도": ("인디아",),
    "중국": ("중화인민공화국", "중국(China)"),
    "대한민국": ("한국", "대한민국(한국)", "Korea"),
    "이탈리아": ("이태리",),
    "스페인": ("에스파냐",),
    "독일": ("독일연방공화국",),
    "일본": (),
    "스위스": (),
    "대만": ("타이완", "중화민국"),
    "프랑스": (),
    "미국": ("미합중국", "미국(USA)"),
    "영국": (),
    "아일랜드": (),
    "네덜란드": ("화란",),
    "벨기에": (),
    "오스트리아": (),
    "헝가리": (),
    "체코": ("체코공화국",),
    "폴란드": (),
    "슬로베니아": (),
    "크로아티아": (),
    "핀란드": (),
    "덴마크": (),
    "스웨덴": (),
    "노르웨이": (),
    "포르투갈": (),
    "그리스": (),
    "이스라엘": (),
    "캐나다": (),
    "멕시코": (),
    "브라질": (),
    "아르헨티나": (),
    "싱가포르": (),
    "말레이시아": ("말레이지아",),
    "인도네시아": (),
    "태국": ("타이",),
    "베트남": ("월남",),
    "방글라데시": (),
    "파키스탄": (),
    "우크라이나": (),
    "러시아": ("러시아연방",),
    "튀르키예": ("터키",),
    "이집트": (),
    "호주": ("오스트레일리아",),
    "뉴질랜드": (),
    "슬로바키아": (),
    "불가리아": (),
    "루마니아": (),
    "라트비아": (),
    "몰타": (),
    "사이프러스": ("키프로스",),
    "요르단": (),
    "칠레": (),
    "콜롬비아": (),
    "남아프리카공화국": ("남아공",),
}


def _fold(name: str) -> str:
    return "".join(unicodedata.normalize("NFKC", name).split()).lower()


#: folded spelling (canonical or variant) -> canonical name
COUNTRY_ALIASES: dict[str, str] = {
    _fold(spelling): canonical
    for canonical, variants in COUNTRY_VARIANTS.items()
    for spelling in (canonical, *variants)
}


def canonical_country(name: str | None) -> str | None:
    """Canonical Korean name, or None when the spelling is unknown (counted as unresolved)."""
    if name is None:
        return None
    folded = _fold(name)
    return COUNTRY_ALIASES.get(folded) if folded else None
