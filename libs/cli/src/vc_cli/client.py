"""vcctl's connection to a running Tephra: reads from the shared store, writes through admission.

Who vcctl is on NATS: the credentials file `--creds`/`VC_NATS__CREDS` names, else the `admin`
credentials of the `vcctl up` data directory it finds (`VC_DATA`, or `.data/` here or in a parent
directory), with that directory's CA. Writes are requests on `vc.rpc.admission.write.<identity>`,
the only write subject the server lets that identity use.

With `--backend kube` vcctl is a Kubernetes client instead: reads and writes go to the apiserver
with the user's own kubeconfig, so Kubernetes RBAC and Tephra's admission webhooks judge the user
(docs/install.md); NATS (for the history, and node-sim's control) is used only when it is reachable.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import msgspec
import nats
import nats.errors
from nats.aio.client import Client
from nats.protocol.parser import PERMISSIONS_ERR

from vc_bus.brokered import use_admission_consumers
from vc_bus.connection import PlainTextRefused, check_tls, client_options
from vc_bus.decoding import UNDECODABLE, describe
from vc_bus.store import NatsStore
from vc_cli import running
from vc_cli.errors import CliError
from vc_cli.tenancy import ScopedStore, describe_refusal
from vc_core.errors import NotFound
from vc_core.store import ObjectStore
from vc_proto import api, codec, subjects
from vc_proto.kinds import KINDS, KubeObject
from vc_security.credentials import CA_ENV, CREDS_ENV, BadCredentials, ClientCredentials, load_credentials
from vc_security.identities import ADMIN

_reply = msgspec.json.Decoder(api.WriteReply)
WRITE_TIMEOUT_S = 15.0
DATA_ENV = "VC_DATA"


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where and as whom vcctl talks to Tephra (the global flags, resolved)."""

    server: str
    creds: str | None = None
    ca: str | None = None
    backend: str = "nats"
    kubeconfig: str | None = None


class Writer(Protocol):
    async def write(self, request: api.WriteRequest) -> KubeObject | None: ...


class Refusals:
    """The server's permission refusals on vcctl's connection. The first one ends the command: a refused
    request would wait out its timeout, and a refused watch would retry for ever."""

    def __init__(self) -> None:
        self.first: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    def note(self, error: Exception) -> None:
        if PERMISSIONS_ERR in str(error).lower() and not self.first.done():
            self.first.set_result(str(error))


class Tephra:
    def __init__(
        self,
        nc: Client | None,
        store: ObjectStore | None = None,
        writer: Writer | None = None,
        *,
        credentials: ClientCredentials | None = None,
        refusals: Refusals | None = None,
    ) -> None:
        """`Tephra(nc)`: the NATS store, and writes through admission as `admin`."""
        if nc is None and (store is None or writer is None):
            raise ValueError("without NATS, a store and a writer are needed")
        self._nc = nc
        self.store = store if store is not None else NatsStore(nc)  # type: ignore[arg-type]
        self._writer = writer if writer is not None else AdmissionWriter(nc, ADMIN)  # type: ignore[arg-type]
        self._credentials = credentials
        self._refusals = refusals

    async def guard(self, work: Awaitable[int]) -> int:
        """Run a command; when the server refuses one of its requests first, stop it and say what was
        refused (the server is the judge: a tenant's credentials name its namespaces only as a hint)."""
        task: asyncio.Future[Any] = asyncio.ensure_future(work)
        if self._refusals is None:
            return await task
        await asyncio.wait((task, self._refusals.first), return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            return task.result()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        identity = self._credentials.identity if self._credentials else "(anonymous)"
        namespaces = self._credentials.namespaces if self._credentials else None
        raise CliError(describe_refusal(self._refusals.first.result(), identity, namespaces))

    @property
    def namespaces(self) -> frozenset[str] | None:
        """The namespaces a tenant reads (its credentials say so); None: all of them."""
        return self._credentials.namespaces if self._credentials else None

    @property
    def has_nats(self) -> bool:
        return self._nc is not None

    @property
    def nc(self) -> Client:
        if self._nc is None:
            raise CliError("this command reads Tephra's NATS (the job history, node-sim): give --server and --creds")
        return self._nc

    async def write(self, request: api.WriteRequest) -> KubeObject | None:
        data = msgspec.json.encode(request)
        if len(data) > api.MAX_REQUEST_BYTES:
            limit = api.MAX_REQUEST_BYTES
            raise CliError(f"the request is {len(data):,} bytes; the limit is {limit:,} (3 MiB)", code=2)
        return await self._writer.write(request)

    async def submit(
        self, write: type[api.ObjectWrite], document: dict[str, Any], *, namespace: str | None = None
    ) -> KubeObject:
        """Send `document` as a write of that type (api.Create, api.Update or api.Apply)."""
        try:
            raw = msgspec.Raw(msgspec.json.encode(document))
        except (msgspec.EncodeError, OverflowError, TypeError, ValueError) as exc:  # e.g. an integer past 64 bits
            raise CliError(f"the document cannot be sent as JSON: {describe(exc)}", code=2) from exc
        obj = await self.write(write(object=raw, namespace=namespace))
        assert obj is not None
        return obj


class AdmissionWriter:
    """Writes as requests to admission on the caller's own write subject."""

    def __init__(self, nc: Client, identity: str) -> None:
        self._nc = nc
        self._subject = subjects.admission_write_subject(identity)

    async def write(self, request: api.WriteRequest) -> KubeObject | None:
        try:
            msg = await self._nc.request(self._subject, msgspec.json.encode(request), timeout=WRITE_TIMEOUT_S)
        except nats.errors.NoRespondersError as exc:
            raise CliError("no admission service is running (start Tephra with `vcctl up` or `make run`)") from exc
        except nats.errors.TimeoutError as exc:
            raise CliError(
                "admission did not answer within 15 s; the request may or may not have been applied"
            ) from exc
        try:
            reply = _reply.decode(msg.data)
            if reply.error is not None:
                raise CliError(format_error(reply.error))
            return None if api.is_absent(reply.object) else codec.decode_object(bytes(reply.object))
        except UNDECODABLE as exc:  # whoever answered on that subject did not answer as admission does
            raise CliError(f"the answer to the write is not readable: {describe(exc)}") from exc


class KubeWriter:
    """Writes straight to the apiserver with the user's kubeconfig: RBAC and the webhooks judge them."""

    def __init__(self, store: ObjectStore) -> None:
        self._store = store

    async def write(self, request: api.WriteRequest) -> KubeObject | None:
        match request:
            case api.Delete():
                await self._delete(request)
                return None
            case api.Create():
                return await self._store.create(self._object_of(request))
            case api.Update() | api.Apply():
                obj = self._object_of(request)
                try:
                    current = await self._store.get(type(obj), obj.metadata.namespace, obj.metadata.name or "")
                except NotFound:
                    if isinstance(request, api.Apply):
                        return await self._store.create(obj)
                    raise
                meta = msgspec.structs.replace(
                    obj.metadata,
                    uid=current.metadata.uid,
                    resource_version=obj.metadata.resource_version or current.metadata.resource_version,
                )
                return await self._store.update(msgspec.structs.replace(obj, metadata=meta))

    async def _delete(self, request: api.Delete) -> None:
        row = KINDS.get(request.kind or "")
        if row is None or not request.name:
            raise CliError("delete needs a supported kind and a name", code=2)
        namespace = (request.namespace or "default") if row.namespaced else None
        await self._store.delete(
            row.type, namespace, request.name, resource_version=request.resource_version, uid=request.uid
        )

    @staticmethod
    def _object_of(request: api.ObjectWrite) -> KubeObject:
        try:
            obj = codec.decode_object(bytes(request.object))
        except UNDECODABLE as exc:
            raise CliError(f"the object is not one Tephra knows: {describe(exc)}", code=2) from exc
        return _with_namespace(obj, request.namespace)


def _with_namespace(obj: KubeObject, namespace: str | None) -> KubeObject:
    if not KINDS[type(obj).__name__].namespaced:
        return obj
    if namespace and obj.metadata.namespace and obj.metadata.namespace != namespace:
        raise CliError(f"the object is in namespace {obj.metadata.namespace!r} but -n says {namespace!r}", code=2)
    ns = obj.metadata.namespace or namespace or "default"
    return msgspec.structs.replace(obj, metadata=msgspec.structs.replace(obj.metadata, namespace=ns))


def format_error(error: api.ApiError) -> str:
    lines = [f"Error from server ({error.code}): {error.message}"]
    for cause in error.causes or []:
        if cause.field and cause.field not in error.message:
            lines.append(f"  {cause.field}: {cause.message} [{cause.rule}]")
    return "\n".join(lines)


def find_data_auth(server: str, start: Path | None = None) -> Path | None:
    """The auth directory of the `vcctl up` data directory vcctl should act as admin of:
    `$VC_DATA/auth`, else that of the `vcctl up` serving `server` on this machine, else `.data/auth`
    in the working directory or the nearest parent that has one."""
    if os.environ.get(DATA_ENV):
        auth = Path(os.environ[DATA_ENV]) / "auth"
        return auth if auth.is_dir() else None
    data = running.data_for(server)
    if data is not None and (data / "auth" / f"{ADMIN}.creds").is_file():
        return data / "auth"
    here = (start or Path.cwd()).resolve()
    for directory in (here, *here.parents):
        auth = directory / ".data" / "auth"
        if (auth / f"{ADMIN}.creds").is_file():
            return auth
    return None


def resolve_credentials(endpoint: Endpoint) -> ClientCredentials | None:
    """--creds/--ca (or VC_NATS__CREDS/VC_NATS__CA), else the admin of the data directory found (with
    its own CA); None: anonymous (refused by a closed bus)."""
    creds, ca = endpoint.creds or os.environ.get(CREDS_ENV), endpoint.ca or os.environ.get(CA_ENV)
    if not creds:
        auth = find_data_auth(endpoint.server)
        if auth is None:
            return None
        creds, ca = str(auth / f"{ADMIN}.creds"), str(auth / "ca.pem")
    try:
        return load_credentials(creds, ca_path=ca)
    except BadCredentials as exc:
        raise CliError(f"--creds: {exc}", code=2) from None


def anonymous_ca(endpoint: Endpoint) -> bytes | None:
    """The CA an anonymous vcctl checks the server's certificate against (--ca or VC_NATS__CA)."""
    path = endpoint.ca or os.environ.get(CA_ENV)
    if not path:
        return None
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise CliError(f"--ca {path}: {exc.strerror or exc}", code=2) from None


async def open_nats(
    server: str,
    credentials: ClientCredentials | None,
    *,
    ca_pem: bytes | None = None,
    name: str = "vcctl",
    refusals: Refusals | None = None,
) -> Client:
    """Fail fast with a clear message when nothing listens at `server` or it refuses who we are."""

    async def quiet(error: Exception) -> None:
        """nats-py prints a traceback per failed attempt by default; vcctl says it once, plainly."""
        if refusals is not None:
            refusals.note(error)

    try:
        nc = await nats.connect(
            servers=server.split(","),
            name=name,
            connect_timeout=3,
            max_reconnect_attempts=1,
            allow_reconnect=False,
            error_cb=quiet,
            **client_options(credentials, ca_pem=ca_pem),
        )
    except (OSError, nats.errors.NoServersError, TimeoutError) as exc:
        raise CliError(
            f"cannot reach Tephra at {server}: is it running? (`vcctl up` or `make run`; or set --server/VC_SERVER)"
        ) from exc
    except nats.errors.Error as exc:
        who = f"identity {credentials.identity!r}" if credentials else "an anonymous client (no --creds)"
        raise CliError(f"NATS at {server} refused {who}: {exc} (see docs/tenancy.md for credentials)") from exc
    try:
        check_tls(nc, server)
    except PlainTextRefused as exc:
        await nc.close()
        raise CliError(str(exc)) from exc
    return nc


@contextlib.asynccontextmanager
async def connect(endpoint: Endpoint | str) -> AsyncIterator[Tephra]:
    endpoint = Endpoint(endpoint) if isinstance(endpoint, str) else endpoint
    if endpoint.backend == "kube":
        async with _connect_kube(endpoint) as tephra:
            yield tephra
        return
    credentials = resolve_credentials(endpoint)
    refusals = Refusals()
    ca = None if credentials else anonymous_ca(endpoint)
    nc = await open_nats(endpoint.server, credentials, ca_pem=ca, refusals=refusals)
    try:
        writer = AdmissionWriter(nc, credentials.identity if credentials else ADMIN)
        # Direct gets: the key is in the subject, the only get a tenant's permissions allow.
        store: ObjectStore = NatsStore(nc, direct_gets=True)
        if credentials is not None and credentials.namespaces is not None:
            store = ScopedStore(store, credentials.namespaces)
            # A tenant may not create consumers: admission makes those its reads need (vc_bus.brokered).
            use_admission_consumers(nc, credentials.identity, on_forbidden=refusals.note)
        yield Tephra(nc, store, writer, credentials=credentials, refusals=refusals)
    finally:
        with contextlib.suppress(Exception):
            await nc.drain()


@contextlib.asynccontextmanager
async def _connect_kube(endpoint: Endpoint) -> AsyncIterator[Tephra]:
    from vc_kube.client import KubeClient
    from vc_kube.store import KubeStore

    kubeconfig = endpoint.kubeconfig or os.environ.get("KUBECONFIG")
    try:
        kube = await KubeClient.connect(kubeconfig)
    except Exception as exc:  # a missing or unreadable kubeconfig: its reason, once
        raise CliError(f"--kubeconfig {kubeconfig or '(default)'}: {exc}", code=2) from exc
    nc: Client | None = None
    credentials = resolve_credentials(endpoint)
    if credentials is not None or endpoint.creds:
        with contextlib.suppress(CliError):  # NATS is optional here: only the history needs it
            nc = await open_nats(endpoint.server, credentials)
    try:
        async with kube:
            store = KubeStore(kube, auto_namespaces=False)
            yield Tephra(nc, store, KubeWriter(store))
    finally:
        if nc is not None:
            with contextlib.suppress(Exception):
                await nc.drain()
