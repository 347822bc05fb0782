"""Which string field of an undecodable request holds bytes that are not UTF-8.

protobuf refuses a request whose string field is not valid UTF-8 and says
only "String field had bad UTF-8". ``bad_utf8_field`` walks the wire format
with the message's descriptor (varints, fixed 32/64-bit values, length-
delimited fields; maps are repeated key/value entries) and returns the path
of the first string field whose bytes do not decode, e.g.
``candidates[3].content`` or ``candidates[0].metadata["topic"]``, so the
error can name it. It stops at the first malformed byte and returns None.
"""

from __future__ import annotations

from google.protobuf.descriptor import Descriptor, FieldDescriptor

_MAX_DEPTH = 16  # memrank's messages nest three deep; a hostile payload cannot recurse further


def _varint(data: bytes, at: int) -> tuple[int, int]:
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


def _fields(data: bytes) -> list[tuple[int, int, bytes | None]]:
    """(field number, wire type, payload of a length-delimited field or None) of each field in order."""
    out: list[tuple[int, int, bytes | None]] = []
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            _, at = _varint(data, at)
            out.append((number, wire, None))
        elif wire == 1:
            at += 8
            out.append((number, wire, None))
        elif wire == 5:
            at += 4
            out.append((number, wire, None))
        elif wire == 2:
            size, at = _varint(data, at)
            out.append((number, wire, data[at:at + size]))
            at += size
        else:
            raise ValueError(f"wire type {wire}")
        if at > len(data):
            raise ValueError("truncated field")
    return out


def _decodes(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _map_key(entry: bytes) -> str | None:
    for number, wire, payload in _fields(entry):
        if number == 1 and wire == 2 and payload is not None and _decodes(payload):
            return payload.decode("utf-8")
    return None


def _walk(data: bytes, message: Descriptor, path: str, depth: int) -> str | None:
    if depth > _MAX_DEPTH:
        return None
    counts: dict[int, int] = {}
    for number, wire, payload in _fields(data):
        field = message.fields_by_number.get(number)
        if field is None or wire != 2 or payload is None:
            continue
        index = counts.get(number, 0)
        counts[number] = index + 1
        name = f"{path}.{field.name}" if path else field.name
        if field.type == FieldDescriptor.TYPE_STRING:
            if not _decodes(payload):
                return f"{name}[{index}]" if field.is_repeated else name
        elif field.type == FieldDescriptor.TYPE_MESSAGE:
            entry = field.message_type
            if entry.GetOptions().map_entry:
                key = _map_key(payload)
                found = _walk(payload, entry, "", depth + 1)
                if found is not None:
                    return name if found == "key" or key is None else f'{name}["{key[:40]}"]'
                continue
            here = f"{name}[{index}]" if field.is_repeated else name
            found = _walk(payload, entry, here, depth + 1)
            if found is not None:
                return found
    return None


def bad_utf8_field(data: bytes, message: Descriptor) -> str | None:
    """The path of the first string field in ``data`` that is not valid UTF-8, or None."""
    try:
        return _walk(data, message, "", 0)
    except (ValueError, IndexError):
        return None
