"""The workbook's look: one font, one header style, severity colours, number/date formats.

Named styles are registered once per workbook and then assigned by name, so 20k cells share a
handful of style records (fast to write, small file, consistent look on every sheet).
"""

from __future__ import annotations

from typing import Any

from openpyxl import Workbook
from openpyxl.styles import Alignment, Border, Font, NamedStyle, PatternFill, Side

from dmf_assets.domain.model import DayStatus

#: Korean-capable UI font shipped with Windows/Office; LibreOffice substitutes a Korean font.
FONT_NAME = "맑은 고딕"
FONT_SIZE = 10

FMT_INT = "#,##0"
FMT_DATE = "yyyy-mm-dd"
FMT_DATETIME = "yyyy-mm-dd hh:mm"
FMT_PCT = "0.0%"

NAVY = "1F3864"
WHITE = "FFFFFF"
GRID = "BFBFBF"

#: Severity -> (fill colour, font colour). CRITICAL red, HIGH orange, MEDIUM yellow,
#: INFO light blue, COSMETIC grey (the brief's palette).
SEVERITY_COLOURS: dict[str, tuple[str, str]] = {
    "CRITICAL": ("FF5B5B", "FFFFFF"),
    "HIGH": ("F4B183", "000000"),
    "MEDIUM": ("FFE699", "000000"),
    "INFO": ("DDEBF7", "000000"),
    "COSMETIC": ("D9D9D9", "595959"),
}

#: the banner's text colour (first row of every sheet; its fill is the day's `DayStatus.colour`)
BANNER_FONT = "FFFFFF"


def solid(colour: str) -> PatternFill:
    return PatternFill(fill_type="solid", start_color=colour, end_color=colour)


_thin = Side(style="thin", color=GRID)
_GRID_BORDER = Border(left=_thin, right=_thin, top=_thin, bottom=_thin)


def font(**kw: bool | str | float) -> Font:
    """The house font with overrides (bold, color, size, …)."""
    return Font(name=FONT_NAME, size=kw.pop("size", FONT_SIZE), **kw)


# Style names (assign with `cell.style = TEXT` etc.)
TEXT = "dmf_text"
TEXT_WRAP = "dmf_text_wrap"
INT = "dmf_int"
PCT = "dmf_pct"
DATE = "dmf_date"
DATETIME = "dmf_datetime"
HEADER = "dmf_header"
LINK = "dmf_link"
TITLE = "dmf_title"
SUBTITLE = "dmf_subtitle"
NOTE = "dmf_note"
LABEL = "dmf_label"
SECTION = "dmf_section"
PLAIN = "dmf_plain"


def _named_styles() -> list[NamedStyle]:
    top = Alignment(vertical="top")

    def grid(name: str, alignment: Alignment = top, **kw: Any) -> NamedStyle:
        """A table cell in the grid, in the house font unless `kw` names another."""
        kw.setdefault("font", font())
        return NamedStyle(name, alignment=alignment, border=_GRID_BORDER, **kw)

    return [
        grid(TEXT),
        grid(TEXT_WRAP, Alignment(vertical="top", wrap_text=True)),
        grid(INT, number_format=FMT_INT),
        grid(PCT, number_format=FMT_PCT),
        grid(DATE, Alignment(vertical="top", horizontal="center"), number_format=FMT_DATE),
        grid(DATETIME, number_format=FMT_DATETIME),
        grid(
            HEADER,
            Alignment(horizontal="center", vertical="center", wrap_text=True),
            font=font(bold=True, color=WHITE),
            fill=solid(NAVY),
        ),
        grid(LINK, font=font(color="0563C1", underline="single")),
        NamedStyle(TITLE, font=font(size=16, bold=True, color=NAVY), alignment=Alignment(vertical="center")),
        NamedStyle(SUBTITLE, font=font(size=10, color="404040"), alignment=Alignment(vertical="center")),
        NamedStyle(NOTE, font=font(italic=True, color="595959"), alignment=Alignment(vertical="top", wrap_text=False)),
        grid(LABEL, font=font(bold=True), fill=solid("F2F2F2")),
        NamedStyle(SECTION, font=font(size=12, bold=True, color=NAVY), alignment=Alignment(vertical="bottom")),
        NamedStyle(PLAIN, font=font(), alignment=top),
    ]


def register_styles(wb: Workbook) -> None:
    """Add the named styles to a new workbook (idempotent)."""
    existing = set(wb.named_styles)
    for style in _named_styles():
        if style.name not in existing:
            wb.add_named_style(style)


def coloured(fill: str, colour: str, **kw: bool | str | float) -> tuple[PatternFill, Font]:
    """(fill, bold font) of a coloured cell: a severity, a verdict, the banner (`kw`: other font overrides)."""
    return solid(fill), font(bold=True, color=colour, **kw)


def severity_style(severity: str) -> tuple[PatternFill, Font]:
    return coloured(*SEVERITY_COLOURS.get(severity, SEVERITY_COLOURS["INFO"]))


def verdict_style(kind: str, **kw: bool | str | float) -> tuple[PatternFill, Font]:
    """kind: ok | warn | fail | na -> (fill, font) for result cells on the quality sheet (`kw`: font overrides)."""
    fill, colour = {
        "ok": ("C6EFCE", "006100"),
        "warn": ("FFEB9C", "9C5700"),
        "fail": ("FFC7CE", "9C0006"),
        "na": ("EDEDED", "595959"),
    }[kind]
    return coloured(fill, colour, **kw)


def banner_style(status: DayStatus, size: float = 12) -> tuple[PatternFill, Font]:
    """The day's verdict in its status colour (the banner; 요약's 상태 cell in the body text's size)."""
    return coloured(status.colour, BANNER_FONT, size=size)
