#!/usr/bin/env bash
# fetch_pytorch_tests.sh [DEST] — PyTorch's own DataLoader tests, test/test_dataloader.py, from Debian's `pytorch`
# source package (trixie's 2.6.0+dfsg: the newest Debian has; bookworm's 1.13.1 predates torch 2's DataLoader
# arguments), into DEST (default build/conformance/). Nothing is committed: the file is PyTorch's (BSD-3-Clause).
#
# Source packages need a deb-src line, which this machine's apt has not: apt-get runs with a private source list and
# list directory under a temporary folder, so the machine's apt configuration is untouched. apt checks the Sources
# index against the archive's signed Release file and the tarball against the index (the Debian archive keyring).
# The upstream tarball is pinned by its SHA-256: a Debian revision that re-packs it (or a newer upstream in trixie)
# fails here with both hashes named, rather than running another file than the one the recorded counts are of.
# Idempotent: quiet when DEST already holds the pinned file. setup.sh --tests runs it; tests/conformance/README.md.
set -euo pipefail
dest=$(realpath -m "${1:-build/conformance}")
suite=trixie
upstream=2.6.0
orig_sha256=099a9601bc40d67656e75735c44abedb0fbe92d08817852ab7472eebb7e6ddff  # pytorch_2.6.0+dfsg.orig.tar.xz
stamp="$dest/.pytorch-orig-sha256"
if [[ -f "$dest/test_dataloader.py" && -f "$stamp" && $(cat "$stamp") == "$orig_sha256" ]]; then
  exit 0
fi
echo "fetch_pytorch_tests.sh: fetching PyTorch $upstream's test/test_dataloader.py from Debian's $suite source package"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/lists/partial" "$tmp/cache/archives/partial"
echo "deb-src http://deb.debian.org/debian $suite main" >"$tmp/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$tmp/sources.list" -o Dir::Etc::SourceParts=/dev/null
          -o "Dir::State::Lists=$tmp/lists" -o "Dir::Cache=$tmp/cache" -o APT::Sandbox::User=root)
if ! apt-get "${apt_opts[@]}" update -qq >"$tmp/log" 2>&1 ||
   ! (cd "$tmp" && apt-get "${apt_opts[@]}" source --download-only -qq pytorch >>"$tmp/log" 2>&1); then
  cat "$tmp/log" >&2
  echo "fetch_pytorch_tests.sh: apt-get could not fetch $suite's pytorch source package (its output above)" >&2
  exit 1
fi
orig=("$tmp"/pytorch_*.orig.tar.xz)
found=$(sha256sum "${orig[0]}" | cut -d' ' -f1)
if [[ $found != "$orig_sha256" ]]; then
  echo "fetch_pytorch_tests.sh: $suite's $(basename "${orig[0]}") has SHA-256 $found, not the pinned $orig_sha256" \
       "(PyTorch $upstream): pin the new tarball here and re-record tests/conformance/*.txt" \
       "(tests/conformance/README.md)" >&2
  exit 1
fi
tar -xJf "${orig[0]}" -C "$tmp" --wildcards '*/test/test_dataloader.py'
mkdir -p "$dest"
cp "$tmp"/pytorch-v*/test/test_dataloader.py "$dest/test_dataloader.py"
echo "$orig_sha256" >"$stamp"
echo "fetch_pytorch_tests.sh: $dest/test_dataloader.py (PyTorch $upstream)"
