"""pymilvus, and the protobuf modules it generates from Milvus's protos (common_pb2, msg_pb2, schema_pb2,
milvus_pb2) loaded without pymilvus's heavy package __init__.

Both are loaded under one lock. The generated modules import each other, and protobuf adds each file to one
process-wide descriptor pool, so two threads loading them at once (the migration's verify step decodes etcd
positions on one thread while it imports pymilvus to count rows on another) deadlock on Python's module locks;
Python breaks the deadlock by handing one thread a half-loaded module, and protobuf then fails with
"Depends on file 'msg.proto', but it has not been loaded". Code that imports pymilvus calls `import_pymilvus()`
first; after that, `from pymilvus import X` is a dictionary lookup."""

from __future__ import annotations

import importlib
import sys
import threading
from types import ModuleType
from typing import Any

_MODULES: dict[str, ModuleType] = {}
_LOADING = threading.RLock()


def import_pymilvus() -> ModuleType:
    """The pymilvus package, imported (once) while no other thread loads its generated modules."""
    loaded = sys.modules.get("pymilvus")
    if loaded is not None and getattr(loaded, "__file__", None) and not _initializing(loaded):
        return loaded
    with _LOADING:
        return importlib.import_module("pymilvus")


def _initializing(module: ModuleType) -> bool:
    return bool(getattr(getattr(module, "__spec__", None), "_initializing", False))


def pb2(name: str) -> Any:
    """A pymilvus.grpc_gen protobuf module (common_pb2, msg_pb2, schema_pb2, milvus_pb2), typed Any: protobuf
    generates its classes at run time.

    Importing `pymilvus` runs its package __init__, which pulls in grpc and pandas (~0.5 s per command).
    When pymilvus is not imported yet, the generated modules are loaded under their real names through
    short-lived stand-ins for the two parent packages; a later `import pymilvus` then finds and reuses the
    very same modules, so message classes stay identical (import them with `from pymilvus.grpc_gen import x`)."""
    module = _MODULES.get(name)
    if module is None:
        with _LOADING:
            module = _MODULES.get(name) or _import_pb2(name)
            _MODULES[name] = module
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
