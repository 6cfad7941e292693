"""Links to 의약품안전나라 (nedrug.mfds.go.kr) for one registration."""

from __future__ import annotations

from urllib.parse import quote, urlencode

#: 의약품안전나라 DMF list (원료의약품 등록 현황) search. `searchIngrKorName` is the ingredient filter
#: used by public scrapers of this page; no by-number parameter could be verified, so each link
#: searches the registration's ingredient and the permit number is found in that short list.
SOURCE_BASE_FALLBACK = "https://nedrug.mfds.go.kr"
NEDRUG_DMF_SEARCH_PATH = "/pbp/CCBAC03/getList"
NEDRUG_INGREDIENT_PARAM = "searchIngrKorName"
_MAX_URL = 2000  # Excel refuses to follow hyperlinks longer than ~2,079 characters
#: the cell text of every such link: it says what the link does (a search, not the registration's page)
NEDRUG_LINK_TEXT = "성분 검색"


def nedrug_search(ingredient: str | None, ingredient_base: str | None, base_url: str) -> tuple[str, str]:
    """(link text, URL) of the 의약품안전나라 DMF search for a registration's ingredient (or its base name)."""
    base = base_url.rstrip("/") + NEDRUG_DMF_SEARCH_PATH
    for term in (ingredient, ingredient_base):
        if term:
            url = f"{base}?{urlencode({NEDRUG_INGREDIENT_PARAM: term}, quote_via=quote)}"
            if len(url) <= _MAX_URL:
                return NEDRUG_LINK_TEXT, url
    return "등록 현황 목록", base  # nothing to search for: the list itself
