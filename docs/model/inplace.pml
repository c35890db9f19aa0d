/*
 * inplace.pml: why --fix claims a lock file only where its producers never
 * rewrite a record in place (docs/fix-protocol.md, "Which formats a claim
 * can be bound to"; docs/model.md, "Producers that rewrite in place").
 *
 * One lock file, whose record names a dead holder (DEAD): the sweeper
 * judged it gone. Beside the sweeper run two takers:
 *   A  takes the lock as its producer does: with -DINPLACE, the way shell
 *      and cron code take a stale pid file (open it by its name, see the
 *      dead pid, write its own over it: the same inode); otherwise with
 *      O_EXCL, only when the name is free, as B does;
 *   B  a waiter that retries O_CREAT|O_EXCL until the name is free.
 * The sweeper, with -DCLAIM, runs fix's protocol on the record it judged
 * (inode 1): read it again, claim it by a rename that never replaces,
 * verify the claimed inode's bytes, read them once more, remove the claim,
 * putting the record back (never replacing) whenever a check fails.
 * Without -DCLAIM it leaves the lock alone, as --fix does for a format
 * whose producers may rewrite in place (scan.InPlace).
 *
 * P1: never two holders. A holds once it has written its pid (or created
 * the file), B once it has created the file; neither lets go.
 *
 *   inplace-claim   -DINPLACE -DCLAIM  fails: A's rewrite lands between the
 *                                      sweeper's last read and its rename,
 *                                      the live record is moved away, and
 *                                      B gets in beside A
 *   inplace-noclaim -DINPLACE          passes: the format is not claimed
 *   excl-claim      -DCLAIM            passes: producers that only create
 */

#define DEAD 9
#define NOBODY 0
#define PA 1
#define PB 2

byte atName = 1;	/* the inode at the lock's name (0: none) */
byte atClaim = 0;	/* the inode at the sweeper's claim name (0: none) */
byte content[4];	/* the holder each inode's record names */
byte nextIno = 2;	/* the next inode a create makes */
bool inA, inB;	/* holding the lock */

/* create makes a new file at the free name, naming who: O_CREAT|O_EXCL. */
inline create(who, in) {
	skip;	/* waiting for the name to be free is a valid end: */
end_wait:
	atomic {
		atName == 0 ->
		atName = nextIno;
		content[nextIno] = who;
		nextIno++;
		in = true
	}
}

proctype takerA() {
	byte fd;
#ifdef INPLACE
	/* open(name, O_WRONLY): the inode the name holds now, kept open */
end_open:
	atomic { atName != 0; fd = atName }
	if
	:: content[fd] == DEAD ->
		/* stale: write its own pid over the dead one, in place */
		atomic { content[fd] = PA; inA = true }
	:: else -> skip	/* not stale: it waits, and never gets in here */
	fi
#else
	create(PA, inA);
#endif
	assert(!(inA && inB))
}

proctype waiterB() {
	create(PB, inB);
	assert(!(inA && inB))
}

proctype sweeper() {
#ifdef CLAIM
	/* 0. read again: the inode and the bytes judged */
	if
	:: atomic { atName == 1 && content[1] == DEAD } -> skip
	:: else -> goto done
	fi;
	/* 1. claim: rename, never replacing */
	atomic {
		if
		:: atName == 1 -> atClaim = 1; atName = 0
		:: else -> goto done
		fi
	}
	/* 2. verify, and 4. read once more before the removal */
	if
	:: content[atClaim] == DEAD ->
		if
		:: content[atClaim] == DEAD -> atClaim = 0	/* removed */
		:: else -> goto back
		fi
	:: else -> goto back
	fi;
	goto done;
back:
	/* put back, never replacing; else the claim is kept (a conflict) */
	atomic {
		if
		:: atName == 0 -> atName = atClaim; atClaim = 0
		:: else -> skip
		fi
	}
#endif
done:
	skip
}

init {
	content[1] = DEAD;
	atomic { run sweeper(); run takerA(); run waiterB() }
}
