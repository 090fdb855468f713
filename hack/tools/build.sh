#!/usr/bin/env bash
# Builds every external binary the project needs from the Go module proxy only, into a cache
# directory outside the repository. Nothing is downloaded from anywhere else.
#
#   hack/tools/build.sh            build what is missing, print the bin dir
#   hack/tools/build.sh --dir      only print the bin dir
#
# A second run does nothing. A binary already on PATH at the right version is linked instead
# of rebuilt.
#
# Each tool builds into a directory of its own, keyed by what decides its bytes: its build
# function, the versions.env lines it reads and the files it copies. The bin directory of the
# whole set (keyed by all of that) only links to those, so a version bump rebuilds the one tool
# it names, not all of them (a Pulumi bump: the CLI's build, not 45-55 min of every tool).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=/dev/null
source "$here/versions.env"

# The set's key is the content (not the paths) of the files that decide what gets built.
key=$(cat "$here/versions.env" "$here/build.sh" "$here/etcd.go.txt" "$here/provider.go.txt" | sha256sum | cut -c1-12)
cache=${TFRS_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tfrs/tools}
bin="$cache/$key/bin"
if [[ "${1:-}" == "--dir" ]]; then echo "$bin"; exit 0; fi
mkdir -p "$bin"

log() { echo "[tools] $*" >&2; }

# out is the directory the running build_X writes to (its tool's own, see tool below).
out=

# have NAME: true when the tool's directory holds NAME already.
have() { [[ -x "$out/$1" ]]; }

# from_path NAME WANT ARGS...: link NAME from PATH when `NAME ARGS` prints WANT.
from_path() {
  local name=$1 want=$2; shift 2
  local p
  p=$(command -v "$name" 2>/dev/null) || return 1
  [[ "$(readlink -f "$p")" == "$(readlink -f "$out/$name")" ]] && return 1
  if "$p" "$@" 2>/dev/null | grep -qF -- "$want"; then
    ln -sf "$p" "$out/$name"; log "$name: using $p ($want)"; return 0
  fi
  return 1
}

# gomod NAME: a scratch tools module in the tool's directory.
gomod() {
  local dir="$out/src/$1"
  rm -rf "$dir"; mkdir -p "$dir"
  (cd "$dir" && go mod init "tfrs.tools/$1" >/dev/null 2>&1)
  echo "$dir"
}

export GOFLAGS=-mod=mod
export CGO_ENABLED=0

build_controller_gen() {
  have controller-gen && return
  log "controller-gen $CONTROLLER_TOOLS_VERSION"
  GOBIN="$out" go install "sigs.k8s.io/controller-tools/cmd/controller-gen@$CONTROLLER_TOOLS_VERSION"
}

build_etcd() {
  have etcd && return
  from_path etcd "etcd Version: ${ETCD_VERSION#v}" --version && return
  log "etcd $ETCD_VERSION"
  local d; d=$(gomod etcd)
  cp "$here/etcd.go.txt" "$d/main.go"
  (cd "$d" && go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" >/dev/null 2>&1 && go mod tidy >/dev/null 2>&1 && go build -trimpath -o "$out/etcd" .)
}

build_kube() {
  if have kube-apiserver && have kube-controller-manager && have kube-scheduler; then return; fi
  log "kubernetes $KUBERNETES_VERSION (kube-apiserver, kube-controller-manager, kube-scheduler)"
  local d; d=$(gomod kube)
  local staging
  staging=$(curl -fsS "$(go env GOPROXY | cut -d, -f1)/k8s.io/kubernetes/@v/$KUBERNETES_VERSION.mod" 2>/dev/null \
    | grep -oE '^\s*k8s\.io/[a-z0-9-]+ v0\.0\.0$' | awk '{print $1}') || true
  if [[ -z "$staging" ]]; then
    # Fallback: fetch the module and read its go.mod from the module cache.
    staging=$(cd "$d" && go mod download -json "k8s.io/kubernetes@$KUBERNETES_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p' | xargs grep -oE '^\s*k8s\.io/[a-z0-9-]+ v0\.0\.0$' | awk '{print $1}')
  fi
  {
    echo "require k8s.io/kubernetes $KUBERNETES_VERSION"
    for m in $staging; do echo "replace $m => $m $KUBERNETES_STAGING_VERSION"; done
  } >>"$d/go.mod"
  cat >"$d/tools.go" <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
GO
  local major minor
  major=$(echo "$KUBERNETES_VERSION" | sed -E 's/^v([0-9]+)\..*/\1/')
  minor=$(echo "$KUBERNETES_VERSION" | sed -E 's/^v[0-9]+\.([0-9]+)\..*/\1/')
  local ld="-s -w -X k8s.io/component-base/version.gitVersion=$KUBERNETES_VERSION -X k8s.io/component-base/version.gitMajor=$major -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
  (cd "$d" && go mod tidy -e >/dev/null 2>&1 || true)
  for c in kube-apiserver kube-controller-manager kube-scheduler; do
    have "$c" && continue
    log "  building $c"
    (cd "$d" && go build -trimpath -ldflags "$ld" -o "$out/$c" "k8s.io/kubernetes/cmd/$c")
  done
}

build_kwok() {
  have kwok && return
  log "kwok $KWOK_VERSION"
  GOBIN="$out" go install -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
}

build_versitygw() {
  have versitygw && return
  log "versitygw $VERSITYGW_VERSION"
  GOBIN="$out" go install -ldflags "-s -w" "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION"
}

build_pulumi() {
  have pulumi && return
  from_path pulumi "$PULUMI_VERSION" version && return
  log "pulumi CLI $PULUMI_VERSION"
  local d; d=$(gomod pulumi)
  cat >>"$d/go.mod" <<MOD
require (
	github.com/pulumi/pulumi/pkg/v3 $PULUMI_VERSION
	github.com/pulumi/pulumi/sdk/v3 $PULUMI_VERSION
)
replace github.com/atotto/clipboard => github.com/tgummerer/clipboard v0.0.0-20241001131231-d02d263e614e
MOD
  cat >"$d/tools.go" <<'GO'
//go:build tools

package tools

import _ "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi"
GO
  (cd "$d" && go mod tidy -e >/dev/null 2>&1 || true)
  (cd "$d" && go build -trimpath -ldflags "-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$PULUMI_VERSION" \
    -o "$out/pulumi" github.com/pulumi/pulumi/pkg/v3/cmd/pulumi)
}

build_provider() {
  have pulumi-resource-kubernetes && return
  log "pulumi-resource-kubernetes $PULUMI_K8S_PROVIDER_VERSION"
  local d; d=$(gomod provider)
  echo "require github.com/pulumi/pulumi-kubernetes/provider/v4 $PULUMI_K8S_PROVIDER_MODULE_VERSION" >>"$d/go.mod"
  cp "$here/provider.go.txt" "$d/main.go"
  (cd "$d" && go mod download -json "github.com/pulumi/pulumi-kubernetes/provider/v4@$PULUMI_K8S_PROVIDER_MODULE_VERSION" >"$d/mod.json")
  local moddir
  moddir=$(sed -n 's/.*"Dir": "\(.*\)".*/\1/p' "$d/mod.json")
  # The module ships the schema and terraform mapping beside the command; the generated embed
  # file is not in the module, so our own main embeds copies taken here at build time.
  local schema mapping
  schema=$(find "$moddir/cmd/pulumi-resource-kubernetes" -name schema.json | head -1)
  mapping=$(find "$moddir/cmd/pulumi-resource-kubernetes" -name 'terraform-mapping.json' | head -1)
  [[ -n "$schema" ]] || { log "schema.json not found in $moddir"; exit 1; }
  cp "$schema" "$d/schema.json"; chmod u+w "$d/schema.json"
  if [[ -n "$mapping" ]]; then cp "$mapping" "$d/terraform-mapping.json"; else echo '{}' >"$d/terraform-mapping.json"; fi
  chmod u+w "$d/terraform-mapping.json"
  (cd "$d" && go mod tidy -e >/dev/null 2>&1 || true)
  (cd "$d" && go build -trimpath -ldflags "-s -w -X github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version=$PULUMI_K8S_PROVIDER_VERSION" \
    -o "$out/pulumi-resource-kubernetes" .)
}

# tool NAME "VAR..." "FILE..." "BINARY...": runs build_NAME in NAME's own directory, keyed by
# build_NAME's and the shared helpers' source, the values of VARs and the content of FILEs (all
# that decides the bytes), unless that directory holds every BINARY already; then links the
# BINARYs into the set's bin directory.
tool() {
  local name=$1 vars=$2 files=$3 bins=$4 v f b k
  k=$({
    declare -f "build_$name" gomod from_path have
    for v in $vars; do echo "$v=${!v}"; done
    for f in $files; do cat "$here/$f"; done
  } | sha256sum | cut -c1-12)
  out="$cache/by-tool/$name-$k"
  mkdir -p "$out"
  for b in $bins; do
    have "$b" || { "build_$name"; break; }
  done
  for b in $bins; do
    [[ -x "$out/$b" ]] || { log "$name: $b was not built"; exit 1; }
    ln -sfn "$out/$b" "$bin/$b"
  done
}

only=${1:-all}
want() { [[ "$only" == all || "$only" == "$1" ]]; }
want controller_gen && tool controller_gen CONTROLLER_TOOLS_VERSION "" controller-gen
want etcd && tool etcd ETCD_VERSION etcd.go.txt etcd
want kube && tool kube "KUBERNETES_VERSION KUBERNETES_STAGING_VERSION" "" "kube-apiserver kube-controller-manager kube-scheduler"
want kwok && tool kwok KWOK_VERSION "" kwok
want pulumi && tool pulumi PULUMI_VERSION "" pulumi
want provider && tool provider "PULUMI_K8S_PROVIDER_MODULE_VERSION PULUMI_K8S_PROVIDER_VERSION" provider.go.txt pulumi-resource-kubernetes
want versitygw && tool versitygw VERSITYGW_VERSION "" versitygw
echo "$bin"
