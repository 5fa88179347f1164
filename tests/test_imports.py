"""Every engine module imports on its own in a fresh interpreter.

The CLI imports modules in one fixed order, which hides import cycles: `import
engine.metrics.summarize` alone once failed with a circular ImportError (phases/__init__ pulled in
the metrics it is itself imported by). One child interpreter per module catches that.
"""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _modules() -> list[str]:
    out = []
    for p in sorted((ROOT / "engine").rglob("*.py")):
        parts = p.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__main__":
            continue
        out.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return out


def _import_alone(module: str) -> tuple[str, str]:
    proc = subprocess.run([sys.executable, "-c", f"import {module}"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    return module, proc.stderr.strip().splitlines()[-1] if proc.returncode else ""


def test_each_module_imports_alone():
    modules = _modules()
    assert "engine.metrics.summarize" in modules and len(modules) > 40
    with ThreadPoolExecutor(max_workers=4) as pool:
        failures = {m: err for m, err in pool.map(_import_alone, modules) if err}
    assert not failures, failures
