"""docker/compose.yaml and docker/Dockerfile: valid, complete and in step with the project.

Validation uses Docker Compose v2's own loader (`compose config`), which needs no Docker
engine: the `docker compose` plugin, or a standalone v2 binary named by
OUTCOMES_COMPOSE or cached by `.ci/run` in ~/.cache/outcomes/bin/docker-compose.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from outcomes.devtools.devstack import KAFKA_VERSION, cache_root

ROOT = Path(__file__).resolve().parent.parent
COMPOSE_FILE = ROOT / "docker" / "compose.yaml"
DOCKERFILE = ROOT / "docker" / "Dockerfile"


def _compose_command() -> list[str] | None:
    """A Docker Compose v2 command line, or None when none is installed."""
    docker = shutil.which("docker")
    if docker is not None:
        probe = subprocess.run(
            [docker, "compose", "version"], capture_output=True, text=True, check=False
        )
        if probe.returncode == 0:
            return [docker, "compose"]
    for candidate in (os.environ.get("OUTCOMES_COMPOSE"), str(cache_root() / "bin/docker-compose")):
        if candidate and os.access(candidate, os.X_OK):
            return [candidate]
    return None


@pytest.fixture(scope="module")
def compose(require_service: Callable[[bool, str], None]) -> list[str]:
    command = _compose_command()
    require_service(
        command is not None,
        "no Docker Compose v2 found (`docker compose`, OUTCOMES_COMPOSE or "
        f"{cache_root() / 'bin/docker-compose'}); .ci/run installs one",
    )
    assert command is not None
    return command


@pytest.fixture(scope="module")
def config(compose: list[str]) -> dict[str, Any]:
    """The compose file as Compose itself resolves it (anchors merged, defaults applied)."""
    result = subprocess.run(
        [*compose, "-f", str(COMPOSE_FILE), "config", "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "COMPOSE_PROJECT_NAME": "outcomes-test"},
    )
    assert result.returncode == 0, result.stderr
    parsed: dict[str, Any] = json.loads(result.stdout)
    return parsed


def test_compose_rejects_an_invalid_file(compose: list[str], tmp_path: Path) -> None:
    """The validator really validates: a misspelt key fails `config`."""
    bad = tmp_path / "compose.yaml"
    bad.write_text("services:\n  kafka:\n    image: apache/kafka:4.1.1\n    helthcheck: {}\n")
    result = subprocess.run(
        [*compose, "-f", str(bad), "config", "--quiet"], capture_output=True, text=True
    )
    assert result.returncode != 0
    assert "helthcheck" in result.stderr


def test_compose_has_the_pipeline_services(config: dict[str, Any]) -> None:
    services = config["services"]
    assert set(services) == {"kafka", "clickhouse", "topics", "worker", "sink"}
    assert services["worker"]["command"] == ["worker"]
    assert services["sink"]["command"] == ["sink"]
    assert services["topics"]["command"] == ["topics", "ensure"]
    for name in ("worker", "sink", "topics"):
        build = services[name]["build"]
        assert build["dockerfile"] == "docker/Dockerfile"
        assert Path(build["context"]).resolve() == ROOT
        env = services[name]["environment"]
        assert env["OUTCOMES_BOOTSTRAP"] == "kafka:9092"
        assert env["OUTCOMES_CLICKHOUSE"] == "http://clickhouse:8123"


def test_compose_runs_the_kafka_the_tests_ran_against(config: dict[str, Any]) -> None:
    """The deployed broker is the Apache Kafka release the dev stack pins, in KRaft mode."""
    kafka = config["services"]["kafka"]
    assert kafka["image"] == f"apache/kafka:{KAFKA_VERSION}"
    env = kafka["environment"]
    assert env["KAFKA_PROCESS_ROLES"] == "broker,controller"
    assert env["KAFKA_AUTO_CREATE_TOPICS_ENABLE"] == "false"


def test_compose_services_are_healthchecked_and_ordered(config: dict[str, Any]) -> None:
    services = config["services"]
    for name in ("kafka", "clickhouse", "worker", "sink"):
        assert services[name]["healthcheck"]["test"], name
    assert services["topics"]["depends_on"]["kafka"]["condition"] == "service_healthy"
    for name in ("worker", "sink"):
        assert services[name]["depends_on"]["topics"]["condition"] == (
            "service_completed_successfully"
        )
    assert services["sink"]["depends_on"]["clickhouse"]["condition"] == "service_healthy"


def test_compose_keeps_state_in_volumes(config: dict[str, Any]) -> None:
    services = config["services"]
    mounts = {
        name: {v["target"] for v in services[name].get("volumes", []) if v["type"] == "volume"}
        for name in ("kafka", "clickhouse", "worker", "sink")
    }
    assert mounts == {
        "kafka": {"/var/lib/kafka/data"},
        "clickhouse": {"/var/lib/clickhouse"},
        "worker": {"/var/lib/outcomes"},
        "sink": {"/var/lib/outcomes"},
    }


def test_dockerfile_copies_every_package_the_project_installs() -> None:
    """Adding a package (or a license file) to pyproject without adding it to the image
    fails here."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    # A subpackage ("outcomes.schemas.baseline") comes with its top-level folder
    # (schemas/, linked from outcomes/schemas); the links come with outcomes/.
    packages = {_folder(name) for name in pyproject["tool"]["setuptools"]["packages"]}
    dockerfile = DOCKERFILE.read_text()
    ignore = (ROOT / "docker" / "Dockerfile.dockerignore").read_text().splitlines()
    for package in sorted(packages):
        assert f"COPY {package} ./{package}" in dockerfile, package
        assert f"!{package}/**" in ignore, package
    copied_files = next(line for line in dockerfile.splitlines() if "pyproject.toml" in line)
    for name in pyproject["project"]["license-files"]:
        assert name in copied_files.split(), name
        assert f"!{name}" in ignore, name
    assert "RUN pip install '.[pipeline]'" in dockerfile
    assert 'ENTRYPOINT ["outcomes"]' in dockerfile
    assert any(line.startswith("FROM python:3.11") for line in dockerfile.splitlines())


def test_pyproject_installs_every_package_of_the_project() -> None:
    """A package folder missing from pyproject's list is left out of `pip install .` (the
    image) while an editable install still finds it: list every one, data folders too.
    The product is every folder `outcomes/` links, less the dev tooling."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = set(pyproject["tool"]["setuptools"]["packages"])
    links = {p.name for p in (ROOT / "outcomes").iterdir() if p.is_symlink()}
    assert links - DEV_TOOLING == {_folder(name) for name in listed} - {"outcomes"}
    found = {
        ".".join(("outcomes", *init.parent.relative_to(ROOT).parts))
        for top in links - DEV_TOOLING
        for init in (ROOT / top).rglob("__init__.py")
    }
    assert found <= listed, sorted(found - listed)
    data_only = {"outcomes.schemas.baseline", "outcomes.schemas.history"}
    assert listed - found == {"outcomes", *data_only}
    data = pyproject["tool"]["setuptools"]["package-data"]
    assert data_only <= set(data)


def test_outcomes_links_every_top_folder_of_the_code() -> None:
    """Each folder of code at the top is `outcomes/<folder>`, a relative link to it."""
    code = {
        p.name
        for p in ROOT.iterdir()
        if p.is_dir() and (p / "__init__.py").is_file() and p.name not in {"tests", "outcomes"}
    }
    links = {p.name: p for p in (ROOT / "outcomes").iterdir() if p.is_symlink()}
    assert set(links) == code
    for name, link in links.items():
        assert link.readlink() == Path("..") / name, name


DEV_TOOLING = frozenset({"devtools", "bench"})


def _folder(package: str) -> str:
    """`outcomes.schemas.baseline` -> `schemas`; `outcomes` -> `outcomes`."""
    parts = package.split(".")
    return parts[1] if len(parts) > 1 else parts[0]
