"""Hardware facts (pa/metrics/hardware.py over hardware.yaml): host links and spec-sheet bandwidths.

Expected values are written here by hand from the sources the data file names (PCI-SIG lane rates,
NVIDIA's GH200 sheet, AMD's Instinct sheets), not read back from the file.
"""

from __future__ import annotations

import pytest

from pa.metrics.hardware import hardware_facts, host_link, spec_memory_bandwidth

GEN = "assumed from GPU generation"


@pytest.mark.parametrize(("name", "cc", "expected"), [
    ("Tesla V100-SXM2-16GB", "7.0", (f"PCIe 3.0 x16 ({GEN})", 15_750_000_000)),
    ("Tesla T4", "7.5", (f"PCIe 3.0 x16 ({GEN})", 15_750_000_000)),
    ("NVIDIA A100-SXM4-40GB", "8.0", (f"PCIe 4.0 x16 ({GEN})", 31_500_000_000)),
    ("NVIDIA H100 80GB HBM3", "9.0", (f"PCIe 5.0 x16 ({GEN})", 63_000_000_000)),
    ("NVIDIA B200", "10.0", (f"PCIe 5.0 x16 ({GEN})", 63_000_000_000)),
    ("NVIDIA GH200 480GB", "9.0", ("NVLink-C2C (assumed from product name)", 450_000_000_000)),
    ("nvidia gb200", None, ("NVLink-C2C (assumed from product name)", 450_000_000_000)),
    ("AMD Instinct MI100", "gfx908", (f"PCIe 4.0 x16 ({GEN})", 31_500_000_000)),
    ("AMD Instinct MI250X", "gfx90a", (f"PCIe 4.0 x16 ({GEN})", 31_500_000_000)),
    ("AMD Instinct MI300X", "gfx942", (f"PCIe 5.0 x16 ({GEN})", 63_000_000_000)),
    ("AMD Instinct MI300A", "gfx942", (None, None)),          # an APU: no host link
    ("AMD Radeon", "gfx1100", (None, None)),                   # unknown gfx target
    ("Some GPU", None, (None, None)),
    ("Some GPU", "sm_80", (None, None)),                       # not a numeric compute capability
])
def test_host_link(name, cc, expected) -> None:
    assert host_link(name, cc) == expected


def test_spec_memory_bandwidth_takes_the_longest_product_key() -> None:
    assert spec_memory_bandwidth("AMD Instinct MI250X") == 1_638_400_000_000   # per GCD: half of 3.2768 TB/s
    assert spec_memory_bandwidth("AMD Instinct MI300X") == 5_300_000_000_000
    assert spec_memory_bandwidth("AMD Instinct MI355X") == 8_000_000_000_000
    assert spec_memory_bandwidth("NVIDIA A100") is None and spec_memory_bandwidth(None) is None


def test_every_rule_names_a_known_link_and_every_link_a_source() -> None:
    facts = hardware_facts()
    assert all(r.link is None or r.link in facts.links for r in facts.rules)
    import yaml

    from pa.metrics.hardware import HARDWARE_FILE
    raw = yaml.safe_load(HARDWARE_FILE.read_text())
    assert all(v.get("source") for v in raw["links"].values())


def test_libyaml_and_pure_python_loaders_read_the_same_facts() -> None:
    """hardware_facts parses with libyaml's loader where PyYAML has it: both must give one document."""
    import yaml

    from pa.metrics.hardware import HARDWARE_FILE
    text = HARDWARE_FILE.read_text()
    pure = yaml.load(text, Loader=yaml.SafeLoader)
    if not hasattr(yaml, "CSafeLoader"):
        pytest.skip("PyYAML built without libyaml: hardware_facts uses the pure-Python loader")
    assert yaml.load(text, Loader=yaml.CSafeLoader) == pure
    assert hardware_facts().memory_bandwidth_bps == {str(k): int(v) for k, v in pure["memory_bandwidth_bps"].items()}
