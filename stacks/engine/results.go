package engine

import (
	"time"

	"github.com/tfrs-io/tfrs-operator/stacks/program"
)

// OpKind names an engine operation.
type OpKind string

const (
	OpUp      OpKind = "up"
	OpPreview OpKind = "preview"
	OpRefresh OpKind = "refresh"
	OpDestroy OpKind = "destroy"
	OpRemove  OpKind = "remove"
	OpOutputs OpKind = "outputs"
	OpStatus  OpKind = "status"
	OpList    OpKind = "list"
)

// StepOp is what happened (or would happen, in a preview) to one resource.
type StepOp string

const (
	StepCreate  StepOp = "create"
	StepUpdate  StepOp = "update"
	StepReplace StepOp = "replace"
	StepDelete  StepOp = "delete"
	StepSame    StepOp = "same"
	StepRead    StepOp = "read"
	StepRefresh StepOp = "refresh"
	StepImport  StepOp = "import"
	StepOther   StepOp = "other"
)

// stepOpOf folds Pulumi's op types into the handful callers care about. The three ops of a
// replacement (create-replacement, replace, delete-replaced) all become "replace".
func stepOpOf(op string) StepOp {
	switch op {
	case "create":
		return StepCreate
	case "update":
		return StepUpdate
	case "replace", "create-replacement", "delete-replaced", "discard-replaced", "import-replacement", "read-replacement":
		return StepReplace
	case "delete", "discard":
		return StepDelete
	case "same":
		return StepSame
	case "read":
		return StepRead
	case "refresh":
		return StepRefresh
	case "import":
		return StepImport
	default:
		return StepOther
	}
}

// Step is one resource's change.
type Step struct {
	URN  string `json:"urn"`
	Type string `json:"type"`
	Op   StepOp `json:"op"`
	// Diffs are the changed property paths of an update or replace ("data.key",
	// "spec.replicas"); ReplaceKeys the ones that forced a replacement.
	Diffs       []string `json:"diffs,omitempty"`
	ReplaceKeys []string `json:"replaceKeys,omitempty"`
	Failed      bool     `json:"failed,omitempty"`
	Done        bool     `json:"done,omitempty"`
}

// Changes counts steps by op.
type Changes map[StepOp]int

// Changed is the number of steps that change something (everything but same/read/refresh).
func (c Changes) Changed() int {
	n := 0
	for op, k := range c {
		switch op {
		case StepSame, StepRead, StepRefresh:
		default:
			n += k
		}
	}
	return n
}

// Result is the typed outcome of Up, Preview, Refresh and Destroy.
type Result struct {
	Stack     string        `json:"stack"`
	Operation OpKind        `json:"operation"`
	Changes   Changes       `json:"changes"`
	Steps     []Step        `json:"steps"`
	Duration  time.Duration `json:"duration"`
	// Outputs are the stack outputs after an Up (empty otherwise). Secret values are hidden;
	// Output.Reveal returns them to code that needs them (a child stack's config).
	Outputs program.Outputs `json:"outputs,omitempty"`
	// Recovery says what the engine repaired before running, if anything.
	Recovery *Recovery `json:"recovery,omitempty"`
	// Warnings are the warning diagnostics of the run, redacted.
	Warnings []string `json:"warnings,omitempty"`
	// Plan is the saved plan of a Preview with SavePlan.
	Plan *Plan `json:"-"`
}

// Recovery reports repairs of an interrupted earlier run.
type Recovery struct {
	BrokenLocks []LockOwner `json:"brokenLocks,omitempty"`
	Adopted     []string    `json:"adopted,omitempty"`   // pending creates moved into state, then refreshed
	Forgotten   []string    `json:"forgotten,omitempty"` // pending creates dropped from state
	Refreshed   bool        `json:"refreshed,omitempty"`
}

func (r *Recovery) empty() bool {
	return r == nil || (len(r.BrokenLocks) == 0 && len(r.Adopted) == 0 && len(r.Forgotten) == 0 && !r.Refreshed)
}
