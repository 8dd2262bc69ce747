"""The ``kafka-shim`` command line."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from typing import NoReturn

from kafka_shim.shim.config.broker_config import BrokerConfig, ConfigError
from kafka_shim.shim.config.logging import configure_logging, get_logger
from kafka_shim.shim.log.arena import keep_freed_memory_warm

log = get_logger("kafka_shim.cli")

# The trace commands, run by kafka_shim.traces.cli; their help is restated so `kafka-shim --help` never imports
# traces (tests/traces/test_trace_cli.py keeps the two equal).
TRACE_COMMANDS = {
    "import": "turn Kafka's request log, authorizer log or a packet capture into a trace",
    "replay": "re-send a trace's requests to a broker and diff the answers",
    "audit": "decide a trace's requests under ACL sets on Spark: what-if, ACL usage, least privilege",
}


def _override(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"--override takes key=value (a server.properties key), got {text!r}")
    return key.strip(), value.strip()


async def _healthcheck(host: str, port: int, timeout: float) -> int:
    """An ApiVersions round trip: what a container's HEALTHCHECK asks (a listening socket alone says too little)."""
    from kafka_shim.protocol.codes import ApiKey
    from kafka_shim.protocol.messages import ApiVersionsRequest
    from kafka_shim.shim.client.wire import WireClient

    try:
        client = await WireClient.connect(host, port, client_id="kafka-shim-healthcheck", timeout=timeout)
        try:
            answer = await client.request(ApiKey.API_VERSIONS, 3, ApiVersionsRequest(
                client_software_name="kafka-shim-healthcheck", client_software_version="1"), timeout=timeout)
        finally:
            await client.close()
    except (OSError, TimeoutError, ConnectionError) as exc:
        print(f"kafka-shim healthcheck: {host}:{port} did not answer: {exc or type(exc).__name__}", file=sys.stderr)
        return 1
    if answer.error_code:
        print(f"kafka-shim healthcheck: {host}:{port} answered ApiVersions with error {answer.error_code}", file=sys.stderr)
        return 1
    return 0


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
    serve.add_argument("--acls", metavar="FILE",
                       help="ACLs to create at start (YAML or JSON, see examples/acls.yaml); needs authorizer.class.name")
    serve.add_argument("--capture", metavar="DIR",
                       help="record every request and response in the trace format (Parquet, day=YYYY-MM-DD/ folders) "
                            "in DIR; the same as --override kafka.shim.capture.dir=DIR")
    serve.add_argument("--config-from-env", action="store_true",
                       help="also read KAFKA_* environment variables as server.properties keys, as Apache Kafka's "
                            "image does (KAFKA_ADVERTISED_LISTENERS -> advertised.listeners; KAFKA_SHIM_* -> kafka.shim.*); "
                            "they override the file, --override overrides them")
    serve.add_argument("--metrics-port", type=int, metavar="PORT",
                       help="serve Prometheus metrics on http://127.0.0.1:PORT/metrics (0: a free port); the same as "
                            "--override kafka.shim.metrics.port=PORT (kafka.shim.metrics.host picks the address)")
    serve.add_argument("--kafka-version", metavar="RELEASE",
                       help="present as this Kafka release (0.11 to 3.9, e.g. 2.8 or 2.8.2): the API versions its broker "
                            "advertised; the same as --override kafka.version=RELEASE")
    health = sub.add_parser("healthcheck", help="ask a broker for its API versions: exit 0 if it answers (container health checks)")
    health.add_argument("--bootstrap-server", default="127.0.0.1:9092", metavar="HOST:PORT", type=_host_port,
                        help="a PLAINTEXT or SASL_PLAINTEXT listener (ApiVersions needs no authentication); default %(default)s")
    health.add_argument("--timeout", type=float, default=5.0, metavar="SECONDS")
    proxy = sub.add_parser("capture-proxy", help="forward Kafka clients to a broker and record their requests in the trace format")
    proxy.add_argument("--upstream", required=True, metavar="HOST:PORT", type=_host_port,
                       help="the broker to forward to (kafka-shim or Apache Kafka; one broker: see README)")
    proxy.add_argument("--capture", required=True, metavar="DIR", help="the trace directory (Parquet, day=YYYY-MM-DD/ folders)")
    proxy.add_argument("--listen", default="127.0.0.1:0", metavar="HOST:PORT", type=_host_port,
                       help="where clients connect (default 127.0.0.1:0: a free port; the bound address is printed)")
    proxy.add_argument("--security-protocol", choices=["PLAINTEXT", "SASL_PLAINTEXT"], default="PLAINTEXT",
                       help="what the upstream listener speaks; the proxy's side speaks the same")
    proxy.add_argument("--advertised-host", metavar="HOST",
                       help="the host answers name for the proxy (default: the --listen host)")
    proxy.add_argument("--listener-per-broker", action="store_true",
                       help="give every broker the cluster advertises its own proxy port (for a multi-broker cluster)")
    proxy.add_argument("--log-format", choices=["console", "json"], default="console")
    proxy.add_argument("--log-level", choices=["debug", "info", "warning", "error"], default="info")
    # Parsed by shim.acls_cli (kafka-acls.sh's flags); listed here for --help.
    sub.add_parser("acls", help="add, remove or list ACLs on any Kafka broker (kafka-acls.sh's flags)", add_help=False)
    # Parsed by kafka_shim.traces.cli (imported only when used); listed here for --help.
    for name, help_text in TRACE_COMMANDS.items():
        sub.add_parser(name, help=help_text, add_help=False)
    return parser


def _host_port(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT (e.g. 127.0.0.1:9092), got {text!r}")
    return host.strip("[]") or "0.0.0.0", int(port)


async def capture_proxy(args: argparse.Namespace) -> int:
    """``kafka-shim capture-proxy``: run until SIGINT/SIGTERM (traces is imported only here)."""
    try:
        from kafka_shim.traces.capture import CaptureConfigError, CaptureSettings, CaptureSink
        from kafka_shim.traces.format import PROXY
        from kafka_shim.traces.proxy import CaptureProxy, ProxiedRequest
    except ImportError as exc:
        raise ConfigError(f"capture-proxy needs pyarrow ({exc}): install kafka-shim's 'traces' extra "
                          "(in a checkout: scripts/bootstrap-env traces)") from None
    try:
        sink = CaptureSink(CaptureSettings.from_properties({}, args.capture), source=PROXY, fields=ProxiedRequest._fields)
    except CaptureConfigError as exc:
        raise ConfigError(str(exc)) from None
    proxy = CaptureProxy(args.upstream, sink, listen=args.listen, security_protocol=args.security_protocol,
                         advertised_host=args.advertised_host, listener_per_broker=args.listener_per_broker)
    try:
        host, port = await proxy.start()
    except BaseException:
        sink.close()
        raise
    print(f"{host}:{port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await proxy.stop()
    return 0


async def serve(config: BrokerConfig, preload_acls: list | None = None) -> int:
    from kafka_shim.shim.broker import Broker

    tap = capture_tap(config)
    try:
        broker = Broker(config, preload_acls=preload_acls, tap=tap)
        bound = await broker.start()
    except BaseException:
        if tap is not None:
            tap.close()
        raise
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


def capture_tap(config: BrokerConfig):  # -> traces.capture.CaptureSink | None
    """The trace capture sink kafka.shim.capture.* asks for, or None (traces is imported only when capturing)."""
    if not config.raw.get("kafka.shim.capture.dir", "").strip():
        return None
    try:
        from kafka_shim.traces.capture import CaptureConfigError, CaptureSettings, CaptureSink
    except ImportError as exc:
        raise ConfigError(f"kafka.shim.capture.dir needs pyarrow ({exc}): install kafka-shim's 'traces' extra "
                          "(in a checkout: scripts/bootstrap-env traces)") from None
    try:
        return CaptureSink(CaptureSettings.from_properties(config.raw))
    except CaptureConfigError as exc:
        raise ConfigError(str(exc)) from None


def _preload_acls(path: str | None, config: BrokerConfig) -> list | None:
    """The bindings of ``serve --acls FILE``; ConfigError when they cannot be used."""
    if path is None:
        return None
    from kafka_shim.shim.tools.acl_file import AclFileError, load_acl_file

    if not config.authorizer_enabled:
        raise ConfigError(f"--acls {path} needs an authorizer: set authorizer.class.name="
                          "org.apache.kafka.metadata.authorizer.StandardAuthorizer (in the config file or with --override)")
    try:
        bindings = load_acl_file(path)
    except AclFileError as exc:
        raise ConfigError(f"--acls {exc}") from None
    log.info("acls_file_loaded", path=path, acls=len(bindings))
    return bindings


def _end_process(code: int) -> NoReturn:
    """The broker has stopped cleanly (connections closed, logs and state files flushed and closed): end the
    process without tearing the interpreter down, which took ~0.1 s with kafka-shim's few hundred modules loaded
    (SIGTERM to exit: 109 ms median before, 6 ms after) and frees nothing the OS would not. Log and output streams
    are flushed first."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(code)


def main(argv: list[str] | None = None) -> int:
    as_program = argv is None  # run as the kafka-shim command, not called from code that goes on running
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["acls"]:
        from kafka_shim.shim.tools import acls as acls_cli

        # Warnings only, and on stderr: stdout carries kafka-acls.sh's output.
        configure_logging("console", "warning")
        return acls_cli.main(argv[1:])
    if argv[:1] and argv[0] in TRACE_COMMANDS:
        from kafka_shim.traces import cli as trace_cli

        configure_logging("console", "warning")
        return trace_cli.main(argv[0], argv[1:])
    args = build_parser().parse_args(argv)
    if args.command == "healthcheck":  # quiet: a container runtime asks it every few seconds
        return asyncio.run(_healthcheck(*args.bootstrap_server, args.timeout))
    configure_logging(args.log_format, args.log_level)
    if args.command == "capture-proxy":
        try:
            return asyncio.run(capture_proxy(args))
        except ConfigError as exc:
            print(f"kafka-shim: configuration error: {exc}", file=sys.stderr)
            return 2
        except OSError as exc:
            print(f"kafka-shim: {exc}", file=sys.stderr)
            return 1
    if args.command == "serve":
        try:
            overrides = {}
            if args.config_from_env:
                from kafka_shim.shim.tools.container_env import properties_from_env

                overrides.update(properties_from_env(os.environ))
            overrides.update(dict(args.override))
            if args.data_dir:
                overrides["log.dirs"] = args.data_dir
            if args.capture:
                overrides["kafka.shim.capture.dir"] = args.capture
            if args.kafka_version:
                overrides["kafka.version"] = args.kafka_version
            if args.metrics_port is not None:
                overrides["kafka.shim.metrics.port"] = str(args.metrics_port)
            config = BrokerConfig.load(args.config, overrides)
            preload = _preload_acls(args.acls, config)
            keep_freed_memory_warm()
            if args.event_loop != "asyncio":
                try:
                    import uvloop
                except ImportError:
                    if args.event_loop == "uvloop":
                        print("kafka-shim: --event-loop uvloop needs the uvloop package: pip install uvloop", file=sys.stderr)
                        return 2
                else:
                    code = uvloop.run(serve(config, preload))
                    return _end_process(code) if as_program else code
            code = asyncio.run(serve(config, preload))
            return _end_process(code) if as_program else code
        except ConfigError as exc:
            print(f"kafka-shim: configuration error: {exc}", file=sys.stderr)
            return 2
        except OSError as exc:
            print(f"kafka-shim: {exc}", file=sys.stderr)
            return 1
    return 2


if __name__ == "__main__":
    sys.exit(main())
