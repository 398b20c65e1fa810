package render

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gitfleet/gitfleet/internal/testing/manifestcorpus"
)

// corpusFS is a corpus case's tree.
func corpusFS(c manifestcorpus.Case) fstest.MapFS {
	fsys := fstest.MapFS{}
	for name, data := range c.Files {
		fsys[name] = &fstest.MapFile{Data: data}
	}
	return fsys
}

func loadCorpus(t *testing.T, dir string) []manifestcorpus.Case {
	t.Helper()
	cases, err := manifestcorpus.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) == 0 {
		t.Fatalf("no case in %s", dir)
	}
	return cases
}

// TestCorpusRefusesEveryBadCommitWhole renders every commit of the bad-input
// corpus: each is refused whole (no content, so no snapshot), naming every
// problem the case expects at its file and line.
func TestCorpusRefusesEveryBadCommitWhole(t *testing.T) {
	cases := loadCorpus(t, "testdata/corpus/refused")
	if len(cases) < 60 {
		t.Errorf("the corpus has %d refused cases; the issue asks for at least 60", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			c, err := Render(corpusFS(tc), Options{MaxFileSize: tc.MaxFileSize})
			if err == nil {
				t.Fatalf("rendered %d resources, %d errors: %v; want the commit refused", len(c.Resources), len(c.Errors), c.Errors)
			}
			got := RefusalProblems(err)
			if len(got) == 0 {
				t.Fatalf("error %v names no manifest problem", err)
			}
			lines := make([]string, len(got))
			for i, p := range got {
				lines[i] = p.Error()
				if p.File == "" || p.Line == 0 {
					t.Errorf("%q names no file and line", lines[i])
				}
			}
			for _, w := range tc.Want {
				if !containsProblem(lines, w) {
					t.Errorf("no problem %s: %s among\n  %s", w.Location(), w.Text, strings.Join(lines, "\n  "))
				}
			}
			if len(got) != len(tc.Want) {
				t.Errorf("%d problems, the case expects %d:\n  %s", len(got), len(tc.Want), strings.Join(lines, "\n  "))
			}
		})
	}
}

// containsProblem reports whether a line starts with the problem's
// location (followed by ": ") and contains its text.
func containsProblem(lines []string, w manifestcorpus.Problem) bool {
	for _, l := range lines {
		if strings.HasPrefix(l, w.Location()+": ") && strings.Contains(l, w.Text) {
			return true
		}
	}
	return false
}

// TestCorpusAcceptsOddButValidCommits: what kubectl reads (a byte-order
// mark, CRLF, UTF-16, empty documents, custom kinds) renders, every object.
func TestCorpusAcceptsOddButValidCommits(t *testing.T) {
	for _, tc := range loadCorpus(t, "testdata/corpus/accepted") {
		t.Run(tc.Name, func(t *testing.T) {
			c, err := Render(corpusFS(tc), Options{MaxFileSize: tc.MaxFileSize})
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Errors) > 0 {
				t.Fatalf("errors: %v", c.Errors)
			}
			var got []string
			for ref := range c.Sources {
				got = append(got, strings.TrimSpace(ref.Kind+" "+nsName(ref)))
			}
			for _, want := range tc.Objects {
				if !contains(got, want) {
					t.Errorf("%s not rendered; got %v", want, got)
				}
			}
			if len(got) != len(tc.Objects) {
				t.Errorf("rendered %v, want %v", got, tc.Objects)
			}
		})
	}
}

func nsName(r ObjectRef) string {
	if r.Namespace == "" {
		return r.Name
	}
	return r.Namespace + "/" + r.Name
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
