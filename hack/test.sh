#!/usr/bin/env bash
# Runs `go test` with the given flags and packages, keeps the full log, and ends with one
# summary line: "tests: N passed, N failed, N skipped".
set -uo pipefail
log=${TFRS_TEST_LOG:-$(mktemp -t tfrs-test-XXXX.log)}
go test -v "$@" 2>&1 | tee "$log" | grep -E '^(ok|FAIL|---|panic:|\s+\S+_test\.go:[0-9]+:)' 
rc=${PIPESTATUS[0]}
passed=$(grep -cE '^\s*--- PASS' "$log")
failed=$(grep -cE '^\s*--- FAIL' "$log")
skipped=$(grep -cE '^\s*--- SKIP' "$log")
echo "full log: $log"
echo "tests: $passed passed, $failed failed, $skipped skipped" | tee "$log.summary"
exit "$rc"
