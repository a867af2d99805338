"""TEST ONLY: deliberately broken builds for `make chaos BREAK=<name>`, to show the checker catches them.

`tests/chaos/fleet.py` puts this directory on PYTHONPATH (and names the break in VC_CHAOS_BREAK)
for the processes it breaks; Python imports `sitecustomize` at start-up, and this one patches the
named module the moment it is imported. Nothing in the services knows about it.

- ledger-blind-write: the scheduler ledger's compare-and-set (`create`, `update(last=...)`) becomes a
  blind `put`, so two scheduler instances can both reserve the last room in a capped queue.
- blind-fit: the placement fit check (`ledger.try_reserve`) accepts everything, so a node's owner lends
  room it does not have and a capped queue takes every reservation.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any


class _BlindKeyValue:
    """A KeyValue whose compare-and-set writes ignore the revision they were based on."""

    def __init__(self, kv: Any) -> None:
        self._kv = kv

    def __getattr__(self, name: str) -> Any:
        return getattr(self._kv, name)

    async def create(self, key: str, value: bytes, **_: Any) -> int:
        return int(await self._kv.put(key, value))

    async def update(self, key: str, value: bytes, last: int | None = None, **_: Any) -> int:
        return int(await self._kv.put(key, value))


def _ledger_blind_write(module: ModuleType) -> None:
    original = module.Ledger.open

    async def open_blind(self: Any) -> Any:
        return _BlindKeyValue(await original(self))

    module.Ledger.open = open_blind


def _blind_fit(module: ModuleType) -> None:
    def accept_all(record: Any, new: Any, capacity: Any, occupying: Any, view: Any, now: float, **_: Any) -> Any:
        fresh = {uid: r for uid, r in new.items() if uid not in record.reservations}
        return module.Outcome(module.Record({**record.reservations, **fresh}), 0)

    module.try_reserve = accept_all


BREAKS: dict[str, tuple[str, Callable[[ModuleType], None]]] = {
    "ledger-blind-write": ("vc_scheduler.ledger_kv", _ledger_blind_write),
    "blind-fit": ("vc_scheduler.ledger", _blind_fit),
}


class _PatchAfterImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, module: str, patch: Callable[[ModuleType], None]) -> None:
        self.module, self.patch = module, patch
        self.spec: importlib.machinery.ModuleSpec | None = None

    def find_spec(self, name: str, path: Sequence[str] | None, target: ModuleType | None = None) -> Any:
        if name != self.module or self.spec is not None:
            return None
        self.spec = importlib.machinery.PathFinder.find_spec(name, path)
        if self.spec is None or self.spec.loader is None:
            return None
        self.loader = self.spec.loader
        return importlib.machinery.ModuleSpec(name, self, origin=self.spec.origin)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        assert self.spec is not None
        return self.loader.create_module(self.spec)

    def exec_module(self, module: ModuleType) -> None:
        assert self.spec is not None
        module.__spec__ = self.spec
        module.__file__ = self.spec.origin
        self.loader.exec_module(module)
        self.patch(module)
        print(f"chaos: BREAK applied to {self.module}", file=sys.stderr, flush=True)


_name = os.environ.get("VC_CHAOS_BREAK", "")
if _name:
    _module, _patch = BREAKS[_name]
    sys.meta_path.insert(0, _PatchAfterImport(_module, _patch))
