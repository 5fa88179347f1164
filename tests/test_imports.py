"""Every engine module imports on its own, with no other engine module loaded before it.

The CLI imports modules in one fixed order, which hides import cycles: `import
pa.metrics.summarize` alone once failed with a circular ImportError (phases/__init__ pulled in
the metrics it is itself imported by). Each module is imported in a process of its own that has
loaded no engine module.

Why forks and not one interpreter per module: starting Python and importing numpy, pydantic and the
LLM clients again for each of ~100 modules took most of a minute. One fresh interpreter loads the
third-party packages once (they cannot hide a cycle among engine modules), then forks a child per
module, as many at a time as there are cores; the child imports that one module and reports the
error's last line.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Runs in a fresh interpreter: argv[1] is a JSON list of modules, argv[2] a JSON list of third-party
# packages to load first; prints {module: error} as JSON.
_CHILD = r'''
import importlib, json, os, sys, traceback
for dep in json.loads(sys.argv[2]):
    try:
        importlib.import_module(dep)
    except Exception:
        pass  # an optional client missing here fails the engine module that needs it, as it should
assert not [m for m in sys.modules if m == "pa" or m.startswith("pa.")], "engine loaded too early"
failures, running = {}, {}


def reap():
    pid, status = os.wait()
    module, read = running.pop(pid)
    with os.fdopen(read, "rb") as pipe:  # the message is short: the child never blocks writing it
        msg = pipe.read().decode()
    if status != 0:
        failures[module] = msg or f"exit status {status}"


for module in json.loads(sys.argv[1]):
    if len(running) >= (os.cpu_count() or 1):
        reap()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        code, msg = 0, b""
        try:
            importlib.import_module(module)
        except BaseException:
            code, msg = 1, traceback.format_exc().strip().splitlines()[-1].encode()
        os.write(write, msg[:4000])
        os._exit(code)
    os.close(write)
    running[pid] = (module, read)
while running:
    reap()
print(json.dumps(failures))
'''


def _modules() -> list[str]:
    out = []
    for p in sorted((ROOT / "pa").rglob("*.py")):
        parts = p.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__main__":
            continue
        out.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return out


THIRD_PARTY = ["numpy", "scipy.stats", "pydantic", "yaml", "jinja2", "jsonschema", "click", "rich.console",
               "anthropic", "openai", "google.genai", "instructor"]


def _failures(modules: list[str], preload: list[str] = THIRD_PARTY) -> dict[str, str]:
    proc = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(modules), json.dumps(preload)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    failures: dict[str, str] = json.loads(proc.stdout.strip().splitlines()[-1])
    return failures


@pytest.mark.slow  # a process per engine module
def test_each_module_imports_alone():
    modules = _modules()
    assert "pa.metrics.summarize" in modules and len(modules) > 40
    failures = _failures(modules)
    assert not failures, failures


def test_a_module_that_cannot_import_is_reported():
    """The check can fail: a module that does not import is named with its error, the others are not."""
    failures = _failures(["pa.no_such_module", "pa.errors"], preload=[])
    assert list(failures) == ["pa.no_such_module"]
    assert "ModuleNotFoundError" in failures["pa.no_such_module"]
