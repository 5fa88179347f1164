"""The expression language's function registry, its docs, `pa rules functions`, pack versions and
the warnings of `pa rules validate --profile`."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
from click.testing import CliRunner
from testkit.accuracy import generate_profile

from pa.cli import main
from pa.errors import UserError
from pa.rules import expr as expr_mod
from pa.rules.docs import render_function_table
from pa.rules.expr import Scope, compile_expr, evaluate
from pa.rules.functions import FUNCTIONS, OPERATORS
from pa.rules.loader import load_ruleset

DOCS = Path(__file__).parent.parent / "docs" / "rules.md"


def test_every_callable_function_is_in_the_registry_with_a_description() -> None:
    # the parser accepts exactly the registry's names, so a function cannot be added without an entry
    assert set(expr_mod.FUNCTIONS) == set(FUNCTIONS)
    for f in FUNCTIONS.values():
        assert f.signature.startswith(f.name + "("), f.name
        assert len(f.description) > 20 and f.description[0].isupper(), f.name
        assert callable(f.impl) and inspect.isfunction(f.impl)
    assert all(o.description for o in OPERATORS)


def test_docs_hold_the_generated_function_table() -> None:
    table = render_function_table()
    for f in FUNCTIONS.values():
        assert f"`{f.signature}`" in table
    assert table in DOCS.read_text(), "docs/rules.md function table is stale: python -m pa.rules.docs"


def _ev(src: str, **roots: object) -> object:
    return evaluate(compile_expr(src), Scope(names={}, roots=roots))


def test_select_match_is_what_its_docs_say() -> None:
    ks = {"k": [{"name": "volta_SGEMM_128x64"}, {"name": "gemm.*x"}, {"name": None}, {"name": 3}]}
    doc = FUNCTIONS["select_match"].description
    assert "case-insensitive substring" in doc and "not a regular expression" in doc
    assert _ev("count(select_match(summary.k, 'name', 'gemm'))", summary=ks) == 2   # case-insensitive
    assert _ev("count(select_match(summary.k, 'name', '.*'))", summary=ks) == 1     # literal, not regex
    assert _ev("count(select(summary.k, 'name', 'volta_sgemm_128x64'))", summary=ks) == 0  # select is exact
    assert _ev("select_match(summary.nothing, 'name', 'x')", summary=ks) is None


def test_pa_rules_functions_lists_every_function() -> None:
    r = CliRunner().invoke(main, ["rules", "functions"])
    assert r.exit_code == 0, r.output
    for f in FUNCTIONS.values():
        assert f.signature in r.output and f.description in r.output
    r = CliRunner().invoke(main, ["rules", "functions", "--markdown"])
    assert r.exit_code == 0 and render_function_table() in r.output


def _pack(tmp_path: Path, body: str, name: str = "site.yaml") -> Path:
    p = tmp_path / name
    p.write_text("pack: site\ndescription: a site pack\n" + body)
    return p


@pytest.mark.parametrize("written, shown", [('"1.0"', "1.0"), ("1", "1"), ('"2026-03"', "2026-03")])
def test_pack_version_integer_or_quoted_label_is_accepted(tmp_path: Path, written: str, shown: str) -> None:
    rs = load_ruleset([_pack(tmp_path, f"version: {written}\n")])
    assert rs.packs[-1].version == shown
    r = CliRunner().invoke(main, ["rules", "list", "--rules", str(tmp_path / "site.yaml")])
    assert r.exit_code == 0 and f"version {shown}" in r.output


@pytest.mark.parametrize("written, needle", [
    ("1.0", 'quote the label (version: "1.0")'), ("0", "integer of at least 1"),
    ('"has space"', "integer of at least 1"), ("true", "integer of at least 1"), ("[1]", "not a pack version")])
def test_bad_pack_version_says_what_is_expected(tmp_path: Path, written: str, needle: str) -> None:
    with pytest.raises(UserError, match="field version") as exc:
        load_ruleset([_pack(tmp_path, f"version: {written}\n")])
    assert needle in str(exc.value) and "site.yaml" in str(exc.value)


SITE = """\
params:
  gemm_share: {value: 0.5, unit: fraction, description: used below}
  forgotten: {value: 3, unit: count, description: nothing uses this}
metrics:
  gemm_ns:
    expr: sum_of(select_match(summary.kernels, 'name', 'nosuchkernel_xyz'), 'total_ns')
    unit: ns
    description: time in kernels of a name this profile does not have
  regex_ns:
    expr: sum_of(select_match(summary.kernels, 'name', 'gemm.*'), 'total_ns')
    unit: ns
    description: written as a regex by mistake
  typo_ns:
    expr: sum_of(select(summary.kernels, 'nmae', 'x'), 'total_ns')
    unit: ns
    description: a field name typo
  never_ns:
    expr: summary.mpi.total_ns
    unit: ns
    description: null without MPI
  kernel_ns:
    expr: sum_of(select_match(summary.kernels, 'name', 'sync_after'), 'total_ns')
    unit: ns
    description: matches a kernel of the scenario
hypotheses:
  - id: SITE-GEMM-001
    title: GEMM kernels dominate kernel time
    description: GEMM kernels take more than a site-defined share of kernel time.
    when: safe_div(gemm_ns, summary.gpu.kernel_time_ns) > gemm_share
    bottleneck_type: other
    bucket: compute
    runtime_fraction: null
    claim: none
    expected_impact: low
    counterfactual: A policy finding about kernel names; it claims no run time.
    confidence: 0.5
    action_category: code_optimization
    evidence:
      - text: "{{ gemm_ns }}"
        cite: [gemm_ns]
    suggestion: Check the GEMM library settings for this site.
"""


def test_validate_warns_about_unused_params_and_regex_texts_without_a_profile(tmp_path: Path) -> None:
    p = _pack(tmp_path, SITE)
    r = CliRunner().invoke(main, ["rules", "validate", str(p)])
    assert r.exit_code == 0, r.output
    warnings = [ln for ln in r.output.splitlines() if ln.startswith("warning: ")]
    assert any("param forgotten" in w for w in warnings)
    assert not any("param gemm_share" in w for w in warnings)
    assert any("metric regex_ns" in w and "'gemm.*'" in w and "literal" in w for w in warnings)
    assert "2 warning(s)" in r.output


def test_validate_with_profile_warns_about_dead_patterns_and_null_metrics(tmp_path: Path) -> None:
    import sqlite3

    prof = generate_profile("sync_after_launch", "nsys", tmp_path)
    with sqlite3.connect(prof) as con:   # independent check: which kernel names the profile holds
        names = [n for (n,) in con.execute("SELECT value FROM StringIds WHERE id IN "
                                           "(SELECT shortName FROM CUPTI_ACTIVITY_KIND_KERNEL)")]
    assert names and not any("nosuchkernel_xyz" in n.lower() for n in names)
    assert not any("gemm.*" in n.lower() for n in names)
    real = names[0][:6].upper()   # a real kernel name's start, in other case: select_match ignores case
    p = _pack(tmp_path, SITE.replace("'sync_after'", repr(real)))
    r = CliRunner().invoke(main, ["rules", "validate", str(p), "--profile", str(prof)])
    assert r.exit_code == 0, r.output
    w = "\n".join(ln for ln in r.output.splitlines() if ln.startswith("warning: "))
    assert "metric gemm_ns: select_match(summary.kernels, 'name', 'nosuchkernel_xyz')" in w
    assert "can never match" in w
    assert "metric typo_ns" in w and "has a field 'nmae'" in w
    assert "metric never_ns is null on" in w
    assert "metric kernel_ns" not in w
    # a built-in metric that is null on this profile is not the site author's business
    assert "rules/" not in w


def test_validate_warns_about_an_override_only_disabled_rules_read(tmp_path: Path) -> None:
    p = _pack(tmp_path, "disable: [CAP-WARMUP-001]\n"
                        "override_params: {warmup_min_fraction: 0.5, idle_min_fraction: 0.1}\n")
    rs = load_ruleset([p])
    # independent: which enabled rules still name each param in their `when`
    users = {n: [r.id for r in rs.rules.values() if r.id not in rs.disabled and n in r.when.names]
             for n in ("warmup_min_fraction", "idle_min_fraction")}
    assert users["warmup_min_fraction"] == [] and users["idle_min_fraction"]
    r = CliRunner().invoke(main, ["rules", "validate", str(p)])
    assert r.exit_code == 0
    assert "override of param warmup_min_fraction has no effect" in r.output
    assert "idle_min_fraction" not in r.output and "1 warning(s)" in r.output


def test_validate_with_profile_warns_about_strip_after_texts_no_marker_name_contains(tmp_path: Path) -> None:
    import sqlite3

    from testkit.nsys_writer import write_nsys
    from testkit.scenario import Device, Marker, Process, Scenario

    markers = [Marker(1, 1, 1_000 + 100 * i, 1_050 + 100 * i, f"solver step, iter = {i}") for i in range(5)]
    markers.append(Marker(1, 1, 2_000, 2_500, "io"))
    prof = write_nsys(Scenario(name="m", description="", devices=[Device(id=0)],
                               processes=[Process(1, "a", {1: "a"})], markers=markers), tmp_path / "m.sqlite")
    with sqlite3.connect(prof) as con:   # independent check: the texts the profile's range names hold
        names = [n for (n,) in con.execute("SELECT coalesce(text, value) FROM NVTX_EVENTS "
                                           "LEFT JOIN StringIds ON StringIds.id = NVTX_EVENTS.textId")]
    assert any(", iter = " in n for n in names) and not any(", epoch = " in n for n in names)
    p = _pack(tmp_path, "marker_names:\n  strip_after: [', seq = ', ', iter = ', ', epoch = ']\n")
    r = CliRunner().invoke(main, ["rules", "validate", str(p), "--profile", str(prof)])
    assert r.exit_code == 0, r.output
    w = [ln for ln in r.output.splitlines() if ln.startswith("warning: ") and "strip_after" in ln]
    # only the added text that no name holds; the default PyTorch suffix (', seq = ') is absent from
    # this profile too, but it is not the site author's
    assert w == ["warning: marker_names.strip_after ', epoch = ' is in no marker name of m.sqlite: "
                 "it changes no name there"], r.output
    # a profile without markers: nothing can be said about marker names
    bare = write_nsys(Scenario(name="b", description="", devices=[Device(id=0)],
                               processes=[Process(1, "a", {1: "a"})]), tmp_path / "bare.sqlite")
    r = CliRunner().invoke(main, ["rules", "validate", str(p), "--profile", str(bare)])
    assert r.exit_code == 0, r.output
    assert "strip_after" not in r.output
