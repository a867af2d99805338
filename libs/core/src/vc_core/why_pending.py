"""Why a job waits, as a person reads it: the scheduler's actionable sentences first, Volcano's text after.

A PodGroup's Unschedulable condition keeps Volcano's message first, where tools look for it
(`<M>/<N> tasks in gang unschedulable: ...`), and carries the scheduler's own explanation after
WHY_MARK. Every place a person reads the verdict (vcctl job view and describe, the dashboard, the job's
history) shows it through `readable`: the explanation first, Volcano's text as the detail after it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

WHY_MARK: Final = " Why: "
DETAIL_MARK: Final = " Scheduler detail: "


def _sentence(text: str) -> str:
    """A plugin's reason as it wrote it (Volcano's are lower case), ended with one full stop."""
    text = text.strip().rstrip(".")
    return text + "." if text else ""


def condition_message(volcano: str, sentences: Sequence[str]) -> str:
    """Volcano's message, then `Why:` and the sentences (most serious first), each a full sentence."""
    said = " ".join(s for s in map(_sentence, sentences) if s)
    if not said:
        return volcano
    return f"{volcano.rstrip('.')}.{WHY_MARK}{said}"


def split(message: str) -> tuple[str, str]:
    """(the explanation, Volcano's text) of a condition message; the explanation is "" when it has none."""
    volcano, mark, why = message.partition(WHY_MARK)
    if not mark:
        return "", message
    return why.strip(), volcano.strip()


def readable(message: str) -> str:
    """The explanation first, then Volcano's text as the detail; a message without one as it is."""
    why, volcano = split(message)
    if not why:
        return message
    return f"{why}{DETAIL_MARK}{volcano}" if volcano else why
