"""pa's own bad-input corpus: broken and hostile profiles, rule packs, query files, templates, outputs.

`cases.CASES` lists every case with the command to run and what must happen (exit code, the one
error line, what the output may not contain); `cases.build(workdir)` writes their inputs from two
small generated profiles, in a second or so. `run.run_case` runs one case in-process through
click's CliRunner and `run.problems` says what went wrong, if anything. tests/test_corpus.py runs
them all; tests/corpus/soak.py runs them from 8 processes at once.

Reuse (the LLM stage's --redact tests): `cases.hostile_profiles(workdir)` yields (path, planted
strings) for every built profile that carries hostile strings from the profile (kernel, marker,
domain, host and process names); a request body sent under --redact must contain none of them.
"""
