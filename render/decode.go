package render

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"

	yaml "go.yaml.in/yaml/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/crdschema"
)

// isFleetGroup: the fleet's groups and gitfleet's own (RolloutWindow) hold
// control objects, never workload resources.
func isFleetGroup(group string) bool {
	return group == fleet.PlacementGroup || group == fleet.ClusterGroup || group == fleet.GitfleetGroup
}

// identify checks apiVersion, kind and metadata.name (which every manifest
// needs) and returns the object's reference.
func identify(d document) (ObjectRef, schema.GroupVersionKind, *ManifestError) {
	u := unstructured.Unstructured{Object: d.obj}
	fail := func(fieldPath, msg string) *ManifestError {
		return &ManifestError{File: d.file, Line: lineOf(d.root(), fieldPath), Kind: u.GetKind(),
			Namespace: u.GetNamespace(), Name: u.GetName(), Field: fieldPath, Message: msg}
	}
	for _, f := range []string{"apiVersion", "kind"} {
		if v, ok := d.obj[f]; !ok || v == "" {
			return ObjectRef{}, schema.GroupVersionKind{}, fail(f, "required field is missing")
		} else if _, isString := v.(string); !isString {
			return ObjectRef{}, schema.GroupVersionKind{}, fail(f, "must be a string")
		}
	}
	meta, ok := d.obj["metadata"].(map[string]any)
	if !ok {
		return ObjectRef{}, schema.GroupVersionKind{}, fail("metadata", "required field is missing")
	}
	for _, f := range []string{"name", "namespace"} {
		if v, set := meta[f]; set {
			if _, isString := v.(string); !isString {
				return ObjectRef{}, schema.GroupVersionKind{}, fail("metadata."+f, "must be a string")
			}
		}
	}
	if u.GetName() == "" {
		return ObjectRef{}, schema.GroupVersionKind{}, fail("metadata.name", "required field is missing")
	}
	gv, err := schema.ParseGroupVersion(u.GetAPIVersion())
	if err != nil {
		return ObjectRef{}, schema.GroupVersionKind{}, fail("apiVersion", err.Error())
	}
	gvk := gv.WithKind(u.GetKind())
	return ObjectRef{Group: gvk.Group, Kind: gvk.Kind, Namespace: u.GetNamespace(), Name: u.GetName()}, gvk, nil
}

// decoded is one object ready for Content.
type decoded struct {
	ref ObjectRef
	src Source
	// withheld is an identified fleet object whose fields are in error:
	// it is counted for duplicates but left out of Content.
	withheld bool
	member   *fleet.MemberCluster
	place    *fleet.Placement
	strategy *fleet.UpdateStrategy
	run      *fleet.UpdateRun
	approval *fleet.ApprovalRequest
	cro      *fleet.ClusterResourceOverride
	ro       *fleet.ResourceOverride
	eviction *fleet.ClusterResourcePlacementEviction
	budget   *fleet.ClusterResourcePlacementDisruptionBudget
	window   *fleet.RolloutWindow
	// node is the document of an override, for the lines of the errors
	// found when overrides are checked against each other.
	node     *yaml.Node
	resource *unstructured.Unstructured
	// wrapped are the manifests of an envelope, which no other resource
	// may define again.
	wrapped []ObjectRef
}

// decodeDocument turns one document into a fleet object (strictly decoded,
// defaulted, validated) or a workload resource. inApprovals says whether the
// document was read from the approvals/ folder, the only place approval
// requests may live.
//
// refused says whether the errors refuse the whole commit: the object
// cannot be identified (apiVersion, kind, metadata.name), its kind or name
// is one no API server accepts, it sits where it does not belong, or it is
// a workload resource, whose last good version nothing keeps. The errors
// of an identified fleet object's fields do not: that one object is left
// out and the hub keeps its last accepted version (Content.Withheld).
func decodeDocument(d document, inApprovals bool, memo schemaMemo) (out *decoded, errs []ManifestError, refused bool) {
	ref, gvk, merr := identify(d)
	if merr != nil {
		return nil, []ManifestError{*merr}, true
	}
	out = &decoded{ref: ref, src: Source{File: d.file, Line: d.line}}
	mk := func(fieldPath, msg string) ManifestError {
		return ManifestError{File: d.file, Line: lineOf(d.root(), fieldPath), Kind: ref.Kind,
			Namespace: ref.Namespace, Name: ref.Name, Field: fieldPath, Message: msg}
	}
	refuse := func(fieldPath, msg string) (*decoded, []ManifestError, bool) {
		return nil, []ManifestError{mk(fieldPath, msg)}, true
	}
	if errs := checkNames(ref); len(errs) > 0 {
		return nil, fieldErrors(errs, mk), true
	}
	if !isFleetGroup(gvk.Group) {
		if inApprovals {
			return refuse("kind", fmt.Sprintf("only approval requests belong in approvals/, not %s", gvk.Kind))
		}
		if fieldPath, msg, ok := checkKind(gvk); !ok {
			return refuse(fieldPath, msg)
		}
		res, errs := workloadResource(d, ref, mk)
		if len(errs) > 0 {
			return nil, errs, true
		}
		out.resource = res
		return out, nil, false
	}
	if fleet.IsEnvelopeKind(gvk.Group, gvk.Kind) {
		if inApprovals {
			return refuse("kind", fmt.Sprintf("only approval requests belong in approvals/, not %s", gvk.Kind))
		}
		res, wrapped, errs := envelopeResource(d, ref, gvk, mk)
		if len(errs) > 0 {
			return nil, errs, true
		}
		out.resource, out.wrapped = res, wrapped
		return out, nil, false
	}
	if fieldPath, msg, ok := checkFleetKind(gvk); !ok {
		return refuse(fieldPath, msg)
	}
	info, known := fleet.LookupGroupKind(gvk.GroupKind())
	if !known || info.HubOwned {
		return refuse("kind", fmt.Sprintf("kind %s is not supported by gitfleet", gvk.Kind))
	}
	obj, err := fleet.Scheme.New(gvk)
	if err != nil {
		return refuse("apiVersion", err.Error())
	}
	_, isApproval := obj.(*fleet.ApprovalRequest)
	switch {
	case isApproval && !inApprovals:
		return refuse("kind", fmt.Sprintf("%s objects belong in the approvals/ folder, which gitfleet manages", gvk.Kind))
	case !isApproval && inApprovals:
		return refuse("kind", fmt.Sprintf("only approval requests belong in approvals/, not %s", gvk.Kind))
	}
	// From here on, an error leaves this object out alone: it is returned
	// as identified but withheld, which still counts for duplicates.
	withheld := func(errs []ManifestError) (*decoded, []ManifestError, bool) {
		return &decoded{ref: ref, src: out.src, withheld: true}, errs, false
	}
	// The API server's part first: config/crd's schema prunes (an unknown
	// field refuses the object, as kubectl's strict field validation
	// does), defaults and validates; only an object it accepts meets
	// gitfleet's own checks, as a webhook only sees what the schema let
	// through.
	content, data, errs := memo.admit(d.obj, gvk, info.GroupVersionKind, isApproval, mk)
	if len(errs) > 0 {
		return withheld(errs)
	}
	if data == nil {
		var err error
		if data, err = json.Marshal(content); err != nil {
			return withheld([]ManifestError{mk("", err.Error())})
		}
	}
	if e := strictDecode(data, obj, mk); len(e) > 0 {
		return withheld(e)
	}
	// Objects are kept at the version gitfleet writes, whatever the
	// manifest said (the fields are the same).
	obj.GetObjectKind().SetGroupVersionKind(info.GroupVersionKind)
	fleet.Scheme.Default(obj)
	if errs := out.keep(obj, d.root); len(errs) > 0 {
		return withheld(fieldErrors(errs, mk))
	}
	return out, nil, false
}

// schemaMemo is what the schemas accepted in an earlier render (known)
// and in this one (accepted).
type schemaMemo struct {
	known, accepted crdschema.Accepted
	// mu guards accepted: documents are decoded in parallel.
	mu *sync.Mutex
}

// admit applies the CRD of a fleet object's kind to its content as a
// Kubernetes hub's API server does on create (see crdschema) and returns
// the pruned, defaulted content (with its JSON, once the schema has
// accepted it) or the API server's field errors. Content the schema
// accepted in the render memo.known comes from is not validated again.
// A version the CRDs do not serve (gitfleet reads v1 for v1beta1) is
// checked against the stored version's schema. The status goes unchecked,
// as a create does not write it; an approval request keeps its status (in
// Git it is the person's approval), which gitfleet's own checks read.
func (memo schemaMemo) admit(obj map[string]any, gvk, stored schema.GroupVersionKind, isApproval bool, mk func(string, string) ManifestError) (map[string]any, []byte, []ManifestError) {
	v, ok := crdschema.Fleet().For(gvk)
	if !ok {
		if v, ok = crdschema.Fleet().For(stored); !ok {
			return obj, nil, nil
		}
	}
	// The document's content is read once, here: pruned and defaulted in
	// place (a shallow copy keeps the version and status as written).
	content := make(map[string]any, len(obj))
	for k, x := range v.WithoutStatus(obj) {
		content[k] = x
	}
	content["apiVersion"] = v.GVK.GroupVersion().String()
	if unknown := v.Prune(content); len(unknown) > 0 {
		out := make([]ManifestError, 0, len(unknown))
		for _, p := range unknown {
			out = append(out, mk(p, "unknown field"))
		}
		return nil, nil, out
	}
	v.Default(content)
	data, err := json.Marshal(content)
	if err != nil {
		return nil, nil, []ManifestError{mk("", err.Error())}
	}
	key := crdschema.Key(v.GVK, data)
	if !memo.known.Has(key) {
		if errs := v.ValidateCreate(content); len(errs) > 0 {
			return nil, nil, fieldErrors(errs, mk)
		}
	}
	if memo.accepted != nil {
		memo.mu.Lock()
		memo.accepted[key] = struct{}{}
		memo.mu.Unlock()
	}
	content["apiVersion"] = obj["apiVersion"]
	if status, ok := obj["status"]; ok && isApproval {
		content["status"] = status
		data = nil // the JSON above has no status
	} else if gvk != v.GVK {
		data = nil // nor the version as written
	}
	return content, data, nil
}

// keep validates a decoded, defaulted fleet object and keeps it, without
// what the hub rather than the author owns: a status (an approval
// request's is the person's approval, so it stays) and the server's
// metadata.
func (out *decoded) keep(obj runtime.Object, node func() *yaml.Node) field.ErrorList {
	switch o := obj.(type) {
	case *fleet.MemberCluster:
		o.Status = fleet.MemberClusterStatus{}
		clearServerMeta(&o.ObjectMeta)
		out.member = o
		return fleet.ValidateMemberCluster(o)
	case *fleet.Placement:
		o.Status = fleet.PlacementStatus{}
		clearServerMeta(&o.ObjectMeta)
		out.place = o
		return fleet.ValidatePlacement(o)
	case *fleet.UpdateStrategy:
		clearServerMeta(&o.ObjectMeta)
		out.strategy = o
		return fleet.ValidateUpdateStrategy(o)
	case *fleet.UpdateRun:
		o.Status = fleet.UpdateRunStatus{}
		clearServerMeta(&o.ObjectMeta)
		out.run = o
		return fleet.ValidateUpdateRun(o)
	case *fleet.ApprovalRequest:
		out.approval = o
		return fleet.ValidateApprovalRequest(o)
	case *fleet.ClusterResourceOverride:
		clearServerMeta(&o.ObjectMeta)
		out.cro, out.node = o, node()
		return fleet.ValidateClusterResourceOverride(o)
	case *fleet.ResourceOverride:
		clearServerMeta(&o.ObjectMeta)
		out.ro, out.node = o, node()
		return fleet.ValidateResourceOverride(o)
	case *fleet.ClusterResourcePlacementEviction:
		// The status is the engine's, kept in status/evictions/.
		o.Status = fleet.PlacementEvictionStatus{}
		clearServerMeta(&o.ObjectMeta)
		out.eviction = o
		return fleet.ValidateEviction(o)
	case *fleet.ClusterResourcePlacementDisruptionBudget:
		clearServerMeta(&o.ObjectMeta)
		out.budget = o
		return fleet.ValidateDisruptionBudget(o)
	case *fleet.RolloutWindow:
		clearServerMeta(&o.ObjectMeta)
		out.window = o
		return fleet.ValidateRolloutWindow(o)
	}
	return field.ErrorList{field.InternalError(nil, fmt.Errorf("render keeps no %T", obj))}
}

// fieldErrors converts validation errors; Message is the part after the
// field, as kubectl prints it ("Invalid value: 0: maxConcurrency must be at
// least 1").
func fieldErrors(errs field.ErrorList, mk func(string, string) ManifestError) []ManifestError {
	out := make([]ManifestError, 0, len(errs))
	for _, e := range errs {
		f := e.Field
		if f == "<nil>" { // the object as a whole (field.Path nil)
			f = ""
		}
		out = append(out, mk(f, e.ErrorBody()))
	}
	return out
}

var typeErrorFieldRE = regexp.MustCompile(`Go struct field [^ .]+\.(\S+) of type`)

// strictDecode decodes JSON into a typed fleet object, rejecting unknown and
// duplicate fields (with their full path) and mistyped values, and matching
// field names case-sensitively as the API server does.
func strictDecode(data []byte, into any, mk func(string, string) ManifestError) []ManifestError {
	strict, err := kjson.UnmarshalStrict(data, into, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "json: ")
		fieldPath := ""
		if m := typeErrorFieldRE.FindStringSubmatch(msg); m != nil {
			fieldPath = m[1]
		}
		return []ManifestError{mk(fieldPath, msg)}
	}
	var out []ManifestError
	for _, s := range strict {
		fieldPath, msg := "", s.Error()
		if fe, ok := s.(interface{ FieldPath() string }); ok {
			fieldPath = fe.FieldPath()
			msg = strings.TrimSuffix(msg, " "+fmt.Sprintf("%q", fieldPath))
		}
		out = append(out, mk(fieldPath, msg))
	}
	return out
}

// clearServerMeta drops what the hub, not the author, owns in a control
// object copied from `kubectl get -o yaml`: identity, versions, generation
// (gitfleet counts spec changes in Git itself), finalizers and deletion.
// Status is dropped by the caller for the same reason; approval requests
// keep theirs, because their status is the person's approval.
func clearServerMeta(m *metav1.ObjectMeta) {
	m.UID, m.ResourceVersion, m.Generation, m.SelfLink = "", "", 0, ""
	m.CreationTimestamp, m.DeletionTimestamp, m.DeletionGracePeriodSeconds = metav1.Time{}, nil, nil
	m.ManagedFields, m.OwnerReferences, m.Finalizers = nil, nil, nil
	delete(m.Annotations, lastAppliedAnnotation)
	if len(m.Annotations) == 0 {
		m.Annotations = nil
	}
}
