package main

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"
)

func TestNormalizeAddr(t *testing.T) {
	tests := map[string]string{
		"10.0.0.1":              "https://10.0.0.1:8444",
		"10.0.0.1:9000":         "https://10.0.0.1:9000",
		"https://host":          "https://host:8444",
		"https://host:9000/":    "https://host:9000",
		"fd00::1":               "https://[fd00::1]:8444",
		"[fd00::1]:9000":        "https://[fd00::1]:9000",
		"https://[fd00::1]:443": "https://[fd00::1]:443",
	}

	for in, want := range tests {
		got, err := normalizeAddr(in)
		if err != nil || got != want {
			t.Errorf("normalizeAddr(%q) = %q, %v; want %q", in, got, err, want)
		}
	}

	for _, bad := range []string{"http://host", "ftp://host", "https://host/path"} {
		_, err := normalizeAddr(bad)
		if err == nil {
			t.Errorf("normalizeAddr(%q) accepted", bad)
		}
	}
}

func encodeToken(t *testing.T, token lxdapi.CertificateAddToken) string {
	t.Helper()
	data, err := json.Marshal(token)
	if err != nil {
		t.Fatal(err)
	}

	return base64.StdEncoding.EncodeToString(data)
}

func TestDecodeTokenArg(t *testing.T) {
	valid := lxdapi.CertificateAddToken{ClientName: "laptop", Fingerprint: strings.Repeat("a", 64), Addresses: []string{"10.0.0.1:8444"}, Secret: "s", ExpiresAt: time.Now().Add(time.Hour)}
	raw := encodeToken(t, valid)

	token, addr, err := decodeTokenArg(raw, "")
	if err != nil || token == nil || token.Secret != "s" || addr != "" {
		t.Errorf("token as the address argument: %+v %q %v", token, addr, err)
	}

	token, addr, err = decodeTokenArg("https://h:1", raw)
	if err != nil || token == nil || addr != "https://h:1" {
		t.Errorf("--token with an address: %+v %q %v", token, addr, err)
	}

	token, addr, err = decodeTokenArg("10.0.0.1:8444", "")
	if err != nil || token != nil || addr != "10.0.0.1:8444" {
		t.Errorf("plain address: %+v %q %v", token, addr, err)
	}

	_, _, err = decodeTokenArg("", "not-a-token")
	if err == nil || !strings.Contains(err.Error(), "trust token is not valid") {
		t.Errorf("bad --token: %v", err)
	}

	expired := valid
	expired.ExpiresAt = time.Now().Add(-time.Hour)
	_, _, err = decodeTokenArg(encodeToken(t, expired), "")
	if err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("expired token: %v", err)
	}
}

func TestTrustAddArgs(t *testing.T) {
	tests := []struct {
		args         []string
		remote, cert string
		err          bool
	}{
		{args: nil},
		{args: []string{"prod:"}, remote: "prod:"},
		{args: []string{"gov.crt"}, cert: "gov.crt"},
		{args: []string{"prod:", "gov.crt"}, remote: "prod:", cert: "gov.crt"},
		{args: []string{"prod", "gov.crt"}, err: true},
	}

	for _, tt := range tests {
		remote, cert, err := trustAddArgs(tt.args)
		if (err != nil) != tt.err || remote != tt.remote || cert != tt.cert {
			t.Errorf("trustAddArgs(%v) = %q, %q, %v", tt.args, remote, cert, err)
		}
	}
}

func TestShapeCreateRequest(t *testing.T) {
	req, err := shapeCreateFlags{image: "busybox", minimum: 1, maximum: 3, maximumSet: true}.request("web")
	if err != nil {
		t.Fatal(err)
	}

	tmpl := req.InstanceTemplate
	if req.Name != "web" || req.ScalingMinimum != 1 || req.ScalingMaximum != 3 || tmpl.Source.Type != "image" || tmpl.Source.Alias != "busybox" || tmpl.Type != lxdapi.InstanceTypeContainer || tmpl.Profiles != nil {
		t.Errorf("request: %+v", req)
	}

	req, err = shapeCreateFlags{profiles: []string{"default", "big"}, vm: true, minimum: 2}.request("db")
	if err != nil {
		t.Fatal(err)
	}

	if req.ScalingMaximum != 2 || req.InstanceTemplate.Type != lxdapi.InstanceTypeVM || len(req.InstanceTemplate.Profiles) != 2 || req.InstanceTemplate.Source.Type != "none" {
		t.Errorf("request: %+v", req)
	}

	if shapeSource(req.InstanceTemplate) != "profiles:default,big (vm)" {
		t.Errorf("source: %q", shapeSource(req.InstanceTemplate))
	}

	_, err = shapeCreateFlags{image: "images:debian"}.request("x")
	if err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Errorf("remote image: %v", err)
	}

	_, err = shapeCreateFlags{minimum: 3, maximum: 1, maximumSet: true}.request("x")
	if err == nil || !strings.Contains(err.Error(), "scaling_maximum") {
		t.Errorf("bounds: %v", err)
	}
}

func TestNewName(t *testing.T) {
	tg := &target{remote: "prod", name: "dep1"}
	for arg, want := range map[string]string{"dep2": "dep2", "prod:dep2": "dep2"} {
		got, err := tg.newName(arg, "deployment")
		if err != nil || got != want {
			t.Errorf("newName(%q) = %q, %v", arg, got, err)
		}
	}

	for _, arg := range []string{"local:dep2", "bad_name", ""} {
		_, err := tg.newName(arg, "deployment")
		if err == nil {
			t.Errorf("newName(%q) accepted", arg)
		}
	}
}
