// Package manifestcorpus reads the bad-input corpus of render
// (render/testdata/corpus): commits a careless person could push, each a
// txtar archive of the files below --path with what gitfleet must say of
// them. The render, validate, plan and serve tests all run it, so the
// reader and every command that uses it agree on every case.
//
// An archive's comment holds one directive a line:
//
//	want FILE:LINE: TEXT   a problem the commit is refused for: its
//	                       location and a part of its message (refused/)
//	object KIND NS/NAME    an object the commit must render (accepted/);
//	                       NAME alone for a cluster-scoped one
//	max-file-size N        render's MaxFileSize for this case
//
// Other comment lines describe the case.
package manifestcorpus

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/tools/txtar"
)

// Case is one commit of the corpus.
type Case struct {
	Name string
	// Files are the tree's files, by slash-separated path.
	Files map[string][]byte
	// Want are the refused commit's problems: "FILE:LINE: TEXT".
	Want []Problem
	// Objects are what an accepted commit renders: "KIND NS/NAME".
	Objects []string
	// MaxFileSize is render's limit for the case, 0 for the default.
	MaxFileSize int64
}

// Problem is one expected refusal.
type Problem struct {
	File string
	Line int
	Text string
}

// Location is FILE:LINE, as gitfleet prints it (FILE alone for line 0).
func (p Problem) Location() string {
	if p.Line == 0 {
		return p.File
	}
	return fmt.Sprintf("%s:%d", p.File, p.Line)
}

// Load reads every archive (*.txtar) of dir, by name.
func Load(dir string) ([]Case, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.txtar"))
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []Case
	for _, n := range names {
		a, err := txtar.ParseFile(n)
		if err != nil {
			return nil, err
		}
		c, err := parse(strings.TrimSuffix(filepath.Base(n), ".txtar"), a)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		out = append(out, c)
	}
	return out, nil
}

func parse(name string, a *txtar.Archive) (Case, error) {
	c := Case{Name: name, Files: map[string][]byte{}}
	for _, line := range strings.Split(string(a.Comment), "\n") {
		directive, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
		switch directive {
		case "want":
			loc, text, ok := strings.Cut(rest, ": ")
			if !ok {
				return c, fmt.Errorf("want %q: need FILE:LINE: TEXT", rest)
			}
			p := Problem{File: loc, Text: text}
			if f, l, ok := strings.Cut(loc, ":"); ok {
				n, err := strconv.Atoi(l)
				if err != nil {
					return c, fmt.Errorf("want %q: line: %w", rest, err)
				}
				p.File, p.Line = f, n
			}
			c.Want = append(c.Want, p)
		case "object":
			c.Objects = append(c.Objects, rest)
		case "max-file-size":
			n, err := strconv.ParseInt(rest, 10, 64)
			if err != nil {
				return c, fmt.Errorf("max-file-size: %w", err)
			}
			c.MaxFileSize = n
		}
	}
	for _, f := range a.Files {
		c.Files[f.Name] = decodeEscapes(f.Data)
	}
	if len(c.Want) == 0 && len(c.Objects) == 0 {
		return c, fmt.Errorf("no want or object directive")
	}
	return c, nil
}

// decodeEscapes turns the escapes a text archive cannot hold as bytes
// into them: \r before a newline is written as "<CR>", a byte as
// "<0xNN>", and "<NOEOL>" on the last line drops the newline that a txtar
// file always ends with. Everything else is taken as is.
func decodeEscapes(b []byte) []byte {
	s := strings.ReplaceAll(string(b), "<CR>", "\r")
	s = strings.Replace(s, "<NOEOL>\n", "", 1)
	var out strings.Builder
	for {
		i := strings.Index(s, "<0x")
		if i < 0 || i+6 > len(s) || s[i+5] != '>' {
			out.WriteString(s)
			return []byte(out.String())
		}
		v, err := strconv.ParseUint(s[i+3:i+5], 16, 8)
		if err != nil {
			out.WriteString(s[:i+3])
			s = s[i+3:]
			continue
		}
		out.WriteString(s[:i])
		out.WriteByte(byte(v))
		s = s[i+6:]
	}
}

// WriteTree writes a case's files below dir.
func (c Case) WriteTree(dir string) error {
	for name, data := range c.Files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
