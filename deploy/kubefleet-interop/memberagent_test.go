// Package kubefleetinterop proves that KubeFleet's own member agent joins a
// gitfleet hub (issue 25, item 3): the agent is built from a local checkout
// of KubeFleet's source (GITFLEET_KUBEFLEET_SRC) and run against real API
// servers, a hub serving gitfleet's CRDs and a member serving KubeFleet's
// member-side ones. Beside it, the same quickstart runs with gitfleet's
// own agent on every member (make run-clusters-pull), which needs no
// KubeFleet source.
package kubefleetinterop

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gitfleet/gitfleet/internal/testing/kubetest"
	"github.com/gitfleet/gitfleet/internal/testing/testproc"
)

// srcEnv names the local checkout of KubeFleet's source the member agent is
// built from.
const srcEnv = "GITFLEET_KUBEFLEET_SRC"

// kubefleetSource is the checkout named by GITFLEET_KUBEFLEET_SRC. Without
// it the test skips, under CI too: KubeFleet's source is not a dependency
// of gitfleet, and building its agent fetches its modules.
func kubefleetSource(t *testing.T) string {
	t.Helper()
	src := os.Getenv(srcEnv)
	if src == "" {
		t.Skip(srcEnv + " is not set: set it to a local checkout of KubeFleet's source " +
			"(git clone https://github.com/kubefleet-dev/kubefleet) to build KubeFleet's member agent " +
			"(cmd/memberagent) and prove it joins a gitfleet hub; the build fetches KubeFleet's modules")
	}
	if _, err := os.Stat(filepath.Join(src, "cmd", "memberagent")); err != nil {
		t.Fatalf("%s=%s: no cmd/memberagent there (%v); want a checkout of github.com/kubefleet-dev/kubefleet", srcEnv, src, err)
	}
	return src
}

var buildMu sync.Mutex

// memberAgentBinary builds KubeFleet's member agent from src, once per
// source version: the binary is cached under the user's cache directory
// (~/.cache/gitfleet/kubefleet-memberagent/<version>), keyed by the
// checkout's commit when its tree is clean, else by a hash of its Go
// sources. A cold build fetches KubeFleet's modules through the module
// proxy (GOFLAGS=-mod=mod) and takes minutes.
func memberAgentBinary(t *testing.T, src string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = t.TempDir()
	}
	dir := filepath.Join(cache, "gitfleet", "kubefleet-memberagent", sourceVersion(t, src))
	bin := filepath.Join(dir, "memberagent")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := bin + ".building"
	start := time.Now()
	cmd := exec.Command("go", "build", "-o", tmp, "./cmd/memberagent")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building KubeFleet's member agent in %s (GOFLAGS=-mod=mod go build ./cmd/memberagent): %v\n%s", src, err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatal(err)
	}
	t.Logf("built KubeFleet's member agent in %s: %s", time.Since(start).Round(time.Second), bin)
	return bin
}

// sourceVersion names a build of src: its commit when src is a git
// checkout with nothing changed, else "tree-" and a hash of every Go
// source and module file (a tree from `git archive` has no commit).
func sourceVersion(t *testing.T, src string) string {
	t.Helper()
	git := func(args ...string) (string, error) {
		out, err := exec.Command("git", append([]string{"-C", src}, args...)...).Output()
		return strings.TrimSpace(string(out)), err
	}
	if commit, err := git("rev-parse", "HEAD"); err == nil {
		if top, err := git("rev-parse", "--show-toplevel"); err == nil && sameDir(top, src) {
			if changed, err := git("status", "--porcelain"); err == nil && changed == "" {
				return commit
			}
		}
	}
	var files []string
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if name := d.Name(); !d.IsDir() && (strings.HasSuffix(name, ".go") || name == "go.mod" || name == "go.sum") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	h := sha256.New()
	for _, p := range files {
		rel, _ := filepath.Rel(src, p)
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(h, "%s\x00", rel)
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	return "tree-" + hex.EncodeToString(h.Sum(nil))[:16]
}

func sameDir(a, b string) bool {
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}

// startMemberAgent runs KubeFleet's member agent bin for member name as
// KubeFleet's Helm chart runs it: the hub at hubURL reached as the
// member's identity with the bearer token in tokenFile (HUB_SERVER_URL,
// MEMBER_CLUSTER_NAME, CONFIG_PATH), the member as admin (KUBECONFIG
// stands in for the pod's in-cluster config). Its servers (metrics,
// health probes) are off, so that agents of several tests run side by
// side.
func startMemberAgent(t *testing.T, bin, name, hubURL, tokenFile string, member *kubetest.Cluster) *testproc.Server {
	t.Helper()
	cmd := exec.Command(bin,
		"--tls-insecure", // kubetest's API servers have self-signed certificates
		"--hub-metrics-bind-address=0", "--metrics-bind-address=0",
		"--hub-health-probe-bind-address=0", "--health-probe-bind-address=0",
		"-v=2")
	cmd.Env = append(os.Environ(),
		"HUB_SERVER_URL="+hubURL,
		"MEMBER_CLUSTER_NAME="+name,
		"CONFIG_PATH="+tokenFile,
		"KUBECONFIG="+kubetest.Kubeconfig(t, []*kubetest.Cluster{member}, nil),
	)
	log := filepath.Join(t.TempDir(), "memberagent-"+name+".log")
	s, err := testproc.Start("KubeFleet's member agent of "+name, cmd, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the last errors in %s's log %s:\n%s", s.Name, s.Log, lastErrors(s.Log, 20))
		}
		s.Kill()
	})
	return s
}

// lastErrors are the last n error lines of the agent's log (klog's and
// controller-runtime's) (a stack trace
// after an error is left out: its end is all a plain tail would show).
func lastErrors(log string, n int) string {
	data, _ := os.ReadFile(log)
	var errs []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "E") || strings.Contains(l, "\tERROR\t") {
			if len(l) > 600 {
				l = l[:600] + "…"
			}
			errs = append(errs, l)
		}
	}
	return strings.Join(errs[max(0, len(errs)-n):], "\n")
}

// until polls cond until it holds; it fails the test at once, with the end
// of its log, when a process the test runs (the member agent, serve)
// exits meanwhile.
func until(t *testing.T, proc *testproc.Server, what string, cond func() bool) {
	t.Helper()
	if err := testproc.Wait(t, what, func(context.Context) bool { return cond() }, proc); err != nil {
		t.Fatal(err)
	}
}
