/*
 * lockctl.pml -- a Promela model of lockctl's lock protocol:
 *
 *   acquire   lock.Acquire: build <lock>.new.<token>/holder, publish it with
 *             renameat2(RENAME_NOREPLACE); if the lock is there, judge it
 *             and break it with the --fix protocol only when it is gone
 *   release   Lock.Release: check the directory, look at the record, claim
 *             it to <lock>.rel.<token>, verify, lstat <lock> (still ours?),
 *             rmdir <lock>, remove claim
 *   --fix     fix.Fixer: sweep a gone lock (claim -> verify -> judge again
 *             -> rmdir -> remove the claim; roll back never replacing),
 *             finish or restore an abandoned claim, or finish several
 *             whose makers and holders are all gone
 *
 * judged by the rules of verdict.Judge (gone only when the holder is dead;
 * a claim older than the lock directory does not belong to it), with
 * crashes at any step. docs/model.md explains it; docs/model/check.sh runs
 * every configuration.
 *
 * A process crashes by stopping forever before one of its steps that
 * touches the shared world (alive[] turns false: the kernel then answers
 * "gone" for it). Every such step is written
 *       if :: <the step> :: CRASH fi
 * A crash between two steps that touch only the process's own variables is
 * the same as a crash before the next shared step, so nothing is lost; and
 * written this way spin's partial-order reduction still applies.
 *
 * Knobs (spin -DNAME or -DNAME=VALUE):
 *   NA      acquirers, pids 1..NA (each takes the lock once, then releases)
 *   NS      --fix sweepers, pids NA+1..NA+NS (any number of passes)
 *   MAXC    how many processes may crash (stop forever) at any step
 *   BIND    1 (default): the Go code's directory-descriptor binding: the
 *           sweeper and the releaser open the lock directory, check it is
 *           the one judged / published (inode + birth time), and claim from
 *           and put back into that directory.
 *           0: the record is addressed by its path, <lock>/holder, as
 *           docs/fix-protocol.md states the protocol for every format.
 *   STRICT  also assert P4 (below).
 *   RELEASE_OWN  also assert that a release removes only its own directory
 *           (its rmdir of <lock> is by path).
 *   WEDGE   also check P5 (below), when every process has finished.
 *   NO_P3   do not assert P3 (to see what an empty lock leads to).
 * Mutants, each reverting one safety mechanism:
 *   MUT_NOCLAIM      the sweeper deletes the record in place, no claim
 *   MUT_NOVERIFY     the sweeper never checks that what it claimed and what
 *                    it removes are what it judged (no directory identity
 *                    check, no inode/bytes check)
 *   MUT_NOVERIFY_REC only the inode/bytes check after the claim is skipped
 *   MUT_REPLACE      put-backs (rollback, release's back-out, restore) use a
 *                    plain, replacing rename
 *   MUT_MKDIR        acquire makes <lock>, then writes the record into it
 * and the three that restore the code before commit cb9edec (the model's
 * findings, docs/model.md):
 *   MUT_SCAN_SIDES_FIRST  scan settles the side files with the listing made
 *                    before the lock directory was read (no second listing)
 *   MUT_MULTI_BY_HAND     several claims beside an empty lock are left to a
 *                    person, even when every maker and holder is gone
 *   MUT_RELEASE_UNCHECKED release's rmdir of <lock> (by name) without the
 *                    lstat that checks it is still its own directory
 *
 * Properties:
 *   P1  mutual exclusion: at most one live process believes it holds the
 *       lock (checked whenever one starts to).
 *   P2  a live holder's record is never removed (deleted, or replaced by a
 *       rename) by anyone but itself, and no one else removes its lock
 *       directory while it holds the lock.
 *   P3  no lock directory ever appears at <lock> without its record.
 *   P4  (STRICT) no one but the owner removes a live process's lock
 *       directory, even while that process is releasing it.
 *   P5  (WEDGE) when all have finished (and exited: every process is then
 *       gone), one more --fix pass, that does not crash, leaves <lock>
 *       absent: no lock is left that neither an acquirer nor --fix would
 *       ever take or remove.
 */

#ifndef NA
#define NA 2
#endif
#ifndef NS
#define NS 1
#endif
#ifndef MAXC
#define MAXC 1
#endif
#ifndef BIND
#define BIND 1
#endif

#if NA+NS > 6
#error "claim names keep pids in 3 bits: NA+NS (and P5's last --fix) must be at most 7"
#endif

#define FINAL (NA+NS+1)     /* P5's last --fix pass */
#define NP (NA+NS+2)        /* pids 1..NA+NS, FINAL; 0 is "nobody" */
#define NR (NA+1)           /* record and directory ids 1..NA; 0 is "none" */

/* ---------------------------------------------------------------- world */

bool alive[NP];             /* the kernel's answer; a crash is forever */
bool incs[NP];              /* believes it holds the lock */
byte crashes;
#ifdef WEDGE
byte running;               /* processes not yet finished or crashed */
byte i_w;
#endif

/* Directory d is acquirer d's: made as <lock>.new.<token d> and published
 * at <lock> (for MUT_MKDIR: made at <lock>). Its identity (inode + birth
 * time) is d, its birth time dtime[d]. */
#define D_NONE  0
#define D_BUILD 1
#define D_LOCK  2
#define D_GONE  3
byte dloc[NR];
byte dslot[NR];             /* the record in d/holder, 0 if none */
byte lk;                    /* the directory at <lock>, 0 if none */

/* Record r is acquirer r's, token Tr; rtime[r] is when it was written (its
 * mtime, which renames keep). cname[r] names the claim file holding it
 * (0: it is in a directory, or deleted). dtime and rtime come from one
 * clock; a directory is made before the record written into it. */
byte rtime[NR];
byte dtime[NR];
byte clk;
byte cname[NR];

/* Claim file names (unique, as their tokens and pids make them):
 *   <lock>.rel.<token>             K_REL   tok = the holder = its maker
 *   <lock>.dead.<token>.<pid>      K_DEAD  tok judged, maker pid (sweep)
 *   <lock>.dead.<pid>.<random>     K_FIN   maker pid (finish)          */
#define K_REL  1
#define K_DEAD 2
#define K_FIN  3
#define NAME(k,t,m)  ((k)*64 + (t)*8 + (m))
#define NKIND(n)     ((n)/64)
#define NTOK(n)      (((n)/8)%8)
#define MAKER(n)     (NKIND(n) == K_REL -> NTOK(n) : ((n)%8))

/* for the counterexample trails: a claim prints as <lock>.KIND.Ttok.pmaker
 * ("fin" for <lock>.dead.<pid>.<random>), with "%e.T%d.p%d", NM(n) */
mtype = { fin, dead, rel };            /* fin = 3, dead = 2, rel = 1 */
#define NM(n)        NKIND(n), NTOK(n), MAKER(n)

/* ------------------------------------------------------------ properties */

#define P1(me) \
	for (i : 1 .. NA+NS) { assert(i == me || !(incs[i] && alive[i])) }; i = 0

#define P2_REC(r, me)  assert((r) == (me) || !alive[r])
#ifdef STRICT
#define P2_DIR(d, me)  assert((d) == (me) || !alive[d])            /* P4 */
#else
#define P2_DIR(d, me)  assert((d) == (me) || !(alive[d] && incs[d]))
#endif

#ifdef NO_P3
#define P3(d)          skip
#else
#define P3(d)          assert(dslot[d] != 0)
#endif

/* ------------------------------------------------------------- helpers */

/* the crash option of a step of process me */
#define CRASH \
	d_step { crashes < MAXC -> \
		crashes++; alive[me] = 0; printf("  p%d: CRASHES\n", me) }; \
	goto crashed

/* the record under claim name n, into x (0: no such file) */
#define LOOKUP(n, x) \
	x = 0; for (k : 1 .. NA) { if :: cname[k] == (n) -> x = k :: else fi }; k = 0

/* a directory that still exists (a removed one takes no new entries) */
#define EXISTS(d)      ((d) != 0 && (dloc[d] == D_BUILD || dloc[d] == D_LOCK))

/* Where a record addressed "in the lock directory" is: with BIND the
 * directory opened and checked (lfd); without, whatever stands at <lock>. */
#if BIND
#define PLACE lfd
#else
#define PLACE lk
#endif

/* rmdir <lock> (by path, as the Go code does), into ok */
#define RMDIR \
	if \
	:: lk != 0 && dslot[lk] == 0 -> \
		printf("  p%d: rmdir <lock> (directory D%d)\n", me, lk); \
		P2_DIR(lk, me); dloc[lk] = D_GONE; lk = 0; ok = 1 \
	:: else -> ok = 0 \
	fi

/* remove our claim file, which holds record cr */
#define UNCLAIM \
	printf("  p%d: removes its claim <lock>.%e.T%d.p%d (record T%d)\n", me, NM(cname[cr]), cr); \
	P2_REC(cr, me); cname[cr] = 0; cr = 0

/* Put record cr, now in a claim file, back into directory tgt's holder,
 * never replacing (renameat2 RENAME_NOREPLACE). Failing, the claim is kept
 * (a conflict), never deleted. */
#ifdef MUT_REPLACE
#define PUT_OCCUPIED(tgt) \
	printf("  p%d: puts T%d back into D%d, REPLACING T%d\n", me, cr, tgt, dslot[tgt]); \
	P2_REC(dslot[tgt], me); \
	dslot[tgt] = cr; cname[cr] = 0
#else
#define PUT_OCCUPIED(tgt) \
	printf("  p%d: cannot put T%d back: T%d stands in D%d (conflict, claim kept)\n", me, cr, dslot[tgt], tgt)
#endif
#define PUTBACK(tgt) \
	if \
	:: !EXISTS(tgt) -> \
		printf("  p%d: cannot put T%d back (its directory is gone): it stays in <lock>.%e.T%d.p%d\n", me, cr, NM(cname[cr])) \
	:: EXISTS(tgt) && dslot[tgt] == 0 -> \
		printf("  p%d: puts T%d back into D%d\n", me, cr, tgt); \
		dslot[tgt] = cr; cname[cr] = 0 \
	:: EXISTS(tgt) && dslot[tgt] != 0 -> \
		PUT_OCCUPIED(tgt) \
	fi

/* -------------------------------------------------------------- judging */

#define A_NONE     0
#define A_SWEEP    1   /* gone: claim -> verify -> judge -> rmdir -> rm   */
#define A_FINISH   2   /* abandoned claim of a gone holder: finish it     */
#define A_RESTORE  3   /* abandoned break of a live holder: put it back   */
#define A_FINBUILD 4   /* unpublished build of a gone acquirer, no lock   */
#define A_MANY     5   /* several side files, every maker and holder gone:
                        * finish them all (verdict.claimedMany)           */

/*
 * scan(): scan.ReadOne in the Go order -- list the registry (side files,
 * and whether <lock> is there: if not, only side files are judged); lstat
 * <lock>, open it and read its holder; a directory with nothing inside has
 * its side files listed again (walk.go readDir -> sidesOf); read each side
 * file listed -- then verdict.Judge, asking the kernel (alive[]) then.
 * Leaves act, jd (the directory judged), jr (the record), jn (the claim);
 * for A_MANY the side files to finish: ls[i] (a claim file's name) and
 * sc[i] (the record read in it), lb[i] (the build <lock>.new.Ti) and sb[i]
 * (the record read in it).
 */
#define LIST_SIDES \
	for (i : 1 .. NA) { \
		ls[i] = cname[i]; lb[i] = (dloc[i] == D_BUILD); \
		if \
		:: ls[i] != 0 -> printf("  p%d: scan lists side file <lock>.%e.T%d.p%d\n", me, NM(ls[i])) \
		:: else -> skip \
		fi \
	}; \
	i = 0

/* lstat <lock>, open it, read holder. (One step: a directory replaced
 * between the lstat and the open only pairs a record with a directory that
 * can never come back, and every action checks the directory first.) A
 * lock the listing did not show is not read: the side files are judged
 * alone (walk.go named -> orphan). */
#define READ_LOCK \
	if :: lf -> jd = lk :: else -> jd = 0 fi; lf = 0; \
	if :: jd != 0 -> hr = dslot[jd] :: else -> hr = 0 fi; \
	printf("  p%d: scan reads <lock>: directory D%d, holder T%d (0: none)\n", me, jd, hr)

inline scan() {
	if :: d_step { printf("  p%d: scan begins\n", me); LIST_SIDES; lf = (lk != 0) } :: CRASH fi;
	if :: d_step { READ_LOCK } :: CRASH fi;
#ifndef MUT_SCAN_SIDES_FIRST
	/* nothing inside: list the side files again, now */
	if
	:: jd != 0 && hr == 0 ->
		if :: d_step { printf("  p%d: scan lists the side files again\n", me); LIST_SIDES } :: CRASH fi
	:: else -> skip
	fi;
#endif
	/* Read the side files listed, and judge. (A crash changes no file, only
	 * the kernel's answers, so judging in the same step as the last read
	 * loses nothing.) */
	if :: d_step {
		for (i : 1 .. NA) {
			if
			:: ls[i] != 0 -> LOOKUP(ls[i], x); sc[i] = x
			:: else -> sc[i] = 0
			fi;
			if
			:: lb[i] && dloc[i] == D_BUILD -> sb[i] = dslot[i]
			:: else -> sb[i] = 0
			fi
		}
		act = A_NONE; jr = 0; jn = 0; x = 0; cnt = 0;
		if
		:: jd != 0 && hr != 0 ->
			/* a holder record: gone only if its holder is dead */
			if
			:: !alive[hr] -> act = A_SWEEP; jr = hr
			:: else -> skip
			fi
		:: jd != 0 && hr == 0 ->
			/* noRecord: the break and release claims that belong to this
			 * directory (their record is not older than its birth) */
			for (i : 1 .. NA) {
				if
				:: sc[i] != 0 && rtime[sc[i]] >= dtime[jd] -> cnt++; x = i
				:: else -> ls[i] = 0; sc[i] = 0   /* not one of them */
				fi;
				lb[i] = 0; sb[i] = 0              /* builds do not count */
			}
			if
			:: cnt == 1 && !alive[MAKER(ls[x])] ->
				if
				:: !alive[sc[x]] -> act = A_FINISH; jn = ls[x]; jr = sc[x]
				:: alive[sc[x]] && NKIND(ls[x]) != K_REL ->
					act = A_RESTORE; jn = ls[x]; jr = sc[x]
				:: else -> skip
				fi
			:: cnt > 1 ->
				/* claimedMany: finished only if every maker and every
				 * holder claimed is gone; else by hand */
#ifndef MUT_MULTI_BY_HAND
				act = A_MANY;
				for (i : 1 .. NA) {
					if
					:: sc[i] != 0 && (alive[MAKER(ls[i])] || alive[sc[i]]) -> act = A_NONE
					:: else -> skip
					fi
				}
#else
				skip
#endif
			:: else -> skip   /* none: owner-less; or the claim's maker
			                   * runs: under way */
			fi
		:: jd == 0 ->
			/* only side files remain: every side file listed counts */
			for (i : 1 .. NA) {
				if :: ls[i] != 0 -> cnt++; x = i :: else fi;
				if :: lb[i] -> cnt++; hr = i :: else fi
			}
			if
			:: cnt == 1 && x != 0 && sc[x] != 0 && !alive[MAKER(ls[x])] && !alive[sc[x]] ->
				act = A_FINISH; jn = ls[x]; jr = sc[x]
			:: cnt == 1 && hr != 0 && sb[hr] != 0 && !alive[hr] && !alive[sb[hr]] ->
				act = A_FINBUILD; jr = sb[hr]; jn = hr
			:: cnt > 1 ->
#ifndef MUT_MULTI_BY_HAND
				act = A_MANY;
				for (i : 1 .. NA) {
					if
					:: ls[i] != 0 && (sc[i] == 0 || alive[MAKER(ls[i])] || alive[sc[i]]) -> act = A_NONE
					:: else -> skip
					fi;
					if
					:: lb[i] && (sb[i] == 0 || alive[i] || alive[sb[i]]) -> act = A_NONE
					:: else -> skip
					fi
				}
#else
				skip
#endif
			:: else -> skip
			fi
		fi;
		if
		:: act == A_SWEEP ->
			printf("  p%d: judged <lock> (directory D%d) gone: record T%d, holder p%d dead\n", me, jd, jr, jr)
		:: act == A_FINISH ->
			printf("  p%d: judged D%d: abandoned claim <lock>.%e.T%d.p%d holds gone record T%d: finish it\n", me, jd, NM(jn), jr)
		:: act == A_RESTORE ->
			printf("  p%d: judged D%d: abandoned break <lock>.%e.T%d.p%d holds live record T%d: put it back\n", me, jd, NM(jn), jr)
		:: act == A_FINBUILD ->
			printf("  p%d: judged: unpublished <lock>.new.T%d of a gone acquirer\n", me, jn)
		:: act == A_MANY ->
			printf("  p%d: judged D%d: %d side files, every maker and holder gone: finish them all\n", me, jd, cnt)
		:: else -> skip
		fi;
		if
		:: act != A_MANY -> for (i : 1 .. NA) { ls[i] = 0; lb[i] = 0; sc[i] = 0; sb[i] = 0 }
		:: else -> skip
		fi;
		i = 0; hr = 0; x = 0; cnt = 0;
		if :: act == A_NONE -> jd = 0 :: else fi
	} :: CRASH fi
}

/* ---------------------------------------------------------------- sweep */

/* fix.Fixer.sweep: directory jd with record jr was judged gone. */
inline sweep() {
#if BIND
	/* lstat <lock>, open it, fstat the descriptor: the directory judged?
	 * (A removed directory never comes back, so the lstat and the fstat
	 * answer alike: one step here.) */
	if :: lfd = lk :: CRASH fi;
#ifndef MUT_NOVERIFY
	if :: lfd != jd -> goto sw_done :: else fi;
#endif
#else
#ifndef MUT_NOVERIFY
	if :: lk != jd -> goto sw_done :: lk == jd :: CRASH fi;   /* lstat */
#endif
#endif
#ifdef MUT_NOCLAIM
	/* read the record in place, check it is the one judged, delete it */
	if :: d_step { if :: EXISTS(PLACE) -> cr = dslot[PLACE] :: else -> cr = 0 fi } :: CRASH fi;
	if :: cr != jr -> goto sw_done :: else fi;
	if :: d_step {
		if
		:: EXISTS(PLACE) && dslot[PLACE] != 0 ->
			printf("  p%d: deletes the holder record in D%d: T%d\n", me, PLACE, dslot[PLACE]);
			P2_REC(dslot[PLACE], me); dslot[PLACE] = 0
		:: else -> skip
		fi
	} :: CRASH fi;
	if :: lk != jd -> goto sw_done :: lk == jd :: CRASH fi;
	if :: d_step { RMDIR } :: CRASH fi;
	goto sw_done;
#endif
	/* 1. claim: rename holder -> <lock>.dead.<judged token>.<me> */
	if :: d_step {
		if
		:: EXISTS(PLACE) && dloc[PLACE] == D_LOCK && dslot[PLACE] != 0 ->
			cr = dslot[PLACE]; dslot[PLACE] = 0;
			x = NAME(K_DEAD, jr, me);
			LOOKUP(x, ok); assert(ok == 0);          /* names are unique */
			cname[cr] = x; ok = 1;
			printf("  p%d: claims D%d's holder (record T%d) as <lock>.%e.T%d.p%d\n", me, PLACE, cr, NM(x));
			/* 3. (the second judgement, below, read here) */
			if :: alive[jr] -> ok = 2 :: else fi
		:: else -> ok = 0                            /* ENOENT: skipped */
		fi;
		x = 0
	} :: CRASH fi;
	if :: !ok -> goto sw_done :: else fi;
	/* 2. verify: the claimed record is the one judged (inode + bytes) */
#if !defined(MUT_NOVERIFY) && !defined(MUT_NOVERIFY_REC)
	if :: cr != jr -> goto sw_back :: else fi;
#endif
	/* 3. judge again: the judged holder must still be gone. The model's
	 * fence is perfect (the dead stay dead), so this never fails here. */
	if :: ok == 2 -> goto sw_back :: else fi;
	/* 4. remove: <lock> must still be the directory judged, and empty */
#ifndef MUT_NOVERIFY
	if :: lk != jd -> goto sw_back :: lk == jd :: CRASH fi;   /* lstat */
#endif
	if :: d_step { RMDIR } :: CRASH fi;
	if :: !ok -> goto sw_back :: else fi;
	if :: d_step { UNCLAIM } :: CRASH fi;
	goto sw_done;
sw_back:
	if :: d_step { PUTBACK(PLACE) } :: CRASH fi;
sw_done:
	cr = 0; lfd = 0; ok = 0
}

/* --------------------------------------------------------------- finish */

/* fix.Fixer.finish: the claim jn holds gone record jr, and its maker is
 * gone. Claim it ourselves, verify, judge again, rmdir <lock> if it is
 * still the directory judged (jd; 0 for side files alone), remove ours. */
inline finish() {
	if :: d_step {
		LOOKUP(jn, cr);
		if
		:: cr != 0 ->
			x = NAME(K_FIN, jr, me); LOOKUP(x, ok); assert(ok == 0);
			cname[cr] = x; ok = 1;
			printf("  p%d: claims <lock>.%e.T%d.p%d (record T%d) as <lock>.%e.T%d.p%d\n", me, NM(jn), cr, NM(x));
			if :: alive[MAKER(jn)] || alive[jr] -> ok = 2 :: else fi  /* judge again */
		:: else -> ok = 0
		fi;
		x = 0
	} :: CRASH fi;
	if :: !ok -> goto fi_done :: else fi;
#ifndef MUT_NOVERIFY
	if :: cr != jr -> goto fi_back :: else fi;
#endif
	if :: ok == 2 -> goto fi_back :: else fi;
	if
	:: jd != 0 ->
		if :: d_step {                       /* lstat <lock> */
			if
			:: lk == 0 -> ok = 2                      /* already gone */
			:: lk != 0 && lk != jd -> ok = 0
			:: else -> ok = 1
			fi
		} :: CRASH fi;
		if
		:: ok == 0 -> goto fi_back
		:: ok == 1 ->
			if :: d_step { RMDIR } :: CRASH fi;
			if :: !ok -> goto fi_back :: else fi
		:: ok == 2 -> skip
		fi
	:: else -> skip
	fi;
	if :: d_step { UNCLAIM } :: CRASH fi;
	goto fi_done;
fi_back:
	if :: d_step {          /* back to the claim's own name, no replace */
		LOOKUP(jn, x);
		if :: x == 0 -> cname[cr] = jn :: else fi;
		x = 0
	} :: CRASH fi;
fi_done:
	cr = 0; ok = 0
}

/* finish, for <lock>.new.<token jn>/holder of a gone acquirer, with no
 * lock: claim the record, verify, remove it, rmdir the build directory */
inline finbuild() {
	if :: d_step {
		if
		:: dloc[jn] == D_BUILD && dslot[jn] != 0 ->
			cr = dslot[jn]; dslot[jn] = 0; cname[cr] = NAME(K_FIN, jr, me); ok = 1
		:: else -> ok = 0
		fi
	} :: CRASH fi;
	if :: !ok -> goto fb_done :: else fi;
	if
	:: cr != jr ->
		if :: d_step {
			if
			:: dloc[jn] == D_BUILD && dslot[jn] == 0 -> dslot[jn] = cr; cname[cr] = 0
			:: else -> skip
			fi
		} :: CRASH fi;
		goto fb_done
	:: else -> skip
	fi;
	if :: d_step { UNCLAIM } :: CRASH fi;
	if :: d_step { if :: dloc[jn] == D_BUILD && dslot[jn] == 0 -> dloc[jn] = D_GONE :: else fi } :: CRASH fi;
fb_done:
	cr = 0; ok = 0
}

/* fix.Fixer.finish with several side files (verdict.claimedMany: every
 * maker and every holder claimed is gone). Claim each as our own
 * <lock>.dead.<me>.<random> and verify it (a wrong one goes straight back,
 * and so does every one claimed before it); judge the set again; rmdir
 * <lock> if it is still the directory judged (jd; 0 for side files alone);
 * remove our claims and the build directories they emptied. */
#define HC jn   /* the claim files held: bit i for slot i */
#define HB jr   /* the builds emptied and held: bit i for <lock>.new.Ti */
inline finishmany() {
	HC = 0; HB = 0;
	/* 1. claim, 2. verify: the claim files, then the builds */
	for (i : 1 .. NA) {
		if
		:: ls[i] != 0 ->
			if :: d_step {
				LOOKUP(ls[i], cr);
				if
				:: cr != 0 ->
					x = NAME(K_FIN, sc[i], me); LOOKUP(x, ok); assert(ok == 0);
					cname[cr] = x; ok = 1;
					printf("  p%d: claims <lock>.%e.T%d.p%d (record T%d) as <lock>.%e.T%d.p%d\n", me, NM(ls[i]), cr, NM(x))
				:: else -> ok = 0
				fi;
				x = 0
			} :: CRASH fi;
			if :: !ok -> goto fm_back :: else fi;
#ifndef MUT_NOVERIFY
			if
			:: cr != sc[i] ->
				if :: d_step {              /* bind's own rollback */
					LOOKUP(ls[i], x);
					if :: x == 0 -> cname[cr] = ls[i] :: else fi;
					x = 0
				} :: CRASH fi;
				goto fm_back
			:: else -> skip
			fi;
#endif
			HC = HC | (1 << i); cr = 0
		:: else -> skip
		fi
	}
	for (i : 1 .. NA) {
		if
		:: lb[i] ->
			if :: d_step {
				if
				:: dloc[i] == D_BUILD && dslot[i] != 0 ->
					cr = dslot[i]; dslot[i] = 0;
					x = NAME(K_FIN, sb[i], me); LOOKUP(x, ok); assert(ok == 0);
					cname[cr] = x; ok = 1;
					printf("  p%d: claims <lock>.new.T%d/holder (record T%d) as <lock>.%e.T%d.p%d\n", me, i, cr, NM(x))
				:: else -> ok = 0
				fi;
				x = 0
			} :: CRASH fi;
			if :: !ok -> goto fm_back :: else fi;
#ifndef MUT_NOVERIFY
			if
			:: cr != sb[i] ->
				if :: d_step {
					if :: dloc[i] == D_BUILD && dslot[i] == 0 -> dslot[i] = cr; cname[cr] = 0 :: else fi
				} :: CRASH fi;
				goto fm_back
			:: else -> skip
			fi;
#endif
			HB = HB | (1 << i); cr = 0
		:: else -> skip
		fi
	}
	/* 3. judge again: every maker and holder claimed is still gone (the
	 * model's fence is perfect: the dead stay dead, so this holds here) */
	/* 4. rmdir <lock> if it is still the directory judged */
	if
	:: jd != 0 ->
		if :: d_step {                       /* lstat <lock> */
			if
			:: lk == 0 -> ok = 2                      /* already gone */
			:: lk != 0 && lk != jd -> ok = 0
			:: else -> ok = 1
			fi
		} :: CRASH fi;
		if
		:: ok == 0 -> goto fm_back
		:: ok == 1 ->
			if :: d_step { RMDIR } :: CRASH fi;
			if :: !ok -> goto fm_back :: else fi
		:: ok == 2 -> skip
		fi
	:: else -> skip
	fi;
	/* then our claims, and the build directories emptied */
	for (i : 1 .. NA) {
		if
		:: HC & (1 << i) -> if :: d_step { cr = sc[i]; UNCLAIM } :: CRASH fi
		:: else -> skip
		fi;
		if
		:: HB & (1 << i) ->
			if :: d_step { cr = sb[i]; UNCLAIM } :: CRASH fi;
			if :: d_step { if :: dloc[i] == D_BUILD && dslot[i] == 0 -> dloc[i] = D_GONE :: else fi } :: CRASH fi
		:: else -> skip
		fi
	}
	goto fm_done;
fm_back:
	/* put back, newest first, every side file claimed so far, never
	 * replacing: a claim file to its own name, a build's record into its
	 * directory; failing, our claim is kept (a conflict) */
	i = NA;
	do
	:: i == 0 -> break
	:: i > 0 ->
		if
		:: HB & (1 << i) ->
			if :: d_step {
				cr = sb[i];
				if
				:: dloc[i] == D_BUILD && dslot[i] == 0 -> dslot[i] = cr; cname[cr] = 0
				:: else -> printf("  p%d: cannot put T%d back: it stays in <lock>.%e.T%d.p%d\n", me, cr, NM(cname[cr]))
				fi
			} :: CRASH fi
		:: else -> skip
		fi;
		if
		:: HC & (1 << i) ->
			if :: d_step {
				cr = sc[i]; LOOKUP(ls[i], x);
				if
				:: x == 0 -> cname[cr] = ls[i]
				:: else -> printf("  p%d: cannot put T%d back: it stays in <lock>.%e.T%d.p%d\n", me, cr, NM(cname[cr]))
				fi;
				x = 0
			} :: CRASH fi
		:: else -> skip
		fi;
		i--
	od;
fm_done:
	for (i : 1 .. NA) { ls[i] = 0; lb[i] = 0; sc[i] = 0; sb[i] = 0 }
	i = 0; HC = 0; HB = 0; cr = 0; ok = 0
}

/* fix.Fixer.restore: the abandoned break claim jn holds the record jr of a
 * live holder: put it back into the directory judged (jd). */
inline restore() {
#if BIND
	if :: lfd = lk :: CRASH fi;
	if :: lfd != jd -> goto rs_done :: else fi;
#else
	if :: lk != jd -> goto rs_done :: lk == jd :: CRASH fi;
#endif
	if :: d_step { LOOKUP(jn, cr) } :: CRASH fi;     /* the claim judged? */
	if :: cr != jr -> goto rs_done :: else fi;
	if :: d_step {
		LOOKUP(jn, x);
		if
		:: x != 0 -> cr = x; PUTBACK(PLACE)
		:: else -> skip                              /* resolved by another */
		fi;
		x = 0
	} :: CRASH fi;
rs_done:
	cr = 0; lfd = 0
}

/* Fixer.Fix on what scan() decided */
inline fix() {
	if
	:: act == A_SWEEP    -> sweep()
	:: act == A_FINISH   -> finish()
	:: act == A_RESTORE  -> restore()
	:: act == A_FINBUILD -> finbuild()
	:: act == A_MANY     -> finishmany()
	:: act == A_NONE     -> skip
	fi;
	act = 0; jd = 0; jr = 0; jn = 0
}

/* ------------------------------------------------------------- processes */

#define LOCALS \
	byte i, k, x, cnt, ok, hr, act, jd, jr, jn, cr, lfd; bool lf; \
	byte ls[NR]; bool lb[NR]; byte sc[NR]; byte sb[NR]

proctype Acquirer(byte me) {
	LOCALS;
#ifndef MUT_MKDIR
	/* build <lock>.new.<token>: the directory, then holder in it */
	if :: d_step {
		dloc[me] = D_BUILD; dtime[me] = clk;
		dslot[me] = me; rtime[me] = clk; clk++;
		printf("  p%d: builds <lock>.new.T%d/holder (directory D%d, record T%d)\n", me, me, me, me)
	} :: CRASH fi;
#endif
	do
	:: /* publish */
#ifdef MUT_MKDIR
		if :: d_step {
			if
			:: lk == 0 ->
				lk = me; dloc[me] = D_LOCK; dtime[me] = clk; clk++; ok = 1;
				printf("  p%d: mkdir <lock> (directory D%d, empty)\n", me, me);
				P3(me)
			:: else -> ok = 0
			fi
		} :: CRASH fi;
		if
		:: ok ->
			if :: d_step {                   /* write the record */
				if
				:: dloc[me] == D_LOCK && dslot[me] == 0 ->
					dslot[me] = me; rtime[me] = clk; clk++;
					printf("  p%d: writes its record T%d into D%d: holds the lock\n", me, me, me);
					incs[me] = 1; P1(me)
				:: else -> ok = 0
				fi
			} :: CRASH fi;
			if :: ok -> break :: else -> goto out fi
		:: else -> skip
		fi;
#else
		if :: d_step {
			if
			:: lk == 0 ->                             /* rename, no replace */
				P3(me); lk = me; dloc[me] = D_LOCK; ok = 1;
				printf("  p%d: publishes D%d at <lock>: holds the lock\n", me, me);
				incs[me] = 1; P1(me)
			:: else -> ok = 0
			fi
		} :: CRASH fi;
		if :: ok -> break :: else -> skip fi;
#endif
		/* the lock is there: judge it as doctor would, break it only if
		 * gone, then try again */
		scan();
		fix()
	:: /* timed out waiting: remove the unpublished build */
		if :: d_step {
			if
			:: dloc[me] == D_BUILD ->
				if :: dslot[me] != 0 -> P2_REC(dslot[me], me); dslot[me] = 0 :: else fi;
				dloc[me] = D_GONE
			:: else -> skip
			fi;
			printf("  p%d: gives up\n", me)
		} :: CRASH fi;
		goto out
	od;

	/* ------------------------------------------------------- release */
	ok = 0;
#if BIND
	if :: d_step {              /* open <lock>, fstat: still mine? */
		lfd = lk; incs[me] = 0;
		printf("  p%d: releases\n", me)
	} :: CRASH fi;
	if :: lfd != me -> goto out :: else fi;
	/* Look before touching: the record there must be ours. (Only this
	 * holder ever puts a record into its own directory, so the look and
	 * the claim see the same: one step here.) */
#define REL_LOOK (dslot[PLACE] == me)
#else
	if :: d_step { incs[me] = 0; printf("  p%d: releases\n", me) } :: CRASH fi;
	if :: lk != me -> goto out :: lk == me :: CRASH fi;
	/* look before touching: the record there must be ours */
	if :: !(EXISTS(PLACE) && dslot[PLACE] == me) -> goto out :: EXISTS(PLACE) && dslot[PLACE] == me :: CRASH fi;
#define REL_LOOK true
#endif
	/* claim: holder -> <lock>.rel.<token> */
	if :: d_step {
		if
		:: EXISTS(PLACE) && dslot[PLACE] != 0 && REL_LOOK ->
			cr = dslot[PLACE]; dslot[PLACE] = 0; cname[cr] = NAME(K_REL, me, me); ok = 1;
			printf("  p%d: claims D%d's holder (record T%d) as <lock>.%e.T%d.p%d\n", me, PLACE, cr, NM(cname[cr]))
		:: else -> ok = 0
		fi
	} :: CRASH fi;
	if :: !ok -> goto out :: else fi;
	if :: cr != me -> goto rel_back :: else fi;          /* verify */
#ifndef MUT_RELEASE_UNCHECKED
	/* rmdir works by name: lstat <lock>, still the directory published? */
	if
	:: d_step { lk != me -> printf("  p%d: lstat <lock>: directory D%d, not its own\n", me, lk) }; goto rel_back
	:: d_step { lk == me -> printf("  p%d: lstat <lock>: still its own D%d\n", me, lk) }
	:: CRASH
	fi;
#endif
	if :: d_step {
#ifdef RELEASE_OWN
		x = lk;
#endif
		RMDIR;
#ifdef RELEASE_OWN
		assert(!ok || x == me);              /* it was our own directory */
#endif
		x = 0
	} :: CRASH fi;
	if :: !ok -> goto rel_back :: else fi;
	if :: d_step { UNCLAIM } :: CRASH fi;
	goto out;
rel_back:
	if :: d_step { PUTBACK(PLACE) } :: CRASH fi;
out:
	cr = 0; lfd = 0; ok = 0;
	/* finished: it may still exit (die) later, or live on */
	if :: skip :: CRASH fi;
crashed:
#ifdef WEDGE
	skip; d_step { running-- }
#else
	skip
#endif
}

#ifdef WEDGE
/* P5's last --fix pass (it cannot crash: crashes == MAXC by then) */
proctype Final(byte me) {
	LOCALS;
	scan(); fix();
crashed:
	skip; d_step { running-- }
}
#endif

proctype Sweeper(byte me) {
	LOCALS;
	do
	:: scan(); fix()
	:: break
	od;
	if :: skip :: CRASH fi;
crashed:
#ifdef WEDGE
	skip; d_step { running-- }
#else
	skip
#endif
}

init {
	byte p;
	d_step {
		for (p : 1 .. NA+NS) { alive[p] = 1 }
#ifdef WEDGE
		running = NA + NS;
#endif
		p = 0
	}
	atomic {
		for (p : 1 .. NA) { run Acquirer(p) }
		for (p : NA+1 .. NA+NS) { run Sweeper(p) }
		p = 0
	}
#ifdef WEDGE
	/* P5: when everyone has finished or crashed, and then exited (every
	 * record is then gone), one more --fix pass -- what the next acquirer
	 * or doctor --fix does -- must leave <lock> absent: a record there is
	 * gone and is swept, an empty directory has claims beside it that are
	 * finished. What it leaves is wedged: owner-less for ever, or for a
	 * person to resolve. */
	(running == 0);
	d_step {
		crashes = MAXC;                      /* the last pass does not crash */
		for (p : 1 .. NA+NS) { alive[p] = 0 }
		alive[FINAL] = 1; running = 1; p = 0;
		printf("  end: every process has exited; a last --fix (p%d) runs\n", FINAL)
	}
	run Final(FINAL);
	(running == 0);
	d_step {
		if
		:: lk != 0 ->
			for (i_w : 1 .. NA) {
				if :: cname[i_w] != 0 && rtime[i_w] >= dtime[lk] -> p++ :: else fi
			}
			printf("  end: <lock> (D%d) is still there, holder T%d (0: none), beside %d claims that belong to it\n", lk, dslot[lk], p)
		:: else -> skip
		fi;
		assert(lk == 0)                      /* P5 */
	}
#endif
}
