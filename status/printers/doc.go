// Package printers renders fleet objects the way kubectl shows KubeFleet's:
// tables with KubeFleet's printer columns (`gitfleet get`), `kubectl
// describe`-style text (`gitfleet describe`) and YAML streams (`-o yaml`).
//
// Every function takes the current time instead of reading the clock, so the
// AGE column — and the golden files under testdata/ — are deterministic.
//
// Columns beyond KubeFleet's (documented per table) appear only with -o
// wide, so default output matches what KubeFleet users see and what the
// docs (seeds) show.
package printers
