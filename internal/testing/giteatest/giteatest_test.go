package giteatest

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestAStartFailsAtOnceWhenGiteasPortIsTaken(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = start(t, l.Addr().(*net.TCPAddr).Port)
	if err == nil {
		t.Fatal("gitea started on a taken port")
	}
	for _, want := range []string{"gitea exited (killed: it logged that it failed to start its server)", "address already in use"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q:\n%v", want, err)
		}
	}
}

// Gitea answers a merge with 405 "Please try again later" while it still
// checks the pull request, and with 409 "merge push out of date" when the
// base moved under its merge; Merge asks again, a bounded number of times,
// and returns any other answer, a refusal too, at once.
func TestMergeAsksAgainOnlyWhileGiteaSaysTryAgainLater(t *testing.T) {
	first := mergeRetry
	t.Cleanup(func() { mergeRetry = first })
	mergeRetry.attempts, mergeRetry.first, mergeRetry.most = 4, time.Millisecond, 2*time.Millisecond
	for _, tc := range []struct {
		name     string
		answers  []string // status and message of each answer; the last repeats
		want     string
		requests int
	}{
		{"busy, then merged", []string{"405 Please try again later", "405 Please try again later", "200 "}, "200 ", 3},
		{"refused", []string{"405 Does not have enough approvals"}, "405 Does not have enough approvals", 1},
		{"busy for good", []string{"405 Please try again later"}, "405 Please try again later", 4},
		{"the base moved, then merged", []string{`409 {"message":"merge push out of date"}`, "200 "}, "200 ", 2},
		{"a conflict", []string{`409 {"message":"merge conflict"}`}, `409 {"message":"merge conflict"}`, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			requests := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPost || r.URL.Path != "/api/v1/repos/alice/fleet/pulls/7/merge" || r.Header.Get("Authorization") != "token t0k" {
					t.Errorf("asked %s %s (%s)", r.Method, r.URL.Path, r.Header.Get("Authorization"))
				}
				a := tc.answers[min(requests, len(tc.answers)-1)]
				requests++
				var code int
				var msg string
				fmt.Sscanf(a, "%d", &code)
				msg = strings.SplitN(a, " ", 2)[1]
				w.WriteHeader(code)
				fmt.Fprint(w, msg)
			}))
			defer srv.Close()
			s := &Server{URL: srv.URL, t: t}
			code, msg := s.Merge(User{Name: "bob", Token: "t0k"}, "alice", "fleet", 7, "abc")
			if got := fmt.Sprintf("%d %s", code, msg); got != tc.want || requests != tc.requests {
				t.Errorf("Merge returned %q after %d request(s), want %q after %d", got, requests, tc.want, tc.requests)
			}
		})
	}
}
