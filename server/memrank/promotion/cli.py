"""`memrank promote`: write a tuned profile into the config the pods serve (a ConfigMap, or a file).

The pods reload their profiles when the mounted config file changes (the
kubelet swaps a ConfigMap volume's files; ``lifecycle.reload`` notices), so a
promotion needs no rollout. Run after ``memrank tune --require-better``
succeeded: the chart's promotion CronJob chains the two.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from memrank.promotion.kube import SERVICE_ACCOUNT, Api, ConfigMapRef, Conflict
from memrank.promotion.merge import Merged, PromotionError, merge, tuned_entry

ATTEMPTS = 3  # read-merge-write rounds when the ConfigMap changes under us (409)

DESCRIPTION = (
    "Set a serving profile's weights to the ones `memrank tune` wrote (--from, profile --profile) in the config "
    "the servers load: the ConfigMap the pods mount (--configmap NAMESPACE/NAME, through the Kubernetes API with "
    "the pod's service account) or a file (--to-file). The profile keeps every other key of its definition; the "
    "result must load with the server's own loader before it is written. The servers reload it without a "
    "restart. Exit status 0: written (or already so); 2: bad input or the write failed, the reason on stderr."
)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `promote` to the `memrank` subcommands."""
    p = sub.add_parser("promote", help="write a tuned profile into the served config (a ConfigMap or a file)",
                       description=DESCRIPTION)
    p.add_argument("--from", dest="source", required=True, type=Path, metavar="YAML",
                   help="the config file `memrank tune --out` wrote")
    p.add_argument("--profile", default="tuned", help="the tuned profile in --from (tune's --name; default tuned)")
    p.add_argument("--as", dest="target", required=True, metavar="PROFILE",
                   help="the serving profile to set (the one requests name, e.g. tune's --base)")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--configmap", metavar="NAMESPACE/NAME", help="the ConfigMap the pods mount")
    where.add_argument("--to-file", type=Path, metavar="PATH",
                       help="the config file the servers load (replaced atomically; created if absent)")
    p.add_argument("--key", default="memrank.yaml", help="with --configmap: its data key holding the config "
                                                         "(default memrank.yaml, the chart's)")
    p.add_argument("--api-server", default=Api.server, metavar="URL",
                   help=f"Kubernetes API server (default {Api.server}, from inside a pod)")
    p.add_argument("--token-file", type=Path, default=SERVICE_ACCOUNT / "token", metavar="PATH",
                   help="bearer token (default: the pod's service account token)")
    p.add_argument("--ca-file", type=Path, default=SERVICE_ACCOUNT / "ca.crt", metavar="PATH",
                   help="CA bundle the API server's certificate chains to (default: the service account's)")


def run(args: argparse.Namespace) -> int:
    """Run `memrank promote`."""
    try:
        entry = tuned_entry(args.source, args.profile)
        source = f"{args.source}, profile {args.profile}"
        if args.to_file is not None:
            done, where = _to_file(args.to_file, entry, args.target, source), str(args.to_file)
        else:
            ref = ConfigMapRef.parse(args.configmap, args.key)
            api = Api(args.api_server, args.token_file, args.ca_file)
            done, where = _to_configmap(api, ref, entry, args.target, source), str(ref)
    except PromotionError as exc:
        print(f"memrank promote: {exc}", file=sys.stderr)
        return 2
    if not done.changed:
        print(f"memrank promote: {where}: profile {args.target!r} already has these weights; nothing written "
              f"({done.after})")
    else:
        print(f"memrank promote: {where}: profile {args.target!r} set from {source}; policy {done.before} -> "
              f"{done.after} (the servers reload it)")
    return 0


def _to_file(path: Path, entry: dict[str, object], target: str, source: str) -> Merged:
    try:
        current = path.read_text(encoding="utf-8") if path.exists() else ""
    except OSError as exc:
        raise PromotionError(f"--to-file {path}: {exc.strerror or exc}") from None
    merged = merge(current, entry, target, source)
    if merged.changed:
        _replace(path, merged.text)
    return merged


def _replace(path: Path, text: str) -> None:
    """Write beside the file, then rename over it: a server polling the file never reads half of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise PromotionError(f"--to-file {path}: {exc.strerror or exc}") from None


def _to_configmap(api: Api, ref: ConfigMapRef, entry: dict[str, object], target: str, source: str) -> Merged:
    for attempt in range(1, ATTEMPTS + 1):
        current, version = api.read(ref)
        merged = merge(current, entry, target, source)
        if not merged.changed:
            return merged
        try:
            api.write(ref, merged.text, version)
            return merged
        except Conflict:
            if attempt == ATTEMPTS:
                raise
    raise AssertionError("unreachable")
