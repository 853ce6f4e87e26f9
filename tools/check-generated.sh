#!/usr/bin/env bash
# Regenerates the receiver's mdatagen output from metadata.yaml in a scratch
# copy and fails when it differs from the working tree, so that a change to
# metadata.yaml without `make generate` (or a hand edit of generated code)
# cannot land. Usage: tools/check-generated.sh path/to/mdatagen
set -euo pipefail
mdatagen="$(realpath "$1")"
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/kafkatimelagreceiver"
cp kafkatimelagreceiver/go.mod kafkatimelagreceiver/go.sum "$scratch/kafkatimelagreceiver/"
# mdatagen rewrites the status section of the README in place, and asks
# go list for the package name (doc.go).
cp kafkatimelagreceiver/metadata.yaml kafkatimelagreceiver/README.md kafkatimelagreceiver/doc.go "$scratch/kafkatimelagreceiver/"
(cd "$scratch/kafkatimelagreceiver" && "$mdatagen" metadata.yaml)
status=0
while IFS= read -r f; do
	rel="${f#"$scratch"/}"
	if ! cmp -s "$f" "$rel"; then
		echo "generated file differs from what mdatagen writes: $rel" >&2
		diff -u "$rel" "$f" | head -20 >&2 || true
		status=1
	fi
done < <(find "$scratch/kafkatimelagreceiver" -type f ! -name metadata.yaml ! -name doc.go)
if [ "$status" -ne 0 ]; then
	echo "run 'make generate' and commit the result" >&2
fi
exit "$status"
