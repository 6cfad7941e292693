"""`dmf emulator serve | faults | truth` — the local MFDS emulator."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from dmf_assets.cli.arguments import day, listen_host, listen_port, said_in_one_line, whole
from dmf_assets.settings import MAX_SEED

_SEED = whole(0, MAX_SEED, "시드", "seed")  # the range of emulator.seed in the settings


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("emulator", help="로컬 MFDS API 에뮬레이터 / the local MFDS API emulator")
    sub = p.add_subparsers(dest="emulator_command", metavar="SUBCOMMAND")
    p.set_defaults(handler=lambda args: (p.print_help(), 2)[1])

    s = sub.add_parser("serve", help="에뮬레이터를 HTTP로 제공 / serve the emulator over HTTP")
    s.add_argument("--host", type=listen_host, default="127.0.0.1")
    s.add_argument(
        "--port", type=listen_port, default=8089, help="0 = any free port (the first line printed says which)"
    )
    s.add_argument("--service-key", default=None, help="accept only this key (default: any non-empty key)")
    s.add_argument(
        "--date",
        type=day,
        default=None,
        help="date served when the request has no X-Emulator-Date header (default: today in Asia/Seoul)",
    )
    s.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="YYYY-MM-DD=KIND[:p=v,...]",
        help="fault for a date (repeatable; added to config emulator.faults)",
    )
    s.add_argument("--seed", type=_SEED, default=None, help="registry seed (default from config)")
    s.add_argument(
        "--items-style",
        default="list",
        choices=("list", "item", "item_absent"),
        help='JSON shape of `items` (list = bare list; item = {"item": ...})',
    )
    s.set_defaults(handler=serve)

    f = sub.add_parser("faults", help="고장 종류 목록 / list the fault kinds")
    f.add_argument("--json", action="store_true")
    f.set_defaults(handler=faults)

    t = sub.add_parser("truth", help="두 날짜 사이 실제 변경 / ground truth between two dates")
    t.add_argument("--old", type=day, required=True)
    t.add_argument("--new", type=day, required=True)
    t.add_argument("--seed", type=_SEED, default=None)
    t.add_argument("--json", action="store_true")
    t.set_defaults(handler=truth)


def serve(args: argparse.Namespace) -> int:
    import errno

    from dmf_assets.emulator.app import EmulatorApp
    from dmf_assets.emulator.faults import FaultPlan
    from dmf_assets.emulator.server import EmulatorServer
    from dmf_assets.errors import UserError
    from dmf_assets.settings import settings
    from dmf_assets.web.ports import busy_port_text

    s = settings()
    try:
        plan = FaultPlan.parse(s.emulator.faults).merged(FaultPlan.from_cli(args.fault))
        app = EmulatorApp(
            seed=args.seed if args.seed is not None else s.emulator.seed,
            service_key=args.service_key,
            faults=plan,
            default_date=args.date,
            items_style=args.items_style,
        )
        server = EmulatorServer(
            args.host, args.port, app=app, emit=lambda line: print(line, file=sys.stderr, flush=True)
        )
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE:
            raise UserError(f"emulator: {exc}") from None
        raise UserError(
            busy_port_text("에뮬레이터", "emulator", args.host, args.port, "dmf emulator serve --port {port}")
        ) from None
    except ValueError as exc:
        raise UserError(f"emulator: {exc}") from None
    print(server.base_url, flush=True)
    print(
        f"serving the MFDS emulator at {server.base_url} (date: {args.date or 'today, Asia/Seoul'}; "
        f"faults: {plan.to_config() or 'none'}; key: {'fixed' if args.service_key else 'any'}) — Ctrl-C stops",
        file=sys.stderr,
        flush=True,
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.httpd.server_close()
    return 0


def faults(args: argparse.Namespace) -> int:
    from dmf_assets.emulator.faults import FAULT_KINDS, describe_table

    if args.json:
        print(
            json.dumps(
                [
                    {"kind": k.name, "ko": k.ko, "en": k.en, "expected": k.expected, "params": dict(k.defaults)}
                    for k in FAULT_KINDS.values()
                ],
                ensure_ascii=False,
                indent=1,
            )
        )
        return 0
    print('고장 종류 / fault kinds — config: [emulator.faults] "YYYY-MM-DD" = "kind[:param=value,...]"')
    for kind, ko, en, expected, params in describe_table():
        print(f"\n{kind}  (params: {params})")
        print(f"  {ko}")
        print(f"  {en}")
        print(f"  → expected: {expected}")
    return 0


def truth(args: argparse.Namespace) -> int:
    from dmf_assets.errors import UserError
    from dmf_assets.settings import settings

    try:
        from dmf_assets.emulator.registry import RegistrySimulator
    except ImportError as exc:
        raise UserError(f"the registry simulator is not available in this build: {exc}") from None
    sim = RegistrySimulator(args.seed if args.seed is not None else settings().emulator.seed)
    if not hasattr(sim, "truth"):
        raise UserError("this registry simulator has no ground truth")
    with said_in_one_line(ValueError):
        gt = sim.truth(args.old, args.new)
    rows: list[dict[str, Any]] = [  # JSON objects
        {
            "event": c.event_type.value,
            "permit_no": c.permit_no,
            "base_permit_no": c.base_permit_no,
            "substantive": sorted(c.substantive_fields),
            "cosmetic": sorted(c.cosmetic_fields),
            "flags": [
                n for n in ("is_reappearance", "number_assigned", "number_changed", "is_transfer") if getattr(c, n)
            ],
            "entity_id": c.entity_id,
        }
        for c in gt.changes
    ]
    if args.json:
        print(json.dumps({"old": gt.old_date, "new": gt.new_date, "changes": rows}, ensure_ascii=False, indent=1))
        return 0
    counts = {e: sum(r["event"] == e for r in rows) for e in ("NEW", "CHANGED", "WITHDRAWN")}
    print(f"ground truth {gt.old_date} → {gt.new_date}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    for r in rows:
        detail = ",".join(r["substantive"]) or ("cosmetic: " + ",".join(r["cosmetic"]) if r["cosmetic"] else "")
        flags = " ".join(r["flags"]) + (f" (was {r['base_permit_no']})" if "number_changed" in r["flags"] else "")
        print(f"  {r['event']:<9} {r['permit_no'] or '(번호 없음)':<28} {detail} {flags}".rstrip())
    return 0
