"""What a day's fetch cost is kept per page in the history (fetch_stats: attempts, bytes, elapsed time): the bytes
and the time used to be NULL on every page, because the fetch's page summary carried neither."""

from __future__ import annotations

from dmf_assets.source.archive import DayArchive
from dmf_assets_tests.project_support import FIRST_DAY, first_day_run, project_paths, read_rows


def test_every_page_keeps_its_size_and_request_time(tmp_path_factory):
    first = first_day_run(tmp_path_factory)
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
    paths = project_paths(first.root)
    manifest = DayArchive(paths["raw_dir"], FIRST_DAY).published_manifest()
    assert manifest is not None and manifest.pages
    rows = read_rows(
        first.root / "db" / "dmf.duckdb",
        "SELECT page_no, attempts, bytes, elapsed_ms FROM fetch_stats ORDER BY page_no",
    )
    assert [(r[0], r[1], r[2]) for r in rows] == [(e.page_no, len(e.attempts), e.bytes) for e in manifest.pages]
    assert all(isinstance(r[2], int) and r[2] > 0 for r in rows)  # a page's body is never empty
    spent = {e.page_no: sum(a["elapsed_ms"] for a in e.attempts) for e in manifest.pages}
    assert all(r[3] is not None and abs(r[3] - spent[r[0]]) < 0.2 for r in rows)
