// Package doccheck keeps the repository's references to its documentation
// true: a checker and a test that runs it over every file. Every cited document must exist in the
// repository (nothing may point at specifications kept outside it), and
// every citation of a section
// number of a document, and every link to a heading anchor, must
// name a section or heading that the document has (docs/development.md §2).
package doccheck
