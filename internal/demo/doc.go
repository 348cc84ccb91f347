// Package demo is `kmirror demo` and `kmirror serve --demo`: two embedded
// kfake clusters, load on the first, the demo task replicating it to the
// second through the same engine real tasks use, and (for `kmirror demo`)
// every record verified with internal/e2e.
package demo
