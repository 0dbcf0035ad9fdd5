#!/usr/bin/env bash
# actionlint on .github/workflows (`make workflow-lint`): installed from the Go module proxy into a temporary GOBIN
# (never committed), with shellcheck for the run: steps when it is on PATH.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
ACTIONLINT_VERSION=${ACTIONLINT_VERSION:-v1.7.8}
GOBIN=$(mktemp -d)
trap 'rm -rf "$GOBIN"' EXIT
command -v go >/dev/null || { echo "actionlint: needs go" >&2; exit 1; }
GOBIN="$GOBIN" GOFLAGS="" go install "github.com/rhysd/actionlint/cmd/actionlint@$ACTIONLINT_VERSION"
cd "$REPO"
"$GOBIN/actionlint" -no-color .github/workflows/*.yaml
echo "actionlint: .github/workflows clean"
