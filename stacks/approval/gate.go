// Package approval is the approval gate (spec.approval) every door shares: which ups go
// through a saved plan (NeedsPlan), which previewed changes wait for a person and why (Gate),
// the plan set a preview saved (Collect), and the one store of pending plan sets (Store).
// The doors only show the result: the operator as status.pendingPlan, the HTTP API as its
// plan view, the CLI as plan files.
//
// A mode is one row of modes below; adding one means adding its row (and the API enum in
// api/v1alpha1): TestEveryApprovalMode walks the enum and fails on a mode without a row.
package approval

import (
	"github.com/tfrs-io/tfrs-operator/api/v1alpha1"
	"github.com/tfrs-io/tfrs-operator/stacks/diff"
)

// Reason says why a plan waits; the doors show it (status.pendingPlan.reason, the HTTP plan
// view's reason).
type Reason string

const (
	// ReasonManual: every change waits (spec.approval.mode Manual).
	ReasonManual Reason = "Manual"
	// ReasonDataLoss: the change would replace or delete stateful data (OnDataLoss).
	ReasonDataLoss Reason = "DataLoss"
	// ReasonRequested: a person asked for the plan to be saved (the HTTP API's
	// preview?save=true), whatever the mode.
	ReasonRequested Reason = "Requested"
)

// hold is which previewed changes a mode makes wait.
type hold int

const (
	holdNothing  hold = iota // every change applies at once
	holdDataLoss             // changes that replace or delete stateful data wait
	holdEvery                // every change waits
)

// rule is what a mode asks of the gate.
type rule struct {
	hold hold
	// reason a held change waits for (holdNothing: none).
	reason Reason
	// text explains reason where a door says why a plan waits.
	text string
}

// modes is the gate's one table. A mode missing here (one the API does not know, or the
// empty default) follows the API's default, OnDataLoss.
var modes = map[v1alpha1.ApprovalMode]rule{
	v1alpha1.ApprovalAuto:       {hold: holdNothing},
	v1alpha1.ApprovalOnDataLoss: {hold: holdDataLoss, reason: ReasonDataLoss, text: "spec.approval.mode OnDataLoss: stateful data would be replaced or deleted"},
	v1alpha1.ApprovalManual:     {hold: holdEvery, reason: ReasonManual, text: "spec.approval.mode Manual"},
}

func ruleOf(mode v1alpha1.ApprovalMode) rule {
	if r, ok := modes[mode]; ok {
		return r
	}
	return modes[v1alpha1.ApprovalOnDataLoss]
}

// Known says whether the gate has a rule of its own for mode (the others follow OnDataLoss).
func Known(mode v1alpha1.ApprovalMode) bool {
	_, ok := modes[mode]
	return ok
}

// NeedsPlan says whether an up under mode goes through a saved plan, the rule every door
// applies (the operator from its status, the HTTP API from the stack's history). A mode that
// holds nothing never does; one that holds every change always does. One that holds data
// loss skips it while the stack holds nothing (upDone: an up completed on it and no destroy
// since): nothing can be lost yet, and the plain up saves a second program run on every
// first create.
func NeedsPlan(mode v1alpha1.ApprovalMode, upDone bool) bool {
	switch ruleOf(mode).hold {
	case holdNothing:
		return false
	case holdEvery:
		return true
	default:
		return upDone
	}
}

// Gate says whether a previewed change waits for approval and why ("" applies it now). A
// preview that changes nothing (a parent's outputs moved, a reconcile request) has nothing to
// review and applies.
func Gate(mode v1alpha1.ApprovalMode, rep *diff.Report) Reason {
	r := ruleOf(mode)
	switch {
	case r.hold == holdNothing || !rep.HasChanges():
		return ""
	case r.hold == holdEvery, rep.HasDataLoss():
		return r.reason
	}
	return ""
}

// ReviewsEveryChange says whether every change under mode waits for review: a door that
// cannot hold a change for later (the CLI's plain up) refuses to run one without a reviewed
// plan. Data loss alone is left to such a door's own checks (the CLI's --fail-on-data-loss).
func ReviewsEveryChange(mode v1alpha1.ApprovalMode) bool { return ruleOf(mode).hold == holdEvery }

// Explain is why a plan waits, in words for a status message or an error.
func Explain(why Reason) string {
	for _, r := range modes {
		if r.reason == why && r.text != "" {
			return r.text
		}
	}
	if why == ReasonRequested {
		return "a saved preview"
	}
	return string(why)
}
