#!/usr/bin/env bash
# Runs test tiers with `go test -v`, keeps the full log, prints each tier's wall time, and ends
# with one summary line over all the tiers run: "tests: N passed, N failed, N skipped".
#
#   bash hack/test.sh TIER...    TIER: unit, integration or e2e; unit runs first, alone
#
# GO_TEST_FLAGS (default -count=1) and PKGS (default ./...) come from the Makefile. The tiers are
# build tags, so plain go test runs one too:
#   unit         files without a tag: no external process. `go test ./...` is this tier.
#   integration  files tagged `//go:build integration`: the binaries of `make tools` (control
#                plane, Pulumi CLI and provider, versitygw, helm, kubectl) or a static build.
#                `go test -tags integration ./...` runs it together with the unit tier.
#   e2e          files tagged `//go:build e2e`: the end-to-end suites (test/e2e).
# A tagged build also compiles the package's untagged files, so the integration and e2e tiers
# run only the tests their own files declare (-run): in `make test` each test runs once.
# The unit tier runs with every tool replaced by a tripwire (below), so a unit test that starts
# one fails instead of skipping or passing on a machine that happens to have it. The tools are
# built (`make tools`) only after it, for the tiers that need them. A failing unit tier stops the
# run: a broken unit test fails CI in minutes.
set -uo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.."
log=${TFRS_TEST_LOG:-$(mktemp -t tfrs-test-XXXX.log)}
: >"$log"
: >"$log.tiers"
rm -f "$log".{unit,integration,e2e}
# Go's own linker: kustomize's plugin loader imports "plugin", which makes cgo links use the
# external one, and that takes 1.6x as long for these 400 MB test binaries (65 s against 40 s
# for cmd/tfrs). GO_TEST_FLAGS come after, so an -ldflags there replaces this.
read -r -a flags <<<"-ldflags=-linkmode=internal ${GO_TEST_FLAGS:--count=1}"
read -r -a pkgs <<<"${PKGS:-./...}"

# Every external binary a test might start: the tools cache's, and the host's container and
# cluster clients.
tripwired=(controller-gen etcd helm kube-apiserver kube-controller-manager kube-scheduler kwok
	pulumi pulumi-resource-kubernetes versitygw kubectl docker podman)

# test_files TAG PKG...: "importpath file" of every test file go list selects with TAG ("" = none).
test_files() {
	local tag=$1
	shift
	go list -e -tags "$tag" -f '{{$p := .ImportPath}}{{$d := .Dir}}{{range .TestGoFiles}}{{$p}} {{$d}}/{{.}}
{{end}}{{range .XTestGoFiles}}{{$p}} {{$d}}/{{.}}
{{end}}' "$@" | sort
}

# test_names FILE...: the top-level tests, examples and fuzz targets the files declare.
test_names() {
	sed -nE 's/^func ((Test|Example|Fuzz)[A-Za-z0-9_]*)\(.*/\1/p' "$@" | grep -vx TestMain | sort -u
}

summary() {
	echo "tests: $(grep -cE '^\s*--- PASS' "$1") passed, $(grep -cE '^\s*--- FAIL' "$1") failed, $(grep -cE '^\s*--- SKIP' "$1") skipped"
}

# tripwires DIR: a stand-in for every tool in DIR that records its call and fails.
tripwires() {
	local name
	for name in "${tripwired[@]}"; do
		printf '#!/bin/sh\necho "%s $*" >>"%s/calls"\necho "unit tier: %s was started; a test that needs it is tagged //go:build integration" >&2\nexit 127\n' \
			"$name" "$1" "$name" >"$1/$name"
		chmod +x "$1/$name"
	done
}

tools_ready=
tools() {
	[[ -n $tools_ready ]] && return 0
	local start=$SECONDS
	make --no-print-directory tools || return
	tools_ready=1
	echo "tools: $((SECONDS - start))s" | tee -a "$log.tiers"
}

# run_tier TIER [GO TEST FLAG...]: go test for the tier's packages into $log.TIER; prints the
# tier's line.
run_tier() {
	local tier=$1 args=() tierlog="$log.$1" env=() trip=
	shift
	if [[ $tier == unit ]]; then
		# Not the packages whose every file is tagged (test/e2e): go test refuses those.
		mapfile -t args < <(go list -e -f '{{if or .GoFiles .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' "${pkgs[@]}")
		trip=$(mktemp -d -t tfrs-unit-tools-XXXX)
		tripwires "$trip"
		local path=":$PATH:"
		[[ -n ${TFRS_TOOLS_BIN:-} ]] && path=${path//":$TFRS_TOOLS_BIN:"/:}
		path=${path#:}
		env=(TFRS_TOOLS_BIN="$trip" PATH="$trip:${path%:}")
	else
		local own pkglist names clash
		own=$(comm -13 <(test_files "" "${pkgs[@]}") <(test_files "$tier" "${pkgs[@]}"))
		if [[ -z $own ]]; then
			echo "tier $tier: no tests in ${pkgs[*]}" | tee -a "$log.tiers"
			return 0
		fi
		tools || return
		mapfile -t pkglist < <(cut -d' ' -f1 <<<"$own" | sort -u)
		mapfile -t names < <(test_names $(cut -d' ' -f2 <<<"$own"))
		# A name the tier shares with an untagged test of its packages would run that one twice.
		clash=$(comm -12 <(printf '%s\n' "${names[@]}") <(test_names /dev/null $(test_files "" "${pkglist[@]}" | cut -d' ' -f2)))
		if [[ -n $clash ]]; then
			echo "tier $tier: also the name of an untagged test in the same package, rename one: $clash" >&2
			return 2
		fi
		local IFS='|'
		args=(-tags "$tier" -run "^(${names[*]})\$" "${pkglist[@]}")
		unset IFS
	fi
	echo "== tier $tier =="
	local start=$SECONDS rc
	env "${env[@]}" go test -v "$@" "${args[@]}" "${flags[@]}" 2>&1 | tee "$tierlog" | grep -E '^(ok|FAIL|---|panic:|\s+\S+_test\.go:[0-9]+:)'
	rc=${PIPESTATUS[0]}
	if [[ -s $trip/calls ]]; then
		echo "unit tier: tests started external tools (tag them //go:build integration):" | tee -a "$tierlog"
		sed 's/^/  /' "$trip/calls" | tee -a "$tierlog"
		rc=1
	fi
	[[ -n $trip ]] && rm -rf "$trip"
	echo "tier $tier: $((SECONDS - start))s, $(summary "$tierlog") (exit $rc)" | tee -a "$log.tiers"
	return "$rc"
}

# The integration and e2e tiers run side by side, each package on its own (-p 1): two test
# binaries at a time on two cores, as one `go test ./...` ran them, with the e2e tier (the
# longest) no longer waiting for the integration tier to end.
run_group() {
	if (($# == 1)); then
		run_tier "$1"
		return
	fi
	tools || return
	local t pids=() rc=0
	for t in "$@"; do
		run_tier "$t" -p 1 > >(sed -u "s/^/[$t] /") 2>&1 &
		pids+=($!)
	done
	for t in "${pids[@]}"; do
		wait "$t" || rc=$?
	done
	return "$rc"
}

rc=0
rest=()
for tier in "$@"; do
	case $tier in
	unit) ;;
	integration | e2e) rest+=("$tier"); continue ;;
	*) echo "unknown tier $tier (unit, integration, e2e)" >&2; exit 2 ;;
	esac
	run_tier unit || rc=$?
done
if ((rc == 0 && ${#rest[@]} > 0)); then
	run_group "${rest[@]}" || rc=$?
fi
for tier in "$@"; do
	[[ -f $log.$tier ]] && cat "$log.$tier" >>"$log"
done
echo "full log: $log"
cat "$log.tiers"
summary "$log" | tee "$log.summary"
exit "$rc"
