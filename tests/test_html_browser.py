"""The HTML report in a real browser: headless Chromium, network off, no console errors, screenshot."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from test_report_fixtures import make_report

from engine.report.render import render
from engine.report.schema import validate_report

pytestmark = pytest.mark.browser
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _chromium(profile_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--disable-dev-shm-usage", f"--user-data-dir={profile_dir}",
           # No network: every host resolves nowhere; a self-contained page never notices.
           "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=http://0.0.0.0:9",
           "--enable-logging=stderr", "--v=0", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=50, check=False)


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary")
def test_html_report_renders_in_chromium(tmp_path: Path) -> None:
    doc = validate_report(make_report(n_profiles=2))
    page = tmp_path / "report.html"
    page.write_text(render(doc, "html"), encoding="utf-8")
    url = page.as_uri()

    dom = _chromium(tmp_path / "p1", "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-2000:]
    # Chromium logs console messages as `INFO:CONSOLE:<line>]` (older builds: `CONSOLE(<line>)`), at
    # INFO level even for errors. The page has no script, so any console message at all (an
    # uncaught error, a CSP violation, a blocked fetch) is a failure.
    console = [ln for ln in dom.stderr.splitlines() if re.search(r"CONSOLE[(:]", ln)]
    assert console == [], console
    text = re.sub(r"<[^>]+>", " ", dom.stdout)
    for h in doc["hypotheses"]:
        assert h["title"] in text
    assert "Primary bottleneck" in text
    # one speedup bar per bounded finding, one gap bar per histogram bucket, one bar per rank
    assert len(re.findall(r'class="bar speedup-bar"', dom.stdout)) == 2
    assert len(re.findall(r'class="bar gap-bar"', dom.stdout)) == sum(
        len(d["gap_histogram"]) for d in doc["summary"]["devices"])
    assert len(re.findall(r'class="bar rank-bar"', dom.stdout)) == 2
    assert len(re.findall(r'<svg[^>]*id="timeline"', dom.stdout)) == 1

    png = tmp_path / "report.png"
    shot = _chromium(tmp_path / "p2", f"--screenshot={png}", "--window-size=1280,2000", url)
    assert shot.returncode == 0, shot.stderr[-2000:]
    assert png.is_file() and png.stat().st_size > 10_000
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
