"""Read a registry dump from disk, whatever its shape: what `dmf diff` compares.

- a JSON file holding an `items` list (like ../shared/fixtures/real/*.json),
- one API response page as saved from the API (JSON envelope or XML, gzip'd or not),
- an archived day directory (data/raw/YYYY-MM-DD/ with manifest.json and gzip'd pages).
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

from dmf_assets.source.archive import DayArchive, read_json
from dmf_assets.source.envelope import parse_page
from dmf_assets.source.errors import SourceError


class DumpError(ValueError):
    """The file or folder is not a registry dump we can read."""


def _read_bytes(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def _from_archive(directory: Path) -> list[dict]:
    manifest = read_json(directory / "manifest.json")
    if not manifest:
        raise DumpError(f"{directory}: manifest.json가 없습니다 — 보관된 날짜 폴더(data/raw/YYYY-MM-DD)가 아닙니다")
    if manifest.get("status") != "complete":
        print(f"주의: {directory.name} 수집 상태가 '{manifest.get('status')}'입니다 — 불완전한 목록일 수 있습니다.", file=sys.stderr)
    items: list[dict] = []
    seen: set[str] = set()
    for entry in manifest.get("pages") or []:
        if entry.get("status") != "ok":
            continue
        page = parse_page(DayArchive.read_page(directory, entry["file"], entry.get("sha256")))
        for item in page.items:
            marker = json.dumps(item, sort_keys=True, ensure_ascii=False)
            if marker not in seen:  # identical rows repeated across pages count once
                seen.add(marker)
                items.append(item)
    return items


def load_items(path: str | Path) -> list[dict]:
    path = Path(path)
    if path.is_dir():
        return _from_archive(path)
    if not path.exists():
        raise DumpError(f"{path}: 파일이 없습니다 (file not found)")
    body = _read_bytes(path)
    try:
        doc = json.loads(body.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        doc = None
    if isinstance(doc, dict) and isinstance(doc.get("items"), list):
        return [dict(i) for i in doc["items"]]
    if isinstance(doc, list):
        return [dict(i) for i in doc]
    try:
        return list(parse_page(body).items)
    except SourceError as exc:
        raise DumpError(f"{path}: 등록 현황 목록으로 읽을 수 없습니다: {exc}") from None
