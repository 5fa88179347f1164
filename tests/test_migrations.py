"""Unified-memory migrations (pa/metrics/migrations.py): read from the "Unified" copy kinds with
their cause, kept out of the explicit copy statistics, and bounded by a hand count."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from reference import reference_union  # tests/ is on sys.path
from testkit import scenarios
from testkit.nsys_writer import write_nsys

from pa.metrics.summarize import summarize


def test_migration_facts_match_a_hand_count(tmp_path: Path) -> None:
    scen = scenarios.um_page_faults()
    write_nsys(scen, tmp_path / "u.sqlite")
    s = summarize(tmp_path / "u.sqlite")
    # what the file holds, read with plain SQL: copy kinds by label, causes by label
    conn = sqlite3.connect(tmp_path / "u.sqlite")
    rows = conn.execute(
        "SELECT o.label, c.label, count(*), sum(m.bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY m "
        "JOIN ENUM_CUDA_MEMCPY_OPER o ON o.id = m.copyKind "
        "JOIN ENUM_CUDA_UNIF_MEM_MIGRATION c ON c.id = m.migrationCause GROUP BY 1, 2").fetchall()
    conn.close()
    assert sorted(rows) == [("Unified Device-to-Host", "Page fault", 3200, 3200 * 65536),
                            ("Unified Host-to-Device", "Page fault", 800, 800 * 65536)]
    mig = s.copies.migrations if s.copies else None
    assert mig is not None and mig.count == 4000 and mig.by_cause["page_fault"].bytes == 4000 * 65536
    faults = [(c.start, c.end) for c in scen.copies if c.migration == "page_fault"]
    kernels = [(k.start, k.end) for k in scen.kernels]
    busy = reference_union(faults)
    exposed = busy - (busy + reference_union(kernels) - reference_union(faults + kernels))
    assert (mig.fault_busy_ns, mig.fault_exposed_ns, mig.fault_overlapped_ns) == (busy, exposed, busy - exposed)
    peak = s.devices[0].hardware.host_link_bandwidth_bps
    assert peak and mig.fault_recoverable_ns == max(0, exposed - int(4000 * 65536 * 1e9 / peak))
    # migrations are no explicit copies: no copy statistics, no round trips from page-sized faults
    assert s.copies is not None and s.copies.count == 0 and s.copies.by_kind == [] and s.copies.round_trip_count == 0


def test_explicit_copies_carry_no_migration(tmp_path: Path) -> None:
    write_nsys(scenarios.pageable_htod(), tmp_path / "p.sqlite")
    s = summarize(tmp_path / "p.sqlite")
    assert s.copies is not None and s.copies.migrations is None and s.copies.count > 0


def test_speculative_prefetch_is_fault_driven_and_user_prefetch_is_not(tmp_path: Path) -> None:
    """The driver's speculative prefetch follows faults (icon_gpu: 306 of its 320 MB); a user prefetch is the fix."""
    import dataclasses

    scen = scenarios.um_page_faults()
    um = [i for i, c in enumerate(scen.copies) if c.migration == "page_fault"]
    relabel = {i: ("speculative_prefetch" if n % 3 == 0 else "user_prefetch" if n % 3 == 1 else "page_fault")
               for n, i in enumerate(um)}
    copies = [dataclasses.replace(c, migration=relabel.get(i, c.migration)) for i, c in enumerate(scen.copies)]
    scen = dataclasses.replace(scen, copies=copies)
    write_nsys(scen, tmp_path / "s.sqlite")
    s = summarize(tmp_path / "s.sqlite")
    mig = s.copies.migrations if s.copies else None
    assert mig is not None and set(mig.by_cause) == {"page_fault", "speculative_prefetch", "user_prefetch"}
    driven = [c for c in copies if c.migration in ("page_fault", "speculative_prefetch")]
    busy = reference_union([(c.start, c.end) for c in driven])
    assert mig.fault_bytes == sum(c.bytes for c in driven) and mig.fault_busy_ns == busy
    assert mig.fault_bytes < mig.bytes      # the user prefetches are migrations, not fault-driven ones
