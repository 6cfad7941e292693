"""`dmf service install | uninstall` — running DMF Watch unattended on a server.

    dmf service install --user --dry-run   # print the unit files, write nothing
    dmf service install --user             # write ~/.config/systemd/user/dmf-*.{service,timer}, print systemctl lines
    sudo .venv/bin/dmf service install --run-as dmf   # /etc/systemd/system, units run as user "dmf"
    dmf service uninstall --user
    dmf web                                # the team's page and the workbook downloads (what dmf-web.service runs)

Nothing here runs systemctl: it prints the commands, so a server's administrator sees what happens.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from dmf_assets.cli.arguments import existing_folder, listen_host, out_folder, port, whole
from dmf_assets.errors import UserError
from dmf_assets.korean import josa


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "service", help="서버 무인 운영: systemd 유닛 설치/제거 (webserver, daemon, 조회 페이지, watchdog timer)"
    )
    ss = p.add_subparsers(dest="service_command", metavar="ACTION")
    for name, help_ in (
        ("install", "유닛 파일을 쓰고 실행할 systemctl 명령을 보여 줌"),
        ("uninstall", "`dmf service install`이 쓴 유닛 파일을 지우고 systemctl 명령을 보여 줌"),
    ):
        q = ss.add_parser(name, help=help_)
        q.add_argument(
            "--user",
            action="store_true",
            help="사용자 유닛 (~/.config/systemd/user; root 불필요). 기본: 시스템 유닛 /etc/systemd/system",
        )
        q.add_argument(
            "--dry-run", action="store_true", help="쓰지 않고 파일 내용(install) / 지울 목록(uninstall)만 출력"
        )
        q.add_argument(
            "--unit-dir", type=out_folder, default=None, help="유닛 폴더를 직접 지정 (기본: --user에 따라 위 경로)"
        )
        if name == "install":
            q.add_argument("--root", type=existing_folder, default=None, help="프로젝트 폴더 (기본: 이 프로젝트)")
            q.add_argument(
                "--run-as", type=_account, default="", help="시스템 유닛을 실행할 계정 (User=; 기본: 지금 사용자)"
            )
            q.add_argument("--web-host", type=listen_host, default="127.0.0.1", help="Dagster UI 주소 (기본 127.0.0.1)")
            q.add_argument("--web-port", type=port, default=3000, help="Dagster UI 포트 (기본 3000)")
            q.add_argument(
                "--watchdog-minutes",
                type=whole(1, 59, "분", "number of minutes"),
                default=10,
                help="watchdog 주기(분, 1–59, 기본 10)",
            )
            q.set_defaults(handler=_install)
        else:
            q.set_defaults(handler=_uninstall)
    p.set_defaults(handler=lambda args, parser=p: (parser.print_help(), 2)[1])


def _account(name: str) -> str:
    """A user account of this machine (User= of a system unit that names no account fails only at start)."""
    import pwd

    try:
        return name and pwd.getpwnam(name).pw_name
    except KeyError:
        raise argparse.ArgumentTypeError(
            f"이 컴퓨터에 {name!r} 계정이 없습니다 (no such user account): 먼저 만드세요 (sudo useradd --system {name})"
        ) from None


def _unit_dir(args: argparse.Namespace) -> Path:
    from dmf_assets.service.units import unit_dir

    return args.unit_dir or unit_dir(args.user)


#: characters systemd reads as specifiers (%), variables ($) or quoting (" \\) in the units' paths
_NOT_IN_A_UNIT = frozenset('%$"\\')


def _install(args: argparse.Namespace) -> int:
    from dmf_assets.fsutil import atomic_write_text
    from dmf_assets.service.units import FORMER_UNITS, default_options, install_commands, render_units
    from dmf_assets.settings import PROJECT_ROOT, load_settings

    root = args.root.resolve() if args.root else PROJECT_ROOT
    if not (root / "workspace.yaml").is_file():
        raise UserError(
            f"{root}에 workspace.yaml이 없습니다 — 프로젝트 폴더를 --root로 지정하세요 / not a DMF Watch project: {root}"
        )
    if args.user and args.run_as:  # a user unit runs as its user: User= would be refused by systemd
        raise UserError(
            "--run-as는 시스템 유닛에만 쓸 수 있습니다 — 사용자 유닛(--user)은 설치한 사용자로 실행됩니다 / --run-as is for "
            "system units only: drop --user, or --run-as"
        )
    page_port = load_settings().web.port  # `dmf web`, the page's unit, listens there
    if args.web_port == page_port:
        raise UserError(
            f"Dagster UI 포트와 조회 페이지 포트([web] port)가 같습니다 ({page_port}) / the UI port must differ from "
            f"the page's: dmf service install --web-port {3000 if page_port != 3000 else 3001}"
        )
    options = default_options(
        root,
        user_mode=args.user,
        user=args.run_as,
        web_host=args.web_host,
        web_port=args.web_port,
        watchdog_every_minutes=args.watchdog_minutes,
    )
    for folder in (root, options.venv_bin):
        if odd := sorted({c for c in str(folder) if c in _NOT_IN_A_UNIT or not c.isprintable()}):
            raise UserError(
                f"{josa(str(folder), '은/는')} systemd 유닛에 그대로 쓸 수 없는 문자({' '.join(map(repr, odd))})를 담고 "
                f"있습니다 — 이런 문자가 없는 폴더로 옮긴 뒤 설치하세요 / a systemd unit cannot hold this path as it is"
            )
    for tool in ("dagster-webserver", "dagster-daemon", "dmf"):
        if not (options.venv_bin / tool).exists():
            raise UserError(
                f"{josa(str(options.venv_bin / tool), '이/가')} 없습니다 — 프로젝트의 .venv에서 실행하세요 "
                f"(.venv/bin/dmf service install) / run it from the project's virtualenv"
            )
    units = render_units(options)
    target = _unit_dir(args)
    if args.dry_run:
        for name, text in units.items():
            print(f"# ---- {target / name}")
            print(text)
        print("# 설치하면 실행할 명령 / after installing, run:")
        print("\n".join(f"#   {c}" for c in install_commands(options)))
        return 0
    try:
        target.mkdir(parents=True, exist_ok=True)
        for name, text in units.items():
            atomic_write_text(target / name, text)
    except PermissionError:
        raise UserError(
            f"{target}에 쓸 권한이 없습니다 — sudo로 실행하거나 --user로 사용자 유닛을 설치하세요 "
            f"/ no permission to write {target}: use sudo, or --user"
        ) from None
    print(f"유닛 {len(units)}개를 썼습니다 / wrote {len(units)} units to {target}:")
    for name in units:
        print(f"  {target / name}")
    former = _ours(target, FORMER_UNITS)
    for path in former:  # the download server an earlier version installed: the page serves the downloads now
        path.unlink()
        print(f"  삭제 (이전 버전의 유닛) / removed (an earlier version's unit): {path}")
    if not options.env_file.exists():
        print(
            f"참고: {options.env_file}이 없습니다 — MFDS_SERVICE_KEY, DMF_SMTP_PASSWORD 등 비밀 값을 그 파일에 두세요 "
            "(KEY=value 한 줄씩, 권한 600)."
        )
    print("이제 실행하세요 / now run:")
    for cmd in install_commands(options, stop=[p.name for p in former]):
        print(f"  {cmd}")
    return 0


def _ours(target: Path, names: tuple[str, ...]) -> list[Path]:
    """The unit files of `names` in `target` that DMF Watch wrote (they carry its marker)."""
    from dmf_assets.service.units import MARKER

    return [
        target / n
        for n in names
        if (target / n).is_file() and MARKER in (target / n).read_text(encoding="utf-8", errors="replace")
    ]


def _uninstall(args: argparse.Namespace) -> int:
    from dmf_assets.service.units import ALL_UNITS, uninstall_commands

    target = _unit_dir(args)
    ours = _ours(target, ALL_UNITS)
    links = (
        [link for link in target.glob("*.wants/*") if link.name in ALL_UNITS and link.is_symlink()]
        if target.is_dir()
        else []
    )
    if not ours and not links:
        print(f"{target}에 DMF Watch 유닛이 없습니다 / no DMF Watch units in {target}")
        return 0
    for path in links + ours:
        print(("지울 파일 / would remove: " if args.dry_run else "삭제 / removed: ") + str(path))
        if not args.dry_run:
            try:
                path.unlink()
            except PermissionError:
                raise UserError(
                    f"{josa(str(path), '을/를')} 지울 권한이 없습니다 — sudo로 실행하세요 / permission denied"
                ) from None
    print("이제 실행하세요 / now run:" if not args.dry_run else "지운 뒤 실행할 명령 / after removing, run:")
    for cmd in uninstall_commands(args.user):
        print(f"  {cmd}")
    return 0
