"""The webhook certificate's rotation policy (vc_admission.certs.plan), with time passed in."""

from __future__ import annotations

import base64
import datetime

import pytest
from cryptography import x509

from vc_admission import certs

NAMES = ("tephra-admission.tephra-system.svc",)
T0 = datetime.datetime(2030, 1, 1, tzinfo=datetime.UTC)
DAY = datetime.timedelta(days=1)
POLICY = certs.Validity(ca=datetime.timedelta(days=300), leaf=datetime.timedelta(days=30))


def plan(current: certs.ServingCert | None, now: datetime.datetime, trusted: list[bytes] | None = None) -> certs.Plan:
    bundles = trusted if trusted is not None else ([current.ca_pem] if current else [])
    return certs.plan(current, dns_names=NAMES, now=now, validity=POLICY, trusted_bundles=bundles)


def leaf(cert: certs.ServingCert) -> x509.Certificate:
    return x509.load_pem_x509_certificate(cert.cert_pem)


def cas(cert: certs.ServingCert) -> list[x509.Certificate]:
    return x509.load_pem_x509_certificates(cert.ca_pem)


def issued_by(cert: certs.ServingCert, ca: x509.Certificate) -> bool:
    try:
        leaf(cert).verify_directly_issued_by(ca)
    except Exception:
        return False
    return True


def test_nothing_yet_gives_a_ca_and_a_leaf_for_the_names_that_the_ca_signed() -> None:
    decided = plan(None, T0)
    assert decided.cert is not None and decided.reason == "no certificate yet"
    cert = decided.cert
    assert issued_by(cert, cas(cert)[0])
    alt = leaf(cert).extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert alt.get_values_for_type(x509.DNSName) == list(NAMES)
    assert leaf(cert).not_valid_after_utc == T0 + POLICY.leaf
    assert cas(cert)[0].not_valid_after_utc == T0 + POLICY.ca
    assert certs.parse(cert).leaf.serial_number == leaf(cert).serial_number


def test_a_fresh_certificate_is_kept() -> None:
    cert = plan(None, T0).cert
    assert plan(cert, T0 + 19 * DAY) == certs.Plan("", None)


def test_the_leaf_is_renewed_from_the_same_ca_once_less_than_a_third_of_its_life_is_left() -> None:
    cert = plan(None, T0).cert
    assert cert is not None
    decided = plan(cert, T0 + 21 * DAY)  # 9 of 30 days left
    assert decided.reason == "certificate renewal" and decided.cert is not None
    renewed = decided.cert
    assert renewed.ca_pem == cert.ca_pem and renewed.ca_key_pem == cert.ca_key_pem  # webhooks need no change
    assert leaf(renewed).serial_number != leaf(cert).serial_number
    assert issued_by(renewed, cas(cert)[0])
    assert leaf(renewed).not_valid_after_utc == T0 + 21 * DAY + POLICY.leaf


def test_a_leaf_never_outlives_its_ca() -> None:
    cert = plan(None, T0).cert
    assert cert is not None
    ca_end = cas(cert)[0].not_valid_after_utc
    later = certs.Validity(ca=POLICY.ca, leaf=datetime.timedelta(days=290))
    renewed = certs.plan(cert, dns_names=NAMES, now=T0 + 25 * DAY, validity=later, trusted_bundles=[cert.ca_pem])
    assert renewed.reason == "certificate renewal" and renewed.cert is not None
    assert leaf(renewed.cert).not_valid_after_utc == ca_end  # not T0 + 25 + 290 days


def test_the_ca_is_renewed_in_two_phases_so_the_apiserver_always_trusts_what_is_served() -> None:
    first = plan(None, T0).cert
    assert first is not None
    # Keep the leaf young so only the CA is due: 201 days in, the CA (300 days) has < 1/3 left.
    young = plan(first, T0 + 199 * DAY, [first.ca_pem])
    young = young.cert or first
    phase1 = plan(young, T0 + 201 * DAY, [young.ca_pem])
    assert phase1.reason.startswith("CA renewal, phase 1") and phase1.cert is not None
    bundle = cas(phase1.cert)
    assert len(bundle) == 2 and bundle[1] == cas(young)[0]  # new CA in front, old one still trusted
    assert phase1.cert.cert_pem == young.cert_pem  # the served leaf stays until the webhooks trust the new CA
    assert not issued_by(phase1.cert, bundle[0])
    # The webhook configurations do not have the new bundle yet: phase 2 waits.
    assert plan(phase1.cert, T0 + 201 * DAY, [young.ca_pem]) == certs.Plan("", None)
    # They do: a leaf from the new CA; the old CA stays trusted (another replica may still serve its leaf).
    phase2 = plan(phase1.cert, T0 + 201 * DAY, [phase1.cert.ca_pem, phase1.cert.ca_pem])
    assert phase2.reason.startswith("CA renewal, phase 2") and phase2.cert is not None
    assert issued_by(phase2.cert, bundle[0]) and phase2.cert.ca_pem == phase1.cert.ca_pem
    assert plan(phase2.cert, T0 + 202 * DAY) == certs.Plan("", None)
    # Once the old CA expired it leaves the bundle.
    old_end = bundle[1].not_valid_after_utc
    pruned = plan(phase2.cert, old_end + DAY)
    assert pruned.cert is not None and cas(pruned.cert) == [bundle[0]]


def test_an_expired_leaf_under_a_due_ca_starts_over_at_once() -> None:
    cert = plan(None, T0).cert
    assert cert is not None
    decided = plan(cert, T0 + 250 * DAY)  # leaf dead for 220 days, CA due
    assert decided.cert is not None and "expired" in decided.reason
    assert len(cas(decided.cert)) == 1 and issued_by(decided.cert, cas(decided.cert)[0])


def test_a_certificate_for_other_names_is_replaced() -> None:
    other = certs.plan(None, dns_names=("other.svc",), now=T0, validity=POLICY, trusted_bundles=[]).cert
    decided = plan(other, T0)
    assert decided.cert is not None and "not ['tephra-admission.tephra-system.svc']" in decided.reason


def test_secret_data_round_trips_and_bad_data_names_the_key() -> None:
    cert = plan(None, T0).cert
    assert cert is not None
    assert certs.from_secret_data(cert.secret_data()) == cert
    data = cert.secret_data()
    with pytest.raises(certs.UnreadableCert, match=r"data\.ca\.key: missing"):
        certs.from_secret_data({k: v for k, v in data.items() if k != "ca.key"})
    with pytest.raises(certs.UnreadableCert, match=r"data\.tls\.crt: not base64"):
        certs.from_secret_data({**data, "tls.crt": "***"})


@pytest.mark.parametrize(
    ("mangle", "why"),
    [
        (lambda c, o: certs.ServingCert(c.ca_pem, c.cert_pem, o.key_pem, c.ca_key_pem), "tls.key: does not belong"),
        (lambda c, o: certs.ServingCert(c.ca_pem, c.cert_pem, c.key_pem, o.ca_key_pem), "ca.key: does not belong"),
        (lambda c, o: certs.ServingCert(o.ca_pem, c.cert_pem, c.key_pem, o.ca_key_pem), "not signed by any CA"),
        (lambda c, o: certs.ServingCert(b"junk", c.cert_pem, c.key_pem, c.ca_key_pem), "ca.crt: not PEM"),
    ],
)
def test_parts_that_do_not_fit_together_are_unreadable_and_replaced(mangle, why) -> None:  # type: ignore[no-untyped-def]
    cert, other = plan(None, T0).cert, plan(None, T0).cert
    assert cert is not None and other is not None
    broken = mangle(cert, other)
    with pytest.raises(certs.UnreadableCert, match=why):
        certs.parse(broken)
    decided = plan(broken, T0)
    assert decided.cert is not None and decided.reason.startswith("unreadable")


def test_generate_keeps_its_development_shape() -> None:
    cert = certs.generate(list(NAMES), days=2, now=T0)
    assert leaf(cert).not_valid_after_utc == T0 + 2 * DAY
    assert base64.b64decode(cert.secret_data()["ca.crt"]) == cert.ca_pem
