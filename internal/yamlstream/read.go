package yamlstream

import (
	"bytes"
	"regexp"
)

// ReadJSON is WriteJSON the other way round: it converts a document that
// WriteJSON printed back to JSON text (keys in the document's order), or
// reports false for anything else. It knows only the block YAML that
// WriteJSON prints — mappings and lists indented as go-yaml v2 indents
// them, plain, single- and double-quoted scalars folded at spaces, {} and
// [] — and no comments, anchors, tags, flow collections, block scalars or
// escapes beyond \", \\ and "\ ".
//
// A plain scalar is a number when it reads as a JSON number, true, false or
// null when it is that word, else a string: what go-yaml makes of the
// plain scalars WriteJSON prints, since WriteJSON quotes any string that
// would read back as something else. A document a person wrote may use
// plain scalars that go-yaml reads differently ("yes", "0x1F"), so the
// caller must check that what it decoded prints back as the document it
// read before trusting it (status.Decode does), and read the document with
// a full YAML parser when it does not.
//
// It exists because go-yaml's parser is most of the cost of reading the
// status tree: 10,000 bindings and 2,000 parts at every start.
func ReadJSON(doc []byte) ([]byte, bool) {
	if len(doc) == 0 || doc[len(doc)-1] != '\n' || bytes.IndexByte(doc, '\t') >= 0 || bytes.IndexByte(doc, '\r') >= 0 {
		return nil, false
	}
	if string(doc) == "{}\n" {
		return []byte("{}"), true
	}
	r := &reader{lines: bytes.Split(doc[:len(doc)-1], []byte("\n")), out: make([]byte, 0, len(doc)+len(doc)/4)}
	if len(r.lines) == 0 || indentOf(r.lines[0]) != 0 {
		return nil, false
	}
	r.mapping(0, r.lines[0])
	if r.failed || r.i != len(r.lines) {
		return nil, false
	}
	return r.out, true
}

type reader struct {
	lines  [][]byte
	i      int // the line being read
	out    []byte
	failed bool
}

func indentOf(line []byte) int {
	n := 0
	for n < len(line) && line[n] == ' ' {
		n++
	}
	return n
}

// isItem reports whether content (a line without its indentation) starts
// a list item.
func isItem(content []byte) bool {
	return len(content) > 0 && content[0] == '-' && (len(content) == 1 || content[1] == ' ')
}

// mapping reads a block mapping whose keys are at column n; first is the
// content of its first entry, which may follow a list item's "- " on the
// line r.i.
func (r *reader) mapping(n int, first []byte) {
	r.out = append(r.out, '{')
	content := first
	for entry := 0; !r.failed; entry++ {
		if entry > 0 {
			if r.i >= len(r.lines) || indentOf(r.lines[r.i]) != n || isItem(r.lines[r.i][n:]) {
				break
			}
			content = r.lines[r.i][n:]
			r.out = append(r.out, ',')
		}
		rest := r.key(content)
		if r.failed {
			return
		}
		r.out = append(r.out, ':')
		r.value(rest, n)
	}
	r.out = append(r.out, '}')
}

// key writes the key that starts content as a JSON string and returns
// what follows its colon.
func (r *reader) key(content []byte) []byte {
	if len(content) == 0 {
		r.failed = true
		return nil
	}
	var rest []byte
	switch content[0] {
	case '\'', '"':
		var ok bool
		rest, ok = r.quoted(content, -1)
		if !ok || len(rest) == 0 || rest[0] != ':' {
			r.failed = true
			return nil
		}
		return rest[1:]
	}
	end := bytes.Index(content, []byte(": "))
	if end < 0 {
		if content[len(content)-1] != ':' {
			r.failed = true
			return nil
		}
		end = len(content) - 1
	}
	r.plainString(content[:end])
	return content[end+1:]
}

// value reads what follows "key:" in a mapping at column n (rest, the
// remainder of the line r.i) or follows "-" of a list item at column n.
func (r *reader) value(rest []byte, n int) {
	switch {
	case len(rest) == 0:
		// A mapping or a list on the next lines; go-yaml writes a list in a
		// mapping at the mapping's column.
		r.i++
		if r.i >= len(r.lines) {
			r.failed = true
			return
		}
		line := r.lines[r.i]
		switch in := indentOf(line); {
		case in == n && isItem(line[n:]):
			r.list(n)
		case in == n+2 && !isItem(line[in:]):
			r.mapping(n+2, line[in:])
		default:
			r.failed = true
		}
		return
	case rest[0] != ' ':
		r.failed = true
		return
	}
	rest = rest[1:]
	if len(rest) == 0 {
		r.failed = true
		return
	}
	switch string(rest) {
	case "{}", "[]":
		r.out = append(r.out, rest...)
		r.i++
		return
	}
	if rest[0] == '\'' || rest[0] == '"' {
		tail, ok := r.quoted(rest, n)
		if !ok || len(tail) > 0 {
			r.failed = true
		}
		r.i++
		return
	}
	// A plain scalar, folded onto the deeper lines that follow: each line
	// break reads as a space.
	text := rest
	for r.i+1 < len(r.lines) && indentOf(r.lines[r.i+1]) > n {
		if len(text) == len(rest) {
			text = bytes.Clone(rest)
		}
		r.i++
		line := r.lines[r.i]
		text = append(append(text, ' '), line[indentOf(line):]...)
	}
	r.i++
	r.plain(text)
}

// list reads the items of a block list whose dashes are at column n.
func (r *reader) list(n int) {
	r.out = append(r.out, '[')
	for item := 0; !r.failed && r.i < len(r.lines); item++ {
		line := r.lines[r.i]
		if indentOf(line) != n || !isItem(line[n:]) {
			break
		}
		if item > 0 {
			r.out = append(r.out, ',')
		}
		rest := line[n+1:]
		if len(rest) > 1 && rest[1] != '\'' && rest[1] != '"' && rest[1] != '{' && rest[1] != '[' && isKeyed(rest[1:]) {
			r.mapping(n+2, rest[1:])
			continue
		}
		if len(rest) > 1 && (rest[1] == '\'' || rest[1] == '"') {
			// A quoted key of a mapping, or a quoted scalar: read it on
			// the side to see what follows it.
			if tail, ok := (&reader{}).quoted(rest[1:], -1); ok && len(tail) > 0 && tail[0] == ':' {
				r.mapping(n+2, rest[1:])
				continue
			}
		}
		r.value(rest, n)
	}
	r.out = append(r.out, ']')
}

// isKeyed reports whether a list item's content starts with a plain key.
func isKeyed(content []byte) bool {
	return bytes.Contains(content, []byte(": ")) || content[len(content)-1] == ':'
}

// quoted writes the quoted scalar that starts s as a JSON string and
// returns what follows it on its last line. n is the column of the
// mapping or list it is a value of, whose deeper lines continue it; -1
// for a key, which never folds.
func (r *reader) quoted(s []byte, n int) ([]byte, bool) {
	q := s[0]
	var text []byte
	line := s[1:]
	for {
		i := 0
		for ; i < len(line); i++ {
			c := line[i]
			switch {
			case c == q && q == '\'':
				if i+1 < len(line) && line[i+1] == '\'' {
					text = append(text, '\'')
					i++
					continue
				}
			case c == q:
			case c == '\\' && q == '"':
				if i+1 >= len(line) || (line[i+1] != '"' && line[i+1] != '\\' && line[i+1] != ' ') {
					return nil, false
				}
				i++
				text = append(text, line[i])
				continue
			default:
				text = append(text, c)
				continue
			}
			r.str(text)
			return line[i+1:], true
		}
		// The scalar goes on: folded, its line break reads as a space.
		if n < 0 || r.i+1 >= len(r.lines) || indentOf(r.lines[r.i+1]) <= n {
			return nil, false
		}
		r.i++
		line = r.lines[r.i][indentOf(r.lines[r.i]):]
		text = append(text, ' ')
	}
}

// jsonNumber is the grammar of a JSON number.
var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?$`)

// plain writes a plain scalar: a number, a boolean, null or a string.
func (r *reader) plain(s []byte) {
	switch string(s) {
	case "true", "false", "null":
		r.out = append(r.out, s...)
		return
	}
	if c := s[0]; (c == '-' || c >= '0' && c <= '9') && jsonNumber.Match(s) {
		r.out = append(r.out, s...)
		return
	}
	r.plainString(s)
}

// plainString writes a plain scalar that is a string, which it must be
// printed as: WriteJSON prints no other string plain. "<<" is go-yaml's
// merge key, which WriteJSON does not mean.
func (r *reader) plainString(s []byte) {
	if len(s) == 0 || string(s) == "<<" || !plainAllowed(string(s)) || !readsAsString(string(s)) {
		r.failed = true
		return
	}
	r.str(s)
}

// str writes printable ASCII text as a JSON string.
func (r *reader) str(s []byte) {
	r.out = append(r.out, '"')
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			r.out = append(r.out, '\\', c)
		case c < 0x20 || c >= 0x7f:
			r.failed = true
			return
		default:
			r.out = append(r.out, c)
		}
	}
	r.out = append(r.out, '"')
}
