"""The faust engine of another commit, for a comparison in the same bench run.

`bench.bench_worker --faust-baseline REV` writes `streams/worker_faust.py` as it was at
REV to a file and runs this module with it in place of `outcomes worker --engine faust`
(the same options, as the bench's worker harness passes them): the file is loaded as the
engine module and its `run_faust_worker` runs with everything else as checked out, so it
must import only what still exists.

    python -m outcomes.bench.faust_baseline ENGINE_FILE --bootstrap B --app-id A \\
        --state-dir D [--until-idle S] [--no-web | --web-port P] [--loglevel L] ...
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

from outcomes.common.settings import Settings
from outcomes.streams.worker_common import WorkerOptions

ENGINE_MODULE = "outcomes.streams.worker_faust"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("engine_file", type=Path)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--app-id", required=True)
    parser.add_argument("--state-dir", type=Path, required=True)
    parser.add_argument("--loglevel", default="info")
    parser.add_argument("--engine", default="faust", choices=["faust"])
    parser.add_argument("--until-idle", type=float)
    parser.add_argument("--no-web", action="store_true")
    parser.add_argument("--web-port", type=int, default=6066)
    args = parser.parse_args(argv)
    spec = importlib.util.spec_from_file_location(ENGINE_MODULE, args.engine_file)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load an engine from {args.engine_file}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[ENGINE_MODULE] = module
    spec.loader.exec_module(module)
    settings = Settings.load(bootstrap=args.bootstrap, state_dir=args.state_dir)
    options = WorkerOptions(
        app_id=args.app_id,
        engine="faust",
        until_idle=args.until_idle,
        web_port=args.web_port,
        web_enabled=not args.no_web,
    )
    code: int = module.run_faust_worker(settings, options, args.loglevel)
    return code


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
