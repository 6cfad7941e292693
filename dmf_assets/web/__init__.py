"""「DMF 조회」 — the team's own read-only web page over the history database and the workbooks.

`app` (Starlette routes over storage queries, Jinja2 templates in `templates/`), `data` (what each page shows,
read from one brief read-only connection), `server` (uvicorn with per-request deadlines and a connection
limit, the token rule), `files` (which workbooks may be downloaded), `ports`. The package itself imports
nothing heavy: `dmf_assets.links` builds the addresses other layers write.
"""
