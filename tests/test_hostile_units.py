"""Unit tests of the pieces that keep hostile input inert: domains, sidecars, Markdown, control
characters, the one-line error guard, the template sandbox. End-to-end cases live in tests/corpus."""

from __future__ import annotations

import sqlite3
import struct

import click
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from pa import sandbox
from pa.controls import escape_controls, escape_json_controls
from pa.errors import UserError, one_line_errors
from pa.profile.canonical import DOMAINS, MAX_DURATION_NS, MAX_TIMESTAMP_NS
from pa.profile.domain import DomainLog, count_sql, domain_sql
from pa.profile.open import _journal_is_hot, _wal_has_commit, query_timeout_s
from pa.report.render import md_cell, md_code

# ---- domains --------------------------------------------------------------------------------------

VALUES = st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1), st.sampled_from([0, 1, MAX_TIMESTAMP_NS - 1,
                   MAX_TIMESTAMP_NS, MAX_DURATION_NS, MAX_DURATION_NS + 1]),
                   st.floats(allow_nan=False), st.text(max_size=3), st.binary(max_size=3))
ROW = st.fixed_dictionaries({"start": VALUES, "end": VALUES, "device": VALUES, "bytes": VALUES})


def _table(rows: list[dict]) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute('CREATE TABLE t (start, "end", device, bytes, direction)')
    conn.executemany('INSERT INTO t VALUES (:start, :end, :device, :bytes, NULL)', rows)
    return conn


@settings(max_examples=60, deadline=None)
@given(st.lists(ROW, max_size=25))
def test_fast_condition_never_admits_a_row_a_check_rejects(rows):
    conn = _table(rows)
    for relation in ("kernels", "memsets", "copies", "api_calls"):
        d = DOMAINS[relation]
        all_checks = " AND ".join(f"({c.sql})" for c in d.checks)
        bad = conn.execute(f"SELECT count(*) FROM t WHERE coalesce({d.fast}, 0) AND NOT ({all_checks})").fetchone()
        assert bad == (0,), relation


def _python_domain(row: dict) -> int | None:
    """Independent reading of docs/relations.md for kernels: index of the first failed check, or None."""
    def number(v):
        return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))

    s, e, dev = row["start"], row["end"], row["device"]
    if not (number(s) and number(e)):
        return 0
    if any(v is not None and not 0 <= v <= MAX_TIMESTAMP_NS - 1 for v in (s, e)):
        return 1
    if s is not None and e is not None and e - s > MAX_DURATION_NS:
        return 2
    if s == 0 and e == 0:   # CUPTI's "timing not collected"
        return 3
    if not (isinstance(dev, (int, float)) and not isinstance(dev, bool) and 0 <= dev <= MAX_TIMESTAMP_NS - 1):
        return 4
    return None


@settings(max_examples=60, deadline=None)
@given(st.lists(ROW, max_size=25))
def test_kernel_domain_counts_match_an_independent_reading(rows):
    conn = _table(rows)
    body = 'SELECT rowid AS row_id, start, "end", device FROM t'
    expected = [0, 0, 0, 0, 0]
    for r in rows:
        i = _python_domain(r)
        if i is not None:
            expected[i] += 1
    got = conn.execute(count_sql("kernels", body)).fetchone()
    assert list(got) == expected
    # the reading path drops exactly those rows and logs them (row ids are distinct: exact counts)
    log = DomainLog()
    conn.create_function("pa_domain_reject", -1, log.reject)
    cols = 'NULL AS pid, NULL AS stream, NULL AS correlation_id, NULL AS name_id, NULL AS name, NULL AS short_name, ' \
           'NULL AS grid_x, NULL AS grid_y, NULL AS grid_z, NULL AS block_x, NULL AS block_y, NULL AS block_z, ' \
           'NULL AS registers_per_thread, NULL AS sgpr_per_wave, NULL AS static_shared_bytes, ' \
           'NULL AS dynamic_shared_bytes, NULL AS local_bytes_per_thread, NULL AS graph_id'
    kept = conn.execute(f"SELECT count(*) FROM ({domain_sql('kernels', body.replace(' FROM', ', ' + cols + ' FROM'))})"
                        ).fetchone()[0]
    assert kept == len(rows) - sum(expected)
    counts = {label: n for label, n in log.counts().get("kernels", [])}
    assert sum(counts.values()) == sum(expected)


def test_rows_read_twice_are_counted_once():
    conn = _table([{"start": "x", "end": 5, "device": 0, "bytes": 1}, {"start": 1, "end": 5, "device": 0, "bytes": 1}])
    log = DomainLog()
    conn.create_function("pa_domain_reject", -1, log.reject)
    sql = domain_sql("api_calls", 'SELECT rowid AS row_id, 1 AS pid, 1 AS tid, start, "end", 1 AS name_id, '
                                  "'n' AS name, 'other' AS kind, NULL AS correlation_id FROM t")
    for _ in range(3):
        assert conn.execute(f"SELECT count(*) FROM ({sql})").fetchone() == (1,)
    assert log.counts() == {"api_calls": [("start or end is not a number", 1)]}
    assert "api_calls: 1 row(s)" in log.notes()[0]


# ---- sidecars -------------------------------------------------------------------------------------

def _wal(tmp_path, frames: list[tuple[int, tuple[int, int]]], magic: int = 0x377F0682):
    page = 512
    head = struct.pack(">6I", magic, 3007000, page, 0, 11, 22) + b"\0" * 8
    body = b"".join(struct.pack(">4I", 1, commit, s1, s2) + b"\0" * 8 + b"\0" * page for commit, (s1, s2) in frames)
    p = tmp_path / "x.sqlite-wal"
    p.write_bytes(head + body)
    return p


def test_wal_with_a_commit_frame_of_its_generation_is_detected(tmp_path):
    assert _wal_has_commit(_wal(tmp_path, [(0, (11, 22)), (5, (11, 22))]))


def test_wal_without_commit_or_from_an_old_generation_is_ignored(tmp_path):
    assert not _wal_has_commit(_wal(tmp_path, [(0, (11, 22)), (0, (11, 22))]))
    assert not _wal_has_commit(_wal(tmp_path, [(7, (1, 2))]))          # salts of a previous generation
    assert not _wal_has_commit(_wal(tmp_path, [(7, (11, 22))], magic=0x12345678))
    assert not _wal_has_commit(tmp_path / "absent-wal")


def test_hot_journal_is_the_one_with_its_magic(tmp_path):
    hot = tmp_path / "a-journal"
    hot.write_bytes(bytes((0xD9, 0xD5, 0x05, 0xF9, 0x20, 0xA1, 0x63, 0xD7)) + b"\0" * 100)
    cold = tmp_path / "b-journal"
    cold.write_bytes(b"\0" * 108)
    assert _journal_is_hot(hot) and not _journal_is_hot(cold)


def test_query_timeout_setting(monkeypatch):
    monkeypatch.setenv("PA_QUERY_TIMEOUT", "2.5")
    assert query_timeout_s() == 2.5
    for bad in ("0", "-1", "nan", "soon", "inf"):
        monkeypatch.setenv("PA_QUERY_TIMEOUT", bad)
        with pytest.raises(UserError, match="PA_QUERY_TIMEOUT"):
            query_timeout_s()


# ---- Markdown and control characters ------------------------------------------------------------

TEXT = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x17F, blacklist_characters="\x7f"),
               min_size=1, max_size=40)
MD = MarkdownIt("commonmark").enable("table")


def _inline(text: str) -> list:
    tokens = [t for t in MD.parse(text) if t.type == "inline"]
    return [c for t in tokens for c in (t.children or [])]


@settings(max_examples=300, deadline=None)
@given(TEXT)
def test_md_cell_renders_as_the_same_text_and_nothing_else(text):
    text = text.strip()
    if not text:
        return
    children = _inline(md_cell(text))
    assert all(c.type in ("text", "softbreak") for c in children), [c.type for c in children]
    assert "".join(c.content for c in children) == text


@settings(max_examples=300, deadline=None)
@given(TEXT)
def test_md_code_is_one_code_span_with_the_exact_text(text):
    children = _inline("x " + md_code(text))
    spans = [c for c in children if c.type == "code_inline"]
    assert len(spans) == 1 and spans[0].content == text


def test_md_cell_breaks_autolinks_and_table_cells():
    out = md_cell("see https://evil.example or www.evil.example, mail a@b.co | next")
    assert "https://" not in out and "www.evil" not in out and "a@b" not in out and " | " not in out


def test_escape_controls_leaves_one_visible_line():
    s = "a\x1b[2Jb\x9b31m\u202ec\r\nd\te\x00"
    one = escape_controls(s)
    assert one == "a\\x1b[2Jb\\x9b31m\\u202ec\\x0d\\x0ad\\x09e\\x00"
    assert escape_controls(s, keep_layout=True).count("\n") == 1
    assert escape_json_controls('"\x9b\u202e"') == '"\\u009b\\u202e"'


# ---- the one-line guard -------------------------------------------------------------------------

@click.command()
@click.argument("what")
@one_line_errors
def _boom(what: str) -> None:
    if what == "bug":
        raise RuntimeError("x\ny")
    if what == "user":
        raise UserError("bad \x1b[2J input\nsecond line")
    if what == "sqlite":
        raise sqlite3.DatabaseError("database disk image is malformed")
    if what == "deep":
        raise RecursionError


@pytest.mark.parametrize(("what", "code", "needle"), [
    ("bug", 3, "internal error: RuntimeError: x (a bug in pa"), ("user", 2, "bad \\x1b[2J input\\x0asecond line"),
    ("sqlite", 2, "database disk image is malformed"), ("deep", 2, "nested too deeply")])
def test_any_failure_is_one_line_with_an_exit_code(what, code, needle):
    r = CliRunner().invoke(_boom, [what])
    assert r.exit_code == code
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("pa: ") and needle in lines[0], r.stderr


def test_pa_debug_shows_the_traceback_of_a_bug(monkeypatch):
    monkeypatch.setenv("PA_DEBUG", "1")
    r = CliRunner().invoke(_boom, ["bug"])
    assert isinstance(r.exception, RuntimeError)


# ---- the sandbox --------------------------------------------------------------------------------

ESCAPES = ["{{ self.__init__.__globals__ }}", "{{ cycler.__init__.__globals__.os }}",
           "{{ lipsum.__globals__ }}", "{{ ''.__class__.__mro__[1].__subclasses__() }}",
           "{{ namespace.__init__.__globals__ }}", "{{ joiner.__init__.__globals__ }}", "{{ range(3) }}",
           "{{ (x | attr('__class__')) }}", "{{ x.__class__ }}", "{{ 'x' * 10 ** 9 }}",
           "{{ '%99999999d' % 1 }}", "{{ '{:>99999999}'.format(1) }}", "{{ 'a' | center(99999999) }}"]


@pytest.mark.parametrize("src", ESCAPES)
def test_known_escapes_fail_in_the_sandbox(src):
    env = sandbox.sandbox()
    with pytest.raises(sandbox.TEMPLATE_FAILURES):
        sandbox.render_bounded(env.from_string(src), {"x": 1}, seconds=1)


def test_a_template_that_would_run_for_hours_is_stopped():
    env = sandbox.sandbox()
    t = env.from_string("{% set s = 'x' * 5000 %}{% for a in s %}{% for b in s %}{% endfor %}{% endfor %}")
    with pytest.raises(sandbox.TemplateBudgetError):
        sandbox.render_bounded(t, {}, seconds=0.1)


def test_domain_checks_force_no_join_the_reader_does_not_need(tmp_path):
    """The rocpd kernels query LEFT JOINs the events only for correlation_id: a reader of the launch
    configuration must not pay for that join because of the domain wrapper (it once made it 25x slower)."""
    from testkit import scenarios
    from testkit.rocpd_writer import write_rocpd

    from pa.profile.detect import detect
    from pa.profile.open import open_readonly
    from pa.profile.queryset import resolve
    from pa.profile.relations import VALID, Relations

    p = tmp_path / "r.db"
    write_rocpd(scenarios.launch_bound(), p)
    conn = open_readonly(p)
    rel = Relations.bind(conn, resolve(*(lambda f: (f.format, f.schema_version))(detect(conn, p))))
    plan = conn.execute("EXPLAIN QUERY PLAN " + rel.cte(f"SELECT DISTINCT grid_x FROM pa_kernels WHERE {VALID}"))
    details = [row[3] for row in plan]
    assert any("kernel_dispatch" in d for d in details)
    assert not any(d.startswith("SEARCH e ") for d in details), details
    conn.close()


def test_dropped_rows_are_counted_for_the_relations_read_only(tmp_path):
    # memcpy_requests (counted apart) with one row of negative bytes: reading it, on any connection
    # the relations were put on, reports the row; never reading it (rocpd files outside a degraded
    # capture) reports nothing and costs no pass over the profile.
    from pa.profile.queryset import QuerySet, load_query_file
    from pa.profile.relations import Relations

    qdir = tmp_path / "x" / "1"
    qdir.mkdir(parents=True)
    (qdir / "memcpy_requests.sql").write_text("-- relation: memcpy_requests\n-- requires: t(name, bytes)\n"
                                              "SELECT name, 'HtoD' AS direction, bytes FROM t\n")
    qf = load_query_file(qdir / "memcpy_requests.sql", "1")
    db = tmp_path / "p.sqlite"
    with sqlite3.connect(db) as c:
        c.execute("CREATE TABLE t (name, bytes)")
        c.executemany("INSERT INTO t VALUES (?, ?)", [("a", 8), ("b", -1)])

    def bound() -> Relations:
        return Relations.bind(sqlite3.connect(db), QuerySet(format="x", version="1",
                                                            files={"memcpy_requests": qf}))

    assert not [n for n in bound().domain_notes() if "memcpy_requests" in n]
    rel = bound()
    assert rel.on(sqlite3.connect(db)).query("SELECT count(*) FROM pa_memcpy_requests") == [(1,)]
    notes = [n for n in rel.domain_notes() if "memcpy_requests" in n]
    assert len(notes) == 1 and "1 row(s)" in notes[0]


def test_a_relation_read_whole_gives_the_kept_rows_and_the_counts_of_the_dropped(tmp_path):
    # kernel_names read whole: the rows domain_sql keeps, and count_sql's counts, from one statement
    # (checked against both, and against a hand count: 2 of 5 names have no usable name_id)
    from pa.profile.queryset import QuerySet, load_query_file
    from pa.profile.relations import Relations

    qdir = tmp_path / "x" / "1"
    qdir.mkdir(parents=True)
    body = "SELECT id AS name_id, name, NULL AS short_name FROM t"
    (qdir / "kernel_names.sql").write_text(f"-- relation: kernel_names\n-- requires: t(id, name)\n{body}\n")
    db = tmp_path / "p.sqlite"
    with sqlite3.connect(db) as c:
        c.execute("CREATE TABLE t (id, name)")
        c.executemany("INSERT INTO t VALUES (?, ?)", [(1, "a"), (None, "b"), (2, 7), ("x", "d"), (3, None)])
    rel = Relations.bind(sqlite3.connect(db), QuerySet(
        format="x", version="1", files={"kernel_names": load_query_file(qdir / "kernel_names.sql", "1")}))
    assert rel.conn.execute(count_sql("kernel_names", body)).fetchone() == (2,)
    assert rel.read_whole("kernel_names") == [(1, "a", None), (2, "7", None), (3, None, None)] \
        == rel.query("SELECT * FROM pa_kernel_names")
    notes = rel.domain_notes()
    assert len(notes) == 1 and notes[0].startswith("kernel_names: 2 row(s)")
    with pytest.raises(ValueError):
        rel.read_whole("kernels")


@pytest.mark.parametrize("name", ["gemm_tn_kernel$(touch PWNED)", "f<int>(float*, int&)", "k`id`; rm -rf ~",
                                  "a'b\"c", "void cutlass::Kernel<T>(Params) [clone .kd]"])
def test_a_kernel_name_in_a_suggested_command_is_one_quoted_word(name: str) -> None:
    """Issue 26.5: pasting "capture next" runs nothing and matches exactly that kernel."""
    import re
    import shlex

    from pa.rules.templates import kernel_arg

    word = kernel_arg(name, "regex")
    assert shlex.split(f"ncu --set full -k {word}") == ["ncu", "--set", "full", "-k", "regex:" + re.escape(name)]
    assert re.fullmatch(re.escape(name), name)
    assert shlex.split(f"rocprof-compute profile -n run -k {kernel_arg(name, 'plain')}")[-1] == name


def test_invisible_format_characters_are_visible_escapes_everywhere() -> None:
    """Issue 26.13: bidi marks, zero-width space, BOM and tag characters never pass raw."""
    import json

    from pa.controls import escape_controls, escape_json_controls
    from pa.llm.tools import encode

    hidden = "gemm\u200e\u200f\u061c\u200b\u2060\ufeff" + "".join(chr(0xE0000 + ord(c)) for c in "ignore")
    shown = escape_controls(hidden)
    assert shown.isascii() and shown.startswith("gemm\\u200e") and "\\U000e0069" in shown
    doc = escape_json_controls(json.dumps({"k": hidden}, ensure_ascii=False))
    assert doc.isascii() and json.loads(doc)["k"] == hidden          # the same data, escaped
    prompt = encode({"kernel": hidden})
    assert prompt.isascii() and json.loads(prompt)["kernel"] == hidden


def test_credentials_in_a_base_url_are_never_printed() -> None:
    """Issue 26.11: http://user:pass@host reaches that host only, never stderr, a log or a report."""
    from pa.controls import shown_url
    from pa.llm.providers import LlmSettings, resolve

    assert shown_url("http://alice:s3cret@127.0.0.1:8000/v1") == "http://***@127.0.0.1:8000/v1"
    assert shown_url("https://api.example/v1") == "https://api.example/v1"
    assert "\x1b" not in shown_url("http://h/\x1b]52;c;AAAA\x07")
    target = resolve(LlmSettings(model="openai:m", base_url="http://alice:s3cret@127.0.0.1:9/v1"), {})
    assert not isinstance(target, str) and "s3cret" not in target.label() and "alice" not in target.label()
    assert target.endpoint() == "http://alice:s3cret@127.0.0.1:9/v1"      # the request itself still carries them


def test_site_rule_titles_reach_the_terminal_escaped(tmp_path) -> None:
    """Issue 26.9: a site pack's title with OSC 52 / CSI sequences is shown, not obeyed, by pa rules."""
    import yaml as _yaml
    from click.testing import CliRunner

    from pa.cli import main

    rule = {"id": "SITE-EVIL-001", "title": "evil \x1b]52;c;SGVsbG8=\x07 title \x1b[2J \u202e",
            "description": "A hostile rule whose title carries terminal escapes.", "when": "true",
            "bottleneck_type": "other", "bucket": "idle", "runtime_fraction": None, "claim": "none",
            "expected_impact": "low", "counterfactual": "No time is claimed by this caveat about the capture.",
            "confidence": 0.5, "action_category": "runtime_config",
            "evidence": [{"text": "The capture says so.", "cite": ["summary.span_ns"]}],
            "suggestion": "Nothing to do here at all."}
    pack = tmp_path / "evil.yaml"
    pack.write_text(_yaml.safe_dump({"pack": "evil", "version": 1, "description": "hostile titles",
                                     "hypotheses": [rule]}, allow_unicode=True))
    for args in (["rules", "list", "--rules", str(pack)], ["rules", "show", "SITE-EVIL-001", "--rules", str(pack)]):
        res = CliRunner().invoke(main, args)
        assert res.exit_code == 0, res.output
        assert "\x1b" not in res.output and "\x07" not in res.output and "\u202e" not in res.output
        assert "SITE-EVIL-001" in res.output


def test_a_site_template_prints_no_raw_escape_and_no_hyperlink(tmp_path) -> None:
    """Issue 26.9: a literal ESC in a site template and a rich `link` style are shown or dropped, never sent."""
    from pa.report.render import make_env

    site = tmp_path / "tpl"
    site.mkdir()
    (site / "report.txt.j2").write_text('A\x1b]52;c;SGVsbG8=\x07B '
                                        '{{ "x" | style("bold link https://evil.example") }}\n')
    for color in (False, True):
        out = make_env(site, color).get_template("report.txt.j2").render()
        assert "\x07" not in out and "]52;" not in out.replace("\\x1b]52;", "")
        assert "evil.example" not in out and "\x1b]8" not in out
        assert out.startswith("A\\x1b]52;c;SGVsbG8=\\x07B")
    assert "\x1b[1m" in make_env(site, True).get_template("report.txt.j2").render()   # bold survives


def test_one_sql_step_cannot_run_away_in_a_profile_s_view(tmp_path) -> None:
    """Issue 26.6: a view over StringIds building multi-megabyte strings, or calling instr on them, is bounded:
    a clear error in seconds, not minutes and gigabytes (the statement clock cannot stop one step)."""
    import time

    from click.testing import CliRunner
    from testkit.nsys_writer import write_nsys
    from testkit.scenarios import example

    from pa.cli import main
    from pa.profile.open import _instr, open_readonly

    assert (_instr("abc", "c"), _instr("abc", "x"), _instr(None, "a"), _instr(b"\x00ab", b"b")) == (3, 0, None, 3)
    assert _instr("aaaa" * 250_000 + "b", "a" * 500_000 + "b") == 500_001          # linear, not 10^11 steps
    path = write_nsys(example(), tmp_path / "p.sqlite")
    conn = sqlite3.connect(path)
    conn.execute("ALTER TABLE StringIds RENAME TO StringIds_real")
    # 200 MB per name (capped: printf gives NULL past the value limit) and a 3 MB instr haystack per row
    conn.execute("CREATE VIEW StringIds AS SELECT id, CASE WHEN instr(printf('%.3000000c', 'a'), value || 'b') > 0 "
                 "THEN 'x' ELSE value END || coalesce(substr(printf('%.200000000c', 'a'), 1, 0), '') AS value "
                 "FROM StringIds_real")
    conn.commit()
    conn.close()
    started = time.monotonic()
    res = CliRunner().invoke(main, ["summary", str(path)])
    assert time.monotonic() - started < 60, "bounded: seconds, not minutes"
    assert res.exit_code == 2 and "cannot read relation" in res.output   # the view's printf is refused
    assert len(res.output.strip().splitlines()) == 1
    with open_readonly(path) as c:
        assert c.execute("SELECT instr(?, ?)", ("x" * 1_000_000 + "y", "x" * 500_000 + "y")).fetchone() == (500_001,)
