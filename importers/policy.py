"""A project's requirement policy: what a run of its repository must show to be complete.

A trace or a hook session holds the user's request as prose, so the goal it derives has
no structure: by default it requires what the run itself did (every check it ran, in its
latest state; every effect it attempted: `request_goal`, SPEC 3.2). A project that
knows better says so in `.outcomes/policy.toml` at the root of its repository (or in a
file given with `--policy`):

    # .outcomes/policy.toml
    checks = ["pytest*", { label = "npm run lint", scope = "suite" }]
    deliverables = ["CHANGELOG.md"]
    effects = []
    observed = true   # also require every check the run ran and every effect it attempted

- `checks`: check labels; an imported check's label is its command as run (`pytest -q`,
  `npm run lint`), and `*` stands for any text (`pytest*`). A label that no receipt
  matches is `missing`. A string requires scope `focused` (any run of the check); a
  table `{label, scope}` may require `suite`.
- `deliverables`: paths, relative to the repository, the final workspace must hold.
- `effects`: effect intent ids or patterns (`*` every effect the run attempted).
- `observed` (default false): add the default's requirements to the policy's.

Applied to a run's derived events (`apply_policy`), the policy is a second revision of
the goal, by `product_rule`, right after the request's: the goal in force, with the
policy's file and digest as its `source`, which the account records
(`requirement_source`). Unknown keys and values of the wrong type are refused with one
line naming the file and the key.
"""

from __future__ import annotations

import hashlib
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from outcomes.importers.trace import OBSERVED
from outcomes.reducers.errors import OutcomesError

POLICY_FILE = Path(".outcomes") / "policy.toml"
_KEYS = ("checks", "deliverables", "effects", "observed")
_SCOPES = ("focused", "suite")


class PolicyError(OutcomesError):
    """A policy file that cannot be read or does not have the documented form.

    Operators: the message names the file and the key; the form is in this module's
    docstring and docs/decisions.md ("What done requires").
    """


@dataclass(frozen=True, slots=True)
class Policy:
    """A loaded policy. `source` names it in the account: the file and its content's
    digest (`.outcomes/policy.toml sha256:1a2b3c4d5e6f`)."""

    source: str
    checks: tuple[tuple[str, str], ...] = ()
    deliverables: tuple[str, ...] = ()
    effects: tuple[str, ...] = ()
    observed: bool = False

    def goal_fields(self) -> dict[str, Any]:
        """The `goal.revised` fields the policy requires (revision and author aside)."""
        checks = [{"label": label, "scope": scope} for label, scope in self.checks]
        effects = list(self.effects)
        if self.observed:
            if not any(label == OBSERVED for label, _ in self.checks):
                checks.append({"label": OBSERVED, "scope": "focused"})
            if OBSERVED not in effects:
                effects.append(OBSERVED)
        return {
            "deliverables": list(self.deliverables),
            "required_checks": checks,
            "requested_effects": effects,
            "requested_actions": [],
            "target_revision": None,
        }


def parse_policy(text: str, name: str) -> Policy:
    """A policy from the text of a policy file (`name` is how errors and the account
    name it)."""
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise PolicyError(f"{name}: not TOML: {error}") from None
    unknown = sorted(set(table) - set(_KEYS))
    if unknown:
        raise PolicyError(f"{name}: unknown key {unknown[0]!r} (a policy has {', '.join(_KEYS)})")
    observed = table.get("observed", False)
    if not isinstance(observed, bool):
        raise PolicyError(f"{name}: 'observed' must be true or false")
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
    return Policy(
        source=f"{name} sha256:{digest}",
        checks=tuple(_check(item, name) for item in _list(table, "checks", name)),
        deliverables=_texts(table, "deliverables", name),
        effects=_texts(table, "effects", name),
        observed=observed,
    )


def _list(table: dict[str, Any], key: str, name: str) -> list[Any]:
    value = table.get(key, [])
    if not isinstance(value, list):
        raise PolicyError(f"{name}: '{key}' must be a list")
    return value


def _texts(table: dict[str, Any], key: str, name: str) -> tuple[str, ...]:
    return tuple(_text(item, key, name) for item in _list(table, key, name))


def _text(item: Any, key: str, name: str) -> str:
    if not isinstance(item, str) or not item.strip():
        raise PolicyError(f"{name}: each of '{key}' must be a non-empty string, not {item!r}")
    return item


def _check(item: Any, name: str) -> tuple[str, str]:
    if isinstance(item, str):
        return _text(item, "checks", name), "focused"
    if isinstance(item, dict):
        extra = sorted(set(item) - {"label", "scope"})
        if extra:
            raise PolicyError(f"{name}: a check has 'label' and 'scope', not {extra[0]!r}")
        label = _text(item.get("label"), "checks", name)
        scope = item.get("scope", "focused")
        if scope not in _SCOPES:
            raise PolicyError(f"{name}: check {label!r}: scope must be focused or suite")
        return label, scope
    raise PolicyError(f"{name}: each of 'checks' must be a label or {{label, scope}}")


def load_policy(path: Path, name: str | None = None) -> Policy:
    """The policy in a file; `PolicyError` (one line) when it cannot be read or used."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else error
        raise PolicyError(f"{path}: cannot read the policy: {reason}") from None
    return parse_policy(text, name or str(path))


def policy_for(option: Path | None, root: str | Path | None) -> Policy | None:
    """The policy a run is judged by: the file given as an option, else the repository's
    `.outcomes/policy.toml` when the run's workspace `root` is here and holds one, else
    None (the default: what the run did)."""
    if option is not None:
        return load_policy(option)
    if root is None:
        return None
    path = Path(root) / POLICY_FILE
    if not path.is_file():
        return None
    return load_policy(path, str(POLICY_FILE))


def with_policy(
    events: list[dict[str, Any]], option: Path | None, root: str | Path | None
) -> list[dict[str, Any]]:
    """A run's derived events under its policy (`policy_for`, then `apply_policy`): the
    one call `outcomes import --policy` and the hook make. Raises `PolicyError`."""
    return apply_policy(events, policy_for(option, root))


def apply_policy(events: list[dict[str, Any]], policy: Policy | None) -> list[dict[str, Any]]:
    """The events with the policy's goal revision after each request's (`goal.revised`
    by `user`): revision + 1, by `product_rule`, from the policy's source, at the same
    time. Deterministic, so a hook that derives a session again gives the same event."""
    if policy is None:
        return events
    out: list[dict[str, Any]] = []
    for event in events:
        out.append(event)
        if event.get("type") != "goal.revised" or event.get("authored_by") != "user":
            continue
        event_id = f"{event['event_id']}:policy"
        if len(event_id) > 128:
            digest = hashlib.sha256(event_id.encode("utf-8")).hexdigest()[:40]
            event_id = f"{event['run_id'][:80]}:{digest}"
        out.append(
            {
                **event,
                "event_id": event_id,
                "source": f"policy:{policy.source}"[:1000],
                "goal_revision": int(event["goal_revision"]) + 1,
                "authored_by": "product_rule",
                **policy.goal_fields(),
            }
        )
    return out
