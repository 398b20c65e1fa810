// Package kubetest starts real Kubernetes member clusters for tests: etcd
// and kube-apiserver on 127.0.0.1, built from source by hack/testbin.sh.
//
// The binaries are found in GITFLEET_TESTBIN, or in the default cache
// directory of hack/testbin.sh. Without them a test skips, saying how to
// build them; under CI (CI=true) it fails, because CI must build them.
//
// Each cluster runs in its own process group and is stopped by PID when
// the test ends; a cluster can also be stopped and started again mid-test
// to play an unreachable member. A start fails the test as soon as etcd
// or the API server exits, with its exit status and the end of its log
// (a port another process took, say), rather than at the test's deadline.
package kubetest

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	_ "embed"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gitfleet/gitfleet/internal/testing/gittest"
	"github.com/gitfleet/gitfleet/internal/testing/testproc"
)

// Versions are the ones hack/testbin.sh builds; its cache directory is
// named after them.
const (
	KubernetesVersion = "v1.37.0"
	EtcdVersion       = "v3.6.16"
	KwokVersion       = "v0.8.0"
)

// Bin returns the directory of the test binaries, or skips t (fails it
// under CI) when they are not built.
func Bin(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("GITFLEET_TESTBIN")
	if dir == "" {
		cache := os.Getenv("XDG_CACHE_HOME")
		if cache == "" {
			home, _ := os.UserHomeDir()
			cache = filepath.Join(home, ".cache")
		}
		dir = filepath.Join(cache, "gitfleet", "testbin",
			fmt.Sprintf("k8s-%s-etcd-%s-kwok-%s", KubernetesVersion, EtcdVersion, KwokVersion))
	}
	for _, b := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			gittest.Missing(t, fmt.Sprintf("no %s in %s: run hack/testbin.sh to build the test clusters' binaries", b, dir))
		}
	}
	return dir
}

// Cluster is one running member cluster.
type Cluster struct {
	Name string
	// Server is the API server's URL.
	Server string
	// AdminToken authenticates as a member of system:masters.
	AdminToken string
	// ViewerToken authenticates as a user with no permissions at all.
	ViewerToken string

	t   testing.TB
	bin string
	dir string

	mu        sync.Mutex
	apiserver *testproc.Server
	etcd      *testproc.Server
	workloads []*testproc.Server // controller-manager, scheduler, kwok
	// restartWorkloads: StopAPIServer stopped them, StartAPIServer
	// starts them again.
	restartWorkloads bool
	port             int
	apiserverArgs    []string
}

// Start starts clusters with these names and stops them when t ends:
// etcd and kube-apiserver only, so objects are stored but no controller
// acts on them (a Deployment is never observed, so never available).
func Start(t testing.TB, names ...string) []*Cluster {
	t.Helper()
	return start(t, false, names)
}

// StartWithWorkloads is Start plus, per cluster, kube-controller-manager,
// kube-scheduler and kwok with one fake node: Deployments roll out and
// become available (pods turn Ready 1.5s after they are scheduled),
// namespaces finish terminating.
func StartWithWorkloads(t testing.TB, names ...string) []*Cluster {
	t.Helper()
	return start(t, true, names)
}

func start(t testing.TB, workloads bool, names []string) []*Cluster {
	t.Helper()
	bin := Bin(t)
	out := make([]*Cluster, len(names))
	var wg sync.WaitGroup
	errs := make([]error, len(names))
	for i, name := range names {
		c := newCluster(t, bin, name)
		out[i] = c
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.start(freePorts())
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range out {
		if err := c.readyOnFreePorts(); err != nil {
			t.Fatal(err)
		}
	}
	if workloads {
		// All clusters' controllers start before the first wait, so the
		// clusters come up together.
		for _, c := range out {
			if err := c.runWorkloads(); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range out {
			if err := c.waitWorkloads(); err != nil {
				t.Fatal(err)
			}
		}
	}
	return out
}

// newCluster is a cluster not started yet, stopped when t ends. Its
// tokens are random: an API server of another test binary that took its
// port must not accept them, or a wait would take that server's answer
// for this one's.
func newCluster(t testing.TB, bin, name string) *Cluster {
	secret := func() string {
		b := make([]byte, 8)
		_, _ = rand.Read(b)
		return hex.EncodeToString(b)
	}
	c := &Cluster{Name: name, t: t, bin: bin, dir: t.TempDir(),
		AdminToken: "admin-" + name + "-" + secret(), ViewerToken: "viewer-" + name + "-" + secret()}
	t.Cleanup(func() {
		if t.Failed() {
			c.logTails()
		}
		c.Stop()
	})
	return c
}

//go:embed kwok-stages.yaml
var kwokStages []byte

// fakeNode is the node kwok plays, where every pod is scheduled.
const fakeNode = "kwok-node"

// startWorkloads starts the controllers that make Deployments available,
// registers the fake node kwok plays, and waits until they work.
func (c *Cluster) startWorkloads() error {
	if err := c.runWorkloads(); err != nil {
		return err
	}
	return c.waitWorkloads()
}

// runWorkloads starts the controllers and registers the fake node.
func (c *Cluster) runWorkloads() error {
	kubeconfig := filepath.Join(c.dir, "admin.kubeconfig")
	config := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: %q, insecure-skip-tls-verify: true}}]\n"+
		"users: [{name: admin, user: {token: %q}}]\ncontexts: [{name: c, context: {cluster: c, user: admin}}]\ncurrent-context: c\n",
		c.Server, c.AdminToken)
	stages := filepath.Join(c.dir, "kwok-stages.yaml")
	if err := os.WriteFile(kubeconfig, []byte(config), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(stages, kwokStages, 0o600); err != nil {
		return err
	}
	cmds := [][]string{
		{"kube-controller-manager", "--kubeconfig", kubeconfig, "--leader-elect=false", "--secure-port", "0",
			"--service-account-private-key-file", filepath.Join(c.dir, "sa.key"), "--use-service-account-credentials=false",
			// The fake node sends no kubelet heartbeats: the node lifecycle
			// controller would turn it NotReady after 40s and evict its pods.
			"--controllers", "*,-node-lifecycle-controller"},
		{"kube-scheduler", "--kubeconfig", kubeconfig, "--leader-elect=false", "--secure-port", "0"},
		{"kwok", "--kubeconfig", kubeconfig, "--config", stages, "--manage-all-nodes=false",
			"--manage-nodes-with-annotation-selector", "kwok.x-k8s.io/node=fake", "--server-address", "127.0.0.1:0",
			"--node-ip", "127.0.0.1"},
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cmd := range cmds {
		s, err := c.run(cmd[0], cmd[1:]...)
		if err != nil {
			return err
		}
		c.workloads = append(c.workloads, s)
	}
	node := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Node",
		"metadata": map[string]any{
			"name":        fakeNode,
			"labels":      map[string]any{"type": "kwok", "kubernetes.io/hostname": "kwok-node"},
			"annotations": map[string]any{"kwok.x-k8s.io/node": "fake"},
		},
	}}
	if err := c.client().Create(context.Background(), node); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("register the fake node of %s: %w", c.Name, err)
	}
	return nil
}

// waitWorkloads waits until kwok has marked the fake node Ready and
// kube-controller-manager has given namespace default its service
// account: a test then waits for a Deployment to become available only
// while they run. It fails at once, saying why, when any process of the
// cluster exits (kube-scheduler shows no sign of working before a pod
// exists; its exit is noticed all the same).
func (c *Cluster) waitWorkloads() error {
	c.t.Helper()
	cl := c.client()
	return testproc.Wait(c.t, "the fake node of "+c.Name+" to be Ready and its controllers to work", func(ctx context.Context) bool {
		var node corev1.Node
		if err := cl.Get(ctx, client.ObjectKey{Name: fakeNode}, &node); err != nil {
			return false
		}
		ready := slices.ContainsFunc(node.Status.Conditions, func(c corev1.NodeCondition) bool {
			return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
		})
		var sa corev1.ServiceAccount
		return ready && cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: "default"}, &sa) == nil
	}, c.Servers()...)
}

// Servers are the cluster's processes that run now: etcd, the API server
// unless StopAPIServer stopped it, and the workloads. A test waiting for
// something of the cluster can watch them (testproc.Wait) to fail at once
// when one dies; a stopped API server is not among them.
func (c *Cluster) Servers() []*testproc.Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*testproc.Server
	for _, s := range append([]*testproc.Server{c.etcd, c.apiserver}, c.workloads...) {
		if s != nil {
			out = append(out, s)
		}
	}
	return out
}

// ports are the ones a cluster listens on.
type ports struct{ etcd, etcdPeer, apiserver int }

func freePorts() ports { return ports{freePort(), freePort(), freePort()} }

// start starts etcd and the API server on p; WaitReady waits for them.
func (c *Cluster) start(p ports) error {
	if err := c.writeFiles(); err != nil {
		return err
	}
	c.port = p.apiserver
	c.Server = fmt.Sprintf("https://127.0.0.1:%d", p.apiserver)
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", p.etcd)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", p.etcdPeer)
	etcd, err := c.run("etcd",
		"--name", "default",
		"--data-dir", filepath.Join(c.dir, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "default="+peerURL,
		"--unsafe-no-fsync", "--log-level", "warn")
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.etcd = etcd
	c.mu.Unlock()
	c.apiserverArgs = []string{
		"--etcd-servers", etcdURL,
		"--bind-address", "127.0.0.1",
		"--secure-port", fmt.Sprint(p.apiserver),
		"--cert-dir", filepath.Join(c.dir, "certs"),
		"--token-auth-file", filepath.Join(c.dir, "tokens.csv"),
		"--authorization-mode", "RBAC",
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", filepath.Join(c.dir, "sa.pub"),
		"--service-account-signing-key-file", filepath.Join(c.dir, "sa.key"),
		"--service-cluster-ip-range", "10.0.0.0/24",
		"--endpoint-reconciler-type", "none",
		// No service account tokens to mount; and the fake node must not
		// be tainted not-ready at creation: no node lifecycle controller
		// runs to lift the taint (see startWorkloads).
		"--disable-admission-plugins", "ServiceAccount,TaintNodesByCondition",
		"--enable-priority-and-fairness=false",
	}
	return c.startAPIServer()
}

// portAttempts is how many sets of ports a cluster's start tries.
const portAttempts = 3

// readyOnFreePorts waits until the started cluster is ready. A port is free
// only until another process binds it (another test binary's server, or
// any client's outgoing connection: ephemeral ports come from the same
// range), so a cluster whose etcd or API server lost its port is started
// again, afresh, on new ports.
func (c *Cluster) readyOnFreePorts() error {
	c.t.Helper()
	err := c.waitReady()
	for attempt := 1; lostPort(err) && attempt < portAttempts; attempt++ {
		c.t.Logf("kubetest: %s lost a port to another process, starting it again on new ports: %v", c.Name, err)
		c.Stop()
		if err = os.RemoveAll(filepath.Join(c.dir, "etcd")); err != nil {
			return err
		}
		if err = c.start(freePorts()); err == nil {
			err = c.waitReady()
		}
	}
	return err
}

// lostPort reports whether err says a server could not bind its port.
func lostPort(err error) bool {
	return err != nil && strings.Contains(err.Error(), "address already in use")
}

// apiserverArgs are kept so the API server can be restarted alone.
func (c *Cluster) startAPIServer() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, err := c.run("kube-apiserver", c.apiserverArgs...)
	if err != nil {
		return err
	}
	c.apiserver = s
	return nil
}

// run starts the test binary name of the cluster, logging to name.log.
func (c *Cluster) run(name string, args ...string) (*testproc.Server, error) {
	return testproc.Start(name+" of "+c.Name, exec.Command(filepath.Join(c.bin, name), args...),
		filepath.Join(c.dir, name+".log"))
}

// WaitReady waits until the API server answers /readyz; it fails the test
// at once, saying why, when etcd or the API server exits first.
func (c *Cluster) WaitReady() {
	c.t.Helper()
	if err := c.waitReady(); err != nil {
		c.t.Fatal(err)
	}
}

func (c *Cluster) waitReady() error {
	c.t.Helper()
	c.mu.Lock()
	servers := []*testproc.Server{c.etcd, c.apiserver}
	c.mu.Unlock()
	client := c.httpClient()
	return testproc.Wait(c.t, "the API server of "+c.Name+" to be ready", func(ctx context.Context) bool {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.Server+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+c.AdminToken)
		resp, err := client.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, servers...)
}

func (c *Cluster) httpClient() *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the test API server's self-signed cert
	}}
}

// StopAPIServer kills the API server (etcd keeps running) and the
// controllers that talk to it: the member is down until StartAPIServer.
// (kube-controller-manager does not outlive a lost API server for long.)
func (c *Cluster) StopAPIServer() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range c.workloads {
		w.Kill()
	}
	c.restartWorkloads = len(c.workloads) > 0
	c.workloads = nil
	if c.apiserver != nil {
		c.apiserver.Kill()
	}
	c.apiserver = nil
}

// PauseAPIServer freezes the API server (SIGSTOP): requests to it hang
// until StopAPIServer kills it.
func (c *Cluster) PauseAPIServer() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.apiserver != nil {
		c.apiserver.Pause()
	}
}

// StartAPIServer starts the API server again on the same port, waits
// until it is ready, and starts the controllers again if it had them.
func (c *Cluster) StartAPIServer() {
	c.t.Helper()
	if err := c.restartAPIServer(); err != nil {
		c.t.Fatal(err)
	}
}

func (c *Cluster) restartAPIServer() error {
	c.t.Helper()
	if err := c.startAPIServer(); err != nil {
		return err
	}
	if err := c.waitReady(); err != nil {
		return err
	}
	if c.restartWorkloads {
		return c.startWorkloads()
	}
	return nil
}

// logTails logs the end of each process's log and whether it still runs,
// for a failed test.
func (c *Cluster) logTails() {
	for _, s := range c.Servers() {
		c.t.Logf("%s (running: %v), the end of its log %s:\n%s", s.Name, s.Running(), s.Log, s.Tail())
	}
}

// Stop kills the cluster's processes.
func (c *Cluster) Stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range append(c.workloads, c.apiserver, c.etcd) {
		if s != nil {
			s.Kill()
		}
	}
	c.apiserver, c.etcd, c.workloads = nil, nil, nil
}

// writeFiles writes the token file and the service account key pair.
func (c *Cluster) writeFiles() error {
	tokens := fmt.Sprintf("%s,admin,admin,\"system:masters\"\n%s,viewer,viewer\n", c.AdminToken, c.ViewerToken)
	if err := os.WriteFile(filepath.Join(c.dir, "tokens.csv"), []byte(tokens), 0o600); err != nil {
		return err
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(c.dir, "sa.key"), pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(c.dir, "sa.pub"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o600)
}

// Kubeconfig writes a kubeconfig with one context per cluster, named after
// it, as admin; extra contexts may be added by name → (cluster, token).
func Kubeconfig(t testing.TB, clusters []*Cluster, extra map[string][2]string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Config\nclusters:\n")
	for _, c := range clusters {
		fmt.Fprintf(&b, "- name: %s\n  cluster:\n    server: %s\n    insecure-skip-tls-verify: true\n", c.Name, c.Server)
	}
	b.WriteString("users:\n")
	for _, c := range clusters {
		fmt.Fprintf(&b, "- name: %s-admin\n  user:\n    token: %s\n", c.Name, c.AdminToken)
	}
	for name, ct := range extra {
		fmt.Fprintf(&b, "- name: %s-user\n  user:\n    token: %s\n", name, ct[1])
	}
	b.WriteString("contexts:\n")
	for _, c := range clusters {
		fmt.Fprintf(&b, "- name: %s\n  context:\n    cluster: %s\n    user: %s-admin\n", c.Name, c.Name, c.Name)
	}
	for name, ct := range extra {
		fmt.Fprintf(&b, "- name: %s\n  context:\n    cluster: %s\n    user: %s-user\n", name, ct[0], name)
	}
	if len(clusters) > 0 {
		fmt.Fprintf(&b, "current-context: %s\n", clusters[0].Name)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// freePort returns a port nothing listens on and that no other call of
// this process returned: clusters start side by side, and the kernel may
// hand a port just closed here to the next listener, so two servers got
// the same one (etcd died with "address already in use").
func freePort() int {
	portsMu.Lock()
	defer portsMu.Unlock()
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			panic(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !portsGiven[port] {
			portsGiven[port] = true
			return port
		}
	}
}

var (
	portsMu    sync.Mutex
	portsGiven = map[int]bool{}
)

var quietOnce sync.Once

// Client is an admin client of the cluster, for a test to look at what
// landed there or to play a person changing it.
func (c *Cluster) Client() client.Client {
	c.t.Helper()
	cl, err := c.newClient()
	if err != nil {
		c.t.Fatal(err)
	}
	return cl
}

// client is Client for goroutines other than the test's: it panics on
// an error that only a bug in this package can cause.
func (c *Cluster) client() client.Client {
	cl, err := c.newClient()
	if err != nil {
		panic(err)
	}
	return cl
}

func (c *Cluster) newClient() (client.Client, error) {
	quietOnce.Do(func() { ctrllog.SetLogger(logr.Discard()) })
	return client.New(c.AdminConfig(), client.Options{})
}

// AdminConfig is a client configuration of the cluster's admin (its
// token, the API server's self-signed certificate not verified).
func (c *Cluster) AdminConfig() *rest.Config {
	return &rest.Config{Host: c.Server, BearerToken: c.AdminToken, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
}

// Get returns a live object of the cluster, or nil when it does not exist.
func (c *Cluster) Get(apiVersion, kind, namespace, name string) *unstructured.Unstructured {
	c.t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	err := c.Client().Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, u)
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		c.t.Fatalf("get %s %s/%s from %s: %v", kind, namespace, name, c.Name, err)
	}
	return u
}

// ConfigMapValue is data[key] of a ConfigMap of the cluster, "" when the
// ConfigMap does not exist.
func (c *Cluster) ConfigMapValue(namespace, name, key string) string {
	c.t.Helper()
	cm := c.Get("v1", "ConfigMap", namespace, name)
	if cm == nil {
		return ""
	}
	v, _, _ := unstructured.NestedString(cm.Object, "data", key)
	return v
}
