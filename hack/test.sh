#!/usr/bin/env bash
# Runs test tiers, keeps the full log, prints each tier's wall time, and ends with one summary
# line over all the tiers run: "tests: N passed, N failed, N skipped".
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
#
# Every package's test binary is built once, with all the tags, and each tier runs the tests its
# own files declare from it (-test.run): in `make test` each test runs once, and each binary is
# linked once. Linking is most of a warm run's build time (these binaries carry Kubernetes and
# Pulumi, 150-400 MB each): one `go test` per tier linked the integration packages twice. The
# binaries are vetted with `go vet`, as `go test` would have done.
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
read -r -a pkgs <<<"${PKGS:-./...}"
all_tags=integration,e2e

# Go's own linker: kustomize's plugin loader imports "plugin", which makes cgo links use the
# external one, and that takes 1.6x as long for these 400 MB test binaries (65 s against 40 s
# for cmd/tfrs). Without the symbol table and DWARF (-s -w) a link takes another quarter less
# (the e2e binary: 18 s against 25 s); panics and failures still print full stack traces (they
# come from the pclntab, which stays). A GO_TEST_FLAGS -ldflags comes after and replaces this,
# e.g. GO_TEST_FLAGS='-count=1 -ldflags=' for a binary a debugger can read.
# -trimpath keeps the checkout's path out of every compiled package's cache key: a fresh clone at
# a new path (as CI makes) reuses the build cache instead of recompiling the module (build and
# vet 415 s at a new path against 183 s at a known one). Tests find the checkout from their
# working directory (internal/checkout), not from their source paths.
build_flags=(-trimpath "-ldflags=-linkmode=internal -s -w")
# GO_TEST_FLAGS are split as go test would: the test flags go to the binaries (-test.X), the
# rest (-race, -ldflags, -cover, ...) to the build. go test's default timeout comes first.
run_flags=(-test.v -test.timeout=10m)
read -r -a given <<<"${GO_TEST_FLAGS:--count=1}"
for ((i = 0; i < ${#given[@]}; i++)); do
	f=${given[i]}
	name=${f#-}
	name=${name#-}
	case ${name%%=*} in
	short | failfast | v | fullpath) run_flags+=("-test.$name") ;;
	count | timeout | run | skip | parallel | cpu | shuffle)
		if [[ $name == *=* ]]; then
			run_flags+=("-test.$name")
		else
			run_flags+=("-test.$name=${given[i + 1]:-}")
			((i++))
		fi
		;;
	*) build_flags+=("$f") ;;
	esac
done

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

# build: every package's test binary with all the tags, into $bindir; binary[importpath] and
# dir[importpath] say where each is and where it runs. go test -c -o DIR/ names a binary after
# its package's last path element, so packages that share one (server, components/server) are
# built in separate rounds.
bindir=
declare -A binary dir
build() {
	[[ -n $bindir ]] && return 0
	local start=$SECONDS ip d base r rows=() rounds=() rc=0
	bindir=$(mktemp -d -t tfrs-test-bin-XXXX)
	declare -A seen
	mapfile -t rows < <(go list -e -tags "$all_tags" -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}} {{.Dir}}{{end}}' "${pkgs[@]}")
	for row in "${rows[@]}"; do
		[[ -n $row ]] || continue
		ip=${row%% *}
		d=${row#* }
		base=${ip##*/}
		r=${seen[$base]:-0}
		seen[$base]=$((r + 1))
		rounds[r]+=" $ip"
		binary[$ip]=$bindir/r$r/$base.test
		dir[$ip]=$d
	done
	echo "== build: ${#rows[@]} test binaries =="
	# Every dependency is compiled once first. On a cold cache (a dependency bump, a new Go) the
	# rounds and vet below would each compile the same packages side by side, since go commands
	# share only finished results: three times the work. Warm, this is a cache check of seconds.
	local deps=()
	mapfile -t deps < <(go list -e -deps -test -tags "$all_tags" -f '{{if and (not .ForTest) (not .Standard) (ne .Name "main") (or .GoFiles .CgoFiles)}}{{.ImportPath}}{{end}}' "${pkgs[@]}" | grep -v '^$')
	go build -tags "$all_tags" "${build_flags[@]}" "${deps[@]}" || rc=$?
	echo "dependencies compiled: $((SECONDS - start))s (exit $rc)"
	# The rounds, the e2e tests' tfrs binary and vet run side by side: a link is mostly one
	# core, and vet fills the other while the links run.
	local pids=() pid
	for r in "${!rounds[@]}"; do
		# shellcheck disable=SC2086 # the round's packages are words
		go test -c -tags "$all_tags" "${build_flags[@]}" -o "$bindir/r$r/" ${rounds[r]} &
		pids+=($!)
	done
	if [[ -n $want_tfrs ]]; then
		go build "${build_flags[@]}" -o "$bindir/tfrs" ./cmd/tfrs &
		pids+=($!)
		export TFRS_E2E_TFRS_BIN=$bindir/tfrs
	fi
	go vet -trimpath -tags "$all_tags" "${pkgs[@]}" & # vet reads the same -trimpath compiles
	pids+=($!)
	for pid in "${pids[@]}"; do
		wait "$pid" || rc=$?
	done
	echo "build and vet: $((SECONDS - start))s (exit $rc)" | tee -a "$log.tiers"
	return "$rc"
}
cleanup() { [[ -n $bindir ]] && rm -rf "$bindir"; }
trap cleanup EXIT

# run_unit TIER IMPORTPATH REGEXP OUT [VAR=VALUE...]: runs the package's binary in its directory
# for the tests REGEXP names, into OUT, and ends OUT as go test does ("ok" or "FAIL", the
# package, the time). OUT.time gets the start and end (epoch seconds). Prints OUT's summary
# lines, prefixed with the tier outside the unit tier, when done.
run_unit() {
	local tier=$1 ip=$2 re=$3 out=$4 start=$EPOCHREALTIME rc took prefix= label=$2
	shift 4
	[[ $tier == e2e ]] && label="$ip ${re:1:-1}" # one test: name it
	(cd "${dir[$ip]}" && env "$@" "${binary[$ip]}" -test.run "$re" "${run_flags[@]}") >"$out" 2>&1
	rc=$?
	echo "$start $EPOCHREALTIME" >"$out.time"
	took=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.3f", b - a}')
	if ((rc == 0)); then
		printf 'ok  \t%s\t%ss\n' "$label" "$took" >>"$out"
	else
		printf 'FAIL\t%s\t%ss (exit %d)\n' "$label" "$took" "$rc" >>"$out"
		touch "$out.failed"
	fi
	[[ $tier != unit ]] && prefix="[$tier] "
	# One write per unit, so two units' lines do not interleave.
	printf '%s\n' "$(grep -E '^(ok|FAIL|---|panic:|\s+\S+_test\.go:[0-9]+:)' "$out" | sed "s/^/$prefix/")"
}

# plan TIER: appends the tier's units to $plan, one "TIER IMPORTPATH REGEXP" line each: a package
# with the tests its files of that tier declare, except in the e2e tier, where each test is a
# unit of its own (its tests share no fixture, and a 20-minute package on one core would be the
# whole run's tail).
plan=
untagged=
plan() {
	local tier=$1 own files ip names clash n
	# The untagged test files, listed once for every tier (a go list of the whole module).
	[[ -n $untagged ]] || untagged=$(test_files "" "${pkgs[@]}")
	if [[ $tier == unit ]]; then
		own=$untagged
	else
		own=$(comm -13 <(echo "$untagged") <(test_files "$tier" "${pkgs[@]}"))
	fi
	for ip in $(cut -d' ' -f1 <<<"$own" | sort -u); do
		files=$(awk -v p="$ip" '$1 == p {print $2}' <<<"$own")
		# shellcheck disable=SC2086 # file paths have no spaces (go list)
		names=$(test_names $files)
		[[ -n $names ]] || continue
		if [[ $tier != unit ]]; then
			# A name the tier shares with an untagged test of its package would run that one
			# twice.
			# shellcheck disable=SC2046 # file paths have no spaces (go list)
			clash=$(comm -12 <(echo "$names") <(test_names /dev/null $(awk -v p="$ip" '$1 == p {print $2}' <<<"$untagged")))
			if [[ -n $clash ]]; then
				echo "tier $tier: also the name of an untagged test in $ip, rename one: $clash" >&2
				return 2
			fi
		fi
		if [[ $tier == e2e ]]; then
			for n in $names; do
				plan+="$tier $ip ^$n\$"$'\n'
			done
		else
			plan+="$tier $ip ^($(paste -sd'|' <<<"$names"))\$"$'\n'
		fi
	done
}

# run TIER...: runs the tiers' units, JOBS at a time, the units hack/test-order.txt names first
# (the longest, so that none starts last and runs alone), then the rest in order. Each tier's
# output goes to $log.TIER; prints each tier's line: from its first unit's start to its last
# unit's end, and its tests.
run() {
	local jobs=$1 tier rc=0 units=() env=() trip= outs n=0 i u first line
	shift
	plan=
	for tier in "$@"; do
		plan "$tier" || return
	done
	mapfile -t units < <(
		grep -v '^#' hack/test-order.txt 2>/dev/null | while read -r first; do
			[[ -n $first ]] && awk -v t="$first" '$2 == t || $3 == "^" t "$"' <<<"$plan"
		done
		grep -v '^$' <<<"$plan"
	)
	if [[ $* == unit ]]; then
		trip=$(mktemp -d -t tfrs-unit-tools-XXXX)
		tripwires "$trip"
		local path=":$PATH:"
		[[ -n ${TFRS_TOOLS_BIN:-} ]] && path=${path//":$TFRS_TOOLS_BIN:"/:}
		path=${path#:}
		env=(TFRS_TOOLS_BIN="$trip" PATH="$trip:${path%:}")
	fi
	outs=$(mktemp -d -t tfrs-tier-XXXX)
	declare -A done_unit
	local pids=()
	for u in "${units[@]}"; do
		[[ -n ${done_unit[$u]:-} ]] && continue # listed in the order file and in the plan
		done_unit[$u]=1
		while (($(jobs -rp | wc -l) >= jobs)); do
			wait -n
		done
		n=$((n + 1))
		read -r tier ip re <<<"$u"
		echo "$tier" >"$outs/$n.tier"
		run_unit "$tier" "$ip" "$re" "$outs/$n" "${env[@]}" &
		pids+=($!)
	done
	wait "${pids[@]}"
	for tier in "$@"; do
		: >"$log.$tier"
		local lo= hi= t0 t1
		for ((i = 1; i <= n; i++)); do
			[[ $(<"$outs/$i.tier") == "$tier" ]] || continue
			cat "$outs/$i" >>"$log.$tier"
			[[ -e $outs/$i.failed ]] && rc=1
			read -r t0 t1 <"$outs/$i.time"
			[[ -z $lo ]] || awk -v a="$t0" -v b="$lo" 'BEGIN {exit !(a >= b)}' || lo=$t0
			[[ -n $lo ]] || lo=$t0
			[[ -z $hi ]] || awk -v a="$t1" -v b="$hi" 'BEGIN {exit !(a <= b)}' || hi=$t1
			[[ -n $hi ]] || hi=$t1
		done
		if [[ -s $trip/calls ]]; then
			echo "unit tier: tests started external tools (tag them //go:build integration):" | tee -a "$log.$tier"
			sed 's/^/  /' "$trip/calls" | tee -a "$log.$tier"
			rc=1
		fi
		if [[ -z $lo ]]; then
			echo "tier $tier: no tests in ${pkgs[*]}" | tee -a "$log.tiers"
			continue
		fi
		line=$(summary "$log.$tier")
		echo "tier $tier: $(awk -v a="$lo" -v b="$hi" 'BEGIN {printf "%d", b - a}')s, $line" | tee -a "$log.tiers"
	done
	rm -rf "$outs"
	[[ -n $trip ]] && rm -rf "$trip"
	return "$rc"
}

# The e2e tests run the tfrs binary for the CLI door: build() makes it once for all their
# processes (test/e2e builds its own when run without this script).
want_tfrs=
[[ " $* " == *" e2e "* ]] && want_tfrs=1
rc=0
rest=()
for tier in "$@"; do
	case $tier in
	unit) ;;
	integration | e2e) rest+=("$tier"); continue ;;
	*) echo "unknown tier $tier (unit, integration, e2e)" >&2; exit 2 ;;
	esac
	build || rc=$?
	if ((rc == 0)); then
		echo "== tier unit =="
		run "$(nproc)" unit || rc=$?
	fi
done
# The integration and e2e tiers share one pool: one unit more than there are cores, since their
# tests wait (for the API server, the engine, a rollout) about a fifth of the time.
if ((rc == 0 && ${#rest[@]} > 0)); then
	build && tools || rc=$?
fi
if ((rc == 0 && ${#rest[@]} > 0)); then
	start=$SECONDS
	echo "== tiers ${rest[*]} =="
	run "${TEST_JOBS:-$(($(nproc) + 1))}" "${rest[@]}" || rc=$?
	echo "$(IFS=+ && echo "${rest[*]}"): $((SECONDS - start))s (exit $rc)" | tee -a "$log.tiers"
fi
for tier in "$@"; do
	[[ -f $log.$tier ]] && cat "$log.$tier" >>"$log"
done
echo "full log: $log"
cat "$log.tiers"
summary "$log" | tee "$log.summary"
exit "$rc"
