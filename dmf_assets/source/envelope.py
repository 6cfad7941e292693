"""Parse one `getMdcDmfList01` response body into a `Page` (pure, no I/O).

Handles every shape data.go.kr services are known to use (docs/DOMAIN.md §2):
- JSON with `header`/`body` at the top level, or wrapped in `{"response": {...}}`;
- `items` as a bare list, `{"item": [...]}`, `{"item": {...}}` (one row), or `""`/absent/null on an
  empty page;
- XML success bodies (what the API returns when `type` is not `json`);
- XML gateway errors (`OpenAPI_ServiceResponse/cmmMsgHeader`), even when JSON was asked for;
- non-"00" resultCode in the normal envelope;
- truncated or otherwise unparseable bodies (`MalformedPage`, which the client retries).

One parser (`_parse`) reads the envelope and its raw items; two views of the same items come out of it, each
value turned into text by the one rule `_text`: `parse_page` gives item dicts (the fetch: shape checks, de-duplication),
`parse_page_frame` one String column per item key (`dmf diff`: a JSON page's text values go straight into columns).
"""

from __future__ import annotations

import dataclasses
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from dmf_assets.source.errors import ApiResultError, GatewayError, MalformedPage

if TYPE_CHECKING:  # polars is imported lazily: the client and `dmf --help` do not need it
    import polars as pl

_CHARSET = re.compile(r"charset\s*=\s*\"?([\w.:-]+)", re.IGNORECASE)

#: an item as the body has it: its values not yet text (`_text`)
RawItem = dict[str, Any]


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
    page, raw_items = _parse(body, content_type)
    return dataclasses.replace(page, items=[_as_texts(item) for item in raw_items])


def parse_page_frame(body: bytes, content_type: str | None = None) -> tuple[Page, pl.DataFrame]:
    """`parse_page`, with the items as a polars frame (one String column per item key, in first-seen order)
    instead of dicts; the returned Page has `items=[]`. The same parse, the same text of every value (a lone
    surrogate, which polars cannot hold, becomes U+FFFD)."""
    page, raw_items = _parse(body, content_type)
    return page, text_frame(raw_items)


def _parse(body: bytes, content_type: str | None) -> tuple[Page, list[RawItem]]:
    """The page (`items=[]`) and its raw items. Raises GatewayError, ApiResultError or MalformedPage."""
    text = _decode(body, content_type).lstrip()
    if not text:
        raise MalformedPage("empty body")
    if text[0] == "<":
        return _parse_xml(text)
    if text[0] in "{[":
        return _parse_json(text)
    raise MalformedPage(f"body is neither JSON nor XML (starts with {text[:20]!r})")


def _text(value: Any) -> str | None:
    """A value as the text the contract promises (str | None): numbers and booleans as Python writes them, a
    nested structure (the source changed shape) as JSON, kept visible."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float, bool)):
        return str(value)
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


_TEXT_TYPES = {str, type(None)}


def _as_texts(item: RawItem) -> dict[str, str | None]:
    """An item with every value as text (`_text`). The usual item already is (its keys are always text: JSON
    names and XML tags): the parser's own fresh dict is kept then, not copied."""
    if set(map(type, item.values())) <= _TEXT_TYPES:
        return item
    return {k: _text(v) for k, v in item.items()}


def text_frame(items: list[RawItem]) -> pl.DataFrame:
    """The items as String columns, every value through `_text` (a column of text and nulls as it is: the usual page,
    column by column, cheaper than polars reading the dicts)."""
    import polars as pl

    keys = dict.fromkeys(items[0]) if items else {}  # every item's keys, in first-seen order
    for item in items:
        if item.keys() != keys.keys():
            keys.update(dict.fromkeys(item))
    columns = {}
    for k in keys:
        column = [item.get(k) for item in items]
        columns[k] = column if set(map(type, column)) <= _TEXT_TYPES else [_text(v) for v in column]
    schema = dict.fromkeys(keys, pl.String)
    try:
        return pl.DataFrame(columns, schema=schema)
    except UnicodeEncodeError:  # lone surrogates from a broken JSON escape: U+FFFD, as items_to_frame writes them
        from dmf_assets.domain.text import without_lone_surrogates

        shown = {k: [v if v is None else without_lone_surrogates(v) for v in column] for k, column in columns.items()}
        return pl.DataFrame(shown, schema=schema)


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


def named_charset(content_type: str | None) -> str | None:
    """The charset a Content-Type names when it is not UTF-8 (what the archive must remember to read the body)."""
    m = _CHARSET.search(content_type or "")
    return None if m is None or m.group(1).lower().replace("-", "").replace("_", "") == "utf8" else m.group(1)


def _decode(body: bytes, content_type: str | None) -> str:
    charset = named_charset(content_type) or "utf-8"
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
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        pass  # lone surrogates and other corner cases: json decides (and explains)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise MalformedPage(f"invalid or truncated JSON: {exc.msg} at char {exc.pos} of {len(text)}") from None
    except (RecursionError, ValueError):  # `[` × 200 000, or a number of thousands of digits
        raise MalformedPage("JSON nested too deeply or with a number too long to read") from None


def _parse_json(text: str) -> tuple[Page, list[RawItem]]:
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
    code, msg = _result(header.get("resultCode"), str(header.get("resultMsg") or ""))
    body = env.get("body")
    if not isinstance(body, dict):
        raise MalformedPage("JSON envelope has no body")
    raw_items, shape = _json_items(body.get("items"))
    page = _page("json", code, msg, body.get, shape, wrapped)
    for item in raw_items:
        if not isinstance(item, dict):
            raise MalformedPage(f"an item is {type(item).__name__}, expected an object")
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


# --- XML -----------------------------------------------------------------------------------------


def _parse_xml(text: str) -> tuple[Page, list[RawItem]]:
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
    code, msg = _result(header.findtext("resultCode"), (header.findtext("resultMsg") or "").strip())
    body = root.find("body")
    if body is None:
        raise MalformedPage("XML envelope has no body")
    items_el = body.find("items")
    items: list[RawItem] = []
    if items_el is not None:
        # One element per field; a null field is omitted from the XML, empty text is "".
        items = [_xml_item(item) for item in items_el.findall("item")]
    return _page("xml", code, msg, body.findtext, "item_list" if items else "empty", True), items


def _xml_item(item: ET.Element) -> RawItem:
    """An item's fields. A field holding markup (`…<br/>…`, whose text after it `.text` would drop) or given twice
    (the last would win) is not a value this reader can take whole: the page is malformed, never read short."""
    fields: RawItem = {}
    for child in item:
        if len(child) or child.tag in fields:
            what = "holds markup" if len(child) else "is given twice"
            raise MalformedPage(f"item field <{child.tag}> {what}: its value cannot be read whole")
        fields[child.tag] = child.text or ""
    return fields


def _result(code_value: Any, msg: str) -> tuple[str, str]:
    """The header's (resultCode, resultMsg); ApiResultError unless it is "00"."""
    code = _code(code_value)
    if code != "00":
        raise ApiResultError(code, msg)
    return code, msg


def _page(fmt: str, code: str, msg: str, body_value: Callable[[str], Any], shape: str, wrapped: bool) -> Page:
    """The page of a body whose values `body_value` reads (its items come apart: `_parse`)."""
    page_no = _opt_int(body_value("pageNo"), "pageNo")
    num_of_rows = _opt_int(body_value("numOfRows"), "numOfRows")
    return Page(
        fmt, code, msg, page_no, num_of_rows, _req_int(body_value("totalCount"), "totalCount"), [], shape, wrapped
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
    # ASCII digits only: str.isdigit() also takes 「²」 and other digits int() refuses (a traceback, not a bad page)
    if isinstance(value, str) and (text := value.strip()).isascii() and text.isdigit() and len(text) <= 18:
        return int(text)
    raise MalformedPage(f"{name} missing or not a number: {value!r}"[:300])
