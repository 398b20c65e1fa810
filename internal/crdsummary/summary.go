// Package crdsummary turns CustomResourceDefinitions into a deterministic
// text summary of what a client can observe of them, one fact a line: the
// group, names, scope and conversion of each CRD; per version whether it is
// served and stored, its subresources and printer columns; and per schema
// field path its type, format, enum, default, pattern, bounds, required
// children, list and map types, and every x-kubernetes-validations rule.
// Descriptions are left out: they are prose, not behaviour.
//
// Every line starts with the CRD's kind, then the version where the fact
// belongs to one, so two summaries compare as sets of lines and a
// difference reads on its own, e.g.
//
//	ClusterResourcePlacement v1beta1 spec.policy.placementType enum ["PickAll","PickN","PickFixed"]
//
// internal/crd compares gitfleet's config/crd with the committed summary of
// KubeFleet's CRDs this package writes (cmd/crdsummary, `make crd-summary`).
package crdsummary

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Summary is the facts of a set of CRDs, by kind. Each kind's lines are
// sorted.
type Summary map[string][]string

// Kinds are the summary's kinds in order.
func (s Summary) Kinds() []string {
	kinds := make([]string, 0, len(s))
	for k := range s {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	return kinds
}

// Write writes the summary: every kind's lines, kinds in order, a blank
// line between kinds.
func (s Summary) Write(w io.Writer) error {
	var b bytes.Buffer
	for i, kind := range s.Kinds() {
		if i > 0 {
			b.WriteByte('\n')
		}
		for _, l := range s[kind] {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// Parse reads what Write wrote. Lines starting with # are comments.
func Parse(r io.Reader) (Summary, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	s := Summary{}
	for n, l := range strings.Split(string(data), "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		kind, _, ok := strings.Cut(l, " ")
		if !ok {
			return nil, fmt.Errorf("line %d: %q has no fact after the kind", n+1, l)
		}
		s[kind] = append(s[kind], l)
	}
	for _, lines := range s {
		sort.Strings(lines)
	}
	return s, nil
}

// ReadDir summarizes the CRDs in the *.yaml files of dir: those of groups,
// or every CRD when no group is given.
func ReadDir(dir string, groups ...string) (Summary, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	s := Summary{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		if err := s.Add(data, groups...); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
	}
	return s, nil
}

// Add summarizes the CRDs of groups (of any group when none is given) in a
// YAML stream; other objects are skipped.
func (s Summary) Add(data []byte, groups ...string) error {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		var c apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(doc, &c); err != nil {
			return err
		}
		if c.Kind != "CustomResourceDefinition" || len(groups) > 0 && !slices.Contains(groups, c.Spec.Group) {
			continue
		}
		kind := c.Spec.Names.Kind
		if _, dup := s[kind]; dup {
			return fmt.Errorf("two CRDs of kind %s", kind)
		}
		lines := summarize(&c)
		sort.Strings(lines)
		s[kind] = lines
	}
}

// Remove drops kinds from the summary.
func (s Summary) Remove(kinds ...string) {
	for _, k := range kinds {
		delete(s, k)
	}
}

func summarize(c *apiextensionsv1.CustomResourceDefinition) []string {
	kind := c.Spec.Names.Kind
	var out []string
	add := func(format string, args ...any) {
		out = append(out, kind+" "+fmt.Sprintf(format, args...))
	}
	n := c.Spec.Names
	add("group %s", c.Spec.Group)
	add("names.plural %s", n.Plural)
	add("names.singular %s", n.Singular)
	add("names.listKind %s", n.ListKind)
	add("names.shortNames %s", list(n.ShortNames))
	add("names.categories %s", list(n.Categories))
	add("scope %s", c.Spec.Scope)
	conv := "None"
	if c.Spec.Conversion != nil && c.Spec.Conversion.Strategy != "" {
		conv = string(c.Spec.Conversion.Strategy)
	}
	add("conversion %s", conv)
	for _, v := range c.Spec.Versions {
		vadd := func(format string, args ...any) {
			add(v.Name+" "+format, args...)
		}
		vadd("served %t", v.Served)
		vadd("storage %t", v.Storage)
		if v.Deprecated {
			vadd("deprecated %s", str(ptrString(v.DeprecationWarning)))
		}
		if sr := v.Subresources; sr != nil {
			if sr.Status != nil {
				vadd("subresource status")
			}
			if sc := sr.Scale; sc != nil {
				vadd("subresource scale spec=%s status=%s selector=%s", sc.SpecReplicasPath, sc.StatusReplicasPath, ptrString(sc.LabelSelectorPath))
			}
		}
		for i, col := range v.AdditionalPrinterColumns {
			vadd("printcolumn[%d] name=%s type=%s format=%s priority=%d jsonPath=%s", i, str(col.Name), col.Type, col.Format, col.Priority, col.JSONPath)
		}
		for _, f := range v.SelectableFields {
			vadd("selectableField %s", f.JSONPath)
		}
		if v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
			walk(v.Schema.OpenAPIV3Schema, ".", vadd)
		}
	}
	return out
}

// walk adds the facts of the schema at path and of every schema under it:
// properties as path.name, array items as path[], map values as path{}.
func walk(p *apiextensionsv1.JSONSchemaProps, path string, add func(string, ...any)) {
	f := func(format string, args ...any) {
		add(path+" "+format, args...)
	}
	typ := p.Type
	if typ == "" {
		typ = "-"
	}
	f("type %s", typ)
	if p.Format != "" {
		f("format %s", p.Format)
	}
	if len(p.Enum) > 0 {
		vals := make([]string, len(p.Enum))
		for i, e := range p.Enum {
			vals[i] = canonicalJSON(e.Raw)
		}
		f("enum [%s]", strings.Join(vals, ","))
	}
	if p.Default != nil {
		f("default %s", canonicalJSON(p.Default.Raw))
	}
	if p.Pattern != "" {
		f("pattern %s", p.Pattern)
	}
	num := func(name string, v *float64, exclusive bool) {
		if v != nil {
			s := strconv.FormatFloat(*v, 'g', -1, 64)
			if exclusive {
				s += " exclusive"
			}
			f("%s %s", name, s)
		}
	}
	num("minimum", p.Minimum, p.ExclusiveMinimum)
	num("maximum", p.Maximum, p.ExclusiveMaximum)
	num("multipleOf", p.MultipleOf, false)
	count := func(name string, v *int64) {
		if v != nil {
			f("%s %d", name, *v)
		}
	}
	count("minLength", p.MinLength)
	count("maxLength", p.MaxLength)
	count("minItems", p.MinItems)
	count("maxItems", p.MaxItems)
	count("minProperties", p.MinProperties)
	count("maxProperties", p.MaxProperties)
	if p.UniqueItems {
		f("uniqueItems")
	}
	if len(p.Required) > 0 {
		req := append([]string(nil), p.Required...)
		sort.Strings(req)
		f("required %s", list(req))
	}
	if p.Nullable {
		f("nullable")
	}
	if p.XListType != nil {
		f("x-kubernetes-list-type %s", *p.XListType)
	}
	if len(p.XListMapKeys) > 0 {
		f("x-kubernetes-list-map-keys %s", list(p.XListMapKeys))
	}
	if p.XMapType != nil {
		f("x-kubernetes-map-type %s", *p.XMapType)
	}
	if p.XPreserveUnknownFields != nil {
		f("x-kubernetes-preserve-unknown-fields %t", *p.XPreserveUnknownFields)
	}
	if p.XIntOrString {
		f("x-kubernetes-int-or-string")
	}
	if p.XEmbeddedResource {
		f("x-kubernetes-embedded-resource")
	}
	for _, r := range p.XValidations {
		fact := "rule " + str(r.Rule)
		if r.Message != "" {
			fact += " message=" + str(r.Message)
		}
		if r.MessageExpression != "" {
			fact += " messageExpression=" + str(r.MessageExpression)
		}
		if r.FieldPath != "" {
			fact += " fieldPath=" + str(r.FieldPath)
		}
		if r.Reason != nil {
			fact += " reason=" + string(*r.Reason)
		}
		if r.OptionalOldSelf != nil {
			fact += fmt.Sprintf(" optionalOldSelf=%t", *r.OptionalOldSelf)
		}
		f("%s", fact)
	}
	for name, subs := range map[string][]apiextensionsv1.JSONSchemaProps{"allOf": p.AllOf, "anyOf": p.AnyOf, "oneOf": p.OneOf} {
		for i := range subs {
			walk(&subs[i], fmt.Sprintf("%s(%s[%d])", path, name, i), add)
		}
	}
	if p.Not != nil {
		walk(p.Not, path+"(not)", add)
	}
	names := make([]string, 0, len(p.Properties))
	for name := range p.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		prop := p.Properties[name]
		walk(&prop, join(path, name), add)
	}
	if p.Items != nil {
		if p.Items.Schema != nil {
			walk(p.Items.Schema, path+"[]", add)
		}
		for i := range p.Items.JSONSchemas {
			walk(&p.Items.JSONSchemas[i], fmt.Sprintf("%s[%d]", path, i), add)
		}
	}
	if ap := p.AdditionalProperties; ap != nil {
		switch {
		case ap.Schema != nil:
			walk(ap.Schema, path+"{}", add)
		default:
			f("additionalProperties %t", ap.Allows)
		}
	}
}

func join(path, name string) string {
	if path == "." {
		return name
	}
	return path + "." + name
}

// str quotes a string when it holds what would make a line ambiguous.
func str(s string) string {
	if s == "" || strings.ContainsAny(s, " \t\n\"\\=") {
		return strconv.Quote(s)
	}
	return s
}

func list(l []string) string {
	if len(l) == 0 {
		return "[]"
	}
	return "[" + strings.Join(l, ",") + "]"
}

func ptrString(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// canonicalJSON re-encodes a value with sorted keys, so equal values read
// the same whichever way the YAML wrote them.
func canonicalJSON(raw []byte) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return string(raw)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
