package db

import (
	"context"
	"database/sql"
	"testing"
	"time"
)

// TestJoinTokenBoundToRedeemerAndSpentOnJoin: the first daemon to redeem a token may
// redeem it again (a join that failed half way), no other may; the token is listed until
// its member registers, and can be revoked until then.
func TestJoinTokenBoundToRedeemerAndSpentOnJoin(t *testing.T) {
	c := newTestCluster(t)
	now := time.Now()
	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		for _, name := range []string{"m2", "m3"} {
			err := CreateJoinToken(ctx, tx, JoinToken{Name: name, SecretHash: "h-" + name, ExpiresAt: now.Add(time.Hour)}, now)
			if err != nil {
				return err
			}
		}

		token, err := ClaimJoinToken(ctx, tx, "h-m2", "fp-a", now)
		if err != nil || token.Name != "m2" {
			t.Fatalf("claim: %+v %v", token, err)
		}

		_, err = ClaimJoinToken(ctx, tx, "h-m2", "fp-a", now)
		if err != nil {
			t.Fatalf("the same daemon redeems again: %v", err)
		}

		_, err = ClaimJoinToken(ctx, tx, "h-m2", "fp-b", now)
		expectStatus(t, err, 403)

		tokens, err := GetJoinTokens(ctx, tx, now)
		if err != nil || len(tokens) != 2 || tokens[0].CertificateFingerprint != "fp-a" || tokens[1].CertificateFingerprint != "" {
			t.Fatalf("tokens: %+v %v", tokens, err)
		}

		err = SaveMember(ctx, tx, Member{Name: "m2", DatabaseAddress: "db2", HeartbeatAt: now, CertificateFingerprint: "fp-a"})
		if err != nil {
			return err
		}

		_, err = ClaimJoinToken(ctx, tx, "h-m2", "fp-a", now)
		expectStatus(t, err, 403)
		err = DeleteJoinToken(ctx, tx, "m3")
		if err != nil {
			return err
		}

		expectStatus(t, DeleteJoinToken(ctx, tx, "m3"), 404)
		tokens, err = GetJoinTokens(ctx, tx, now)
		if err != nil || len(tokens) != 0 {
			t.Fatalf("tokens after join and revocation: %+v %v", tokens, err)
		}

		member, err := GetMemberByFingerprint(ctx, tx, "fp-a")
		if err != nil || member.Name != "m2" {
			t.Fatalf("member by its certificate: %+v %v", member, err)
		}

		return nil
	})
}
