package gitsource

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/google/go-github/v92/github"
)

// DefaultMaxWebhookBody bounds a webhook request body (1 MiB; GitHub caps
// push payloads at 25 MiB but gitfleet needs none of the content).
const DefaultMaxWebhookBody = 1 << 20

// Signature headers understood by Webhook, in the order it looks for them.
const (
	HeaderGitHubSignature     = github.SHA256SignatureHeader // X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of body>
	HeaderGitHubSignatureSHA1 = github.SHA1SignatureHeader   // X-Hub-Signature: sha1=<hex HMAC-SHA1>, GitHub's older header
	HeaderGitfleetSignature   = "X-Gitfleet-Signature"       // sha256=<hex>, for anything else
	HeaderGiteaSignature      = "X-Gitea-Signature"          // <hex HMAC-SHA256>, without a prefix
	HeaderGitLabToken         = "X-Gitlab-Token"             // the secret itself
)

// Webhook is an http.Handler for forge push notifications. It accepts only
// POST requests authenticated with Secret and then calls Notify. GitHub's
// signatures (X-Hub-Signature-256, else X-Hub-Signature) are checked by
// go-github's ValidatePayload, as GitHub documents: an application/json
// or form-encoded body, its HMAC with sha256 when that header is sent and
// sha1 otherwise. X-Gitfleet-Signature ("sha256=<hex>") and Gitea's
// X-Gitea-Signature (the bare hex HMAC-SHA256) are HMACs of the body too;
// GitLab's X-Gitlab-Token must equal the secret. The first header present
// decides. The payload is read for its ref only: any authenticated push
// means "fetch now", and the fetch finds out what changed. All comparisons
// are constant-time. Unauthenticated requests get 401 and trigger nothing,
// as does every request when Secret is empty.
type Webhook struct {
	Secret  []byte
	Notify  func() // e.g. func() { watcher.Trigger("webhook") }
	MaxBody int64  // default DefaultMaxWebhookBody
	// Branch, if set, is the tracked branch: a push event for another ref
	// ("ref" of a GitHub, GitLab or Gitea payload) is acknowledged and
	// ignored. Events without a ref (a ping, a merge request) still fetch.
	Branch string
	// Known, if set, reports whether a commit is already in the cache as
	// the branch's tip serve pushed itself (Source.IsOwnTip): a push event
	// whose "after" is such a commit is acknowledged and ignored. When
	// status goes to the tracked branch, the forge sends a webhook for
	// every one of gitfleet's own pushes, and the fetch it asked for held
	// the next push up.
	Known func(commit string) bool
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
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	payload, scheme, err := h.verify(r)
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
		return
	case errors.Is(err, errUnreadable):
		http.Error(w, "cannot read body", http.StatusBadRequest)
		return
	case err != nil:
		// Say nothing about which check failed; the log does.
		log.Warn("webhook rejected: missing or invalid signature", "remote", r.RemoteAddr, "scheme", scheme, "err", err.Error())
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	if id := deliveryID(r.Header); id != "" && h.replayed(id) {
		log.Warn("webhook dropped: delivery already received", "delivery", id)
		w.WriteHeader(http.StatusOK)
		return
	}
	if ref, ok := PushRef(payload); ok && ref != "" && h.Branch != "" && ref != "refs/heads/"+h.Branch {
		log.Debug("webhook ignored: push to another branch", "ref", ref, "branch", h.Branch)
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if after := pushAfter(payload); after != "" && h.Known != nil && h.Known(after) {
		log.Debug("webhook ignored: announces gitfleet's own push", "commit", after)
		w.WriteHeader(http.StatusAccepted)
		return
	}
	log.Info("webhook accepted", "scheme", scheme, "event", eventName(r.Header))
	if h.Notify != nil {
		h.Notify()
	}
	w.WriteHeader(http.StatusAccepted)
}

// errUnreadable is a body that could not be read, for a reason other
// than its size.
var errUnreadable = errors.New("cannot read body")

// verify authenticates a request by the first signature header present
// and returns its payload: the body, or the JSON a form-encoded GitHub
// delivery carries.
func (h *Webhook) verify(r *http.Request) (payload []byte, scheme string, err error) {
	if len(h.Secret) == 0 {
		return nil, "none configured", errors.New("no webhook secret configured")
	}
	if r.Header.Get(HeaderGitHubSignature) != "" || r.Header.Get(HeaderGitHubSignatureSHA1) != "" {
		payload, err := github.ValidatePayload(r, h.Secret)
		return payload, "github", err
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, "", err
		}
		return nil, "", errUnreadable
	}
	switch {
	case r.Header.Get(HeaderGitfleetSignature) != "":
		return body, "gitfleet", github.ValidateSignature(r.Header.Get(HeaderGitfleetSignature), body, h.Secret)
	case r.Header.Get(HeaderGiteaSignature) != "":
		return body, "gitea", github.ValidateSignature("sha256="+r.Header.Get(HeaderGiteaSignature), body, h.Secret)
	case r.Header.Get(HeaderGitLabToken) != "":
		// Compare digests so the comparison time does not even depend on
		// the token's length.
		got := sha256.Sum256([]byte(r.Header.Get(HeaderGitLabToken)))
		want := sha256.Sum256(h.Secret)
		if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			return nil, "gitlab", errors.New("wrong token")
		}
		return body, "gitlab", nil
	}
	return nil, "unsigned", errors.New("no signature header")
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

// pushAfter is the "after" of a push payload (GitHub, GitLab and Gitea
// send the branch's new tip there), or "".
func pushAfter(body []byte) string {
	var p struct {
		After any `json:"after"`
	}
	if json.Unmarshal(body, &p) != nil {
		return ""
	}
	after, _ := p.After.(string)
	return after
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
