"""The floor of `dmf diff`: what comparing two dumps costs with polars alone (issue 25 item 2).

`python bench/floor.py OLD NEW` — polars' own JSON reader, one hash over the nine fields, anti-joins both
ways; prints the added and removed row counts. No normalization, keys, gates or events: `dmf bench`
reports `dmf diff`'s time as a ratio to this one, measured in the same run on the same inputs.
OLD/NEW: an items JSON file ({"items": [...]}) or an archived day folder (gzip'd API pages).
"""

import gzip
import sys
from pathlib import Path

import polars as pl

FIELDS = [
    "DMF_PERMIT_NO",
    "INGR_KOR_NAME",
    "ENTP_NAME",
    "MNFCTR_NAME",
    "MNFCTR_PLACE",
    "MANUF_COUNTRY_CODE_NM",
    "DMF_PERMIT_DATE",
    "BIZRNO",
    "NOTICE_CODE",
]


def read(path: Path) -> pl.DataFrame:
    if path.is_dir():  # archived pages: {"response": {"body": {"items": [...]}}}
        pages = [
            pl.read_json(gzip.decompress(p.read_bytes())).select(
                items=pl.col("response").struct["body"].struct["items"]
            )
            for p in sorted(path.glob("page-*.json.gz"))
        ]
        items = pl.concat(pages)
    else:
        items = pl.read_json(path).select("items")
    return items.explode("items").unnest("items").select(pl.struct(FIELDS).hash().alias("h"))


old, new = (read(Path(p)) for p in sys.argv[1:3])
added, removed = new.join(old, on="h", how="anti"), old.join(new, on="h", how="anti")
print(f"old {old.height:,} new {new.height:,} added {added.height:,} removed {removed.height:,}")
