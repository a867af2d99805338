"""The seam between the write API and the admission rules.

Issue 2 allows admission to pass objects through; issue 5 plugs the pure rules (`vc_admission.rules`)
in here, with the queue cache as their context.
"""

from __future__ import annotations

from vc_proto.kinds import KubeObject


class Admitter:
    def create(self, obj: KubeObject) -> KubeObject:
        return obj

    def update(self, obj: KubeObject, old: KubeObject) -> KubeObject:
        return obj

    def delete(self, old: KubeObject) -> None:
        return None
