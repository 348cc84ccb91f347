package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/kmirror/kmirror/internal/apiclient"
	"github.com/kmirror/kmirror/internal/switchover"
)

// groupList is a repeatable --group.
type groupList []string

func (g *groupList) String() string { return strings.Join(*g, ",") }
func (g *groupList) Set(v string) error {
	*g = append(*g, v)
	return nil
}

// switchoverFlags are `task switchover`'s own flags.
type switchoverFlags struct {
	groups    groupList
	all       bool
	direction string
	emergency bool
	show      bool
	noFollow  bool
}

func (f *switchoverFlags) register(a *adminCmd) {
	a.fs.Var(&f.groups, "group", "consumer group to move (repeatable)")
	a.fs.BoolVar(&f.all, "all-groups", false, "move every consumer group of the source")
	a.fs.StringVar(&f.direction, "direction", "", "the flow to switch over, SOURCE->TARGET (may be left out when the task has one)")
	a.fs.BoolVar(&f.emergency, "emergency", false, "the source is gone: commit the groups' last checkpoints on the target, with what may be read again and lost")
	a.fs.BoolVar(&f.show, "show", false, "print the task's newest switchover; start none")
	a.fs.BoolVar(&f.noFollow, "no-follow", false, "return once started, without following the steps")
}

// switchover starts a switchover of task name and follows it until it is
// done (exit 0) or failed (an error), printing each change of its steps;
// --show prints the newest instead.
func (f *switchoverFlags) run(ctx context.Context, a *adminCmd, name string) error {
	path := apiclient.Path("/api/v1/tasks/%s/switchover", name)
	if f.show {
		return a.call(ctx, http.MethodGet, path, nil, switchoverTable)
	}
	req := switchover.Request{Mode: switchover.Planned, Direction: f.direction, Groups: switchover.Groups{All: f.all, Names: f.groups}}
	if f.emergency {
		req.Mode = switchover.Emergency
	}
	if f.all && len(f.groups) > 0 {
		return errors.New("switchover takes --group G... or --all-groups, not both")
	}
	body, _ := json.Marshal(req)
	raw, err := a.client.Do(ctx, http.MethodPost, path, body)
	if err != nil {
		return err
	}
	if f.noFollow || a.output == "json" {
		return a.print(raw, switchoverTable)
	}
	last := ""
	for {
		var sw switchover.Switchover
		if err := json.Unmarshal(raw, &sw); err != nil {
			return fmt.Errorf("decode answer: %w", err)
		}
		if now := stepsLine(sw); now != last {
			fmt.Fprintf(a.stdout, "%s  %s\n", time.Now().Format("15:04:05"), now)
			last = now
		}
		if sw.State.Ended() {
			if err := a.print(raw, switchoverTable); err != nil {
				return err
			}
			if sw.State == switchover.Failed {
				return fmt.Errorf("switchover of %s failed", name)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
		if raw, err = a.client.Do(ctx, http.MethodGet, path, nil); err != nil {
			return err
		}
	}
}

// stepsLine is the current step, its state and message, on one line.
func stepsLine(sw switchover.Switchover) string {
	for _, s := range sw.Steps {
		if s.State != switchover.Done || sw.State == switchover.Done && s.Name == switchover.StepSwitched {
			return fmt.Sprintf("%s: %s: %s", s.Name, s.State, s.Message)
		}
	}
	return string(sw.State)
}

func switchoverTable(w io.Writer, raw json.RawMessage) error {
	var sw switchover.Switchover
	if err := json.Unmarshal(raw, &sw); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	fmt.Fprintf(w, "switchover %d of %s (%s, %s): %s\n", sw.ID, sw.Task, sw.Mode, sw.Direction, strings.ToUpper(string(sw.State)))
	if sw.Failback != nil {
		fmt.Fprintf(w, "way back: %s\n", sw.Failback.State)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "STEP\tSTATE\tMESSAGE")
	for _, s := range sw.Steps {
		fmt.Fprintf(w, "%s\t%s\t%s\n", s.Name, s.State, s.Message)
	}
	if len(sw.Report.Groups) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "GROUP\tTOPIC\tPARTITION\tSOURCE OFFSET\tTARGET TOPIC\tTARGET OFFSET\tEXACT\tMAY READ AGAIN\tMAY BE LOST")
	for _, g := range sw.Report.Groups {
		for _, p := range g.Partitions {
			again := fmt.Sprint(p.MayReadAgain)
			if p.MayReadAgain < 0 {
				again = "unbounded"
			}
			fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%s\t%d\t%v\t%s\t%d\n", g.Group, p.Topic, p.Partition, p.SourceOffset, p.TargetTopic, p.TargetOffset, p.Exact, again, p.MayBeLost)
		}
		for _, n := range g.Notes {
			fmt.Fprintf(w, "note: %s: %s\n", g.Group, n)
		}
	}
	return nil
}
