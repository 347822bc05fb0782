"""The wire format below the parser: which string field of an undecodable request holds bytes that are not UTF-8,
and a RankRequest's packed embeddings split off before parsing (``split_embeddings``).

protobuf refuses a request whose string field is not valid UTF-8 and says
only "String field had bad UTF-8". ``bad_utf8_field`` walks the wire format
with the message's descriptor (varints, fixed 32/64-bit values, length-
delimited fields; maps are repeated key/value entries) and returns the path
of the first string field whose bytes do not decode, e.g.
``candidates[3].content`` or ``candidates[0].metadata["topic"]``, so the
error can name it. It stops at the first malformed byte and returns None.
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import DecodeError, Message
from google.protobuf.unknown_fields import UnknownFieldSet

from memrank._gen.v1 import ranking_pb2 as pb
from memrank.api.call import RankInput

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


def _top_level_rank_request() -> type[Message]:
    """RankRequest with its candidates (either form) and layers as opaque bytes: parsing it reads only the
    top-level fields (candidates are copied, not decoded), and serialising it writes them back unchanged."""
    file = descriptor_pb2.FileDescriptorProto()
    pb.DESCRIPTOR.CopyToProto(file)
    source = next(m for m in file.message_type if m.name == "RankRequest")
    top = descriptor_pb2.FileDescriptorProto(name="memrank/v1/rank_request_top_level.proto",
                                             package="memrank.v1.top_level", syntax=file.syntax,
                                             dependency=[*file.dependency, file.name])
    message = top.message_type.add()
    message.CopyFrom(source)
    for field in message.field:
        if field.name in ("candidates", "layers", "columns"):
            field.type = descriptor_pb2.FieldDescriptorProto.TYPE_BYTES
            field.ClearField("type_name")
        elif field.type_name.startswith(".memrank.v1.RankRequest."):  # its own map entries
            field.type_name = field.type_name.replace(".memrank.v1.", ".memrank.v1.top_level.", 1)
    pool = descriptor_pool.Default()
    try:
        found = pool.FindMessageTypeByName("memrank.v1.top_level.RankRequest")
    except KeyError:
        found = pool.Add(top).message_types_by_name["RankRequest"]
    return message_factory.GetMessageClass(found)


_TOP = _top_level_rank_request()
_EMBEDDINGS = _TOP.DESCRIPTOR.fields_by_name["embeddings_f32"]
_HEADER = bytes([_EMBEDDINGS.number << 3 | 2])  # its key: field 14, length-delimited (one byte)
# The fields numbered after it, which a serialiser writes after it (every one a scalar or opaque bytes here).
_AFTER = [f.name for f in _TOP.DESCRIPTOR.fields if f.number > _EMBEDDINGS.number]
_SPLIT_FROM = 256 << 10  # bytes of request from which the matrix is cut from the wire bytes (below: a few KiB)


def _varint_bytes(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _after(top: Message) -> bytes:
    """The serialisation of ``top``'s fields numbered after the embeddings (what ends ``top``'s own)."""
    tail = _TOP()
    for name in _AFTER:
        if top.HasField(name) if _TOP.DESCRIPTOR.fields_by_name[name].has_presence else getattr(top, name):
            setattr(tail, name, getattr(top, name))
    return bytes(tail.SerializeToString())


def _where(data: bytes, rest: bytes, tail: bytes) -> tuple[int, int] | None:
    """(start, end) of the embeddings bytes in ``data`` when ``data`` is ``rest`` with one embeddings field
    inserted where a serialiser puts it (before the fields numbered after it, ``tail``), else None."""
    if not rest.endswith(tail):
        return None
    at = len(rest) - len(tail)
    room = len(data) - len(rest) - len(_HEADER)  # the field's length and its varint
    width = next((w for w in range(1, 11) if max(1, ((room - w).bit_length() + 6) // 7) == w), 0)
    if not width or room - width < 0:
        return None
    size = room - width
    header = _HEADER + _varint_bytes(size)
    start = at + len(header)
    view = memoryview(rest)
    if data.startswith(header, at) and data.startswith(view[:at]) and data.startswith(view[at:], start + size):
        return start, start + size
    return None


def split_embeddings(data: bytes) -> tuple[bytes, bytes] | None:
    """(the request without its packed embeddings, the ``embeddings_f32`` bytes) of RankRequest ``data``, or None
    when it carries none (or does not parse: the caller's own parse then names the error).

    Parsing a request copies ``embeddings_f32`` into the message, and reading the field copies it again
    (into Python bytes): the matrix was held twice for the whole call. Here it is read once, and the rest of
    the request, written back field by field (candidates untouched, as bytes), parses to the same message
    without it. Only top-level fields are decoded (a parse of ``data`` with candidates as opaque bytes).

    The parse still copies the matrix into its message; reading it from there too put three copies of it in
    memory at once (``data``, the message's, the Python bytes), with the rest being written besides: the
    largest moment of a 400 x 384 call. So when the request was written as serialisers write it (fields in
    number order, nothing unknown), the rest is written and the parse dropped first, and the matrix is then
    copied out of ``data`` itself: the rest with one embeddings field put back where ``_where`` finds it is
    byte for byte ``data``, so those bytes are the field the parser would read. Any other layout reads the
    field from the parse, as before.
    """
    try:
        top = _TOP.FromString(data)
    except DecodeError:
        return None
    if len(data) < _SPLIT_FROM or not top.embedding_dim or len(UnknownFieldSet(top)):
        return _read(top)  # small, or packed embeddings without their dimension, or unknown fields
    tail = _after(top)
    top.ClearField("embeddings_f32")
    rest = top.SerializeToString()
    del top  # with its copy of the matrix, before the matrix is copied out of data
    found = _where(data, rest, tail)
    if found is None:
        return _read(_TOP.FromString(data))
    start, end = found
    return (rest, data[start:end]) if end > start else None


def _read(top: Message) -> tuple[bytes, bytes] | None:
    """The split of a parsed request, the embeddings read from the parse."""
    embeddings: bytes = top.embeddings_f32
    if not embeddings:
        return None
    top.ClearField("embeddings_f32")
    return top.SerializeToString(), embeddings


def parse_rank(data: bytes) -> RankInput:
    """A Rank request's bytes as the servicer takes them: the packed embeddings are split off the wire before
    parsing (``split_embeddings``), so they are held once, not twice."""
    parts = split_embeddings(data)
    if parts is None:
        return RankInput(pb.RankRequest.FromString(data))
    return RankInput(pb.RankRequest.FromString(parts[0]), parts[1])
