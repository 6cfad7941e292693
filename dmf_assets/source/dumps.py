"""Read a registry dump from disk, whatever its shape: what `dmf diff` compares.

- a JSON file holding an `items` list (like ../shared/fixtures/real/*.json, optionally with a
  top-level `totalCount`), or a bare JSON list of items — gzip'd or not;
- one API response page as saved from the API (JSON envelope or XML, gzip'd or not);
- an archived day directory (data/raw/YYYY-MM-DD/ with manifest.json and gzip'd pages).

`Dump.frame` holds the rows as received, in columns (the nine API fields as String columns; other keys are not
kept, normalization ignores them). Identical rows received twice are kept: `snapshot.drop_repeated_rows`
removes them, and gate 2 counts them. Items JSON is streamed in blocks cut between two items, each parsed by
polars' JSON reader straight into columns, so a 1 M-row dump never becomes a million Python dicts. A block the
fast reader cannot prove it reads exactly (numbers, booleans, nested values, surrogate escapes, anything unusual)
sends the whole file down the careful item-by-item path, which gives the same values `normalize.items_to_frame`
always gave.

Anything that is not a usable registry dump raises `DumpError` with a Korean + English sentence:
missing/empty/binary files, JSON that is not a list of objects, API error envelopes, an archive day
whose fetch failed or whose pages are missing, a dump with no rows at all.
"""

from __future__ import annotations

import dataclasses
import gzip
import io
import json
import os
import re
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from dmf_assets.domain.model import API_FIELDS
from dmf_assets.source.archive import MANIFEST, read_manifest_file, read_pages
from dmf_assets.source.envelope import parse_page_frame
from dmf_assets.source.errors import SourceError

if TYPE_CHECKING:
    import polars as pl


class DumpError(ValueError):
    """The file or folder is not a registry dump we can read."""


@dataclass(frozen=True)
class Dump:
    """One readable dump: its rows as columns and what it says about its own completeness."""

    path: Path
    kind: str  # "items" | "page" | "archive"
    frame: pl.DataFrame = field(repr=False)  # String columns; rows as received (repeats kept)
    total_count: int | None = None  # the source's totalCount, when the dump carries one
    total_count_note: str = ""  # why a dump that should carry one has none (pages disagree)
    pages: int = 1
    label: str = ""  # what to call this dump in messages (day or file name)

    rows_received: int | None = None  # set by `without_rows`, which keeps the facts but not the frame

    @property
    def rows(self) -> int:
        return self.frame.height if self.rows_received is None else self.rows_received

    def without_rows(self) -> Dump:
        """The same facts without the raw frame (to free its memory once the rows are normalized)."""
        import polars as pl

        return dataclasses.replace(self, frame=pl.DataFrame(), rows_received=self.rows)


#: bytes read per block when streaming an items JSON file. Small blocks stay in the allocators' caches:
#: 4 MB blocks cost ≈1.8× the CPU (page faults: memory returned and touched again) at 100 k rows
BLOCK_BYTES = 256 << 10
#: the parsed blocks are joined into one chunk per this many bytes of input: later operations on a
#: frame of hundreds of small chunks are slower, and one big join would copy the whole frame at once
CHUNK_BYTES = 4 << 20

_GZIP_MAGIC = b"\x1f\x8b"
_BOM = b"\xef\xbb\xbf"
_LIST_START = re.compile(rb"\s*\[")
_OBJECT_START = re.compile(rb"\s*\{")
_ITEMS_KEY = re.compile(rb'"items"\s*:\s*\[')
#: a value that is not a string or null ("key": 1 / true / [ / {): the careful path converts those
_NON_TEXT_VALUE = re.compile(rb'":\s*[^"\sn]')
#: surrogate escapes (\ud800…\udfff): the careful path turns lone ones into U+FFFD like before
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89abcdefABCDEF]")


class _NotFast(Exception):
    """The streaming reader cannot vouch for this file: use the careful path."""


def _open(path: Path) -> BinaryIO:
    fh = open(path, "rb")  # noqa: SIM115 - returned to the caller, closed there
    if fh.read(2) == _GZIP_MAGIC:
        fh.close()
        return gzip.open(path, "rb")  # type: ignore[return-value]  # typeshed: a GzipFile is a binary file but not a typing.BinaryIO
    fh.seek(0)
    return fh


def _read_bytes(path: Path) -> bytes:
    with _open(path) as fh:
        try:
            return fh.read()
        except (OSError, EOFError) as exc:
            raise DumpError(f"{path}: gzip 파일이 손상되었습니다 / damaged gzip file ({exc})") from None


def _lines_frame(chunk: bytes, start: int, end: int) -> pl.DataFrame:
    """The items in chunk[start:end] — a run of `{…}, {…}` objects, all values strings or null — as a frame."""
    import polars as pl

    while start < end and chunk[start] in b" \t\r\n,":
        start += 1
    while end > start and chunk[end - 1] in b" \t\r\n":
        end -= 1
    if start == end:
        return pl.DataFrame(schema=dict.fromkeys(API_FIELDS, pl.String))
    if chunk[start] != 0x7B or chunk[end - 1] != 0x7D:  # '{' … '}'
        raise _NotFast
    if _NON_TEXT_VALUE.search(chunk, start, end) or _SURROGATE_ESCAPE.search(chunk, start, end):
        raise _NotFast
    # a cut made inside a string leaves an unterminated string behind, which fails to parse
    try:  # every value is a string or null (checked above): the nine API fields, as text
        return pl.read_json(io.BytesIO(b"[" + chunk[start:end] + b"]"), schema=dict.fromkeys(API_FIELDS, pl.String))
    except Exception:  # noqa: BLE001 - whatever polars refuses, the careful path explains
        raise _NotFast from None


def _last_item_end(buf: bytes) -> int:
    """Position of the last '}' followed by ',' (the end of an item with another one after it)."""
    pos = len(buf)
    while True:
        pos = buf.rfind(b"}", 0, pos)
        if pos < 0:
            return -1
        j = pos + 1
        while j < len(buf) and buf[j] in b" \t\r\n":
            j += 1
        if j < len(buf) and buf[j] == 0x2C:  # ','
            return pos


def _stream_items(fh: BinaryIO, block_bytes: int) -> tuple[pl.DataFrame, dict[str, Any]]:
    """(items frame, the other top-level keys) of `[…]` or `{…, "items": […]}` with items last."""
    import orjson
    import polars as pl

    head = fh.read(block_bytes)
    head = head[len(_BOM) :] if head.startswith(_BOM) else head
    m = _LIST_START.match(head)
    if m:
        prefix = b""
    else:
        if not _OBJECT_START.match(head):
            raise _NotFast
        m = _ITEMS_KEY.search(head)
        if not m:
            raise _NotFast
        prefix = head[: m.end() - 1]  # up to (without) the '[' of the items list
    carry = head[m.end() :]
    frames: list[pl.DataFrame] = []  # one chunk per CHUNK_BYTES of input
    parsed: list[pl.DataFrame] = []  # blocks not yet joined into `frames`
    per_chunk = max(1, CHUNK_BYTES // block_bytes)

    def take(block: pl.DataFrame) -> None:
        parsed.append(block)
        if len(parsed) >= per_chunk:
            frames.append(pl.concat(parsed, rechunk=True))
            parsed.clear()

    # polars parses a block without the GIL: blocks are parsed on all cores while the next is read,
    # with at most two blocks per core in flight (memory stays a few blocks, not the file)
    workers = max(1, min(os.cpu_count() or 1, 8))
    pending: deque[Future[pl.DataFrame]] = deque()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        try:
            while True:
                more = fh.read(block_bytes)
                if not more:
                    break
                chunk = carry + more
                cut = _last_item_end(chunk)
                if cut < 0:
                    carry = chunk
                    continue
                pending.append(pool.submit(_lines_frame, chunk, 0, cut + 1))
                carry = chunk[cut + 1 :]
                while len(pending) > 2 * workers:
                    take(pending.popleft().result())
            end = carry.rfind(b"]")  # the items list must be the last list of the document
            if end < 0:
                raise _NotFast
            pending.append(pool.submit(_lines_frame, carry, 0, end))
            while pending:
                take(pending.popleft().result())
        finally:
            for waiting in pending:
                waiting.cancel()
    if parsed:
        frames.append(pl.concat(parsed, rechunk=True))
    # what surrounds the list must be a valid document by itself: "[]" + tail, or prefix + "[]" + tail
    try:
        rest = orjson.loads(prefix + b"[]" + carry[end + 1 :])
    except orjson.JSONDecodeError:
        raise _NotFast from None
    if prefix:
        if not isinstance(rest, dict) or rest.get("items") != []:
            raise _NotFast
        meta = {k: v for k, v in rest.items() if k != "items"}
    else:
        if rest != []:
            raise _NotFast
        meta = {}
    frames = [f for f in frames if f.height]
    frame = pl.concat(frames) if frames else pl.DataFrame(schema=dict.fromkeys(API_FIELDS, pl.String))
    return frame, meta


def _careful_items(path: Path, body: bytes) -> tuple[pl.DataFrame, dict[str, Any]] | None:
    """The item-by-item reader; None when the body is not JSON (maybe an API page)."""
    from dmf_assets.domain.normalize import items_to_frame

    try:
        doc = json.loads(body.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    except RecursionError:  # e.g. `[` × 200 000
        raise DumpError(
            f"{path}: JSON이 너무 깊게 중첩되어 있습니다 — 등록 현황 목록이 아닙니다 / "
            "not a registry dump: JSON nested too deeply"
        ) from None
    except ValueError:  # Python reads no integer of more than 4,300 digits
        raise DumpError(
            f"{path}: JSON에 4,300자리가 넘는 숫자가 있습니다 — 등록 현황 목록이 아닙니다 / "
            "not a registry dump: a number of more than 4,300 digits"
        ) from None
    meta: dict[str, Any] = {}
    if isinstance(doc, dict) and isinstance(doc.get("items"), list):
        meta = {k: v for k, v in doc.items() if k != "items"}
        items = doc["items"]
    elif isinstance(doc, list):
        items = doc
    else:
        return None
    for position, item in enumerate(items):
        if not isinstance(item, dict):
            raise DumpError(
                f"{path}: {position + 1}번째 항목이 JSON 객체가 아닙니다 ({type(item).__name__}) — 등록 현황 목록이 "
                f"아닙니다 / item #{position + 1} is a {type(item).__name__}, expected a JSON object"
            )
    return items_to_frame(items), meta  # the nine API fields, values as text


#: the largest totalCount taken as a count (the API's is a 32-bit integer)
MAX_TOTAL_COUNT = 2**31 - 1


def _total_count(path: Path, meta: dict[str, Any]) -> int | None:
    """The dump's own totalCount: None when it has none (completeness then cannot be proven); anything but a
    whole number 0 … 2³¹−1 (9313.0, true, 1e30, "9313", null) is refused — a count that cannot be read must
    not silently turn the completeness gate off."""
    if "totalCount" not in meta:
        return None
    value = meta["totalCount"]
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_TOTAL_COUNT:
        return value
    text = json.dumps(value, ensure_ascii=False)  # as it is written in the file: true, null, "9313", 1e+30
    shown = text if len(text) <= 40 else text[:40] + "…"
    raise DumpError(
        f"{path}: totalCount가 0 이상의 정수가 아닙니다 ({shown}) — 목록이 완전한지 판단할 수 없어 비교하지 않습니다 / "
        f"totalCount must be a whole number 0–{MAX_TOTAL_COUNT}, got {shown}"
    )


def _from_file(path: Path, block_bytes: int) -> Dump:
    try:
        with _open(path) as fh:
            if not fh.read(1):
                raise DumpError(f"{path}: 빈 파일입니다 / the file is empty")
            fh.seek(0)
            try:
                frame, meta = _stream_items(fh, block_bytes)
                return Dump(path, "items", frame, _total_count(path, meta), label=path.name)
            except _NotFast:
                pass
    except (OSError, EOFError) as exc:
        raise DumpError(f"{path}: 읽을 수 없습니다 / cannot read the file ({exc})") from None
    body = _read_bytes(path)
    careful = _careful_items(path, body)
    if careful is not None:
        frame, meta = careful
        return Dump(path, "items", frame, _total_count(path, meta), label=path.name)
    try:
        page, frame = parse_page_frame(body)
    except SourceError as exc:
        raise DumpError(f"{path}: 등록 현황 목록으로 읽을 수 없습니다 / not a registry dump: {exc}") from None
    return Dump(path, "page", frame, page.total_count, label=path.name)


def _from_archive(directory: Path) -> Dump:
    import polars as pl

    manifest = read_manifest_file(directory / MANIFEST)
    if not manifest:
        raise DumpError(
            f"{directory}: manifest.json이 없습니다 — 보관된 날짜 폴더(data/raw/YYYY-MM-DD)가 아닙니다 / "
            "no manifest.json: not an archived day folder"
        )
    status, entries = manifest.status, manifest.pages
    bad = [e for e in entries if not e.ok or not e.file]
    if status != "complete" or bad or not entries:
        what = (
            f"실패한 쪽 {len(bad)}개 (예: {bad[0].page_no}쪽 '{bad[0].status}')"
            if bad
            else "수신된 쪽이 없습니다"
            if not entries
            else "수집이 끝나지 않았습니다"
        )
        raise DumpError(
            f"{directory}: 이 날짜의 수집 상태가 '{status}'입니다 — {what}. 불완전한 목록은 비교하지 않습니다 "
            f"(이 목록으로는 목록에서 삭제된 등록을 판단할 수 없습니다) / the fetch of this day did not complete (status {status!r}); "
            "an incomplete list is not compared"
        )
    frames: list[pl.DataFrame] = []
    totals: set[int] = set()
    for archived in read_pages(directory, entries, parse_page_frame):
        if archived.error is not None:
            raise DumpError(f"{directory}: 쪽 파일 {archived.entry.file} 읽기 실패 / unreadable page: {archived.error}")
        if archived.parsed is None:  # NODATA after the last page: where the list ends, no rows
            continue
        page, frame = archived.parsed
        totals.add(page.total_count)
        if frame.width:
            frames.append(frame)
    frame = pl.concat(frames, how="diagonal_relaxed") if frames else pl.DataFrame()
    total = next(iter(totals)) if len(totals) == 1 else None
    note = "" if total is not None else f"쪽마다 totalCount가 다릅니다 ({', '.join(map(str, sorted(totals)))})"
    return Dump(directory, "archive", frame, total, note, pages=len(entries), label=directory.name)


def load_dump(path: str | Path, *, block_bytes: int = BLOCK_BYTES) -> Dump:
    """Read one dump (file or archived day). Raises DumpError for anything unusable, including a
    dump without a single row."""
    path = Path(path)
    if path.is_dir():
        dump = _from_archive(path)
    elif not path.exists():
        raise DumpError(f"{path}: 파일이 없습니다 (file not found)")
    else:
        dump = _from_file(path, block_bytes)
    if dump.rows == 0:
        raise DumpError(
            f"{path}: 등록 현황이 0건입니다 — 빈 목록은 비교하지 않습니다 (모든 등록이 목록에서 삭제된 것으로 보일 수 있습니다) / "
            "the dump has no rows; an empty list is never compared"
        )
    return dump
