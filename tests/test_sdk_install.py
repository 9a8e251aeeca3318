"""The SDK alone: what an agent worker installs (issue 26, "done means").

The project's wheel is built from this checkout and installed with its base dependencies
only into a fresh virtual environment that holds no other package of this project. That
install has exactly one top-level name of ours, `outcomes`, no dev tooling and none of
the pipeline's packages; `from outcomes import OutcomesProducer` works there, and an
event it publishes to the dev broker is folded by the worker (run from this checkout)
into an account revision.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import venv
from pathlib import Path

import pytest

from outcomes.devtools.harness import Harness, KafkaConfig, finish

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow

# What the base install may bring (pyproject's `dependencies`, and what they need).
SDK_DISTRIBUTIONS = {"outcomes", "click", "confluent-kafka", "fastavro", "orjson"}
# Never in the SDK's environment: the pipeline's packages.
PIPELINE_DISTRIBUTIONS = {
    "chdb",
    "clickhouse-connect",
    "faust-streaming",
    "aiokafka",
    "rocksdict",
    "prometheus-client",
    "rich",
    "markdown-it-py",
}


def _run(*args: str | Path, cwd: Path | None = None) -> str:
    proc = subprocess.run(
        [str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, f"{args}: {proc.stdout}\n{proc.stderr}"
    return proc.stdout


@pytest.fixture(scope="module")
def sdk_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The python of a fresh venv with the wheel of this checkout, base install only."""
    tmp = tmp_path_factory.mktemp("sdk")
    wheels = tmp / "wheels"
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", wheels, ROOT)
    (wheel,) = wheels.glob("outcomes-*.whl")
    env = tmp / "venv"
    venv.EnvBuilder(with_pip=True).create(env)
    python = env / "bin" / "python"
    _run(python, "-m", "pip", "install", "-q", "--disable-pip-version-check", wheel)
    return python


def _site_packages(python: Path) -> Path:
    out = _run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])")
    return Path(out.strip())


def _distributions(python: Path) -> set[str]:
    out = _run(
        python,
        "-c",
        "import importlib.metadata as m\n"
        "print('\\n'.join(d.metadata['Name'] for d in m.distributions()))",
    )
    return {name.strip().lower().replace("_", "-") for name in out.split()}


def test_the_sdk_installs_one_top_level_name_and_no_pipeline(sdk_python: Path) -> None:
    site = _site_packages(sdk_python)
    (info,) = site.glob("outcomes-*.dist-info")
    assert (info / "top_level.txt").read_text().split() == ["outcomes"]
    record = (info / "RECORD").read_text().splitlines()
    tops = {line.split(",")[0].split("/")[0] for line in record}
    assert {t for t in tops if not t.endswith(".dist-info") and t != ".."} == {"outcomes"}
    shipped = {line.split(",")[0] for line in record}
    assert not [p for p in shipped if p.startswith(("outcomes/devtools/", "outcomes/bench/"))]
    assert "outcomes/streams/sdk/producer.py" in shipped
    assert "outcomes/schemas/io.outcomes.v1.NarrativeSubmitted.avsc" in shipped
    installed = _distributions(sdk_python) - {"pip", "setuptools", "wheel"}
    assert installed == SDK_DISTRIBUTIONS
    assert not installed & PIPELINE_DISTRIBUTIONS
    # The public API from the top, and the dev tooling absent from the import path.
    out = _run(
        sdk_python,
        "-c",
        "import importlib.util, outcomes\n"
        "from outcomes import OutcomesProducer, OutcomesConsumer, verify_webhook, CodecError\n"
        "print(importlib.util.find_spec('outcomes.devtools'))",
        cwd=sdk_python.parent,
    )
    assert out.split() == ["None"]


def test_the_sdk_command_line_names_the_install_a_command_needs(sdk_python: Path) -> None:
    outcomes = sdk_python.parent / "outcomes"
    proc = subprocess.run([outcomes, "worker"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "needs the pipeline install" in proc.stderr
    assert "pip install 'outcomes[pipeline]'" in proc.stderr
    assert "Traceback" not in proc.stderr
    proc = subprocess.run([outcomes, "demo"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "dev tooling" in proc.stderr


PUBLISH = textwrap.dedent(
    """
    import sys
    from datetime import UTC, datetime

    from outcomes import OutcomesProducer

    bootstrap, run_id = sys.argv[1], sys.argv[2]
    with OutcomesProducer(source="sdk-install-test", bootstrap=bootstrap) as events:
        events.run_started(run_id=run_id, agent="coder", requested_by="user:ada")
        events.goal_revised(
            run_id=run_id,
            goal_revision=1,
            authored_by="user",
            deliverables=["report.md"],
            required_checks=[{"label": "unit", "scope": "suite"}],
        )
        events.tool_finished(run_id=run_id, action_id="a1", tool="pytest", outcome="succeeded")
        events.workspace_snapshot(
            run_id=run_id,
            snapshot_id="snap-1",
            sealed=True,
            artifacts=[{"path": "report.md", "change": "added", "verification_sensitive": False}],
        )
        events.finalize_requested(
            run_id=run_id,
            candidate_snapshot="snap-1",
            occurred_at=datetime(2026, 12, 1, 10, 0, tzinfo=UTC),
        )
    print("published")
    """
)


def test_an_event_the_sdk_alone_publishes_is_folded(
    sdk_python: Path, kafka_bootstrap: str, kafka_config: KafkaConfig, tmp_path: Path
) -> None:
    with Harness(kafka_config, kafka_bootstrap, tmp_path, "sdk") as harness:
        run_id = f"{harness.prefix}-run"
        worker = harness.worker()
        worker.start()
        script = tmp_path / "publish.py"
        script.write_text(PUBLISH)
        out = _run(sdk_python, script, kafka_bootstrap, run_id, cwd=tmp_path)
        assert out.split() == ["published"]
        finish([worker], kafka_config, timeout=180)
        revisions = [
            v for v in harness.outputs().of_kind("account_revision").values()
            if v["run_id"] == run_id
        ]  # fmt: skip
        assert revisions, harness.logs()
        latest = max(revisions, key=lambda v: v["revision"])
        assert latest["run_id"] == run_id
