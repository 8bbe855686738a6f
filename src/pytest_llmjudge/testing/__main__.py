"""Run a loopback OpenAI/Anthropic server in the foreground.

    python -m pytest_llmjudge.testing --port 8765 --latency 0.2 [--fault-rate 0.2 --seed 1]

Prints one line ``openai_base_url=... anthropic_base_url=...`` (flushed) once
the socket is listening, then serves until SIGINT or SIGTERM and prints the
final stats as JSON on stderr.  Without ``--responder module:function`` every
completion answers the judge reply ``{"score": 1, "justification": "loopback"}``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType
from typing import Any, cast

from pytest_llmjudge.testing.server import (
    Fault,
    LoopbackServer,
    ReceivedRequest,
    Responder,
)

CLI_JUDGE_REPLY = '{"score": 1, "justification": "loopback"}'


def cli_responder(request: ReceivedRequest) -> str:
    """The CLI's default responder: a fixed, valid judge reply."""
    del request
    return CLI_JUDGE_REPLY


def load_responder(spec: str) -> Responder:
    """Import ``module:function`` (``module:obj.attr`` works too)."""
    module_name, sep, attr_path = spec.partition(":")
    if not sep or not module_name or not attr_path:
        raise argparse.ArgumentTypeError(f"--responder must look like module:function, got {spec!r}")
    try:
        obj: Any = importlib.import_module(module_name)
        for attr in attr_path.split("."):
            obj = getattr(obj, attr)
    except (ImportError, AttributeError) as exc:
        raise argparse.ArgumentTypeError(f"cannot load {spec}: {exc}") from exc
    if not callable(obj):
        raise argparse.ArgumentTypeError(f"{spec} is not callable")
    return cast(Responder, obj)


def _parse_faults(text: str) -> list[Fault]:
    faults: list[Fault] = []
    for name in text.split(","):
        name = name.strip()
        if not name:
            continue
        try:
            faults.append(Fault(name.lower()))
        except ValueError:
            try:
                faults.append(Fault[name.upper()])
            except KeyError:
                choices = ", ".join(f.value for f in Fault)
                raise argparse.ArgumentTypeError(f"unknown fault {name!r} (choose from {choices})") from None
    return faults


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pytest_llmjudge.testing",
        description="Loopback HTTP server speaking the OpenAI and Anthropic wire formats.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port to bind (default: an ephemeral one)")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before each answer")
    parser.add_argument("--fault-rate", type=float, default=0.0, help="probability of a random fault")
    parser.add_argument(
        "--faults",
        type=_parse_faults,
        default=None,
        help="comma-separated faults for --fault-rate (default rate_limit,server_error,overloaded)",
    )
    parser.add_argument("--seed", type=int, default=None, help="seed of the fault RNG")
    parser.add_argument(
        "--retry-after",
        type=float,
        default=1.0,
        help="Retry-After seconds of rate_limit",
    )
    parser.add_argument(
        "--hang-seconds",
        type=float,
        default=30.0,
        help="how long a timeout fault hangs",
    )
    parser.add_argument(
        "--responder",
        type=load_responder,
        default=None,
        help="module:function called with each ReceivedRequest (default: a fixed judge reply)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    stop = threading.Event()

    def _on_signal(signum: int, frame: FrameType | None) -> None:
        del signum, frame
        stop.set()

    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGTERM, _on_signal)

    server = LoopbackServer(
        host=args.host,
        port=args.port,
        latency=args.latency,
        responder=args.responder if args.responder is not None else cli_responder,
        fault_rate=args.fault_rate,
        faults=args.faults,
        seed=args.seed,
        retry_after=args.retry_after,
        hang_seconds=args.hang_seconds,
    )
    with server:
        print(
            f"openai_base_url={server.openai_base_url} anthropic_base_url={server.anthropic_base_url}",
            flush=True,
        )
        while not stop.wait(0.5):
            pass
        stats = server.stats()
    print(json.dumps(stats, sort_keys=True), file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
