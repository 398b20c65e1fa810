package forge_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/gitfleet/gitfleet/gitsource/forge"
)

// exchange is one recorded API call: what the client must send and what
// the forge answers, written from the API's documented shapes.
type exchange struct {
	Request struct {
		Method string `json:"method"`
		// Path is the escaped path, as on the wire.
		Path string `json:"path"`
		// Query lists parameters that must be present with these values.
		Query map[string]string `json:"query,omitempty"`
		// Body lists JSON fields that must be present with these values.
		Body map[string]any `json:"body,omitempty"`
	} `json:"request"`
	Response struct {
		Status int `json:"status"`
		// Headers may say {{server}} for the replay server's URL.
		Headers map[string]string `json:"headers,omitempty"`
		Body    json.RawMessage   `json:"body,omitempty"`
	} `json:"response"`
}

// replay serves the exchanges of testdata/<kind>/<name>.json in order and
// fails t on a request that is not the next one recorded, or when the
// test ends with recorded calls never made.
func replay(t *testing.T, kind, name string) (url string) {
	t.Helper()
	file := filepath.Join("testdata", kind, name+".json")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var exchanges []exchange
	if err := json.Unmarshal(b, &exchanges); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	var mu sync.Mutex
	next := 0
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		got := r.Method + " " + r.URL.EscapedPath()
		if next >= len(exchanges) {
			t.Errorf("%s: unexpected request %s after the last recorded one", file, got)
			http.Error(w, "not recorded", http.StatusTeapot)
			return
		}
		ex := exchanges[next]
		next++
		if want := ex.Request.Method + " " + ex.Request.Path; got != want {
			t.Errorf("%s: request %d is %s; want %s", file, next, got, want)
			http.Error(w, "not recorded", http.StatusTeapot)
			return
		}
		if auth := r.Header.Get("Authorization") + r.Header.Get("Private-Token"); !strings.Contains(auth, "recorded-token") {
			t.Errorf("%s: %s carries no token (Authorization %q)", file, got, auth)
		}
		for k, v := range ex.Request.Query {
			if q := r.URL.Query().Get(k); q != v {
				t.Errorf("%s: %s: query %s=%q; want %q", file, got, k, q, v)
			}
		}
		if len(ex.Request.Body) > 0 {
			raw, _ := io.ReadAll(r.Body)
			var body map[string]any
			if err := json.Unmarshal(raw, &body); err != nil {
				t.Errorf("%s: %s: body %q is not a JSON object: %v", file, got, raw, err)
			}
			for k, v := range ex.Request.Body {
				if !reflect.DeepEqual(body[k], v) {
					t.Errorf("%s: %s: body field %s = %#v; want %#v (body %s)", file, got, k, body[k], v, raw)
				}
			}
		}
		for k, v := range ex.Response.Headers {
			w.Header().Set(k, strings.ReplaceAll(v, "{{server}}", srv.URL))
		}
		if len(ex.Response.Body) > 0 {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(ex.Response.Status)
		_, _ = w.Write(ex.Response.Body)
	}))
	t.Cleanup(func() {
		srv.Close()
		mu.Lock()
		defer mu.Unlock()
		if next < len(exchanges) {
			t.Errorf("%s: %d of %d recorded requests were never made; the next is %s %s",
				file, len(exchanges)-next, len(exchanges), exchanges[next].Request.Method, exchanges[next].Request.Path)
		}
	})
	return srv.URL
}

// recorded are the forges tested against recorded responses, with the
// remote naming the repository in their fixtures.
var recorded = []struct{ kind, remote string }{
	{forge.GitHub, "git@github.com:gitfleet/fleet.git"},
	{forge.GitLab, "https://gitlab.com/platform/team/fleet.git"},
}

const (
	approveBranch = "gitfleet/approve/web-canary"
	headSHA       = "6dcb09b5b57875f334f61aebed695e2e4193db5e"
)

// TestRecordedForges runs gitfleet's forge behaviour against GitHub's and
// GitLab's recorded API responses: the same steps as the live Gitea tests.
func TestRecordedForges(t *testing.T) {
	steps := []struct {
		name string
		run  func(t *testing.T, f forge.Forge)
	}{
		{"ensure-pr", func(t *testing.T, f forge.Forge) {
			pr, created, err := forge.EnsurePR(t.Context(), f, approveBranch, "main", "Approve web: stage canary", "first body")
			if err != nil || !created {
				t.Fatalf("EnsurePR = %+v created %v, %v; want opened", pr, created, err)
			}
			if pr.Head != approveBranch || pr.Base != "main" || pr.HeadSHA != headSHA || pr.Number == 0 || pr.URL == "" {
				t.Errorf("opened %+v", pr)
			}
			again, created, err := forge.EnsurePR(t.Context(), f, approveBranch, "main", "other", "other")
			if err != nil || created || again.Number != pr.Number {
				t.Fatalf("EnsurePR again = #%d created %v, %v; want #%d found", again.Number, created, err, pr.Number)
			}
		}},
		{"open-prs-pages", func(t *testing.T, f forge.Forge) {
			prs, err := f.OpenPRs(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			var heads []string
			for _, pr := range prs {
				heads = append(heads, pr.Head)
			}
			if want := []string{"feature", approveBranch}; !reflect.DeepEqual(heads, want) {
				t.Errorf("open pull requests' heads = %q; want %q from both pages", heads, want)
			}
		}},
		{"edit-pr", func(t *testing.T, f forge.Forge) {
			if err := f.EditPR(t.Context(), 7, "Approve web: stage canary (2 clusters)", "new body"); err != nil {
				t.Fatal(err)
			}
		}},
		{"upsert-comment", func(t *testing.T, f forge.Forge) {
			// Adds (only a person's comment there), updates, then sees
			// nothing to change.
			for _, body := range []string{"plan v1", "plan v2", "plan v2"} {
				if err := forge.UpsertComment(t.Context(), f, 7, forge.PlanMarker, body); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"status", func(t *testing.T, f forge.Forge) {
			for _, s := range []forge.Status{
				{Context: "gitfleet/web", State: forge.Pending, Description: "stage 1/2 canary: 1 of 2 clusters", TargetURL: "https://fleet.example.com/runs/web"},
				{Context: "gitfleet/web", State: forge.Success, Description: "stage 2/2 prod: 3 of 3 clusters"},
				{Context: "gitfleet/api", State: forge.Error, Description: "stage 1/1 all: rollback failed"},
			} {
				if err := f.SetStatus(t.Context(), headSHA, s); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"withdraw", func(t *testing.T, f forge.Forge) {
			pr := forge.PR{Number: 7, Head: approveBranch, Base: "main"}
			if err := f.CreateComment(t.Context(), pr.Number, "Approved with gitfleet approve --commit."); err != nil {
				t.Fatal(err)
			}
			if err := f.ClosePR(t.Context(), pr.Number); err != nil {
				t.Fatal(err)
			}
			if err := f.DeleteBranch(t.Context(), pr.Head); err != nil {
				t.Fatal(err)
			}
		}},
		{"merged", func(t *testing.T, f forge.Forge) {
			for _, want := range []bool{false, true} {
				got, err := f.Merged(t.Context(), 7)
				if err != nil || got != want {
					t.Errorf("Merged = %v, %v; want %v", got, err, want)
				}
			}
		}},
	}
	t.Setenv("FORGE_TOKEN", "recorded-token")
	for _, r := range recorded {
		for _, step := range steps {
			t.Run(r.kind+"/"+step.name, func(t *testing.T) {
				url := replay(t, r.kind, step.name)
				f, err := forge.New(forge.Config{Kind: r.kind, URL: url, Remote: r.remote, TokenEnv: "FORGE_TOKEN"})
				if err != nil {
					t.Fatal(err)
				}
				step.run(t, f)
			})
		}
	}
}
