package engine

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tfrs-io/tfrs-operator/stacks/program"
)

func TestSecretOutputsNeverPrinted(t *testing.T) {
	outs := program.Outputs{"host": program.NewOutput("db.ns.svc", false), "password": program.NewOutput("hunter2-very-secret", true)}
	b, err := json.Marshal(outs)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "hunter2")
	assert.JSONEq(t, `{"host":{"value":"db.ns.svc"},"password":{"secret":true}}`, string(b))
	for _, f := range []string{"%v", "%+v", "%#v", "%s"} {
		assert.NotContains(t, fmt.Sprintf(f, outs), "hunter2", f)
		assert.NotContains(t, fmt.Sprintf(f, outs["password"]), "hunter2", f)
	}
	assert.Equal(t, "hunter2-very-secret", outs["password"].Reveal())
	assert.Equal(t, "db.ns.svc", outs.String("host"))
	assert.Equal(t, "", outs.String("password"))
	assert.Equal(t, []string{"host", "password"}, outs.Keys())
}

func TestCollectorBuildsStepsAndCounts(t *testing.T) {
	var got []Event
	red := newRedactor(nil)
	red.add("topsecretvalue")
	c := newCollector(OpUp, "tenant.a.b", func(e Event) { got = append(got, e) }, red)
	md := func(op apitype.OpType, urn string, diffs ...string) apitype.StepEventMetadata {
		return apitype.StepEventMetadata{Op: op, URN: urn, Type: "kubernetes:core/v1:ConfigMap", Diffs: diffs}
	}
	ts := int(time.Now().Unix())
	evs := []apitype.EngineEvent{
		{ResourcePreEvent: &apitype.ResourcePreEvent{Metadata: md("create", "urn:a::cm1")}},
		{ResOutputsEvent: &apitype.ResOutputsEvent{Metadata: md("create", "urn:a::cm1")}},
		{ResourcePreEvent: &apitype.ResourcePreEvent{Metadata: md("update", "urn:a::cm2", "data")}},
		{ResOutputsEvent: &apitype.ResOutputsEvent{Metadata: md("update", "urn:a::cm2", "data")}},
		{ResourcePreEvent: &apitype.ResourcePreEvent{Metadata: md("create-replacement", "urn:a::cm3")}},
		{ResourcePreEvent: &apitype.ResourcePreEvent{Metadata: md("replace", "urn:a::cm3")}},
		{ResourcePreEvent: &apitype.ResourcePreEvent{Metadata: md("delete-replaced", "urn:a::cm3")}},
		{ResOpFailedEvent: &apitype.ResOpFailedEvent{Metadata: md("delete", "urn:a::cm4")}},
		{DiagnosticEvent: &apitype.DiagnosticEvent{Severity: "error", Message: "boom with topsecretvalue inside"}},
		{SummaryEvent: &apitype.SummaryEvent{ResourceChanges: map[apitype.OpType]int{"create": 1, "update": 1, "replace": 1, "same": 5}}},
	}
	for _, ev := range evs {
		ev.Timestamp = ts
		c.handle(ev)
	}
	res := &Result{}
	c.finish(res)
	require.Len(t, res.Steps, 4)
	assert.Equal(t, StepCreate, res.Steps[0].Op)
	assert.True(t, res.Steps[0].Done)
	assert.Equal(t, StepUpdate, res.Steps[1].Op)
	assert.Equal(t, []string{"data"}, res.Steps[1].Diffs)
	assert.Equal(t, StepReplace, res.Steps[2].Op)
	assert.True(t, res.Steps[3].Failed)
	assert.Equal(t, Changes{StepCreate: 1, StepUpdate: 1, StepReplace: 1, StepSame: 5}, res.Changes)
	assert.Equal(t, 3, res.Changes.Changed())
	assert.Equal(t, []string{"boom with [secret] inside"}, c.errors())
	for _, e := range got {
		assert.NotContains(t, e.Message, "topsecretvalue")
		assert.Equal(t, "tenant.a.b", e.Stack)
		assert.Equal(t, OpUp, e.Operation)
	}
	assert.Equal(t, EventStepStart, got[0].Kind)
	assert.Equal(t, EventSummary, got[len(got)-1].Kind)

	// After finish, late events are not delivered.
	n := len(got)
	c.handle(apitype.EngineEvent{DiagnosticEvent: &apitype.DiagnosticEvent{Severity: "info", Message: "late"}})
	assert.Len(t, got, n)
}
