package auth

import (
	"net/http"
	"strings"
	"testing"

	lxdapi "github.com/canonical/lxd/shared/api"
	"github.com/golang-jwt/jwt/v5"
)

// FuzzVerifyToken feeds the JWT verifier arbitrary tokens, starting from a valid one and
// its near misses: it must never panic, refuse with a 401 that names the token, and accept
// only what was really signed, once (a replay of its token id is refused).
func FuzzVerifyToken(f *testing.F) {
	fx := newTokenFixture(&testing.T{})
	valid := fx.sign(&testing.T{}, jwt.SigningMethodES384, fx.key, fx.claims(), fx.fp)
	f.Add(valid)
	f.Add(valid[:len(valid)-3] + "AAA")
	parts := strings.Split(valid, ".")
	f.Add("eyJhbGciOiJub25lIiwia2lkIjoiYSJ9." + parts[1] + ".")
	f.Add("eyJhbGciOiJIUzI1NiJ9." + parts[1] + "." + parts[2])
	f.Add(parts[0] + "." + parts[1])
	f.Add("")
	f.Add("....")
	f.Fuzz(func(t *testing.T, raw string) {
		v := NewTokenVerifier()
		caller, err := v.Verify(raw, fx.lookup, fx.now)
		if err != nil {
			code, ok := lxdapi.StatusErrorMatch(err)
			if !ok || code != http.StatusUnauthorized || !strings.HasPrefix(err.Error(), "governor token refused") {
				t.Fatalf("refusal is not a 401 about the token: %v", err)
			}

			return
		}

		// Only our key signed anything, and only the fixture's claims: an accepted token
		// (the valid one, or an encoding variant of it) must carry exactly those.
		if caller == nil || caller.Fingerprint != fx.fp || caller.Subject != "gov1" || caller.Audience != TokenAudience("default", "dep1") {
			t.Fatalf("accepted a token that was not signed: %q -> %+v", raw, caller)
		}

		_, err = v.Verify(valid, fx.lookup, fx.now)
		if err == nil {
			t.Fatal("the same token id was accepted twice")
		}
	})
}
