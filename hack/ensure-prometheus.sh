#!/usr/bin/env bash
# Provides `prometheus` and `promtool` from Debian's `prometheus` package and prints the directory holding them
# on stdout. Progress goes to stderr. The alert rules' checks, unit tests and the real-Prometheus integration
# test use them (docs/monitoring.md).
#
# Sources, first that works wins:
#   1. $PROMETHEUS_BIN_DIR (must hold prometheus and promtool)
#   2. /usr/bin, when the package is installed
#   3. a cache under ${XDG_CACHE_HOME:-~/.cache}/ome-selector keyed by the package version
#   4. `apt-get download prometheus` (its lists updated first when they lack the package and we are root),
#      unpacked into that cache with dpkg-deb: nothing is installed system-wide and no service is started
#      (installing the package would start a Prometheus daemon on :9090 on a host without systemd).
set -euo pipefail

CACHE_ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/ome-selector"

log() { printf 'ensure-prometheus: %s\n' "$*" >&2; }
have_both() { [[ -x "$1/prometheus" && -x "$1/promtool" ]]; }

if [[ -n "${PROMETHEUS_BIN_DIR:-}" ]] && have_both "$PROMETHEUS_BIN_DIR"; then
  echo "$PROMETHEUS_BIN_DIR"; exit 0
fi
if have_both /usr/bin; then
  echo /usr/bin; exit 0
fi
command -v apt-get >/dev/null || { log "needs Debian's prometheus package and there is no apt-get"; exit 1; }

candidate() { apt-cache policy prometheus 2>/dev/null | awk '/Candidate:/ { print $2 }'; }
version=$(candidate)
if [[ -z $version || $version == "(none)" ]]; then
  [[ $(id -u) == 0 ]] || { log "apt knows no prometheus package; run apt-get update as root"; exit 1; }
  log "apt-get update (no prometheus package in the lists)"
  apt-get update -qq >&2
  version=$(candidate)
  [[ -n $version && $version != "(none)" ]] || { log "apt has no prometheus package"; exit 1; }
fi

dir="$CACHE_ROOT/prometheus-${version//[^A-Za-z0-9.+-]/_}"
if have_both "$dir/usr/bin"; then
  echo "$dir/usr/bin"; exit 0
fi

mkdir -p "$CACHE_ROOT"
tmp=$(mktemp -d "$CACHE_ROOT/.prometheus.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
log "downloading Debian's prometheus $version"
# apt drops privileges to _apt for downloads; a directory only we can write makes it warn, so give it one.
chmod 0777 "$tmp"
if ! (cd "$tmp" && apt-get download -qq "prometheus=$version" 2>"$tmp/apt.log"); then
  cat "$tmp/apt.log" >&2
fi
deb=$(find "$tmp" -maxdepth 1 -name 'prometheus_*.deb' | head -n1)
[[ -n $deb ]] || { log "apt-get download prometheus failed"; exit 1; }
dpkg-deb -x "$deb" "$tmp/root"
have_both "$tmp/root/usr/bin" || { log "the package holds no usr/bin/prometheus and usr/bin/promtool"; exit 1; }
rm -rf "$dir"
mv "$tmp/root" "$dir"
echo "$dir/usr/bin"
