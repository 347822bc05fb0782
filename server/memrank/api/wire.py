"""The wire format below the parser: which string field of an undecodable request holds bytes that are not UTF-8
(protobuf says only "String field had bad UTF-8"), and a RankRequest's packed embeddings split off before parsing.
"""

from __future__ import annotations

from collections.abc import Iterator

from google.protobuf.descriptor import Descriptor, FieldDescriptor

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.api.call import RankInput

_MAX_DEPTH = 16  # memrank's messages nest three deep; a hostile payload cannot recurse further


def varint(data: bytes, at: int) -> tuple[int, int]:
    """The varint at ``at`` and where it ends; ValueError if it is cut short or longer than 64 bits."""
    value, shift = 0, 0
    while True:
        if at >= len(data) or shift > 63:
            raise ValueError("truncated varint")
        b = data[at]
        at += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, at
        shift += 7


def spans(data: bytes) -> Iterator[tuple[int, int, int, int, int]]:
    """(field number, wire type, where its key starts, where its payload starts, where it ends) of each field of
    ``data``, in order; ValueError where the bytes stop being protobuf's wire format."""
    at, size = 0, len(data)
    while at < size:
        start = at
        key = data[at]
        if key < 0x80:  # a one-byte key (fields 1-15): the varint read inline, a third of a field's walk
            at += 1
        else:
            key, at = varint(data, at)
        wire = key & 7
        if wire == 2:
            length = data[at] if at < size else 0x80
            if length < 0x80:
                body = at + 1
            else:
                length, body = varint(data, at)
            at = body + length
        elif wire == 0:
            body, at = at, varint(data, at)[1]
        elif wire in (1, 5):
            body, at = at, at + (8 if wire == 1 else 4)
        else:
            raise ValueError(f"wire type {wire}")
        if at > size:
            raise ValueError("truncated field")
        yield key >> 3, wire, start, body, at


def _decodes(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _walk(data: bytes, message: Descriptor, path: str, depth: int) -> str | None:
    if depth > _MAX_DEPTH:
        return None
    counts: dict[int, int] = {}
    for number, wire, _, body, end in list(spans(data)):  # all walked first: malformed anywhere names nothing
        field = message.fields_by_number.get(number)
        if field is None or wire != 2:
            continue
        payload = data[body:end]
        index = counts.get(number, 0)
        counts[number] = index + 1
        name = f"{path}.{field.name}" if path else field.name
        if field.type == FieldDescriptor.TYPE_STRING:
            if not _decodes(payload):
                return f"{name}[{index}]" if field.is_repeated else name
        elif field.type == FieldDescriptor.TYPE_MESSAGE:
            entry = field.message_type
            if entry.GetOptions().map_entry:
                found = _walk(payload, entry, "", depth + 1)
                if found is not None:  # named by its key (the first that decodes), unless the key is the bad one
                    keys = [payload[b:e] for n, w, _, b, e in spans(payload) if n == 1 and w == 2 and
                            _decodes(payload[b:e])]
                    return name if found == "key" or not keys else f'{name}["{keys[0].decode()[:40]}"]'
                continue
            here = f"{name}[{index}]" if field.is_repeated else name
            found = _walk(payload, entry, here, depth + 1)
            if found is not None:
                return found
    return None


def bad_utf8_field(data: bytes, message: Descriptor) -> str | None:
    """The path of the first string field in ``data`` that is not valid UTF-8 (``candidates[3].content``,
    ``candidates[0].metadata["topic"]``), or None; None too at the first malformed byte."""
    try:
        return _walk(data, message, "", 0)
    except (ValueError, IndexError):
        return None


_EMBEDDINGS = pb.RankRequest.DESCRIPTOR.fields_by_name["embeddings_f32"].number


def split_embeddings(data: bytes) -> tuple[bytes, bytes] | None:
    """(the request without its packed embeddings, the ``embeddings_f32`` bytes) of RankRequest ``data``, or None
    when it carries none, or more than one field 14, or its top level does not walk (the caller's ordinary parse
    then keeps the parser's meaning and names any error).

    Parsing a request copies ``embeddings_f32`` into the message, and reading the field copies it again: with the
    request bytes, three copies of the matrix at once. A message's wire form is its fields one after another, so
    the request with its one embeddings field cut out parses to the request without it, and the matrix is copied
    once, on its own: a view of it would keep the whole request alive for the call (at 400 x 384 its text, a
    sixth of it; at 1,600 memories of 40 KB, 61 MiB of contents beside the batch's own), where the copy lets the
    request bytes go once parsed.
    """
    found: list[tuple[int, int, int]] = []
    try:
        for number, wire, start, body, end in spans(data):
            if number == _EMBEDDINGS and wire == 2:
                found.append((start, body, end))
    except ValueError:
        return None
    if len(found) != 1 or found[0][1] == found[0][2]:
        return None
    start, body, end = found[0]
    return data[:start] + data[end:], data[body:end]


def parse_rank(data: bytes) -> RankInput:
    """A Rank request's bytes as the servicer takes them: the packed embeddings are split off the wire before
    parsing (``split_embeddings``), so the matrix is copied once and the request bytes are not kept; the message
    is the call's alone (``single_use``)."""
    parts = split_embeddings(data)
    if parts is None:
        return RankInput(pb.RankRequest.FromString(data), single_use=True)
    return RankInput(pb.RankRequest.FromString(parts[0]), parts[1], single_use=True)
