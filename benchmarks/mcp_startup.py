"""Benchmark: `pa mcp` from start to its first tool answer, against `pa summary --json` of the same file.

Prints, in one run, the best of --repeat interleaved runs of
  - the baseline `pa summary --json PROFILE` (a fresh interpreter, output discarded),
  - `pa mcp` started by the MCP SDK's own stdio client: the time to the answer of `initialize` (the
    server has imported the SDK and pa's tool layer) and to the answer of the first tool call,
    `summarize(PROFILE)` (the same summary as the baseline, wrapped and sent over the pipe);
    target: first answer <= 2x the baseline; then, for reference, a second `summarize` of the same
    file (answered from the session's cache) and a first `analyze` (pa.api.analyze: it summarises the
    file again, then runs the rules), and Python importing the SDK's server alone (no pa), the part of
    the start-up pa cannot remove while it uses the SDK;
each server in a fresh interpreter (`python -m pa.cli mcp`, bytecode cached as in startup.py). The
client lives in this process and is imported before any timing.
Run: python benchmarks/mcp_startup.py [--repeat N] [--keep DIR] [--profile FILE]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from floor_vs_pa import cached_bytecode_env, work_dir


def summary_once(profile: Path, env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pa.cli", "summary", "--json", str(profile)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - t0


SDK_ALONE = "import mcp.server.lowlevel, mcp.server.stdio"


def python_once(code: str, env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
    return time.perf_counter() - t0


def mcp_once(profile: Path, env: dict[str, str]) -> tuple[float, float, int, float, float]:
    """Seconds to initialize, to the first tool answer, its bytes; seconds of a second summarize and of analyze."""
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    async def run() -> tuple[float, float, int, float, float]:
        params = StdioServerParameters(command=sys.executable, args=["-m", "pa.cli", "mcp", "--root",
                                                                     str(profile.parent)], env=env)
        t0 = time.perf_counter()
        with open("/dev/null", "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as s:
                await s.initialize()
                t_init = time.perf_counter() - t0
                res: Any = await s.call_tool("summarize", {"profile": str(profile)})
                t_first = time.perf_counter() - t0
                assert not res.is_error, res.content[0].text
                t1 = time.perf_counter()
                await s.call_tool("summarize", {"profile": str(profile)})
                t2 = time.perf_counter()
                await s.call_tool("analyze", {"profiles": [str(profile)]})
                t3 = time.perf_counter()
                return t_init, t_first, len(res.content[0].text), t2 - t1, t3 - t2

    return anyio.run(run)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7, help="interleaved runs; the best of each counts")
    ap.add_argument("--keep", type=Path, default=None, help="directory to keep the generated profile in")
    ap.add_argument("--profile", type=Path, default=None, help="a profile to use instead of the generated one")
    args = ap.parse_args()

    workdir = work_dir(args.keep, "pa-mcp-startup-")
    profile = args.profile.resolve() if args.profile else workdir / "startup_1mb.sqlite"
    if not profile.exists():
        from testkit.nsys_writer import write_nsys
        from testkit.scenarios import scaled

        write_nsys(scaled(11_000, 1_100, 2_200, 550), profile)
    env = cached_bytecode_env(workdir / "pycache")
    env.setdefault("XDG_CONFIG_HOME", str(workdir / "config"))
    summary_once(profile, env)   # fills the bytecode cache; not timed
    mcp_once(profile, env)
    python_once(SDK_ALONE, env)
    base = init = first = again = analyze = sdk = float("inf")
    size = 0
    for _ in range(args.repeat):
        base = min(base, summary_once(profile, env))
        sdk = min(sdk, python_once(SDK_ALONE, env))
        t_init, t_first, size, t_again, t_analyze = mcp_once(profile, env)
        init, first, again, analyze = min(init, t_init), min(first, t_first), min(again, t_again), \
            min(analyze, t_analyze)
    target = 2.0
    print(f"profile {profile.name} ({profile.stat().st_size / 1e6:.1f} MB), best of {args.repeat}")
    print(f"{'baseline: pa summary --json':<45} {base * 1000:7.0f} ms  1.00x")
    print(f"{'pa mcp: initialize answered':<45} {init * 1000:7.0f} ms  {init / base:4.2f}x")
    print(f"{'pa mcp: first summarize answered':<45} {first * 1000:7.0f} ms  {first / base:4.2f}x  "
          f"({size:,} bytes)  target <= {target}x: {'met' if first / base <= target else 'NOT met'}")
    print(f"{'reference: the SDK server imported alone':<45} {sdk * 1000:7.0f} ms  {sdk / base:4.2f}x")
    print(f"{'  then: the same summarize again (cached)':<45} {again * 1000:7.0f} ms  {again / base:4.2f}x")
    print(f"{'  then: analyze (summary again + rules)':<45} {analyze * 1000:7.0f} ms  {analyze / base:4.2f}x")
    return 0 if first / base <= target else 1


if __name__ == "__main__":
    sys.exit(main())
