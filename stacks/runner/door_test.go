package runner

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/tfrs-io/tfrs-operator/stacks/engine"
)

func TestCheckDoor(t *testing.T) {
	const (
		op  = engine.ManagedByOperator
		api = engine.ManagedByAPI
		cli = engine.ManagedByCLI
	)
	for _, tc := range []struct {
		owner, door engine.ManagedBy
		refused     bool
	}{
		{"", op, false}, {"", api, false}, {op, op, false}, {api, api, false}, {cli, cli, false},
		{api, cli, false}, {cli, api, false}, // the API and the CLI share their stacks
		{op, api, true}, {op, cli, true}, // a CR's stack is changed through the CR
		{api, op, true}, {cli, op, true}, // the operator never takes a stack over
		{op, "", false}, // no door named: nothing to check
	} {
		err := CheckDoor("s", tc.owner, tc.door)
		if !tc.refused {
			assert.NoError(t, err, "%s by %s", tc.owner, tc.door)
			continue
		}
		assert.ErrorIs(t, err, ErrManagedElsewhere, "%s by %s", tc.owner, tc.door)
		var me *ManagedElsewhereError
		if assert.ErrorAs(t, err, &me) {
			assert.Equal(t, tc.owner, me.ManagedBy)
		}
	}
}
