package gitsource

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
)

func TestWebhook(t *testing.T) {
	secret := []byte("webhook-s3cret")
	body := []byte(`{"ref":"refs/heads/main","after":"0123"}`)
	sig := sign(sha256.New, body, secret)
	wrongSig := sign(sha256.New, body, []byte("other"))
	sha1Sig, wrongSHA1Sig := sign(sha1.New, body, secret), sign(sha1.New, body, []byte("other"))
	giteaSig := hex.EncodeToString(hmacOf(sha256.New, body, secret))
	form := []byte("payload=" + url.QueryEscape(string(body)))
	json := map[string]string{"Content-Type": "application/json"}
	with := func(headers ...string) map[string]string {
		m := map[string]string{"Content-Type": "application/json"}
		for i := 0; i < len(headers); i += 2 {
			m[headers[i]] = headers[i+1]
		}
		return m
	}

	var triggered atomic.Int32
	var logs syncBuffer
	h := &Webhook{Secret: secret, Notify: func() { triggered.Add(1) }, MaxBody: 1 << 10}
	h.Logger = newTextLogger(&logs)
	srv := httptest.NewServer(h)
	defer srv.Close()

	for _, tc := range []struct {
		name    string
		method  string
		headers map[string]string
		body    []byte
		status  int
		trigger bool
	}{
		{"github valid", "POST", with(HeaderGitHubSignature, sig, "X-GitHub-Event", "push"), body, 202, true},
		{"github wrong secret", "POST", with(HeaderGitHubSignature, wrongSig), body, 401, false},
		{"github tampered body", "POST", with(HeaderGitHubSignature, sig), append(bytes.Clone(body), ' '), 401, false},
		{"github malformed", "POST", with(HeaderGitHubSignature, "sha256=zz"), body, 401, false},
		{"github sha1 only", "POST", with(HeaderGitHubSignature, "sha1="+strings.Repeat("0", 40)), body, 401, false},
		// GitHub sends both headers; go-github checks sha256 when it is
		// there and the older sha1 header only without it.
		{"github sha256 and sha1 valid", "POST", with(HeaderGitHubSignature, sig, HeaderGitHubSignatureSHA1, sha1Sig), body, 202, true},
		{"github sha256 valid, sha1 wrong", "POST", with(HeaderGitHubSignature, sig, HeaderGitHubSignatureSHA1, wrongSHA1Sig), body, 202, true},
		{"github sha256 wrong, sha1 valid", "POST", with(HeaderGitHubSignature, wrongSig, HeaderGitHubSignatureSHA1, sha1Sig), body, 401, false},
		{"github sha1 header alone", "POST", with(HeaderGitHubSignatureSHA1, sha1Sig), body, 202, true},
		{"github sha1 header alone, wrong", "POST", with(HeaderGitHubSignatureSHA1, wrongSHA1Sig), body, 401, false},
		{"github sha1 header with a sha256 signature", "POST", with(HeaderGitHubSignatureSHA1, sig), body, 202, true},
		{"github form-encoded", "POST", map[string]string{"Content-Type": "application/x-www-form-urlencoded", HeaderGitHubSignature: sign(sha256.New, form, secret)}, form, 202, true},
		{"github without a content type", "POST", map[string]string{HeaderGitHubSignature: sig}, body, 401, false},
		{"github plain text", "POST", map[string]string{"Content-Type": "text/plain", HeaderGitHubSignature: sig}, body, 401, false},
		{"unsigned", "POST", json, body, 401, false},
		{"gitfleet valid", "POST", with(HeaderGitfleetSignature, sig), body, 202, true},
		{"gitfleet wrong", "POST", with(HeaderGitfleetSignature, wrongSig), body, 401, false},
		{"gitea valid", "POST", with(HeaderGiteaSignature, giteaSig, "X-Gitea-Event", "push"), body, 202, true},
		{"gitea wrong", "POST", with(HeaderGiteaSignature, hex.EncodeToString(hmacOf(sha256.New, body, []byte("other")))), body, 401, false},
		{"gitea prefixed", "POST", with(HeaderGiteaSignature, sig), body, 401, false},
		{"gitlab valid", "POST", with(HeaderGitLabToken, string(secret), "X-Gitlab-Event", "Push Hook"), body, 202, true},
		{"gitlab wrong", "POST", with(HeaderGitLabToken, "webhook-s3cre"), body, 401, false},
		// A bad GitHub signature is not rescued by a good GitLab token.
		{"first header decides", "POST", with(HeaderGitHubSignature, wrongSig, HeaderGitLabToken, string(secret)), body, 401, false},
		{"GET", "GET", with(HeaderGitHubSignature, sig), nil, 405, false},
		{"oversize", "POST", with(HeaderGitHubSignature, sig), bytes.Repeat([]byte("x"), 2<<10), 413, false},
		{"oversize gitlab", "POST", with(HeaderGitLabToken, string(secret)), bytes.Repeat([]byte("x"), 2<<10), 413, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := triggered.Load()
			req, _ := http.NewRequest(tc.method, srv.URL, bytes.NewReader(tc.body))
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if got := triggered.Load() > before; got != tc.trigger {
				t.Errorf("triggered = %v, want %v", got, tc.trigger)
			}
		})
	}

	// Oversize without Content-Length (chunked) is caught while reading.
	t.Run("oversize chunked", func(t *testing.T) {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("POST", "/", strings.NewReader(strings.Repeat("x", 2<<10)))
		req.ContentLength = -1
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(HeaderGitHubSignature, sig)
		before := triggered.Load()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusRequestEntityTooLarge || triggered.Load() != before {
			t.Fatalf("status %d, triggered %v", rec.Code, triggered.Load() != before)
		}
	})

	if strings.Contains(logs.String(), string(secret)) {
		t.Fatalf("logs leak the secret:\n%s", logs.String())
	}
}

func TestWebhookWithoutSecretRejectsAll(t *testing.T) {
	var triggered atomic.Int32
	h := &Webhook{Notify: func() { triggered.Add(1) }, Logger: newTextLogger(&syncBuffer{})}
	body := []byte("{}")
	for _, hdr := range []map[string]string{
		{HeaderGitHubSignature: sign(sha256.New, body, nil), "Content-Type": "application/json"},
		{HeaderGitLabToken: ""},
		{},
	} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("POST", "/", bytes.NewReader(body))
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusUnauthorized {
			t.Errorf("status %d, want 401", rec.Code)
		}
	}
	if triggered.Load() != 0 {
		t.Fatal("a webhook with no secret triggered")
	}
}

// The webhook feeds a Watcher; signals coalesce.
func TestWebhookTriggersWatcher(t *testing.T) {
	w := NewWatcher(newTextLogger(&syncBuffer{}))
	secret := []byte("s")
	h := &Webhook{Secret: secret, Notify: func() { w.Trigger("webhook") }, Logger: newTextLogger(&syncBuffer{})}
	body := []byte("{}")
	for range 3 {
		req := httptest.NewRequest("POST", "/", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(HeaderGitHubSignature, sign(sha256.New, body, secret))
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	select {
	case <-w.C():
	default:
		t.Fatal("no signal")
	}
	select {
	case <-w.C():
		t.Fatal("three webhooks made more than one pending signal")
	default:
	}
}

// A genuine delivery sent again (same delivery id) is dropped; a push to
// another branch than the tracked one fetches nothing; events without a
// ref still fetch.
func TestWebhookDropsReplaysAndOtherBranches(t *testing.T) {
	secret := []byte("webhook-s3cret")
	var triggered atomic.Int32
	own := strings.Repeat("ab", 20)
	h := &Webhook{Secret: secret, Branch: "main", Notify: func() { triggered.Add(1) },
		Known: func(commit string) bool { return commit == own }}
	srv := httptest.NewServer(h)
	defer srv.Close()
	post := func(body string, headers map[string]string) int {
		t.Helper()
		req, _ := http.NewRequest("POST", srv.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(HeaderGitHubSignature, sign(sha256.New, []byte(body), secret))
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tc := range []struct {
		name    string
		body    string
		headers map[string]string
		trigger bool
	}{
		{"push to main", `{"ref":"refs/heads/main"}`, map[string]string{"X-GitHub-Delivery": "d1"}, true},
		{"the same delivery again", `{"ref":"refs/heads/main"}`, map[string]string{"X-GitHub-Delivery": "d1"}, false},
		{"a new delivery", `{"ref":"refs/heads/main"}`, map[string]string{"X-GitHub-Delivery": "d2"}, true},
		{"gitea replay", `{"ref":"refs/heads/main"}`, map[string]string{"X-Gitea-Delivery": "g1"}, true},
		{"gitea replayed", `{"ref":"refs/heads/main"}`, map[string]string{"X-Gitea-Delivery": "g1"}, false},
		{"push to another branch", `{"ref":"refs/heads/feature"}`, nil, false},
		{"a tag", `{"ref":"refs/tags/v1"}`, nil, false},
		{"gitfleet's own push to main", `{"ref":"refs/heads/main","after":"` + own + `"}`, nil, false},
		{"a person's push to main", `{"ref":"refs/heads/main","after":"` + strings.Repeat("cd", 20) + `"}`, nil, true},
		{"an after that is not a string", `{"ref":"refs/heads/main","after":7}`, nil, true},
		{"ping without a ref", `{"zen":"hi"}`, nil, true},
		{"not JSON", `payload=x`, nil, true},
		// A form-encoded GitHub delivery carries its JSON in "payload".
		{"form-encoded push to another branch", "payload=" + url.QueryEscape(`{"ref":"refs/heads/feature"}`),
			map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, false},
		{"form-encoded push to main", "payload=" + url.QueryEscape(`{"ref":"refs/heads/main"}`),
			map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, true},
	} {
		before := triggered.Load()
		if code := post(tc.body, tc.headers); code >= 300 {
			t.Errorf("%s: status %d", tc.name, code)
		}
		if got := triggered.Load() != before; got != tc.trigger {
			t.Errorf("%s: fetch triggered %v, want %v", tc.name, got, tc.trigger)
		}
	}
}

// FuzzPushRef parses any webhook payload: never a panic, and a JSON object
// whose ref is a string yields that string.
func FuzzPushRef(f *testing.F) {
	for _, seed := range []string{`{"ref":"refs/heads/main","after":"0123"}`, `{"zen":"hi"}`, `{"ref":7}`, `[]`, `payload=x`, ``} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ref, ok := PushRef(body)
		if !ok && ref != "" {
			t.Fatalf("PushRef(%q) = %q, false", body, ref)
		}
	})
}

// sign is a signature header's value: the hash's name, "=", the hex HMAC
// of body, as GitHub and X-Gitfleet-Signature senders write it.
func sign(h func() hash.Hash, body, secret []byte) string {
	name := map[int]string{sha1.Size: "sha1", sha256.Size: "sha256"}[h().Size()]
	return name + "=" + hex.EncodeToString(hmacOf(h, body, secret))
}

// hmacOf is the HMAC of body with secret.
func hmacOf(h func() hash.Hash, body, secret []byte) []byte {
	m := hmac.New(h, secret)
	m.Write(body)
	return m.Sum(nil)
}
