"""``memrank verify``: an auditor's command over the client's receipt check (``client.verify``).

Reads a RankResponse (and its RankRequest) as protobuf JSON from files or standard input, rebuilds the receipt
and says what differs; exit 0 verified, 1 something differs, 2 not verifiable or unreadable input.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TypeVar

from google.protobuf import json_format
from google.protobuf.message import Message

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.client.verify import Unverifiable, canonical_lines, verify_receipt

T = TypeVar("T", bound=Message)


def _read(name: str) -> str:
    return sys.stdin.read() if name == "-" else Path(name).read_text(encoding="utf-8")


def _parsed(name: str, cls: type[T]) -> T | None:
    """The protobuf JSON in file ``name`` ("-": standard input) as a ``cls``, or None with the reason on stderr."""
    try:
        return json_format.Parse(_read(name), cls())
    except json_format.ParseError as exc:
        print(f"memrank verify: {name}: not a {cls.DESCRIPTOR.name}: {exc}", file=sys.stderr)
        return None


def run(args: argparse.Namespace) -> int:
    """``memrank verify``: 0 verified, 1 something differs, 2 not verifiable (or unreadable input)."""
    response = _parsed(args.response, pb.RankResponse)
    request = _parsed(args.request, pb.RankRequest) if args.request else None
    if response is None or (args.request and request is None):
        return 2
    key = None
    if args.key_file:
        key = Path(args.key_file).read_bytes().strip()
        if not key:
            print(f"memrank verify: {args.key_file} is empty", file=sys.stderr)
            return 2
    if args.lines and request is not None:
        try:
            print("\n".join(canonical_lines(request, response)))
        except Unverifiable as exc:
            print(f"memrank verify: no canonical lines: {exc}", file=sys.stderr)
    check = verify_receipt(request, response, key)
    print(check.message(), file=sys.stdout if check.ok else sys.stderr)
    return 0 if check.ok else 1 if check.problems else 2
