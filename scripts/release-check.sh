#!/usr/bin/env bash
# Everything a release does but the upload, for the npm package, the two Python distributions
# and the Go modules (the release workflow, .github/workflows/release.yml, runs it before it
# publishes; test/packaging/release-check.test.ts runs it in npm test):
#   1. one version everywhere: package.json, gen/python and clients/python (and the client's pin
#      of agentd-proto), clients/go/go.mod's require of gen/go, the Go quickstart's require of the
#      client, a CHANGELOG.md section, and the tag being released (RELEASE_TAG=v<version>, when set);
#   2. npm publish --dry-run of the packed tarball (AGENTD_TARBALL, else npm pack here);
#   3. the sdist and wheel of agentd-proto and agentd-client, built from copies of their
#      directories, and twine check --strict on them.
# Usage: scripts/release-check.sh OUT_DIR   (needs scripts/setup-release-tools.sh first)
# Writes OUT_DIR/npm-publish.json (npm's dry-run report) and OUT_DIR/python/*.{tar.gz,whl}.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: scripts/release-check.sh OUT_DIR}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
venv="${AGENTD_RELEASE_VENV:-.tools/release-venv}"
if [[ ! -x "$venv/bin/twine" ]]; then
  echo "release-check: no release tools in $venv: run scripts/setup-release-tools.sh" >&2
  exit 2
fi

fail() {
  echo "release-check: $*" >&2
  exit 1
}

# 1. One version.
version="$(node -p 'require("./package.json").version')"
name="$(node -p 'require("./package.json").name')"
pyversion() { sed -n 's/^version = "\(.*\)"$/\1/p' "$1"; }
[[ "$(pyversion gen/python/pyproject.toml)" == "$version" ]] \
  || fail "gen/python/pyproject.toml has version $(pyversion gen/python/pyproject.toml), package.json $version"
[[ "$(pyversion clients/python/pyproject.toml)" == "$version" ]] \
  || fail "clients/python/pyproject.toml has version $(pyversion clients/python/pyproject.toml), package.json $version"
grep -q "\"agentd-proto==$version\"" clients/python/pyproject.toml \
  || fail "clients/python/pyproject.toml must depend on agentd-proto==$version"
grep -Eq "^\s+github.com/agentd-dev/agentd/gen/go v$version$" clients/go/go.mod \
  || fail "clients/go/go.mod must require github.com/agentd-dev/agentd/gen/go v$version"
grep -q "^require github.com/agentd-dev/agentd/clients/go v$version$" examples/go-quickstart/go.mod \
  || fail "examples/go-quickstart/go.mod must require github.com/agentd-dev/agentd/clients/go v$version"
grep -Eq "^## \[$version\]" CHANGELOG.md || fail "CHANGELOG.md has no section \"## [$version]\""
if [[ -n "${RELEASE_TAG:-}" && "$RELEASE_TAG" != "v$version" ]]; then
  fail "the tag $RELEASE_TAG is not v$version (package.json)"
fi
echo "release-check: $name $version, agentd-proto and agentd-client $version, Go modules v$version"

# 2. npm.
tarball="${AGENTD_TARBALL:-}"
if [[ -z "$tarball" ]]; then
  npm pack --pack-destination "$out" --loglevel=error >/dev/null
  tarball="$(ls "$out"/*.tgz | head -1)"
fi
npm publish --dry-run --json --loglevel=error "$tarball" >"$out/npm-publish.json"
echo "release-check: npm publish --dry-run $(basename "$tarball"): ok"

# 3. Python.
rm -rf "$out/python" "$out/src"
for project in gen/python clients/python; do
  copy="$out/src/$(basename "$(dirname "$project")")-$(basename "$project")"
  mkdir -p "$copy"
  tar -C "$project" --exclude=build --exclude='*.egg-info' --exclude=__pycache__ --exclude=.pytest_cache -cf - . \
    | tar -C "$copy" -xf -
  "$venv/bin/python" -m build --no-isolation --sdist --wheel --outdir "$out/python" "$copy" >"$out/build.log" 2>&1 \
    || { cat "$out/build.log" >&2; fail "python -m build $project failed"; }
done
"$venv/bin/twine" check --strict "$out"/python/*
echo "release-check: $(ls "$out/python" | tr '\n' ' ')"
