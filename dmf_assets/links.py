"""Every address the product writes for people — Dagster metadata, mail, webhook — built by `link` from
`[web] public_base_url`, never from the port a server happens to listen on at the moment: a port or host
change then needs no re-run, and an old day's link keeps working once the page is reachable again.

The paths are routes of the team's page (`web/app.py`): `/day/YYYY-MM-DD`, `/reports/<workbook>` (and, through
`link`, any other: `/dmf/<number>`, `/search?q=…`). Foundation layer: importable without Starlette (notify, defs).
"""

from __future__ import annotations

from datetime import date
from urllib.parse import quote, urlencode

from dmf_assets.settings import Web


def base_url(web: Web) -> str:
    """`[web] public_base_url`, or — when empty — http://127.0.0.1:<[web] port> (links for this machine)."""
    return web.public_base_url.rstrip("/") or f"http://127.0.0.1:{web.port}"


def link(base: str, path: str, query: dict[str, str] | None = None) -> str:
    """The one function every written address goes through: `base` + the page's `path` (+ its query)."""
    return base.rstrip("/") + "/" + path.lstrip("/") + (f"?{urlencode(query, quote_via=quote)}" if query else "")


def day_link(base: str, day: date) -> str:
    """One day's page: verdict, events, workbook."""
    return link(base, f"day/{day.isoformat()}")


def workbook_link(base: str, name: str) -> str:
    """A workbook of reports/ by its file name (`DMF_리포트_YYYY-MM-DD.xlsx`)."""
    return link(base, f"reports/{quote(name)}")
