package render

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// fleetVersions are the API versions of the fleet groups gitfleet reads;
// both decode into the same Go types (v1 is v1beta1's stable twin).
var fleetVersions = map[string]bool{"v1beta1": true, "v1": true}

// overrideKinds are also read in v1alpha1, the version KubeFleet's override
// examples still use; its fields are v1beta1's.
var overrideKinds = map[string]bool{fleet.KindClusterResourceOverride: true, fleet.KindResourceOverride: true}

func supportedVersion(gvk schema.GroupVersionKind) bool {
	return fleetVersions[gvk.Version] || gvk.Version == "v1alpha1" && overrideKinds[gvk.Kind] && gvk.Group == fleet.PlacementGroup
}

func isFleetGroup(group string) bool {
	return group == fleet.PlacementGroup || group == fleet.ClusterGroup
}

// supportedKinds maps the fleet kinds gitfleet reads to their group.
var supportedKinds = map[string]string{
	fleet.KindMemberCluster:               fleet.ClusterGroup,
	fleet.KindClusterResourcePlacement:    fleet.PlacementGroup,
	fleet.KindResourcePlacement:           fleet.PlacementGroup,
	fleet.KindClusterStagedUpdateStrategy: fleet.PlacementGroup,
	fleet.KindStagedUpdateStrategy:        fleet.PlacementGroup,
	fleet.KindClusterStagedUpdateRun:      fleet.PlacementGroup,
	fleet.KindStagedUpdateRun:             fleet.PlacementGroup,
	fleet.KindClusterApprovalRequest:      fleet.PlacementGroup,
	fleet.KindApprovalRequest:             fleet.PlacementGroup,
	fleet.KindClusterResourceOverride:     fleet.PlacementGroup,
	fleet.KindResourceOverride:            fleet.PlacementGroup,
}

// identify checks apiVersion, kind and metadata.name (which every manifest
// needs) and returns the object's reference.
func identify(d document) (ObjectRef, schema.GroupVersionKind, *ManifestError) {
	u := unstructured.Unstructured{Object: d.obj}
	fail := func(fieldPath, msg string) *ManifestError {
		return &ManifestError{File: d.file, Line: lineOf(d.node, fieldPath), Kind: u.GetKind(),
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
	ref      ObjectRef
	src      Source
	member   *fleet.MemberCluster
	place    *fleet.Placement
	strategy *fleet.UpdateStrategy
	run      *fleet.UpdateRun
	approval *fleet.ApprovalRequest
	cro      *fleet.ClusterResourceOverride
	ro       *fleet.ResourceOverride
	// node is the document of an override, for the lines of the errors
	// found when overrides are checked against each other.
	node     *yaml.Node
	resource *unstructured.Unstructured
}

// decodeDocument turns one document into a fleet object (strictly decoded,
// defaulted, validated) or a workload resource. inApprovals says whether the
// document was read from the approvals/ folder, the only place approval
// requests may live.
func decodeDocument(d document, inApprovals bool) (*decoded, []ManifestError) {
	ref, gvk, merr := identify(d)
	if merr != nil {
		return nil, []ManifestError{*merr}
	}
	out := &decoded{ref: ref, src: Source{File: d.file, Line: d.line}}
	mk := func(fieldPath, msg string) ManifestError {
		return ManifestError{File: d.file, Line: lineOf(d.node, fieldPath), Kind: ref.Kind,
			Namespace: ref.Namespace, Name: ref.Name, Field: fieldPath, Message: msg}
	}
	if !isFleetGroup(gvk.Group) {
		if inApprovals {
			return nil, []ManifestError{mk("kind", fmt.Sprintf("only approval requests belong in approvals/, not %s", gvk.Kind))}
		}
		res, errs := workloadResource(d, ref, mk)
		if len(errs) > 0 {
			return nil, errs
		}
		out.resource = res
		return out, nil
	}
	if !supportedVersion(gvk) {
		return nil, []ManifestError{mk("apiVersion", fmt.Sprintf("%s is not supported by gitfleet (use %s/v1beta1 or %s/v1)", gvk.GroupVersion(), gvk.Group, gvk.Group))}
	}
	if group, ok := supportedKinds[gvk.Kind]; !ok || group != gvk.Group {
		return nil, []ManifestError{mk("kind", fmt.Sprintf("kind %s is not supported by gitfleet", gvk.Kind))}
	}
	isApproval := gvk.Kind == fleet.KindClusterApprovalRequest || gvk.Kind == fleet.KindApprovalRequest
	switch {
	case isApproval && !inApprovals:
		return nil, []ManifestError{mk("kind", fmt.Sprintf("%s objects belong in the approvals/ folder, which gitfleet manages", gvk.Kind))}
	case !isApproval && inApprovals:
		return nil, []ManifestError{mk("kind", fmt.Sprintf("only approval requests belong in approvals/, not %s", gvk.Kind))}
	}
	if gvk.Kind == fleet.KindClusterStagedUpdateStrategy || gvk.Kind == fleet.KindStagedUpdateStrategy {
		// Decoding into metav1.Duration loses the text the CRD pattern
		// applies to (100ms and 1d fail differently), so check it first.
		if errs := waitTimeTexts(d.obj, mk); len(errs) > 0 {
			return nil, errs
		}
	}

	data, err := json.Marshal(d.obj)
	if err != nil {
		return nil, []ManifestError{mk("", err.Error())}
	}
	typeMeta := metav1.TypeMeta{APIVersion: gvk.Group + "/" + fleet.Version, Kind: gvk.Kind}
	var errs field.ErrorList
	switch gvk.Kind {
	case fleet.KindMemberCluster:
		o := &fleet.MemberCluster{}
		if e := strictDecode(data, o, mk); len(e) > 0 {
			return nil, e
		}
		o.TypeMeta, o.Status = typeMeta, fleet.MemberClusterStatus{}
		clearServerMeta(&o.ObjectMeta)
		errs = fleet.ValidateMemberCluster(o)
		out.member = o
	case fleet.KindClusterResourcePlacement, fleet.KindResourcePlacement:
		o := &fleet.Placement{}
		if e := strictDecode(data, o, mk); len(e) > 0 {
			return nil, e
		}
		o.TypeMeta, o.Status = typeMeta, fleet.PlacementStatus{}
		clearServerMeta(&o.ObjectMeta)
		fleet.SetDefaultsPlacement(o)
		errs = fleet.ValidatePlacement(o)
		out.place = o
	case fleet.KindClusterStagedUpdateStrategy, fleet.KindStagedUpdateStrategy:
		o := &fleet.UpdateStrategy{}
		if e := strictDecode(data, o, mk); len(e) > 0 {
			return nil, e
		}
		o.TypeMeta = typeMeta
		clearServerMeta(&o.ObjectMeta)
		fleet.SetDefaultsUpdateStrategy(o)
		errs = fleet.ValidateUpdateStrategy(o)
		out.strategy = o
	case fleet.KindClusterStagedUpdateRun, fleet.KindStagedUpdateRun:
		o := &fleet.UpdateRun{}
		if e := strictDecode(data, o, mk); len(e) > 0 {
			return nil, e
		}
		o.TypeMeta, o.Status = typeMeta, fleet.UpdateRunStatus{}
		clearServerMeta(&o.ObjectMeta)
		fleet.SetDefaultsUpdateRun(o)
		errs = fleet.ValidateUpdateRun(o)
		out.run = o
	case fleet.KindClusterApprovalRequest, fleet.KindApprovalRequest:
		o := &fleet.ApprovalRequest{}
		if e := strictDecode(data, o, mk); len(e) > 0 {
			return nil, e
		}
		o.TypeMeta = typeMeta
		errs = fleet.ValidateApprovalRequest(o)
		out.approval = o
	case fleet.KindClusterResourceOverride:
		o := &fleet.ClusterResourceOverride{}
		if e := strictDecode(data, o, mk); len(e) > 0 {
			return nil, e
		}
		o.TypeMeta = typeMeta
		clearServerMeta(&o.ObjectMeta)
		fleet.SetDefaultsClusterResourceOverride(o)
		errs = fleet.ValidateClusterResourceOverride(o)
		out.cro, out.node = o, d.node
	case fleet.KindResourceOverride:
		o := &fleet.ResourceOverride{}
		if e := strictDecode(data, o, mk); len(e) > 0 {
			return nil, e
		}
		o.TypeMeta = typeMeta
		clearServerMeta(&o.ObjectMeta)
		fleet.SetDefaultsResourceOverride(o)
		errs = fleet.ValidateResourceOverride(o)
		out.ro, out.node = o, d.node
	}
	if len(errs) > 0 {
		return nil, fieldErrors(errs, mk)
	}
	return out, nil
}

// fieldErrors converts validation errors; Message is the part after the
// field, as kubectl prints it ("Invalid value: 0: maxConcurrency must be at
// least 1").
func fieldErrors(errs field.ErrorList, mk func(string, string) ManifestError) []ManifestError {
	out := make([]ManifestError, 0, len(errs))
	for _, e := range errs {
		out = append(out, mk(e.Field, e.ErrorBody()))
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

// waitTimeTexts checks every waitTime of a strategy against the CRD pattern
// while its text is still at hand.
func waitTimeTexts(obj map[string]any, mk func(string, string) ManifestError) []ManifestError {
	var out []ManifestError
	stages, _, _ := unstructured.NestedSlice(obj, "spec", "stages")
	for i, s := range stages {
		stage, _ := s.(map[string]any)
		for _, list := range []string{"afterStageTasks", "beforeStageTasks"} {
			tasks, _ := stage[list].([]any)
			for j, t := range tasks {
				task, _ := t.(map[string]any)
				w, set := task["waitTime"]
				if !set || w == nil {
					continue
				}
				p := field.NewPath("spec", "stages").Index(i).Child(list).Index(j).Child("waitTime")
				text, isString := w.(string)
				if !isString {
					out = append(out, mk(p.String(), fmt.Sprintf("must be a duration string such as 1m, not %v", w)))
					continue
				}
				if e := fleet.ValidateWaitTime(text, p); e != nil {
					out = append(out, mk(e.Field, e.ErrorBody()))
				}
			}
		}
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
