#!/usr/bin/env bash
# Check the Promela model of lockctl's lock protocol (docs/model.md) with
# spin: every configuration of the real protocol must pass (the former
# findings among them, fixed in commit cb9edec), every mutant must fail with
# a counterexample, and every masked mechanism must be shown masked. Exits
# non-zero otherwise.
#
#   docs/model/check.sh            the checks below, $JOBS (default: nproc) at once
#   docs/model/check.sh NAME...    only these checks
#   FULL=1 docs/model/check.sh     also the larger configurations (minutes more)
#   VERBOSE=1 docs/model/check.sh  print pan's full output as well
#
# Needs spin (Debian: apt-get install spin) and a C compiler.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
model=$here/lockctl.pml
for tool in spin "${CC:=gcc}"; do
	command -v "$tool" >/dev/null || { echo "check.sh: $tool not found (apt-get install spin gcc)" >&2; exit 2; }
done

# name | expect | spin flags | what it shows
checks=(
	# The real protocol, as lock/ and fix/ implement it (BIND=1), and as
	# docs/fix-protocol.md states it for a record addressed by path (BIND=0).
	"real|pass|-DBIND=1 -DNA=2 -DNS=1 -DMAXC=2|the Go code: 2 acquirers, 1 --fix sweeper, up to 2 crashes"
	"real-3|pass|-DBIND=1 -DNA=3 -DNS=0 -DMAXC=2|the Go code: 3 acquirers (breaking for each other), up to 2 crashes"
	"real-wedge|pass|-DBIND=1 -DNA=2 -DNS=1 -DMAXC=1 -DWEDGE|the Go code, P5 (nothing left wedged) with 1 crash"
	"path|pass|-DBIND=0 -DNA=2 -DNS=1 -DMAXC=2|by path: 2 acquirers, 1 sweeper, up to 2 crashes"
	"path-3|pass|-DBIND=0 -DNA=3 -DNS=0 -DMAXC=2|by path: 3 acquirers, up to 2 crashes"
	# Mutants: each reverts one mechanism; each must be caught in a
	# configuration where the real protocol passes.
	"mut-noclaim|fail|-DBIND=0 -DNA=2 -DNS=1 -DMAXC=1 -DMUT_NOCLAIM|(a) the sweeper removes without claiming first"
	"mut-noverify|fail|-DBIND=1 -DNA=2 -DNS=1 -DMAXC=1 -DMUT_NOVERIFY|(b) the sweeper skips the identity checks"
	"mut-replace|fail|-DBIND=0 -DNA=3 -DNS=0 -DMAXC=1 -DMUT_REPLACE -DMUT_SCAN_SIDES_FIRST|(c) put-backs use a replacing rename (caught only beside (e); full-masked-replace-path)"
	"mut-mkdir|fail|-DBIND=1 -DNA=2 -DNS=1 -DMAXC=1 -DMUT_MKDIR|(d) acquire makes the directory, then writes the record"
	"mut-mkdir-wedge|fail|-DBIND=1 -DNA=2 -DNS=1 -DMAXC=1 -DMUT_MKDIR -DNO_P3 -DWEDGE|(d) what a crash in its empty window leaves"
	# Mechanisms that other mechanisms make redundant: the directory binding
	# of the Go code, for lockctl's own locks (they still matter for locks
	# addressed by path), and P4 for release's check before its rmdir.
	"masked-noclaim|pass|-DBIND=1 -DNA=2 -DNS=1 -DMAXC=1 -DMUT_NOCLAIM|(a) is masked by the directory binding"
	"masked-noverify-rec|pass|-DBIND=1 -DNA=2 -DNS=1 -DMAXC=1 -DMUT_NOVERIFY_REC|the inode/bytes check alone is masked by the directory checks"
	"masked-noverify-rec-path|pass|-DBIND=0 -DNA=2 -DNS=1 -DMAXC=1 -DMUT_NOVERIFY_REC|... and by the directory check before rmdir, even by path"
	"masked-replace|pass|-DBIND=1 -DNA=3 -DNS=0 -DMAXC=2 -DMUT_REPLACE|(c) is masked by the directory binding"
	"masked-release-unchecked|pass|-DBIND=1 -DNA=3 -DNS=0 -DMAXC=1 -DRELEASE_OWN -DMUT_RELEASE_UNCHECKED|(g) release's lstat before its rmdir is masked: with P4, nothing else removes its directory"
	# The model's findings, fixed in commit cb9edec (docs/model.md, "What
	# the model found"): the Go code now passes them ...
	"finding-strict|pass|-DBIND=1 -DNA=2 -DNS=1 -DMAXC=2 -DSTRICT|P4: --fix never removes the directory of a live holder, even one releasing it"
	"finding-release-rmdir|pass|-DBIND=1 -DNA=3 -DNS=0 -DMAXC=2 -DRELEASE_OWN|... and a release's rmdir by name removes only its own directory"
	"finding-wedge|pass|-DBIND=1 -DNA=2 -DNS=1 -DMAXC=2 -DWEDGE|P5 with 2 crashes: the next --fix clears every lock left"
	# ... and the code before that commit fails them: each mutant restores
	# one of the old behaviours.
	"mutant-scan-sides-first|fail|-DBIND=1 -DNA=2 -DNS=1 -DMAXC=1 -DSTRICT -DMUT_SCAN_SIDES_FIRST|(e) scan settles side files listed before the lock was read"
	"mutant-multi-claim-by-hand|fail|-DBIND=1 -DNA=2 -DNS=1 -DMAXC=2 -DWEDGE -DMUT_MULTI_BY_HAND|(f) several abandoned claims are left to a person"
	"mutant-scan-sides-first-release|fail|-DBIND=1 -DNA=3 -DNS=0 -DMAXC=1 -DRELEASE_OWN -DMUT_SCAN_SIDES_FIRST|(e) ... then a release removes another releaser's directory, its lstat notwithstanding"
	# Reservations (reserve.pml, issue 20): an adopter racing the end of
	# the grace while acquirers break the reservation once it has ended.
	"reserve|pass|-DNA=2 -DMAXC=1|adopt racing expiry and 2 breaking acquirers, the adopter crashing once; P1, P6"
	"reserve-wedge|pass|-DNA=2 -DMAXC=1 -DWEDGE|... and once --fix has passed, nothing owner-less is left; P7"
	"reserve-mut-path|fail|-DNA=1 -DMAXC=0 -DMUT_ADOPT_PATH|(h) adopt moves its record in by path, replacing, with no claim"
	"reserve-mut-empty|fail|-DNA=1 -DMAXC=1 -DWEDGE -DMUT_ADOPT_EMPTY|(i) adopt removes the reservation before its record is in"
	# Producers that rewrite a record in place (inplace.pml, issue 41): a
	# claim cannot be bound to such a record, so --fix never claims its
	# format; one whose producers only create is claimed safely.
	"inplace-claim|fail|-DINPLACE -DCLAIM|a producer rewriting in place beside a waiter on O_EXCL, and --fix claiming: two holders"
	"inplace-noclaim|pass|-DINPLACE|... and --fix leaving that format alone (scan.InPlace): P1"
	"excl-claim|pass|-DCLAIM|a producer that only creates (O_EXCL), and --fix claiming: P1"
	# The claim by link(2) where RENAME_NOREPLACE is refused (linkclaim.pml,
	# issue 33): sweepers racing one another and a waiter on O_EXCL.
	"linkclaim|pass|-DNS=2|2 sweepers claiming by link(2), a waiter on O_EXCL: P2 (no live lock unlinked), P1"
	"linkclaim-3|pass|-DNS=3|3 sweepers claiming by link(2), a waiter on O_EXCL: P2, P1"
	"linkclaim-nocount|fail|-DNS=2 -DMUT_NOCOUNT|without the link count check, one sweeper frees the name under another's claim"
	"linkclaim-noident|fail|-DNS=2 -DMUT_NOIDENT|without the inode checks, a lock made since is unlinked"
	"linkclaim-breaker|fail|-DNS=1 -DBREAKER|the window that remains: a producer breaking the stale lock itself between the look and the unlink"
)
# Larger configurations (FULL=1): a few more minutes of CPU, 2 GB of memory
# each (two at once with the default JOBS on 2 cores).
full=(
	"full-2x2|pass|-DBIND=1 -DNA=2 -DNS=2 -DMAXC=2 -DSTRICT -DRELEASE_OWN|the Go code: 2 acquirers, 2 sweepers, up to 2 crashes; P1-P4"
	"full-3x1|pass|-DBIND=1 -DNA=3 -DNS=1 -DMAXC=1 -DSTRICT -DRELEASE_OWN|the Go code: 3 acquirers, 1 sweeper, 1 crash; P1-P4"
	"full-wedge-2x2|pass|-DBIND=1 -DNA=2 -DNS=2 -DMAXC=2 -DWEDGE|the Go code: 2 acquirers, 2 sweepers, up to 2 crashes; P5"
	"full-wedge-3|pass|-DBIND=1 -DNA=3 -DNS=0 -DMAXC=2 -DWEDGE|the Go code: 3 acquirers, up to 2 crashes; P5"
	"full-path-2x2|pass|-DBIND=0 -DNA=2 -DNS=2 -DMAXC=2 -DSTRICT -DRELEASE_OWN|by path: 2 acquirers, 2 sweepers, up to 2 crashes (reaches restore); P1-P4"
	"full-path-3x1|pass|-DBIND=0 -DNA=3 -DNS=1 -DMAXC=1 -DSTRICT -DRELEASE_OWN|by path: 3 acquirers, 1 sweeper, 1 crash; P1-P4"
	"full-masked-replace-path|pass|-DBIND=0 -DNA=2 -DNS=2 -DMAXC=2 -DMUT_REPLACE|(c) is masked even by path, now that (e) is fixed"
)
if [[ -n ${FULL:-} ]]; then checks+=("${full[@]}"); fi

if (($#)); then
	selected=()
	for want in "$@"; do
		found=
		for c in "${checks[@]}" "${full[@]}"; do
			[[ ${c%%|*} == "$want" ]] && selected+=("$c") && found=1
		done
		[[ -n $found ]] || { echo "check.sh: no check named $want" >&2; exit 2; }
	done
	checks=("${selected[@]}")
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# run NAME EXPECT FLAGS: verify one configuration; writes $work/NAME.out
# (the report) and $work/NAME.ok (if it went as expected).
run() {
	local name=$1 expect=$2 flags=$3 dir=$work/$1 src=$model
	[[ $name == reserve* ]] && src=$here/reserve.pml
	[[ $name == inplace* || $name == excl* ]] && src=$here/inplace.pml
	[[ $name == linkclaim* ]] && src=$here/linkclaim.pml
	mkdir -p "$dir"
	cp "$src" "$dir/lockctl.pml"
	(
		cd "$dir"
		# shellcheck disable=SC2086
		spin -a $flags lockctl.pml >spin.log 2>&1 || { cat spin.log; exit 1; }
		# A full search is worth optimising; a search for a violation is short.
		# Most searches are short, and compiling pan.c is most of their
		# cost; the few millions of states of the larger ones are worth
		# optimising and compressing (-DCOLLAPSE: a third of the memory).
		opt="-O0" hash=-w22
		if big "$name"; then opt="-O2 -DCOLLAPSE" hash=-w25; fi
		# shellcheck disable=SC2086
		"$CC" $opt -DSAFETY -DNOBOUNDCHECK -o pan pan.c 2>cc.log || { cat cc.log; exit 1; }
		start=$(date +%s.%N)
		./pan -m20000 $hash >pan.log 2>&1 || true
		end=$(date +%s.%N)
		awk -v s="$start" -v e="$end" 'BEGIN { printf "%.1f", e - s }' >wall
	) >"$dir/build.log" 2>&1 || { echo "  cannot build: $(tail -3 "$dir/build.log")" >"$work/$name.out"; return; }

	local log=$dir/pan.log errors states depth wall verdict
	errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$log" | head -1)
	states=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' "$log" | head -1)
	depth=$(sed -n 's/.*depth reached \([0-9]*\).*/\1/p' "$log" | head -1)
	wall=$(cat "$dir/wall")
	if [[ -z $errors ]]; then
		{ echo "  pan did not finish:"; sed 's/^/    /' "$log"; } >"$work/$name.out"
		return
	fi
	if grep -q "max search depth too small\|Search not completed" "$log" && [[ $errors == 0 ]]; then
		{ echo "  the search was not complete:"; sed 's/^/    /' "$log"; } >"$work/$name.out"
		return
	fi
	if [[ $errors == 0 ]]; then
		verdict="no violation; $states states (depth $depth), ${wall}s"
		[[ $expect == pass ]] && touch "$work/$name.ok"
		echo "  $verdict" >"$work/$name.out"
	else
		local what
		what=$(grep -m1 "violated\|invalid end state" "$log" | sed 's/^pan:[0-9]*: *//')
		verdict="VIOLATION: $what; after $states states, ${wall}s"
		[[ $expect == fail ]] && touch "$work/$name.ok"
		{
			echo "  $verdict"
			echo "  counterexample (pN: acquirers 1..NA, then sweepers; Dd: directory, Tr: record;"
			echo "  the scans that led to nothing are left out):"
			# shellcheck disable=SC2086
			(cd "$dir" && spin -t $flags lockctl.pml 2>&1) |
				sed -n 's/^ *\(p[0-9]*: .*\|end: .*\)$/\1/p; s/^spin: text of failed assertion: \(.*\)/assert failed: \1/p' |
				awk -f "$here/trail.awk" | sed 's/^/    /'
		} >"$work/$name.out"
	fi
	if [[ -n ${VERBOSE:-} ]]; then sed 's/^/    | /' "$log" >>"$work/$name.out"; fi
}

big() { [[ $1 == full-* ]]; }
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
for pass in big small; do   # the long searches first, the rest beside them
	for c in "${checks[@]}"; do
		IFS='|' read -r name expect flags what <<<"$c"
		if big "$name"; then [[ $pass == big ]] || continue; else [[ $pass == small ]] || continue; fi
		while (($(jobs -rp | wc -l) >= jobs)); do wait -n || true; done
		run "$name" "$expect" "$flags" &
	done
done
wait

bad=0
for c in "${checks[@]}"; do
	IFS='|' read -r name expect flags what <<<"$c"
	if [[ -e $work/$name.ok ]]; then status=ok; else status=FAILED; bad=$((bad + 1)); fi
	printf '%-6s %-26s expect %-4s  %s\n' "$status" "$name" "$expect" "$what"
	printf '       %s\n' "$flags"
	cat "$work/$name.out"
done
echo
if ((bad)); then
	echo "model: $bad of ${#checks[@]} checks did not go as expected"
	exit 1
fi
echo "model: all ${#checks[@]} checks went as expected"
