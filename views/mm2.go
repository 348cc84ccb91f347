package views

import (
	"maps"
	"slices"

	"github.com/kmirror/kmirror/internal/task"
)

// MM2View is a Kafka Connect cluster's MirrorMaker 2 page: the MM2 flows
// deployed there by hand (not by kmirror), each with the task adopting it
// would make, or what keeps it from being adopted.
type MM2View struct {
	ConnectCluster string
	Candidates     []MM2Candidate
	// Instances and ConnectClusters fill the adopt forms' selects.
	Instances       []string
	ConnectClusters []string
	// Form is the adopt form that was refused, shown again with its
	// messages next to its flow.
	Form AdoptForm
	// Message is shown above the list when the page could not be read
	// whole (Connect away).
	Message string
}

// MM2Candidate is one MM2 flow as the page shows it.
type MM2Candidate struct {
	SourceConnector string
	Flow            string
	Connectors      string
	State           string
	// Direction and Topics are the task adoption would create.
	Direction task.Direction
	Topics    string
	Problems  []Problem
	// Reverse is the MM2 source connector copying the other way, which
	// may be adopted with this one as one bidirectional task.
	Reverse string
}

// AdoptForm is one flow's adopt form: what the user chose.
type AdoptForm struct {
	SourceConnector string
	Name            string
	Current         string
	Engine          string
	// Reverse is the connector copying the other way, offered to adopt
	// with this one; Bidirectional says it was chosen.
	Reverse       string
	Bidirectional bool
	Errors        FieldErrors
	// Message is shown above the form when the request failed as a whole.
	Message string
}

// FormFor is the adopt form of a flow: the refused one again, or a fresh
// one that keeps the flow on this Connect cluster.
func (v MM2View) FormFor(c MM2Candidate) AdoptForm {
	if v.Form.SourceConnector == c.SourceConnector {
		f := v.Form
		f.Reverse = c.Reverse
		return f
	}
	return AdoptForm{SourceConnector: c.SourceConnector, Engine: "connect:" + v.ConnectCluster, Reverse: c.Reverse}
}

// MM2Path is a Connect cluster's MirrorMaker 2 page.
func MM2Path(connectCluster string) string { return ConnectClusterPath(connectCluster) + "/mm2" }

// ImportMM2Form is the mm2.properties import form: what was pasted (any
// secret taken out) and chosen, and the service's messages.
type ImportMM2Form struct {
	Properties string
	// SecretsRemoved says secrets were taken out of the text shown again.
	SecretsRemoved bool
	Flow           string
	Name           string
	Current        string
	Engine         string
	// StartOver copies everything again when MirrorMaker's progress is not
	// found (refused without it).
	StartOver       bool
	Instances       []string
	ConnectClusters []string
	Errors          FieldErrors
	Message         string
}

// mm2Placeholder shows the shape of a dedicated MirrorMaker's file.
const mm2Placeholder = `clusters = A, B
A.bootstrap.servers = east-1:9092
B.bootstrap.servers = west-1:9092
A->B.enabled = true
A->B.topics = orders.*`

// errorsBesides are the messages on fields other than shown, in field
// order, for a form that has inputs only for shown.
func errorsBesides(fe FieldErrors, shown ...string) []Problem {
	var out []Problem
	for _, f := range slices.Sorted(maps.Keys(fe)) {
		if slices.Contains(shown, f) {
			continue
		}
		for _, m := range fe[f] {
			out = append(out, Problem{Field: f, Message: m})
		}
	}
	return out
}
