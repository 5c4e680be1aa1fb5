package validate

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzName: a name the validator accepts is safe everywhere it goes: a URL path segment
// unchanged by escaping, an LXD instance name part, a log field.
func FuzzName(f *testing.F) {
	for _, seed := range []string{"web", "web-1", "1web", "", "a/b", "..", "web%2f", "wéb", strings.Repeat("a", 64), "a b", "web\n", "-web", "web-"} {
		f.Add(seed)
	}

	f.Fuzz(func(t *testing.T, name string) {
		for _, kind := range []string{"deployment", "shape", "key"} {
			if Name(kind, name) != nil {
				continue
			}

			if name == "" || len(name) > 63 || url.PathEscape(name) != name || strings.ContainsAny(name, "/.\\ \t\n%?#") {
				t.Fatalf("%s name %q accepted", kind, name)
			}
		}
	})
}

// FuzzConfigKey: accepted keys are printable, without spaces or control characters.
func FuzzConfigKey(f *testing.F) {
	for _, seed := range []string{"user.x", "webhook.timeout", "", "user.", "user.a b", "governor.socket", "x\x00"} {
		f.Add(seed, "v")
	}

	f.Fuzz(func(t *testing.T, key string, value string) {
		if ConfigKey(key) == nil {
			for _, r := range key {
				if r <= ' ' || r == 0x7f {
					t.Fatalf("config key %q accepted", key)
				}
			}
		}

		_ = Config(map[string]string{key: value})
	})
}

// FuzzWebhookURL: accepted URLs are absolute http(s) URLs with a host.
func FuzzWebhookURL(f *testing.F) {
	for _, seed := range []string{"http://127.0.0.1:8080/hook", "https://gov.example/h?t=1", "ftp://x", "http://", "//x", "http://[::1]:1/", "javascript:alert(1)"} {
		f.Add(seed)
	}

	f.Fuzz(func(t *testing.T, raw string) {
		if raw == "" || WebhookURL(raw) != nil {
			return
		}

		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			t.Fatalf("webhook URL %q accepted", raw)
		}
	})
}
