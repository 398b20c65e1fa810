package gitops_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/testing/kubetest"
)

// leaseName is the Lease the replicas of the leader tests share.
const leaseName = "gitfleet-test"

// replica is one `gitfleet serve --leader-elect` process.
type replica struct {
	*serveProcess
	cache string // its --cache-dir
}

// startReplica runs serve with leader election on the Lease leaseName in
// namespace default of hub, with short durations so a takeover is quick.
func startReplica(t *testing.T, r *fleetRepo, kubeconfig string) *replica {
	t.Helper()
	cache := t.TempDir()
	p := startServe(t, "--repo", "file://"+r.remote, "--cache-dir", cache, "--interval", "100ms",
		"--status-interval", "50ms", "--metrics-addr", "127.0.0.1:0", "--log-format", "json",
		"--leader-elect", "--hub-kubeconfig", kubeconfig, "--leader-election-namespace", "default",
		"--leader-election-id", leaseName, "--leader-election-lease-duration", "3s",
		"--leader-election-renew-deadline", "2s", "--leader-election-retry-period", "500ms")
	return &replica{serveProcess: p, cache: cache}
}

// readyz answers the replica's /readyz ("" and 0 until it listens).
func (p *replica) readyz() (int, string) {
	addr := p.metricsAddr()
	if addr == "" {
		return 0, ""
	}
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(body))
}

// metricsAddr is the address the replica's log says its metrics server
// listens on, "" before it says so.
func (p *replica) metricsAddr() string {
	data, _ := os.ReadFile(p.Log)
	for _, line := range strings.Split(string(data), "\n") {
		var rec struct{ Msg, Server, Addr string }
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "listening" && rec.Server == "metrics" {
			return rec.Addr
		}
	}
	return ""
}

// leaseHolder is the holder of the replicas' Lease, "" while there is none.
func leaseHolder(t *testing.T, hub *kubetest.Cluster) (string, int32) {
	t.Helper()
	var lease coordinationv1.Lease
	err := hub.Client().Get(context.Background(), client.ObjectKey{Namespace: "default", Name: leaseName}, &lease)
	if err != nil || lease.Spec.HolderIdentity == nil {
		return "", 0
	}
	transitions := int32(0)
	if lease.Spec.LeaseTransitions != nil {
		transitions = *lease.Spec.LeaseTransitions
	}
	return *lease.Spec.HolderIdentity, transitions
}

// Two replicas against one repository and one Lease: one leads and rolls
// out, the other stands by without even cloning, its /readyz naming the
// leader. The leader is SIGKILLed mid-run (no release of the lease): the
// standby takes over once the lease expires and finishes the run, with no
// stage skipped, maxConcurrency never exceeded and the approval kept.
func TestTwoReplicasOneLeadsAndTheStandbyFinishesTheRunWhenTheLeaderIsKilled(t *testing.T) {
	hub := startClusters(t, "hub")[0]
	kubeconfig := kubetest.Kubeconfig(t, []*kubetest.Cluster{hub}, nil)
	r := newFleetRepo(t, timedFleet(t, restartAvailableAfter, restartSoak))
	updates := r.refUpdates()
	replicas := []*replica{startReplica(t, r, kubeconfig), startReplica(t, r, kubeconfig)}

	var first, standby *replica
	var holder string
	eventually(t, "one replica to lead and be ready, the other to name it on /readyz", func() bool {
		holder, _ = leaseHolder(t, hub)
		if holder == "" {
			return false
		}
		codes, bodies := [2]int{}, [2]string{}
		for i, p := range replicas {
			codes[i], bodies[i] = p.readyz()
		}
		for i := range replicas {
			j := 1 - i
			if codes[i] == http.StatusOK && bodies[i] == "ok: leading as "+holder &&
				codes[j] == http.StatusOK && bodies[j] == "ok: standby, the leader is "+holder {
				first, standby = replicas[i], replicas[j]
				return true
			}
		}
		return false
	})

	r.waitRun("example-run", "member2 started in staging", func(run *fleet.UpdateRun) bool {
		return clusterStarted(run, "staging", "member2")
	})
	if entries, err := os.ReadDir(standby.cache); err != nil || len(entries) != 0 {
		t.Errorf("the standby touched its cache directory (%v, %d entries): it must not even clone while it does not lead", err, len(entries))
	}
	killed := time.Now()
	first.kill()

	var next string
	eventually(t, "the standby to take the lease over and be ready", func() bool {
		h, transitions := leaseHolder(t, hub)
		code, body := standby.readyz()
		if h != "" && h != holder && transitions >= 1 && code == http.StatusOK && body == "ok: leading as "+h {
			next = h
			return true
		}
		return false
	})
	t.Logf("lease taken over by %s %s after the kill of %s (lease duration 3s)", next, time.Since(killed).Round(100*time.Millisecond), holder)

	r.approve(approvalName)
	r.waitPhase("example-run", fleet.PhaseSucceeded)
	waitBindingsAvailable(t, r, "example-placement-0-snapshot", "member1", "member2", "member3")
	if n := checkRunHistory(t, r, "example-run"); n < 2 {
		t.Errorf("only %d versions of the run's status in Git", n)
	}
	checkApprovalKept(t, r, approvalName)
	checkFastForwardsOnly(t, r, updates())
	if err := standby.ExitError(); err != nil {
		t.Errorf("the new leader exited: %v", err)
	}
}

// A leader whose lease is taken (as when it could not renew in time and a
// standby acquired it) exits non-zero at once, without waiting for its own
// lease to expire: the new leader must be the only writer.
func TestALeaderThatLosesItsLeaseExits(t *testing.T) {
	hub := startClusters(t, "hub")[0]
	kubeconfig := kubetest.Kubeconfig(t, []*kubetest.Cluster{hub}, nil)
	r := newFleetRepo(t, timedFleet(t, restartAvailableAfter, restartSoak))
	p := startReplica(t, r, kubeconfig)
	eventually(t, "the replica to lead", func() bool {
		code, body := p.readyz()
		return code == http.StatusOK && strings.HasPrefix(body, "ok: leading as ")
	})

	admin := hub.Client()
	// From the lease's update on, serve may exit at any moment.
	p.expectExit()
	eventually(t, "another holder written into the lease", func() bool {
		var lease coordinationv1.Lease
		if err := admin.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: leaseName}, &lease); err != nil {
			return false
		}
		other, forever := "other-replica", int32(3600)
		now := metav1.NewMicroTime(time.Now())
		lease.Spec.HolderIdentity, lease.Spec.LeaseDurationSeconds, lease.Spec.RenewTime = &other, &forever, &now
		return admin.Update(context.Background(), &lease) == nil // a conflict with a renewal: again
	})
	eventually(t, "serve to exit after losing its lease", func() bool { return !p.Running() })
	if code := p.cmd.ProcessState.ExitCode(); code == 0 {
		t.Errorf("serve exited with %d after losing its lease, want non-zero", code)
	}
	if data, _ := os.ReadFile(p.Log); !strings.Contains(string(data), "leader election lost") {
		t.Errorf("serve's log does not say it lost the lease:\n%s", data)
	}
}
