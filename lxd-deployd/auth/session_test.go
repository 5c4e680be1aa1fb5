package auth

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestCheckBrowserOrigin(t *testing.T) {
	tests := []struct {
		method  string
		headers map[string]string
		allowed bool
	}{
		{http.MethodGet, map[string]string{"Origin": "https://evil.example"}, true},
		{http.MethodPost, nil, true},
		{http.MethodPost, map[string]string{"Origin": "https://daemon:8443"}, true},
		{http.MethodPost, map[string]string{"Origin": "https://evil.example"}, false},
		{http.MethodDelete, map[string]string{"Origin": "null"}, false},
		{http.MethodPost, map[string]string{"Sec-Fetch-Site": "cross-site"}, false},
		{http.MethodPost, map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "https://daemon:8443"}, true},
	}

	for _, tt := range tests {
		r := httptest.NewRequest(tt.method, "https://daemon:8443/1.0/deployments", nil)
		for k, v := range tt.headers {
			r.Header.Set(k, v)
		}

		err := CheckBrowserOrigin(r)
		if (err == nil) != tt.allowed {
			t.Errorf("%s %v: %v, want allowed %v", tt.method, tt.headers, err, tt.allowed)
		}
	}
}

func TestCheckSessionRequest(t *testing.T) {
	secret, _, err := NewSessionSecret()
	if err != nil {
		t.Fatal(err)
	}

	other, _, _ := NewSessionSecret()
	tests := []struct {
		name     string
		method   string
		csrf     string
		readOnly bool
		allowed  bool
	}{
		{"read", http.MethodGet, "", true, true},
		{"write with the token", http.MethodPost, CSRFToken(secret), false, true},
		{"write without the token", http.MethodPost, "", false, false},
		{"write with another session's token", http.MethodPatch, CSRFToken(other), false, false},
		{"read-only write with the token", http.MethodPost, CSRFToken(secret), true, false},
	}

	for _, tt := range tests {
		r := httptest.NewRequest(tt.method, "https://daemon/1.0/deployments", nil)
		if tt.csrf != "" {
			r.Header.Set(CSRFHeader, tt.csrf)
		}

		err := CheckSessionRequest(r, secret, tt.readOnly)
		if (err == nil) != tt.allowed {
			t.Errorf("%s: %v, want allowed %v", tt.name, err, tt.allowed)
		}
	}
}
