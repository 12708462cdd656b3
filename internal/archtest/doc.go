// Package archtest holds the checks that keep the repository's map true:
// its tests, and nothing else, are the package.
//
//   - imports_test.go: which package of the module may import which. The
//     rules are a table there; a wrong arrow — a package importing one it
//     may not, a package missing from the table — fails the test.
//     ARCHITECTURE.md draws the same map in prose.
//   - links_test.go: every relative link in a Markdown file of the
//     repository resolves, and every docs/… or testdata/… path a comment
//     or a document names exists.
//   - apidocs_test.go: the exported docs of the library's face (the root
//     package and the packages its API names) say what a name is, never
//     which file holds it.
//   - map_test.go: every file ARCHITECTURE.md names is in a package the
//     line names (or the root), and every function it places in a file is
//     declared there; its "Where to change X" table keeps a row for each
//     change that once touched files the page did not name (a provider's
//     wording, a recovery action, a frame's way to the client, a store
//     backend, a new name), and every path and Go name a row gives exists
//     in a package the row names (TestWhereToChangeX).
//   - funclen_test.go: no function of the product code is longer than
//     the budget (80 lines) but the listed few, which may not grow.
//
// They read the source tree as text (go/parser, no build), so they run in
// well under a second.
package archtest
