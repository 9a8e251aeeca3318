"""`outcomes check RUN_ID --text FILE`: ask the pre-display gate about an answer (SPEC 8).

The check goes to a worker's door (`--gate-url`, `OUTCOMES_GATE_URL`) with the bearer
token `OUTCOMES_GATE_TOKEN`, else the one the worker of `--app-id` keeps in its state
folder. It prints the decision, each contradiction beside the fact the account supports,
and what the runtime would show with or instead of the answer (the appendix of a passed
answer, the instruction of a repair, the contained text); `--json` prints the gate's
answer as it came.

Exit status: 0 pass, 3 repair, 4 contain, 5 stale (the account had not reached the
position in time: no verdict), 1 the gate could not be reached or refused the check,
2 bad usage (a file that cannot be read, a claim map that is not JSON).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click
import orjson

from outcomes.cli import options
from outcomes.common.settings import Settings
from outcomes.reducers.catalog import DEFAULT_APP_ID
from outcomes.streams.gate_door import read_token
from outcomes.streams.sdk.gate import (
    DEFAULT_BUDGET,
    Checked,
    GateClient,
    GateRefused,
    GateUnavailable,
)

EXIT_CODES = {"pass": 0, "repair": 3, "contain": 4, "stale": 5}
EXIT_ERROR = 1
MAX_FILE_BYTES = 4 * 1024 * 1024  # a text or claim map read (the gate takes less)


def _read(path: Path, what: str) -> bytes:
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise click.UsageError(f"{what} {path}: {exc.strerror or exc}") from None
    if len(data) > MAX_FILE_BYTES:
        raise click.UsageError(f"{what} {path} is larger than {MAX_FILE_BYTES} bytes")
    return data


@click.command("check")
@click.argument("run_id")
@click.option(
    "--text",
    "text_path",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path, allow_dash=True),
    help="The candidate answer (UTF-8 text; - reads standard input).",
)
@click.option(
    "--claim-map",
    "claim_map_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="A claim map (JSON list: each claim's start, end, kind and entries).",
)
@options.gate_url
@click.option(
    "--position",
    "position",
    multiple=True,
    help="An event id the caller published to the run; the check waits for the fold to "
    "reach it (repeatable).",
)
@click.option(
    "--attempt",
    type=click.IntRange(min=1, max=100),
    default=1,
    show_default=True,
    help="The answer's place in its chain: 1 the first answer, 2 a repaired one.",
)
@click.option("--chain-id", help="The answer chain this answer belongs to.")
@click.option(
    "--budget",
    type=click.FloatRange(min=0.1, max=60.0),
    default=DEFAULT_BUDGET,
    show_default=True,
    help="Seconds the whole check may take (the fold's wait included).",
)
@click.option(
    "--app-id",
    default=DEFAULT_APP_ID,
    show_default=True,
    help="The worker app whose token file is read when OUTCOMES_GATE_TOKEN is unset.",
)
@options.state_dir
@click.option("--json", "as_json", is_flag=True, help="Print the gate's answer as JSON.")
def check(
    run_id: str,
    text_path: Path,
    claim_map_path: Path | None,
    gate_url: str | None,
    position: tuple[str, ...],
    attempt: int,
    chain_id: str | None,
    budget: float,
    app_id: str,
    state_dir: Path | None,
    as_json: bool,
) -> None:
    """Check an answer against RUN_ID's current account before it is shown.

    Exit status: 0 pass, 3 repair, 4 contain, 5 stale, 1 the gate was not reached or
    refused the check, 2 bad usage.
    """
    raw = sys.stdin.buffer.read(MAX_FILE_BYTES + 1) if str(text_path) == "-" else None
    data = raw if raw is not None else _read(text_path, "the text")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise click.UsageError(f"the text {text_path} is not UTF-8 ({exc})") from None
    if not text.strip():
        raise click.UsageError(f"the text {text_path} is empty")
    claim_map: list[Mapping[str, Any]] | None = None
    if claim_map_path is not None:
        try:
            loaded = orjson.loads(_read(claim_map_path, "the claim map"))
        except orjson.JSONDecodeError as exc:
            raise click.UsageError(f"the claim map {claim_map_path} is not JSON ({exc})") from None
        if not isinstance(loaded, list):
            raise click.UsageError(f"the claim map {claim_map_path} is not a JSON list")
        claim_map = loaded
    settings = Settings.load(gate_url=gate_url, state_dir=state_dir)
    token = settings.gate_token or read_token(settings.state_dir, app_id)
    try:
        client = GateClient(settings.gate_url, token=token, budget=budget)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    try:
        checked = client.check_answer(
            run_id, text, claim_map=claim_map, position=position, attempt=attempt,
            chain_id=chain_id,
        )  # fmt: skip
    except GateRefused as exc:
        click.echo(
            f"outcomes check: the gate refused the check ({exc.status}): {exc.message}", err=True
        )
        sys.exit(EXIT_ERROR)
    except GateUnavailable as exc:
        click.echo(f"outcomes check: {exc}", err=True)
        sys.exit(EXIT_ERROR)
    if as_json:
        click.echo(orjson.dumps(dict(checked.body), option=orjson.OPT_INDENT_2).decode())
    else:
        click.echo(render(checked))
    sys.exit(EXIT_CODES[checked.decision])


def render(checked: Checked) -> str:
    """The answer as a person reads it: the decision, the contradictions beside the facts,
    the claims that need review, then the text the runtime would use."""
    body = checked.body
    if checked.decision == "stale":
        where = body.get("position") or {}
        lines = [
            f"stale: the account had reached {where.get('reached', '?')} of the "
            f"{where.get('wanted', '?')} events of the position; no verdict"
        ]
        missing = body.get("missing") or []
        if missing:
            lines.append("not reached yet: " + ", ".join(str(m) for m in missing))
        return "\n".join(lines)
    counts = body.get("counts") or {}
    summary = ", ".join(f"{k} {v}" for k, v in counts.items())
    revision = body.get("revision")
    head = f"{checked.decision}" + (f" (revision {revision})" if revision is not None else "")
    lines = [head + (f": {summary}" if summary else "")]
    contradicted = checked.contradicted
    if contradicted:
        lines.append("Contradicted:")
        for claim in contradicted:
            fact = claim.get("supported") or claim.get("reason") or "the account does not hold it"
            lines.append(f'- "{claim.get("text")}": {fact}')
    review = [c for c in body.get("claims") or () if c.get("verdict") == "needs_review"]
    if review:
        lines.append("Needs review (does not block):")
        lines += [f'- "{c.get("text")}": {c.get("reason")}' for c in review]
    for title, value in (
        ("Appendix (show it with the answer)", checked.appendix),
        ("Instruction (for the repair)", checked.instruction),
        ("Show instead", checked.contained),
    ):
        if value:
            lines += ["", f"{title}:", value]
    return "\n".join(lines)
