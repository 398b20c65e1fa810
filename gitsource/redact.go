package gitsource

import (
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
)

// redacted replaces every secret in logs and errors.
const redacted = "***"

// RedactURL returns rawURL safe for logs and errors: a password in the
// userinfo becomes "***" (https://user:***@host/repo), a bare username on an
// http(s) URL is treated as a token and hidden entirely (https://***@host),
// and query values are hidden. scp-style addresses (git@host:path) and local
// paths carry no secret and are returned unchanged.
func RedactURL(rawURL string) string {
	if !strings.Contains(rawURL, "://") {
		return rawURL
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		// Unparseable: fall back to the pattern-based scrubber.
		return scrubURLs(rawURL)
	}
	var b strings.Builder
	b.WriteString(u.Scheme)
	b.WriteString("://")
	if u.User != nil {
		b.WriteString(redactUserinfo(u.Scheme, u.User.String()))
		b.WriteByte('@')
	}
	b.WriteString(u.Host)
	b.WriteString(u.EscapedPath())
	if u.RawQuery != "" {
		q := u.Query()
		keys := make([]string, 0, len(q))
		for k := range q {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for i, k := range keys {
			if i == 0 {
				b.WriteByte('?')
			} else {
				b.WriteByte('&')
			}
			b.WriteString(url.QueryEscape(k))
			b.WriteString("=" + redacted)
		}
	}
	return b.String()
}

// redactUserinfo hides the secret part of a URL's userinfo.
func redactUserinfo(scheme, userinfo string) string {
	if user, _, ok := strings.Cut(userinfo, ":"); ok {
		return user + ":" + redacted
	}
	switch strings.ToLower(scheme) {
	case "http", "https":
		// https://<token>@host is a common way to pass a token.
		return redacted
	}
	return userinfo
}

// urlUserinfo matches the userinfo of any URL embedded in free text.
var urlUserinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*)://([^/?#@\s"'<>]+)@`)

// scrubURLs hides the userinfo of every URL found in s.
func scrubURLs(s string) string {
	return urlUserinfo.ReplaceAllStringFunc(s, func(m string) string {
		sub := urlUserinfo.FindStringSubmatch(m)
		return sub[1] + "://" + redactUserinfo(sub[1], sub[2]) + "@"
	})
}

// redactor scrubs text of known secret values and URL credentials. Secrets
// are registered as they are read, and kept after rotation so an old token
// echoed in a late error is still hidden.
type redactor struct {
	mu      sync.Mutex
	secrets []string
}

// add registers secret values (empty ones are ignored), together with their
// URL-escaped forms, which is how they appear inside URLs.
func (r *redactor) add(values ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range values {
		if v == "" {
			continue
		}
		for _, form := range []string{v, url.QueryEscape(v), url.PathEscape(v), url.UserPassword("x", v).String()[2:]} {
			if form != "" && !slices.Contains(r.secrets, form) {
				r.secrets = append(r.secrets, form)
			}
		}
	}
	// Longest first, so a secret that contains another is replaced whole.
	sort.Slice(r.secrets, func(i, j int) bool { return len(r.secrets[i]) > len(r.secrets[j]) })
}

// scrub returns s without any registered secret or URL credential.
func (r *redactor) scrub(s string) string {
	r.mu.Lock()
	for _, secret := range r.secrets {
		s = strings.ReplaceAll(s, secret, redacted)
	}
	r.mu.Unlock()
	return scrubURLs(s)
}
