// Command crdsummary writes the summary (internal/crdsummary) of the CRDs in
// a directory of YAML files to standard output: `make crd-summary` runs it
// on KubeFleet's config/crd/bases to write the summary internal/crd's tests
// compare gitfleet's CRDs with.
package main

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/gitfleet/gitfleet/internal/crdsummary"
)

func main() {
	groups := flag.String("groups", "", "comma-separated API groups to keep (default: all)")
	exclude := flag.String("exclude", "", "comma-separated kinds to leave out (listed in the header as not served)")
	source := flag.String("source", "", "where the CRDs come from, for the header")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: crdsummary [-groups g,...] [-exclude Kind,...] [-source text] DIR")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(flag.Arg(0), split(*groups), split(*exclude), *source); err != nil {
		fmt.Fprintln(os.Stderr, "crdsummary:", err)
		os.Exit(1)
	}
}

func run(dir string, groups, exclude []string, source string) error {
	s, err := crdsummary.ReadDir(dir, groups...)
	if err != nil {
		return err
	}
	for _, k := range exclude {
		if _, ok := s[k]; !ok {
			return fmt.Errorf("-exclude %s: no CRD of that kind", k)
		}
	}
	s.Remove(exclude...)
	sort.Strings(exclude)
	w := os.Stdout
	fmt.Fprintln(w, "# Summary of CRDs by internal/crdsummary: one fact a line, descriptions left out.")
	if source != "" {
		fmt.Fprintf(w, "# Source: %s\n", source)
	}
	if len(groups) > 0 {
		fmt.Fprintf(w, "# Groups: %s\n", strings.Join(groups, ", "))
	}
	if len(exclude) > 0 {
		fmt.Fprintf(w, "# Kinds not served by gitfleet (left out): %s\n", strings.Join(exclude, ", "))
	}
	fmt.Fprintln(w)
	return s.Write(w)
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
