// Package web is gitfleet's web view of the fleet: the runs with their
// stages as columns and clusters as tiles, the gates between stages, the
// clusters and what each snapshot changed. It reads the status tree (the
// same files `gitfleet get` reads) and says what a run is doing through
// reconciler/runview, so the pages agree with the printers and the status
// commit subjects.
//
// The pages are server-rendered (html/template) with a little JavaScript
// for live updates (Server-Sent Events) and keyboard navigation; every
// asset is embedded, nothing is fetched from elsewhere, and a
// Content-Security-Policy forbids inline script. The view is read-only:
// approving stays a commit or a merge, and the pages say how.
package web
