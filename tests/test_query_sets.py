"""Query-set resolution, inheritance, headers, and the canonical column contract."""

from __future__ import annotations

import shutil

import pytest

from pa.errors import UserError
from pa.paths import data_dir
from pa.profile.canonical import RELATIONS, column_names
from pa.profile.detect import detect
from pa.profile.open import open_readonly
from pa.profile.queryset import load_query_file, resolve, version_key
from pa.profile.relations import Relations


def test_version_order():
    assert version_key("base") == version_key("legacy")   # the base set reads the unversioned files
    assert version_key("base") < version_key("2.9") < version_key("3.4") < version_key("3.13") < version_key("3.24")


@pytest.mark.parametrize(("version", "expected"), [
    ("legacy", "base"), ("2.9.1", "2.9"), ("3.1.2", "2.9"), ("3.16.0", "2.9"), ("3.17.3", "2.9"),
    ("3.24.14", "3.24"), ("3.25.0", "3.24"),
])
def test_highest_set_not_above_the_file(version, expected):
    assert resolve("nsys", version).version == expected


def test_missing_files_are_inherited_from_lower_sets():
    qs = resolve("nsys", "3.24.14")
    # allocations: no Nsight Systems file yet (no export in ../shared/profiles records
    # CUDA_GPU_MEMORY_USAGE_EVENTS to check one against): skipped with that reason
    assert set(qs.files) == set(RELATIONS) - {"allocations", "memcpy_requests"}
    assert qs.files["overhead"].version_dir == "3.24"
    assert qs.files["devices"].version_dir == "2.9"
    assert qs.files["kernels"].version_dir == "base"


def test_new_version_dir_only_needs_changed_files(tmp_path):
    root = tmp_path / "queries"
    shutil.copytree(data_dir("queries"), root)
    new = root / "nsys" / "9.0"
    new.mkdir()
    (new / "kernels.sql").write_text((root / "nsys" / "base" / "kernels.sql").read_text())
    qs = resolve("nsys", "9.1", root=root)
    assert qs.version == "9.0"
    assert qs.files["kernels"].version_dir == "9.0"
    assert qs.files["overhead"].version_dir == "3.24"


def test_header_must_name_the_relation(tmp_path):
    f = tmp_path / "kernels.sql"
    f.write_text("SELECT 1")
    with pytest.raises(UserError, match=r"no .-- relation:. header"):
        load_query_file(f, "x")
    f.write_text("-- relation: copies\nSELECT 1")
    with pytest.raises(UserError, match=r"named kernels\.sql"):
        load_query_file(f, "x")


def test_every_query_file_has_a_header_and_description():
    for fmt_dir in data_dir("queries").iterdir():
        for f in fmt_dir.glob("*/*.sql"):
            qf = load_query_file(f, f.parent.name)
            assert qf.description, f"{f} has no description"


def test_real_profiles_produce_exactly_the_canonical_columns(real_profile):
    conn = open_readonly(real_profile)
    fmt = detect(conn, real_profile)
    rel = Relations.bind(conn, resolve(fmt.format, fmt.schema_version))
    for relation in rel.sql_by_relation:
        cur = conn.execute(rel.cte(f"SELECT * FROM pa_{relation} LIMIT 0"))
        assert {d[0] for d in cur.description} == set(column_names(relation))
    # every relation is either available or skipped with a reason
    assert set(rel.sql_by_relation) | {s.what for s in rel.skipped} == set(RELATIONS)


def test_relations_doc_is_current():
    from pa.profile.docs import render_relations_md

    doc = (data_dir("queries").parent / "docs" / "relations.md").read_text()
    assert doc == render_relations_md(), "regenerate with: python -m pa.profile.docs > docs/relations.md"
