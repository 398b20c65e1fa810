package forge

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync/atomic"
)

// CallError is a failed forge call with the HTTP status the forge answered
// (0 when no answer came: the forge was unreachable). The three SDKs report
// failures each their own way, and Gitea's drops the status; the status is
// taken from the wire instead, so that callers can tell an outage from a
// refusal the same way on every forge.
type CallError struct {
	Status int
	Err    error
}

func (e *CallError) Error() string { return e.Err.Error() }
func (e *CallError) Unwrap() error { return e.Err }

// Failure classes, as Class names them: the label of the error metric and
// the unit in which failures are logged.
const (
	ClassUnreachable = "unreachable"  // no answer: network, DNS, TLS, timeout
	ClassAuth        = "unauthorized" // 401: the token is wrong or expired
	ClassForbidden   = "forbidden"    // 403: the token may not do this
	ClassNotFound    = "not_found"    // 404: repository, pull request or commit unknown
	ClassRateLimited = "rate_limited" // 429
	ClassRejected    = "rejected"     // another 4xx: the forge refused the request
	ClassServer      = "server_error" // 5xx: the forge failed
	ClassOther       = "other"
)

// Classes lists every class Class returns.
var Classes = []string{ClassUnreachable, ClassAuth, ClassForbidden, ClassNotFound, ClassRateLimited, ClassRejected, ClassServer, ClassOther}

// Class sorts a forge call's error into one of the Class constants.
func Class(err error) string {
	var fe *CallError
	if !errors.As(err, &fe) || fe.Status == 0 {
		var ne net.Error
		if errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) {
			return ClassUnreachable
		}
		return ClassOther
	}
	switch s := fe.Status; {
	case s == http.StatusUnauthorized:
		return ClassAuth
	case s == http.StatusForbidden:
		return ClassForbidden
	case s == http.StatusNotFound:
		return ClassNotFound
	case s == http.StatusTooManyRequests:
		return ClassRateLimited
	case s >= 500:
		return ClassServer
	case s >= 400:
		return ClassRejected
	}
	return ClassOther
}

// lastStatus is where the transport writes the status of the last failed
// response of one forge call (one call may make several requests).
type lastStatus struct{ v atomic.Int64 }

type lastStatusKey struct{}

// statusTransport records the status of failed responses in the call's
// lastStatus, found in the request's context.
type statusTransport struct{ base http.RoundTripper }

func (t statusTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if ls, ok := r.Context().Value(lastStatusKey{}).(*lastStatus); ok && err == nil && resp.StatusCode >= 400 {
		ls.v.Store(int64(resp.StatusCode))
	}
	return resp, err
}

// observed wraps hc so that the calls of f (which must use it) report
// their status through CallError.
func observed(hc *http.Client) *http.Client {
	c := *hc
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c.Transport = statusTransport{base}
	return &c
}

// call runs one forge call and wraps its error in a CallError with the status
// of the response that failed it.
func call(ctx context.Context, fn func(ctx context.Context) error) error {
	ls := &lastStatus{}
	err := fn(context.WithValue(ctx, lastStatusKey{}, ls))
	if err == nil {
		return nil
	}
	return &CallError{Status: int(ls.v.Load()), Err: err}
}

// classified gives every call of a client a CallError.
type classified struct{ f Forge }

func (c classified) OpenPRs(ctx context.Context) (prs []PR, err error) {
	err = call(ctx, func(ctx context.Context) (err error) { prs, err = c.f.OpenPRs(ctx); return })
	return prs, err
}

func (c classified) CreatePR(ctx context.Context, head, base, title, body string) (pr PR, err error) {
	err = call(ctx, func(ctx context.Context) (err error) { pr, err = c.f.CreatePR(ctx, head, base, title, body); return })
	return pr, err
}

func (c classified) EditPR(ctx context.Context, n int, title, body string) error {
	return call(ctx, func(ctx context.Context) error { return c.f.EditPR(ctx, n, title, body) })
}

func (c classified) ClosePR(ctx context.Context, n int) error {
	return call(ctx, func(ctx context.Context) error { return c.f.ClosePR(ctx, n) })
}

func (c classified) Merged(ctx context.Context, n int) (merged bool, err error) {
	err = call(ctx, func(ctx context.Context) (err error) { merged, err = c.f.Merged(ctx, n); return })
	return merged, err
}

func (c classified) Comments(ctx context.Context, n int) (cs []Comment, err error) {
	err = call(ctx, func(ctx context.Context) (err error) { cs, err = c.f.Comments(ctx, n); return })
	return cs, err
}

func (c classified) CreateComment(ctx context.Context, n int, body string) error {
	return call(ctx, func(ctx context.Context) error { return c.f.CreateComment(ctx, n, body) })
}

func (c classified) EditComment(ctx context.Context, n int, id int64, body string) error {
	return call(ctx, func(ctx context.Context) error { return c.f.EditComment(ctx, n, id, body) })
}

func (c classified) DeleteBranch(ctx context.Context, branch string) error {
	return call(ctx, func(ctx context.Context) error { return c.f.DeleteBranch(ctx, branch) })
}

func (c classified) Login(ctx context.Context) (login string, err error) {
	err = call(ctx, func(ctx context.Context) (err error) { login, err = c.f.Login(ctx); return })
	return login, err
}

func (c classified) SetStatus(ctx context.Context, sha string, s Status) error {
	return call(ctx, func(ctx context.Context) error { return c.f.SetStatus(ctx, sha, s) })
}
