"""The generated JSON Schemas and CRDs match the types (run `make schemas` after changing proto/)."""

from __future__ import annotations

import yaml

from vc_proto import schemagen


def test_generated_files_are_current() -> None:
    stale = [str(p.relative_to(schemagen.ROOT)) for p in schemagen.stale()]
    assert stale == [], f"run `make schemas`: {stale}"


def test_crds_are_structural_and_keep_volcano_names() -> None:
    job = yaml.safe_load(schemagen.crds()["batch.volcano.sh_jobs.yaml"])
    version = job["spec"]["versions"][0]
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    assert {"minAvailable", "tasks", "policies", "plugins", "ttlSecondsAfterFinished", "networkTopology"} <= set(spec)
    template = spec["tasks"]["items"]["properties"]["template"]["properties"]["spec"]["properties"]
    assert template["affinity"]["x-kubernetes-preserve-unknown-fields"] is True
    assert version["subresources"] == {"status": {}}
    assert job["spec"]["names"]["shortNames"] == ["vcjob", "vj"]
