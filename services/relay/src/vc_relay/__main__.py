"""vc-kube-relay: mirror a real kube-apiserver into Tephra's NATS cache (`--backend kube`)."""

from __future__ import annotations

from vc_relay.app import RelayApp
from vc_runtime.service import main_entry
from vc_runtime.settings import parse


def main() -> None:
    main_entry(RelayApp, lambda: parse("kube-relay"))


if __name__ == "__main__":
    main()
