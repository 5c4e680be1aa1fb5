package webhook

import (
	"errors"
	"testing"
	"time"
)

func TestSignatureRoundTrip(t *testing.T) {
	now := time.Now()
	body := []byte(`{"id":"1","type":"ping"}`)
	header := Sign("s3cret", body, now)
	if err := Verify("s3cret", body, header, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name   string
		secret string
		body   []byte
		header string
		now    time.Time
		want   error
	}{
		{"tampered body", "s3cret", []byte(`{"id":"2","type":"ping"}`), header, now, ErrBadSignature},
		{"wrong secret", "other", body, header, now, ErrBadSignature},
		{"old timestamp", "s3cret", body, header, now.Add(6 * time.Minute), ErrStaleSignature},
		{"future timestamp", "s3cret", body, header, now.Add(-6 * time.Minute), ErrStaleSignature},
		{"not signed", "s3cret", body, "", now, ErrMissingSignature},
	}

	for _, tt := range tests {
		err := Verify(tt.secret, tt.body, tt.header, tt.now)
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, err, tt.want)
		}
	}

	if Verify("s3cret", body, "garbage", now) == nil {
		t.Error("a malformed header must be refused")
	}
}
