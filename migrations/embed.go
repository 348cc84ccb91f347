// Package migrations holds kmirror's numbered SQL migrations, embedded so the
// binary carries its own schema. Files are named NNNN_what.up.sql and are
// applied in version order by internal/store; a file, once released, is never
// edited: a change is a new file with the next number.
package migrations

import "embed"

// FS holds every *.sql file of this directory.
//
//go:embed *.sql
var FS embed.FS
