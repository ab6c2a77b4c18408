#!/usr/bin/env bats
# The TIFF tile-map parser under libFuzzer + ASan + UBSan: a short fuzz run
# finds nothing, and no file of the corpus, good or bad, trips a sanitizer.
# These build build-fuzz/fuzz_tiff_map themselves (tests/fuzz/run, needs
# clang) and mount nothing.

bats_require_minimum_version 1.5.0
load ../lib/tilefs

setup() {
	CORPUS=${TILEFS_CORPUS:-$REPO_ROOT/../shared/corpus}
	[ -d "$CORPUS/good" ] || skip "no TIFF corpus at $CORPUS (set TILEFS_CORPUS)"
	FUZZ_BIN=$REPO_ROOT/build-fuzz/fuzz_tiff_map
}

# fuzz_ok: the last `run` exited 0; otherwise show the end of its output
# (the sanitizer report and the artifact's path).
fuzz_ok() {
	[ "$status" = 0 ] && return 0
	tail -n 80 <<<"$output" >&2
	fail "exit status $status"
}

@test "20 s of fuzzing the TIFF map parser finds no crash, leak or bad round trip" {
	run run_to 150 "$REPO_ROOT/tests/fuzz/run" 20
	fuzz_ok
}

@test "every corpus file, good and bad, parses under ASan/UBSan without a finding" {
	run run_to 120 "$REPO_ROOT/tests/fuzz/run" --build-only
	fuzz_ok
	local files=("$CORPUS"/good/* "$CORPUS"/bad/*)
	run run_to 120 "$FUZZ_BIN" -rss_limit_mb=2048 -timeout=10 \
		-artifact_prefix="$BATS_TEST_TMPDIR/" "${files[@]}"
	fuzz_ok
	assert_eq "$(grep -c '^Executed ' <<<"$output")" "${#files[@]}" "files run"
}
