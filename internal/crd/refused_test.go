package crd_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/admission"
	"github.com/gitfleet/gitfleet/internal/crdschema"
	"github.com/gitfleet/gitfleet/internal/testing/kubetest"
	"github.com/gitfleet/gitfleet/render"
)

// pendingExamples are upstream examples both hubs refuse, with the
// reason. A file listed here that both hubs accept fails the test: take it
// off.
var pendingExamples = map[string]string{
	// A deliberate difference (README): gitfleet reports status on the
	// placement only, and refuses the other scope in the CRD.
	"test-crp9.yaml": "statusReportingScope NamespaceAccessible, which gitfleet refuses",
	// Upstream refuses it too, by its CRD rule "clusterNames cannot be set
	// and numberOfClusters must be set when placementType is PickN", which
	// config/crd has (refused/clusterresourceplacement-pickn-without-numberofclusters.yaml).
	"test-crp1.yaml": "a PickN placement without numberOfClusters, which KubeFleet refuses",
}

// webhookDefaulted are refused objects a bare kube-apiserver refuses
// (upstream's API tests run without webhooks) but a KubeFleet hub accepts:
// its mutating webhook sets the defaults gitfleet's Go defaulting sets
// (fleet.SetDefaultsPlacement: a nil policy is PickAll) before the CRD's
// rules run. Both hubs as gitfleet drives them accept these: the test
// requires the API server to refuse the object as written and to accept
// it as gitfleet applies it, and the embedded hub to accept it.
var webhookDefaulted = map[string]string{
	"clusterresourceplacement-policy-removed.yaml": "KubeFleet's mutating webhook sets a removed policy to PickAll",
	"resourceplacement-policy-removed.yaml":        "gitfleet sets a removed policy to PickAll, as KubeFleet's webhook does for a ClusterResourcePlacement",
}

// corpusCase is one file of testdata/refused or testdata/accepted (format
// in the file's header comments, see /work/notes/HELPERS.md): the object
// refused or accepted, and the object it replaces for an update.
type corpusCase struct {
	file      string
	want      string // refused: part of the error both give
	old, obj  *unstructured.Unstructured
	raw       []byte // the document of obj
	oldRaw    []byte
	isPending string
}

func readCorpus(t *testing.T, pattern string, multi bool) []corpusCase {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	var out []corpusCase
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		c := corpusCase{file: filepath.Base(f)}
		hasOld := false
		for _, line := range strings.Split(string(b), "\n") {
			if !strings.HasPrefix(line, "#") {
				break
			}
			key, value, _ := strings.Cut(strings.TrimSpace(strings.TrimPrefix(line, "#")), ":")
			switch key {
			case "want":
				c.want = strings.TrimSpace(value)
			case "old":
				hasOld = true
			}
		}
		var docs [][]byte
		for _, doc := range bytes.Split(b, []byte("\n---")) {
			var m map[string]any
			if err := yaml.Unmarshal(doc, &m); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if m != nil {
				docs = append(docs, doc)
			}
		}
		if hasOld {
			if len(docs) != 2 {
				t.Fatalf("%s: an old: case holds two documents, the object and its update; it has %d", f, len(docs))
			}
			c.oldRaw, docs = docs[0], docs[1:]
			c.old = unstructuredOf(t, c.oldRaw)
		}
		if len(docs) != 1 && (!multi || hasOld) {
			t.Fatalf("%s: %d documents; want one object (two with # old:)", f, len(docs))
		}
		// An accepted file may hold several objects, as an example does
		// (a namespace and what lives in it): each fleet object is a case;
		// the others only say what the example needs, and namespaces are
		// created on the API server for the objects in them.
		for _, doc := range docs {
			u := unstructuredOf(t, doc)
			if g := u.GroupVersionKind().Group; len(docs) > 1 && g != fleet.PlacementGroup && g != fleet.ClusterGroup {
				continue
			}
			c := c
			c.raw, c.obj = doc, u
			out = append(out, c)
		}
	}
	return out
}

func unstructuredOf(t *testing.T, doc []byte) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(doc, &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// TestRefusedObjects: every object of testdata/refused is refused by a
// real kube-apiserver with config/crd installed and by the embedded hub's
// admission (render, as serve, validate and the Git side of a Kubernetes
// hub read it, then internal/admission for an update), with the same field
// errors, one of them holding the file's want; every object of
// testdata/accepted and of upstream's examples is accepted by both, and
// both show the same defaults.
func TestRefusedObjects(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver")
	}
	hub := kubetest.Start(t, "hub")[0]
	hub.InstallCRDs(crdDir)
	c := hub.Client()

	refused := readCorpus(t, "testdata/refused/*.yaml", false)
	if len(refused) == 0 {
		t.Fatal("no refused objects in testdata/refused")
	}
	for _, tc := range refused {
		t.Run("refused/"+tc.file, func(t *testing.T) {
			if tc.want == "" {
				t.Fatal("no # want: line")
			}
			kube := kubeErrors(t, c, tc)
			embedded := embeddedErrors(t, tc)
			if reason, ok := webhookDefaulted[tc.file]; ok {
				if len(kube) == 0 {
					t.Errorf("kube-apiserver accepted it as written; want %s (%s)", tc.want, reason)
				}
				if len(embedded) > 0 {
					t.Errorf("the embedded hub refused it (%s):\n  %s", reason, strings.Join(embedded, "\n  "))
				}
				applied := tc
				if applied.obj = embeddedObject(t, tc.obj, tc.raw); applied.obj == nil {
					t.Fatal("the embedded hub keeps no object")
				}
				if errs := kubeErrors(t, c, applied); len(errs) > 0 {
					t.Errorf("kube-apiserver refused it as gitfleet applies it (%s):\n  %s", reason, strings.Join(errs, "\n  "))
				}
				return
			}
			if len(kube) == 0 {
				t.Errorf("kube-apiserver accepted it; want %s", tc.want)
			}
			if !slices.Equal(kube, embedded) {
				t.Errorf("kube-apiserver and the embedded hub differ:\nkube-apiserver:\n  %s\nembedded:\n  %s",
					strings.Join(kube, "\n  "), strings.Join(embedded, "\n  "))
			}
			if !slices.ContainsFunc(kube, func(e string) bool { return strings.Contains(e, tc.want) }) {
				t.Errorf("no error has %q:\n  %s", tc.want, strings.Join(kube, "\n  "))
			}
		})
	}

	accepted := readCorpus(t, "testdata/accepted/*.yaml", true)
	if len(accepted) == 0 {
		t.Fatal("no accepted objects in testdata/accepted")
	}
	for _, tc := range accepted {
		t.Run("accepted/"+tc.file, func(t *testing.T) { bothAccept(t, c, tc) })
	}

	examples, err := filepath.Glob("testdata/upstream-examples/*.yaml")
	if err != nil || len(examples) == 0 {
		t.Fatalf("no upstream examples (%v)", err)
	}
	for _, f := range examples {
		t.Run("upstream-examples/"+filepath.Base(f), func(t *testing.T) {
			reason, pending := pendingExamples[filepath.Base(f)]
			failed := false
			for _, doc := range fleetDocuments(t, f) {
				raw, err := yaml.Marshal(doc.Object)
				if err != nil {
					t.Fatal(err)
				}
				tc := corpusCase{file: filepath.Base(f), obj: doc, raw: raw}
				if pending {
					failed = failed || len(kubeErrors(t, c, tc)) > 0 || len(embeddedErrors(t, tc)) > 0
					continue
				}
				bothAccept(t, c, tc)
			}
			if pending && !failed {
				t.Errorf("pending (%s), yet both hubs accept it: take it off pendingExamples", reason)
			}
		})
	}
}

// bothAccept requires both hubs to accept tc, and the defaults each sets
// to agree: the API server's stored spec equals the spec crdschema
// defaults, and the spec gitfleet keeps (Go defaults on top, what `gitfleet
// get -o yaml` shows on the embedded hub) is what the API server stores
// when the Git side of a Kubernetes hub applies it.
func bothAccept(t *testing.T, c client.Client, tc corpusCase) {
	t.Helper()
	if errs := kubeErrors(t, c, tc); len(errs) > 0 {
		t.Errorf("%s: kube-apiserver refused %s %s:\n  %s", tc.file, tc.obj.GetKind(), tc.obj.GetName(), strings.Join(errs, "\n  "))
	}
	if errs := embeddedErrors(t, tc); len(errs) > 0 {
		t.Errorf("%s: the embedded hub refused %s %s:\n  %s", tc.file, tc.obj.GetKind(), tc.obj.GetName(), strings.Join(errs, "\n  "))
	}
	if t.Failed() {
		return
	}
	v, ok := crdschema.Fleet().For(tc.obj.GroupVersionKind())
	if !ok {
		return
	}
	defaulted := tc.obj.DeepCopy()
	v.Prune(defaulted.Object)
	v.Default(defaulted.Object)
	if got, want := jsonOf(t, stored(t, c, tc.obj).Object["spec"]), jsonOf(t, defaulted.Object["spec"]); got != want {
		t.Errorf("%s: kube-apiserver stored the spec\n%s\ncrdschema defaults it to\n%s", tc.file, got, want)
	}
	kept := embeddedObject(t, tc.obj, tc.raw)
	if kept == nil {
		return
	}
	if got, want := jsonOf(t, stored(t, c, kept).Object["spec"]), jsonOf(t, kept.Object["spec"]); got != want {
		t.Errorf("%s: kube-apiserver stored gitfleet's object with the spec\n%s\nthe embedded hub keeps\n%s", tc.file, got, want)
	}
}

// stored creates obj for real, reads it back and deletes it.
func stored(t *testing.T, c client.Client, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	ctx := context.Background()
	obj = cleanCopy(obj)
	if ns := obj.GetNamespace(); ns != "" {
		ensureNamespace(t, c, ns)
	}
	if err := c.Create(ctx, obj); err != nil {
		t.Fatalf("create %s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
	defer func() {
		if err := c.Delete(ctx, obj); err != nil {
			t.Errorf("delete %s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
	}()
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(obj.GroupVersionKind())
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
		t.Fatal(err)
	}
	return got
}

// cleanCopy is obj as a client sends it: without server metadata.
func cleanCopy(obj *unstructured.Unstructured) *unstructured.Unstructured {
	obj = obj.DeepCopy()
	for _, f := range []string{"creationTimestamp", "resourceVersion", "uid", "generation", "managedFields"} {
		unstructured.RemoveNestedField(obj.Object, "metadata", f)
	}
	return obj
}

// kubeErrors sends tc to the API server as kubectl does (strict field
// validation; an update replaces the object created from tc.old) without
// keeping it, and returns the refusal's field errors as
// "<field>: <detail>".
func kubeErrors(t *testing.T, c client.Client, tc corpusCase) []string {
	t.Helper()
	ctx := context.Background()
	obj := cleanCopy(tc.obj)
	if ns := obj.GetNamespace(); ns != "" {
		ensureNamespace(t, c, ns)
	}
	var err error
	if tc.old != nil {
		old := cleanCopy(tc.old)
		if err := c.Create(ctx, old); err != nil {
			t.Fatalf("create the old object: %v", err)
		}
		defer func() {
			if err := c.Delete(ctx, old); err != nil {
				t.Errorf("delete the old object: %v", err)
			}
		}()
		obj.SetResourceVersion(old.GetResourceVersion())
		err = c.Update(ctx, obj, client.DryRunAll, client.FieldValidation("Strict"))
	} else {
		err = c.Create(ctx, obj, client.DryRunAll, client.FieldValidation("Strict"))
	}
	if err == nil {
		return nil
	}
	if meta.IsNoMatchError(err) {
		return []string{err.Error()}
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		t.Fatalf("kube-apiserver: %v", err)
	}
	s := status.Status()
	if _, unknown, ok := strings.Cut(s.Message, "strict decoding error: "); ok {
		out := strings.Split(unknown, ", ")
		slices.Sort(out)
		return out
	}
	if s.Details == nil || len(s.Details.Causes) == 0 {
		return []string{s.Message}
	}
	var out []string
	for _, cause := range s.Details.Causes {
		out = append(out, cause.Field+": "+cause.Message)
	}
	slices.Sort(out)
	return out
}

// embeddedErrors reads tc as the embedded hub reads a commit (render),
// and checks an update as its Git loop does (admission.Update with the
// object read from tc.old), and returns the field errors as the API
// server words them.
func embeddedErrors(t *testing.T, tc corpusCase) []string {
	t.Helper()
	obj, errs := renderOne(t, tc.obj, tc.raw)
	if len(errs) > 0 || tc.old == nil {
		return errs
	}
	old, errs := renderOne(t, tc.old, tc.oldRaw)
	if len(errs) > 0 {
		t.Fatalf("the embedded hub refuses the old object: %v", errs)
	}
	var out []string
	for _, e := range admission.Update(old, obj) {
		out = append(out, fieldErrorString(e))
	}
	slices.Sort(out)
	return out
}

func fieldErrorString(e *field.Error) string { return e.Field + ": " + e.ErrorBody() }

// renderOne renders a tree holding doc alone (in approvals/ for an
// approval request, where gitfleet reads them) and returns the typed
// object gitfleet keeps or its errors.
func renderOne(t *testing.T, u *unstructured.Unstructured, doc []byte) (runtime.Object, []string) {
	t.Helper()
	var (
		merrs []render.ManifestError
		kept  runtime.Object
	)
	if strings.HasSuffix(u.GetKind(), "ApprovalRequest") {
		fsys := fstest.MapFS{"approvals/object.yaml": {Data: doc}}
		approvals, errs := render.ReadApprovals(fsys, "approvals")
		merrs = errs
		if len(approvals) == 1 {
			kept = approvals[0]
		}
	} else {
		fsys := fstest.MapFS{"object.yaml": {Data: doc}}
		content, err := render.Render(fsys, render.Options{})
		var refused *render.RefusedError
		switch {
		case errors.As(err, &refused):
			merrs = append(refused.Errors, refused.Others...)
		case err != nil:
			t.Fatal(err)
		default:
			merrs = content.Errors
			kept = keptObject(content)
		}
	}
	if len(merrs) == 0 && kept == nil {
		t.Fatalf("render kept no fleet object of %s %s", u.GetKind(), u.GetName())
	}
	var out []string
	for _, e := range merrs {
		f := e.Field
		if f == "" {
			f = "<nil>"
		}
		if e.Message == "unknown field" {
			out = append(out, fmt.Sprintf("unknown field %q", f))
			continue
		}
		out = append(out, f+": "+e.Message)
	}
	slices.Sort(out)
	return kept, out
}

func keptObject(c *render.Content) runtime.Object {
	var all []runtime.Object
	for _, o := range c.Members {
		all = append(all, o)
	}
	for _, o := range c.Placements {
		all = append(all, o)
	}
	for _, o := range c.Strategies {
		all = append(all, o)
	}
	for _, o := range c.Runs {
		all = append(all, o)
	}
	for _, o := range c.ClusterResourceOverrides {
		all = append(all, o)
	}
	for _, o := range c.ResourceOverrides {
		all = append(all, o)
	}
	for _, o := range c.Evictions {
		all = append(all, o)
	}
	for _, o := range c.DisruptionBudgets {
		all = append(all, o)
	}
	for _, o := range c.RolloutWindows {
		all = append(all, o)
	}
	// An envelope is a workload resource to render (its contents are
	// delivered), kept as written.
	for _, r := range c.Resources {
		if fleet.IsEnvelope(r) {
			all = append(all, r)
		}
	}
	if len(all) != 1 {
		return nil
	}
	return all[0]
}

// embeddedObject is the object the embedded hub keeps for doc, as
// unstructured content at the stored version.
func embeddedObject(t *testing.T, u *unstructured.Unstructured, doc []byte) *unstructured.Unstructured {
	t.Helper()
	kept, errs := renderOne(t, u, doc)
	if len(errs) > 0 || kept == nil {
		return nil
	}
	if u, ok := kept.(*unstructured.Unstructured); ok {
		return u.DeepCopy()
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(kept)
	if err != nil {
		t.Fatal(err)
	}
	out := &unstructured.Unstructured{Object: m}
	info := fleet.MustKindFor(kept)
	out.SetGroupVersionKind(info.GroupVersionKind)
	delete(out.Object, "status")
	return out
}

// fleetDocuments are the fleet objects of an upstream example file, the
// override kinds at the version gitfleet stores (KubeFleet writes some at
// v1alpha1); other documents (a Deployment, a kueue queue) are left out.
func fleetDocuments(t *testing.T, file string) []*unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, doc := range bytes.Split(b, []byte("\n---")) {
		u := unstructuredOf(t, doc)
		if u.Object == nil {
			continue
		}
		if k, ok := fleet.LookupKind(u.GetKind()); ok && slices.Contains(k.ReadVersions, strings.TrimPrefix(u.GetAPIVersion(), k.Group+"/")) {
			u.SetAPIVersion(k.APIVersion())
		}
		if g := u.GroupVersionKind().Group; g == fleet.PlacementGroup || g == fleet.ClusterGroup {
			out = append(out, u)
		}
	}
	return out
}
