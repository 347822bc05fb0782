"""How a config key's value is typed and checked (strict types, bounds, host:port, choices, check errors), and how a
key file is read."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, ConfigDict, Field, with_config
from pydantic_core import PydanticCustomError

from memrank.core.errors import ConfigError

LOG_LEVELS = ("debug", "info", "warning", "error")
DECISION_SINKS = ("stdout", "file", "s3")
DECISION_CONTENT = ("omit", "hash", "plain")
DECISION_FSYNC = ("never", "interval", "every")  # memrank.decisions.durability
# What security.auth_open_methods entries and tracing.endpoint must match in full (re.fullmatch).
OPEN_METHOD = r"[A-Za-z_][\w.]*|/[A-Za-z_][\w.]*/\w+"
TRACING_ENDPOINT = r"https?://[^\s/]+(/\S*)?"
HTTP_URL = TRACING_ENDPOINT
# s3://bucket[/prefix]: a bucket name as S3 allows it (3-63 of a-z 0-9 . -), a prefix of any non-space text
S3_URL = r"s3://[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9](/\S*)?"


# ---------------------------------------------------------------- the keys' types and checks


def _whole_float(value: Any) -> Any:
    """A float without a fraction (YAML's 400.0) is that whole number; 400.7 stays a float, and is refused."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _empty_is_null(value: Any) -> Any:
    return None if value == "" else value


STRICT = Field(strict=True)
EMPTY_IS_NULL = BeforeValidator(_empty_is_null)  # placed after a key's bounds: they apply to the value, not to null
Whole = Annotated[int, BeforeValidator(_whole_float), STRICT]
Number = Annotated[float, STRICT]  # finite: the sections' allow_inf_nan=False
Text = Annotated[str, STRICT]
Flag = Annotated[bool, STRICT]
OptionalText = Annotated[str | None, STRICT, EMPTY_IS_NULL]
Positive = Annotated[Whole, Field(ge=1)]


def fail(detail: str, key: str = "") -> PydanticCustomError:
    """A check's error: what is wrong with the value of ``key`` (default: the key being validated)."""
    return PydanticCustomError("memrank_config", "{detail}", {"detail": detail, "key": key})


def is_host_port(address: str) -> bool:
    host, sep, port = address.rpartition(":")
    try:
        return bool(sep and host and port.isdigit() and 0 <= int(port) <= 65535)
    except ValueError:  # a digit int() does not read ("²")
        return False


def host_port(address: str) -> str:
    if not is_host_port(address):
        raise fail(f"expected host:port, got {address!r}")
    return address


def one_of(choices: tuple[str, ...]) -> AfterValidator:
    def check(value: str) -> str:
        if value not in choices:
            raise fail(f"{value!r} is not one of {', '.join(choices)}")
        return value

    return AfterValidator(check)


# Validated from a config file's data (load_settings); built directly (tests, replace) they are not checked.
SECTION = with_config(ConfigDict(extra="forbid", allow_inf_nan=False))


# ---------------------------------------------------------------- the settings


def read_key(key: str, path: str | None) -> bytes | None:
    if not path:
        return None
    try:
        data = Path(path).read_bytes().strip()
    except OSError as exc:
        raise ConfigError(f"{key}: cannot read {path!r}: {exc.strerror}") from None
    if not data:
        raise ConfigError(f"{key}: {path!r} is empty")
    return data
