package gitsource

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"
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
	// Branch, if set, is the tracked branch: a push event for another ref
	// ("ref" of a GitHub, GitLab or Gitea payload) is acknowledged and
	// ignored. Events without a ref (a ping, a merge request) still fetch.
	Branch string
	// ReplayWindow is how long a delivery id (X-GitHub-Delivery,
	// X-Gitea-Delivery, X-Gitlab-Event-UUID) is remembered: a genuine
	// delivery sent again within it is acknowledged and dropped (default
	// DefaultReplayWindow).
	ReplayWindow time.Duration
	Logger       *slog.Logger

	mu   sync.Mutex
	seen map[string]time.Time // delivery id → when it was accepted
}

// DefaultReplayWindow is how long delivery ids are remembered.
const DefaultReplayWindow = 10 * time.Minute

// maxRemembered bounds the delivery ids kept, so a flood of genuine
// deliveries cannot grow memory without bound.
const maxRemembered = 4096

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
	if id := deliveryID(r.Header); id != "" && h.replayed(id) {
		log.Warn("webhook dropped: delivery already received", "delivery", id)
		w.WriteHeader(http.StatusOK)
		return
	}
	if ref, ok := PushRef(body); ok && ref != "" && h.Branch != "" && ref != "refs/heads/"+h.Branch {
		log.Debug("webhook ignored: push to another branch", "ref", ref, "branch", h.Branch)
		w.WriteHeader(http.StatusAccepted)
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

// PushRef returns the "ref" of a push payload (GitHub, GitLab and Gitea
// all send "refs/heads/<branch>"); ok is false when body is not a JSON
// object. The rest of the payload is never used: the fetch finds out what
// changed.
func PushRef(body []byte) (ref string, ok bool) {
	var p struct {
		Ref any `json:"ref"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return "", false
	}
	ref, _ = p.Ref.(string)
	return ref, true
}

// deliveryID is the forge's id of a delivery; a redelivery a person asks
// for in the forge's UI gets a new one on GitHub and Gitea.
func deliveryID(h http.Header) string {
	for _, k := range []string{"X-GitHub-Delivery", "X-Gitea-Delivery", "X-Gitlab-Event-UUID"} {
		if v := h.Get(k); v != "" {
			return k + "=" + v
		}
	}
	return ""
}

// replayed reports whether the delivery was accepted within the replay
// window, and remembers it otherwise.
func (h *Webhook) replayed(id string) bool {
	window := h.ReplayWindow
	if window <= 0 {
		window = DefaultReplayWindow
	}
	now := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.seen == nil {
		h.seen = map[string]time.Time{}
	}
	if at, ok := h.seen[id]; ok && now.Sub(at) < window {
		return true
	}
	if len(h.seen) >= maxRemembered {
		for k, at := range h.seen {
			if now.Sub(at) >= window {
				delete(h.seen, k)
			}
		}
		if len(h.seen) >= maxRemembered {
			// Still full of recent ids: forget them all rather than grow.
			clear(h.seen)
		}
	}
	h.seen[id] = now
	return false
}

func eventName(h http.Header) string {
	for _, k := range []string{"X-GitHub-Event", "X-Gitlab-Event", "X-Gitea-Event"} {
		if v := h.Get(k); v != "" {
			return v
		}
	}
	return ""
}
