# tests/lib/cloud_identity.bash: a private identity endpoint (Azure IMDS,
# App Service, GCE metadata) and GCS data plane, cloud_identity.py, on
# 127.0.0.1. Source after origin.bash (PY, pid_alive).
#
#   identity_start [ARGS...]   start it with cloud_identity.py's ARGS;
#                              sets IDENTITY_URL (http://127.0.0.1:PORT),
#                              IDENTITY_HOST (127.0.0.1:PORT), IDENTITY_LOG
#   identity_stop              stop it (safe to call twice)
#   gcs_plane_start ARGS...    a second instance, as a GCS data plane (give
#                              it --gcs-root, and the metadata's --secret;
#                              --tls-cert/--tls-key for https): sets
#                              GCS_PLANE_PORT, GCS_PLANE_LOG
#   gcs_plane_stop
#   identity_tokens            tokens handed out so far
#   identity_count METHOD STATUS [PATHPATTERN]
#                              requests logged with that method and status
#   identity_oid NAME          the oid claim of the Azure tokens of
#                              principal NAME (a client id, or "system")

# _cloud_spawn DIR ARGS...: start cloud_identity.py in DIR (its log:
# DIR/requests.log, appended, so a restart in the same DIR keeps it);
# wait for its port in DIR/port (remove it first when restarting).
_cloud_spawn() {
	local d=$1 i
	shift
	"$PY" "$TESTS_LIB/cloud_identity.py" --port-file "$d/port" "$@" \
		</dev/null >>"$d/requests.log" 2>>"$d/stderr" 3>&- &
	echo $! >"$d/pid"
	for ((i = 0; i < 600; i++)); do
		[ -s "$d/port" ] && break
		pid_alive "$(cat "$d/pid")" || break
		sleep 0.05
	done
	[ -s "$d/port" ] || {
		echo "cloud_identity.py did not start:" >&2
		cat "$d/stderr" >&2
		return 1
	}
}

# _cloud_stop DIR
_cloud_stop() {
	[ -n "$1" ] && [ -f "$1/pid" ] || return 0
	local pid
	pid=$(cat "$1/pid")
	rm -f "$1/pid"
	kill -TERM "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null || true
	return 0
}

identity_start() {
	local d
	d=$(mktemp -d "${BATS_TEST_TMPDIR:-${TMPDIR:-/tmp}}/identity.XXXXXX") || return 1
	IDENTITY_DIR=$d
	IDENTITY_LOG=$d/requests.log
	_cloud_spawn "$d" "$@" || return 1
	IDENTITY_HOST=127.0.0.1:$(cat "$d/port")
	IDENTITY_URL=http://$IDENTITY_HOST
	export IDENTITY_DIR IDENTITY_LOG IDENTITY_HOST IDENTITY_URL
}

identity_stop() {
	_cloud_stop "${IDENTITY_DIR:-}"
}

gcs_plane_start() {
	local d
	d=$(mktemp -d "${BATS_TEST_TMPDIR:-${TMPDIR:-/tmp}}/gcsplane.XXXXXX") || return 1
	GCS_PLANE_DIR=$d
	GCS_PLANE_LOG=$d/requests.log
	_cloud_spawn "$d" "$@" || return 1
	GCS_PLANE_PORT=$(cat "$d/port")
	export GCS_PLANE_DIR GCS_PLANE_LOG GCS_PLANE_PORT
}

gcs_plane_stop() {
	_cloud_stop "${GCS_PLANE_DIR:-}"
}

identity_tokens() {
	grep -c '^TOKEN ' "$IDENTITY_LOG"
}

# identity_count METHOD STATUS [PATHPATTERN]
identity_count() {
	awk -v m="$1" -v st="$2" -v pat="${3:-}" \
		'$1 == m && $3 == st && (pat == "" || $2 ~ pat) { n++ } END { print n + 0 }' \
		"$IDENTITY_LOG"
}

identity_oid() {
	"$PY" "$TESTS_LIB/cloud_identity.py" --oid-of "$1"
}
