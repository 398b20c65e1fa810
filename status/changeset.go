package status

import (
	"context"
	"sort"
)

// Changeset is one flush worth of file changes, shaped like gitsource.Change
// so the Git loop can pass it straight through. Deletes apply before Writes.
type Changeset struct {
	// Writes maps slash-separated repository paths to new file content.
	Writes map[string][]byte
	// Deletes lists files to remove, sorted.
	Deletes []string
}

// Empty reports whether the changeset changes nothing.
func (c Changeset) Empty() bool { return len(c.Writes) == 0 && len(c.Deletes) == 0 }

// WritePaths returns the written paths, sorted.
func (c Changeset) WritePaths() []string {
	out := make([]string, 0, len(c.Writes))
	for p := range c.Writes {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// Committer makes a changeset durable: in `serve`, one Git commit pushed to
// the status branch (the Git loop's push step); Dir writes the files.
// urgent says a side effect is waiting for it.
type Committer interface {
	Commit(ctx context.Context, changes Changeset, message string, urgent bool) error
}

// Files reads the tree TreeStore loads from: the status branch's files.
type Files interface {
	// Read returns a file's content.
	Read(path string) ([]byte, error)
	// List returns every file below the folder prefix (recursively), as
	// slash-separated repository paths; a missing folder lists nothing.
	List(prefix string) ([]string, error)
}
