"""Errors every layer may raise and the command line prints without a traceback."""

from __future__ import annotations


class UserError(Exception):
    """A problem the user can fix (a bad argument, a missing file); printed as one line, exit 2."""
