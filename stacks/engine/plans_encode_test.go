package engine

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A plan whose Pulumi part holds characters json.Marshal escapes (Helm chart manifests carry
// "<", ">" and "&") reads back with the same bytes, so its id still matches its content.
func TestPlanEncodingKeepsThePulumiBytes(t *testing.T) {
	p := &Plan{Format: planFormat, Stack: "cluster.gate", Meta: map[string]string{"spec": "abc"},
		Pulumi: json.RawMessage(`{"resourcePlans":{"urn":{"goal":{"inputs":{"notes":"if a < b && c > d"}}}}}`)}
	p.ID = planID(p)
	b, err := p.Encode()
	require.NoError(t, err)
	assert.Contains(t, string(b), `a < b && c > d`)
	back, err := DecodePlan(b)
	require.NoError(t, err)
	assert.Equal(t, p.ID, back.ID)
	assert.Equal(t, string(p.Pulumi), string(back.Pulumi))
}
