package redact

import "testing"

func TestURL(t *testing.T) {
	for in, want := range map[string]string{
		"":                                      "",
		"http://127.0.0.1:8080/hook":            "http://127.0.0.1:8080/hook",
		"https://gov.example/hook?token=s3cret": "https://gov.example/hook?(redacted)",
		"https://user:pw@gov.example/h#frag":    "https://gov.example/h?(redacted)",
		"::not a url":                           "(redacted)",
	} {
		got := URL(in)
		if got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
}
