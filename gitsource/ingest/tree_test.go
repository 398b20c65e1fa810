package ingest_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitfleet/gitfleet/gitsource"
	"github.com/gitfleet/gitfleet/gitsource/ingest"
	"github.com/gitfleet/gitfleet/internal/testing/gittest"
	"github.com/gitfleet/gitfleet/render"
)

// One policy for hostile files: a working tree (what validate reads) and
// the same tree committed (what simulate and serve read) render to the
// same objects and the same errors, each naming its file. A link that stays
// inside the repository is followed and UTF-16 with a byte-order mark is
// read; a link that leaves the repository, dangles or loops, invalid UTF-8
// and NUL bytes refuse the commit whole.
func TestHostileFilesAreReadTheSameFromAWorkingTreeAndACommit(t *testing.T) {
	gittest.Require(t, "git")
	cm := func(name string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: n\n", name)
	}
	utf16 := []byte{0xFF, 0xFE}
	for _, r := range cm("from-utf16") {
		utf16 = append(utf16, byte(r), 0)
	}
	// tree makes a working tree with fill and commits it, and returns both.
	tree := func(fill func(write func(string, []byte), link func(string, string))) map[string]fs.FS {
		work := t.TempDir()
		write := func(name string, data []byte) {
			p := filepath.Join(work, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		link := func(name, target string) {
			if err := os.Symlink(target, filepath.Join(work, name)); err != nil {
				t.Fatal(err)
			}
		}
		fill(write, link)
		gittest.Must(t, work, "init", "-q", "-b", "main")
		gittest.Must(t, work, "add", "-A")
		gittest.Must(t, work, "commit", "-q", "-m", "hostile")
		src, err := gitsource.Open(context.Background(), gitsource.Config{URL: work, CacheDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		head := plumbing.NewHash(gittest.Must(t, work, "rev-parse", "HEAD"))
		committed, err := ingest.CommitFS(context.Background(), src, head)
		if err != nil {
			t.Fatal(err)
		}
		return map[string]fs.FS{"working tree": os.DirFS(work), "commit": committed}
	}
	good := func(write func(string, []byte), link func(string, string)) {
		write("real/target.yaml.txt", []byte(cm("linked")))
		link("inside.yaml", "real/target.yaml.txt")
		write("utf16.yaml", utf16)
		write("plain.yaml", []byte(cm("plain")))
	}
	hostile := func(write func(string, []byte), link func(string, string)) {
		good(write, link)
		link("passwd.yaml", "/etc/passwd")
		link("escape.yaml", "../../outside.yaml")
		link("dangling.yaml", "nothing-here.yaml")
		link("loop-a.yaml", "loop-b.yaml")
		link("loop-b.yaml", "loop-a.yaml")
		write("latin1.yaml", []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: caf\xe9\n"))
		write("nul.yaml", []byte("apiVersion: v1\x00\n"))
	}

	for _, tc := range []struct {
		name string
		fill func(write func(string, []byte), link func(string, string))
		want []string
	}{
		{"good", good, []string{"object from-utf16", "object linked", "object plain"}},
		{"hostile", hostile, []string{
			`dangling.yaml: symbolic link to "nothing-here.yaml" dangles`,
			`escape.yaml: symbolic link to "../../outside.yaml" leaves the repository`,
			"latin1.yaml:4: invalid UTF-8",
			"loop-a.yaml: symbolic link loop",
			"loop-b.yaml: symbolic link loop",
			"nul.yaml:1: NUL byte at offset 14",
			`passwd.yaml: symbolic link to "/etc/passwd" leaves the repository`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string][]string{}
			for name, fsys := range tree(tc.fill) {
				c, err := render.Render(fsys, render.Options{})
				var lines []string
				if problems := render.RefusalProblems(err); problems != nil {
					for _, e := range problems {
						lines = append(lines, e.Error())
					}
				} else if err != nil {
					t.Fatalf("%s: %v", name, err)
				} else {
					for _, r := range c.Resources {
						lines = append(lines, "object "+r.GetName())
					}
				}
				slices.Sort(lines)
				got[name] = lines
			}
			if !slices.Equal(got["working tree"], got["commit"]) {
				t.Errorf("the working tree and the commit render differently:\n--- working tree\n%s\n--- commit\n%s",
					strings.Join(got["working tree"], "\n"), strings.Join(got["commit"], "\n"))
			}
			lines := got["commit"]
			if len(lines) != len(tc.want) {
				t.Errorf("got:\n%s\nwant %d lines", strings.Join(lines, "\n"), len(tc.want))
			}
			for i := range min(len(lines), len(tc.want)) {
				if !strings.HasPrefix(lines[i], tc.want[i]) {
					t.Errorf("line %d: %q, want it to start with %q", i, lines[i], tc.want[i])
				}
			}
			if all := strings.Join(lines, "\n"); strings.Contains(all, "root:") {
				t.Errorf("the content of /etc/passwd was read:\n%s", all)
			}
		})
	}
}
