#!/usr/bin/env bash
# The web viewer's tests in real clients: Debian's chromium driven by playwright-core (no
# browser download), and the official @foxglove/ws-protocol client library. Installs what
# it needs (apt-get chromium when missing, npm ci), builds the player binary, then runs
# node's test runner. Run from anywhere; .ci/run runs it after `cargo test --workspace`.
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v chromium >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends chromium
fi
if ! command -v node >/dev/null 2>&1; then
  apt-get update -q
  apt-get install -y -q --no-install-recommends nodejs npm
fi
# tls.test.mjs makes its self-signed certificate with the openssl command.
if ! command -v openssl >/dev/null 2>&1; then
  apt-get update -q
  apt-get install -y -q --no-install-recommends openssl
fi
npm ci --no-audit --no-fund --loglevel=error
(cd ../.. && cargo build --bin player)
export CHROMIUM="${CHROMIUM:-$(command -v chromium)}"
node --test --test-concurrency=1 .
