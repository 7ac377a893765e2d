#!/usr/bin/env bash
# make_venv.sh VENV REQUIREMENTS — makes (or brings up to date) the project's test venv: VENV from Debian's
# /usr/bin/python3 (the Python whose headers python3-dev installs, so the module builds for it), then
# `pip install -r REQUIREMENTS` from PyPI (every version pinned there). Quiet and quick when VENV already holds
# exactly REQUIREMENTS (VENV/.batchd-requirements, written only after pip succeeded); otherwise one line, pip's
# output only on failure. setup.sh --tests runs it.
set -euo pipefail
venv=$1
req=$2
py=/usr/bin/python3
[[ -x $py ]] || py=$(command -v python3)
stamp="$venv/.batchd-requirements"
if [[ -x "$venv/bin/python" && -f "$stamp" ]] && cmp -s "$req" "$stamp"; then
  exit 0
fi
echo "setup.sh: making the test venv $venv from $req (PyPI; torch's wheels are several GB the first time)"
if ! "$venv/bin/python" -m pip --version >/dev/null 2>&1; then  # none, or one left half-made: make it anew
  rm -rf "$venv"
  "$py" -m venv "$venv"
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# The venv's own pip (Debian's python3-venv bundles it) installs the pinned list; nothing unpinned is fetched.
if ! "$venv/bin/python" -m pip install --disable-pip-version-check -q -r "$req" >"$log" 2>&1; then
  cat "$log"
  echo "make_venv.sh: pip could not install $req into $venv (its output above)" >&2
  exit 1
fi
cp "$req" "$stamp"
