package gitops_test

import (
	"strings"
	"testing"
)

// Tests of the harness itself: a wait notices at once that serve died,
// and does not count a kill the test made on purpose.

func TestAWaitFailsAtOnceWithServesExitWhenServeDies(t *testing.T) {
	p := startServe(t, "--no-such-flag")
	err := waitFor(t, "serve to push a status commit", func() bool { return false })
	if err == nil {
		t.Fatal("the wait ended without an error")
	}
	for _, want := range []string{"waiting for serve to push a status commit", "gitfleet serve exited (exit status 1)",
		"unknown flag: --no-such-flag", p.Log} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q:\n%v", want, err)
		}
	}
}

func TestAWaitGoesOnAfterServeWasKilledOnPurpose(t *testing.T) {
	r := newFleetRepo(t, quickstartFleet(t))
	p := startServe(t, "--repo", "file://"+r.remote, "--cache-dir", t.TempDir(), "--interval", "100ms",
		"--status-interval", "50ms", "--metrics-addr", "")
	eventually(t, "the first status commit", func() bool {
		return strings.Contains(r.git("log", "--format=%B", "main"), "Gitfleet-Commit: true")
	})
	p.kill()
	if err := waitFor(t, "the run in Git", func() bool { return r.run("example-run") != nil }); err != nil {
		t.Fatalf("a wait failed on a serve the test killed: %v", err)
	}
	if err := p.ExitError(); err == nil || !strings.Contains(err.Error(), "signal: killed") {
		t.Fatalf("want serve killed, got %v", err)
	}
}

func TestAWaitFailsAtOnceWhenAClustersProcessDiesButNotWhenItsAPIServerIsStopped(t *testing.T) {
	c := startClusters(t, "member1")[0]
	c.StopAPIServer()
	if err := waitFor(t, "the member to be down", func() bool { return true }); err != nil {
		t.Fatalf("a wait failed on an API server the test stopped: %v", err)
	}
	c.StartAPIServer()
	for _, s := range c.Servers() {
		if strings.HasPrefix(s.Name, "etcd ") {
			s.Kill()
		}
	}
	err := waitFor(t, "the member to serve", func() bool { return false })
	if err == nil || !strings.Contains(err.Error(), "etcd of member1 exited (signal: killed)") {
		t.Fatalf("want etcd's exit, got %v", err)
	}
}
