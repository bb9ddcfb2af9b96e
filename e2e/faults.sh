#!/usr/bin/env bash
# The fault and load suite (e2e/tests/faults.rs, and the leader kills of
# e2e/tests/replicas.rs): each fault strikes while several clients write Deployments and
# their PropagationPolicies (kube-rs server-side applies and scales, kubectl apply and scale)
# with the whole pipeline running as separate processes; afterwards every acknowledged write
# must be on the host and every template converged in its members.
# Prints the fault table: fault | load during it | writes acknowledged | writes found after |
# time to converge, and the figures of 200 concurrent clients. The etcd rows
# (e2e/tests/etcd_faults.rs) give the write stall when the etcd leader is killed (target:
# writes resume within 2 s of the election) and the answers while etcd has no quorum; the
# overload rows (e2e/tests/overload.rs): slow LISTs past the read limit, curl's HTTP/2
# transfers refused with 429, and 200 merged LISTs at once against local-up (429s, p50/p99
# of the rest).
#
# Usage: bash e2e/faults.sh            the short versions (the ones `cargo test` runs in CI)
#        bash e2e/faults.sh --long     the short ones and the long ones (#[ignore]d in CI);
#                                      FAULTS_LONG_ROUNDS=N sets their rounds (default 5)
# FAULTS_DIR=DIR keeps every run's processes' logs and data under DIR.
# Built with --release (the servers, and the test's own clients): its figures are the
# product's, not a debug build's (CI's `cargo test` runs the same tests on debug builds).
set -euo pipefail
cd "$(dirname "$0")/.."

long=0
for arg in "$@"; do
  case "$arg" in
    --long) long=1 ;;
    -h|--help) sed -n "2,17p" "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "error: unknown argument $arg (try --help)" >&2; exit 2 ;;
  esac
done

if ! command -v kubectl >/dev/null 2>&1; then
  echo "error: kubectl is required on PATH" >&2
  exit 1
fi

# The etcd rows (and the etcd member kills) start real etcd processes on loopback ports.
# shellcheck source=e2e/install-missing.sh
source e2e/install-missing.sh
install_missing etcd etcd-server

target_dir="${CARGO_TARGET_DIR:-$PWD/target}"
export FLOTILLA_BIN="${FLOTILLA_BIN:-$target_dir/release/flotilla}"
export FLOTILLACTL_BIN="${FLOTILLACTL_BIN:-$target_dir/release/flotillactl}"
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
cargo build --release --locked --bin flotilla --bin flotillactl

table="$(mktemp)"
trap 'rm -f "$table"' EXIT
export FAULTS_TABLE="$table"

test_args=(--test-threads=1 --nocapture)
if [ "$long" = 1 ]; then
  test_args+=(--include-ignored)
fi
# One fault at a time: the timings are the suite's output.
status=0
cargo test --release --locked -p flotilla-e2e --test faults -- "${test_args[@]}" || status=$?
# Leader kills of the controller-manager and the scheduler (two replicas each).
cargo test --release --locked -p flotilla-e2e --test replicas -- "${test_args[@]}" || status=$?
# etcd's own faults: its leader killed under a steady writer, its quorum lost.
cargo test --release --locked -p flotilla-e2e --test etcd_faults -- "${test_args[@]}" || status=$?
# Overload of the HTTP layer and of merged reads.
cargo test --release --locked -p flotilla-e2e --test overload -- "${test_args[@]}" || status=$?

echo
echo "| fault | load during it | writes acknowledged | writes found after | time to converge |"
echo "|---|---|---|---|---|"
grep '^|' "$table" || true
echo
grep -v '^|' "$table" || true
exit "$status"
