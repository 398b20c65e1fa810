package gitops_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing/object"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/gitsource"
	"github.com/gitfleet/gitfleet/gitsource/gitops"
	"github.com/gitfleet/gitfleet/status"
)

// fetchCounter is an Observer that counts fetches.
type fetchCounter struct{ fetches atomic.Int64 }

func (f *fetchCounter) Fetched(time.Duration, error)                       { f.fetches.Add(1) }
func (f *fetchCounter) Rendered(time.Duration)                             {}
func (f *fetchCounter) RenderFailed(*object.Commit, string)                {}
func (f *fetchCounter) Processed(*object.Commit, int)                      {}
func (f *fetchCounter) Pushed(status.Changeset, time.Duration, int, error) {}
func (f *fetchCounter) SourceReady(string, bool)                           {}

var _ gitops.Observer = (*fetchCounter)(nil)

// pushPayload is the start of what GitHub posts on a push.
var pushPayload = []byte(`{"ref":"refs/heads/main","repository":{"full_name":"acme/fleet"}}`)

// postWebhook posts a push notification with the given headers and returns
// the status code.
func postWebhook(t testing.TB, url string, body []byte, headers map[string]string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "push")
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

// githubSignature is GitHub's X-Hub-Signature-256 of body.
func githubSignature(body, secret []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// With polling off, a signed push webhook is what makes gitfleet fetch: the
// new commit's snapshot appears at once. A webhook without a valid
// signature is refused with 401 and fetches nothing.
func TestSignedWebhookFetchesAtOnceAndUnsignedOnesNothing(t *testing.T) {
	secret := []byte("s3cret")
	files := quickstartFleet(t)
	r := newFleetRepo(t, files)
	fetches := &fetchCounter{}
	d := startDaemonWith(t, "file://"+r.remote, t.TempDir(), 0, func(c *gitops.Config) { c.Observer = fetches })
	// The webhook notifies before it answers, so counting notifications
	// tells at once whether a refused delivery asked for a fetch.
	var notified atomic.Int64
	notify := func() { notified.Add(1); d.poke() }
	srv := httptest.NewServer(&gitsource.Webhook{Secret: secret, Notify: notify, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer srv.Close()

	waitForCanaryApproval(t, r)
	d.settle(t, r)
	v2 := strings.Replace(string(files["workload.yaml"]), "key: value1", "key: value2", 1)
	commit := r.commit("value2", map[string][]byte{"workload.yaml": []byte(v2)})
	// The person's commit carries the status tree of its parent: read it
	// from the commit, as a status commit the daemon pushed after settle
	// (one it was due to write anyway) is not the webhooks' doing.
	statusTree := r.git("rev-parse", commit+":status")
	before := fetches.fetches.Load()

	for name, headers := range map[string]map[string]string{
		"no signature":         nil,
		"wrong secret":         {gitsource.HeaderGitHubSignature: githubSignature(pushPayload, []byte("guess"))},
		"signature of another": {gitsource.HeaderGitHubSignature: githubSignature([]byte(`{"ref":"refs/heads/dev"}`), secret)},
		"not hex":              {gitsource.HeaderGitHubSignature: "sha256=zz"},
		"wrong gitlab token":   {gitsource.HeaderGitLabToken: "guess"},
	} {
		if code := postWebhook(t, srv.URL, pushPayload, headers); code != http.StatusUnauthorized {
			t.Errorf("webhook with %s: %d, want 401", name, code)
		}
	}
	if n := notified.Load(); n != 0 {
		t.Errorf("refused webhooks asked for %d fetches", n)
	}
	if n := fetches.fetches.Load() - before; n != 0 {
		t.Errorf("refused webhooks caused %d fetches", n)
	}
	if r.file("status/snapshots/example-placement/1.yaml") != nil {
		t.Error("a snapshot of the new commit was recorded without a valid webhook")
	}
	if tip := r.git("rev-parse", "main"); tip != commit {
		t.Errorf("main moved from the pushed commit to %s after refused webhooks:\n%s", tip, r.git("log", "-p", commit+".."+tip))
	}
	if got := r.git("rev-parse", "main:status"); got != statusTree {
		t.Errorf("the status tree changed after refused webhooks")
	}

	start := time.Now()
	if code := postWebhook(t, srv.URL, pushPayload, map[string]string{gitsource.HeaderGitHubSignature: githubSignature(pushPayload, secret)}); code != http.StatusAccepted {
		t.Fatalf("signed webhook: %d, want 202", code)
	}
	if n := notified.Load(); n != 1 {
		t.Errorf("a signed webhook asked for %d fetches, want 1", n)
	}
	eventually(t, "snapshot 1 after the signed webhook", func() bool {
		return r.file("status/snapshots/example-placement/1.yaml") != nil
	})
	t.Logf("signed webhook to snapshot in Git: %s", time.Since(start).Round(time.Millisecond))
	snap := r.object("status/snapshots/example-placement/1.yaml").(*fleet.ResourceSnapshot)
	if got := snap.Annotations[fleet.CommitAnnotation]; got != commit {
		t.Errorf("snapshot 1 records commit %s, want %s", got, commit)
	}
}
