package crdsummary

import (
	"bytes"
	"strings"
	"testing"
)

const widgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.io
spec:
  group: example.io
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget, shortNames: [wg], categories: [all]}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size, priority: 1, description: prose is left out}
    schema:
      openAPIV3Schema:
        type: object
        description: prose is left out
        properties:
          spec:
            type: object
            required: [size, mode]
            x-kubernetes-validations:
            - {rule: "self.size > 0", message: "size must be positive", fieldPath: .size, reason: FieldValueInvalid}
            properties:
              mode: {type: string, enum: [A, B], default: A}
              size: {type: integer, format: int32, minimum: 1, maximum: 31}
              name: {type: string, pattern: "^[a-z]+$", maxLength: 63}
              limit: {x-kubernetes-int-or-string: true, anyOf: [{type: integer}, {type: string}]}
              opts: {type: object, default: {b: 1, a: "x"}, additionalProperties: {type: string}}
              items:
                type: array
                maxItems: 2
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [type]
                items: {type: object, x-kubernetes-preserve-unknown-fields: true}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: skipped}
`

func TestSummaryStatesEachFactOnItsOwnLine(t *testing.T) {
	s := Summary{}
	if err := s.Add([]byte(widgetCRD)); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := s.Write(&b); err != nil {
		t.Fatal(err)
	}
	want := `Widget conversion None
Widget group example.io
Widget names.categories [all]
Widget names.listKind WidgetList
Widget names.plural widgets
Widget names.shortNames [wg]
Widget names.singular widget
Widget scope Namespaced
Widget v1 . type object
Widget v1 printcolumn[0] name=Size type=integer format= priority=1 jsonPath=.spec.size
Widget v1 served true
Widget v1 spec required [mode,size]
Widget v1 spec rule "self.size > 0" message="size must be positive" fieldPath=.size reason=FieldValueInvalid
Widget v1 spec type object
Widget v1 spec.items maxItems 2
Widget v1 spec.items type array
Widget v1 spec.items x-kubernetes-list-map-keys [type]
Widget v1 spec.items x-kubernetes-list-type map
Widget v1 spec.items[] type object
Widget v1 spec.items[] x-kubernetes-preserve-unknown-fields true
Widget v1 spec.limit type -
Widget v1 spec.limit x-kubernetes-int-or-string
Widget v1 spec.limit(anyOf[0]) type integer
Widget v1 spec.limit(anyOf[1]) type string
Widget v1 spec.mode default "A"
Widget v1 spec.mode enum ["A","B"]
Widget v1 spec.mode type string
Widget v1 spec.name maxLength 63
Widget v1 spec.name pattern ^[a-z]+$
Widget v1 spec.name type string
Widget v1 spec.opts default {"a":"x","b":1}
Widget v1 spec.opts type object
Widget v1 spec.opts{} type string
Widget v1 spec.size format int32
Widget v1 spec.size maximum 31
Widget v1 spec.size minimum 1
Widget v1 spec.size type integer
Widget v1 storage true
Widget v1 subresource status
`
	if b.String() != want {
		t.Errorf("summary:\n%s\nwant:\n%s", b.String(), want)
	}
	parsed, err := Parse(strings.NewReader("# comment\n\n" + b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if d := Diff(s, parsed); len(d) != 0 {
		t.Errorf("Parse(Write(s)) differs from s:\n%s", Report(d))
	}
}

func TestDiffAndAllowlist(t *testing.T) {
	want := Summary{"A": {"A v1 x type string", "A v1 y type string"}, "Gone": {"Gone group g"}}
	got := Summary{"A": {"A v1 x type integer", "A v1 y type string"}}
	diffs := Diff(want, got)
	if r, w := Report(diffs), `A: 2 difference(s) (- upstream only, + gitfleet only)
  + A v1 x type integer
  - A v1 x type string
Gone: 1 difference(s) (- upstream only, + gitfleet only)
  - Gone group g
`; r != w {
		t.Errorf("report:\n%s\nwant:\n%s", r, w)
	}
	allow, err := ParseAllowlist(strings.NewReader(`# deliberate
- Gone *   # not served
+ A v1 x type integer   # gitfleet counts
+ B *   # stale
`))
	if err != nil {
		t.Fatal(err)
	}
	unexplained, used := allow.Filter(diffs)
	if len(unexplained) != 1 || unexplained[0].String() != "- A v1 x type string" {
		t.Errorf("unexplained = %v; want the missing string type alone", unexplained)
	}
	if used[0] != 1 || used[1] != 1 || used[2] != 0 {
		t.Errorf("used = %v; want [1 1 0]", used)
	}
	if _, err := ParseAllowlist(strings.NewReader("- A *\n")); err == nil {
		t.Error("an entry without a reason was accepted")
	}
}
