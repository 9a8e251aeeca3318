"""The tool catalogue (outcomes.importers.catalogue) against outputs written for these
tests in each tool's documented form: every row has a passing and a failing output, and
each is read as its documentation says. Most cases give no exit status (a pipe took it
away, or the trace shows none), so the tool's own lines decide; a tool that prints
nothing on success passes on its exit status 0.
"""

from __future__ import annotations

import pytest

from outcomes.importers.catalogue import BY_NAME, TOOLS
from outcomes.importers.commands import read_command

# (command line, output, exit status or None, expected): a check's result for rows with
# a kind, an effect's outcome for rows with an effect.
Case = tuple[str, str, int | None, str]

SAMPLES: dict[str, tuple[Case, Case]] = {
    # -- Python --
    "pytest": (
        ("pytest -q | tail -3", "....\n4 passed in 0.12s", None, "pass"),
        (
            "pytest 2>&1 | tail",
            "FAILED tests/test_a.py::test_x - assert 1 == 2\n"
            "========= 1 failed, 3 passed in 0.20s =========",
            None,
            "fail",
        ),
    ),
    "unittest": (
        ("python -m unittest", "...\n" + "-" * 70 + "\nRan 3 tests in 0.002s\n\nOK", None, "pass"),
        ("python3 -m unittest -v", "Ran 3 tests in 0.002s\n\nFAILED (failures=1)", None, "fail"),
    ),
    "django test": (
        (
            "python manage.py test polls",
            "Found 4 test(s).\n....\nRan 4 tests in 0.010s\n\nOK\nDestroying test database",
            None,
            "pass",
        ),
        ("python manage.py test", "Ran 4 tests in 0.010s\n\nFAILED (errors=1)", None, "fail"),
    ),
    "runtests": (
        ("./tests/runtests.py queries", "Ran 12 tests in 1.2s\n\nOK", None, "pass"),
        (
            "./tests/runtests.py queries",
            "Ran 12 tests in 1.2s\n\nFAILED (failures=2)",
            None,
            "fail",
        ),
    ),
    "setup.py test": (
        ("python setup.py test", "Ran 2 tests in 0.1s\n\nOK", None, "pass"),
        ("python setup.py test", "Ran 2 tests in 0.1s\n\nFAILED (failures=1)", None, "fail"),
    ),
    "tox": (
        (
            "tox -e py311",
            "  py311: OK (4.20=setup[1.10]+cmd[3.10] seconds)\n  congratulations :) (4.30 seconds)",
            None,
            "pass",
        ),
        (
            "tox",
            "  py311: FAIL code 1 (3.00=setup[1.00]+cmd[2.00] seconds)\n"
            "  evaluation failed :( (3.10 seconds)",
            None,
            "fail",
        ),
    ),
    "nox": (
        (
            "nox -s tests",
            "nox > Running session tests\nnox > Session tests was successful in 2 seconds.",
            None,
            "pass",
        ),
        ("nox -s tests", "nox > Running session tests\nnox > Session tests failed.", None, "fail"),
    ),
    "ruff format --check": (
        ("ruff format --check .", "12 files already formatted", None, "pass"),
        (
            "ruff format --check .",
            "Would reformat: src/app.py\n1 file would be reformatted, 11 files already formatted",
            None,
            "fail",
        ),
    ),
    "ruff check": (
        ("ruff check .", "All checks passed!", None, "pass"),
        (
            "ruff check src",
            "src/app.py:1:8: F401 [*] `os` imported but unused\nFound 1 error.\n"
            "[*] 1 fixable with the `--fix` option.",
            None,
            "fail",
        ),
    ),
    "flake8": (
        ("flake8 src", "", 0, "pass"),
        ("flake8 src | head", "src/app.py:1:1: F401 'os' imported but unused", None, "fail"),
    ),
    "pylint": (
        ("pylint src", "-" * 40 + "\nYour code has been rated at 10.00/10", None, "pass"),
        (
            "pylint app.py",
            "************* Module app\napp.py:1:0: C0114: Missing module docstring "
            "(missing-module-docstring)\n\n" + "-" * 40 + "\nYour code has been rated at 6.67/10",
            None,
            "fail",
        ),
    ),
    "mypy": (
        ("mypy src", "Success: no issues found in 12 source files", None, "pass"),
        (
            "mypy src",
            'src/app.py:3: error: Incompatible return value type (got "int", expected "str")  '
            "[return-value]\nFound 1 error in 1 file (checked 12 source files)",
            None,
            "fail",
        ),
    ),
    "pyright": (
        ("pyright", "0 errors, 0 warnings, 0 informations ", None, "pass"),
        (
            "pyright src",
            '/w/app.py:3:12 - error: "x" is not defined (reportUndefinedVariable)\n'
            "1 error, 0 warnings, 0 informations ",
            None,
            "fail",
        ),
    ),
    "black --check": (
        ("black --check .", "All done! ✨ 🍰 ✨\n3 files would be left unchanged.", None, "pass"),
        (
            "black --check .",
            "would reformat src/app.py\n\nOh no! 💥 💔 💥\n"
            "1 file would be reformatted, 2 files would be left unchanged.",
            None,
            "fail",
        ),
    ),
    "isort --check": (
        ("isort --check-only .", "", 0, "pass"),
        (
            "isort --check .",
            "ERROR: /w/src/app.py Imports are incorrectly sorted and/or formatted.",
            None,
            "fail",
        ),
    ),
    "pip install": (
        (
            "pip install requests",
            "Collecting requests\nSuccessfully installed requests-2.32.3 urllib3-2.2.2",
            None,
            "completed",
        ),
        (
            "pip install reqests",
            "ERROR: Could not find a version that satisfies the requirement reqests "
            "(from versions: none)\nERROR: No matching distribution found for reqests",
            None,
            "failed",
        ),
    ),
    "uv add/sync/pip install": (
        (
            "uv add httpx",
            "Resolved 12 packages in 300ms\nInstalled 3 packages in 10ms",
            None,
            "completed",
        ),
        (
            "uv add 'httpx>=99'",
            "  \u00d7 No solution found when resolving dependencies:\n"
            "  ╰─▶ Because only httpx<=0.27.0 is available ...",
            None,
            "failed",
        ),
    ),
    "poetry add/install": (
        (
            "poetry add requests",
            "Using version ^2.32.3 for requests\n\nUpdating"
            " dependencies\nResolving dependencies...\n\n"
            "Package operations: 5 installs, 0 updates, 0 removals\n\n"
            "  - Installing certifi (2024.7.4)\n\nWriting lock file",
            None,
            "completed",
        ),
        (
            "poetry add 'requests>=99'",
            "Because myproj depends on requests (>=99) which doesn't match any versions, "
            "version solving failed.",
            None,
            "failed",
        ),
    ),
    "conda install": (
        (
            "conda install -y numpy",
            "Preparing transaction: done\nVerifying transaction: done\nExecuting transaction: done",
            None,
            "completed",
        ),
        (
            "conda install -y nope",
            "PackagesNotFoundError: The following packages are not available from "
            "current channels:",
            None,
            "failed",
        ),
    ),
    "twine upload": (
        (
            "twine upload dist/*",
            "Uploading distributions to https://upload.pypi.org/legacy/\n"
            "Uploading pkg-1.0-py3-none-any.whl\n\nView at:\nhttps://pypi.org/project/pkg/1.0/",
            None,
            "completed",
        ),
        (
            "twine upload dist/*",
            "ERROR    HTTPError: 403 Forbidden from https://upload.pypi.org/legacy/",
            None,
            "failed",
        ),
    ),
    "uv/poetry publish": (
        (
            "uv publish",
            "Publishing 2 files https://upload.pypi.org/legacy/\n"
            "Uploading pkg-1.0-py3-none-any.whl (5.2KiB)",
            None,
            "completed",
        ),
        (
            "uv publish",
            "error: Failed to publish `dist/pkg-1.0.tar.gz` to https://upload.pypi.org/legacy/",
            None,
            "failed",
        ),
    ),
    "django runserver": (
        (
            "python manage.py runserver",
            "Watching for file changes with StatReloader\n"
            "Starting development server at"
            " http://127.0.0.1:8000/\nQuit the server with CONTROL-C.",
            None,
            "completed",
        ),
        ("python manage.py runserver 8000", "Error: That port is already in use.", None, "failed"),
    ),
    "flask run": (
        (
            "flask run",
            " * Serving Flask app 'app'\n * Running on http://127.0.0.1:5000",
            None,
            "completed",
        ),
        (
            "flask run",
            "Address already in use\nPort 5000 is in use by another program.",
            None,
            "failed",
        ),
    ),
    "uvicorn": (
        (
            "uvicorn main:app --reload",
            "INFO:     Uvicorn running on http://127.0.0.1:8000 (Press CTRL+C to quit)",
            None,
            "completed",
        ),
        (
            "uvicorn main:app",
            "ERROR:    [Errno 98] error while attempting to bind on address "
            "('127.0.0.1', 8000): address already in use",
            None,
            "failed",
        ),
    ),
    # -- JavaScript / TypeScript --
    "jest": (
        (
            "npx jest",
            "Test Suites: 2 passed, 2 total\nTests:       5 passed, 5 total\nSnapshots:   0 total",
            None,
            "pass",
        ),
        ("npx jest --ci", "Tests:       1 failed, 4 passed, 5 total", None, "fail"),
    ),
    "vitest": (
        (
            "npx vitest run",
            " Test Files  2 passed (2)\n      Tests  5 passed (5)\n   Duration  1.20s",
            None,
            "pass",
        ),
        (
            "npx vitest run",
            " Test Files  1 failed | 1 passed (2)\n      Tests  1 failed | 4 passed (5)",
            None,
            "fail",
        ),
    ),
    "mocha": (
        ("npx mocha", "  Array\n    ✔ returns -1\n\n  3 passing (12ms)", None, "pass"),
        ("npx mocha", "  2 passing (15ms)\n  1 failing\n\n  1) Array #indexOf():", None, "fail"),
    ),
    "playwright test": (
        (
            "npx playwright test",
            "Running 3 tests using 2 workers\n\n  3 passed (5.2s)",
            None,
            "pass",
        ),
        (
            "npx playwright test",
            "  1 failed\n    [chromium] \u203a example.spec.ts:3:5"
            " \u203a has title\n  2 passed (4.1s)",
            None,
            "fail",
        ),
    ),
    "cypress run": (
        (
            "npx cypress run",
            "  ✔  All specs passed!     00:05    3    3    -    -    -",
            None,
            "pass",
        ),
        (
            "npx cypress run",
            "  ✖  1 of 2 failed (50%)    00:10    5    4    1    -    -",
            None,
            "fail",
        ),
    ),
    "eslint": (
        ("npx eslint src", "", 0, "pass"),
        (
            "npx eslint src | tail",
            "/w/src/a.js\n  1:7  error  'x' is assigned a value but never used  no-unused-vars\n\n"
            "✖ 1 problem (1 error, 0 warnings)",
            None,
            "fail",
        ),
    ),
    "next lint": (
        ("npx next lint", "✔ No ESLint warnings or errors", None, "pass"),
        (
            "npx next lint",
            "./src/app/page.tsx\n3:7  Error: 'x' is assigned a value but never used.  "
            "@typescript-eslint/no-unused-vars",
            None,
            "fail",
        ),
    ),
    "prettier --check": (
        (
            "npx prettier --check .",
            "Checking formatting...\nAll matched files use Prettier code style!",
            None,
            "pass",
        ),
        (
            "npx prettier --check .",
            "Checking formatting...\n[warn] src/a.js\n"
            "[warn] Code style issues found in the above file. Run Prettier with --write to fix.",
            None,
            "fail",
        ),
    ),
    "tsc": (
        ("npx tsc --noEmit", "", 0, "pass"),
        (
            "npx tsc --noEmit | head",
            "src/a.ts(3,1): error TS2304: Cannot find name 'x'.\n\nFound 1 error in src/a.ts:3",
            None,
            "fail",
        ),
    ),
    "webpack": (
        (
            "npx webpack --mode production",
            "webpack 5.90.0 compiled successfully in 1234 ms",
            None,
            "pass",
        ),
        (
            "npx webpack",
            "ERROR in ./src/index.js 3:0-20\nModule not found: Error: Can't resolve './missing'\n\n"
            "webpack 5.90.0 compiled with 1 error in 900 ms",
            None,
            "fail",
        ),
    ),
    "vite build": (
        (
            "npx vite build",
            "vite v5.0.0 building for production...\n✓ 32 modules transformed.\n✓ built in 1.20s",
            None,
            "pass",
        ),
        (
            "npx vite build",
            'error during build:\nError: Could not resolve "./missing" from "src/main.ts"',
            None,
            "fail",
        ),
    ),
    "next build": (
        (
            "npx next build",
            "   Creating an optimized production build ...\n ✓ Compiled successfully\n"
            " ✓ Linting and checking validity of types\n ✓ Generating static pages (5/5)",
            None,
            "pass",
        ),
        (
            "npx next build",
            "Failed to compile.\n\n./src/app/page.tsx:3:7\n"
            "Type error: Type 'number' is not assignable to type 'string'.",
            None,
            "fail",
        ),
    ),
    "rollup": (
        (
            "npx rollup -c",
            "src/main.js → dist/bundle.js...\ncreated dist/bundle.js in 120ms",
            None,
            "pass",
        ),
        (
            "npx rollup -c",
            "[!] RollupError: Could not resolve './missing' from src/main.js",
            None,
            "fail",
        ),
    ),
    "esbuild": (
        (
            "npx esbuild src/app.ts --bundle --outfile=dist/out.js",
            "\n  dist/out.js  1.2kb\n\n⚡ Done in 12ms",
            None,
            "pass",
        ),
        (
            "npx esbuild src/app.ts --bundle",
            '✘ [ERROR] Could not resolve "./missing"\n\n    src/app.ts:1:17:\n\n1 error',
            None,
            "fail",
        ),
    ),
    "turbo": (
        (
            "npx turbo run build",
            " Tasks:    2 successful, 2 total\nCached:    0 cached, 2 total",
            None,
            "pass",
        ),
        (
            "npx turbo build",
            " Tasks:    1 successful, 2 total\nCached:    0 cached, 2 total\n"
            "Failed:    web#build\n\n ERROR  run failed: command  exited (1)",
            None,
            "fail",
        ),
    ),
    "npm scripts": (
        ("npm test", "> app@1.0.0 test\n> jest\n\nTests:       3 passed, 3 total", None, "pass"),
        (
            "npm run build",
            "> app@1.0.0 build\n> tsc\n\nsrc/a.ts(1,1): error TS2304: Cannot find name 'x'.\n"
            "npm error Lifecycle script `build` failed with error:",
            None,
            "fail",
        ),
    ),
    "yarn scripts": (
        ("yarn test", "$ vitest run\n      Tests  4 passed (4)\nDone in 2.10s.", None, "pass"),
        (
            "yarn lint",
            "$ eslint .\n/w/a.js\n  1:1  error  'x' is not defined  no-undef\n\n"
            "✖ 1 problem (1 error, 0 warnings)\n\nerror Command failed with exit code 1.",
            None,
            "fail",
        ),
    ),
    "pnpm scripts": (
        (
            "pnpm test",
            "> app@1.0.0 test /w\n> vitest run\n\n      Tests  2 passed (2)",
            None,
            "pass",
        ),
        (
            "pnpm run build",
            "> app@1.0.0 build /w\n> vite build\n\n ELIFECYCLE  Command failed with exit code 1.",
            None,
            "fail",
        ),
    ),
    "bun scripts": (
        ("bun run build", "$ vite build\n✓ built in 800ms", None, "pass"),
        ("bun run lint", '$ eslint .\nerror: script "lint" exited with code 1', None, "fail"),
    ),
    "bun test": (
        (
            "bun test",
            " 5 pass\n 0 fail\n 9 expect() calls\nRan 5 tests across 2 files. [30.00ms]",
            None,
            "pass",
        ),
        ("bun test", " 4 pass\n 1 fail\nRan 5 tests across 2 files. [31.00ms]", None, "fail"),
    ),
    "npm install": (
        ("npm install", "added 120 packages, and audited 121 packages in 3s", None, "completed"),
        (
            "npm install react@99",
            "npm error code ETARGET\nnpm error notarget No matching version found for react@99.",
            None,
            "failed",
        ),
    ),
    "yarn add/install": (
        ("yarn add zod", "success Saved 1 new dependency.\nDone in 1.52s.", None, "completed"),
        (
            "yarn add nope-nope",
            'error An unexpected error occurred: "https://registry.yarnpkg.com/nope-nope: '
            'Not found".',
            None,
            "failed",
        ),
    ),
    "pnpm add/install": (
        (
            "pnpm add zod",
            "Packages: +3\n+++\n\ndependencies:\n+ zod 3.23.8\n\nDone in 1.2s",
            None,
            "completed",
        ),
        (
            "pnpm add nope-nope",
            " ERR_PNPM_FETCH_404  GET https://registry.npmjs.org/nope-nope: Not Found - 404",
            None,
            "failed",
        ),
    ),
    "bun add/install": (
        (
            "bun add zod",
            "installed zod@3.23.8\n\n1 package installed [120.00ms]",
            None,
            "completed",
        ),
        (
            "bun add nope-nope",
            'error: package "nope-nope" not found registry.npmjs.org/nope-nope 404',
            None,
            "failed",
        ),
    ),
    "npm publish": (
        (
            "npm publish",
            "npm notice Publishing to https://registry.npmjs.org/\n+ my-pkg@1.0.0",
            None,
            "completed",
        ),
        (
            "npm publish",
            "npm error code E403\nnpm error 403 Forbidden - PUT"
            " https://registry.npmjs.org/my-pkg - "
            "You cannot publish over the previously published versions: 1.0.0.",
            None,
            "failed",
        ),
    ),
    "create-* scaffolders": (
        (
            "npx create-react-app my-app",
            "Creating a new React app in /w/my-app.\n\nadded 1480 packages in 40s\n\n"
            "Success! Created my-app at /w/my-app",
            None,
            "completed",
        ),
        (
            "npx create-next-app@latest my-app",
            "Aborting installation.\n  npm install has failed.",
            None,
            "failed",
        ),
    ),
    "npm/yarn/pnpm/bun create": (
        (
            "npm create vite@latest my-app -- --template react",
            "Scaffolding project in /w/my-app...\n\nDone. Now run:\n\n  cd my-app\n  npm install",
            None,
            "completed",
        ),
        (
            "yarn create vite my-app",
            'error Couldn\'t find a package.json file in "/w"',
            None,
            "failed",
        ),
    ),
    "vite dev server": (
        (
            "npx vite --port 5173",
            "  VITE v5.0.0  ready in 300 ms\n\n  ➜  Local:   http://localhost:5173/",
            None,
            "completed",
        ),
        (
            "npx vite",
            "error when starting dev server:\nError: listen"
            " EADDRINUSE: address already in use :::5173",
            None,
            "failed",
        ),
    ),
    "next dev": (
        (
            "npx next dev",
            "  ▲ Next.js 14.2.0\n  - Local:        http://localhost:3000\n\n ✓ Ready in 2.1s",
            None,
            "completed",
        ),
        (
            "npx next dev",
            " \u2a2f Failed to start server\nError: listen"
            " EADDRINUSE: address already in use :::3000",
            None,
            "failed",
        ),
    ),
    # -- Go --
    "go test": (
        (
            "go test ./...",
            "ok  \texample.com/app\t0.012s\nok  \texample.com/app/util\t(cached)",
            None,
            "pass",
        ),
        (
            "go test ./...",
            "--- FAIL: TestParse (0.00s)\n    parse_test.go:12: got 1, want 2\nFAIL\n"
            "FAIL\texample.com/app\t0.010s\nFAIL",
            None,
            "fail",
        ),
    ),
    "go build": (
        ("go build ./...", "", 0, "pass"),
        (
            "go build ./... 2>&1 | head",
            "# example.com/app\n./main.go:5:2: undefined: x",
            None,
            "fail",
        ),
    ),
    "go vet": (
        ("go vet ./...", "", 0, "pass"),
        (
            "go vet ./... 2>&1 | head",
            "# example.com/app\n./main.go:9:2: fmt.Printf format %d has arg s of wrong type string",
            None,
            "fail",
        ),
    ),
    "golangci-lint": (
        ("golangci-lint run ./...", "0 issues.", None, "pass"),
        (
            "golangci-lint run",
            "main.go:9:2: Error return value of `f.Close` is not checked (errcheck)\n"
            "1 issues:\n* errcheck: 1",
            None,
            "fail",
        ),
    ),
    "staticcheck": (
        ("staticcheck ./...", "", 0, "pass"),
        (
            "staticcheck ./... | head",
            "main.go:12:2: this value of err is never used (SA4006)",
            None,
            "fail",
        ),
    ),
    "go get/install": (
        (
            "go get github.com/x/y@v1.2.3",
            "go: downloading github.com/x/y v1.2.3\ngo: added github.com/x/y v1.2.3",
            None,
            "completed",
        ),
        (
            "go get github.com/x/nope",
            "go: module github.com/x/nope: reading"
            " https://proxy.golang.org/github.com/x/nope/@v/list: "
            "404 Not Found",
            None,
            "failed",
        ),
    ),
    # -- Rust --
    "cargo nextest": (
        (
            "cargo nextest run",
            "     Summary [   0.010s] 4 tests run: 4 passed, 0 skipped",
            None,
            "pass",
        ),
        (
            "cargo nextest run",
            "     Summary [   0.012s] 4 tests run: 3 passed, 1"
            " failed, 0 skipped\nerror: test run failed",
            None,
            "fail",
        ),
    ),
    "cargo test": (
        (
            "cargo test",
            "running 3 tests\n...\ntest result: ok. 3 passed; 0 failed; 0 ignored; 0 measured; "
            "0 filtered out; finished in 0.00s",
            None,
            "pass",
        ),
        ("cargo test", "test result: FAILED. 2 passed; 1 failed; 0 ignored", None, "fail"),
    ),
    "cargo build": (
        (
            "cargo build --release",
            "   Compiling app v0.1.0 (/w)\n    Finished `release`"
            " profile [optimized] target(s) in 9.1s",
            None,
            "pass",
        ),
        (
            "cargo build",
            "error[E0425]: cannot find value `x` in this scope\n --> src/main.rs:2:5\n\n"
            'error: could not compile `app` (bin "app") due to 1 previous error',
            None,
            "fail",
        ),
    ),
    "cargo check": (
        (
            "cargo check",
            "    Checking app v0.1.0 (/w)\n    Finished `dev` profile"
            " [unoptimized + debuginfo] target(s) in 0.9s",
            None,
            "pass",
        ),
        ("cargo check", "error[E0308]: mismatched types\n --> src/lib.rs:4:9", None, "fail"),
    ),
    "cargo clippy": (
        (
            "cargo clippy -- -D warnings",
            "    Finished `dev` profile [unoptimized + debuginfo] target(s) in 1.1s",
            None,
            "pass",
        ),
        (
            "cargo clippy -- -D warnings",
            "error: this `if` has identical blocks\n --> src/lib.rs:3:5",
            None,
            "fail",
        ),
    ),
    "cargo fmt --check": (
        ("cargo fmt --check", "", 0, "pass"),
        (
            "cargo fmt --check | head",
            "Diff in /w/src/main.rs at line 1:\n-fn main(){}\n+fn main() {}",
            None,
            "fail",
        ),
    ),
    "cargo add/install": (
        (
            "cargo add serde",
            "    Updating crates.io index\n      Adding serde v1.0.204 to dependencies",
            None,
            "completed",
        ),
        (
            "cargo add nope-nope",
            "error: the crate `nope-nope` could not be found in registry index.",
            None,
            "failed",
        ),
    ),
    "cargo new/init": (
        ("cargo new hello", "    Creating binary (application) `hello` package", None, "completed"),
        ("cargo new hello", "error: destination `/w/hello` already exists", None, "failed"),
    ),
    "cargo publish": (
        (
            "cargo publish",
            "   Uploaded mycrate v0.1.0 to registry `crates-io`\n"
            "   Published mycrate v0.1.0 at registry `crates-io`",
            None,
            "completed",
        ),
        (
            "cargo publish",
            "error: failed to publish to registry at https://crates.io\n\nCaused by:\n"
            "  the remote server responded with an error: crate"
            " version `0.1.0` is already uploaded",
            None,
            "failed",
        ),
    ),
    # -- Java / Kotlin --
    "mvn test": (
        (
            "mvn test",
            "[INFO] Tests run: 12, Failures: 0, Errors: 0, Skipped: 0\n"
            "[INFO] ------------------------------------------------------------------------\n"
            "[INFO] BUILD SUCCESS",
            None,
            "pass",
        ),
        (
            "mvn -q clean verify",
            "[ERROR] Tests run: 12, Failures: 1, Errors: 0, Skipped: 0\n[INFO] BUILD FAILURE",
            None,
            "fail",
        ),
    ),
    "mvn compile": (
        ("mvn compile", "[INFO] BUILD SUCCESS", None, "pass"),
        ("mvn compile", "[ERROR] COMPILATION ERROR : \n[INFO] BUILD FAILURE", None, "fail"),
    ),
    "gradle test": (
        (
            "./gradlew test",
            "> Task :test\n\nBUILD SUCCESSFUL in 8s\n4 actionable tasks: 4 executed",
            None,
            "pass",
        ),
        (
            "./gradlew test",
            "> Task :test FAILED\n\n3 tests completed, 1 failed\n\n"
            "FAILURE: Build failed with an exception.\n\nBUILD FAILED in 5s",
            None,
            "fail",
        ),
    ),
    "gradle build": (
        ("gradle assemble", "BUILD SUCCESSFUL in 12s", None, "pass"),
        (
            "./gradlew build",
            "e: file:///w/App.kt:3:5 Unresolved reference: x\n\nBUILD FAILED in 3s",
            None,
            "fail",
        ),
    ),
    "ktlint": (
        ("ktlint 'src/**/*.kt'", "", 0, "pass"),
        (
            "ktlint | head",
            'src/main/kotlin/App.kt:3:1: Unexpected blank line(s) before "}" '
            "(standard:no-blank-line-before-rbrace)",
            None,
            "fail",
        ),
    ),
    "detekt": (
        ("detekt --input src", "", 0, "pass"),
        (
            "detekt --input src",
            "complexity - 10min debt\n\tLongMethod - [run] at /w/App.kt:3:5\n\n"
            "Build failed with 1 weighted issues (threshold defined was 0).",
            None,
            "fail",
        ),
    ),
    # -- Ruby --
    "rspec": (
        (
            "bundle exec rspec",
            "Finished in 0.1 seconds (files took 0.2 seconds to load)\n5 examples, 0 failures",
            None,
            "pass",
        ),
        (
            "bundle exec rspec",
            "5 examples, 1 failure\n\nFailed examples:\n\nrspec ./spec/a_spec.rb:3",
            None,
            "fail",
        ),
    ),
    "minitest": (
        (
            "bin/rails test",
            "Finished in 0.5s\n10 runs, 20 assertions, 0 failures, 0 errors, 0 skips",
            None,
            "pass",
        ),
        ("bin/rails test", "10 runs, 20 assertions, 1 failures, 0 errors, 0 skips", None, "fail"),
    ),
    "rake test": (
        (
            "bundle exec rake test",
            "10 runs, 20 assertions, 0 failures, 0 errors, 0 skips",
            None,
            "pass",
        ),
        (
            "rake test",
            "2 runs, 2 assertions, 1 failures, 0 errors, 0 skips\nrake aborted!\n"
            "Command failed with status (1)",
            None,
            "fail",
        ),
    ),
    "rubocop": (
        (
            "bundle exec rubocop",
            "Inspecting 12 files\n............\n\n12 files inspected, no offenses detected",
            None,
            "pass",
        ),
        (
            "rubocop",
            "12 files inspected, 2 offenses detected, 2 offenses autocorrectable",
            None,
            "fail",
        ),
    ),
    "bundle/gem install": (
        (
            "bundle install",
            "Bundle complete! 12 Gemfile dependencies, 40 gems now installed.",
            None,
            "completed",
        ),
        (
            "bundle install",
            "Could not find gem 'nope' in rubygems repository https://rubygems.org/ "
            "or installed locally.",
            None,
            "failed",
        ),
    ),
    "gem push": (
        (
            "gem push mygem-0.1.0.gem",
            "Pushing gem to https://rubygems.org...\nSuccessfully registered gem: mygem (0.1.0)",
            None,
            "completed",
        ),
        (
            "gem push mygem-0.1.0.gem",
            "Pushing gem to https://rubygems.org...\nRepushing of gem versions is not allowed.",
            None,
            "failed",
        ),
    ),
    "rails server": (
        (
            "bin/rails server",
            "=> Booting Puma\n* Listening on http://127.0.0.1:3000",
            None,
            "completed",
        ),
        (
            "bin/rails server",
            'Address already in use - bind(2) for "127.0.0.1" port 3000 (Errno::EADDRINUSE)',
            None,
            "failed",
        ),
    ),
    # -- PHP --
    "phpunit": (
        (
            "vendor/bin/phpunit",
            "PHPUnit 11.0.0 by Sebastian Bergmann and contributors.\n\n...   3 / 3 (100%)\n\n"
            "Time: 00:00.010, Memory: 8.00 MB\n\nOK (3 tests, 5 assertions)",
            None,
            "pass",
        ),
        (
            "vendor/bin/phpunit",
            "There was 1 failure:\n\n1)"
            " StackTest::testPop\n\nFAILURES!\nTests: 3, Assertions: 5, Failures: 1.",
            None,
            "fail",
        ),
    ),
    "pest": (
        (
            "./vendor/bin/pest",
            "  Tests:    2 passed (4 assertions)\n  Duration: 0.05s",
            None,
            "pass",
        ),
        (
            "./vendor/bin/pest",
            "  Tests:    1 failed, 1 passed (2 assertions)\n  Duration: 0.06s",
            None,
            "fail",
        ),
    ),
    "phpstan": (
        (
            "vendor/bin/phpstan analyse src",
            " 12/12 [============================] 100%\n\n [OK] No errors",
            None,
            "pass",
        ),
        ("vendor/bin/phpstan analyse src", " [ERROR] Found 2 errors", None, "fail"),
    ),
    "psalm": (
        ("vendor/bin/psalm", "No errors found!", None, "pass"),
        (
            "vendor/bin/psalm",
            "ERROR: InvalidReturnType - src/A.php:3:12 - The declared return type\n1 errors found",
            None,
            "fail",
        ),
    ),
    "php-cs-fixer --dry-run": (
        (
            "vendor/bin/php-cs-fixer fix --dry-run",
            "Loaded config default.\nChecked all files in 0.120 seconds, 12.000 MB memory used",
            None,
            "pass",
        ),
        (
            "vendor/bin/php-cs-fixer fix --dry-run --diff",
            "   1) src/A.php\n\nFound 1 of 10 files that can be fixed"
            " in 0.100 seconds, 12.000 MB memory used",
            None,
            "fail",
        ),
    ),
    "composer install/require": (
        (
            "composer require monolog/monolog",
            "Package operations: 1 install, 0 updates, 0 removals\n"
            "  - Installing monolog/monolog (3.7.0): Extracting archive\nGenerating autoload files",
            None,
            "completed",
        ),
        (
            "composer require nope/nope",
            "Your requirements could not be resolved to an installable set of packages.",
            None,
            "failed",
        ),
    ),
    "artisan serve": (
        (
            "php artisan serve",
            "   INFO  Server running on [http://127.0.0.1:8000].",
            None,
            "completed",
        ),
        (
            "php artisan serve",
            "Failed to listen on 127.0.0.1:8000 (reason: Address already in use)",
            None,
            "failed",
        ),
    ),
    # -- .NET --
    "dotnet test": (
        (
            "dotnet test",
            "Passed!  - Failed:     0, Passed:     5, Skipped:    "
            " 0, Total:     5, Duration: 50 ms - "
            "App.Tests.dll (net8.0)",
            None,
            "pass",
        ),
        (
            "dotnet test",
            "Failed!  - Failed:     1, Passed:     4, Skipped:    "
            " 0, Total:     5, Duration: 60 ms - "
            "App.Tests.dll (net8.0)",
            None,
            "fail",
        ),
    ),
    "dotnet build": (
        ("dotnet build", "Build succeeded.\n    0 Warning(s)\n    0 Error(s)", None, "pass"),
        (
            "dotnet build",
            "/w/Program.cs(3,1): error CS0103: The name 'x' does not exist in the current "
            "context\n\n"
            "Build FAILED.\n\n    0 Warning(s)\n    1 Error(s)",
            None,
            "fail",
        ),
    ),
    "dotnet format --verify-no-changes": (
        ("dotnet format --verify-no-changes", "", 0, "pass"),
        (
            "dotnet format --verify-no-changes",
            "/w/Program.cs(3,1): error WHITESPACE: Fix whitespace formatting. "
            "Replace 2 characters with ''.",
            None,
            "fail",
        ),
    ),
    "dotnet add package": (
        (
            "dotnet add package Newtonsoft.Json",
            "info : PackageReference for package 'Newtonsoft.Json' version '13.0.3' added to file "
            "'/w/App.csproj'.",
            None,
            "completed",
        ),
        (
            "dotnet add package Nope",
            "error: There are no versions available for the package 'Nope'.",
            None,
            "failed",
        ),
    ),
    "dotnet nuget push": (
        (
            "dotnet nuget push MyPkg.1.0.0.nupkg --source nuget.org",
            "Pushing MyPkg.1.0.0.nupkg to 'https://www.nuget.org/api/v2/package'...\n"
            "  Created https://www.nuget.org/api/v2/package/ 1200ms\nYour package was pushed.",
            None,
            "completed",
        ),
        (
            "dotnet nuget push MyPkg.1.0.0.nupkg",
            "error: Response status code does not indicate"
            " success: 409 (Conflict - The feed already "
            "contains 'MyPkg 1.0.0'.).",
            None,
            "failed",
        ),
    ),
    # -- recipes --
    "make": (
        ("make build", "cc -o app main.c", 0, "pass"),
        ("make test 2>&1 | tail", "make: *** [Makefile:5: test] Error 1", None, "fail"),
    ),
    "just": (
        (
            "just check",
            "cargo clippy\n    Finished `dev` profile [unoptimized] target(s) in 0.5s",
            None,
            "pass",
        ),
        ("just test", "error: Recipe `test` failed on line 3 with exit code 1", None, "fail"),
    ),
    "task": (
        ("task lint", "task: [lint] ruff check .\nAll checks passed!", None, "pass"),
        ("task test", 'task: Failed to run task "test": exit status 1', None, "fail"),
    ),
    # -- containers, clusters, infrastructure --
    "docker build": (
        ("docker build -t app .", "#8 naming to docker.io/library/app:latest done", None, "pass"),
        (
            "docker build -t app .",
            'ERROR: failed to solve: process "/bin/sh -c npm ci" did not complete '
            "successfully: exit code: 1",
            None,
            "fail",
        ),
    ),
    "docker push": (
        (
            "docker push reg.example.test/app:1",
            "1: digest: sha256:0123abcd size: 1573",
            None,
            "completed",
        ),
        (
            "docker push reg.example.test/app:1",
            "denied: requested access to the resource is denied",
            None,
            "failed",
        ),
    ),
    "kubectl": (
        (
            "kubectl apply -f k8s/",
            "deployment.apps/web configured\nservice/web unchanged",
            None,
            "completed",
        ),
        ("kubectl apply -f app.yaml", 'error: the path "app.yaml" does not exist', None, "failed"),
    ),
    "helm": (
        (
            "helm upgrade --install web ./chart",
            'Release "web" has been upgraded. Happy Helming!\n'
            "NAME: web\nSTATUS: deployed\nREVISION: 2",
            None,
            "completed",
        ),
        (
            "helm install web ./chart",
            "Error: INSTALLATION FAILED: cannot re-use a name that is still in use",
            None,
            "failed",
        ),
    ),
    "terraform apply": (
        (
            "terraform apply -auto-approve",
            "Apply complete! Resources: 2 added, 0 changed, 0 destroyed.",
            None,
            "completed",
        ),
        (
            "terraform apply -auto-approve",
            "│ Error: creating S3 Bucket (x): BucketAlreadyExists",
            None,
            "failed",
        ),
    ),
    "vercel": (
        ("vercel --prod", "✅  Production: https://app-abc.vercel.app [2s]", None, "completed"),
        (
            "vercel deploy",
            "Error: No existing credentials found. Please run `vercel login`",
            None,
            "failed",
        ),
    ),
    "netlify deploy": (
        (
            "netlify deploy --prod",
            "Deploy is live!\n\nWebsite URL:       https://site.netlify.app",
            None,
            "completed",
        ),
        (
            "netlify deploy --prod",
            "Error: Deploy did not succeed: Failed to upload file",
            None,
            "failed",
        ),
    ),
    "fly deploy": (
        ("fly deploy", "Visit your newly deployed app at https://app.fly.dev/", None, "completed"),
        (
            "flyctl deploy",
            "Error: failed to fetch an image or build from source: no such file",
            None,
            "failed",
        ),
    ),
    "heroku": (
        (
            "heroku container:release web -a app",
            "Releasing images web to app... done",
            None,
            "completed",
        ),
        (
            "heroku container:release web -a app",
            " ▸    Error: Missing required flag: --app",
            1,
            "failed",
        ),
    ),
    "wrangler/firebase/railway deploy": (
        (
            "npx wrangler deploy",
            "Uploaded worker (1.2 sec)\nDeployed worker triggers (0.31"
            " sec)\n  https://worker.example.workers.dev",
            None,
            "completed",
        ),
        (
            "npx wrangler deploy",
            "✘ [ERROR] A request to the Cloudflare API (/accounts/x/workers/scripts/w) failed.",
            None,
            "failed",
        ),
    ),
    # -- version control and forges --
    "git commit": (
        (
            "git commit -m 'Fix parser'",
            "[main 3f2a1bc] Fix parser\n 1 file changed, 2 insertions(+)",
            None,
            "completed",
        ),
        ("git commit -m x", "husky - pre-commit hook exited with code 1 (error)", 1, "failed"),
    ),
    "git push": (
        (
            "git push origin main",
            "To github.com:o/r.git\n   1a2b3c4..5d6e7f8  main -> main",
            None,
            "completed",
        ),
        (
            "git push origin main",
            " ! [rejected]        main -> main (fetch first)\n"
            "error: failed to push some refs to 'github.com:o/r.git'",
            None,
            "failed",
        ),
    ),
    "git tag": (
        ("git tag v1.2.0", "", 0, "completed"),
        ("git tag v1.2.0", "fatal: tag 'v1.2.0' already exists", None, "failed"),
    ),
    "gh pr create/merge": (
        ("gh pr create --fill", "https://github.com/o/r/pull/7", None, "completed"),
        (
            "gh pr merge 7 --squash",
            "X Pull request #7 is not mergeable: the merge commit cannot be cleanly created.",
            None,
            "failed",
        ),
    ),
    "gh issue create": (
        (
            "gh issue create --title x --body y",
            "https://github.com/o/r/issues/12",
            None,
            "completed",
        ),
        (
            "gh issue create --title x --body y",
            "GraphQL: Could not resolve to a Repository with the name 'o/x'. (repository)",
            None,
            "failed",
        ),
    ),
    "gh release/repo create": (
        (
            "gh release create v1.0.0 --notes x",
            "https://github.com/o/r/releases/tag/v1.0.0",
            None,
            "completed",
        ),
        (
            "gh release create v1.0.0",
            "HTTP 422: Validation Failed (https://api.github.com/repos/o/r/releases)",
            None,
            "failed",
        ),
    ),
    "glab mr create/merge": (
        (
            "glab mr create --fill --yes",
            "Creating merge request for fix into main in o/r\n\n!12 Fix the parser (fix)\n"
            " https://gitlab.example.test/o/r/-/merge_requests/12",
            None,
            "completed",
        ),
        (
            "glab mr create --fill --yes",
            "POST https://gitlab.example.test/api/v4/projects/o%2Fr/merge_requests: 409 "
            "{message: [Another open merge request already exists for this source branch: !11]}",
            None,
            "failed",
        ),
    ),
    "glab issue create": (
        (
            "glab issue create -t x -d y",
            "#5 x (about 1 second ago)\n https://gitlab.example.test/o/r/-/issues/5",
            None,
            "completed",
        ),
        (
            "glab issue create -t x -d y",
            "POST"
            " https://gitlab.example.test/api/v4/project"
            "s/o%2Fr/issues: 403 {message: 403 Forbidden}",
            None,
            "failed",
        ),
    ),
    # -- HTTP clients with a method --
    "curl": (
        (
            "curl -si -X POST -d a=1 https://api.example.test/v1/items",
            "HTTP/2 201 \ncontent-type: application/json",
            None,
            "completed",
        ),
        (
            "curl -si -X PUT -d a=1 https://api.example.test/v1/items/1",
            "HTTP/2 422 \n{}",
            None,
            "failed",
        ),
    ),
    "wget": (
        (
            "wget --method=POST --body-data='a=1' https://api.example.test/v1/items",
            "HTTP request sent, awaiting response... 201 Created",
            None,
            "completed",
        ),
        (
            "wget --post-data='a=1' https://api.example.test/v1/items",
            "HTTP request sent, awaiting response... 403"
            " Forbidden\n2024-01-01 10:00:00 ERROR 403: Forbidden.",
            None,
            "failed",
        ),
    ),
    "httpie": (
        (
            "http POST https://api.example.test/v1/items name=x",
            "HTTP/1.1 201 Created\n{}",
            None,
            "completed",
        ),
        (
            "http DELETE https://api.example.test/v1/items/1",
            "HTTP/1.1 401 Unauthorized\n{}",
            None,
            "failed",
        ),
    ),
    # -- other runners by their subcommand --
    "bazel": (
        (
            "bazel test //...",
            "INFO: Build completed successfully, 12 total"
            " actions\nExecuted 3 out of 3 tests: 3 tests pass.",
            None,
            "pass",
        ),
        (
            "bazel test //...",
            "Executed 3 out of 3 tests: 2 tests pass and 1 fails locally.\n"
            "FAILED: Build did NOT complete successfully",
            None,
            "fail",
        ),
    ),
    "swift test/build": (
        ("swift build", "Building for debugging...\nBuild complete! (2.10s)", None, "pass"),
        (
            "swift test",
            "Test Suite 'All tests' failed at 2024-01-01 10:00:00.000.\n"
            "\t Executed 3 tests, with 1 failure (0 unexpected) in 0.010 (0.011) seconds",
            None,
            "fail",
        ),
    ),
    "sbt/mix/stack/cabal/zig/dune/deno/flutter/dart/meson": (
        (
            "sbt test",
            "[info] Passed: Total 5, Failed 0, Errors 0, Passed 5\n[success] Total time: 12 s",
            None,
            "pass",
        ),
        ("mix test", "Finished in 0.1 seconds\n5 tests, 1 failure", None, "fail"),
    ),
    "ctest/bats/ava/karma/tap": (
        ("ctest", "100% tests passed, 0 tests failed out of 4", None, "pass"),
        ("ctest --output-on-failure", "75% tests passed, 1 tests failed out of 4", None, "fail"),
    ),
    "shellcheck/stylelint/biome/hadolint": (
        ("shellcheck deploy.sh", "", 0, "pass"),
        (
            "shellcheck deploy.sh | head",
            "\nIn deploy.sh line 3:\necho $1\n     ^-- SC2086"
            " (info): Double quote to prevent globbing.",
            None,
            "fail",
        ),
    ),
}


@pytest.mark.parametrize("name", [t.name for t in TOOLS])
def test_every_row_has_a_passing_and_a_failing_documented_output(name: str) -> None:
    assert name in SAMPLES, f"{name}: no sample outputs"
    passing, failing = SAMPLES[name]
    good = {"pass", "completed"}
    assert passing[3] in good and failing[3] not in good, name


def test_the_catalogue_covers_the_ecosystems_with_at_least_sixty_rows() -> None:
    assert len(TOOLS) >= 60
    assert len({t.name for t in TOOLS}) == len(TOOLS)
    ecosystems = {t.ecosystem for t in TOOLS}
    assert {
        "python",
        "javascript",
        "go",
        "rust",
        "java",
        "kotlin",
        "ruby",
        "php",
        "dotnet",
    } <= ecosystems
    assert all(t.source.startswith("https://") for t in TOOLS)


def _cases() -> list[tuple[str, Case]]:
    return [(name, case) for name, pair in SAMPLES.items() for case in pair]


@pytest.mark.parametrize(
    ("name", "case"), _cases(), ids=lambda v: v if isinstance(v, str) else v[0][:40]
)
def test_each_documented_output_is_read_as_the_tool_documents_it(name: str, case: Case) -> None:
    line, output, status, expected = case
    tool = BY_NAME[name]
    reading = read_command(line, output, status)
    if tool.kind is not None:
        assert len(reading.checks) == 1, reading.checks
        check, verdict = reading.checks[0]
        if not tool.delegates:
            assert check.runner == name or name in check.tools, check
        assert verdict.result == expected, (check, verdict)
    else:
        assert tool.effect is not None
        effects = [e for e in reading.effects if e.effect_class == tool.effect.effect_class]
        assert len(effects) == 1, reading.effects
        assert effects[0].outcome == expected, effects[0]


def test_docs_tools_md_is_the_catalogue() -> None:
    from pathlib import Path

    from outcomes.importers.catalogue import catalogue_markdown

    doc = Path(__file__).resolve().parent.parent / "docs" / "tools.md"
    assert doc.read_text(encoding="utf-8") == catalogue_markdown(), (
        "docs/tools.md is out of step with importers/catalogue.py: regenerate it with "
        "catalogue_markdown()"
    )
