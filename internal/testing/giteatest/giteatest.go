// Package giteatest starts a real Gitea on 127.0.0.1 for tests: SQLite in
// a temporary directory, users and tokens made by `gitea admin`, and
// repositories pushed to with real git over HTTP.
//
// The binary is the one hack/gitea.sh builds, found in GITFLEET_GITEA or in
// that script's cache directory. Without it a test skips, saying how to
// build it; under CI (CI=true) it fails, because CI must build it. Gitea
// runs in a process group of its own that is killed when the test ends.
package giteatest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"

	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/internal/testing/gittest"
	"github.com/gitfleet/gitfleet/internal/testing/testproc"
)

// Version is the Gitea hack/gitea.sh builds; its cache directory is named
// after it.
const Version = "v1.26.1"

// Bin returns the Gitea binary, or skips t (fails it under CI) when it is
// not built.
func Bin(t testing.TB) string {
	t.Helper()
	bin := os.Getenv("GITFLEET_GITEA")
	if bin == "" {
		cache := os.Getenv("XDG_CACHE_HOME")
		if cache == "" {
			home, _ := os.UserHomeDir()
			cache = filepath.Join(home, ".cache")
		}
		bin = filepath.Join(cache, "gitfleet", "gitea", Version, "gitea")
	}
	if _, err := os.Stat(bin); err != nil {
		gittest.Missing(t, fmt.Sprintf("no Gitea at %s: run hack/gitea.sh to build it (about 10 minutes cold)", bin))
	}
	return bin
}

// staticRoot is Gitea's source tree in the module cache: without the
// bindata build tag the server reads its templates and locales from there.
func staticRoot(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatalf("go env GOMODCACHE: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "code.gitea.io", "gitea@"+Version)
	if _, err := os.Stat(filepath.Join(dir, "options")); err != nil {
		gittest.Missing(t, fmt.Sprintf("no Gitea source tree at %s: run hack/gitea.sh", dir))
	}
	return dir
}

// Server is a running Gitea.
type Server struct {
	// URL is the web and API root, http://127.0.0.1:PORT.
	URL string
	// Admin is a site administrator made at start.
	Admin User

	t    testing.TB
	bin  string
	dir  string
	conf string
}

// User is a Gitea account with an API token of every scope.
type User struct {
	Name, Password, Token string
}

// Start starts Gitea and makes its administrator; it is stopped when t
// ends.
func Start(t testing.TB) *Server {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	s, err := start(t, port)
	if err != nil {
		t.Fatal(err)
	}
	s.Admin = s.CreateUser("gitadmin", true)
	return s
}

// start starts Gitea on port and waits until it serves, or fails with why
// it exited.
func start(t testing.TB, port int) (*Server, error) {
	t.Helper()
	gittest.Require(t, "git")
	bin := Bin(t)
	static := staticRoot(t)
	dir := t.TempDir()
	s := &Server{URL: fmt.Sprintf("http://127.0.0.1:%d", port), t: t, bin: bin, dir: dir,
		conf: filepath.Join(dir, "custom", "conf", "app.ini")}
	if err := os.MkdirAll(filepath.Dir(s.conf), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.conf, []byte(s.appINI(port, static)), 0o644); err != nil {
		t.Fatal(err)
	}

	web, err := testproc.Start("gitea", s.command("web", "--port", fmt.Sprint(port)), filepath.Join(dir, "gitea.out"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		web.Kill()
		if t.Failed() {
			t.Logf("gitea output (tail):\n%s", web.Tail())
		}
	})
	// A request times out so that the log is read again: what holds the
	// port may never answer.
	client := &http.Client{Timeout: 5 * time.Second}
	err = testproc.Wait(t, "gitea to serve "+s.URL, func(ctx context.Context) bool {
		// Gitea that cannot listen says so and waits, never exiting.
		if log, _ := os.ReadFile(web.Log); bytes.Contains(log, []byte("Failed to start server")) {
			web.KillFor("it logged that it failed to start its server")
			return false
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/api/v1/version", nil)
		resp, err := client.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, web)
	return s, err
}

func (s *Server) appINI(port int, static string) string {
	name := "root"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	return fmt.Sprintf(`APP_NAME = gitfleet test
RUN_MODE = prod
RUN_USER = %[3]s
WORK_PATH = %[1]s
I_AM_BEING_UNSAFE_RUNNING_AS_ROOT = true

[server]
PROTOCOL = http
HTTP_ADDR = 127.0.0.1
HTTP_PORT = %[2]d
ROOT_URL = http://127.0.0.1:%[2]d/
DISABLE_SSH = true
START_SSH_SERVER = false
OFFLINE_MODE = true
LFS_START_SERVER = false
STATIC_ROOT_PATH = %[4]s
APP_DATA_PATH = %[1]s/data

[database]
DB_TYPE = sqlite3
PATH = %[1]s/data/gitea.db

[repository]
ROOT = %[1]s/repos
DEFAULT_BRANCH = main

[security]
INSTALL_LOCK = true
SECRET_KEY = %[5]s
INTERNAL_TOKEN = %[6]s

[oauth2]
ENABLED = false

[service]
DISABLE_REGISTRATION = true
ENABLE_NOTIFY_MAIL = false

[mailer]
ENABLED = false

[indexer]
ISSUE_INDEXER_TYPE = db
REPO_INDEXER_ENABLED = false

[queue]
TYPE = channel

[cron]
ENABLED = false

[actions]
ENABLED = false

[log]
MODE = console
LEVEL = Warn
ROOT_PATH = %[1]s/log
`, s.dir, port, name, static, randomHex(s.t, 32), randomHex(s.t, 64))
}

func randomHex(t testing.TB, n int) string {
	b := make([]byte, n/2)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// command is a gitea subcommand on this server's configuration; HOME is
// the temporary directory so that the git Gitea runs never reads the
// user's configuration.
func (s *Server) command(args ...string) *exec.Cmd {
	cmd := exec.Command(s.bin, append(args, "--config", s.conf, "--work-path", s.dir)...)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "HOME="+s.dir, "GITEA_WORK_DIR="+s.dir, "GIT_CONFIG_NOSYSTEM=1",
		"GITEA_I_AM_BEING_UNSAFE_RUNNING_AS_ROOT=true")
	return cmd
}

var tokenLine = regexp.MustCompile(`Access token was successfully created\S*\s+(\S+)`)

// CreateUser makes a user with a token of every scope by
// `gitea admin user create`.
func (s *Server) CreateUser(name string, admin bool) User {
	s.t.Helper()
	u := User{Name: name, Password: "pw-" + randomHex(s.t, 16)}
	args := []string{"admin", "user", "create", "--username", name, "--password", u.Password,
		"--email", name + "@example.com", "--must-change-password=false", "--access-token", "--access-token-scopes", "all"}
	if admin {
		args = append(args, "--admin")
	}
	cmd := s.command(args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		s.t.Fatalf("gitea admin user create %s: %v\n%s", name, err, out.String())
	}
	m := tokenLine.FindStringSubmatch(out.String())
	if m == nil {
		s.t.Fatalf("gitea admin user create %s printed no token:\n%s", name, out.String())
	}
	u.Token = m[1]
	return u
}

// Client is an SDK client acting as u, for a test's own setup and checks.
func (s *Server) Client(u User) *gitea.Client {
	s.t.Helper()
	c, err := gitea.NewClient(s.URL, gitea.SetToken(u.Token), gitea.SetContext(await.Context(s.t)))
	if err != nil {
		s.t.Fatalf("gitea client for %s: %v", u.Name, err)
	}
	return c
}

// CreateRepo makes an empty repository name owned by owner and returns
// its clone URL (without credentials: see PushURL).
func (s *Server) CreateRepo(owner User, name string) string {
	s.t.Helper()
	r, _, err := s.Client(owner).CreateRepo(gitea.CreateRepoOption{Name: name, DefaultBranch: "main"})
	if err != nil {
		s.t.Fatalf("create repository %s/%s: %v", owner.Name, name, err)
	}
	return r.CloneURL
}

// PushURL is the clone URL of owner/repo with u's token as the password,
// for git push.
func (s *Server) PushURL(u User, owner, repo string) string {
	return fmt.Sprintf("http://%s:%s@%s/%s/%s.git", u.Name, u.Token, strings.TrimPrefix(s.URL, "http://"), owner, repo)
}

// Merge merges pull request n of owner/repo as u, as a person pressing the
// merge button, and returns Gitea's HTTP status and message: the SDK's
// MergePullRequest drops the message that says why a merge was refused.
// While Gitea answers 405 "Please try again later" (it still checks the
// pull request after a push to its base, longer under load) or 409 "merge
// push out of date" (the base moved while Gitea pushed its merge: serve
// pushes status to it; a person presses the button again) Merge asks
// again, at most mergeRetry.attempts times in all, backing off, and never
// past the test's deadline; any other answer is returned at once, a
// refusal included.
func (s *Server) Merge(u User, owner, repo string, n int, headSHA string) (status int, message string) {
	s.t.Helper()
	ctx := await.Context(s.t)
	delay := mergeRetry.first
	for attempt := 1; ; attempt++ {
		status, message = s.mergeOnce(ctx, u, owner, repo, n, headSHA)
		if !mergeAgain(status, message) || attempt == mergeRetry.attempts || time.Now().Add(delay).After(await.Deadline(s.t)) {
			return status, message
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return status, message
		}
		delay = min(2*delay, mergeRetry.most)
	}
}

// mergeAgain reports whether Gitea's answer to a merge says to ask again:
// it is still checking the pull request, or its merge lost a race with
// another push to the base branch.
func mergeAgain(status int, message string) bool {
	return status == http.StatusMethodNotAllowed && strings.Contains(message, "try again later") ||
		status == http.StatusConflict && strings.Contains(message, "merge push out of date")
}

// mergeRetry is how Merge asks again: attempts in all, the first wait and
// the longest (about 20 s of retrying at most).
var mergeRetry = struct {
	attempts    int
	first, most time.Duration
}{attempts: 25, first: 50 * time.Millisecond, most: time.Second}

// mergeOnce asks Gitea to merge once.
func (s *Server) mergeOnce(ctx context.Context, u User, owner, repo string, n int, headSHA string) (status int, message string) {
	s.t.Helper()
	body := fmt.Sprintf(`{"Do":"merge","head_commit_id":%q}`, headSHA)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost,
		fmt.Sprintf("%s/api/v1/repos/%s/%s/pulls/%d/merge", s.URL, owner, repo, n), strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "token "+u.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("merge %s/%s#%d: %v", owner, repo, n, err)
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	_, _ = out.ReadFrom(resp.Body)
	return resp.StatusCode, out.String()
}
