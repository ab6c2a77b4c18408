#!/usr/bin/env bats
# A real PyTorch training loader over a mount: examples/torch_loader.py's
# Dataset (rasterio.open per chip, nothing tilefs-specific) through
# DataLoader(num_workers=4). Every tensor must equal the chip read from the
# local files, and the second epoch must cost no data GET: what the first
# fetched is in the cache.

bats_require_minimum_version 1.5.0
load ../lib/tilefs

setup() {
	tilefs_setup
	MNT=$T/mnt
	"$PY" -c 'import torch' 2>/dev/null ||
		fail "python3-torch is not installed (packaging/install-deps installs it)"
	origin_start "$SAMPLES"
}

teardown() {
	tilefs_teardown
}

@test "DataLoader(num_workers=4) over a mount: tensors equal local reads, and epoch 2 makes no data GET" {
	tilefs_mount "$ORIGIN_URL" "$MNT"
	run -0 run_to 240 "$PY" "$TESTS_LIB/torch_compare.py" "$MNT" "$SAMPLES" --workers 4
	echo "$output"
	[[ $output == *" chips equal" ]] || fail "epoch 1: $output"
	gets=$(origin_gets)
	[ "$gets" -gt 0 ] || fail "epoch 1 made no ranged GET: the loader did not read the mount"

	origin_log_reset
	run -0 run_to 240 "$PY" "$TESTS_LIB/torch_compare.py" "$MNT" "$SAMPLES" --workers 4
	echo "$output"
	[[ $output == *" chips equal" ]] || fail "epoch 2: $output"
	gets=$(origin_gets)
	if [ "$gets" != 0 ]; then
		origin_lines >&2
		fail "epoch 2 made $gets data GETs (every chip was read in epoch 1)"
	fi
	tilefs_alive "$MNT"
	tilefs_umount "$MNT"
}
