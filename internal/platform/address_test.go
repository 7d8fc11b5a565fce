package platform

import (
	"errors"
	"strings"
	"testing"
)

func TestKeyRoundTrip(t *testing.T) {
	cases := []struct {
		addr Address
		key  string
	}{
		{Address{Platform: "telegram", Kind: DM, Chat: "12345"}, "telegram:dm:12345"},
		{Address{Platform: "telegram", Kind: Thread, Chat: "-100777", Thread: "42"}, "telegram:thread:-100777:42"},
		{Address{Platform: "slack", Kind: Thread, Chat: "C01", Thread: "1700000000.1234"}, "slack:thread:C01:1700000000.1234"},
		{Address{Platform: "matrix", Kind: Thread, Chat: "!room:example.org", Thread: "$ev:example.org"}, "matrix:thread:!room%3Aexample.org:$ev%3Aexample.org"},
		{Address{Platform: "web", Kind: Thread, Chat: "100%", Thread: "a%3Ab"}, "web:thread:100%25:a%253Ab"},
	}
	for _, c := range cases {
		if got := c.addr.Key(); got != c.key {
			t.Errorf("%+v.Key() = %q, want %q", c.addr, got, c.key)
		}
		back, err := ParseKey(c.key)
		if err != nil {
			t.Fatalf("ParseKey(%q): %v", c.key, err)
		}
		if back != c.addr {
			t.Errorf("ParseKey(%q) = %+v, want %+v", c.key, back, c.addr)
		}
	}
}

func TestParseKeyRejects(t *testing.T) {
	for _, k := range []string{"", "telegram", "telegram:dm", ":dm:1", "a:b:c:d:e", "telegram:dm:1:", "x:y:%zz"} {
		if _, err := ParseKey(k); !errors.Is(err, ErrBadKey) {
			t.Errorf("ParseKey(%q) = %v, want ErrBadKey", k, err)
		}
	}
}

func TestHome(t *testing.T) {
	a := Address{Platform: "telegram", Kind: Thread, Chat: "-100", Thread: "7"}
	if got, want := a.Home(), (Address{Platform: "telegram", Kind: Group, Chat: "-100"}); got != want {
		t.Errorf("Home() = %+v, want %+v", got, want)
	}
	dm := Address{Platform: "telegram", Kind: DM, Chat: "5", Thread: "9"}
	if got := dm.Home(); got.Kind != DM || got.Thread != "" {
		t.Errorf("Home() of a DM topic = %+v, want the DM itself", got)
	}
}

func FuzzParseKey(f *testing.F) {
	f.Add("telegram", "dm", "1", "")
	f.Add("matrix", "thread", "!r:x", "$e:y")
	f.Fuzz(func(t *testing.T, p, k, chat, thread string) {
		a := Address{Platform: p, Kind: Kind(k), Chat: chat, Thread: thread}
		back, err := ParseKey(a.Key())
		if p == "" || k == "" {
			return
		}
		if err != nil {
			t.Fatalf("ParseKey(%q): %v", a.Key(), err)
		}
		if back != a {
			t.Fatalf("round trip %+v → %q → %+v", a, a.Key(), back)
		}
	})
}

// roomsWithServers is a check as Matrix's: a chat is "!x:server", a
// thread starts with '$' and only a thread has one.
func roomsWithServers(a Address) error {
	if (a.Kind == Thread) != (a.Thread != "") {
		return errors.New("a thread, and only a thread, has a root")
	}
	if !strings.HasPrefix(a.Chat, "!") || !strings.Contains(a.Chat, ":") {
		return errors.New("not a room id")
	}
	if a.Thread != "" && !strings.HasPrefix(a.Thread, "$") {
		return errors.New("not an event id")
	}
	return nil
}

func TestParseWritten(t *testing.T) {
	for _, c := range []struct {
		key   string
		check func(Address) error
		want  Address
	}{
		{"telegram:thread:-100777:42", nil, Address{Platform: "telegram", Kind: Thread, Chat: "-100777", Thread: "42"}},
		{"web:thread:100%25:a%253Ab", nil, Address{Platform: "web", Kind: Thread, Chat: "100%", Thread: "a%3Ab"}},
		{"m:group:!r:ex.org", roomsWithServers, Address{Platform: "m", Kind: Group, Chat: "!r:ex.org"}},
		{"m:group:!r%3Aex.org", roomsWithServers, Address{Platform: "m", Kind: Group, Chat: "!r:ex.org"}},
		{"m:thread:!r:ex.org:8448:$e", roomsWithServers, Address{Platform: "m", Kind: Thread, Chat: "!r:ex.org:8448", Thread: "$e"}},
		{"m:thread:!r%3Aex.org:$e%3Aex.org", roomsWithServers, Address{Platform: "m", Kind: Thread, Chat: "!r:ex.org", Thread: "$e:ex.org"}},
		{"m:dm:!100%:x", roomsWithServers, Address{Platform: "m", Kind: DM, Chat: "!100%:x"}},
	} {
		got, err := ParseWritten(c.key, c.check)
		if err != nil || got != c.want {
			t.Errorf("ParseWritten(%q) = %+v, %v; want %+v", c.key, got, err, c.want)
		}
	}
	if _, err := ParseWritten("m:group:!r", roomsWithServers); err == nil || err.Error() != "not a room id" {
		t.Errorf("a room without its server: %v, want the check's reason", err)
	}
	if _, err := ParseWritten("m:thread:!r:a:$e:$f", roomsWithServers); !errors.Is(err, ErrAmbiguousKey) {
		t.Errorf("two readings: %v, want ErrAmbiguousKey", err)
	}
	if _, err := ParseWritten("a:b:c:d:e", nil); !errors.Is(err, ErrBadKey) {
		t.Errorf("no check, five parts: %v, want ErrBadKey", err)
	}
}

// Whatever a platform's check accepts reads back from Key, and from
// Written unless another reading is accepted too.
func FuzzParseWritten(f *testing.F) {
	f.Add("group", "!r:ex.org", "")
	f.Add("thread", "!r:ex.org:8448", "$e:ex.org")
	f.Add("dm", "!100%:x", "")
	f.Fuzz(func(t *testing.T, kind, chat, thread string) {
		a := Address{Platform: "m", Kind: Kind(kind), Chat: chat, Thread: thread}
		if roomsWithServers(a) != nil || a.Kind != DM && a.Kind != Group && a.Kind != Thread {
			return // not an address the check and the kit accept
		}
		if back, err := ParseWritten(a.Key(), roomsWithServers); back != a {
			t.Fatalf("ParseWritten(%q) = %+v, %v; want %+v", a.Key(), back, err, a)
		}
		back, err := ParseWritten(a.Written(), roomsWithServers)
		if err != nil && !errors.Is(err, ErrAmbiguousKey) || err == nil && back != a {
			t.Fatalf("ParseWritten(%q) = %+v, %v; want %+v", a.Written(), back, err, a)
		}
	})
}
