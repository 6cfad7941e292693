"""Parse one `getMdcDmfList01` response body into a `Page` (pure, no I/O).

Handles every shape data.go.kr services are known to use (docs/DOMAIN.md §2):
- JSON with `header`/`body` at the top level, or wrapped in `{"response": {...}}`;
- `items` as a bare list, `{"item": [...]}`, `{"item": {...}}` (one row), or `""`/absent/null on an
  empty page;
- XML success bodies (what the API returns when `type` is not `json`);
- XML gateway errors (`OpenAPI_ServiceResponse/cmmMsgHeader`), even when JSON was asked for;
- non-"00" resultCode in the normal envelope;
- truncated or otherwise unparseable bodies (`MalformedPage`, which the client retries).

`parse_page_frame` is the columnar twin for readers that want a polars frame rather than item dicts
(`dmf diff`, archive replays): the JSON body is parsed once (orjson) and the items go straight into
columns; only a page whose values are not all text/null takes the item-by-item path of `parse_page`.
"""

from __future__ import annotations

import dataclasses
import json
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dmf_assets.source.errors import ApiResultError, GatewayError, MalformedPage

if TYPE_CHECKING:  # polars is imported lazily: the client and `dmf --help` do not need it
    import polars as pl

_CHARSET = re.compile(r"charset\s*=\s*\"?([\w.:-]+)", re.IGNORECASE)


@dataclass(frozen=True)
class Page:
    """One successfully parsed page (resultCode "00")."""

    fmt: str  # "json" | "xml"
    result_code: str
    result_msg: str
    page_no: int | None
    num_of_rows: int | None
    total_count: int
    items: list[dict[str, str | None]] = field(repr=False)
    items_shape: str  # "list" | "item_list" | "item_object" | "empty"
    wrapped: bool  # JSON: the envelope sat inside {"response": ...}

    @property
    def rows(self) -> int:
        return len(self.items)


def parse_page(body: bytes, content_type: str | None = None) -> Page:
    """Parse a response body. Raises GatewayError, ApiResultError or MalformedPage."""
    text = _decode(body, content_type)
    stripped = text.lstrip()
    if not stripped:
        raise MalformedPage("empty body")
    if stripped[0] == "<":
        return _parse_xml(stripped)
    if stripped[0] in "{[":
        return _parse_json(stripped)
    raise MalformedPage(f"body is neither JSON nor XML (starts with {stripped[:20]!r})")


def parse_page_frame(body: bytes, content_type: str | None = None) -> tuple[Page, pl.DataFrame]:
    """`parse_page`, with the items as a polars frame (one String column per item key, in first-seen
    order) instead of dicts; the returned Page has `items=[]`. Same errors, same values as
    `parse_page` + a frame of its items (a lone surrogate, which polars cannot hold, becomes U+FFFD)."""

    text = _decode(body, content_type)
    stripped = text.lstrip()
    if not stripped:
        raise MalformedPage("empty body")
    if stripped[0] != "{":  # XML, a bare JSON list, garbage: the item path says what is wrong
        page = parse_page(body, content_type)
        return dataclasses.replace(page, items=[]), _frame_of_clean_items(page.items)
    page, raw_items = _parse_json(stripped, clean=False)
    frame = _frame_of_text_items(raw_items)
    if frame is None:  # numbers, booleans or nested values somewhere: convert them like parse_page does
        frame = _frame_of_clean_items([_clean_item(r) for r in raw_items])
    return page, frame


_TEXT_TYPES = {str, type(None)}


def _frame_of_text_items(items: list) -> pl.DataFrame | None:
    """Items whose values are all str/None as a frame; None if any value (or item) is something else: those
    take `_clean_item`, like `parse_page` (polars would write a boolean as "true" where it writes "True")."""
    import polars as pl

    if not items:
        return pl.DataFrame()
    if not all(isinstance(item, dict) for item in items):
        return None
    keys = dict.fromkeys(items[0])  # every item's keys, in first-seen order
    for item in items:
        if item.keys() != keys.keys():
            keys.update(dict.fromkeys(item))
    columns = {k: [item.get(k) for item in items] for k in keys}
    if not all(set(map(type, column)) <= _TEXT_TYPES for column in columns.values()):
        return None
    try:  # column by column: cheaper than polars reading the dicts
        return pl.DataFrame(columns, schema=dict.fromkeys(keys, pl.String))
    except UnicodeEncodeError:  # a lone surrogate: the careful path
        return None


def _frame_of_clean_items(items: list[dict[str, str | None]]) -> pl.DataFrame:
    import polars as pl

    keys = list(dict.fromkeys(k for item in items for k in item))
    columns = {k: [item.get(k) for item in items] for k in keys}
    try:
        return pl.DataFrame(columns, schema=dict.fromkeys(keys, pl.String))
    except UnicodeEncodeError:  # lone surrogates from a broken JSON escape: U+FFFD, as items_to_frame writes them
        from dmf_assets.domain.normalize import without_lone_surrogates

        visible = {k: [v if v is None else without_lone_surrogates(v) for v in column] for k, column in columns.items()}
        return pl.DataFrame(visible, schema=dict.fromkeys(keys, pl.String))


def body_format(body: bytes, content_type: str | None = None) -> str:
    """'json' | 'xml' | 'html' | 'txt' — used to name archived files."""
    head = body[:64].lstrip(b"\xef\xbb\xbf \t\r\n")
    if head.lower().startswith((b"<html", b"<!doctype html")):
        return "html"
    if head.startswith(b"<"):
        return "xml"
    if head.startswith((b"{", b"[")):
        return "json"
    ct = (content_type or "").lower()
    if "json" in ct:
        return "json"
    if "xml" in ct:
        return "xml"
    return "txt"


# --- decoding ------------------------------------------------------------------------------------


def _decode(body: bytes, content_type: str | None) -> str:
    charset = "utf-8"
    if content_type:
        m = _CHARSET.search(content_type)
        if m:
            charset = m.group(1)
    try:
        text = body.decode(charset)
    except LookupError:
        text = _strict_utf8(body)
    except UnicodeDecodeError as exc:
        raise MalformedPage(f"body is not valid {charset}: {exc.reason} at byte {exc.start}") from None
    return text.removeprefix("\ufeff")


def _strict_utf8(body: bytes) -> str:
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedPage(f"body is not valid UTF-8: {exc.reason} at byte {exc.start}") from None


# --- JSON ----------------------------------------------------------------------------------------


def _loads(text: str) -> Any:
    try:
        import orjson
    except ImportError:  # pragma: no cover - orjson is a dependency; json gives the same values
        pass
    else:
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass  # lone surrogates and other corner cases: json decides (and explains)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise MalformedPage(f"invalid or truncated JSON: {exc.msg} at char {exc.pos} of {len(text)}") from None
    except (RecursionError, ValueError):  # `[` × 200 000, or a number of thousands of digits
        raise MalformedPage("JSON nested too deeply or with a number too long to read") from None


def _parse_json(text: str, *, clean: bool = True) -> Any:
    """The Page (items cleaned) — or, with clean=False, (Page without items, the raw item list)."""
    doc = _loads(text)
    if not isinstance(doc, dict):
        raise MalformedPage(f"JSON top level is {type(doc).__name__}, expected an object")
    if "OpenAPI_ServiceResponse" in doc:  # a gateway error rendered as JSON by some proxies
        hdr = _as_dict(doc["OpenAPI_ServiceResponse"]).get("cmmMsgHeader")
        _raise_gateway(_as_dict(hdr))
    wrapped = isinstance(doc.get("response"), dict)
    env = doc["response"] if wrapped else doc
    header = env.get("header")
    if not isinstance(header, dict):
        raise MalformedPage("JSON envelope has no header")
    code = _code(header.get("resultCode"))
    msg = str(header.get("resultMsg") or "")
    if code != "00":
        raise ApiResultError(code, msg)
    body = env.get("body")
    if not isinstance(body, dict):
        raise MalformedPage("JSON envelope has no body")
    raw_items, shape = _json_items(body.get("items"))
    page = Page(
        fmt="json",
        result_code=code,
        result_msg=msg,
        page_no=_opt_int(body.get("pageNo"), "pageNo"),
        num_of_rows=_opt_int(body.get("numOfRows"), "numOfRows"),
        total_count=_req_int(body.get("totalCount"), "totalCount"),
        items=[_clean_item(r) for r in raw_items] if clean else [],
        items_shape=shape,
        wrapped=wrapped,
    )
    if clean:
        return page
    for r in raw_items:  # the same check _clean_item makes, without building the cleaned dicts
        if not isinstance(r, dict):
            raise MalformedPage(f"an item is {type(r).__name__}, expected an object")
    return page, raw_items


def _json_items(raw: Any) -> tuple[list[Any], str]:
    """The raw item list of `body.items` and its shape."""
    if raw is None or raw == "":
        return [], "empty"
    if isinstance(raw, list):
        return raw, "list"
    if isinstance(raw, dict):
        inner = raw.get("item")
        if inner is None or inner == "":
            return [], "empty"
        if isinstance(inner, list):
            return inner, "item_list"
        if isinstance(inner, dict):
            return [inner], "item_object"
    raise MalformedPage(f"unexpected items shape: {type(raw).__name__}")


def _clean_item(raw: Any) -> dict[str, str | None]:
    if not isinstance(raw, dict):
        raise MalformedPage(f"an item is {type(raw).__name__}, expected an object")
    out: dict[str, str | None] = {}
    for key, value in raw.items():
        if value is None or isinstance(value, str):
            out[str(key)] = value
        elif isinstance(value, (int, float, bool)):
            out[str(key)] = str(value)  # the contract is str|None; keep the information
        else:  # nested structure = the source changed shape; keep it visible as text
            out[str(key)] = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return out


# --- XML -----------------------------------------------------------------------------------------


def _parse_xml(text: str) -> Page:
    try:
        root = ET.fromstring(text)  # already decoded: the declaration's encoding is ignored
    except ET.ParseError as exc:
        raise MalformedPage(f"invalid or truncated XML: {exc}") from None
    if root.tag == "OpenAPI_ServiceResponse":
        hdr = root.find("cmmMsgHeader")
        fields = {child.tag: (child.text or "").strip() for child in (hdr if hdr is not None else root)}
        _raise_gateway(fields)
    if root.tag != "response":
        raise MalformedPage(f"unexpected XML root <{root.tag}>")
    header = root.find("header")
    if header is None:
        raise MalformedPage("XML envelope has no header")
    code = _code(header.findtext("resultCode"))
    msg = (header.findtext("resultMsg") or "").strip()
    if code != "00":
        raise ApiResultError(code, msg)
    body = root.find("body")
    if body is None:
        raise MalformedPage("XML envelope has no body")
    items_el = body.find("items")
    items: list[dict[str, str | None]] = []
    if items_el is not None:
        # One element per field; a null field is omitted from the XML, empty text is "".
        items = [{child.tag: child.text or "" for child in item} for item in items_el.findall("item")]
    return Page(
        fmt="xml",
        result_code=code,
        result_msg=msg,
        page_no=_opt_int(body.findtext("pageNo"), "pageNo"),
        num_of_rows=_opt_int(body.findtext("numOfRows"), "numOfRows"),
        total_count=_req_int(body.findtext("totalCount"), "totalCount"),
        items=items,
        items_shape="item_list" if items else "empty",
        wrapped=True,
    )


def _raise_gateway(fields: dict[str, Any]) -> None:
    raise GatewayError(
        err_msg=str(fields.get("errMsg") or ""),
        return_auth_msg=str(fields.get("returnAuthMsg") or ""),
        return_reason_code=str(fields.get("returnReasonCode") or ""),
    )


# --- small converters ----------------------------------------------------------------------------


def _as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _code(value: Any) -> str:
    if value is None:
        raise MalformedPage("header has no resultCode")
    code = str(value).strip()
    return code.zfill(2) if code.isdigit() else code


def _opt_int(value: Any, name: str) -> int | None:
    if value is None or value == "":
        return None
    return _req_int(value, name)


def _req_int(value: Any, name: str) -> int:
    if isinstance(value, bool):
        raise MalformedPage(f"{name} is not a number: {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    raise MalformedPage(f"{name} missing or not a number: {value!r}")
