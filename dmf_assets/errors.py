"""Errors every layer may raise and the command line prints without a traceback."""

from __future__ import annotations


class UserError(Exception):
    """A problem the user can fix (a bad argument, a missing file); printed as one line, exit 2."""


def first_line(exc: BaseException) -> str:
    """The first line of an error's message (DuckDB's run on for lines), or its type when it says nothing."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def causes(exc: BaseException | None) -> list[BaseException]:
    """`exc` and what it was raised from, however deeply a library (Dagster, DuckDB) wrapped it; the innermost last."""
    chain: list[BaseException] = []
    while exc is not None and all(exc is not seen for seen in chain):
        chain.append(exc)
        exc = exc.__cause__ or exc.__context__
    return chain
