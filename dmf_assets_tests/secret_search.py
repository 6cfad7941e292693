"""Searching every file a run leaves for a secret (no tests of its own): gzip members, xlsx/zip members, SQLite
rows (zlib-compressed blobs inflated), DuckDB tables and parquet frames read back — for each form the secret
can take (raw, URL-encoded once or twice, `+` as a space, JSON `\\u` escapes), case-insensitively."""

from __future__ import annotations

import contextlib
import gzip
import io
import sqlite3
import zipfile
import zlib
from pathlib import Path
from urllib.parse import quote, quote_plus

import duckdb
import polars as pl


def key_forms(secret: str, *extra: str) -> list[str]:
    """The needles for `secret`, lower-cased (the search is case-insensitive), longest first; `extra`: more forms
    (a distinctive tail that survives every encoding)."""
    once = quote(secret, safe="")
    forms = {secret, once, quote(secret), quote_plus(secret), quote(once, safe=""), quote_plus(once), *extra}
    forms.add("".join(f"\\u{ord(c):04x}" for c in secret))  # JSON with every character escaped
    return sorted({f.lower() for f in forms}, key=len, reverse=True)


def hits(text: str, needles: list[str]) -> list[str]:
    low = text.lower()
    return [n for n in needles if n in low]


def _sqlite_texts(path: Path) -> list[str]:
    """Every value of every table; blobs inflated when they are zlib (Dagster's snapshots are)."""
    out = []
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            for row in con.execute(f'SELECT * FROM "{table}"'):
                for value in row:
                    if isinstance(value, bytes):
                        out.append(value.decode("utf-8", "replace"))
                        with contextlib.suppress(zlib.error):
                            out.append(zlib.decompress(value).decode("utf-8", "replace"))
                    elif value is not None:
                        out.append(str(value))
    finally:
        con.close()
    return out


def _duckdb_texts(path: Path) -> list[str]:
    # DuckDB compresses strings (dictionary/FSST): read the tables back instead of trusting the bytes
    out = []
    con = duckdb.connect(str(path), read_only=True)
    try:
        for (table,) in con.execute("SELECT table_name FROM information_schema.tables").fetchall():
            rows = con.execute(f'SELECT * FROM "{table}"').fetchall()
            out.append("\n".join(map(str, rows)))
    finally:
        con.close()
    return out


def texts_of(path: Path) -> list[str]:
    data = path.read_bytes()
    texts = [data.decode("utf-8", "replace")]
    if data[:2] == b"\x1f\x8b":
        texts.append(gzip.decompress(data).decode("utf-8", "replace"))
    if zipfile.is_zipfile(io.BytesIO(data)):
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            texts += [z.read(n).decode("utf-8", "replace") for n in z.namelist()]
    if data.startswith(b"SQLite format 3\x00"):
        texts += _sqlite_texts(path)
    if path.suffix == ".duckdb":
        texts += _duckdb_texts(path)
    if path.suffix == ".parquet":
        texts.append("\n".join(map(str, pl.read_parquet(path).rows())))
    return texts


def leaks(root: Path, needles: list[str]) -> tuple[list[str], int, set[str]]:
    """(files holding a needle, with the needles found; how many files were read; their kinds)."""
    found, files, kinds = [], 0, set()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        files += 1
        kinds.add(path.suffix or path.name)
        for text in texts_of(path):
            if hit := hits(text, needles):
                found.append(f"{path.relative_to(root)}: {hit}")
                break
    return found, files, kinds
