"""`dmf notify test | flush | status` — the channels, the outbox, and what became of every message.

dmf notify test                 one test message to every configured channel, now (not stored)
dmf notify flush [--given-up]   send everything waiting in the outbox now (and given-up ones again)
dmf notify status [--days N]    pending, held, delivered and given-up messages with their last error
"""

from __future__ import annotations

import argparse
import logging
from typing import TYPE_CHECKING

from dmf_assets.cli.arguments import whole
from dmf_assets.errors import UserError

if TYPE_CHECKING:  # imported by the handlers themselves: `dmf --help` stays instant
    from dmf_assets.notify import Notifier


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "notify", help="알림: 채널 시험(test), 발송함의 대기 메시지 지금 보내기(flush), 발송 기록(status)"
    )
    ss = p.add_subparsers(dest="notify_command", metavar="ACTION")
    q = ss.add_parser("test", help="설정된 모든 채널([alerts] 메일·웹훅)로 시험 메시지를 보내고 결과를 보여 줌")
    q.add_argument("--config", default=None, help="설정 파일 (기본: config/dmf.toml + dmf.local.toml 또는 $DMF_CONFIG)")
    q.set_defaults(handler=_test)
    q = ss.add_parser("flush", help="발송함에서 재발송을 기다리는 메시지를 지금 보냄 (실패하면 다시 대기)")
    q.add_argument("--config", default=None)
    q.add_argument(
        "--given-up",
        action="store_true",
        help="발송을 포기한 메시지도 다시 보냄 (다시 [alerts] give_up_hours 동안 재시도, 기본 24시간)",
    )
    q.set_defaults(handler=_flush)
    q = ss.add_parser("status", help="최근 메시지의 상태: 대기·보류·발송됨·발송 포기, 채널별 시도와 마지막 오류")
    q.add_argument("--config", default=None)
    q.add_argument(
        "--days", type=whole(1, 365, "일 수", "number of days"), default=7, help="며칠 치를 볼지 1–365 (기본 7)"
    )
    q.set_defaults(handler=_status)
    p.set_defaults(handler=lambda args, parser=p: (parser.print_help(), 2)[1])


def _notifier(args: argparse.Namespace) -> Notifier:
    from dmf_assets.notify import Notifier
    from dmf_assets.settings import load_settings

    settings = load_settings(args.config)
    # these commands print every message's line themselves, on stdout: the notifier's log records of the same
    # lines must not reach the terminal a second time (through Python's handler of last resort, on stderr)
    notices = logging.getLogger("dmf_assets.notify")
    if not notices.handlers:
        notices.addHandler(logging.NullHandler())
    return Notifier(settings, settings.paths.resolve("alerts_dir"), config_file=args.config)


def _test(args: argparse.Namespace) -> int:
    from dmf_assets.korean import josa
    from dmf_assets.notify import channel_settings_ko

    notifier = _notifier(args)
    if not notifier.channels:
        settings = josa(channel_settings_ko(" 또는 ", to_enable=True), "을/를")
        raise UserError(
            f"알림 채널이 설정되지 않았습니다: config/dmf.local.toml의 {settings} 설정하세요 "
            "/ no notification channel configured"
        )
    results = notifier.send_test()
    for channel, error in results:
        print(
            f"  {'sent' if error is None else 'failed':<6} {channel.kind:<7} {channel.target}"
            + (f" — {error}" if error else "")
        )
    ok = all(error is None for _, error in results)
    print("시험 발송 완료 / all channels OK" if ok else "일부/전체 실패 / delivery failed")
    return 0 if ok else 1


def _flush(args: argparse.Namespace) -> int:
    from dmf_assets.notify import STATE_KO
    from dmf_assets.notify.outbox import DELIVERED, GIVEN_UP, RECORDED

    notifier = _notifier(args)
    outcomes = notifier.flush(force=True, given_up=args.given_up)
    if not outcomes:
        print("보낼 메시지가 없습니다 / nothing waiting in the outbox")
        return 0
    for o in outcomes:
        print(f"  {o.line}")
    sent = sum(o.state in (DELIVERED, RECORDED) for o in outcomes)
    given_up = sum(o.state == GIVEN_UP for o in outcomes)
    waiting = len(outcomes) - sent - given_up
    print(
        f"{sent}건 발송, {given_up}건 {STATE_KO[GIVEN_UP]}, {waiting}건 다시 대기 / {sent} delivered, {given_up} given up, "
        f"{waiting} still waiting"
        + (" — 다시 보내려면 / to send them again: dmf notify flush --given-up" if given_up else "")
    )
    return 1 if given_up or waiting else 0


def _status(args: argparse.Namespace) -> int:
    from dmf_assets.notify import STATE_KO
    from dmf_assets.notify.outbox import GIVEN_UP, PENDING

    notifier = _notifier(args)
    names = ", ".join(f"{c.kind} {c.target}" for c in notifier.channels) or "없음 (none)"
    print(f"채널 / channels: {names}")
    stored = notifier.status(args.days)
    counts = {state: sum(1 for m in stored if m.state == state) for state in STATE_KO}
    print(
        f"최근 {args.days}일 / last {args.days} days: "
        + " · ".join(f"{STATE_KO[s]} {n}" for s, n in counts.items() if n)
        if stored
        else f"최근 {args.days}일 메시지 없음 / no messages in the last {args.days} days"
    )
    for m in stored:
        print(f"  {m.line()}")
    return 1 if counts[GIVEN_UP] or counts[PENDING] else 0
