"""The HTML report in a real browser: headless Chromium, network off, no console errors, screenshot."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from test_report_fixtures import make_report

from pa.report.render import render
from pa.report.schema import validate_report

pytestmark = [pytest.mark.browser, pytest.mark.slow]   # a headless Chromium per test (~2 s)
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


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary")
def test_compare_html_renders_in_chromium(tmp_path: Path) -> None:
    from testkit.phased import MS, phased, write

    from pa.compare import compare
    from pa.compare.render import render_comparison
    from pa.compare.schema import validate_comparison
    from pa.llm.model import LlmExplanation
    from pa.metrics.summarize import summarize

    a, b, c = {"gemm_tn_kernel": 1.0}, {"stencil3d_kernel": 0.7, "reduce_sum_kernel": 0.3}, {"axpy_kernel": 1.0}
    sb, _ = phased([(150 * MS, a, 0.9), (130 * MS, b, 0.9), (120 * MS, c, 0.9)], seed=0)
    sa, _ = phased([(150 * MS, a, 0.9), (60 * MS, b, 0.9), (120 * MS, c, 0.9)], seed=0)
    cmp = compare(summarize(write(sb, tmp_path / "before.sqlite")), summarize(write(sa, tmp_path / "after.sqlite")))
    cmp.llm = LlmExplanation(text="Phase stencil3d_kernel got shorter.", provider="fake", model="m",
                             key_differences=["K1"])
    doc = validate_comparison(cmp)
    page = tmp_path / "compare.html"
    page.write_text(render_comparison(doc, "html"), encoding="utf-8")
    url = page.as_uri()

    dom = _chromium(tmp_path / "p1", "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-2000:]
    console = [ln for ln in dom.stderr.splitlines() if re.search(r"CONSOLE[(:]", ln)]
    assert console == [], console
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", dom.stdout))
    assert "Key differences" in text and "Explanation" in text and "Phase stencil3d_kernel got shorter." in text
    keys = doc["key_differences"]
    assert keys and keys[0]["phase"] == "stencil3d_kernel"
    for k in keys[:15]:                     # every shown key difference is in the page, with its id
        assert re.search(rf'<tr id="{k["id"]}"><td class="n">{k["id"]}</td><td>{re.escape(k["what"])}</td>',
                         dom.stdout), k
    assert doc["narrative"][0] in text
    assert len(re.findall(r'class="bar bar-(?:faster|slower)"', dom.stdout)) == min(len(keys), 15)
    assert '<a href="#K1">K1</a>' in dom.stdout

    png = tmp_path / "compare.png"
    shot = _chromium(tmp_path / "p2", f"--screenshot={png}", "--window-size=1280,2000", url)
    assert shot.returncode == 0, shot.stderr[-2000:]
    assert png.is_file() and png.stat().st_size > 10_000
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
