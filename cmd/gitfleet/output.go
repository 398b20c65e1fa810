package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/yaml"

	"github.com/spf13/cobra"

	"github.com/gitfleet/gitfleet/status"
)

// output is get's -o: a table ("" or wide) printed by the printers package,
// or one of kubectl's machine formats (json, yaml, name, jsonpath=...,
// go-template=...) printed by k8s.io/cli-runtime's printers, so they behave
// exactly as kubectl's do.
type output struct {
	format string
	print  *genericclioptions.PrintFlags
}

// tableFormats are the -o values gitfleet's own tables answer.
var tableFormats = []string{"wide"}

func (o *output) flags(cmd *cobra.Command) {
	o.print = genericclioptions.NewPrintFlags("")
	o.print.OutputFormat = &o.format
	// -o is declared here rather than by PrintFlags so its help names the
	// tables too; the flags that refine a format (--template,
	// --show-managed-fields, ...) are cli-runtime's.
	o.print.JSONYamlPrintFlags.AddFlags(cmd)
	o.print.NamePrintFlags.AddFlags(cmd)
	o.print.TemplatePrinterFlags.AddFlags(cmd)
	cmd.Flags().StringVarP(&o.format, "output", "o", "", "output format: empty for a table, or one of "+strings.Join(o.formats(), ", "))
	o.print.OutputFlagSpecified = func() bool { return cmd.Flag("output").Changed }
	_ = cmd.RegisterFlagCompletionFunc("output", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return o.formats(), cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	})
}

// formats are the -o values, as completion offers them: the ones that take
// an argument end in '='.
func (o *output) formats() []string {
	var out []string
	out = append(out, tableFormats...)
	for _, f := range o.print.AllowedFormats() {
		switch f {
		case "go-template", "go-template-file", "template", "templatefile", "jsonpath", "jsonpath-as-json", "jsonpath-file":
			f += "="
		}
		out = append(out, f)
	}
	return out
}

// table reports whether -o asks for one of gitfleet's tables.
func (o *output) table() bool {
	return o.format == "" || slices.Contains(tableFormats, o.format)
}

// validate checks -o before anything is read, as kubectl does.
func (o *output) validate() error {
	if o.table() {
		return nil
	}
	_, err := o.print.ToPrinter()
	if genericclioptions.IsNoCompatiblePrinterError(err) {
		return fmt.Errorf("--output %q is not one of %s", o.format, strings.Join(o.formats(), ", "))
	}
	return err
}

// printObjects prints objects in a machine format. As kubectl does, a
// request for exactly one named object prints that object; anything else is
// a v1 List (name prints one line per object either way).
func (o *output) printObjects(w io.Writer, objs []runtime.Object, single bool) error {
	p, err := o.print.ToPrinter()
	if err != nil {
		return err
	}
	items := make([]unstructured.Unstructured, len(objs))
	for i, obj := range objs {
		u, err := toUnstructured(obj)
		if err != nil {
			return err
		}
		items[i] = *u
	}
	if single && len(items) == 1 {
		return p.PrintObj(&items[0], w)
	}
	if o.format == "name" {
		for i := range items {
			if err := p.PrintObj(&items[i], w); err != nil {
				return err
			}
		}
		return nil
	}
	list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]any{"resourceVersion": ""}}, Items: items}
	return p.PrintObj(list, w)
}

// toUnstructured is obj as its status file holds it: status.Encode fills in
// apiVersion and kind from the Go type and scope (which the name, JSON and
// template printers need) and leaves out the same noise as the files.
func toUnstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
	data, err := status.Encode(obj)
	if err != nil {
		return nil, err
	}
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		return nil, err
	}
	return u, nil
}
