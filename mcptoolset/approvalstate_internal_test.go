package mcptoolset

import (
	"strings"
	"testing"
	"time"
)

func testSubject() *approvalSubject {
	return &approvalSubject{nonce: [nonceLen]byte{7}, name: "transfer", args: `{"amount":5}`,
		schema: "sha256:" + strings.Repeat("ab", 32), run: "mcp-h-1"}
}

// A state opens with the key and binding it was minted for, binds what
// it was minted with, and is refused once expired.
func TestApprovalStateBinds(t *testing.T) {
	k := testKeys()
	a := testSubject()
	st, ok := k.mintApproval(a, "alice")
	if !ok || len(st) != maxApprovalStateLen {
		t.Fatalf("mint = %q, %v; want a state of %d bytes", st, ok, maxApprovalStateLen)
	}
	c, err := k.openApproval(st, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if c.nonce != a.nonce || !c.matches(a.name, a.run) || !c.matchesCall(a.args, a.schema) {
		t.Fatal("the state does not bind what it was minted with")
	}
	if c.matches("transfer2", a.run) || c.matches(a.name, "") || c.matchesCall(`{"amount":6}`, a.schema) || c.matchesCall(a.args, "sha256:"+strings.Repeat("cd", 32)) {
		t.Fatal("the state binds something else too")
	}
	if _, err := k.openApproval(st, "bob"); err != errStateInvalid {
		t.Errorf("another binding: %v", err)
	}
	later := *k
	later.now = func() time.Time { return k.now().Add(k.ttl) }
	if _, err := later.openApproval(st, "alice"); err != errStateExpired {
		t.Errorf("at its expiry: %v", err)
	}
	if _, ok := k.mintApproval(&approvalSubject{schema: "md5:00"}, ""); ok {
		t.Error("minted a state with a schema hash that is not one")
	}
}

// FuzzApprovalState checks that no input makes openApproval panic, and
// that only the state minted opens.
func FuzzApprovalState(f *testing.F) {
	k := testKeys()
	good, _ := k.mintApproval(testSubject(), "alice")
	f.Add(good, "alice")
	f.Add(good, "bob")
	f.Add("a1.", "")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, st, binding string) {
		c, err := k.openApproval(st, binding)
		if err == nil && (st != good || binding != "alice" || c.nonce != testSubject().nonce) {
			t.Fatalf("openApproval(%q, %q) accepted", st, binding)
		}
	})
}
