package member

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// simDrift is one edit of a simulated member's object (SimDriftAnnotation).
type simDrift struct {
	kind, namespace, name string
	pointer, value        string
}

func parseSimDrifts(m *fleet.MemberCluster) ([]simDrift, error) {
	v := strings.TrimSpace(m.Annotations[fleet.SimDriftAnnotation])
	if v == "" {
		return nil, nil
	}
	var out []simDrift
	for _, entry := range strings.Split(v, ";") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		target, edit, ok1 := strings.Cut(entry, ":")
		pointer, value, ok2 := strings.Cut(edit, "=")
		parts := strings.Split(target, "/")
		if !ok1 || !ok2 || len(parts) != 3 || parts[0] == "" || parts[2] == "" || !strings.HasPrefix(pointer, "/") {
			return nil, fmt.Errorf("member cluster %q has an invalid %s annotation entry %q: want <kind>/<namespace>/<name>:<JSON pointer>=<value>, such as ConfigMap/app/settings:/data/color=red",
				m.Name, fleet.SimDriftAnnotation, entry)
		}
		out = append(out, simDrift{kind: parts[0], namespace: parts[1], name: parts[2], pointer: pointer, value: value})
	}
	return out, nil
}

// edited is u as the member holds it after the edits that name it; nil
// when none does.
func edited(u *unstructured.Unstructured, drifts []simDrift) *unstructured.Unstructured {
	var out *unstructured.Unstructured
	for _, dr := range drifts {
		if dr.kind != u.GetKind() || dr.namespace != u.GetNamespace() || dr.name != u.GetName() {
			continue
		}
		if out == nil {
			out = u.DeepCopy()
		}
		setPointer(out.Object, dr.pointer, dr.value)
	}
	return out
}

// setPointer sets the string value at an RFC 6901 pointer, making the maps
// on the way; an index past a list's end is ignored.
func setPointer(obj map[string]any, pointer, value string) {
	toks := strings.Split(strings.TrimPrefix(pointer, "/"), "/")
	var cur any = obj
	for i, tok := range toks {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		last := i == len(toks)-1
		switch c := cur.(type) {
		case map[string]any:
			if last {
				c[tok] = value
				return
			}
			next, ok := c[tok].(map[string]any)
			if _, isList := c[tok].([]any); isList {
				cur = c[tok]
				continue
			}
			if !ok {
				next = map[string]any{}
				c[tok] = next
			}
			cur = next
		case []any:
			n, err := strconv.Atoi(tok)
			if err != nil || n < 0 || n >= len(c) {
				return
			}
			if last {
				c[n] = value
				return
			}
			cur = c[n]
		default:
			return
		}
	}
}

// partial keeps the details of fields the hub manifest sets: what a
// server-side apply of it would own (PartialComparison).
func partial(details []fleet.PatchDetail) []fleet.PatchDetail {
	var out []fleet.PatchDetail
	for _, d := range details {
		if d.ValueInHub != "" {
			out = append(out, d)
		}
	}
	return out
}

// compare is the simulated member's diff of manifest against live under a
// comparison option.
func compare(manifest, live *unstructured.Unstructured, option fleet.ComparisonOptionType) ([]fleet.PatchDetail, error) {
	details, err := PatchDetails(manifest, live)
	if err != nil || option == fleet.ComparisonOptionTypeFullComparison {
		return details, err
	}
	return partial(details), nil
}
