package report

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
)

// hostile strings a lock's path, reason or command line may hold.
var jsonStrings = []string{
	"", "/run/lock/x.lock", `quote"and\back`, "new\nline\ttab\rcr", "\b\f\x00\x01\x1f\x7f",
	"<script>&amp;</script>", "bad\xff\xfe", "\u2028\u2029", "é🔒", "\xed\xa0\x80", "a\xc3",
}

// fill sets every field of v (a pointer to a struct), choosing for each
// whether it is zero, nil or set, by rnd: every field jsonLock and
// jsonHolder have, whichever are added, is exercised.
func fill(rnd *rand.Rand, v reflect.Value, depth int) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(jsonStrings[rnd.IntN(len(jsonStrings))])
	case reflect.Int, reflect.Int64:
		v.SetInt([]int64{0, 1, -1, 4194304, 1 << 62}[rnd.IntN(5)])
	case reflect.Bool:
		v.SetBool(rnd.IntN(2) == 0)
	case reflect.Uint64:
		v.SetUint([]uint64{0, 1, 1<<64 - 1}[rnd.IntN(3)])
	case reflect.Pointer:
		if rnd.IntN(3) == 0 || depth > 2 {
			return // nil
		}
		p := reflect.New(v.Type().Elem())
		fill(rnd, p.Elem(), depth+1)
		v.Set(p)
	case reflect.Slice:
		switch rnd.IntN(3) {
		case 0: // nil
		case 1:
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
		default:
			n := 1 + rnd.IntN(3)
			s := reflect.MakeSlice(v.Type(), n, n)
			for i := range n {
				fill(rnd, s.Index(i), depth+1)
			}
			v.Set(s)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			fill(rnd, v.Field(i), depth)
		}
	default:
		panic("fill: a field of kind " + v.Kind().String() + ": teach fill and appendLockJSON about it")
	}
}

func TestLockJSONMatchesEncodingJSON(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := range 5000 {
		var j jsonLock
		fill(rnd, reflect.ValueOf(&j).Elem(), 0)
		want, err := json.MarshalIndent(j, "    ", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if got := appendLockJSON(nil, &j); !bytes.Equal(got, want) {
			t.Fatalf("case %d: appendLockJSON\n%s\nwant (json.MarshalIndent)\n%s", i, got, want)
		}
	}
	// And the zero value.
	var z jsonLock
	want, _ := json.MarshalIndent(z, "    ", "  ")
	if got := appendLockJSON(nil, &z); !bytes.Equal(got, want) {
		t.Errorf("zero jsonLock: %s, want %s", got, want)
	}
}

// FuzzJSONString: appendJSONString quotes every string as json.Marshal does.
func FuzzJSONString(f *testing.F) {
	for _, s := range jsonStrings {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendJSONString(nil, s); !bytes.Equal(got, want) {
			t.Errorf("appendJSONString(%q) = %s, want %s", s, got, want)
		}
	})
}
