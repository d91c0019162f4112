package mcptoolset

import (
	"bytes"
	"testing"
	"time"
)

func testKeys() *handleKeys {
	return &handleKeys{key: bytes.Repeat([]byte{1}, 32), ttl: time.Hour, now: func() time.Time { return time.Unix(1_800_000_000, 0) }}
}

// A handle checks with the key and binding it was minted for, and with no
// other.
func TestRunHandleChecks(t *testing.T) {
	k := testKeys()
	id := newRunID()
	h := k.mint(id, "alice")
	if len(h) > maxRunHandleLen {
		t.Fatalf("a handle of %d bytes, over the bound %d", len(h), maxRunHandleLen)
	}
	got, err := k.check(h, "alice")
	if err != nil || got != id {
		t.Fatalf("check = %x, %v; want %x", got, err, id)
	}
	for _, b := range []string{"", "bob", "alice\x00", "alic"} {
		if _, err := k.check(h, b); err != errHandleInvalid {
			t.Errorf("binding %q: %v, want %v", b, err, errHandleInvalid)
		}
	}
	other := &handleKeys{key: bytes.Repeat([]byte{2}, 32), ttl: time.Hour, now: k.now}
	if _, err := other.check(h, "alice"); err != errHandleInvalid {
		t.Errorf("another key: %v", err)
	}
	later := &handleKeys{key: k.key, ttl: time.Hour, now: func() time.Time { return k.now().Add(time.Hour) }}
	if _, err := later.check(h, "alice"); err != errHandleExpired {
		t.Errorf("at its expiry: %v", err)
	}
}

// FuzzRunHandle checks that no input makes check panic, and that only
// the handle minted checks.
func FuzzRunHandle(f *testing.F) {
	k := testKeys()
	id := [handleIDLen]byte{1, 2, 3}
	good := k.mint(id, "alice")
	f.Add(good, "alice")
	f.Add(good, "bob")
	f.Add("r1.", "")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, h, binding string) {
		got, err := k.check(h, binding)
		if err == nil && (h != good || binding != "alice" || got != id) {
			t.Fatalf("check(%q, %q) accepted run %x", h, binding, got)
		}
	})
}

// A handle signed with a previous key checks; one signed with a key
// dropped does not.
func TestRunHandleKeyChange(t *testing.T) {
	old := testKeys()
	id := newRunID()
	h := old.mint(id, "alice")
	next := &handleKeys{key: bytes.Repeat([]byte{9}, 32), previous: [][]byte{old.key}, ttl: time.Hour, now: old.now}
	if got, err := next.check(h, "alice"); err != nil || got != id {
		t.Fatalf("with the old key as previous: %x, %v", got, err)
	}
	if _, err := next.check(next.mint(id, "alice"), "alice"); err != nil {
		t.Fatalf("a handle of the new key: %v", err)
	}
	alone := &handleKeys{key: next.key, ttl: time.Hour, now: old.now}
	if _, err := alone.check(h, "alice"); err != errHandleInvalid {
		t.Fatalf("once the old key is dropped: %v", err)
	}
}
