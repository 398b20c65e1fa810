package kubetest

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
)

// takePort listens on a free loopback port until the test ends, as
// another process that took the port a cluster was given.
func takePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l.Addr().(*net.TCPAddr).Port
}

// wantExit fails t unless err says that process exited because its port
// was taken.
func wantExit(t *testing.T, err error, process string) {
	t.Helper()
	if err == nil {
		t.Fatalf("the cluster started although %s's port was taken", process)
	}
	for _, want := range []string{process + " of ", " exited (exit status", "address already in use"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q:\n%v", want, err)
		}
	}
}

// A server that cannot listen exits at once; the start says so then,
// rather than waiting for /readyz until the test's deadline.
func TestAStartFailsAtOnceWhenAServerCannotListen(t *testing.T) {
	bin := Bin(t)
	for _, tc := range []struct {
		name, process string
		take          func(p *ports) *int
	}{
		{"etcd's client port is taken", "etcd", func(p *ports) *int { return &p.etcd }},
		{"etcd's peer port is taken", "etcd", func(p *ports) *int { return &p.etcdPeer }},
		{"the API server's port is taken", "kube-apiserver", func(p *ports) *int { return &p.apiserver }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := freePorts()
			*tc.take(&p) = takePort(t)
			c := newCluster(t, bin, "member1")
			err := c.start(p)
			if err == nil {
				err = c.waitReady()
			}
			wantExit(t, err, tc.process)
		})
	}
}

// A port can be taken between the moment it is chosen and the moment a
// server binds it (another test binary, a client's ephemeral port): the
// cluster starts again on new ports instead of failing its test.
func TestAClusterThatLostAPortStartsAgainOnNewPorts(t *testing.T) {
	bin := Bin(t)
	for _, tc := range []struct {
		name string
		take func(p *ports) *int
	}{
		{"etcd's client port was taken", func(p *ports) *int { return &p.etcd }},
		{"the API server's port was taken", func(p *ports) *int { return &p.apiserver }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := freePorts()
			taken := takePort(t)
			*tc.take(&p) = taken
			c := newCluster(t, bin, "member1")
			err := c.start(p)
			if err == nil {
				err = c.readyOnFreePorts()
			}
			if err != nil {
				t.Fatalf("the cluster did not start again on new ports: %v", err)
			}
			if c.port == taken || strings.Contains(c.Server, fmt.Sprint(taken)) {
				t.Errorf("the cluster serves on the taken port %d (%s)", taken, c.Server)
			}
			if c.Get("v1", "Namespace", "", "default") == nil {
				t.Fatal("the cluster started again has no default namespace")
			}
		})
	}
}

func TestARestartFailsAtOnceWhenTheAPIServerCannotListen(t *testing.T) {
	c := Start(t, "member1")[0]
	c.StopAPIServer()
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", c.port))
	if err != nil {
		t.Fatalf("take the stopped API server's port: %v", err)
	}
	wantExit(t, c.restartAPIServer(), "kube-apiserver")

	// Once the port is free again the cluster starts as before.
	l.Close()
	c.StartAPIServer()
	if c.Get("v1", "Namespace", "", "default") == nil {
		t.Fatal("the restarted cluster has no default namespace")
	}
}

func TestWorkloadsAreReadyOnceTheFakeNodeIsReady(t *testing.T) {
	c := StartWithWorkloads(t, "member1")[0]
	node := c.Get("v1", "Node", "", fakeNode)
	if node == nil {
		t.Fatal("no fake node")
	}
	conds, _, _ := unstructured.NestedSlice(node.Object, "status", "conditions")
	if !slices.ContainsFunc(conds, func(c any) bool {
		m := c.(map[string]any)
		return m["type"] == "Ready" && m["status"] == "True"
	}) {
		t.Fatalf("the fake node is not Ready: %v", conds)
	}
}

// A workload process that dies before the fake node is Ready fails the
// wait at once, naming it, rather than a Deployment's wait at the test's
// deadline.
func TestTheWorkloadsWaitFailsAtOnceWhenKwokDies(t *testing.T) {
	c := Start(t, "member1")[0]
	if err := c.runWorkloads(); err != nil {
		t.Fatal(err)
	}
	for _, s := range c.workloads {
		if strings.HasPrefix(s.Name, "kwok ") {
			s.Kill()
		}
	}
	err := c.waitWorkloads()
	if err == nil || !strings.Contains(err.Error(), "kwok of member1 exited (signal: killed)") {
		t.Fatalf("want kwok's exit, got %v", err)
	}
}

// A CPU profile of the API server covers the whole time until stop,
// merged from the segments the endpoint's fixed length makes, and shows
// the API server's own code serving the requests made meanwhile.
func TestACPUProfileOfTheAPIServerCoversTheTimeUntilStop(t *testing.T) {
	c := Start(t, "profiled")[0]
	defer func(d time.Duration, f func(int)) { profileSegment, segmentStarting = d, f }(profileSegment, segmentStarting)
	profileSegment = time.Second
	third := make(chan struct{})
	segmentStarting = func(n int) {
		if n == 3 {
			close(third)
		}
	}
	path := filepath.Join(t.TempDir(), "apiserver.pprof")
	hc, err := rest.HTTPClientFor(c.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}

	stop := ProfileCPU(t, c.AdminConfig(), path)
	// The API server serves requests throughout; stop comes once the
	// third segment began, and waits for it.
	for served := false; !served; {
		resp, err := hc.Get(c.Server + "/api/v1/namespaces")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		select {
		case <-third:
			served = true
		default:
		}
	}
	stop()

	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	if got := time.Duration(p.DurationNanos); got < 3*profileSegment {
		t.Errorf("the profile covers %s, want the 3 segments or more until stop", got)
	}
	served := false
	for _, s := range p.Sample {
		for _, l := range s.Location {
			for _, line := range l.Line {
				served = served || strings.Contains(line.Function.Name, "k8s.io/apiserver/pkg/endpoints/handlers")
			}
		}
	}
	if !served {
		t.Errorf("no sample of the profile is in the API server's request handlers")
	}
}
