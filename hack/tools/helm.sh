#!/usr/bin/env bash
# Builds helm from the Go module proxy into the tools bin dir (the one `build.sh --dir` prints).
# It builds, as every tool does, into a directory of its own keyed by this script's content
# (so by HELM_VERSION), and links helm into the tools bin dir. A second run does nothing.
#
#   hack/tools/helm.sh          build helm when missing or at another version
#   hack/tools/helm.sh --want   print the wanted version
set -euo pipefail

# Helm 4: Helm 3 gets security fixes only until 2027-02-10 (helm/helm-www,
# blog/2026-06-02-helm3-eol.md), and v3.22.0 is not approved here. Helm 4 takes the Kubernetes
# version it reports by default (.Capabilities.KubeVersion, lint) from the client-go in its build
# info (v0.37.2 in v4.3.2's go.mod: Kubernetes 1.37), so no -X sets it any more.
HELM_VERSION=v4.3.2

if [[ "${1:-}" == "--want" ]]; then echo "$HELM_VERSION"; exit 0; fi

here=$(cd "$(dirname "$0")" && pwd)
bin=$(bash "$here/build.sh" --dir)
cache=$(dirname "$(dirname "$bin")")
out="$cache/by-tool/helm-$(sha256sum <"$here/helm.sh" | cut -c1-12)"
mkdir -p "$bin" "$out"
link() { ln -sfn "$1" "$bin/helm"; }

if [[ -x "$out/helm" ]] && [[ "$("$out/helm" version --template '{{.Version}}' 2>/dev/null)" == "$HELM_VERSION" ]]; then
  link "$out/helm"
  exit 0
fi
# A helm already on PATH at the wanted version is linked instead of rebuilt.
if p=$(command -v helm 2>/dev/null) && [[ "$(readlink -f "$p")" != "$(readlink -f "$bin/helm")" ]] &&
  [[ "$("$p" version --template '{{.Version}}' 2>/dev/null)" == "$HELM_VERSION" ]]; then
  link "$p"
  echo "[tools] helm: using $p ($HELM_VERSION)" >&2
  exit 0
fi

echo "[tools] helm $HELM_VERSION" >&2
pkg=helm.sh/helm/v4
ldflags="-s -w -X $pkg/internal/version.version=$HELM_VERSION"
rm -f "$out/helm"
CGO_ENABLED=0 GOFLAGS=-mod=mod GOBIN="$out" go install -trimpath -ldflags "$ldflags" "$pkg/cmd/helm@$HELM_VERSION"
got=$("$out/helm" version --template '{{.Version}}')
[[ "$got" == "$HELM_VERSION" ]] || { echo "[tools] helm: built $got, want $HELM_VERSION" >&2; exit 1; }
link "$out/helm"
