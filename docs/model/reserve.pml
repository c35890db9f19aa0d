/* A model of lockctl's reservations (issue 20; docs/record-format.md,
 * "Reservations"): a lock reserved for a worker not started yet, adopted by
 * that worker, broken once its grace has passed, and taken by acquirers,
 * with the adopter crashing at any step and --fix clearing what it leaves.
 * docs/model/check.sh checks it with spin; docs/model.md says how to read it.
 *
 * What it abstracts: the reservation's grace is one event, "expired", that
 * the clock may fire at any moment and never undoes. Acquirers are reduced
 * to their publish (a rename that never replaces) and their break of a
 * gone lock (claim, check, rmdir). The worker is a process that lives on
 * after adopting.
 *
 * Properties:
 *   P1  no two processes believe they hold the lock while alive;
 *   P6  the worker believes it holds the lock only while its record is in
 *       the lock directory that stands at <lock>;
 *   P7  (-DWEDGE) once everything has run and --fix has passed, no empty
 *       lock directory is left with no claim beside it (an owner-less lock,
 *       which nothing breaks).
 *
 * Mutants (each must be caught):
 *   MUT_ADOPT_PATH   the adopter moves its record in by path, replacing,
 *                    with no claim: a lock broken and taken meanwhile is
 *                    taken from its new holder;
 *   MUT_ADOPT_EMPTY  the adopter removes the reservation before its record
 *                    is in, leaving the directory empty and unclaimed: a
 *                    crash there wedges the lock (P7).
 */

#ifndef NA
#define NA 2                /* acquirers: 1 or 2 */
#endif
#ifndef MAXC
#define MAXC 1              /* crashes of the worker */
#endif

/* records: R the reservation, W the worker's, A1..NA the acquirers' */
#define R 1
#define W 2
#define A(i) (2 + (i))
#define NREC (3 + NA)
/* directories: 1 the reservation's lock directory, 1+i acquirer i's */
#define NDIR (2 + NA)

bool expired;               /* the grace has passed: R reads gone */
bool walive = 1;            /* the worker (and its adopter) */
bool wincs;                 /* the worker believes it holds the lock */
bool aincs[3];              /* acquirer i (1, 2) believes it holds the lock */
byte lk = 1;                /* the directory at <lock>; 0 none */
bool dgone[NDIR];           /* the directory was removed */
byte slot[NDIR];            /* the record in d/holder; 0 none */
byte claimA;                /* the adopter's claim <lock>.rel.<T>.<adopter>: the record in it */
byte crashes;
byte nfinished;                  /* processes finished */

#define P1 assert(!(wincs && walive && (aincs[1] || aincs[2])) && !(aincs[1] && aincs[2]))
#define P6 assert(!wincs || !walive || (lk != 0 && slot[lk] == W))

init {
	slot[1] = R;
	atomic {
		run Clock();
		run Adopter();
		run Acquirer(1);
#if NA > 1
		run Acquirer(2);
#endif
	}
#ifdef WEDGE
	(nfinished == NA + 1);
	/* --fix, after everything: an adopter's claim whose maker is gone */
	if
	:: claimA != 0 && !walive && !expired && lk != 0 && !dgone[lk] && slot[lk] == 0 ->
		slot[lk] = claimA; claimA = 0        /* put back: R within its grace */
	:: claimA != 0 && !walive && expired && lk != 0 && slot[lk] == 0 ->
		dgone[lk] = 1; lk = 0; claimA = 0    /* finish the break */
	:: claimA != 0 && lk != 0 && slot[lk] != 0 && slot[lk] != claimA ->
		claimA = 0                           /* spent: the lock holds another record */
	:: else -> skip
	fi;
	/* P7: an empty lock directory is left only with a claim beside it */
	assert(lk == 0 || slot[lk] != 0 || claimA != 0)
#endif
}

proctype Clock() {
	expired = 1
}

/* lockctl adopt --token T, run by the worker */
proctype Adopter() {
	byte fd;
	/* look: the reservation, live, at <lock>; open that directory */
	atomic {
		if
		:: lk != 0 && slot[lk] == R && !expired -> fd = lk
		:: else -> goto out
		fi
	};
#ifdef MUT_ADOPT_PATH
	/* the worker's record moved in by path, replacing whatever is there */
	atomic {
		if
		:: crashes < MAXC -> crashes++; walive = 0; goto out
		:: lk != 0 -> slot[lk] = W; wincs = 1; P1; P6
		:: else -> skip
		fi
	};
	goto out;
#endif
	/* claim: <lock>/holder -> <lock>.rel.T.<adopter>, through fd, no replace */
	atomic {
		if
		:: crashes < MAXC -> crashes++; walive = 0; goto out
		:: !dgone[fd] && slot[fd] == R -> slot[fd] = 0; claimA = R
		:: else -> goto out              /* claimed first: released or broken */
		fi
	};
#ifdef MUT_ADOPT_EMPTY
	/* the reservation removed before the worker's record is in */
	atomic { claimA = 0 };
#endif
	/* the claimed record is R (inode, bytes); its deadline, looked at now
	 * that nothing else can claim it */
	atomic {
		if
		:: crashes < MAXC -> crashes++; walive = 0; goto out
		:: expired ->                    /* too late: put it back, no replace */
			if
			:: !dgone[fd] && slot[fd] == 0 && claimA == R -> slot[fd] = R; claimA = 0
			:: else -> skip
			fi;
			goto out
		:: !expired -> skip
		fi
	};
	/* move the worker's record in, through fd, no replace */
	atomic {
		if
		:: crashes < MAXC -> crashes++; walive = 0; goto out
		:: !dgone[fd] && slot[fd] == 0 -> slot[fd] = W; wincs = 1; P1; P6
		:: else ->
			if
			:: !dgone[fd] && slot[fd] == 0 && claimA == R -> slot[fd] = R; claimA = 0
			:: else -> skip
			fi;
			goto out
		fi
	};
	/* remove the claim */
	atomic {
		if
		:: crashes < MAXC -> crashes++; walive = 0
		:: else -> claimA = 0
		fi
	};
out:
	atomic { P6; nfinished++ }
}

/* an acquirer of the lock: publish, or break a gone lock and publish */
proctype Acquirer(byte me) {
	byte d, rec;
	do
	:: atomic {                                  /* publish: rename, no replace */
		if
		:: lk == 0 -> lk = 1 + me; slot[lk] = A(me); aincs[me] = 1; P1; break
		:: else -> skip
		fi
	}
	:: atomic {                                  /* judge it: gone? */
		d = lk; rec = slot[d];
		if
		:: d != 0 && (rec == R && expired || rec == W && !walive) -> skip
		:: else -> d = 0
		fi
	};
		if
		:: d != 0 ->
			atomic {                             /* claim by name, verify the bytes */
				if
				:: lk == d && slot[d] == rec -> slot[d] = 0
				:: else -> d = 0
				fi
			};
			if
			:: d != 0 ->
				atomic {                         /* judge again, then rmdir <lock> by name */
					if
					:: lk == d && slot[d] == 0 -> dgone[d] = 1; lk = 0
					:: else ->                   /* not empty, or another: put it back, no replace */
						if :: !dgone[d] && slot[d] == 0 -> slot[d] = rec :: else fi
					fi
				}
			:: else -> skip
			fi
		:: else -> skip
		fi
	:: atomic { lk != 0 && !(slot[lk] == R && expired) && !(slot[lk] == W && !walive) } -> break   /* gives up */
	od;
	atomic { P1; nfinished++ }
}
