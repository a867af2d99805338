"""SHELL: the people admission answers to, from `--identities FILE` (vc_security.registry), re-read
whenever the file changes so `vcctl user create` takes effect without a restart.

Without the flag only the built-in `admin` is known: what an open bus (no NATS authorization) gives
everyone anyway. With it, an identity not in the file may write nothing.
"""

from __future__ import annotations

import os

import structlog

from vc_core.errors import ConfigError
from vc_security.identities import ADMIN
from vc_security.registry import BUILT_IN_ADMIN, BadRegistry, Person, decode_registry

log = structlog.get_logger(__name__)


class Callers:
    def __init__(self, path: str | None) -> None:
        self._path = path
        self._seen: tuple[int, int] | None = None
        self._people: dict[str, Person] = {ADMIN: BUILT_IN_ADMIN}
        if path is not None:
            try:
                self._reload()
            except (OSError, BadRegistry) as exc:
                raise ConfigError(f"--identities: {exc}") from None

    def lookup(self, identity: str) -> Person | None:
        if self._path is not None:
            try:
                self._reload()
            except (OSError, BadRegistry) as exc:  # keep answering with what was last read, and say why
                log.error("admission.identities_unreadable", path=self._path, error=str(exc))
        return self._people.get(identity)

    def _reload(self) -> None:
        assert self._path is not None
        stat = os.stat(self._path)
        seen = (stat.st_mtime_ns, stat.st_size)
        if seen == self._seen:
            return
        with open(self._path, "rb") as source:
            people = decode_registry(source.read(), source=self._path)
        self._people, self._seen = people, seen
        log.info("admission.identities_loaded", path=self._path, identities=len(people))
