// Package static holds the console's browser assets — vendored htmx (version
// in the file name, so an upgrade is a visible rename) and our hand-written
// CSS and JS — embedded so the binary needs no files and no CDN.
package static

import "embed"

// FS holds the assets, served under /static/.
//
//go:embed *.css *.js
var FS embed.FS

// HTMX is the vendored htmx file's name; views link it through this constant
// so an upgrade changes one line.
const HTMX = "htmx-2.0.11.min.js"
