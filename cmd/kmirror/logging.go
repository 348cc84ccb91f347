package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
)

// logFlags are the logging flags of the commands that run replication
// (serve, run, demo): text for people, JSON for log collectors.
type logFlags struct {
	format string
	level  slog.Level
}

// add registers --log-format and --log-level on fs with the given default
// level.
func (l *logFlags) add(fs *flag.FlagSet, level slog.Level) {
	l.level = level
	fs.StringVar(&l.format, "log-format", "text", "log format: text (key=value lines) or json (one object per line)")
	fs.TextVar(&l.level, "log-level", level, "log level: debug, info, warn or error")
}

// check reports a format this binary does not know, before anything starts.
func (l logFlags) check() error {
	switch l.format {
	case "text", "json":
		return nil
	}
	return fmt.Errorf("--log-format %q: use text or json", l.format)
}

// logger writes to w in the chosen format and level.
func (l logFlags) logger(w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: l.level}
	if l.format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
