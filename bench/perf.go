package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// runTool runs a Kafka tool's main class to completion and returns its
// output, CPU seconds and peak RSS (whole process, JVM start included).
func (h *harness) runTool(ctx context.Context, name, class string, args ...string) (out string, cpu float64, rssMB float64, err error) {
	log4j := filepath.Join(h.work, "log4j2-tools.properties")
	if err := os.WriteFile(log4j, []byte(strings.ReplaceAll(log4j2Properties, "rootLogger.level = INFO", "rootLogger.level = WARN")), 0o600); err != nil {
		return "", 0, 0, err
	}
	// The perf scripts' heap (kafka-producer-perf-test.sh and friends).
	argv := append([]string{"-Xmx512M"}, h.jvmFlags(log4j)...)
	argv = append(argv, class)
	argv = append(argv, args...)
	cmd := exec.CommandContext(ctx, h.java, argv...)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	err = cmd.Run()
	_ = os.WriteFile(filepath.Join(h.work, name+".log"), buf.Bytes(), 0o644)
	if err != nil {
		return buf.String(), 0, 0, fmt.Errorf("%s: %w\n%s", class, err, lastN(buf.String(), 15))
	}
	st := cmd.ProcessState
	cpu = (st.UserTime() + st.SystemTime()).Seconds()
	if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
		rssMB = float64(ru.Maxrss) / 1024 // kB on Linux
	}
	return buf.String(), cpu, rssMB, nil
}

// producerLine is ProducerPerformance's summary:
// "N records sent, X records/sec (Y MB/sec), A ms avg latency, ...".
var producerLine = regexp.MustCompile(`(?m)^(\d+) records sent, ([\d.]+) records/sec`)

// producerPerf loads the scenario's source topic with ProducerPerformance
// and reports its rate: the limit of producing to these brokers.
func (h *harness) producerPerf(ctx context.Context, sc scenario) result {
	res := newResult(sc, keyProducerPerf)
	h.logf("  loading %s with ProducerPerformance", sc.topic())
	began := time.Now()
	out, cpu, rss, err := h.runTool(ctx, keyProducerPerf+"-"+sc.key, "org.apache.kafka.tools.ProducerPerformance",
		"--bootstrap-server", h.srcBoot, "--topic", sc.topic(),
		"--num-records", strconv.Itoa(sc.records), "--record-size", strconv.Itoa(sc.size), "--throughput", "-1",
		"--command-property", "acks=all", "batch.size=262144", "linger.ms=5", "compression.type=none",
		"client.id=bench-producer-perf")
	if err != nil {
		res.Err = err.Error()
		return res
	}
	m := producerLine.FindAllStringSubmatch(out, -1)
	if len(m) == 0 {
		res.Err = "no summary line in ProducerPerformance output: " + lastN(out, 5)
		return res
	}
	last := m[len(m)-1]
	n, _ := strconv.ParseInt(last[1], 10, 64)
	rate, _ := strconv.ParseFloat(last[2], 64)
	res.Records, res.RecPerSec = n, rate
	res.Seconds = float64(n) / rate
	res.MBPerSec = rate * float64(sc.size) / 1e6
	res.CPUPerGB = cpu / (float64(n) * float64(sc.size) / 1e9)
	res.PeakRSSMB = rss
	res.Note = "CPU and RSS of the whole JVM run"
	h.logf("  %-17s %9.0f rec/s %7.1f MB/s  (load took %s)", keyProducerPerf, res.RecPerSec, res.MBPerSec, time.Since(began).Round(time.Second))
	return res
}

// consumerPerf reads the source topic with ConsumerPerformance: the limit of
// consuming from these brokers. Its group (bench-perf-<scenario>) is also
// the consumer group the offset-syncing copiers translate.
func (h *harness) consumerPerf(ctx context.Context, sc scenario) result {
	res := newResult(sc, keyConsumerPerf)
	out, cpu, rss, err := h.runTool(ctx, keyConsumerPerf+"-"+sc.id(), "org.apache.kafka.tools.ConsumerPerformance",
		"--bootstrap-server", h.srcBoot, "--topic", sc.topic(), "--num-records", strconv.Itoa(sc.records),
		"--group", "bench-perf-"+sc.id(), "--timeout", "60000")
	if err != nil {
		res.Err = err.Error()
		return res
	}
	row, err := csvRow(out, "fetch.nMsg.sec")
	if err != nil {
		res.Err = err.Error()
		return res
	}
	n, _ := strconv.ParseFloat(row["data.consumed.in.nMsg"], 64)
	rate, _ := strconv.ParseFloat(row["fetch.nMsg.sec"], 64)
	if n <= 0 || rate <= 0 {
		res.Err = "ConsumerPerformance consumed nothing: " + lastN(out, 5)
		return res
	}
	res.Records, res.RecPerSec = int64(n), rate
	res.Seconds = n / rate
	res.MBPerSec = rate * float64(sc.size) / 1e6
	res.CPUPerGB = cpu / (n * float64(sc.size) / 1e9)
	res.PeakRSSMB = rss
	res.Note = "CPU and RSS of the whole JVM run"
	return res
}

// csvRow finds ConsumerPerformance's header line (the one holding col) and
// returns the next line's values by column name.
func csvRow(out, col string) (map[string]string, error) {
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if !strings.Contains(l, col) || i+1 >= len(lines) {
			continue
		}
		names := strings.Split(l, ",")
		vals := strings.Split(lines[i+1], ",")
		if len(vals) < len(names) {
			break
		}
		row := map[string]string{}
		for j, n := range names {
			row[strings.TrimSpace(n)] = strings.TrimSpace(vals[j])
		}
		return row, nil
	}
	return nil, fmt.Errorf("no %s column in ConsumerPerformance output: %s", col, lastN(out, 5))
}

func lastN(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
