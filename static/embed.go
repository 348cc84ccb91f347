// Package static holds the console's browser assets — vendored htmx and
// uPlot (version in the file name, so an upgrade is a visible rename; uPlot's
// MIT licence travels with it) and our hand-written CSS and JS — embedded so
// the binary needs no files and no CDN.
package static

import "embed"

// FS holds the assets, served under /static/.
//
//go:embed *.css *.js *.LICENSE.txt
var FS embed.FS

// HTMX is the vendored htmx file's name; views link it through this constant
// so an upgrade changes one line.
const HTMX = "htmx-2.0.11.min.js"

// UPlotJS and UPlotCSS are the vendored uPlot chart library (npm "uplot",
// dist/uPlot.iife.min.js and dist/uPlot.min.css), used by the task page.
const (
	UPlotJS  = "uPlot-1.6.32.iife.min.js"
	UPlotCSS = "uPlot-1.6.32.min.css"
)
