#!/usr/bin/env bash
# The GPU run in one command, for a host with a GPU, torch, CuPy, JAX and pytest but no Rust:
# install the wheel into a temporary target, run the whole pytest suite with
# CUTE_COPY_REQUIRE_GPU=1 (a GPU test that cannot run fails instead of skipping), then bench.py.
#
#   python/tools/gpu_test.sh target/wheels/cute_copy-*.whl [pytest args...]
#
# PYTHON names the interpreter (default python3). BENCH_ARGS go to bench.py (e.g. --no-compile).
# Exits non-zero if the tests or the bench failed; prints both summaries either way.
set -uo pipefail
if (($# < 1)) || [[ ! -f $1 ]]; then
  echo "usage: $0 path/to/cute_copy-*.whl [pytest args...]" >&2
  exit 2
fi
wheel=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
shift
pkg=$(cd "$(dirname "$0")/.." && pwd) # python/
py=${PYTHON:-python3}
[[ $py == */* ]] && py=$(cd "$(dirname "$py")" && pwd)/$(basename "$py")
target=$(mktemp -d)
trap 'rm -rf "$target"' EXIT

if ! "$py" -m pip install --quiet --no-deps --no-index --target "$target/site" "$wheel"; then
  # No pip: a wheel of one pure-layout package installs by unpacking it.
  echo "pip failed; unpacking the wheel instead" >&2
  "$py" -m zipfile -e "$wheel" "$target/site" || exit 1
fi
export PYTHONPATH="$target/site${PYTHONPATH:+:$PYTHONPATH}"
export CUTE_COPY_REQUIRE_GPU=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
# Run from the target, so that nothing but the installed wheel can be imported as cute_copy.
cd "$target" || exit 1
"$py" -c 'import cute_copy, torch; print("cute_copy", cute_copy.__version__, "from", cute_copy.__file__); print("torch", torch.__version__, "devices:", cute_copy.device_count())' || exit 1

echo "== pytest (CUTE_COPY_REQUIRE_GPU=1)"
"$py" -m pytest -q -p no:cacheprovider -rfEs --junitxml="$target/junit.xml" "$pkg/tests" "$@"
tests_rc=$?
"$py" - "$target/junit.xml" <<'PY'
import sys, xml.etree.ElementTree as ET
r = ET.parse(sys.argv[1]).getroot()
s = r if r.tag == "testsuite" else r.find("testsuite")
n, f, e, k = (int(s.get(a, 0)) for a in ("tests", "failures", "errors", "skipped"))
print(f"\n| tests | passed | failed | errors | skipped |\n| ---: | ---: | ---: | ---: | ---: |\n| {n} | {n - f - e - k} | {f} | {e} | {k} |")
PY

echo
echo "== bench.py ${BENCH_ARGS:-}"
# shellcheck disable=SC2086
"$py" "$pkg/bench.py" ${BENCH_ARGS:-}
bench_rc=$?
echo
echo "pytest exit $tests_rc, bench exit $bench_rc"
((tests_rc == 0 && bench_rc == 0))
