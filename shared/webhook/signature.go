// Package webhook signs and verifies webhook deliveries, for the daemon that sends them and
// the governors that receive them.
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// SignatureHeader carries "t=<unix seconds>,v1=<hex HMAC-SHA256 of "t.body">".
const SignatureHeader = "X-LXD-Deployd-Signature"

// Tolerance is how old (or how far in the future) a signed timestamp may be.
const Tolerance = 5 * time.Minute

// Sign returns the signature header value for body sent at t.
func Sign(secret string, body []byte, t time.Time) string {
	return fmt.Sprintf("t=%d,v1=%s", t.Unix(), mac(secret, t.Unix(), body))
}

func mac(secret string, timestamp int64, body []byte) string {
	h := hmac.New(sha256.New, []byte(secret))
	_, _ = fmt.Fprintf(h, "%d.", timestamp)
	_, _ = h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// Errors a receiver can tell apart.
var (
	ErrMissingSignature = errors.New("the delivery is not signed: no " + SignatureHeader + " header")
	ErrBadSignature     = errors.New("the signature does not match the body: wrong secret, or the body was changed")
	ErrStaleSignature   = errors.New("the signature timestamp is outside the 5 minute window: a replay, or a clock problem")
)

// Verify checks a signature header against the body, the secret and the clock.
func Verify(secret string, body []byte, header string, now time.Time) error {
	if header == "" {
		return ErrMissingSignature
	}

	var timestamp int64
	var signatures []string
	for _, part := range strings.Split(header, ",") {
		key, value, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch key {
		case "t":
			t, err := strconv.ParseInt(value, 10, 64)
			if err != nil {
				return fmt.Errorf("bad signature timestamp %q", value)
			}

			timestamp = t
		case "v1":
			signatures = append(signatures, value)
		}
	}

	if timestamp == 0 || len(signatures) == 0 {
		return fmt.Errorf("malformed %s header: want t=<unix>,v1=<hex>", SignatureHeader)
	}

	age := now.Sub(time.Unix(timestamp, 0))
	if age > Tolerance || age < -Tolerance {
		return ErrStaleSignature
	}

	want := []byte(mac(secret, timestamp, body))
	for _, signature := range signatures {
		if hmac.Equal(want, []byte(signature)) {
			return nil
		}
	}

	return ErrBadSignature
}
