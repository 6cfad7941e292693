"""The team's own products (`config/products.csv`): "does this change matter to us?" (issue 12).

The file is optional (settings `products.file`; empty = no list). UTF-8 CSV (Excel: "CSV UTF-8"), one
product per line, header row with exactly these column names (order free, other columns ignored):

    품목명,성분,DMF 등록번호,제조소
    우리정500밀리그램,메트포르민염산염,20050831-37-C-34-05(4),
    우리캡슐,아시클로버,,Zhejiang Charioteer Pharmaceutical

- 품목명 (product name) is required;
- 등록번호 (DMF registration number): any spelling that normalizes to a valid number; the product is
  touched by every event of that registration;
- 성분 (ingredient) [+ 제조소 (manufacturer)]: matched like the watchlist (matching keys, substring;
  spacing, punctuation, case and legal-form words never matter) against the registration's current
  *and* previous values, so a manufacturer that was replaced or removed still counts. 성분 alone marks
  every registration of that ingredient; 제조소 needs 성분 (a manufacturer makes many ingredients);
- at least one of 등록번호 / 성분; blank lines and lines starting with '#' are skipped.
Errors name the file and the line and say what to fix (ProductsError is a UserError).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from dmf_assets.domain.permit import parse_permit
from dmf_assets.domain.text import match_key
from dmf_assets.errors import UserError
from dmf_assets.korean import josa

COLUMNS: tuple[str, ...] = ("품목명", "성분", "DMF 등록번호", "제조소")
#: the example shipped with the project, and where README tells a team to copy it (`[products] file`)
EXAMPLE_FILE = "config/products.example.csv"
SUGGESTED_FILE = "config/products.csv"


class ProductsError(UserError):
    """The product list cannot be used as written (message names file and line)."""


@dataclass(frozen=True)
class Product:
    name: str
    ingredient: str | None
    permit_no: str | None  # normalized
    manufacturer: str | None
    line: int
    ingredient_key: str | None = None
    manufacturer_key: str | None = None

    @property
    def label(self) -> str:
        how = self.permit_no or " + ".join(x for x in (self.ingredient, self.manufacturer) if x)
        return f"{self.name} ({how})"


def _clean(value: str | None) -> str | None:
    value = (value or "").strip()
    return value or None


def parse_products(text: str, source: str = "products.csv") -> tuple[Product, ...]:
    """Parse and validate the CSV text; raises ProductsError naming `source` and the line."""
    lines = list(io.StringIO(text.lstrip("\ufeff")))
    # the header is the first line that is neither blank nor a comment
    start = next((i for i, ln in enumerate(lines) if ln.strip() and not ln.lstrip().startswith("#")), None)
    if start is None:
        raise ProductsError(f"{source}: 비어 있습니다 — 첫 줄에 머리글 '{','.join(COLUMNS)}'이 필요합니다")
    reader = csv.reader(lines[start:])
    header = [h.strip() for h in next(reader)]
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise ProductsError(
            f"{source}:{start + 1}: 머리글에 {', '.join(missing)} 열이 없습니다 — 머리글은 '{','.join(COLUMNS)}'"
            f" (읽은 머리글: {', '.join(header) or '(없음)'})"
        )
    dupes = sorted({h for h in header if header.count(h) > 1 and h in COLUMNS})
    if dupes:
        raise ProductsError(f"{source}:{start + 1}: 머리글 {josa(', '.join(dupes), '이/가')} 두 번 있습니다")
    pos = {c: header.index(c) for c in COLUMNS}
    products: list[Product] = []
    for offset, cells in enumerate(reader):
        line = start + 2 + offset
        if not any(c.strip() for c in cells) or cells[0].lstrip().startswith("#"):
            continue
        if len(cells) > len(header):
            raise ProductsError(
                f"{source}:{line}: 열이 {len(cells)}개로 머리글({len(header)}개)보다 많습니다 — "
                "값에 쉼표가 있으면 큰따옴표로 감싸십시오"
            )
        get = {c: _clean(cells[i]) if i < len(cells) else None for c, i in pos.items()}
        name, ingredient, number, manufacturer = get["품목명"], get["성분"], get["DMF 등록번호"], get["제조소"]
        if name is None:
            raise ProductsError(f"{source}:{line}: 품목명이 비어 있습니다")
        if manufacturer is not None and ingredient is None:
            raise ProductsError(
                f"{source}:{line}: '{name}' — 제조소만으로는 찾지 않습니다 (한 제조소가 여러 성분을 만듭니다); "
                "성분도 적으십시오"
            )
        if number is None and ingredient is None:
            raise ProductsError(f"{source}:{line}: '{name}' — DMF 등록번호나 성분 중 하나는 있어야 합니다")
        permit = None
        if number is not None:
            parts = parse_permit(number)
            if parts.fmt not in ("standard", "new_substance"):
                raise ProductsError(
                    f"{source}:{line}: '{name}' — DMF 등록번호 {number!r}의 형식을 알 수 없습니다 "
                    "(예: 20110531-71-B-317-05, 수30-2-ND(A))"
                )
            permit = parts.permit_no
        products.append(
            Product(
                name,
                ingredient,
                permit,
                manufacturer,
                line,
                ingredient_key=match_key(ingredient, "text") if ingredient else None,
                manufacturer_key=match_key(manufacturer, "company") if manufacturer else None,
            )
        )
    return tuple(products)


def load_products(path: Path | str | None) -> tuple[Product, ...]:
    """The product list at `path` (None/empty = no list). Raises ProductsError with file and line."""
    if not path:
        return ()
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ProductsError(
            f"{path}: 제품 목록 파일이 없습니다 (settings products.file — 비우면 제품 목록 없음)"
        ) from None
    except OSError as exc:
        raise ProductsError(f"{path}: 읽을 수 없습니다 ({exc.strerror or exc})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ProductsError(
            f"{path}:{line}: UTF-8이 아닙니다 — Excel에서 'CSV UTF-8(쉼표로 분리)'로 저장하십시오"
        ) from None
    return parse_products(text, str(path))


def _contains(haystack: str | None, needle: str | None) -> bool:
    return bool(needle and haystack and needle in haystack)


def product_hits(events: Iterable[Mapping], products: Sequence[Product]) -> list[tuple[str, ...]]:
    """For each event, the labels of the products it touches (in product-list order).

    An event mapping needs `permit_no` and may carry `base_dmf_key`, `ingredient_key`,
    `manufacturer_key` and the base version's `base_ingredient_key` / `base_manufacturer_key`.
    """
    out: list[tuple[str, ...]] = []
    for ev in events:
        numbers = {ev.get("permit_no"), (ev.get("base_dmf_key") or "").split("#")[0] or None} - {None}
        ingr = (ev.get("ingredient_key"), ev.get("base_ingredient_key"))
        mfr = (ev.get("manufacturer_key"), ev.get("base_manufacturer_key"))
        hits = []
        for p in products:
            by_number = bool(p.permit_no and p.permit_no in numbers)
            by_names = bool(p.ingredient_key and any(_contains(k, p.ingredient_key) for k in ingr)) and (
                not p.manufacturer_key or any(_contains(k, p.manufacturer_key) for k in mfr)
            )
            if by_number or by_names:
                hits.append(p.label)
        out.append(tuple(dict.fromkeys(hits)))
    return out
