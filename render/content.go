package render

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/crdschema"
)

// Content is the hub content of one commit.
type Content struct {
	Members    []*fleet.MemberCluster
	Placements []*fleet.Placement // ClusterResourcePlacements and ResourcePlacements
	Strategies []*fleet.UpdateStrategy
	Runs       []*fleet.UpdateRun
	// ClusterResourceOverrides and ResourceOverrides change the selected
	// resources per member cluster; each commit that changes one records an
	// override snapshot (reconciler/overridesnapshot).
	ClusterResourceOverrides []*fleet.ClusterResourceOverride
	ResourceOverrides        []*fleet.ResourceOverride
	// Evictions remove a placement's resources from one cluster, once;
	// DisruptionBudgets bound them (reconciler/eviction).
	Evictions         []*fleet.ClusterResourcePlacementEviction
	DisruptionBudgets []*fleet.ClusterResourcePlacementDisruptionBudget
	// RolloutWindows say when a stage's or a member's clusters may start
	// (gitfleet's; reconciler/updaterun).
	RolloutWindows []*fleet.RolloutWindow
	// Resources are the workload resources, in SortResources order.
	Resources []*unstructured.Unstructured
	// Sources says where each rendered object came from.
	Sources map[ObjectRef]Source
	// Errors are the per-object and per-file problems; the objects concerned
	// are not in the lists above.
	Errors []ManifestError
	// Accepted are the fleet objects config/crd's schemas accepted, for
	// Options.Accepted of the next render.
	Accepted crdschema.Accepted
}

// ObjectRef identifies an object independently of its API version (v1 and
// v1beta1 fleet manifests name the same object).
type ObjectRef struct {
	Group     string
	Kind      string
	Namespace string
	Name      string
}

func (r ObjectRef) String() string {
	k := r.Kind
	if r.Group != "" {
		k += "." + r.Group
	}
	if r.Namespace != "" {
		return k + " " + r.Namespace + "/" + r.Name
	}
	return k + " " + r.Name
}

// Source is the repository file (slash-separated, relative to the
// repository root) an object came from, and the line of its document where
// known (0 when kustomize produced the object).
type Source struct {
	File string
	Line int
}

// ManifestError is a problem with one object or file. Kind and Name are
// empty when the object could not be identified (a YAML syntax error, a file
// over the size limit). Field is a JSON path such as
// spec.stages[1].maxConcurrency when the problem is one field.
type ManifestError struct {
	File      string
	Line      int
	Kind      string
	Namespace string
	Name      string
	Field     string
	Message   string
}

// Error formats "<file>:<line>: <Kind> <name>: <field>: <message>", leaving
// out the parts that are unknown; namespaced objects print namespace/name.
func (e ManifestError) Error() string {
	s := e.File
	if e.Line > 0 {
		s += fmt.Sprintf(":%d", e.Line)
	}
	s += ": "
	if e.Kind != "" || e.Name != "" {
		name := e.Name
		if e.Namespace != "" && name != "" {
			name = e.Namespace + "/" + name
		}
		switch {
		case e.Kind == "":
			s += name + ": "
		case name == "":
			s += e.Kind + ": "
		default:
			s += e.Kind + " " + name + ": "
		}
	}
	if e.Field != "" {
		s += e.Field + ": "
	}
	return s + e.Message
}

// Withheld reports whether an object the caller knew from a previous render
// (identified by ref, last read from lastFile) is missing from c because it
// could not be rendered now rather than because it was deleted: an error
// names the object, or its file failed as a whole. Callers keep the last
// good version of withheld objects, so a typo never deletes a placement or
// rolls a resource out of the fleet.
func (c *Content) Withheld(ref ObjectRef, lastFile string) bool {
	for _, e := range c.Errors {
		if e.Name == ref.Name && e.Namespace == ref.Namespace && (e.Kind == ref.Kind || e.Kind == "") && e.Name != "" {
			return true
		}
		if e.File == lastFile && e.Name == "" {
			return true
		}
	}
	return false
}

// Options configure Render.
type Options struct {
	// Path is the folder of the hub content, relative to the repository
	// root (default ".").
	Path string
	// MaxFileSize bounds each file (default 8 MiB).
	MaxFileSize int64
	// MaxTotalSize bounds all files read together (default 256 MiB).
	MaxTotalSize int64
	// Accepted are objects the schemas accepted in an earlier render
	// (Content.Accepted): render prunes and defaults them but does not
	// validate them against the schema again. It changes how long a
	// render takes, never what it returns.
	Accepted crdschema.Accepted
}

// Default size limits.
const (
	DefaultMaxFileSize  = 8 << 20
	DefaultMaxTotalSize = 256 << 20
)

// WithDefaults fills in the defaults Render uses for what is not set.
func (o Options) WithDefaults() Options {
	if o.Path == "" {
		o.Path = "."
	}
	if o.MaxFileSize <= 0 {
		o.MaxFileSize = DefaultMaxFileSize
	}
	if o.MaxTotalSize <= 0 {
		o.MaxTotalSize = DefaultMaxTotalSize
	}
	return o
}

// RefusedError is a commit that Render refuses whole: a file or document
// that cannot be read as an object, an object that cannot be identified or
// exist (a kind its group lacks, an invalid name), one defined twice, or a
// workload resource in error. Rendering the rest would leave these objects
// out of every snapshot and so delete them from the fleet; a commit is
// rendered whole or not at all.
type RefusedError struct {
	// Errors are the problems that refuse the commit, by file and line.
	Errors []ManifestError
	// Others are the problems found besides, each of which alone would only
	// have left its fleet object out (Content.Errors), for validate to list
	// everything at once.
	Others []ManifestError
}

// maxRefusalsInMessage bounds Error(): a status file records it.
const maxRefusalsInMessage = 5

func (e *RefusedError) Error() string {
	if len(e.Errors) == 1 {
		return e.Errors[0].Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d manifest errors: ", len(e.Errors))
	for i, m := range e.Errors {
		if i == maxRefusalsInMessage {
			fmt.Fprintf(&b, "; and %d more (gitfleet validate lists them)", len(e.Errors)-i)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(m.Error())
	}
	return b.String()
}

// Problems are every problem found, refusing or not, by file and line.
func (e *RefusedError) Problems() []ManifestError {
	all := append(append([]ManifestError{}, e.Errors...), e.Others...)
	sortErrors(all)
	return all
}

// RefusalProblems lists the manifest problems of a failed Render: a
// RefusedError's Errors, or the one *ManifestError of a failed kustomize
// build; nil for any other error (an unreadable repository).
func RefusalProblems(err error) []ManifestError {
	var refused *RefusedError
	if errors.As(err, &refused) {
		return refused.Errors
	}
	var one *ManifestError
	if errors.As(err, &one) {
		return []ManifestError{*one}
	}
	return nil
}
