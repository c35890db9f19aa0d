#!/bin/sh
# A CI step: fail the job when a lock was leaked by a process that is gone,
# or a break was abandoned (claimed), and keep the JSON report as an
# artifact either way. See docs/fleet.md.
#
#   sh ci-lockctl.sh [PATH...]      (no PATH: $LOCKCTL_PATH, or the standard places)
#
# Writes $LOCKCTL_REPORT (default lockctl.json). Exit status: 0 no gone or
# claimed lock; 1 there is one; 2 the check itself could not run (a bad
# path or flag): a failure of the job, not of the locks.
set -u

report=${LOCKCTL_REPORT:-lockctl.json}
status=0
lockctl doctor --format json --output "$report" --fail-on gone,claimed "$@" || status=$?

case $status in
0)
	echo "lockctl: no gone or claimed locks (report: $report)"
	;;
1)
	echo "lockctl: gone or claimed locks; see $report and docs/runbook.md" >&2
	# The locks that failed the job, one a line, for the log.
	if command -v jq >/dev/null 2>&1; then
		jq -r '.locks[] | select(.verdict == "gone" or .verdict == "claimed")
			| "lockctl:   \(.verdict)\t\(.path_shell // .path)\t\(.reason)"' "$report" >&2
	fi
	;;
*)
	echo "lockctl: the check could not run (exit $status)" >&2
	;;
esac
exit "$status"
