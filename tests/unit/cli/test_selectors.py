"""`-l/--selector`: label selectors parsed and matched as kubectl does (k8s.io/apimachinery labels.Parse)."""

from __future__ import annotations

import pytest

from vc_cli.selectors import MAX_SELECTOR_CHARS, SelectorError, parse_selector

WEB = {"app": "web", "tier": "frontend", "env": "prod", "replicas": "3"}
CACHE = {"app": "cache", "env": "dev"}
BARE: dict[str, str] = {}


@pytest.mark.parametrize(
    ("text", "web", "cache", "bare"),
    [
        ("", True, True, True),
        ("app=web", True, False, False),
        ("app==web", True, False, False),
        ("app = web", True, False, False),
        ("app!=web", False, True, True),  # != matches objects without the key, as in Kubernetes
        ("tier", True, False, False),
        ("!tier", False, True, True),
        ("env in (prod, staging)", True, False, False),
        ("env in (dev)", False, True, False),
        ("env notin (prod)", False, True, True),
        ("app=web,env=prod", True, False, False),
        ("app,!tier", False, True, False),
        ("replicas>2", True, False, False),
        ("replicas<3", False, False, False),
        ("example.com/team=ml", False, False, False),
        ("app=", False, False, False),  # an empty value: the key with the value ""
    ],
)
def test_matching(text: str, web: bool, cache: bool, bare: bool) -> None:
    selector = parse_selector(text)
    assert (selector.matches(WEB), selector.matches(CACHE), selector.matches(BARE)) == (web, cache, bare)
    assert selector.matches(None) == bare


def test_an_empty_value_matches_only_an_empty_label() -> None:
    assert parse_selector("app=").matches({"app": ""})
    assert not parse_selector("app=").matches({"app": "x"})


def test_it_prints_back_in_kubectl_form() -> None:
    assert str(parse_selector("app = web , env in (a,b),!x, y")) == "app=web,env in (a,b),!x,y"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("app=web,", "expected a label key, got the end"),
        ("=web", "expected a label key"),
        ("app in prod", "expected '('"),
        ("app in ()", "needs at least one value"),
        ("app in (a,)", "a value is missing"),
        ("app in (a", "missing ')'"),
        ("app in (a b)", "expected ',' or ')'"),
        ("app=web env=prod", "unexpected 'env'"),
        ("app>x", "needs an integer"),
        ("!app=web", "takes no operator"),
        ("-bad=x", "label key '-bad'"),
        ("Bad_Prefix/app=x", "prefix must be a DNS subdomain"),
        ("app=" + "v" * 64, "at most 63 characters"),
        ("app=b@d", "label value 'b@d'"),
    ],
)
def test_bad_selectors_say_why(text: str, message: str) -> None:
    with pytest.raises(SelectorError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_selector(text)


def test_a_selector_is_bounded() -> None:
    with pytest.raises(SelectorError, match="longer than"):
        parse_selector("a," * MAX_SELECTOR_CHARS)
