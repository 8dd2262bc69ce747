"""The ``kafka-shim`` command line."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys

import structlog

from shim.config import BrokerConfig, ConfigError
from shim.logs import configure_logging

log = structlog.get_logger("kafka_shim.cli")


def _override(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"--override takes key=value (a server.properties key), got {text!r}")
    return key.strip(), value.strip()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kafka-shim", description="A Kafka broker in Python that speaks Kafka's wire protocol.")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the broker")
    serve.add_argument("config", nargs="?", help="a Kafka server.properties file (default: PLAINTEXT on 127.0.0.1:9092)")
    serve.add_argument("--override", action="append", type=_override, default=[], metavar="KEY=VALUE",
                       help="set a server.properties key, overriding the file (repeatable)")
    serve.add_argument("--data-dir", metavar="DIR", help="where state is kept (the same as --override log.dirs=DIR)")
    serve.add_argument("--log-format", choices=["console", "json"], default="console")
    serve.add_argument("--log-level", choices=["debug", "info", "warning", "error"], default="info")
    serve.add_argument("--event-loop", choices=["auto", "asyncio", "uvloop"], default="auto",
                       help="auto: uvloop when installed (measured faster in bench/server.py), else asyncio")
    return parser


async def serve(config: BrokerConfig) -> int:
    from shim.broker import Broker

    broker = Broker(config)
    bound = await broker.start()
    for b in bound:
        print(b.url, flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("shutting_down", connections=len(broker.connections))
    await broker.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    configure_logging(args.log_format, args.log_level)
    if args.command == "serve":
        try:
            overrides = dict(args.override)
            if args.data_dir:
                overrides["log.dirs"] = args.data_dir
            config = BrokerConfig.load(args.config, overrides)
            if args.event_loop != "asyncio":
                try:
                    import uvloop
                except ImportError:
                    if args.event_loop == "uvloop":
                        print("kafka-shim: --event-loop uvloop needs the uvloop package: pip install uvloop", file=sys.stderr)
                        return 2
                else:
                    return uvloop.run(serve(config))
            return asyncio.run(serve(config))
        except ConfigError as exc:
            print(f"kafka-shim: configuration error: {exc}", file=sys.stderr)
            return 2
        except OSError as exc:
            print(f"kafka-shim: {exc}", file=sys.stderr)
            return 1
    return 2


if __name__ == "__main__":
    sys.exit(main())
