package registry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// registryServer serves an index with one template, web:v1, whose files are given; index
// entries may be altered by edit.
func registryServer(t *testing.T, files map[string]string, edit func(*IndexVersion)) *httptest.Server {
	t.Helper()
	v := IndexVersion{Version: "v1", Template: "web.jinja"}
	for p, content := range files {
		sum := sha256.Sum256([]byte(content))
		v.Files = append(v.Files, IndexFile{Path: p, Size: int64(len(content)), SHA256: hex.EncodeToString(sum[:])})
	}

	if edit != nil {
		edit(&v)
	}

	idx, _ := json.Marshal(Index{Format: IndexFormat, Templates: []IndexTemplate{{Name: "web", Versions: []IndexVersion{v}}}})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/reg/index.json" && r.URL.Query().Get("moved") == "":
			// Moved within the registry: a redirect to follow.
			http.Redirect(w, r, "/reg/index.json?moved=1", http.StatusFound)
		case r.URL.Path == "/reg/index.json":
			_, _ = w.Write(idx)
		case strings.HasPrefix(r.URL.Path, "/reg/web/v1/"):
			content, ok := files[strings.TrimPrefix(r.URL.Path, "/reg/web/v1/")]
			if !ok {
				http.NotFound(w, r)
				return
			}

			_, _ = w.Write([]byte(content))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestRedirectsStayInsideTheRegistry(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		_, _ = w.Write([]byte(`{"format":1,"templates":[]}`))
	}))
	defer other.Close()

	for _, target := range []string{other.URL + "/reg/index.json", "file:///etc/passwd", "/elsewhere/index.json", "/reg/../reg/index.json"} {
		srv := httptest.NewServer(http.RedirectHandler(target, http.StatusFound))
		f := &Fetcher{Registries: map[string]string{"github.com/acme/templates": srv.URL + "/reg/"}}
		_, err := f.Fetch(context.Background(), "github.com/acme/templates/web:v1")
		srv.Close()
		if err == nil || (!strings.Contains(err.Error(), "leaves") && !strings.Contains(err.Error(), "redirect")) {
			t.Errorf("redirect to %s: %v", target, err)
		}
	}

	if elsewhere.Load() != 0 {
		t.Fatalf("the daemon fetched from another host after a redirect")
	}

	// A redirect inside the registry is followed (registryServer moves its index).
	srv := registryServer(t, map[string]string{"web.jinja": "resources: []\n"}, nil)
	f := &Fetcher{Registries: map[string]string{"github.com/acme/templates": srv.URL + "/reg/"}}
	_, err := f.Fetch(context.Background(), "github.com/acme/templates/web:v1")
	if err != nil {
		t.Fatalf("a redirect inside the registry was refused: %v", err)
	}
}

func TestPlainURLCannotClimbOutOfARegistry(t *testing.T) {
	srv := registryServer(t, map[string]string{"web.jinja": "resources: []\n"}, nil)
	f := &Fetcher{Registries: map[string]string{"github.com/acme/templates": srv.URL + "/reg/"}}
	for _, u := range []string{
		srv.URL + "/reg/../secret/t.jinja",
		srv.URL + "/reg/%2e%2e/secret/t.jinja",
		srv.URL + "/reg/./web/v1/web.jinja",
		srv.URL + "/register/t.jinja",
		strings.Replace(srv.URL, "http://", "http://user:pw@", 1) + "/reg/web/v1/web.jinja",
	} {
		_, err := f.Fetch(context.Background(), u)
		if err == nil {
			t.Errorf("%s was fetched", u)
		}
	}

	_, err := f.Fetch(context.Background(), srv.URL+"/reg/web/v1/web.jinja")
	if err != nil {
		t.Fatalf("a URL inside the registry: %v", err)
	}
}

func TestIndexSizesAreChecked(t *testing.T) {
	big := strings.Repeat("x", 300)
	files := map[string]string{"web.jinja": big, "a.txt": big, "b.txt": big, "c.txt": big}
	limits := Limits{FileBytes: 300, BundleBytes: 1000}

	// Negative sizes in the index would let the sum pass the bundle cap.
	srv := registryServer(t, files, func(v *IndexVersion) {
		for i := range v.Files {
			v.Files[i].Size = -1000
		}
	})
	f := &Fetcher{Registries: map[string]string{"github.com/acme/templates": srv.URL + "/reg/"}, Limits: limits}
	_, err := f.Fetch(context.Background(), "github.com/acme/templates/web:v1")
	if err == nil || !strings.Contains(err.Error(), "negative size") {
		t.Fatalf("negative sizes: %v", err)
	}

	// Understated sizes: what arrives counts, and a file longer than its size is refused.
	srv = registryServer(t, files, func(v *IndexVersion) {
		for i := range v.Files {
			v.Files[i].Size = 1
		}
	})
	f.Registries = map[string]string{"github.com/acme/templates": srv.URL + "/reg/"}
	_, err = f.Fetch(context.Background(), "github.com/acme/templates/web:v1")
	if err == nil || !strings.Contains(err.Error(), "limit") {
		t.Fatalf("understated sizes: %v", err)
	}

	// Honest sizes over the bundle cap.
	srv = registryServer(t, files, nil)
	f.Registries = map[string]string{"github.com/acme/templates": srv.URL + "/reg/"}
	_, err = f.Fetch(context.Background(), "github.com/acme/templates/web:v1")
	if err == nil || !strings.Contains(err.Error(), "limit") {
		t.Fatalf("bundle cap: %v", err)
	}
}

func TestFetchedContentNeverInErrors(t *testing.T) {
	const secret = "TOP-SECRET-INTERNAL-PAGE"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "index.json"):
			_, _ = w.Write([]byte("<html>" + secret + "</html>"))
		case strings.HasSuffix(r.URL.Path, ".schema"):
			_, _ = w.Write([]byte("imports: " + secret + "\n  - : [\n"))
		case strings.HasSuffix(r.URL.Path, "t.jinja"):
			_, _ = w.Write([]byte("resources: []\n"))
		default:
			w.WriteHeader(http.StatusTeapot)
			_, _ = w.Write([]byte(secret))
		}
	}))
	defer srv.Close()

	f := &Fetcher{Registries: map[string]string{"github.com/acme/templates": srv.URL + "/reg/"}}
	for _, typ := range []string{"github.com/acme/templates/web:v1", srv.URL + "/reg/t.jinja", srv.URL + "/reg/teapot.jinja"} {
		_, err := f.Fetch(context.Background(), typ)
		if err == nil {
			t.Fatalf("%s: fetched", typ)
		}

		if strings.Contains(err.Error(), "SECRET") {
			t.Fatalf("%s: the error shows fetched content: %v", typ, err)
		}
	}
}
