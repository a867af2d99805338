"""Lifecycle policies (Volcano `jobs/validate/util.go` `validatePolicies`).

A policy names either events or an exit code, never both; an exit code is never 0; no event or exit
code appears in two policies of the same list; `*` (any event) stands alone; only the events and
actions users may use are accepted (internal ones such as `SyncJob` or `OutOfSync` are refused).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Final

from vc_proto.batch import LifecyclePolicy
from vc_proto.vocabulary import Action, Event
from vc_validation.limits import MAX_EVENTS_PER_POLICY, MAX_POLICIES
from vc_validation.verdict import Violation

# Volcano's policyEventMap / policyActionMap entries marked `true`.
USER_EVENTS: Final = (
    Event.ANY,
    Event.POD_FAILED,
    Event.POD_EVICTED,
    Event.POD_PENDING,
    Event.JOB_UNKNOWN,
    Event.TASK_COMPLETED,
    Event.TASK_FAILED,
    Event.JOB_UPDATED,
)
USER_ACTIONS: Final = (
    Action.ABORT_JOB,
    Action.RESTART_JOB,
    Action.RESTART_TASK,
    Action.RESTART_POD,
    Action.RESTART_PARTITION,
    Action.TERMINATE_JOB,
    Action.COMPLETE_JOB,
    Action.RESUME_JOB,
)
# A Go `time.ParseDuration` text, as metav1.Duration accepts it ("90s", "1h30m", "1.5h").
GO_DURATION: Final = re.compile(r"^[+]?((\d+(\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h))+$|^0$")
_EVENT_NAMES: Final = frozenset(str(e) for e in USER_EVENTS)
_ACTION_NAMES: Final = frozenset(str(a) for a in USER_ACTIONS)
VALID_HINT: Final = (
    f"valid events are [{' '.join(sorted(_EVENT_NAMES))}], valid actions are [{' '.join(sorted(_ACTION_NAMES))}]"
)


def policy_events(policy: LifecyclePolicy) -> list[str]:
    """`events` plus `event`, de-duplicated, in order (Volcano `getEventList`)."""
    merged = list(policy.events or []) + ([policy.event] if policy.event else [])
    return list(dict.fromkeys(merged))


def validate_policies(policies: Sequence[LifecyclePolicy] | None, *, path: str) -> Iterator[Violation]:
    """Every broken rule of a policy list, each naming `path[i]` and the offending part."""
    if not policies:
        return
    if len(policies) > MAX_POLICIES:
        yield Violation(path, "policies-count", f"may not have more than {MAX_POLICIES} policies, got {len(policies)}")
        return
    seen_events: set[str] = set()
    seen_codes: set[int] = set()
    for index, policy in enumerate(policies):
        yield from _validate_one(policy, f"{path}[{index}]", seen_events, seen_codes)
    if "*" in seen_events and len(seen_events) > 1:
        yield Violation(path, "policy-any-alone", "if there's * here, no other policy should be here")


def _validate_one(
    policy: LifecyclePolicy, path: str, seen_events: set[str], seen_codes: set[int]
) -> Iterator[Violation]:
    events = policy_events(policy)
    if events and policy.exit_code is not None:
        yield Violation(path, "policy-event-xor-exitcode", "must not specify event and exitCode simultaneously")
        return
    if not events and policy.exit_code is None:
        yield Violation(path, "policy-event-xor-exitcode", "either event and exitCode should be specified")
        return
    if policy.timeout is not None and not GO_DURATION.match(policy.timeout):
        yield Violation(
            f"{path}.timeout", "policy-timeout", f"invalid duration {policy.timeout[:64]!r} (e.g. '10m', '1m30s')"
        )
    if policy.action not in _ACTION_NAMES:
        yield Violation(f"{path}.action", "policy-action", f"invalid policy action {policy.action!r}; {VALID_HINT}")
    if events:
        yield from _validate_events(events, path, seen_events)
    else:
        yield from _validate_exit_code(policy.exit_code, path, seen_codes)


def _validate_events(events: list[str], path: str, seen: set[str]) -> Iterator[Violation]:
    if len(events) > MAX_EVENTS_PER_POLICY:
        yield Violation(
            f"{path}.events", "policy-events-count", f"may not have more than {MAX_EVENTS_PER_POLICY} events"
        )
        return
    for event in events:
        if event not in _EVENT_NAMES:
            yield Violation(f"{path}.events", "policy-event", f"invalid policy event {event!r}; {VALID_HINT}")
            continue
        if event in seen:
            yield Violation(
                f"{path}.events", "policy-duplicate-event", f"duplicate event {event}  across different policy"
            )
        seen.add(event)


def _validate_exit_code(code: int | None, path: str, seen: set[int]) -> Iterator[Violation]:
    if code == 0:
        yield Violation(f"{path}.exitCode", "policy-exit-code", "0 is not a valid error code")
    elif code is not None and code in seen:
        yield Violation(f"{path}.exitCode", "policy-duplicate-exit-code", f"duplicate exitCode {code}")
    elif code is not None:
        seen.add(code)
