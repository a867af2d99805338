"""Apiserver answers mapped to the store port's errors: a 404 that names no object says the path is not
served (a custom resource's endpoints warming up after an apiserver restart), which is temporary, not
"the object does not exist" (a create would be refused for good and a read taken as a delete)."""

from __future__ import annotations

from vc_core.errors import AlreadyExists, Conflict, NotFound, TemporaryError
from vc_kube.client import KubeApiError, map_error


def _mapped(status: int, body: dict[str, object]) -> Exception:
    return map_error(KubeApiError(status, body), "Job", "ns/j")


def test_a_404_naming_the_object_is_not_found() -> None:
    body = {"reason": "NotFound", "message": 'jobs.batch.volcano.sh "j" not found', "details": {"name": "j"}}
    assert isinstance(_mapped(404, body), NotFound)


def test_a_404_for_a_path_not_served_is_temporary() -> None:
    body = {"reason": "NotFound", "message": "the server could not find the requested resource", "details": {}}
    error = _mapped(404, body)
    assert isinstance(error, TemporaryError) and not isinstance(error, NotFound)
    assert "does not serve Job" in str(error)
    assert isinstance(_mapped(404, {"message": "404 page not found"}), TemporaryError)


def test_conflicts_keep_their_meaning() -> None:
    assert isinstance(_mapped(409, {"reason": "AlreadyExists", "details": {"name": "j"}}), AlreadyExists)
    assert isinstance(_mapped(409, {"reason": "Conflict"}), Conflict)
    assert isinstance(_mapped(503, {"message": "etcd leader changed"}), TemporaryError)
