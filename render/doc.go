// Package render turns one commit (or a working tree) of a fleet repository
// into hub content: member clusters, placements, staged update strategies
// and runs (decoded strictly, defaulted and validated), and the workload
// resources that placements select. It also owns placement resource
// selection and the snapshot hash, so the hub, the snapshotter and
// `gitfleet validate` share one definition of "what a placement selects".
//
// Two layouts are supported (DESIGN.md, "The fleet repository"):
//
//   - Path holds a kustomization.yaml (or .yml, or Kustomization): it is
//     built with kustomize's krusty on an in-memory copy of the commit, root-
//     only load restrictions and no plugins. Remote bases are refused before
//     kustomize sees them, so rendering never touches the network.
//   - Otherwise every *.yaml, *.yml and *.json file below Path is read
//     (multi-document YAML), except the approvals/ and status/ folders
//     directly under Path and hidden files and folders.
//
// A problem with one object or file is collected in Content.Errors and that
// object is left out; everything else still renders. The caller keeps the
// last good version of what was left out (see Content.Withheld). Render
// fails as a whole only when nothing trustworthy can be produced (an
// unreadable repository, a failed kustomize build, the total size limit).
package render
