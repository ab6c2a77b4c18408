#!/usr/bin/env bats
# The parsers of untrusted bytes under libFuzzer + ASan + UBSan (tests/fuzz/
# run builds every target, needs clang, and mounts nothing): a short fuzz
# run of each finds nothing; every seed, and every file of the TIFF corpus,
# runs without a finding; and each target reaches the parser it is for
# (libFuzzer's coverage names the parser's functions), so none can pass
# without fuzzing anything.

bats_require_minimum_version 1.5.0
load ../lib/tilefs

setup_file() {
	# one build for the whole file (the fuzz run below builds again)
	run_to 300 "$REPO_ROOT/tests/fuzz/run" --build-only >&3 2>&1 ||
		echo "# tests/fuzz/run --build-only failed" >&3
}

setup() {
	CORPUS=${TILEFS_CORPUS:-$REPO_ROOT/tests/data/corpus}
	FUZZ=$REPO_ROOT/build-fuzz
}

need_corpus() {
	[ -d "$CORPUS/good" ] || skip "no TIFF corpus at $CORPUS (set TILEFS_CORPUS)"
}

# fuzz_ok: the last `run` exited 0; otherwise show the end of its output
# (the sanitizer report and the artifact's path).
fuzz_ok() {
	[ "$status" = 0 ] && return 0
	tail -n 80 <<<"$output" >&2
	fail "exit status $status"
}

# seeds_reach TARGET SEEDDIR FUNCTION...: TARGET runs every file of SEEDDIR
# without a finding, and its coverage names each FUNCTION as reached.
seeds_reach() {
	local target=$1 seeds=$2 f
	shift 2
	[ -x "$FUZZ/$target" ] || fail "$FUZZ/$target was not built"
	local work=$BATS_TEST_TMPDIR/corpus
	mkdir -p "$work"
	cp -- "$seeds"/* "$work/"
	run run_to 300 "$FUZZ/$target" -runs=0 -print_coverage=1 -rss_limit_mb=2048 -timeout=10 \
		-artifact_prefix="$BATS_TEST_TMPDIR/" "$work"
	fuzz_ok
	for f in "$@"; do
		grep -qE "^COVERED_FUNC: hits: [1-9][0-9]* .* $f " <<<"$output" ||
			fail "$target does not reach $f: $(grep -c '^COVERED_FUNC' <<<"$output") functions covered"
	done
}

@test "fuzzing every target (the TIFF map 20 s, the others 5 s each) finds no crash, leak or bad result" {
	need_corpus
	run run_to 600 "$REPO_ROOT/tests/fuzz/run" 20
	fuzz_ok
	local t
	for t in fuzz_tiff_map fuzz_layout fuzz_listing fuzz_error_body fuzz_response fuzz_imds \
		fuzz_manifest fuzz_mounts_prom; do
		grep -q "^fuzzing $t for " <<<"$output" || fail "$t was not fuzzed"
	done
}

@test "every corpus file, good and bad, parses under ASan/UBSan without a finding" {
	need_corpus
	[ -x "$FUZZ/fuzz_tiff_map" ] || fail "$FUZZ/fuzz_tiff_map was not built"
	local files=("$CORPUS"/good/* "$CORPUS"/bad/*)
	run run_to 120 "$FUZZ/fuzz_tiff_map" -rss_limit_mb=2048 -timeout=10 \
		-artifact_prefix="$BATS_TEST_TMPDIR/" "${files[@]}"
	fuzz_ok
	assert_eq "$(grep -c '^Executed ' <<<"$output")" "${#files[@]}" "files run"
}

@test "the tile map and the unit cut reach their parsers from the corpus" {
	need_corpus
	seeds_reach fuzz_tiff_map "$CORPUS/good" tiff_map_parse add_ifd tiff_map_decode
	seeds_reach fuzz_layout "$CORPUS/good" layout_init layout_unit_at layout_related
}

@test "fuzz_listing: its seeds reach every provider's listing parser" {
	seeds_reach fuzz_listing "$REPO_ROOT/tests/fuzz/seeds/fuzz_listing" http_parse_listing \
		bucket_listing_parse azure_parse_listing
}

@test "fuzz_error_body: S3, GCS and Azure error bodies reach the error reason" {
	seeds_reach fuzz_error_body "$REPO_ROOT/tests/fuzz/seeds/fuzz_error_body" \
		provider_xml_error xml_text
}

@test "fuzz_response: answers on a socket reach the header, Content-Range and body checks" {
	seeds_reach fuzz_response "$REPO_ROOT/tests/fuzz/seeds/fuzz_response" on_header \
		header_value on_body attempt_verdict range_mismatch deliver provider_xml_error
}

@test "fuzz_imds: metadata service answers reach the credentials parser and signing" {
	seeds_reach fuzz_imds "$REPO_ROOT/tests/fuzz/seeds/fuzz_imds" aws_imds_fetch \
		aws_keys_from_json json_doc_parse json_doc_string s3_sign
}

@test "fuzz_manifest: manifests reach the manifest loader" {
	seeds_reach fuzz_manifest "$REPO_ROOT/tests/fuzz/seeds/fuzz_manifest" ns_load_manifest \
		url_for_log
}

@test "fuzz_mounts_prom: files a mount wrote reach the mounts/*.prom reader" {
	seeds_reach fuzz_mounts_prom "$REPO_ROOT/tests/fuzz/seeds/fuzz_mounts_prom" mounts_recent \
		label_value
}
