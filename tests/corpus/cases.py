"""The corpus: every case's inputs (built from small generated profiles) and what pa must do with them.

Each Case names the pa command to run (tokens: {d} the case's own directory, {nsys} {rocpd} {mpi}
the shared base profiles, {canary} a file no case may ever create), the exit code, a piece of the
single error line, and output checks. Cases are grouped: profile (broken, hostile or odd profiles),
rules (site rule packs), query (replaced query files), template (--templates), output (-o).

Expected behaviour is pa's contract (docs/security.md), never what the code happened to print.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
from collections.abc import Callable, Iterator, Mapping
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

from testkit import scenarios
from testkit.nsys_writer import write_nsys
from testkit.rocpd_writer import RocpdDdlMissing, ddl_available, ddl_dir, write_rocpd

Builder = Callable[[Path], None]

# Strings a hostile profile plants. Each must stay inert everywhere pa writes it.
ESC = "evil\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\\x1b[2J\x9b31m\u202eenil\rX"
MARKDOWN = ("[pwn](http://evil.example) ![img](http://evil.example/x.png) <b>bold</b> *em* `tick` "
            "www.evil.example a@b.co")
RICH = "[bold]k[/bold][/] [link=http://evil.example]x[/link]"
JINJA = "{{ cycler.__init__.__globals__.os.system('touch CANARY') }}{% for i in range(9) %}"
HOSTILE_STRINGS = (ESC, MARKDOWN, RICH, JINJA)
NEVER_IN_OUTPUT = ("\x1b", "\x9b", "\u202e", "\r")


@dataclass(frozen=True)
class Case:
    """One input and what pa must do with it."""

    name: str
    group: str
    args: tuple[str, ...]
    exit: int
    error: str = ""                       # a piece of the one stderr line (exit != 0)
    build: Builder | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    stdout_has: tuple[str, ...] = ()
    stdout_lacks: tuple[str, ...] = ()
    stderr_has: tuple[str, ...] = ()      # for exit 0 cases: warnings printed on stderr
    markdown_inert: bool = False          # stdout is Markdown whose untrusted labels must stay inert
    outputs: tuple[str, ...] = ()         # files the case may create in its directory
    queries: Mapping[str, str] | None = None   # replaced bundled query files: "nsys/base/x.sql" -> text
    template_seconds: float | None = None
    skip_as_root: bool = False            # permission cases mean nothing to root
    planted: tuple[str, ...] = ()         # hostile strings planted in the profile (for --redact tests)


# ---- building inputs ----------------------------------------------------------------------------

BASES = {"nsys": "nsys.sqlite", "rocpd": "rocpd.sqlite", "mpi": "mpi.sqlite"}
UNBUILT = "UNBUILT.txt"   # in a case's directory: why its inputs could not be built (the case skips)


def build_bases(base: Path) -> None:
    """The small generated profiles every profile case starts from."""
    base.mkdir(parents=True, exist_ok=True)
    write_nsys(scenarios.example(), base / BASES["nsys"])
    if ddl_available():   # rocpd files are built from the writers' DDL only; without it those cases skip
        write_rocpd(scenarios.example(), base / BASES["rocpd"])
    write_nsys(scenarios.mpi_collectives(), base / BASES["mpi"])


def _tables(conn: sqlite3.Connection) -> dict[str, str]:
    """rocpd base names (kernel_dispatch, region, ...) -> the real table names with their GUID suffix."""
    out = {}
    for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'rocpd_%'"):
        stem = name[len("rocpd_"):]
        out[stem.rsplit("_", 5)[0] if stem.count("_") >= 5 else stem] = name
    return out


class MissingBase(Exception):
    """A case's base profile could not be built here (rocpd without the writers' DDL): the case skips."""


def base_file(d: Path, base: str) -> Path:
    """The base profile a case in directory `d` starts from, or MissingBase saying why it is absent."""
    path = d.parent / "_base" / BASES[base]
    if not path.is_file():
        raise MissingBase(f"needs the {base} base profile, not built here"
                          + (f" (the rocpd writers' DDL is not at {ddl_dir()})" if base == "rocpd" else ""))
    return path


def profile(sql: str = "", base: str = "nsys", name: str = "p.sqlite") -> Builder:
    """A copy of a base profile changed by `sql` ({T:kernel_dispatch} names a rocpd table)."""
    def build(d: Path) -> None:
        p = d / name
        shutil.copyfile(base_file(d, base), p)
        if sql:
            with closing(sqlite3.connect(p)) as conn:
                text = sql
                for stem, real in _tables(conn).items():
                    text = text.replace("{T:" + stem + "}", real)
                # legacy ALTER: renaming a table must not re-check views the case is about to break
                conn.executescript("PRAGMA legacy_alter_table = ON;" + text)
                conn.commit()
    return build


def fresh(sql: str, name: str = "p.sqlite") -> Builder:
    """A new SQLite file made by `sql`."""
    def build(d: Path) -> None:
        with closing(sqlite3.connect(d / name)) as conn:
            conn.executescript(sql)
            conn.commit()
    return build


def raw(data: bytes, name: str = "p.sqlite") -> Builder:
    def build(d: Path) -> None:
        (d / name).write_bytes(data)
    return build


def mangled(fn: Callable[[bytes], bytes], base: str = "nsys") -> Builder:
    """A base profile's bytes passed through `fn` (truncation, corrupt pages)."""
    def build(d: Path) -> None:
        (d / "p.sqlite").write_bytes(fn(base_file(d, base).read_bytes()))
    return build


def loosen(table: str) -> str:
    """SQL recreating `table` without its NOT NULL constraints (so a mutation may store NULL or text)."""
    return (f"CREATE TABLE pa_tmp AS SELECT * FROM {table}; DROP TABLE {table}; "
            f"ALTER TABLE pa_tmp RENAME TO {table};")


def with_sidecar(kind: str) -> Builder:
    """A profile beside an un-checkpointed -wal, or a hot -journal, captured mid-write."""
    def build(d: Path) -> None:
        src = d / "src.sqlite"
        shutil.copyfile(d.parent / "_base" / BASES["nsys"], src)
        conn = sqlite3.connect(src, isolation_level=None)
        try:
            if kind == "wal":
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA wal_autocheckpoint=0")
                conn.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL")
                shutil.copyfile(src, d / "p.sqlite")
                shutil.copyfile(d / "src.sqlite-wal", d / "p.sqlite-wal")
            else:
                conn.execute("PRAGMA journal_mode=DELETE")
                conn.execute("PRAGMA cache_size=1")  # spill: the journal and the file both change
                conn.execute("BEGIN")
                conn.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = start + 1")
                shutil.copyfile(src, d / "p.sqlite")
                shutil.copyfile(d / "src.sqlite-journal", d / "p.sqlite-journal")
                conn.execute("ROLLBACK")
        finally:
            conn.close()
        for leftover in d.glob("src.sqlite*"):
            leftover.unlink()
    return build


def sidecar_file(suffix: str, data: bytes) -> Builder:
    def build(d: Path) -> None:
        profile()(d)
        (d / f"p.sqlite{suffix}").write_bytes(data)
    return build


def host_to_host_rocpd(d: Path) -> None:
    """A rocpd file with a host-to-host copy: its device is NULL (no GPU involved), not a GPU "-1"."""
    from testkit.scenario import Copy, Device, Kernel, Process, Scenario

    scen = Scenario(name="h2h", description="one host-to-host copy", devices=[Device(id=0)],
                    processes=[Process(pid=100, name="app", threads={100: "main"})],
                    kernels=[Kernel(pid=100, device=0, stream=1, start=i * 1000, end=i * 1000 + 500, name="k")
                             for i in range(5)],
                    copies=[Copy(pid=100, device=0, stream=2, start=30000, end=31000, bytes=1 << 20,
                                 direction="HtoH", src_kind="pageable", dst_kind="pageable")])
    write_rocpd(scen, d / "p.sqlite")


def fifo(name: str = "p.sqlite") -> Builder:
    def build(d: Path) -> None:
        os.mkfifo(d / name)
    return build


def symlink(target: str, name: str = "p.sqlite") -> Builder:
    def build(d: Path) -> None:
        (d / name).symlink_to(target)
    return build


def sparse(size: int, name: str) -> Builder:
    def build(d: Path) -> None:
        with (d / name).open("wb") as fh:
            fh.truncate(size)
    return build


def unreadable(name: str = "p.sqlite") -> Builder:
    def build(d: Path) -> None:
        profile(name=name)(d)
        (d / name).chmod(0)
    return build


def canary(d: Path) -> Path:
    """The file a hostile input would create if it ever ran a command (it never may)."""
    return d.parent / "CANARY"


def pack(text: str, name: str = "pack.yaml") -> Builder:
    def build(d: Path) -> None:
        (d / name).write_text(text.replace("{canary}", str(canary(d))), encoding="utf-8")
    return build


def pack_bytes(data: bytes, name: str = "pack.yaml") -> Builder:
    def build(d: Path) -> None:
        (d / name).write_bytes(data)
    return build


def templates(files: Mapping[str, str | bytes]) -> Builder:
    def build(d: Path) -> None:
        (d / "tpl").mkdir()
        for name, text in files.items():
            path = d / "tpl" / name
            if isinstance(text, bytes):
                path.write_bytes(text)
            else:
                path.write_text(text.replace("{canary}", str(canary(d))), encoding="utf-8")
    return build


def query_tree(files: Mapping[str, str | bytes]) -> Builder:
    """A copy of the bundled queries/ under d/queries with some files replaced."""
    def build(d: Path) -> None:
        shutil.copytree(Path(__file__).resolve().parents[2] / "queries", d / "queries")
        for rel, text in files.items():
            data = text if isinstance(text, bytes) else text.replace("{canary}", str(canary(d))).encode()
            (d / "queries" / rel).write_bytes(data)
    return build


def several(*builders: Builder) -> Builder:
    def build(d: Path) -> None:
        for b in builders:
            b(d)
    return build


def mkdirs(*names: str) -> Builder:
    def build(d: Path) -> None:
        for n in names:
            (d / n).mkdir(parents=True)
    return build


# ---- the cases ----------------------------------------------------------------------------------

S = ("summary", "{d}/p.sqlite")            # summarise the case's profile
SJ = ("summary", "--json", "{d}/p.sqlite")
A = ("analyze", "--no-llm", "{d}/p.sqlite")  # analyse it, rules only
K = "CUPTI_ACTIVITY_KIND_KERNEL"
M = "CUPTI_ACTIVITY_KIND_MEMCPY"
R = "CUPTI_ACTIVITY_KIND_RUNTIME"
TIMEOUT = {"PA_QUERY_TIMEOUT": "0.15"}
ENDLESS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c)"
DOMAIN = "outside the relation's domain"


def _profile_cases() -> list[Case]:
    c: list[Case] = []

    def add(name: str, args: tuple[str, ...], exit: int, error: str = "", **kw: object) -> None:
        c.append(Case(name=name, group="profile", args=args, exit=exit, error=error, **kw))  # type: ignore[arg-type]

    # -- not a profile at all
    add("missing_file", S, 2, "no such file")
    add("empty_dir", ("summary", "{d}/runs"), 2, "no profile files", build=mkdirs("runs"))
    add("empty_file", S, 2, "empty file", build=raw(b""))
    add("random_bytes", S, 2, "not a SQLite database", build=raw(bytes(range(256)) * 64))
    add("nsys_rep", S, 2, "nsys export --type sqlite", build=raw(b"QDSTRM\x00" + b"x" * 4000))
    add("text_file", S, 2, "not a SQLite database", build=raw(b"SELECT * FROM kernels;\n" * 50))
    add("magic_only", S, 2, "unreadable SQLite file", build=raw(b"SQLite format 3\x00"))
    add("magic_then_garbage", S, 2, "", build=raw(b"SQLite format 3\x00" + b"\xff" * 8192))
    add("bad_page_size", S, 2, "", build=mangled(lambda b: b[:16] + b"\x00\x03" + b[18:]))
    add("truncated_first_page", S, 2, "", build=mangled(lambda b: b[:4096]))
    add("truncated_half", S, 2, "", build=mangled(lambda b: b[: len(b) // 2]))
    add("corrupt_middle_pages", S, 2, "", build=mangled(lambda b: b[:8192] + os.urandom(16384) + b[24576:]))
    add("corrupt_every_page_tail", S, 2, "",
        build=mangled(lambda b: b"".join(b[i:i + 4000] + b"\xa5" * 96 for i in range(0, len(b), 4096))))
    add("zeroed_schema_page", S, 2, "", build=mangled(lambda b: b[:100] + b"\x00" * 3996 + b[4096:]))
    add("fifo", S, 2, "not a regular file", build=fifo())
    add("dev_zero", ("summary", "/dev/zero"), 2, "not a regular file")
    add("symlink_loop", S, 2, "", build=symlink("p.sqlite"))
    add("dangling_symlink", S, 2, "no such file", build=symlink("nowhere.sqlite"))
    add("unreadable_file", S, 2, "cannot read", build=unreadable(), skip_as_root=True)
    add("file_under_a_file", ("summary", "{d}/p.sqlite/inner.sqlite"), 2, "", build=profile())
    add("other_program", S, 2, "another program",
        build=fresh("CREATE TABLE users (id INTEGER, name TEXT); INSERT INTO users VALUES (1, 'x');"))
    add("no_tables", S, 2, "no tables", build=fresh("PRAGMA user_version = 3;"))
    add("hostile_table_names", S, 2, "another program",
        build=fresh('CREATE TABLE "\x1b[2J\x1b]0;owned\x07" (x); CREATE TABLE "a\nb" (y);'))
    # -- version tables
    add("no_schema_version", S, 2, "EXPORT_SCHEMA_VERSION",
        build=profile("DELETE FROM META_DATA_EXPORT WHERE name = 'EXPORT_SCHEMA_VERSION';"))
    add("schema_version_words", S, 2, "schema version",
        build=profile("UPDATE META_DATA_EXPORT SET value = 'banana' WHERE name = 'EXPORT_SCHEMA_VERSION';"))
    add("schema_version_future", S, 0, build=profile(
        "UPDATE META_DATA_EXPORT SET value = '99.1.0' WHERE name = 'EXPORT_SCHEMA_VERSION';"),
        stderr_has=(), stdout_has=("newer than every query set",))
    add("schema_version_huge_number", S, 2, "schema version", build=profile(
        "UPDATE META_DATA_EXPORT SET value = '9' || printf('%.500c', '9') WHERE name = 'EXPORT_SCHEMA_VERSION';"))
    add("meta_view_dropped_table", S, 2, "version tables", build=profile(
        "CREATE TABLE m2 AS SELECT * FROM META_DATA_EXPORT; DROP TABLE META_DATA_EXPORT; "
        "CREATE VIEW META_DATA_EXPORT AS SELECT * FROM m2; DROP TABLE m2;"))
    add("meta_view_load_extension", S, 2, "version tables", build=profile(
        "ALTER TABLE META_DATA_EXPORT RENAME TO m2; "
        "CREATE VIEW META_DATA_EXPORT AS SELECT name, load_extension('/tmp/evil.so') AS value FROM m2;"))
    add("meta_view_endless", S, 2, "took longer than", env=TIMEOUT, build=profile(
        "DROP TABLE META_DATA_EXPORT; CREATE VIEW META_DATA_EXPORT AS " + ENDLESS +
        " SELECT 'k' || x AS name, 'v' AS value FROM c;"))
    add("rocpd_version_unsupported", S, 2, "not supported", build=profile(
        "UPDATE {T:metadata} SET value = '2' WHERE tag = 'schema_version';", base="rocpd"))
    add("rocpd_version_future", S, 0, build=profile(
        "UPDATE {T:metadata} SET value = '9' WHERE tag = 'schema_version';", base="rocpd"),
        stderr_has=(), stdout_has=("not a version pa has been checked against",))
    add("rocpd_version_huge_number", S, 2, "not a version number", build=profile(
        "UPDATE {T:metadata} SET value = '9' || printf('%.500c', '9') WHERE tag = 'schema_version';",
        base="rocpd"))
    add("rocpd_version_words", S, 2, "not a version number", build=profile(
        "UPDATE {T:metadata} SET value = 'three' WHERE tag = 'schema_version';", base="rocpd"))
    add("rocpd_no_version", S, 2, "no schema_version", build=profile(
        "DELETE FROM {T:metadata} WHERE tag = 'schema_version';", base="rocpd"))
    add("rocpd_metadata_view_broken", S, 2, "version tables", build=profile(
        "DROP VIEW rocpd_metadata; CREATE VIEW rocpd_metadata AS SELECT tag, value FROM gone_table;"
        .replace("gone_table", "{T:metadata}") + "DROP TABLE {T:metadata};", base="rocpd"))
    # -- hostile or broken views behind the relations
    add("kernel_view_endless", S, 2, "relation kernels", env=TIMEOUT, build=profile(
        f"ALTER TABLE {K} RENAME TO k_old; CREATE VIEW {K} AS {ENDLESS} "
        "SELECT k.* FROM c, k_old AS k;"))
    add("kernel_view_dropped_table", S, 2, "", build=profile(
        f"ALTER TABLE {K} RENAME TO k_old; CREATE VIEW {K} AS SELECT * FROM k_old; DROP TABLE k_old;"))
    add("kernel_view_load_extension", S, 2, "", build=profile(
        f"ALTER TABLE {K} RENAME TO k_old; CREATE VIEW {K} AS "
        "SELECT k.*, load_extension('/tmp/evil.so') AS evil FROM k_old AS k;"))
    add("kernel_view_unknown_function", S, 2, "", build=profile(
        f"ALTER TABLE {K} RENAME TO k_old; CREATE VIEW {K} AS "
        "SELECT start, \"end\", deviceId, streamId, globalPid, correlationId, demangledName, shortName, "
        "gridX, gridY, gridZ, blockX, blockY, blockZ, registersPerThread, staticSharedMemory, "
        "dynamicSharedMemory, localMemoryPerThread, contextId, no_such_function(start) AS x FROM k_old;"))
    add("kernel_view_huge_blob_never_read", S, 0, build=profile(
        f"ALTER TABLE {K} RENAME TO k_old; CREATE VIEW {K} AS "
        "SELECT k.*, zeroblob(2000000000) AS big FROM k_old AS k;"))
    add("stringids_view_endless", S, 2, "took longer than", env=TIMEOUT, build=profile(
        f"DROP TABLE StringIds; CREATE VIEW StringIds AS {ENDLESS} SELECT x AS id, 'n' || x AS value FROM c;"))
    add("runtime_view_cross_join", S, 2, "took longer than", env=TIMEOUT, build=profile(
        f"ALTER TABLE {R} RENAME TO r_old; CREATE VIEW {R} AS "
        "SELECT a.* FROM r_old a, r_old b, r_old c2, r_old d2;"))
    add("rocpd_dispatch_view_endless", S, 2, "took longer than", env=TIMEOUT, build=profile(
        "DROP VIEW rocpd_kernel_dispatch; CREATE VIEW rocpd_kernel_dispatch AS " + ENDLESS +
        " SELECT k.* FROM c, {T:kernel_dispatch} AS k;", base="rocpd"))
    add("rocpd_string_view_dropped", S, 2, "", build=profile(
        "DROP VIEW rocpd_string; CREATE VIEW rocpd_string AS SELECT * FROM nothing_here;", base="rocpd"))
    # -- odd data: dropped or flagged rows, never an internal error
    add("kernel_start_text", SJ, 0, build=profile(loosen(K) + f"UPDATE {K} SET start = 'abc' WHERE rowid = 1;"),
        stdout_has=("1 start or end is not a number",))
    add("kernel_start_blob", SJ, 0, build=profile(loosen(K) + f"UPDATE {K} SET start = x'00ff' WHERE rowid = 2;"),
        stdout_has=(DOMAIN,))
    add("kernel_extreme_times", SJ, 0, build=profile(
        f"UPDATE {K} SET start = -4611686018427387904, \"end\" = 4611686018427387904 WHERE rowid = 3;"),
        stdout_has=("1 start or end outside [0, 2^62) ns",))
    add("kernel_extreme_times_json", SJ, 0, build=profile(
        f"UPDATE {K} SET start = -4611686018427387904, \"end\" = 4611686018427387904 WHERE rowid IN (3, 4, 5);"),
        stdout_has=("3 start or end outside",))
    add("kernel_extreme_times_analyze", A, 0, build=profile(
        f"UPDATE {K} SET start = -4611686018427387904, \"end\" = 4611686018427387904 WHERE rowid = 3;"))
    add("kernel_end_2_62", SJ, 0, build=profile(f"UPDATE {K} SET \"end\" = 4611686018427387904 WHERE rowid = 4;"),
        stdout_has=("outside [0, 2^62)",))
    add("kernel_ten_days", SJ, 0, build=profile(f"UPDATE {K} SET \"end\" = start + 864000000000000 WHERE rowid = 5;"),
        stdout_has=("1 lasting longer than 2^48 ns",))
    add("kernel_int64_extremes", A, 0, build=profile(
        f"UPDATE {K} SET start = -9223372036854775808, \"end\" = 9223372036854775807 WHERE rowid = 6;"))
    add("kernel_real_times", SJ, 0, build=profile(f"UPDATE {K} SET start = start + 0.5 WHERE rowid = 7;"))
    add("kernel_null_device", SJ, 0, build=profile(loosen(K) + f"UPDATE {K} SET deviceId = NULL WHERE rowid <= 3;"),
        stdout_has=("3 device missing, not a number or negative",), stdout_lacks=("-1 ",))
    add("kernel_negative_device", SJ, 0, build=profile(f"UPDATE {K} SET deviceId = -5 WHERE rowid = 1;"),
        stdout_has=("device missing",))
    add("kernel_text_device", SJ, 0, build=profile(loosen(K) + f"UPDATE {K} SET deviceId = 'gpu0' WHERE rowid = 1;"),
        stdout_has=("device missing",))
    add("kernels_all_out_of_domain", A, 0, build=profile(f"UPDATE {K} SET start = -1;"),
        stdout_has=("920 row(s)",))
    add("kernels_durations_overflow", SJ, 2, "durations add up", build=profile(
        f"DELETE FROM {K} WHERE rowid > 1; "
        f"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 17000) "
        f"INSERT INTO {K} SELECT k.* FROM {K} AS k, n; "
        f"UPDATE {K} SET start = 1000, \"end\" = 1000 + 281474976710656;"))
    add("span_of_146_years", A, 0, build=profile(
        f"UPDATE {K} SET start = 4611686018427387000 - 281474976710656, \"end\" = 4611686018427387000 "
        "WHERE rowid = 8;"))
    add("end_before_start", SJ, 0, build=profile(f"UPDATE {K} SET \"end\" = start - 10 WHERE rowid <= 2;"),
        stdout_has=("2 kernels record(s) with no end or end < start",))
    add("copy_negative_bytes", SJ, 0, build=profile(f"UPDATE {M} SET bytes = -100 WHERE rowid = 1;"),
        stdout_has=("bytes negative or not a number",))
    add("copy_text_bytes", SJ, 0, build=profile(loosen(M) + f"UPDATE {M} SET bytes = 'lots' WHERE rowid = 1;"),
        stdout_has=("bytes negative",))
    add("api_start_blob", SJ, 0, build=profile(loosen(R) + f"UPDATE {R} SET start = x'deadbeef' WHERE rowid = 1;"),
        stdout_has=("api_calls: 1 row(s)",))
    add("markers_text_start", SJ, 0, build=profile(loosen("NVTX_EVENTS") + "UPDATE NVTX_EVENTS SET start = 'soon' "
                                                   "WHERE rowid = (SELECT min(rowid) FROM NVTX_EVENTS "
                                                   "WHERE \"end\" IS NOT NULL);"),
        stdout_has=("markers: 1 row(s)",))
    add("markers_open_ranges", SJ, 0, build=profile(loosen("NVTX_EVENTS") +
                                                    "UPDATE NVTX_EVENTS SET \"end\" = NULL WHERE rowid <= 2;"),
        stdout_lacks=(DOMAIN,))
    add("devices_null_id", SJ, 0, build=profile(loosen("TARGET_INFO_GPU") +
                                               "UPDATE TARGET_INFO_GPU SET cuDevice = NULL, id = NULL;"),
        stdout_has=("device missing, not a number or negative",))
    add("devices_duplicated", SJ, 0, build=profile("INSERT INTO TARGET_INFO_GPU SELECT * FROM TARGET_INFO_GPU;"))
    add("mpi_text_times", SJ, 0, build=profile(loosen("MPI_COLLECTIVES_EVENTS") +
                                              "UPDATE MPI_COLLECTIVES_EVENTS SET start = 'x' WHERE rowid = 1;",
                                              base="mpi"), stdout_has=("mpi_calls: 1 row(s)",))
    add("rocpd_dispatch_agent_not_joined", SJ, 0, build=profile(  # the query's inner join drops the rows
        loosen("{T:kernel_dispatch}") + "UPDATE {T:kernel_dispatch} SET agent_id = NULL WHERE rowid <= 2;",
        base="rocpd"), stdout_lacks=(DOMAIN,))
    add("rocpd_agent_without_index", SJ, 0, build=profile(
        loosen("{T:info_agent}") + "UPDATE {T:info_agent} SET type_index = NULL WHERE type = 'GPU';",
        base="rocpd"), stdout_has=("device missing",))
    add("rocpd_dispatch_extreme_times", SJ, 0, build=profile(
        "UPDATE {T:kernel_dispatch} SET start = -4611686018427387904 WHERE rowid = 1;", base="rocpd"),
        stdout_has=(DOMAIN,))
    add("rocpd_copy_negative_size", SJ, 0, build=profile(
        "UPDATE {T:memory_copy} SET size = -5 WHERE rowid = 1;", base="rocpd"), stdout_has=("bytes negative",))
    add("rocpd_host_to_host_copy", SJ, 0, build=host_to_host_rocpd, stdout_has=('"device_count": 1',),
        stdout_lacks=('"id": -1',))
    add("stringids_dropped", A, 0, build=profile("DROP TABLE StringIds;"),
        stdout_has=("table StringIds absent",))
    add("kernel_table_dropped", A, 0, build=profile(f"DROP TABLE {K};"))
    add("runtime_table_dropped", A, 0, build=profile(f"DROP TABLE {R};"))
    add("every_activity_table_dropped", A, 0, build=profile(
        f"DROP TABLE {K}; DROP TABLE {M}; DROP TABLE {R}; DROP TABLE NVTX_EVENTS;"))
    add("kernel_rows_duplicated", SJ, 0, build=profile(f"INSERT INTO {K} SELECT * FROM {K};"))
    # -- hostile strings (they are data everywhere)
    planted = HOSTILE_STRINGS
    hostile = profile(
        "UPDATE StringIds SET value = " + _sql_str(ESC) + " || value WHERE id IN "
        f"(SELECT demangledName FROM {K} LIMIT 1) OR id IN (SELECT shortName FROM {K} LIMIT 1);"
        "UPDATE StringIds SET value = " + _sql_str(MARKDOWN) + " WHERE id IN "
        f"(SELECT shortName FROM {K} WHERE rowid > 100 LIMIT 1);"
        "UPDATE StringIds SET value = " + _sql_str(RICH) + " WHERE id IN "
        f"(SELECT shortName FROM {K} WHERE rowid > 300 LIMIT 1);"
        "UPDATE NVTX_EVENTS SET text = " + _sql_str(JINJA) + " WHERE text IS NOT NULL;"
        "UPDATE TARGET_INFO_GPU SET name = " + _sql_str(ESC) + ";"
        "UPDATE TARGET_INFO_SYSTEM_ENV SET value = " + _sql_str(ESC) + " WHERE name = 'Hostname';")
    for fmt in ("text", "markdown", "html", "json"):
        add(f"hostile_strings_{fmt}", ("analyze", "--no-llm", "-f", fmt, "{d}/p.sqlite"), 0, build=hostile,
            stdout_lacks=NEVER_IN_OUTPUT + (("<b>bold</b>", "<script") if fmt == "html" else ()),
            markdown_inert=fmt == "markdown", planted=planted)
    add("hostile_strings_summary", S, 0, build=hostile, stdout_lacks=NEVER_IN_OUTPUT, planted=planted)
    add("hostile_strings_summary_json", SJ, 0, build=hostile, stdout_lacks=("\x9b", "\u202e"), planted=planted)
    add("hostile_strings_queries", ("queries", "--profile", "{d}/p.sqlite"), 0, build=hostile,
        stdout_lacks=NEVER_IN_OUTPUT)
    add("kernel_name_1mb", S, 0, build=profile(
        f"UPDATE StringIds SET value = printf('%.1000000c', 'k') WHERE id IN (SELECT shortName FROM {K} LIMIT 1);"))
    add("kernel_name_invalid_utf8", A, 0, build=profile(
        f"UPDATE StringIds SET value = CAST(x'6bfffe80c0' AS TEXT) WHERE id IN (SELECT shortName FROM {K} LIMIT 1);"))
    add("kernel_name_null", S, 0, build=profile(
        loosen("StringIds") + f"UPDATE StringIds SET value = NULL WHERE id IN (SELECT shortName FROM {K});"))
    add("kernel_name_integer", S, 0, build=profile(
        loosen("StringIds") + f"UPDATE StringIds SET value = 42 WHERE id IN (SELECT shortName FROM {K});"))
    add("kernel_name_newlines", ("analyze", "--no-llm", "-f", "markdown", "{d}/p.sqlite"), 0, markdown_inert=True,
        build=profile(f"UPDATE StringIds SET value = 'k\n# Fake heading\n| a | b |' "
                      f"WHERE id IN (SELECT shortName FROM {K} LIMIT 1);"))
    add("process_name_hostile", SJ, 0, build=profile("UPDATE PROCESSES SET name = " + _sql_str(ESC) + ";"),
        stdout_lacks=("\x9b", "\u202e"), planted=(ESC,))
    # -- sidecars
    add("wal_uncheckpointed", S, 2, "un-checkpointed WAL", build=with_sidecar("wal"))
    add("journal_hot", S, 2, "hot rollback journal", build=with_sidecar("journal"))
    add("wal_empty", S, 0, build=sidecar_file("-wal", b""))
    add("wal_garbage", S, 0, build=sidecar_file("-wal", b"not a wal file at all" * 10))
    add("journal_zeroed_header", S, 0, build=sidecar_file("-journal", b"\x00" * 512))
    add("shm_only", S, 0, build=sidecar_file("-shm", b"\x00" * 32768))
    add("wal_is_directory", S, 0, build=several(profile(), mkdirs("p.sqlite-wal")))
    # -- several ranks
    add("ranks_one_corrupt", ("summary", "{d}/run"), 2, "", build=several(
        mkdirs("run"), lambda d: shutil.copyfile(d.parent / "_base" / BASES["mpi"], d / "run" / "rank_0.db"),
        lambda d: (d / "run" / "rank_1.db").write_bytes(b"SQLite format 3\x00" + b"\x00" * 5000)))
    add("ranks_one_unreadable", ("analyze", "--no-llm", "--workers", "2", "{d}/run"), 2, "cannot read",
        skip_as_root=True, build=several(
            mkdirs("run"), lambda d: shutil.copyfile(d.parent / "_base" / BASES["mpi"], d / "run" / "rank_0.db"),
            lambda d: shutil.copyfile(d.parent / "_base" / BASES["mpi"], d / "run" / "rank_1.db"),
            lambda d: (d / "run" / "rank_1.db").chmod(0)))
    add("ranks_fifo_among_files", ("summary", "{d}/run/rank_0.db", "{d}/run/rank_1.db"), 2, "not a regular file",
        build=several(mkdirs("run"), lambda d: shutil.copyfile(d.parent / "_base" / BASES["mpi"],
                                                                 d / "run" / "rank_0.db"), fifo("run/rank_1.db")))
    add("ranks_same_file_twice", ("summary", "{mpi}", "{mpi}"), 0)
    return c


def _sql_str(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


# ---- rule packs ---------------------------------------------------------------------------------

PACK_HEAD = "pack: hostile\ndescription: a site pack from the corpus\n"
V = ("rules", "validate", "{d}/pack.yaml")
AR = ("analyze", "--no-llm", "{nsys}", "--rules", "{d}/pack.yaml")


def rule(when: str = "true", evidence: str = "seen", suggestion: str = "do it", extra: str = "",
         rid: str = "SITE-HOSTILE-001", cite: str = "[summary.span_ns]") -> str:
    """A hypothesis in YAML, fired and listed by default, whose fields a case replaces with hostile text.

    It claims no time (claim: none), so it is listed whatever the profile's buckets hold, and its
    templates are always rendered.
    """
    frac = ("    runtime_fraction: null\n    claim: none\n    expected_impact: low\n"
            "    counterfactual: the corpus rule claims no time of the span\n")
    return (f"  - id: {rid}\n    title: hostile rule\n    description: a hostile rule from the bad-input corpus\n"
            f"    when: {when}\n    bottleneck_type: other\n    bucket: idle\n{frac}"
            f"    confidence: 0.5\n    action_category: runtime_config\n"
            f"    evidence:\n      - text: {evidence}\n        cite: {cite}\n    suggestion: {suggestion}\n{extra}")


def hyp(**kw: str) -> str:
    return PACK_HEAD + "hypotheses:\n" + rule(**kw)


def metric(name: str, expr: str) -> str:
    return f"  {name}:\n    expr: {expr}\n    description: corpus metric\n"


def _rules_cases() -> list[Case]:
    c: list[Case] = []

    def add(name: str, text: str | bytes | Builder, exit: int, error: str = "", args: tuple[str, ...] = V,
            **kw: object) -> None:
        build = text if callable(text) else (pack_bytes(text) if isinstance(text, bytes) else pack(text))
        c.append(Case(name=f"rules_{name}", group="rules", args=args, exit=exit, error=error, build=build,
                      **kw))  # type: ignore[arg-type]

    laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
        f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(9))
    squares = "".join(metric(f"m{i + 1}", f"m{i} * m{i}") for i in range(29))
    doubling = "".join(metric(f"s{i + 1}", f"s{i} + s{i}") for i in range(40))
    add("empty_file", b"", 2, "must be a mapping")
    add("not_yaml", "pack: [unclosed\n  - x: {\n", 2, "not valid YAML")
    add("tabs_yaml", "pack:\n\t- x\n", 2, "not valid YAML")
    add("not_utf8", b"pack: h\xe9\xff\xfe\ndescription: x\n", 2, "not UTF-8")
    add("utf16_bom", "pack: x\ndescription: y\n".encode("utf-16"), 2, "not UTF-8")
    add("dev_zero", symlink("/dev/zero", "pack.yaml"), 2, "not a regular file")
    add("fifo", fifo("pack.yaml"), 2, "not a regular file")
    add("directory", mkdirs("pack.yaml"), 2, "not a regular file")
    add("missing", lambda d: None, 2, "cannot read")
    add("unreadable", several(pack(PACK_HEAD), lambda d: (d / "pack.yaml").chmod(0)), 2, "cannot read",
        skip_as_root=True)
    add("fifty_megabytes", sparse(50 << 20, "pack.yaml"), 2, "larger than")
    add("two_megabytes_of_yaml", PACK_HEAD + "params:\n" + "".join(
        f"  p{i}:\n    value: {i}\n    description: padding {'x' * 60}\n" for i in range(22000)), 2, "larger than")
    add("billion_laughs", PACK_HEAD + laughs, 2, "expands to more than")
    add("recursive_alias", PACK_HEAD + "params: &p\n  loop: *p\n", 2, "")
    add("recursive_alias_list", "a: &a [*a]\n", 2, "")
    add("deep_nesting_lists", PACK_HEAD + "x: " + "[" * 5000 + "]" * 5000 + "\n", 2, "")
    add("deep_nesting_maps", PACK_HEAD + "x: " + "{a: " * 3000 + "1" + "}" * 3000 + "\n", 2, "")
    add("python_tag", PACK_HEAD + "x: !!python/object/apply:os.system ['touch {canary}']\n", 2, "not valid YAML")
    add("python_name_tag", "!!python/name:os.system\n", 2, "not valid YAML")
    add("binary_tag", PACK_HEAD + "params:\n  p:\n    value: !!binary aGVsbG8=\n    description: x\n", 2, "")
    add("top_level_list", "- pack: x\n", 2, "must be a mapping")
    add("top_level_scalar", "just a string\n", 2, "must be a mapping")
    add("no_pack_name", "description: x\n", 2, "")
    add("unknown_top_field", PACK_HEAD + "exec: rm -rf /\n", 2, "")
    add("nan_override", PACK_HEAD + "override_params:\n  impact_high_fraction: .nan\n", 2, "NaN")
    add("inf_param", PACK_HEAD + "params:\n  site_x:\n    value: .inf\n    description: x\n", 2, "NaN or infinite")
    add("nan_in_list_param", PACK_HEAD + "params:\n  site_x:\n    value: [1, .NaN]\n    description: x\n", 2,
        "NaN or infinite")
    add("override_unknown_param", PACK_HEAD + "override_params:\n  no_such_param: 3\n", 2, "unknown param")
    add("override_wrong_type", PACK_HEAD + "override_params:\n  impact_high_fraction: lots\n", 2, "does not match")
    add("metric_import", PACK_HEAD + "metrics:\n" + metric("x", "\"__import__('os').system('touch {canary}')\""), 2,
        "")
    add("metric_dunder_attribute", PACK_HEAD + "metrics:\n" + metric("x", "summary.__class__"), 2, "underscore")
    add("metric_lambda", PACK_HEAD + "metrics:\n" + metric("x", "\"(lambda: 1)()\""), 2, "unknown function")
    add("metric_comprehension", PACK_HEAD + "metrics:\n" + metric("x", "\"[y for y in [1]]\""), 2, "not allowed")
    add("metric_getattr", PACK_HEAD + "metrics:\n" + metric("x", "\"getattr(summary, 'x')\""), 2, "unknown function")
    add("metric_walrus", PACK_HEAD + "metrics:\n" + metric("x", "\"(y := 3)\""), 2, "not allowed")
    add("metric_power", PACK_HEAD + "metrics:\n" + metric("x", "\"9 ** 9 ** 9\""), 2, "not allowed")
    add("metric_computed_subscript", PACK_HEAD + "metrics:\n" + metric("x", "\"summary.kernels[1 + 1]\""), 2,
        "constant subscripts")
    add("metric_huge_source", PACK_HEAD + "metrics:\n" + metric("x", " + ".join(["1"] * 3000)), 2,
        "longer than")
    add("metric_deep_parens", PACK_HEAD + "metrics:\n" + metric("x", "\"" + "(" * 250 + "1" + ")" * 250 + "\""), 2,
        "")
    add("metric_deep_not", PACK_HEAD + "metrics:\n" + metric("x", "\"" + "not " * 2000 + "1\""), 2, "")
    add("metric_unary_chain", PACK_HEAD + "metrics:\n" + metric("x", "\"" + "-" * 100000 + "1\""), 2, "")
    add("metric_cycle", PACK_HEAD + "metrics:\n" + metric("a", "b") + metric("b", "a"), 2, "cycle")
    add("metric_named_like_param", PACK_HEAD + "metrics:\n" + metric("impact_high_fraction", "1"), 2,
        "already used by a param")
    add("squaring_chain", PACK_HEAD + "metrics:\n" + metric("m0", "3") + squares, 0, args=AR)
    add("string_doubling_chain", PACK_HEAD + "metrics:\n" + metric("s0", "\"'ab'\"") + doubling, 0, args=AR)
    add("float_overflow", PACK_HEAD + "metrics:\n" + metric("big", "1e308 * 10"), 0, args=AR)
    add("too_many_phase_rules", PACK_HEAD + "metrics:\n" + "".join(metric(f"x{i}", " + ".join(["1"] * 15))
                                                                     for i in range(100))
        + "hypotheses:\n" + "".join(rule(rid=f"SITE-PH-{i:03d}", extra="    scope: phase\n") for i in range(40)),
        2, "expression nodes")
    add("duplicate_rule_id", hyp() + rule(), 2, "already defined")
    add("replace_missing", PACK_HEAD + "hypotheses:\n" + rule(extra="    replace: true\n"), 2, "no earlier pack")
    add("disable_unknown", PACK_HEAD + "disable: [NO-SUCH-RULE]\n", 2, "matches no rule")
    add("template_dunder", hyp(evidence="\"{{ summary.__class__ }}\""), 2, "not allowed")
    add("template_globals_escape", hyp(evidence="\"{{ self.__init__.__globals__['__builtins__'] }}\""), 2, "")
    add("template_cycler_escape", hyp(evidence="\"{{ cycler.__init__.__globals__.os.system('touch {canary}') }}\""),
        2, "")
    add("template_dunder_subscript", hyp(evidence="\"{{ summary['__class__'] }}\""), 2, "not allowed")
    add("template_attr_filter", hyp(evidence="\"{{ (summary | attr('__class__')).__name__ }}\""), 2, "")
    add("template_attr_filter_runtime", hyp(evidence="\"{{ summary | attr('__init__') }}\""), 2, "template",
        args=AR)
    add("template_repeat_bomb", hyp(evidence="\"{{ 'x' * 1000000000 }}\""), 2, "refused", args=AR)
    add("template_format_bomb", hyp(evidence="\"{{ '%999999999d' % 1 }}\""), 2, "refused", args=AR)
    add("template_loop_bomb", hyp(evidence="\"{% for a in 'x' * 3000 %}{% for b in 'x' * 3000 %}"
                                           "{% for c in 'x' * 3000 %}{% endfor %}{% endfor %}{% endfor %}\""),
        2, "still running", args=AR, template_seconds=0.15)
    add("template_recursive_macro", hyp(evidence="\"{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}\""), 2,
        "recursion", args=AR)
    add("template_syntax_error", hyp(evidence="\"{{ unclosed \""), 2, "syntax error")
    add("template_include", hyp(evidence="\"{% include '/etc/passwd' %}\""), 2, "", args=AR)
    add("template_range", hyp(evidence="\"{{ range(10) | list }}\""), 2, "unknown name")
    add("template_deep_nesting", hyp(evidence="\"{{ " + "(" * 3000 + "1" + ")" * 3000 + " }}\""), 2, "")
    add("division_by_zero_reason", hyp(when="\"summary.gpu.kernel_count / (summary.gpu.kernel_count - "
                                            "summary.gpu.kernel_count) > 1\""), 0,
        args=("rules", "explain", "SITE-HOSTILE-001", "{nsys}", "--rules", "{d}/pack.yaml"),
        stdout_has=("division by zero",))
    add("when_dunder_path", hyp(when="summary.profile.__dict__"), 2, "underscore")
    add("rule_id_with_escape", PACK_HEAD + "hypotheses:\n" + rule(rid="\"SITE-\\e[2J-001\""), 2, "")
    add("evidence_100kb", hyp(evidence="\"" + "long text " * 10000 + "\""), 0, args=AR)
    add("merge_key_bomb", PACK_HEAD + "x0: &x0 {a: 1, b: 2, c: 3, d: 4, e: 5, f: 6, g: 7, h: 8}\n" + "".join(
        f"x{i + 1}: &x{i + 1} {{<<: *x{i}, k{i}: [*x{i}, *x{i}, *x{i}, *x{i}, *x{i}, *x{i}, *x{i}, *x{i}]}}\n"
        for i in range(12)), 2, "expands to more than")
    add("duplicate_keys", PACK_HEAD + "description: second\n", 0)
    add("requires_unknown", hyp(extra="    requires: [no_such_metric]\n"), 2, "unknown name")
    add("cite_unknown_path", hyp(cite="[summary.no_such_field]"), 2, "not a summary field")
    return c


# ---- query files, templates, outputs ------------------------------------------------------------

def _query_cases() -> list[Case]:
    head = ("-- relation: kernels\n-- requires: CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId), "
            "StringIds(id, value)\n")
    good = (Path(__file__).resolve().parents[2] / "queries" / "nsys" / "base" / "kernels.sql").read_text()
    body = good.rsplit("\nSELECT", 1)[1].split("{%", 1)[0]   # the kernel table's SELECT, without the Jinja

    def q(name: str, text: str | bytes, exit: int, error: str = "", **kw: object) -> Case:
        return Case(name=f"query_{name}", group="query", args=("summary", "{nsys}"), exit=exit, error=error,
                    queries={"nsys/base/kernels.sql": text}, **kw)  # type: ignore[arg-type]

    return [
        q("globals_escape", head + "{{ has_table.__globals__['__builtins__']['__import__']('os')"
                                   ".system('touch {canary}') }}\nSELECT" + body, 2, "template error"),
        q("self_escape", head + "{{ self.__init__.__globals__ }}\nSELECT" + body, 2, "template error"),
        q("cycler_escape", head + "{{ cycler.__init__.__globals__.os.system('touch {canary}') }}\nSELECT" + body, 2,
          "template error"),
        q("lipsum_escape", head + "{{ lipsum.__globals__['os'].popen('touch {canary}').read() }}\nSELECT" + body,
          2, "template error"),
        q("namespace_escape", head + "{{ namespace.__init__.__globals__ }}\nSELECT" + body, 2, "template error"),
        q("subclasses_escape", head + "{{ ''.__class__.__mro__[1].__subclasses__() }}\nSELECT" + body, 2,
          "template error"),
        q("attr_filter_escape", head + "{{ (has_table | attr('__globals__')) }}\nSELECT" + body, 2,
          "template error"),
        q("loop_bomb", head + "{% set s = 'x' * 3000 %}{% for a in s %}{% for b in s %}{% for c in s %}"
                              "{% endfor %}{% endfor %}{% endfor %}\nSELECT" + body, 2, "still running",
          template_seconds=0.15),
        q("append_while_iterating", head + "{% set l = [1] %}{% for x in l %}{% set _ = l.append(x) %}"
                                           "{% endfor %}\nSELECT" + body, 2, "template error",
          template_seconds=0.15),
        q("recursive_macro", head + "{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}\nSELECT" + body, 2,
          "recursion"),
        q("output_bomb", head + "{{ 'x' * 100000000 }}\nSELECT" + body, 2, "refused"),
        q("endless_cte", head + ENDLESS + " SELECT NULL AS row_id, 1 AS pid, 0 AS device, 1 AS stream, "
                                "x AS start, x + 1 AS \"end\", NULL AS correlation_id, 1 AS name_id, 'k' AS name, "
                                "'k' AS short_name, 1 AS grid_x, 1 AS grid_y, 1 AS grid_z, 1 AS block_x, "
                                "1 AS block_y, 1 AS block_z, NULL AS registers_per_thread, NULL AS sgpr_per_wave, "
                                "NULL AS static_shared_bytes, NULL AS dynamic_shared_bytes, "
                                "NULL AS local_bytes_per_thread, NULL AS graph_id FROM c", 2, "relation kernels",
          env=TIMEOUT),
        q("not_utf8", head.encode() + b"-- \xff\xfe\nSELECT" + body.encode(), 2, "not UTF-8"),
        q("wrong_columns", head + "SELECT 1 AS x", 2, "output columns differ"),
        q("sql_error", head + "SELECT * FROM no_such_table", 2, "query fails"),
        q("attach_attempt", head + "ATTACH DATABASE '{canary}' AS evil", 2, ""),
        q("write_attempt", head + "SELECT" + body + ";\nDELETE FROM StringIds", 2, ""),
    ]


_REPORT_TPL = "report.txt.j2"


def _template_cases() -> list[Case]:
    def t(name: str, text: str | bytes, exit: int, error: str = "", fmt: str = "text", **kw: object) -> Case:
        tpl = {"text": "report.txt.j2", "markdown": "report.md.j2", "html": "report.html.j2"}[fmt]
        return Case(name=f"template_{name}", group="template",
                    args=("analyze", "--no-llm", "-f", fmt, "--templates", "{d}/tpl", "{nsys}"), exit=exit,
                    error=error, build=templates({tpl: text}), **kw)  # type: ignore[arg-type]

    return [
        t("ok", "schema {{ report.schema_version }}: {{ report.hypotheses | length }} findings\n", 0,
          stdout_has=(" findings",)),
        t("self_globals", "{{ self.__init__.__globals__['__builtins__']['__import__']('os')"
                          ".system('touch {canary}') }}", 2, "template report.txt.j2"),
        t("cycler_globals", "{{ cycler.__init__.__globals__.os.system('touch {canary}') }}", 2, "template"),
        t("lipsum_globals", "{{ lipsum.__globals__['os'].system('touch {canary}') }}", 2, "template"),
        t("report_class", "{{ report.__class__.__mro__[1].__subclasses__() }}", 2, "unsafe"),
        t("attr_filter", "{{ report | attr('__class__') }}", 2, "template"),
        t("format_escape", "{{ '{0.__class__.__mro__}'.format(report) }}", 2, "template", fmt="markdown"),
        t("loop_bomb", "{% for h in report.summary.kernels * 1000 %}{% for a in report.summary.kernels * 1000 %}"
                       "{% endfor %}{% endfor %}", 2, "", template_seconds=0.15),
        t("nested_loops", "{% set s = 'x' * 2000 %}{% for a in s %}{% for b in s %}{% for c in s %}{% endfor %}"
                          "{% endfor %}{% endfor %}", 2, "still running", template_seconds=0.15),
        t("recursive_macro", "{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", 2, "recursion"),
        t("repeat_bomb", "{{ 'x' * 10 ** 10 }}", 2, "refused"),
        t("include_passwd", "{% include '/etc/passwd' %}", 2, "template"),
        t("include_traversal", "{% include '../../../../etc/passwd' %}", 2, "template"),
        t("extends_bundled", "{% extends 'report.md.j2' %}", 0),
        t("syntax_error", "{% for %}", 2, "template"),
        t("not_utf8", b"\xff\xfe{{ report }}", 2, "not UTF-8"),
        t("html_hostile_autoescaped", "<p>{{ report.schema_version }}{{ '<script>x</script>' }}</p>", 0,
          fmt="html", stdout_lacks=("<script>",)),
        Case(name="template_fifo", group="template", args=("analyze", "--no-llm", "--templates", "{d}/tpl", "{nsys}"),
             exit=2, error="not a regular file", build=several(mkdirs("tpl"), fifo("tpl/report.txt.j2"))),
        Case(name="template_dir_is_file", group="template",
             args=("analyze", "--no-llm", "--templates", "{nsys}", "{nsys}"), exit=2, error="not a directory"),
        Case(name="template_compare_globals", group="template",
             args=("compare", "--no-rules", "--no-llm", "--templates", "{d}/tpl", "{nsys}", "{nsys}"), exit=2,
             error="template", build=templates({"compare.txt.j2": "{{ cycler.__init__.__globals__.os.system("
                                                                  "'touch {canary}') }}"})),
    ]


def _output_cases() -> list[Case]:
    def o(name: str, out: str, exit: int, error: str = "", build: Builder | None = None, **kw: object) -> Case:
        return Case(name=f"output_{name}", group="output",
                    args=("analyze", "--no-llm", "{d}/p.sqlite", "-o", out), exit=exit, error=error,
                    build=several(profile(), build) if build else profile(), **kw)  # type: ignore[arg-type]

    return [
        o("existing_dir", "{d}/adir", 2, "is a directory", build=mkdirs("adir")),
        o("dir_named_html", "{d}/x.html", 2, "is a directory", build=mkdirs("x.html")),
        o("missing_parent", "{d}/no/such/dir/out.txt", 2, "does not exist"),
        o("parent_is_file", "{d}/p.sqlite/out.txt", 2, ""),
        o("read_only_dir", "{d}/ro/out.txt", 2, "cannot write", skip_as_root=True,
          build=several(mkdirs("ro"), lambda d: (d / "ro").chmod(stat.S_IRUSR | stat.S_IXUSR))),
        o("the_profile_itself", "{d}/p.sqlite", 2, "one of the input files"),
        o("profile_sidecar_name", "{d}/p.sqlite-journal", 2, "sidecar"),
        o("profile_wal_name", "{d}/p.sqlite-wal", 2, "sidecar"),
        o("dev_full", "/dev/full", 2, "No space left"),
        o("dev_null", "/dev/null", 0),
        o("stdout_dash", "-", 0, stdout_has=("pa analyze",)),
        o("new_file", "{d}/report", 0, outputs=("report.txt",)),
        o("html_by_extension", "{d}/r.html", 0, outputs=("r.html",)),
        o("fifo_without_reader", "{d}/pipe", 2, "no reader", build=fifo("pipe"), outputs=()),
        o("symlink_to_file", "{d}/link.txt", 0, outputs=("target.txt",),
          build=several(lambda d: (d / "target.txt").write_text("old"), symlink("target.txt", "link.txt"))),
        Case(name="output_compare_dir", group="output",
             args=("compare", "--no-rules", "--no-llm", "{nsys}", "{nsys}", "-o", "{d}/adir"), exit=2,
             error="is a directory", build=mkdirs("adir")),
        Case(name="output_example_over_dev_null", group="output", args=("example", "/dev/null"), exit=2,
             error="not a regular file"),
        Case(name="output_example_dir", group="output", args=("example", "{d}/adir"), exit=2, error="is a directory",
             build=mkdirs("adir")),
    ]


CASES: list[Case] = [*_profile_cases(), *_rules_cases(), *_query_cases(), *_template_cases(), *_output_cases()]


def build(workdir: Path) -> dict[str, Path]:
    """Write every case's inputs under workdir/<case name>/ (bases in workdir/_base); return the dirs."""
    build_bases(workdir / "_base")
    dirs = {}
    for case in CASES:
        d = workdir / case.name
        d.mkdir()
        dirs[case.name] = d
        try:
            if any("{rocpd}" in a for a in case.args):
                base_file(d, "rocpd")
            if case.build is not None:
                case.build(d)
        except (MissingBase, RocpdDdlMissing) as exc:
            (d / UNBUILT).write_text(str(exc))
            continue
        if case.queries is not None:
            query_tree(case.queries)(d)
        dirs[case.name] = d
    return dirs


def hostile_profiles(workdir: Path) -> Iterator[tuple[Path, tuple[str, ...]]]:
    """(profile, strings it plants) for every built case whose profile carries hostile strings.

    For the LLM stage's --redact tests: run `pa analyze --redact` on each against the HTTP fake and
    assert no planted string (nor any other registered string) reaches a request body.
    """
    for case in CASES:
        if case.planted:
            yield workdir / case.name / "p.sqlite", case.planted
