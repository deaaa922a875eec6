// Package archtest holds the tests that keep the module's architecture:
// the import direction of the house style (style.md §2, as refined by
// issue 8) and the client's portability. It has no code of its own.
package archtest
