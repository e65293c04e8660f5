"""The protobuf modules pymilvus generates from Milvus's protos (common_pb2, msg_pb2, schema_pb2, milvus_pb2),
loaded without pymilvus's heavy package __init__."""

from __future__ import annotations

import importlib
import sys
from types import ModuleType
from typing import Any

_MODULES: dict[str, ModuleType] = {}


def pb2(name: str) -> Any:
    """A pymilvus.grpc_gen protobuf module (common_pb2, msg_pb2, schema_pb2, milvus_pb2), typed Any: protobuf
    generates its classes at run time.

    Importing `pymilvus` runs its package __init__, which pulls in grpc and pandas (~0.5 s per command).
    When pymilvus is not imported yet, the generated modules are loaded under their real names through
    short-lived stand-ins for the two parent packages; a later `import pymilvus` then finds and reuses the
    very same modules, so message classes stay identical (import them with `from pymilvus.grpc_gen import x`)."""
    module = _MODULES.get(name)
    if module is None:
        module = _MODULES[name] = _import_pb2(name)
    return module


def _import_pb2(name: str) -> ModuleType:
    full = f"pymilvus.grpc_gen.{name}"
    if full in sys.modules or "pymilvus" in sys.modules:
        return importlib.import_module(full)
    from importlib.util import find_spec

    spec = find_spec("pymilvus")
    if spec is None or not spec.submodule_search_locations:
        return importlib.import_module(full)  # raises the ImportError that says pymilvus is missing
    root = spec.submodule_search_locations[0]
    stand_ins = {"pymilvus": [root], "pymilvus.grpc_gen": [f"{root}/grpc_gen"]}
    for package, path in stand_ins.items():
        module = ModuleType(package)
        module.__path__ = path
        sys.modules[package] = module
    try:
        return importlib.import_module(full)
    finally:
        for package in stand_ins:
            sys.modules.pop(package, None)
