"""The kube relay's bus grant is exactly what it mirrors: no write on a bucket it never fills."""

from __future__ import annotations

from vc_kube.relay import MIRRORED_KINDS
from vc_security.identities import RELAYED, SERVICE_GRANTS


def test_the_relay_may_read_and_write_exactly_the_kinds_it_mirrors() -> None:
    assert set(MIRRORED_KINDS) == RELAYED
    grant = SERVICE_GRANTS["kube-relay"]
    assert grant.reads == grant.writes == RELAYED
    assert "Event" not in RELAYED  # the services write Events to the apiserver in kube mode
