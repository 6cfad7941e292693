"""Render workbooks with LibreOffice and check that what a person would see is really there.

`soffice --headless --convert-to pdf` opens the .xlsx the way a user's office suite does (a file that
needs "repair" fails or renders empty), `pdftoppm` rasterises the first page, and the PNG is decoded
here by hand (zlib + PNG filters, no Pillow) to count non-white pixels. `pdftotext` gives the first
page's text so a test can check the banner a user reads first.

    python -m dmf_assets_tests.render_check reports/DMF_리포트_2026-10-08.xlsx [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

#: A page counts as "not blank" when at least this share of its pixels is not (near-)white.
MIN_INK_RATIO = 0.005
_WHITE_THRESHOLD = 235  # every channel >= this = white paper


class RenderError(RuntimeError):
    """LibreOffice or poppler failed, or produced nothing."""


@dataclass(frozen=True)
class RenderResult:
    xlsx: Path
    pdf: Path
    png: Path
    pages: int | None
    width: int
    height: int
    ink_pixels: int
    first_page_text: str | None
    fonts: tuple[str, ...]

    @property
    def ink_ratio(self) -> float:
        return self.ink_pixels / (self.width * self.height) if self.width and self.height else 0.0

    @property
    def blank(self) -> bool:
        return self.ink_ratio < MIN_INK_RATIO


def soffice_binary() -> str | None:
    return shutil.which("soffice") or shutil.which("libreoffice")


def _env() -> dict[str, str]:
    # Hangul file names and text need a UTF-8 locale even where CI runs with LANG unset.
    env = dict(os.environ)
    env.setdefault("LANG", "C.UTF-8")
    env["LC_ALL"] = env.get("LC_ALL") or "C.UTF-8"
    return env


def render_pdfs(xlsx_paths: Sequence[Path], out_dir: Path, timeout: float = 240) -> list[Path]:
    """Convert workbooks to PDF in one LibreOffice start (a throw-away user profile each call)."""
    soffice = soffice_binary()
    if soffice is None:
        raise RenderError("LibreOffice (soffice) is not installed")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    # ASCII copies: LibreOffice's output naming is locale-sensitive with non-ASCII names.
    sources = []
    for i, path in enumerate(xlsx_paths):
        copy = out_dir / f"render_{i}.xlsx"
        shutil.copyfile(path, copy)
        sources.append(copy)
    profile = Path(tempfile.mkdtemp(prefix="dmf_lo_profile_"))
    try:
        cmd = [
            soffice,
            f"-env:UserInstallation={profile.as_uri()}",
            "--headless",
            "--norestore",
            "--nolockcheck",
            "--convert-to",
            "pdf",
            "--outdir",
            str(out_dir),
            *map(str, sources),
        ]
        try:
            proc = subprocess.run(cmd, capture_output=True, timeout=timeout, env=_env(), stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as exc:
            raise RenderError(f"LibreOffice did not finish within {timeout:.0f} s") from exc
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    pdfs = [src.with_suffix(".pdf") for src in sources]
    missing = [p.name for p in pdfs if not p.exists() or p.stat().st_size == 0]
    if missing:
        detail = (proc.stderr or proc.stdout).decode("utf-8", "replace").strip()[-500:]
        raise RenderError(f"LibreOffice produced no PDF for {missing} (exit {proc.returncode}): {detail}")
    return pdfs


def _run(cmd: list[str], timeout: float = 60) -> str | None:
    if shutil.which(cmd[0]) is None:
        return None
    proc = subprocess.run(cmd, capture_output=True, timeout=timeout, env=_env(), stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        raise RenderError(f"{cmd[0]} failed (exit {proc.returncode}): {proc.stderr.decode('utf-8', 'replace')[-300:]}")
    return proc.stdout.decode("utf-8", "replace")


def first_page_png(pdf: Path, dpi: int = 50) -> Path:
    prefix = pdf.with_suffix("")
    if _run(["pdftoppm", "-png", "-r", str(dpi), "-f", "1", "-l", "1", str(pdf), str(prefix)]) is None:
        raise RenderError("pdftoppm (poppler-utils) is not installed")
    # pdftoppm pads the page number to the page count's width: -1.png, -01.png, …
    found = sorted(pdf.parent.glob(prefix.name + "-*1.png"))
    if not found:
        raise RenderError(f"pdftoppm wrote no PNG for {pdf.name}")
    return found[0]


def pdf_pages(pdf: Path) -> int | None:
    info = _run(["pdfinfo", str(pdf)])
    for line in (info or "").splitlines():
        if line.startswith("Pages:"):
            return int(line.split()[1])
    return None


def pdf_first_page_text(pdf: Path) -> str | None:
    return _run(["pdftotext", "-layout", "-f", "1", "-l", "1", str(pdf), "-"])


def pdf_fonts(pdf: Path) -> tuple[str, ...]:
    listing = _run(["pdffonts", str(pdf)])
    if not listing:
        return ()
    return tuple(line.split()[0] for line in listing.splitlines()[2:] if line.strip())


# --- PNG decoding (enough for pdftoppm output: 8-bit, non-interlaced) ----------------------------

_CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}  # colour type -> samples per pixel


def png_ink(path: Path) -> tuple[int, int, int]:
    """(width, height, number of non-white pixels) of an 8-bit non-interlaced PNG."""
    data = Path(path).read_bytes()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise RenderError(f"{path} is not a PNG")
    pos, idat, header = 8, bytearray(), None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    if header is None:
        raise RenderError(f"{path}: no IHDR chunk")
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or interlace or colour not in _CHANNELS:
        raise RenderError(f"{path}: unsupported PNG (depth {depth}, colour type {colour}, interlace {interlace})")
    bpp = _CHANNELS[colour]
    stride = width * bpp
    raw = zlib.decompress(bytes(idat))
    prev = bytearray(stride)
    ink = 0
    colour_samples = 1 if colour in (0, 4) else 3
    for y in range(height):
        start = y * (stride + 1)
        ftype = raw[start]
        line = bytearray(raw[start + 1 : start + 1 + stride])
        _unfilter(ftype, line, prev, bpp)
        for x in range(0, stride, bpp):
            if min(line[x : x + colour_samples]) < _WHITE_THRESHOLD:
                ink += 1
        prev = line
    return width, height, ink


def _unfilter(ftype: int, line: bytearray, prev: bytearray, bpp: int) -> None:
    n = len(line)
    if ftype == 0:
        return
    if ftype == 1:  # Sub
        for i in range(bpp, n):
            line[i] = (line[i] + line[i - bpp]) & 0xFF
    elif ftype == 2:  # Up
        for i in range(n):
            line[i] = (line[i] + prev[i]) & 0xFF
    elif ftype == 3:  # Average
        for i in range(n):
            left = line[i - bpp] if i >= bpp else 0
            line[i] = (line[i] + ((left + prev[i]) >> 1)) & 0xFF
    elif ftype == 4:  # Paeth
        for i in range(n):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            pred = a if pa <= pb and pa <= pc else b if pb <= pc else c
            line[i] = (line[i] + pred) & 0xFF
    else:
        raise RenderError(f"unknown PNG filter type {ftype}")


def check_render(xlsx_paths: Sequence[Path], out_dir: Path, dpi: int = 50) -> list[RenderResult]:
    """Render each workbook's first page and measure it (raises RenderError if a tool fails)."""
    results = []
    for xlsx, pdf in zip(xlsx_paths, render_pdfs(xlsx_paths, out_dir), strict=True):
        png = first_page_png(pdf, dpi)
        width, height, ink = png_ink(png)
        results.append(
            RenderResult(
                xlsx=Path(xlsx),
                pdf=pdf,
                png=png,
                pages=pdf_pages(pdf),
                width=width,
                height=height,
                ink_pixels=ink,
                first_page_text=pdf_first_page_text(pdf),
                fonts=pdf_fonts(pdf),
            )
        )
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Render DMF workbooks with LibreOffice and check page 1")
    parser.add_argument("xlsx", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: a temporary one)")
    args = parser.parse_args(argv)
    missing = [str(p) for p in args.xlsx if not p.is_file()]
    if missing:
        print(f"render_check: no such file: {', '.join(missing)}", file=sys.stderr)
        return 2
    out = args.out or Path(tempfile.mkdtemp(prefix="dmf_render_"))
    try:
        results = check_render(args.xlsx, out)
    except RenderError as exc:
        print(f"render_check: {exc}", file=sys.stderr)
        return 2
    status = 0
    for r in results:
        verdict = "BLANK" if r.blank else "ok"
        print(f"{verdict}\t{r.xlsx}\tpages={r.pages}\tink={r.ink_ratio:.1%}\tpng={r.png}")
        status |= r.blank
    return status


if __name__ == "__main__":
    sys.exit(main())
