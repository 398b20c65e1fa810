package render

import (
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"unicode/utf16"
	"unicode/utf8"
)

// The one policy for hostile files, the same in validate (a working tree),
// simulate and serve (a commit): what a file is, not where it is read
// from, decides.

// resolveLink follows the symbolic link at name to the regular file it
// ends at. A link may point anywhere inside the repository; one that
// leaves it (an absolute target, or "..": /etc/passwd, /dev/zero), dangles,
// loops or ends at a folder is an error naming the link.
func resolveLink(fsys fs.FS, name string) (string, *ManifestError) {
	fail := func(format string, args ...any) (string, *ManifestError) {
		return "", &ManifestError{File: name, Message: fmt.Sprintf(format, args...)}
	}
	cur := name
	for range MaxLinkHops {
		target, err := fs.ReadLink(fsys, cur)
		if err != nil {
			return fail("symbolic link cannot be read: %v", err)
		}
		if path.IsAbs(target) {
			return fail("symbolic link to %q leaves the repository; only links to files inside it are followed", target)
		}
		next := path.Join(path.Dir(cur), target)
		if !fs.ValidPath(next) {
			return fail("symbolic link to %q leaves the repository; only links to files inside it are followed", target)
		}
		info, err := fs.Lstat(fsys, next)
		if err != nil {
			return fail("symbolic link to %q dangles: %s does not exist", target, next)
		}
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			cur = next
		case info.Mode().IsRegular():
			return next, nil
		default:
			return fail("symbolic link to %q points at a folder or special file; only links to files are followed", target)
		}
	}
	return fail("symbolic link loop (more than %d links)", MaxLinkHops)
}

// asText checks that a manifest or kustomization file is text as YAML
// allows it — UTF-8, or UTF-16 with a byte-order mark, which is converted
// to UTF-8 here so kustomize reads it as the plain reader does — and
// returns it as UTF-8. Invalid UTF-8, NUL bytes or a binary file with a
// .yaml name are an error naming the file.
func asText(name string, data []byte) ([]byte, *ManifestError) {
	switch {
	case bytes.HasPrefix(data, []byte{0xFE, 0xFF}):
		data = utf16ToUTF8(data[2:], true)
	case bytes.HasPrefix(data, []byte{0xFF, 0xFE}):
		data = utf16ToUTF8(data[2:], false)
	}
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return nil, &ManifestError{File: name, Line: bytes.Count(data[:i], []byte("\n")) + 1, Message: fmt.Sprintf("NUL byte at offset %d: not a text file (YAML must be UTF-8, or UTF-16 with a byte-order mark)", i)}
	}
	if !utf8.Valid(data) {
		off := 0
		for off < len(data) {
			r, size := utf8.DecodeRune(data[off:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			off += size
		}
		return nil, &ManifestError{File: name, Line: bytes.Count(data[:off], []byte("\n")) + 1,
			Message: fmt.Sprintf("invalid UTF-8 at byte %d (YAML must be UTF-8, or UTF-16 with a byte-order mark)", off)}
	}
	return data, nil
}

// utf16ToUTF8 decodes UTF-16 (big or little endian) without its mark; an
// odd trailing byte becomes U+FFFD, as does an unpaired surrogate.
func utf16ToUTF8(b []byte, bigEndian bool) []byte {
	units := make([]uint16, 0, len(b)/2)
	for i := 0; i+1 < len(b); i += 2 {
		if bigEndian {
			units = append(units, uint16(b[i])<<8|uint16(b[i+1]))
		} else {
			units = append(units, uint16(b[i+1])<<8|uint16(b[i]))
		}
	}
	s := string(utf16.Decode(units))
	if len(b)%2 == 1 {
		s += "\uFFFD"
	}
	return []byte(s)
}
