"""outcomes: agent-run events folded into deterministic outcome accounts.

The one import name of the project. What an agent worker or a downstream service uses is
importable from here; each name loads its module on first use, so `import outcomes`
needs nothing beyond the standard library:

    from outcomes import OutcomesProducer, OutcomesConsumer, verify_webhook

The folders at the top of the repository (`streams/`, `schemas/`, `reducers/`, `sinks/`,
`cli/`, `common/`, `reports/`, `importers/`) are the subpackages `outcomes.streams`, … :
this folder holds a relative symbolic link to each, so the checkout, an editable install,
mypy and a wheel all see one layout. The dev tooling (`devtools/`, `bench/`) is linked
too, but no wheel ships it: it is importable as `outcomes.devtools` and `outcomes.bench`
from a checkout only (docs/decisions.md, "One import name").
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from outcomes.common.errors import (
        BrokerUnreachable,
        CodecError,
        DeliveryError,
        ProducerBackpressure,
        ProducerClosed,
        ProducerError,
    )
    from outcomes.reducers.errors import InvalidEvent, OutcomesError
    from outcomes.streams.sdk.consumer import (
        AccountRevision,
        ClaimNotification,
        ClaimVerdict,
        ConsumerError,
        Notification,
        OutcomesConsumer,
        Reject,
        RetryLater,
    )
    from outcomes.streams.sdk.producer import OutcomesProducer
    from outcomes.streams.sdk.webhook import WebhookVerificationError
    from outcomes.streams.sdk.webhook import verify as verify_webhook

# public name -> (module, attribute)
_PUBLIC: dict[str, tuple[str, str]] = {
    "OutcomesProducer": ("outcomes.streams.sdk.producer", "OutcomesProducer"),
    "OutcomesConsumer": ("outcomes.streams.sdk.consumer", "OutcomesConsumer"),
    "Notification": ("outcomes.streams.sdk.consumer", "Notification"),
    "ClaimNotification": ("outcomes.streams.sdk.consumer", "ClaimNotification"),
    "AccountRevision": ("outcomes.streams.sdk.consumer", "AccountRevision"),
    "ClaimVerdict": ("outcomes.streams.sdk.consumer", "ClaimVerdict"),
    "RetryLater": ("outcomes.streams.sdk.consumer", "RetryLater"),
    "Reject": ("outcomes.streams.sdk.consumer", "Reject"),
    "ConsumerError": ("outcomes.streams.sdk.consumer", "ConsumerError"),
    "verify_webhook": ("outcomes.streams.sdk.webhook", "verify"),
    "WebhookVerificationError": ("outcomes.streams.sdk.webhook", "WebhookVerificationError"),
    "OutcomesError": ("outcomes.reducers.errors", "OutcomesError"),
    "InvalidEvent": ("outcomes.reducers.errors", "InvalidEvent"),
    "CodecError": ("outcomes.common.errors", "CodecError"),
    "ProducerError": ("outcomes.common.errors", "ProducerError"),
    "DeliveryError": ("outcomes.common.errors", "DeliveryError"),
    "ProducerBackpressure": ("outcomes.common.errors", "ProducerBackpressure"),
    "ProducerClosed": ("outcomes.common.errors", "ProducerClosed"),
    "BrokerUnreachable": ("outcomes.common.errors", "BrokerUnreachable"),
}

__all__ = [
    "AccountRevision",
    "BrokerUnreachable",
    "ClaimNotification",
    "ClaimVerdict",
    "CodecError",
    "ConsumerError",
    "DeliveryError",
    "InvalidEvent",
    "Notification",
    "OutcomesConsumer",
    "OutcomesError",
    "OutcomesProducer",
    "ProducerBackpressure",
    "ProducerClosed",
    "ProducerError",
    "Reject",
    "RetryLater",
    "WebhookVerificationError",
    "verify_webhook",
]


def __getattr__(name: str) -> Any:
    target = _PUBLIC.get(name)
    if target is None:
        raise AttributeError(f"module 'outcomes' has no attribute {name!r}")
    value = getattr(importlib.import_module(target[0]), target[1])
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_PUBLIC})
