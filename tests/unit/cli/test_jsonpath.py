"""`-o jsonpath=...`: the supported subset of kubectl's JSONPath templates, rendered as kubectl renders them."""

from __future__ import annotations

from typing import Any

import pytest

from vc_cli.jsonpath import JsonPathError, parse_template

JOB: dict[str, Any] = {
    "kind": "Job",
    "metadata": {"name": "tf", "labels": {"app.kubernetes.io/name": "tf", "team": "ml"}},
    "spec": {
        "minAvailable": 3,
        "tasks": [
            {"name": "ps", "replicas": 1, "template": {"spec": {"containers": [{"name": "c", "image": "tf:1"}]}}},
            {"name": "worker", "replicas": 2, "template": {"spec": {"containers": [{"name": "c", "image": "tf:2"}]}}},
        ],
    },
    "status": {
        "state": {"phase": "Running"},
        "conditions": [{"type": "Pending", "status": "False"}, {"type": "Running", "status": "True"}],
        "ready": True,
    },
}
LIST: dict[str, Any] = {"kind": "List", "items": [JOB, {"kind": "Job", "metadata": {"name": "mpi"}, "spec": {}}]}


def render(template: str, document: Any = JOB) -> str:
    return parse_template(template).render(document)


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("{.metadata.name}", "tf"),
        ("{$.metadata.name}", "tf"),
        ("{@.metadata.name}", "tf"),
        ("name={.metadata.name} phase={.status.state.phase}", "name=tf phase=Running"),
        ("{.metadata.labels['app.kubernetes.io/name']}", "tf"),
        ('{.metadata.labels["team"]}', "ml"),
        ("{.spec.tasks[0].name}", "ps"),
        ("{.spec.tasks[-1].name}", "worker"),
        ("{.spec.tasks[5].name}", ""),  # past the end: nothing, as a missing key
        ("{.spec.tasks[*].name}", "ps worker"),
        ("{.spec.tasks.*.replicas}", "1 2"),
        ("{.spec.tasks[0:1].name}", "ps"),
        ("{.spec.tasks[1:].name}", "worker"),
        ("{..image}", "tf:1 tf:2"),
        ("{.spec.minAvailable}", "3"),
        ("{.status.ready}", "true"),
        ("{.status.state}", '{"phase":"Running"}'),
        ("{.spec.nothing.here}", ""),
        ('{.status.conditions[?(@.type=="Running")].status}', "True"),
        ("{.status.conditions[?(@.type!='Running')].type}", "Pending"),
        ("{.spec.tasks[?(@.replicas>1)].name}", "worker"),
        ("{.spec.tasks[?(@.replicas<=1)].name}", "ps"),
        ("{.spec.tasks[?(@.template)].name}", "ps worker"),
        ('{.metadata.name}{"\\n"}', "tf\n"),
        ('{"a\\tb"}', "a\tb"),
        ("{.}", None),
    ],
)
def test_single_object(template: str, expected: str | None) -> None:
    if expected is None:  # {.} is the whole document, as compact JSON
        assert render(template).startswith('{"kind":"Job"')
    else:
        assert render(template) == expected


def test_lists_and_ranges() -> None:
    assert render("{.items[*].metadata.name}", LIST) == "tf mpi"
    assert render('{range .items[*]}{.metadata.name}{"\\t"}{.spec.minAvailable}{"\\n"}{end}', LIST) == "tf\t3\nmpi\t\n"
    nested = "{range .items[*]}{.metadata.name}:{range .spec.tasks[*]}[{.name}]{end};{end}"
    assert render(nested, LIST) == "tf:[ps][worker];mpi:;"


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("", "empty"),
        ("{.metadata.name", "unclosed action"),
        ("{range .items[*]}{.x}", "without its {end}"),
        ("{end}", "without a {range"),
        ("{.spec.tasks[0,1]}", "unions"),
        ("{.metadata['a','b']}", "unions"),
        ("{.spec.tasks[::2]}", "slice steps"),
        ("{.spec.tasks[x]}", "not an index"),
        ("{.spec.tasks[?(@.a==1 && @.b==2)]}", "&& or ||"),
        ("{.spec.tasks[?(@.a==bare)]}", "compare with a quoted string"),
        ("{.spec.tasks[0}", "unclosed '\\['"),
        ('{"\\q"}', "unknown escape"),
        ("{metadata}", "not a path|unexpected"),
    ],
)
def test_bad_templates_say_why(template: str, message: str) -> None:
    with pytest.raises(JsonPathError, match=message):
        parse_template(template)
