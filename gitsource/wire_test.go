package gitsource

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitfleet/gitfleet/internal/testing/gittest"
)

// Credentials the test HTTP server accepts.
const (
	httpUser     = "fleet-bot"
	httpPassword = "pa55-w0rd-s3cret"
	httpToken    = "ghp_T0kenThatMustNeverLeak123"
)

// startHTTPBackend serves the fixture's remote through git http-backend
// behind HTTP basic auth (httpUser/httpPassword, or httpToken); with
// useTLS over https, returning the file of the CA that signed it.
func startHTTPBackend(t *testing.T, f *fixture, useTLS bool) (repoURL, caFile string) {
	t.Helper()
	base, caFile := gittest.HTTPBackend(t, f.root, gittest.HTTPOptions{User: httpUser, Password: httpPassword, Token: httpToken, TLS: useTLS})
	return base + "remote.git", caFile
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// exerciseWire clones, fetches and pushes through a Source and checks each
// step against the remote on disk.
func exerciseWire(t *testing.T, f *fixture, cfg Config) {
	t.Helper()
	ctx := ctxT(t)
	s, err := Open(ctx, cfg)
	if err != nil {
		t.Fatalf("clone: %v", err)
	}
	want := f.push(t, "over the wire", map[string]string{"workloads/w.yaml": "w\n"})
	head, err := s.Fetch(ctx)
	if err != nil {
		t.Fatalf("fetch: %v", err)
	}
	if head.Commit != want {
		t.Fatalf("fetched %s, want %s", head.Commit, want)
	}
	// Make the cached tip stale so the push also goes through a rejection.
	f.push(t, "meanwhile", map[string]string{"workloads/m.yaml": "m\n"})
	res, err := s.Apply(ctx, Change{Message: "status", Writes: map[string][]byte{"status/runs/w.yaml": []byte("w\n")}})
	if err != nil {
		t.Fatalf("push: %v", err)
	}
	if res.Attempts != 2 || f.remoteTip(t, "main") != res.Commit {
		t.Fatalf("Apply = %+v, remote tip %s", res, f.remoteTip(t, "main"))
	}
	if got := f.show(t, "main", "workloads/m.yaml"); got != "m" {
		t.Fatalf("human commit lost: %q", got)
	}
	if _, err := s.PushBranch(ctx, "a1", Change{Writes: map[string][]byte{"approvals/a1.yaml": []byte("ok\n")}}); err != nil {
		t.Fatalf("push branch: %v", err)
	}
	if got := f.show(t, "gitfleet/approve/a1", "approvals/a1.yaml"); got != "ok" {
		t.Fatalf("approve branch content %q", got)
	}
	runGit(t, f.bare, "fsck", "--strict", "--no-progress")
}

func TestGitDaemon(t *testing.T) {
	f := newFixture(t)
	cfg := f.config(t)
	cfg.URL = gittest.Daemon(t, f.root) + "remote.git"
	exerciseWire(t, f, cfg)
}

func writeSecret(t *testing.T, value string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(p, []byte(value+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestHTTPBackend(t *testing.T) {
	t.Run("credentials over plain http are refused", func(t *testing.T) {
		f := newFixture(t)
		cfg := f.config(t)
		cfg.URL, _ = startHTTPBackend(t, f, false)
		cfg.Auth = Auth{UsernameFile: writeSecret(t, httpUser), PasswordFile: writeSecret(t, httpPassword)}
		_, err := Open(ctxT(t), cfg)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "--allow-insecure-http") {
			t.Fatalf("Open with credentials over http://: %v, want ErrInvalid naming --allow-insecure-http", err)
		}
	})
	t.Run("username and password file", func(t *testing.T) {
		f := newFixture(t)
		cfg := f.config(t)
		cfg.AllowInsecureHTTP = true // a test server on loopback
		cfg.URL, _ = startHTTPBackend(t, f, false)
		cfg.Auth = Auth{UsernameFile: writeSecret(t, httpUser), PasswordFile: writeSecret(t, httpPassword)}
		exerciseWire(t, f, cfg)
	})
	t.Run("token from env", func(t *testing.T) {
		f := newFixture(t)
		cfg := f.config(t)
		cfg.AllowInsecureHTTP = true // a test server on loopback
		cfg.URL, _ = startHTTPBackend(t, f, false)
		t.Setenv("GITSOURCE_TEST_TOKEN", httpToken)
		cfg.Auth = Auth{TokenEnv: "GITSOURCE_TEST_TOKEN"}
		exerciseWire(t, f, cfg)
	})
	t.Run("credentials in the URL", func(t *testing.T) {
		f := newFixture(t)
		cfg := f.config(t)
		cfg.AllowInsecureHTTP = true // a test server on loopback
		raw, _ := startHTTPBackend(t, f, false)
		u, _ := url.Parse(raw)
		u.User = url.UserPassword(httpUser, httpPassword)
		cfg.URL = u.String()
		s, err := Open(ctxT(t), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(s.URL(), httpPassword) || !strings.Contains(s.URL(), httpUser+":***@") {
			t.Fatalf("URL() = %q", s.URL())
		}
		exerciseWire(t, f, cfg)
		// No file of the cache holds the password.
		err = filepath.WalkDir(cfg.CacheDir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(p)
			if strings.Contains(string(data), httpPassword) {
				t.Errorf("%s holds the password", p)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		// A changed password reuses the cache (a re-clone would fail:
		// the server does not know this one).
		u.User = url.UserPassword(httpUser, "rotated")
		cfg.URL = u.String()
		if _, err := Open(ctxT(t), cfg); err != nil {
			t.Fatalf("reopen with another password: %v", err)
		}
	})
	t.Run("https with CA file", func(t *testing.T) {
		f := newFixture(t)
		cfg := f.config(t)
		cfg.AllowInsecureHTTP = true // a test server on loopback
		var caFile string
		cfg.URL, caFile = startHTTPBackend(t, f, true)
		cfg.Auth = Auth{TokenFile: writeSecret(t, httpToken)}
		if _, err := Open(ctxT(t), cfg); err == nil {
			t.Fatal("https clone trusted an unknown CA")
		}
		cfg.Auth.CAFile = caFile
		exerciseWire(t, f, cfg)
	})
	t.Run("wrong password", func(t *testing.T) {
		f := newFixture(t)
		cfg := f.config(t)
		cfg.AllowInsecureHTTP = true // a test server on loopback
		cfg.URL, _ = startHTTPBackend(t, f, false)
		cfg.Auth = Auth{Username: httpUser, PasswordFile: writeSecret(t, "not-the-password")}
		_, err := Open(ctxT(t), cfg)
		if !errors.Is(err, ErrAuth) {
			t.Fatalf("Open with a wrong password: %v, want ErrAuth", err)
		}
		if strings.Contains(err.Error(), "not-the-password") {
			t.Fatalf("error leaks the password: %v", err)
		}
	})
}

// TestRedaction: credentials appear in no error and no log line, even when
// the server echoes them back or the connection fails.
func TestRedaction(t *testing.T) {
	// A server that reflects whatever credentials it receives.
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, _ := r.BasicAuth()
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, "bad credentials %s:%s for %s", user, pass, r.URL)
	}))
	defer echo.Close()
	echoURL, _ := url.Parse(echo.URL)
	closed := fmt.Sprintf("127.0.0.1:%d", freePort(t))

	for _, tc := range []struct {
		name string
		url  string
		auth Auth
	}{
		{"token in URL, echoed", "http://" + httpToken + "@" + echoURL.Host + "/r.git", Auth{}},
		{"user:token in URL, echoed", "http://x:" + httpToken + "@" + echoURL.Host + "/r.git", Auth{}},
		{"token file, echoed", echo.URL + "/r.git", Auth{TokenFile: writeSecret(t, httpToken)}},
		{"token in https URL, refused", "https://oauth2:" + httpToken + "@" + closed + "/r.git", Auth{}},
		{"token with URL-special characters", "https://x:" + url.PathEscape(httpToken+"/?#@") + "@" + closed + "/r.git", Auth{}},
		{"token in query, refused", "https://" + closed + "/r.git?private_token=" + httpToken, Auth{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs syncBuffer
			cfg := Config{
				URL:      tc.url,
				CacheDir: filepath.Join(t.TempDir(), "cache"),
				Auth:     tc.auth,
				Logger:   newTextLogger(&logs),
				// The echoing server is plain http: let the credentials
				// reach it, to see that its echo is scrubbed.
				AllowInsecureHTTP: true,
			}
			_, err := Open(ctxT(t), cfg)
			if err == nil {
				t.Fatal("Open succeeded")
			}
			for _, leak := range []string{httpToken, url.PathEscape(httpToken + "/?#@"), url.QueryEscape(httpToken)} {
				walkErrors(err, func(e error) {
					if strings.Contains(e.Error(), leak) {
						t.Errorf("error (or one it wraps) leaks the token: %v", e)
					}
				})
				if strings.Contains(logs.String(), leak) {
					t.Errorf("logs leak the token:\n%s", logs.String())
				}
			}
			if !strings.Contains(err.Error(), "***") {
				t.Errorf("error does not show where the secret was: %v", err)
			}
			t.Logf("error: %v", err)
		})
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://user:secret@github.com/org/fleet.git": "https://user:***@github.com/org/fleet.git",
		"https://ghp_abc@github.com/org/fleet.git":     "https://***@github.com/org/fleet.git",
		"https://github.com/org/fleet.git":             "https://github.com/org/fleet.git",
		"ssh://git@host:2222/org/fleet.git":            "ssh://git@host:2222/org/fleet.git",
		"ssh://git:pw@host/org/fleet.git":              "ssh://git:***@host/org/fleet.git",
		"git@github.com:org/fleet.git":                 "git@github.com:org/fleet.git",
		"/srv/git/fleet.git":                           "/srv/git/fleet.git",
		"https://host/r.git?private_token=abc&x=1":     "https://host/r.git?private_token=***&x=***",
		"https://u:p%40ss@host/r.git":                  "https://u:***@host/r.git",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
	if got := scrubURLs(`Get "https://u:tok@h/x": refused; see http://a@b/c`); got != `Get "https://u:***@h/x": refused; see http://***@b/c` {
		t.Errorf("scrubURLs = %q", got)
	}
}

// walkErrors calls fn on err and everything it wraps.
func walkErrors(err error, fn func(error)) {
	if err == nil {
		return
	}
	fn(err)
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		walkErrors(u.Unwrap(), fn)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			walkErrors(e, fn)
		}
	}
}
