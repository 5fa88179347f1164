"""Soak: 8 processes run the whole bad-input corpus and `pa analyze` on the shared real profiles at once.

    python tests/corpus/soak.py [--workers 8] [--timeout 240]

Every process runs every case (in its own shuffled order, in-process through CliRunner, like
tests/test_corpus.py) plus `pa analyze --no-llm -f json` on each real profile in
../shared/profiles/nsys (when present), all against the same input files. It then checks that

- each input gave the same exit code and the same output in every process (timestamps and run
  durations aside), and every case met its contract (tests/corpus/run.py) in the first process,
- no file appeared anywhere in the corpus but the outputs the cases declare (no temporary files,
  no -wal/-journal/-shm), and no real profile or its directory changed.

Exit status 0 when all hold; otherwise every difference is printed and the status is 1. Run by
.ci/run after the README test command; bounded to about two minutes on two cores.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import multiprocessing as mp
import os
import random
import re
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))

from conftest import real_nsys_profiles  # noqa: E402  (the one way tests find the real profiles)

from corpus import cases as corpus_cases  # noqa: E402
from corpus.run import problems, run_case, snapshot  # noqa: E402

_VOLATILE = [
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?"), "<time>"),
    (re.compile(r"in \d+\.\d+ s"), "in <d> s"),
    (re.compile(r'"duration_s": [0-9.e+-]+'), '"duration_s": <d>'),
]


def _normal(text: str) -> str:
    for pattern, repl in _VOLATILE:
        text = pattern.sub(repl, text)
    return text


def _real_profiles() -> list[Path]:
    return real_nsys_profiles()


def _worker(args: tuple[int, str]) -> dict[str, tuple[int, str, str, list[str]]]:
    """Run every case and every real profile once; return {input: (exit, stdout, stderr, problems)}."""
    seed, workdir = args
    from click.testing import CliRunner

    from pa.cli import main

    work = Path(workdir)
    todo = list(corpus_cases.CASES)
    random.Random(seed).shuffle(todo)
    results: dict[str, tuple[int, str, str, list[str]]] = {}
    root = os.geteuid() == 0
    for case in todo:
        if case.skip_as_root and root:
            continue
        d = work / case.name
        if (d / corpus_cases.UNBUILT).is_file():   # e.g. rocpd cases without the writers' DDL
            continue
        out = run_case(case, d)
        # File checks are global (other processes write the same declared outputs meanwhile).
        found = [p for p in problems(case, out, d) if not p.startswith(("file created", "input changed"))]
        results[case.name] = (out.exit, _normal(out.stdout), _normal(out.stderr), found)
    for profile in _real_profiles():
        r = CliRunner().invoke(main, ["analyze", "--no-llm", "-f", "json", str(profile)], env={"COLUMNS": "400"})
        results[f"real:{profile.name}"] = (r.exit_code, _normal(r.stdout), _normal(r.stderr), [])
    return results


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--timeout", type=float, default=240.0, help="seconds before the soak counts as hung")
    args = ap.parse_args()
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="pa-soak-") as tmp:
        work = Path(tmp)
        corpus_cases.build(work)
        built = set(snapshot(work))
        real = _real_profiles()
        real_before = snapshot(*{p.parent for p in real}) if real else {}
        # Fresh interpreters (spawn), not daemonic: a multi-rank case starts a process pool of its own.
        with cf.ProcessPoolExecutor(args.workers, mp_context=mp.get_context("spawn")) as pool:
            futures = [pool.submit(_worker, (seed, str(work))) for seed in range(args.workers)]
            _done, hung = cf.wait(futures, timeout=args.timeout)
            if hung:
                print(f"soak: {len(hung)} process(es) not finished after {args.timeout:g} s (a hang?)")
                for proc in list(getattr(pool, "_processes", {}).values()):  # the only handle on them
                    proc.terminate()
                pool.shutdown(wait=False, cancel_futures=True)
                return 1
            runs = [f.result() for f in futures]
        errors: list[str] = []
        first = runs[0]
        for name, (code, _out, _err, found) in sorted(first.items()):
            errors += [f"{name}: {p}" for p in found]
            for i, other in enumerate(runs[1:], start=2):
                if other.get(name, (None,))[:3] != first[name][:3]:
                    ocode = other.get(name, (None,))[0]
                    errors.append(f"{name}: process {i} differs from process 1 (exit {ocode} vs {code})")
        allowed = {str(work / c.name / o) for c in corpus_cases.CASES for o in c.outputs}
        stray = sorted(p for p in snapshot(work) if p not in built and p not in allowed)
        errors += [f"stray file: {p}" for p in stray]
        if real:
            after = snapshot(*{p.parent for p in real})
            errors += [f"shared profiles changed: {p}" for p in sorted(set(after) ^ set(real_before))]
            errors += [f"shared profile changed: {p}" for p in sorted(real_before)
                       if p in after and after[p] != real_before[p]]
    took = time.monotonic() - t0
    inputs = len(first)
    if errors:
        print(f"soak: {len(errors)} problem(s) over {inputs} inputs x {args.workers} processes in {took:.0f} s")
        for e in errors:
            print("  " + e)
        return 1
    print(f"soak: {inputs} inputs x {args.workers} concurrent processes, identical outputs, no stray files "
          f"({took:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
