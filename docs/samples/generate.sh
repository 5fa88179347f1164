#!/bin/sh
# Regenerate the sample reports in docs/samples/ from the bundled example profile.
# Run from the repository root: sh docs/samples/generate.sh
# The timestamp, duration and command line in the provenance differ on every run; the rest is
# deterministic (the example profile is generated from a fixed scenario).
set -eu
# `python -m pa.cli` would import pa.cli twice (as __main__ and as pa.cli); go through main().
pa() { python -c 'import sys; from pa.cli import main; sys.argv[0] = "pa"; main()' "$@"; }
out=docs/samples
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pa example "$tmp/example.sqlite" >/dev/null
cd "$tmp"   # relative profile path: the command line in the provenance carries no directory
for fmt in text markdown html json; do
  pa analyze example.sqlite --no-llm --format "$fmt" -o "report" 2>/dev/null
done
cd - >/dev/null
mv "$tmp/report.txt" "$out/report.txt"
mv "$tmp/report.md" "$out/report.md"
mv "$tmp/report.html" "$out/report.html"
mv "$tmp/report.json" "$out/report.json"
echo "wrote $out/report.{txt,md,html,json}"
