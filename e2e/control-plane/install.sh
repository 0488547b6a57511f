#!/usr/bin/env bash
# Provisions etcd, kube-apiserver and kube-controller-manager for the e2e
# suite and the demo, and the node's parts (kubelet, kube-scheduler,
# kube-proxy and the pause binary) for the e2e suite's node backend, on
# Debian, without downloads other than Debian's own archive.
#
# Debian bookworm ships no kube-apiserver binary, but its `kubernetes` source
# package holds the full Kubernetes 1.20.2 tree with vendor/. We build the
# binaries from it once, in one `make` (they share most packages, so the
# node's three add a fraction of the first two's time), and cache them
# outside the repository, keyed by the source version, so later runs are
# instant. etcd comes from `etcd-server`.
#
# Prints the cache folder (usable as KUBEBUILDER_ASSETS) on its last line of
# stdout. Idempotent: a complete cache is reused untouched.
#
# Environment:
#   FCP_CACHE_DIR   cache root (default: ${XDG_CACHE_HOME:-$HOME/.cache}/fakecloud-provider)
#   FCP_APISERVER_WATCH_BUFFERS
#                   unset for the stock build; `sized` builds, into a cache
#                   folder of its own, a kube-apiserver whose watchers'
#                   buffers follow the kind's event rate as from
#                   Kubernetes 1.25 (sized-watch-buffers.patch): an
#                   experiment for the sharding benchmark, never used by
#                   the tests; it builds all five binaries again, once
set -euo pipefail

log() { printf '[control-plane] %s\n' "$*" >&2; }
here="$(cd "$(dirname "$0")" && pwd)"

case "${FCP_APISERVER_WATCH_BUFFERS:-}" in
  "") variant="" ;;
  sized) variant="+sized-watch-buffers" ;;
  *)
    log "error: FCP_APISERVER_WATCH_BUFFERS is 'sized' or unset, not '${FCP_APISERVER_WATCH_BUFFERS}'"
    exit 1
    ;;
esac

cache_root="${FCP_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/fakecloud-provider}"
mkdir -p "$cache_root"

# Its Debian packages (etcd-server, Go and the build tools) and the deb-src
# entry that finds the kubernetes source package: scripts/setup is the one
# place that installs what the project needs (silent when all is present).
"$here/../../scripts/setup" control-plane >&2

version="$(apt-cache showsrc kubernetes 2>/dev/null | awk '/^Version:/ {print $2; exit}')"
if [ -z "$version" ]; then
  log "error: apt knows no source package 'kubernetes' (is deb-src enabled?)"
  exit 1
fi
assets="$cache_root/control-plane/kubernetes-${version}${variant}"

work="$cache_root/build/kubernetes-${version}${variant}"
binaries=(kube-apiserver kube-controller-manager kubelet kube-scheduler kube-proxy)
complete=true
for binary in "${binaries[@]}" etcd pause; do
  [ -x "$assets/$binary" ] || complete=false
done
if $complete; then
  # A build folder left by an older version of this script is dead weight.
  rm -rf "$work"
  log "reusing $assets"
  printf '%s\n' "$assets"
  exit 0
fi

mkdir -p "$work"
cd "$work"
if ! ls kubernetes_*.dsc >/dev/null 2>&1; then
  log "downloading the kubernetes source package ${version}"
  apt-get source --download-only kubernetes >&2
fi
src_dir="$(find . -maxdepth 1 -mindepth 1 -type d -name 'kubernetes-*' | head -n1)"
if [ -z "$src_dir" ] || [ ! -f "$src_dir/.fcp-unpacked" ]; then
  [ -n "$src_dir" ] && rm -rf "$src_dir"
  log "unpacking the source"
  dpkg-source --no-check -x kubernetes_*.dsc >&2
  src_dir="$(find . -maxdepth 1 -mindepth 1 -type d -name 'kubernetes-*' | head -n1)"
  touch "$src_dir/.fcp-unpacked"
fi
cd "$src_dir"

# The vendored reflect2 v1.0.1 crashes under Go >= 1.18 (SIGSEGV in
# mapiterinit on the first custom-resource update); Debian's 1.0.2 is fixed.
reflect2_src="$(dirname "$(dpkg -L golang-github-modern-go-reflect2-dev | grep '/reflect2.go$' | head -n1)")"
if ! grep -q 'fcp: reflect2 1.0.2' vendor/github.com/modern-go/reflect2/.fcp-patched 2>/dev/null; then
  log "replacing vendored reflect2 with Debian's ($reflect2_src)"
  rm -rf vendor/github.com/modern-go/reflect2
  mkdir -p vendor/github.com/modern-go/reflect2
  rsync -a --exclude go.mod --exclude go.sum "$reflect2_src/" vendor/github.com/modern-go/reflect2/
  echo 'fcp: reflect2 1.0.2' > vendor/github.com/modern-go/reflect2/.fcp-patched
fi

# The node's kubelet runs pods on this machine's Docker engine through
# dockershim, which gives every pod sandbox an oom_score_adj of -998 and
# guaranteed-QoS containers -997. A sandbox like this one refuses any
# negative oom_score_adj (runc fails with "can't get final child's PID from
# pipe: EOF"), so no pod would start: both become 0, which only means the
# kernel's OOM killer ranks pods like any other process (burstable pods,
# clamped at 1000 + the guaranteed value, rank with best-effort ones). The
# kubelet's own and kube-proxy's adjustments are flags, set to 0 where the
# node backend starts them.
patch_oom() { # file, constant, value
  sed -i -E "s|^(\s*$2 int = )$3\$|\10 // fcp: was $3 (e2e/control-plane/install.sh)|" "$1"
  grep -q "$2 int = 0 // fcp: was $3" "$1" || {
    log "error: '$2 int = $3' not found in $1 (the source changed: revisit the patch)"
    exit 1
  }
}
patch_oom pkg/kubelet/dockershim/docker_sandbox.go defaultSandboxOOMAdj -998
patch_oom pkg/kubelet/qos/policy.go guaranteedOOMScoreAdj -997

if [ -n "$variant" ] && [ ! -f .fcp-sized-watch-buffers ]; then
  log "applying sized-watch-buffers.patch"
  patch -p1 < "$here/sized-watch-buffers.patch" >&2
  touch .fcp-sized-watch-buffers
fi

mkdir -p .go/src/k8s.io
[ -L .go/src/k8s.io/kubernetes ] || ln -s ../../.. .go/src/k8s.io/kubernetes
log "building ${binaries[*]} (about 6 minutes on 2 cores, once)"
(
  cd .go/src/k8s.io/kubernetes
  GOPATH="$PWD/../../.." GOCACHE="$work/go-cache" GO111MODULE=off GOFLAGS=-mod=vendor CGO_ENABLED=0 \
    make WHAT="$(printf 'cmd/%s ' "${binaries[@]}")" >&2
)
bin_dir="$(find _output -type d -path '*/bin' | head -n1)"

tmp_assets="$assets.tmp.$$"
rm -rf "$tmp_assets"
mkdir -p "$tmp_assets"
for binary in "${binaries[@]}"; do
  cp "$bin_dir/$binary" "$tmp_assets/"
done
# Every pod's sandbox runs the pause image, which cannot be pulled here:
# its one binary, from the same source, is compiled static and made into
# an image by the e2e node backend (`docker import`).
gcc -Os -static -o "$tmp_assets/pause" build/pause/linux/pause.c
ln -s "$(command -v etcd)" "$tmp_assets/etcd"
rm -rf "$assets"
mv "$tmp_assets" "$assets"
# The unpacked tree, its objects and the Go build cache come to over 2 GB and
# are never read again once the binaries are cached: free the disk for the
# cargo build and the tests that follow.
cd "$cache_root"
rm -rf "$work"
log "installed into $assets (build folder removed)"
printf '%s\n' "$assets"
