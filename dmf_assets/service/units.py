"""systemd units that keep DMF Watch running on a server without anyone logged in.

  dmf-dagster-webserver.service   the Dagster UI (dagster-webserver), restarted on failure
  dmf-dagster-daemon.service      the Dagster daemon: the 06:00 KST schedule, sensors, run queue, run monitoring
  dmf-web.service                 the team's page 「DMF 조회」 with the workbook downloads (`dmf web`)
  dmf-watchdog.service + .timer   the outside watchdog (`dmf doctor --alert`) every 10 minutes

Every service: WorkingDirectory = the project, DAGSTER_HOME = the project's dagster_home/, the
project's .env as EnvironmentFile (MFDS_SERVICE_KEY, DMF_SMTP_PASSWORD, DAGSTER_PG_* …; optional),
Restart=on-failure. Rendering is pure (tested); installing is `commands.py`.
"""

from __future__ import annotations

import getpass
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypedDict, Unpack

from dmf_assets.clock import TIMEZONE_NAME

MARKER = "# Written by `dmf service install` (DMF Watch). Re-run it to update; `dmf service uninstall` removes it."
SERVICES = (
    "dmf-dagster-webserver.service",
    "dmf-dagster-daemon.service",
    "dmf-web.service",
    "dmf-watchdog.service",
)
TIMERS = ("dmf-watchdog.timer",)
#: units earlier versions wrote (the download server became the page): `uninstall` removes them too
FORMER_UNITS = ("dmf-reports.service",)
ALL_UNITS = SERVICES + TIMERS + FORMER_UNITS
#: started and enabled by the printed commands (the watchdog service is started by its timer)
ENABLE = ("dmf-dagster-webserver.service", "dmf-dagster-daemon.service", "dmf-web.service", "dmf-watchdog.timer")


@dataclass(frozen=True)
class UnitOptions:
    root: Path  # the project folder (WorkingDirectory)
    venv_bin: Path  # where dagster-webserver, dagster-daemon and dmf live
    user_mode: bool = True  # ~/.config/systemd/user (True) or /etc/systemd/system (False)
    user: str = ""  # system units: the account that runs them (User=)
    web_host: str = "127.0.0.1"
    web_port: int = 3000
    watchdog_every_minutes: int = 10
    postgres: bool = False  # the instance uses PostgreSQL: order the services after postgresql.service

    @property
    def dagster_home(self) -> Path:
        return self.root / "dagster_home"

    @property
    def env_file(self) -> Path:
        return self.root / ".env"


def instance_uses_postgres(dagster_yaml: Path) -> bool:
    """`storage: postgres:` (or a dagster_postgres storage module) in the instance file."""
    import yaml

    try:
        data = yaml.safe_load(dagster_yaml.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        return False
    storage = data.get("storage") or {}
    modules = [
        str((data.get(k) or {}).get("module", "")) for k in ("run_storage", "event_log_storage", "schedule_storage")
    ]
    return "postgres" in storage or any(m.startswith("dagster_postgres") for m in modules)


class _Overrides(TypedDict, total=False):
    """The `UnitOptions` a caller may set besides the ones `default_options` works out."""

    user: str
    web_host: str
    web_port: int
    watchdog_every_minutes: int


def default_options(root: Path, *, user_mode: bool, **kw: Unpack[_Overrides]) -> UnitOptions:
    root = Path(root).resolve()
    venv_bin = Path(sys.executable).parent
    postgres = instance_uses_postgres(root / "dagster_home" / "dagster.yaml")
    options = UnitOptions(root=root, venv_bin=venv_bin, user_mode=user_mode, postgres=postgres, **kw)
    # system units run as the given account, else as whoever installs them
    return replace(options, user=options.user or ("" if user_mode else getpass.getuser()))


def _q(value: Path | str) -> str:
    """Quote a path for ExecStart= (systemd accepts shell-style double quotes)."""
    text = str(value)
    return f'"{text}"' if any(c in text for c in " \t'\"\\") else text


def _unit_section(o: UnitOptions, description: str, *, after_network: bool = True) -> str:
    # system units only: a user manager cannot see system targets/services (Restart= covers a late network/DB)
    after = ["network-online.target"] if after_network and not o.user_mode else []
    if o.postgres and not o.user_mode:
        after.append("postgresql.service")
    lines = [MARKER, "[Unit]", f"Description={description}", "Documentation=file://" + str(o.root / "README.md")]
    if after:
        lines += [f"After={' '.join(after)}", f"Wants={' '.join(after)}"]
    lines += ["StartLimitIntervalSec=600", "StartLimitBurst=5", "", ""]
    return "\n".join(lines)


def _service_section(
    o: UnitOptions,
    exec_start: str,
    *,
    kind: str = "simple",
    restart: bool = True,
    extra: tuple[str, ...] = (),
    pre: str | None = None,
) -> str:
    lines = ["[Service]", f"Type={kind}"]
    if not o.user_mode and o.user:
        lines.append(f"User={o.user}")
    lines += [
        f"WorkingDirectory={o.root}",
        f"Environment=DAGSTER_HOME={o.dagster_home}",
        "Environment=PYTHONUNBUFFERED=1",
        "Environment=PYTHONIOENCODING=utf-8",
        # optional: the unit still starts without .env (the emulator demo needs no key)
        f"EnvironmentFile=-{o.env_file}",
        *([f"ExecStartPre={pre}"] if pre else []),
        f"ExecStart={exec_start}",
    ]
    if restart:
        lines += ["Restart=on-failure", "RestartSec=10"]
    lines += ["TimeoutStopSec=60", *extra, "", ""]
    return "\n".join(lines)


def _install_section(o: UnitOptions, timer: bool = False) -> str:
    target = "timers.target" if timer else ("default.target" if o.user_mode else "multi-user.target")
    return f"[Install]\nWantedBy={target}\n"


def render_units(o: UnitOptions) -> dict[str, str]:
    """unit file name -> content."""
    workspace = _q(o.root / "workspace.yaml")
    dmf = _q(o.venv_bin / "dmf")
    # the webserver and the daemon start side by side: a new DAGSTER_HOME's storage is created by one of them
    # first, the other waits its turn (dmf_assets/ops/instance.py)
    instance = f"{_q(o.venv_bin / 'python')} -m dmf_assets.ops.instance"
    return {
        "dmf-dagster-webserver.service": _unit_section(o, "DMF Watch — Dagster UI (dagster-webserver)")
        + _service_section(
            o, f"{_q(o.venv_bin / 'dagster-webserver')} -w {workspace} -h {o.web_host} -p {o.web_port}", pre=instance
        )
        + _install_section(o),
        "dmf-dagster-daemon.service": _unit_section(
            o, "DMF Watch — Dagster daemon (06:00 KST schedule, sensors, run queue)"
        )
        + _service_section(o, f"{_q(o.venv_bin / 'dagster-daemon')} run -w {workspace}", pre=instance)
        + _install_section(o),
        "dmf-web.service": _unit_section(o, "DMF Watch — the team's page DMF 조회 and the workbook downloads")
        + _service_section(o, f"{dmf} web")
        + _install_section(o),
        # oneshot, run by the timer; exit 1/2 of the check mean "problems found and alerted", not a broken unit — so
        # the configuration is read first (ExecStartPre, whose failure fails the unit whatever SuccessExitStatus says):
        # a watchdog that cannot read it shows as a failed unit, not as one more round that found problems
        "dmf-watchdog.service": _unit_section(o, "DMF Watch — outside watchdog (dmf doctor --alert)")
        + _service_section(
            o,
            f"{dmf} doctor --alert",
            kind="oneshot",
            restart=False,
            extra=("SuccessExitStatus=1 2", "TimeoutStartSec=300", "Nice=10"),
            pre=f"{_q(o.venv_bin / 'python')} -m dmf_assets.settings",
        ),
        "dmf-watchdog.timer": "\n".join(
            [
                MARKER,
                "[Unit]",
                f"Description=DMF Watch — run the outside watchdog every {o.watchdog_every_minutes} minutes",
                "",
                "[Timer]",
                f"OnCalendar=*:0/{o.watchdog_every_minutes}",
                # right after the 09:00 KST report deadline, whatever the server's own time zone
                f"OnCalendar=*-*-* 09:01:00 {TIMEZONE_NAME}",
                "Persistent=true",
                "AccuracySec=30s",
                "Unit=dmf-watchdog.service",
                "",
                "",
            ]
        )
        + _install_section(o, timer=True),
    }


def unit_dir(user_mode: bool, home: Path | None = None) -> Path:
    if user_mode:
        return (home or Path.home()) / ".config" / "systemd" / "user"
    return Path("/etc/systemd/system")


def systemctl(user_mode: bool) -> str:
    return "systemctl --user" if user_mode else "sudo systemctl"


def install_commands(o: UnitOptions, stop: Sequence[str] = ()) -> list[str]:
    """What to run after installing; `stop`: units of an earlier version that were removed (still running)."""
    sc = systemctl(o.user_mode)
    cmds = [f"{sc} disable --now {' '.join(stop)}"] if stop else []
    cmds += [f"{sc} daemon-reload", f"{sc} enable --now {' '.join(ENABLE)}"]
    if o.user_mode:
        # without lingering, user services stop at logout and do not start at boot
        cmds.insert(0, f"loginctl enable-linger {shlex.quote(getpass.getuser())}")
    cmds += [
        f"{sc} status {' '.join(ENABLE)} --no-pager",
        f"journalctl {'--user ' if o.user_mode else ''}-u dmf-dagster-daemon -f",
    ]
    return cmds


def uninstall_commands(user_mode: bool) -> list[str]:
    """After the files are gone: stop what is still loaded, forget the units."""
    sc = systemctl(user_mode)
    return [f"{sc} stop {' '.join(ALL_UNITS)}", f"{sc} daemon-reload", f"{sc} reset-failed"]
