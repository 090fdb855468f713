#!/usr/bin/env bash
# Builds helm from the Go module proxy into the tools bin dir (the one `build.sh --dir` prints).
# Kept out of build.sh and versions.env on purpose: their content is the cache key of the whole
# tools build, and helm alone should not invalidate it. A second run does nothing.
#
#   hack/tools/helm.sh          build helm when missing or at another version
#   hack/tools/helm.sh --want   print the wanted version
set -euo pipefail

HELM_VERSION=v3.22.0
# The Kubernetes version helm reports by default (.Capabilities.KubeVersion, lint): its client-go
# v0.37 is Kubernetes 1.37, as helm's own Makefile derives it.
HELM_K8S_MAJOR=1
HELM_K8S_MINOR=37

if [[ "${1:-}" == "--want" ]]; then echo "$HELM_VERSION"; exit 0; fi

here=$(cd "$(dirname "$0")" && pwd)
bin=$(bash "$here/build.sh" --dir)
mkdir -p "$bin"

if [[ -x "$bin/helm" ]] && [[ "$("$bin/helm" version --template '{{.Version}}' 2>/dev/null)" == "$HELM_VERSION" ]]; then
  exit 0
fi
# A helm already on PATH at the wanted version is linked instead of rebuilt.
if p=$(command -v helm 2>/dev/null) && [[ "$p" != "$bin/helm" ]] &&
  [[ "$("$p" version --template '{{.Version}}' 2>/dev/null)" == "$HELM_VERSION" ]]; then
  ln -sf "$p" "$bin/helm"
  echo "[tools] helm: using $p ($HELM_VERSION)" >&2
  exit 0
fi

echo "[tools] helm $HELM_VERSION" >&2
pkg=helm.sh/helm/v3
ldflags="-s -w -X $pkg/internal/version.version=$HELM_VERSION"
ldflags+=" -X $pkg/pkg/lint/rules.k8sVersionMajor=$HELM_K8S_MAJOR -X $pkg/pkg/lint/rules.k8sVersionMinor=$HELM_K8S_MINOR"
ldflags+=" -X $pkg/pkg/chartutil.k8sVersionMajor=$HELM_K8S_MAJOR -X $pkg/pkg/chartutil.k8sVersionMinor=$HELM_K8S_MINOR"
rm -f "$bin/helm"
CGO_ENABLED=0 GOFLAGS=-mod=mod GOBIN="$bin" go install -trimpath -ldflags "$ldflags" "$pkg/cmd/helm@$HELM_VERSION"
got=$("$bin/helm" version --template '{{.Version}}')
[[ "$got" == "$HELM_VERSION" ]] || { echo "[tools] helm: built $got, want $HELM_VERSION" >&2; exit 1; }
