package forge

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNewPicksTheForge(t *testing.T) {
	t.Setenv("FORGE_TOKEN", "t0k3n")
	tests := []struct {
		name   string
		cfg    Config
		want   string // the client's type, or "" for an error
		errHas string
	}{
		{"github.com over https is GitHub", Config{Remote: "https://github.com/gitfleet/fleet.git"}, "*forge.gitHubForge", ""},
		{"github.com over scp-like ssh is GitHub", Config{Remote: "git@github.com:gitfleet/fleet.git"}, "*forge.gitHubForge", ""},
		{"gitlab.com with subgroups is GitLab", Config{Remote: "ssh://git@gitlab.com/platform/team/fleet.git"}, "*forge.gitLabForge", ""},
		{"a self-hosted host is not guessed", Config{Remote: "https://gitlab.example.com/o/fleet.git"}, "", "set --forge"},
		{"a host containing github.com is not GitHub", Config{Remote: "https://github.com.example.org/o/fleet.git"}, "", "set --forge"},
		{"a host ending in github.com is not GitHub", Config{Remote: "git@mygithub.com:o/fleet.git"}, "", "set --forge"},
		{"--forge names a self-hosted GitLab", Config{Kind: "gitlab", URL: "https://git.example.com", Remote: "git@git.example.com:o/fleet.git"}, "*forge.gitLabForge", ""},
		{"gitea from an https remote", Config{Kind: "gitea", Remote: "https://git.example.com/o/fleet.git"}, "*forge.giteaForge", ""},
		{"gitea from an ssh remote needs --forge-url", Config{Kind: "gitea", Remote: "git@git.example.com:o/fleet.git"}, "", "--forge-url"},
		{"gitea with --forge-url", Config{Kind: "gitea", URL: "https://git.example.com/", Remote: "git@git.example.com:o/fleet.git"}, "*forge.giteaForge", ""},
		{"GitHub repositories are owner/name", Config{Remote: "https://github.com/a/b/c.git"}, "", "owner/name"},
		{"a remote without a repository", Config{Remote: "https://github.com/fleet"}, "", "owner/name"},
		{"an unknown forge", Config{Kind: "bitbucket", Remote: "https://bitbucket.org/o/fleet.git"}, "", "unknown forge"},
		{"no remote", Config{Kind: "github"}, "", "no remote"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.cfg.TokenFile == "" && tt.cfg.TokenEnv == "" {
				tt.cfg.TokenEnv = "FORGE_TOKEN"
			}
			f, err := New(tt.cfg)
			if tt.want == "" {
				if err == nil || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("New = %T, %v; want an error saying %q", f, err, tt.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := typeName(f.(classified).f); got != tt.want {
				t.Errorf("New = %s; want %s", got, tt.want)
			}
		})
	}
}

func typeName(v any) string {
	switch v.(type) {
	case *gitHubForge:
		return "*forge.gitHubForge"
	case *gitLabForge:
		return "*forge.gitLabForge"
	case *giteaForge:
		return "*forge.giteaForge"
	}
	return "unknown"
}

func TestNewReadsTheToken(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte("  from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FORGE_TOKEN", "from-env")
	t.Setenv("EMPTY_TOKEN", "")
	tests := []struct {
		name      string
		file, env string
		want      string
		errHas    string
	}{
		{"from a file, trimmed", file, "", "from-file", ""},
		{"from the environment", "", "FORGE_TOKEN", "from-env", ""},
		{"both is ambiguous", file, "FORGE_TOKEN", "", "not both"},
		{"neither", "", "", "", "no forge token"},
		{"an empty file", empty, "", "", "is empty"},
		{"an unset variable", "", "EMPTY_TOKEN", "", "$EMPTY_TOKEN is empty or unset"},
		{"a missing file", filepath.Join(dir, "nope"), "", "", "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readToken(Config{TokenFile: tt.file, TokenEnv: tt.env})
			if tt.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("readToken = %q, %v; want an error saying %q", got, err, tt.errHas)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("readToken = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// TestErrorsNeverCarryTheToken: a forge (or a proxy in front of it) that
// echoes the request's Authorization header in its error body does not
// get the token into gitfleet's errors, whichever client made the call.
func TestErrorsNeverCarryTheToken(t *testing.T) {
	const token = "glpat-SECRET-0123456789"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		auth := r.Header.Get("Authorization") + r.Header.Get("Private-Token")
		_, _ = w.Write([]byte(`{"message":"bad credentials: ` + auth + `","error":"` + auth + `"}`))
	}))
	defer srv.Close()
	t.Setenv("FORGE_TOKEN", token)
	for _, kind := range []string{GitHub, GitLab, Gitea} {
		t.Run(kind, func(t *testing.T) {
			f, err := New(Config{Kind: kind, URL: srv.URL, Remote: "https://example.com/o/fleet.git", TokenEnv: "FORGE_TOKEN"})
			if err != nil {
				t.Fatal(err)
			}
			_, err = f.OpenPRs(t.Context())
			if err == nil {
				t.Fatal("OpenPRs succeeded against a 401")
			}
			if strings.Contains(err.Error(), token) {
				t.Errorf("error carries the token: %v", err)
			}
			if !strings.Contains(err.Error(), "[redacted]") {
				t.Errorf("error %q does not show the server's message with the token redacted", err)
			}
		})
	}
}

func TestNewFindsTheAPI(t *testing.T) {
	t.Setenv("FORGE_TOKEN", "t0k3n")
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"github.com", Config{Remote: "https://github.com/o/fleet"}, "https://api.github.com/"},
		{"--forge-url of github.com itself", Config{Kind: "github", URL: "https://github.com", Remote: "https://github.com/o/fleet"}, "https://api.github.com/"},
		{"GitHub Enterprise", Config{Kind: "github", URL: "https://ghe.example.com", Remote: "git@ghe.example.com:o/fleet.git"}, "https://ghe.example.com/api/v3/"},
		{"gitlab.com", Config{Remote: "git@gitlab.com:o/fleet.git"}, "https://gitlab.com/api/v4/"},
		{"self-hosted GitLab", Config{Kind: "gitlab", URL: "https://git.example.com/", Remote: "git@git.example.com:o/fleet.git"}, "https://git.example.com/api/v4/"},
		{"self-hosted GitLab given its API", Config{Kind: "gitlab", URL: "https://git.example.com/api/v4", Remote: "git@git.example.com:o/fleet.git"}, "https://git.example.com/api/v4/"},
		{"Gitea from the remote", Config{Kind: "gitea", Remote: "http://127.0.0.1:3000/o/fleet.git"}, "http://127.0.0.1:3000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.TokenEnv = "FORGE_TOKEN"
			f, err := New(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			var got string
			switch f := f.(classified).f.(type) {
			case *gitHubForge:
				got = f.c.BaseURL()
			case *gitLabForge:
				got = f.c.BaseURL().String()
			case *giteaForge:
				got = f.url
			}
			if got != tt.want {
				t.Errorf("API at %q; want %q", got, tt.want)
			}
		})
	}
}
