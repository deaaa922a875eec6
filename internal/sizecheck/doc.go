// Package sizecheck holds only a test: it points out, without failing,
// the module's non-test Go files longer than WarnFileLines lines and
// functions longer than WarnFuncLines (docs/development.md §2). A file is
// sized by what belongs together; the note is only a prompt to think
// whether a long file or function holds two things.
package sizecheck

// The sizes the test reports, counted in source lines. A function is
// counted from its func keyword to its closing brace, without its doc
// comment.
const (
	WarnFileLines = 900
	WarnFuncLines = 120
)
