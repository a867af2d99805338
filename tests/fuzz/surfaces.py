"""The hostile inputs of each surface, as hypothesis strategies of what is actually sent (bytes, and where).

Every surface mixes near-valid documents (a valid base with a few mutations), exactly valid ones (good
input is part of the mix: it must still be served), oversized ones and plain garbage.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from hypothesis import strategies as st

from tests.fuzz.corpus import (
    ALL_OBJECTS,
    BY_KIND,
    CONTROL,
    DELAYED_ACTION,
    EVENT,
    LEASE,
    LEDGER_RECORD,
    SHARD_AWAY,
    SHARD_SUMS,
    Doc,
    fresh,
)
from tests.fuzz.strategies import ODD_STRINGS, QUANTITIES, encode, garbage, mutated, near_valid, oversized
from vc_cli.documents import MAX_FILE_BYTES
from vc_proto import subjects
from vc_proto.kinds import KINDS

KEYS: Final = 8  # fuzzed values overwrite a few keys per bucket: the live set stays small however long the run
NAMESPACE: Final = "fuzz"

_ascii = st.booleans()


@dataclass(frozen=True)
class Lazy:
    """A big input kept as its document until it is sent (thousands of them drawn up front would not fit
    in memory as bytes); `prefix` bytes of comment go before it (for files)."""

    doc: object
    prefix: int = 0

    def __bytes__(self) -> bytes:
        return b"#" * self.prefix + (b"\n" if self.prefix else b"") + encode(self.doc)


Payload = bytes | Lazy


def materialize(payload: Payload) -> bytes:
    return payload if isinstance(payload, bytes) else bytes(payload)


def rarely(
    rare: st.SearchStrategy[Payload], otherwise: st.SearchStrategy[Payload], one_in: int = 25
) -> st.SearchStrategy[Payload]:
    """`rare` once in `one_in` draws: the big inputs cost seconds each to send and check."""
    return st.integers(0, one_in - 1).flatmap(lambda i: rare if i == one_in - 1 else otherwise)


_objects = near_valid(ALL_OBJECTS)


def _encoded(docs: st.SearchStrategy[object]) -> st.SearchStrategy[bytes]:
    return st.tuples(docs, _ascii).map(lambda t: encode(t[0], ascii_only=t[1]))


# -- admission's write API (vc.rpc.admission.write) ---------------------------------------------------------

_OPERATIONS = st.sampled_from(("create", "create", "apply", "apply", "update", "delete"))
_ENVELOPES: Final[list[Doc]] = [{"operation": "create", "object": doc} for doc in ALL_OBJECTS] + [
    {"operation": "delete", "kind": "Job", "namespace": NAMESPACE, "name": "fz-gang"},
    {"operation": "update", "object": BY_KIND["Queue"][0], "resourceVersion": "1", "uid": "u-1", "user": "someone"},
]


def _request(t: tuple[Doc, str]) -> Doc:
    return {"operation": t[1], "object": t[0]}


def _delete(t: tuple[str, str, str]) -> Doc:
    return {"operation": "delete", "kind": t[0], "namespace": t[1], "name": t[2]}


_names = st.one_of(st.sampled_from(ODD_STRINGS), st.text(max_size=16), st.sampled_from(("fz-gang", "fz-q", "fz-pod")))
write_request_docs = st.one_of(
    st.tuples(_objects, _OPERATIONS).map(_request),
    st.tuples(_objects, _OPERATIONS).map(_request),
    st.tuples(_objects, _OPERATIONS).map(_request),
    st.sampled_from(_ENVELOPES).flatmap(mutated),  # the envelope itself mutated
    st.tuples(st.sampled_from([*KINDS, "Nothing", ""]), st.sampled_from((NAMESPACE, "", "a.b", "_")), _names).map(
        _delete
    ),
)
_valid_requests = st.sampled_from(_ENVELOPES).map(lambda d: encode(d))
write_requests = st.one_of(
    _encoded(write_request_docs),
    _encoded(write_request_docs),
    _encoded(write_request_docs),
    rarely(st.tuples(oversized(ALL_OBJECTS), _OPERATIONS).map(_request).map(Lazy), garbage(_valid_requests)),
)


# -- admission's webhook (AdmissionReview over HTTPS) -------------------------------------------------------

WEBHOOK_ROUTES: Final[dict[str, str]] = {
    "/jobs/mutate": "Job",
    "/jobs/validate": "Job",
    "/queues/mutate": "Queue",
    "/queues/validate": "Queue",
    "/podgroups/mutate": "PodGroup",
    "/podgroups/validate": "PodGroup",
    "/pods/mutate": "Pod",
    "/pods/validate": "Pod",
    "/jobflows/validate": "JobFlow",
    "/jobtemplates/validate": "JobTemplate",
    "/cronjobs/mutate": "CronJob",
    "/cronjobs/validate": "CronJob",
    "/hypernodes/validate": "HyperNode",
    "/nowhere": "Job",
}
_REVIEW_OPS = st.sampled_from(("CREATE", "CREATE", "UPDATE", "DELETE", "CONNECT", ""))


def _review(route: str, obj: object, old: object, operation: str, uid: str) -> Doc:
    kind = WEBHOOK_ROUTES[route]
    group, _, version = KINDS[kind].api_version.rpartition("/")
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": group, "version": version, "kind": kind},
            "operation": operation,
            "namespace": NAMESPACE,
            "object": obj,
            "oldObject": old,
            "userInfo": {"username": "fuzz"},
        },
    }


@st.composite
def _reviews(draw: st.DrawFn) -> tuple[str, Doc]:
    route = draw(st.sampled_from(sorted(WEBHOOK_ROUTES)))
    bases = BY_KIND[WEBHOOK_ROUTES[route]]
    obj = draw(st.one_of(near_valid(bases), near_valid(bases), _objects, st.none()))
    old = draw(st.one_of(st.none(), near_valid(bases)))
    review = _review(route, obj, old, draw(_REVIEW_OPS), draw(st.uuids()).hex)
    if draw(st.integers(0, 3)) == 0:
        review = draw(mutated(review, max_ops=3))  # the review's own fields broken (uid, request, kinds)
    return route, review


def _valid_review(route: str) -> bytes:
    return encode(_review(route, fresh(BY_KIND[WEBHOOK_ROUTES[route]][0]), None, "CREATE", "u-1"))


webhook_posts = st.one_of(
    st.tuples(_reviews(), _ascii).map(lambda t: (t[0][0], encode(t[0][1], ascii_only=t[1]))),
    st.tuples(_reviews(), _ascii).map(lambda t: (t[0][0], encode(t[0][1], ascii_only=t[1]))),
    st.tuples(_reviews(), _ascii).map(lambda t: (t[0][0], encode(t[0][1], ascii_only=t[1]))),
    st.sampled_from(sorted(WEBHOOK_ROUTES)).flatmap(
        lambda route: rarely(
            oversized(ALL_OBJECTS).map(lambda doc: Lazy(_review(route, doc, None, "CREATE", "u-big"))),
            garbage(st.just(_valid_review(route))),
        ).map(lambda body: (route, body))
    ),
)


# -- the subjects the services subscribe to ------------------------------------------------------------------


@dataclass(frozen=True)
class Message:
    """One message on the bus: `request` expects an answer (core NATS), else a JetStream publish."""

    subject: str
    payload: Payload
    request: bool


_controls = st.one_of(
    _encoded(near_valid([CONTROL, {"node": "node-1", "ready": "false"}, {"node": "fz-node", "ready": True}])),
    garbage(st.just(encode(CONTROL))),
)
_events = st.one_of(_encoded(near_valid([EVENT])), garbage(st.just(encode(EVENT))))
_event_subjects = st.sampled_from(
    (
        subjects.event_subject("job", NAMESPACE, "fz-gang"),
        subjects.event_subject("pod", NAMESPACE, "fz-gang-nginx-0"),
        subjects.event_subject("queue", None, "fz-q"),
        subjects.event_subject("job", "default", "fuzz-good"),
    )
)
bus_messages = st.one_of(
    write_requests.map(lambda p: Message(subjects.ADMISSION_WRITE, p, True)),
    _controls.map(lambda p: Message(subjects.NODE_SIM_CONTROL, p, True)),
    st.tuples(_event_subjects, _events).map(lambda t: Message(t[0], t[1], False)),
)


# -- values written straight into the buckets -----------------------------------------------------------------

LEASE_GROUPS: Final = ("scheduler", "job-controller", "podgroup-controller", "queue-controller", "gc", "admission")
LEDGER_BUCKET: Final = "vc-sched-ledger"  # vc_scheduler.ledger_kv.BUCKET
DELAYS_BUCKET: Final = "vc-job-delays"  # vc_job_controller.delays.BUCKET


@dataclass(frozen=True)
class Bucket:
    name: str
    bases: tuple[Doc, ...]
    keys: tuple[str, ...]  # the keys fuzzed values go to


def _object_keys(kind: str) -> tuple[str, ...]:
    scope = NAMESPACE if KINDS[kind].namespaced else subjects.CLUSTER_SCOPE
    if kind == "Pod":  # a pod's key carries a shard (vc_proto.pod_shards)
        return tuple(subjects.pod_key(scope, i, f"fz-{i}") for i in range(KEYS))
    return tuple(f"{scope}.fz-{i}" for i in range(KEYS))


BUCKETS: Final[tuple[Bucket, ...]] = (
    *(Bucket(subjects.bucket(kind), tuple(BY_KIND[kind]), _object_keys(kind)) for kind in KINDS),
    Bucket(subjects.LEASES_BUCKET, (LEASE,), tuple(f"{g}.fz-{i}" for g in LEASE_GROUPS for i in range(2))),
    Bucket(LEDGER_BUCKET, (LEDGER_RECORD,), tuple(f"fz-node-{i}" for i in range(KEYS))),
    # (shard records under their keys, and under keys out of range: a reader refuses both)
    Bucket(LEDGER_BUCKET, (SHARD_SUMS, SHARD_AWAY), ("sums.1.default", "sums.64.default", "away.2.3", "away.2.99")),
    Bucket(DELAYS_BUCKET, (DELAYED_ACTION,), (*(f"{NAMESPACE}.fz-gang.fz-{i}" for i in range(KEYS)), "nonsense")),
)


@dataclass(frozen=True)
class Put:
    bucket: str
    key: str
    value: Payload


@st.composite
def _puts(draw: st.DrawFn) -> Put:
    bucket = draw(st.sampled_from(BUCKETS))
    key = draw(st.sampled_from(bucket.keys))
    bases = list(bucket.bases)
    value = draw(
        st.one_of(
            _encoded(near_valid(bases)),
            _encoded(near_valid(bases)),
            _encoded(near_valid(bases)),
            rarely(oversized(bases).map(Lazy), garbage(st.sampled_from(bases).map(lambda d: encode(d)))),
            _encoded(_objects),  # a valid object of another kind, or in another bucket
        )
    )
    return Put(bucket.name, key, value)


kv_puts = _puts()


# -- vcctl ----------------------------------------------------------------------------------------------------

ALIAS_BOMB: Final = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
    for p, c in zip("abcdefgh", "bcdefghi", strict=True)
)
_YAML_TRICKS: Final = (
    ALIAS_BOMB,
    "!!python/object/apply:os.system ['true']\n",
    "--- !!binary AAAA\n",
    "---\n" * 2000,
    "- - - - -\n",
    "a: b: c\n",
    "kind: Job\nmetadata: {name: x}\nspec: {tasks: *undefined}\n",
    "\t- tab\n",
    "%YAML 9.9\n---\na: 1\n",
    "? [a, b]\n: c\n",
    "kind: [Job]\n",
    "apiVersion: v1\nkind: Pod\n---\n\x00\n",
    "",
)
_texts = st.one_of(
    st.sampled_from(_YAML_TRICKS).map(str.encode),
    st.lists(_encoded(_objects), min_size=1, max_size=3).map(lambda docs: b"\n---\n".join(docs)),
    _encoded(_objects),
    _encoded(_objects),
    garbage(st.sampled_from(ALL_OBJECTS).map(lambda d: encode(d))),
)
_big = st.sampled_from(ALL_OBJECTS).map(lambda d: Lazy(d, prefix=MAX_FILE_BYTES))  # over vcctl's file limit
files = rarely(_big, _texts)

_values = st.one_of(
    st.sampled_from(ODD_STRINGS),
    st.sampled_from(QUANTITIES),
    st.text(max_size=20),
    st.integers(-(2**64), 2**64).map(str),
)
_pairs = st.lists(
    st.tuples(st.sampled_from(("cpu", "memory", "nvidia.com/gpu", "pods", "", "a=b")), _values), max_size=4
).map(lambda kv: ",".join(f"{k}={v}" for k, v in kv))
_outputs = st.one_of(
    st.sampled_from(
        (
            "wide",
            "json",
            "yaml",
            "name",
            "jsonpath={.items[*].metadata.name}",
            "jsonpath={",
            "jsonpath={.a[",
            "jsonpath={range .items[*]}",
            "xml",
        )
    ),
    _values,
)
FILE_ARG: Final = "@FILE"  # replaced by the path of the fuzzed file


def _argv(*parts: st.SearchStrategy[list[str]]) -> st.SearchStrategy[list[str]]:
    return st.tuples(*parts).map(lambda ps: [a for p in ps for a in p])


def _flag(flag: str, values: st.SearchStrategy[str] = _values) -> st.SearchStrategy[list[str]]:
    return st.one_of(st.just([]), values.map(lambda v: [flag, v]))


_n = st.just(["-n", NAMESPACE])
argvs = st.one_of(
    st.just(["apply", "-f", FILE_ARG]),
    st.just(["apply", "-f", FILE_ARG]),
    st.just(["apply", "-f", FILE_ARG]),
    st.just(["delete", "-f", FILE_ARG]),
    st.just(["job", "run", "-f", FILE_ARG]),
    _argv(
        st.just(["job", "run"]),
        _n,
        _flag("-N"),
        _flag("-r"),
        _flag("-m"),
        _flag("-R", _pairs),
        _flag("-L", _pairs),
        _flag("-i"),
        _flag("-S"),
    ),
    _argv(
        st.just(["queue", "create"]),
        _flag("-n"),
        _flag("-w"),
        _flag("-S"),
        _flag("--capability", _pairs),
        _flag("--deserved", _pairs),
        _flag("--guarantee", _pairs),
        _flag("--parent"),
        _flag("--allowed-namespaces"),
    ),
    _argv(
        st.sampled_from((["job", "list"], ["queue", "list"], ["pod", "list"], ["podgroup", "list"], ["node", "list"])),
        _flag("-o", _outputs),
        _flag("-l"),
        _flag("-n"),
    ),
    _argv(
        st.sampled_from(
            (
                ["job", "view"],
                ["job", "describe"],
                ["job", "delete"],
                ["job", "suspend"],
                ["job", "resume"],
                ["job", "history"],
            )
        ),
        _n,
        _values.map(lambda v: ["-N", v]),
        _flag("-o", _outputs),
    ),
    _argv(
        st.sampled_from(
            (["queue", "get"], ["queue", "describe"], ["podgroup", "get"], ["describe", "job"], ["describe", "queue"])
        ),
        _values.map(lambda v: [v]),
        _flag("-o", _outputs),
    ),
    _argv(st.sampled_from((["node", "ready"], ["node", "not-ready"])), _values.map(lambda v: [v])),
    st.lists(_values, max_size=5),  # anything at all
)


def argv_safe(args: list[str]) -> list[str]:
    """What an OS argv can carry: no NUL, and no lone surrogates (a shell passes bytes)."""
    return [a.replace("\x00", "").encode("utf-8", "replace").decode("utf-8") for a in args]
