// Package sizecheck holds only a test: it keeps the module's non-test Go
// files under MaxFileLines lines and their functions under MaxFuncLines
// (docs/development.md §2: small files and functions).
package sizecheck

// The limits the test enforces, counted in source lines. A function is
// counted from its func keyword to its closing brace, without its doc
// comment.
const (
	MaxFileLines = 500
	MaxFuncLines = 80
)
