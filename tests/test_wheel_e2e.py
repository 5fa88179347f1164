"""End to end from a wheel: pa installed into a fresh venv outside the checkout, run as a user would.

Skipped unless PA_WHEEL_TESTS=1 (it builds a wheel and a venv and installs the dependencies with
pip: minutes, and a package index). .ci/run runs it. Each workflow docs/user-guide.md walks through
is exercised on the installed package: a drop-in query directory, a pa.toml, an Nsight Systems
report with a stand-in `nsys`, and a site rule pack. Nothing here imports the checkout's package.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(os.environ.get("PA_WHEEL_TESTS") != "1",
                                reason="set PA_WHEEL_TESTS=1 to build the wheel and test it in a fresh venv")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A fresh venv (outside the checkout) with the wheel built from this checkout installed."""
    base = tmp_path_factory.mktemp("wheel")
    assert ROOT not in base.parents
    wheels = base / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(ROOT)],
                   check=True, timeout=900)
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    wheel = next(wheels.glob("pa-*.whl"))
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)], check=True,
                   timeout=1800)
    work = base / "work"
    work.mkdir()
    return {"venv": venv, "pa": venv / "bin" / "pa", "work": work}


def _env(installed: dict[str, Path], **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PA_", "PYTHON"))}
    env.update(XDG_CONFIG_HOME=str(installed["work"] / "xdg-config"),
               XDG_CACHE_HOME=str(installed["work"] / "xdg-cache"), **extra)
    return env


def pa(installed: dict[str, Path], *args: str, cwd: Path | None = None, check: bool = True,
       **env: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([str(installed["pa"]), *args], cwd=cwd or installed["work"], capture_output=True,
                          text=True, timeout=600, env=_env(installed, **env))
    if check:
        assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
    return proc


@pytest.fixture(scope="module")
def profile(installed: dict[str, Path]) -> Path:
    pa(installed, "example", "demo.sqlite")
    return installed["work"] / "demo.sqlite"


def _count(path: Path, sql: str) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute(sql).fetchone()[0])
    finally:
        conn.close()


def test_the_installed_package_is_the_one_running(installed):
    proc = subprocess.run([str(installed["venv"] / "bin" / "python"), "-c", "import pa; print(pa.__file__)"],
                          cwd=installed["work"], capture_output=True, text=True, check=True, env=_env(installed))
    assert str(installed["venv"]) in proc.stdout and str(ROOT) not in proc.stdout


def test_drop_in_query_directory(installed, profile):
    out = pa(installed, "queries", "--profile", str(profile)).stdout
    version = out.splitlines()[0].rsplit("query set nsys/", 1)[1].strip()
    kernels_line = next(ln for ln in out.splitlines()[1:] if ln.split()[0] == "kernels")
    assert "[bundled]" in kernels_line
    shown = pa(installed, "queries", "show", "kernels", "--profile", str(profile)).stdout
    body = "\n".join(ln for ln in shown.splitlines() if not ln.startswith("--")).strip().rstrip(";")
    qdir = installed["work"] / "site-queries"
    (qdir / "nsys" / version).mkdir(parents=True)
    (qdir / "nsys" / version / "kernels.sql").write_text(
        "-- relation: kernels\n-- requires: CUPTI_ACTIVITY_KIND_KERNEL\n"
        f"SELECT * FROM (\n{body}\n) WHERE row_id % 2 = 0\n")
    even = _count(profile, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE rowid % 2 = 0")
    check = pa(installed, "queries", "check", str(qdir), "--profile", str(profile)).stdout
    assert any(ln.split()[:2] == ["kernels", "resolved"] for ln in check.splitlines())
    for args, env in ((["--queries", str(qdir)], {}), ([], {"PA_QUERIES": str(qdir)})):
        doc = json.loads(pa(installed, "summary", "--json", *args, str(profile), **env).stdout)
        assert doc["gpu"]["kernel_count"] == even


def test_config_file(installed, profile):
    proj = installed["work"] / "project"
    proj.mkdir()
    (proj / "pa.toml").write_text('max_phases = 1\nformat = "markdown"\n')
    shown = pa(installed, "config", "show", cwd=proj).stdout
    assert any(ln.startswith("max_phases") and str(proj / "pa.toml") in ln for ln in shown.splitlines())
    doc = json.loads(pa(installed, "summary", "--json", str(profile), cwd=proj).stdout)
    assert len(doc["phases"]) <= 1
    assert pa(installed, "analyze", "--no-llm", str(profile), cwd=proj).stdout.startswith("#")
    (proj / "pa.toml").write_text("max_phase = 1\n")
    bad = pa(installed, "summary", str(profile), cwd=proj, check=False)
    assert bad.returncode == 2 and "max_phase" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_nsys_report_with_a_stand_in_nsys(installed, profile):
    bindir = installed["work"] / "bin"
    bindir.mkdir()
    nsys = bindir / "nsys"
    nsys.write_text(f"#!{sys.executable}\nimport shutil, sys\nargs = sys.argv[1:]\n"
                    "assert args[:3] == ['export', '--type', 'sqlite'], args\n"
                    f"shutil.copyfile({str(profile)!r}, args[args.index('--output') + 1])\n")
    nsys.chmod(nsys.stat().st_mode | stat.S_IXUSR)
    report = installed["work"] / "run.nsys-rep"
    report.write_bytes(b"stand-in report")
    path = f"{bindir}{os.pathsep}{os.environ['PATH']}"
    doc = json.loads(pa(installed, "summary", "--json", str(report), PATH=path).stdout)
    assert doc["gpu"]["kernel_count"] == _count(profile, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")
    again = pa(installed, "summary", "--json", str(report), PATH=str(installed["venv"] / "bin"))
    assert json.loads(again.stdout)["gpu"] == doc["gpu"]     # the cached export: nsys not needed again
    other = installed["work"] / "other.nsys-rep"
    other.write_bytes(b"another capture")
    no_nsys = pa(installed, "summary", str(other), check=False, PATH=str(installed["venv"] / "bin"))
    assert no_nsys.returncode == 2 and "nsys export --type sqlite" in no_nsys.stderr


def test_site_rule_pack(installed, profile):
    site = installed["work"] / "site.yaml"
    report = json.loads(pa(installed, "analyze", "--no-llm", "-f", "json", str(profile)).stdout)
    fired = [h["rule_id"] for h in report["hypotheses"]]
    assert fired, "the example profile fires at least one built-in rule"
    site.write_text(f"pack: site\ndescription: our site\ndisable: [{fired[0]}]\n")
    assert "ok: site.yaml" in pa(installed, "rules", "validate", str(site)).stdout
    after = json.loads(pa(installed, "analyze", "--no-llm", "-f", "json", "--rules", str(site), str(profile)).stdout)
    assert fired[0] not in [h["rule_id"] for h in after["hypotheses"]]
    listed = pa(installed, "rules", "list", "--rules", str(site)).stdout
    assert "disabled by" in next(ln for ln in listed.splitlines() if ln.startswith(fired[0]))


def test_help_is_fast_to_import(installed):
    code = ("import sys\nfrom pa.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print(' '.join(m for m in ('numpy', 'pydantic', 'jinja2', 'rich') if m in sys.modules), file=sys.stderr)")
    proc = subprocess.run([str(installed["venv"] / "bin" / "python"), "-c", code], cwd=installed["work"],
                          capture_output=True, text=True, env=_env(installed), timeout=120)
    assert proc.stderr.strip() == ""



def test_the_wheel_ships_the_agent_skill_and_pa_mcp_without_its_extra_says_how_to_get_it(installed):
    """The wheel is installed without extras: `pa skill install` works, `pa mcp` names `pa[mcp]` in one line."""
    skills = installed["work"] / "skills"
    pa(installed, "skill", "install", str(skills))
    assert (skills / "pa" / "SKILL.md").read_text(encoding="utf-8").startswith("---\nname: pa\n")
    proc = subprocess.run([str(installed["venv"] / "bin" / "python"), "-c", "import mcp"], capture_output=True,
                          env=_env(installed))
    if proc.returncode == 0:
        pytest.skip("the mcp package is installed in the wheel's venv")
    proc = pa(installed, "mcp", check=False)
    assert proc.returncode == 2 and proc.stderr == "pa: error: pa mcp needs the MCP SDK: pip install 'pa[mcp]' " \
                                                   "(or pip install mcp)\n"
