// Package platform is the seam between baton and the chat services it
// lives on. It holds the types every adapter and the gateway share —
// Address, Event, the Adapter interface and its optional capabilities —
// and nothing of any one service: each service has a folder of its own
// below this one.
package platform

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Kind says what sort of place an Address is.
type Kind string

const (
	// DM is a one-to-one chat between the owner and the bot.
	DM Kind = "dm"
	// Group is a chat or channel several people may read.
	Group Kind = "group"
	// Thread is a thread, topic or sub-conversation inside a chat:
	// a Telegram forum topic, a Discord thread channel, a Slack thread.
	Thread Kind = "thread"
)

// Address is where a conversation happens on one service.
type Address struct {
	Platform string // "telegram", "web", …
	Kind     Kind
	Chat     string // chat, channel or room id
	Thread   string // topic id, thread id, thread ts, root event id; "" if none
}

// ErrBadKey is returned by ParseKey for a string that is not an address key.
var ErrBadKey = errors.New("not an address key")

// Key is the stable string bindings are stored under:
// "telegram:dm:12345", "telegram:thread:-100777:42",
// "slack:thread:C01:1700000000.1234". Parts are escaped, so ids holding
// ':' (Matrix rooms) stay unambiguous. An adapter must produce the same key
// for a thread it created as for a message a person later types there.
func (a Address) Key() string {
	var b strings.Builder
	b.WriteString(escape(a.Platform))
	b.WriteByte(':')
	b.WriteString(escape(string(a.Kind)))
	b.WriteByte(':')
	b.WriteString(escape(a.Chat))
	if a.Thread != "" {
		b.WriteByte(':')
		b.WriteString(escape(a.Thread))
	}
	return b.String()
}

func (a Address) String() string { return a.Key() }

// Written is a as a person writes it (gateway.homes): Key without the
// escaping, "matrix:group:!roomid:example.org". ParseWritten reads it
// back only where the platform's check tells where each id ends; Key is
// the form to store.
func (a Address) Written() string {
	w := a.Platform + ":" + string(a.Kind) + ":" + a.Chat
	if a.Thread != "" {
		w += ":" + a.Thread
	}
	return w
}

// IsZero reports whether a is the empty address.
func (a Address) IsZero() bool { return a == Address{} }

// ParseKey is the inverse of Key.
func ParseKey(key string) (Address, error) {
	parts := strings.Split(key, ":")
	if len(parts) < 3 || len(parts) > 4 {
		return Address{}, fmt.Errorf("parse %q: %w", key, ErrBadKey)
	}
	for i, p := range parts {
		u, err := url.PathUnescape(p)
		if err != nil {
			return Address{}, fmt.Errorf("parse %q: %w", key, ErrBadKey)
		}
		parts[i] = u
	}
	a := Address{Platform: parts[0], Kind: Kind(parts[1]), Chat: parts[2]}
	if len(parts) == 4 {
		a.Thread = parts[3]
	}
	if a.Platform == "" || a.Kind == "" || (len(parts) == 4 && a.Thread == "") {
		return Address{}, fmt.Errorf("parse %q: %w", key, ErrBadKey)
	}
	return a, nil
}

// Home is the address of the chat that holds a, without its thread: where a
// new thread for a would be created.
func (a Address) Home() Address {
	if a.Thread == "" {
		return a
	}
	h := a
	h.Thread = ""
	if h.Kind == Thread {
		h.Kind = Group
	}
	return h
}

// escape keeps ':' and '%' out of key parts.
func escape(s string) string {
	if !strings.ContainsAny(s, ":%") {
		return s
	}
	return strings.NewReplacer("%", "%25", ":", "%3A").Replace(s)
}

// ErrAmbiguousKey is returned by ParseWritten for a written key its
// platform could read as more than one address.
var ErrAmbiguousKey = errors.New("address key can be read more than one way")

// ParseWritten reads an address key a person wrote (gateway.homes) as
// its platform reads it: check refuses an address the platform cannot
// have. A key as Key makes it (what /sethome stores) reads as ParseKey
// reads it; otherwise an id may hold ':' as it is, as Matrix room ids do
// ("matrix:group:!roomid:example.org"), and the one way of splitting the
// rest into chat and thread that check accepts is taken. With no check
// only Key's form is read: nothing says where such ids end.
func ParseWritten(key string, check func(Address) error) (Address, error) {
	accept := func(a Address) error {
		if a.Kind != DM && a.Kind != Group && a.Kind != Thread {
			return fmt.Errorf("%q is no kind of place: the kinds are dm, group and thread", a.Kind)
		}
		if check != nil {
			if err := check(a); err != nil {
				return err
			}
		}
		switch {
		case a.Chat == "":
			return errors.New("the chat's id is missing")
		case a.Kind == Thread && a.Thread == "":
			return errors.New("a thread needs its id after the chat's")
		}
		return nil
	}
	a, err := ParseKey(key)
	if err == nil {
		if err = accept(a); err == nil {
			return a, nil
		}
	}
	parts := strings.Split(key, ":")
	if check == nil || len(parts) < 3 || parts[0] == "" || parts[1] == "" {
		return Address{}, err
	}
	rest := parts[2:]
	var found []Address
	var whole error // why the reading with no thread is refused
	for i := len(rest); i >= 1; i-- {
		c := Address{Platform: parts[0], Kind: Kind(parts[1]), Chat: strings.Join(rest[:i], ":"), Thread: strings.Join(rest[i:], ":")}
		if c.Chat == "" || (i < len(rest) && c.Thread == "") {
			continue
		}
		cerr := accept(c)
		if i == len(rest) {
			whole = cerr
		}
		if cerr == nil {
			found = append(found, c)
		}
	}
	switch {
	case len(found) == 1:
		return found[0], nil
	case len(found) > 1:
		return Address{}, fmt.Errorf("parse %q: %w; write each ':' inside an id as %%3A", key, ErrAmbiguousKey)
	case whole != nil:
		return Address{}, whole
	}
	return Address{}, err
}
