"""Run one corpus case in-process and list what it did wrong (an empty list: it behaved)."""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from unittest import mock

from click.testing import CliRunner

from corpus.cases import BASES, NEVER_IN_OUTPUT, Case, canary
from pa.cli import main


@dataclass
class Outcome:
    """What one run of pa did."""

    exit: int
    stdout: str
    stderr: str
    exception: BaseException | None
    files_changed: list[str] = field(default_factory=list)
    files_created: list[str] = field(default_factory=list)


def _fill(arg: str, d: Path) -> str:
    base = d.parent / "_base"
    out = arg.replace("{d}", str(d)).replace("{canary}", str(canary(d)))
    for key, name in BASES.items():
        out = out.replace("{" + key + "}", str(base / name))
    return out


def snapshot(*dirs: Path) -> dict[str, tuple[object, ...]]:
    """Every entry under `dirs`: regular files by content hash, size and mtime; others by kind."""
    out: dict[str, tuple[object, ...]] = {}
    for top in dirs:
        for root, subdirs, files in os.walk(top):
            for name in [*subdirs, *files]:
                p = Path(root) / name
                st = p.lstat()
                if stat.S_ISREG(st.st_mode) and st.st_mode & stat.S_IRUSR and st.st_size < (64 << 20):
                    digest = hashlib.sha256(p.read_bytes()).hexdigest()
                    out[str(p)] = ("file", digest, st.st_size, st.st_mtime_ns)
                else:
                    out[str(p)] = ("other", stat.S_IFMT(st.st_mode), st.st_size, st.st_mtime_ns)
    return out


@contextmanager
def patched(case: Case, d: Path) -> Iterator[None]:
    """Point pa at the case's query tree, and shorten template budgets where the case asks."""
    with ExitStack() as stack:
        if case.queries is not None:
            from pa.paths import data_dir

            def queries_first(name: str) -> Path:
                return d / "queries" if name == "queries" else data_dir(name)

            stack.enter_context(mock.patch("pa.profile.queryset.data_dir", queries_first))
        if case.template_seconds is not None:
            # Only the budget of the layer the case attacks is cut: a bundled template of another layer
            # must not run out of a 0.15 s budget on a loaded machine (the soak runs 8 processes on 2
            # cores), or two runs of one case would stop at different templates.
            layers = {"--rules": "pa.rules.templates.TEMPLATE_SECONDS",
                      "--templates": "pa.report.render.TEMPLATE_SECONDS"}
            targets = [t for flag, t in layers.items() if flag in case.args]
            if case.queries is not None:
                targets.append("pa.profile.relations.QUERY_TEMPLATE_SECONDS")
            for target in targets or [*layers.values(), "pa.profile.relations.QUERY_TEMPLATE_SECONDS"]:
                stack.enter_context(mock.patch(target, case.template_seconds))
        yield


def run_case(case: Case, d: Path) -> Outcome:
    """Run the case's command against its built inputs in directory `d`."""
    watched = [d, d.parent / "_base"]
    before = snapshot(*watched)
    args = [_fill(a, d) for a in case.args]
    with patched(case, d):
        # wide lines: rich wraps tables and warnings at 80 columns when stdout is not a terminal
        result = CliRunner().invoke(main, args, env={"COLUMNS": "400", **case.env}, catch_exceptions=True)
    after = snapshot(*watched)
    exc = result.exception if result.exception is not None and not isinstance(result.exception, SystemExit) \
        else None
    changed = sorted(p for p in before if p in after and after[p] != before[p])
    created = sorted(p for p in after if p not in before)
    return Outcome(result.exit_code, result.stdout, result.stderr, exc, changed, created)


_CODE_SPAN = re.compile(r"(`+)(.+?)\1")


def markdown_problems(text: str) -> list[str]:
    """Links, images, raw HTML or autolinks made from planted strings in a Markdown rendering."""
    from markdown_it import MarkdownIt

    problems = []
    md = MarkdownIt("commonmark").enable("table")
    for tok in md.parse(text):
        for t in [tok, *(tok.children or [])]:
            if t.type in ("link_open", "image") and "evil.example" in str(t.attrs):
                problems.append(f"markdown: a planted string became a live {t.type}: {t.attrs}")
            if t.type in ("html_inline", "html_block") and "bold" in t.content:
                problems.append(f"markdown: planted HTML stayed HTML: {t.content!r}")
    plain = _CODE_SPAN.sub("", text)
    for needle in ("http://evil", "www.evil", "a@b.co"):
        if needle in plain:
            problems.append(f"markdown: {needle!r} outside a code span could be autolinked by GitHub")
    if re.search(r"^#+ Fake heading", text, re.MULTILINE):
        problems.append("markdown: a newline in a name started a heading")
    return problems


def problems(case: Case, out: Outcome, d: Path) -> list[str]:
    """Every way the run broke the case's contract."""
    found: list[str] = []
    if out.exit != case.exit:
        found.append(f"exit {out.exit}, expected {case.exit}")
    if out.exception is not None:
        found.append(f"exception escaped: {type(out.exception).__name__}: {out.exception}")
    if "Traceback" in out.stdout or "Traceback" in out.stderr:
        found.append("a traceback was printed")
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    if case.exit != 0:
        if len(lines) != 1:
            found.append(f"{len(lines)} stderr lines, expected exactly one: {lines[:3]}")
        elif not lines[0].startswith("pa: error: "):
            found.append(f"stderr line is not a pa error: {lines[0][:200]!r}")
        elif case.error and case.error not in lines[0]:
            found.append(f"error line lacks {case.error!r}: {lines[0][:300]!r}")
        if lines and any(ch in lines[0] for ch in (*NEVER_IN_OUTPUT, "\n")):
            found.append("the error line carries a control character")
    else:
        bad = [ln for ln in lines if "error" in ln.lower() and not ln.startswith("warning")]
        if bad:
            found.append(f"stderr reports an error on a successful run: {bad[0][:200]!r}")
    for needle in case.stdout_has:
        if needle not in out.stdout:
            found.append(f"stdout lacks {needle!r}")
    for needle in case.stdout_lacks:
        if needle in out.stdout:
            found.append(f"stdout contains {needle!r}")
    for needle in case.stderr_has:
        if needle not in out.stderr:
            found.append(f"stderr lacks {needle!r}")
    if case.markdown_inert:
        found += markdown_problems(out.stdout)
    allowed = {str(d / name) for name in case.outputs}
    found += [f"input changed: {p}" for p in out.files_changed if p not in allowed]
    found += [f"file created: {p}" for p in out.files_created if p not in allowed]
    if canary(d).exists() or Path("CANARY").exists():
        found.append("a command ran: the canary file exists")
    return found
