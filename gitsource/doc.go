// Package gitsource is the Git side of gitfleet's GitOps loop.
//
// A [Source] keeps a bare clone of the fleet repository in a cache directory,
// fetches the tracked branch, walks its first-parent history, reads commit
// trees with size bounds, and commits+pushes gitfleet's own changes (status
// files, approval requests) with fetch-and-reapply conflict handling. It never
// force-pushes and never writes outside an allow-list of path prefixes.
//
// A [Watcher] turns the ways a repository can change — a poll interval, a
// forge webhook ([Webhook]) and filesystem events on a local repository — into
// one coalesced "check now" signal; the consumer (the gitops daemon) fetches
// on it and retries failed fetches with apimachinery's exponential
// wait.Backoff.
//
// Credentials ([Auth]) are read from files or environment variables at each
// network operation, so rotated secrets are picked up, and they never appear
// in logs or errors: URLs are shown through [RedactURL] and every error that
// leaves the package is an [*Error] whose message has been scrubbed.
//
// go-git storage is not safe for concurrent use, so a Source serialises its
// operations; the commits and trees it returns read through the same lock and
// may be used from any goroutine.
package gitsource
