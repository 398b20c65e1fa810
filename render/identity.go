package render

import (
	"fmt"
	"slices"
	"strings"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	pathvalidation "k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kubescheme "k8s.io/client-go/kubernetes/scheme"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// The checks of this file are those an API server makes before it looks at
// an object's fields: does the kind exist, is the name one it accepts.
// Either failing refuses the whole commit (see Render): the object cannot
// exist anywhere, so leaving it out would delete its last good version from
// every member cluster.

// checkKind refuses a kind that a group whose kinds are known does not
// have: the built-in groups that client-go's scheme registers (kubectl
// would say "no matches for kind"). Groups it does not know are custom
// resources, whose kinds only a cluster's CRDs can tell, and pass.
func checkKind(gvk schema.GroupVersionKind) (fieldPath, msg string, ok bool) {
	s := kubescheme.Scheme
	if strings.HasSuffix(gvk.Kind, "List") && s.Recognizes(gvk) {
		// kubectl unwraps a List into its items; gitfleet reads objects
		// only as documents, so that a file's objects are what it shows.
		return "kind", fmt.Sprintf("%s is a list of objects; write each object as a document of its own (separated by ---)", gvk.Kind), false
	}
	if s.Recognizes(gvk) || !s.IsGroupRegistered(gvk.Group) {
		return "", "", true
	}
	gv := gvk.GroupVersion()
	if !s.IsVersionRegistered(gv) {
		versions := s.VersionsForGroupKind(gvk.GroupKind())
		if len(versions) == 0 {
			return "apiVersion", fmt.Sprintf("no matches for kind %q in version %q: the API group %q has no version %q", gvk.Kind, gv.String(), gvk.Group, gvk.Version), false
		}
		names := make([]string, len(versions))
		for i, v := range versions {
			names[i] = v.String()
		}
		return "apiVersion", fmt.Sprintf("no matches for kind %q in version %q (%s is served as %s)", gvk.Kind, gv.String(), gvk.Kind, strings.Join(names, ", ")), false
	}
	msg = fmt.Sprintf("no matches for kind %q in version %q", gvk.Kind, gv.String())
	if near := nearestKind(builtinKinds(gv), gvk.Kind); near != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", near)
	}
	return "kind", msg, false
}

// checkFleetKind is checkKind for the fleet's groups and gitfleet's own,
// whose kinds and versions the registry knows: a kind its group has at a
// version it is not read at is refused at apiVersion, naming the versions
// it is read at; a kind its group and version do not have is refused at
// kind, naming the nearest kind a person writes in any fleet group, with
// its apiVersion when that is another ("did you mean").
func checkFleetKind(gvk schema.GroupVersionKind) (fieldPath, msg string, ok bool) {
	if fleet.Scheme.Recognizes(gvk) {
		return "", "", true
	}
	gv := gvk.GroupVersion()
	if info, known := fleet.LookupGroupKind(gvk.GroupKind()); known {
		return "apiVersion", fmt.Sprintf("%s is not supported by gitfleet (use %s)", gv, orList(readAPIVersions(info))), false
	}
	msg = fmt.Sprintf("no matches for kind %q in version %q", gvk.Kind, gv.String())
	var kinds []string
	for _, k := range fleet.Kinds() {
		if !k.HubOwned {
			kinds = append(kinds, k.Kind)
		}
	}
	near := nearestKind(kinds, gvk.Kind)
	if near == "" {
		if !fleet.Scheme.IsVersionRegistered(gv) {
			msg += fmt.Sprintf(": the API group %q has no version %q", gvk.Group, gvk.Version)
		}
		return "kind", msg, false
	}
	info, _ := fleet.LookupKind(near)
	if near == gvk.Kind {
		return "kind", msg + fmt.Sprintf(" (%s is served as %s)", near, strings.Join(readAPIVersions(info), ", ")), false
	}
	if !fleet.Scheme.Recognizes(gv.WithKind(near)) {
		return "kind", msg + fmt.Sprintf(" (did you mean %s, apiVersion %s?)", near, info.APIVersion()), false
	}
	return "kind", msg + fmt.Sprintf(" (did you mean %s?)", near), false
}

// readAPIVersions are the apiVersions a fleet kind is read at, the one
// gitfleet writes first.
func readAPIVersions(k fleet.KindInfo) []string {
	out := []string{k.APIVersion()}
	for _, v := range k.ReadVersions {
		out = append(out, k.Group+"/"+v)
	}
	return out
}

// orList is "a", "a or b", "a, b or c".
func orList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// builtinKinds are the kinds of gv in client-go's scheme.
func builtinKinds(gv schema.GroupVersion) []string {
	var kinds []string
	for k := range kubescheme.Scheme.KnownTypes(gv) {
		if !strings.HasSuffix(k, "List") && !strings.HasSuffix(k, "Options") {
			kinds = append(kinds, k)
		}
	}
	return kinds
}

// nearestKind is the kind of kinds closest to kind (by edit distance, at
// most two edits or a difference of case only), for a "did you mean".
func nearestKind(kinds []string, kind string) string {
	kinds = slices.Sorted(slices.Values(kinds))
	best, bestDist := "", 3
	for _, k := range kinds {
		if strings.EqualFold(k, kind) {
			return k
		}
		if d := editDistance(strings.ToLower(k), strings.ToLower(kind)); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of two short strings.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// nameRules are the kinds whose names the API server checks with another
// rule than a DNS subdomain (RFC 1123), which every other kind, custom
// resources and fleet objects included, must have.
var nameRules = map[string]apivalidation.ValidateNameFunc{
	"/Namespace":        apivalidation.ValidateNamespaceName, // RFC 1123 label
	"/Service":          apivalidation.NameIsDNS1035Label,    // RFC 1035 label
	"/PersistentVolume": pathvalidation.ValidatePathSegmentName,
	// RBAC names may hold colons ("system:aggregate-to-view").
	"rbac.authorization.k8s.io/Role":               pathvalidation.ValidatePathSegmentName,
	"rbac.authorization.k8s.io/ClusterRole":        pathvalidation.ValidatePathSegmentName,
	"rbac.authorization.k8s.io/RoleBinding":        pathvalidation.ValidatePathSegmentName,
	"rbac.authorization.k8s.io/ClusterRoleBinding": pathvalidation.ValidatePathSegmentName,
}

// checkNames checks metadata.name against its kind's rule and
// metadata.namespace as a namespace name, with the API server's messages.
func checkNames(ref ObjectRef) field.ErrorList {
	rule, ok := nameRules[ref.Group+"/"+ref.Kind]
	if !ok {
		rule = apivalidation.NameIsDNSSubdomain
	}
	var errs field.ErrorList
	for _, msg := range rule(ref.Name, false) {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), ref.Name, msg))
	}
	if ref.Namespace != "" {
		for _, msg := range apivalidation.ValidateNamespaceName(ref.Namespace, false) {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "namespace"), ref.Namespace, msg))
		}
	}
	return errs
}
