"""One number-formatting family (pa/formatting.py), by hand, and the three layers that use it."""

from __future__ import annotations

from pa import formatting as f
from pa.report.render import fmt_bytes as report_bytes
from pa.rules.templates import FILTERS
from pa.summary_render import fmt_bytes as summary_bytes


def test_durations_pick_the_unit_after_rounding() -> None:
    assert f.duration(12) == "12 ns"
    assert f.duration(999) == "999 ns"
    assert f.duration(999_400) == "999 µs"
    assert f.duration(999_600) == "1 ms"            # not "1e+03 µs"
    assert f.duration(45_600_000) == "45.6 ms"
    assert f.duration(1_234_000_000) == "1.23 s"
    assert f.duration(12_345 * 10**9) == "12,345 s"  # beyond 3 digits in the largest unit: in full
    assert f.duration(None) == f.duration(True) == f.duration("3") == "n/a"


def test_sizes_are_decimal() -> None:
    assert f.data_size(301_989_888) == "302 MB"      # the same bytes never read "288 MiB"
    assert f.data_size(65_536) == "65.5 kB"
    assert f.data_size(512) == "512 B"
    assert f.bandwidth(31_500_000_000) == "31.5 GB/s"


def test_percentages_and_counts() -> None:
    assert f.percent(12.345) == "12.3 %"
    assert f.percent(0.04) == "<0.1 %" and f.percent(0) == "0.0 %"
    assert f.fraction(0.2) == "20.0 %"
    assert f.number(12_345) == "12,345" and f.number(1.23456) == "1.23" and f.number(1.23456, 4) == "1.235"


def test_every_layer_formats_alike() -> None:
    n = 301_989_888
    assert summary_bytes(n) == report_bytes(n) == FILTERS["bytes"](n) == "302 MB"


def test_numbers_are_never_scientific() -> None:
    """Issue 30: '(1e+05/s)' launches, evidence '4.823e+07 ns', '1.51e+03 GB/s', '0.00229 GB/s'."""
    assert f.number(1e5) == "100,000"                  # was '1e+05'
    assert f.number(48_229_871.4, 4) == "48,229,871"   # was '4.823e+07': written whole
    assert f.number(0.00229) == "0.00229"              # was '0.00229' and stays positional
    assert f.number(2.29e-5) == "0.0000229"            # was '2.29e-05'
    assert f.number(999.6) == "1,000" and f.number(9.996) == "10"   # rounding up moves the unit digit
    assert f.number(-0.5) == "-0.5" and f.number(0.0) == "0" and f.number(12.0) == "12"
    for x in (1e-12, 3.3e-7, 0.1, 7.0, 1e3, 1e15, -2.5e9):
        assert "e" not in f.number(x) and "e" not in f.number(x, 4)


def test_counts_have_separators() -> None:
    assert f.count(1590) == "1,590" and f.count(1_000_000) == "1,000,000"
    assert f.count(1590.0) == "1,590" and f.count(None) == "n/a"


def test_bandwidth_picks_the_unit_that_keeps_three_digits() -> None:
    assert f.bandwidth(1.51e12) == "1.51 TB/s"      # was '1.51e+03 GB/s'
    assert f.bandwidth(2.29e6) == "2.29 MB/s"       # was '0.00229 GB/s'
    assert f.bandwidth(999.6e9) == "1 TB/s"
    assert f.bandwidth(12) == "12 B/s" and f.bandwidth(None) == "n/a"


def test_a_pair_of_durations_reads_apart() -> None:
    """The compare narrative wrote '39525.712 ms' so that close values differ; the pair takes the digits it needs."""
    assert f.duration_pair(100e6, 130e6) == ("100 ms", "130 ms")
    assert f.duration_pair(39_525_712_000, 39_541_000_000) == ("39.53 s", "39.54 s")
    assert f.duration_pair(299_254_000, 299_260_000) == ("299.25 ms", "299.26 ms")
    assert f.duration_pair(5e6, 5e6) == ("5 ms", "5 ms")
    assert f.signed_duration(-46.4e6) == "-46.4 ms" and f.signed_duration(82_800) == "+82.8 µs"


def test_gains_and_wave_fill_never_scientific() -> None:
    """The gain factor, a small share and a tiny wave fill went through '.3g'/'.2g': '1.23e+03×', '2e-05 %'."""
    from pa.report.gains import factor_text, percent_text
    from pa.summary_render import _wave_fill

    assert factor_text(56) == "1.56×" and factor_text(3240) == "33.4×" and factor_text(123_300) == "1,234×"
    assert percent_text(0.04) == "0.04 %" and percent_text(2e-5) == "0.00002 %"
    assert _wave_fill(0.0046) == "0.0046" and _wave_fill(4.6e-5) == "0.000046" and _wave_fill(0.5) == "0.50"
