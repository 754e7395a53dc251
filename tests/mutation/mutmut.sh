#!/usr/bin/env bash
# Run mutmut 3 over some modules, in a scratch copy of the committed tree.
#
#   tests/mutation/mutmut.sh DIR MODULES TESTS...
#
# DIR      a scratch directory (made afresh; keep it to inspect the mutants after)
# MODULES  the modules to mutate, comma-separated: backoff_iter/_core.py,backoff_iter/drivers.py
# TESTS    the test files that must kill them: tests/test_drivers.py tests/test_timeouts.py
#
# mutmut reads its options from setup.cfg only; the copy gets a [mutmut] section,
# ours stays clean.  It prints each survivor's diff at the end; then
# `cd DIR && mutmut show NAME` shows one, `mutmut run NAME...` runs some again.
# About 1.5 mutants a second on two cores.  Survivors are judged by hand: see
# CONTRIBUTING.rst (Tests that can fail) for the ones judged equivalent.
set -euo pipefail
dir=$1 modules=$2
shift 2
python=${PYTHON:-python}
mutmut=${MUTMUT:-$(dirname "$(command -v "$python")")/mutmut}
root=$(git rev-parse --show-toplevel)
rm -rf "$dir"
mkdir -p "$dir"
git -C "$root" ls-files -z | (cd "$root" && xargs -0 tar -cf -) | tar -xf - -C "$dir"
{
    printf '\n[mutmut]\nsource_paths = backoff_iter\nonly_mutate =\n'
    tr ',' '\n' <<<"$modules" | sed 's/^/    /'
    # Some tests load a script of benchmarks/ by its path (the simulated event
    # loop of benchmarks/hedging.py): mutmut copies only the sources and tests/.
    printf 'also_copy =\n    benchmarks\n'
    # Each run in a fresh fork of a process that only collected the tests: with
    # mutmut's default (forks of the process that ran them all for its stats),
    # a parameter consumed by its first run - a one-shot iterator - is empty.
    printf 'process_isolation = forkserver\n'
    printf 'pytest_add_cli_args_test_selection =\n'
    printf '    %s\n' "$@"
    printf 'pytest_add_cli_args =\n    -p\n    no:cacheprovider\n'
} >>"$dir/setup.cfg"
cd "$dir"
"$mutmut" run --max-children 2 >mutmut.log 2>&1 || { tail -40 mutmut.log; exit 1; }
"$mutmut" results | awk '$2 == "survived" {sub(":$", "", $1); print $1}' >survivors.txt
while read -r name; do
    echo "### $name"
    "$mutmut" show "$name" | grep '^[-+]' | grep -v '^+++\|^---' || true
done <survivors.txt
tail -c 200 mutmut.log | tr '\r' '\n' | tail -2
echo "$(wc -l <survivors.txt) survived; see $dir/survivors.txt"
