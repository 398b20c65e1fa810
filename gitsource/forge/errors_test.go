package forge_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gitfleet/gitfleet/gitsource/forge"
)

// TestFailuresAreClassedTheSameOnEveryForge: each client reports a refused
// or failed call with the HTTP status the forge answered (Gitea's SDK
// drops it from its errors), and a forge that does not answer as
// unreachable.
func TestFailuresAreClassedTheSameOnEveryForge(t *testing.T) {
	t.Setenv("FORGE_TOKEN", "class-token")
	remotes := map[string]string{
		forge.GitHub: "git@github.com:gitfleet/fleet.git",
		forge.GitLab: "https://gitlab.com/platform/fleet.git",
		forge.Gitea:  "https://git.example.com/gitfleet/fleet.git",
	}
	for _, tc := range []struct {
		status int
		class  string
	}{
		{http.StatusUnauthorized, forge.ClassAuth},
		{http.StatusForbidden, forge.ClassForbidden},
		{http.StatusNotFound, forge.ClassNotFound},
		{http.StatusUnprocessableEntity, forge.ClassRejected},
		{http.StatusTooManyRequests, forge.ClassRateLimited},
		{http.StatusBadGateway, forge.ClassServer},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(tc.status)
			_, _ = w.Write([]byte(`{"message":"no"}`))
		}))
		for kind, remote := range remotes {
			f, err := forge.New(forge.Config{Kind: kind, URL: srv.URL, Remote: remote, TokenEnv: "FORGE_TOKEN"})
			if err != nil {
				t.Fatal(err)
			}
			err = f.SetStatus(t.Context(), "6dcb09b5b57875f334f61aebed695e2e4193db5e", forge.Status{Context: "gitfleet/web", State: forge.Pending})
			if got := forge.Class(err); got != tc.class {
				t.Errorf("%s answering %d: class %q (%v); want %q", kind, tc.status, got, err, tc.class)
			}
		}
		srv.Close()
	}

	// A port nothing listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()
	for kind, remote := range remotes {
		f, err := forge.New(forge.Config{Kind: kind, URL: closed, Remote: remote, TokenEnv: "FORGE_TOKEN"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.OpenPRs(t.Context())
		if got := forge.Class(err); got != forge.ClassUnreachable {
			t.Errorf("%s not listening: class %q (%v); want %q", kind, got, err, forge.ClassUnreachable)
		}
	}
}
