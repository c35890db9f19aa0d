/*
 * linkclaim.pml: the claim by link(2) that --fix makes of a lock file
 * where renameat2(RENAME_NOREPLACE) is refused (NFS): fix/link.go,
 * docs/fix-protocol.md, "Where RENAME_NOREPLACE is refused";
 * docs/model.md, "The claim by link(2)".
 *
 * One lock file, inode 1, whose record names a dead holder (DEAD): every
 * sweeper judged it gone. NS sweepers run the link claim at once, each
 * under a claim name of its own; beside them a waiter B retries
 * O_CREAT|O_EXCL until the name is free, and holds the lock from then on.
 * With -DBREAKER, a producer A also breaks the stale lock itself, as gpg,
 * shadow and X do: it reads the dead record at the name, unlinks the name,
 * and creates its own lock there.
 *
 * A sweeper: (0) reads the lock again: inode 1, the dead record; (1) links
 * the name to its claim name (link never replaces; it links whatever inode
 * the name holds then); (2) checks its claim is inode 1 with exactly two
 * names; (3) checks the name still holds inode 1; (4) unlinks the name;
 * (5) checks its claim is the inode's only name, else links it back (never
 * replacing) and drops its claim; then (6) removes its claim. A check that
 * fails before (4) drops its own claim name and leaves the lock.
 *
 * P2: a sweeper never unlinks the name while it holds a live lock
 * (assert at (4)). P1: never two holders.
 *
 *   linkclaim          passes: 2 sweepers and a waiter
 *   linkclaim-3        passes: 3 sweepers and a waiter
 *   linkclaim-nocount  -DMUT_NOCOUNT fails: without the link count check a
 *                      sweeper goes on while another's claim is under way,
 *                      frees the name, the waiter takes it, and the other
 *                      sweeper's unlink by name removes the waiter's lock
 *   linkclaim-noident  -DMUT_NOIDENT fails: without the checks that the
 *                      claim and the name are the inode judged, a lock made
 *                      since is unlinked
 *   linkclaim-breaker  -DBREAKER fails: the window that remains, between
 *                      the look at the name (3) and the unlink (4), in which
 *                      a producer breaking the stale lock itself unlinks it
 *                      and makes its own
 */

#ifndef NS
#define NS 2
#endif
#define DEAD 9
#define PA 1
#define PB 2
#define MAXI 5

byte atName = 1;	/* the inode at the lock's name (0: none) */
byte nlink[MAXI];	/* each inode's link count */
byte content[MAXI];	/* the holder each inode's record names */
byte nextIno = 2;	/* the next inode a create makes */
bool inA, inB;	/* holding the lock */

/* create makes a new file at the free name, naming who: O_CREAT|O_EXCL. */
inline create(who, in) {
	atomic {
		atName == 0 ->
		atName = nextIno;
		nlink[nextIno] = 1;
		content[nextIno] = who;
		nextIno++;
		in = true
	}
}

proctype waiterB() {
	skip;
end_wait:
	create(PB, inB);
	assert(!(inA && inB))
}

#ifdef BREAKER
/* gpg's dotlock_take_unix: a stale lock (its pid gone) is unlinked by
 * name, then a new one linked into place. */
proctype breakerA() {
	byte seen;
end_look:
	atomic { atName != 0; seen = atName }
	if
	:: content[seen] == DEAD ->
		atomic { if :: atName != 0 -> nlink[atName]--; atName = 0 :: else -> skip fi };
end_take:
		create(PA, inA)
	:: else -> skip
	fi;
	assert(!(inA && inB))
}
#endif

proctype sweeper() {
	byte mine = 0;	/* the inode our claim name holds (0: none) */
	/* 0. read again */
	if
	:: atomic { atName == 1 && content[1] == DEAD } -> skip
	:: else -> goto done
	fi;
	/* 1. link the name to our claim name */
	atomic {
		if
		:: atName != 0 -> mine = atName; nlink[mine]++
		:: else -> goto done
		fi
	}
	/* 2. our claim is the inode judged, with two names */
#ifndef MUT_NOIDENT
	if :: mine != 1 -> goto drop :: else -> skip fi;
#endif
#ifndef MUT_NOCOUNT
	if :: nlink[mine] != 2 -> goto drop :: else -> skip fi;
#endif
	/* 3. the name still holds it */
#ifndef MUT_NOIDENT
	if :: atName != mine -> goto drop :: else -> skip fi;
#endif
	/* 4. unlink the name: whatever it holds now */
	atomic {
		if
		:: atName != 0 ->
			assert(content[atName] == DEAD);	/* P2 */
			nlink[atName]--;
			atName = 0
		:: else -> goto drop
		fi
	}
	/* 5. ours is the only name left, else back, never replacing */
#ifndef MUT_NOCOUNT
	if
	:: nlink[mine] != 1 ->
		atomic { if :: atName == 0 -> atName = mine; nlink[mine]++ :: else -> skip fi }
		goto drop
	:: else -> skip
	fi;
#endif
	/* 6. verified, judged again (the holder is dead): remove the claim */
drop:
	atomic { if :: mine != 0 -> nlink[mine]--; mine = 0 :: else -> skip fi }
done:
	skip
}

init {
	nlink[1] = 1;
	content[1] = DEAD;
	atomic {
		byte i = 0;
		do
		:: i < NS -> run sweeper(); i++
		:: else -> break
		od;
		run waiterB();
#ifdef BREAKER
		run breakerA();
#endif
	}
}
