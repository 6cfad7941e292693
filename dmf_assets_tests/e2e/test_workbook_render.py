"""LibreOffice opens the workbook and renders page 1 (rejected and accepted days), checked by eye
once and here by numbers: the page has ink, and its text carries the banner a user reads first."""

from __future__ import annotations

import shutil
import struct
import subprocess
import zlib

import pytest

from dmf_assets.report.workbook import write_workbook
from dmf_assets_tests.render_check import MIN_INK_RATIO, check_render, png_ink, soffice_binary
from dmf_assets_tests.report_builders import accepted_report, rejected_report


def _squash(text: str | None) -> str:
    # pdftotext spreads glyphs with spaces; compare without whitespace
    return "".join((text or "").split())


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    if soffice_binary() is None:
        pytest.skip("LibreOffice (soffice) is not installed")
    root = tmp_path_factory.mktemp("render")
    accepted = write_workbook(accepted_report(), root / "accepted")  # hostile text included
    rejected = write_workbook(rejected_report(), root / "rejected")
    # one LibreOffice start for both files: a conversion costs seconds
    return check_render([accepted.path, rejected.path], root / "out")


def test_first_pages_render_with_ink_and_banner_text(rendered):
    accepted, rejected = rendered
    for r in rendered:
        assert r.pdf.stat().st_size > 10_000
        assert r.pages is not None and r.pages >= 9  # every sheet printed at least once
        assert r.width > 400 and r.height > 250  # A4 landscape at 50 dpi
        assert not r.blank, f"{r.png}: ink {r.ink_ratio:.2%} < {MIN_INK_RATIO:.2%}"
    assert _squash("정상 수집 · 비교 기준 2026-10-07 — 신규 20 · 변경 50 · 삭제 10 · 번호 부여 10") in _squash(
        accepted.first_page_text
    )
    assert _squash("수집 실패 — 비교 기준은 여전히 2026-10-07입니다. 완전성 검사에서 거부되어") in _squash(
        rejected.first_page_text
    )
    assert _squash("DMF 일일 리포트 · 2026-10-08 (목)") in _squash(rejected.first_page_text)


def test_korean_text_is_drawn_with_a_korean_font(rendered):
    if shutil.which("fc-list") is None:
        pytest.skip("fontconfig not available")
    listing = subprocess.run(["fc-list", ":lang=ko", "family"], capture_output=True, text=True).stdout
    korean = {
        name.strip().replace(" ", "") for line in listing.splitlines() for name in line.split(",") if name.strip()
    }
    if not korean:
        pytest.skip("no Korean font installed (apt-get install fonts-nanum)")
    for r in rendered:
        embedded = {f.split("+", 1)[-1].split("-")[0] for f in r.fonts}
        assert embedded & korean, (r.fonts, sorted(korean)[:5])


def _png(width: int, height: int, pixels: list[bytearray], filters: list[int]) -> bytes:
    """Encode RGB rows with the given PNG filter per row (the inverse of the decoder under test)."""
    bpp, raw, prev = 3, bytearray(), bytearray(width * 3)
    for row, ftype in zip(pixels, filters, strict=True):
        out = bytearray(len(row))
        for i, value in enumerate(row):
            a = row[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if ftype == 0:
                pred = 0
            elif ftype == 1:
                pred = a
            elif ftype == 2:
                pred = b
            elif ftype == 3:
                pred = (a + b) >> 1
            else:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else b if pb <= pc else c
            out[i] = (value - pred) & 0xFF
        raw += bytes([ftype]) + out
        prev = row

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(bytes(raw))) + chunk(b"IEND", b"")


def test_png_decoder_counts_ink_exactly_for_every_filter_type(tmp_path):
    width, height = 40, 25
    rows = []
    for y in range(height):
        row = bytearray(b"\xff" * width * 3)
        for x in range(width):
            if 5 <= x < 15 and 3 <= y < 13:  # 10 x 10 dark square
                row[x * 3 : x * 3 + 3] = bytes([20 + x, 40, 200 - y])
            elif x == 30 and y == 20:
                row[x * 3 : x * 3 + 3] = bytes([250, 240, 236])  # near-white: paper, not ink
        rows.append(row)
    path = tmp_path / "t.png"
    path.write_bytes(_png(width, height, rows, [y % 5 for y in range(height)]))
    assert png_ink(path) == (width, height, 100)
