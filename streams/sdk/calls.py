"""What every typed method of the producer SDK takes besides the event's own fields: the
rest of the envelope and where to report delivery (`CallOptions`), and the decorator that
spells them out in each method's signature."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TypedDict, TypeVar

# `occurred_at`: an aware datetime, an RFC 3339 string, or int microseconds (UTC).
Timestamp = datetime | str | int


@dataclass(frozen=True, slots=True)
class DeliveryReport:
    """The broker's answer for one event: where it landed, or the error."""

    event_id: str
    topic: str
    partition: int | None
    offset: int | None
    error: str | None

    @property
    def ok(self) -> bool:
        return self.error is None


DeliveryCallback = Callable[[DeliveryReport], None]


class CallOptions(TypedDict, total=False):
    """The keyword arguments every typed method takes besides `run_id` and the event's
    own fields: the rest of the envelope, and where to report delivery."""

    event_id: str | None  # default: a new UUIDv7; reuse it to republish the same fact
    occurred_at: Timestamp | None  # default: now, UTC
    source: str | None  # default: the producer's
    on_delivery: DeliveryCallback | None  # called with the event's DeliveryReport


CALL_OPTIONS = frozenset(CallOptions.__annotations__)
_Method = TypeVar("_Method", bound=Callable[..., str])


def call_options(method: _Method) -> _Method:
    """Spell the `CallOptions` out as keyword-only parameters in the method's signature
    (`help()`, `inspect.signature`), as if each typed method listed them."""
    signature = inspect.signature(method)
    own = [p for p in signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
    shared = [  # TypedDict keeps postponed annotations as ForwardRefs: show their text
        inspect.Parameter(
            name,
            inspect.Parameter.KEYWORD_ONLY,
            default=None,
            annotation=getattr(kind, "__forward_arg__", kind),
        )
        for name, kind in CallOptions.__annotations__.items()
    ]
    method.__signature__ = signature.replace(parameters=[*own, *shared])  # type: ignore[attr-defined]
    return method
