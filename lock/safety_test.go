//go:build linux

package lock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/dev/testutil"
	"github.com/lockctl/lockctl/internal/fsx"
	"github.com/lockctl/lockctl/scan"
	"github.com/lockctl/lockctl/verdict"
)

// TestAcquireReleaseLeavesNothing walks the whole protocol with the hook and
// checks that no staging or claim outlives it.
func TestAcquireReleaseLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.lock")
	var seen []Point
	l, err := Acquire(context.Background(), p, Options{Kernel: kern, Hook: func(pt Point) { seen = append(seen, pt) }})
	if err != nil {
		t.Fatal(err)
	}
	testutil.WantNames(t, dir, "x.lock")
	testutil.WantNames(t, p, "holder")
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	testutil.WantNames(t, dir)
	want := []Point{Built, Published, ReleaseClaimed, ReleaseRemoved}
	if !reflect.DeepEqual(seen, want) {
		t.Errorf("hook saw %v, want %v", seen, want)
	}
	// Twice in a row, and a second Release of a released lock removes
	// nothing that a later holder made.
	l = acquireWithin(t, p, 5*time.Second)
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	l2 := acquireWithin(t, p, 5*time.Second)
	before := testutil.Snapshot(t, dir)
	var taken *TakenOverError
	if err := l.Release(); !errors.As(err, &taken) {
		t.Errorf("a second Release of a lock taken since by another = %v, want *TakenOverError", err)
	}
	testutil.Untouched(t, dir, before)
	if err := l2.Release(); err != nil {
		t.Fatal(err)
	}
	testutil.WantNames(t, dir)
}

// TestAcquireNeverLeavesAnEmptyLock stops Acquire at each step and looks:
// the lock is either absent, or a directory holding exactly the complete
// record. (Mutation: make the lock directory first and write the record
// into it, and the lock exists, empty, at Built.)
func TestAcquireNeverLeavesAnEmptyLock(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.lock")
	var built []byte
	checks := 0
	hook := func(pt Point) {
		t.Helper()
		checks++
		switch pt {
		case Built:
			if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("at %s the lock already exists (%v): it can be seen before its record is complete", pt, err)
			}
			ents := testutil.Names(t, dir)
			if len(ents) != 1 || !strings.HasPrefix(ents[0], "x.lock.new.") {
				t.Fatalf("at %s the registry holds %q, want only x.lock.new.<token>", pt, ents)
			}
			testutil.WantNames(t, filepath.Join(dir, ents[0]), "holder")
			built = readFile(t, filepath.Join(dir, ents[0], "holder"))
			h, err := scan.ParseLockctl(built)
			if err != nil {
				t.Fatalf("at %s the built record does not parse: %v", pt, err)
			}
			if h.Pid != int64(os.Getpid()) || !strings.HasPrefix(ents[0], "x.lock.new."+h.Token) {
				t.Errorf("at %s the build directory %s holds a record naming pid %d token %s, want our pid %d and the name to carry the token", pt, ents[0], h.Pid, h.Token, os.Getpid())
			}
		case Published:
			testutil.WantNames(t, dir, "x.lock")
			testutil.WantNames(t, p, "holder")
			if got := readFile(t, filepath.Join(p, "holder")); string(got) != string(built) {
				t.Errorf("at %s the lock holds %q, want the record built, %q", pt, got, built)
			}
			if r := judge(t, p); r.Verdict != verdict.Live {
				t.Errorf("at %s the lock is judged %s (%s), want live", pt, r.Verdict, r.Reason)
			}
		case ReleaseClaimed:
			// The record is out of the lock, beside it, under a name that
			// says whose release it is: never an unexplained empty lock.
			testutil.WantNames(t, p)
			rel := "x.lock.rel." + strings.Split(string(built), "\n")[1][len("token "):] + "." + strconv.Itoa(os.Getpid())
			testutil.WantNames(t, dir, "x.lock", rel)
			if got := readFile(t, filepath.Join(dir, rel)); string(got) != string(built) {
				t.Errorf("at %s the claim holds %q, want %q", pt, got, built)
			}
			if r := judge(t, p); r.Verdict != verdict.Claimed {
				t.Errorf("at %s the lock is judged %s (%s), want claimed", pt, r.Verdict, r.Reason)
			}
		case ReleaseRemoved:
			ents := testutil.Names(t, dir)
			if len(ents) != 1 || !strings.HasPrefix(ents[0], "x.lock.rel.") {
				t.Errorf("at %s the registry holds %q, want only the claim", pt, ents)
			}
		}
	}
	l, err := Acquire(context.Background(), p, Options{Kernel: kern, Hook: hook})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if checks != 4 {
		t.Errorf("the hook ran %d times, want 4", checks)
	}
	testutil.WantNames(t, dir)

	// The same while waiting for a lock that is held: the built record
	// waits beside the lock, and the lock it waits for is untouched.
	s := testutil.Sleeper(t)
	other, err := Acquire(context.Background(), p, Options{Kernel: kern, Pid: s.Process.Pid})
	if err != nil {
		t.Fatal(err)
	}
	before := testutil.Snapshot(t, p)
	done := make(chan error, 1)
	waiting := make(chan struct{})
	go func() {
		l, err := Acquire(context.Background(), p, Options{Kernel: kern, Hook: func(pt Point) {
			if pt == Built {
				close(waiting)
			}
		}})
		if err == nil {
			err = l.Release()
		}
		done <- err
	}()
	select {
	case <-waiting:
	case err := <-done:
		t.Fatalf("a waiting Acquire returned (%v) before it built its record beside the held lock", err)
	case <-time.After(testutil.ReadyWait):
		t.Fatalf("a waiting Acquire did not build its record beside the held lock within %s", testutil.ReadyWait)
	}
	testutil.Untouched(t, p, before)
	if err := other.Release(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a waiting Acquire did not take the lock within 10s of its release")
	}
	testutil.WantNames(t, dir)
}

// TestAcquireNeverLeavesAnEmptyLockObserved watches the lock from another
// goroutine while it is taken and released over and over. An empty lock
// directory is only ever seen while a claim beside it says whose release (or
// break) it is. (Mutation: publish with mkdir, then the record, and the
// observer sees a bare empty lock.)
func TestAcquireNeverLeavesAnEmptyLockObserved(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.lock")
	rounds := 400 // the mkdir-then-record mutation is seen within a few rounds
	if testing.Short() {
		rounds = 100
	}
	stop := make(chan struct{})
	found := make(chan string, 1)
	looks := 0
	go func() {
		defer close(found)
		for {
			select {
			case <-stop:
				return
			default:
			}
			looks++
			if why := emptyLockWithoutClaim(dir, "x.lock"); why != "" {
				found <- why
				return
			}
		}
	}()
	for i := 0; i < rounds; i++ {
		l, err := Acquire(context.Background(), p, Options{Kernel: kern})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(); err != nil {
			t.Fatal(err)
		}
		if len(found) > 0 {
			break
		}
	}
	close(stop)
	if why, ok := <-found; ok {
		t.Fatalf("after %d looks: %s", looks, why)
	}
	t.Logf("%d rounds, %d looks, never an empty lock without its claim", rounds, looks)
}

// emptyLockWithoutClaim looks once: it opens the lock directory, and if it
// is empty, lists the registry, then checks that the same directory is
// still in place. If it stood empty throughout with no release or break
// claim beside it, it returns why that is wrong.
func emptyLockWithoutClaim(dir, name string) string {
	p := filepath.Join(dir, name)
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return ""
	}
	defer f.Close()
	var st syscall.Stat_t
	if syscall.Fstat(int(f.Fd()), &st) != nil {
		return ""
	}
	if ents, err := f.Readdirnames(-1); err != nil || len(ents) > 0 {
		return ""
	}
	d, err := os.Open(dir)
	if err != nil {
		return ""
	}
	all, _ := d.Readdirnames(-1)
	d.Close()
	for _, e := range all {
		if strings.HasPrefix(e, name+".rel.") || strings.HasPrefix(e, name+".dead.") {
			return ""
		}
	}
	// The open descriptor pins the inode, so its number cannot have been
	// reused: the same number is the same directory, in place throughout.
	var now syscall.Stat_t
	if syscall.Lstat(p, &now) != nil || now.Ino != st.Ino || now.Dev != st.Dev {
		return "" // removed or replaced meanwhile: not the same lock
	}
	return fmt.Sprintf("%s was an empty directory (inode %d) with no claim beside it (registry: %q)", p, st.Ino, all)
}

// TestAcquireBreaksZombieHolder: a holder that has exited but has not been
// reaped can never release; its lock is broken.
func TestAcquireBreaksZombieHolder(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.lock")
	c := testutil.Sleeper(t)
	if _, err := Acquire(context.Background(), p, Options{Kernel: kern, Pid: c.Process.Pid}); err != nil {
		t.Fatal(err)
	}
	if err := c.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, "the holder to be a zombie", func() bool { return testutil.ProcState(c.Process.Pid) == 'Z' })
	if r := judge(t, p); r.Verdict != verdict.Gone {
		t.Fatalf("judged a zombie holder's lock %s (%s), want gone", r.Verdict, r.Reason)
	}
	l := acquireWithin(t, p, 5*time.Second)
	testutil.WantNames(t, dir, "x.lock")
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	testutil.WantNames(t, dir)
	if testutil.ProcState(c.Process.Pid) != 'Z' {
		t.Fatalf("the zombie holder was reaped during the test")
	}
}

// TestAcquireBreaksGone lists the locks Acquire breaks on its own, and
// checks that breaking leaves no claim behind.
func TestAcquireBreaksGone(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, p string)
	}{
		{"holder killed and reaped", func(t *testing.T, p string) {
			c := testutil.Sleeper(t)
			if _, err := Acquire(context.Background(), p, Options{Kernel: kern, Pid: c.Process.Pid}); err != nil {
				t.Fatal(err)
			}
			killAndReap(t, c)
		}},
		{"pid reused: running, but started at another tick", func(t *testing.T, p string) {
			c := testutil.Sleeper(t)
			_, rec := holderFor(t, c.Process.Pid, func(h *scan.Holder) { h.Start-- })
			writeLockDir(t, p, rec)
		}},
		{"another boot of this host", func(t *testing.T, p string) {
			// Its pid is no process's now: a process running with exactly
			// the recorded start time would outweigh the boot id, which is
			// only a file (issue 28, case 4).
			_, rec := holderFor(t, os.Getpid(), func(h *scan.Holder) { setPid(h, testutil.Gone(t)); h.BootID = "00000000-0000-4000-8000-000000000000" })
			writeLockDir(t, p, rec)
		}},
		{"this boot, under a host name a UTS namespace gave it", func(t *testing.T, p string) {
			_, rec := holderFor(t, os.Getpid(), func(h *scan.Holder) { setPid(h, testutil.Gone(t)); h.Host = "renamed-by-unshare-uts" })
			writeLockDir(t, p, rec)
		}},
		{"a pid namespace that has ended", func(t *testing.T, p string) {
			c := testutil.StartContainer(t, 31000, "exec sleep 600")
			c.Stop()
			_, rec := holderFor(t, os.Getpid(), func(h *scan.Holder) { setPid(h, c.Inner); h.PidNS = c.NS })
			writeLockDir(t, p, rec)
		}},
		{"holder and the process recorded with it both gone", func(t *testing.T, p string) {
			a, b := testutil.Sleeper(t), testutil.Sleeper(t)
			if _, err := Acquire(context.Background(), p, Options{Kernel: kern, Pid: a.Process.Pid, Also: []int{b.Process.Pid}}); err != nil {
				t.Fatal(err)
			}
			killAndReap(t, a)
			killAndReap(t, b)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "x.lock")
			tt.setup(t, p)
			if r := judge(t, p); r.Verdict != verdict.Gone {
				t.Fatalf("setup: judged %s (%s), want gone", r.Verdict, r.Reason)
			}
			l := acquireWithin(t, p, 5*time.Second)
			testutil.WantNames(t, dir, "x.lock")
			testutil.WantNames(t, p, "holder")
			if got := readFile(t, filepath.Join(p, "holder")); string(got) != string(l.record) {
				t.Errorf("after breaking, the lock holds %q, want our record", got)
			}
			if err := l.Release(); err != nil {
				t.Fatal(err)
			}
			testutil.WantNames(t, dir)
		})
	}
}

// TestAcquireAlsoHoldsTheLock: a process recorded with the holder keeps the
// lock held after the holder is gone (lockctl run records itself and CMD).
func TestAcquireAlsoHoldsTheLock(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.lock")
	a, b := testutil.Sleeper(t), testutil.Sleeper(t)
	if _, err := Acquire(context.Background(), p, Options{Kernel: kern, Pid: a.Process.Pid, Also: []int{b.Process.Pid}}); err != nil {
		t.Fatal(err)
	}
	killAndReap(t, a)
	before := testutil.Snapshot(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	_, err := Acquire(ctx, p, Options{Kernel: kern})
	var held *HeldError
	if !errors.As(err, &held) || held.Holder.Pid != int64(a.Process.Pid) {
		t.Fatalf("Acquire while the recorded also-holder runs = %v, want *HeldError naming pid %d", err, a.Process.Pid)
	}
	testutil.Untouched(t, dir, before)
	killAndReap(t, b)
	l := acquireWithin(t, p, 5*time.Second)
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	testutil.WantNames(t, dir)
}

// TestAcquireNeverBreaks: live, owner-less, foreign, recycled, unknown and
// "break no" locks are waited on and never touched; the wait ends with an
// error that says which it was and wraps the context's error.
func TestAcquireNeverBreaks(t *testing.T) {
	host := localHost()
	tests := []struct {
		name        string
		setup       func(t *testing.T, dir, p string) (want verdict.Verdict)
		check       func(t *testing.T, err error, p string)
		wantUnknown string // for *UnknownError: a word its reason must hold
	}{
		{
			name: "live holder",
			setup: func(t *testing.T, dir, p string) verdict.Verdict {
				c := testutil.Sleeper(t)
				if _, err := Acquire(context.Background(), p, Options{Kernel: kern, Pid: c.Process.Pid, Command: "the-holder"}); err != nil {
					t.Fatal(err)
				}
				return verdict.Live
			},
			check: func(t *testing.T, err error, p string) {
				var e *HeldError
				if !errors.As(err, &e) {
					t.Fatalf("error = %T %v, want *HeldError", err, err)
				}
				cur, _ := scan.ParseLockctl(readFile(t, filepath.Join(p, "holder")))
				if e.Path != p || e.Holder.Pid != cur.Pid || e.Holder.Command != "the-holder" || e.Holder.Host != host.Name || !e.Holder.Since.Equal(cur.Since) {
					t.Errorf("HeldError = %+v, want path %s, pid %d, command the-holder, host %s, since %v", e, p, cur.Pid, host.Name, cur.Since)
				}
				msg := err.Error()
				for _, want := range []string{p, "pid " + strconv.FormatInt(cur.Pid, 10), "the-holder", host.Name, cur.Since.UTC().Format(time.RFC3339)} {
					if !strings.Contains(msg, want) {
						t.Errorf("HeldError text %q does not name %q", msg, want)
					}
				}
			},
		},
		{
			name: "owner-less empty directory",
			setup: func(t *testing.T, dir, p string) verdict.Verdict {
				if err := os.Mkdir(p, 0o755); err != nil {
					t.Fatal(err)
				}
				return verdict.Ownerless
			},
			check: func(t *testing.T, err error, p string) {
				var e *OwnerlessError
				if !errors.As(err, &e) {
					t.Fatalf("error = %T %v, want *OwnerlessError", err, err)
				}
				want := []verdict.Step{{Op: verdict.OpRmdir, Path: p}}
				if e.Path != p || !reflect.DeepEqual(e.Remove, want) || e.Reason == "" {
					t.Errorf("OwnerlessError = %+v, want path %s, remove %v and a reason", e, p, want)
				}
				if !strings.Contains(err.Error(), p) {
					t.Errorf("OwnerlessError text %q does not name the path", err)
				}
			},
		},
		{
			name: "owner-less malformed record",
			setup: func(t *testing.T, dir, p string) verdict.Verdict {
				_, rec := holderFor(t, os.Getpid(), nil)
				writeLockDir(t, p, rec[:len(rec)-1]) // cut short: no final newline
				return verdict.Ownerless
			},
			check: func(t *testing.T, err error, p string) {
				var e *OwnerlessError
				if !errors.As(err, &e) {
					t.Fatalf("error = %T %v, want *OwnerlessError", err, err)
				}
			},
		},
		{
			name: "foreign host",
			setup: func(t *testing.T, dir, p string) verdict.Verdict {
				gone := testutil.Gone(t)
				_, rec := holderFor(t, os.Getpid(), func(h *scan.Holder) {
					setPid(h, gone)
					h.Host, h.BootID = "elsewhere", "00000000-0000-4000-8000-000000000000"
				})
				writeLockDir(t, p, rec)
				return verdict.Foreign
			},
			check: func(t *testing.T, err error, p string) {
				var e *ForeignError
				if !errors.As(err, &e) || e.Path != p || !strings.Contains(e.Reason, "elsewhere") {
					t.Fatalf("error = %T %v, want *ForeignError naming host elsewhere", err, err)
				}
			},
		},
		{
			name: "foreign pid namespace",
			setup: func(t *testing.T, dir, p string) verdict.Verdict {
				// A live container's namespace, and the pid its process has
				// there: a number that names nothing, or someone else, here.
				c := testutil.StartContainer(t, 31000, "exec sleep 600")
				_, rec := holderFor(t, os.Getpid(), func(h *scan.Holder) { setPid(h, c.Inner); h.PidNS = c.NS })
				writeLockDir(t, p, rec)
				return verdict.Foreign
			},
			check: func(t *testing.T, err error, p string) {
				var e *ForeignError
				if !errors.As(err, &e) || !strings.Contains(e.Reason, "judge it inside that namespace") {
					t.Fatalf("error = %T %v, want *ForeignError saying to judge it inside its namespace", err, err)
				}
			},
		},
		{
			name: "recycled generation A holder",
			setup: func(t *testing.T, dir, p string) verdict.Verdict {
				// A generation A lock taken an hour ago (by its token's
				// epoch) whose pid a process that started just now has.
				c := testutil.Sleeper(t)
				if err := os.Mkdir(p, 0o755); err != nil {
					t.Fatal(err)
				}
				pid := strconv.Itoa(c.Process.Pid)
				epoch := strconv.FormatInt(time.Now().Add(-time.Hour).Unix(), 10)
				tok := host.Name + "." + pid + "." + epoch + ".0123456789abcdef0123456789abcdef"
				testutil.WriteFile(t, p+".holder", []byte("token "+tok+"\npid "+pid+"\ncommand old-script\nhost "+host.Name+"\n"))
				return verdict.Recycled
			},
			wantUnknown: "recycled",
		},
		{
			name: "gone, but the holder asked never to be broken (break no)",
			setup: func(t *testing.T, dir, p string) verdict.Verdict {
				if host.Scope == "" {
					t.Skipf("this host's scope cannot be computed: %v", host.ScopeErr)
				}
				pid := strconv.Itoa(testutil.Gone(t))
				tok := pid + ".0123456789abcdef0123456789abcdef.1"
				if err := os.Mkdir(p, 0o755); err != nil {
					t.Fatal(err)
				}
				testutil.WriteFile(t, filepath.Join(p, "holder."+tok), []byte("token "+tok+"\npid "+pid+"\ncommand careful\nhost "+host.Name+"\nscope "+host.Scope+"\nbreak no\n"))
				return verdict.Gone
			},
			// The wait says the holder is gone and why it was not broken.
			check: func(t *testing.T, err error, p string) {
				var e *GoneError
				if !errors.As(err, &e) || e.Path != p || !strings.Contains(e.Why, "break no") {
					t.Errorf("error = %T %v, want *GoneError saying the holder asked never to be broken", err, err)
				}
			},
		},
		{
			name: "pid out of range",
			setup: func(t *testing.T, dir, p string) verdict.Verdict {
				_, rec := holderFor(t, os.Getpid(), func(h *scan.Holder) { setPid(h, int(host.PidMax+1)) })
				writeLockDir(t, p, rec)
				return verdict.Unknown
			},
			wantUnknown: "out of range",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "x.lock")
			want := tt.setup(t, dir, p)
			if r := judge(t, p); r.Verdict != want {
				t.Fatalf("setup: judged %s (%s), want %s", r.Verdict, r.Reason, want)
			}
			before := testutil.Snapshot(t, dir)
			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
			defer cancel()
			l, err := Acquire(ctx, p, Options{Kernel: kern})
			if err == nil {
				l.Release()
				t.Fatalf("Acquire took a %s lock", want)
			}
			if d := time.Since(start); d < 150*time.Millisecond {
				t.Errorf("Acquire gave up after %s, before its context ended", d)
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Acquire error %v does not wrap context.DeadlineExceeded", err)
			}
			if tt.check != nil {
				tt.check(t, err, p)
			}
			if tt.wantUnknown != "" {
				var e *UnknownError
				if !errors.As(err, &e) || e.Path != p || !strings.Contains(e.Reason, tt.wantUnknown) {
					t.Errorf("error = %T %v, want *UnknownError whose reason says %q", err, err, tt.wantUnknown)
				}
			}
			testutil.Untouched(t, dir, before)

			// A cancelled wait says the same, wrapping context.Canceled.
			ctx, cancel = context.WithCancel(context.Background())
			time.AfterFunc(20*time.Millisecond, cancel)
			if _, err := Acquire(ctx, p, Options{Kernel: kern}); !errors.Is(err, context.Canceled) {
				t.Errorf("Acquire with a cancelled context = %v, want an error wrapping context.Canceled", err)
			}
			testutil.Untouched(t, dir, before)
		})
	}
}

// TestReleaseForRefusesStrangers: only the recorded holder, by pid and
// start time, may release; anyone else is refused and nothing is touched.
func TestReleaseForRefusesStrangers(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.lock")
	holderProc, stranger := testutil.Sleeper(t), testutil.Sleeper(t)
	if _, err := Acquire(context.Background(), p, Options{Kernel: kern, Pid: holderProc.Process.Pid}); err != nil {
		t.Fatal(err)
	}
	before := testutil.Snapshot(t, dir)
	for _, pid := range []int{stranger.Process.Pid, os.Getpid(), testutil.Gone(t)} {
		err := ReleaseFor(p, pid, kern)
		var e *NotHolderError
		if !errors.As(err, &e) || e.Pid != pid || e.Holder.Pid != int64(holderProc.Process.Pid) {
			t.Errorf("ReleaseFor(%s, %d) = %v, want *NotHolderError naming the holder %d", p, pid, err, holderProc.Process.Pid)
		}
		testutil.Untouched(t, dir, before)
	}
	if err := ReleaseFor(p, holderProc.Process.Pid, kern); err != nil {
		t.Fatalf("ReleaseFor by the holder = %v", err)
	}
	testutil.WantNames(t, dir)
	if err := ReleaseFor(p, holderProc.Process.Pid, kern); err == nil {
		t.Errorf("ReleaseFor of a lock that is not there succeeded")
	}
}

// TestReleaseForChecksStartTime: a record naming the caller's pid with
// another start time is another process's record. (Mutation: skip the
// start-time comparison in ReleaseFor.)
func TestReleaseForChecksStartTime(t *testing.T) {
	for _, delta := range []int64{-1, 1} {
		t.Run(fmt.Sprint(delta), func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "x.lock")
			c := testutil.Sleeper(t)
			_, rec := holderFor(t, c.Process.Pid, func(h *scan.Holder) { h.Start = uint64(int64(h.Start) + delta) })
			writeLockDir(t, p, rec)
			before := testutil.Snapshot(t, dir)
			var e *NotHolderError
			if err := ReleaseFor(p, c.Process.Pid, kern); !errors.As(err, &e) {
				t.Errorf("ReleaseFor(pid %d) of a record with another start time = %v, want *NotHolderError", c.Process.Pid, err)
			}
			testutil.Untouched(t, dir, before)
		})
	}
}

// TestReleaseAfterTakeover: the lock was broken (its directory moved away)
// and taken by someone else; the first holder's Release must leave the new
// owner's lock exactly as it is.
func TestReleaseAfterTakeover(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.lock")
	first := acquireWithin(t, p, 5*time.Second)
	if err := os.Rename(p, filepath.Join(t.TempDir(), "broken")); err != nil {
		t.Fatal(err)
	}
	c := testutil.Sleeper(t)
	second, err := Acquire(context.Background(), p, Options{Kernel: kern, Pid: c.Process.Pid})
	if err != nil {
		t.Fatal(err)
	}
	before := testutil.Snapshot(t, dir)
	var taken *TakenOverError
	if err := first.Release(); !errors.As(err, &taken) || taken.Path != p {
		t.Fatalf("Release after a takeover = %v, want *TakenOverError", err)
	}
	testutil.Untouched(t, dir, before)
	if err := ReleaseFor(p, c.Process.Pid, kern); err != nil {
		t.Fatalf("the new owner cannot release: %v", err)
	}
	_ = second
	testutil.WantNames(t, dir)
}

// TestReleaseRecordReplaced: the record inside the lock directory was
// replaced (new bytes, a new inode, or both); Release leaves it and says so.
// (Mutation: skip Release's inode and byte checks.)
func TestReleaseRecordReplaced(t *testing.T) {
	tests := []struct {
		name    string
		replace func(t *testing.T, rec string, own []byte, other []byte)
	}{
		{"new record, new inode", func(t *testing.T, rec string, own, other []byte) {
			testutil.WriteFile(t, rec+".tmp", other)
			if err := os.Rename(rec+".tmp", rec); err != nil {
				t.Fatal(err)
			}
		}},
		{"same bytes, new inode", func(t *testing.T, rec string, own, other []byte) {
			testutil.WriteFile(t, rec+".tmp", own)
			if err := os.Rename(rec+".tmp", rec); err != nil {
				t.Fatal(err)
			}
		}},
		{"same inode, new bytes", func(t *testing.T, rec string, own, other []byte) {
			f, err := os.OpenFile(rec, os.O_WRONLY|os.O_TRUNC, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.Write(other); err != nil {
				t.Fatal(err)
			}
			f.Close()
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "x.lock")
			l := acquireWithin(t, p, 5*time.Second)
			c := testutil.Sleeper(t)
			_, other := holderFor(t, c.Process.Pid, nil)
			tt.replace(t, filepath.Join(p, "holder"), l.record, other)
			before := testutil.Snapshot(t, dir)
			var taken *TakenOverError
			if err := l.Release(); !errors.As(err, &taken) {
				t.Fatalf("Release of a replaced record = %v, want *TakenOverError", err)
			}
			testutil.Untouched(t, dir, before)
		})
	}
}

// TestLongestNameIsBreakable: the longest lock name Acquire takes leaves
// room for every side file: once its holder is gone, another Acquire
// breaks it (claim and all) and takes it; one byte longer is refused.
func TestLongestNameIsBreakable(t *testing.T) {
	dir := t.TempDir()
	d, err := fsx.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := d.FS()
	d.Close()
	if err != nil || fs.NameMax <= 0 {
		t.Skipf("no name limit here (%v)", err)
	}
	name := strings.Repeat("n", fs.NameMax-scan.SideRoom-len(".lock")) + ".lock"
	p := filepath.Join(dir, name)
	c := testutil.Sleeper(t)
	if _, err := Acquire(context.Background(), p, Options{Kernel: kern, Pid: c.Process.Pid}); err != nil {
		t.Fatalf("Acquire with a %d-byte name: %v", len(name), err)
	}
	killAndReap(t, c)
	l := acquireWithin(t, p, 5*time.Second)
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	testutil.WantNames(t, dir)
	var bad *BadPathError
	if _, err := Acquire(context.Background(), filepath.Join(dir, "x"+name), Options{Kernel: kern}); !errors.As(err, &bad) {
		t.Errorf("Acquire with a %d-byte name: %v, want *BadPathError", len(name)+1, err)
	}
	testutil.WantNames(t, dir)
}

// TestSideFileNamesRefused: a lock named as another lock's side file
// (x.lock.new.<token>.<pid>, y.lock.rel.<token>.<pid>) is refused, since
// doctor reads it as that claim, never as a live lock, and --fix would
// finish the claim, removing the lock while its holder runs.
func TestSideFileNamesRefused(t *testing.T) {
	dir := t.TempDir()
	tok := "4242.0123456789abcdef0123456789abcdef.1"
	for _, name := range []string{"x.lock.new." + tok + ".99", "y.lock.rel." + tok + ".99", "z.lock.dead." + tok + ".99", "w.lock.holder"} {
		var bad *BadPathError
		if _, err := Acquire(context.Background(), filepath.Join(dir, name), Options{Kernel: kern}); !errors.As(err, &bad) {
			t.Errorf("Acquire(%s) = %v, want *BadPathError", name, err)
		}
	}
	testutil.WantNames(t, dir)
	l, err := Acquire(context.Background(), filepath.Join(dir, "x.new.lock"), Options{Kernel: kern})
	if err != nil {
		t.Fatalf("Acquire(x.new.lock): %v", err)
	}
	l.Release()
}
