package gitsource

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
)

// DefaultMaxWebhookBody bounds a webhook request body (1 MiB; GitHub caps
// push payloads at 25 MiB but gitfleet needs none of the content).
const DefaultMaxWebhookBody = 1 << 20

// Signature headers understood by Webhook.
const (
	HeaderGitHubSignature   = "X-Hub-Signature-256"  // sha256=<hex HMAC of body>
	HeaderGitfleetSignature = "X-Gitfleet-Signature" // same format, for anything else
	HeaderGitLabToken       = "X-Gitlab-Token"       // the secret itself
)

// Webhook is an http.Handler for forge push notifications. It accepts only
// POST requests authenticated with Secret — a GitHub-style HMAC-SHA256
// signature of the body (X-Hub-Signature-256 or X-Gitfleet-Signature:
// "sha256=<hex>") or a GitLab X-Gitlab-Token equal to the secret — and then
// calls Notify. The payload is not interpreted: any authenticated push means
// "fetch now", and the fetch finds out what changed. All comparisons are
// constant-time. Unauthenticated requests get 401 and trigger nothing, as
// does every request when Secret is empty.
type Webhook struct {
	Secret  []byte
	Notify  func() // e.g. func() { watcher.Trigger("webhook") }
	MaxBody int64  // default DefaultMaxWebhookBody
	Logger  *slog.Logger
}

// ServeHTTP authenticates one notification and, if it is genuine, calls
// Notify and answers 202 Accepted.
func (h *Webhook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	log := h.Logger
	if log == nil {
		log = slog.Default()
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	limit := h.MaxBody
	if limit <= 0 {
		limit = DefaultMaxWebhookBody
	}
	if r.ContentLength > limit {
		http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "cannot read body", http.StatusBadRequest)
		return
	}
	scheme, ok := h.verify(r.Header, body)
	if !ok {
		// Say nothing about which check failed.
		log.Warn("webhook rejected: missing or invalid signature", "remote", r.RemoteAddr, "scheme", scheme)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	log.Info("webhook accepted", "scheme", scheme, "event", eventName(r.Header))
	if h.Notify != nil {
		h.Notify()
	}
	w.WriteHeader(http.StatusAccepted)
}

// verify authenticates a request by the first signature header present.
func (h *Webhook) verify(hdr http.Header, body []byte) (scheme string, ok bool) {
	if len(h.Secret) == 0 {
		return "none configured", false
	}
	switch {
	case hdr.Get(HeaderGitHubSignature) != "":
		return "github", validHMAC(hdr.Get(HeaderGitHubSignature), body, h.Secret)
	case hdr.Get(HeaderGitfleetSignature) != "":
		return "gitfleet", validHMAC(hdr.Get(HeaderGitfleetSignature), body, h.Secret)
	case hdr.Get(HeaderGitLabToken) != "":
		// Compare digests so the comparison time does not even depend on
		// the token's length.
		got := sha256.Sum256([]byte(hdr.Get(HeaderGitLabToken)))
		want := sha256.Sum256(h.Secret)
		return "gitlab", subtle.ConstantTimeCompare(got[:], want[:]) == 1
	}
	return "unsigned", false
}

// validHMAC checks a "sha256=<hex>" signature of body.
func validHMAC(sig string, body, secret []byte) bool {
	hexSig, ok := strings.CutPrefix(strings.TrimSpace(sig), "sha256=")
	if !ok {
		return false
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil {
		return false
	}
	return hmac.Equal(got, Sign(body, secret))
}

// Sign returns the HMAC-SHA256 of body with secret, the raw form of the
// "sha256=<hex>" signature Webhook expects. It is what a sender computes.
func Sign(body, secret []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return m.Sum(nil)
}

func eventName(h http.Header) string {
	for _, k := range []string{"X-GitHub-Event", "X-Gitlab-Event", "X-Gitea-Event"} {
		if v := h.Get(k); v != "" {
			return v
		}
	}
	return ""
}
