// Package archtest holds the tests that keep the module's architecture:
// the import direction of docs/development.md §2 and the client's
// portability. It has no code of its own.
package archtest
