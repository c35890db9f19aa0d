package kernel

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"unicode"
)

// statLine is a /proc/<pid>/stat line as Linux 6 writes it (52 fields),
// with the given command, state and start time (field 22).
func statLine(pid int, comm string, state byte, start uint64) string {
	fields := []string{
		fmt.Sprintf("%d", pid), "(" + comm + ")", string(state),
		"1", "4242", "4242", "0", "-1", "4194560", "102", "0", "0", "0", // 4-13
		"0", "0", "0", "0", "20", "0", "1", "0", // 14-21
		fmt.Sprintf("%d", start),                                   // 22
		"3133440", "415", "18446744073709551615", "94326908784640", // 23-26
	}
	for len(fields) < 52 {
		fields = append(fields, "0")
	}
	return strings.Join(fields, " ") + "\n"
}

func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		name  string
		in    string
		state byte
		comm  string
		start uint64
		ok    bool
	}{
		{name: "sleep", in: statLine(4242, "sleep", 'S', 70392), state: 'S', comm: "sleep", start: 70392, ok: true},
		{name: "zombie", in: statLine(4242, "registry.sh", 'Z', 1), state: 'Z', comm: "registry.sh", start: 1, ok: true},
		{name: "dead-X", in: statLine(4242, "x", 'X', 5), state: 'X', comm: "x", start: 5, ok: true},
		{name: "comm-with-spaces-and-parens", in: statLine(4242, "a) b (c", 'R', 123456), state: 'R', comm: "a) b (c", start: 123456, ok: true},
		{
			// A command can be named to look like the rest of the line: only
			// the last ')' ends it.
			name: "comm-forging-fields", in: statLine(4242, "x) Z 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 999", 'S', 77),
			state: 'S', comm: "x) Z 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 999", start: 77, ok: true,
		},
		{name: "comm-empty", in: statLine(4242, "", 'S', 9), state: 'S', comm: "", start: 9, ok: true},
		{name: "comm-with-newline", in: statLine(4242, "a\nb", 'S', 9), state: 'S', comm: "a\nb", start: 9, ok: true},
		{name: "start-max-uint64", in: statLine(1, "init", 'S', 18446744073709551615), state: 'S', comm: "init", start: 18446744073709551615, ok: true},
		{name: "exactly-22-fields", in: "1 (a) S 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22", state: 'S', comm: "a", start: 22, ok: true},

		{name: "empty", in: ""},
		{name: "no-parens", in: "4242 sleep S 1 2 3"},
		{name: "no-closing-paren", in: "4242 (sleep S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20"},
		{name: "no-opening-paren", in: "4242 sleep) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20"},
		{name: "parens-reversed", in: "4242 )sleep( S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20"},
		{name: "only-parens", in: "()"},
		{name: "21-fields", in: "1 (a) S 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21"},
		{name: "state-two-letters", in: strings.Replace(statLine(4242, "sleep", 'S', 5), ") S ", ") SS ", 1)},
		{name: "start-not-a-number", in: "1 (a) S 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 abc"},
		{name: "start-negative", in: "1 (a) S 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 -5"},
		{name: "start-overflows", in: "1 (a) S 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 18446744073709551616"},
		{name: "truncated-after-comm", in: "4242 (sleep) "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state, comm, start, err := ParseStat([]byte(tc.in))
			if !tc.ok {
				if err == nil {
					t.Errorf("ParseStat(%q) = %q, %q, %d, nil, want an error", tc.in, state, comm, start)
				}
				if state != 0 || comm != "" || start != 0 {
					t.Errorf("ParseStat(%q) = %q, %q, %d with error %v, want zero values with the error", tc.in, state, comm, start, err)
				}
				return
			}
			if err != nil || state != tc.state || comm != tc.comm || start != tc.start {
				t.Errorf("ParseStat(%q) = %q, %q, %d, %v, want %q, %q, %d, nil", tc.in, state, comm, start, err, tc.state, tc.comm, tc.start)
			}
		})
	}
}

// FuzzParseStat checks that ParseStat never panics, that what it accepts is
// consistent with its input, and that any command name, however hostile,
// round-trips through a well-formed stat line.
func FuzzParseStat(f *testing.F) {
	f.Add([]byte(statLine(4242, "sleep", 'S', 70392)))
	f.Add([]byte(statLine(4242, "a) b (c", 'Z', 1)))
	f.Add([]byte(statLine(4242, "x) Z 1 2 3", 'R', 18446744073709551615)))
	f.Add([]byte("1 (a) S 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22"))
	f.Add([]byte(""))
	f.Add([]byte("()"))
	f.Add([]byte(")("))
	f.Add([]byte("4242 (sleep"))
	f.Add([]byte("(\x00) \xff 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20"))
	f.Fuzz(func(t *testing.T, b []byte) {
		state, comm, start, err := ParseStat(b)
		if err == nil {
			if !bytes.Contains(b, []byte("("+comm+")")) {
				t.Errorf("ParseStat(%q) = comm %q, which is not a parenthesised part of the input", b, comm)
			}
			if state == 0 && !bytes.Contains(b, []byte{0}) || state < 0x80 && unicode.IsSpace(rune(state)) {
				t.Errorf("ParseStat(%q) = state %q, want a non-blank byte of the input", b, state)
			}
		}
		_ = start
		if err != nil && statParent(b) != 0 {
			t.Errorf("statParent(%q) = %d for a line ParseStat refuses (%v), want 0", b, statParent(b), err)
		}

		// Whatever the command name, a well-formed line built around it
		// parses back to exactly what was put in.
		name := string(b)
		line := statLine(4242, name, 'S', uint64(len(b))*7919)
		state, comm, start, err = ParseStat([]byte(line))
		if err != nil || state != 'S' || comm != name || start != uint64(len(b))*7919 {
			t.Errorf("ParseStat(%q) = %q, %q, %d, %v, want 'S', %q, %d, nil", line, state, comm, start, err, name, uint64(len(b))*7919)
		}
	})
}

func TestStatField(t *testing.T) {
	const b = "42 (a b) c) S 1 42 42 0 -1 4194564 0 0"
	for _, tc := range []struct {
		n    int
		want string
		ok   bool
	}{
		{3, "S", true}, {4, "1", true}, {9, "4194564", true}, {11, "0", true},
		{12, "", false}, {2, "", false}, {1, "", false},
	} {
		if got, ok := statField([]byte(b), tc.n); got != tc.want || ok != tc.ok {
			t.Errorf("statField(%d) = %q, %v; want %q, %v", tc.n, got, ok, tc.want, tc.ok)
		}
	}
	if _, ok := statField([]byte("no parenthesis here"), 3); ok {
		t.Error("statField found a field in a line with no command")
	}
}

func TestStatParent(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want int
	}{
		// statLine's field 4 (ppid) is 1.
		{name: "linux-6-line", in: statLine(4242, "sleep", 'S', 70392), want: 1},
		{name: "comm-forging-fields", in: "4242 (x) S 7 8) S 99 4242 4242 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 77", want: 99},
		{name: "exactly-22-fields", in: "1 (a) S 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22", want: 4},
		{name: "ppid-not-a-number", in: "1 (a) S x 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22", want: 0},
		{name: "refused-by-ParseStat", in: "1 (a) S 4 5", want: 0},
		{name: "empty", in: "", want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := statParent([]byte(tc.in)); got != tc.want {
				t.Errorf("statParent(%q) = %d, want %d", tc.in, got, tc.want)
			}
		})
	}
}
