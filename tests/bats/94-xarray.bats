#!/usr/bin/env bats
# The xarray stack through a mount (issue 45): rioxarray with dask windows,
# tifffile with zarr, numpy.memmap. Cold (a fresh cache: tiled TIFFs not
# cached whole, read with direct I/O where the kernel allows), warm (after
# a remount on that cache) and with the default --prefetch (streaming
# whole files while the readers read): every array equal to the one read
# from local disk (tests/lib/xarray_compare.py). No time is measured.

bats_require_minimum_version 1.5.0
load ../lib/tilefs

setup() {
	tilefs_setup
	"$PY" -c 'import dask, rioxarray, tifffile, zarr' 2>/dev/null ||
		fail "python3-rioxarray, python3-dask, python3-tifffile or python3-zarr is not installed (packaging/install-deps installs them)"
	# pixels in one piece, as tifffile.memmap maps them: uncompressed, striped
	gdal_translate -q -co TILED=NO -co COMPRESS=NONE "$SAMPLES/t256.tif" "$SAMPLES/striped.tif" ||
		fail "gdal_translate of striped.tif"
	touch -d '2024-01-02 03:04:05 UTC' "$SAMPLES/striped.tif"
	origin_start "$SAMPLES"
	MNT=$T/mnt
}

teardown() {
	tilefs_teardown
}

# compare STACK WHAT FILE...: xarray_compare.py STACK through the mount
# against $SAMPLES
compare() {
	local stack=$1 what=$2
	shift 2
	run_to 600 "$PY" "$TESTS_LIB/xarray_compare.py" "$stack" "$MNT" "$SAMPLES" "$@" ||
		fail "$stack, $what: arrays differ from local disk's (above)"
}

# cold_warm STACK FILE...: STACK over a fresh cache with --prefetch none
# (each file is read as the stack reads it, no more), then again after a
# remount on that cache
cold_warm() {
	local stack=$1
	shift
	rm -rf "$T/cache"
	tilefs_mount "$ORIGIN_URL" "$MNT" --prefetch none
	origin_log_reset
	compare "$stack" cold "$@"
	[ "$(origin_gets)" -gt 0 ] || fail "$stack, cold: nothing fetched (the test tests nothing)"
	tilefs_alive "$MNT"
	tilefs_umount "$MNT"
	tilefs_mount "$ORIGIN_URL" "$MNT" --prefetch none
	compare "$stack" "warm, after a remount" "$@"
	tilefs_alive "$MNT"
	tilefs_umount "$MNT"
}

@test "xarray: rioxarray + dask windows, cold and warm: arrays equal to local" {
	cold_warm rioxarray t256.tif t512.tif nested/f32.tif striped.tif
}

# tifffile decodes the float predictor of nested/f32.tif only with
# imagecodecs, which Debian 12 does not package
@test "xarray: tifffile + zarr (dask.array.from_zarr), every level, cold and warm: arrays equal to local" {
	cold_warm zarr t256.tif t512.tif striped.tif
}

# numpy.memmap(mode="r") maps MAP_SHARED: a tiled TIFF not cached whole
# used to fail with ENODEV (issue 45)
@test "xarray: numpy.memmap and tifffile.memmap, cold and warm: arrays equal to local" {
	cold_warm memmap t256.tif t512.tif nested/f32.tif striped.tif random.bin
}

@test "xarray: every stack in one process with the default --prefetch (files streamed meanwhile), then warm: arrays equal to local" {
	tilefs_mount "$ORIGIN_URL" "$MNT"
	compare all "cold, default options" t256.tif t512.tif striped.tif
	compare memmap "cold, default options" nested/f32.tif random.bin
	tilefs_umount "$MNT"
	tilefs_mount "$ORIGIN_URL" "$MNT"
	compare all "warm, after a remount" t256.tif t512.tif striped.tif
	tilefs_alive "$MNT"
	tilefs_umount "$MNT"
}
