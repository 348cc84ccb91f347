package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

func TestLogFormatIsCheckedByEveryCommandThatLogs(t *testing.T) {
	for _, cmd := range []string{"serve", "run", "demo"} {
		t.Run(cmd, func(t *testing.T) {
			args := []string{cmd, "--log-format", "xml"}
			if cmd == "run" {
				args = append(args, "-f", "spec.json")
			}
			_, err := runCmd(args...)
			if err == nil || !strings.Contains(err.Error(), "--log-format") {
				t.Fatalf("err = %v, want one naming --log-format", err)
			}
		})
	}
}

func TestLoggerFormats(t *testing.T) {
	cases := []struct {
		format string
		parse  func(line []byte) (map[string]any, error)
	}{
		{"json", func(line []byte) (map[string]any, error) {
			var m map[string]any
			err := json.Unmarshal(line, &m)
			return m, err
		}},
		{"text", func(line []byte) (map[string]any, error) {
			m := map[string]any{}
			for _, f := range strings.Fields(string(line)) {
				k, v, _ := strings.Cut(f, "=")
				m[k] = v
			}
			return m, nil
		}},
	}
	for _, tc := range cases {
		t.Run(tc.format, func(t *testing.T) {
			var buf bytes.Buffer
			lf := logFlags{format: tc.format, level: slog.LevelInfo}
			if err := lf.check(); err != nil {
				t.Fatal(err)
			}
			log := lf.logger(&buf)
			log.Debug("hidden")
			log.Info("shown", "task", "t1")
			m, err := tc.parse(bytes.TrimSpace(buf.Bytes()))
			if err != nil {
				t.Fatalf("%v: %s", err, buf.String())
			}
			if m["msg"] != "shown" || m["task"] != "t1" || strings.Contains(buf.String(), "hidden") {
				t.Fatalf("logged %q", buf.String())
			}
		})
	}
}
