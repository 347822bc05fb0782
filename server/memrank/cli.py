"""The `memrank` command: serve, rank a JSON request offline, list profiles, evaluate, tune, promote.

A little past 250 lines on purpose: the argument parser and the short commands it dispatches to read best
side by side; the long commands live in their packages (``evaluation.cli``, ``tuning.cli``, ``tuning.replay``,
``audit``, ``lifecycle.supervisor``, ``promotion.cli``) and are imported only when run, so ``memrank --help``
stays fast.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from memrank import __version__
from memrank.core.errors import ConfigError, InvalidRequest
from memrank.system import defaults
from memrank.system.ports import AddressInUse
from memrank.system.signals import held

if TYPE_CHECKING:
    from memrank.config import Settings

# Each command imports inside its function what only it uses (the configuration model with pydantic and numpy,
# the gRPC server, servicer and stubs, protobuf's JSON, the drift reference; the eval and tune modules when the
# parser is built): importing this module stays light, so `memrank serve` logs its first line at once, and
# `memrank profiles` does not load the server. Nothing imported there imports this module.


def _epilog_env() -> str:
    from memrank.config import ENV_KEYS

    return "environment variables (override the config file; flags override them):\n" + "\n".join(
        f"  {var:<32} {key}" for var, key in ENV_KEYS.items()
    ) + "\n  MEMRANK_CONFIG                   path of the config file (as --config)"


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", metavar="FILE", help="YAML config file overriding the built-in defaults")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memrank",
        description="memrank: a stateless gRPC ranking sidecar for agent memory. Ranks the candidate memories "
                    "a retriever found, drops what should not reach the prompt, and explains every score.",
    )
    parser.add_argument("--version", action="version", version=f"memrank {__version__} (wire API memrank.v1)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    serve = sub.add_parser(
        "serve", help="run the gRPC sidecar", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Serve memrank.v1.RankingService, grpc.health.v1.Health and server reflection. Runs on the "
                    "built-in default configuration when no file is given. SIGTERM/SIGINT drain in-flight calls "
                    "within the grace period and exit 0.",
        epilog=_epilog_env(),
    )
    _common(serve)
    serve.add_argument("--address", help="host:port to listen on (default 0.0.0.0:50051; port 0 = any free port)")
    serve.add_argument("--metrics-port", type=int, help="port of the Prometheus /metrics endpoint (default 9464; "
                                                        "0 = off)")
    serve.add_argument("--workers", type=int, help="worker processes sharing the port via SO_REUSEPORT; "
                       "0 (the default) = one per CPU this process may use, 1 when the port is 0")
    serve.add_argument("--log-level", choices=("debug", "info", "warning", "error"),
                       help="log level (default info); memory content is logged only at debug")
    serve.add_argument("--grace-period", type=float, metavar="SECONDS",
                       help="seconds in-flight calls get after SIGTERM (default 10)")
    serve.add_argument("--print-config", action="store_true", help="print the effective configuration and exit")
    rank = sub.add_parser(
        "rank", help="rank a request given as protobuf JSON and print the response",
        description="Rank a memrank.v1.RankRequest given as protobuf JSON (a file, or - for stdin) through the "
                    "same validation and core as the server, and print the RankResponse as JSON. Input takes "
                    "either field spelling (requestId or request_id); output uses protobuf's JSON names "
                    "(camelCase, as the clients' JSON and grpcurl print them) unless --proto-names.",
    )
    _common(rank)
    rank.add_argument("file", help="RankRequest JSON file, or - for standard input")
    rank.add_argument("--proto-names", action="store_true",
                      help="print the .proto field names (snake_case, as the README's prose and the proto files "
                           "spell them) instead of the JSON names")
    profiles = sub.add_parser("profiles", help="list the profiles and their weights")
    _common(profiles)
    profiles.add_argument("--json", action="store_true", help="print ListProfilesResponse JSON")
    profiles.add_argument("--proto-names", action="store_true", help="with --json: snake_case field names")
    _drift_parser(sub)
    _verify_parser(sub)
    from memrank.evaluation.cli import add_parser as add_eval_parser

    add_eval_parser(sub)
    from memrank.tuning.cli import add_parser as add_tune_parser

    add_tune_parser(sub)
    from memrank.promotion.cli import add_parser as add_promote_parser

    add_promote_parser(sub)
    from memrank.tuning.shadow_cli import add_parser as add_shadow_report_parser

    add_shadow_report_parser(sub)
    return parser


def _drift_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    drift = sub.add_parser("drift", help="signal drift tools")
    drift_sub = drift.add_subparsers(dest="drift_command", required=True, metavar="SUBCOMMAND")
    snap = drift_sub.add_parser(
        "snapshot", help="write a drift reference file (for drift.reference_file)",
        description="Write the distribution of every signal's raw values per profile as a drift reference file, "
                    "either scraped from a live sidecar's /metrics (--metrics-url) or by ranking RankRequest JSON "
                    "files offline (one request per file, or one per line in a .jsonl file).",
    )
    _common(snap)
    snap.add_argument("--output", "-o", required=True, metavar="FILE", help="reference file to write")
    snap.add_argument("--metrics-url", metavar="URL", help="a live sidecar's metrics, e.g. "
                                                         "http://127.0.0.1:9464/metrics")
    snap.add_argument("requests", nargs="*", metavar="REQUEST", help="RankRequest JSON (.json) or JSON lines "
                                                                     "(.jsonl) files, ranked offline")


def _verify_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    verify = sub.add_parser(
        "verify", help="check a response's receipt against its request",
        description="Rebuild a RankResponse's receipt (memrank.receipt.v3 or v2, as the receipt names it; "
                    "docs/concepts/receipts.md) from the RankRequest and the response, both protobuf JSON, compare "
                    "its SHA-256 with receipt.digest and, with the key, check receipt.signature. Exit 0: verified; "
                    "1: something differs (said what); 2: not verifiable (no request, or a response without the "
                    "breakdowns the receipt binds), or unreadable input.",
    )
    verify.add_argument("response", metavar="RESPONSE.json", help="RankResponse JSON, or - for standard input")
    verify.add_argument("--request", metavar="REQUEST.json",
                        help="the RankRequest JSON it answered (needed for the digest: it holds the candidates)")
    verify.add_argument("--key-file", metavar="KEY", help="the receipt key file (security.receipt_key_file), to "
                                                          "check the signature")
    verify.add_argument("--lines", action="store_true", help="also print the canonical lines rebuilt")


SERVE_FLAGS = {"server.address": "--address", "server.metrics_port": "--metrics-port", "server.workers": "--workers",
               "server.log_level": "--log-level", "server.grace_period_seconds": "--grace-period"}


def _where_set(key: str) -> str:
    """"; choose another with --address or MEMRANK_ADDRESS (or server.address in the config file)"."""
    from memrank.config import ENV_KEYS

    ways = [flag for k, flag in SERVE_FLAGS.items() if k == key] + [v for v, k in ENV_KEYS.items() if k == key]
    return f"; choose another with {' or '.join(ways)} (or {key} in the config file)" if ways else ""


def _early_level(argv: Sequence[str]) -> str:
    """The log level `memrank serve` will run at, as far as the flags and environment say before any import
    (a config file's server.log_level is read later).

    The one read of the environment outside ``config``: it picks the level of the first "loading" line only,
    which is logged before the configuration package (pydantic, seconds on a cold machine) is imported; the
    server's level is the settings' ``server.log_level``, read by ``config`` like every other key.
    """
    level = os.environ.get("MEMRANK_LOG_LEVEL", "info")
    for i, arg in enumerate(argv):
        if arg == "--log-level" and i + 1 < len(argv):
            level = argv[i + 1]
        elif arg.startswith("--log-level="):
            level = arg.partition("=")[2]
    return level.lower()


def _announce_loading(argv: Sequence[str]) -> None:
    """`memrank serve`'s first log line, before the configuration model and the server are imported (seconds on
    a cold or busy machine): the command is alive and loading. Not for --help or --print-config."""
    if not argv or argv[0] != "serve" or {"-h", "--help", "--print-config"} & set(argv):
        return
    level = _early_level(argv)
    if level not in ("debug", "info"):
        return
    from memrank.system.logs import setup_logging

    setup_logging(level)
    logging.getLogger("memrank.cli").info("memrank loading", extra={"version": __version__, "pid": os.getpid()})


def _serve(args: argparse.Namespace) -> int:
    from memrank.config import SettingsSource
    from memrank.lifecycle.announce import metrics_url
    from memrank.lifecycle.supervisor import WorkersFailing, serve
    from memrank.system.logs import setup_logging

    overrides = {
        "server.address": args.address, "server.metrics_port": args.metrics_port, "server.workers": args.workers,
        "server.log_level": args.log_level, "server.grace_period_seconds": args.grace_period,
    }
    source = SettingsSource(args.config, tuple((k, v) for k, v in overrides.items() if v is not None))
    settings = source.load()
    if args.print_config:
        print(settings.to_yaml(), end="")
        return 0
    setup_logging(settings.server.log_level)
    s = settings.server
    logging.getLogger("memrank.cli").info(
        "memrank starting", extra={"version": __version__, "config_sources": source.origins(SERVE_FLAGS),
                                   "address": s.address, "metrics": metrics_url(s),
                                   "health_address": s.health_address or "off", "workers": s.workers or "auto"})
    try:
        serve(settings, source)
    except WorkersFailing as exc:  # its cause is in the workers' log lines above
        print(f"memrank: {exc}", file=sys.stderr)
        return 1
    return 0


def _rank(args: argparse.Namespace, settings: Settings) -> int:
    from google.protobuf import json_format

    from memrank._gen.v1 import ranking_pb2 as pb
    from memrank.api.call import Call, Policy, RankInput, handle_rank

    text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text(encoding="utf-8")
    try:
        request = json_format.Parse(text, pb.RankRequest())
    except json_format.ParseError as exc:
        print(f"memrank rank: {args.file}: not a RankRequest: {exc}", file=sys.stderr)
        return 2
    try:
        response = handle_rank(RankInput(request), Policy.of(settings),
                               Call(time.time(), settings.provenance_key(), settings.receipt_key()))
    except InvalidRequest as exc:
        for v in exc.violations:
            print(f"memrank rank: INVALID_ARGUMENT {v.field}: {v.description}", file=sys.stderr)
        return 2
    print(json_format.MessageToJson(response, indent=2, preserving_proto_field_name=args.proto_names))
    return 0


def _profiles(args: argparse.Namespace, settings: Settings) -> int:
    from google.protobuf import json_format

    from memrank.api.encode import profiles_to_proto

    if args.json:
        print(json_format.MessageToJson(profiles_to_proto(settings.profiles, settings.policy_version), indent=2,
                                        preserving_proto_field_name=args.proto_names))
        return 0
    for name in sorted(settings.profiles):
        p = settings.profiles[name]
        tag = " (compatibility)" if p.compatibility else ""
        print(f"{name}{tag}: {p.description}")
        if p.importance_rules == "cues":
            print("    importance: memrank's rules (caller importance raised by fact, decision, metric, date, "
                  "constraint and evidence cues; docs/concepts/signals.md), not the seed's")
        for s in p.signals:
            print(f"    {s.name:<14} weight {s.weight:<8g} normalization {s.normalization}")
    return 0


def _drift_snapshot(args: argparse.Namespace, settings: Settings) -> int:
    from google.protobuf import json_format

    from memrank._gen.v1 import ranking_pb2 as pb
    from memrank.api.call import Call, Policy, RankInput, handle_rank
    from memrank.core.explain.outcome import RankOutcome
    from memrank.metrics import reference

    if bool(args.metrics_url) == bool(args.requests):
        print("memrank drift snapshot: give either --metrics-url or REQUEST files", file=sys.stderr)
        return 2
    if args.metrics_url:
        refs = reference.from_metrics_url(args.metrics_url)
    else:
        outcomes: list[RankOutcome] = []
        for name in args.requests:
            text = Path(name).read_text(encoding="utf-8")
            docs = [x for x in text.splitlines() if x.strip()] if name.endswith(".jsonl") else [text]
            for doc in docs:
                request = json_format.Parse(doc, pb.RankRequest())
                handle_rank(RankInput(request), Policy.of(settings),
                            Call(time.time(), settings.provenance_key(), observe=outcomes.append))
        refs = reference.from_outcomes(outcomes)
    if not refs:
        print("memrank drift snapshot: no signal values found; nothing written", file=sys.stderr)
        return 1
    reference.write_reference(args.output, refs)
    total = sum(int(v.sum()) for v in refs.values())
    print(f"wrote {len(refs)} references ({total} values) to {args.output}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `memrank` console script."""
    defaults.apply()  # before numpy loads: one BLAS thread, freed memory kept (inherited by spawned workers)
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["serve"]:
        # First: a SIGHUP (reload storm), SIGTERM or SIGINT while the server loads waits for its handlers
        # instead of killing it (memrank.system.signals); restored if the command returns.
        with held():
            return _main(argv)
    return _main(argv)


def _main(argv: list[str]) -> int:
    _announce_loading(argv)
    args = _parser().parse_args(argv)
    if args.command != "serve":
        # `memrank profiles | head`: a closed pipe ends the command quietly, as it does a Unix tool (the
        # server keeps Python's default: a peer that goes away must not kill it).
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        if args.command == "serve":
            return _serve(args)
        if args.command == "eval":
            if args.log:  # the decision log's replay is tuning's (tuning.replay): evaluation imports no tuning
                from memrank.tuning.replay import run as run_eval_log

                return run_eval_log(args)
            from memrank.evaluation.cli import run as run_eval

            return run_eval(args)
        if args.command == "tune":
            from memrank.tuning.cli import run as run_tune

            return run_tune(args)
        if args.command == "promote":
            from memrank.promotion.cli import run as run_promote

            return run_promote(args)
        if args.command == "shadow-report":
            from memrank.tuning.shadow_cli import run as run_shadow_report

            return run_shadow_report(args)
        if args.command == "verify":
            from memrank.audit import run as run_verify

            return run_verify(args)
        from memrank.config import SettingsSource

        settings = SettingsSource(args.config).load()
        if args.command == "drift":
            return _drift_snapshot(args, settings)
        return _rank(args, settings) if args.command == "rank" else _profiles(args, settings)
    except AddressInUse as exc:  # not the file's fault: say what is in use and where to choose another
        print(f"memrank: {exc}{_where_set(exc.key)}", file=sys.stderr)
        return 2
    except ConfigError as exc:
        print(f"memrank: configuration error: {exc}", file=sys.stderr)
        return 2
    except InvalidRequest as exc:
        print(f"memrank: invalid request: {exc}", file=sys.stderr)
        return 2
    except (OSError, json.JSONDecodeError) as exc:
        print(f"memrank: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
