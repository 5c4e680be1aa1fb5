package webhook

import (
	"testing"
	"time"
)

// FuzzVerify: any header either verifies or is refused, never panics; a header verifies
// only if it carries the right MAC of this body at an acceptable time, and a signature made
// by Sign always verifies.
func FuzzVerify(f *testing.F) {
	now := time.Unix(1_700_000_000, 0)
	body := []byte(`{"type":"scale-request"}`)
	f.Add("secret", body, Sign("secret", body, now))
	f.Add("secret", body, "t=1700000000,v1=00")
	f.Add("secret", body, "t=,v1=")
	f.Add("", []byte{}, "v1=abc,t=99999999999999999999")
	f.Add("s", body, "t=1700000000,v1="+mac("s", 1_700_000_000, body)+",v1=zz")
	f.Fuzz(func(t *testing.T, secret string, body []byte, header string) {
		err := Verify(secret, body, header, now)
		if err == nil && Verify(secret+"x", body, header, now) == nil {
			t.Fatalf("header %q verifies under two secrets", header)
		}

		if Verify(secret, body, Sign(secret, body, now), now) != nil {
			t.Fatal("a fresh signature does not verify")
		}
	})
}
