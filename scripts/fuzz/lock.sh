#!/usr/bin/env bash
# Regenerates scripts/fuzz/requirements.lock from requirements.in: every package the fuzzer
# imports, pinned to one version, with the hashes of its files on PyPI. Resolved by the same
# interpreter npm run fuzz uses (Debian's /usr/bin/python3), so environment markers agree.
# pip-tools runs in a throwaway virtual environment, so nothing is left behind.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 -m venv "$tmp/venv"
"$tmp/venv/bin/pip" install --quiet --disable-pip-version-check 'pip-tools==7.6.2'
cd "$here"
"$tmp/venv/bin/pip-compile" --quiet --generate-hashes --allow-unsafe --strip-extras \
  --no-emit-index-url --no-emit-find-links --output-file requirements.lock requirements.in
