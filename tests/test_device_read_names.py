"""A site's own device-read calls (a rule pack's marker_names.device_reads) count as the aten:: ones do."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from click.testing import CliRunner
from testkit.nsys_writer import write_nsys
from testkit.scenario import Scenario
from testkit.scenarios import device_reads

from pa.cli import main
from pa.metrics.marker_names import DEVICE_READ_RANGES, MarkerNaming
from pa.metrics.summarize import summarize

OTHER = ("cupy.asnumpy", "cupy.ndarray.item")


def _other_framework(sc: Scenario) -> Scenario:
    """The same run, its device-read ranges named as another framework would name them."""
    sc.markers = [replace(m, text=m.text.replace("aten::is_nonzero", OTHER[0]).replace("aten::item", OTHER[1]))
                  for m in sc.markers]
    return sc


def test_a_packs_device_read_names_measure_what_the_default_ones_measure(tmp_path: Path) -> None:
    torch = summarize(write_nsys(device_reads(), tmp_path / "torch.sqlite")).device_reads
    other = write_nsys(_other_framework(device_reads()), tmp_path / "other.sqlite")
    unread = summarize(other).device_reads
    read = summarize(other, marker_naming=MarkerNaming(device_reads=(*DEVICE_READ_RANGES, *OTHER))).device_reads
    assert torch is not None and unread is not None and read is not None
    assert {s.name for s in torch.sites} == {"aten::is_nonzero", "aten::item"}
    assert unread.sites == [] and unread.recoverable_ns == 0
    # the same timings under other names: the same costs, site by site and over all of them
    assert {s.name for s in read.sites} == set(OTHER)
    by_torch = {s.name: s for s in torch.sites}
    for site, name in zip(sorted(read.sites, key=lambda s: s.name), ("aten::is_nonzero", "aten::item"), strict=True):
        t = by_torch[name]
        assert (site.count, site.host_blocked_ns, site.gpu_idle_ns, site.recoverable_ns) == \
            (t.count, t.host_blocked_ns, t.gpu_idle_ns, t.recoverable_ns) and site.count == 200
    assert (read.host_blocked_ns, read.gpu_idle_ns, read.recoverable_ns) == \
        (torch.host_blocked_ns, torch.gpu_idle_ns, torch.recoverable_ns)
    assert read.recoverable_ns > 0


def test_a_site_pack_makes_gpu_sync_003_see_its_framework(tmp_path: Path) -> None:
    other = write_nsys(_other_framework(device_reads()), tmp_path / "other.sqlite")
    pack = tmp_path / "site.yaml"
    pack.write_text("pack: site\ndescription: CuPy's device reads\n"
                    f"marker_names:\n  device_reads: {json.dumps([*DEVICE_READ_RANGES, *OTHER])}\n")

    def fired(*extra: str) -> list[str]:
        r = CliRunner().invoke(main, ["analyze", str(other), "--no-llm", "-f", "json", *extra])
        assert r.exit_code == 0, r.output
        return [h["rule_id"] for h in json.loads(r.output)["hypotheses"]]

    assert "GPU-SYNC-003" not in fired()
    assert "GPU-SYNC-003" in fired("--rules", str(pack))
