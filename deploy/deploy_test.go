// Package deploy holds the Kubernetes manifests of gitfleet (kustomize) and,
// in this test, the checks that keep them and the Dockerfile honest: they
// cannot be exercised against a cluster or a Docker engine in CI, so they are
// rendered and parsed instead.
package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

const namespace = "gitfleet-system"

// userProvidedSecrets are created by the user with kubectl (README.md,
// secret-example.yaml); the render must reference them but not contain them.
var userProvidedSecrets = []string{"gitfleet-git-credentials", "gitfleet-webhook"}

// componentSecrets are user-provided Secrets that only a component mounts
// (components/members: the member clusters' kubeconfig).
var componentSecrets = []string{"gitfleet-member-kubeconfig"}

// contractFlags are the `gitfleet serve` flags of the CLI contract
// (DESIGN.md) plus the documented auth and cache flags. The manifests may use
// no other.
var contractFlags = []string{
	"repo", "branch", "path", "interval", "webhook-addr", "webhook-secret-file",
	"metrics-addr", "status-branch", "stuck-threshold", "until-idle", "timeout",
	"username-file", "password-file", "token-file", "ssh-key-file", "known-hosts-file",
	"cache-dir", "kubeconfig", "leader-elect", "leader-election-namespace",
	// the Kubernetes hub issue's flags, beyond DESIGN.md's contract
	"hub",
}

// ---------------------------------------------------------------------------
// Minimal typed views of what the test inspects (k8s.io/api is not a
// dependency; these follow its JSON names).

type meta struct {
	Name      string            `json:"name"`
	Namespace string            `json:"namespace"`
	Labels    map[string]string `json:"labels"`
}

type object struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   meta   `json:"metadata"`
	raw        []byte
}

func (o object) id() string { return o.Kind + "/" + o.Metadata.Name }

func (o object) decode(t *testing.T, into any) {
	t.Helper()
	if err := yaml.Unmarshal(o.raw, into); err != nil {
		t.Fatalf("%s: %v", o.id(), err)
	}
}

type deployment struct {
	Spec struct {
		Replicas *int32 `json:"replicas"`
		Strategy struct {
			Type          string `json:"type"`
			RollingUpdate *struct {
				MaxSurge       *intstr.IntOrString `json:"maxSurge"`
				MaxUnavailable *intstr.IntOrString `json:"maxUnavailable"`
			} `json:"rollingUpdate"`
		} `json:"strategy"`
		Selector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
		Template struct {
			Metadata meta    `json:"metadata"`
			Spec     podSpec `json:"spec"`
		} `json:"template"`
	} `json:"spec"`
}

type podSpec struct {
	ServiceAccountName           string              `json:"serviceAccountName"`
	AutomountServiceAccountToken *bool               `json:"automountServiceAccountToken"`
	HostNetwork                  bool                `json:"hostNetwork"`
	HostPID                      bool                `json:"hostPID"`
	HostIPC                      bool                `json:"hostIPC"`
	SecurityContext              *podSecurityContext `json:"securityContext"`
	InitContainers               []container         `json:"initContainers"`
	Containers                   []container         `json:"containers"`
	Volumes                      []volume            `json:"volumes"`
}

type seccompProfile struct {
	Type string `json:"type"`
}

type podSecurityContext struct {
	RunAsNonRoot   *bool           `json:"runAsNonRoot"`
	RunAsUser      *int64          `json:"runAsUser"`
	RunAsGroup     *int64          `json:"runAsGroup"`
	FSGroup        *int64          `json:"fsGroup"`
	SeccompProfile *seccompProfile `json:"seccompProfile"`
}

type securityContext struct {
	RunAsNonRoot             *bool  `json:"runAsNonRoot"`
	RunAsUser                *int64 `json:"runAsUser"`
	Privileged               *bool  `json:"privileged"`
	AllowPrivilegeEscalation *bool  `json:"allowPrivilegeEscalation"`
	ReadOnlyRootFilesystem   *bool  `json:"readOnlyRootFilesystem"`
	Capabilities             *struct {
		Add  []string `json:"add"`
		Drop []string `json:"drop"`
	} `json:"capabilities"`
	SeccompProfile *seccompProfile `json:"seccompProfile"`
}

type keyRef struct {
	Name     string `json:"name"`
	Key      string `json:"key"`
	Optional *bool  `json:"optional"`
}

type container struct {
	Name    string   `json:"name"`
	Image   string   `json:"image"`
	Command []string `json:"command"`
	Args    []string `json:"args"`
	Env     []struct {
		Name      string `json:"name"`
		Value     string `json:"value"`
		ValueFrom *struct {
			ConfigMapKeyRef *keyRef `json:"configMapKeyRef"`
			SecretKeyRef    *keyRef `json:"secretKeyRef"`
			FieldRef        *struct {
				FieldPath string `json:"fieldPath"`
			} `json:"fieldRef"`
		} `json:"valueFrom"`
	} `json:"env"`
	EnvFrom []struct {
		ConfigMapRef *keyRef `json:"configMapRef"`
		SecretRef    *keyRef `json:"secretRef"`
	} `json:"envFrom"`
	Ports []struct {
		Name          string `json:"name"`
		ContainerPort int32  `json:"containerPort"`
	} `json:"ports"`
	LivenessProbe  *probe `json:"livenessProbe"`
	ReadinessProbe *probe `json:"readinessProbe"`
	StartupProbe   *probe `json:"startupProbe"`
	Resources      struct {
		Requests map[string]resource.Quantity `json:"requests"`
		Limits   map[string]resource.Quantity `json:"limits"`
	} `json:"resources"`
	SecurityContext *securityContext `json:"securityContext"`
	VolumeMounts    []struct {
		Name      string `json:"name"`
		MountPath string `json:"mountPath"`
		ReadOnly  bool   `json:"readOnly"`
	} `json:"volumeMounts"`
}

type probe struct {
	HTTPGet *struct {
		Path string             `json:"path"`
		Port intstr.IntOrString `json:"port"`
	} `json:"httpGet"`
}

type volume struct {
	Name     string `json:"name"`
	EmptyDir *struct {
		SizeLimit *resource.Quantity `json:"sizeLimit"`
	} `json:"emptyDir"`
	Secret *struct {
		SecretName  string `json:"secretName"`
		DefaultMode *int32 `json:"defaultMode"`
		Optional    *bool  `json:"optional"`
	} `json:"secret"`
	ConfigMap *struct {
		Name        string `json:"name"`
		DefaultMode *int32 `json:"defaultMode"`
	} `json:"configMap"`
	Projected *struct {
		Sources []struct {
			Secret    *keyRef `json:"secret"`
			ConfigMap *keyRef `json:"configMap"`
		} `json:"sources"`
	} `json:"projected"`
	HostPath              any `json:"hostPath"`
	PersistentVolumeClaim any `json:"persistentVolumeClaim"`
}

type service struct {
	Spec struct {
		Selector map[string]string `json:"selector"`
		Ports    []servicePort     `json:"ports"`
	} `json:"spec"`
}

type servicePort struct {
	Name       string             `json:"name"`
	Port       int32              `json:"port"`
	TargetPort intstr.IntOrString `json:"targetPort"`
}

type serviceMonitor struct {
	Spec struct {
		Selector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
		Endpoints []struct {
			Port string `json:"port"`
			Path string `json:"path"`
		} `json:"endpoints"`
	} `json:"spec"`
}

// ---------------------------------------------------------------------------
// Rendering.

// render builds the kustomization in dir of fsys, as `kubectl apply -k`
// would, and returns the objects by "Kind/name".
func render(t *testing.T, fsys filesys.FileSystem, dir string) map[string]object {
	t.Helper()
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fsys, dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	objs := map[string]object{}
	for _, r := range resMap.Resources() {
		b, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		var o object
		if err := yaml.Unmarshal(b, &o); err != nil {
			t.Fatal(err)
		}
		o.raw = b
		if _, dup := objs[o.id()]; dup {
			t.Errorf("%s rendered twice", o.id())
		}
		objs[o.id()] = o
	}
	return objs
}

func deployDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// renderBase renders deploy/ from disk, exactly what `kubectl apply -k deploy/` applies.
func renderBase(t *testing.T) map[string]object {
	return render(t, filesys.MakeFsOnDisk(), deployDir(t))
}

// renderWithComponents renders an overlay of deploy/ that enables the given
// components, the way README.md tells users to. deploy/'s YAML files are
// copied into an in-memory filesystem so nothing is written to disk.
func renderWithComponents(t *testing.T, components ...string) map[string]object {
	t.Helper()
	mem := filesys.MakeFsInMemory()
	root := deployDir(t)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return mem.WriteFile(path.Join("/deploy", filepath.ToSlash(rel)), b)
	})
	if err != nil {
		t.Fatal(err)
	}
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../deploy\ncomponents:\n"
	for _, c := range components {
		k += "  - ../deploy/components/" + c + "\n"
	}
	if err := mem.WriteFile("/overlay/kustomization.yaml", []byte(k)); err != nil {
		t.Fatal(err)
	}
	return render(t, mem, "/overlay")
}

func mustGet(t *testing.T, objs map[string]object, id string) object {
	t.Helper()
	o, ok := objs[id]
	if !ok {
		t.Fatalf("render has no %s; it has %v", id, sortedKeys(objs))
	}
	return o
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func gitfleetDeployment(t *testing.T, objs map[string]object) (deployment, container) {
	t.Helper()
	var d deployment
	mustGet(t, objs, "Deployment/gitfleet").decode(t, &d)
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == "gitfleet" {
			return d, c
		}
	}
	t.Fatal("Deployment/gitfleet has no container named gitfleet")
	return d, container{}
}

// ---------------------------------------------------------------------------
// The base: kubectl apply -k deploy/.

func TestBaseObjects(t *testing.T) {
	objs := renderBase(t)
	want := []string{"ConfigMap/gitfleet", "Deployment/gitfleet", "Namespace/gitfleet-system", "Role/gitfleet-leader-election",
		"RoleBinding/gitfleet-leader-election", "Service/gitfleet", "ServiceAccount/gitfleet"}
	if got := sortedKeys(objs); !slices.Equal(got, want) {
		t.Errorf("rendered objects = %v, want %v", got, want)
	}
	for id, o := range objs {
		if o.Kind == "Secret" {
			t.Errorf("%s: secrets must not be rendered (secret-example.yaml is documentation only)", id)
		}
		if o.Kind == "Namespace" {
			continue
		}
		if o.Metadata.Namespace != namespace {
			t.Errorf("%s: namespace %q, want %q", id, o.Metadata.Namespace, namespace)
		}
		if o.Metadata.Labels["app.kubernetes.io/part-of"] != "gitfleet" {
			t.Errorf("%s: missing label app.kubernetes.io/part-of=gitfleet", id)
		}
	}
}

func TestDeploymentShape(t *testing.T) {
	objs := renderBase(t)
	d, _ := gitfleetDeployment(t, objs)
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("replicas = %v, want 2 (a leader and a standby)", d.Spec.Replicas)
	}
	// Leader election keeps one writer, so pods may overlap; a standby
	// must stay while the old leader goes.
	if ru := d.Spec.Strategy.RollingUpdate; d.Spec.Strategy.Type != "RollingUpdate" || ru == nil ||
		ru.MaxUnavailable == nil || ru.MaxUnavailable.String() != "0" {
		t.Errorf("strategy = %+v, want RollingUpdate with maxUnavailable 0", d.Spec.Strategy)
	}
	podLabels := d.Spec.Template.Metadata.Labels
	if len(d.Spec.Selector.MatchLabels) == 0 || !subset(d.Spec.Selector.MatchLabels, podLabels) {
		t.Errorf("selector %v does not select the pod template labels %v", d.Spec.Selector.MatchLabels, podLabels)
	}
	pod := d.Spec.Template.Spec
	if _, ok := objs["ServiceAccount/"+pod.ServiceAccountName]; !ok {
		t.Errorf("serviceAccountName %q is not rendered", pod.ServiceAccountName)
	}
	if !isTrue(pod.AutomountServiceAccountToken) {
		t.Error("automountServiceAccountToken must be true: the leader election Lease is read and written with the pod's token")
	}
	if pod.HostNetwork || pod.HostPID || pod.HostIPC {
		t.Error("the pod must not share host namespaces")
	}
}

func TestSecurityContext(t *testing.T) {
	d, _ := gitfleetDeployment(t, renderBase(t))
	checkSecurityContext(t, d.Spec.Template.Spec)
}

// checkSecurityContext: non-root, read-only root, no privilege, all
// capabilities dropped, RuntimeDefault seccomp (the daemon's and the
// agent's pods).
func checkSecurityContext(t *testing.T, pod podSpec) {
	t.Helper()
	psc := pod.SecurityContext
	if psc == nil {
		t.Fatal("pod securityContext missing")
	}
	if !isTrue(psc.RunAsNonRoot) {
		t.Error("pod runAsNonRoot must be true")
	}
	if psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		t.Errorf("pod runAsUser = %v, want a non-root uid", psc.RunAsUser)
	}
	if psc.FSGroup == nil || *psc.FSGroup == 0 {
		t.Error("pod fsGroup must be set (non-zero) so the non-root user can read the 0440 secrets and write the emptyDirs")
	}
	if psc.SeccompProfile == nil || psc.SeccompProfile.Type != "RuntimeDefault" {
		t.Error("pod seccompProfile must be RuntimeDefault")
	}
	for _, c := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
		sc := c.SecurityContext
		if sc == nil {
			t.Errorf("container %s: securityContext missing", c.Name)
			continue
		}
		if !isTrue(sc.RunAsNonRoot) && !isTrue(psc.RunAsNonRoot) {
			t.Errorf("container %s: runAsNonRoot is not true", c.Name)
		}
		if sc.RunAsUser != nil && *sc.RunAsUser == 0 {
			t.Errorf("container %s: runs as root", c.Name)
		}
		if !isTrue(sc.ReadOnlyRootFilesystem) {
			t.Errorf("container %s: readOnlyRootFilesystem must be true", c.Name)
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("container %s: allowPrivilegeEscalation must be false", c.Name)
		}
		if isTrue(sc.Privileged) {
			t.Errorf("container %s: privileged", c.Name)
		}
		if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
			t.Errorf("container %s: capabilities must drop ALL", c.Name)
		} else if len(sc.Capabilities.Add) > 0 {
			t.Errorf("container %s: adds capabilities %v", c.Name, sc.Capabilities.Add)
		}
		if sc.SeccompProfile != nil && sc.SeccompProfile.Type != "RuntimeDefault" {
			t.Errorf("container %s: seccompProfile %q overrides RuntimeDefault", c.Name, sc.SeccompProfile.Type)
		}
	}
}

func TestContainer(t *testing.T) {
	objs := renderBase(t)
	d, c := gitfleetDeployment(t, objs)

	// Image: pinned, never :latest.
	ref := c.Image
	if i := strings.Index(ref, "@"); i >= 0 {
		ref = ref[:i] // a digest pins it
	} else {
		name, tag := splitImage(ref)
		if tag == "" || tag == "latest" {
			t.Errorf("image %q: give an explicit tag or digest, not latest", c.Image)
		}
		ref = name
	}
	if !strings.HasSuffix(ref, "/gitfleet") {
		t.Errorf("image %q is not gitfleet", c.Image)
	}

	// Probes: on a port the container exposes, at the metrics endpoints.
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["metrics"] != 8080 || ports["webhook"] != 9090 {
		t.Errorf("container ports = %v, want metrics 8080 and webhook 9090", ports)
	}
	for _, pc := range []struct {
		name  string
		probe *probe
		path  string
	}{{"liveness", c.LivenessProbe, "/healthz"}, {"readiness", c.ReadinessProbe, "/readyz"}} {
		if pc.probe == nil || pc.probe.HTTPGet == nil {
			t.Errorf("%s probe: want httpGet %s", pc.name, pc.path)
			continue
		}
		if pc.probe.HTTPGet.Path != pc.path {
			t.Errorf("%s probe path = %q, want %q", pc.name, pc.probe.HTTPGet.Path, pc.path)
		}
		if port, ok := resolvePort(pc.probe.HTTPGet.Port, ports); !ok || port != 8080 {
			t.Errorf("%s probe port %s is not the container's metrics port 8080", pc.name, pc.probe.HTTPGet.Port.String())
		}
	}

	// Resources: requests for scheduling, a memory limit.
	for _, r := range []string{"cpu", "memory"} {
		if q, ok := c.Resources.Requests[r]; !ok || q.IsZero() {
			t.Errorf("resources.requests.%s missing", r)
		}
	}
	if q, ok := c.Resources.Limits["memory"]; !ok || q.IsZero() {
		t.Error("resources.limits.memory missing")
	} else if req := c.Resources.Requests["memory"]; q.Cmp(req) < 0 {
		t.Errorf("memory limit %s below request %s", q.String(), req.String())
	}

	// Service: selects the pod, targets ports the container has.
	var svc service
	mustGet(t, objs, "Service/gitfleet").decode(t, &svc)
	if len(svc.Spec.Selector) == 0 || !subset(svc.Spec.Selector, d.Spec.Template.Metadata.Labels) {
		t.Errorf("Service selector %v does not select the pod (%v)", svc.Spec.Selector, d.Spec.Template.Metadata.Labels)
	}
	svcPorts := map[string]int32{}
	for _, p := range svc.Spec.Ports {
		svcPorts[p.Name] = p.Port
		if port, ok := resolvePort(p.TargetPort, ports); !ok {
			t.Errorf("Service port %s targets %s, which the container does not expose", p.Name, p.TargetPort.String())
		} else if port != p.Port {
			t.Logf("Service port %s: %d -> %d", p.Name, p.Port, port)
		}
	}
	if svcPorts["metrics"] != 8080 || svcPorts["webhook"] != 9090 {
		t.Errorf("Service ports = %v, want metrics 8080 and webhook 9090", svcPorts)
	}
}

func TestVolumesAndReferences(t *testing.T) {
	objs := renderBase(t)
	d, _ := gitfleetDeployment(t, objs)
	pod := d.Spec.Template.Spec
	checkReferences(t, objs, pod)

	vols := map[string]volume{}
	for _, v := range pod.Volumes {
		if v.HostPath != nil {
			t.Errorf("volume %s: hostPath is not allowed", v.Name)
		}
		vols[v.Name] = v
	}
	mounted := map[string]bool{}
	for _, c := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
		for _, m := range c.VolumeMounts {
			mounted[m.Name] = true
			v, ok := vols[m.Name]
			if !ok {
				t.Errorf("container %s mounts %q, which is not a volume of the pod", c.Name, m.Name)
				continue
			}
			if v.Secret != nil {
				if !m.ReadOnly {
					t.Errorf("secret volume %s must be mounted readOnly", m.Name)
				}
				mode := v.Secret.DefaultMode
				switch {
				case mode == nil:
					t.Errorf("secret volume %s: set defaultMode (0440)", m.Name)
				case *mode&0o007 != 0:
					t.Errorf("secret volume %s: defaultMode %#o is world-accessible", m.Name, *mode)
				case *mode&0o040 == 0:
					t.Errorf("secret volume %s: defaultMode %#o: the fsGroup (non-root user) cannot read it", m.Name, *mode)
				case *mode&0o222 != 0:
					t.Errorf("secret volume %s: defaultMode %#o is writable", m.Name, *mode)
				}
			}
		}
	}
	for name := range vols {
		if !mounted[name] {
			t.Errorf("volume %s is never mounted", name)
		}
	}
}

// checkReferences asserts that every ConfigMap and Secret the pod uses is
// rendered or is one of the user-provided secrets, and that referenced
// ConfigMap keys exist.
func checkReferences(t *testing.T, objs map[string]object, pod podSpec) {
	t.Helper()
	secret := func(name, where string) {
		if _, ok := objs["Secret/"+name]; ok || slices.Contains(userProvidedSecrets, name) || slices.Contains(componentSecrets, name) {
			return
		}
		t.Errorf("%s: Secret %q is neither rendered nor a documented user-provided secret %v", where, name, userProvidedSecrets)
	}
	configMap := func(ref keyRef, where string) {
		o, ok := objs["ConfigMap/"+ref.Name]
		if !ok {
			if !isTrue(ref.Optional) {
				t.Errorf("%s: ConfigMap %q is not rendered", where, ref.Name)
			}
			return
		}
		if ref.Key == "" {
			return
		}
		var cm struct {
			Data map[string]string `json:"data"`
		}
		o.decode(t, &cm)
		if _, ok := cm.Data[ref.Key]; !ok && !isTrue(ref.Optional) {
			t.Errorf("%s: ConfigMap %s has no key %q", where, ref.Name, ref.Key)
		}
	}
	for _, v := range pod.Volumes {
		where := "volume " + v.Name
		if v.Secret != nil {
			secret(v.Secret.SecretName, where)
		}
		if v.ConfigMap != nil {
			configMap(keyRef{Name: v.ConfigMap.Name}, where)
		}
		if v.Projected != nil {
			for _, s := range v.Projected.Sources {
				if s.Secret != nil {
					secret(s.Secret.Name, where)
				}
				if s.ConfigMap != nil {
					configMap(keyRef{Name: s.ConfigMap.Name}, where)
				}
			}
		}
	}
	for _, c := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
		for _, e := range c.Env {
			where := "container " + c.Name + " env " + e.Name
			if e.ValueFrom == nil {
				continue
			}
			if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
				configMap(*r, where)
			}
			if r := e.ValueFrom.SecretKeyRef; r != nil {
				secret(r.Name, where)
			}
		}
		for _, e := range c.EnvFrom {
			if e.ConfigMapRef != nil {
				configMap(keyRef{Name: e.ConfigMapRef.Name, Optional: e.ConfigMapRef.Optional}, "container "+c.Name+" envFrom")
			}
			if e.SecretRef != nil {
				secret(e.SecretRef.Name, "container "+c.Name+" envFrom")
			}
		}
	}
	// Both user-provided secrets are actually used (else the docs are stale).
	used := map[string]bool{}
	for _, v := range pod.Volumes {
		if v.Secret != nil {
			used[v.Secret.SecretName] = true
		}
	}
	for _, s := range userProvidedSecrets {
		if !used[s] {
			t.Errorf("user-provided Secret %s is documented but not mounted", s)
		}
	}
}

// ---------------------------------------------------------------------------
// Arguments: the serve flags, all from the CLI contract, files on mounts.

var flagRE = regexp.MustCompile(`^--([a-z0-9][a-z0-9-]*)(?:=(.*))?$`)

// parseArgs returns the flags of a `serve` command line as name -> value.
func parseArgs(t *testing.T, args []string) map[string]string {
	t.Helper()
	if len(args) == 0 || args[0] != "serve" {
		t.Fatalf("args %v: want the serve subcommand first", args)
	}
	flags := map[string]string{}
	for i := 1; i < len(args); i++ {
		m := flagRE.FindStringSubmatch(args[i])
		if m == nil {
			t.Errorf("arg %q: want --flag=value", args[i])
			continue
		}
		if _, dup := flags[m[1]]; dup {
			t.Errorf("flag --%s given twice", m[1])
		}
		if !strings.Contains(args[i], "=") && m[1] != "until-idle" {
			t.Errorf("arg %q: write --flag=value, so a value cannot be mistaken for a flag", args[i])
		}
		flags[m[1]] = m[2]
	}
	return flags
}

// serveFlags returns the flag names cmd/gitfleet/serve.go defines (and
// internal/leader, whose AddFlags it calls), or nil if serve.go is not
// there (the contract list is then the only check).
func serveFlags(t *testing.T) []string {
	b, err := os.ReadFile(filepath.Join("..", "cmd", "gitfleet", "serve.go"))
	if err != nil {
		t.Logf("cmd/gitfleet/serve.go not readable (%v): checking against the contract only", err)
		return nil
	}
	// serve's flag groups of their own (--hub*, --forge*).
	more, _ := filepath.Glob(filepath.Join("..", "cmd", "gitfleet", "serve_*.go"))
	for _, f := range more {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		m, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b = append(b, m...)
	}
	if bytes.Contains(b, []byte("leaderElection.AddFlags(f)")) {
		l, err := os.ReadFile(filepath.Join("..", "internal", "leader", "leader.go"))
		if err != nil {
			t.Fatal(err)
		}
		b = append(b, l...)
	}
	var names []string
	for _, m := range regexp.MustCompile(`\bf\.\w+(?:Var)?P?\([^"\n]*"([a-z0-9-]+)"`).FindAllSubmatch(b, -1) {
		names = append(names, string(m[1]))
	}
	if len(names) == 0 {
		t.Logf("found no f.XxxVar(…, \"name\", …) flag definitions in cmd/gitfleet/serve.go: checking against the contract only")
	}
	return names
}

func checkArgs(t *testing.T, c container, pod podSpec) map[string]string {
	t.Helper()
	if len(c.Command) > 0 {
		t.Errorf("command %v overrides the image ENTRYPOINT; use args", c.Command)
	}
	flags := parseArgs(t, c.Args)
	defined := serveFlags(t)
	for name := range flags {
		if !slices.Contains(contractFlags, name) {
			t.Errorf("flag --%s is not in the CLI contract %v", name, contractFlags)
		}
		if defined != nil && !slices.Contains(defined, name) {
			t.Errorf("flag --%s is not defined by cmd/gitfleet/serve.go (%v)", name, defined)
		}
	}
	// $(VAR) references must resolve, or Kubernetes passes them literally.
	env := map[string]bool{}
	for _, e := range c.Env {
		env[e.Name] = true
	}
	for _, a := range c.Args {
		for _, m := range regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`).FindAllStringSubmatch(a, -1) {
			if !env[m[1]] {
				t.Errorf("arg %q references $(%s), which is not an env var of the container", a, m[1])
			}
		}
	}
	// Files named by flags must be on a mount of the right kind.
	vols := map[string]volume{}
	for _, v := range pod.Volumes {
		vols[v.Name] = v
	}
	mountOf := func(file string) (volume, bool, bool) {
		best, bestLen, ro := volume{}, -1, false
		for _, m := range c.VolumeMounts {
			if (file == m.MountPath || strings.HasPrefix(file, strings.TrimSuffix(m.MountPath, "/")+"/")) && len(m.MountPath) > bestLen {
				best, bestLen, ro = vols[m.Name], len(m.MountPath), m.ReadOnly
			}
		}
		return best, bestLen >= 0, ro
	}
	for _, name := range []string{"webhook-secret-file", "token-file", "username-file", "password-file", "ssh-key-file", "known-hosts-file", "kubeconfig"} {
		file, ok := flags[name]
		if !ok {
			continue
		}
		v, ok, _ := mountOf(file)
		if !ok || v.Secret == nil {
			t.Errorf("--%s=%s is not on a Secret volume mount", name, file)
		}
	}
	if dir, ok := flags["cache-dir"]; ok {
		v, ok, ro := mountOf(dir)
		if !ok || ro || (v.EmptyDir == nil && v.PersistentVolumeClaim == nil) {
			t.Errorf("--cache-dir=%s must be a writable emptyDir or PVC mount (the root filesystem is read-only)", dir)
		}
	}
	if v, ok, ro := mountOf("/tmp/x"); !ok || ro || v.EmptyDir == nil {
		t.Error("/tmp must be a writable emptyDir (the root filesystem is read-only)")
	}
	return flags
}

func TestArgs(t *testing.T) {
	d, c := gitfleetDeployment(t, renderBase(t))
	flags := checkArgs(t, c, d.Spec.Template.Spec)
	want := map[string]string{
		"repo":                "$(GITFLEET_REPO)",
		"metrics-addr":        ":8080",
		"webhook-addr":        ":9090",
		"webhook-secret-file": "/etc/gitfleet/webhook/secret",
		"token-file":          "/etc/gitfleet/git/token",
		"cache-dir":           "/var/cache/gitfleet",
	}
	for name, v := range want {
		if got, ok := flags[name]; !ok || got != v {
			t.Errorf("--%s = %q (set: %v), want %q", name, got, ok, v)
		}
	}
	// The repository comes from the ConfigMap.
	for _, e := range c.Env {
		if e.Name == "GITFLEET_REPO" && (e.ValueFrom == nil || e.ValueFrom.ConfigMapKeyRef == nil) {
			t.Error("GITFLEET_REPO must come from the ConfigMap")
		}
	}
	// The addresses agree with the container ports.
	for _, p := range c.Ports {
		addr := map[string]string{"metrics": flags["metrics-addr"], "webhook": flags["webhook-addr"]}[p.Name]
		if addr != "" && addr != ":"+strconv.Itoa(int(p.ContainerPort)) {
			t.Errorf("port %s is %d but gitfleet listens on %q", p.Name, p.ContainerPort, addr)
		}
	}
}

type role struct {
	Rules []struct {
		APIGroups     []string `json:"apiGroups"`
		Resources     []string `json:"resources"`
		ResourceNames []string `json:"resourceNames"`
		Verbs         []string `json:"verbs"`
	} `json:"rules"`
}

type roleBinding struct {
	RoleRef struct {
		APIGroup string `json:"apiGroup"`
		Kind     string `json:"kind"`
		Name     string `json:"name"`
	} `json:"roleRef"`
	Subjects []struct {
		Kind      string `json:"kind"`
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"subjects"`
}

// Two replicas elect a leader through a Lease in their own namespace: the
// flag is on, the namespace comes from the downward API, and the pod's
// service account may get, create and update leases there and nothing
// else.
func TestLeaderElection(t *testing.T) {
	objs := renderBase(t)
	d, c := gitfleetDeployment(t, objs)
	flags := checkArgs(t, c, d.Spec.Template.Spec)
	if flags["leader-elect"] != "true" {
		t.Errorf("--leader-elect = %q, want true", flags["leader-elect"])
	}
	if flags["leader-election-namespace"] != "$(POD_NAMESPACE)" {
		t.Errorf("--leader-election-namespace = %q, want $(POD_NAMESPACE)", flags["leader-election-namespace"])
	}
	for _, e := range c.Env {
		if e.Name == "POD_NAMESPACE" && (e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != "metadata.namespace") {
			t.Error("POD_NAMESPACE must come from the downward API (fieldRef metadata.namespace)")
		}
	}

	var r role
	mustGet(t, objs, "Role/gitfleet-leader-election").decode(t, &r)
	if len(r.Rules) != 1 {
		t.Fatalf("Role rules = %+v, want one rule for leases", r.Rules)
	}
	rule := r.Rules[0]
	if !slices.Equal(rule.APIGroups, []string{"coordination.k8s.io"}) || !slices.Equal(rule.Resources, []string{"leases"}) ||
		!slices.Equal(slices.Sorted(slices.Values(rule.Verbs)), []string{"create", "get", "update"}) {
		t.Errorf("Role rule = %+v, want get, create, update on coordination.k8s.io leases", rule)
	}

	var rb roleBinding
	mustGet(t, objs, "RoleBinding/gitfleet-leader-election").decode(t, &rb)
	if rb.RoleRef.Kind != "Role" || rb.RoleRef.Name != "gitfleet-leader-election" || rb.RoleRef.APIGroup != "rbac.authorization.k8s.io" {
		t.Errorf("RoleBinding roleRef = %+v", rb.RoleRef)
	}
	sa := d.Spec.Template.Spec.ServiceAccountName
	if len(rb.Subjects) != 1 || rb.Subjects[0].Kind != "ServiceAccount" || rb.Subjects[0].Name != sa || rb.Subjects[0].Namespace != namespace {
		t.Errorf("RoleBinding subjects = %+v, want the pod's ServiceAccount %s in %s", rb.Subjects, sa, namespace)
	}
}

// ---------------------------------------------------------------------------
// Components.

func TestComponentSSH(t *testing.T) {
	objs := renderWithComponents(t, "ssh")
	d, c := gitfleetDeployment(t, objs)
	flags := checkArgs(t, c, d.Spec.Template.Spec)
	if _, ok := flags["token-file"]; ok {
		t.Error("with components/ssh --token-file must be gone")
	}
	if flags["ssh-key-file"] != "/etc/gitfleet/git/ssh-privatekey" || flags["known-hosts-file"] != "/etc/gitfleet/git/known_hosts" {
		t.Errorf("ssh flags = %q / %q", flags["ssh-key-file"], flags["known-hosts-file"])
	}
	if _, ok := flags["repo"]; !ok {
		t.Error("components/ssh lost --repo")
	}
}

func TestComponentKubeHub(t *testing.T) {
	objs := renderWithComponents(t, "kube-hub")
	d, c := gitfleetDeployment(t, objs)
	flags := checkArgs(t, c, d.Spec.Template.Spec)
	if flags["hub"] != "kube" || flags["hub-kubeconfig"] != "" {
		t.Errorf("with components/kube-hub: --hub=%q --hub-kubeconfig=%q; want kube and the pod's service account", flags["hub"], flags["hub-kubeconfig"])
	}
	crb := mustGet(t, objs, "ClusterRoleBinding/gitfleet-hub")
	var rb roleBinding
	crb.decode(t, &rb)
	if sa := d.Spec.Template.Spec.ServiceAccountName; len(rb.Subjects) != 1 || rb.Subjects[0].Name != sa || rb.Subjects[0].Namespace != namespace {
		t.Errorf("ClusterRoleBinding subjects = %+v, want the pod's ServiceAccount %s in %s", rb.Subjects, sa, namespace)
	}
}

func TestComponentMonitoring(t *testing.T) {
	objs := renderWithComponents(t, "monitoring", "ssh")
	sm := mustGet(t, objs, "ServiceMonitor/gitfleet")
	if sm.APIVersion != "monitoring.coreos.com/v1" || sm.Metadata.Namespace != namespace {
		t.Errorf("ServiceMonitor: apiVersion %s namespace %s", sm.APIVersion, sm.Metadata.Namespace)
	}
	var mon serviceMonitor
	sm.decode(t, &mon)
	svcObj := mustGet(t, objs, "Service/gitfleet")
	var svc service
	svcObj.decode(t, &svc)
	if len(mon.Spec.Selector.MatchLabels) == 0 || !subset(mon.Spec.Selector.MatchLabels, svcObj.Metadata.Labels) {
		t.Errorf("ServiceMonitor selector %v does not select the Service (labels %v)", mon.Spec.Selector.MatchLabels, svcObj.Metadata.Labels)
	}
	if len(mon.Spec.Endpoints) == 0 {
		t.Fatal("ServiceMonitor has no endpoints")
	}
	for _, e := range mon.Spec.Endpoints {
		if !slices.ContainsFunc(svc.Spec.Ports, func(p servicePort) bool { return p.Name == e.Port }) {
			t.Errorf("ServiceMonitor endpoint port %q is not a Service port", e.Port)
		}
		if e.Port != "metrics" || (e.Path != "" && e.Path != "/metrics") {
			t.Errorf("ServiceMonitor endpoint %s%s, want metrics /metrics", e.Port, e.Path)
		}
	}
	// The base stays intact under both components.
	d, c := gitfleetDeployment(t, objs)
	checkReferences(t, objs, d.Spec.Template.Spec)
	checkArgs(t, c, d.Spec.Template.Spec)
}

// TestSecretExample checks that the documented example secrets are the ones
// the Deployment mounts, with the keys the flags read.
func TestSecretExample(t *testing.T) {
	b, err := os.ReadFile("secret-example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string][]string{}
	for _, doc := range strings.Split(string(b), "\n---\n") {
		var s struct {
			Kind       string            `json:"kind"`
			Metadata   meta              `json:"metadata"`
			StringData map[string]string `json:"stringData"`
		}
		if err := yaml.Unmarshal([]byte(doc), &s); err != nil {
			t.Fatal(err)
		}
		if s.Kind != "Secret" || s.Metadata.Namespace != namespace {
			t.Errorf("example %s/%s in %q: want Secrets in %s", s.Kind, s.Metadata.Name, s.Metadata.Namespace, namespace)
		}
		keys[s.Metadata.Name] = sortedKeys(s.StringData)
	}
	if got := sortedKeys(keys); !slices.Equal(got, userProvidedSecrets) {
		t.Errorf("example secrets %v, want %v", got, userProvidedSecrets)
	}
	if !slices.Contains(keys["gitfleet-git-credentials"], "token") || !slices.Contains(keys["gitfleet-webhook"], "secret") {
		t.Errorf("example secret keys %v: want token and secret", keys)
	}

	// README.md tells how to create exactly these, and how to install.
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"kubectl apply -k deploy/",
		"create secret generic gitfleet-git-credentials",
		"--from-file=token=",
		"create secret generic gitfleet-webhook",
		"--from-literal=secret=",
		"application/json",
		"/webhook",
	} {
		if !strings.Contains(string(readme), want) {
			t.Errorf("README.md does not mention %q", want)
		}
	}
}

// ---------------------------------------------------------------------------
// Dockerfile.

type instruction struct {
	line  int    // first line
	cmd   string // upper-case instruction
	flags []string
	args  string // the rest, flags removed
}

type stage struct {
	name, image string
	platform    string
	instrs      []instruction
}

// parseDockerfile is a small Dockerfile reader: comments, line continuations
// with `\`, instructions with their --flags, and FROM … AS name stages.
// Heredocs are not supported (and not used).
func parseDockerfile(src string) ([]stage, []instruction, error) {
	var instrs []instruction
	var cur strings.Builder
	start := 0
	lines := strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n")
	for i, l := range lines {
		trimmed := strings.TrimSpace(l)
		if strings.HasPrefix(trimmed, "#") {
			continue // comments and parser directives, also inside continuations
		}
		if cur.Len() == 0 {
			if trimmed == "" {
				continue
			}
			start = i + 1
		}
		if strings.HasSuffix(trimmed, `\`) {
			cur.WriteString(strings.TrimSuffix(trimmed, `\`))
			cur.WriteByte(' ')
			continue
		}
		cur.WriteString(trimmed)
		in, err := parseInstruction(start, cur.String())
		if err != nil {
			return nil, nil, err
		}
		instrs = append(instrs, in)
		cur.Reset()
	}
	if cur.Len() > 0 {
		return nil, nil, fmt.Errorf("line %d: continuation at end of file", start)
	}
	var stages []stage
	var preamble []instruction // ARGs before the first FROM
	for _, in := range instrs {
		if strings.Contains(in.args, "<<") && (in.cmd == "RUN" || in.cmd == "COPY") {
			return nil, nil, fmt.Errorf("line %d: heredocs are not supported by this parser", in.line)
		}
		if in.cmd == "FROM" {
			f := strings.Fields(in.args)
			s := stage{platform: flagValue(in.flags, "platform"), instrs: []instruction{in}}
			switch {
			case len(f) == 1:
				s.image = f[0]
			case len(f) == 3 && strings.EqualFold(f[1], "AS"):
				s.image, s.name = f[0], f[2]
			default:
				return nil, nil, fmt.Errorf("line %d: FROM %q: want IMAGE [AS name]", in.line, in.args)
			}
			stages = append(stages, s)
			continue
		}
		if len(stages) == 0 {
			if in.cmd != "ARG" {
				return nil, nil, fmt.Errorf("line %d: %s before FROM", in.line, in.cmd)
			}
			preamble = append(preamble, in)
			continue
		}
		stages[len(stages)-1].instrs = append(stages[len(stages)-1].instrs, in)
	}
	return stages, preamble, nil
}

func parseInstruction(line int, s string) (instruction, error) {
	cmd, rest, _ := strings.Cut(s, " ")
	in := instruction{line: line, cmd: strings.ToUpper(cmd)}
	if !regexp.MustCompile(`^[A-Z]+$`).MatchString(in.cmd) {
		return in, fmt.Errorf("line %d: %q is not an instruction", line, cmd)
	}
	rest = strings.TrimSpace(rest)
	for strings.HasPrefix(rest, "--") {
		flag, after, _ := strings.Cut(rest, " ")
		in.flags = append(in.flags, flag)
		rest = strings.TrimSpace(after)
	}
	in.args = rest
	return in, nil
}

// flagValue returns the value of --name=value among flags.
func flagValue(flags []string, name string) string {
	for _, f := range flags {
		if v, ok := strings.CutPrefix(f, "--"+name+"="); ok {
			return v
		}
	}
	return ""
}

func readDockerfile(t *testing.T) []stage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	stages, _, err := parseDockerfile(string(b))
	if err != nil {
		t.Fatal(err)
	}
	return stages
}

func TestDockerfileParser(t *testing.T) {
	src := "# syntax=docker/dockerfile:1\nARG X=1\nFROM --platform=$BUILDPLATFORM golang:1 AS b\nRUN a \\\n  # inside\n  && b \\\n  c\n\nfrom scratch\ncopy --from=b --chown=1:1 /x /y\n"
	stages, pre, err := parseDockerfile(src)
	if err != nil {
		t.Fatal(err)
	}
	if len(pre) != 1 || len(stages) != 2 || stages[0].name != "b" || stages[0].platform != "$BUILDPLATFORM" || stages[1].image != "scratch" {
		t.Fatalf("parsed %+v %+v", pre, stages)
	}
	if run := stages[0].instrs[1]; run.cmd != "RUN" || run.args != "a  && b  c" || run.line != 4 {
		t.Errorf("RUN = %+v", run)
	}
	if cp := stages[1].instrs[1]; cp.cmd != "COPY" || !slices.Equal(cp.flags, []string{"--from=b", "--chown=1:1"}) || cp.args != "/x /y" {
		t.Errorf("COPY = %+v", cp)
	}
	if _, _, err := parseDockerfile("RUN x\n"); err == nil {
		t.Error("RUN before FROM accepted")
	}
}

func TestDockerfile(t *testing.T) {
	stages := readDockerfile(t)
	if len(stages) < 2 {
		t.Fatalf("%d stages, want a multi-stage build", len(stages))
	}
	final := stages[len(stages)-1]
	byName := map[string]int{}
	for i, s := range stages {
		if s.name != "" {
			byName[s.name] = i
		}
		if s.image != "scratch" {
			if _, tag := splitImage(s.image); (tag == "" || tag == "latest") && !strings.Contains(s.image, "@") {
				t.Errorf("stage %d: base image %q must be tagged, not latest", i, s.image)
			}
		}
	}

	// Final stage: distroless static (or scratch), non-root.
	if !strings.HasPrefix(final.image, "gcr.io/distroless/static") && final.image != "scratch" {
		t.Errorf("final image %q: want gcr.io/distroless/static… or scratch", final.image)
	}
	user := ""
	for _, in := range final.instrs {
		if in.cmd == "USER" {
			user = in.args
		}
	}
	if user == "" {
		t.Error("final stage sets no USER")
	} else if uid, _, _ := strings.Cut(user, ":"); uid == "root" || uid == "0" {
		t.Errorf("USER %s is root", user)
	} else if n, err := strconv.Atoi(uid); err == nil {
		// The Deployment runs as the same uid.
		d, _ := gitfleetDeployment(t, renderBase(t))
		if sc := d.Spec.Template.Spec.SecurityContext; sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != int64(n) {
			t.Errorf("Dockerfile USER %d differs from the Deployment's runAsUser", n)
		}
	} else if uid != "nonroot" {
		t.Errorf("USER %s: want a numeric uid (runAsNonRoot needs one) or nonroot", user)
	}
	if !strings.HasSuffix(final.image, ":nonroot") {
		if n, err := strconv.Atoi(strings.SplitN(user, ":", 2)[0]); err != nil || n == 0 {
			t.Errorf("final image %q is not :nonroot and USER %q is not a numeric non-root uid", final.image, user)
		}
	}

	// The final stage copies only the build's outputs.
	var buildStages []int
	entrypoint, exposed := "", []string{}
	for _, in := range final.instrs[1:] {
		switch in.cmd {
		case "ADD":
			t.Errorf("line %d: ADD in the final stage; COPY --from the build stage", in.line)
		case "COPY":
			from := flagValue(in.flags, "from")
			i, ok := byName[from]
			if !ok {
				if n, err := strconv.Atoi(from); err == nil && n < len(stages)-1 {
					i, ok = n, true
				}
			}
			if !ok {
				t.Errorf("line %d: COPY %s in the final stage does not come from a build stage", in.line, in.args)
				continue
			}
			buildStages = append(buildStages, i)
		case "RUN":
			t.Errorf("line %d: RUN in the final stage (it has no shell)", in.line)
		case "ENTRYPOINT":
			entrypoint = in.args
		case "CMD":
			var v []string
			if err := json.Unmarshal([]byte(in.args), &v); err != nil {
				t.Errorf("line %d: CMD %s is not exec-form JSON", in.line, in.args)
			}
		case "EXPOSE":
			exposed = append(exposed, strings.Fields(in.args)...)
		}
	}
	if len(buildStages) == 0 {
		t.Fatal("the final stage copies nothing from a build stage")
	}
	var ep []string
	if err := json.Unmarshal([]byte(entrypoint), &ep); err != nil || len(ep) == 0 {
		t.Errorf("ENTRYPOINT %q: want exec-form JSON, e.g. [\"/gitfleet\"]", entrypoint)
	}
	for _, p := range []string{"8080", "9090"} {
		if !slices.Contains(exposed, p) && !slices.Contains(exposed, p+"/tcp") {
			t.Errorf("EXPOSE %v lacks %s", exposed, p)
		}
	}

	// The build stage: cross-compiling, static, cached module layer.
	for _, i := range slices.Compact(slices.Sorted(slices.Values(buildStages))) {
		checkBuildStage(t, stages[i])
	}

	// Anywhere: no remote ADD, no secrets in ARG/ENV.
	secretish := regexp.MustCompile(`(?i)(token|password|passwd|secret|private_?key|credential)`)
	for _, s := range stages {
		for _, in := range s.instrs {
			if in.cmd == "ADD" && regexp.MustCompile(`(?i)\bhttps?://`).MatchString(in.args) {
				t.Errorf("line %d: ADD of a URL; download in a RUN with a checksum instead", in.line)
			}
			if (in.cmd == "ARG" || in.cmd == "ENV") && secretish.MatchString(in.args) {
				t.Errorf("line %d: %s %s looks like a secret baked into the image", in.line, in.cmd, in.args)
			}
		}
	}
}

func checkBuildStage(t *testing.T, s stage) {
	t.Helper()
	if s.platform != "$BUILDPLATFORM" && s.platform != "${BUILDPLATFORM}" {
		t.Errorf("build stage %s: FROM --platform=$BUILDPLATFORM, so it cross-compiles instead of emulating", s.name)
	}
	if !strings.HasPrefix(s.image, "golang:") {
		t.Errorf("build stage %s: image %q, want golang:…", s.name, s.image)
	}
	args, cgoEnv := map[string]bool{}, false
	modCopy, download, srcCopy, build := -1, -1, -1, -1
	for i, in := range s.instrs {
		switch in.cmd {
		case "ARG":
			for _, f := range strings.Fields(in.args) {
				name, _, _ := strings.Cut(f, "=")
				args[name] = true
			}
		case "ENV":
			if regexp.MustCompile(`\bCGO_ENABLED=0\b`).MatchString(in.args) {
				cgoEnv = true
			}
		case "COPY":
			src := strings.Fields(in.args)
			if len(src) > 0 {
				src = src[:len(src)-1]
			}
			switch {
			case slices.Contains(src, "go.mod") && slices.Contains(src, "go.sum") && modCopy < 0:
				modCopy = i
			case (slices.Contains(src, ".") || slices.Contains(src, "./")) && srcCopy < 0:
				srcCopy = i
			}
		case "RUN":
			if strings.Contains(in.args, "go mod download") && download < 0 {
				download = i
			}
			if strings.Contains(in.args, "go build") {
				build = i
				if !cgoEnv && !regexp.MustCompile(`\bCGO_ENABLED=0\b`).MatchString(in.args) {
					t.Errorf("line %d: go build without CGO_ENABLED=0 (the final image is static)", in.line)
				}
				for _, want := range []string{"-trimpath", "-X main.version=", "./cmd/gitfleet", "GOOS=${TARGETOS}", "GOARCH=${TARGETARCH}"} {
					if !strings.Contains(in.args, want) {
						t.Errorf("line %d: go build lacks %q", in.line, want)
					}
				}
			}
		}
	}
	for _, a := range []string{"TARGETOS", "TARGETARCH", "VERSION"} {
		if !args[a] {
			t.Errorf("build stage: ARG %s missing", a)
		}
	}
	if modCopy < 0 || download < 0 || srcCopy < 0 || build < 0 {
		t.Fatalf("build stage: COPY go.mod go.sum (%d), RUN go mod download (%d), COPY . (%d), RUN go build (%d): all needed", modCopy, download, srcCopy, build)
	}
	if !(modCopy < download && download < srcCopy && srcCopy < build) {
		t.Errorf("build stage order: COPY go.mod go.sum, RUN go mod download, COPY ., RUN go build — for a cached module layer")
	}
}

func TestDockerignore(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			patterns = append(patterns, l)
		}
	}
	ignored := func(p string) bool {
		out := false
		for _, pat := range patterns {
			neg := strings.HasPrefix(pat, "!")
			pat = strings.TrimPrefix(pat, "!")
			if dockerignoreMatch(pat, p) {
				out = !neg
			}
		}
		return out
	}
	for _, p := range []string{".git", ".git/config", "bin/gitfleet", "gitsource/gitsource.test"} {
		if !ignored(p) {
			t.Errorf("%s is sent to the build context; add it to .dockerignore", p)
		}
	}
	for _, p := range []string{"go.mod", "go.sum", "cmd/gitfleet/main.go", "status/encode.go", "gitsource/source.go"} {
		if ignored(p) {
			t.Errorf(".dockerignore excludes %s, which the build needs", p)
		}
	}
}

// dockerignoreMatch approximates Docker's matching: a pattern matches a path
// or any of its parent directories; `**` spans any number of directories.
func dockerignoreMatch(pattern, p string) bool {
	pattern = strings.Trim(path.Clean(pattern), "/")
	parts := strings.Split(p, "/")
	for i := 1; i <= len(parts); i++ {
		if globMatch(strings.Split(pattern, "/"), parts[:i]) {
			return true
		}
	}
	return false
}

func globMatch(pat, segs []string) bool {
	if len(pat) == 0 {
		return len(segs) == 0
	}
	if pat[0] == "**" {
		for i := 0; i <= len(segs); i++ {
			if globMatch(pat[1:], segs[i:]) {
				return true
			}
		}
		return false
	}
	if len(segs) == 0 {
		return false
	}
	ok, err := path.Match(pat[0], segs[0])
	return err == nil && ok && globMatch(pat[1:], segs[1:])
}

// ---------------------------------------------------------------------------
// Helpers.

func isTrue(b *bool) bool { return b != nil && *b }

func subset(sub, of map[string]string) bool {
	for k, v := range sub {
		if of[k] != v {
			return false
		}
	}
	return true
}

// resolvePort returns the number of a probe or target port given by name or
// number among the container's named ports.
func resolvePort(p intstr.IntOrString, ports map[string]int32) (int32, bool) {
	if p.Type == intstr.String {
		n, ok := ports[p.StrVal]
		return n, ok
	}
	for _, n := range ports {
		if n == p.IntVal {
			return n, true
		}
	}
	return 0, false
}

// splitImage splits "registry:5000/name:tag" into name and tag.
func splitImage(ref string) (name, tag string) {
	slash := strings.LastIndex(ref, "/")
	if colon := strings.LastIndex(ref, ":"); colon > slash {
		return ref[:colon], ref[colon+1:]
	}
	return ref, ""
}

func TestComponentMembers(t *testing.T) {
	objs := renderWithComponents(t, "members", "ssh")
	d, c := gitfleetDeployment(t, objs)
	flags := checkArgs(t, c, d.Spec.Template.Spec)
	if flags["kubeconfig"] != "/etc/gitfleet/members/kubeconfig" {
		t.Errorf("--kubeconfig = %q, want the mounted Secret's file", flags["kubeconfig"])
	}
	checkReferences(t, objs, d.Spec.Template.Spec)
}
