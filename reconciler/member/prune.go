package member

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// PruneDisabledReason is the reason of PruneSkipped=True.
const PruneDisabledReason = "PruneDisabled"

// maxPruneSkippedNamed bounds how many objects PruneSkipped's message
// names; the count is always complete.
const maxPruneSkippedNamed = 20

// PruneDisabled reports whether an object asks to stay on the member when
// it leaves the snapshot: gitfleet.io/prune or Flux's
// kustomize.toolkit.fluxcd.io/prune set to "disabled", as an annotation or,
// as Flux's exclusions also match, a label. Drivers read it on the version
// last delivered (what the member holds), since the object is absent from
// the new snapshot.
func PruneDisabled(o metav1.Object) bool {
	for _, m := range []map[string]string{o.GetAnnotations(), o.GetLabels()} {
		if m[fleet.PruneAnnotation] == fleet.PruneDisabled || m[fleet.FluxPruneAnnotation] == fleet.PruneDisabled {
			return true
		}
	}
	return false
}

// PruneExclusions are the annotations that keep an object from a prune,
// in the form of Flux's ssa.DeleteOptions.Exclusions.
func PruneExclusions() map[string]string {
	return map[string]string{fleet.PruneAnnotation: fleet.PruneDisabled, fleet.FluxPruneAnnotation: fleet.PruneDisabled}
}

// PruneSkipped is the condition a driver reports beside Applied while
// objects that left the binding's snapshot stay on the member because they
// are annotated prune: disabled (left). ok is false when nothing was left:
// the condition is then not reported, and the hub drops it.
func PruneSkipped(gen int64, left []fleet.ResourceIdentifier) (c metav1.Condition, ok bool) {
	names := make([]string, 0, len(left))
	for _, id := range left {
		names = append(names, DescribeResource(id))
	}
	return pruneSkipped(gen, len(names), names)
}

// pruneSkippedNamed precedes the names in PruneSkipped's message.
var pruneSkippedNamed = fmt.Sprintf("annotated %s: %s: ", fleet.PruneAnnotation, fleet.PruneDisabled)

// pruneSkipped is PruneSkipped of n objects, of which names (sorted here)
// are named, at most maxPruneSkippedNamed of them.
func pruneSkipped(gen int64, n int, names []string) (metav1.Condition, bool) {
	if n == 0 {
		return metav1.Condition{}, false
	}
	names = slices.Clone(names)
	sort.Strings(names)
	more := ""
	if len(names) > maxPruneSkippedNamed {
		names = names[:maxPruneSkippedNamed]
	}
	if n > len(names) {
		more = fmt.Sprintf(" and %d more", n-len(names))
	}
	noun, verb := "resources", "stay"
	if n == 1 {
		noun, verb = "resource", "stays"
	}
	msg := fmt.Sprintf("%d %s left the resource snapshot but %s on the member cluster, %s%s%s",
		n, noun, verb, pruneSkippedNamed, strings.Join(names, ", "), more)
	return condition(fleet.ResourceBindingPruneSkipped, metav1.ConditionTrue, PruneDisabledReason, msg, gen), true
}

// JoinPruneSkipped is the binding's PruneSkipped at gen from the
// PruneSkipped conditions of its Works (conds, each made by PruneSkipped
// for one Work): what the push transport reports for the same objects
// from its one record, naming what every Work left. ok is false when no
// condition is True.
func JoinPruneSkipped(gen int64, conds []metav1.Condition) (metav1.Condition, bool) {
	n, seen := 0, map[string]bool{}
	var names []string
	for _, c := range conds {
		if c.Status != metav1.ConditionTrue {
			continue
		}
		var k int
		i := strings.Index(c.Message, pruneSkippedNamed)
		if _, err := fmt.Sscanf(c.Message, "%d ", &k); err != nil || i < 0 {
			continue // not PruneSkipped's: nothing to name
		}
		n += k
		named := c.Message[i+len(pruneSkippedNamed):]
		if j := strings.LastIndex(named, " and "); j >= 0 && strings.HasSuffix(named, " more") {
			named = named[:j]
		}
		for _, name := range strings.Split(named, ", ") {
			if seen[name] {
				n-- // left by two Works: one object
				continue
			}
			seen[name] = true
			names = append(names, name)
		}
	}
	return pruneSkipped(gen, n, names)
}

// WithPruneSkipped appends PruneSkipped to conds when anything was left.
func WithPruneSkipped(conds []metav1.Condition, gen int64, left []fleet.ResourceIdentifier) []metav1.Condition {
	if c, ok := PruneSkipped(gen, left); ok {
		return append(conds, c)
	}
	return conds
}

// DescribeResource names a resource as kubectl does: Kind[.group]
// [namespace/]name.
func DescribeResource(id fleet.ResourceIdentifier) string {
	kind := id.Kind
	if id.Group != "" {
		kind += "." + id.Group
	}
	if id.Namespace != "" {
		return kind + " " + id.Namespace + "/" + id.Name
	}
	return kind + " " + id.Name
}
