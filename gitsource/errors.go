package gitsource

import (
	"context"
	"errors"
	"strings"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/transport"
)

// Sentinel errors; test with errors.Is.
var (
	// ErrAuth means the remote refused the credentials (or wanted some).
	ErrAuth = errors.New("authentication failed")
	// ErrNotFound means the repository or the tracked branch does not exist.
	ErrNotFound = errors.New("not found")
	// ErrRejected means a push was still rejected after every retry.
	ErrRejected = errors.New("push rejected")
	// ErrPathNotAllowed means a change touched a path outside the allow-list.
	ErrPathNotAllowed = errors.New("path not allowed")
	// ErrTooLarge means a file exceeded MaxFileSize (or a tree MaxTotalSize).
	ErrTooLarge = errors.New("too large")
	// ErrNotAncestor means a history walk's start commit is not on the
	// first-parent chain of its end commit (e.g. the branch was rewritten).
	ErrNotAncestor = errors.New("not an ancestor")
	// ErrInvalid means a configuration or change is malformed.
	ErrInvalid = errors.New("invalid")
)

// errNoSuchBranch refines ErrNotFound: the repository is there, the
// branch is not.
var errNoSuchBranch = errors.New("no such branch")

// Error is the error type returned by this package. Its message has been
// scrubbed of credentials. It deliberately does not wrap the underlying
// go-git error (whose text may hold a token); instead Unwrap exposes only
// constant sentinels: this package's Err* values, the matching go-git
// transport errors, and context.Canceled / context.DeadlineExceeded.
type Error struct {
	Op  string // what failed: "clone", "fetch", "push", "read", ...
	URL string // redacted remote URL, if the operation had one

	msg   string
	kinds []error
}

// Error returns the redacted message.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("gitsource: ")
	b.WriteString(e.Op)
	if e.URL != "" {
		b.WriteString(" ")
		b.WriteString(e.URL)
	}
	if e.msg != "" {
		b.WriteString(": ")
		b.WriteString(e.msg)
	}
	return b.String()
}

// Unwrap returns the sentinels that classify the error.
func (e *Error) Unwrap() []error { return e.kinds }

// constantErrors are upstream errors with fixed, secret-free messages that
// Error may expose for errors.Is.
var constantErrors = []error{
	context.Canceled,
	context.DeadlineExceeded,
	transport.ErrAuthenticationRequired,
	transport.ErrAuthorizationFailed,
	transport.ErrInvalidAuthMethod,
	transport.ErrRepositoryNotFound,
	transport.ErrEmptyRemoteRepository,
	git.NoErrAlreadyUpToDate,
}

// newError builds an *Error from cause, scrubbing its text with r (which may
// be nil) and classifying it. Extra kinds are added as given. An *Error
// cause is returned unchanged.
func newError(r *redactor, op, redactedURL string, cause error, kinds ...error) error {
	if cause == nil {
		return nil
	}
	var e *Error
	if errors.As(cause, &e) {
		return cause
	}
	msg := cause.Error()
	if r != nil {
		msg = r.scrub(msg)
	} else {
		msg = scrubURLs(msg)
	}
	for _, k := range constantErrors {
		if errors.Is(cause, k) {
			kinds = append(kinds, k)
		}
	}
	switch {
	case errors.Is(cause, transport.ErrAuthenticationRequired),
		errors.Is(cause, transport.ErrAuthorizationFailed),
		errors.Is(cause, transport.ErrInvalidAuthMethod),
		strings.Contains(msg, "unable to authenticate"):
		kinds = append(kinds, ErrAuth)
	case errors.Is(cause, git.NoMatchingRefSpecError{}):
		kinds = append(kinds, ErrNotFound, errNoSuchBranch)
	case errors.Is(cause, transport.ErrRepositoryNotFound),
		errors.Is(cause, transport.ErrEmptyRemoteRepository):
		kinds = append(kinds, ErrNotFound)
	}
	return &Error{Op: op, URL: redactedURL, msg: msg, kinds: kinds}
}

// errorf is newError for errors this package makes itself.
func errorf(op string, kind error, msg string) error {
	return &Error{Op: op, msg: msg, kinds: []error{kind}}
}
