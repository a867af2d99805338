"""NKeys, credentials files and the identities registry: what nats-py and the server will read."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import nkeys
import pytest

from vc_security.authdir import AuthDir
from vc_security.credentials import BadCredentials, ClientCredentials, decode_credentials, load_credentials
from vc_security.nkey import BadNkey, is_user_public_key, new_user_key, parse_user_seed
from vc_security.registry import BadRegistry, check_tenant, decode_registry


def test_a_new_user_key_is_what_the_nkeys_package_and_so_nats_py_reads() -> None:
    key = new_user_key()
    assert key.seed.startswith("SU") and key.public_key.startswith("U") and is_user_public_key(key.public_key)
    pair = nkeys.from_seed(bytearray(key.seed.encode()))
    assert pair.public_key.decode() == key.public_key
    assert pair.verify(b"nonce", pair.sign(b"nonce"))
    assert parse_user_seed(key.seed) == key
    assert key.seed not in repr(key)


@pytest.mark.parametrize(
    "text, why",
    [
        ("not base32!", "not base32"),
        ("SUAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "checksum"),
    ],
)
def test_a_bad_seed_says_why_without_repeating_it(text: str, why: str) -> None:
    with pytest.raises(BadNkey, match=why) as refused:
        parse_user_seed(text)
    assert text not in str(refused.value)


def test_an_account_seed_is_not_a_user_seed() -> None:
    from vc_security.nkey import _encode

    account_seed = _encode(bytes([18 << 3, 0]) + bytes(32))  # prefix 'S' then role 'A' (account), as nkeys.go
    assert account_seed.startswith("SA")
    with pytest.raises(BadNkey, match="user seed"):
        parse_user_seed(account_seed)


def test_credentials_round_trip_and_bad_files_name_the_field(tmp_path: Path) -> None:
    creds = ClientCredentials("alice", new_user_key(), b"-----BEGIN CERTIFICATE-----\nX\n-----END CERTIFICATE-----\n")
    assert decode_credentials(creds.encode(), source="f") == creds
    with pytest.raises(BadCredentials, match="f: identity"):
        decode_credentials(b'{"identity": "Alice!", "seed": "' + creds.key.seed.encode() + b'"}', source="f")
    with pytest.raises(BadCredentials, match="f: seed"):
        decode_credentials(b'{"identity": "alice", "seed": "SUxyz"}', source="f")
    with pytest.raises(BadCredentials, match="not a Tephra credentials file"):
        decode_credentials(b'{"identity": "alice"}', source="f")
    with pytest.raises(BadCredentials, match="nope"):
        load_credentials(tmp_path / "nope")
    # A tenant's file names its namespaces; each must be one, and there are 1 to 256 of them.
    tenant = ClientCredentials("alice", new_user_key(), namespaces=frozenset({"team-a", "team-c"}))
    assert decode_credentials(tenant.encode(), source="f") == tenant
    assert b'"namespaces"' not in creds.encode()
    seed = creds.key.seed
    too_many = json.dumps([f"n{i}" for i in range(257)])
    for namespaces, rule in (('["Team A"]', "DNS label"), ("[]", "1 to 256"), (too_many, "1 to 256")):
        body = f'{{"identity": "alice", "seed": "{seed}", "namespaces": {namespaces}}}'
        with pytest.raises(BadCredentials, match=f"f: namespaces: .*{rule}"):
            decode_credentials(body.encode(), source="f")


def test_the_auth_directory_holds_private_files_and_makes_only_what_is_missing(tmp_path: Path) -> None:
    auth = AuthDir(tmp_path / "auth")
    auth.ensure()
    assert stat.S_IMODE(auth.root.stat().st_mode) == 0o700
    assert all(stat.S_IMODE(f.stat().st_mode) == 0o600 for f in auth.root.iterdir())
    before = {f.name: f.read_bytes() for f in auth.root.iterdir()}
    auth.ensure()
    assert {f.name: f.read_bytes() for f in auth.root.iterdir()} == before
    auth.creds_path("scheduler").unlink()  # rotation: delete it, the next start makes a new one
    auth.ensure()
    assert auth.creds_path("scheduler").read_bytes() != before["scheduler.creds"]
    config = auth.server_config()
    assert (
        auth.credentials("scheduler").key.public_key in config and auth.credentials("scheduler").key.seed not in config
    )


def test_tenants_are_bounded_and_cannot_take_a_services_name(tmp_path: Path) -> None:
    for name, namespaces, why in (
        ("scheduler", ["a"], "reserved"),
        ("admin", ["a"], "reserved"),
        ("Bob", ["a"], "DNS label"),
        ("bob", [], "at least one"),
        ("bob", ["Team"], "namespace 'Team'"),
        ("bob", ["a"] * 300, "at most 256"),
    ):
        with pytest.raises(ValueError, match=why):
            check_tenant(name, namespaces)
    auth = AuthDir(tmp_path / "auth")
    auth.ensure()
    auth.add_tenant("bob", ["team-b"])
    with pytest.raises(ValueError, match="exists"):
        auth.add_tenant("bob", ["team-c"])
    assert auth.people()["bob"].namespaces == frozenset({"team-b"})
    auth.remove_tenant("bob")
    assert "bob" not in auth.people()


def test_a_registry_that_breaks_a_rule_is_refused_whole() -> None:
    with pytest.raises(BadRegistry, match=r"identities\.scheduler"):
        decode_registry(b'{"identities": {"scheduler": {"role": "tenant", "namespaces": ["a"]}}}', source="r")
    with pytest.raises(BadRegistry, match="r:"):
        decode_registry(b'{"identities": {"x": {"role": "root"}}}', source="r")
