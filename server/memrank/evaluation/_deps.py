"""Lazy imports of the `eval` extra, with one clear message when it is missing."""

from __future__ import annotations

import importlib
from types import ModuleType


class MissingExtra(RuntimeError):
    """An optional dependency of `memrank eval` is not installed."""


def require(module: str, package: str | None = None) -> ModuleType:
    """Import ``module`` or raise MissingExtra telling how to install it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        name = package or module
        raise MissingExtra(f"memrank eval needs {name!r}: install the eval extra "
                           f"(pip install 'memrank-sidecar[eval]')") from None
