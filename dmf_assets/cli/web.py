"""`dmf web` — the team's page 「DMF 조회」 alone (what dmf-web.service runs; `dmf ui` starts it beside Dagster).

    dmf web                         # [web] host and port (127.0.0.1:8765)
    dmf web --host 0.0.0.0          # for colleagues: needs [web] token or DMF_WEB_TOKEN, refused otherwise
    dmf serve-reports               # the former name of the workbook download server: the same page

Stops on Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from dmf_assets.cli.arguments import listen_host, port

if TYPE_CHECKING:
    from dmf_assets.settings import Settings
    from dmf_assets.web.server import WebServer


def register(sub: argparse._SubParsersAction) -> None:
    for name, help_ in (
        ("web", "팀 조회 페이지 「DMF 조회」 실행: 검색·등록 이력·날짜별 판정·엑셀 리포트 내려받기 (읽기 전용)"),
        ("serve-reports", "= dmf web (예전 리포트 다운로드 서버의 이름; 같은 페이지에서 /reports/로 내려받음)"),
    ):
        p = sub.add_parser(name, help=help_)
        p.add_argument("--host", type=listen_host, default=None, help="주소 (기본: config web.host, 127.0.0.1)")
        p.add_argument("--port", type=port, default=None, help="포트 (기본: config web.port, 8765)")
        p.set_defaults(handler=_web)


def start_web(settings: Settings, host: str | None, port_: int | None, *, fix: str) -> tuple[WebServer, list[str]]:
    """The page, bound and ready to serve (not serving yet), and the lines that say where it is. Refuses
    (UserError, one line) a non-loopback address without a token, a reports folder that holds the project,
    a busy port (naming its holder); `fix` is the command line to suggest for another port, with {port}."""
    from dmf_assets import links
    from dmf_assets.web.app import make_app
    from dmf_assets.web.files import check_reports_dir
    from dmf_assets.web.server import WebServer, access_rule, bind

    host = host or settings.web.host
    port_ = port_ or settings.web.port
    token = settings.web.access_token()
    access_rule(host, token)
    reports = check_reports_dir(settings.paths.resolve("reports_dir"))
    sock = bind(host, port_, what=fix)
    app = make_app(settings, database=settings.paths.resolve("database"), reports_dir=reports, token=token)
    server = WebServer(app, sock)
    shown = f"[{host}]" if ":" in host else host
    lines = [
        f"DMF 조회 / web page: http://{shown}:{server.port}/" + (" (접근 토큰 필요 / token required)" if token else "")
    ]
    base = links.base_url(settings.web)
    note = ""
    if not settings.web.public_base_url and server.port != settings.web.port:
        note = f" — 설정의 포트 {settings.web.port} 기준입니다; 이 포트를 계속 쓰려면 [web] port = {server.port}"
    lines.append(f"리포트·메일·Dagster의 링크 / links the product writes: {base}{note}")
    return server, lines


def _web(args: argparse.Namespace) -> int:
    from dmf_assets.settings import load_settings

    settings = load_settings()
    server, lines = start_web(settings, args.host, args.port, fix="dmf web --port {port}")
    for line in lines:
        print(line, flush=True)
    print(f"중지: Ctrl-C (pid {os.getpid()})", flush=True)
    server.serve()
    print("중지됨 / stopped", flush=True)
    return 0
