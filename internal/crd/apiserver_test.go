package crd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/internal/testing/gittest"
	"github.com/gitfleet/gitfleet/internal/testing/kubetest"
)

// TestCRDsOnKubeAPIServer installs config/crd on a real kube-apiserver the
// way the README says and uses the kinds as a kubectl user of a KubeFleet
// hub does.
func TestCRDsOnKubeAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver")
	}
	k := newKubectl(t)
	hub := kubetest.Start(t, "hub")[0]
	k.kubeconfig = kubetest.Kubeconfig(t, []*kubetest.Cluster{hub}, nil)

	k.run("apply", "--server-side", "-R", "-f", crdDir)
	waitServed(t, hub, readCRDs(t))
	k.run("apply", "--server-side", "-f", filepath.Join(repoRoot, "examples", "quickstart"))

	t.Run("get shows KubeFleet's columns", func(t *testing.T) {
		k := k.with(t)
		assertTable(t, k.run("get", "clusterstagedupdaterun"),
			"NAME PLACEMENT RESOURCE-SNAPSHOT-INDEX POLICY-SNAPSHOT-INDEX INITIALIZED PROGRESSING SUCCEEDED AGE",
			"example-run", "example-placement", "", "", "", "", "")
		assertTable(t, k.run("get", "clusterstagedupdaterun", "-o", "wide"),
			"NAME PLACEMENT RESOURCE-SNAPSHOT-INDEX POLICY-SNAPSHOT-INDEX INITIALIZED PROGRESSING SUCCEEDED AGE STRATEGY",
			"example-run", "example-placement", "", "", "", "", "")
		assertTable(t, k.run("get", "clusterresourceplacement"),
			"NAME GEN SCHEDULED SCHEDULED-GEN AVAILABLE AVAILABLE-GEN AGE",
			"example-placement", "1", "", "", "", "")
		assertTable(t, k.run("get", "memberclusters"),
			"NAME JOINED AGE MEMBER-AGENT-LAST-SEEN NODE-COUNT AVAILABLE-CPU AVAILABLE-MEMORY",
			"member1", "")
	})

	t.Run("short names and categories", func(t *testing.T) {
		k := k.with(t)
		if got, want := k.run("get", "csur", "-o", "name"), "clusterstagedupdaterun.placement.kubernetes-fleet.io/example-run\n"; got != want {
			t.Errorf("kubectl get csur -o name = %q; want %q", got, want)
		}
		for _, c := range readCRDs(t) {
			for _, short := range c.Spec.Names.ShortNames {
				k.run("get", short, "--all-namespaces", "-o", "name")
			}
		}
		got := k.run("get", "fleet", "-o", "name")
		for _, want := range []string{
			"clusterresourceplacement.placement.kubernetes-fleet.io/example-placement",
			"clusterstagedupdatestrategy.placement.kubernetes-fleet.io/example-strategy",
			"clusterstagedupdaterun.placement.kubernetes-fleet.io/example-run",
			"membercluster.cluster.kubernetes-fleet.io/member1",
		} {
			if !strings.Contains(got, want+"\n") {
				t.Errorf("kubectl get fleet -o name lacks %s:\n%s", want, got)
			}
		}
	})

	t.Run("status is a subresource", func(t *testing.T) {
		k := k.with(t)
		k.run("patch", "clusterstagedupdaterun", "example-run", "--subresource=status", "--type=merge", "-p",
			`{"status":{"policySnapshotIndexUsed":"0","conditions":[{"type":"Initialized","status":"True",`+
				`"reason":"UpdateRunInitializedSuccessfully","message":"The UpdateRun initialized successfully",`+
				`"lastTransitionTime":"2026-01-01T00:00:00Z","observedGeneration":1}]}}`)
		// The main resource ignores status, as with any status subresource.
		k.run("patch", "clusterstagedupdaterun", "example-run", "--type=merge", "-p",
			`{"status":{"policySnapshotIndexUsed":"9"}}`)
		assertTable(t, k.run("get", "csur", "example-run"),
			"NAME PLACEMENT RESOURCE-SNAPSHOT-INDEX POLICY-SNAPSHOT-INDEX INITIALIZED PROGRESSING SUCCEEDED AGE",
			"example-run", "example-placement", "", "0", "True", "", "")

		// The approval of seed 003, as the Kubernetes hub issue writes it.
		k.run("apply", "--server-side", "-f", filepath.Join(repoRoot, "render", "testdata", "demo", "approvals", "example-run-after-canary.yaml"))
		k.run("patch", "clusterapprovalrequests", "example-run-after-canary", "--type=merge", "--subresource=status", "-p",
			`{"status":{"conditions":[{"type":"Approved","status":"True","reason":"testPassed","message":"approved",`+
				`"lastTransitionTime":"2026-01-01T00:00:00Z","observedGeneration":1}]}}`)
		assertTable(t, k.run("get", "careq"),
			"NAME UPDATE-RUN STAGE APPROVED AGE",
			"example-run-after-canary", "example-run", "canary", "True")
	})

	t.Run("refusals", func(t *testing.T) {
		k := k.with(t)
		run := func(name, state string) string {
			return fmt.Sprintf("apiVersion: %s\nkind: %s\nmetadata: {name: %s}\n"+
				"spec: {placementName: example-placement, stagedRolloutStrategyName: example-strategy, state: %s}\n",
				fleet.PlacementAPIVersion, fleet.KindClusterStagedUpdateRun, name, state)
		}
		k.input(run("initializing-run", "Initialize")).run("create", "-f", "-")
		k.input(strings.Replace(run("indexed-run", "Initialize"), "state:", `resourceSnapshotIndex: "0", state:`, 1)).run("create", "-f", "-")
		for _, tc := range []struct {
			name  string
			args  []string
			stdin string
			want  string // the detail of the API server's field error
		}{
			{"placementName is immutable",
				[]string{"patch", "csur", "example-run", "--type=merge", "-p", `{"spec":{"placementName":"other"}}`}, "",
				"spec.placementName: Invalid value: \"other\": " + fleet.MsgPlacementNameImmutable},
			{"resourceSnapshotIndex is immutable",
				[]string{"patch", "csur", "indexed-run", "--type=merge", "-p", `{"spec":{"resourceSnapshotIndex":"1"}}`}, "",
				"spec.resourceSnapshotIndex: Invalid value: \"1\": " + fleet.MsgResourceSnapshotIndexImmutable},
			{"stagedRolloutStrategyName is immutable",
				[]string{"patch", "csur", "example-run", "--type=merge", "-p", `{"spec":{"stagedRolloutStrategyName":"other"}}`}, "",
				"spec.stagedRolloutStrategyName: Invalid value: \"other\": " + fleet.MsgStrategyNameImmutable},
			{"Run to Initialize",
				[]string{"patch", "csur", "example-run", "--type=merge", "-p", `{"spec":{"state":"Initialize"}}`}, "",
				"spec: Invalid value: invalid state transition: cannot transition from Run to Initialize"},
			{"Run to no state, which is Initialize",
				[]string{"patch", "csur", "example-run", "--type=json", "-p", `[{"op":"remove","path":"/spec/state"}]`}, "",
				"spec: Invalid value: invalid state transition: cannot transition from Run to Initialize"},
			{"Initialize to Stop",
				[]string{"patch", "csur", "initializing-run", "--type=merge", "-p", `{"spec":{"state":"Stop"}}`}, "",
				"spec: Invalid value: invalid state transition: cannot transition from Initialize to Stop"},
			{"unknown state",
				[]string{"patch", "csur", "initializing-run", "--type=merge", "-p", `{"spec":{"state":"Go"}}`}, "",
				`spec.state: Unsupported value: "Go": supported values: "Initialize", "Run", "Stop"`},
			{"run name longer than 63",
				[]string{"create", "-f", "-", "--dry-run=server"}, run(strings.Repeat("r", 64), "Run"),
				"<nil>: Invalid value: " + fleet.MsgRunNameTooLong},
			{"approval request spec is immutable",
				[]string{"patch", "careq", "example-run-after-canary", "--type=merge", "-p", `{"spec":{"targetStage":"prod"}}`}, "",
				"spec: Invalid value: " + fleet.MsgApprovalSpecImmutable},
			{"External rollout is sticky",
				[]string{"patch", "crp", "example-placement", "--type=merge", "-p", `{"spec":{"strategy":{"type":"RollingUpdate"}}}`}, "",
				`spec.strategy.type: Invalid value: "RollingUpdate": ` + fleet.MsgExternalIsSticky},
			{"placement type is immutable",
				[]string{"patch", "crp", "example-placement", "--type=merge", "-p", `{"spec":{"policy":{"placementType":"PickN","numberOfClusters":1}}}`}, "",
				"spec.policy: Invalid value: " + fleet.MsgPlacementTypeImmutable},
			{"a ClusterResourceOverride refers to a cluster-scoped placement",
				[]string{"create", "-f", "-", "--dry-run=server"},
				fmt.Sprintf("apiVersion: %s\nkind: %s\nmetadata: {name: cro}\nspec:\n  placement: {name: p, scope: Namespaced}\n"+
					"  clusterResourceSelectors: [{group: '', version: v1, kind: Namespace, name: app}]\n"+
					"  policy: {overrideRules: [{overrideType: Delete}]}\n", fleet.PlacementAPIVersion, fleet.KindClusterResourceOverride),
				"<nil>: Invalid value: " + fleet.MsgCROPlacementNamespaced},
		} {
			t.Run(tc.name, func(t *testing.T) {
				got := k.with(t).input(tc.stdin).fail(tc.args...)
				t.Log(got)
				if !strings.Contains(got, tc.want) {
					t.Errorf("kubectl %s refused with\n%s\nwant it to say %q", strings.Join(tc.args, " "), got, tc.want)
				}
			})
		}
		// What the rules allow: Initialize→Run, Run⇄Stop, and a
		// resourceSnapshotIndex where there was none (KubeFleet's rule
		// compares only what both versions have).
		k.run("patch", "csur", "initializing-run", "--type=merge", "-p", `{"spec":{"resourceSnapshotIndex":"0"}}`)
		for _, state := range []string{"Run", "Stop", "Run"} {
			k.run("patch", "csur", "initializing-run", "--type=merge", "-p", `{"spec":{"state":"`+state+`"}}`)
		}
	})

	t.Run("v1 and v1alpha1 are served beside v1beta1, which is stored", func(t *testing.T) {
		k := k.with(t)
		k.input(`apiVersion: placement.kubernetes-fleet.io/v1
kind: ClusterStagedUpdateStrategy
metadata: {name: v1-strategy}
spec:
  stages: [{name: canary, labelSelector: {}, afterStageTasks: [{type: Approval}]}]
---
apiVersion: placement.kubernetes-fleet.io/v1alpha1
kind: ClusterStagedUpdateRun
metadata: {name: v1alpha1-run}
spec: {placementName: example-placement, resourceSnapshotIndex: "0", stagedRolloutStrategyName: v1-strategy}
`).run("apply", "--server-side", "-f", "-")
		at := func(resource, version string) string {
			return resource + "." + version + ".placement.kubernetes-fleet.io"
		}
		for _, tc := range []struct{ resource, name, version, path, want string }{
			{"clusterstagedupdatestrategies", "v1-strategy", "v1beta1", "{.spec.stages[0].maxConcurrency}", "1"},
			{"clusterstagedupdatestrategies", "v1-strategy", "v1alpha1", "{.spec.stages[0].afterStageTasks[0].type}", "Approval"},
			{"clusterstagedupdateruns", "v1alpha1-run", "v1beta1", "{.spec.state}", "Initialize"},
			{"clusterstagedupdateruns", "v1alpha1-run", "v1", "{.spec.resourceSnapshotIndex}", "0"},
		} {
			if got := k.run("get", at(tc.resource, tc.version), tc.name, "-o", "jsonpath="+tc.path); got != tc.want {
				t.Errorf("kubectl get %s %s: %s is %q; want %q", at(tc.resource, tc.version), tc.name, tc.path, got, tc.want)
			}
		}
		// Each version validates as KubeFleet's does: v1alpha1's whole
		// spec is immutable, v1beta1's state may go Initialize→Run.
		if got, want := k.fail("patch", at("clusterstagedupdateruns", "v1alpha1"), "v1alpha1-run", "--type=merge", "-p", `{"spec":{"placementName":"other"}}`),
			"spec: Invalid value: The spec field is immutable"; !strings.Contains(got, want) {
			t.Errorf("a v1alpha1 run's spec changed; refused with\n%s\nwant %q", got, want)
		}
		k.run("patch", at("clusterstagedupdateruns", "v1beta1"), "v1alpha1-run", "--type=merge", "-p", `{"spec":{"state":"Run"}}`)
	})

	t.Run("gitfleet's objects are stored unpruned", func(t *testing.T) {
		storeUnpruned(t, hub)
	})
}

// gitfleetObjects are files of fleet objects that gitfleet accepts or
// writes: the examples, the seeds' manifests, and what the status tree,
// simulate, get and the placement reconciler produce.
var gitfleetObjects = []string{
	"examples/quickstart/*.yaml",
	"examples/overrides/*.yaml",
	"render/testdata/overrides/*.yaml",
	"gitsource/simulate/testdata/e2e-overrides/*.yaml",
	"render/testdata/demo/fleet/*.yaml",
	"render/testdata/demo/clusters/*.yaml",
	"render/testdata/demo/approvals/*.yaml",
	"render/testdata/demo-kustomize/members.yaml",
	"render/testdata/demo-kustomize/fleet/*.yaml",
	"render/testdata/demo-kustomize/approvals/*.yaml",
	"status/testdata/encode/*.yaml",
	"gitsource/simulate/testdata/*.yaml",
	"cmd/gitfleet/testdata/get-run-yaml.yaml",
	"status/printers/testdata/yaml-stream.yaml",
	"reconciler/placement/testdata/*.yaml",
}

// storeUnpruned creates every fleet object of gitfleetObjects and
// goBuiltObjects under a name of its own, writes its status through the
// status subresource and reads both back: the API server must accept them
// and keep every field, since a structural schema silently drops what it
// does not declare. Each object of a cluster-scoped kind is stored as its
// namespaced twin too, which shares its Go type.
func storeUnpruned(t *testing.T, hub *kubetest.Cluster) {
	twin := map[string]string{}
	for _, kindOf := range families {
		twin[kindOf("")] = kindOf("ns")
	}
	c := hub.Client()
	ctx := context.Background()
	n, kinds := 0, map[string]bool{}
	store := func(where string, doc *unstructured.Unstructured) {
		n++
		kinds[doc.GetKind()] = true
		where = fmt.Sprintf("%s (%s %s)", where, doc.GetKind(), doc.GetName())
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": doc.GetAPIVersion(), "kind": doc.GetKind(), "spec": doc.Object["spec"]}}
		obj.SetName(fmt.Sprintf("o%d-%s", n, doc.GetName()))
		obj.SetLabels(doc.GetLabels())
		obj.SetAnnotations(doc.GetAnnotations())
		if ns := doc.GetNamespace(); ns != "" {
			obj.SetNamespace(ns)
			ensureNamespace(t, c, ns)
		}
		if err := c.Create(ctx, obj); err != nil {
			t.Errorf("%s: create: %v", where, err)
			return
		}
		if status, ok := doc.Object["status"]; ok {
			obj.Object["status"] = status
			if err := c.Status().Update(ctx, obj); err != nil {
				t.Errorf("%s: update status: %v", where, err)
				return
			}
		}
		stored := &unstructured.Unstructured{}
		stored.SetGroupVersionKind(obj.GroupVersionKind())
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), stored); err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		for _, field := range []string{"spec", "status"} {
			if path, ok := keeps(t, doc.Object[field], stored.Object[field], field); !ok {
				t.Errorf("%s: the API server lost or changed %s; it stored %s\n%s\nwant (defaults aside)\n%s",
					where, path, field, jsonOf(t, stored.Object[field]), jsonOf(t, doc.Object[field]))
				continue
			}
			if complete, ok := crdDefaults[doc.GetKind()]; ok {
				// The API server defaults as gitfleet does: what it stored
				// must be what gitfleet reads the file as, with gitfleet's
				// defaults.
				want, got := asGitfleetReads(t, doc, true)[field], asGitfleetReads(t, stored, !complete)[field]
				if want, got := jsonOf(t, want), jsonOf(t, got); want != got {
					t.Errorf("%s: the API server stored %s\n%s\nwant, with gitfleet's defaults,\n%s", where, field, got, want)
				}
			}
		}
	}
	storeWithTwin := func(where string, doc *unstructured.Unstructured) {
		store(where, doc)
		if k, ok := twin[doc.GetKind()]; ok {
			doc = doc.DeepCopy()
			doc.SetKind(k)
			doc.SetNamespace("twins")
			store(where+" as namespaced twin", doc)
		}
	}

	for _, pattern := range gitfleetObjects {
		files, err := filepath.Glob(filepath.Join(repoRoot, pattern))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s matches no file (%v)", pattern, err)
		}
		for _, file := range files {
			for i, doc := range fleetObjects(t, file) {
				storeWithTwin(fmt.Sprintf("%s#%d", strings.TrimPrefix(file, repoRoot+"/"), i), doc)
			}
		}
	}
	for i, obj := range goBuiltObjects() {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			t.Fatal(err)
		}
		storeWithTwin(fmt.Sprintf("goBuiltObjects()[%d]", i), &unstructured.Unstructured{Object: m})
	}
	t.Logf("%d objects of %d kinds stored unpruned", n, len(kinds))
	if len(kinds) != 19 {
		t.Errorf("%d kinds among the objects stored; want all 19: %v", len(kinds), kinds)
	}
}

// crdDefaults are the kinds whose CRDs default fields as KubeFleet's do
// (and as api/v1beta1's SetDefaults* do when gitfleet reads a manifest).
// True: every default gitfleet applies is in the CRD, so the API server
// must store exactly what gitfleet reads. False: the CRD's defaults are
// some of gitfleet's (a placement's are; SetDefaultsPlacement also applies
// KubeFleet's defaulter, which its webhook runs), so only what the API
// server stored defaulted by gitfleet is compared.
var crdDefaults = map[string]bool{
	fleet.KindClusterStagedUpdateStrategy: true, fleet.KindStagedUpdateStrategy: true,
	fleet.KindClusterStagedUpdateRun: true, fleet.KindStagedUpdateRun: true,
	fleet.KindClusterResourceOverride: true, fleet.KindResourceOverride: true,
	fleet.KindClusterResourceOverrideSnapshot: true, fleet.KindResourceOverrideSnapshot: true,
	fleet.KindClusterResourcePlacement: false, fleet.KindResourcePlacement: false, fleet.KindMemberCluster: true,
}

// asGitfleetReads is u decoded into its api/v1beta1 type, unknown fields
// refused, defaulted with gitfleet's defaults when defaulted is true, and
// encoded back: what gitfleet makes of u.
func asGitfleetReads(t *testing.T, u *unstructured.Unstructured, defaulted bool) map[string]any {
	t.Helper()
	info, ok := fleet.LookupKind(u.GetKind())
	if !ok {
		t.Fatalf("%s is no fleet kind", u.GetKind())
	}
	obj := info.New()
	data, err := json.Marshal(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(obj); err != nil {
		t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
	}
	if defaulted {
		fleet.Scheme.Default(obj)
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// families are the kind pairs that share a Go type in api/v1beta1.
var families = []func(namespace string) string{
	fleet.PlacementKind, fleet.PolicySnapshotKind, fleet.ResourceSnapshotKind, fleet.BindingKind,
	fleet.UpdateStrategyKind, fleet.UpdateRunKind, fleet.ApprovalRequestKind, envelopeKind,
}

// envelopeKind is ClusterResourceEnvelope or ResourceEnvelope (the binary
// never needs the pair, so api/v1beta1 has no function for it).
func envelopeKind(namespace string) string {
	if namespace == "" {
		return fleet.KindClusterResourceEnvelope
	}
	return fleet.KindResourceEnvelope
}

// goBuiltObjects fill the fields no file above has: a policy snapshot with
// every field of a policy and a decision, a rolling-update placement with
// int-or-string budgets and a full apply strategy, and overrides and their
// snapshots with JSON patch values of every shape and a Delete rule.
func goBuiltObjects() []runtime.Object {
	at := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	labels := &metav1.LabelSelector{MatchLabels: map[string]string{"environment": "prod"},
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "order", Operator: metav1.LabelSelectorOpExists}}}
	policy := &fleet.PlacementPolicy{
		PlacementType:    fleet.PickNPlacementType,
		NumberOfClusters: ptr.To[int32](2),
		Affinity: &fleet.Affinity{ClusterAffinity: &fleet.ClusterAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &fleet.ClusterSelector{
				ClusterSelectorTerms: []fleet.ClusterSelectorTerm{{LabelSelector: labels}}},
			PreferredDuringSchedulingIgnoredDuringExecution: []fleet.PreferredClusterSelector{
				{Weight: 20, Preference: fleet.ClusterSelectorTerm{LabelSelector: labels}}},
		}},
		TopologySpreadConstraints: []fleet.TopologySpreadConstraint{
			{MaxSkew: ptr.To[int32](1), TopologyKey: "region", WhenUnsatisfiable: "DoNotSchedule"}},
		Tolerations: []fleet.Toleration{{Key: "gpu", Operator: "Equal", Value: "true", Effect: "NoSchedule"}},
	}
	rules := []fleet.OverrideRule{
		{ClusterSelector: &fleet.ClusterSelector{ClusterSelectorTerms: []fleet.ClusterSelectorTerm{{LabelSelector: labels}}},
			OverrideType: fleet.JSONPatchOverrideType,
			JSONPatchOverrides: []fleet.JSONPatchOverride{
				{Operator: fleet.JSONPatchOverrideOpAdd, Path: "/metadata/labels", Value: apiextensionsv1.JSON{Raw: []byte(`{"env":"${MEMBER-CLUSTER-NAME}"}`)}},
				{Operator: fleet.JSONPatchOverrideOpReplace, Path: "/spec/replicas", Value: apiextensionsv1.JSON{Raw: []byte(`3`)}},
				{Operator: fleet.JSONPatchOverrideOpAdd, Path: "/spec/args", Value: apiextensionsv1.JSON{Raw: []byte(`["-v",2,true]`)}},
			}},
		{ClusterSelector: &fleet.ClusterSelector{ClusterSelectorTerms: []fleet.ClusterSelectorTerm{}}, OverrideType: fleet.DeleteOverrideType},
	}
	overrideLabels := func(override string) map[string]string {
		return map[string]string{fleet.OverrideTrackingLabel: override, fleet.OverrideIndexLabel: "0", fleet.IsLatestSnapshotLabel: "true"}
	}
	return []runtime.Object{
		&fleet.ClusterResourceOverride{
			TypeMeta:   metav1.TypeMeta{APIVersion: fleet.PlacementAPIVersion, Kind: fleet.KindClusterResourceOverride},
			ObjectMeta: metav1.ObjectMeta{Name: "example-override"},
			Spec: fleet.ClusterResourceOverrideSpec{
				Placement:                &fleet.PlacementRef{Name: "example-placement", Scope: fleet.ClusterScoped},
				ClusterResourceSelectors: []fleet.ResourceSelectorTerm{{Group: "", Version: "v1", Kind: "Namespace", Name: "app"}},
				Policy:                   &fleet.OverridePolicy{OverrideRules: rules}},
		},
		&fleet.ResourceOverride{
			TypeMeta:   metav1.TypeMeta{APIVersion: fleet.PlacementAPIVersion, Kind: fleet.KindResourceOverride},
			ObjectMeta: metav1.ObjectMeta{Name: "example-override", Namespace: "team-a"},
			Spec: fleet.ResourceOverrideSpec{
				Placement:         &fleet.PlacementRef{Name: "example-placement", Scope: fleet.NamespaceScoped},
				ResourceSelectors: []fleet.ResourceSelector{{Group: "apps", Version: "v1", Kind: "Deployment", Name: "web"}},
				Policy:            &fleet.OverridePolicy{OverrideRules: rules}},
		},
		// A snapshot's spec is a copy of its override as gitfleet read it,
		// defaults and all (reconciler/overridesnapshot).
		&fleet.ClusterResourceOverrideSnapshot{
			TypeMeta:   metav1.TypeMeta{APIVersion: fleet.PlacementAPIVersion, Kind: fleet.KindClusterResourceOverrideSnapshot},
			ObjectMeta: metav1.ObjectMeta{Name: "example-override-0", Labels: overrideLabels("example-override")},
			Spec: fleet.ClusterResourceOverrideSnapshotSpec{OverrideHash: []byte("0123abcd"), OverrideSpec: fleet.ClusterResourceOverrideSpec{
				Placement: &fleet.PlacementRef{Name: "example-placement", Scope: fleet.ClusterScoped},
				ClusterResourceSelectors: []fleet.ResourceSelectorTerm{{Group: "", Version: "v1", Kind: "Namespace", Name: "app",
					SelectionScope: fleet.NamespaceWithResources}},
				Policy: &fleet.OverridePolicy{OverrideRules: rules}}},
		},
		&fleet.ResourceOverrideSnapshot{
			TypeMeta:   metav1.TypeMeta{APIVersion: fleet.PlacementAPIVersion, Kind: fleet.KindResourceOverrideSnapshot},
			ObjectMeta: metav1.ObjectMeta{Name: "example-override-0", Namespace: "team-a", Labels: overrideLabels("example-override")},
			Spec: fleet.ResourceOverrideSnapshotSpec{OverrideHash: []byte("0123abcd"), OverrideSpec: fleet.ResourceOverrideSpec{
				Placement:         &fleet.PlacementRef{Name: "example-placement", Scope: fleet.NamespaceScoped},
				ResourceSelectors: []fleet.ResourceSelector{{Group: "apps", Version: "v1", Kind: "Deployment", Name: "web"}},
				Policy:            &fleet.OverridePolicy{OverrideRules: rules}}},
		},
		&fleet.PolicySnapshot{
			TypeMeta:   metav1.TypeMeta{APIVersion: fleet.PlacementAPIVersion, Kind: fleet.KindClusterSchedulingPolicySnapshot},
			ObjectMeta: metav1.ObjectMeta{Name: "example-placement-0"},
			Spec:       fleet.SchedulingPolicySnapshotSpec{Policy: policy, PolicyHash: []byte("0123abcd")},
			Status: fleet.SchedulingPolicySnapshotStatus{
				ObservedCRPGeneration: 1,
				Conditions: []metav1.Condition{{Type: fleet.PolicySnapshotScheduled, Status: metav1.ConditionTrue,
					Reason: "Scheduled", Message: "picked 2 clusters", ObservedGeneration: 1, LastTransitionTime: at}},
				ClusterDecisions: []fleet.ClusterDecision{{ClusterName: "member1", Selected: true, Reason: "picked",
					ClusterScore: &fleet.ClusterScore{AffinityScore: ptr.To[int32](20), TopologySpreadScore: ptr.To[int32](0)}}},
			},
		},
		&fleet.Placement{
			TypeMeta:   metav1.TypeMeta{APIVersion: fleet.PlacementAPIVersion, Kind: fleet.KindClusterResourcePlacement},
			ObjectMeta: metav1.ObjectMeta{Name: "rolling"},
			Spec: fleet.PlacementSpec{
				ResourceSelectors: []fleet.ResourceSelectorTerm{{Group: "", Version: "v1", Kind: "Namespace",
					LabelSelector: labels, SelectionScope: fleet.NamespaceOnly}},
				Policy: policy,
				Strategy: fleet.RolloutStrategy{
					Type: fleet.RollingUpdateRolloutStrategyType,
					RollingUpdate: &fleet.RollingUpdateConfig{MaxUnavailable: ptr.To(intstr.FromString("25%")),
						MaxSurge: ptr.To(intstr.FromInt32(1)), UnavailablePeriodSeconds: ptr.To(60)},
					ApplyStrategy: &fleet.ApplyStrategy{ComparisonOption: fleet.ComparisonOptionTypeFullComparison,
						WhenToApply: fleet.WhenToApplyTypeIfNotDrifted, Type: fleet.ApplyStrategyTypeServerSideApply,
						AllowCoOwnership: true, ServerSideApplyConfig: &fleet.ServerSideApplyConfig{ForceConflicts: true},
						WhenToTakeOver: fleet.WhenToTakeOverTypeIfNoDiff},
				},
				RevisionHistoryLimit: ptr.To[int32](10),
			},
		},
	}
}

// fleetObjects are the documents of file in the fleet API groups; a
// status tree file without spec is not an object gitfleet accepts.
func fleetObjects(t *testing.T, file string) []*unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, doc := range bytes.Split(b, []byte("\n---")) {
		var m map[string]any
		if err := yaml.Unmarshal(doc, &m); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		u := &unstructured.Unstructured{Object: m}
		if m == nil {
			continue
		}
		// Overrides may be written in KubeFleet's v1alpha1 spelling;
		// gitfleet stores them at v1beta1, as the hub serves them.
		if k, ok := fleet.LookupKind(u.GetKind()); ok && slices.Contains(k.ReadVersions, strings.TrimPrefix(u.GetAPIVersion(), k.Group+"/")) {
			u.SetAPIVersion(k.APIVersion())
		}
		if u.GetAPIVersion() != fleet.PlacementAPIVersion && u.GetAPIVersion() != fleet.ClusterAPIVersion {
			continue
		}
		if _, ok := m["spec"]; !ok && u.GetKind() != fleet.KindMemberCluster {
			continue
		}
		out = append(out, u)
	}
	return out
}

// keeps reports whether got holds everything of want, at the same place
// and with the same value: what the CRDs' defaults add is allowed, what
// pruning drops or a schema changes is not. It names the first path where
// got differs.
func keeps(t *testing.T, want, got any, path string) (string, bool) {
	t.Helper()
	var w, g any
	if err := json.Unmarshal([]byte(jsonOf(t, want)), &w); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(jsonOf(t, got)), &g); err != nil {
		t.Fatal(err)
	}
	return subset(w, g, path)
}

func subset(want, got any, path string) (string, bool) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return path, false
		}
		for k, v := range w {
			if p, ok := subset(v, g[k], path+"."+k); !ok {
				return p, false
			}
		}
		return "", true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return path, false
		}
		for i := range w {
			if p, ok := subset(w[i], g[i], fmt.Sprintf("%s[%d]", path, i)); !ok {
				return p, false
			}
		}
		return "", true
	default:
		return path, reflect.DeepEqual(want, got)
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func ensureNamespace(t *testing.T, c client.Client, name string) {
	t.Helper()
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName(name)
	if err := c.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// waitServed waits until every CRD is Established and its resource is in
// the API server's discovery at each version it serves, which is what
// kubectl looks kinds up in (gitfleet.io serves v1alpha1 only, KubeFleet's
// groups v1beta1 and more). Each wait names its CRD, so a hang says which.
func waitServed(t *testing.T, hub *kubetest.Cluster, crds map[string]crd) {
	t.Helper()
	dc := discovery.NewDiscoveryClientForConfigOrDie(&rest.Config{Host: hub.Server, BearerToken: hub.AdminToken,
		TLSClientConfig: rest.TLSClientConfig{Insecure: true}})
	c := hub.Client()
	for _, cr := range crds {
		name := cr.Spec.Names.Plural + "." + cr.Spec.Group
		await.Until(t, "CRD "+name+" to be established and discovered", func() bool {
			obj := &unstructured.Unstructured{}
			obj.SetAPIVersion("apiextensions.k8s.io/v1")
			obj.SetKind("CustomResourceDefinition")
			if err := c.Get(context.Background(), client.ObjectKey{Name: name}, obj); err != nil {
				return false
			}
			conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
			if !slices.ContainsFunc(conds, func(c any) bool {
				m, _ := c.(map[string]any)
				return m["type"] == "Established" && m["status"] == string(metav1.ConditionTrue)
			}) {
				return false
			}
			for _, v := range cr.Spec.Versions {
				if !v.Served {
					continue
				}
				list, err := dc.ServerResourcesForGroupVersion(cr.Spec.Group + "/" + v.Name)
				if err != nil || !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool {
					return r.Name == cr.Spec.Names.Plural
				}) {
					return false
				}
			}
			return true
		})
	}
}

// assertTable checks the header of kubectl get's table and that it has a
// row whose first cells are row (AGE differs from run to run). Cells are
// cut at the header's column starts, since an empty cell prints nothing.
func assertTable(t *testing.T, out, header string, row ...string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if got := strings.Join(strings.Fields(lines[0]), " "); got != header {
		t.Errorf("header\n%s\nwant\n%s", got, header)
		return
	}
	var starts []int
	for i := range lines[0] {
		if lines[0][i] != ' ' && (i == 0 || lines[0][i-1] == ' ') {
			starts = append(starts, i)
		}
	}
	for _, l := range lines[1:] {
		var cells []string
		for i, start := range starts[:len(row)] {
			end := len(l)
			if i+1 < len(starts) {
				end = min(starts[i+1], len(l))
			}
			cells = append(cells, strings.TrimSpace(l[min(start, end):end]))
		}
		if slices.Equal(cells, row) {
			return
		}
	}
	t.Errorf("no row starting with %q in\n%s", row, out)
}

// kubectl runs the testbin's kubectl against the hub, with a home of its
// own so no discovery cache outlives the test.
type kubectl struct {
	t          *testing.T
	path, home string
	kubeconfig string
	stdin      string
}

func newKubectl(t *testing.T) *kubectl {
	bin := kubetest.Bin(t)
	path := filepath.Join(bin, "kubectl")
	if _, err := os.Stat(path); err != nil {
		gittest.Missing(t, fmt.Sprintf("no kubectl in %s: run hack/testbin.sh to build the test clusters' binaries", bin))
	}
	return &kubectl{t: t, path: path, home: t.TempDir()}
}

func (k *kubectl) with(t *testing.T) *kubectl {
	k2 := *k
	k2.t = t
	return &k2
}

// input is k with stdin, for kubectl's -f -.
func (k *kubectl) input(stdin string) *kubectl {
	k2 := *k
	k2.stdin = stdin
	return &k2
}

func (k *kubectl) exec(args []string) (string, error) {
	cmd := exec.Command(k.path, append([]string{"--kubeconfig", k.kubeconfig}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+k.home)
	cmd.Stdin = strings.NewReader(k.stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		k.t.Fatal(err)
	}
	if err != nil {
		return out.String() + errOut.String(), err
	}
	return out.String(), nil
}

// run runs kubectl and returns its output; it fails the test when kubectl
// fails.
func (k *kubectl) run(args ...string) string {
	k.t.Helper()
	out, err := k.exec(args)
	if err != nil {
		k.t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// fail runs kubectl, which must fail, and returns what it said.
func (k *kubectl) fail(args ...string) string {
	k.t.Helper()
	out, err := k.exec(args)
	if err == nil {
		k.t.Fatalf("kubectl %s succeeded; want it refused:\n%s", strings.Join(args, " "), out)
	}
	return out
}
